"""Code intelligence over the call graph: definitions, callers, callees and call paths.

The native :class:`~coderecall._native.CallGraph` does the resolving; this module turns its
answers into typed results that say how sure they are. An edge the index could not resolve
is reported as such (``confidence="unresolved"`` with a ``reason``), and a result whose
callers may be incomplete says so in ``complete`` and ``note``: "no callers" is only claimed
when no call anywhere could be one.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._config import MAX_COUNT
from ._errors import QueryError

if TYPE_CHECKING:
    from ._native import CallGraph, GraphEdgeDict, GraphNodeDict

__all__ = [
    "CallEdge",
    "CallGraphResult",
    "CallPath",
    "Definition",
    "Direction",
    "LineReader",
    "definitions",
    "neighbourhood",
    "short_callee",
    "shortest_path",
]

Direction = Literal["callers", "callees", "both"]

MAX_DEPTH = 5
_CANDIDATES_SHOWN = 4
_CALLEE_WIDTH = 48
"""Candidates of an ambiguous edge listed in its dict: enough to see what it may reach."""
MAX_PATH_DEPTH = 12


@dataclass(frozen=True, slots=True)
class Definition:
    """A definition in the index (or a file's top level, ``kind="module"``)."""

    path: str
    start_line: int
    end_line: int
    language: str
    kind: str
    name: str
    symbol_path: str
    callers: int
    """Calls reaching it (ambiguous ones that may reach it included)."""
    callees: int
    """Calls leaving it."""
    content: str | None = None
    """Its source text, when asked for."""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if self.content is None:
            del data["content"]
        return data


@dataclass(frozen=True, slots=True)
class CallEdge:
    """A call (or an inheritance) from ``caller`` at ``path:line`` to ``callee``."""

    kind: Literal["call", "inherit"]
    caller: Definition
    callee: Definition | None
    """``None`` unless resolved or inferred."""
    callee_text: str
    """The callee as written at the call site (``self.send``, ``http.Get``)."""
    path: str
    line: int
    confidence: Literal["resolved", "inferred", "unresolved"]
    """``resolved``: traced through scope, imports or the receiver's stated type
    (``store: Store``, ``store = Store()``, a field declared so); ``inferred``: the only
    definition of that name; ``unresolved``: see ``reason``."""
    reason: Literal["ambiguous", "external", "unknown"] | None
    external: str | None
    """The module an external call goes to."""
    candidates: tuple[Definition, ...]
    """For an ambiguous call: the definitions it may reach."""
    depth: int
    """Calls away from the symbol asked about (1 = direct)."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "caller": self.caller.symbol_path or self.caller.path,
            "callee": self.callee.symbol_path if self.callee else None,
            "callee_text": short_callee(self.callee_text),
            "path": self.path,
            "line": self.line,
            "confidence": self.confidence,
            "depth": self.depth,
        }
        if self.callee is not None:
            data["callee_path"] = self.callee.path
            data["callee_line"] = self.callee.start_line
        if self.reason is not None:
            data["reason"] = self.reason
        if self.external is not None:
            data["external"] = self.external
        if self.candidates:
            shown = self.candidates[:_CANDIDATES_SHOWN]
            data["candidates"] = [f"{c.symbol_path} ({c.path}:{c.start_line})" for c in shown]
            data["candidate_count"] = len(self.candidates)
        return data


@dataclass(frozen=True, slots=True)
class CallGraphResult:
    """Callers and callees of one definition."""

    symbol: Definition
    others: tuple[Definition, ...]
    """Other definitions the query matched (the first match was taken)."""
    callers: tuple[CallEdge, ...]
    callees: tuple[CallEdge, ...]
    unresolved_callers: int
    """Calls of the symbol's name that resolved to nothing: callers the index cannot see."""
    complete: bool
    """False when some callers may be missing (ambiguous or unresolved calls of the name,
    or the limit was reached): then an empty ``callers`` means unknown, not none."""
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "symbol": self.symbol.to_dict(),
            "others": [o.to_dict() for o in self.others],
            "callers": [e.to_dict() for e in self.callers],
            "callees": [e.to_dict() for e in self.callees],
            "unresolved_callers": self.unresolved_callers,
            "complete": self.complete,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class CallPath:
    """The shortest call chain from ``source`` to ``target``, if there is one."""

    source: Definition
    target: Definition
    edges: tuple[CallEdge, ...]
    found: bool
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source.to_dict(),
            "target": self.target.to_dict(),
            "found": self.found,
            "edges": [e.to_dict() for e in self.edges],
            "note": self.note,
        }


def _definition(node: GraphNodeDict, content: str | None = None) -> Definition:
    return Definition(
        path=node["path"],
        start_line=node["start_line"],
        end_line=node["end_line"],
        language=node["language"],
        kind=node["kind"],
        name=node["name"],
        symbol_path=node["symbol_path"],
        callers=node["callers"],
        callees=node["callees"],
        content=content,
    )


def _edge(edge: GraphEdgeDict) -> CallEdge:
    to = edge["to"]
    caller: GraphNodeDict = edge["from"]  # type: ignore[typeddict-item]
    return CallEdge(
        kind=edge["kind"],
        caller=_definition(caller),
        callee=_definition(to) if to is not None else None,
        callee_text=edge["callee"],
        path=edge["path"],
        line=edge["line"],
        confidence=edge["confidence"],
        reason=edge["reason"],
        external=edge["external"],
        candidates=tuple(_definition(c) for c in edge["candidates"]),
        depth=edge["depth"],
    )


