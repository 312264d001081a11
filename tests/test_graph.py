"""The call graph through ``CodeIndex``: definitions, callers and callees with their
confidence, call paths, and how the graph follows edits. Real repositories, real parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderecall import CodeIndex, QueryError
from coderecall._graph import CallEdge, CallGraphResult, Definition
from helpers import MakeRepo

# A small project whose every call is known. Chain: cli.run -> service.process ->
# repo.Repository.save -> db.write. `render` is defined twice and called without an import
# (ambiguous); `unique_helper` is defined once and called without an import (inferred);
# `handle.dispose()` is a call on an unknown receiver (unresolved); tests/ has its own `write`.
PROJECT: dict[str, str] = {
    "pyproject.toml": '[project]\nname = "shop"\n',
    "shop/__init__.py": "",
    "shop/db.py": '''\
"""Storage."""


def write(table, row):
    """Write one row to a table."""
    return (table, row)


def dispose(thing):
    return thing


def orphan_function():
    return 1
''',
    "shop/repo.py": '''\
"""Repository."""

from shop.db import write


class Repository:
    def __init__(self, table):
        self.table = table

    def save(self, row):
        return write(self.table, row)

    def fetch(self):
        return self.save(None)


class SpecialRepository(Repository):
    pass
''',
    "shop/service.py": """\
from shop.repo import Repository


def process(order):
    repo = Repository("orders")
    return repo.save(order)


def cleanup(handle):
    return handle.dispose()
""",
    "shop/cli.py": """\
from shop import service


def run(argv):
    return service.process(argv)
""",
    "shop/render_html.py": 'def render(value):\n    return f"<p>{value}</p>"\n',
    "shop/render_text.py": 'def render(value):\n    return f"{value}\\n"\n',
    "shop/helpers.py": "def unique_helper(x):\n    return x * 2\n",
    "shop/views.py": """\
def show(value):
    return render(value)


def shout(value):
    return unique_helper(value)
""",
    "shop/parse.py": """\
class Parser:
    def feed(self, data):
        return data


def parser(text):
    return Parser().feed(text)
""",
    "tests/test_db.py": """\
def write(table, row):
    return None


def test_write():
    assert write("t", 1) is None
""",
    "web/app.js": """\
function helperJs(x) {
  return x + 1;
}

export function mainJs(y) {
  return helperJs(y) * 2;
}
""",
    "native/lib.rs": """\
fn helper_rs(x: u32) -> u32 {
    x + 1
}

