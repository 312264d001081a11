"""Code-intelligence commands of the CLI: ``context``, ``def``, ``calls``, ``path``, ``kb``,
``metrics`` and ``logs``, each with ``--json`` (the same data the MCP tools return)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._cli import (
    ROOT_HELP,
    _common,
    _count,
    _escape,
    _freshness,
    _open_index,
    _positive_int,
    _print_json,
    _print_rows,
    _query_index,
    _size,
    _stdout,
)
from ._graph import MAX_DEPTH, MAX_PATH_DEPTH, CallEdge, CallGraphResult, Direction, short_callee
from ._results import counted

if TYPE_CHECKING:
    from rich.console import Console

    from ._native import GraphNodeDict

__all__ = ["register"]


def _at_most(maximum: int) -> Callable[[str], int]:
    """An argument type for a whole number from 1 to ``maximum``: one out of range is a usage
    error (exit 2, with the option's name), as any other bad argument is."""

    def whole_number(text: str) -> int:
        value = _positive_int(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be between 1 and {maximum}, got {value}")
        return value

    return whole_number


def _failed(message: str) -> int:
    """An outcome that ends with exit code 1 (nothing found, a record refused): its one line
    goes to stderr as errors do, so stdout holds only results (or the ``--json`` answer,
    which is still printed)."""
    print(f"coderecall: error: {' '.join(message.splitlines())}", file=sys.stderr)
    return 1


def register(commands: Any) -> None:
    """Adds the commands to the CLI's subparsers."""
    context = commands.add_parser(
        "context", help="the evidence for a symbol, a file or a question, within a token budget"
    )
    context.add_argument("query", help="identifier, file path or plain words")
    context.add_argument(
        "--budget", type=_positive_int, help="tokens (default: context-budget, 3000)"
    )
    _freshness(context)
    _project(context)
    context.set_defaults(command=_context)

    lookup = commands.add_parser("def", help="where a symbol is defined (implementation first)")
    lookup.add_argument("symbol", help="name, Class.method, module.function or FILE:LINE")
    lookup.add_argument(
        "-n", "--limit", type=_positive_int, default=5, help="definitions (default 5)"
    )
    lookup.add_argument("--no-content", action="store_true", help="print locations only")
    lookup.add_argument(
        "--lines",
        type=_count,
        default=DEF_LINES,
        help=f"lines of each definition printed; a longer one then lists the definitions in "
        f"the rest of it (default {DEF_LINES}; 0 prints all)",
    )
    _freshness(lookup)
    _project(lookup)
    lookup.set_defaults(command=_lookup)

    calls = commands.add_parser("calls", help="callers and callees of a symbol")
    calls.add_argument("symbol", help="name, Class.method, module.function or FILE:LINE")
    direction = calls.add_mutually_exclusive_group()
    direction.add_argument("--callers", action="store_true", help="only who calls it")
    direction.add_argument("--callees", action="store_true", help="only what it calls")
    calls.add_argument(
        "--depth", type=_at_most(MAX_DEPTH), default=1, help=f"calls away (1-{MAX_DEPTH})"
    )
    calls.add_argument("-n", "--limit", type=_positive_int, default=100, help="edges per direction")
    _freshness(calls)
    _project(calls)
    calls.set_defaults(command=_calls)

    path = commands.add_parser("path", help="the shortest call chain from one symbol to another")
    path.add_argument("source")
    path.add_argument("target")
    path.add_argument(
        "--max-depth", type=_at_most(MAX_PATH_DEPTH), default=8, help=f"calls (1-{MAX_PATH_DEPTH})"
    )
    _freshness(path)
    _project(path)
    path.set_defaults(command=_path)

    kb = commands.add_parser("kb", help="knowledge bases: folders indexed beside the code")
    actions = kb.add_subparsers(title="kb commands", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="index a folder beside the code")
    add.add_argument("folder")
    add.add_argument("--name", help="its name (default: the folder's name)")
    add.add_argument("--no-index", action="store_true", help="record it; index on next run")
    _project(add)
    add.set_defaults(command=_kb_add)
    listing = actions.add_parser("list", help="the knowledge bases")
    _project(listing)
    listing.set_defaults(command=_kb_list)
    remove = actions.add_parser("remove", help="stop indexing a knowledge base")
    remove.add_argument("name")
    _project(remove)
    remove.set_defaults(command=_kb_remove)

    metrics = commands.add_parser("metrics", help="index size, call graph and latency numbers")
    _project(metrics)
    metrics.set_defaults(command=_metrics)

    logs = commands.add_parser("logs", help="recent records of the index log")
    logs.add_argument("-n", "--limit", type=_positive_int, default=50, help="records (default 50)")
    logs.add_argument("--level", help="at least this level: debug, info, warning, error")
    logs.add_argument("--contains", help="only records whose message contains this")
    _project(logs)
    logs.set_defaults(command=_logs)


def _project(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", help=ROOT_HELP)
    _common(parser)


def _context(args: argparse.Namespace) -> int:
    with _query_index(args) as index:
        pack = index.context(args.query, budget=args.budget)
    if args.json:
        _print_json(pack.to_dict())
        return 0
    console = _stdout()
    for item in pack.items:
        console.print(f"[bold cyan]{_escape(item.header())}[/]")
        console.print(item.text.rstrip(), markup=False, highlight=False)
        if item.truncated:
            console.print("… (cut to fit the budget)", style="dim")
    for note in pack.notes:
        console.print(f"note: {note}", style="dim", markup=False)
    console.print(
        f"{pack.route}: {counted(len(pack.items), 'item')}, {pack.tokens}/{pack.budget} tokens "
        f"({pack.tokenizer})",
        style="dim",
        markup=False,
    )
    return 0


DEF_LINES = 100
"""Lines of a definition ``coderecall def`` prints by default: a whole class or module (a
TypeScript namespace of 8,000 lines) would flood an agent's context and bury the other
definitions."""
DEF_MEMBERS = 40
"""Definitions listed for the part of a long definition left out."""


def _lookup(args: argparse.Namespace) -> int:
    with _query_index(args) as index:
        found = index.implementation_lookup(
            args.symbol, limit=args.limit, with_content=not args.no_content
        )
        missing = "" if found else index._no_definition(args.symbol)
        cut = {d.path for d in found if not args.json and _cut(d.content, args.lines)}
        graph = index._call_graph() if cut else None
        outlines = {path: graph.outline(path) for path in cut} if graph else {}
    if args.json:
        _print_json([d.to_dict() for d in found])
    if missing:
        return _failed(missing)
    if args.json:
        return 0
    console = _stdout()
    for d in found:
        where = f"{d.path}:{d.start_line}-{d.end_line}"
        console.print(
            f"[bold cyan]{_escape(where)}[/]  {_escape(d.kind)} {_escape(d.symbol_path)}"
            f"  [dim](callers {d.callers}, callees {d.callees})[/]"
        )
        if d.content is None:
            continue
        lines = d.content.rstrip().splitlines()
        if not _cut(d.content, args.lines):
            console.print("\n".join(lines), markup=False, highlight=False)
            continue
        console.print("\n".join(lines[: args.lines]), markup=False, highlight=False)
        shown = d.start_line + args.lines - 1
        rest = _outermost(outlines[d.path], shown + 1, d.end_line)
        summary = f"… {len(lines) - args.lines:,} more lines"
        if rest:
            summary += f", holding {counted(len(rest), 'definition')}"
        console.print(summary + ":" if rest else summary, style="dim", markup=False)
        for n in rest[:DEF_MEMBERS]:
            # Named below the definition: `Parser.parseSourceFile` as `parseSourceFile`.
            name = n["symbol_path"].removeprefix(d.symbol_path).lstrip(".:\\/") or n["name"]
            console.print(
                f"  L{n['start_line']}-{n['end_line']}  {n['kind']} {name}",
                markup=False,
                highlight=False,
            )
        if len(rest) > DEF_MEMBERS:
            console.print(f"  … and {len(rest) - DEF_MEMBERS:,} more", style="dim", markup=False)
        console.print(
            "(--lines 0 prints all of it; coderecall def NAME one of these)",
            style="dim",
            markup=False,
        )
    return 0


def _cut(content: str | None, lines: int) -> bool:
    """Whether a definition's text is cut to ``lines`` (0: never); a quarter more is printed
    whole, since a note of a few lines left out saves nothing."""
    if content is None or lines == 0:
        return False
    return lines + lines // 4 < len(content.rstrip().splitlines())


def _outermost(outline: list[GraphNodeDict], start: int, end: int) -> list[GraphNodeDict]:
    """The definitions within lines ``start``-``end`` that no other one there holds, in
    source order."""
    inside = sorted(
        (n for n in outline if start <= n["start_line"] and n["end_line"] <= end),
        key=lambda n: (n["start_line"], -n["end_line"]),
    )
    outermost: list[GraphNodeDict] = []
    for n in inside:
        if not outermost or n["start_line"] > outermost[-1]["end_line"]:
            outermost.append(n)
    return outermost


def _calls(args: argparse.Namespace) -> int:
    direction: Direction = "callers" if args.callers else "callees" if args.callees else "both"
    with _query_index(args) as index:
        result = index.call_graph(
            args.symbol, direction=direction, depth=args.depth, limit=args.limit
        )
    if args.json:
        _print_json(result.to_dict())
        return 0
    _print_calls(_stdout(), result, direction)
    return 0


def _print_calls(console: Console, result: CallGraphResult, direction: str) -> None:
    s = result.symbol
    console.print(
        f"[bold]{_escape(s.symbol_path)}[/]  [dim]{_escape(s.path)}:{s.start_line}-{s.end_line}[/]"
    )
    if direction != "callees":
        console.print("callers:", style="bold")
        if not result.callers:
            console.print("  none" if result.complete else "  none found (see note)", style="dim")
        _print_edges(console, result.callers, caller_side=True)
    if direction != "callers":
        console.print("callees:", style="bold")
        if not result.callees:
            console.print("  none", style="dim")
        _print_edges(console, result.callees, caller_side=False)
    if result.note:
        console.print(f"note: {result.note}", style="dim", markup=False)


def _print_edges(console: Console, edges: Sequence[CallEdge], *, caller_side: bool) -> None:
    """One row per caller (or callee) and file, with the lines of all its calls: a test
    that calls a function seven times is one row, not seven."""
    rows: list[tuple[str, str, str, list[int]]] = []
    for e in edges:
        indent = "  " * e.depth
        if caller_side:
            name = e.caller.symbol_path or e.caller.path
        elif e.callee is not None:
            name = e.callee.symbol_path
        else:
            name = short_callee(e.callee_text)
        detail = e.confidence if e.reason is None else f"{e.confidence}, {e.reason}"
        if e.reason == "ambiguous":
            detail += f" among {len(e.candidates)}"
        if e.external:
            detail += f": {e.external}"
        row = (f"{indent}{name}", e.path, detail)
        if rows and rows[-1][:3] == row:
            rows[-1][3].append(e.line)
        else:
            rows.append((*row, [e.line]))
    for name, path, detail, lines in rows:
        where = f"{_escape(path)}:{', '.join(map(str, lines))}  ({_escape(detail)})"
        console.print(f"{_escape(name)}  [dim]{where}[/]")


def _path(args: argparse.Namespace) -> int:
    with _query_index(args) as index:
        found = index.call_graph_path(args.source, args.target, max_depth=args.max_depth)
    if args.json:
        _print_json(found.to_dict())
    if not found.found:
        return _failed(f"no call chain: {found.note}")
    if args.json:
        return 0
    console = _stdout()
    console.print(_escape(found.source.symbol_path), style="bold")
    for e in found.edges:
        target = e.callee.symbol_path if e.callee is not None else short_callee(e.callee_text)
        where = f"{_escape(e.path)}:{e.line} ({e.confidence})"
        console.print(f"  -> {_escape(target)}  [dim]{where}[/]")
    if found.note:
        console.print(f"note: {found.note}", style="dim", markup=False)
    return 0


def _kb_add(args: argparse.Namespace) -> int:
    with _open_index(args) as index:
        index._log_to_file()
        kb = index.add_knowledge_base(
            args.folder, args.name, index=not args.no_index, progress=not args.json
        )
    if args.json:
        _print_json(kb.to_dict())
    else:
        _stdout().print(
            f"knowledge base {kb.name}: {kb.path} "
            f"({counted(kb.files, 'file')}, {counted(kb.chunks, 'chunk')})",
            markup=False,
        )
    return 0


def _kb_list(args: argparse.Namespace) -> int:
    with _open_index(args) as index:
        kbs = index.list_knowledge_bases()
    if args.json:
        _print_json([kb.to_dict() for kb in kbs])
        return 0
    console = _stdout()
    if not kbs:
        console.print("no knowledge bases (add one with `coderecall kb add FOLDER`)", style="dim")
    for kb in kbs:
        state = "" if kb.exists else "  (folder missing)"
        console.print(
            f"{kb.name}  {kb.path}  {counted(kb.files, 'file')}, "
            f"{counted(kb.chunks, 'chunk')}{state}",
            markup=False,
        )
    return 0


def _kb_remove(args: argparse.Namespace) -> int:
    with _open_index(args) as index:
        removed = index.remove_knowledge_base(args.name)
    if args.json:
        _print_json({"removed": removed, "name": args.name})
    elif removed:
        _stdout().print(f"removed knowledge base {args.name}", markup=False)
    return 0 if removed else _failed(f"no knowledge base named {args.name}")


def _metrics(args: argparse.Namespace) -> int:
    with _open_index(args) as index:
        metrics = index.metrics()
    if args.json:
        _print_json(metrics.to_dict())
        return 0
    s, g = metrics.status, metrics.graph
    rows = [
        ("files", f"{s.files:,} ({s.chunks:,} chunks, {s.symbols:,} symbols)"),
        ("size", f"{_size(s.db_bytes)} database, {_size(s.lexical_bytes)} lexical index"),
        ("vectors", f"{metrics.vectors:,} ({metrics.embedding_model or 'no embedding model'})"),
        ("knowledge bases", str(metrics.knowledge_bases)),
    ]
    if g:
        edges = int(g["edges"])

        def share(n: float) -> str:
            return f"{n / edges:.0%}" if edges else "-"

        rows.append(
            (
                "call graph",
                f"{counted(int(g['definitions']), 'definition')}, {counted(edges, 'edge')}: "
                f"{share(g['resolved'])} resolved, {share(g['inferred'])} inferred, "
                f"{share(g['unresolved'])} unresolved ({share(g['ambiguous'])} ambiguous, "
                f"{share(g['external'])} external, {share(g['unknown'])} unknown); "
                f"built in {g['build_seconds'] * 1000:.0f} ms",
            )
        )
    for op, stats in metrics.operations.items():
        rows.append(
            (op, f"{int(stats['count'])} runs, p50 {stats['p50_ms']} ms, p95 {stats['p95_ms']} ms")
        )
    _print_rows(_stdout(), rows)
    return 0


def _logs(args: argparse.Namespace) -> int:
    with _open_index(args) as index:
        entries = index.logs(args.limit, level=args.level, contains=args.contains)
    if args.json:
        _print_json(entries)
        return 0
    console = _stdout()
    if not entries:
        console.print("no log records", style="dim")
    for entry in entries:
        console.print(
            f"{entry['time']} {entry['level']:<7} [{entry['pid']}] {entry['message']}",
            markup=False,
            highlight=False,
        )
    return 0
