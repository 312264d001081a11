"""``CodeIndex.context``: routing, the evidence of each route, and the token budget counted
with the real tokenizer; then a large repository, through the MCP tools' token cap."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from coderecall import CodeIndex, QueryError
from coderecall._context import PER_FILE, ContextPack, build_context, route_of
from coderecall._logs import LOG_DIR, LOG_FILE
from coderecall._mcp import McpService, count_tokens
from coderecall._tokens import default_counter
from helpers import MakeRepo, git, write_files

if TYPE_CHECKING:
    from coderecall._native import CallGraph

STORE = '''\
"""Key-value storage on disk."""

import json
from pathlib import Path

SETTINGS_NAME = "settings.json"


def load_settings(folder):
    """Read the settings file of a folder."""
    with open(Path(folder) / SETTINGS_NAME) as handle:
        return json.load(handle)


def save_record(key, value):
    """Persist one record."""
    payload = encode_record(key, value)
    return payload


def encode_record(key, value):
    """Encode a record as one line."""
    return f"{key}={value}"
'''

PROJECT: dict[str, str] = {
    "pyproject.toml": '[project]\nname = "vault"\n',
    "vault/__init__.py": "",
    "vault/store.py": STORE,
    "vault/api.py": """\
from vault.store import save_record


def create_user(name):
    \"\"\"Create a user.\"\"\"
    record = {"name": name}
    return save_record(name, record)


def update_user(name, changes):
    return save_record(name, changes)
""",
    "vault/jobs.py": """\
from vault.store import save_record


def nightly_backup(rows):
    for key, value in rows:
        save_record(key, value)
""",
    # A long definition, for cutting.
    "vault/report.py": "def long_report(data):\n"
    + "".join(f"    total_{i} = data.get('column_{i}', {i}) * {i}\n" for i in range(300))
    + "    return total_0\n",
    # A class whose method is called more than the class: the path route must not pack the
    # method twice (once alone, once inside its class).
    "vault/holder.py": '''\
"""Holders."""


class Holder:
    """Holds one value."""

    def __init__(self, value):
        self.value = value

    def current_value(self):
        return self.value
''',
    "vault/use.py": "".join(
        f"def use_{n}(holder):\n    return holder.current_value()\n\n\n" for n in range(3)
    ),
    # A function with a great many unresolved callees and several namesakes: its notes
    # alone would fill a small budget.
    "vault/hub.py": "import external_library\n\n\ndef hub(x):\n"
    + "".join(
        f"    external_library.submodule.perform_the_very_specific_operation_number_{i}(x)\n"
        for i in range(30)
    )
    + "    return x\n",
    **{f"vault/hub_{n}.py": "def hub(y):\n    return y\n" for n in range(5)},
}


def line_of(path: str, text: str) -> int:
    for number, line in enumerate(PROJECT[path].splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} is not in {path}")


def check_pack(pack: ContextPack, budget: int) -> None:
    """The invariants of every pack: within the budget, the token count is the rendered
    text's, no item repeats a range of another, items of one file wait their turn."""
    assert pack.budget == budget
    assert pack.tokenizer == default_counter().name
    assert pack.tokens <= budget, pack.render()
    assert default_counter().count(pack.render()) == pack.tokens
    for item in pack.items:
        assert item.tokens == default_counter().count(item.render())
    if pack.dropped:
        assert pack.truncated
        assert any("left out to stay within" in n for n in pack.notes)
    if any(item.truncated for item in pack.items):
        assert pack.truncated
    ranged = [i for i in pack.items if i.path and i.kind not in ("outline", "note")]
    for a in ranged:
        for b in ranged:
            if a is not b and a.path == b.path:
                inside = b.start_line <= a.start_line and a.end_line <= b.end_line
                assert not inside, f"{a.header()} repeats {b.header()}"
    json.loads(json.dumps(pack.to_dict()))


