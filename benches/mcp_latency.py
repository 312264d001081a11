"""Latency of the MCP tools as an agent sees it: ``python -m benches.mcp_latency [--quick]``.

Spawns ``coderecall mcp ROOT`` (default: this repository) over stdio and talks to it with the
MCP SDK's own client, as an agent's harness would. Once the server's first index is up to
date, every tool the server marks read-only is called N times (30; 5 with ``--quick``), and
the table gives p50, p95 and max latency per tool, measured at the client (JSON-RPC over the
pipes included), with the size of the answers in tokens (the tokenizer the server's token cap
is counted with).

The arguments are realistic for the root and not hard-coded: a few plain-language questions
find code with ``codebase_peek``; ``implementation_lookup`` on those hits gives definitions,
the best-connected of which become the identifiers (checked to name one definition), their
files the paths, their call graph the source-target pairs of ``call_graph_path``. Each tool
cycles through its arguments; ``codebase_context`` is measured on each of its routes. A
read-only tool this script has no arguments for stops it: the table must cover them all.
With a transformer model, the questions repeat within the 16 queries whose vectors the
engine remembers, so their rows measure everything but the model's pass.

Then a second server watches a generated tree (2,000 Python files in a temporary git
repository; 200 with ``--quick``), one of whose files is rewritten again and again (20 times;
5 with ``--quick``) with a new identifier: the second table is the time from the end of each
write to the first ``codebase_search`` whose hits hold it, the watcher's debounce included (what an
agent that edits a file and then searches sees, without calling ``index_codebase``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from coderecall._mcp import count_tokens

from .speed.report import table
from .speed.run import load, machine, native_build
from .speed.stats import fmt_ms, median, percentile
from .speed.trees import generated_repo, module_path, with_marker
from .speed.watch import FUNCTIONS_PER_FILE

CALLS = 30
QUICK_CALLS = 5
READY_TIMEOUT = 3600.0
"""Seconds the first index of the root may take."""
POLL = 0.2
QUESTIONS = (
    "parse the command line arguments",
    "read the configuration file",
    "report an error to the user",
    "search the index for a query",
    "write the results to disk",
)
"""Plain-language questions, the kind an agent asks; they only seed the search for real
identifiers and paths, so they need not match anything in particular."""
IDENTIFIERS = 5
PATHS = 5
CHAINS = 3
EDIT_FILES, QUICK_EDIT_FILES = 2_000, 200
EDITS, QUICK_EDITS = 20, 5
EDIT_POLL = 0.005
"""Seconds between searches while waiting for an edit (each search itself takes a few ms)."""
_CODE_KINDS = frozenset({"module", "section", "document", "text"})
"""Kinds that are not definitions worth a call graph."""

Arguments = dict[str, Any]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benches.mcp_latency", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CALLS} calls per tool")
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="project to serve (default: this repository)",
    )
    parser.add_argument("--calls", type=int, help=f"calls per tool (default {CALLS})")
    return parser.parse_args(argv)


class Client:
    """Calls tools and keeps, per row of the table, each call's latency and answer size."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def text(self, tool: str, arguments: Arguments) -> tuple[str, float, bool]:
        """The answer's text, the call's seconds, and whether it is a tool error."""
        started = time.perf_counter()
        result = await self.session.call_tool(tool, arguments)
        seconds = time.perf_counter() - started
        if not isinstance(result, CallToolResult):
            raise RuntimeError(f"{tool}: unexpected result {type(result).__name__}")
        texts = [block.text for block in result.content if isinstance(block, TextContent)]
        return "".join(texts), seconds, bool(result.is_error)

    async def answer(self, tool: str, arguments: Arguments) -> dict[str, Any]:
        text, _, failed = await self.text(tool, arguments)
        if failed:
            raise RuntimeError(f"{tool}({arguments}) failed: {text}")
        data: dict[str, Any] = json.loads(text)
        return data

    async def answer_or_none(self, tool: str, arguments: Arguments) -> dict[str, Any] | None:
        text, _, failed = await self.text(tool, arguments)
        if failed:
            return None
        data: dict[str, Any] = json.loads(text)
        return data


@dataclass(slots=True)
class Targets:
    """Arguments that exist in the root, found through the tools themselves."""

    questions: list[str]
    identifiers: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    locations: list[tuple[str, int]] = field(default_factory=list)
    chains: list[tuple[str, str]] = field(default_factory=list)
    memories: list[int] = field(default_factory=list)


