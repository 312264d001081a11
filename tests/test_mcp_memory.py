"""The MCP memory tools and ``ask``, called through the MCP SDK's client: in-process over its
in-memory transport (JSON-RPC as on the wire), and once over stdio against ``coderecall mcp``;
always against real SQLite files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from coderecall import CodeIndex
from coderecall._mcp import McpService, build_server, count_tokens
from coderecall._memory import MemoryStore
from helpers import CALLS_PROJECT, MakeRepo
from test_mcp import TOOLS, _stdio_session, _Tools

MEMORY_TOOLS = {name for name in TOOLS if name.startswith("memory_")} | {"ask"}


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "memory.db"
    monkeypatch.setenv("CODERECALL_MEMORY", str(path))
    monkeypatch.setenv("CODERECALL_EMBEDDING_PROVIDER", "none")
    return path


@pytest.fixture
def root(make_repo: MakeRepo) -> Path:
    return make_repo(CALLS_PROJECT)


@pytest.fixture
def service(root: Path, db: Path) -> Iterator[McpService]:
    with CodeIndex(root) as index:
        index.index(progress=False)
        service = McpService(index)
        service.start()
        assert service.wait_ready(60)
        yield service
        service.close()


@asynccontextmanager
async def _session(service: McpService) -> AsyncIterator[_Tools]:
    async with Client(build_server(service), mode="legacy", read_timeout_seconds=60) as client:
        yield _Tools(client, service.token_cap)


def test_memory_tools_round_trip(service: McpService, db: Path, root: Path) -> None:
    async def run() -> None:
        async with _session(service) as tools:
            listed = await tools.session.list_tools()
            by_name = {tool.name: tool for tool in listed.tools}
            assert set(by_name) >= MEMORY_TOOLS
            for name in MEMORY_TOOLS:
                description = by_name[name].description
                assert description is not None
                assert len(description) > 200, name
            assert "memory_timeline" in (by_name["memory_search"].description or "")
            forget = by_name["memory_forget"]
            assert forget.annotations is not None
            assert forget.annotations.destructive_hint is True
            assert "reason" in forget.input_schema["required"]
            for name in ("ask", "memory_search", "memory_timeline", "memory_get"):
                hints = by_name[name].annotations
                assert hints is not None
                assert hints.read_only_hint is True, name

            # add: the privacy filter's redactions are reported, near-duplicates update.
            added = await tools.ok(
                "memory_add",
                text="Access tokens live one hour; the signing password=hunter2hunter2 is in "
                "the vault.",
                type="decision",
                tags=["auth"],
                session="s-1",
            )
            assert added["action"] == "added"
            assert added["redactions"] == ["password"]
            first = added["record"]
            assert "hunter2" not in first["text"]
            assert (first["type"], first["scope"], first["session"]) == (
                "decision",
                "project",
                "s-1",
            )
            same = await tools.ok(
                "memory_add",
                text="Access tokens live one hour; the signing password=hunter2hunter2 is in "
                "the vault!",
                type="decision",
                tags="tokens",
            )
            assert same["action"] == "updated"
            assert same["record"]["id"] == first["id"]
            assert same["record"]["tags"] == ["auth", "tokens"]
            refused = await tools.ok("memory_add", text="x", tags=["do-not-store"])
            assert (refused["action"], refused["record"]) == ("refused", None)
            assert "blocked" in refused["reason"]
            retry = (
                await tools.ok(
                    "memory_add", text="Checkout retries a payment twice.", type="error-solution"
                )
            )["record"]
            private = (
                await tools.ok("memory_add", text="The user prefers tabs for tokens.", private=True)
            )["record"]
            assert private["privacy"] == "private"
            user = (
                await tools.ok(
                    "memory_add", text="Answer in British English.", type="preference", scope="user"
                )
            )["record"]
            assert (user["scope"], user["project"]) == ("user", "")

            # search: compact hits; filters; private only when asked.
            hits = (await tools.ok("memory_search", query="tokens"))["hits"]
            assert [h["id"] for h in hits] == [first["id"]]
            assert set(hits[0]) >= {"id", "type", "scope", "snippet", "tags", "created_at", "score"}
            assert "text" not in hits[0]
            both = (await tools.ok("memory_search", query="tokens", include_private=True))["hits"]
            assert {h["id"] for h in both} == {first["id"], private["id"]}
            typed = await tools.ok("memory_search", query="tokens payment", type=["error-solution"])
            assert [h["id"] for h in typed["hits"]] == [retry["id"]]
            tagged = await tools.ok("memory_search", query="tokens", tags="tokens")
            assert [h["id"] for h in tagged["hits"]] == [first["id"]]
            scoped = await tools.ok("memory_search", query="english", scope="user")
            assert [h["id"] for h in scoped["hits"]] == [user["id"]]
            assert (await tools.ok("memory_search", query="english", scope="project"))["hits"] == []
            assert (await tools.ok("memory_search", query="tokens", until="2000-01-01"))[
                "hits"
            ] == []
            today = datetime.now().astimezone().date().isoformat()
            dated = await tools.ok("memory_search", query="tokens", since=today, until=today)
            assert [h["id"] for h in dated["hits"]] == [first["id"]]
            assert "stale" not in dated

            # timeline (compact, in time order) -> get (whole records).
            timeline = await tools.ok("memory_timeline", id=retry["id"], before=1, after=5)
            assert timeline["center"] == retry["id"]
            assert [r["id"] for r in timeline["records"]] == [first["id"], retry["id"], user["id"]]
            assert all("text" not in r and r["state"] == "current" for r in timeline["records"])
            got = await tools.ok("memory_get", ids=[retry["id"], 999, private["id"], first["id"]])
            assert [r["id"] for r in got["records"]] == [retry["id"], first["id"]]
            assert got["records"][0]["text"] == "Checkout retries a payment twice."
            assert (got["unknown"], got["private"]) == ([999], [private["id"]])
            one = await tools.ok("memory_get", ids=private["id"], include_private=True)
            assert one["records"][0]["text"] == "The user prefers tabs for tokens."
            assert "unknown" not in one

            # supersede: the new record is found, the old one only by id, with its link.
            new = await tools.ok(
                "memory_supersede", id=first["id"], text="Access tokens live thirty minutes."
            )
            assert new["superseded"] == first["id"]
            assert new["record"]["tags"] == ["auth", "tokens"]
            hits = (await tools.ok("memory_search", query="access tokens"))["hits"]
            assert [h["id"] for h in hits] == [new["record"]["id"]]
            old = (await tools.ok("memory_get", ids=[first["id"]]))["records"][0]
            assert old["superseded_by"] == new["record"]["id"]

            # forget needs a reason, and records it.
            assert "reason" in await tools.error("memory_forget", id=retry["id"], reason="  ")
            assert await tools.error("memory_forget", id=retry["id"])
            gone = (
                await tools.ok("memory_forget", id=retry["id"], reason="wrong: it retries once")
            )["forgotten"]
            assert (gone["text"], gone["forget_reason"]) == ("", "wrong: it retries once")
            assert gone["forgotten_at"]
            assert (await tools.ok("memory_search", query="checkout payment"))["hits"] == []

            # Mistakes are tool errors with a clear message.
            assert "no memory 999 in this project" in await tools.error("memory_get", ids=[999])
            assert "is private" in await tools.error("memory_get", ids=[private["id"]])
            assert "no memory 999 in this project" in await tools.error("memory_timeline", id=999)
            assert "is private" in await tools.error("memory_timeline", id=private["id"])
            assert "before must be between 0 and 50" in await tools.error(
                "memory_timeline", id=user["id"], before=-1
            )
            assert "no memory 999" in await tools.error("memory_supersede", id=999, text="x")
            assert "superseded or forgotten" in await tools.error(
                "memory_supersede", id=first["id"], text="again"
            )
            assert "no memory 999" in await tools.error("memory_forget", id=999, reason="x")
            assert "bad memory type" in await tools.error("memory_add", text="x", type="Not A Type")
            assert "not a date: 'soon'" in await tools.error(
                "memory_search", query="x", since="soon"
            )
            assert "limit must be at least 1" in await tools.error(
                "memory_search", query="x", limit=0
            )
            assert await tools.error("memory_add", text="x", scope="team")
            assert "give at least one memory id" in await tools.error("memory_get", ids=[])

    anyio.run(run)

    # What the tools wrote is in the database, for any other process.
    with MemoryStore(root, path=db) as store:
        forgotten = [r for r in store.records(include_history=True) if r.forgotten_at]
        assert [(r.text, r.forget_reason) for r in forgotten] == [("", "wrong: it retries once")]


def test_other_projects_records_stay_unknown(service: McpService, db: Path) -> None:
    with MemoryStore("github.com/acme/elsewhere", path=db) as other:
        foreign = other.add("Elsewhere, tokens never expire.", "decision").record
    assert foreign is not None

    async def run() -> None:
        async with _session(service) as tools:
            assert (await tools.ok("memory_search", query="tokens expire"))["hits"] == []
            calls: list[tuple[str, dict[str, Any]]] = [
                ("memory_get", {"ids": [foreign.id]}),
                ("memory_timeline", {"id": foreign.id}),
                ("memory_supersede", {"id": foreign.id, "text": "x"}),
                ("memory_forget", {"id": foreign.id, "reason": "x"}),
            ]
            for tool, arguments in calls:
                message = await tools.error(tool, **arguments)
                assert f"no memory {foreign.id} in this project" in message, tool

    anyio.run(run)
    with MemoryStore("github.com/acme/elsewhere", path=db) as other:
        assert other.get([foreign.id])[0].current


def test_ask_fuses_memory_and_code(service: McpService, root: Path, db: Path) -> None:
    with MemoryStore(root, path=db) as store:
        decision = store.add(
            "Invoice totals apply the tax rate after summing line items.",
            "decision",
            at=datetime(2025, 1, 2, tzinfo=timezone.utc),
        ).record
        fix = store.add(
            "Fixed: invoice total was wrong when tax rate was zero.",
            "error-solution",
            at=datetime(2025, 1, 3, tzinfo=timezone.utc),
        ).record
        store.add("Invoice tax secrets of the user.", "observation", privacy="private")
    assert decision is not None
    assert fix is not None

    async def run() -> None:
        async with _session(service) as tools:
            answer = await tools.ok("ask", question="invoice total tax rate", limit=6)
            results = answer["results"]
            assert answer["question"] == "invoice total tax rate"
            assert answer["found"]["memory"] == 2, "the private record stays out"
            assert answer["found"]["code"] >= 2
            assert len(results) == min(6, answer["found"]["memory"] + answer["found"]["code"])
            sources = [item["source"] for item in results]
            assert set(sources) == {"memory", "code"}
            # Reciprocal rank, k = 60: the two first places share the top, memory first.
            assert [(item["source"], item["rank"]) for item in results[:4]] == [
                ("memory", 1),
                ("code", 1),
                ("memory", 2),
                ("code", 2),
            ]
            assert all(item["rrf"] == round(1 / (60 + item["rank"]), 6) for item in results)
            assert [item["rrf"] for item in results] == sorted(
                (item["rrf"] for item in results), reverse=True
            )
            memories = [item for item in results if item["source"] == "memory"]
            assert {m["id"] for m in memories} == {decision.id, fix.id}
            assert all(m["text"] for m in memories)
            code = [item for item in results if item["source"] == "code"]
            assert code[0]["path"] == "src/shop/billing.py"
            assert "def compute_invoice_total" in code[0]["content"]
            assert all("kb" not in item and "channels" not in item for item in code)

            one = await tools.ok("ask", question="invoice total tax rate", limit=1)
            assert [(i["source"], i["rank"]) for i in one["results"]] == [("memory", 1)]
            nothing = await tools.ok("ask", question="checkout request handler")
            assert nothing["found"]["memory"] == 0
            assert {i["source"] for i in nothing["results"]} == {"code"}
            assert "empty" in await tools.error("ask", question="  ")
            assert "limit must be at least 1" in await tools.error("ask", question="x", limit=0)

    anyio.run(run)


def test_memory_context_gives_the_block_for_a_task_or_a_session(
    service: McpService, root: Path, db: Path
) -> None:
    from coderecall._sessions import Sessions

    with MemoryStore(root, path=db) as store:
        store.add("An invoicing service for small shops.", "project-brief")
        store.add("Invoice totals apply the tax rate after summing lines.", "decision")
        store.add("Checkout requests are retried once on timeout.", "decision")
        Sessions(store).record("s-1", "prompt", "why is the invoice tax rate wrong?")

    async def run() -> None:
        async with _session(service) as tools:
            by_query = await tools.ok("memory_context", query="checkout timeout retries")
            assert by_query["text"].startswith("[MEMORY]\n## Project brief")
            relevant = by_query["text"].split("## Relevant to the task")[1]
            assert "retried once" in relevant
            assert "tax rate" not in relevant
            by_session = await tools.ok("memory_context", session="s-1")
            assert by_session["query"] == "why is the invoice tax rate wrong?"
            assert "tax rate" in by_session["text"].split("## Relevant to the task")[1]
            again = await tools.ok("memory_context", session="s-1")
            assert again["text"] == by_session["text"]
            small = await tools.ok("memory_context", query="tax", budget=60)
            assert count_tokens(small["text"]) <= 60
            assert "budget" in await tools.error("memory_context", budget=5)

    anyio.run(run)


def test_memory_opens_lazily(root: Path, db: Path) -> None:
    with CodeIndex(root) as index:
        service = McpService(index)
        service.start()
        assert service.wait_ready(60)

        async def run() -> None:
            async with _session(service) as tools:
                await tools.ok("codebase_search", query="invoice")
                await tools.ok("index_status")
                assert not db.exists(), "code tools never touch the memory database"
                assert service._memory is None, "nor open the store (a git call)"
                await tools.ok("memory_search", query="anything")
                assert db.exists()
                store = service.memory()
                await tools.ok("memory_add", text="Opened once.")
                assert service.memory() is store

        anyio.run(run)
        service.close()
        service.close()  # twice is harmless


def test_memory_answers_fit_the_cap(root: Path, db: Path) -> None:
    """Whole records are dropped from the end; the hint points at the memory tools."""
    words = ["tokens", "rotate", "nightly", "with", "overlap", "so", "clients", "never", "gap"]
    with MemoryStore(root, path=db) as store:
        ids = []
        for n in range(8):
            text = f"Record {n}: " + " ".join(words[(n + i) % len(words)] for i in range(300))
            record = store.add(text, f"kind-{n}").record
            assert record is not None
            ids.append(record.id)
    cap = 900
    with CodeIndex(root) as index:
        service = McpService(index, token_cap=cap)

        async def run() -> None:
            async with _session(service) as tools:
                got = await tools.ok("memory_get", ids=ids)
                assert got["truncated"] is True
                kept = [r["id"] for r in got["records"]]
                assert kept == ids[: len(kept)]
                assert 0 < len(kept) < len(ids)
                assert got["dropped"] == len(ids) - len(kept)
                assert "memory_get" in got["hint"]
                assert "stale" not in got, "memory answers do not depend on the index"

        anyio.run(run)
        service.close()


@pytest.mark.slow
def test_stdio_server_serves_memory(root: Path, db: Path) -> None:
    """``coderecall mcp`` over stdio: the memory tools use $CODERECALL_MEMORY of the server."""

    async def run() -> None:
        async with _stdio_session(
            root, CODERECALL_MEMORY=str(db), CODERECALL_EMBEDDING_PROVIDER="none"
        ) as session:
            listed = await session.list_tools()
            assert {tool.name for tool in listed.tools} >= MEMORY_TOOLS
            tools = _Tools(session)
            await tools.ok("index_codebase")
            added = await tools.ok(
                "memory_add", text="Checkout refreshes the token before charging.", type="decision"
            )
            record_id = added["record"]["id"]
            hits = (await tools.ok("memory_search", query="checkout token"))["hits"]
            assert [h["id"] for h in hits] == [record_id]
            answer = await tools.ok("ask", question="checkout refresh token")
            assert {i["source"] for i in answer["results"]} == {"memory", "code"}
            gone = await tools.ok("memory_forget", id=record_id, reason="superseded by docs")
            assert gone["forgotten"]["forget_reason"] == "superseded by docs"

    anyio.run(run)
    with MemoryStore(root, path=db) as store:
        (record,) = store.records(include_history=True)
        assert (record.text, record.forget_reason) == ("", "superseded by docs")
        assert json.dumps(record.to_dict())