def _answer(text: str, cap: int) -> dict[str, Any]:
    assert count_tokens(text) <= cap, text[:300]
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.fixture
def index(make_repo: MakeRepo) -> Iterator[CodeIndex]:
    with CodeIndex(make_repo(PROJECT)) as code_index:
        code_index.index()
        yield code_index


# Routes


def test_an_identifier_gets_its_definition_callers_and_callees(index: CodeIndex) -> None:
    pack = index.context("save_record")
    check_pack(pack, index.config.context_budget)
    assert pack.route == "identifier"
    assert not pack.truncated
    assert pack.dropped == 0

    first = pack.items[0]
    assert first.kind == "definition"
    start = line_of("vault/store.py", "def save_record")
    assert (first.path, first.start_line, first.end_line) == ("vault/store.py", start, start + 3)
    assert first.symbol_path == "vault.store.save_record"
    assert first.text.startswith('def save_record(key, value):\n    """Persist one record."""')
    assert first.render().startswith(
        f"[definition] vault/store.py:{start}-{start + 3} vault.store.save_record "
        "— definition of save_record (function)\n"
    )

    callers = {i.symbol_path: i for i in pack.items if i.kind == "caller"}
    assert set(callers) == {
        "vault.api.create_user",
        "vault.api.update_user",
        "vault.jobs.nightly_backup",
    }
    create = callers["vault.api.create_user"]
    assert create.path == "vault/api.py"
    assert "def create_user(name):" in create.text
    assert "    return save_record(name, record)" in create.text
    assert create.why == "calls it at line 7 (resolved)"
    assert "        save_record(key, value)" in callers["vault.jobs.nightly_backup"].text

    (callee,) = [i for i in pack.items if i.kind == "callee"]
    assert callee.symbol_path == "vault.store.encode_record"
    assert callee.text.startswith("def encode_record(key, value):")
    assert callee.why.endswith("(resolved)")
    kinds = [i.kind for i in pack.items]
    assert kinds == ["definition", "caller", "caller", "caller", "callee"]
    assert pack.notes == ()


def test_any_indexed_file_name_is_a_path(make_repo: MakeRepo) -> None:
    names = ["pages/[id].tsx", "app/(auth)/login/page.tsx", "src/routes/+page.ts"]
    names += ["docs/build script.py", "notes/#1 50%.py"]
    root = make_repo(
        {
            name: f"def f{n}():\n    pass\n"
            if name.endswith(".py")
            else f"export function f{n}() {{}}\n"
            for n, name in enumerate(names)
        }
    )
    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        index.index(progress=False)
        for n, name in enumerate(names):
            pack = index.context(name, budget=1000)
            assert pack.route == "path", name
            assert pack.items[0].path == name
            located = index.context(f"{name}:1", budget=1000)
            assert located.route == "identifier", name
            assert located.items[0].symbol_path.endswith(f"f{n}")
        # Text that names no file still searches, whatever it looks like.
        for query in ("how does f1 work", "~nobody-such/x.py", "pages/[id].tsx and more"):
            assert index.context(query, budget=1000).route == "search", query


def test_call_parentheses_and_qualified_names_are_identifiers(index: CodeIndex) -> None:
    for query in ("save_record()", "store.save_record", "vault.store.save_record"):
        pack = index.context(query, budget=1000)
        assert pack.route == "identifier", query
        assert pack.items[0].symbol_path == "vault.store.save_record"
    method = index.context("Holder.current_value", budget=1000)
    assert method.route == "identifier"
    assert method.items[0].symbol_path.endswith("Holder.current_value")
    assert {i.symbol_path for i in method.items if i.kind == "caller"} == {
        f"vault.use.use_{n}" for n in range(3)
    }


