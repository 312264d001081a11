"""``codebase_context``: one entry point that routes a query and packs the evidence.

The router looks at the query:

* an **identifier** (``parse_args``, ``Client.send``, ``store::Store::open``) that names a
  definition: the definition, then the code around each call site of its callers, then the
  signatures of what it calls;
* a **path** of an indexed file (``src/app/models.py``): the file's outline, its head (imports
  and module docs), then its most-called definitions;
* anything else (**search**): the hybrid search hits.

Evidence is deduplicated (a range inside one already packed is skipped), spread over files
(at most :data:`PER_FILE` items of one file before others get a turn), and packed in priority
order within a budget counted with a real tokenizer (:mod:`coderecall._tokens`) on the exact
text that is returned. What did not fit is counted, and the pack says it was cut.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._errors import QueryError
from ._graph import (
    CallEdge,
    Definition,
    LineReader,
    definitions,
    neighbourhood,
    short_callee,
)
from ._results import counted
from ._tokens import TokenCounter, default_counter

if TYPE_CHECKING:
    from ._index import CodeIndex
    from ._native import CallGraph

__all__ = ["ContextPack", "Evidence", "build_context", "route_of"]

Route = Literal["identifier", "path", "search"]

PER_FILE = 3
"""Items of one file packed before the other files' items get their turn."""
_CALL_WINDOW = 2
"""Lines shown on each side of a call site."""
_SIGNATURE_LINES = 3
_HEAD_LINES = 30
_MIN_CUT_TOKENS = 60
"""An item is cut to fit only if at least this much of it can be shown..."""
_MIN_FIRST_CUT_TOKENS = 16
"""...unless nothing is packed yet: a few lines of the best evidence beat an empty pack."""
_DROPPED_NOTE_TOKENS = 24
_NOTES_SHARE = 4
"""The notes take at most 1/4 of the budget: they qualify the evidence, never replace it."""
_MIN_NOTE_TOKENS = 8
"""A note is cut to fit only if at least this much of it can be shown."""
_MAX_CALLERS = 12
_AMBIGUOUS_LISTED = 12
_UNRESOLVED_LISTED = 20
_MAX_CALLEES = 12
_SEARCH_HITS = 16

_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*(?:\(\))?")
_LOCATION = re.compile(r"[^\n]+:\d+")
_MAX_PATH = 4096
"""Longer text is no path (Linux's PATH_MAX)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One piece of the pack: a range of a file and why it is there."""

    kind: Literal["definition", "caller", "callee", "outline", "head", "hit", "note"]
    path: str
    start_line: int
    end_line: int
    symbol_path: str
    why: str
    text: str
    tokens: int
    """Tokens of this item as rendered (header line and text)."""
    truncated: bool = False
    source: str = "code"
    """``"code"``, or the knowledge base a search hit came from (its ``path`` is that folder's)."""

    def header(self) -> str:
        where = f"{self.path}:{self.start_line}-{self.end_line}" if self.path else ""
        if where and self.source != "code":
            where = f"[{self.source}] {where}"
        parts = [p for p in (f"[{self.kind}]", where, self.symbol_path, f"— {self.why}") if p]
        return " ".join(parts)

    def render(self) -> str:
        cut = "\n… (cut to fit the budget)" if self.truncated else ""
        return f"{self.header()}\n{self.text.rstrip()}{cut}\n"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class ContextPack:
    """The evidence for one query, within ``budget`` tokens."""

    query: str
    route: Route
    items: tuple[Evidence, ...]
    tokens: int
    """Tokens of :meth:`render`, counted with ``tokenizer``."""
    budget: int
    tokenizer: str
    truncated: bool
    """Something was cut or left out to stay within the budget."""
    dropped: int
    """Items left out for the budget."""
    notes: tuple[str, ...]

    def render(self) -> str:
        """The pack as an agent reads it: each item's header and text, then the notes."""
        return "".join(item.render() for item in self.items) + "".join(
            f"note: {n}\n" for n in self.notes
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "route": self.route,
            "tokens": self.tokens,
            "budget": self.budget,
            "tokenizer": self.tokenizer,
            "truncated": self.truncated,
            "dropped": self.dropped,
            "notes": list(self.notes),
            "items": [item.to_dict() for item in self.items],
        }


@dataclass(slots=True)
class _Candidate:
    kind: Literal["definition", "caller", "callee", "outline", "head", "hit", "note"]
    path: str
    start_line: int
    end_line: int
    symbol_path: str
    why: str
    text: str
    may_cut: bool = False
    source: str = "code"