async def seed_memory(client: Client, targets: Targets) -> None:
    """Memories for the memory tools to find, written through ``memory_add`` into the run's
    own database: one note per identifier and file the other rows use (synthetic text
    naming real code, as an agent's notes would)."""
    notes = [
        f"{name} is where the work on {name} starts; check its callers first."
        for name in targets.identifiers
    ]
    notes += [
        f"Conventions of {path}: keep its public functions documented." for path in targets.paths
    ]
    for note in notes:
        answer = await client.answer("memory_add", {"text": note, "type": "observation"})
        if answer["record"] is not None:
            targets.memories.append(int(answer["record"]["id"]))


async def wait_ready(client: Client) -> float:
    """Seconds until the server's first index update finished (``stale`` gone)."""
    started = time.perf_counter()
    while True:
        status = await client.answer("index_status", {})
        if "stale" not in status:
            return time.perf_counter() - started
        note = str(status.get("stale_note", ""))
        if note.startswith("the last index update failed"):
            raise RuntimeError(note)
        if time.perf_counter() - started > READY_TIMEOUT:
            raise TimeoutError("the first index did not finish")
        await anyio.sleep(POLL)


async def find_targets(client: Client) -> Targets:
    targets = Targets(questions=list(QUESTIONS))
    hits: list[dict[str, Any]] = []
    for question in QUESTIONS:
        peek = await client.answer("codebase_peek", {"query": question, "source": "code"})
        hits.extend(peek["hits"])
    if not hits:
        raise RuntimeError("the questions found nothing: is the root indexed and non-empty?")

    # The definitions at the hits, best connected first.
    definitions: dict[tuple[str, int], dict[str, Any]] = {}
    for hit in hits:
        found = await client.answer_or_none(
            "implementation_lookup",
            {"symbol": f"{hit['path']}:{hit['start_line']}", "limit": 1, "with_content": False},
        )
        for definition in (found or {}).get("definitions", []):
            if definition["kind"] not in _CODE_KINDS:
                definitions[(definition["path"], definition["start_line"])] = definition
    # Called and calling both, as the functions an agent asks about mostly are.
    ranked = sorted(
        definitions.values(),
        key=lambda d: (-min(d["callers"], d["callees"]), -(d["callers"] + d["callees"])),
    )
    names: set[str] = set()
    for definition in ranked:
        if len(targets.identifiers) >= IDENTIFIERS:
            break
        if definition["name"] in names:
            continue
        names.add(definition["name"])
        name = await _unambiguous_name(client, definition)
        if name is not None:
            targets.identifiers.append(name)
            targets.locations.append((definition["path"], definition["start_line"]))
    for path in dict.fromkeys(hit["path"] for hit in hits):
        if len(targets.paths) >= PATHS:
            break
        context = await client.answer("codebase_context", {"query": path, "budget": 200})
        if context["route"] == "path":
            targets.paths.append(path)

    for identifier in targets.identifiers:
        if len(targets.chains) >= CHAINS:
            break
        chain = await _chain_through(client, identifier)
        if chain is not None:
            targets.chains.append(chain)
    return targets


async def _unambiguous_name(client: Client, definition: dict[str, Any]) -> str | None:
    """The definition's name if it names nothing else, else its qualified name if that finds
    it first; and only if ``codebase_context`` takes it as an identifier."""
    where = (definition["path"], definition["start_line"])
    for name, alone in ((definition["name"], True), (definition["symbol_path"], False)):
        found = await client.answer_or_none(
            "implementation_lookup", {"symbol": name, "limit": 2, "with_content": False}
        )
        if not found:
            continue
        first = found["definitions"][0]
        if (first["path"], first["start_line"]) != where or (
            alone and len(found["definitions"]) > 1
        ):
            continue
        context = await client.answer("codebase_context", {"query": name, "budget": 200})
        if context["route"] == "identifier":
            return str(name)
    return None


async def _chain_through(client: Client, identifier: str) -> tuple[str, str] | None:
    """A caller of ``identifier`` and one of its callees: a chain of two calls, if the call
    graph has one (else one call)."""
    # One direction at a time: a long list of callers would crowd the callees out of the cap.
    up = await client.answer("call_graph", {"symbol": identifier, "direction": "callers"})
    down = await client.answer("call_graph", {"symbol": identifier, "direction": "callees"})
    callers = [e["caller"] for e in up["callers"] if e["confidence"] != "unresolved"]
    callees = [e["callee"] for e in down["callees"] if e["callee"] is not None]
    candidates = [(a, b) for a in callers[:2] for b in callees[:2]]
    candidates += [(a, identifier) for a in callers[:1]] + [(identifier, b) for b in callees[:1]]
    for source, target in candidates:
        found = await client.answer_or_none("call_graph_path", {"source": source, "target": target})
        if found is not None and found["found"]:
            return source, target
    return None


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    tool: str
    arguments: list[Arguments]
    what: str


