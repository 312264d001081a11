"""``coderecall mcp``: the tools, called through the MCP SDK's own client over stdio and HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

import coderecall
from coderecall import CodeIndex
from coderecall._mcp import McpService, estimate_tokens
from helpers import SAMPLE_PROJECT, MakeRepo

TOOLS = {
    "codebase_search",
    "codebase_peek",
    "find_similar",
    "index_codebase",
    "index_status",
    "index_health_check",
}
PEEK_FIELDS = {"path", "start_line", "end_line", "symbol_path", "kind", "score"}
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
    data: dict[str, Any] = json.loads(block.text)
    return data


def _error(result: CallToolResult) -> str:
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@asynccontextmanager
async def _stdio_session(root: Path, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coderecall", "mcp", str(root)],
        env=_environment(**env),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        yield session


@pytest.mark.slow
def test_stdio_tools(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)

    async def run() -> None:
        async with _stdio_session(root) as session:
            listed = await session.list_tools()
            assert {tool.name for tool in listed.tools} == TOOLS
            assert all(tool.description and len(tool.description) > 80 for tool in listed.tools)

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
                assert set(hit) == {
                    "path",
                    "start_line",
                    "end_line",
                    "symbol_path",
                    "kind",
                    "score",
                }
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
def test_stdio_token_cap(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    cap = 300

    async def run() -> None:
        async with _stdio_session(root, CODERECALL_MCP_TOKEN_CAP=str(cap)) as session:
            _answer(await session.call_tool("index_codebase", {}))
            result = await session.call_tool("codebase_search", {"query": "token", "limit": 20})
            data = _answer(result)
            block = result.content[0]
            assert isinstance(block, TextContent)
            assert estimate_tokens(block.text) <= cap
            assert data["truncated"] is True
            assert data["dropped"] >= 1
            assert len(data["hits"]) >= 1  # whole hits kept, each with its content
            assert all(isinstance(hit["content"], str) for hit in data["hits"])

    anyio.run(run)


def test_service_stale_until_first_update(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        service = McpService(index)
        assert service.token_cap == 4000
        stale = json.loads(service.status())
        assert stale["stale"] is True
        assert "background" in stale["note"]
        service.start()
        assert service.wait_ready(60)
        fresh = json.loads(service.search("TokenStore", 3, None, None, with_content=True))
        assert "stale" not in fresh
        assert fresh["hits"][0]["path"] == "src/shop/auth.py"


def test_service_cuts_whole_hits(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
        full = McpService(index)
        full.start()
        assert full.wait_ready(60)
        complete = json.loads(full.search("token", 20, None, None, with_content=True))
        assert "truncated" not in complete
        cap = estimate_tokens(json.dumps(complete["hits"][0])) + 60
        small = McpService(index, token_cap=cap)
        small.start()
        assert small.wait_ready(60)
        text = small.search("token", 20, None, None, with_content=True)
        cut = json.loads(text)
        assert estimate_tokens(text) <= cap
        assert cut["truncated"] is True
        assert len(cut["hits"]) + cut["dropped"] == len(complete["hits"])
        assert cut["hits"] == complete["hits"][: len(cut["hits"])]
        tiny = json.loads(McpService(index, token_cap=5).status())
        assert tiny["truncated"] is True


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


async def _http_call(url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        return _answer(await session.call_tool("codebase_search", {"query": "TokenStore"}))


@pytest.mark.slow
def test_http_local(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with _http_server(root, tmp_path) as url:
        found = anyio.run(_http_call, url)
    assert found["hits"][0]["path"] == "src/shop/auth.py"


@pytest.mark.slow
def test_http_token(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with _http_server(root, tmp_path, "--host", "0.0.0.0", "--token", "secret") as url:
        request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = httpx.post(url, json=request, timeout=10)
        assert refused.status_code == 401
        wrong = httpx.post(url, json=request, headers={"Authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401
        found = anyio.run(_http_call, url, {"Authorization": "Bearer secret"})
    assert found["hits"][0]["path"] == "src/shop/auth.py"


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
