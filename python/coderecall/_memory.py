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
:mod:`coderecall._memory_rank`). A query that names a record's label (``Caroline:`` in "What
did Caroline say ...") favours that record, and one that asks when favours records that date
something. Vectors are stored in the
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
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from ._errors import Error, QueryError
from ._fork import keep, track
from ._identity import project_identity
from ._memdb import BUSY_TIMEOUT, MemoryDatabase, memory_path
from ._native import Embedder, KeySet
from ._privacy import Filtered, Level, classify, filter_text
from ._unicode import scrub

if TYPE_CHECKING:
    # What reads the store (ranking, time phrases, vectors, the context block, numpy) is
    # imported by the methods that use it: a hook that only records an event starts a new
    # process every time and never loads it.
    import numpy as np
    import numpy.typing as npt

    from ._memory_context import MemoryBlock
    from ._memory_rank import Lexicon
    from ._memory_vectors import Embedding, Vectors
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

MAX_ID = (1 << 63) - 1
"""The largest record id SQLite can hold."""
MAX_TEXT_CHARS = 100_000
"""A record's text at most, after the privacy filter: a memory is a note, not a log. Every
record is analysed by every new process that searches (hooks are one per prompt), so one
10 MB record made each of them several seconds slower."""

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
_SAVED_LEXICON_MIN_RECORDS = 500
"""Stores smaller than this build their lexicon in a few milliseconds: not worth a file."""
_STALE_PART_SECONDS = 600
SINGLETON_TYPES = frozenset({"progress"})
STRUCTURAL_TYPES = frozenset({"project-brief", "architecture", "tech-context", "product-context"})
SECTIONS = (
    ("project-brief", "Project brief"),
    ("preference", "Preferences"),
    ("architecture", "Architecture"),
    ("tech-context", "Tech context"),
    ("product-context", "Product context"),
    ("progress", "Recent progress"),
)
"""The ``[MEMORY]`` block's structured sections, by record type, in the order they are
rendered (which is also their priority)."""

Scope = Literal["user", "project"]
Action = Literal["added", "updated", "refused"]