def route_of(index: CodeIndex, graph: Callable[[], CallGraph], query: str) -> Route:
    """Which route a query takes (see the module docs). ``graph`` is asked for only when
    the query could name a definition or an indexed file that is gone from the disk: a
    sentence never needs it (building it takes seconds on a large project)."""
    q = query.strip()
    # Any name may be a path (`pages/[id].tsx`, `app/(auth)/page.tsx`, `build script.py`):
    # the index and the disk decide, not the look of the text.
    relative = _relative_or_none(index, q)
    if relative is not None and (
        (index.root / relative).is_file()
        or (index._indexed(relative) and graph().outline(relative))
    ):
        return "path"
    if _IDENTIFIER.fullmatch(q) and graph().find(q.removesuffix("()"), 1):
        return "identifier"
    if _LOCATION.fullmatch(q) and graph().find(q, 1):
        return "identifier"  # path:line, the definition holding that line
    return "search"


def build_context(
    index: CodeIndex, graph: Callable[[], CallGraph], lines: LineReader, query: str, budget: int
) -> ContextPack:
    """The evidence pack for ``query`` within ``budget`` tokens; ``graph`` gives the call
    graph, built only for a query that needs it."""
    q = query.strip()
    if not q:
        raise QueryError("the query is empty")
    if budget < 100:
        raise QueryError(f"the budget must be at least 100 tokens, got {budget}")
    route = route_of(index, graph, q)
    notes: list[str] = []
    if route == "identifier":
        candidates = _identifier(graph(), lines, q.removesuffix("()"), notes)
    elif route == "path":
        relative = _relative_or_none(index, q)
        assert relative is not None  # route_of checked it
        candidates = _path(graph(), lines, relative, notes)
    else:
        candidates = _search(index, q, notes)
    return _pack(q, route, candidates, budget, notes)


def _relative_or_none(index: CodeIndex, given: str) -> str | None:
    if "\n" in given or "\0" in given or len(given) > _MAX_PATH:
        return None
    try:
        return index._relative(given)
    except (QueryError, RuntimeError):  # outside the root; `~user` of no such user
        return None


def _identifier(
    graph: CallGraph, lines: LineReader, symbol: str, notes: list[str]
) -> list[_Candidate]:
    found = definitions(graph, lines, symbol, limit=6)
    best = found[0]
    out = [
        _Candidate(
            "definition",
            best.path,
            best.start_line,
            best.end_line,
            best.symbol_path,
            f"definition of {symbol} ({best.kind})",
            best.content or "",
            may_cut=True,
        )
    ]
    location = f"{best.path}:{best.start_line}"
    try:
        result = neighbourhood(graph, best.symbol_path or symbol, limit=60)
    except QueryError:  # a module path no name can spell (`docs/build script.py`)
        result = neighbourhood(graph, location, limit=60)
    if result.symbol.path != best.path or result.symbol.start_line != best.start_line:
        # The qualified path named another definition first; ask by location instead.
        result = neighbourhood(graph, location, limit=60)
    if result.note:
        notes.append(result.note)
    callers = _by_caller([e for e in result.callers if e.reason != "ambiguous"])
    for caller, edges in callers[:_MAX_CALLERS]:
        out.append(_call_site(lines, caller, edges))
    seen: set[tuple[str, int]] = set()
    for edge in result.callees:
        callee = edge.callee
        if callee is None or (callee.path, callee.start_line) in seen:
            continue
        seen.add((callee.path, callee.start_line))
        if len(seen) > _MAX_CALLEES:
            break
        end = min(callee.end_line, callee.start_line + _SIGNATURE_LINES - 1)
        text = lines(callee.path, callee.start_line, end) or ""
        out.append(
            _Candidate(
                "callee",
                callee.path,
                callee.start_line,
                end,
                callee.symbol_path,
                f"called at line {edge.line} ({edge.confidence})",
                text,
            )
        )
    ambiguous = [e for e in result.callers if e.reason == "ambiguous"]
    if ambiguous:
        listed = [
            f"{e.path}:{e.line} {e.caller.symbol_path or e.caller.path}: "
            f"{short_callee(e.callee_text)}"
            for e in ambiguous[:_AMBIGUOUS_LISTED]
        ]
        if len(ambiguous) > _AMBIGUOUS_LISTED:
            listed.append(f"... and {len(ambiguous) - _AMBIGUOUS_LISTED} more")
        out.append(
            _Candidate(
                "note",
                "",
                0,
                0,
                "",
                f"{len(ambiguous)} call(s) that may reach {symbol} (ambiguous name)",
                "\n".join(listed),
                may_cut=True,
            )
        )
    unresolved = {_called_name(e.callee_text) for e in result.callees if e.callee is None}
    if unresolved:
        names = sorted(unresolved)
        more = (
            f" and {len(names) - _UNRESOLVED_LISTED} more"
            if len(names) > _UNRESOLVED_LISTED
            else ""
        )
        notes.append(
            f"calls not resolved to indexed code: {', '.join(names[:_UNRESOLVED_LISTED])}{more}"
        )
    for other in found[1:]:
        notes.append(f"also defined: {other.symbol_path} at {other.path}:{other.start_line}")
    return out