def rows_for(tools: Sequence[str], targets: Targets) -> list[Row]:
    """One row per read-only tool (three for codebase_context, one per route)."""
    ids, paths, questions = targets.identifiers, targets.paths, targets.questions
    memories = targets.memories
    plans: dict[str, Callable[[], list[Row]]] = {
        "codebase_context": lambda: [
            Row(
                f"codebase_context ({kind})",
                "codebase_context",
                _each("query", values),
                _n(values, noun),
            )
            for kind, values, noun in (
                ("identifier", ids, "identifiers"),
                ("path", paths, "files"),
                ("question", questions, "questions"),
            )
        ],
        "codebase_search": _single(
            "codebase_search", _each("query", questions + ids), _n(questions + ids, "queries")
        ),
        "codebase_peek": _single(
            "codebase_peek", _each("query", questions + ids), _n(questions + ids, "queries")
        ),
        "implementation_lookup": _single(
            "implementation_lookup", _each("symbol", ids), _n(ids, "identifiers")
        ),
        "call_graph": _single("call_graph", _each("symbol", ids), _n(ids, "identifiers")),
        "call_graph_path": _single(
            "call_graph_path",
            [{"source": s, "target": t} for s, t in targets.chains],
            _n(targets.chains, "chains"),
        ),
        "find_similar": _single(
            "find_similar",
            [{"path": p, "line": line} for p, line in targets.locations],
            _n(targets.locations, "definitions"),
        ),
        "index_status": _single("index_status", [{}], "-"),
        "index_metrics": _single("index_metrics", [{}], "-"),
        "index_logs": _single("index_logs", [{}], "last 50 records"),
        "list_knowledge_bases": _single("list_knowledge_bases", [{}], "-"),
        "ask": _single("ask", _each("question", questions), _n(questions, "questions")),
        "memory_search": _single(
            "memory_search", _each("query", questions + ids), _n(questions + ids, "queries")
        ),
        "memory_context": _single(
            "memory_context", _each("query", questions), _n(questions, "tasks")
        ),
        "memory_get": _single(
            "memory_get", [{"ids": i} for i in memories], _n(memories, "memories")
        ),
        "memory_timeline": _single(
            "memory_timeline", [{"id": i} for i in memories], _n(memories, "memories")
        ),
    }
    unknown = [tool for tool in tools if tool not in plans]
    if unknown:
        raise SystemExit(f"no arguments for the read-only tool(s) {', '.join(unknown)}")
    rows = [row for tool in tools for row in plans[tool]()]
    empty = [row.label for row in rows if not row.arguments]
    if empty:
        raise SystemExit(f"found no arguments in the root for {', '.join(empty)}")
    return rows


def _single(tool: str, arguments: list[Arguments], what: str) -> Callable[[], list[Row]]:
    """The plan of a tool measured in one row."""
    return lambda: [Row(tool, tool, arguments, what)]


def _each(key: str, values: Sequence[str]) -> list[Arguments]:
    return [{key: value} for value in values]


def _n(values: Sequence[object], what: str) -> str:
    return f"{len(values)} {what}"


@dataclass(slots=True)
class Measured:
    seconds: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    truncated: int = 0


async def measure(client: Client, row: Row, calls: int) -> Measured:
    """``calls`` calls cycling through the row's arguments, after one untimed call each."""
    for arguments in row.arguments:
        await client.answer(row.tool, arguments)
    out = Measured()
    for n in range(calls):
        arguments = row.arguments[n % len(row.arguments)]
        text, seconds, failed = await client.text(row.tool, arguments)
        if failed:
            raise RuntimeError(f"{row.tool}({arguments}) failed: {text}")
        out.seconds.append(seconds)
        out.tokens.append(count_tokens(text))
        if json.loads(text).get("truncated"):
            out.truncated += 1
    return out


@dataclass(slots=True)
class Run:
    ready_seconds: float
    status: dict[str, Any]
    embedding: str
    rows: list[tuple[Row, Measured]]


def server(root: Path, memory: Path, **env: str) -> StdioServerParameters:
    """``coderecall mcp root`` with its own memory database (never the user's)."""
    environment = {**os.environ, "CODERECALL_MEMORY": str(memory), **env}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "coderecall", "mcp", str(root)], env=environment
    )


