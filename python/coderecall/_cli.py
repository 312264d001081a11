"""The ``coderecall`` command.

Exit codes: 0 success, 1 an error (one ``coderecall: error: ...`` line on stderr, never a
traceback), 2 a usage error (from argparse), 130 interrupted by Ctrl-C. ``--json`` prints
machine-readable output on stdout; without it, output is for people and is coloured only on a
terminal.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

from . import _hooks as hooks
from ._errors import Error, IndexCorruptError, QueryError
from ._logs import detach_all_file_logs
from ._native import __version__
from ._paths import project_root
from ._results import EmbeddingEstimate, IndexReport, IndexStatus, SearchHit, counted
from ._stopwords import STOP_WORDS

if TYPE_CHECKING:
    # Loaded by the commands that print: a hook's process never needs rich's consoles or
    # pygments (30 ms). The index, the model cache and the hub load with the commands that
    # use them too: a hook needs none of them.
    from rich.console import Console
    from rich.progress import Progress

    from ._index import CodeIndex

__all__ = ["main"]

_SNIPPET_LINES = 8
_UNWRAPPED = 10_000  # console width for piped output
ROOT_HELP = (
    "project root (default: the nearest folder from . upwards holding .git, another project "
    "marker or a local index)"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (argparse exits 2 itself on bad usage)."""
    args = _parser().parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.command
    _show_warnings()
    try:
        return _run(command, args)
    finally:
        detach_all_file_logs()  # main() may run in-process, more than once


