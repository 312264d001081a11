"""``coderecall mcp``: the index of one project root served to agents over MCP.

The server opens the index and brings it up to date in a background thread; the tools answer
meanwhile (from the index as it was) and say so with ``"stale": true`` until that first update
finished. Every answer is one JSON text kept under a token cap (``mcp-token-cap``): hits are
dropped whole from the end, never cut in half, and the answer says how many were dropped.

Tokens are estimated, not counted: ``ceil(utf-8 bytes / 3)``. Code tokenises at roughly 3.5 to
4 bytes per token with the usual BPE vocabularies, so the estimate errs on the safe side; a real
tokenizer can replace :func:`estimate_tokens` later without changing the tools.

Over streamable HTTP the server binds to 127.0.0.1 unless told otherwise; any other address
needs a bearer token, which every request must then carry (401 otherwise).
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from starlette.types import ASGIApp, Receive, Scope, Send

from ._errors import ConfigError, Error
from ._index import CodeIndex
from ._native import __version__
from ._results import SearchHit

__all__ = ["LOCAL_HOSTS", "TOKEN_ENV", "McpService", "build_server", "estimate_tokens", "serve"]

TOKEN_ENV = "CODERECALL_MCP_TOKEN"
"""Environment variable holding the bearer token of the HTTP transport."""
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Addresses the HTTP transport may bind to without a token."""

_PEEK_FIELDS = ("path", "start_line", "end_line", "symbol_path", "kind", "score")
_STALE_NOTE = (
    "the index is being brought up to date in the background; results may miss recent "
    "changes (call index_status later, or index_codebase to wait for it)"
)

_log = logging.getLogger("coderecall")
_T = TypeVar("_T")


def estimate_tokens(text: str) -> int:
    """A conservative token count of ``text``: one token per 3 UTF-8 bytes, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / 3)


def _dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class McpService:
    """The tools' behaviour over one :class:`CodeIndex`, independent of the MCP plumbing.

    Each method returns the JSON text of its answer, already under the token cap.
    """

    def __init__(self, index: CodeIndex, token_cap: int | None = None) -> None:
        self._index = index
        self._cap = index.config.mcp_token_cap if token_cap is None else token_cap
        self._first_update = threading.Event()
        self._update_error: str | None = None
        self._write_lock = threading.Lock()  # one indexing run or repair of ours at a time
        self._thread: threading.Thread | None = None

    @property
    def token_cap(self) -> int:
        return self._cap

    @property
    def stale(self) -> bool:
        """Whether the first update has not (successfully) finished yet."""
        return not self._first_update.is_set() or self._update_error is not None

    def start(self) -> None:
        """Start the first update in a background thread."""
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

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._first_update.wait(timeout)

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
    ) -> str:
        self._searchable()
        hits = self._index.search(
            query, limit, language=language, directory=directory, with_content=with_content
        )
        return self._hits(hits, with_content=with_content)

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
            data.pop("skipped_examples")  # "skipped" has the counts; examples cost tokens
            return self._answer({"report": data})

    def status(self) -> str:
        return self._answer({"status": self._index.status().to_dict()})

    def health(self, repair: bool) -> str:
        if repair:
            with self._write_lock:
                report = self._index.health(repair=True)
        else:
            report = self._index.health()
        return self._answer({"health": report.to_dict()})

    def _hits(self, hits: list[SearchHit], *, with_content: bool) -> str:
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
        return self._answer({"hits": rows}, cut="hits")

    def _answer(self, data: dict[str, Any], cut: str | None = None) -> str:
        """The JSON text of ``data`` with the stale flag, under the token cap: the list under
        ``cut`` loses items from its end; anything else too large is replaced by a note."""
        if self.stale:
            data["stale"] = True
            data["note"] = (
                f"the last index update failed: {self._update_error}"
                if self._update_error
                else _STALE_NOTE
            )
        text = _dumps(data)
        if estimate_tokens(text) <= self._cap:
            return text
        data["truncated"] = True
        if cut is not None:
            items: list[Any] = data[cut]
            total = len(items)
            data["dropped"] = total
            data[cut] = []
            low, high = 0, total  # the most items that fit, by bisection
            while low < high:
                middle = (low + high + 1) // 2
                data[cut], data["dropped"] = items[:middle], total - middle
                if estimate_tokens(_dumps(data)) <= self._cap:
                    low = middle
                else:
                    high = middle - 1
            data[cut], data["dropped"] = items[:low], total - low
            data["hint"] = "lower limit, or use codebase_peek for locations only"
            text = _dumps(data)
            if estimate_tokens(text) <= self._cap:
                return text
        return _dumps(
            {
                "truncated": True,
                "note": f"the answer exceeds the token cap of {self._cap}; raise mcp-token-cap",
            }
        )


def _message(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.splitlines())


def _tool(work: Callable[[], _T]) -> _T:
    """Runs a tool body; what the caller got wrong or the index refused becomes a tool error
    (``is_error`` with the message) rather than a crash."""
    try:
        return work()
    except (Error, ValueError, OSError) as exc:
        raise ToolError(_message(exc)) from None


_SEARCH_DOC = """\
Search this codebase by meaning and by keywords at once (hybrid BM25 + embeddings) and get
the matching code chunks with their source text. Use it first when you need to find where
something is implemented, defined or handled: an identifier (`TokenStore`), a path fragment,
or a plain-language description ("where are access tokens refreshed"). Cheaper and more
complete than grepping file by file.