def test_a_path_gets_the_outline_and_head(index: CodeIndex) -> None:
    for query in ("vault/store.py", str(index.root / "vault" / "store.py")):
        pack = index.context(query, budget=3000)
        check_pack(pack, 3000)
        assert pack.route == "path"
        outline, head, *rest = pack.items
        assert outline.kind == "outline"
        assert outline.path == "vault/store.py"
        listing = outline.text.splitlines()
        assert listing == [
            # A module's constants are definitions too.
            f"L{line_of('vault/store.py', 'SETTINGS_NAME =')}-6 constant "
            "vault.store.SETTINGS_NAME (callers 0, callees 0)",
            f"L{line_of('vault/store.py', 'def load_settings')}-12 function "
            "vault.store.load_settings (callers 0, callees 3)",
            f"L{line_of('vault/store.py', 'def save_record')}-18 function "
            "vault.store.save_record (callers 3, callees 1)",
            f"L{line_of('vault/store.py', 'def encode_record')}-23 function "
            "vault.store.encode_record (callers 1, callees 0)",
        ]
        assert head.kind == "head"
        assert (head.start_line, head.end_line) == (1, 5)  # up to the first definition
        assert head.text.startswith('"""Key-value storage on disk."""\n\nimport json\n')
        # Then the definitions, the most called first.
        assert [i.symbol_path for i in rest] == [
            "vault.store.save_record",
            "vault.store.encode_record",
            "vault.store.SETTINGS_NAME",
            "vault.store.load_settings",
        ]


def test_a_path_never_packs_a_method_twice(index: CodeIndex) -> None:
    pack = index.context("vault/holder.py", budget=3000)
    check_pack(pack, 3000)
    assert pack.route == "path"
    assert pack.render().count("def current_value(self):") == 1
    assert "class vault.holder.Holder" in pack.items[0].text  # listed in the outline


def test_a_question_gets_search_hits(index: CodeIndex) -> None:
    pack = index.context("read the settings file of a folder", budget=3000)
    check_pack(pack, 3000)
    assert pack.route == "search"
    assert {i.kind for i in pack.items} == {"hit"}
    top = pack.items[0]
    assert top.path == "vault/store.py"
    assert top.start_line <= line_of("vault/store.py", "def load_settings") <= top.end_line
    assert "search hit #1" in top.why
    unknown = index.context("NoSuchThing", budget=300)
    assert unknown.route == "search"


def test_only_a_name_or_an_indexed_file_gone_from_the_disk_needs_the_call_graph(
    index: CodeIndex,
) -> None:
    """Building the graph takes seconds on a large project: a question goes without."""
    native = index._ready()
    asked: list[str] = []

    def graph() -> CallGraph:
        asked.append("graph")
        return native.call_graph()

    question = build_context(index, graph, native.lines, "read the settings file", 1000)
    assert question.route == "search"
    assert question.items
    assert route_of(index, graph, "vault/store.py") == "path"  # on the disk
    assert asked == []
    assert route_of(index, graph, "save_record") == "identifier"
    assert asked
    asked.clear()
    (index.root / "vault" / "store.py").unlink()  # indexed still: its outline is the answer
    assert route_of(index, graph, "vault/store.py") == "path"
    assert asked


def test_default_budget_and_bad_queries(index: CodeIndex) -> None:
    assert index.context("encode_record").budget == index.config.context_budget == 3000
    with pytest.raises(QueryError, match="empty"):
        index.context("  ")
    with pytest.raises(QueryError, match="at least 100"):
        index.context("save_record", budget=99)


# Budgets


@pytest.mark.parametrize("budget", [100, 300, 3000])
@pytest.mark.parametrize(
    "query",
    [
        "save_record",
        "long_report",
        "hub",
        "Holder",
        "vault/store.py",
        "vault/report.py",
        "where are records persisted and encoded",
    ],
)
def test_every_pack_stays_within_its_budget(index: CodeIndex, query: str, budget: int) -> None:
    check_pack(index.context(query, budget=budget), budget)


