"""``coderecall mcp``: the tools, called through the MCP SDK's own client over stdio and HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

import coderecall
from coderecall import CodeIndex
from coderecall._errors import QueryError
from coderecall._mcp import McpService, _tool, build_server, count_tokens
from helpers import (
    CALLS_PROJECT,
    HANDBOOK,
    LEDGER,
    LEDGER_CODE,
    LEDGER_FUNCTION,
    SAMPLE_PROJECT,
    MakeRepo,
    write_files,
)

CODE_TOOLS = {
    "codebase_context",
    "codebase_search",
    "codebase_peek",
    "implementation_lookup",
    "call_graph",
    "call_graph_path",
    "find_similar",
    "index_codebase",
    "index_status",
}
MEMORY_TOOLS = {
    "ask",
    "memory_search",
    "memory_timeline",
    "memory_get",
    "memory_add",
    "memory_supersede",
    "memory_forget",
    "memory_context",
}
TOOLS = (
    CODE_TOOLS
    | MEMORY_TOOLS
    | {
        "index_health_check",
        "index_metrics",
        "index_logs",
        "add_knowledge_base",
        "list_knowledge_bases",
        "remove_knowledge_base",
    }
)
READ_ONLY = TOOLS - {
    "index_codebase",
    "index_health_check",
    "add_knowledge_base",
    "remove_knowledge_base",
    "memory_add",
    "memory_supersede",
    "memory_forget",
}
DEFAULT_CAP = 4000
"""``mcp-token-cap`` when nothing sets it: every answer of these tests must fit under it."""
PEEK_FIELDS = {"path", "start_line", "end_line", "symbol_path", "kind", "score", "source"}
_PACKAGE_PARENT = str(Path(coderecall.__file__).resolve().parents[1])
"""The server subprocess imports the same coderecall as the tests."""


def _environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_PARENT, env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _answer(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    (block,) = result.content
    assert isinstance(block, TextContent)
    assert count_tokens(block.text) <= DEFAULT_CAP
    data: dict[str, Any] = json.loads(block.text)
    return data


def _error(result: CallToolResult) -> str:
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@asynccontextmanager
async def _stdio_session(root: Path, *options: str, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coderecall", "mcp", str(root), *options],
        env=_environment(**env),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        yield session


class _Caller(Protocol):
    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any: ...

    async def list_tools(self) -> Any: ...


class _Tools:
    """Calls tools over one session (a stdio or HTTP ``ClientSession``, or the SDK's
    in-process ``Client``); every answer, error or not, must fit under ``cap``."""

    def __init__(self, session: _Caller, cap: int = DEFAULT_CAP) -> None:
        self.session = session
        self.cap = cap
        self.called: set[str] = set()

    async def _text(self, name: str, arguments: dict[str, Any]) -> tuple[CallToolResult, str]:
        result = await self.session.call_tool(name, arguments)
        assert isinstance(result, CallToolResult)
        self.called.add(name)
        (block,) = result.content
        assert isinstance(block, TextContent)
        assert count_tokens(block.text) <= self.cap, (name, count_tokens(block.text))
        return result, block.text

    async def ok(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        result, text = await self._text(tool, arguments)
        assert not result.is_error, text
        data: dict[str, Any] = json.loads(text)
        return data

    async def error(self, tool: str, /, **arguments: Any) -> str:
        result, text = await self._text(tool, arguments)
        assert result.is_error, text
        assert "Traceback" not in text
        return text


@pytest.mark.slow
def test_stdio_tools(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)

    async def run() -> None:
        async with _stdio_session(root) as session:
            listed = await session.list_tools()
            assert {tool.name for tool in listed.tools} == TOOLS
            assert all(tool.description and len(tool.description) > 80 for tool in listed.tools)
            read_only = {
                tool.name
                for tool in listed.tools
                if tool.annotations is not None and tool.annotations.read_only_hint
            }
            assert read_only == READ_ONLY

            found = _answer(
                await session.call_tool("codebase_search", {"query": "TokenStore", "limit": 5})
            )
            assert found["hits"][0]["path"] == "src/shop/auth.py"
            assert "class TokenStore" in found["hits"][0]["content"]

            report = _answer(await session.call_tool("index_codebase", {}))["report"]
            assert report["files_seen"] >= 3
            assert "stale" not in _answer(await session.call_tool("index_status", {}))

            peek = _answer(await session.call_tool("codebase_peek", {"query": "refresh token"}))
            assert peek["hits"]
            assert "stale" not in peek
            for hit in peek["hits"]:
                assert set(hit) == PEEK_FIELDS
            assert any(hit["path"] == "src/shop/auth.py" for hit in peek["hits"])

            filtered = _answer(
                await session.call_tool(
                    "codebase_search", {"query": "token", "directory": "src/shop"}
                )
            )
            assert all(hit["path"].startswith("src/shop/") for hit in filtered["hits"])

            line = (
                SAMPLE_PROJECT["src/shop/auth.py"]
                .splitlines()
                .index("    def issue_token(self, user_id: str, lifetime: float = 3600.0) -> str:")
            )
            similar = _answer(
                await session.call_tool(
                    "find_similar", {"path": "src/shop/auth.py", "line": line + 1, "limit": 3}
                )
            )
            assert isinstance(similar["hits"], list)
            by_code = _answer(
                await session.call_tool("find_similar", {"code": "def issue_token(user_id): ..."})
            )
            assert by_code["hits"]

            status = _answer(await session.call_tool("index_status", {}))["status"]
            assert status["exists"] is True
            assert status["files"] == report["files_seen"]
            assert status["languages"]["python"] >= 2

            health = _answer(await session.call_tool("index_health_check", {}))["health"]
            assert health["ok"] is True
            repaired = _answer(await session.call_tool("index_health_check", {"repair": True}))
            assert repaired["health"]["ok"] is True

            estimate = _answer(await session.call_tool("index_codebase", {"estimate": True}))
            assert estimate["estimate"]["provider"] == "none"

            # Bad calls are tool errors with a message; the server keeps answering.
            assert "empty" in _error(await session.call_tool("codebase_search", {"query": " "}))
            assert "limit" in _error(
                await session.call_tool("codebase_search", {"query": "x", "limit": 0})
            )
            assert "either code or a path" in _error(await session.call_tool("find_similar", {}))
            assert "outside the root" in _error(
                await session.call_tool("codebase_search", {"query": "x", "directory": "../.."})
            )
            assert _error(await session.call_tool("codebase_search", {"limit": 3}))
            again = _answer(await session.call_tool("codebase_search", {"query": "TokenStore"}))
            assert again["hits"]

    anyio.run(run)


@pytest.mark.slow
def test_stdio_code_intelligence(make_repo: MakeRepo) -> None:
    """codebase_context on its three routes, implementation_lookup, call_graph,
    call_graph_path and index_metrics, against what CALLS_PROJECT is known to hold."""
    root = make_repo(CALLS_PROJECT)

    async def run() -> None:
        async with _stdio_session(root) as session:
            tools = _Tools(session)
            await tools.ok("index_codebase")  # waits for the first update: not stale below

            # An identifier: its definition, then the call site of its caller.
            found = await tools.ok("codebase_context", query="compute_invoice_total")
            assert found["route"] == "identifier"
            assert "stale" not in found
            context = found["context"]
            assert context.startswith(
                "[definition] src/shop/billing.py:21-24 shop.billing.compute_invoice_total"
            )
            assert "def compute_invoice_total(items: list[LineItem], tax_rate: float)" in context
            assert "[caller] src/shop/checkout.py:" in context
            assert "calls it at line 10 (resolved)" in context
            assert found["truncated"] is False
            assert found["dropped"] == 0
            assert 0 < found["tokens"] <= found["budget"] == 3000
            assert found["tokenizer"]

            # A path: the file's outline and head.
            outline = await tools.ok("codebase_context", query="src/shop/auth.py")
            assert outline["route"] == "path"
            text = outline["context"]
            assert text.startswith("[outline] src/shop/auth.py:1-32")
            assert "L15-19 method shop.auth.TokenStore.issue_token (callers 2" in text
            assert "L29-32 function shop.auth.validate_signature" in text
            assert "[head] src/shop/auth.py:1-" in text
            assert "import hmac" in text

            # A question: search hits.
            asked = await tools.ok("codebase_context", query="how are invoices totalled with tax")
            assert asked["route"] == "search"
            assert asked["context"].startswith(
                "[hit] src/shop/billing.py:21-24 shop.billing.compute_invoice_total"
            )

            # A smaller budget is kept.
            small = await tools.ok("codebase_context", query="TokenStore", budget=120)
            assert small["route"] == "identifier"
            assert small["budget"] == 120
            assert small["tokens"] <= 120
            assert small["truncated"] is True

            definitions = (await tools.ok("implementation_lookup", symbol="checkout"))[
                "definitions"
            ]
            first = definitions[0]
            assert (first["path"], first["start_line"], first["end_line"]) == (
                "src/shop/checkout.py",
                7,
                10,
            )
            assert (first["kind"], first["symbol_path"]) == ("function", "shop.checkout.checkout")
            assert (first["callers"], first["callees"]) == (1, 2)
            assert first["content"].startswith("def checkout(store: TokenStore")
            method = await tools.ok(
                "implementation_lookup", symbol="TokenStore.issue_token", with_content=False
            )
            (issue,) = method["definitions"]
            assert (issue["path"], issue["start_line"]) == ("src/shop/auth.py", 15)
            assert "content" not in issue
            by_line = await tools.ok("implementation_lookup", symbol="src/shop/billing.py:23")
            assert by_line["definitions"][0]["symbol_path"] == "shop.billing.compute_invoice_total"

            graph = await tools.ok("call_graph", symbol="checkout")
            assert graph["symbol"]["symbol_path"] == "shop.checkout.checkout"
            (caller,) = graph["callers"]
            assert caller["caller"] == "shop.api.handle_checkout_request"
            assert (caller["path"], caller["line"]) == ("src/shop/api.py", 8)
            assert caller["confidence"] == "resolved"
            callees = {edge["callee"]: edge for edge in graph["callees"]}
            total = callees["shop.billing.compute_invoice_total"]
            assert (total["confidence"], total["line"]) == ("resolved", 10)
            assert (total["callee_path"], total["callee_line"]) == ("src/shop/billing.py", 21)
            refresh = callees["shop.auth.TokenStore.refresh_access_token"]
            assert refresh["confidence"] == "resolved"  # `store: TokenStore`
            assert graph["complete"] is True

            # Two calls away: the handler reaches compute_invoice_total through checkout.
            deep = await tools.ok(
                "call_graph", symbol="compute_invoice_total", direction="callers", depth=2
            )
            assert deep["callees"] == []
            depths = {edge["caller"]: edge["depth"] for edge in deep["callers"]}
            assert depths == {"shop.checkout.checkout": 1, "shop.api.handle_checkout_request": 2}
            leaf = await tools.ok("call_graph", symbol="handle_checkout_request")
            assert leaf["callers"] == []
            assert leaf["complete"] is True
            assert "no callers" in leaf["note"]

            chain = await tools.ok(
                "call_graph_path", source="handle_checkout_request", target="issue_token"
            )
            assert chain["found"] is True
            assert [(e["caller"], e["callee"]) for e in chain["edges"]] == [
                ("shop.api.handle_checkout_request", "shop.checkout.checkout"),
                ("shop.checkout.checkout", "shop.auth.TokenStore.refresh_access_token"),
                ("shop.auth.TokenStore.refresh_access_token", "shop.auth.TokenStore.issue_token"),
            ]
            assert [e["line"] for e in chain["edges"]] == [8, 9, 26]
            assert chain["target"]["symbol_path"] == "shop.auth.TokenStore.issue_token"
            nowhere = await tools.ok(
                "call_graph_path", source="compute_invoice_total", target="issue_token"
            )
            assert nowhere["found"] is False
            assert nowhere["edges"] == []
            assert "no chain" in nowhere["note"]
            too_short = await tools.ok(
                "call_graph_path",
                source="handle_checkout_request",
                target="issue_token",
                max_depth=2,
            )
            assert too_short["found"] is False

            metrics = (await tools.ok("index_metrics"))["metrics"]
            assert metrics["status"]["files"] == len(CALLS_PROJECT)
            graph_counts = metrics["graph"]
            assert graph_counts["files"] == len(CALLS_PROJECT)
            # At least the definitions and edges the calls above relied on.
            assert graph_counts["definitions"] >= 20
            assert graph_counts["resolved"] >= 7
            assert graph_counts["edges"] == (
                graph_counts["resolved"] + graph_counts["inferred"] + graph_counts["unresolved"]
            )
            assert graph_counts["build_seconds"] >= 0
            assert metrics["knowledge_bases"] == 0
            operations = metrics["operations"]
            assert operations["context"]["count"] == 4
            assert operations["call_graph"]["count"] == 3
            assert operations["call_graph_path"]["count"] == 3
            assert operations["implementation_lookup"]["count"] == 3
            assert 0 <= operations["call_graph"]["p50_ms"] <= operations["call_graph"]["max_ms"]

            # Mistakes are tool errors with a clear message; the server keeps answering.
            assert "no definition of 'no_such_symbol'" in await tools.error(
                "call_graph", symbol="no_such_symbol"
            )
            assert "no definition of 'no_such_symbol'" in await tools.error(
                "implementation_lookup", symbol="no_such_symbol"
            )
            assert "no definition of 'no_such_symbol'" in await tools.error(
                "call_graph_path", source="checkout", target="no_such_symbol"
            )
            assert "depth must be between 1 and 5, got 9" in await tools.error(
                "call_graph", symbol="checkout", depth=9
            )
            assert "max_depth must be between 1 and 12" in await tools.error(
                "call_graph_path", source="checkout", target="issue_token", max_depth=0
            )
            assert await tools.error("call_graph", symbol="checkout", direction="sideways")
            assert "empty" in await tools.error("codebase_context", query="  ")
            assert "empty" in await tools.error("call_graph", symbol=" ")
            again = await tools.ok("call_graph", symbol="checkout", direction="callers")
            assert again["callers"][0]["caller"] == "shop.api.handle_checkout_request"
            assert tools.called == {
                "index_codebase",
                "codebase_context",
                "implementation_lookup",
                "call_graph",
                "call_graph_path",
                "index_metrics",
            }

    anyio.run(run)


@pytest.mark.slow
def test_stdio_logs_and_knowledge_bases(make_repo: MakeRepo, tmp_path: Path) -> None:
    """index_logs after index_codebase (the server writes the index log), filtered by level and
    text; a knowledge base added, searched alone by its name, listed, gone and removed."""
    root = make_repo(CALLS_PROJECT)
    handbook = tmp_path / "handbook"
    write_files(handbook, HANDBOOK)

    async def run() -> None:
        # No notice about semantic search: the only warning is the one this test causes.
        async with _stdio_session(root, CODERECALL_EMBEDDING_PROVIDER="none") as session:
            tools = _Tools(session)
            report = (await tools.ok("index_codebase"))["report"]
            assert report["files_seen"] == len(CALLS_PROJECT)

            logs = (await tools.ok("index_logs"))["logs"]
            assert logs, "the server attaches the index log"
            indexed = [e for e in logs if e["message"].startswith(f"indexed {root}: ")]
            assert indexed
            assert f"{len(CALLS_PROJECT)} files" in indexed[0]["message"]
            assert {e["level"] for e in indexed} == {"INFO"}
            assert all(isinstance(e["pid"], int) and e["logger"] for e in logs)
            times = [e["time"] for e in logs]
            assert times == sorted(times, reverse=True), "newest first"
            one = (await tools.ok("index_logs", limit=1))["logs"]
            assert one == logs[:1]
            matching = (await tools.ok("index_logs", contains="INDEXED"))["logs"]
            assert matching
            assert all("indexed" in e["message"].lower() for e in matching)
            assert (await tools.ok("index_logs", level="warning"))["logs"] == []
            assert "unknown log level 'loud'" in await tools.error("index_logs", level="loud")
            assert "limit" in await tools.error("index_logs", limit=0)

            # Relative to the project root, not to the server's working directory.
            added = (await tools.ok("add_knowledge_base", path="../handbook", name="handbook"))[
                "knowledge_base"
            ]
            assert added["name"] == "handbook"
            assert added["path"] == str(handbook)
            assert (added["files"], added["exists"]) == (len(HANDBOOK), True)
            assert added["chunks"] >= len(HANDBOOK)
            assert added["last_indexed"]

            alone = await tools.ok(
                "codebase_search", query="rotating the signing secret", source="handbook"
            )
            assert alone["hits"]
            assert {hit["source"] for hit in alone["hits"]} == {"handbook"}
            assert alone["hits"][0]["path"] == "runbook.md"
            assert "Rotating the signing secret" in alone["hits"][0]["content"]
            together = await tools.ok("codebase_search", query="secret", limit=20)
            assert {"code", "handbook"} <= {hit["source"] for hit in together["hits"]}
            code_only = await tools.ok("codebase_search", query="secret", source="code")
            assert {hit["source"] for hit in code_only["hits"]} == {"code"}
            peek = await tools.ok("codebase_peek", query="checkout flow", source=["handbook"])
            assert [hit["path"] for hit in peek["hits"]] == ["onboarding/first-week.md"]
            assert "unknown source 'nope'" in await tools.error(
                "codebase_search", query="secret", source="nope"
            )
            assert "known: code, kb, handbook" in await tools.error(
                "codebase_search", query="secret", source="nope"
            )

            (listed,) = (await tools.ok("list_knowledge_bases"))["knowledge_bases"]
            assert (listed["name"], listed["path"], listed["files"]) == (
                "handbook",
                str(handbook),
                len(HANDBOOK),
            )
            metrics = (await tools.ok("index_metrics"))["metrics"]
            assert metrics["knowledge_bases"] == 1

            assert "not a folder" in await tools.error(
                "add_knowledge_base", path=str(tmp_path / "missing")
            )
            assert "inside the project root" in await tools.error("add_knowledge_base", path="src")
            assert "bad knowledge base name" in await tools.error(
                "add_knowledge_base", path="../handbook", name="code"
            )

            # A knowledge base whose folder went away: the next run logs a warning.
            handbook.rename(tmp_path / "handbook-moved")
            await tools.ok("index_codebase")
            warnings = (await tools.ok("index_logs", level="warning"))["logs"]
            assert [e["level"] for e in warnings] == ["WARNING"]
            assert "knowledge base handbook" in warnings[0]["message"]
            assert "is gone" in warnings[0]["message"]
            infos = (await tools.ok("index_logs", level="info"))["logs"]
            assert {"INFO", "WARNING"} <= {e["level"] for e in infos}
            (gone,) = (await tools.ok("list_knowledge_bases"))["knowledge_bases"]
            assert gone["exists"] is False

            assert await tools.ok("remove_knowledge_base", name="handbook") == {
                "removed": True,
                "name": "handbook",
            }
            assert (await tools.ok("list_knowledge_bases"))["knowledge_bases"] == []
            again = await tools.ok("remove_knowledge_base", name="handbook")
            assert again["removed"] is False
            assert "unknown source 'handbook'" in await tools.error(
                "codebase_search", query="secret", source="handbook"
            )
            assert (await tools.ok("codebase_search", query="secret"))["hits"]
            assert tools.called == {
                "index_codebase",
                "index_logs",
                "add_knowledge_base",
                "codebase_search",
                "codebase_peek",
                "list_knowledge_bases",
                "index_metrics",
                "remove_knowledge_base",
            }

    anyio.run(run)


@pytest.mark.slow
def test_stdio_token_cap(make_repo: MakeRepo) -> None:
    """A small mcp-token-cap: lists lose whole items from their ends, the context pack is
    built smaller, and every answer says it was cut."""
    root = make_repo(CALLS_PROJECT)
    cap = 450  # room for one whole hit: a merged chunk of small functions is ~300 tokens

    async def run() -> None:
        async with _stdio_session(root, CODERECALL_MCP_TOKEN_CAP=str(cap)) as session:
            _answer(await session.call_tool("index_codebase", {}))
            result = await session.call_tool("codebase_search", {"query": "token", "limit": 20})
            data = _answer(result)
            block = result.content[0]
            assert isinstance(block, TextContent)
            assert count_tokens(block.text) <= cap
            assert data["truncated"] is True
            assert data["dropped"] >= 1
            assert len(data["hits"]) >= 1  # whole hits kept, each with its content
            assert all(isinstance(hit["content"], str) for hit in data["hits"])

            tools = _Tools(session, cap)  # checks every answer against the small cap
            graph = await tools.ok("call_graph", symbol="checkout", depth=3)
            assert graph["truncated"] is True
            assert graph["symbol"]["symbol_path"] == "shop.checkout.checkout"
            # Both lists keep their first items, as many from each: one caller, some callees.
            assert graph["dropped"]["callees"] >= 1
            assert graph["dropped"]["callers"] == 0
            assert [edge["caller"] for edge in graph["callers"]] == [
                "shop.api.handle_checkout_request"
            ]
            assert graph["callees"], "callers never crowd out every callee"
            assert "limit" in graph["hint"]
            kept = graph["callers"] + graph["callees"]
            assert all(set(edge) >= {"caller", "callee", "confidence"} for edge in kept)

            pack = await tools.ok("codebase_context", query="TokenStore")
            assert pack["route"] == "identifier"
            assert pack["truncated"] is True
            assert pack["budget"] < 3000
            assert f"to {pack['budget']} to fit mcp-token-cap" in pack["note"]
            assert pack["context"].startswith("[definition] src/shop/auth.py:8-")
            assert "cut to fit the budget" in pack["context"]

            # Larger than the cap whatever is dropped: a note instead of broken JSON.
            metrics = await tools.ok("index_metrics")
            assert metrics["truncated"] is True
            assert "raise mcp-token-cap" in metrics["note"]

    anyio.run(run)


AUTH = "src/shop/auth.py"


async def _search_until(
    session: ClientSession,
    query: str,
    done: Callable[[list[dict[str, Any]]], object],
    within: float,
) -> list[dict[str, Any]]:
    """The hits of a search for ``query``, asked again until ``done`` holds for them or
    ``within`` seconds have passed."""
    deadline = time.monotonic() + within
    while True:
        hits: list[dict[str, Any]] = _answer(
            await session.call_tool("codebase_search", {"query": query})
        )["hits"]
        if done(hits) or time.monotonic() > deadline:
            return hits
        await anyio.sleep(0.1)


def _ledger_code(hits: list[dict[str, Any]]) -> str:
    return "".join(hit["content"] for hit in hits if hit["path"] == LEDGER)


def test_the_server_indexes_edits_as_they_are_saved(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    renamed = LEDGER_CODE.replace(LEDGER_FUNCTION, "match_statement")

    async def run() -> None:
        async with _stdio_session(root) as session:
            assert _answer(await session.call_tool("index_codebase", {}))["report"]
            assert _answer(await session.call_tool("index_status", {}))["watching"] is True
            hits = await _search_until(session, LEDGER_FUNCTION, _ledger_code, within=0)
            assert not _ledger_code(hits)

            write_files(root, {LEDGER: LEDGER_CODE})
            hits = await _search_until(session, LEDGER_FUNCTION, _ledger_code, within=30)
            assert hits[0]["path"] == LEDGER
            assert hits[0]["content"] == LEDGER_CODE.rstrip("\n")

            # An edit renames the function; a deletion takes another file's code away.
            write_files(root, {LEDGER: renamed})
            hits = await _search_until(
                session, "match_statement", lambda h: "match_statement" in _ledger_code(h), 30
            )
            assert hits[0]["path"] == LEDGER
            assert hits[0]["content"] == renamed.rstrip("\n")
            (root / "src/shop/auth.py").unlink()
            hits = await _search_until(
                session, "TokenStore", lambda h: all(x["path"] != AUTH for x in h), 30
            )
            assert hits
            assert all(hit["path"] != AUTH for hit in hits)

    anyio.run(run)


def test_without_watching_edits_wait_for_index_codebase(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)

    async def run() -> None:
        async with _stdio_session(root, "--no-watch") as session:
            assert _answer(await session.call_tool("index_codebase", {}))["report"]
            assert _answer(await session.call_tool("index_status", {}))["watching"] is False
            write_files(root, {LEDGER: LEDGER_CODE})
            # Ten debounces: a watching server would have indexed the file by now.
            hits = await _search_until(session, LEDGER_FUNCTION, _ledger_code, within=3)
            assert not _ledger_code(hits)
            report = _answer(await session.call_tool("index_codebase", {}))["report"]
            assert report["files_parsed"] == 1
            hits = await _search_until(session, LEDGER_FUNCTION, _ledger_code, within=0)
            assert hits[0]["path"] == LEDGER

    anyio.run(run)


def test_a_watching_service_stops_its_watcher_on_close(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        service = McpService(index, watch=True)
        service.start()
        assert service.wait_ready(60)
        assert service.watching
        assert any(t.name == "coderecall-watch" for t in threading.enumerate())
        service.close()
        assert not service.watching
        assert not any(t.name == "coderecall-watch" for t in threading.enumerate())


def test_service_stale_until_first_update(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        service = McpService(index)
        assert service.token_cap == 4000
        stale = json.loads(service.status())
        assert stale["stale"] is True
        assert "background" in stale["stale_note"]
        service.start()
        assert service.wait_ready(60)
        fresh = json.loads(service.search("TokenStore", 3, None, None, with_content=True))
        assert "stale" not in fresh
        assert fresh["hits"][0]["path"] == "src/shop/auth.py"


def ready(service: McpService) -> McpService:
    """``service`` started, its first update done."""
    service.start()
    assert service.wait_ready(60)
    return service


def test_service_cuts_whole_hits(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
        full = ready(McpService(index))
        complete = json.loads(full.search("token", 20, None, None, with_content=True))
        assert "truncated" not in complete
        cap = count_tokens(json.dumps(complete["hits"][0])) + 60
        small = ready(McpService(index, token_cap=cap))
        text = small.search("token", 20, None, None, with_content=True)
        cut = json.loads(text)
        assert count_tokens(text) <= cap
        assert cut["truncated"] is True
        assert len(cut["hits"]) + cut["dropped"] == len(complete["hits"])
        assert cut["hits"] == complete["hits"][: len(cut["hits"])]
        tiny = json.loads(McpService(index, token_cap=5).status())
        assert tiny["truncated"] is True


def test_one_item_past_the_cap_is_shortened_not_dropped(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODERECALL_MEMORY", str(tmp_path / "memory.db"))
    body = "".join(f"    total_{n} = data[{n}] * {n}\n" for n in range(3000))
    root = make_repo({"pyproject.toml": "", "report.py": f"def huge_report(data):\n{body}"})
    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        index.index(progress=False)
        service = ready(McpService(index))
        text = service.lookup("huge_report", 3, True)
        assert count_tokens(text) <= service.token_cap
        (found,) = json.loads(text)["definitions"]
        assert found["content"].startswith("def huge_report(data):\n    total_0 = data[0] * 0")
        assert found["content"].endswith(" … (cut to fit mcp-token-cap)")
        assert json.loads(text)["truncated"] is True

        long = " ".join(f"w{n}" for n in range(15_000))  # 93,889 characters
        added = json.loads(service.memory_add(long, "observation", "project", None, None, False))
        assert added["action"] == "added"
        record = added["record"]["id"]
        assert added["record"]["text"].endswith(" … (cut to fit mcp-token-cap)")
        got = json.loads(service.memory_get([record, *range(10_000, 15_000)], False))
        assert [r["id"] for r in got["records"]] == [record]
        assert got["truncated"] is True

        question = "where are totals computed " * 4000
        asked = service.ask(question, 5)
        assert count_tokens(asked) <= service.token_cap
        assert json.loads(asked)["results"]


def test_two_long_texts_are_both_cut_as_far_as_the_cap_needs(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pasted question and a long record, each cut once to its share of the first
    estimate, may still not fit together: the longer is cut again rather than the whole
    answer replaced by a note."""
    monkeypatch.setenv("CODERECALL_MEMORY", str(tmp_path / "memory.db"))
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        index.index(progress=False)
        service = ready(McpService(index))
        words = " ".join(f"ledger{n}" for n in range(9_000))  # 83,889 characters
        added = json.loads(service.memory_add(words, "observation", "project", None, None, False))
        assert added["record"]["text"].endswith(" … (cut to fit mcp-token-cap)")
        asked = service.ask(words, 5)
        assert count_tokens(asked) <= service.token_cap
        answer = json.loads(asked)
        assert answer["truncated"] is True
        (memory,) = [r for r in answer["results"] if r["source"] == "memory"]
        assert memory["text"].startswith("ledger0 ledger1")
        assert answer["question"].startswith("ledger0 ledger1")