_TYPE_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
_DEDUP_WINDOW = 500
"""Most recently updated records of a kind a new one is compared with: this bounds the cost
of a write."""
_WORDS_KEPT = 20 * _DEDUP_WINDOW
"""How many records' word sets a store keeps for dedup before it starts afresh."""
DEDUP_DEFAULTS = {"cosine": (0.9, 0.75), "words": (0.8, 0.5)}
"""(general, structural) dedup thresholds per similarity measure: the cosine of the two
records' vectors when the store has an embedding model, else the Jaccard overlap of their
word sets. Measured with all-MiniLM-L6-v2: a paraphrased rule ("Run make test before
committing" / "Always run make test before you commit") scores 0.92, a restated structural
fact ("The build uses maturin and pyo3" / "Build: maturin with pyo3 bindings") 0.78, two
different facts of one kind ("The API server lives in server/app.py" / "The CLI entry point
is cli/main.py") 0.46. A threshold given to :class:`MemoryStore` applies to both measures."""
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
    an identity string; ``None`` keeps only ``user``-scope records reachable. A root is a
    ``Path`` (or other path object) or a string written as a path (absolute, or starting
    with ``.`` or ``~``) naming a folder; any other string is an identity as it is, even if
    a folder of that name happens to be in the working directory. Safe to share between
    threads; any number of processes may open the same database. A write waits up to
    ``busy_timeout`` seconds for another process's write to finish, then raises
    :class:`~coderecall.StoreError`.
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
        busy_timeout: float = BUSY_TIMEOUT,
    ) -> None:
        if busy_timeout < 0:
            raise QueryError(f"busy_timeout must be 0 or more, got {busy_timeout}")
        if any(t is not None and not 0 < t <= 1 for t in (dedup_general, dedup_structural)):
            raise QueryError("dedup thresholds must be in (0, 1]")
        if max_session_summaries < 1:
            raise QueryError("max_session_summaries must be at least 1")
        root = _as_root(project)
        if root is not None:
            self._project = project_identity(root).key
        else:
            self._project = os.fspath(project) if project is not None else ""
        self._db = MemoryDatabase(path, busy_timeout=busy_timeout)
        self._embedder = embedder
        self._model = _model_key(embedder, model_id) if embedder is not None else None
        self._thresholds = {
            measure: (dedup_general or general, dedup_structural or structural)
            for measure, (general, structural) in DEDUP_DEFAULTS.items()
        }
        self._max_summaries = max_session_summaries
        self._words: dict[int, tuple[str, frozenset[str]]] = {}
        self._unbuilt()
        track(self)

    def _unbuilt(self) -> None:
        """No search index built yet: a new store, or a forked child's (a parent's thread may
        have been changing them); they are built from the database on first use."""
        self._lock = threading.Lock()
        self._rebuild_lock = threading.Lock()
        self._index: tuple[str, Lexicon] | None = None
        self._unsaved = False
        """Whether the lexicon changed since this store last saved it (see ``_text_index``)."""
        self._vectors: Vectors | None = None
        self._filtered: tuple[tuple[object, ...], _Candidates] | None = None
        self._newest: tuple[str, float | None] | None = None

    def _after_fork(self) -> None:
        """In a forked child: the parent's search indexes are kept, unused (see
        :mod:`coderecall._fork`); the database handles the fork itself."""
        keep(self._index, self._vectors)
        self._unbuilt()

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
        if self._unsaved:
            # Brought up to date first: a record another process forgot is not kept.
            with contextlib.suppress(Error, sqlite3.Error):
                self._text_index()
                with self._rebuild_lock:
                    if self._index is not None:
                        self._save_lexicon(self._index[1], self._index[0])
                    self._unsaved = False
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
        if session is not None:
            session = scrub(session.strip()) or None  # a blank session is none
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
        tags = _clean_tags(tags)
        try:
            filtered = filter_text(text, tags=tags, level=privacy)
        except ValueError as exc:  # an unknown privacy level
            raise QueryError(str(exc)) from None
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
        if len(clean) > MAX_TEXT_CHARS:
            return WriteResult(
                "refused",
                None,
                reason=f"the text has {len(clean):,} characters, a memory holds at most "
                f"{MAX_TEXT_CHARS:,}: keep what matters, and say where the rest lives",
            )
        project = self._scope_project(scope)
        # The comparison runs before the write lock is taken (on a snapshot), and again under
        # it only against what changed since, so writers queue for a moment, not a scan.
        from ._memory_rank import words

        embedding = self._embed(clean, filtered.level)
        probe = _Probe(words(clean), embedding.vector if embedding is not None else None)
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
        tags = old.tags if tags is None else _clean_tags(tags)
        filtered = filter_text(new_text, tags=tags)
        clean = filtered.text.strip()
        if filtered.blocked or not clean:
            raise QueryError("the new text is blocked or empty after the privacy filter")
        if len(clean) > MAX_TEXT_CHARS:
            raise QueryError(f"a memory holds at most {MAX_TEXT_CHARS:,} characters")
        level = "private" if old.privacy == "private" else filtered.level
        embedding = self._embed(clean, level)
        now = _timestamp(None)
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO records (project, scope, type, text, tags, privacy, session,"
                " events, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, '[]', ?, ?)",
                (
                    old.project,
                    old.scope,
                    old.type,
                    clean,
                    json.dumps(list(tags)),
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
        """Erase a record's text and tags for good; a tombstone keeps when and why. A record
        already forgotten raises :class:`QueryError` naming the first reason, which stays."""
        if not reason.strip():
            raise QueryError("forgetting a record needs a reason")
        record = self._get_one(record_id)
        if record.forgotten_at is not None:
            raise QueryError(
                f"memory {record.id} was already forgotten on "
                f"{record.forgotten_at.astimezone():%Y-%m-%d %H:%M}: {record.forget_reason}"
            )
        with self._write() as conn:
            conn.execute(
                "UPDATE records SET text = '', tags = '[]', events = '[]', forgotten_at = ?,"
                " forget_reason = ? WHERE id = ?",
                (_timestamp(None), scrub(reason.strip()), record.id),
            )
            conn.execute("DELETE FROM vectors WHERE record_id = ?", (record.id,))
            forgotten = _read_one(conn, record.id)
        self._drop_saved_lexicons()
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
        storable = [i for i in wanted if 0 < i <= MAX_ID]  # SQLite refuses wider integers
        if not storable:
            return []
        conn = self._conn()
        marks = ",".join("?" * len(storable))
        rows = conn.execute(
            f"SELECT * FROM records WHERE id IN ({marks}) AND (project = ? OR scope = 'user')",
            [*storable, self._project],
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
        from ._memory_rank import (
            ASKING_WEIGHT,
            DEPTH,
            NAMED_WEIGHT,
            SEMANTIC_WEIGHT,
            WHEN_WEIGHT,
            blend,
            favour,
            prefer,
            with_context,
            words,
        )
        from ._stopwords import content_query
        from ._timephrase import asks_how_long, asks_when, resolve

        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        resolved = resolve(scrub(query), self._anchor())
        text = resolved.query.strip()
        window = (resolved.start, resolved.end) if resolved.phrase else (None, None)
        start, end = _aware(since), _aware(until)
        if start is not None and end is not None and start >= end:
            raise QueryError(
                f"since ({start.isoformat()}) must come before until ({end.isoformat()})"
            )
        if not text:  # a listing: the window is the filter
            start = max(filter(None, (window[0], start)), default=None)
            end = min(filter(None, (window[1], end)), default=None)
        candidates = self._filtered_ids(type, scope, _clean_tags(tags), start, end, include_private)
        if not candidates.times:
            return []
        limit = min(limit, len(candidates.times))  # "all of them" may be any large number
        if not text:
            newest = sorted(candidates.times.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]
            return self._hits([(i, 0.0, ()) for i, _ in newest])
        allowed = candidates.times.keys()
        depth = max(limit, DEPTH)
        lexicon = self._text_index()
        # Function words go: they match every question asked in a conversation.
        lexical, matched = lexicon.search(content_query(text), depth, candidates.keys)
        channels = {"lexical": lexical}
        # Hits are labelled by the channels that matched them; "context" if only the
        # records around them did.
        brought = {"lexical": matched}
        semantic = self._nearest(text, depth, candidates)
        if semantic is not None:
            channels["semantic"] = semantic
            brought["semantic"] = {key for key, _ in semantic}
        ranked = blend(
            {
                name: with_context(found, lexicon.neighbours, allowed, depth=depth)
                for name, found in channels.items()
            },
            {"semantic": SEMANTIC_WEIGHT},
        )
        # A score counts from what a record no channel brought would score: 0 is no evidence
        # at all (the semantic channel's farthest record), not a weak hit. Dropped before
        # `prefer` (which scores by rank alone); the order of the rest is unchanged.
        ranked = [(key, score) for key, score in ranked if score > 0]
        ranked = favour(ranked, {key for key, _ in ranked if lexicon.asks(key)}, ASKING_WEIGHT)
        said = words(text)
        # By key: a rebuild for the next generation may be updating the lexicon meanwhile.
        labels = lexicon.labels
        named = {key for key, _ in ranked if (own := labels.get(key)) is not None and own <= said}
        ranked = favour(ranked, named, NAMED_WEIGHT)
        if asks_when(text):
            ranked = favour(ranked, {key for key, _ in ranked if lexicon.dates(key)}, WHEN_WEIGHT)
        elif asks_how_long(text):
            ranked = favour(ranked, {key for key, _ in ranked if lexicon.lasts(key)}, WHEN_WEIGHT)
        if window != (None, None):
            low = window[0].timestamp() if window[0] is not None else float("-inf")
            high = window[1].timestamp() if window[1] is not None else float("inf")
            times = candidates.times
            # Written then, or telling of then: a question dates the event, not the telling.
            ranked = prefer(
                ranked,
                {
                    key
                    for key, _ in ranked
                    if low <= times[key] < high or lexicon.tells_of(key, times[key], low, high)
                },
            )
        return self._hits(
            [
                (key, score, tuple(n for n, keys in brought.items() if key in keys) or ("context",))
                for key, score in ranked[:limit]
            ]
        )

    def timeline(self, record_id: int, *, before: int = 5, after: int = 5) -> list[MemoryRecord]:
        """The records of this project written around ``record_id``, in time order (current
        ones, and the record itself whatever its state)."""
        if before < 0 or after < 0:
            raise QueryError(f"before and after must be 0 or more, got {before} and {after}")
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
        from ._memory_context import build_block

        return build_block(self, query, budget)

    def recall(
        self,
        prompt: str,
        *,
        session: str | None = None,
        shown: Iterable[int] = (),
        limit: int = 3,
        budget: int = 400,
    ) -> MemoryBlock:
        """The records worth handing an agent with ``prompt``, as a ``[MEMORY]`` block (empty
        when there are none): at most ``limit`` of the best matches that hold two or more of
        its content words, leaving out what the :meth:`context` block's sections already show
        (project brief, preferences, architecture, tech and product context, progress),
        records of ``session`` (its root: already in the agent's context) and ``shown``."""
        from ._memory_context import MIN_BUDGET, MemoryBlock, build_recall

        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        if budget < MIN_BUDGET:
            raise QueryError(f"the memory budget must be at least {MIN_BUDGET}, got {budget}")
        besides = [kind for kind, _ in SECTIONS]
        root = None
        if session is not None:
            from ._sessions import Sessions  # sessions build on the store

            root = Sessions(self).root(session)
        where, params = self._where(None, None, False, False)
        # Nothing to recall is the common case (a young store): answer it without a search.
        found = (
            self._conn()
            .execute(
                f"SELECT 1 FROM records WHERE {where}"
                f" AND type NOT IN ({','.join('?' * len(besides))})"
                " AND session IS NOT ? LIMIT 1",
                [*params, *besides, root],
            )
            .fetchone()
        )
        if found is None:
            return MemoryBlock("", query=prompt)
        return build_recall(
            self, prompt, besides=besides, shown=shown, session=root, limit=limit, budget=budget
        )

    def events_around(
        self, record_id: int, *, before: int = 5, after: int = 5
    ) -> list[SessionEvent]:
        """The session events of this project nearest the time ``record_id`` was written,
        in time order: what was going on when it was learned."""
        from ._sessions import Sessions  # sessions build on the store

        center = self._get_one(record_id)
        return Sessions(self).around(center.created_at, before=before, after=after)

    def _anchor(self) -> datetime:
        """ "Today" for time phrases: the newest record of this project, else now; never
        past now (a record dated ahead by a skewed clock must not move "yesterday")."""
        generation = self._db.generation()
        with self._lock:
            known = self._newest if self._newest and self._newest[0] == generation else None
        if known is None:  # a scan of the project's records: once per generation
            rows = (
                self._conn()
                .execute(
                    "SELECT max(created_at) FROM records WHERE project = ? OR scope = 'user'",
                    (self._project,),
                )
                .fetchall()
            )
            known = (generation, rows[0][0] if rows else None)
            with self._lock:
                self._newest = known
        now = datetime.now(timezone.utc)
        newest = _when(known[1])
        return min(newest, now) if newest else now

    def _filtered_ids(
        self,
        type: str | Sequence[str] | None,
        scope: Scope | None,
        tags: tuple[str, ...],
        start: datetime | None,
        end: datetime | None,
        include_private: bool,
    ) -> _Candidates:
        """The current records the filters keep (shared by the searches of this generation
        with these filters: not to be changed)."""
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
        times = {
            row["id"]: row["created_at"]
            for row in rows
            # Decoding every record's tags costs more than the rest of a search.
            if not wanted or wanted <= set(json.loads(row["tags"]))
        }
        found = _Candidates(times, KeySet(times))
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
            if scope not in ("user", "project"):
                raise QueryError(f"scope must be 'user' or 'project', got {scope!r}")
            sql.append("AND scope = ?")
            params.append(scope)
        if type is not None:
            # Names as add() stores them: "Decision" finds the decisions.
            kinds = [_check_type(t) for t in ([type] if isinstance(type, str) else type)]
            sql.append(f"AND type IN ({','.join('?' * len(kinds))})")
            params.extend(kinds)
        return " ".join(sql), params

    def _text_index(self) -> Lexicon:
        """The search indexes of this project's current records, with each record's
        neighbours and window, brought up to date when any process wrote since: only the
        records and windows that changed are analysed again (a write adds one record and
        changes a few windows; re-reading every record made the first search after each
        write several times slower than the next)."""
        from ._memory_rank import build_lexicon

        conn = self._conn()
        with self._rebuild_lock:  # rebuilds change the indexes in place: one at a time
            generation = self._db.generation()
            with self._lock:
                if self._index is not None and self._index[0] == generation:
                    return self._index[1]
                previous = self._index[1] if self._index is not None else None
            first = previous is None
            if first:  # a new process: start from the last one's lexicon
                previous = self._saved_lexicon()
            rows = conn.execute(
                "SELECT id, type, text, tags, session, privacy FROM records"
                " WHERE (project = ? OR scope = 'user')"
                " AND superseded_by IS NULL AND forgotten_at IS NULL"
                " ORDER BY session, created_at, id",
                (self._project,),
            ).fetchall()
            try:
                lexicon, touched = build_lexicon(rows, previous)
            except BaseException:
                # Half updated in place: the next search builds a lexicon afresh.
                with self._lock:
                    self._index = None
                raise
            with self._lock:
                self._index = (generation, lexicon)
            if touched and len(rows) >= _SAVED_LEXICON_MIN_RECORDS:
                # A process's first build is kept at once (hooks and CLI commands live for
                # one search); later ones, after writes, when the store is closed: a save
                # costs 15-20 ms, and a long-lived process searches after every write.
                if first:
                    self._save_lexicon(lexicon, generation)
                self._unsaved = not first
            return lexicon

    def _lexicon_file(self, project: str | None = None) -> tuple[Path, str]:
        """Where this store's lexicon for this project (``"*"``: any project) is kept between
        processes, beside the database (it goes with it), and the owner it is checked
        against."""
        database = os.path.realpath(self._db.path)
        project = self._project if project is None else project
        name = "*" if project == "*" else f"{zlib.crc32(project.encode()):08x}"
        return Path(f"{database}.lexicon") / f"{name}.bin", f"{database}\0{project}"

    def _drop_saved_lexicons(self) -> None:
        """Delete every lexicon kept for this store, of any project (a user-scope record is
        in each): they hold the texts of the records."""
        with self._rebuild_lock:
            # Half-written ones too (a process killed while saving leaves its part file).
            for path in self._lexicon_file("*")[0].parent.glob("*.bin*"):
                with contextlib.suppress(OSError):
                    path.unlink()
            with self._lock:
                self._index = None  # nor may this process keep it, and save it at close
            self._unsaved = False

    def _saved_lexicon(self) -> Lexicon | None:
        """The lexicon a process saved for this store and project, if it is there and
        intact; :func:`build_lexicon` brings it up to date, so a stale one only costs the
        work of what changed since."""
        from ._memory_rank import lexicon_from_bytes

        path, owner = self._lexicon_file()
        try:
            return lexicon_from_bytes(path.read_bytes(), owner)
        except OSError:
            return None

    def _save_lexicon(self, lexicon: Lexicon, generation: str) -> None:
        """Keep ``lexicon``, built from ``generation``, for the next process (hooks and CLI
        commands are new processes, and analysing thousands of records is most of their
        first search). Not if another write came since: it may have forgotten a record the
        lexicon holds. Best effort: a full or read-only disk costs the next process the
        build."""
        from ._memory_rank import lexicon_to_bytes

        if self._db.generation() != generation:
            return
        path, owner = self._lexicon_file()
        part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            part.write_bytes(lexicon_to_bytes(lexicon, owner))
            os.replace(part, path)  # readers see the old file or the whole new one
        except OSError:
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)
            return
        # What processes killed while saving left; a part file that young may be in use.
        stale = time.time() - _STALE_PART_SECONDS
        for left in path.parent.glob("*.part"):
            with contextlib.suppress(OSError):
                if left.stat().st_mtime < stale:
                    left.unlink()

    def _hits(self, found: Sequence[tuple[int, float, tuple[str, ...]]]) -> list[MemoryHit]:
        if not found:
            return []
        # Only what a hit shows: whole records (events, history) cost more than the ranking.
        rows = (
            self._conn()
            .execute(
                "SELECT id, type, scope, text, tags, created_at FROM records"
                f" WHERE id IN ({','.join('?' * len(found))}) AND (project = ? OR scope = 'user')",
                [*(i for i, _, _ in found), self._project],
            )
            .fetchall()
        )
        by_id = {row["id"]: row for row in rows}
        return [
            MemoryHit(
                id=i,
                type=row["type"],
                scope=row["scope"],
                snippet=snippet(row["text"]),
                tags=tuple(json.loads(row["tags"])),
                created_at=datetime.fromtimestamp(row["created_at"], timezone.utc),
                score=round(score, 4),
                channels=channels,
            )
            for i, score, channels in found
            if (row := by_id.get(i)) is not None
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

    def import_(self, lines: Iterable[str], *, merge: bool = False) -> int:
        """Lines written by :meth:`export` (or by older versions: records only), with their
        ids, timestamps and links, in one transaction; a row whose id exists already must be
        identical. With ``merge``, into a database with memories of its own: new rows get new
        ids, links follow, rows already stored are not added twice. Returns how many records
        were added (:func:`coderecall._memory_io.import_memory` counts every table)."""
        from ._memory_io import import_memory  # built on the store

        return import_memory(self, lines, merge=merge).records

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
        best: tuple[float, int] | None = None
        newest = since or 0.0
        # Only what is scored: building every record of the window cost more than the scan.
        rows = conn.execute(
            "SELECT r.id, r.text, r.updated_at, v.vector FROM records r LEFT JOIN vectors v"
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
            newest = max(newest, row["updated_at"])
            if probe.vector is not None and row["vector"] is not None:
                import numpy as np

                measure = "cosine"
                score = float(np.frombuffer(row["vector"], dtype=np.float32) @ probe.vector)
            else:
                measure = "words"
                score = _jaccard(probe.words, self._words_of(row["id"], row["text"]))
            threshold = self._thresholds[measure][1 if structural else 0]
            if score >= threshold and (best is None or score > best[0]):
                best = (score, row["id"])
        if best is None:
            return None, newest
        return _read_one(conn, best[1]), newest

    def _words_of(self, record_id: int, text: str) -> frozenset[str]:
        """The words of a record's text, kept while its text is the same: every write
        compares itself with up to ``_DEDUP_WINDOW`` records of its type."""
        known = self._words.get(record_id)
        if known is not None and known[0] == text:
            return known[1]
        if len(self._words) >= _WORDS_KEPT:
            self._words.clear()
        from ._memory_rank import words

        found = words(text)
        self._words[record_id] = (text, found)
        return found

    # -- vectors -----------------------------------------------------------------------

    def _embed(self, text: str, level: str) -> Embedding | None:
        """The vectors of a record's text and of its sentences. Private records get none:
        they stay out of the semantic channel and never reach an embedding provider."""
        if self._embedder is None or level != "public":
            return None
        from ._memory_vectors import embedding

        return embedding(self._embedder, text)

    def _store_vector(
        self,
        conn: sqlite3.Connection,
        record: MemoryRecord,
        embedding: Embedding | None,
    ) -> None:
        # Vectors of the record's old text (updated in place), of any model, are stale.
        conn.execute("DELETE FROM vectors WHERE record_id = ?", (record.id,))
        if embedding is not None and record.privacy == "public" and self._model is not None:
            conn.execute(
                "INSERT INTO vectors (model, record_id, vector, parts) VALUES (?, ?, ?, ?)",
                (self._model, record.id, embedding.vector.tobytes(), embedding.parts.tobytes()),
            )

    def _nearest(
        self, text: str, limit: int, candidates: _Candidates
    ) -> list[tuple[int, float]] | None:
        """The ``candidates`` nearest ``text`` by cosine, or ``None`` without a model."""
        if self._embedder is None or self._model is None:
            return None
        from ._memory_vectors import nearest, rows_kept

        stored = self._vector_matrix(self._embedder, self._model)
        if not len(stored.ids):
            return []
        with self._lock:
            known = stored.generation in candidates.kept
            kept = candidates.kept.get(stored.generation)
        if not known:  # once per generation of vectors and filters
            kept = rows_kept(stored, candidates.times.keys())
            with self._lock:
                candidates.kept.clear()
                candidates.kept[stored.generation] = kept
        return nearest(stored, self._embedder.embed_query(text), kept, limit)

    def _vector_matrix(self, embedder: Embedder, model: str) -> Vectors:
        """This project's current public records and their vectors (see
        :mod:`coderecall._memory_vectors`), rebuilt when any process wrote. Records without a
        vector of this model (written by a process without one, imported, condensed) get one
        here."""
        import numpy as np

        from ._memory_vectors import assemble, embeddings

        generation = self._db.generation()
        with self._lock:
            if self._vectors is not None and self._vectors.generation == generation:
                return self._vectors
            previous = self._vectors
        known = previous.raw if previous is not None else {}
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
        embedded = embeddings(embedder, [row["text"] for row in missing])
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
        ids = [row["id"] for row in rows]
        members = self._text_index().window_members
        built = assemble(generation, ids, raw, members, embedder.dims, previous, set(wanted))
        with self._lock:
            self._vectors = built
        return built

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


@dataclass(frozen=True)
class _Candidates:
    """The current records a search's filters keep, shared by the searches of one
    generation with those filters: their creation times (by id), their ids as the text
    indexes' filter (built once: converting a set on every call cost more than the search),
    and the vector rows they keep, by generation of the vectors."""

    times: dict[int, float]
    keys: KeySet
    kept: dict[str, npt.NDArray[np.bool_] | None] = field(default_factory=dict)


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
    embedding: Embedding | None
    seen: tuple[MemoryRecord | None, float]


@dataclass(frozen=True, slots=True)
class _Probe:
    """What a new record is compared with its near neighbours by."""

    words: frozenset[str]
    vector: npt.NDArray[np.float32] | None


def _model_key(embedder: Embedder, model_id: str | None) -> str:
    """The name under which a model's vectors are stored: two models never share one."""
    if model_id:
        return model_id
    if embedder.path is None:
        raise QueryError("an embedding engine implemented in Python needs a model_id")
    # Here, not at the top: they load configuration and providers, which a hook recording an
    # event without a model never needs.
    from ._embedding import local_model_id
    from ._models import describe

    return local_model_id(describe(embedder.path), embedder.dims, embedder.recipe)


def _dedups(kind: str) -> bool:
    """Whether a new record of ``kind`` may merge into a near duplicate. A session summary
    records one session: two alike sessions are still two."""
    return kind != "session-summary"


def _clean_tags(tags: str | Iterable[str]) -> tuple[str, ...]:
    """Tags as stored: trimmed, storable, each once, in the order given (a string is one)."""
    listed = (tags,) if isinstance(tags, str) else tags
    return tuple(dict.fromkeys(scrub(t.strip()) for t in listed if t.strip()))


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


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def _merge(first: Iterable[str], second: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _as_root(project: str | os.PathLike[str] | None) -> Path | None:
    """The folder ``project`` names when it is given as a path (see :class:`MemoryStore`)."""
    if project is None:
        return None
    if isinstance(project, str):
        if not (os.path.isabs(project) or project.startswith((".", "~"))):
            return None
        project = os.path.expanduser(project)
    root = Path(project)
    return root if root.is_dir() else None


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
    assert rows  # written or just seen: records are never deleted (forgetting keeps a row)
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