Returns JSON `{"hits": [...]}`, best first; each hit has path (relative to the project root),
start_line, end_line (1-based, inclusive), language, kind (function, method, class, ...),
symbol, symbol_path, score (comparable within one answer) and content (the chunk's source).
`language` (e.g. "python") and `directory` (e.g. "src/api") narrow the search. When the answer
would be too long, the last hits are dropped and `truncated: true` with `dropped: N` says so.
`stale: true` means the index is still catching up with recent edits."""

_PEEK_DOC = """\
The same search as codebase_search but returns only locations, no source text: path,
start_line, end_line, symbol_path, kind and score for each hit. Use it to survey many
candidates cheaply (it costs a fraction of the tokens), then read the files or chunks you need.
Returns JSON `{"hits": [...]}`, best first."""

_SIMILAR_DOC = """\
Find code that resembles a given snippet (`code`) or an existing chunk (`path` relative to
the project root plus a 1-based `line` inside it; that chunk itself is left out). Use it to
find duplicates, other implementations of the same pattern, or callers written alike before
changing one of them. Give either code, or path and line, not both. Returns JSON
`{"hits": [...]}` shaped as in codebase_search."""

_INDEX_DOC = """\
Bring the code index up to date with the files on disk (incremental: only changed files are
read). The server already does this on start, so call it after you edited many files, or
with force=true to re-read everything. Returns JSON `{"report": {...}}` with files seen,
parsed, removed, chunks added, skipped-file counts by reason, seconds taken. With
estimate=true nothing is embedded: it returns `{"estimate": {...}}`, the number of chunks
and tokens embedding would cost."""

_STATUS_DOC = """\
Describe the index: whether it exists, how many files, chunks and symbols it holds, files per
language, its size on disk, when it was last updated and what that run did. Cheap; use it to
check that the codebase is indexed or to explain a surprising search result."""

_HEALTH_DOC = """\
Check the index for damage: the database's integrity and the derived files (lexical index,
vector graph) against it. Returns JSON `{"health": {"ok": ..., "problems": [...],
"repaired": [...]}}`. With repair=true the derived files are rebuilt from the database. Use
it when searches fail or look wrong."""


def build_server(service: McpService) -> MCPServer[Any]:
    """The MCP server with the coderecall tools over ``service``."""
    server: MCPServer[Any] = MCPServer(
        name="coderecall",
        version=__version__,
        instructions=(
            "Code search over one project. Start with codebase_search (or codebase_peek for "
            "locations only); index_codebase after large edits."
        ),
        log_level="WARNING",
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def codebase_search(
        query: str,
        limit: int = 10,
        language: str | list[str] | None = None,
        directory: str | list[str] | None = None,
    ) -> str:
        return _tool(lambda: service.search(query, limit, language, directory, with_content=True))

    def codebase_peek(
        query: str,
        limit: int = 20,
        language: str | list[str] | None = None,
        directory: str | list[str] | None = None,
    ) -> str:
        return _tool(lambda: service.search(query, limit, language, directory, with_content=False))

    def find_similar(
        code: str | None = None,
        path: str | None = None,
        line: int | None = None,
        limit: int = 10,
    ) -> str:
        return _tool(lambda: service.similar(code, path, line, limit))

    def index_codebase(force: bool = False, estimate: bool = False) -> str:
        return _tool(lambda: service.index(force, estimate))

    def index_status() -> str:
        return _tool(service.status)

    def index_health_check(repair: bool = False) -> str:
        return _tool(lambda: service.health(repair))

    # Unstructured: the JSON text is the whole answer, so the token cap covers all of it
    # (structured output would send the same data twice).
    tools: list[tuple[Callable[..., str], str, ToolAnnotations | None]] = [
        (codebase_search, _SEARCH_DOC, read_only),
        (codebase_peek, _PEEK_DOC, read_only),
        (find_similar, _SIMILAR_DOC, read_only),
        (index_codebase, _INDEX_DOC, None),
        (index_status, _STATUS_DOC, read_only),
        (index_health_check, _HEALTH_DOC, None),
    ]
    for function, description, hints in tools:
        server.add_tool(
            function, description=description, annotations=hints, structured_output=False
        )
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
) -> None:
    """Serve the index of ``root`` until the client goes away (stdio) or Ctrl-C (HTTP).

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
    with CodeIndex(root, force=force) as index:
        service = McpService(index)
        server = build_server(service)
        service.start()
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
