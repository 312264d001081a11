"""``coderecall memory``: the agent memory of a project from the command line.

``search``, ``add``, ``show``, ``timeline``, ``forget``, ``export`` and ``import``, each with
``--root`` (the project; its identity comes from its git remote), ``--memory`` (the database;
default ``$CODERECALL_MEMORY``, else the XDG data folder) and ``--json``.

The visibility rules are the store's (:meth:`MemoryStore.readable`), shared with the MCP
memory tools: a record of another project counts as unknown, and a private record is shown
only when asked for (``--include-private``).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._cli import ROOT_HELP, _count, _positive_int, _print_json, _print_rows, _stdout
from ._cli_tools import _failed
from ._errors import QueryError
from ._paths import project_root

if TYPE_CHECKING:  # the store is imported when a memory command runs, not for every command
    from rich.console import Console

    from ._memory import MemoryRecord, MemoryStore
    from ._memory_io import TableCounts

__all__ = ["register"]


# -- the commands -------------------------------------------------------------------------


def register(commands: Any) -> None:
    """Adds ``memory`` and its actions to the CLI's subparsers."""
    memory = commands.add_parser("memory", help="what agents learned about a project")
    actions = memory.add_subparsers(title="memory commands", required=True, metavar="ACTION")

    search = actions.add_parser("search", help="search the memory (current records)")
    search.add_argument(
        "query",
        help="plain words; records of a time phrase's window (yesterday, in March) rank first, "
        "the others still follow (--since/--until filter)",
    )
    search.add_argument("--type", action="append", metavar="TYPE", help="only this type")
    search.add_argument("--scope", choices=("user", "project"), help="only this scope")
    search.add_argument("--tag", action="append", metavar="TAG", help="only with this tag")
    search.add_argument("--since", type=_since, metavar="DATE", help="created on or after")
    search.add_argument(
        "--until", type=_until, metavar="DATE", help="created up to (a day: its end)"
    )
    search.add_argument(
        "-n", "--limit", type=_positive_int, default=10, help="results (default 10)"
    )
    search.add_argument("--include-private", action="store_true", help="private records too")
    _options(search)
    search.set_defaults(command=_search)

    add = actions.add_parser("add", help="remember something (privacy filter, dedup)")
    add.add_argument("text", help="the text, or - to read it from stdin")
    add.add_argument("--type", default="observation", help="record type (default observation)")
    add.add_argument(
        "--scope", choices=("user", "project"), default="project", help="default project"
    )
    add.add_argument("--tag", action="append", default=[], metavar="TAG", help="a tag")
    add.add_argument("--private", action="store_true", help="keep it out of default reads")
    _options(add)
    add.set_defaults(command=_add)

    show = actions.add_parser("show", help="records in full")
    show.add_argument("ids", nargs="+", type=_record_id, metavar="ID")
    show.add_argument("--history", action="store_true", help="every version of each record")
    show.add_argument("--include-private", action="store_true", help="show private records")
    _options(show)
    show.set_defaults(command=_show)

    context = actions.add_parser(
        "context", help="the [MEMORY] block for a system prompt (byte-stable)"
    )
    context.add_argument("query", nargs="?", help="the task (default: the session's last prompt)")
    context.add_argument("--session", help="a session id whose latest prompt is the task")
    context.add_argument("--budget", type=_positive_int, default=1500, help="tokens (default 1500)")
    _options(context)
    context.set_defaults(command=_context)

    timeline = actions.add_parser("timeline", help="the records written around one")
    timeline.add_argument("id", type=_record_id)
    timeline.add_argument("--before", type=_count, default=5, help="records before (default 5)")
    timeline.add_argument("--after", type=_count, default=5, help="records after (default 5)")
    _options(timeline)
    timeline.set_defaults(command=_timeline)

    forget = actions.add_parser("forget", help="erase a record's text; a tombstone keeps why")
    forget.add_argument("id", type=_record_id)
    forget.add_argument("--reason", required=True, help="why (recorded in the tombstone)")
    _options(forget)
    forget.set_defaults(command=_forget)

    export = actions.add_parser("export", help="the whole database as JSON Lines")
    export.add_argument("file", nargs="?", default="-", help="output file (default -: stdout)")
    _options(export)
    export.set_defaults(command=_export)

    load = actions.add_parser(
        "import", help="records, sessions and events from an export (ids kept)"
    )
    load.add_argument("file", help="JSON Lines file, or - for stdin")
    load.add_argument(
        "--merge",
        action="store_true",
        help="join a database with memories of its own: new ids, links kept, nothing twice",
    )
    _options(load)
    load.set_defaults(command=_import)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", metavar="PATH", help=ROOT_HELP)
    parser.add_argument(
        "--memory",
        metavar="PATH",
        help="memory database (default: $CODERECALL_MEMORY, else the XDG data folder)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def _record_id(text: str) -> int:
    from ._memory import MAX_ID

    try:
        value = int(text.lstrip("#"))
    except ValueError:
        value = 0
    if not 0 < value <= MAX_ID:
        raise argparse.ArgumentTypeError(f"not a memory id: {text!r}")
    return value


def _since(text: str) -> datetime:
    from ._timephrase import parse_bound

    try:
        return parse_bound(text)
    except QueryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _until(text: str) -> datetime:
    from ._timephrase import parse_bound

    try:
        return parse_bound(text, end=True)
    except QueryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _open(args: argparse.Namespace) -> MemoryStore:
    """The project's memory, searching with the project's local embedding model (as its
    MCP server does)."""
    from ._index import CodeIndex

    root = Path(args.root).expanduser() if args.root is not None else project_root()
    if not root.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such project folder", str(root))
    return CodeIndex(root, force=True).memory(path=args.memory)


def _context(args: argparse.Namespace) -> int:
    with _open(args) as store:
        if args.session is not None:
            from ._sessions import Sessions

            # The API passes an unknown session over (a hook's new session has no log yet);
            # typed on the command line it is a slip, said as `memory show` says an unknown id.
            if Sessions(store).info(args.session) is None:
                raise QueryError(f"no session {args.session!r} in the memory")
        block = store.context(args.query, session=args.session, budget=args.budget)
        held = 0 if block.text or args.json else len(store.records())
    if args.json:
        _print_json(block.to_dict())
    elif block.text:
        sys.stdout.write(block.text + "\n")
    elif not held:
        _stdout().print("nothing remembered for this project yet", style="dim")
    else:
        # Records exist, of other types than the sections show: say where they are.
        matched = " and none matches the task" if block.query else ""
        _stdout().print(
            f"the block is empty: its sections (project brief, preferences, architecture, tech"
            f" and product context, progress) have no records{matched}; `coderecall memory"
            f" search QUERY` searches the project's {held} record{'s' * (held != 1)}",
            style="dim",
        )
    return 0


def _search(args: argparse.Namespace) -> int:
    with _open(args) as store:
        hits = store.search(
            args.query,
            limit=args.limit,
            type=args.type,
            scope=args.scope,
            tags=args.tag or (),
            since=args.since,
            until=args.until,
            include_private=args.include_private,
        )
    if args.json:
        _print_json([hit.to_dict() for hit in hits])
        return 0
    console = _stdout()
    if not hits:
        console.print("no memories found", style="dim")
    for hit in hits:
        _line(console, hit.id, hit.type, hit.created_at, hit.snippet, hit.tags)
    return 0


def _add(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    with _open(args) as store:
        result = store.add(
            text,
            args.type,
            scope=args.scope,
            tags=args.tag,
            privacy="private" if args.private else None,
        )
    if args.json:
        _print_json(result.to_dict())
    else:
        console = _stdout()
        if result.record is not None:
            r = result.record
            console.print(
                f"{result.action} #{r.id} ({r.type}, {r.scope}"
                f"{', private' if r.privacy == 'private' else ''})",
                markup=False,
            )
        if result.redactions:
            console.print(f"redacted: {', '.join(result.redactions)}", markup=False)
        if result.private_sections:
            console.print(f"private sections cut: {result.private_sections}", markup=False)
        if result.superseded:
            console.print(
                f"superseded: {', '.join(f'#{i}' for i in result.superseded)}", markup=False
            )
    if result.action == "refused":
        return _failed(f"refused: {result.reason}")
    return 0


def _show(args: argparse.Namespace) -> int:
    with _open(args) as store:
        records, unknown, private = store.readable(args.ids, include_private=args.include_private)
        if unknown:
            raise QueryError(f"no memory {_ids(unknown)} in this project")
        if private:
            raise QueryError(f"memory {_ids(private)} is private (pass --include-private)")
        chains = {r.id: store.history(r.id) for r in records} if args.history else {}
    if args.json:
        if args.history:
            _print_json(
                [{"id": i, "versions": [v.to_dict() for v in chain]} for i, chain in chains.items()]
            )
        else:
            _print_json([r.to_dict() for r in records])
        return 0
    console = _stdout()
    for n, record in enumerate(records):
        if n:
            console.print()
        versions = chains.get(record.id, [record])
        for version in versions:
            if len(versions) > 1:
                mark = "*" if version.id == record.id else " "
                console.print(f"{mark} version #{version.id}", style="dim", markup=False)
            _print_record(console, version)
    return 0


def _timeline(args: argparse.Namespace) -> int:
    with _open(args) as store:
        store.readable_one(
            args.id,
            include_private=False,
            hint=f" (`coderecall memory show {args.id} --include-private` shows it)",
        )
        records = store.timeline(args.id, before=args.before, after=args.after)
        events = store.events_around(args.id, before=args.before, after=args.after)
    if args.json:
        _print_json(
            {
                "center": args.id,
                "records": [r.brief() for r in records],
                "events": [e.to_dict() for e in events],
            }
        )
        return 0
    console = _stdout()
    for r in records:
        mark = ">" if r.id == args.id else " "
        text = r.text if r.forgotten_at is None else f"(forgotten: {r.forget_reason})"
        _line(console, r.id, r.type, r.created_at, text, r.tags, mark=mark)
    if events:
        console.print("session events around it:", style="dim")
        for e in events:
            _line(console, e.id, e.kind, e.at, e.text, ())
    return 0


def _forget(args: argparse.Namespace) -> int:
    with _open(args) as store:
        store.readable_one(args.id, include_private=True)
        tombstone = store.forget(args.id, args.reason)
    if args.json:
        _print_json(tombstone.to_dict())
    else:
        _stdout().print(f"forgot #{tombstone.id}: {tombstone.forget_reason}", markup=False)
    return 0


def _export(args: argparse.Namespace) -> int:
    from ._memory_io import export_memory

    with _open(args) as store:
        if args.file == "-":
            export_memory(store, sys.stdout)
            return 0
        with open(args.file, "w", encoding="utf-8", newline="\n") as out:
            counts = export_memory(store, out)
    if args.json:
        _print_json({"exported": counts.to_dict(), "file": os.path.abspath(args.file)})
    else:
        _stdout().print(f"exported {_counts(counts)} to {args.file}", markup=False)
    return 0


def _import(args: argparse.Namespace) -> int:
    from ._memory_io import import_memory

    with _open(args) as store:
        if args.file == "-":
            counts = import_memory(store, sys.stdin, merge=args.merge)
        else:
            with open(args.file, encoding="utf-8") as lines:
                counts = import_memory(store, lines, merge=args.merge)
    if args.json:
        _print_json({"imported": counts.to_dict()})
    else:
        _stdout().print(f"imported {_counts(counts)}", markup=False)
    return 0


def _counts(counts: TableCounts) -> str:
    return f"{counts.records} records, {counts.sessions} sessions and {counts.events} events"


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _line(
    console: Console,
    record_id: int,
    kind: str,
    created: datetime,
    text: str,
    tags: tuple[str, ...],
    *,
    mark: str = "",
) -> None:
    """``#12  decision  2026-03-05  the text…  [db, wal]``"""
    from ._memory import snippet

    labels = f"  [{', '.join(tags)}]" if tags else ""
    console.print(
        f"{mark}#{record_id}  {kind}  {created.astimezone():%Y-%m-%d}  {snippet(text)}{labels}",
        markup=False,
        highlight=False,
    )


def _print_record(console: Console, r: MemoryRecord) -> None:
    rows = [
        ("id", f"#{r.id}"),
        ("type", f"{r.type} ({r.scope}{', private' if r.privacy == 'private' else ''})"),
        ("created", f"{r.created_at.astimezone():%Y-%m-%d %H:%M}"),
    ]
    if r.updated_at != r.created_at:
        rows.append(("updated", f"{r.updated_at.astimezone():%Y-%m-%d %H:%M}"))
    if r.tags:
        rows.append(("tags", ", ".join(r.tags)))
    if r.session:
        rows.append(("session", r.session))
    rows.append(("state", r.state))
    if r.forgotten_at is not None:
        rows.append(
            ("forgotten", f"{r.forgotten_at.astimezone():%Y-%m-%d %H:%M}: {r.forget_reason}")
        )
    _print_rows(console, rows)
    if r.text:
        console.print(r.text.rstrip(), markup=False, highlight=False)
