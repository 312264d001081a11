"""CodeIndex end to end: a real repository, the compiled core, real searches."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import coderecall
from coderecall import (
    CodeIndex,
    Config,
    IndexDirError,
    QueryError,
    RootNotADirectoryError,
    RootNotFoundError,
    RootRefusedError,
    SearchHit,
    StoreError,
)
from helpers import (
    SAMPLE_PROJECT,
    MakeRepo,
    as_if_chunked_by_older_rules,
    git,
    large_project,
    write_files,
)

SAMPLE_FILES = len(SAMPLE_PROJECT)


def line_of(path: str, text: str) -> int:
    """1-based line of the first line of ``path`` in the sample containing ``text``."""
    for number, line in enumerate(SAMPLE_PROJECT[path].splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} is not in {path}")


def covers(hit: SearchHit, path: str, text: str) -> bool:
    """Whether ``hit`` is the chunk of ``path`` holding the line with ``text``."""
    return hit.path == path and hit.start_line <= line_of(path, text) <= hit.end_line


@pytest.fixture
def project(make_repo: MakeRepo) -> Path:
    return make_repo(SAMPLE_PROJECT)


@pytest.fixture
def index(project: Path) -> CodeIndex:
    with CodeIndex(project) as code_index:
        code_index.index()
        return code_index


def test_first_index_parses_everything(project: Path) -> None:
    with CodeIndex(project) as index:
        report = index.index()
    assert report.root == project
    assert report.files_seen == SAMPLE_FILES
    assert report.files_parsed == SAMPLE_FILES
    assert report.files_unchanged == 0
    assert report.files_removed == 0
    assert report.chunks_added >= 10
    assert report.symbols_added >= 10
    assert report.bytes_parsed == sum(len(text.encode()) for text in SAMPLE_PROJECT.values())
    assert report.skipped == {}
    assert report.generation >= 1


def test_index_lives_in_the_git_dir_and_stays_out_of_git_status(index: CodeIndex) -> None:
    assert index.index_dir == index.root / ".git" / "coderecall"
    assert index.index_dir.is_dir()
    assert git(index.root, "status", "--porcelain", "--ignored") == ""


def test_folder_without_git_gets_a_local_index_git_would_ignore(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT, init=False)
    with CodeIndex(root) as index:
        index.index()
    assert index.index_dir == root / ".coderecall"
    git(root, "init", "-q")
    assert ".coderecall" not in git(root, "status", "--porcelain", "--untracked-files=all")


def test_status_before_and_after_indexing(project: Path) -> None:
    with CodeIndex(project) as index:
        before = index.status()
        assert not before.exists
        assert (before.files, before.chunks, before.generation) == (0, 0, 0)
        assert before.last_report is None
        assert not index.index_dir.exists(), "status must not create an index"

        report = index.index()
        after = index.status()
    assert after.exists
    assert after.root == project
    assert after.index_dir == project / ".git" / "coderecall"
    assert after.generation == report.generation
    assert after.files == SAMPLE_FILES
    assert after.file_versions == SAMPLE_FILES
    assert after.chunks >= report.chunks_added > 0
    assert after.symbols == report.symbols_added
    assert after.languages["python"] == 4
    assert {"javascript", "rust", "go", "markdown"} <= set(after.languages)
    assert sum(after.languages.values()) == SAMPLE_FILES
    assert after.db_bytes > 0
    assert after.lexical_bytes > 0
    assert after.last_report == report
    assert after.last_indexed is not None
    assert datetime.now(timezone.utc) - after.last_indexed < timedelta(minutes=1)
    assert after.to_dict()["last_report"] == report.to_dict()


def test_identifier_query_finds_the_definition(index: CodeIndex) -> None:
    hits = index.search("refresh_access_token")
    assert covers(hits[0], "src/shop/auth.py", "def refresh_access_token")
    assert hits[0].language == "python"
    assert hits[0].content is not None
    assert "def refresh_access_token" in hits[0].content


@pytest.mark.parametrize(
    ("query", "path", "definition"),
    [
        ("sum the prices of the items and add sales tax", "src/shop/billing.py", "def compute_"),
        ("may a client make one more request", "server/ratelimit.go", "func (r *RateLimiter)"),
        ("add an item to the shopping cart", "web/cart.js", "export function addItemToCart"),
        ("parse the configuration file", "native/src/config.rs", "pub fn parse_config_file"),
        ("nightly database backups", "docs/deployment.md", "## Backups"),
    ],
)
def test_plain_words_find_the_right_chunk(
    index: CodeIndex, query: str, path: str, definition: str
) -> None:
    hits = index.search(query)
    assert covers(hits[0], path, definition), [(h.path, h.symbol) for h in hits]


def test_a_request_finds_the_code_not_prose_with_its_question_words(make_repo: MakeRepo) -> None:
    """`where is the code that ...`: the words of the request are rare in code, and prose that
    happens to use them (a heading "Where ...") must not outrank the code asked about."""
    root = make_repo(
        {
            "README.md": "# Demo\n\n## Where the flags live\n\nWhere is everything? Find out "
            "how the code is laid out, which part does what.\n",
            "cli.py": "import sys\n\n\n"
            "def parse_flags(argv):\n"
            '    """Split the command line into flags and their values."""\n'
            "    flags = {}\n"
            "    for arg in argv:\n"
            '        name, _, value = arg.lstrip("-").partition("=")\n'
            "        flags[name] = value\n"
            "    return flags\n",
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        for query in (
            "where is the code that splits the flags",
            "how does the code split the flags?",
            "I'm looking for the function that splits flags",
        ):
            hits = index.search(query)
            assert hits[0].path == "cli.py", (query, [(h.path, h.symbol) for h in hits])


def test_words_beyond_ascii_are_found_as_people_type_them(make_repo: MakeRepo) -> None:
    """A Chinese or Japanese comment is one run of characters with no spaces: a word asked
    for is found inside it, not only the whole run. Accented words are found typed without
    their accents, and the other way round."""
    root = make_repo(
        {
            "users.py": "def list_users(db):\n"
            '    """从数据库中读取用户列表,并按注册时间排序返回结果。"""\n'
            '    return db.query("select * from users")\n',
            "config.py": "def save_config(path, cfg):\n"
            '    """設定ファイルを書き込んで、古いファイルをバックアップします。"""\n'
            "    write(path, cfg)\n",
            "mail.py": 'def send_mail(to, body):\n    """확인 메일을 사용자에게 보냅니다."""\n'
            "    smtp.send(to, body)\n",
            "menu.py": 'def dessert():\n    """Crème brûlée au café, flambée."""\n    return 1\n',
            "size.py": 'def groesse():\n    """Berechnet die Größe der Datei."""\n    return 2\n',
            "plain.py": 'def resume():\n    """Resume the paused download."""\n    return 3\n',
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        for query, path in (
            ("数据库", "users.py"),
            ("注册时间排序", "users.py"),
            ("バックアップ", "config.py"),
            ("設定ファイル", "config.py"),
            ("사용자에게", "mail.py"),
            ("creme brulee", "menu.py"),
            ("Crème brûlée", "menu.py"),
            ("die Grosse der Datei", "size.py"),
            ("résumé the download", "plain.py"),
        ):
            assert [h.path for h in index.search(query)[:1]] == [path], query


def test_language_filter(index: CodeIndex) -> None:
    hits = index.search("request token config cart", language="go")
    assert hits
    assert {hit.language for hit in hits} == {"go"}
    hits = index.search("request token config cart", language=["Python", "rust"])
    assert {hit.language for hit in hits} == {"python", "rust"}
    hits = index.search("request token config cart", language="py")  # aliases work too
    assert {hit.language for hit in hits} == {"python"}


@pytest.mark.parametrize("directory", ["src/shop", "./src/shop/", "src//shop/../shop"])
def test_directory_filter_is_normalised(index: CodeIndex, directory: str) -> None:
    hits = index.search("token invoice cart request", directory=directory)
    assert hits
    assert all(hit.path.startswith("src/shop/") for hit in hits)


def test_directory_filter_accepts_absolute_paths_and_several(index: CodeIndex) -> None:
    hits = index.search("token cart request", directory=[str(index.root / "web"), "server"])
    assert {hit.path for hit in hits} == {"web/cart.js", "server/ratelimit.go"}
    whole = index.search("token cart request", directory=".")
    assert len({hit.path for hit in whole}) > 2


def test_kind_filter(index: CodeIndex) -> None:
    hits = index.search("token cart invoice", kind="class")
    assert hits
    assert {hit.kind for hit in hits} == {"class"}
    assert {hit.symbol for hit in hits} >= {"TokenStore", "ShoppingCart"}


def test_limit_per_file_and_content(project: Path) -> None:
    with CodeIndex(project, {"per_file": 1}) as index:
        hits = index.search("token", limit=3, with_content=False)
    assert 0 < len(hits) <= 3
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert all(hit.content is None for hit in hits)
    assert hits[0].to_dict()["content"] is None


def test_no_content_after_a_merged_unit_is_named(make_repo: MakeRepo) -> None:
    """A hit naming a unit merged into its chunk reads that chunk's symbols; the hits after
    it must still come without text when none was asked for."""
    root = make_repo(
        {
            "small.py": "def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n",
            "uses.py": _function("caller", 1).replace("spline.reticulate", "beta"),
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        hits = index.search("beta", limit=5, with_content=False)
        assert [hit.path for hit in hits][:2] == ["small.py", "uses.py"]
        assert hits[0].symbol == "beta"
        assert all(hit.content is None for hit in hits)


def test_a_sentence_names_the_merged_unit_it_is_about(make_repo: MakeRepo) -> None:
    """Small methods share their class's chunk; a sentence about one of them names it, with
    its kind, and the chunk's lines."""
    methods = "".join(
        f"    def {name}(self, text):\n        return self.out.{call}(text)\n\n"
        for name, call in [("printf", "format"), ("println", "line"), ("print_err", "err")]
    )
    root = make_repo({"command.py": f"class Command:\n{methods}"})
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        [top] = index.search("println writes the text on a line of its own", limit=1)
        assert (top.path, top.kind, top.symbol_path) == (
            "command.py",
            "method",
            "command.Command.println",
        )
        assert top.start_line == 1  # the chunk holds the class and printf too
        # A kind filter admitted the chunk for its own kind: its name stays.
        [top] = index.search("println writes the text", limit=1, kind="class")
        assert (top.kind, top.symbol_path) == ("class", "command.Command")
        # Words that cover no unit's name: the unit whose own lines hold them.
        [top] = index.search("format the text", limit=1)
        assert top.symbol_path == "command.Command.printf"
        # Words that cover the chunk's own name keep it.
        [top] = index.search("the command's text", limit=1)
        assert top.symbol_path == "command.Command"


