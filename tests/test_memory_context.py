"""The ``[MEMORY]`` block: sections, relevance, the token budget and byte stability."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from coderecall import _tokens as tokens
from coderecall._errors import QueryError
from coderecall._memory import MemoryStore
from coderecall._tokens import count_tokens

PROJECT = "github.com/acme/shop"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore(PROJECT, path=tmp_path / "memory.db") as memory:
        facts = [
            ("A web shop for bicycle parts, sold in the EU.", "project-brief", "project"),
            ("Answer in British English; keep diffs small.", "preference", "user"),
            ("Django monolith; orders app owns checkout and payment.", "architecture", "project"),
            ("Python 3.12, PostgreSQL 16, Redis for sessions.", "tech-context", "project"),
            ("Checkout refactor: payment step done, shipping next.", "progress", "project"),
            ("Stripe webhooks are verified with the signing secret.", "decision", "project"),
            ("The tax rates table is cached for an hour.", "decision", "project"),
            ("Flaky test test_refund: freeze time with time-machine.", "error-solution", "project"),
        ]
        for k, (text, kind, scope) in enumerate(facts):
            memory.add(text, kind, scope=scope, at=T0 + timedelta(hours=k))  # type: ignore[arg-type]
        yield memory


def test_the_block_has_its_sections_in_order_and_the_relevant_records(
    store: MemoryStore,
) -> None:
    block = store.context("fix the flaky refund test")
    lines = block.text.splitlines()
    assert lines[0] == "[MEMORY]"
    assert lines[-1] == "[/MEMORY]"
    titles = [line for line in lines if line.startswith("## ")]
    assert titles == [
        "## Project brief",
        "## Preferences",
        "## Architecture",
        "## Tech context",
        "## Recent progress",
        "## Relevant to the task",
    ]
    relevant = block.text.split("## Relevant to the task\n")[1]
    assert "test_refund" in relevant
    assert block.tokens == count_tokens(block.text)
    assert len(block.records) == len(set(block.records))
    assert block.records[:5] == (1, 2, 3, 4, 5)  # the sections, then the relevant ones
    assert store.context().text.count("## Relevant") == 0


def test_the_block_is_byte_identical_until_its_records_change(store: MemoryStore) -> None:
    first = store.context("webhooks")
    assert store.context("webhooks").text == first.text
    other = store.context("tax rates cache")
    prefix = first.text.split("## Relevant")[0]
    assert other.text.startswith(prefix)  # another task changes only the tail
    assert other.text != first.text
    store.add("Shipping step done; next: invoices.", "progress", at=T0 + timedelta(days=1))
    changed = store.context("webhooks")
    assert changed.text != first.text
    assert "invoices" in changed.text
    assert "shipping next" not in changed.text  # progress is a singleton


@pytest.mark.parametrize("budget", [60, 80, 120, 200, 400, 2000])
def test_the_block_stays_within_its_budget(store: MemoryStore, budget: int) -> None:
    block = store.context("webhooks tax refund", budget=budget)
    assert count_tokens(block.text) <= budget
    assert block.tokens == count_tokens(block.text)
    if budget >= 400:
        assert block.dropped == 0
    if budget <= 80:
        assert block.dropped > 0
        assert "bicycle parts" in block.text  # the brief goes first


def test_a_block_that_surely_fits_is_built_without_the_tokenizer_as_with_it(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block whose utf-8 bytes fit the budget fits in tokens too (a token is at least a
    byte): it is built without loading the tokenizer, and must be exactly what the budgeted
    loop builds."""
    budgets = (80, 200, 10_000)
    fast = [store.context("webhooks tax refund", budget=budget) for budget in budgets]
    assert len(fast[-1].text.encode()) <= 10_000
    monkeypatch.setattr(tokens, "surely_fits", lambda text, budget: False)
    assert [store.context("webhooks tax refund", budget=budget) for budget in budgets] == fast
    monkeypatch.undo()

    def no_tokenizer() -> None:
        raise AssertionError("the tokenizer was loaded")

    monkeypatch.setattr(tokens, "default_counter", no_tokenizer)
    assert store.context("webhooks tax refund", budget=10_000).text == fast[-1].text
    with pytest.raises(AssertionError, match="tokenizer"):
        store.context("webhooks tax refund", budget=80)


def test_a_long_record_is_cut_with_a_marker(tmp_path: Path) -> None:
    with MemoryStore(PROJECT, path=tmp_path / "m.db") as store:
        store.add("The architecture in detail: " + "module " * 400, "architecture")
        block = store.context(budget=120)
    assert block.truncated == block.records
    assert block.text.count(" […]") == 1
    assert block.text.splitlines()[-2].endswith(f"#{block.records[0]})")  # the id survives
    assert count_tokens(block.text) <= 120


def test_private_records_and_other_projects_stay_out(store: MemoryStore, tmp_path: Path) -> None:
    store.add("Staging database password rotation is manual.", "tech-context", privacy="private")
    with MemoryStore("github.com/acme/other", path=store.path) as other:
        other.add("The other project's brief.", "project-brief")
        assert "bicycle" not in other.context().text
        assert "British English" in other.context().text  # user scope follows the user
    assert "rotation" not in store.context("staging password").text


def test_an_empty_store_gives_an_empty_block_and_budgets_are_checked(tmp_path: Path) -> None:
    with MemoryStore(PROJECT, path=tmp_path / "empty.db") as store:
        assert store.context("anything").text == ""
        with pytest.raises(QueryError, match="budget"):
            store.context(budget=10)
        assert store.recall("refund rounding bug").text == ""
        with pytest.raises(QueryError, match="budget"):
            store.recall("refund rounding bug", budget=10)
        with pytest.raises(QueryError, match="limit"):
            store.recall("refund rounding bug", limit=0)