def _called_name(callee: str) -> str:
    """``a.b(x).c`` -> ``c``: the name a call site calls, without its receiver chain."""
    return re.split(r"\.|::|->|#", callee)[-1] or callee


def _by_caller(edges: Iterable[CallEdge]) -> list[tuple[Definition, list[CallEdge]]]:
    grouped: dict[tuple[str, int], tuple[Definition, list[CallEdge]]] = {}
    for edge in edges:
        key = (edge.caller.path, edge.caller.start_line)
        grouped.setdefault(key, (edge.caller, []))[1].append(edge)
    return list(grouped.values())


def _call_site(lines: LineReader, caller: Definition, edges: list[CallEdge]) -> _Candidate:
    """The caller's first line and a few lines around each of its calls."""
    wanted: list[tuple[int, int]] = []
    if caller.kind != "module":
        wanted.append((caller.start_line, caller.start_line))
    for edge in edges:
        hi = edge.line + _CALL_WINDOW
        if caller.kind != "module":
            hi = min(hi, caller.end_line)
        wanted.append((max(caller.start_line, edge.line - _CALL_WINDOW), hi))
    wanted.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in wanted:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    parts = []
    for lo, hi in merged:
        text = lines(caller.path, lo, hi) or ""
        parts.append(text.rstrip("\n"))
    confidence = sorted({e.confidence for e in edges})
    at = ", ".join(str(e.line) for e in edges)
    return _Candidate(
        "caller",
        caller.path,
        merged[0][0],
        merged[-1][1],
        caller.symbol_path,
        f"calls it at line {at} ({'/'.join(confidence)})",
        "\n    ...\n".join(parts),
        may_cut=True,
    )


def _path(graph: CallGraph, lines: LineReader, path: str, notes: list[str]) -> list[_Candidate]:
    outline = graph.outline(path)
    out: list[_Candidate] = []
    if outline:
        listing = [
            f"L{n['start_line']}-{n['end_line']} {n['kind']} {n['symbol_path']}"
            f" (callers {n['callers']}, callees {n['callees']})"
            for n in outline
        ]
        out.append(
            _Candidate(
                "outline",
                path,
                1,
                max(n["end_line"] for n in outline),
                "",
                f"outline: {counted(len(outline), 'definition')}",
                "\n".join(listing),
                may_cut=True,
            )
        )
    else:
        notes.append(f"{path} has no definitions the index knows of")
    first = min((n["start_line"] for n in outline), default=_HEAD_LINES + 1)
    head_end = min(_HEAD_LINES, first - 1)
    # A file that opens with a definition has no head: its line 1 is that definition's.
    head = lines(path, 1, head_end) if head_end >= 1 else None
    if head and head.strip():
        out.append(_Candidate("head", path, 1, head_end, "", "imports and module docs", head))
    ranked = sorted(
        (n for n in outline if n["kind"] != "module"),
        key=lambda n: (-n["callers"], n["start_line"]),
    )
    # Outer definitions hold inner ones: take the most-called, skip what contains it or
    # lies inside it (the outline lists them all), so no text is packed twice.
    chosen: list[tuple[int, int]] = []
    for n in ranked:
        lo, hi = n["start_line"], n["end_line"]
        if any((a <= lo and hi <= b) or (lo <= a and b <= hi) for a, b in chosen):
            continue
        chosen.append((lo, hi))
        text = lines(path, n["start_line"], n["end_line"]) or ""
        out.append(
            _Candidate(
                "definition",
                path,
                n["start_line"],
                n["end_line"],
                n["symbol_path"],
                f"{n['kind']}, {n['callers']} caller(s)",
                text,
                may_cut=True,
            )
        )
    return out