async def bench(root: Path, calls: int, memory: Path) -> Run:
    params = server(root, memory)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=READY_TIMEOUT) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        read_only = [
            tool.name
            for tool in listed.tools
            if tool.annotations is not None and tool.annotations.read_only_hint
        ]
        client = Client(session)
        ready = await wait_ready(client)
        status = (await client.answer("index_status", {}))["status"]
        metrics = (await client.answer("index_metrics", {}))["metrics"]
        targets = await find_targets(client)
        await seed_memory(client, targets)
        rows = rows_for(read_only, targets)
        measured = [(row, await measure(client, row, calls)) for row in rows]
    return Run(ready, status, str(metrics["embedding_model"] or "lexical only"), measured)


async def edit_latency(scratch: Path, files: int, edits: int) -> list[float]:
    """Seconds from the end of each write to the first search that finds what it wrote."""
    root = scratch / "tree"
    root.mkdir()
    generated_repo(root, files, FUNCTIONS_PER_FILE)
    target = module_path(root, 0)
    original = target.read_text(encoding="utf-8")
    params = server(root, scratch / "edits-memory.db", CODERECALL_EMBEDDING_PROVIDER="none")
    seconds: list[float] = []
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=READY_TIMEOUT) as session,
    ):
        await session.initialize()
        client = Client(session)
        await wait_ready(client)
        for n in range(edits):
            word, edited = with_marker(original, n)
            target.write_text(edited, encoding="utf-8")
            written = time.perf_counter()
            while True:
                # The text, not just the path: the file held the previous edit's identifier.
                found = await client.answer("codebase_search", {"query": word, "limit": 3})
                if any(word in hit["content"] for hit in found["hits"]):
                    seconds.append(time.perf_counter() - written)
                    break
                if time.perf_counter() - written > 60:
                    raise TimeoutError(f"{word} never became searchable")
                await anyio.sleep(EDIT_POLL)
            await anyio.sleep(1.0)  # the next edit is a burst of its own
    return seconds


def render_edits(seconds: list[float], files: int) -> str:
    ms = [s * 1000 for s in seconds]
    return "\n".join(
        [
            "\n## Edit to searchable through the server\n",
            f"{files:,} generated Python files, watched by the server (debounce: the "
            "watch-debounce setting, 0.3 s, included); each edit rewrites one file with a new "
            "identifier, then codebase_search is asked until a hit holds it\n",
            table(
                ["edits", "p50 ms", "p95 ms", "max ms"],
                [
                    [
                        str(len(ms)),
                        fmt_ms(median(ms)),
                        fmt_ms(percentile(ms, 95)),
                        fmt_ms(max(ms)),
                    ]
                ],
            ),
        ]
    )


def render(run: Run, root: Path, calls: int) -> str:
    status = run.status
    lines = [
        "## MCP tool latency\n",
        f"{machine()}; {native_build()}; {load()}\n",
        f"root {root}: {status['files']:,} files, {status['chunks']:,} chunks; embedding: "
        f"{run.embedding}; first index up to date after {run.ready_seconds:.1f} s; {calls} "
        "calls per row over stdio, measured at the client; memory: a fresh database with "
        "one note per identifier and file, written through memory_add\n",
    ]
    headers = [
        "tool",
        "arguments",
        "p50 ms",
        "p95 ms",
        "max ms",
        "tokens p50",
        "tokens max",
        "cut",
    ]
    body = [
        [
            row.label,
            row.what,
            fmt_ms(median(ms := [s * 1000 for s in m.seconds])),
            fmt_ms(percentile(ms, 95)),
            fmt_ms(max(ms)),
            f"{median(m.tokens):,.0f}",
            f"{max(m.tokens):,}",
            f"{m.truncated}/{len(m.seconds)}",
        ]
        for row, m in run.rows
    ]
    lines.append(table(headers, body, text=2))
    lines.append(
        "\ncut: answers that said truncated (a context pack cut to its budget, or a list cut "
        "to the token cap). Tokens are counted with the tokenizer of the server's token cap."
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    calls = args.calls or (QUICK_CALLS if args.quick else CALLS)
    root = args.root.resolve()
    files = QUICK_EDIT_FILES if args.quick else EDIT_FILES
    with tempfile.TemporaryDirectory(prefix="coderecall-mcp-bench-") as scratch:
        run = anyio.run(bench, root, calls, Path(scratch) / "memory.db")
        edits = anyio.run(edit_latency, Path(scratch), files, QUICK_EDITS if args.quick else EDITS)
    print(render(run, root, calls))
    print(render_edits(edits, files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