LineReader = Callable[[str, int, int], "str | None"]
"""Reads lines ``start..=end`` of a path as indexed (``NativeIndex.lines``)."""


def short_callee(text: str, width: int = _CALLEE_WIDTH) -> str:
    """A call as written, shortened for display: ``a.b(x).c(y).d`` keeps its head and its
    called name (``a….d``) when longer than ``width``."""
    if len(text) <= width:
        return text
    head = re.split(r"[.:(\[-]", text, maxsplit=1)[0]
    name = re.split(r"\.|::|->", text)[-1]
    return f"{head}…{name}"


def _matches(graph: CallGraph, symbol: str, limit: int) -> list[GraphNodeDict]:
    if not symbol.strip():
        raise QueryError("the symbol is empty")
    return graph.find(symbol.strip(), _checked_limit(limit))


def missing(graph: CallGraph, symbol: str) -> str:
    """What to say of ``symbol`` when nothing defines it, with the defined names spelled
    like it (a typo's likely fix)."""
    message = f"no definition of {symbol!r} in the index"
    near = graph.similar_names(symbol, 3)
    if near:
        listed = ", ".join(near[:-1]) + " or " + near[-1] if len(near) > 1 else near[0]
        message += f"; did you mean {listed}?"
    return message


def _checked_limit(limit: int) -> int:
    """``limit`` as the native graph takes it: at least 1, and any larger one than a graph
    can hold means all."""
    if limit < 1:
        raise QueryError(f"limit must be at least 1, got {limit}")
    return min(limit, MAX_COUNT)


def definitions(
    graph: CallGraph, lines: LineReader, symbol: str, *, limit: int = 5, with_content: bool = True
) -> list[Definition]:
    """Definitions of ``symbol`` (a name, a qualified name, or ``path:line``), the
    implementation first: source before tests, a definition before an ``impl`` block."""
    found = _matches(graph, symbol, limit)
    return [
        _definition(
            n,
            lines(n["path"], n["start_line"], n["end_line"]) if with_content else None,
        )
        for n in found
    ]


def neighbourhood(
    graph: CallGraph,
    symbol: str,
    *,
    direction: Direction = "both",
    depth: int = 1,
    limit: int = 100,
) -> CallGraphResult:
    """Callers and/or callees of the best definition of ``symbol``, up to ``depth`` calls
    away (``limit`` edges per direction)."""
    if direction not in ("callers", "callees", "both"):
        raise QueryError(f"direction must be callers, callees or both, got {direction!r}")
    if not 1 <= depth <= MAX_DEPTH:
        raise QueryError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    limit = _checked_limit(limit)
    found = _matches(graph, symbol, 6)
    if not found:
        raise QueryError(missing(graph, symbol))
    node = found[0]
    callers: list[CallEdge] = []
    callees: list[CallEdge] = []
    if direction in ("callers", "both"):
        callers = [_edge(e) for e in graph.edges(node["id"], True, depth, limit + 1)]
    if direction in ("callees", "both"):
        callees = [_edge(e) for e in graph.edges(node["id"], False, depth, limit + 1)]
    cut = len(callers) > limit or len(callees) > limit
    callers, callees = callers[:limit], callees[:limit]
    unresolved = graph.unresolved_named(node["id"]) if direction != "callees" else 0
    ambiguous = sum(1 for e in callers if e.reason == "ambiguous")
    complete = not cut and unresolved == 0 and ambiguous == 0
    notes = []
    if ambiguous:
        notes.append(
            f"{ambiguous} caller(s) call a name that several definitions share "
            "(confidence unresolved, reason ambiguous): they may or may not reach it"
        )
    if unresolved:
        notes.append(
            f"{unresolved} call(s) of the name {node['name']!r} could not be resolved at all: "
            "more callers may exist"
        )
    if cut:
        notes.append(f"cut at {limit} edges per direction; raise limit for more")
    if direction != "callees" and not callers and complete:
        notes.append("no call of this name anywhere in the index: no callers")
    if len(found) > 1:
        notes.append(
            f"{len(found)} definitions match {symbol!r}; showing the first, qualify the name "
            "(Class.method, module.function) or use path:line for another"
        )
    return CallGraphResult(
        symbol=_definition(node),
        others=tuple(_definition(n) for n in found[1:]),
        callers=tuple(callers),
        callees=tuple(callees),
        unresolved_callers=unresolved,
        complete=complete,
        note="; ".join(notes),
    )


def shortest_path(graph: CallGraph, source: str, target: str, *, max_depth: int = 8) -> CallPath:
    """The shortest chain of calls from ``source`` to ``target``."""
    if not 1 <= max_depth <= MAX_PATH_DEPTH:
        raise QueryError(f"max_depth must be between 1 and {MAX_PATH_DEPTH}, got {max_depth}")
    ends = []
    for symbol in (source, target):
        found = _matches(graph, symbol, 1)
        if not found:
            raise QueryError(missing(graph, symbol))
        ends.append(found[0])
    chain = graph.path(ends[0]["id"], ends[1]["id"], max_depth)
    edges = tuple(_edge(e) for e in chain or [])
    if chain is None:
        note = (
            f"no chain of at most {max_depth} resolved, inferred or ambiguous calls; calls the "
            "index could not resolve (dynamic dispatch, callbacks) may still connect them"
        )
    elif any(e.confidence == "unresolved" for e in edges):
        note = "the chain passes through ambiguous calls: check those steps"
    else:
        note = ""
    return CallPath(
        source=_definition(ends[0]),
        target=_definition(ends[1]),
        edges=edges,
        found=chain is not None,
        note=note,
    )