pub fn main_rs(y: u32) -> u32 {
    helper_rs(y) * 2
}
""",
}


def line_of(path: str, text: str) -> int:
    """1-based line of the first line of ``path`` in PROJECT containing ``text``."""
    for number, line in enumerate(PROJECT[path].splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} is not in {path}")


def callers_of(result: CallGraphResult) -> dict[str, CallEdge]:
    return {e.caller.symbol_path: e for e in result.callers}


def callees_of(result: CallGraphResult) -> dict[str, CallEdge]:
    return {e.callee_text: e for e in result.callees}


@pytest.fixture
def index(make_repo: MakeRepo) -> CodeIndex:
    with CodeIndex(make_repo(PROJECT)) as code_index:
        code_index.index()
        return code_index


# implementation_lookup


def test_lookup_puts_the_implementation_before_a_test_of_the_same_name(index: CodeIndex) -> None:
    found = index.implementation_lookup("write")
    assert [(d.path, d.start_line) for d in found] == [
        ("shop/db.py", line_of("shop/db.py", "def write")),
        ("tests/test_db.py", 1),
    ]
    best = found[0]
    assert (best.name, best.kind, best.symbol_path, best.language) == (
        "write",
        "function",
        "shop.db.write",
        "python",
    )
    assert best.end_line == line_of("shop/db.py", "return (table, row)")
    assert best.content is not None
    assert best.content.startswith("def write(table, row):")
    assert '"""Write one row to a table."""' in best.content
    assert best.callers == 1  # Repository.save; the test calls its own `write`
    without = index.implementation_lookup("write", limit=1, with_content=False)
    assert len(without) == 1
    assert without[0].content is None
    assert "content" not in without[0].to_dict()


def test_lookup_puts_the_implementation_before_stubs_and_benchmarks(
    make_repo: MakeRepo,
) -> None:
    # The shortest path used to come first among definitions of one name.
    repo = make_repo(
        {
            "pyproject.toml": '[project]\nname = "pkg"\n',
            "pkg/_c.pyi": "def search(query: str) -> list[str]: ...\n",
            "pkg/core.py": "def search(query):\n    return [query]\n",
            "benches/b.py": "def search(query):\n    return []\n",
        }
    )
    with CodeIndex(repo) as code_index:
        code_index.index()
        found = code_index.implementation_lookup("search", with_content=False)
    assert [d.path for d in found] == ["pkg/core.py", "pkg/_c.pyi", "benches/b.py"]


def test_lookup_puts_what_a_wrapper_delegates_to_before_the_wrapper(
    make_repo: MakeRepo,
) -> None:
    # The binding's path is shorter, so it used to come first.
    repo = make_repo(
        {
            "pyproject.toml": '[project]\nname = "pkg"\n',
            "api.py": (
                "from core.engine import Engine\n\n\n"
                "class Index:\n"
                "    def __init__(self):\n"
                "        self.engine = Engine()\n\n"
                "    def search(self, query):\n"
                "        return self.engine.search(query)\n"
            ),
            "core/engine.py": (
                "class Engine:\n    def search(self, query):\n        return [query]\n"
            ),
            # Recursion is not delegation: this one keeps its place by path length.
            "core/tree.py": (
                "class Tree:\n"
                "    def search(self, query):\n"
                "        return self.search(query[1:]) if query else []\n"
            ),
        }
    )
    with CodeIndex(repo) as code_index:
        code_index.index()
        found = code_index.implementation_lookup("search", with_content=False)
    assert [d.path for d in found] == ["core/tree.py", "core/engine.py", "api.py"]


@pytest.mark.parametrize(
    "symbol",
    [
        "Repository.save",
        "shop.repo.Repository.save",
        "repo.Repository.save",
        "shop/repo.py:10",  # the `def` line
        "shop/repo.py:11",  # a line of its body
    ],
)
def test_lookup_by_qualified_name_or_location(index: CodeIndex, symbol: str) -> None:
    (found, *_) = index.implementation_lookup(symbol)
    assert (found.path, found.start_line, found.end_line) == ("shop/repo.py", 10, 11)
    assert found.symbol_path == "shop.repo.Repository.save"
    assert found.kind == "method"


def test_lookup_prefers_the_exact_case_then_falls_back_to_any_case(index: CodeIndex) -> None:
    assert index.implementation_lookup("parser")[0].symbol_path == "shop.parse.parser"
    assert index.implementation_lookup("Parser")[0].symbol_path == "shop.parse.Parser"
    anycase = {d.symbol_path for d in index.implementation_lookup("PARSER")}
    assert anycase == {"shop.parse.Parser", "shop.parse.parser"}
    assert [d.symbol_path for d in index.implementation_lookup("UNIQUE_HELPER")] == [
        "shop.helpers.unique_helper"
    ]
    assert [d.symbol_path for d in index.implementation_lookup("repository.SAVE")] == [
        "shop.repo.Repository.save"
    ]


def test_lookup_of_an_unknown_name_is_empty_and_an_empty_one_is_refused(index: CodeIndex) -> None:
    assert index.implementation_lookup("no_such_function_anywhere") == []
    for empty in ("", "   "):
        with pytest.raises(QueryError, match="empty"):
            index.implementation_lookup(empty)


# call_graph: confidences


def test_callers_resolved_through_self_and_through_a_receiver_built_from_its_class(
    index: CodeIndex,
) -> None:
    result = index.call_graph("Repository.save")
    callers = callers_of(result)
    assert set(callers) == {"shop.repo.Repository.fetch", "shop.service.process"}
    through_self = callers["shop.repo.Repository.fetch"]
    assert (through_self.confidence, through_self.reason) == ("resolved", None)
    assert (through_self.path, through_self.line) == ("shop/repo.py", 14)
    assert through_self.callee_text == "self.save"
    # `repo.save(...)` on `repo = Repository("orders")`: a call on that class.
    built = callers["shop.service.process"]
    assert (built.confidence, built.reason) == ("resolved", None)
    assert (built.path, built.line) == ("shop/service.py", 6)
    assert built.callee is not None
    assert built.callee.symbol_path == "shop.repo.Repository.save"
    assert all(e.depth == 1 and e.kind == "call" for e in result.callers)

    (callee,) = result.callees
    assert callee.confidence == "resolved"  # `from shop.db import write`
    assert callee.callee is not None
    assert (callee.callee.path, callee.callee.symbol_path) == ("shop/db.py", "shop.db.write")
    assert (callee.path, callee.line) == ("shop/repo.py", 11)
    assert result.complete
    assert result.unresolved_callers == 0
    assert result.note == ""


def test_a_unique_global_name_called_without_import_is_inferred(index: CodeIndex) -> None:
    result = index.call_graph("unique_helper")
    (edge,) = result.callers
    assert edge.caller.symbol_path == "shop.views.shout"
    assert edge.confidence == "inferred"
    assert (edge.path, edge.line) == ("shop/views.py", 6)
    assert result.complete


def test_a_name_two_modules_define_is_ambiguous_with_its_candidates(index: CodeIndex) -> None:
    result = index.call_graph("shop.render_html.render")
    assert result.symbol.path == "shop/render_html.py"
    (edge,) = result.callers
    assert edge.caller.symbol_path == "shop.views.show"
    assert (edge.confidence, edge.reason) == ("unresolved", "ambiguous")
    assert edge.callee is None
    assert {c.path for c in edge.candidates} == {"shop/render_html.py", "shop/render_text.py"}
    assert not result.complete
    assert "ambiguous" in result.note
    data = edge.to_dict()
    assert data["candidate_count"] == 2
    assert sorted(data["candidates"]) == [
        "shop.render_html.render (shop/render_html.py:1)",
        "shop.render_text.render (shop/render_text.py:1)",
    ]
    assert "callee_path" not in data

    # Seen from the caller's side: one call, two possible targets, none chosen.
    (out,) = index.call_graph("show", direction="callees").callees
    assert (out.confidence, out.reason, out.callee) == ("unresolved", "ambiguous", None)
    assert len(out.candidates) == 2


def test_an_unresolved_call_of_the_name_makes_callers_incomplete(index: CodeIndex) -> None:
    result = index.call_graph("dispose")
    assert result.symbol.symbol_path == "shop.db.dispose"
    assert result.callers == ()  # `handle.dispose()` could be anything's dispose
    assert result.unresolved_callers == 1
    assert not result.complete
    assert "could not be resolved" in result.note
    assert "no callers" not in result.note

    (out,) = index.call_graph("cleanup", direction="callees").callees
    assert (out.confidence, out.reason, out.callee) == ("unresolved", "unknown", None)
    assert out.callee_text == "handle.dispose"


def test_no_callers_is_claimed_only_when_no_call_of_the_name_exists(index: CodeIndex) -> None:
    result = index.call_graph("orphan_function")
    assert result.callers == ()
    assert result.complete
    assert result.unresolved_callers == 0
    assert "no call of this name anywhere" in result.note
    for incomplete in ("dispose", "shop.render_text.render"):
        assert not index.call_graph(incomplete).complete


def test_other_matches_are_listed_and_the_note_says_how_to_pick(index: CodeIndex) -> None:
    result = index.call_graph("write")
    assert result.symbol.path == "shop/db.py"
    assert [o.path for o in result.others] == ["tests/test_db.py"]
    assert "2 definitions match 'write'" in result.note
    assert [e.caller.symbol_path for e in result.callers] == ["shop.repo.Repository.save"]
    (test_side,) = index.call_graph("tests/test_db.py:1").callers
    assert test_side.caller.symbol_path == "tests.test_db.test_write"
    assert test_side.confidence == "resolved"


def test_limit_cuts_and_says_so(index: CodeIndex) -> None:
    result = index.call_graph("Repository.save", direction="callers", limit=1)
    assert len(result.callers) == 1
    assert result.callees == ()
    assert not result.complete
    assert "cut at 1 edges" in result.note


def test_depth_two_walks_callers_of_callers(index: CodeIndex) -> None:
    one = index.call_graph("shop.db.write", direction="callers")
    assert [(e.caller.symbol_path, e.depth) for e in one.callers] == [
        ("shop.repo.Repository.save", 1)
    ]
    two = index.call_graph("shop.db.write", direction="callers", depth=2)
    assert {(e.caller.symbol_path, e.depth) for e in two.callers} == {
        ("shop.repo.Repository.save", 1),
        ("shop.repo.Repository.fetch", 2),
        ("shop.service.process", 2),
    }
    for edge in two.callers:
        if edge.depth == 2:
            assert edge.callee is not None
            assert edge.callee.symbol_path == "shop.repo.Repository.save"
    four = index.call_graph("shop.db.write", direction="callers", depth=4)
    assert ("shop.cli.run", 3) in {(e.caller.symbol_path, e.depth) for e in four.callers}

    down = index.call_graph("run", direction="callees", depth=3)
    reached = {(e.callee.symbol_path, e.depth) for e in down.callees if e.callee is not None}
    assert {
        ("shop.service.process", 1),
        ("shop.repo.Repository.save", 2),
        ("shop.db.write", 3),
    } <= reached


@pytest.mark.parametrize(
    ("callee", "caller", "path", "line"),
    [
        ("helperJs", "mainJs", "web/app.js", 6),
        ("helper_rs", "main_rs", "native/lib.rs", 6),
    ],
)
def test_other_languages_resolve_calls_in_the_same_file(
    index: CodeIndex, callee: str, caller: str, path: str, line: int
) -> None:
    result = index.call_graph(callee)
    assert result.symbol.path == path
    (edge,) = result.callers
    assert edge.caller.name == caller
    assert (edge.path, edge.line, edge.confidence) == (path, line, "resolved")
    assert result.complete


# call_graph_path


def test_path_finds_a_three_step_chain(index: CodeIndex) -> None:
    found = index.call_graph_path("run", "shop.db.write")
    assert found.found
    assert found.note == ""
    assert (found.source.symbol_path, found.target.symbol_path) == (
        "shop.cli.run",
        "shop.db.write",
    )
    steps = [
        (e.caller.symbol_path, e.callee.symbol_path if e.callee else None, e.confidence)
        for e in found.edges
    ]
    assert steps == [
        ("shop.cli.run", "shop.service.process", "resolved"),
        ("shop.service.process", "shop.repo.Repository.save", "resolved"),
        ("shop.repo.Repository.save", "shop.db.write", "resolved"),
    ]
    assert [e.depth for e in found.edges] == [1, 2, 3]
    assert [(e.path, e.line) for e in found.edges] == [
        ("shop/cli.py", 5),
        ("shop/service.py", 6),
        ("shop/repo.py", 11),
    ]


def test_path_not_found_says_why(index: CodeIndex) -> None:
    backwards = index.call_graph_path("shop.db.write", "run")
    assert not backwards.found
    assert backwards.edges == ()
    assert "no chain of at most 8" in backwards.note
    short = index.call_graph_path("run", "shop.db.write", max_depth=2)
    assert not short.found
    assert "at most 2" in short.note


def test_path_through_an_ambiguous_call_says_to_check_it(index: CodeIndex) -> None:
    found = index.call_graph_path("show", "shop.render_text.render")
    assert found.found
    (edge,) = found.edges
    assert (edge.confidence, edge.reason) == ("unresolved", "ambiguous")
    assert "ambiguous" in found.note


# Bad queries


@pytest.mark.parametrize(
    ("symbol", "kwargs", "message"),
    [
        ("", {}, "empty"),
        ("  ", {}, "empty"),
        ("no_such_function_anywhere", {}, "no definition of 'no_such_function_anywhere'"),
        ("write", {"depth": 0}, "depth must be between 1 and 5"),
        ("write", {"depth": 6}, "depth must be between 1 and 5"),
        ("write", {"direction": "up"}, "direction must be"),
        ("write", {"limit": 0}, "limit must be at least 1"),
    ],
)
def test_bad_call_graph_queries_raise(
    index: CodeIndex, symbol: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(QueryError, match=message):
        index.call_graph(symbol, **kwargs)  # type: ignore[arg-type]


def test_bad_path_queries_raise(index: CodeIndex) -> None:
    with pytest.raises(QueryError, match="no definition of 'nowhere_at_all'"):
        index.call_graph_path("run", "nowhere_at_all")
    with pytest.raises(QueryError, match="no definition of 'nowhere_at_all'"):
        index.call_graph_path("nowhere_at_all", "run")
    with pytest.raises(QueryError, match="empty"):
        index.call_graph_path("", "run")
    for depth in (0, 13):
        with pytest.raises(QueryError, match="max_depth must be between 1 and 12"):
            index.call_graph_path("run", "write", max_depth=depth)


# Edits


def test_the_graph_follows_edits(index: CodeIndex) -> None:
    root = index.root
    before = {e.caller.symbol_path for e in index.call_graph("shop.db.write").callers}
    assert before == {"shop.repo.Repository.save"}

    repo = root / "shop" / "repo.py"
    repo.write_text(
        PROJECT["shop/repo.py"].replace("return write(self.table, row)", "return row"),
        encoding="utf-8",
    )
    (root / "shop" / "audit.py").write_text(
        "from shop.db import write\n\n\ndef audit(event):\n    return write('audit', event)\n",
        encoding="utf-8",
    )
    report = index.index()
    assert report.files_parsed == 2

    after = index.call_graph("shop.db.write")
    (edge,) = after.callers
    assert edge.caller.symbol_path == "shop.audit.audit"
    assert (edge.path, edge.line, edge.confidence) == ("shop/audit.py", 5, "resolved")
    assert index.call_graph("Repository.save", direction="callees").callees == ()
    assert not index.call_graph_path("run", "shop.db.write").found
    assert index.implementation_lookup("audit")[0].path == "shop/audit.py"

    (root / "shop" / "audit.py").unlink()
    index.index()
    assert index.implementation_lookup("audit") == []
    gone = index.call_graph("shop.db.write")
    assert gone.callers == ()
    assert gone.complete


# Serialisation


def test_results_are_json_serialisable(index: CodeIndex) -> None:
    result = index.call_graph("Repository.save", depth=2)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["symbol"]["symbol_path"] == "shop.repo.Repository.save"
    assert {c["caller"] for c in data["callers"]} >= {"shop.service.process"}
    assert data["callees"][0]["callee_path"] == "shop/db.py"
    assert data["complete"] is True
    ambiguous = json.loads(json.dumps(index.call_graph("shop.render_html.render").to_dict()))
    assert ambiguous["callers"][0]["reason"] == "ambiguous"
    path = json.loads(json.dumps(index.call_graph_path("run", "write").to_dict()))
    assert path["found"] is True
    assert [e["callee"] for e in path["edges"]][-1] == "shop.db.write"
    definitions = [d.to_dict() for d in index.implementation_lookup("write")]
    assert json.loads(json.dumps(definitions)) == definitions
    assert isinstance(index.implementation_lookup("write")[0], Definition)


def test_a_long_callee_text_is_shortened_in_the_dict(make_repo: MakeRepo) -> None:
    chain = "client.session.transport.connection.pool.acquire(timeout).socket.send"
    root = make_repo(
        {
            "pyproject.toml": "",
            "app.py": f"def send_all(client, timeout):\n    return {chain}(b'x')\n",
        }
    )
    with CodeIndex(root) as index:
        callees = index.call_graph("send_all", direction="callees").callees
    (edge,) = [e for e in callees if e.callee_text.endswith(".send")]
    assert edge.callee_text == chain
    assert edge.to_dict()["callee_text"] == "client…send"


def test_the_index_is_built_on_first_use(make_repo: MakeRepo) -> None:
    root: Path = make_repo(PROJECT)
    with CodeIndex(root) as index:
        assert not index.status().exists
        assert index.call_graph("run").callees[0].callee is not None
        assert index.status().exists