def test_a_long_definition_is_cut_and_says_so(index: CodeIndex) -> None:
    pack = index.context("long_report", budget=300)
    check_pack(pack, 300)
    first = pack.items[0]
    assert first.kind == "definition"
    assert first.truncated
    assert first.text.startswith("def long_report(data):\n")
    assert "total_299" not in first.text
    assert "… (cut to fit the budget)" in pack.render()
    assert pack.truncated
    whole = index.context("long_report", budget=20000)
    assert not whole.truncated
    assert "return total_0" in whole.items[0].text


@pytest.mark.parametrize("query", ["long_report", "sum every total"])
def test_the_smallest_budget_still_shows_the_head_of_the_best_evidence(
    index: CodeIndex, query: str
) -> None:
    """Each candidate is longer than the whole budget: the best one is cut, not dropped."""
    pack = index.context(query, budget=100)
    check_pack(pack, 100)
    assert pack.items, pack.render()
    assert pack.items[0].truncated
    assert pack.items[0].text.strip()


def test_what_does_not_fit_is_dropped_and_counted(index: CodeIndex) -> None:
    pack = index.context("save_record", budget=100)
    check_pack(pack, 100)
    assert pack.truncated
    assert pack.dropped >= 1
    assert pack.notes[-1] == f"{pack.dropped} more item(s) left out to stay within 100 tokens"
    assert len(pack.items) + pack.dropped <= 5


def test_notes_never_push_a_pack_over_its_budget(index: CodeIndex) -> None:
    """30 unresolved callees and five namesakes make notes longer than a small budget."""
    roomy = index.context("vault.hub.hub", budget=3000)
    assert any("calls not resolved to indexed code" in n for n in roomy.notes)
    for budget in (100, 200, 400):
        pack = index.context("vault.hub.hub", budget=budget)
        check_pack(pack, budget)
        assert pack.truncated
    assert index.context("vault.hub.hub", budget=400).items[0].kind == "definition"


def test_items_of_one_file_wait_for_the_other_files(make_repo: MakeRepo) -> None:
    files = {
        "pyproject.toml": "",
        "core.py": "def target(x):\n    return x\n",
        "many.py": "from core import target\n\n\n"
        + "".join(f"def caller_{n}(x):\n    return target(x)\n\n\n" for n in range(5)),
        "other.py": "from core import target\n\n\ndef lone_caller(x):\n    return target(x)\n",
    }
    with CodeIndex(make_repo(files)) as index:
        pack = index.context("target", budget=3000)
    check_pack(pack, 3000)
    paths = [i.path for i in pack.items]
    assert paths[0] == "core.py"
    assert Counter(paths) == {"core.py": 1, "many.py": 5, "other.py": 1}
    # many.py sorts before other.py, yet its items beyond PER_FILE come after other.py's.
    assert paths[1 : 1 + PER_FILE] == ["many.py"] * PER_FILE
    assert paths[1 + PER_FILE] == "other.py"
    assert paths[2 + PER_FILE :] == ["many.py"] * (5 - PER_FILE)


@pytest.mark.parametrize("cap", [600, 1000])
def test_mcp_context_of_a_definition_full_of_escapes(make_repo: MakeRepo, cap: int) -> None:
    """Quotes and backslashes grow when the pack is escaped into JSON: the first try is over
    the cap, and the retry must shrink the budget until the answer fits."""
    body = "".join(f'    table["key_{i}"] = "\\"{i}\\"\\t\\\\"\n' for i in range(200))
    files = {"pyproject.toml": "", "quotes.py": f"def fill(table):\n{body}    return table\n"}
    with CodeIndex(make_repo(files)) as index:
        index.index()
        service = McpService(index, token_cap=cap)
        service.start()
        assert service.wait_ready(60)
        answer = _answer(service.context("fill", 100_000), cap)
    assert answer["route"] == "identifier"
    assert answer["truncated"] is True
    assert answer["context"].startswith("[definition] quotes.py:1-202 quotes.fill")


