"""Running one configuration over the conversations: ingest, warm up, time the searches.

A configuration is the memory store with one set of channels (``lexical``: no embedder;
``transformer`` / ``static``: an :class:`coderecall.Embedder`) or the BM25 baseline. Each
conversation gets its own engine: a store is a fresh database file in a temporary folder, its
project the sample id. Every turn is one ``observation`` record dated at its session's time;
dedup may merge near-identical turns into one record, whose ``events`` then list all of
their ids, and a hit counts by those ids.
"""

from __future__ import annotations

import inspect
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from coderecall._memory import MemoryStore

from .bm25 import BM25
from .data import Conversation, Question
from .metrics import RECALL_AT, Outcome, outcome

__all__ = [
    "BASELINE",
    "Engine",
    "SystemRun",
    "bm25_engine",
    "has_vector_channel",
    "run_system",
    "store_engine",
]

BASELINE = "BM25 (baseline)"
SEARCH_LIMIT = RECALL_AT


def log(message: str) -> None:
    print(f"[memory] {message}", file=sys.stderr, flush=True)


def has_vector_channel() -> bool:
    """Whether this coderecall's ``MemoryStore`` takes an ``embedder`` (a vector channel)."""
    return "embedder" in inspect.signature(MemoryStore).parameters


class Engine(Protocol):
    def ingest(self) -> tuple[int, int, int]:
        """Store every turn; returns records added, merged into another, and refused."""

    def search(self, query: str) -> tuple[list[tuple[str, ...]], float]:
        """The turn ids of each of the first ``SEARCH_LIMIT`` results, and the seconds the
        search itself took."""


Opener = Callable[[Conversation], AbstractContextManager[Engine]]


@dataclass(slots=True)
class SystemRun:
    """One configuration over every conversation."""

    name: str
    results: list[tuple[Question, Outcome]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    ingest_seconds: float = 0.0
    turns: int = 0
    records: int = 0
    merged: int = 0
    refused: int = 0

    @property
    def turns_per_second(self) -> float | None:
        return self.turns / self.ingest_seconds if self.ingest_seconds else None


def run_system(name: str, conversations: Sequence[Conversation], opener: Opener) -> SystemRun:
    out = SystemRun(name)
    for conversation in conversations:
        started = time.perf_counter()
        with opener(conversation) as engine:
            ingest_started = time.perf_counter()
            added, merged, refused = engine.ingest()
            out.ingest_seconds += time.perf_counter() - ingest_started
            out.turns += len(conversation.turns)
            out.records += added
            out.merged += merged
            out.refused += refused
            if conversation.questions:
                engine.search(conversation.questions[0].text)  # warm-up: builds the index
            for question in conversation.questions:
                ranked, seconds = engine.search(question.text)
                out.latencies_ms.append(seconds * 1000)
                out.results.append((question, outcome(question.evidence, ranked)))
        log(
            f"{name}: {conversation.sample_id}: {len(conversation.turns)} turns, "
            f"{len(conversation.questions)} questions, {time.perf_counter() - started:.1f} s"
        )
    return out


class _StoreEngine:
    def __init__(self, conversation: Conversation, store: MemoryStore) -> None:
        self.conversation = conversation
        self.store = store

    def ingest(self) -> tuple[int, int, int]:
        counts = {"added": 0, "updated": 0, "refused": 0}
        for turn in self.conversation.turns:
            result = self.store.add(
                turn.record_text(),
                "observation",
                session=f"{self.conversation.sample_id}:session_{turn.session}",
                events=[turn.dia_id],
                at=turn.at,
            )
            counts[result.action] += 1
        return counts["added"], counts["updated"], counts["refused"]

    def search(self, query: str) -> tuple[list[tuple[str, ...]], float]:
        started = time.perf_counter()
        hits = self.store.search(query, limit=SEARCH_LIMIT)
        seconds = time.perf_counter() - started
        return [record.events for record in self.store.get(hit.id for hit in hits)], seconds


def store_engine(**options: Any) -> Opener:
    """Conversations into fresh ``MemoryStore`` databases built with ``options`` (e.g.
    ``embedder=...``)."""

    @contextmanager
    def open_store(conversation: Conversation) -> Iterator[Engine]:
        with tempfile.TemporaryDirectory(prefix="coderecall-memory-bench-") as folder:
            store = MemoryStore(conversation.sample_id, path=Path(folder) / "memory.db", **options)
            try:
                yield _StoreEngine(conversation, store)
            finally:
                store.close()

    return open_store


class _BM25Engine:
    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.index: BM25 | None = None

    def ingest(self) -> tuple[int, int, int]:
        self.index = BM25([turn.record_text() for turn in self.conversation.turns])
        return len(self.conversation.turns), 0, 0

    def search(self, query: str) -> tuple[list[tuple[str, ...]], float]:
        assert self.index is not None, "ingest first"
        started = time.perf_counter()
        docs = self.index.search(query, SEARCH_LIMIT)
        seconds = time.perf_counter() - started
        return [(self.conversation.turns[doc].dia_id,) for doc in docs], seconds


@contextmanager
def bm25_engine(conversation: Conversation) -> Iterator[Engine]:
    yield _BM25Engine(conversation)
