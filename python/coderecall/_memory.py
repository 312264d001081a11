"""``MemoryStore``: what agents learned, kept across sessions in one SQLite database.

This module is the store, its write path and its search; sessions
(:mod:`coderecall._sessions`), the context block, hooks and tools build on it.

**Where.** One database for every project of a user: ``$CODERECALL_MEMORY`` if set, else
``$XDG_DATA_HOME/coderecall/memory.db`` (``~/.local/share/coderecall/memory.db``). WAL mode
and a busy timeout let many processes (agents, hooks, MCP servers) write at once.

**Records** have a type (:data:`TYPES` or any user-defined name), a scope (``user``: follows
the user everywhere; ``project``: only within its project), the project's identity (the
normalised git remote, so two clones share memory; see :mod:`coderecall._identity`), text,
tags, a privacy level, the session and event ids they came from, timestamps, and
``superseded_by`` when a newer record replaced them.

**Write path** (:meth:`MemoryStore.add`), in order:

1. *privacy* (:mod:`coderecall._privacy`): private sections and secrets never reach the
   database; a ``blocked`` record is refused, a ``private`` one stored but kept out of
   default reads;
2. *dedup*: a record of the same project, scope and type that says nearly the same thing is
   updated in place (tags merged, sources appended) instead of duplicated (session summaries
   excepted: each records its own session). Similarity is the cosine of the two texts'
   vectors when the store has an embedding model (else the overlap of their word sets),
   against the 500 most recently updated records of that kind; structural types (project
   brief, architecture, tech and product context) describe one evolving thing, so their
   threshold is looser than other types' (:data:`DEDUP_DEFAULTS`);
3. *aging*: a singleton type (``progress``) keeps only its newest record current (older ones
   are superseded by it); session summaries beyond ``max_session_summaries`` are condensed,
   oldest first, into one ``learned-pattern`` record that supersedes them.

**Search** is hybrid when the store has an embedding model (``embedder``): BM25F over text,
tags and type, and the cosine of vectors (centred on the store's records, and for a record of
several sentences mostly its nearest sentence's), each channel's scores taken as a share of
its best and summed. Within a session a record is read with its context: each
channel also scores its *window* (the record and up to two records either side of it), and a
record earns part of its best neighbour's score, more after a question it answers (see
``_context``). A query that names a record's label (``Caroline:`` in "What did Caroline
say ...") favours that record (``_NAMED_WEIGHT``), and one that asks when favours records
that date something (``_WHEN_WEIGHT``). Vectors are stored in the
database under the model's name, so two models never mix; records written without one get
theirs at the next search. Private records get no vector: they stay out of the semantic
channel and never reach an embedding provider.

:meth:`MemoryStore.supersede` replaces a record explicitly (the old one stays readable in
its history); :meth:`MemoryStore.forget` erases a record's text and keeps a tombstone with the
reason. :meth:`MemoryStore.export` and :meth:`MemoryStore.import_` move a store as JSON Lines,
losslessly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from ._embedding import local_model_id
from ._errors import QueryError
from ._identity import project_identity
from ._memdb import MemoryDatabase, memory_path
from ._memory_context import MemoryBlock, build_block
from ._models import describe
from ._native import Embedder, TextIndex
from ._privacy import Filtered, Level, classify, filter_text
from ._stopwords import content_query
from ._timephrase import asks_when, resolve, tells_time

if TYPE_CHECKING:
    # numpy is imported by the functions that handle vectors: a store without an embedding
    # model (and a hook that only records an event) never loads it.
    import numpy as np
    import numpy.typing as npt

    from ._sessions import SessionEvent

__all__ = [
    "SINGLETON_TYPES",
    "STRUCTURAL_TYPES",
    "TYPES",
    "MemoryHit",
    "MemoryRecord",
    "MemoryStore",
    "WriteResult",
    "memory_path",
    "snippet",
]

TYPES = (
    "project-brief",
    "architecture",
    "tech-context",
    "product-context",
    "preference",
    "decision",
    "error-solution",
    "progress",
    "session-summary",
    "learned-pattern",
    "observation",
)
"""The built-in record types; any other name made of letters, digits and ``-`` is a
user-defined type."""
SINGLETON_TYPES = frozenset({"progress"})
STRUCTURAL_TYPES = frozenset({"project-brief", "architecture", "tech-context", "product-context"})

Scope = Literal["user", "project"]
Action = Literal["added", "updated", "refused"]

_TYPE_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
_WORD = re.compile(r"\w+")
_DEDUP_WINDOW = 500
"""Most recently updated records of a kind a new one is compared with: this bounds the cost
of a write."""
DEDUP_DEFAULTS = {"cosine": (0.9, 0.75), "words": (0.8, 0.5)}
"""(general, structural) dedup thresholds per similarity measure: the cosine of the two
records' vectors when the store has an embedding model, else the Jaccard overlap of their
word sets. Measured with all-MiniLM-L6-v2: a paraphrased rule ("Run make test before
committing" / "Always run make test before you commit") scores 0.92, a restated structural
fact ("The build uses maturin and pyo3" / "Build: maturin with pyo3 bindings") 0.78, two
different facts of one kind ("The API server lives in server/app.py" / "The CLI entry point
is cli/main.py") 0.46. A threshold given to :class:`MemoryStore` applies to both measures."""
_DEPTH = 60
"""Candidates each channel brings to fusion, whatever the limit (up to this many). Scores
count from the last candidate's (``_above_floor``), so a depth that grew with the limit would
reorder the first results: ``limit=5`` would not be the first five of ``limit=20``. On the
LoCoMo benchmark (hybrid, ``limit=20``), depths 40 / 50 / 60 / 80 / 100 gave Hit@10 0.842 /
0.847 / 0.849 / 0.843 / 0.842 and Recall@20 0.822 / 0.822 / 0.825 / 0.828 / 0.827."""
_RRF_K = 60
_BEFORE_WEIGHT = 0.5
"""Share of a record's score the record before it in its session earns in each channel (see
``_context``)."""
_REPLY_WEIGHT = 0.75
"""Share of the score of a record that asks (``_ASKS``) the record after it earns: the
reply, which answers in words of its own ("What genre is it?" ... "A mix of drama and
romance!")."""
_FOLLOW_WEIGHT = 0.35
"""Share of the score of a record that does not ask the record after it earns."""
_ASKS = re.compile(r"\?[\"')\]]*\s*(?:\[[^\[\]]*\]\s*)?$")
"""A record that ends with a question, perhaps before a closing note in brackets
(``... right? [image: a bowl]``)."""
_SEMANTIC_WEIGHT = 1.0
"""The vector channel's vote in fusion. Raw MiniLM vectors of whole records ranked below
plain BM25 on conversational memory (LoCoMo Hit@10 0.55 against 0.59) and earned half a
vote; centred (``_CENTRE``) and read sentence by sentence (``_parts``) they reach 0.69 alone,
and an equal vote gains on both halves of the data (benches/memory/README.md)."""
_WINDOW_REACH = 2
"""A record's window: itself and up to this many records before and after it in its
session. What a turn of a conversation is about is often said in the turns around it ("How
was the workshop?" ... "I loved it"), so a query's words may meet only in the window."""
_LENGTH_NORM = 0.5
"""BM25's length normalisation (b) for records and windows, softer than code's 0.75: a long
turn of a conversation is not less about what it names (on LoCoMo it ranked better on
both halves of the data; benches/memory/README.md)."""
_EMBED_BATCH = 64
_CENTRE = 0.5
"""Share of the mean record vector taken from every vector before cosine. One project's
records share a direction (its register, its names, its subjects) that raw cosine rewards in
every record alike; taking it out ranks by what sets a record apart. On LoCoMo, MiniLM
vectors alone went from Hit@10 0.547 to 0.587 with half the mean taken out (0.568 with all
of it), hybrid from 0.849 to 0.854 (benches/memory/README.md)."""
_CENTRE_PRIOR = 20
"""The mean is taken as if this many zero vectors were among the records: what a few records
share is mostly what each of them says (the mean of one record is that record, and taking it
out would turn every query away from it), only many reveal a common direction."""
_PART_WEIGHT = 0.85
"""Share of a record's vector score that comes from its nearest sentence (see ``_parts``),
the rest from its whole text."""
_MAX_PARTS = 16
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LABEL = re.compile(r"[^\s:][^:\n]{0,38}:\s")
"""A record's label: ``Caroline:``, ``Decision:`` (up to four words before a colon)."""
_NAMED_WEIGHT = 2.0
"""How many times its score a record earns when the query names its label (every word of
it): what a question says someone did or thought is mostly told in that one's own records
(on LoCoMo, 96% of the evidence turns of a question naming one of the two speakers are that
speaker's). Their words alone weigh little, being in every other record."""
_WHEN_WEIGHT = 1.5
"""How many times its score a record that dates something (``tells_time``) earns when the
query asks when (``asks_when``): on LoCoMo, 73% of the evidence turns of "When ..." questions
date what they tell ("I went there last week"), against 9% of all turns."""
_CONDENSED_CHARS = 400
"""Characters kept of each session summary condensed into a learned pattern."""
_SQL_VARIABLES = 900
"""Ids per ``IN (...)`` list: under SQLite's oldest limit of bound variables (999)."""


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory. ``text`` is empty for a forgotten record (its tombstone)."""

    id: int
    type: str
    scope: Scope
    project: str
    """The project identity (``""`` for ``user`` scope)."""
    text: str
    tags: tuple[str, ...]
    privacy: Level
    session: str | None
    events: tuple[str, ...]
    """Ids of the session events the record came from."""
    created_at: datetime
    updated_at: datetime
    superseded_by: int | None = None
    forgotten_at: datetime | None = None
    forget_reason: str | None = None

    @property
    def current(self) -> bool:
        """Neither superseded nor forgotten."""
        return self.superseded_by is None and self.forgotten_at is None

    @property
    def state(self) -> str:
        """``current``, ``superseded by N`` or ``forgotten``."""
        if self.forgotten_at is not None:
            return "forgotten"
        if self.superseded_by is not None:
            return f"superseded by {self.superseded_by}"
        return "current"

    def brief(self) -> dict[str, Any]:
        """The record as a compact item, as timelines show it (:meth:`to_dict` is whole)."""
        return {
            "id": self.id,
            "type": self.type,
            "scope": self.scope,
            "created_at": self.created_at.isoformat(),
            "snippet": snippet(self.text),
            "tags": list(self.tags),
            "state": self.state,
        }

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("created_at", "updated_at", "forgotten_at"):
            value = data[key]
            data[key] = value.isoformat() if value is not None else None
        data["tags"], data["events"] = list(self.tags), list(self.events)
        return data


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What :meth:`MemoryStore.add` did."""

    action: Action
    record: MemoryRecord | None
    """The record added or updated; ``None`` when refused."""
    redactions: tuple[str, ...] = ()
    """Kinds of secrets redacted from the text."""
    private_sections: int = 0
    superseded: tuple[int, ...] = ()
    """Records this write made non-current (aging)."""
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "record": self.record.to_dict() if self.record is not None else None,
            "redactions": list(self.redactions),
            "private_sections": self.private_sections,
            "superseded": list(self.superseded),
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A compact search result; :meth:`MemoryStore.get` gives the whole record."""

    id: int
    type: str
    scope: Scope
    snippet: str
    """The start of the text (at most 160 characters)."""
    tags: tuple[str, ...]
    created_at: datetime
    score: float
    """Relevance, comparable within one result list only: each channel's score as a share
    of its best, summed over the channels (a reciprocal rank fusion when a time phrase put its
    window first; 0 for a listing by time)."""
    channels: tuple[str, ...] = ()
    """Which channels found it: ``lexical`` (its own words matched), ``semantic``, or
    ``context`` for a record found only through the records around it in its session."""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["tags"], data["channels"] = list(self.tags), list(self.channels)
        data["created_at"] = self.created_at.isoformat()
        return data


class MemoryStore:
    """The memory of one project (and of the user), in the user's memory database.

    ``project`` is a project root (its identity is derived from its git remote or path) or
    an identity string; ``None`` keeps only ``user``-scope records reachable. Safe to share
    between threads; any number of processes may open the same database.
    """

    def __init__(
        self,
        project: str | os.PathLike[str] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        embedder: Embedder | None = None,
        model_id: str | None = None,
        dedup_general: float | None = None,
        dedup_structural: float | None = None,
        max_session_summaries: int = 20,
    ) -> None:
        if any(t is not None and not 0 < t <= 1 for t in (dedup_general, dedup_structural)):
            raise QueryError("dedup thresholds must be in (0, 1]")
        if max_session_summaries < 1:
            raise QueryError("max_session_summaries must be at least 1")
        if isinstance(project, (str, os.PathLike)) and Path(project).is_dir():
            self._project = project_identity(Path(project)).key
        else:
            self._project = str(project) if project is not None else ""
        self._db = MemoryDatabase(path)
        self._embedder = embedder
        self._model = _model_key(embedder, model_id) if embedder is not None else None
        self._thresholds = {
            measure: (dedup_general or general, dedup_structural or structural)
            for measure, (general, structural) in DEDUP_DEFAULTS.items()
        }
        self._max_summaries = max_session_summaries
        self._lock = threading.Lock()
        self._rebuild_lock = threading.Lock()
        self._index: tuple[str, _Lexicon] | None = None
        self._vectors: _Vectors | None = None
        self._filtered: tuple[tuple[object, ...], dict[int, float]] | None = None

    @property
    def path(self) -> Path:
        return self._db.path

    @property
    def project(self) -> str:
        return self._project

    @property
    def model(self) -> str | None:
        """Name of the embedding model whose vectors this store reads and writes."""
        return self._model

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------

    def add(
        self,
        text: str,
        type: str = "observation",
        *,
        scope: Scope = "project",
        tags: Iterable[str] = (),
        privacy: str | None = None,
        session: str | None = None,
        events: Iterable[str] = (),
        at: datetime | None = None,
    ) -> WriteResult:
        """Remember ``text`` through the write path (see the module docs). ``at`` dates the
        record (default: now), e.g. when importing a past session."""
        pending = self._prepare(text, type, scope=scope, tags=tags, privacy=privacy, at=at)
        if isinstance(pending, WriteResult):
            return pending
        with self._write() as conn:
            return self._commit(conn, pending, session=session, events=events)

    def _prepare(
        self,
        text: str,
        type: str,
        *,
        scope: Scope,
        tags: Iterable[str],
        privacy: str | None,
        at: datetime | None,
    ) -> _Pending | WriteResult:
        """The part of :meth:`add` that runs outside the write lock: the privacy filter,
        the embedding and a first near-duplicate scan. A refusal comes back as its result."""
        kind = _check_type(type)
        tags = tuple(dict.fromkeys(t.strip() for t in tags if t.strip()))
        filtered = filter_text(text, tags=tags, level=privacy)
        if filtered.blocked:
            return WriteResult("refused", None, reason="the record is tagged as blocked")
        clean = filtered.text.strip()
        if not clean or clean == "[private]":
            return WriteResult(
                "refused",
                None,
                filtered.redactions,
                filtered.private_sections,
                reason="nothing is left after the privacy filter",
            )
        project = self._scope_project(scope)
        # The comparison runs before the write lock is taken (on a snapshot), and again under
        # it only against what changed since, so writers queue for a moment, not a scan.
        embedding = self._embed(clean, filtered.level)
        probe = _Probe(_words(clean), embedding.vector if embedding is not None else None)
        seen = (
            self._near_duplicate(self._conn(), project, scope, kind, probe, since=None)
            if _dedups(kind)
            else (None, 0.0)
        )
        when = _timestamp(at)
        return _Pending(kind, scope, project, tags, filtered, clean, when, probe, embedding, seen)

    def _commit(
        self,
        conn: sqlite3.Connection,
        pending: _Pending,
        *,
        session: str | None,
        events: Iterable[str],
    ) -> WriteResult:
        """The part of :meth:`add` that runs in the caller's write transaction."""
        p = pending
        similar = p.seen[0]
        if _dedups(p.kind):
            newer = self._near_duplicate(conn, p.project, p.scope, p.kind, p.probe, since=p.seen[1])
            if newer[0] is not None:
                similar = newer[0]
            if similar is not None and not self._get_current(conn, similar.id):
                similar = None  # superseded or forgotten meanwhile
        if similar is not None:
            merged_tags = _merge(similar.tags, p.tags)
            merged_events = _merge(similar.events, events)
            conn.execute(
                "UPDATE records SET text = ?, tags = ?, events = ?, updated_at = ?,"
                " privacy = CASE WHEN privacy = 'private' THEN 'private' ELSE ? END"
                " WHERE id = ?",
                (
                    p.clean,
                    json.dumps(merged_tags),
                    json.dumps(merged_events),
                    max(p.when, similar.updated_at.timestamp()),
                    p.filtered.level,
                    similar.id,
                ),
            )
            record = _read_one(conn, similar.id)
            action: Action = "updated"
        else:
            cursor = conn.execute(
                "INSERT INTO records (project, scope, type, text, tags, privacy, session,"
                " events, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    p.project,
                    p.scope,
                    p.kind,
                    p.clean,
                    json.dumps(list(p.tags)),
                    p.filtered.level,
                    session,
                    json.dumps(list(dict.fromkeys(events))),
                    p.when,
                    p.when,
                ),
            )
            record = _read_one(conn, _rowid(cursor))
            action = "added"
        self._store_vector(conn, record, p.embedding)
        superseded = self._age(conn, record)
        return WriteResult(
            action,
            record,
            p.filtered.redactions,
            p.filtered.private_sections,
            tuple(superseded),
        )

    def supersede(
        self, old_id: int, new_text: str, *, tags: Iterable[str] | None = None
    ) -> MemoryRecord:
        """Replace record ``old_id`` with a new one saying ``new_text`` (same type, scope
        and, unless given, tags). The old record stays readable in :meth:`history`."""
        old = self._current(old_id)
        filtered = filter_text(new_text, tags=old.tags if tags is None else tags)
        if filtered.blocked or not filtered.text.strip():
            raise QueryError("the new text is blocked or empty after the privacy filter")
        level = "private" if old.privacy == "private" else filtered.level
        embedding = self._embed(filtered.text.strip(), level)
        now = _timestamp(None)
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO records (project, scope, type, text, tags, privacy, session,"
                " events, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, '[]', ?, ?)",
                (
                    old.project,
                    old.scope,
                    old.type,
                    filtered.text.strip(),
                    json.dumps(list(old.tags if tags is None else tags)),
                    level,
                    old.session,
                    now,
                    now,
                ),
            )
            new_id = _rowid(cursor)
            conn.execute("UPDATE records SET superseded_by = ? WHERE id = ?", (new_id, old.id))
            record = _read_one(conn, new_id)
            self._store_vector(conn, record, embedding)
            return record

    def forget(self, record_id: int, reason: str) -> MemoryRecord:
        """Erase a record's text and tags for good; a tombstone keeps when and why."""
        if not reason.strip():
            raise QueryError("forgetting a record needs a reason")
        record = self._get_one(record_id)
        with self._write() as conn:
            conn.execute(
                "UPDATE records SET text = '', tags = '[]', events = '[]', forgotten_at = ?,"
                " forget_reason = ? WHERE id = ?",
                (_timestamp(None), reason.strip(), record.id),
            )
            conn.execute("DELETE FROM vectors WHERE record_id = ?", (record.id,))
            forgotten = _read_one(conn, record.id)
        # The old page images live on in the write-ahead log until a checkpoint; readers of
        # other processes may hold it, so this is best effort (the next checkpoint finishes).
        with contextlib.suppress(sqlite3.Error):
            self._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return forgotten

    # -- reading -----------------------------------------------------------------------

    def get(self, ids: Iterable[int]) -> list[MemoryRecord]:
        """Full records of this project (and the user's), in the order asked; ids of other
        projects' records are left out like unknown ones."""
        wanted = list(dict.fromkeys(int(i) for i in ids))
        if not wanted:
            return []
        conn = self._conn()
        marks = ",".join("?" * len(wanted))
        rows = conn.execute(
            f"SELECT * FROM records WHERE id IN ({marks}) AND (project = ? OR scope = 'user')",
            [*wanted, self._project],
        ).fetchall()
        by_id = {row["id"]: _record(row) for row in rows}
        return [by_id[i] for i in wanted if i in by_id]

    def readable(
        self, ids: Iterable[int], *, include_private: bool = False
    ) -> tuple[list[MemoryRecord], list[int], list[int]]:
        """What an agent may read of ``ids``: the records, in the order asked; the ids
        unknown here (no such record, or another project's); the private ones withheld."""
        wanted = list(dict.fromkeys(int(i) for i in ids))
        found = {r.id: r for r in self.get(wanted)}
        records = [found[i] for i in wanted if i in found]
        unknown = [i for i in wanted if i not in found]
        private = [r.id for r in records if r.privacy == "private" and not include_private]
        return [r for r in records if r.id not in private], unknown, private

    def readable_one(
        self, record_id: int, *, include_private: bool = False, hint: str = ""
    ) -> MemoryRecord:
        """The record ``record_id`` if an agent may read it, else :class:`QueryError`
        saying why (``hint`` follows the message for a private one)."""
        records, unknown, _ = self.readable([record_id], include_private=include_private)
        if unknown:
            raise QueryError(f"no memory {record_id} in this project")
        if not records:
            raise QueryError(f"memory {record_id} is private{hint}")
        return records[0]

    def records(
        self,
        *,
        type: str | Sequence[str] | None = None,
        scope: Scope | None = None,
        include_private: bool = False,
        include_history: bool = False,
    ) -> list[MemoryRecord]:
        """Records of this project (and user-scope ones), oldest first: current ones unless
        ``include_history``; private ones only with ``include_private``."""
        where, params = self._where(type, scope, include_private, include_history)
        rows = self._conn().execute(
            f"SELECT * FROM records WHERE {where} ORDER BY created_at, id", params
        )
        return [_record(row) for row in rows]

    def history(self, record_id: int) -> list[MemoryRecord]:
        """The chain of versions ``record_id`` belongs to, oldest first."""
        conn = self._conn()
        start = self._get_one(record_id)
        chain = [start]
        at: MemoryRecord | None = start
        while at is not None:  # back through what it replaced
            rows = conn.execute(
                "SELECT * FROM records WHERE superseded_by = ? ORDER BY created_at DESC LIMIT 1",
                (at.id,),
            ).fetchall()
            at = _record(rows[0]) if rows else None
            if at is not None:
                if any(r.id == at.id for r in chain):
                    break
                chain.insert(0, at)
        at = start
        while at.superseded_by is not None:  # forward to what replaced it
            nxt = self.get([at.superseded_by])
            if not nxt or any(r.id == nxt[0].id for r in chain):
                break
            at = nxt[0]
            chain.append(at)
        return chain

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        type: str | Sequence[str] | None = None,
        scope: Scope | None = None,
        tags: Iterable[str] = (),
        since: datetime | None = None,
        until: datetime | None = None,
        include_private: bool = False,
    ) -> list[MemoryHit]:
        """Current records matching ``query`` (BM25F over text, tags and type), best first,
        as compact hits; :meth:`get` returns them whole.

        A time phrase in the query ("yesterday", "last week", "in March") is resolved
        against the dates of this project's records (the newest is "today"). Records written
        in that window rank higher, but the others still compete: what a question dates is
        often told later than it happened. A query that is only a time phrase lists that
        window's records, newest first. Filters (strict): type(s), scope, tags (all must be
        present), ``since``/``until``, privacy (private records only with
        ``include_private``).
        """
        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        resolved = resolve(query, self._anchor())
        text = resolved.query.strip()
        window = (resolved.start, resolved.end) if resolved.phrase else (None, None)
        start, end = _aware(since), _aware(until)
        if not text:  # a listing: the window is the filter
            start = max(filter(None, (window[0], start)), default=None)
            end = min(filter(None, (window[1], end)), default=None)
        candidates = self._filtered_ids(type, scope, tuple(tags), start, end, include_private)
        if not candidates:
            return []
        if not text:
            newest = sorted(candidates.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]
            return self._hits([(i, 0.0, ()) for i, _ in newest])
        allowed = set(candidates)
        depth = max(limit, _DEPTH)
        lexicon = self._text_index()
        # Function words go: they match every question asked in a conversation.
        lexical, matched = lexicon.search(content_query(text), depth, allowed)
        channels = {"lexical": lexical}
        # Hits are labelled by the channels that matched them; "context" if only the
        # records around them did.
        brought = {"lexical": matched}
        semantic = self._nearest(text, depth, allowed)
        if semantic is not None:
            channels["semantic"] = semantic
            brought["semantic"] = {key for key, _ in semantic}
        ranked = _blend(
            {
                name: _context(found, lexicon.neighbours, allowed, depth=depth)
                for name, found in channels.items()
            },
            {"semantic": _SEMANTIC_WEIGHT},
        )
        words = _words(text)
        named = {key for key, _ in ranked if key in lexicon.labels and lexicon.labels[key] <= words}
        ranked = _favour(ranked, named, _NAMED_WEIGHT)
        if asks_when(text):
            ranked = _favour(ranked, lexicon.timed, _WHEN_WEIGHT)
        if window != (None, None):
            low = window[0].timestamp() if window[0] is not None else float("-inf")
            high = window[1].timestamp() if window[1] is not None else float("inf")
            ranked = _prefer(ranked, {i for i, at in candidates.items() if low <= at < high})
        return self._hits(
            [
                (key, score, tuple(n for n, keys in brought.items() if key in keys) or ("context",))
                for key, score in ranked[:limit]
            ]
        )

    def timeline(self, record_id: int, *, before: int = 5, after: int = 5) -> list[MemoryRecord]:
        """The records of this project written around ``record_id``, in time order (current
        ones, and the record itself whatever its state)."""
        center = self._get_one(record_id)
        conn = self._conn()
        scope_sql = "(project = ? OR scope = 'user') AND privacy = 'public'"
        live = "superseded_by IS NULL AND forgotten_at IS NULL"
        at = center.created_at.timestamp()
        earlier = conn.execute(
            f"SELECT * FROM records WHERE {scope_sql} AND {live} AND id != ?"
            " AND (created_at < ? OR (created_at = ? AND id < ?))"
            " ORDER BY created_at DESC, id DESC LIMIT ?",
            (self._project, center.id, at, at, center.id, before),
        ).fetchall()
        later = conn.execute(
            f"SELECT * FROM records WHERE {scope_sql} AND {live} AND id != ?"
            " AND (created_at > ? OR (created_at = ? AND id > ?))"
            " ORDER BY created_at, id LIMIT ?",
            (self._project, center.id, at, at, center.id, after),
        ).fetchall()
        return [*(_record(r) for r in reversed(earlier)), center, *(_record(r) for r in later)]

    def context(
        self, query: str | None = None, *, session: str | None = None, budget: int = 1500
    ) -> MemoryBlock:
        """The ``[MEMORY]`` block for a system prompt: this project's structured records
        and those most relevant to the task, within ``budget`` tokens, byte-identical
        between calls unless the records it shows changed (see
        :mod:`coderecall._memory_context`). The task is ``query``, else the latest prompt
        of ``session``."""
        if query is None and session is not None:
            from ._sessions import Sessions  # sessions build on the store

            prompts = Sessions(self).events(session, kinds=["prompt"])
            query = prompts[-1].text if prompts else None
        return build_block(self, query, budget)

    def events_around(
        self, record_id: int, *, before: int = 5, after: int = 5
    ) -> list[SessionEvent]:
        """The session events of this project nearest the time ``record_id`` was written,
        in time order: what was going on when it was learned."""
        from ._sessions import Sessions  # sessions build on the store

        center = self._get_one(record_id)
        return Sessions(self).around(center.created_at, before=before, after=after)

    def _anchor(self) -> datetime:
        """ "Today" for time phrases: the newest record of this project, else now."""
        rows = (
            self._conn()
            .execute(
                "SELECT max(created_at) FROM records WHERE project = ? OR scope = 'user'",
                (self._project,),
            )
            .fetchall()
        )
        newest = rows[0][0] if rows else None
        return _when(newest) or datetime.now(timezone.utc)

    def _filtered_ids(
        self,
        type: str | Sequence[str] | None,
        scope: Scope | None,
        tags: tuple[str, ...],
        start: datetime | None,
        end: datetime | None,
        include_private: bool,
    ) -> Mapping[int, float]:
        """Ids (with creation times) of the current records the filters keep (shared: not
        to be changed)."""
        where, params = self._where(type, scope, include_private, include_history=False)
        sql = [f"SELECT id, created_at, tags FROM records WHERE {where}"]
        if start is not None:
            sql.append("AND created_at >= ?")
            params.append(start.timestamp())
        if end is not None:
            sql.append("AND created_at < ?")
            params.append(end.timestamp())
        key = (self._db.generation(), " ".join(sql), tuple(params), tags)
        with self._lock:
            if self._filtered is not None and self._filtered[0] == key:
                return self._filtered[1]
        wanted = set(tags)
        rows = self._conn().execute(key[1], params).fetchall()
        found = {
            row["id"]: row["created_at"]
            for row in rows
            # Decoding every record's tags costs more than the rest of a search.
            if not wanted or wanted <= set(json.loads(row["tags"]))
        }
        with self._lock:  # a repeated search with the same filters reuses it
            self._filtered = (key, found)
        return found

    def _where(
        self,
        type: str | Sequence[str] | None,
        scope: Scope | None,
        include_private: bool,
        include_history: bool,
    ) -> tuple[str, list[object]]:
        """The WHERE clause (and its parameters) of this project's records under filters."""
        sql = ["(project = ? OR scope = 'user')"]
        params: list[object] = [self._project]
        if not include_history:
            sql.append("AND superseded_by IS NULL AND forgotten_at IS NULL")
        if not include_private:
            sql.append("AND privacy = 'public'")
        if scope is not None:
            sql.append("AND scope = ?")
            params.append(scope)
        if type is not None:
            kinds = [type] if isinstance(type, str) else list(type)
            sql.append(f"AND type IN ({','.join('?' * len(kinds))})")
            params.extend(kinds)
        return " ".join(sql), params

    def _text_index(self) -> _Lexicon:
        """The search indexes of this project's current records, with each record's
        neighbours and window, brought up to date when any process wrote since: only the
        records and windows that changed are analysed again (a write adds one record and
        changes a few windows; re-reading every record made the first search after each
        write several times slower than the next)."""
        conn = self._conn()
        with self._rebuild_lock:  # rebuilds change the indexes in place: one at a time
            generation = self._db.generation()
            with self._lock:
                if self._index is not None and self._index[0] == generation:
                    return self._index[1]
                previous = self._index[1] if self._index is not None else None
            rows = conn.execute(
                "SELECT id, type, text, tags, session, privacy FROM records"
                " WHERE (project = ? OR scope = 'user')"
                " AND superseded_by IS NULL AND forgotten_at IS NULL"
                " ORDER BY session, created_at, id",
                (self._project,),
            ).fetchall()
            lexicon = _lexicon(rows, previous)
            with self._lock:
                self._index = (generation, lexicon)
            return lexicon

    def _hits(self, found: Sequence[tuple[int, float, tuple[str, ...]]]) -> list[MemoryHit]:
        records = {r.id: r for r in self.get(i for i, _, _ in found)}
        return [
            MemoryHit(
                id=i,
                type=records[i].type,
                scope=records[i].scope,
                snippet=snippet(records[i].text),
                tags=records[i].tags,
                created_at=records[i].created_at,
                score=round(score, 4),
                channels=channels,
            )
            for i, score, channels in found
            if i in records
        ]

    # -- moving ------------------------------------------------------------------------

    def export(self, out: IO[str]) -> int:
        """The whole memory database (every project; records with their history and
        tombstones, sessions and their event logs) as JSON Lines; returns how many records.
        The format is :func:`coderecall._memory_io.export_memory`'s, which counts every table.
        Vectors are not exported: they are derived from records, and the store recomputes
        them at its next search."""
        from ._memory_io import export_memory  # built on the store

        return export_memory(self, out).records

    def import_(self, lines: Iterable[str]) -> int:
        """Lines written by :meth:`export` (or by older versions: records only), with their
        ids, timestamps and links, in one transaction; a row whose id exists already must be
        identical. Returns how many records were added
        (:func:`coderecall._memory_io.import_memory` counts every table)."""
        from ._memory_io import import_memory  # built on the store

        return import_memory(self, lines).records

    # -- internals ---------------------------------------------------------------------

    def _scope_project(self, scope: str) -> str:
        if scope == "user":
            return ""
        if scope != "project":
            raise QueryError(f"scope must be 'user' or 'project', got {scope!r}")
        if not self._project:
            raise QueryError("a project-scope record needs a project (MemoryStore(project=...))")
        return self._project

    def _near_duplicate(
        self,
        conn: sqlite3.Connection,
        project: str,
        scope: str,
        kind: str,
        probe: _Probe,
        since: float | None,
    ) -> tuple[MemoryRecord | None, float]:
        """The most similar current record above the type's threshold (among those updated
        after ``since`` when given), and the newest update time looked at. Similarity is the
        cosine of the two vectors when both have one, else the overlap of their words."""
        structural = kind in STRUCTURAL_TYPES
        best: tuple[float, MemoryRecord] | None = None
        newest = since or 0.0
        rows = conn.execute(
            "SELECT r.*, v.vector FROM records r LEFT JOIN vectors v"
            " ON v.record_id = r.id AND v.model = ?"
            " WHERE r.project = ? AND r.scope = ? AND r.type = ?"
            " AND r.superseded_by IS NULL AND r.forgotten_at IS NULL AND r.updated_at > ?"
            " ORDER BY r.updated_at DESC LIMIT ?",
            (
                self._model,
                project,
                scope,
                kind,
                since if since is not None else -1.0,
                _DEDUP_WINDOW,
            ),
        ).fetchall()
        for row in rows:
            other = _record(row)
            newest = max(newest, row["updated_at"])
            if probe.vector is not None and row["vector"] is not None:
                import numpy as np

                measure = "cosine"
                score = float(np.frombuffer(row["vector"], dtype=np.float32) @ probe.vector)
            else:
                measure = "words"
                score = _jaccard(probe.words, _words(other.text))
            threshold = self._thresholds[measure][1 if structural else 0]
            if score >= threshold and (best is None or score > best[0]):
                best = (score, other)
        return (best[1] if best is not None else None), newest

    # -- vectors -----------------------------------------------------------------------

    def _embed(self, text: str, level: str) -> _Embedding | None:
        """The vectors of a record's text and of its sentences. Private records get none:
        they stay out of the semantic channel and never reach an embedding provider."""
        if self._embedder is None or level != "public":
            return None
        return _embedding(self._embedder, text)

    def _store_vector(
        self,
        conn: sqlite3.Connection,
        record: MemoryRecord,
        embedding: _Embedding | None,
    ) -> None:
        # Vectors of the record's old text (updated in place), of any model, are stale.
        conn.execute("DELETE FROM vectors WHERE record_id = ?", (record.id,))
        if embedding is not None and record.privacy == "public" and self._model is not None:
            conn.execute(
                "INSERT INTO vectors (model, record_id, vector, parts) VALUES (?, ?, ?, ?)",
                (self._model, record.id, embedding.vector.tobytes(), embedding.parts.tobytes()),
            )

    def _nearest(self, text: str, limit: int, allowed: set[int]) -> list[tuple[int, float]] | None:
        """The ``allowed`` records nearest ``text`` by cosine, or ``None`` without a model.

        Exact search over this project's vectors: a project's memory is thousands of
        records, where one matrix product beats an approximate index."""
        if self._embedder is None or self._model is None:
            return None
        import numpy as np

        stored = self._vector_matrix(self._embedder, self._model)
        ids = stored.ids
        if not len(ids):
            return []
        query = _unit(self._embedder.embed([text])[0] - _CENTRE * stored.centre)
        keep = np.isin(ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
        own = _dot(stored.matrix, query)
        if len(stored.starts):
            # A record of several sentences is as near as its text and its nearest sentence.
            best = np.maximum.reduceat(_dot(stored.parts, query), stored.starts)
            own[stored.owners] = (1 - _PART_WEIGHT) * own[stored.owners] + _PART_WEIGHT * best
        # A record's own cosine plus its window's (see _WINDOW_REACH), which for a record
        # alone in its window is its own; scoring every row and then keeping the allowed
        # ones copies no matrix.
        context = np.where(stored.alone, own, _dot(stored.windows, query))
        ids, scores = ids[keep], (own + context)[keep]
        top = np.argsort(-scores, kind="stable")[:limit]
        return [(int(ids[k]), float(scores[k])) for k in top]

    def _vector_matrix(self, embedder: Embedder, model: str) -> _Vectors:
        """This project's current public records and their vectors (centred, see
        ``_CENTRE``), rebuilt when any process wrote. Records without a vector of this model
        (written by a process without one, imported, condensed) get one here."""
        import numpy as np

        generation = self._db.generation()
        with self._lock:
            if self._vectors is not None and self._vectors.generation == generation:
                return self._vectors
            known = self._vectors.raw if self._vectors is not None else {}
        conn = self._conn()
        rows = conn.execute(
            "SELECT id, text FROM records WHERE (project = ? OR scope = 'user')"
            " AND privacy = 'public' AND superseded_by IS NULL AND forgotten_at IS NULL"
            " ORDER BY id",
            (self._project,),
        ).fetchall()
        # Vectors follow texts: a record whose text is unchanged keeps the vectors read last
        # time, and only the others are read (a write adds one record to thousands).
        raw = {
            row["id"]: known[row["id"]]
            for row in rows
            if row["id"] in known and known[row["id"]][0] == row["text"]
        }
        wanted = [row["id"] for row in rows if row["id"] not in raw]
        for at in range(0, len(wanted), _SQL_VARIABLES):
            batch = wanted[at : at + _SQL_VARIABLES]
            for row in conn.execute(
                "SELECT r.id, r.text, v.vector, v.parts FROM records r JOIN vectors v"
                " ON v.record_id = r.id AND v.model = ? AND v.parts IS NOT NULL"
                f" WHERE r.id IN ({','.join('?' * len(batch))})",
                (model, *batch),
            ):
                raw[row["id"]] = (
                    row["text"],
                    np.frombuffer(row["vector"], np.float32),
                    np.frombuffer(row["parts"], np.float32).reshape(-1, embedder.dims),
                )
        # Written before sentences had vectors (schema 3), or by a process without a model.
        missing = [row for row in rows if row["id"] not in raw]
        embedded = _embeddings(embedder, [row["text"] for row in missing])
        if missing:
            with self._db.write(bump=False) as conn:
                # Only where the text is unchanged: a concurrent update wrote its own vector.
                conn.executemany(
                    "INSERT INTO vectors (model, record_id, vector, parts)"
                    " SELECT ?, id, ?, ? FROM records WHERE id = ? AND text = ?"
                    " ON CONFLICT (model, record_id) DO UPDATE SET parts = excluded.parts"
                    " WHERE vectors.parts IS NULL",
                    [
                        (model, e.vector.tobytes(), e.parts.tobytes(), row["id"], row["text"])
                        for row, e in zip(missing, embedded, strict=True)
                    ],
                )
        for row, e in zip(missing, embedded, strict=True):
            raw[row["id"]] = (row["text"], e.vector, e.parts)
        dims = embedder.dims
        matrix = np.empty((len(rows), dims), dtype=np.float32)
        parts: list[npt.NDArray[np.float32]] = []
        owners: list[int] = []
        for k, row in enumerate(rows):
            _, vector, sentences = raw[row["id"]]
            matrix[k] = vector
            if len(sentences):
                parts.append(sentences)
                owners.append(k)
        ids = np.fromiter((row["id"] for row in rows), dtype=np.int64, count=len(rows))
        centre = matrix.sum(axis=0) / (len(rows) + _CENTRE_PRIOR)
        sizes = [len(p) for p in parts]
        centred = _unit(matrix - _CENTRE * centre)
        windows, alone = self._window_matrix(ids, centred)
        built = _Vectors(
            generation,
            ids,
            centred,
            centre,
            _unit(np.concatenate(parts) - _CENTRE * centre)
            if parts
            else np.empty((0, dims), np.float32),
            np.array(owners, dtype=np.int64),
            np.cumsum([0, *sizes[:-1]], dtype=np.int64) if parts else np.empty(0, np.int64),
            windows,
            alone,
            raw,
        )
        with self._lock:
            self._vectors = built
        return built

    def _window_matrix(
        self, ids: npt.NDArray[np.int64], matrix: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """Each row of ``matrix``'s window vector: the normalised sum of its window members'
        vectors (members without a vector, private ones, count for nothing); and which rows
        are alone in their window."""
        import numpy as np

        members = self._text_index().window_members
        row_of = {int(key): row for row, key in enumerate(ids)}
        pairs = [
            (row, row_of[member])
            for row, key in enumerate(ids)
            for member in members.get(int(key), ())
            if member in row_of
        ]
        rows, sources = np.array(pairs, dtype=np.int64).reshape(-1, 2).T
        windows = np.zeros_like(matrix)
        if len(rows):
            # Pairs come row by row: each row's members are one run to sum (np.add.at, which
            # takes any order, was a third of a rebuild).
            starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            windows[rows[starts]] = np.add.reduceat(matrix[sources], starts)
        return _unit(windows), np.bincount(rows, minlength=len(ids)) <= 1

    @staticmethod
    def _get_current(conn: sqlite3.Connection, record_id: int) -> bool:
        return bool(
            conn.execute(
                "SELECT 1 FROM records WHERE id = ? AND superseded_by IS NULL"
                " AND forgotten_at IS NULL",
                (record_id,),
            ).fetchall()
        )

    def _age(self, conn: sqlite3.Connection, record: MemoryRecord) -> list[int]:
        """Singleton types keep their newest record current; session summaries beyond the
        cap are condensed into a learned pattern."""
        current = "superseded_by IS NULL AND forgotten_at IS NULL"
        same = "project = ? AND scope = ? AND type = ?"
        key = (record.project, record.scope, record.type)
        if record.type in SINGLETON_TYPES:
            older = [
                row["id"]
                for row in conn.execute(
                    f"SELECT id FROM records WHERE {same} AND {current} AND id != ?",
                    (*key, record.id),
                )
            ]
            conn.executemany(
                "UPDATE records SET superseded_by = ? WHERE id = ?",
                [(record.id, i) for i in older],
            )
            return older
        if record.type != "session-summary":
            return []
        rows = conn.execute(
            f"SELECT * FROM records WHERE {same} AND {current} ORDER BY created_at, id", key
        ).fetchall()
        excess = len(rows) - self._max_summaries
        if excess <= 0:
            return []
        # The oldest half of the cap goes at once, so condensing is not a per-write cost.
        oldest = [_record(row) for row in rows[: max(excess, self._max_summaries // 2)]]
        text = "Condensed from earlier sessions:\n" + "\n".join(
            f"- {r.created_at.date().isoformat()}: {r.text[:_CONDENSED_CHARS]}" for r in oldest
        )
        when = oldest[-1].created_at.timestamp()
        cursor = conn.execute(
            "INSERT INTO records (project, scope, type, text, tags, privacy, session, events,"
            " created_at, updated_at) VALUES (?, ?, 'learned-pattern', ?, ?, ?, NULL, ?, ?, ?)",
            (
                record.project,
                record.scope,
                text,
                json.dumps(["condensed"]),
                "private" if any(r.privacy == "private" for r in oldest) else "public",
                json.dumps([e for r in oldest for e in r.events]),
                when,
                when,
            ),
        )
        pattern = _rowid(cursor)
        conn.executemany(
            "UPDATE records SET superseded_by = ? WHERE id = ?", [(pattern, r.id) for r in oldest]
        )
        return [r.id for r in oldest]

    def _current(self, record_id: int) -> MemoryRecord:
        record = self._get_one(record_id)
        if not record.current:
            raise QueryError(f"memory {record_id} is superseded or forgotten")
        return record

    def _get_one(self, record_id: int) -> MemoryRecord:
        found = self.get([record_id])
        if not found:
            raise QueryError(f"no memory {record_id}")
        return found[0]

    def _conn(self) -> sqlite3.Connection:
        return self._db.conn()

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._db.write()


@dataclass(frozen=True, slots=True)
class _Pending:
    """A record that passed the privacy filter and was embedded, waiting for the write lock."""

    kind: str
    scope: Scope
    project: str
    tags: tuple[str, ...]
    filtered: Filtered
    clean: str
    when: float
    probe: _Probe
    embedding: _Embedding | None
    seen: tuple[MemoryRecord | None, float]


@dataclass(frozen=True, slots=True)
class _Probe:
    """What a new record is compared with its near neighbours by."""

    words: frozenset[str]
    vector: npt.NDArray[np.float32] | None


@dataclass(frozen=True)
class _Vectors:
    """One generation of a project's record vectors."""

    generation: str
    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]
    """One unit row per record, its vector less ``_CENTRE`` x ``centre``."""
    centre: npt.NDArray[np.float32]
    """The mean of the records' vectors (see ``_CENTRE_PRIOR``)."""
    parts: npt.NDArray[np.float32]
    """The sentence vectors of the records that have some, centred like ``matrix``, in
    the order of their records."""
    owners: npt.NDArray[np.int64]
    """The row in ``matrix`` of each record that has sentence vectors."""
    starts: npt.NDArray[np.int64]
    """The first row in ``parts`` of each of ``owners``."""
    windows: npt.NDArray[np.float32]
    """Each record's window vector (see ``_WINDOW_REACH``), from the rows of ``matrix``."""
    alone: npt.NDArray[np.bool_]
    """The records alone in their window: it scores as the record itself."""
    raw: dict[int, tuple[str, npt.NDArray[np.float32], npt.NDArray[np.float32]]]
    """Each record's text, vector and sentence vectors as stored, for the next generation
    to reuse while the text is unchanged."""


@dataclass(frozen=True)
class _Embedding:
    """A record's vector, and one row per sentence when it has more than one."""

    vector: npt.NDArray[np.float32]
    parts: npt.NDArray[np.float32]


def _embedding(embedder: Embedder, text: str) -> _Embedding:
    return _embeddings(embedder, [text])[0]


def _embeddings(embedder: Embedder, texts: Sequence[str]) -> list[_Embedding]:
    """Each text's :class:`_Embedding`, embedded ``_EMBED_BATCH`` texts at a time."""
    import numpy as np

    pieces = [[text, *_parts(text)] for text in texts]
    flat = [piece for group in pieces for piece in group]
    vectors = np.concatenate(
        [
            np.asarray(embedder.embed(flat[start : start + _EMBED_BATCH]), dtype=np.float32)
            for start in range(0, len(flat), _EMBED_BATCH)
        ]
        or [np.empty((0, embedder.dims), np.float32)]
    )
    out, at = [], 0
    for group in pieces:
        out.append(_Embedding(vectors[at], vectors[at + 1 : at + len(group)]))
        at += len(group)
    return out


def _parts(text: str) -> list[str]:
    """The sentences of a record of several, each as its own text to embed: the vector of
    a whole turn or note averages what each sentence says, so a question about one of them
    meets it diluted. Each sentence after the first carries the record's label ("Caroline:",
    "Decision:") when it has one, else follows the first sentence, which names what the
    record is about. At most ``_MAX_PARTS``."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s][:_MAX_PARTS]
    if len(sentences) < 2:
        return []
    lead = _label(sentences[0]) or sentences[0] + " "
    return [sentences[0], *(lead + s for s in sentences[1:])]


def _label(text: str) -> str | None:
    """The label that opens ``text`` (see ``_LABEL``), colon and space included."""
    found = _LABEL.match(text.lstrip())
    return found.group(0) if found and len(found.group(0).split()) <= 4 else None


def _favour(
    ranked: Sequence[tuple[int, float]], favoured: Container[int], weight: float
) -> list[tuple[int, float]]:
    """``ranked`` with the ``favoured`` records at ``weight`` times their scores."""
    rescored = [(key, score * weight if key in favoured else score) for key, score in ranked]
    return sorted(rescored, key=lambda kv: (-kv[1], kv[0]))


def _dot(rows: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row's dot product with ``query``, on this thread. A BLAS matrix product would
    wake BLAS's threads, which keep spinning after it and take the cores from the embedding
    engine's next query (on 2 cores: search p99 19 to 45-80 ms on LoCoMo)."""
    import numpy as np

    dots: npt.NDArray[np.float32] = np.einsum("ij,j->i", rows, query)
    return dots


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``vectors`` (one, or one per row) scaled to length 1; zero vectors stay zero."""
    import numpy as np

    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def _model_key(embedder: Embedder, model_id: str | None) -> str:
    """The name under which a model's vectors are stored: two models never share one."""
    if model_id:
        return model_id
    if embedder.path is None:
        raise QueryError("an embedding engine implemented in Python needs a model_id")
    return local_model_id(describe(embedder.path), embedder.dims)


@dataclass(frozen=True)
class _Lexicon:
    """The text side of one generation of a project's records. Its two indexes pass on to
    the next generation, which updates them in place (see ``_lexicon``)."""

    records: TextIndex
    windows: TextIndex
    """Each record's window (see ``_WINDOW_REACH``) as one text, under the record's id."""
    neighbours: dict[int, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    """The records written just before and after each record in its session, with the
    share of the record's score each earns (see ``_context``)."""
    window_members: dict[int, tuple[int, ...]] = field(default_factory=dict)
    labels: dict[int, frozenset[str]] = field(default_factory=dict)
    """The words of each labelled record's label (see ``_label``), lowercased."""
    timed: set[int] = field(default_factory=set)
    """The records that date something (``tells_time``)."""
    docs: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    """What ``records`` holds under each key (text, tags as stored, type)."""

    def search(
        self, query: str, depth: int, allowed: set[int]
    ) -> tuple[list[tuple[int, float]], set[int]]:
        """BM25F of each record plus that of its window, best ``depth`` first, and the
        records whose own text matched."""
        own = _above_floor(self.records.search(query, depth, allowed), depth)
        scores = dict(own)
        for key, score in _above_floor(self.windows.search(query, depth, allowed), depth).items():
            scores[key] = scores.get(key, 0.0) + score
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:depth], set(own)


def _lexicon(rows: Sequence[sqlite3.Row], previous: _Lexicon | None) -> _Lexicon:
    """The lexicon of ``rows`` (current records in session order), made from ``previous``:
    its indexes are updated in place, analysing only texts that differ from what they
    hold."""
    if previous is None:
        lexicon = _Lexicon(TextIndex(b=_LENGTH_NORM), TextIndex(b=_LENGTH_NORM))
    else:
        lexicon = _Lexicon(previous.records, previous.windows)
    known = previous.docs if previous is not None else {}
    # Columns as plain lists: this pass runs over every record after every write.
    ids = [row["id"] for row in rows]
    texts = [row["text"] for row in rows]
    sessions = [row["session"] for row in rows]
    public = [row["privacy"] == "public" for row in rows]
    changed = set()
    for key, text, row in zip(ids, texts, rows, strict=True):
        doc = (text, row["tags"], row["type"])
        lexicon.docs[key] = doc
        if previous is not None and known.get(key) == doc:
            label = previous.labels.get(key)
            timed = key in previous.timed
        else:
            changed.add(key)
            lexicon.records.insert(key, text, _tag_text(row["tags"]), row["type"])
            found = _label(text)
            label = _words(found) if found is not None else None
            timed = tells_time(text)
        if label is not None:
            lexicon.labels[key] = label
        if timed:
            lexicon.timed.add(key)
    count = len(rows)
    for at, key in enumerate(ids):
        session = sessions[at]
        members: tuple[int, ...] = (at,)  # a record without a session is its own window
        if session is not None:
            after = _REPLY_WEIGHT if _ASKS.search(texts[at]) else _FOLLOW_WEIGHT
            lexicon.neighbours[key] = tuple(
                (ids[other], weight)
                for other, weight in ((at - 1, _BEFORE_WEIGHT), (at + 1, after))
                if 0 <= other < count and sessions[other] == session
            )
            # A private record lends its words to no other record's window.
            members = tuple(
                other
                for other in range(max(at - _WINDOW_REACH, 0), min(at + _WINDOW_REACH + 1, count))
                if sessions[other] == session and (other == at or public[other])
            )
        member_ids = tuple(ids[other] for other in members)
        lexicon.window_members[key] = member_ids
        # A window is as indexed while its members are and none changed (its own tags and
        # type are in its record's doc: the record is a member).
        if (
            previous is None
            or previous.window_members.get(key) != member_ids
            or not changed.isdisjoint(member_ids)
        ):
            _, tags, kind = lexicon.docs[key]
            text = "\n".join(texts[other] for other in members)
            lexicon.windows.insert(key, text, _tag_text(tags), kind)
    for gone in known.keys() - lexicon.docs.keys():
        lexicon.records.remove(gone)
        lexicon.windows.remove(gone)
    return lexicon


def _tag_text(tags: str) -> str:
    """Stored tags (a JSON list) as the text the indexes weigh."""
    return " ".join(json.loads(tags))


def _above_floor(ranked: Sequence[tuple[int, float]], depth: int) -> dict[int, float]:
    """Scores counted from what a record the channel did not bring would score: the last
    candidate's when the list was cut at ``depth``, else zero."""
    if not ranked:
        return {}
    floor = ranked[-1][1] if len(ranked) >= depth else min(ranked[-1][1], 0.0)
    return {key: score - floor for key, score in ranked}


def _fuse(*rankings: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """Reciprocal rank fusion (k = 60) of ``rankings``: ranks count, scores do not."""
    scores: dict[int, float] = {}
    for ranked in rankings:
        for rank, (key, _) in enumerate(ranked):
            scores[key] = scores.get(key, 0.0) + 1 / (_RRF_K + rank + 1)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _blend(
    channels: Mapping[str, Sequence[tuple[int, float]]], weights: Mapping[str, float]
) -> list[tuple[int, float]]:
    """The channels' scores, each as a share of its best, summed with their weights (1
    unless ``weights`` says otherwise). Unlike reciprocal ranks, a clear winner of one
    channel stays ahead of a record both channels found only vaguely."""
    scores: dict[int, float] = {}
    for name, ranked in channels.items():
        best = ranked[0][1] if ranked else 0.0
        if best <= 0:
            continue
        weight = weights.get(name, 1.0)
        for key, score in ranked:
            scores[key] = scores.get(key, 0.0) + weight * score / best
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _dedups(kind: str) -> bool:
    """Whether a new record of ``kind`` may merge into a near duplicate. A session summary
    records one session: two alike sessions are still two."""
    return kind != "session-summary"


def _context(
    ranked: Sequence[tuple[int, float]],
    neighbours: Mapping[int, tuple[tuple[int, float], ...]],
    allowed: set[int],
    *,
    depth: int,
) -> list[tuple[int, float]]:
    """One channel's ranking rescored with context: each record also earns a share of its
    session neighbours' scores, the best of them. In a conversation the answer is often the
    reply to what the query matches, or the question before it; a question passes more to
    its reply than other records do. Scores count from the channel's floor
    (``_above_floor``)."""
    own = _above_floor(ranked, depth)
    scores = dict(own)
    for key, score in own.items():
        for other, weight in neighbours.get(key, ()):
            if other in allowed:
                lifted = own.get(other, 0.0) + weight * score
                scores[other] = max(scores.get(other, 0.0), lifted)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _prefer(ranked: Sequence[tuple[int, float]], preferred: set[int]) -> list[tuple[int, float]]:
    """``ranked`` fused by reciprocal rank with its own ``preferred`` part: those rise
    without the others dropping out."""
    return _fuse(ranked, [kv for kv in ranked if kv[0] in preferred])


def _check_type(kind: str) -> str:
    kind = kind.strip().lower()
    if not _TYPE_NAME.fullmatch(kind):
        raise QueryError(
            f"bad memory type {kind!r}: one of {', '.join(TYPES)}, or a name of letters, "
            "digits and '-'"
        )
    return kind


def _aware(at: datetime | None) -> datetime | None:
    """Naive datetimes are UTC, as in the database."""
    return at.replace(tzinfo=timezone.utc) if at is not None and at.tzinfo is None else at


def _timestamp(at: datetime | None) -> float:
    if at is None:
        return time.time()
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return at.timestamp()


def _rowid(cursor: sqlite3.Cursor) -> int:
    rowid = cursor.lastrowid
    assert rowid is not None  # an INSERT always sets it
    return rowid


def snippet(text: str, width: int = 160) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _merge(first: Iterable[str], second: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _when(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, timezone.utc) if value is not None else None


def _record(row: sqlite3.Row) -> MemoryRecord:
    created = _when(row["created_at"])
    updated = _when(row["updated_at"])
    assert created is not None
    assert updated is not None
    return MemoryRecord(
        id=row["id"],
        type=row["type"],
        scope=row["scope"],
        project=row["project"],
        text=row["text"],
        tags=tuple(json.loads(row["tags"])),
        privacy=row["privacy"],
        session=row["session"],
        events=tuple(json.loads(row["events"])),
        created_at=created,
        updated_at=updated,
        superseded_by=row["superseded_by"],
        forgotten_at=_when(row["forgotten_at"]),
        forget_reason=row["forget_reason"],
    )


def _read_one(conn: sqlite3.Connection, record_id: int) -> MemoryRecord:
    rows = conn.execute("SELECT * FROM records WHERE id = ?", (record_id,)).fetchall()
    assert rows  # just written in this transaction
    return _record(rows[0])


def _from_dict(data: dict[str, Any]) -> MemoryRecord:
    def when(key: str) -> datetime | None:
        value = data.get(key)
        return datetime.fromisoformat(value) if value else None

    created, updated = when("created_at"), when("updated_at")
    if created is None or updated is None:
        raise KeyError("created_at")
    scope = data["scope"]
    privacy = classify(level=data["privacy"])
    if scope not in ("user", "project") or privacy == "blocked":
        raise ValueError(f"bad scope or privacy: {scope!r}, {privacy!r}")
    return MemoryRecord(
        id=int(data["id"]),
        type=_check_type(str(data["type"])),
        scope=scope,
        project=str(data["project"]),
        text=str(data["text"]),
        tags=tuple(str(t) for t in data["tags"]),
        privacy=privacy,
        session=data.get("session"),
        events=tuple(str(e) for e in data["events"]),
        created_at=created,
        updated_at=updated,
        superseded_by=data.get("superseded_by"),
        forgotten_at=when("forgotten_at"),
        forget_reason=data.get("forget_reason"),
    )
