"""``coderecall mcp``: the index of one project root served to agents over MCP.

The server opens the index and brings it up to date in a background thread; the tools answer
meanwhile (from the index as it was) and say so with ``"stale": true`` until that first update
finished. Every answer is one JSON text kept under a token cap (``mcp-token-cap``), counted
with a real tokenizer (:mod:`coderecall._tokens`): list items are dropped whole from the end,
never cut in half, and the answer says how many were dropped. ``codebase_context`` packs its
evidence within the cap in the first place.

The memory tools (``memory_*`` and ``ask``) read and write the agent memory of the same
project (:class:`~coderecall._memory.MemoryStore`, in the user's memory database). The store
is opened on the first memory call, never at start, so a server that is only asked about code
pays nothing for it.

Over streamable HTTP the server binds to 127.0.0.1 unless told otherwise; any other address
needs a bearer token, which every request must then carry (401 otherwise).
"""

from __future__ import annotations

import hmac
import inspect
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from . import _mcp_docs as docs
from ._errors import ConfigError, Error, QueryError
from ._graph import MAX_DEPTH, MAX_PATH_DEPTH, Direction
from ._index import CodeIndex
from ._memory_context import MIN_BUDGET
from ._native import __version__
from ._results import IndexReport, SearchHit
from ._timephrase import parse_bound
from ._tokens import default_counter

if TYPE_CHECKING:  # imported on the first memory call (see McpService.memory), or to watch
    from ._memory import MemoryRecord, MemoryStore
    from ._watch import Watcher

__all__ = ["LOCAL_HOSTS", "TOKEN_ENV", "McpService", "build_server", "count_tokens", "serve"]