def test_a_path_shows_the_file_from_its_opening(make_repo: MakeRepo) -> None:
    """A file's name asks for the file: its first chunk comes first, the rest in order, not
    the one-line `#endif` that BM25F's length normalisation favours."""
    methods = "".join(
        f"template <typename Key>\nint SkipList<Key>::Skip{n}(int key) {{\n"
        + "".join(f"  key = key * {k} + level_;\n" for k in range(12))
        + "  return key;\n}\n\n"
        for n in range(6)
    )
    declared = "".join(f"  int Skip{n}(int key);\n" for n in range(6))
    header = (
        "#ifndef DB_SKIPLIST_H_\n#define DB_SKIPLIST_H_\n\n#include <atomic>\n\n"
        "namespace db {\n\ntemplate <typename Key>\nclass SkipList {\n public:\n"
        f"{declared} private:\n  int level_;\n}};\n\n{methods}}}  // namespace db\n\n"
        "#endif  // DB_SKIPLIST_H_\n"
    )
    root = make_repo({"db/skiplist.h": header, "db/other.cc": '#include "db/skiplist.h"\n'})
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        hits = [hit for hit in index.search("skiplist.h", limit=10) if hit.path == "db/skiplist.h"]
    assert hits[0].start_line == 1
    assert [hit.start_line for hit in hits] == sorted(hit.start_line for hit in hits)


def test_a_pasted_message_finds_the_line_that_writes_it(make_repo: MakeRepo) -> None:
    """An error message as an agent pastes it from a log, values filled in: the function
    that writes it comes first, over one dense in the message's words (BM25F weighs the
    words apart) and over comments and documents that repeat the message."""
    dense = "".join(
        f"    # unexpected token {k}: could not parse, not a query; parse query token at {k}\n"
        f"    token_{k} = parse_query(query, token_{k - 1})\n"
        for k in range(1, 8)
    )
    root = make_repo(
        {
            "lexer.py": f"def tokens(query, token_0):\n{dense}    return token_7\n",
            "parser.py": "def parse(query):\n"
            "    tree = build(query)\n"
            + "".join(f"    step_{k} = shape(tree, {k})\n" for k in range(20))
            + "    if tree is None:\n"
            "        raise ValueError(\n"
            "            \"Could not parse query '%s': unexpected token at '%s'\" % (query, tree)\n"
            "        )\n"
            "    return tree\n",
            "notes.md": "# Errors\n\nCould not parse query: unexpected token at the start. "
            "The query parser says which token it could not parse.\n",
        }
    )
    pasted = "Could not parse query 'div > p[': unexpected token at '['"
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        hits = index.search(pasted)
        assert hits[0].path == "parser.py", [(h.path, h.start_line) for h in hits]
        # Without the rule, the words alone rank the dense function first.
        index._open().set_weights({"phrase": 0.0})
        assert index.search(pasted)[0].path != "parser.py"