# A large repository: ~1500 files, a function with 1500 callers, a file of 3000 functions.

MODULES = 1500
HUGE_FUNCTIONS = 3000

DISPATCH = '''\
"""Routing events to the queues that handle them."""


def dispatch(queue, event):
    """Send an event to a queue, retrying when the queue is full."""
    for attempt in range(3):
        if deliver(queue, event):
            return True
    return False


def deliver(queue, event):
    return bool(queue) and event is not None
'''


def _module(n: int) -> str:
    return f'''\
"""Handlers of queue {n}: validate, retry and dispatch events."""

from core.dispatch import dispatch


def setup(config):
    """Prepare queue {n} from the configuration."""
    return dict(config, queue={n})


def handle_event_{n}(event):
    """Validate an event of queue {n} and dispatch it, retrying on failure."""
    for attempt in range(3):
        if validate_{n}(event):
            return dispatch("queue_{n}", event)
    return None


def validate_{n}(event):
    return bool(event) and event.get("queue") == {n}
'''


def _huge() -> str:
    steps = "".join(
        f'def step_{i}(value):\n    """Step {i} of the pipeline."""\n'
        f"    return step_{i - 1}(value) + {i}\n\n\n"
        for i in range(1, HUGE_FUNCTIONS)
    )
    head = '"""The whole pipeline, one step at a time."""\n\n\n'
    return f"{head}def step_0(value):\n    return value\n\n\n{steps}"


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeIndex]:
    root = tmp_path_factory.mktemp("large") / "repo"
    files = {
        "pyproject.toml": '[project]\nname = "large"\n',
        "core/__init__.py": "",
        "core/dispatch.py": DISPATCH,
        "core/huge.py": _huge(),
    }
    for n in range(MODULES):
        files[f"app/pkg_{n // 50}/__init__.py"] = ""
        files[f"app/pkg_{n // 50}/module_{n}.py"] = _module(n)
    write_files(root, files)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "large")
    with CodeIndex(root) as index:
        report = index.index(progress=False)
        assert report.files_seen == len(files)
        yield index


@pytest.mark.slow
def test_large_repository_packs_stay_within_budget(large: CodeIndex) -> None:
    assert len(large.call_graph("dispatch", direction="callers", limit=5000).callers) == MODULES
    for budget in (100, 300, 3000):
        many = large.context("dispatch", budget=budget)
        check_pack(many, budget)
        assert many.route == "identifier"
        # 1500 callers: the pack shows a few and says the rest were cut.
        assert any("cut at 60 edges" in n for n in many.notes) or many.truncated
        assert many.truncated or budget == 3000
        huge = large.context("core/huge.py", budget=budget)
        check_pack(huge, budget)
        assert huge.route == "path"
        assert huge.truncated
        broad = large.context("how are events validated, retried and dispatched", budget=budget)
        check_pack(broad, budget)
        assert broad.route == "search"
    many = large.context("dispatch", budget=3000)
    assert many.items[0].path == "core/dispatch.py"
    assert many.items[0].kind == "definition"
    assert sum(1 for i in many.items if i.kind == "caller") >= 3
    outline = large.context("core/huge.py", budget=3000).items[0]
    assert outline.kind == "outline"
    assert outline.truncated
    assert outline.text.startswith("L4-5 function core.huge.step_0")


