"""Running one configuration over the conversations: ingest, warm up, time the searches.

A configuration is the memory store with one set of channels (``lexical``: no embedder;
``transformer`` / ``static``: an :class:`coderecall.Embedder`) or a baseline over the turns
(BM25, or vectors only). Each conversation gets its own engine: a store is a fresh database
file in a temporary folder, its project the sample id. Every turn is one event of its
session's log, dated at the session's time and remembered at once
(``Sessions.record(..., remember=True)``): the store's write path makes it an
``observation`` record listing the event's id. Dedup may merge near-identical turns into one
record, whose ``events`` then list all of their ids, and a hit counts by those ids.

Each search also prices the context an agent would be handed: the texts of the first
``CONTEXT_AT`` results, one per line, in the tokens of the memory block's budget.

After the scored searches, a store is also timed as an agent uses it on every turn: one
record written, then one search (``AFTER_WRITE``, the first questions again). A write
makes the store bring its indexes up to date, which the search after it pays for; those
records are written after scoring, so they change no result above.
"""

from __future__ import annotations

import inspect
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from coderecall import Embedder, MemoryStore, Sessions
from coderecall._tokens import default_counter

from .bm25 import BM25
from .data import Conversation, Question
from .dense import Dense
from .metrics import HIT_AT, RECALL_AT, Outcome, outcome

__all__ = [
    "BASELINE",
    "BASELINES",
    "CONTEXT_AT",
    "DENSE_BASELINE",
    "Engine",
    "Found",
    "SystemRun",
    "bm25_engine",
    "context_tokens",
    "dense_engine",
    "has_vector_channel",
    "run_system",
    "store_engine",
    "turn_engine",
]

BASELINE = "BM25 (baseline)"
DENSE_BASELINE = "vectors only (baseline)"
BASELINES = (BASELINE, DENSE_BASELINE)
SEARCH_LIMIT = RECALL_AT[-1]
CONTEXT_AT = HIT_AT
"""How many results the context priced by ``context tokens @10`` holds."""
AFTER_WRITE = 40
"""Write-then-search rounds per conversation, for engines that take writes."""


def log(message: str) -> None:
    print(f"[memory] {message}", file=sys.stderr, flush=True)


def has_vector_channel() -> bool:
    """Whether this coderecall's ``MemoryStore`` takes an ``embedder`` (a vector channel)."""
    return "embedder" in inspect.signature(MemoryStore).parameters


def context_tokens(texts: Sequence[str]) -> int:
    """Tokens of a context built from the first ``CONTEXT_AT`` results: their texts joined
    with newlines, counted by the tokenizer of the memory block's budget."""
    return default_counter().count("\n".join(texts[:CONTEXT_AT]))


@dataclass(frozen=True, slots=True)
class Found:
    """One search, best result first."""

    turns: list[tuple[str, ...]]
    """The turn ids each result holds."""
    texts: list[str]
    """The text each result would put in a context."""
    seconds: float
    """The time the search itself took."""


class Engine(Protocol):
    def ingest(self) -> tuple[int, int, int]:
        """Store every turn; returns records added, merged into another, and refused."""

    def search(self, query: str) -> Found:
        """The first ``SEARCH_LIMIT`` results."""

    def search_after_write(self, query: str) -> float | None:
        """Seconds of a search right after one more record is written, or ``None`` for an
        engine that takes no writes once built."""


Opener = Callable[[Conversation], AbstractContextManager[Engine]]


@dataclass(slots=True)
class SystemRun:
    """One configuration over every conversation."""

    name: str
    results: list[tuple[Question, Outcome]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    after_write_ms: list[float] = field(default_factory=list)
    """Searches right after a write (``AFTER_WRITE``), for engines that take writes."""
    context_tokens: list[int] = field(default_factory=list)
    """Per question, in the order of ``results``."""
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
                # Warm-up: builds the index. Not a scored question, whose vector the model
                # would then remember.
                engine.search("How have things been lately?")
            for question in conversation.questions:
                found = engine.search(question.text)
                out.latencies_ms.append(found.seconds * 1000)
                out.results.append((question, outcome(question.evidence, found.turns)))
                out.context_tokens.append(context_tokens(found.texts))
            for question in conversation.questions[:AFTER_WRITE]:
                seconds = engine.search_after_write(question.text)
                if seconds is not None:
                    out.after_write_ms.append(seconds * 1000)
        log(
            f"{name}: {conversation.sample_id}: {len(conversation.turns)} turns, "
            f"{len(conversation.questions)} questions, {time.perf_counter() - started:.1f} s"
        )
    return out


class _StoreEngine:
    def __init__(self, conversation: Conversation, store: MemoryStore) -> None:
        self.conversation = conversation
        self.store = store
        self.turn_of: dict[str, str] = {}  # event id -> the turn's dia_id

    def ingest(self) -> tuple[int, int, int]:
        sessions = Sessions(self.store)
        before = len(self.store.records())
        for turn in self.conversation.turns:
            event = sessions.record(
                f"{self.conversation.sample_id}:session_{turn.session}",
                "note",
                turn.record_text(),
                at=turn.at,
                remember=True,
            )
            if event is not None:
                self.turn_of[str(event.id)] = turn.dia_id
        added = len(self.store.records()) - before
        return added, len(self.turn_of) - added, len(self.conversation.turns) - len(self.turn_of)

    def search(self, query: str) -> Found:
        started = time.perf_counter()
        hits = self.store.search(query, limit=SEARCH_LIMIT)
        seconds = time.perf_counter() - started
        records = self.store.get(hit.id for hit in hits)
        turns = [tuple(self.turn_of.get(e, e) for e in r.events) for r in records]
        return Found(turns, [r.text for r in records], seconds)

    def search_after_write(self, query: str) -> float | None:
        # What an agent's turn does: its prompt is remembered, then memory is consulted.
        self.store.add(query, "observation", session=f"{self.conversation.sample_id}:after")
        started = time.perf_counter()
        self.store.search(query, limit=SEARCH_LIMIT)
        return time.perf_counter() - started


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


class TurnIndex(Protocol):
    def search(self, query: str, limit: int) -> list[int]:
        """The positions of the ``limit`` best documents, best first."""


class _TurnEngine:
    """A baseline: one document per turn (the text the store gets), ranked by an index."""

    def __init__(self, conversation: Conversation, build: Callable[[list[str]], TurnIndex]) -> None:
        self.conversation = conversation
        self.build = build
        self.texts = [turn.record_text() for turn in conversation.turns]
        self.index: TurnIndex | None = None

    def ingest(self) -> tuple[int, int, int]:
        self.index = self.build(self.texts)
        return len(self.texts), 0, 0

    def search(self, query: str) -> Found:
        assert self.index is not None, "ingest first"
        started = time.perf_counter()
        docs = self.index.search(query, SEARCH_LIMIT)
        seconds = time.perf_counter() - started
        turns = self.conversation.turns
        return Found([(turns[d].dia_id,) for d in docs], [self.texts[d] for d in docs], seconds)

    def search_after_write(self, query: str) -> float | None:
        return None  # built once over the turns


def turn_engine(build: Callable[[list[str]], TurnIndex]) -> Opener:
    """Baseline engines: ``build`` makes the index over a conversation's turn texts."""

    @contextmanager
    def open_turns(conversation: Conversation) -> Iterator[Engine]:
        yield _TurnEngine(conversation, build)

    return open_turns


bm25_engine = turn_engine(BM25)


def dense_engine(embedder: Embedder) -> Opener:
    """The vectors-only baseline with ``embedder``: its latency is embedding the query plus
    the dot product."""
    return turn_engine(partial(Dense, embedder))