def test_a_constant_is_found_where_it_is_defined(make_repo: MakeRepo) -> None:
    """`MAX_DEPTH`, `TIMEOUT_SECONDS`: constants are definitions, found before the code that
    uses them most (a C macro, a Python module constant, a Java static final field)."""
    uses = "".join(f"    total += walk(d + {k}, MAX_DEPTH) * TIMEOUT_SECONDS;\n" for k in range(12))
    root = make_repo(
        {
            "limits.h": "#ifndef LIMITS_H\n#define LIMITS_H\n#define MAX_DEPTH 64\n#endif\n",
            "settings.py": "import os\n\nTIMEOUT_SECONDS = int(os.environ.get('T', 30))\n",
            "Config.java": "class Config {\n    public static final int RETRY_LIMIT = 3;\n}\n",
            "walk.c": "int walk(int d, int max) {\n    int total = 0;\n"
            + uses
            + "    return total;\n}\n",
            "Retry.java": "class Retry {\n  int run() {\n"
            + "    n += Config.RETRY_LIMIT * RETRY_LIMIT;\n" * 8
            + "    return n;\n  }\n}\n",
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        for name, path in (
            ("MAX_DEPTH", "limits.h"),
            ("TIMEOUT_SECONDS", "settings.py"),
            ("RETRY_LIMIT", "Config.java"),
            ("Config.RETRY_LIMIT", "Config.java"),
        ):
            hits = index.search(name)
            assert (hits[0].path, hits[0].kind) == (path, "constant"), (name, hits[:2])
        # An include guard has no value: no definition.
        assert all(hit.symbol != "LIMITS_H" for hit in index.search("LIMITS_H"))


def test_a_package_level_variable_is_found_where_it_is_defined(make_repo: MakeRepo) -> None:
    """Go's sentinel errors and defaults are `var`s: `ErrNotFound`, `var ErrNotFound` and
    `def` find the declaration, not the function that returns it most."""
    returns = "".join(f"\tif n == {k} {{\n\t\treturn ErrNotFound\n\t}}\n" for k in range(12))
    root = make_repo(
        {
            "go.mod": "module example.com/mux\n",
            "errors.go": 'package mux\n\nimport "errors"\n\nvar (\n'
            "\t// ErrNotFound is returned when no route matches.\n"
            '\tErrNotFound = errors.New("no matching route")\n'
            '\tErrMethodMismatch = errors.New("method is not allowed")\n)\n',
            "route.go": "package mux\n\nfunc match(n int) error {\n"
            + returns
            + "\treturn nil\n}\n",
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        for query in ("ErrNotFound", "var ErrNotFound", "mux.ErrNotFound"):
            hits = index.search(query)
            assert (hits[0].path, hits[0].kind) == ("errors.go", "variable"), (query, hits[:2])
        assert [d.path for d in index.implementation_lookup("ErrMethodMismatch")] == ["errors.go"]


def test_an_enum_member_is_found_where_it_is_declared(make_repo: MakeRepo) -> None:
    """`ArgAction::SetTrue`, `Mood.HAPPY`, `COLOR_RED`: an enum's members are definitions of
    their own, found before the code that matches on them most; a small enum stays one
    chunk that answers for every member."""
    arms = "".join(f"        ArgAction::SetTrue if n == {k} => {k},\n" for k in range(12))
    root = make_repo(
        {
            "action.rs": "/// What a flag does.\npub enum ArgAction {\n    /// Store the value.\n"
            "    Set,\n    /// Store true.\n    SetTrue,\n    /// Count occurrences.\n"
            "    Count,\n}\n",
            "parse.rs": "fn parse(a: ArgAction, n: u8) -> u8 {\n    match a {\n"
            + arms
            + "        _ => 0,\n    }\n}\n",
            "Mood.java": "enum Mood { HAPPY, GRUMPY }\n",
            "color.h": "enum color {\n    COLOR_RED,\n    COLOR_GREEN,\n};\n",
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        _assert_first_hit_holds(
            index,
            (
                ("ArgAction::SetTrue", "action.rs", 6),
                ("SetTrue", "action.rs", 6),
                ("Mood.HAPPY", "Mood.java", 1),
                ("COLOR_GREEN", "color.h", 3),
            ),
        )
        [found] = index.implementation_lookup("ArgAction::SetTrue")
        assert (found.path, found.kind) == ("action.rs", "variant")
        # The one-line enum stays one chunk: the enum's name finds the enum, a member's name
        # the member, in the same lines.
        [enum] = [h for h in index.search("Mood") if h.path == "Mood.java"]
        [member] = [h for h in index.search("GRUMPY") if h.path == "Mood.java"]
        assert (enum.kind, enum.start_line, enum.end_line) == ("enum", 1, 1)
        assert (member.kind, member.start_line, member.end_line) == ("variant", 1, 1)


def test_config_tables_and_keys_are_sections_found_by_their_path(make_repo: MakeRepo) -> None:
    """`tool.pytest.ini_options`, `jobs.build`: a TOML table and a YAML key (top level or one
    in) are sections named by their path, found before the code that mentions the words."""
    filler = "".join(f'{k} = "value {k}"\n' for k in ("a", "b", "c", "d", "e", "f"))
    root = make_repo(
        {
            "pyproject.toml": '[project]\nname = "shop"\n\n[tool.pytest.ini_options]\n'
            + filler
            + "\n[tool.ruff]\nline-length = 100\n",
            "ci.yml": "name: CI\non: [push]\njobs:\n  build:\n    runs-on: ubuntu-latest\n"
            "    steps:\n      - run: make build\n  lint:\n    runs-on: ubuntu-latest\n",
            "tool.py": "def pytest_options(tool):\n    return tool.pytest.ini_options\n\n\n"
            "def build_jobs(jobs):\n    return jobs.build\n",
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        _assert_first_hit_holds(
            index,
            (
                ("tool.pytest.ini_options", "pyproject.toml", 4),
                ("jobs.build", "ci.yml", 4),
                ("jobs.lint", "ci.yml", 8),
            ),
        )
        [table] = index.implementation_lookup("tool.pytest.ini_options")
        assert (table.path, table.kind, table.start_line) == ("pyproject.toml", "section", 4)


def test_a_struct_field_is_found_where_it_is_declared(make_repo: MakeRepo) -> None:
    """`Config.retry_limit`, `Router.NotFoundHandler`, `client.flags`: a struct's fields are
    definitions of their own, found before the code that reads them most; the struct stays
    one chunk, and a method that shares a field's name keeps its callers."""
    reads = "".join(f"    total += cfg.retry_limit * {k};\n" for k in range(12))
    root = make_repo(
        {
            "config.rs": "/// Settings.\npub struct Config {\n    /// Tries before giving up.\n"
            "    pub retry_limit: u32,\n    pub verbose: bool,\n}\n\nimpl Config {\n"
            "    pub fn verbose(&mut self, on: bool) -> &mut Self {\n        self.verbose = on;\n"
            "        self\n    }\n}\n",
            "use.rs": "fn total(cfg: &mut Config) -> u32 {\n    let mut total = 0;\n"
            + reads
            + "    cfg.verbose(true);\n    total\n}\n",
            "mux.go": "package mux\n\ntype Router struct {\n\tNotFoundHandler Handler\n"
            "\tstrictSlash     bool\n}\n",
            "client.h": "struct client {\n    int flags;\n    char *name;\n};\n",
            "settings.py": "@dataclass\nclass Settings:\n    timeout: float = 3.0\n"
            "    hosts: list[str] = field(default_factory=list)\n",
            "options.ts": "export interface Options {\n  retries: number;\n}\n",
            "Client.java": "class Client {\n    private int port;\n}\n",
            "theme.rb": "class Theme\n  attr_reader :name, :path\n\n  def initialize(path)\n"
            "    @path = path\n  end\nend\n",
            # Parameters that declare fields.
            "user.kt": "data class User(val email: String, val age: Int) {\n"
            "    fun adult() = age >= 18\n}\n",
            "shapes.scala": "case class Point(x: Int, y: Int)\ncase class Size(x: Int, h: Int)\n",
            "client.ts": "export class Client {\n"
            "  constructor(private readonly http: Http) {}\n}\n",
            "Server.php": "<?php\nclass Server {\n"
            "    public function __construct(private int $port) {}\n}\n",
            "Span.java": "record Span(int start, int end) {\n    int length() {\n"
            "        return end - start;\n    }\n}\n",
            "Person.cs": "public record Person(string Name, int Age);\n",
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        _assert_first_hit_holds(
            index,
            (
                ("Config.retry_limit", "config.rs", 4),
                ("retry_limit", "config.rs", 4),
                ("Router.NotFoundHandler", "mux.go", 4),
                ("client.flags", "client.h", 2),
            ),
        )
        [found] = index.implementation_lookup("Config.retry_limit")
        # Its doc comment comes with it.
        assert (found.path, found.kind, found.start_line) == ("config.rs", "field", 3)
        for name, path, line in (
            ("Settings.hosts", "settings.py", 4),
            ("Options.retries", "options.ts", 2),
            ("Client.port", "Client.java", 2),
            ("Theme.path", "theme.rb", 2),
            ("User.email", "user.kt", 1),
            ("Size.h", "shapes.scala", 2),
            ("Client.http", "client.ts", 2),
            ("Server.port", "Server.php", 3),
            ("Span.end", "Span.java", 1),
            ("Person.Age", "Person.cs", 1),
        ):
            [found] = index.implementation_lookup(name)
            assert (found.path, found.kind, found.start_line) == (path, "field", line), name
        # Two small types merged into one chunk: the hit names the field of the type asked for.
        top = index.search("Size.x")[0]
        assert (top.path, top.kind, top.symbol_path) == ("shapes.scala", "field", "shapes.Size.x")
        # A field on its class's own line leaves the line to the class.
        [user] = [h for h in index.search("User") if h.path == "user.kt"][:1]
        assert (user.kind, user.symbol, user.start_line) == ("class", "User", 1)
        [struct] = [h for h in index.search("Config") if h.path == "config.rs"][:1]
        assert (struct.kind, struct.start_line, struct.end_line) == ("struct", 1, 6)
        # A method that shares a field's name comes first, and `cfg.verbose(true)` calls it,
        # not the field.
        assert [d.kind for d in index.implementation_lookup("Config.verbose")] == [
            "method",
            "field",
        ]
        result = index.call_graph("total", direction="callees")
        assert [(e.callee_text, e.callee and e.callee.kind) for e in result.callees] == [
            ("cfg.verbose", "method")
        ]


def test_a_name_finds_a_long_function_once(make_repo: MakeRepo) -> None:
    """A function long enough to be cut into windows is one answer to its name, not a page
    of its pieces: its callers come next, its other windows after them."""
    body = "".join(f"    step_{k} = dump_term(step_{k - 1}, {k})\n" for k in range(1, 400))
    root = make_repo(
        {
            "dump.py": f"def dump_term(term, n):\n    step_0 = term\n{body}    return step_399\n",
            "use.py": "def show(term):\n    return dump_term(term, 0)\n",
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        hits = index.search("dump_term", limit=50)
    assert [hit.path for hit in hits[:2]] == ["dump.py", "use.py"]
    assert hits[0].start_line == 1, "the window that opens the function"
    assert len(hits) > 3
    assert all(hit.path == "dump.py" for hit in hits[2:])


def _assert_first_hit_holds(index: CodeIndex, cases: tuple[tuple[str, str, int], ...]) -> None:
    """For each `(query, path, line)`, the first hit is in `path` and spans `line`."""
    for query, path, line in cases:
        top = index.search(query)[0]
        assert (top.path, top.start_line <= line <= top.end_line) == (path, True), query


def _function(name: str, mentions: int, filler: int = 14) -> str:
    """A Python function big enough to be a chunk of its own, saying "reticulate spline"
    ``mentions`` times among ``filler`` lines no query here asks for."""
    body = "".join(
        f"    total_{k} = combine(total_{k - 1}, weight_{k}, bias)\n" for k in range(1, filler + 1)
    )
    said = "".join("    spline.reticulate(spline)\n" for _ in range(mentions))
    return f"def {name}(spline, total_0, bias):\n{said}{body}    return total_{filler}\n\n\n"


def test_per_file_is_a_soft_cap(make_repo: MakeRepo) -> None:
    """Past ``per_file`` a file's results are lowered, not dropped: a near tie goes to
    another file, a file that outscores the rest by far still shows all it has."""
    # b.py's chunks are a little longer, so a.py's score a little higher: a near tie.
    root = make_repo(
        {
            "a.py": "".join(_function(f"alpha_{n}", 2) for n in range(3)),
            "b.py": "".join(_function(f"beta_{n}", 2, filler=18) for n in range(3)),
        }
    )
    for per_file, expected in ((3, ["a.py"] * 3), (2, ["a.py", "a.py", "b.py"])):
        with CodeIndex(root, {"per_file": per_file, "embedding": {"provider": "none"}}) as index:
            hits = index.search("reticulate the spline", limit=3)
        assert [hit.path for hit in hits] == expected, per_file

    root = make_repo(
        {
            "dominant.py": "".join(_function(f"gamma_{n}", 6) for n in range(6)),
            "weak.py": _function("delta", 1),
        },
        name="dominant",
    )
    with CodeIndex(root, {"per_file": 2, "embedding": {"provider": "none"}}) as index:
        hits = index.search("reticulate the spline", limit=10)
    paths = [hit.path for hit in hits]
    # A hard cap would have shown two; the third still outranks the weak file's match.
    assert paths[:3] == ["dominant.py"] * 3
    assert sorted(paths) == ["dominant.py"] * 6 + ["weak.py"]


def test_a_smaller_limit_gives_the_first_results_of_a_larger_one(make_repo: MakeRepo) -> None:
    """Asking for fewer results never reorders them: an agent that peeks at 3 and then
    reads 10 sees the same first three. Real code (this package's own sources), so that far
    more chunks match than the ranking re-scores."""
    package = Path(__file__).resolve().parents[1] / "python" / "coderecall"
    native = Path(__file__).resolve().parents[1] / "native" / "core" / "src"
    files = {f"py/{p.relative_to(package)}": p.read_text() for p in package.rglob("*.py")}
    files |= {f"rs/{p.relative_to(native)}": p.read_text() for p in native.rglob("*.rs")}
    root = make_repo(files)
    queries = [
        "detect the language of a file",  # natural language
        "vector index add",
        "bm25 snapshot save",
        "MemoryStore",  # identifiers
        "search",
        "rs/bm25",  # a path
    ]
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        index.index()
        for query in queries:
            whole = [(h.path, h.start_line) for h in index.search(query, limit=100)]
            assert len(whole) == 100, query
            for limit in (1, 3, 10, 50):
                got = [(h.path, h.start_line) for h in index.search(query, limit=limit)]
                assert got == whole[:limit], (query, limit)


STORE_RS = """\
/// Records kept in memory, newest last.
pub struct Store {
    records: Vec<String>,
    limit: usize,
}

impl Store {
    /// A store that keeps at most `limit` records.
    pub fn new(limit: usize) -> Store {
        Store { records: Vec::new(), limit }
    }

    /// Adds a record, dropping the oldest past the limit of the store.
    pub fn push(&mut self, record: String) {
        self.records.push(record);
        if self.records.len() > self.limit {
            self.records.remove(0);
        }
    }
}

impl std::fmt::Display for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store of {} records (Store limit {})", self.records.len(), self.limit)
    }
}

/// Opens the default store.
pub fn store() -> Store {
    Store::new(100)
}
"""


REGISTRY_RS = """\
use crate::store::Store;

/// Stores by name, for the commands that keep several.
pub struct Registry {
    stores: Vec<(String, Store)>,
}

impl Registry {
    /// An empty registry; a Registry holds no store until one is added.
    pub fn new() -> Registry {
        Registry { stores: Vec::new() }
    }

    /// Adds a store to the Registry under `name`, returning the Registry for chaining.
    pub fn add(&mut self, name: &str, store: Store) -> &mut Registry {
        self.stores.push((name.to_string(), store));
        self
    }
}
"""


# A module and a function of one name and one spelling (Rust keeps them in two namespaces):
# only the declaration keyword tells them apart. Each is large enough to stay a chunk alone.
LIMITS_RS = (
    "/// Limits used when nothing is configured.\npub mod defaults {\n"
    + "".join(
        f"    /// The default limit number {i} of the store, in records kept before the oldest"
        f" go.\n    pub const LIMIT_{i}: usize = {i * 10};\n"
        for i in range(12)
    )
    + "}\n\n/// The sum of the default limits, weighted by their rank.\n"
    + "pub fn defaults() -> usize {\n    let mut total = 0;\n"
    + "".join(f"    total += defaults::LIMIT_{i} * {i + 1};\n" for i in range(12))
    + "    total\n}\n"
)


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("Registry", "struct"),  # a type's name: its declaration before its impl blocks
        ("struct Registry", "struct"),
        ("impl Registry", "impl"),
        ("struct Store", "struct"),
        ("pub struct Store {", "struct"),
        ("impl Store", "impl"),
        ("fn store", "function"),  # keyword and spelling agree: the function, not `Store`
        ("fn store()", "function"),
        ("mod defaults", "module"),  # one spelling: the keyword alone settles it
        ("fn defaults", "function"),
    ],
)
def test_a_declaration_keyword_or_a_type_name_finds_the_declaration(
    make_repo: MakeRepo, query: str, kind: str
) -> None:
    root = make_repo(
        {
            "src/store.rs": STORE_RS,
            "src/registry.rs": REGISTRY_RS,
            "src/main.rs": "fn main() { store(); }\n",
            "src/limits.rs": LIMITS_RS,
        }
    )
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        hits = index.search(query, limit=3)
    assert hits[0].kind == kind, [(h.kind, h.symbol, h.start_line) for h in hits]


def test_search_builds_a_missing_index(project: Path) -> None:
    with CodeIndex(project) as index:
        hits = index.search("compute_invoice_total")
        assert covers(hits[0], "src/shop/billing.py", "def compute_invoice_total")
        assert index.status().files == SAMPLE_FILES


def test_reindex_without_changes_costs_only_stats(index: CodeIndex) -> None:
    report = index.index()
    assert report.files_seen == report.files_unchanged == SAMPLE_FILES
    assert (report.files_parsed, report.files_removed, report.chunks_added) == (0, 0, 0)


def test_edit_is_reindexed_alone(index: CodeIndex) -> None:
    billing = index.root / "src" / "shop" / "billing.py"
    billing.write_text(
        billing.read_text().replace("compute_invoice_total", "compute_grand_total")
        + "\n\ndef apply_discount_code(total: float, code: str) -> float:\n"
        + '    """Take ten percent off with a valid promotion code."""\n'
        + '    return total * 0.9 if code == "SAVE10" else total\n'
    )
    report = index.index()
    assert report.files_parsed == 1
    assert report.files_unchanged == SAMPLE_FILES - 1

    hits = index.search("apply_discount_code")
    assert hits[0].path == "src/shop/billing.py"
    assert hits[0].content is not None
    assert "def apply_discount_code" in hits[0].content
    stale = index.search("compute_invoice_total")
    assert all("compute_invoice_total" not in (hit.content or "") for hit in stale)
    assert any(hit.symbol == "compute_grand_total" for hit in index.search("compute_grand_total"))


def test_deleted_file_leaves_the_results(index: CodeIndex) -> None:
    assert any(hit.path == "web/cart.js" for hit in index.search("addItemToCart"))
    (index.root / "web" / "cart.js").unlink()
    report = index.index()
    assert report.files_removed == 1
    assert report.files_seen == SAMPLE_FILES - 1
    assert all(hit.path != "web/cart.js" for hit in index.search("addItemToCart"))
    assert index.status().files == SAMPLE_FILES - 1


def test_force_rereads_every_file(index: CodeIndex) -> None:
    report = index.index(force=True)
    assert report.files_unchanged == 0
    assert report.files_seen == SAMPLE_FILES
    assert report.files_parsed == 0, "unchanged content is never parsed twice"


def test_versions_chunked_by_other_rules_are_chunked_again(index: CodeIndex) -> None:
    index.close()
    db = index.index_dir / "index.db"
    (old,) = as_if_chunked_by_older_rules(db, ["src/shop/billing.py"])
    report = index.index()
    assert report.files_unchanged == 0, "every path is read again, though none changed"
    assert report.files_parsed == 1, "only the version keyed by other rules is parsed"
    hits = index.search("compute_invoice_total")
    assert covers(hits[0], "src/shop/billing.py", "def compute_invoice_total")
    again = index.index()
    assert again.files_unchanged == SAMPLE_FILES
    assert again.files_parsed == 0
    # The version keyed by other rules can never be known again: collected without grace.
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM files WHERE hash = ?", (old,)).fetchone() == (0,)


def test_every_skip_reason_is_reported(project: Path, tmp_path: Path) -> None:
    (project / "assets").mkdir()
    (project / "assets" / "logo.png").write_bytes(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)
    )
    with (project / "dump.sql").open("wb") as file:
        file.truncate(50 * 1024 * 1024)
    (project / "debug.log").write_text("ignored by .gitignore\n")
    (project / "alias.py").symlink_to("src/shop/auth.py")
    (project / "web" / "vendor.min.js").write_text("function a(){return 1}\n")

    with CodeIndex(project) as index:
        report = index.index()
    expected = {
        "binary": "assets/logo.png",
        "too large": "dump.sql",
        "ignored": "debug.log",
        "symlink": "alias.py",
        "no parser": "web/vendor.min.js",
    }
    assert report.skipped == dict.fromkeys(expected, 1)
    assert report.skipped_examples == {reason: (path,) for reason, path in expected.items()}
    assert report.files_parsed == SAMPLE_FILES
    assert report.decoded == {}
    assert index.status().last_report == report


def test_text_that_is_not_utf8_is_decoded_and_reported(project: Path) -> None:
    legacy = "# (c) 1998 Jürgen Müller, “résumé” parser\ndef parse_resume(text):\n    return 1\n"
    (project / "src" / "legacy.py").write_bytes(legacy.encode("cp1252"))
    (project / "src" / "Mailer.cs").write_text(
        "// Überblick\nclass InvoiceMailer { }\n", encoding="utf-16"
    )
    (project / "notes.md").write_bytes(b"# Caf\xc3\xa9\n\nbroken \xe9 byte\n")
    japanese = "// 設定ファイルを読み込んで、結果を返します。\nclass ConfigLoader { }\n"
    (project / "src" / "ConfigLoader.java").write_bytes(japanese.encode("shift_jis"))

    with CodeIndex(project) as index:
        report = index.index()
        assert report.decoded == {
            "Shift_JIS": 1,
            "UTF-16LE": 1,
            "UTF-8 with invalid bytes replaced": 1,
            "windows-1252": 1,
        }
        assert report.decoded_examples == {
            "Shift_JIS": ("src/ConfigLoader.java",),
            "UTF-16LE": ("src/Mailer.cs",),
            "UTF-8 with invalid bytes replaced": ("notes.md",),
            "windows-1252": ("src/legacy.py",),
        }
        assert report.skipped.keys() <= {"ignored"}
        assert index.status().last_report == report
        hit = index.search("Jürgen Müller résumé")[0]
        assert hit.path == "src/legacy.py"
        assert "Jürgen Müller, “résumé” parser" in (hit.content or "")
        assert index.search("InvoiceMailer")[0].path == "src/Mailer.cs"
        hit = index.search("ConfigLoader")[0]
        assert hit.path == "src/ConfigLoader.java"
        assert japanese.splitlines()[0] in (hit.content or "")
        hit = index.search("broken byte")[0]
        assert (hit.path, hit.start_line) == ("notes.md", 1)
        assert "# Café\n\nbroken \ufffd byte" in (hit.content or "")
        # Nothing new to decode the second time: the report counts this run's work.
        assert index.index().decoded == {}


def test_a_file_an_older_release_skipped_as_not_utf8_is_read_again(project: Path) -> None:
    legacy = project / "src" / "legacy.py"
    legacy.write_bytes("# Müller\ndef reconcile_ledger():\n    pass\n".encode("latin-1"))
    with CodeIndex(project) as index:
        index.index()
        db = index.status().index_dir / "index.db"
    # What a release that skipped such files remembered about it.
    with closing(sqlite3.connect(db)) as conn, conn:
        stat = legacy.stat()
        conn.execute("DELETE FROM view_files WHERE path = 'src/legacy.py'")
        conn.execute(
            "INSERT INTO skipped_files (view_id, path, mtime_ns, size, reason) "
            "SELECT id, 'src/legacy.py', ?, ?, 'not valid UTF-8' FROM views",
            (stat.st_mtime_ns, stat.st_size),
        )
    with CodeIndex(project) as index:
        report = index.index()
        assert report.files_unchanged == report.files_seen - 1
        assert report.skipped.keys() <= {"ignored"}
        assert index.search("reconcile_ledger")[0].path == "src/legacy.py"
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM skipped_files").fetchone() == (0,)
        indexed = conn.execute("SELECT count(*) FROM view_files WHERE path = 'src/legacy.py'")
        assert indexed.fetchone() == (1,)


@pytest.mark.slow
def test_ctrl_c_cancels_without_publishing(make_repo: MakeRepo) -> None:
    root = make_repo(large_project(), init=False)

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with CodeIndex(root) as index:
        with pytest.raises(KeyboardInterrupt):
            index.index(progress=interrupt)
        assert index.status().generation == 0
        assert index.index().files_parsed == len(large_project())


_LICENCE = "".join(
    f"# {line}\n"
    for line in (
        "Copyright (c) the example authors. All rights reserved.",
        "Permission is hereby granted, free of charge, to any person obtaining a copy of this",
        "software and associated documentation files, to deal in the software without",
        "restriction, including without limitation the rights to use, copy, modify, merge,",
        "publish, distribute, sublicense, and/or sell copies of the software, and to permit",
        "persons to whom the software is furnished to do so, subject to the conditions below.",
        "The above copyright notice and this permission notice shall be included in all",
        "copies or substantial portions of the software. THE SOFTWARE IS PROVIDED AS IS,",
        "WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE",
        "WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.",
    )
)


@pytest.mark.slow
def test_a_new_process_reads_texts_compressed_with_the_trained_dictionary(
    make_repo: MakeRepo,
) -> None:
    # 1.4 MB of new text: enough for a first index to train a zstd dictionary for its texts
    # (1 MiB). It pays for itself on what files share, here a licence header: without one the
    # dictionary would save less than its own size and is not kept.
    files = {path: _LICENCE + text for path, text in large_project(150).items()}
    root = make_repo(files, init=False)
    with CodeIndex(root) as index:
        index.index()
        index_dir = index.index_dir
    with closing(sqlite3.connect(index_dir / "index.db")) as db:
        (current,) = db.execute("SELECT value FROM meta WHERE key = 'text_dictionary'").fetchone()
        (size,) = db.execute(
            "SELECT length(value) FROM meta WHERE key = ?", (f"dictionary:{current}",)
        ).fetchone()
    assert 0 < size <= 64 << 10

    # The process that trained it has registered it; new ones must read it from the index.
    def run(body: str) -> list[str]:
        script = (
            "import sys\nfrom coderecall import CodeIndex\n"
            f"with CodeIndex(sys.argv[1]) as index:\n{body}"
        )
        return subprocess.run(
            [sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True
        ).stdout.splitlines()

    assert run("    print(index.health().problems)\n") == ["()"]
    head, *content = run(
        "    hit = index.search('function_117_93', limit=1)[0]\n"
        "    print(hit.path, hit.start_line, hit.end_line)\n"
        "    print(hit.content, end='')\n"
    )
    path, start, end = head.split()
    assert path == "pkg/module_117.py"
    assert content == files[path].splitlines()[int(start) - 1 : int(end)]
    assert "def function_117_93(value):" in content


def test_a_tree_that_grows_past_the_threshold_reads_texts_stored_before_and_after_it(
    make_repo: MakeRepo,
) -> None:
    # A first index too small for a dictionary stores plain texts; a later batch of 1.4 MB
    # trains one. Both kinds of stored text must read back, in this process and a new one.
    root = make_repo(dict(SAMPLE_PROJECT), init=False)
    with CodeIndex(root) as index:
        index.index()
        index_dir = index.index_dir
    with closing(sqlite3.connect(index_dir / "index.db")) as db:
        assert db.execute("SELECT 1 FROM meta WHERE key = 'text_dictionary'").fetchone() is None
    grown = {path: _LICENCE + text for path, text in large_project(150).items()}
    write_files(root, grown)
    with CodeIndex(root) as index:
        index.index()
        assert index.health().problems == ()
        old = index.search("TokenStore", limit=1)[0]
        new = index.search("function_42_7", limit=1)[0]
    with closing(sqlite3.connect(index_dir / "index.db")) as db:
        assert db.execute("SELECT 1 FROM meta WHERE key = 'text_dictionary'").fetchone()
        kinds = {kind for (kind,) in db.execute("SELECT DISTINCT substr(text, 1, 1) FROM files")}
    assert kinds == {b"\x01", b"\x02"}  # plain and dictionary-primed blobs side by side
    for hit, files in ((old, SAMPLE_PROJECT), (new, grown)):
        text = files[hit.path]
        assert isinstance(text, str)
        assert hit.content is not None
        assert hit.content.splitlines() == text.splitlines()[hit.start_line - 1 : hit.end_line]
    assert old.path == "src/shop/auth.py"
    assert new.path == "pkg/module_42.py"
    assert "def function_42_7(value):" in (new.content or "")
    script = (
        "import sys\nfrom coderecall import CodeIndex\n"
        "with CodeIndex(sys.argv[1]) as index:\n"
        "    print(index.health().problems)\n"
        f"    print(index.search({old.symbol!r}, limit=1)[0].content == {old.content!r})\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["()", "True"]


def test_progress_callback_ends_at_the_total(project: Path) -> None:
    calls: list[tuple[int, int]] = []
    with CodeIndex(project) as index:
        index.index(progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (SAMPLE_FILES, SAMPLE_FILES)
    assert all(0 <= done <= total for done, total in calls if total)
    assert len(calls) == len(set(calls)), "the callback only hears about changes"


def test_names_that_are_not_utf8_are_skipped_and_the_rest_indexed(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    root = make_repo({"good.py": "def good_function():\n    pass\n"})
    (Path(os.fsdecode(bytes(root) + b"/bad\xffname.py"))).write_text("def f():\n    pass\n")
    folder = Path(os.fsdecode(bytes(root) + b"/dir\xfe"))
    folder.mkdir()
    (folder / "inside.py").write_text("def g():\n    pass\n")
    with CodeIndex(root) as index:
        report = index.index(progress=False)
        assert report.skipped == {"name not UTF-8": 2}
        assert sorted(report.skipped_examples["name not UTF-8"]) == [
            "bad\ufffdname.py",
            "dir\ufffd/",
        ]
        assert [h.path for h in index.search("good_function")] == ["good.py"]
        # A watcher hands over such a path by itself: it is sorted the same way.
        again = index.index(progress=False, paths=[str(folder / "inside.py")])
        assert again.skipped == {"name not UTF-8": 1}
        assert index.status().last_report is not None  # the report was stored as text

    bad_root = Path(os.fsdecode(bytes(tmp_path) + b"/r\xff"))
    bad_root.mkdir()
    (bad_root / "pyproject.toml").write_text("")
    with pytest.raises(RootRefusedError, match="not valid UTF-8"):
        CodeIndex(bad_root)


def test_a_file_with_only_cr_line_breaks_has_its_lines(make_repo: MakeRepo) -> None:
    source = (
        b"def cr_one():\r    return 1\r\rclass Holder:\r    def cr_two(self):\r        return 2\r"
    )
    root = make_repo({"cr.py": source})
    with CodeIndex(root) as index:
        index.index(progress=False)
        (method,) = index.implementation_lookup("cr_two")
        assert (method.start_line, method.end_line) == (5, 6)
        assert method.content == "    def cr_two(self):\n        return 2"


def test_a_progress_callback_that_raises_stops_the_run_before_the_lease_is_let_go(
    make_repo: MakeRepo,
) -> None:
    root = make_repo(large_project(1500))

    def fail(done: int, total: int) -> None:
        raise RuntimeError("the display broke")

    with CodeIndex(root) as index:
        with pytest.raises(RuntimeError, match="the display broke"):
            index.index(progress=fail)
        # Nothing of the run is still writing once the caller has its error.
        assert not [t for t in threading.enumerate() if t.name.startswith("coderecall-")]
        report = index.index(progress=False, wait=False)
        assert report.files_seen == len(large_project(1500))
        assert index.health().ok


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_refused(index: CodeIndex, query: str) -> None:
    with pytest.raises(QueryError, match="empty") as caught:
        index.search(query)
    assert isinstance(caught.value, ValueError)


def test_bad_search_arguments(index: CodeIndex) -> None:
    with pytest.raises(QueryError, match="limit"):
        index.search("token", limit=0)
    with pytest.raises(QueryError, match="outside the root"):
        index.search("token", directory="../elsewhere")


def test_numbers_past_what_the_core_holds_mean_all_and_strings_are_one_path(
    index: CodeIndex, project: Path
) -> None:
    # 2**64 does not fit the core's integers: a limit that large means "all of them".
    assert index.search("token", limit=2**64) == index.search("token", limit=1000)
    with pytest.raises(QueryError, match="limit must be at least 1"):
        index.implementation_lookup("refresh_access_token", limit=-1)
    assert index.implementation_lookup("refresh_access_token", limit=10**30)
    with pytest.raises(QueryError, match="past its end"):
        index.find_similar(path="src/shop/auth.py", line=2**70)
    edited = project / "src/shop/auth.py"
    edited.write_text(edited.read_text() + "\n\ndef revoke_every_token():\n    pass\n")
    report = index.index(progress=False, paths="src/shop/auth.py")  # not "s", "r", "c", ...
    assert (report.files_seen, report.files_parsed) == (1, 1)
    assert index.index(progress=False, paths=project / "src").files_seen > 1


def test_configured_sizes_and_counts_past_the_core_are_no_cap(project: Path) -> None:
    (project / ".coderecall.toml").write_text(
        'limit = 99999999999999999999\nmax-file-size = "99999999999999999999GB"\n'
    )
    with CodeIndex(project) as index:
        assert index.index(progress=False).files_seen == SAMPLE_FILES  # the settings: never
        assert index.search("token")
    with pytest.raises(TypeError, match="config must be a Config or a mapping"):
        CodeIndex(project, [1, 2])  # type: ignore[arg-type]


def test_unknown_language_or_kind_is_a_query_error(index: CodeIndex) -> None:
    def by_language(name: str) -> object:
        return index.search("token", language=name)

    def by_kind(name: str) -> object:
        return index.search("token", kind=name)

    for search, wrong, known in ((by_language, "cobol", "python"), (by_kind, "gizmo", "function")):
        with pytest.raises(QueryError, match=wrong) as caught:
            search(wrong)
        _, _, listed = str(caught.value).partition("; valid: ")
        valid = listed.split(", ")
        assert known in valid
        for name in valid:  # what the message lists is what a filter takes
            search(name)


def test_root_checks(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("just notes\n")
    with pytest.raises(RootRefusedError):
        CodeIndex(tmp_path)
    with CodeIndex(tmp_path, force=True) as index:
        assert index.index().files_seen == 1
    # coderecall errors (README: one class catches all) that are the standard ones as well
    with pytest.raises(FileNotFoundError) as missing:
        CodeIndex(tmp_path / "missing")
    assert isinstance(missing.value, RootNotFoundError)
    assert isinstance(missing.value, coderecall.Error)
    assert missing.value.errno == errno.ENOENT
    assert missing.value.root == tmp_path / "missing"
    with pytest.raises(NotADirectoryError) as a_file:
        CodeIndex(tmp_path / "notes.txt")
    assert isinstance(a_file.value, RootNotADirectoryError)
    assert isinstance(a_file.value, RootRefusedError)
    assert a_file.value.filename == str(tmp_path / "notes.txt")


def test_an_index_folder_that_cannot_be_made_is_a_store_error(
    project: Path, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    for where in (tmp_path / "a-file" / "index", tmp_path / "a-file"):
        index = CodeIndex(project, {"index-dir": str(where)})
        with index, pytest.raises(IndexDirError) as caught:
            index.index()
        assert isinstance(caught.value, coderecall.StoreError)
        assert isinstance(caught.value, OSError)
        assert caught.value.errno in (errno.ENOTDIR, errno.EEXIST)
        assert caught.value.filename == str(where)
        assert "index-dir" in str(caught.value)


def test_config_argument(project: Path, tmp_path: Path) -> None:
    (project / ".coderecall.toml").write_text("limit = 4\n")
    assert CodeIndex(project).config.limit == 4
    assert CodeIndex(project, {"limit": 2}).config.limit == 2
    explicit = Config(index_dir=tmp_path / "elsewhere")
    with CodeIndex(project, explicit) as index:
        assert index.config is explicit
        assert index.config.limit == 10, "a Config is used as is, without the project's files"
        index.index()
    assert (tmp_path / "elsewhere").is_dir()
    assert not (project / ".git" / "coderecall").exists()


def test_closed_index_reopens(index: CodeIndex) -> None:
    index.close()
    assert index.search("refresh_access_token")
    assert repr(index).startswith("CodeIndex(root=")


def test_file_deleted_between_collect_and_parse(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coderecall._collect import Collection
    from coderecall._collect import collect as real_collect

    def collect_then_delete(root: Path, config: Config) -> Collection:
        collection = real_collect(root, config)
        (project / "src" / "shop" / "auth.py").unlink()  # vanishes before the core reads it
        return collection

    monkeypatch.setattr("coderecall._index.collect", collect_then_delete)
    with CodeIndex(project) as index:
        report = index.index(progress=False)
        assert report.skipped == {"deleted": 1}
        assert report.skipped_examples == {"deleted": ("src/shop/auth.py",)}
        assert all(hit.path != "src/shop/auth.py" for hit in index.search("refresh token"))
        monkeypatch.setattr("coderecall._index.collect", real_collect)
        assert index.index(progress=False).skipped == {}


def test_a_new_handle_walks_while_the_index_opens_and_raises_what_the_walk_raised(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coderecall._collect import Collection
    from coderecall._collect import collect as real_collect

    walkers: list[str] = []

    def recorded(root: Path, config: Config) -> Collection:
        walkers.append(threading.current_thread().name)
        return real_collect(root, config)

    monkeypatch.setattr("coderecall._index.collect", recorded)
    with CodeIndex(project) as index:
        assert index.index(progress=False).files_parsed == SAMPLE_FILES
        index.index(progress=False)  # open already: nothing to overlap
    assert walkers == ["coderecall-walk", threading.current_thread().name]

    def refused(root: Path, config: Config) -> Collection:
        raise PermissionError(errno.EACCES, "walk refused", str(root))

    monkeypatch.setattr("coderecall._index.collect", refused)
    with CodeIndex(project) as index:
        with pytest.raises(PermissionError, match="walk refused"):
            index.index(progress=False)
        assert [hit.path for hit in index.search("refresh_access_token")][:1] == [
            "src/shop/auth.py"
        ]


def test_a_corrupt_database_is_reported_and_force_rebuilds_it(project: Path) -> None:
    with CodeIndex(project) as index:
        index.index(progress=False)
        index_dir = index.index_dir
    (index_dir / "index.db").write_bytes(b"this is not a database" * 100)
    for leftover in ("index.db-wal", "index.db-shm"):
        (index_dir / leftover).unlink(missing_ok=True)

    with CodeIndex(project) as index, pytest.raises(StoreError, match="index --force"):
        index.search("refresh token")
    with CodeIndex(project) as index:
        report = index.index(force=True, progress=False)
        assert report.files_parsed == SAMPLE_FILES
        assert index.search("refresh token")
    aside = [
        p for p in index_dir.parent.iterdir() if p.name.startswith(index_dir.name + ".broken-")
    ]
    assert len(aside) == 1
    assert (aside[0] / "index.db").read_bytes().startswith(b"this is not a database")


def test_a_catch_up_that_cannot_write_answers_from_the_index_as_it_is(
    project: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A query's catch-up (the command line's) on an index this user may not write: the
    query answers from what is there, with a warning, rather than failing."""
    with CodeIndex(project) as index:
        index.index()
    write_files(project, {"src/shop/ledger.py": "def reconcile_ledger():\n    return 1\n"})

    def refused(self: object, wait: object = True) -> object:
        raise PermissionError(errno.EACCES, "Permission denied", "write.lock")

    monkeypatch.setattr(coderecall._lease.WriteLease, "hold", refused)
    with CodeIndex(project) as index:
        index._catch_up()
        assert [h.path for h in index.search("TokenStore", limit=1)] == ["src/shop/auth.py"]
        assert "src/shop/ledger.py" not in {h.path for h in index.search("reconcile_ledger")}
    assert "could not be brought up to date" in caplog.text
    assert "Permission denied" in caplog.text
    monkeypatch.undo()
    with CodeIndex(project) as index:
        index._catch_up()
        assert index.search("reconcile_ledger")[0].path == "src/shop/ledger.py"