TOKEN_ENV = "CODERECALL_MCP_TOKEN"
"""Environment variable holding the bearer token of the HTTP transport."""
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Addresses the HTTP transport may bind to without a token."""

_PEEK_FIELDS = ("path", "start_line", "end_line", "symbol_path", "kind", "score", "source")
_MIN_CONTEXT_BUDGET = 100
_MEMORY_BUDGET = 1500
"""Tokens of a ``memory_context`` block unless the agent asks for another budget."""
_STALE_TOKENS = 60
"""Room for the stale flag and its note, which ``_answer`` may add."""
_CONTEXT_OVERHEAD = 150
"""Tokens of a ``codebase_context`` answer around its pack (keys, numbers, JSON escapes of a
short pack); the escapes of a long pack are caught by measuring the answer."""
_RRF_K = 60
"""The constant of reciprocal rank fusion in ``ask``, as in hybrid code search."""
_MAX_TIMELINE = 50
"""Records a timeline may show on each side of its centre."""


def _bounds(low: int, high: int | None = None) -> Any:
    """Bounds for an integer argument's input schema, so agents need not learn them by
    failing. The schema only states them: the tools check them, in their own one-line
    messages (pydantic's are several lines with a link)."""
    schema: dict[str, int] = {"minimum": low} if high is None else {"minimum": low, "maximum": high}
    return Field(json_schema_extra=schema)  # type: ignore[arg-type]


Limit = Annotated[int, _bounds(1)]
Span = Annotated[int, _bounds(0, _MAX_TIMELINE)]
_SEARCH_HINT = "lower limit, or use codebase_peek for locations only"
_MEMORY_HINT = "lower limit, or ask memory_get for fewer ids"
_STALE_NOTE = (
    "the index is being brought up to date in the background; results may miss recent "
    "changes (call index_status later, or index_codebase to wait for it)"
)

_log = logging.getLogger("coderecall")
_T = TypeVar("_T")


def count_tokens(text: str) -> int:
    """Tokens of ``text`` with the tokenizer budgets are counted with."""
    return default_counter().count(text)


def _dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class McpService:
    """The tools' behaviour over one :class:`CodeIndex`, independent of the MCP plumbing.

    Each method returns the JSON text of its answer, already under the token cap.
    """

    def __init__(
        self,
        index: CodeIndex,
        token_cap: int | None = None,
        *,
        memory_path: str | os.PathLike[str] | None = None,
        watch: bool = False,
    ) -> None:
        self._index = index
        self._watch = watch
        self._watcher: Watcher | None = None
        self._cap = index.config.mcp_token_cap if token_cap is None else token_cap
        self._first_update = threading.Event()
        self._update_error: str | None = None
        self._write_lock = threading.Lock()  # one indexing run or repair of ours at a time
        self._thread: threading.Thread | None = None
        self._memory_path = memory_path
        self._memory: MemoryStore | None = None
        self._memory_lock = threading.Lock()

    @property
    def token_cap(self) -> int:
        return self._cap

    @property
    def toolsets(self) -> tuple[str, ...]:
        """The tool sets served (``mcp-tools``); the service itself answers every tool."""
        return self._index.config.mcp_tools

    @property
    def stale(self) -> bool:
        """Whether the first update has not (successfully) finished yet."""
        return not self._first_update.is_set() or self._update_error is not None

    @property
    def watching(self) -> bool:
        """Whether file changes are being indexed as they happen."""
        watcher = self._watcher
        return watcher is not None and watcher.error is None

    def start(self) -> None:
        """Start the first update in a background thread: a watcher's, which then keeps the
        index current after every burst of edits, when watching; else a one-off update."""
        if self._watch:
            try:
                self._watcher = self._index.watch(on_update=self._updated, on_error=self._failed)
                return
            except OSError as exc:
                _log.warning(
                    "cannot watch %s (%s): the index is brought up to date now and then by "
                    "index_codebase only",
                    self._index.root,
                    exc,
                )
        self._thread = threading.Thread(
            target=self._update, name="coderecall-mcp-index", daemon=True
        )
        self._thread.start()

    def _update(self) -> None:
        try:
            with self._write_lock:
                report = self._index.index(progress=False)
            _log.info(
                "index up to date: %d files, %d parsed in %.2f s",
                report.files_seen,
                report.files_parsed,
                report.seconds,
            )
        except Exception as exc:  # a thread must not die silently; the tools report it
            self._update_error = _message(exc)
            _log.warning("the first index update failed: %s", self._update_error)
        finally:
            self._first_update.set()

    def _updated(self, report: IndexReport) -> None:
        if not self._first_update.is_set():
            _log.info("index up to date: %d files, watching for changes", report.files_seen)
        self._update_error = None
        self._first_update.set()

    def _failed(self, exc: BaseException) -> None:
        self._update_error = _message(exc)
        self._first_update.set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._first_update.wait(timeout)

    def memory(self) -> MemoryStore:
        """The memory of this project (default database: ``$CODERECALL_MEMORY``, else the XDG
        data folder), opened once, on first use."""
        with self._memory_lock:
            if self._memory is None:
                self._memory = self._index.memory(path=self._memory_path)
            return self._memory

    def close(self) -> None:
        """Stops watching, and closes the memory store if a tool opened it (the index is the
        caller's)."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()
        with self._memory_lock:
            memory, self._memory = self._memory, None
        if memory is not None:
            memory.close()

    def _searchable(self) -> None:
        """A search on an index that was never built would build it itself, beside our
        background update: wait for that update instead."""
        if not self._first_update.is_set() and not self._index.status().exists:
            self._first_update.wait()

    def search(
        self,
        query: str,
        limit: int,
        language: str | list[str] | None,
        directory: str | list[str] | None,
        *,
        with_content: bool,
        source: str | list[str] | None = None,
    ) -> str:
        self._searchable()
        hits = self._index.search(
            query,
            limit,
            language=language,
            directory=directory,
            with_content=with_content,
            source=source,
        )
        missing = [] if hits else self._missing_folders(directory)
        note = f"no folder {_join_names(missing)} under the root" if missing else None
        return self._hits(hits, with_content=with_content, note=note)

    def _missing_folders(self, directory: str | list[str] | None) -> list[str]:
        """The ``directory`` filters naming no folder: a typo, not a search that found
        nothing."""
        given = [directory] if isinstance(directory, str) else list(directory or ())
        root = self._index.root
        return [d for d in given if not (root / d.strip().strip("/")).is_dir()]

    def context(self, query: str, budget: int | None) -> str:
        self._searchable()
        # The pack is built to fit: its text, escaped into JSON with its metadata, must stay
        # under the cap, so the budget shrinks, measured on the answer itself, until it does.
        wanted = self._index.config.context_budget if budget is None else budget
        if wanted < _MIN_CONTEXT_BUDGET:
            raise QueryError(
                f"the budget must be at least {_MIN_CONTEXT_BUDGET} tokens, got {wanted}"
            )
        budget = max(_MIN_CONTEXT_BUDGET, min(wanted, self._cap - _CONTEXT_OVERHEAD))
        data: dict[str, Any] = {}
        for _ in range(6):
            pack = self._index.context(query, budget=budget)
            data = {
                "route": pack.route,
                "context": pack.render(),
                "tokens": pack.tokens,
                "budget": pack.budget,
                "tokenizer": pack.tokenizer,
                "truncated": pack.truncated,
                "dropped": pack.dropped,
            }
            if budget < wanted:
                data["note"] = f"budget lowered from {wanted} to {budget} to fit mcp-token-cap"
            if self.stale:
                data["stale"] = True
            used = count_tokens(_dumps(data)) + _STALE_TOKENS
            if used <= self._cap or budget == _MIN_CONTEXT_BUDGET:
                break
            budget = max(_MIN_CONTEXT_BUDGET, int(budget * self._cap / used * 0.95))
        data.pop("stale", None)
        return self._answer(data)

    def lookup(self, symbol: str, limit: int, with_content: bool) -> str:
        self._searchable()
        found = self._index.implementation_lookup(symbol, limit=limit, with_content=with_content)
        if not found:
            raise QueryError(self._index._no_definition(symbol))
        return self._answer(
            {"definitions": [d.to_dict() for d in found]},
            cut="definitions",
            hint="lower limit, or pass with_content=false for locations only",
        )

    def call_graph(self, symbol: str, direction: Direction, depth: int, limit: int) -> str:
        self._searchable()
        result = self._index.call_graph(symbol, direction=direction, depth=depth, limit=limit)
        return self._answer(result.to_dict(), cut=("callers", "callees"))

    def call_path(self, source: str, target: str, max_depth: int) -> str:
        self._searchable()
        found = self._index.call_graph_path(source, target, max_depth=max_depth)
        return self._answer(found.to_dict())

    def metrics(self) -> str:
        return self._answer({"metrics": self._index.metrics().to_dict()})

    def logs(self, limit: int, level: str | None, contains: str | None) -> str:
        entries = self._index.logs(limit, level=level, contains=contains)
        newest_first = [dict(e) for e in reversed(entries)]
        return self._answer({"logs": newest_first}, cut="logs")

    def add_knowledge_base(self, path: str, name: str | None) -> str:
        folder = Path(path).expanduser()
        if not folder.is_absolute():
            folder = self._index.root / folder  # relative to the root, not the server's cwd
        with self._write_lock:
            kb = self._index.add_knowledge_base(folder, name, progress=False)
        return self._answer({"knowledge_base": kb.to_dict()})

    def list_knowledge_bases(self) -> str:
        kbs = [kb.to_dict() for kb in self._index.list_knowledge_bases()]
        return self._answer({"knowledge_bases": kbs}, cut="knowledge_bases")

    def remove_knowledge_base(self, name: str) -> str:
        with self._write_lock:
            removed = self._index.remove_knowledge_base(name)
        return self._answer({"removed": removed, "name": name})

    def similar(self, code: str | None, path: str | None, line: int | None, limit: int) -> str:
        self._searchable()
        if path is not None and not Path(path).is_absolute():
            path = str(self._index.root / path)  # relative to the root, not the server's cwd
        hits = self._index.find_similar(code, path=path, line=line, limit=limit)
        return self._hits(hits, with_content=True)

    def index(self, force: bool, estimate: bool) -> str:
        with self._write_lock:
            if estimate:
                return self._answer({"estimate": self._index.estimate().to_dict()})
            report = self._index.index(force=force, progress=False)
            # A successful run is what the first update was for.
            self._update_error = None
            self._first_update.set()
            data = report.to_dict()
            # The counts are in "skipped" and "decoded"; examples cost tokens.
            data.pop("skipped_examples")
            data.pop("decoded_examples")
            return self._answer({"report": data})

    def status(self) -> str:
        return self._answer({"status": self._index.status().to_dict(), "watching": self.watching})

    def health(self, repair: bool) -> str:
        if repair:
            with self._write_lock:
                report = self._index.health(repair=True)
        else:
            report = self._index.health()
        return self._answer({"health": report.to_dict()})

    # -- memory ----------------------------------------------------------------------------

    def memory_search(
        self,
        query: str,
        limit: int,
        type: str | list[str] | None = None,
        scope: Literal["user", "project"] | None = None,
        tags: str | list[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        include_private: bool = False,
    ) -> str:
        hits = self.memory().search(
            query,
            limit=limit,
            type=type,
            scope=scope,
            tags=_strings(tags),
            since=parse_bound(since) if since is not None else None,
            until=parse_bound(until, end=True) if until is not None else None,
            include_private=include_private,
        )
        rows = [hit.to_dict() for hit in hits]
        return self._answer({"hits": rows}, cut="hits", hint=_MEMORY_HINT, index=False)

    def memory_timeline(self, record_id: int, before: int, after: int) -> str:
        for name, value in (("before", before), ("after", after)):
            if not 0 <= value <= _MAX_TIMELINE:
                raise QueryError(f"{name} must be between 0 and {_MAX_TIMELINE}, got {value}")
        store = self.memory()
        store.readable_one(
            record_id,
            include_private=False,
            hint=" (memory_get with include_private=true reads it)",
        )
        records = store.timeline(record_id, before=before, after=after)
        events = store.events_around(record_id, before=before, after=after)
        data = {
            "center": record_id,
            "records": [r.brief() for r in records],
            "events": [e.to_dict() for e in events],
        }
        return self._answer(data, cut=("records", "events"), hint=_MEMORY_HINT, index=False)

    def memory_get(self, ids: int | list[int], include_private: bool = False) -> str:
        wanted = [ids] if isinstance(ids, int) else list(ids)
        if not wanted:
            raise QueryError("give at least one memory id")
        records, unknown, private = self.memory().readable(wanted, include_private=include_private)
        if not records:
            what = f"no memory {_join(unknown)} in this project" if unknown else ""
            if private:
                what += "; " if what else ""
                what += f"memory {_join(private)} is private (include_private=true reads it)"
            raise QueryError(what)
        data: dict[str, Any] = {"records": [r.to_dict() for r in records]}
        if unknown:
            data["unknown"] = unknown
        if private:
            data["private"] = private
        lists = tuple(key for key in ("records", "unknown", "private") if key in data)
        return self._answer(data, cut=lists, hint=_MEMORY_HINT, index=False)

    def memory_add(
        self,
        text: str,
        type: str = "observation",
        scope: Literal["user", "project"] = "project",
        tags: str | list[str] | None = None,
        session: str | None = None,
        private: bool = False,
    ) -> str:
        result = self.memory().add(
            text,
            type,
            scope=scope,
            tags=_strings(tags),
            privacy="private" if private else None,
            session=session,
        )
        return self._answer(result.to_dict(), index=False)

    def memory_supersede(self, record_id: int, text: str, tags: str | list[str] | None) -> str:
        store = self.memory()
        store.readable_one(record_id, include_private=True)
        new = store.supersede(record_id, text, tags=_strings(tags) if tags is not None else None)
        return self._answer({"superseded": record_id, "record": new.to_dict()}, index=False)

    def memory_forget(self, record_id: int, reason: str) -> str:
        store = self.memory()
        store.readable_one(record_id, include_private=True)
        tombstone = store.forget(record_id, reason)
        return self._answer({"forgotten": tombstone.to_dict()}, index=False)

    def memory_context(self, query: str | None, session: str | None, budget: int | None) -> str:
        budget = _MEMORY_BUDGET if budget is None else budget
        block = self.memory().context(query, session=session, budget=budget)
        return self._answer(block.to_dict(), index=False)

    def ask(self, question: str, limit: int) -> str:
        """Code hits and memories for one question, fused by reciprocal rank."""
        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        self._searchable()
        code = self._index.search(question, limit, with_content=True)
        store = self.memory()
        hits = store.search(question, limit=limit)
        found = {r.id: r for r in store.get(hit.id for hit in hits)}
        memories = [_memory_item(found[h.id], h.score) for h in hits if h.id in found]
        data: dict[str, Any] = {
            "question": question,
            "results": _fuse(memories, [_code_item(hit) for hit in code])[:limit],
            "found": {"memory": len(memories), "code": len(code)},
        }
        return self._answer(data, cut="results", hint="lower limit")

    def _hits(self, hits: list[SearchHit], *, with_content: bool, note: str | None = None) -> str:
        rows: list[dict[str, Any]] = []
        for hit in hits:
            row = hit.to_dict()
            if with_content:
                row.pop("channels")
                rows.append(row)
            else:
                rows.append({key: row[key] for key in _PEEK_FIELDS})
        for row in rows:
            row["score"] = round(row["score"], 4)
        data: dict[str, Any] = {"hits": rows}
        if note is not None:
            data["note"] = note
        return self._answer(data, cut="hits")

    def _answer(
        self,
        data: dict[str, Any],
        cut: str | tuple[str, ...] | None = None,
        *,
        hint: str = _SEARCH_HINT,
        index: bool = True,
    ) -> str:
        """The JSON text of ``data`` with the stale flag (for answers from the ``index``),
        under the token cap: the lists under ``cut`` keep their first items, as many as fit
        (with several lists, the same number from each, so callers never crowd out callees;
        ``hint`` says what to do about it); then the longest texts are shortened (a huge
        function's content, a long record), marked as cut; what still does not fit is replaced
        by a note."""
        if index and self.stale:
            data["stale"] = True
            data["stale_note"] = (
                f"the last index update failed: {self._update_error}"
                if self._update_error
                else _STALE_NOTE
            )
        text = _dumps(data)
        if count_tokens(text) <= self._cap:
            return text
        data["truncated"] = True
        keys = (cut,) if isinstance(cut, str) else cut or ()
        if keys:
            lists: dict[str, list[Any]] = {key: data[key] for key in keys}
            data["hint"] = hint

            def cut_to(kept: int) -> None:
                # The counts and the hint are part of what must fit: every trial has them.
                for key, items in lists.items():
                    data[key] = items[:kept]
                dropped = {key: len(items) - min(kept, len(items)) for key, items in lists.items()}
                data["dropped"] = dropped[keys[0]] if len(keys) == 1 else dropped

            low, high = 0, max(len(items) for items in lists.values())
            while low < high:  # the most items per list that fit, by bisection
                middle = (low + high + 1) // 2
                cut_to(middle)
                if count_tokens(_dumps(data)) <= self._cap:
                    low = middle
                else:
                    high = middle - 1
            # One item too large on its own is shortened below, not dropped.
            cut_to(max(low, 1))
            text = _dumps(data)
            if count_tokens(text) <= self._cap:
                return text
        if _shrink(data, self._cap):
            return _dumps(data)
        return _dumps(
            {
                "truncated": True,
                "note": f"the answer exceeds the token cap of {self._cap}; raise mcp-token-cap",
            }
        )


def _strings(value: str | list[str] | None) -> tuple[str, ...]:
    """One string or a list of them (agents send either)."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _join(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _join_names(names: list[str]) -> str:
    return ", ".join(repr(name) for name in names)


def _memory_item(record: MemoryRecord, score: float) -> dict[str, Any]:
    return {
        "source": "memory",
        "id": record.id,
        "type": record.type,
        "scope": record.scope,
        "created_at": record.created_at.isoformat(),
        "tags": list(record.tags),
        "score": score,
        "text": record.text,
    }


def _code_item(hit: SearchHit) -> dict[str, Any]:
    row = hit.to_dict()
    row.pop("channels")
    origin = row.pop("source")
    row["score"] = round(row["score"], 4)
    item = {"source": "code", **row}
    if origin != "code":
        item["kb"] = origin  # a knowledge base's hit: searched with the code
    return item


def _fuse(memories: list[dict[str, Any]], code: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One list by reciprocal rank (``1 / (k + rank)``, k = 60): each item keeps its
    ``rank`` within its own list; at equal rank a memory comes before code."""
    fused: list[tuple[float, int, int, dict[str, Any]]] = []
    for order, items in enumerate((memories, code)):
        for rank, item in enumerate(items, 1):
            score = 1 / (_RRF_K + rank)
            fused.append((-score, order, rank, {**item, "rank": rank, "rrf": round(score, 6)}))
    fused.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in fused]


_CUT_MARK = " … (cut to fit mcp-token-cap)"
_MIN_KEPT_CHARS = 200


def _shrink(data: dict[str, Any], cap: int) -> bool:
    """Shortens the longest texts of ``data`` in place until its JSON fits ``cap`` tokens;
    whether it does. Each cut text ends with a mark saying so, and ``truncated`` is set.
    A text may be cut again: two long texts (a pasted question and a long function) may
    each need to give up more than their share of the first estimate."""
    for _ in range(24):
        tokens = count_tokens(_dumps(data))
        if tokens <= cap:
            return True
        found = _longest_text(data)
        if found is None:
            return False
        holder, key, text = found
        text = text.removesuffix(_CUT_MARK)
        keep = int(len(text) * cap / tokens * 0.9)
        if keep < _MIN_KEPT_CHARS:
            return False
        holder[key] = text[:keep] + _CUT_MARK
        data["truncated"] = True
    return count_tokens(_dumps(data)) <= cap


def _longest_text(node: Any) -> tuple[Any, Any, str] | None:
    """The container, key and value of the longest string in ``node`` (dicts and lists, at
    any depth) that is worth cutting."""
    best: tuple[Any, Any, str] | None = None
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if isinstance(value, str):
            long = len(value) > _MIN_KEPT_CHARS * 2
            if long and (best is None or len(value) > len(best[2])):
                best = (node, key, value)
        elif isinstance(value, (dict, list)):
            inner = _longest_text(value)
            if inner is not None and (best is None or len(inner[2]) > len(best[2])):
                best = inner
    return best


_MAX_MESSAGE_CHARS = 300


def _message(exc: BaseException) -> str:
    """One line, and short: an error must not echo a 100,000-character argument back."""
    text = " ".join((str(exc) or type(exc).__name__).splitlines())
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 1] + "…"


def _tool(work: Callable[[], _T]) -> _T:
    """Runs a tool body; what the caller got wrong or the index refused becomes a tool error
    (``is_error`` with the message) rather than a crash. Anything else is a bug: logged with
    its traceback, and answered in one line all the same."""
    try:
        return work()
    except (Error, ValueError, OSError, ArithmeticError) as exc:
        raise ToolError(_message(exc)) from None
    except Exception as exc:
        _log.exception("a tool failed")
        raise ToolError(f"internal error: {type(exc).__name__}: {_message(exc)}") from None


class _Server(MCPServer[Any]):
    """The SDK's server, with arguments an agent got wrong answered in one line it can act
    on: the SDK ignores a misspelt argument (the call runs with the default instead) and
    reports a wrong type as pydantic's multi-line report with a link to its docs."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.arguments: dict[str, tuple[str, ...]] = {}
        """Each tool's argument names, by tool name."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        known = self.arguments.get(name)
        if known is not None and (unknown := sorted(set(arguments) - set(known))):
            takes = ", ".join(known) or "no arguments"
            raise ToolError(
                _message(
                    ValueError(f"{name} has no argument {', '.join(unknown)} (it takes: {takes})")
                )
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(map(str, error['loc']))}: {error['msg']}"
                for error in exc.__cause__.errors()
            )
            # ``from`` the cause: the SDK logs the names of the fields it rejected.
            raise ToolError(_message(ValueError(f"{name}: {problems}"))) from exc.__cause__


def build_server(service: McpService) -> MCPServer[Any]:
    """The MCP server with the coderecall tools over ``service``: the tool sets its index's
    ``mcp-tools`` setting names."""
    toolsets = service.toolsets
    instructions = docs.SERVER_INSTRUCTIONS
    if "memory" in toolsets:
        instructions += "\n\n" + docs.MEMORY_INSTRUCTIONS
    server = _Server(
        name="coderecall", version=__version__, instructions=instructions, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    additive = ToolAnnotations(destructive_hint=False, open_world_hint=False)
    destructive = ToolAnnotations(destructive_hint=True, open_world_hint=False)

    def codebase_search(
        query: str,
        limit: Limit = 10,
        language: str | list[str] | None = None,
        directory: str | list[str] | None = None,
        source: str | list[str] | None = None,
    ) -> str:
        return _tool(
            lambda: service.search(
                query, limit, language, directory, with_content=True, source=source
            )
        )

    def codebase_peek(
        query: str,
        limit: Limit = 20,
        language: str | list[str] | None = None,
        directory: str | list[str] | None = None,
        source: str | list[str] | None = None,
    ) -> str:
        return _tool(
            lambda: service.search(
                query, limit, language, directory, with_content=False, source=source
            )
        )

    def codebase_context(
        query: str, budget: Annotated[int, _bounds(_MIN_CONTEXT_BUDGET)] | None = None
    ) -> str:
        return _tool(lambda: service.context(query, budget))

    def implementation_lookup(symbol: str, limit: Limit = 3, with_content: bool = True) -> str:
        return _tool(lambda: service.lookup(symbol, limit, with_content))

    def call_graph(
        symbol: str,
        direction: Literal["callers", "callees", "both"] = "both",
        depth: Annotated[int, _bounds(1, MAX_DEPTH)] = 1,
        limit: Limit = 20,
    ) -> str:
        return _tool(lambda: service.call_graph(symbol, direction, depth, limit))

    def call_graph_path(
        source: str, target: str, max_depth: Annotated[int, _bounds(1, MAX_PATH_DEPTH)] = 8
    ) -> str:
        return _tool(lambda: service.call_path(source, target, max_depth))

    def find_similar(
        code: str | None = None,
        path: str | None = None,
        line: Annotated[int, _bounds(1)] | None = None,
        limit: Limit = 10,
    ) -> str:
        return _tool(lambda: service.similar(code, path, line, limit))

    def index_codebase(force: bool = False, estimate: bool = False) -> str:
        return _tool(lambda: service.index(force, estimate))

    def index_status() -> str:
        return _tool(service.status)

    def index_health_check(repair: bool = False) -> str:
        return _tool(lambda: service.health(repair))

    def index_metrics() -> str:
        return _tool(service.metrics)

    def index_logs(limit: Limit = 50, level: str | None = None, contains: str | None = None) -> str:
        return _tool(lambda: service.logs(limit, level, contains))

    def add_knowledge_base(path: str, name: str | None = None) -> str:
        return _tool(lambda: service.add_knowledge_base(path, name))

    def list_knowledge_bases() -> str:
        return _tool(service.list_knowledge_bases)

    def remove_knowledge_base(name: str) -> str:
        return _tool(lambda: service.remove_knowledge_base(name))

    def memory_search(
        query: str,
        limit: Limit = 10,
        type: str | list[str] | None = None,
        scope: Literal["user", "project"] | None = None,
        tags: str | list[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        include_private: bool = False,
    ) -> str:
        return _tool(
            lambda: service.memory_search(
                query, limit, type, scope, tags, since, until, include_private
            )
        )

    def memory_timeline(id: int, before: Span = 5, after: Span = 5) -> str:
        return _tool(lambda: service.memory_timeline(id, before, after))

    def memory_get(ids: int | list[int], include_private: bool = False) -> str:
        return _tool(lambda: service.memory_get(ids, include_private))

    def memory_add(
        text: str,
        type: str = "observation",
        scope: Literal["user", "project"] = "project",
        tags: str | list[str] | None = None,
        session: str | None = None,
        private: bool = False,
    ) -> str:
        return _tool(lambda: service.memory_add(text, type, scope, tags, session, private))

    def memory_supersede(id: int, text: str, tags: str | list[str] | None = None) -> str:
        return _tool(lambda: service.memory_supersede(id, text, tags))

    def memory_forget(id: int, reason: str) -> str:
        return _tool(lambda: service.memory_forget(id, reason))

    def memory_context(
        query: str | None = None,
        session: str | None = None,
        budget: Annotated[int, _bounds(MIN_BUDGET)] | None = None,
    ) -> str:
        return _tool(lambda: service.memory_context(query, session, budget))

    def ask(question: str, limit: Limit = 10) -> str:
        return _tool(lambda: service.ask(question, limit))

    # Unstructured: the JSON text is the whole answer, so the token cap covers all of it
    # (structured output would send the same data twice).
    tools: list[tuple[str, Callable[..., str], str, ToolAnnotations | None]] = [
        ("code", codebase_context, docs.CONTEXT_DOC, read_only),
        ("code", codebase_search, docs.SEARCH_DOC, read_only),
        ("code", codebase_peek, docs.PEEK_DOC, read_only),
        ("code", implementation_lookup, docs.LOOKUP_DOC, read_only),
        ("code", call_graph, docs.CALL_GRAPH_DOC, read_only),
        ("code", call_graph_path, docs.CALL_PATH_DOC, read_only),
        ("code", find_similar, docs.SIMILAR_DOC, read_only),
        ("code", index_codebase, docs.INDEX_DOC, None),
        ("code", index_status, docs.STATUS_DOC, read_only),
        ("diagnostics", index_health_check, docs.HEALTH_DOC, None),
        ("diagnostics", index_metrics, docs.METRICS_DOC, read_only),
        ("diagnostics", index_logs, docs.LOGS_DOC, read_only),
        ("knowledge", add_knowledge_base, docs.KB_ADD_DOC, None),
        ("knowledge", list_knowledge_bases, docs.KB_LIST_DOC, read_only),
        ("knowledge", remove_knowledge_base, docs.KB_REMOVE_DOC, None),
        ("memory", ask, docs.ASK_DOC, read_only),
        ("memory", memory_search, docs.MEMORY_SEARCH_DOC, read_only),
        ("memory", memory_timeline, docs.MEMORY_TIMELINE_DOC, read_only),
        ("memory", memory_get, docs.MEMORY_GET_DOC, read_only),
        ("memory", memory_add, docs.MEMORY_ADD_DOC, additive),
        ("memory", memory_supersede, docs.MEMORY_SUPERSEDE_DOC, additive),
        ("memory", memory_forget, docs.MEMORY_FORGET_DOC, destructive),
        ("memory", memory_context, docs.MEMORY_CONTEXT_DOC, read_only),
    ]
    for toolset, function, description, hints in tools:
        if toolset not in toolsets:
            continue
        server.add_tool(
            function, description=description, annotations=hints, structured_output=False
        )
        server.arguments[function.__name__] = tuple(inspect.signature(function).parameters)
    return server


class BearerAuth:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error":"a bearer token is required"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b'Bearer realm="coderecall"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


def serve(
    root: str | os.PathLike[str],
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    force: bool = False,
    watch: bool = True,
    tools: Sequence[str] | None = None,
) -> None:
    """Serve the index of ``root`` until the client goes away (stdio) or Ctrl-C (HTTP),
    re-indexing files as they change unless ``watch`` is false. ``tools`` names the tool
    sets to serve (see ``MCP_TOOLSETS``) over the ``mcp-tools`` setting.

    Raises :class:`~coderecall.ConfigError` when HTTP would bind to a non-local address
    without a token (``token``, else the ``CODERECALL_MCP_TOKEN`` variable).
    """
    token = token or os.environ.get(TOKEN_ENV) or None
    if transport == "http" and host not in LOCAL_HOSTS and token is None:
        raise ConfigError(
            f"refusing to serve MCP on {host} without a bearer token: pass --token or set "
            f"{TOKEN_ENV} (or bind to 127.0.0.1)",
            key="token",
        )
    overrides = None if tools is None else {"mcp_tools": tuple(tools)}
    with CodeIndex(root, config=overrides, force=force) as index:
        index._log_to_file()
        service = McpService(index, watch=watch)
        server = build_server(service)
        service.start()
        try:
            if transport == "stdio":
                server.run("stdio")
                return
            import uvicorn  # a dependency of the mcp SDK

            app: ASGIApp = server.streamable_http_app(host=host)
            if token is not None:
                app = BearerAuth(app, token)
            _log.warning("serving MCP on http://%s:%d/mcp for %s", host, port, index.root)
            config = uvicorn.Config(app, host=host, port=port, log_level="warning")
            uvicorn.Server(config).run()
        finally:
            service.close()