@pytest.mark.slow
def test_large_repository_mcp_answers_stay_under_the_token_cap(
    large: CodeIndex, tmp_path: Path
) -> None:
    # A long index log, for index_logs.
    log = large.index_dir / LOG_DIR / LOG_FILE
    log.parent.mkdir(exist_ok=True)
    entry = {"time": "2025-01-31T12:00:00.123Z", "level": "INFO", "pid": 1, "logger": "coderecall"}
    with log.open("a", encoding="utf-8") as out:
        for n in range(600):
            out.write(json.dumps({**entry, "message": f"event {n}: " + "detail " * 20}) + "\n")
    docs = tmp_path / "docs"
    write_files(docs, {"guide.md": "# Guide\n\nDispatching events.\n"})
    large.add_knowledge_base(docs, "guide")

    service = McpService(large)
    service.start()
    assert service.wait_ready(300)
    cap = service.token_cap
    assert cap == large.config.mcp_token_cap

    query = "validate and dispatch events of a queue"
    hits = _answer(service.search(query, 200, None, None, with_content=True), cap)
    assert hits["truncated"] is True
    assert 0 < len(hits["hits"]) < 200
    assert hits["dropped"] == 200 - len(hits["hits"])
    peek = _answer(service.search(query, 500, None, None, with_content=False), cap)
    assert peek["truncated"] is True
    assert 0 < len(peek["hits"]) < 500
    assert set(peek["hits"][0]) == {
        "path",
        "start_line",
        "end_line",
        "symbol_path",
        "kind",
        "score",
        "source",
    }

    graph = _answer(service.call_graph("dispatch", "both", 3, 500), cap)
    assert graph["truncated"] is True
    assert graph["callers"]
    assert graph["complete"] is False  # cut at the limit
    lookup = _answer(service.lookup("setup", 50, True), cap)
    assert lookup["definitions"]
    assert lookup["definitions"][0]["name"] == "setup"
    one = _answer(service.lookup("dispatch", 3, True), cap)
    assert one["definitions"][0]["path"] == "core/dispatch.py"

    for question, route in (
        ("dispatch", "identifier"),
        ("core/huge.py", "path"),
        (query, "search"),
    ):
        for budget in (None, 100_000):
            context = _answer(service.context(question, budget), cap)
            if "route" not in context:
                # The case test_mcp_context_of_a_definition_full_of_escapes covers.
                assert budget is not None
                assert context["truncated"] is True
                continue
            assert context["route"] == route
            assert context["tokens"] <= context["budget"] <= cap
            assert count_tokens(context["context"]) == context["tokens"]
            if budget is not None:
                assert context["note"].startswith("budget lowered from 100000")
            if route == "path":
                assert context["truncated"] is True

    logs = _answer(service.logs(500, None, None), cap)
    assert logs["truncated"] is True
    assert 0 < len(logs["logs"]) < 500
    assert logs["logs"][0]["message"].startswith("event 599:")  # newest first
    filtered = _answer(service.logs(500, "info", "event 42:"), cap)
    assert [e["message"][:9] for e in filtered["logs"]] == ["event 42:"]

    kbs = _answer(service.list_knowledge_bases(), cap)
    assert [kb["name"] for kb in kbs["knowledge_bases"]] == ["guide"]
    assert "truncated" not in kbs
    small = McpService(large, token_cap=60)
    small.start()
    assert small.wait_ready(300)
    cut = _answer(small.list_knowledge_bases(), 60)
    assert cut["truncated"] is True


def test_knowledge_base_hits_keep_their_source(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo(
        {
            "README.md": "# Project\n\nHow to install the widget: run make.\n\nMore.\n",
            "w.py": "def widget():\n    pass\n",
        }
    )
    docs = tmp_path / "docs"
    write_files(docs, {"README.md": "# Docs\n\nInstall the widget with the platypus installer.\n"})
    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        index.index(progress=False)
        index.add_knowledge_base(docs, "docs", progress=False)
        pack = index.context("install the widget", budget=1000)
        # The docs' README.md lies inside the project's README.md range: not a duplicate.
        hits = {(item.source, item.path) for item in pack.items}
        assert {("code", "README.md"), ("docs", "README.md")} <= hits
        kb = next(item for item in pack.items if item.source == "docs")
        assert "platypus" in kb.text
        assert kb.header().startswith("[hit] [docs] README.md:1-3")
        assert {item["source"] for item in pack.to_dict()["items"]} == {"code", "docs"}