def test_input_schemas_state_the_bounds_the_tools_enforce(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        listed = anyio.run(build_server(McpService(index)).list_tools)
    schemas = {tool.name: tool.input_schema["properties"] for tool in listed}

    def bounds(tool: str, argument: str) -> tuple[object, object]:
        schema = schemas[tool][argument]
        number = next(s for s in schema.get("anyOf", [schema]) if s.get("type") == "integer")
        return number.get("minimum"), number.get("maximum")

    for tool in ("codebase_search", "codebase_peek", "implementation_lookup", "ask"):
        assert bounds(tool, "limit") == (1, None), tool
    assert bounds("call_graph", "depth") == (1, 5)
    assert bounds("call_graph_path", "max_depth") == (1, 12)
    assert bounds("codebase_context", "budget") == (100, None)
    assert bounds("memory_context", "budget") == (60, None)
    assert bounds("memory_timeline", "before") == (0, 50)
    assert bounds("find_similar", "line") == (1, None)


def test_a_search_in_a_folder_that_does_not_exist_says_so(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        index.index(progress=False)
        service = ready(McpService(index))
        both = service.search("token", 10, None, ["src/shopp", "src"], with_content=False)
        assert json.loads(both)["hits"]  # src has them: nothing to say
        typo = json.loads(service.search("token", 10, None, "src/shopp", with_content=False))
        assert typo == {"hits": [], "note": "no folder 'src/shopp' under the root"}
        empty = json.loads(service.search("zebra crossing", 10, None, "src", with_content=False))
        assert empty == {"hits": []}


def test_tool_errors_are_one_short_line_whatever_raised() -> None:
    def raises(exc: BaseException) -> Callable[[], object]:
        def work() -> object:
            raise exc

        return work

    with pytest.raises(ToolError) as caught:
        _tool(raises(QueryError("no definition of " + repr("x" * 100_000))))
    assert len(str(caught.value)) <= 300
    with pytest.raises(ToolError, match=r"^int too big to convert$"):
        _tool(raises(OverflowError("int too big to convert")))
    with pytest.raises(ToolError, match=r"^internal error: KeyError: 'limit'$"):
        _tool(raises(KeyError("limit")))


def test_wrong_arguments_get_one_line_naming_them(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)

    async def run(service: McpService) -> None:
        async with Client(build_server(service), mode="legacy") as client:
            tools = _Tools(client)
            # A misspelt argument is named, not ignored (the SDK ran the call without it).
            assert await tools.error("codebase_search", query="invoice", limt=3) == (
                "codebase_search has no argument limt (it takes: query, limit, language, "
                "directory, source)"
            )
            assert await tools.error("index_status", verbose=True) == (
                "index_status has no argument verbose (it takes: no arguments)"
            )
            assert await tools.error("call_graph", symbol="f", depth="deep", direction="up") == (
                "call_graph: direction: Input should be 'callers', 'callees' or 'both'; "
                "depth: Input should be a valid integer, unable to parse string as an integer"
            )
            missing = await tools.error("codebase_search", limit=3, language="x" * 100_000)
            assert missing == "codebase_search: query: Field required"
            huge = await tools.error("codebase_search", query="invoice", **{"k" * 100_000: 1})
            assert len(huge) <= 300

    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        anyio.run(run, McpService(index))


@pytest.mark.slow
def test_stdio_serves_only_the_tool_sets_asked_for(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)

    async def run() -> None:
        async with _stdio_session(root, "--no-watch", "--tools", "code") as session:
            listed = await session.list_tools()
            assert {tool.name for tool in listed.tools} == CODE_TOOLS
            tools = _Tools(session)
            assert "Unknown tool" in await tools.error("memory_search", query="release")
            found = await tools.ok("codebase_search", query="TokenStore", limit=3)
            assert found["hits"][0]["path"] == "src/shop/auth.py"

    anyio.run(run)
    refused = subprocess.run(
        [sys.executable, "-m", "coderecall", "mcp", str(root), "--tools", "code,mem"],
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "unknown tool set 'mem' (expected code, memory, knowledge, diagnostics)" in (
        refused.stderr
    )


def test_the_mcp_tools_setting_picks_the_tools_and_the_instructions(make_repo: MakeRepo) -> None:
    root = make_repo({**SAMPLE_PROJECT, ".coderecall.toml": 'mcp-tools = ["memory"]\n'})

    async def run(service: McpService) -> tuple[set[str], str]:
        async with Client(build_server(service), mode="legacy") as client:
            listed = await client.list_tools()
            return {tool.name for tool in listed.tools}, client.instructions or ""

    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        names, instructions = anyio.run(run, McpService(index))
        assert names == CODE_TOOLS | MEMORY_TOOLS
        assert "codebase_context" in instructions
        assert "memory_search" in instructions
    with CodeIndex(root, {"embedding_provider": "none", "mcp_tools": ["code"]}) as index:
        names, instructions = anyio.run(run, McpService(index))
        assert names == CODE_TOOLS
        assert "codebase_context" in instructions
        assert "memory" not in instructions


def test_service_answers_fit_every_cap(make_repo: MakeRepo) -> None:
    """The context pack shrinks until its JSON answer fits, on every route and down to small
    caps; the call graph is cut by whole edges."""
    root = make_repo(CALLS_PROJECT)
    with CodeIndex(root, {"embedding_provider": "none"}) as index:
        index.index(progress=False)
        whole = ready(McpService(index))
        full = json.loads(whole.call_graph("checkout", "both", 3, 50))
        assert "truncated" not in full
        for cap in (260, 400, 700, 1200):
            service = ready(McpService(index, token_cap=cap))
            for query in ("TokenStore", "src/shop/auth.py", "how are invoices totalled"):
                text = service.context(query, None)
                data = json.loads(text)
                assert count_tokens(text) <= cap, (cap, query)
                assert data["context"], (cap, query)
                assert data["budget"] <= cap
            text = service.call_graph("checkout", "both", 3, 50)
            assert count_tokens(text) <= cap
            graph = json.loads(text)
            # Whole edges dropped from the end, never the whole answer replaced by a note
            # while a cut one fits (the counts and hint added after the cut once overflowed).
            assert graph["symbol"]["name"] == "checkout", (cap, graph)
            if graph.get("truncated"):
                for side in ("callers", "callees"):
                    kept = len(graph[side])
                    assert graph[side] == full[side][:kept]
                    assert graph["dropped"][side] == len(full[side]) - kept
            else:
                assert graph == full


_MCP_HTTP = (sys.executable, "-m", "coderecall", "mcp", "--transport", "http")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _http_server(root: Path, tmp_path: Path, *options: str) -> Iterator[str]:
    """Starts ``coderecall mcp --transport http`` and yields its URL once it accepts."""
    port = _free_port()
    log = tmp_path / f"server-{port}.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*_MCP_HTTP, str(root), "--port", str(port), *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=_environment(),
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _http_calls(url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Lists the tools and calls a few over streamable HTTP; returns the answers by tool."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        tools = _Tools(session)
        await tools.ok("index_codebase")  # the first update is over: the counts are final
        return {
            "codebase_search": await tools.ok("codebase_search", query="TokenStore"),
            "codebase_context": await tools.ok("codebase_context", query="checkout"),
            "call_graph": await tools.ok(
                "call_graph", symbol="compute_invoice_total", direction="callers"
            ),
            "index_metrics": await tools.ok("index_metrics"),
            "error": await tools.error("call_graph", symbol="no_such_symbol"),
        }


def _check_http_answers(answers: dict[str, Any]) -> None:
    assert answers["codebase_search"]["hits"][0]["path"] == "src/shop/auth.py"
    context = answers["codebase_context"]
    assert context["route"] == "identifier"
    assert context["context"].startswith(
        "[definition] src/shop/checkout.py:7-10 shop.checkout.checkout"
    )
    assert "[caller] src/shop/api.py:" in context["context"]
    (caller,) = answers["call_graph"]["callers"]
    assert (caller["caller"], caller["confidence"]) == ("shop.checkout.checkout", "resolved")
    assert (caller["path"], caller["line"]) == ("src/shop/checkout.py", 10)
    metrics = answers["index_metrics"]["metrics"]
    assert metrics["graph"]["files"] == len(CALLS_PROJECT)
    assert metrics["graph"]["resolved"] >= 4
    assert metrics["operations"]["call_graph"]["count"] == 1
    assert "no definition of 'no_such_symbol'" in answers["error"]


@pytest.mark.slow
def test_http_local(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo(CALLS_PROJECT)
    with _http_server(root, tmp_path) as url:
        answers = anyio.run(_http_calls, url)
    _check_http_answers(answers)


@pytest.mark.slow
def test_http_token(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo(CALLS_PROJECT)
    with _http_server(root, tmp_path, "--host", "0.0.0.0", "--token", "secret") as url:
        request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = httpx.post(url, json=request, timeout=10)
        assert refused.status_code == 401
        wrong = httpx.post(url, json=request, headers={"Authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401
        answers = anyio.run(_http_calls, url, {"Authorization": "Bearer secret"})
    _check_http_answers(answers)


def test_http_public_host_needs_token(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    result = subprocess.run(
        [*_MCP_HTTP, str(root), "--host", "0.0.0.0", "--port", str(_free_port())],
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert "without a bearer token" in result.stderr
    assert "CODERECALL_MCP_TOKEN" in result.stderr