def _search(index: CodeIndex, query: str, notes: list[str]) -> list[_Candidate]:
    hits = index.search(query, limit=_SEARCH_HITS, with_content=True)
    if not hits:
        notes.append("no search hits")
    return [
        _Candidate(
            "hit",
            h.path,
            h.start_line,
            h.end_line,
            h.symbol_path,
            f"search hit #{rank} ({'+'.join(h.channels)})",
            h.content or "",
            may_cut=rank == 1,
            source=h.source,
        )
        for rank, h in enumerate(hits, 1)
    ]


def _pack(
    query: str, route: Route, candidates: list[_Candidate], budget: int, notes: list[str]
) -> ContextPack:
    counter = default_counter()
    ordered = _diversified(_deduplicated(candidates))
    fitted = _fitted_notes(notes, budget // _NOTES_SHARE, counter)
    truncated = fitted != notes
    notes = fitted
    notes_text = "".join(f"note: {n}\n" for n in notes)
    # The notes are rendered too, and one more may be added below (what was left out).
    used = (counter.count(notes_text) if notes_text else 0) + _DROPPED_NOTE_TOKENS
    items: list[Evidence] = []
    dropped = 0
    share = max(budget // 2, _MIN_CUT_TOKENS * 2)
    for c in ordered:
        item = _evidence(c, c.text, False, counter.count)
        # One long definition must not crowd out its callers and callees.
        room = min(budget - used, share) if len(ordered) > 1 and c.may_cut else budget - used
        if item.tokens > room:
            header_tokens = counter.count(item.header() + "\n… (cut to fit the budget)\n")
            least = _MIN_CUT_TOKENS if items else _MIN_FIRST_CUT_TOKENS
            if c.may_cut and room - header_tokens >= least:
                text = counter.truncate(c.text, room - header_tokens - 2)
                item = _evidence(c, text, True, counter.count)
                truncated = True
            if item.tokens > room:
                dropped += 1
                truncated = True
                continue
        items.append(item)
        used += item.tokens
    if dropped:
        notes.append(f"{dropped} more item(s) left out to stay within {budget} tokens")
    rendered_notes = tuple(notes)
    pack = ContextPack(
        query=query,
        route=route,
        items=tuple(items),
        tokens=0,
        budget=budget,
        tokenizer=counter.name,
        truncated=truncated,
        dropped=dropped,
        notes=rendered_notes,
    )
    return dataclasses.replace(pack, tokens=counter.count(pack.render()))


def _fitted_notes(notes: list[str], limit: int, counter: TokenCounter) -> list[str]:
    """The notes that fit in ``limit`` tokens as rendered, in order: the first one that does
    not fit is cut (when enough of it can be shown) and the rest are left out."""
    kept: list[str] = []
    used = 0
    for note in notes:
        tokens = counter.count(f"note: {note}\n")
        if used + tokens <= limit:
            kept.append(note)
            used += tokens
            continue
        room = limit - used - counter.count("note:  …\n") - 2
        if room >= _MIN_NOTE_TOKENS:
            kept.append(f"{counter.truncate(note, room).rstrip()} …")
        break
    return kept


def _evidence(c: _Candidate, text: str, cut: bool, count: Callable[[str], int]) -> Evidence:
    item = Evidence(
        c.kind, c.path, c.start_line, c.end_line, c.symbol_path, c.why, text, 0, cut, c.source
    )
    return dataclasses.replace(item, tokens=count(item.render()))


def _deduplicated(candidates: list[_Candidate]) -> list[_Candidate]:
    """Drops a range inside one already taken (same file); notes are always kept."""
    taken: list[_Candidate] = []
    for c in candidates:
        inside = any(
            (t.source, t.path) == (c.source, c.path)
            and t.kind not in ("outline", "note")
            and t.start_line <= c.start_line
            and c.end_line <= t.end_line
            for t in taken
        )
        if c.kind in ("note", "outline") or not inside:
            taken.append(c)
    return taken


def _diversified(candidates: list[_Candidate]) -> list[_Candidate]:
    """Keeps the order, but an item beyond the PER_FILE-th of its file waits until every
    file has had its turn. The first item (the answer itself) never moves."""
    first, later = [], []
    per_file: Counter[tuple[str, str]] = Counter()
    for i, c in enumerate(candidates):
        per_file[c.source, c.path] += 1
        if i == 0 or not c.path or per_file[c.source, c.path] <= PER_FILE:
            first.append(c)
        else:
            later.append(c)
    return first + later