def _run(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return command(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader took what it wanted (`coderecall search x | head`): not a failure, as
        # for ripgrep, so `set -o pipefail` scripts pass; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (Error, OSError) as exc:
        print(f"coderecall: error: {_describe(exc)}", file=sys.stderr)
        return 1


def _show_warnings() -> None:
    """Notices and warnings of the library (lexical-only mode, a provider that failed) as
    ``coderecall: ...`` lines on stderr."""
    logger = logging.getLogger("coderecall")
    if not any(getattr(h, "_coderecall_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("coderecall: %(message)s"))
        handler.setLevel(logging.WARNING)
        handler._coderecall_cli = True  # type: ignore[attr-defined]  # marks our own handler
        logger.addHandler(handler)


class _Parser(argparse.ArgumentParser):
    """argparse, with a hint where it cannot know what the user meant: a query that starts
    with a dash (`search "--slurp"`) reads as an option, and its positional goes missing."""

    def error(self, message: str) -> NoReturn:
        missing = re.search(r"required: (query|symbol|source|target|text)\b", message)
        if missing:
            message += (
                f" (a {missing[1]} that starts with '-' goes after --: "
                f"{self.prog} -- -{missing[1].upper()})"
            )
        super().error(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="coderecall", description="A fast, local code index for AI coding agents."
    )
    parser.add_argument("--version", action="version", version=f"coderecall {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    index = commands.add_parser("index", help="build or update the index of a project")
    index.add_argument("path", nargs="?", help=ROOT_HELP)
    index.add_argument("--force", action="store_true", help="re-read every file")
    index.add_argument(
        "--estimate",
        action="store_true",
        help="update the lexical index, then report what embedding would cost; send nothing",
    )
    index.add_argument(
        "--no-wait",
        action="store_true",
        help="fail at once if another process is writing the index (default: wait for it)",
    )
    _common(index)
    index.set_defaults(command=_index)

    search = commands.add_parser("search", help="search the code of a project")
    search.add_argument(
        "query", help="identifier, declaration (`class Foo`), path fragment or plain words"
    )
    _result_options(search)
    _source_option(search)
    search.set_defaults(command=_search)

    peek = commands.add_parser(
        "peek", help="where the best matches are, without their text (saves tokens)"
    )
    peek.add_argument(
        "query", help="identifier, declaration (`class Foo`), path fragment or plain words"
    )
    _result_options(peek)
    _source_option(peek)
    peek.set_defaults(command=_search, no_content=True)

    similar = commands.add_parser("similar", help="find code like a chunk or a snippet")
    similar.add_argument(
        "target",
        help="FILE:LINE (the chunk holding that line), a symbol (its definition), or - to read "
        "code from stdin",
    )
    _result_options(similar)
    similar.set_defaults(command=_similar)

    status = commands.add_parser("status", help="show what the index holds")
    status.add_argument("--path", help=ROOT_HELP)
    _common(status)
    status.set_defaults(command=_status)

    watch = commands.add_parser(
        "watch", help="keep the index current while files change, until Ctrl-C"
    )
    watch.add_argument("path", nargs="?", help=ROOT_HELP)
    watch.add_argument(
        "--debounce",
        type=_seconds,
        metavar="SECONDS",
        help="quiet time that ends a burst of changes (default: the watch-debounce setting)",
    )
    _common(watch)
    watch.set_defaults(command=_watch)

    health = commands.add_parser(
        "health", help="check the index against its source of truth; --repair rebuilds"
    )
    health.add_argument("--path", help=ROOT_HELP)
    health.add_argument(
        "--repair",
        action="store_true",
        help="rebuild derived files (lexical index, vector graph) from the database and drop "
        "unreadable file versions (the next index reads those files again)",
    )
    _common(health)
    health.set_defaults(command=_health)

    mcp = commands.add_parser(
        "mcp", help="serve the index to AI agents over MCP (stdio, or streamable HTTP)"
    )
    mcp.add_argument(
        "path",
        nargs="?",
        help="project root (default: the host's project folder from $CODERECALL_ROOT, "
        "$CLAUDE_PROJECT_DIR or $WORKSPACE_FOLDER_PATHS, else the project holding .)",
    )
    mcp.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio for an agent that starts the server (default), http to serve many",
    )
    mcp.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind with --transport http (default: 127.0.0.1; others need a token)",
    )
    mcp.add_argument(
        "--port", type=_positive_int, default=8765, help="port for --transport http (default: 8765)"
    )
    mcp.add_argument(
        "--token",
        help="bearer token HTTP requests must carry (default: $CODERECALL_MCP_TOKEN)",
    )
    mcp.add_argument(
        "--no-watch",
        dest="watch",
        action="store_false",
        help="do not re-index files as they change (index on start and on index_codebase only)",
    )
    mcp.add_argument(
        "--tools",
        type=_toolsets,
        metavar="SETS",
        help="tool sets to serve, comma-separated: code (always), memory, knowledge, "
        "diagnostics (default: the mcp-tools setting, else all)",
    )
    mcp.add_argument(
        "--force-root",
        action="store_true",
        help="accept a root without a project marker, the home directory or /",
    )
    mcp.set_defaults(command=_mcp)

    hook = commands.add_parser(
        "hook",
        help="an agent host's lifecycle hook (JSON on stdin, JSON on stdout)",
        description=hooks.DESCRIPTION,
    )
    hooks.arguments(hook)
    hook.set_defaults(command=_hook)

    from ._cli_memory import register as register_memory
    from ._cli_tools import register  # they import this module's helpers

    register(commands)
    register_memory(commands)

    model = commands.add_parser("model", help="manage local embedding models")
    models = model.add_subparsers(title="model commands", required=True, metavar="ACTION")
    listing = models.add_parser("list", help="models in the model cache")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(command=_model_list)
    distill = models.add_parser(
        "distill", help="build a fast static model from a transformer, offline"
    )
    distill.add_argument("source", help="transformer model: a folder or a name in the cache")
    distill.add_argument(
        "destination", nargs="?", help="new folder (default: <source>-static-<dims> in the cache)"
    )
    distill.add_argument(
        "--dims",
        type=_positive_int,
        default=256,
        help="vector length, 8 up to the transformer's width (default: 256)",
    )
    distill.add_argument(
        "--corpus",
        metavar="FOLDER",
        help="weigh tokens by their frequency in this project's files (recommended)",
    )
    distill.add_argument(
        "--learn",
        type=_positive_int,
        default=0,
        metavar="CHUNKS",
        help="also fit the model to the transformer on this many chunks of the corpus "
        "(600: about two minutes on two cores; better vectors, see the README)",
    )
    distill.add_argument("--json", action="store_true", help="print JSON")
    distill.set_defaults(command=_model_distill)
    pull = models.add_parser("pull", help="download a model from the Hugging Face hub")
    pull.add_argument("model_id", help="e.g. minishlab/potion-base-8M")
    pull.add_argument("--revision", default="main", help="branch, tag or commit (default: main)")
    pull.add_argument("--name", help="folder name in the cache (default: the model's name)")
    pull.add_argument("--json", action="store_true", help="print JSON")
    pull.set_defaults(command=_model_pull)
    return parser


def _result_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", help=ROOT_HELP)
    parser.add_argument("-n", "--limit", type=_positive_int, help="number of results")
    parser.add_argument(
        "--lang", action="append", help="only this language (repeatable)", metavar="LANG"
    )
    parser.add_argument(
        "--dir", action="append", help="only under this folder (repeatable)", metavar="DIR"
    )
    parser.add_argument(
        "--kind", action="append", help="only this kind, e.g. function (repeatable)"
    )
    parser.add_argument("--no-content", action="store_true", help="print locations only")
    _freshness(parser)
    _common(parser)


def _source_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        action="append",
        help="code, kb, or a knowledge base's name (repeatable; default: all)",
    )


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--force-root",
        action="store_true",
        help="accept a root without a project marker, the home directory or /",
    )


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def _positive_int(text: str) -> int:
    return _whole_number(text, 1)


def _count(text: str) -> int:
    """A whole number, 0 or more."""
    return _whole_number(text, 0)


def _toolsets(text: str) -> tuple[str, ...]:
    """``--tools``: comma-separated names of MCP tool sets."""
    from ._config import toolsets

    try:
        return toolsets(text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _describe(exc: BaseException) -> str:
    """One line for the error message."""
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        text = str(exc) or type(exc).__name__
    if isinstance(exc, IndexCorruptError) and "index --force" not in text:
        text += " (`coderecall index --force` sets the damaged index aside and rebuilds it)"
    return " ".join(text.splitlines())


def _stdout() -> Console:
    """A console for stdout; piped output is never wrapped, so scripts can grep it."""
    from rich.console import Console

    class Stdout(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError  # rich would exit 1; `_run` treats it as for print()

    console = Stdout(highlight=False)
    return console if console.is_terminal else Stdout(highlight=False, width=_UNWRAPPED)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _open_index(args: argparse.Namespace) -> CodeIndex:
    from ._index import CodeIndex

    root = args.path if args.path is not None else project_root()
    return CodeIndex(root, force=args.force_root)


def _query_index(args: argparse.Namespace) -> CodeIndex:
    """The index for a query command, brought up to date first (files may have changed
    since it was written) unless ``--no-update``."""
    index = _open_index(args)
    if not args.no_update:
        try:
            index._catch_up()
        except BaseException:
            index.close()
            raise
    return index


def _freshness(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-update",
        action="store_true",
        help="answer from the index as it is, without first reading the files changed since "
        "(a running watcher or MCP server makes this the default)",
    )


def _index(args: argparse.Namespace) -> int:
    with _open_index(args) as index:
        index._log_to_file()
        if args.estimate:
            estimate = index.estimate()
        else:
            report = index.index(force=args.force, progress=not args.json, wait=not args.no_wait)
    if args.estimate:
        if args.json:
            _print_json(estimate.to_dict())
        else:
            _print_estimate(_stdout(), estimate)
    elif args.json:
        _print_json(report.to_dict())
    else:
        _print_report(_stdout(), report)
    return 0


def _print_estimate(console: Console, estimate: EmbeddingEstimate) -> None:
    if estimate.provider == "none":
        console.print("semantic search is off: nothing would be embedded", markup=False)
        return
    cost = f"${estimate.cost_usd:.4f} at list price" if estimate.cost_usd else "free (local)"
    _print_rows(
        console,
        [
            ("provider", f"{estimate.provider} · {estimate.model}"),
            ("to embed", f"{estimate.chunks:,} chunks · {estimate.tokens:,} tokens"),
            ("cost", cost),
        ],
    )


def _print_report(console: Console, report: IndexReport) -> None:
    console.print(
        f"Indexed {report.root} in {report.seconds:.2f} s (generation {report.generation})",
        markup=False,
    )
    rows = [
        (
            "files",
            f"{report.files_seen:,} seen · {report.files_parsed:,} parsed · "
            f"{report.files_reused:,} reused · {report.files_unchanged:,} unchanged · "
            f"{report.files_removed:,} removed",
        ),
        (
            "added",
            f"{report.chunks_added:,} chunks · {report.symbols_added:,} symbols · "
            f"{_size(report.bytes_parsed)} parsed",
        ),
    ]
    if report.embedding_model is not None:
        pending = f" · {report.embeddings_pending:,} pending" if report.embeddings_pending else ""
        rows.append(
            ("embedded", f"{report.chunks_embedded:,} chunks{pending} ({report.embedding_model})")
        )
    for label, counts, examples_of in (
        ("decoded", report.decoded, report.decoded_examples),
        ("skipped", report.skipped, report.skipped_examples),
    ):
        if counts:
            rows.append((label, _counts(counts)))
            for key, examples in examples_of.items():
                more = f", +{counts[key] - len(examples):,}" if counts[key] > len(examples) else ""
                rows.append(("", f"{key}: {', '.join(examples)}{more}"))
    _print_rows(console, rows)


def _search(args: argparse.Namespace) -> int:
    with _query_index(args) as index:
        hits = index.search(
            args.query,
            args.limit,
            language=args.lang,
            directory=args.dir,
            kind=args.kind,
            with_content=not args.no_content,
            source=args.source,
        )
    _print_hits(args, hits, args.query)
    return 0


def _similar(args: argparse.Namespace) -> int:
    code: str | None = None
    path: str | None = None
    line: int | None = None
    symbol: str | None = None
    if args.target == "-":
        code = sys.stdin.read()
    else:
        path, _, number = args.target.rpartition(":")
        if path and number.isdigit():
            line = int(number)
            # A path as typed is relative to the current directory, like any shell argument.
            path = os.path.abspath(path)
        else:
            symbol, path = args.target, None
    with _query_index(args) as index:
        if symbol is not None:  # code like that definition
            found = index.implementation_lookup(symbol, limit=1, with_content=False)
            if not found:
                raise QueryError(
                    f"{index._no_definition(symbol)} (similar takes FILE:LINE, a symbol or -)"
                )
            path, line = str(index.root / found[0].path), found[0].start_line
        hits = index.find_similar(
            code,
            path=path,
            line=line,
            limit=args.limit,
            language=args.lang,
            directory=args.dir,
            kind=args.kind,
            with_content=not args.no_content,
        )
    _print_hits(args, hits, "")
    return 0


def _print_hits(args: argparse.Namespace, hits: list[SearchHit], query: str) -> None:
    if args.json:
        _print_json([hit.to_dict() for hit in hits])
        return
    console = _stdout()
    if not hits:
        console.print("no results", style="dim")
    for hit in hits:
        _print_hit(console, hit, query)


def _escape(text: str) -> str:
    """``text`` safe in rich markup. rich loads with the first output for people: a command
    that answers ``--json`` needs none of it."""
    from rich.markup import escape

    return escape(text)


def _print_hit(console: Console, hit: SearchHit, query: str) -> None:
    location = f"{hit.path}:{hit.start_line}-{hit.end_line}"
    if hit.source != "code":
        location = f"[{hit.source}] {location}"
    what = " ".join(part for part in (hit.kind, hit.symbol_path or hit.symbol) if part)
    header = f"[bold cyan]{_escape(location)}[/]  {_escape(what)}  [dim]({hit.score:.3f})[/]"
    console.print(header)
    if hit.content is None:
        return
    lines = hit.content.splitlines()
    parts = _snippet_parts(lines, query)
    width = len(str(hit.start_line + len(lines)))
    for index, (start, end) in enumerate(parts):
        if index:
            console.print(f"  {'…':>{width}}", style="dim")
        snippet = "\n".join(lines[start:end])
        if console.is_terminal:
            from rich.syntax import Syntax

            syntax = Syntax(
                snippet,
                Syntax.guess_lexer(hit.path, snippet),
                line_numbers=True,
                start_line=hit.start_line + start,
                theme="ansi_dark",
                word_wrap=False,
            )
            for row, first, last in _term_spans(snippet, query):
                syntax.stylize_range("bold reverse", (row, first), (row, last))
            console.print(syntax)
        else:
            for number, line in enumerate(lines[start:end], hit.start_line + start):
                console.print(f"  {number:>{width}}  {line}", markup=False)
    hidden = len(lines) - sum(end - start for start, end in parts)
    if hidden:
        console.print(f"  … {hidden} more lines", style="dim")
    console.print()


def _snippet_parts(lines: list[str], query: str) -> list[tuple[int, int]]:
    """The line ranges of a hit to show, at most ``_SNIPPET_LINES`` lines: its opening, or,
    when the query's words sit further down (an error message deep in a long function), the
    line that names it (its first past a doc comment) and the window that holds the most of
    them."""
    size = _SNIPPET_LINES
    if len(lines) <= size:
        return [(0, len(lines))]
    found = [{word for _, word in _words_in(line, query)} for line in lines]

    def weight(start: int, end: int) -> tuple[int, int]:
        window = found[start:end]
        return len(set().union(*window)), sum(map(len, window))

    opening = weight(0, size)
    best = max(range(1, len(lines) - size + 2), key=lambda s: weight(s, s + size - 1))
    if weight(best, best + size - 1) <= opening:
        return [(0, size)]
    named = next(
        (i for i, line in enumerate(lines[:best]) if line.strip() and not _is_comment(line)), 0
    )
    if named == best - 1:
        return [(named, best + size - 1)]
    return [(named, named + 1), (best, best + size - 1)]


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith(("/*", "*", "//", "#", '"""', "'''", "--", ";"))


def _words_in(line: str, query: str) -> list[tuple[re.Match[str], str]]:
    """The matches of the query's words in ``line``, each with the word it matched."""
    pattern = _query_pattern(query)
    if pattern is None:
        return []
    return [(match, match.group().lower()) for match in pattern.finditer(line)]


@functools.lru_cache(maxsize=8)
def _query_pattern(query: str) -> re.Pattern[str] | None:
    words = {word.lower() for word in re.findall(r"\w{3,}", query)} - STOP_WORDS
    if not words:
        return None
    return re.compile("|".join(re.escape(word) for word in sorted(words)), re.IGNORECASE)


def _term_spans(snippet: str, query: str) -> list[tuple[int, int, int]]:
    """``(line, start, end)`` of every query word in the snippet; lines 1-based."""
    return [
        (number, match.start(), match.end())
        for number, line in enumerate(snippet.splitlines(), 1)
        for match, _ in _words_in(line, query)
    ]


def _status(args: argparse.Namespace) -> int:
    with _open_index(args) as index:
        status = index.status()
    if args.json:
        _print_json(status.to_dict())
    else:
        _print_status(_stdout(), status)
    return 0


def _watch(args: argparse.Namespace) -> int:
    """One line per update on stdout (a JSON object with ``--json``) until Ctrl-C, which
    stops the watcher (cancelling a running update) before main() exits with 130, or until
    the watching ends on an error (the root deleted or moved), which main() reports (1)."""
    broken = threading.Event()  # stdout's reader went away: end as main() ends that case

    def show(report: IndexReport) -> None:
        now = datetime.now().astimezone()
        if args.json:
            line = json.dumps(
                {"time": now.isoformat(timespec="seconds"), **report.to_dict()},
                ensure_ascii=False,
            )
        else:
            changed = report.files_seen - report.files_unchanged
            line = (
                f"{now:%H:%M:%S} indexed {counted(changed, 'file')} "
                f"({report.files_parsed:,} parsed, {report.files_removed:,} removed) "
                f"in {report.seconds:.2f} s"
            )
        try:
            print(line, flush=True)
        except BrokenPipeError:
            broken.set()

    with _open_index(args) as index:
        index._log_to_file()
        with index.watch(debounce=args.debounce, on_update=show) as watcher:
            if not args.json:
                how = "polling" if watcher.polling else "watching"
                print(
                    f"coderecall: {how} {index.root} (debounce {watcher.debounce:g} s); "
                    "Ctrl-C stops",
                    file=sys.stderr,
                    flush=True,
                )
            while not broken.wait(0.5):  # a timed wait lets Ctrl-C land at once
                watcher.wait(0)  # raises the error that ended the watching (exit code 1)
    raise BrokenPipeError


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def _health(args: argparse.Namespace) -> int:
    """Exit code 0 when the index is sound (or was repaired), 1 when problems remain."""
    with _open_index(args) as index:
        report = index.health(repair=args.repair)
        after = index.health() if args.repair and report.problems else report
    if args.json:
        _print_json({**report.to_dict(), "ok_after_repair": after.ok})
    else:
        console = _stdout()
        rows = [("index", str(report.index_dir))]
        rows += [("problem", problem) for problem in report.problems]
        rows += [("repaired", action) for action in report.repaired]
        if not report.exists:
            rows.append(("state", "no index yet (`coderecall index` builds it)"))
        elif report.ok:
            rows.append(("state", "healthy"))
        elif after.ok:
            rows.append(("state", "healthy after repair"))
        else:
            hint = (
                ""
                if args.repair
                else " (`coderecall health --repair` rebuilds derived files;"
                " `coderecall index --force` the whole index)"
            )
            rows.append(("state", f"problems remain{hint}"))
        _print_rows(console, rows)
    return 0 if after.ok else 1


def _hook(args: argparse.Namespace) -> int:
    return hooks.main(args.event, sys.stdin, sys.stdout, args.memory, recall=args.recall)


def _mcp(args: argparse.Namespace) -> int:
    """Serves until the client closes stdin (stdio) or Ctrl-C (HTTP); logs go to stderr,
    since in stdio mode stdout carries the protocol."""
    from ._mcp import serve  # the MCP SDK is loaded only by those who serve

    # The SDK gives the root logger a handler of its own; ours already prints coderecall's.
    logging.getLogger("coderecall").propagate = False
    serve(
        args.path if args.path is not None else host_root(),
        transport=args.transport,
        host=args.host,
        port=args.port,
        token=args.token,
        force=args.force_root,
        watch=args.watch,
        tools=args.tools,
    )
    return 0


HOST_ROOT_VARIABLES = ("CODERECALL_ROOT", "CLAUDE_PROJECT_DIR", "WORKSPACE_FOLDER_PATHS")
"""Where agent hosts name the project folder of a server they start: ours, Claude Code's, and
Cursor's (which starts servers in ``/``; it may list several folders, the first is taken)."""


def host_root() -> str:
    """The project an MCP server started without a path serves."""
    for name in HOST_ROOT_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value.split(",")[0].split(os.pathsep)[0].strip() or "."
    return str(project_root())


def _print_status(console: Console, status: IndexStatus) -> None:
    rows = [("root", str(status.root)), ("index", str(status.index_dir))]
    if not status.exists:
        rows.append(("state", "not built yet; run `coderecall index`"))
        _print_rows(console, rows)
        return
    languages = f"  ({_counts(status.languages)})" if status.languages else ""
    rows += [
        ("generation", str(status.generation)),
        ("files", f"{status.files:,}{languages}"),
        ("chunks", f"{status.chunks:,}"),
        ("symbols", f"{status.symbols:,}"),
        ("versions", f"{status.file_versions:,} file contents stored"),
        ("size", f"{_size(status.db_bytes)} database, {_size(status.lexical_bytes)} lexical"),
    ]
    if status.last_indexed is not None:
        rows.append(("last indexed", f"{status.last_indexed.astimezone():%Y-%m-%d %H:%M:%S}"))
    if status.watched:
        rows.append(("watched", "yes: a watcher or MCP server keeps it current"))
    if status.embedding_model is not None:
        report = status.last_report
        same = report is not None and report.embedding_model == status.embedding_model
        pending = report.embeddings_pending if report is not None and same else 0
        waiting = f" · {pending:,} pending" if pending else ""
        rows.append(("vectors", f"{status.vectors:,}{waiting} ({status.embedding_model})"))
    if status.last_report is not None and status.last_report.skipped:
        rows.append(("skipped", _counts(status.last_report.skipped)))
    _print_rows(console, rows)


def _model_list(args: argparse.Namespace) -> int:
    from ._models import list_models, models_dir

    found = list_models()
    if args.json:
        _print_json([info.to_dict() for info in found])
        return 0
    console = _stdout()
    if not found:
        console.print(
            f"no models in {models_dir()}; `coderecall model pull MODEL_ID` downloads one, "
            "`coderecall model distill FOLDER` builds one from a transformer",
            markup=False,
        )
        return 0
    for info in found:
        dims = f"{info.dims} dims" if info.dims else "dims unknown"
        recipe = f", {info.recipe}" if info.recipe else ""
        console.print(
            f"{info.name}  {info.kind}, {dims}{recipe}, {_size(info.bytes)}  {info.path}",
            markup=False,
        )
        if info.problem:
            console.print(f"  cannot be used: {info.problem}", markup=False)
    return 0


def _stderr_bar(json_output: bool) -> Progress:
    """A transient progress bar on stderr, hidden for ``--json`` and off a terminal."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True, highlight=False)
    hidden = json_output or not console.is_terminal
    return Progress(console=console, transient=True, disable=hidden)


def _model_distill(args: argparse.Namespace) -> int:
    from ._learn import learned_summary
    from ._models import distill_model, find_model

    find_model(args.source)  # a bad name fails before any progress display starts
    with _stderr_bar(args.json) as bar:
        task = bar.add_task("embedding the vocabulary", total=None)
        totals: set[int] = set()

        def progress(done: int, total: int) -> None:
            totals.add(total)
            if len(totals) > 1:  # the vocabulary is done; the corpus's chunks follow
                bar.update(task, description="embedding the corpus's chunks")
            bar.update(task, completed=done, total=total)

        info = distill_model(
            args.source,
            args.destination,
            dims=args.dims,
            corpus=args.corpus,
            learn=args.learn,
            progress=progress,
        )
    learned = learned_summary(info.path)
    if args.json:
        _print_json({**info.to_dict(), **({"learned": learned} if learned else {})})
    else:
        out = _stdout()
        out.print(
            f"Distilled {info.name} ({info.dims} dims, {_size(info.bytes)}) into {info.path}",
            markup=False,
        )
        if learned:
            out.print(
                f"Fitted on {learned['texts']} texts of the corpus: mean cosine with the "
                f"transformer on {learned['held_out']} held-out texts "
                f"{learned['cosine_before']:.3f} -> {learned['cosine_after']:.3f}",
                markup=False,
            )
    return 0


def _model_pull(args: argparse.Namespace) -> int:
    from ._hub import pull_model

    with _stderr_bar(args.json) as bar:
        task = bar.add_task(f"downloading {args.model_id}", total=None)
        reported: list[int] = []

        def progress(done: int, total: int) -> None:
            reported.append(done)
            bar.update(task, completed=done, total=total or None)

        info = pull_model(args.model_id, revision=args.revision, name=args.name, progress=progress)
    if args.json:
        _print_json(info.to_dict())
    else:
        # A copy already installed is kept without a byte downloaded (the log says why).
        done = "Pulled" if any(reported) else "Already installed:"
        dims = f"{info.dims} dims" if info.dims else "dims unknown"
        _stdout().print(
            f"{done} {args.model_id} in {info.path} ({info.kind}, {dims}, {_size(info.bytes)})",
            markup=False,
        )
    return 0


def _print_rows(console: Console, rows: list[tuple[str, str]]) -> None:
    """Label-value lines with the values aligned."""
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        console.print(f"{label:<{width}}  {value}", markup=False)


def _counts(counts: Mapping[str, int]) -> str:
    """``"python 12 · markdown 3"``, largest first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return " · ".join(f"{name} {count:,}" for name, count in ordered)


def _size(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    value = size / 1000
    for unit in ("KB", "MB"):
        if value < 1000:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"
