"""Session event logs, their priority snapshot, and subagent sessions (issue 7).

**The log.** :meth:`Sessions.record` appends one event (a user prompt, an assistant summary,
a decision, a file edit, an error, a tool result or a note) to a session's log in the memory
database (:mod:`coderecall._memdb`). Events are never edited or deleted. Every event goes
through the privacy filter first (:mod:`coderecall._privacy`): ``<private>`` sections are cut
and secrets redacted, in the text and in every string of ``meta``; a ``blocked`` event is not
stored at all, and a ``private`` one is stored (marked ``meta["privacy"] = "private"``) but
left out of :meth:`Sessions.snapshot`, :meth:`Sessions.around` and, unless asked,
:meth:`Sessions.events`. A tool result is compacted by :func:`compact_output` (head, the lines
that signal errors, tail), so a 5,000-line build log costs a few dozen lines; the secret scan
then reads only what is kept (private sections are cut from the whole text first).

**Child sessions.** A subagent's session names its parent (:meth:`Sessions.start` with
``parent``, or :meth:`Sessions.link`). Its events go to the log of its *root*, the end of the
parent chain, with ``origin`` naming the session that produced them, so one log tells the
whole story of a task. Parent links come from hosts and hooks, so they are taken as given,
cycles included; resolution is cycle-safe: the chain is followed until a session repeats, and
the root of a cycle is its smallest session id, the one choice every member of the cycle (and
every session hanging off it) agrees on whichever one it starts from. Invariant: every event
is filed under ``root(origin)``; when a link changes the root of sessions that already have
events, those events move to the new root's log in the same transaction (their text, ids
and times stay as they were, so each log remains in the order events arrived).

**The snapshot** (:meth:`Sessions.snapshot`) is what a host re-injects after it compacts its
context: the task (first and latest prompt), decisions, errors, files edited and recent
activity, in that priority, within a token budget counted by :func:`coderecall._tokens.count_tokens`
on the exact text returned. It is a pure function of the root's log and the budget. It is
built lazily, on the first read after events arrive, so writers never pay for it, and cached
in ``sessions.snapshot`` with a digest of the log's event ids: a cached text is only used when
the digest still matches the log at read time, so neither a concurrent writer nor a reader
storing its result after a write can make it stale. :meth:`Sessions.record` also clears the
cache in its own transaction.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ._errors import QueryError
from ._memdb import MemoryDatabase
from ._memory import MemoryStore, WriteResult
from ._privacy import PRIVATE_MARKER, filter_text
from ._unicode import scrub

__all__ = [
    "EVENT_KINDS",
    "SessionEvent",
    "SessionInfo",
    "Sessions",
    "compact_output",
]

EVENT_KINDS = ("prompt", "summary", "decision", "edit", "error", "tool", "note")
"""What an event records: a user prompt, an assistant summary, a decision, a file edit
(``meta["path"]`` names the file), an error, a tool result (compacted), or anything else."""

_SNAPSHOT_VERSION = 1
"""Part of the cache key: a cached snapshot of an older layout is rebuilt."""
_PROMPT_CHARS = 600
_ITEM_CHARS = 300
_RECENT_CHARS = 160
"""Characters kept of one prompt, one decision or error, and one line of recent activity: no
single item can crowd out the rest of the snapshot."""
_SECTION_ROWS = {"decision": 100, "error": 200, "edit": 500, "recent": 40}
"""Newest events read per section. A budget fits far fewer, and the bound keeps a snapshot of
a long session from reading its whole log."""
_MIN_PARTIAL = 24
"""Fewest tokens worth spending on a truncated item rather than dropping it."""
_SLACK = 8
"""How far over the budget an item's estimated cost may be for the joined text to be
counted: the estimate is seldom off by more than a token or two."""
_PRIVATE = "private"


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One event of a session log."""

    id: int
    """Increases in the order events arrive (across all logs of the database)."""
    session: str
    """The root session, whose log holds the event."""
    origin: str
    """The session that produced it (the root itself, or a child)."""
    kind: str
    text: str
    meta: dict[str, Any]
    at: datetime

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["at"] = self.at.isoformat()
        return data


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session and where it sits in its tree."""

    id: str
    project: str
    parent: str | None
    root: str
    host: str | None
    started_at: datetime
    updated_at: datetime
    """The time of its latest event (a root's includes its children's)."""
    ended_at: datetime | None
    events: int
    """For a root, the length of its log (children's events included); for a child, the
    events it produced."""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("started_at", "updated_at", "ended_at"):
            value = data[key]
            data[key] = value.isoformat() if value is not None else None
        return data


# --- tool output compaction ---------------------------------------------------------------

_SIGNAL = re.compile(
    "|".join(
        (
            r"(?i:\berror\b)",  # error:, ERROR, error[E0308]; not -Werror, on_error, errno
            r"\b[1-9]\d*\s+(?i:errors|failures|failed)\b",  # "3 errors", "1 failed"
            r"\bERRORS\b",
            r"(?i:\bfail(?:ed|ures?)\b)",
            r"\bFAIL\b",  # "--- FAIL:", "FAIL: test_x"; lower-case "fail" is often prose
            r"\b[A-Z]\w*(?:Error|Exception)\b",  # TypeError, NullPointerException
            r"(?i:\bexception\b|\btraceback\b|\bpanic(?:ked)?\b|\bfatal\b)",
            r"(?i:\bassert(?:ion)?\b)",
            r"(?i:\bdenied\b|\bnot found\b|no such file or directory)",
            r"(?i:segmentation fault|core dumped|\bsegfault\b)",
            r"(?i:\b(?:exit(?:ed)?(?:\s+with)?\s+|return(?:ed)?\s*)(?:code|status)"
            r"\s*[:=]?\s*-?0*[1-9])",  # exit code 2, exited with status 1, returncode=1
            r"(?i:non-zero exit)",
            r"^E\s{2,}\S",  # pytest's explanation lines: "E       assert 1 == 2"
        )
    )
)
_NOT_A_SIGNAL = re.compile(
    r"(?i:\b(?:0|no|zero|without)\s+(?:errors?|failures?|failed)\b"
    r"|\b(?:errors?|failures?|failed)\s*[:=]\s*0\b(?![.\d]))"
)
"""Counts of nothing ("0 errors", "failed=0", "no failures"), erased from a line before it is
tested: every test summary would otherwise read as a failure."""


def compact_output(
    text: str,
    *,
    head: int = 15,
    tail: int = 15,
    max_signal_lines: int = 40,
    max_line_chars: int = 400,
    redact: Callable[[str], str] | None = None,
) -> str:
    """A tool's output cut to its first ``head`` lines, the lines in between that signal an
    error or a failure, and its last ``tail`` lines.

    Each run of dropped lines becomes one marker line (``… 120 lines omitted …``, naming how
    many of them signalled an error when the signal lines were more than
    ``max_signal_lines``: then the first and last halves of them are kept). A run of one line
    is kept instead, since its marker would save nothing. A kept line longer than
    ``max_line_chars`` characters is cut, with a marker saying how much. Output that needs
    neither is returned unchanged; otherwise lines are joined with ``\\n``.

    What signals an error: the word ``error`` in any case (``error:``, ``ERROR``, Rust's
    ``error[E0308]``; not ``-Werror`` or ``on_error``), a non-zero count of errors or failures,
    ``failed``/``failure``, upper-case ``FAIL`` and ``ERRORS``, exception class names
    (``TypeError``, ``IOException``), ``exception``, ``traceback``, ``panic``, ``fatal``,
    ``assert``/``assertion``, ``denied``, ``not found``, ``No such file or directory``,
    segmentation faults, a non-zero exit code or status, and pytest's ``E   `` lines.
    False positives chosen over misses: a listing of source code that mentions errors (``raise
    ValueError``, ``assert x``) is signal too, bounded by ``max_signal_lines``. Misses chosen
    over noise: lower-case ``fail`` and plural ``errors`` without a count (``src/errors.rs``),
    and counts of nothing (``0 errors``, ``failed=0``, ``no failures``).

    The work is bounded whatever the size of the output, beyond splitting it into lines: a
    line is tested on the part of it that could be shown (its first ``max_line_chars``
    characters and :data:`_LOOKAHEAD` more), and only the :data:`_SCAN_LINES` lines
    nearest the head and the tail are tested at all (a marker says how many lines between
    them were not). ``redact``, if given, is applied to every line returned (to a long
    line's shown part and the look-ahead before it is cut, so a secret across the cut is
    redacted whole; to the whole text when it is returned unchanged).
    """
    if min(head, tail, max_signal_lines) < 0 or max_line_chars < 1:
        raise QueryError("head, tail and max_signal_lines must be >= 0, max_line_chars >= 1")
    lines = text.splitlines()
    total = len(lines)
    if total <= head + tail + 1 and not any(len(line) > max_line_chars for line in lines):
        return text if redact is None else redact(text)
    middle = range(head, max(total - tail, head))
    half = _SCAN_LINES // 2
    scanned = [*middle[:half], *middle[max(half, len(middle) - half) :]]
    window = max_line_chars + _LOOKAHEAD
    signal = [i for i in scanned if _signals(lines[i][:window])]
    kept = signal
    if len(signal) > max_signal_lines:
        first = (max_signal_lines + 1) // 2
        kept = signal[:first] + signal[len(signal) - (max_signal_lines - first) :]
    keep = sorted({*range(min(head, total)), *range(max(total - tail, 0), total), *kept})
    unscanned = range(middle.start + half, middle.stop - half)

    def line(i: int) -> str:
        return _shown(lines[i], max_line_chars, redact)

    out: list[str] = []
    previous = -1
    for i in [*keep, total]:
        gap = range(previous + 1, i)
        if len(gap) == 1:
            out.append(line(gap[0]))
        elif gap:
            errors = bisect.bisect_left(signal, gap.stop) - bisect.bisect_left(signal, gap.start)
            extra = f", {errors} of them error lines" if errors else ""
            blind = len(range(max(gap.start, unscanned.start), min(gap.stop, unscanned.stop)))
            extra += f", {blind} not searched for errors" if blind else ""
            out.append(f"… {len(gap)} lines omitted{extra} …")
        if i < total:
            out.append(line(i))
        previous = i
    return "\n".join(out)


_SCAN_LINES = 50_000
"""Lines of a tool's output tested for errors at most, half after the head, half before the
tail: some 0.1 s, where testing every line of a 60 MB log took half a minute."""
_LOOKAHEAD = 1024
"""Characters past a long line's cut that are read with it, to test it for errors and to
redact a secret that straddles the cut."""


def _compact(text: str, redact: Callable[[str], str]) -> str:
    return compact_output(text.strip(), redact=redact)


_SIGNAL_WORDS = (
    *("error", "fail", "exception", "traceback", "panic", "fatal", "assert", "denied"),
    *("not found", "no such file", "segmentation", "core dumped", "segfault", "exit"),
    *("return", "non-zero"),
)
"""A word, in lower case, that every line :data:`_SIGNAL` finds holds (or it starts with
``E``): tested first, some fifty times faster than the pattern."""


def _signals(line: str) -> bool:
    lowered = line.lower()
    if not line.startswith("E") and not any(word in lowered for word in _SIGNAL_WORDS):
        return False
    return _SIGNAL.search(_NOT_A_SIGNAL.sub(" ", line)) is not None


def _shown(line: str, limit: int, redact: Callable[[str], str] | None) -> str:
    """A kept line as shown: cut past ``limit`` characters, with a marker saying how much."""
    if redact is not None:
        shown = redact(line[: limit + _LOOKAHEAD])
        if len(line) <= limit + _LOOKAHEAD and len(shown) <= limit:
            return shown
    else:
        shown = line
    if len(line) <= limit:
        return shown
    return f"{shown[:limit]} … [{len(line) - limit} chars cut]"


# --- sessions -----------------------------------------------------------------------------


class Sessions:
    """The session logs of one :class:`~coderecall._memory.MemoryStore`'s project.

    Safe to share between threads; any number of processes may write the same sessions
    (every write is one ``BEGIN IMMEDIATE`` transaction). Session ids are the hosts' own and
    global to the database; a session belongs to the project of the store that first saw it.
    """

    def __init__(self, store: MemoryStore) -> None:
        # Session writes leave the database generation alone (``bump=False``): they change
        # no record, so the store's search caches stay valid.
        self._store = store
        self._db: MemoryDatabase = store._db
        self._project = store.project

    # -- the tree ----------------------------------------------------------------------

    def start(
        self,
        session_id: str,
        *,
        parent: str | None = None,
        host: str | None = None,
        at: datetime | None = None,
    ) -> SessionInfo:
        """Open ``session_id`` (a no-op for a known one, beyond filling in a missing host or
        parent: a start never re-parents a session, :meth:`link` does)."""
        session_id = _check_id(session_id)
        parent = _check_id(parent) if parent is not None else None
        when = _timestamp(at)
        with self._db.write(bump=False) as conn:
            self._ensure(conn, session_id, when, host)
            conn.execute(
                "UPDATE sessions SET started_at = min(started_at, ?) WHERE id = ?",
                (when, session_id),
            )
            if host is not None:
                conn.execute(
                    "UPDATE sessions SET host = ? WHERE id = ? AND host IS NULL", (host, session_id)
                )
            if parent is not None:
                current = conn.execute(
                    "SELECT parent FROM sessions WHERE id = ?", (session_id,)
                ).fetchall()
                if current[0]["parent"] is None:
                    self._set_parent(conn, session_id, parent, when)
            return self._info(conn, session_id)

    def link(self, child: str, parent: str) -> None:
        """Make ``parent`` the parent of ``child`` (a subagent's session), replacing any
        earlier parent; either is created if unknown. A link that closes a cycle is stored as
        given (:meth:`root` stays cycle-safe). Events of ``child`` and of its own children move
        to the log of their new root."""
        child, parent = _check_id(child), _check_id(parent)
        when = time.time()
        with self._db.write(bump=False) as conn:
            self._ensure(conn, child, when, None)
            self._set_parent(conn, child, parent, when)

    def root(self, session_id: str) -> str:
        """The end of ``session_id``'s parent chain (itself when it has no parent or is
        unknown); in a cycle, the smallest session id of the cycle."""
        return _resolve(self._db.conn(), _check_id(session_id))

    def project_of(self, session_id: str) -> str | None:
        """The project ``session_id`` belongs to, whichever store's it is, or ``None`` if
        the session is unknown."""
        rows = (
            self._db.conn()
            .execute("SELECT project FROM sessions WHERE id = ?", (_check_id(session_id),))
            .fetchall()
        )
        return str(rows[0]["project"]) if rows else None

    def info(self, session_id: str) -> SessionInfo | None:
        """The session, or ``None`` if it is unknown."""
        conn = self._db.conn()
        session_id = _check_id(session_id)
        if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchall():
            return None
        return self._info(conn, session_id)

    def sessions(self, *, limit: int = 20) -> list[SessionInfo]:
        """This project's root sessions, the most recently active first."""
        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        conn = self._db.conn()
        found: list[SessionInfo] = []
        offset, page = 0, 200
        while len(found) < limit:
            rows = conn.execute(
                "SELECT id, parent FROM sessions WHERE project = ?"
                " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?",
                (self._project, page, offset),
            ).fetchall()
            for row in rows:
                # A session with a parent is a root only as the smallest id of a cycle.
                if row["parent"] is None or _resolve(conn, row["id"]) == row["id"]:
                    found.append(self._info(conn, row["id"]))
                    if len(found) == limit:
                        break
            if len(rows) < page:
                break
            offset += page
        return found

    # -- the log -----------------------------------------------------------------------

    def record(
        self,
        session_id: str,
        kind: str,
        text: str,
        *,
        meta: Mapping[str, Any] | None = None,
        at: datetime | None = None,
        tags: Iterable[str] = (),
        privacy: str | None = None,
        remember: bool = False,
        compact: bool | None = None,
    ) -> SessionEvent | None:
        """Append an event to the log of ``session_id``'s root (creating the session if it
        is unknown). ``tags`` and ``privacy`` set the event's privacy level as for a memory
        record. Returns ``None`` when nothing was stored: the event is blocked, or nothing is
        left of its text after the privacy filter.

        ``compact`` (by default, for a ``tool`` event) cuts the text with
        :func:`compact_output`, between the privacy filter's passes: private sections are
        cut from the whole text first, so one that straddles a cut leaves nothing behind, and
        secrets are looked for in what is kept only, so a tool's output of megabytes costs
        what its compacted text does.

        With ``remember``, the event also becomes a memory record at once, through the
        store's write path (a ``decision`` event a ``decision`` record, any other an
        ``observation``), of the root session, dated with the event and listing its id as
        its source: searchable before any summary or extraction distils the session."""
        session_id = _check_id(session_id)
        if kind not in EVENT_KINDS:
            raise QueryError(f"unknown event kind {kind!r}; expected one of {EVENT_KINDS}")
        tags = (tags,) if isinstance(tags, str) else tuple(tags)
        shrink = None
        if compact if compact is not None else kind == "tool":
            shrink = _compact
        try:
            filtered = filter_text(text, tags=tags, level=privacy, shrink=shrink)
        except ValueError as exc:
            raise QueryError(str(exc)) from None
        if filtered.blocked:
            return None
        clean = filtered.text.strip()
        if not clean or clean == PRIVATE_MARKER:
            return None
        data = _filter_meta(meta or {}, tags, privacy)
        if filtered.level == _PRIVATE:
            data[_PRIVATE_KEY] = _PRIVATE
        try:
            meta_json = json.dumps(data, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise QueryError(f"event meta must be JSON: {exc}") from None
        when = _timestamp(at)
        # The record is embedded before the lock; event and record commit together. A record
        # the write path refuses leaves the event alone, as a refused add would.
        prepared = (
            self._store._prepare(
                clean,
                "decision" if kind == "decision" else "observation",
                scope="project",
                tags=tags,
                privacy=privacy,
                at=_when(when),
            )
            if remember
            else None
        )
        pending = None if isinstance(prepared, WriteResult) else prepared
        with self._db.write(bump=pending is not None) as conn:
            self._ensure(conn, session_id, when, None)
            root = _resolve(conn, session_id)
            self._ensure(conn, root, when, None)
            cursor = conn.execute(
                "INSERT INTO events (session, origin, kind, text, meta, at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (root, session_id, kind, clean, meta_json, when),
            )
            conn.execute(
                "UPDATE sessions SET updated_at = max(updated_at, ?),"
                " started_at = min(started_at, ?) WHERE id IN (?, ?)",
                (when, when, session_id, root),
            )
            conn.execute("UPDATE sessions SET snapshot = NULL WHERE id = ?", (root,))
            event_id = cursor.lastrowid
            assert event_id is not None  # an INSERT always sets it
            if pending is not None:
                self._store._commit(conn, pending, session=root, events=[str(event_id)])
        return SessionEvent(
            event_id, root, session_id, kind, clean, json.loads(meta_json), _when(when)
        )

    def end(
        self, session_id: str, *, summary: str | None = None, at: datetime | None = None
    ) -> None:
        """Mark ``session_id`` ended. A ``summary`` becomes a ``session-summary`` memory record
        of the root session, listing the ids of the events ``session_id`` and its children
        produced (through :meth:`MemoryStore.add`, so the privacy filter applies)."""
        session_id = _check_id(session_id)
        when = _timestamp(at)
        with self._db.write(bump=False) as conn:
            self._ensure(conn, session_id, when, None)
            conn.execute("UPDATE sessions SET ended_at = ? WHERE id = ?", (when, session_id))
            root = _resolve(conn, session_id)
            ids = _event_ids(conn, root, _subtree(conn, session_id))
        if summary is not None and summary.strip():
            self._store.add(
                summary, "session-summary", session=root, events=[str(i) for i in ids], at=at
            )

    def events(
        self,
        session_id: str,
        *,
        kinds: Sequence[str] | None = None,
        after: int | None = None,
        limit: int | None = None,
        include_private: bool = False,
    ) -> list[SessionEvent]:
        """The log of ``session_id``'s root, in the order events arrived: only ``kinds`` if
        given, only events with ids above ``after``, at most ``limit`` of them."""
        if limit is not None and limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        conn = self._db.conn()
        root = _resolve(conn, _check_id(session_id))
        sql = ["SELECT * FROM events WHERE session = ?"]
        params: list[object] = [root]
        if kinds is not None:
            wanted = [kinds] if isinstance(kinds, str) else list(kinds)
            unknown = [k for k in wanted if k not in EVENT_KINDS]
            if unknown:
                raise QueryError(f"unknown event kinds {unknown}; expected some of {EVENT_KINDS}")
            sql.append(f"AND kind IN ({','.join('?' * len(wanted))})")
            params.extend(wanted)
        if after is not None:
            sql.append("AND id > ?")
            params.append(after)
        if not include_private:
            sql.append(f"AND {_public('meta')}")
        sql.append("ORDER BY id")
        if limit is not None:
            sql.append("LIMIT ?")
            params.append(limit)
        return [_event(row) for row in conn.execute(" ".join(sql), params).fetchall()]

    def around(self, at: datetime, *, before: int = 5, after: int = 5) -> list[SessionEvent]:
        """This project's events nearest ``at`` (``before`` at or before it, ``after`` after
        it), in time order; private events are left out."""
        if before < 0 or after < 0:
            raise QueryError("before and after must be >= 0")
        when = _timestamp(at)
        conn = self._db.conn()
        base = (
            "SELECT e.* FROM events e JOIN sessions s ON s.id = e.session"
            f" WHERE s.project = ? AND {_public('e.meta')}"
        )
        earlier = conn.execute(
            f"{base} AND e.at <= ? ORDER BY e.at DESC, e.id DESC LIMIT ?",
            (self._project, when, before),
        ).fetchall()
        later = conn.execute(
            f"{base} AND e.at > ? ORDER BY e.at, e.id LIMIT ?", (self._project, when, after)
        ).fetchall()
        return [_event(row) for row in [*reversed(earlier), *later]]

    # -- the snapshot ------------------------------------------------------------------

    def snapshot(self, session_id: str, *, budget: int = 1200) -> str:
        """The priority snapshot of ``session_id``'s root within ``budget`` tokens (``""``
        for an empty log): a header, then ``## Task`` (first and latest prompt),
        ``## Decisions`` and ``## Errors`` (newest first; repeated errors once, with a
        count), ``## Files edited`` (newest first) and ``## Recent activity`` (newest last).
        When the budget is short, sections are filled in that order and the newest items of
        each first; an item that does not fit is dropped whole (a later, smaller one may still
        fit), or cut with ``…`` when at least a few dozen tokens are left. The same log and
        budget give the same bytes."""
        if budget < 1:
            raise QueryError(f"budget must be at least 1, got {budget}")
        import hashlib  # with the tokenizer below: a hook that only records loads neither

        conn = self._db.conn()
        with _reading(conn):
            root = _resolve(conn, _check_id(session_id))
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM events WHERE session = ? ORDER BY id", (root,)
                ).fetchall()
            ]
            key = hashlib.sha256(f"{_SNAPSHOT_VERSION}:{budget}:{root}:{ids}".encode()).hexdigest()
            rows = conn.execute("SELECT snapshot FROM sessions WHERE id = ?", (root,)).fetchall()
            cached = _cached(rows[0]["snapshot"] if rows else None, key)
            if cached is not None:
                return cached
            if not ids:
                return ""
            parts = _read_parts(conn, root)
        text = _render(root, parts, budget)
        if rows:
            with self._db.write(bump=False) as w:
                w.execute(
                    "UPDATE sessions SET snapshot = ? WHERE id = ?",
                    (json.dumps({"key": key, "text": text}, ensure_ascii=False), root),
                )
        return text

    # -- internals ---------------------------------------------------------------------

    def _ensure(
        self, conn: sqlite3.Connection, session_id: str, when: float, host: str | None
    ) -> None:
        conn.execute(
            "INSERT INTO sessions (id, project, host, started_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (session_id, self._project, host, when, when),
        )

    def _set_parent(self, conn: sqlite3.Connection, child: str, parent: str, when: float) -> None:
        """Point ``child`` at ``parent`` and keep every event filed under its origin's root."""
        self._ensure(conn, parent, when, None)
        # Only sessions whose chain passes through the child can change root.
        moved = _subtree(conn, child)
        before = {s: _resolve(conn, s) for s in moved}
        conn.execute("UPDATE sessions SET parent = ? WHERE id = ?", (parent, child))
        changes: dict[tuple[str, str], list[str]] = {}
        for session in sorted(moved):
            after = _resolve(conn, session)
            if after != before[session]:
                changes.setdefault((before[session], after), []).append(session)
        for (old, new), origins in changes.items():
            marks = ",".join("?" * len(origins))
            conn.execute(
                f"UPDATE events SET session = ? WHERE session = ? AND origin IN ({marks})",
                (new, old, *origins),
            )
            conn.execute("UPDATE sessions SET snapshot = NULL WHERE id IN (?, ?)", (old, new))
            conn.execute(
                "UPDATE sessions SET updated_at = max(updated_at, ("
                " SELECT coalesce(max(at), 0) FROM events WHERE session = ?)) WHERE id = ?",
                (new, new),
            )

    def _info(self, conn: sqlite3.Connection, session_id: str) -> SessionInfo:
        row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchall()[0]
        root = _resolve(conn, session_id)
        if root == session_id:
            count = conn.execute(
                "SELECT count(*) FROM events WHERE session = ?", (session_id,)
            ).fetchall()[0][0]
        else:
            count = conn.execute(
                "SELECT count(*) FROM events WHERE session = ? AND origin = ?", (root, session_id)
            ).fetchall()[0][0]
        return SessionInfo(
            id=row["id"],
            project=row["project"],
            parent=row["parent"],
            root=root,
            host=row["host"],
            started_at=_when(row["started_at"]),
            updated_at=_when(row["updated_at"]),
            ended_at=_when(row["ended_at"]) if row["ended_at"] is not None else None,
            events=int(count),
        )


_PRIVATE_KEY = "privacy"


def _public(meta: str) -> str:
    """SQL keeping the events whose ``meta`` column does not mark them private."""
    return f"coalesce(json_extract({meta}, '$.{_PRIVATE_KEY}'), '') != '{_PRIVATE}'"


def _resolve(conn: sqlite3.Connection, session_id: str) -> str:
    path: list[str] = []
    seen: dict[str, int] = {}
    current: str | None = session_id
    while current is not None:
        if current in seen:
            return min(path[seen[current] :])
        seen[current] = len(path)
        path.append(current)
        rows = conn.execute("SELECT parent FROM sessions WHERE id = ?", (current,)).fetchall()
        current = rows[0]["parent"] if rows else None
    return path[-1]


def _subtree(conn: sqlite3.Connection, session_id: str) -> set[str]:
    """``session_id`` and every session whose parent chain passes through it."""
    found = {session_id}
    frontier = [session_id]
    while frontier:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT id FROM sessions WHERE parent IN ({marks})", frontier
        ).fetchall()
        frontier = [r["id"] for r in rows if r["id"] not in found]
        found.update(frontier)
    return found


def _event_ids(conn: sqlite3.Connection, root: str, origins: set[str]) -> list[int]:
    ordered = sorted(origins)
    marks = ",".join("?" * len(ordered))
    rows = conn.execute(
        f"SELECT id FROM events WHERE session = ? AND origin IN ({marks}) ORDER BY id",
        (root, *ordered),
    ).fetchall()
    return [int(r["id"]) for r in rows]


@contextmanager
def _reading(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, so the statements inside see the same state of the database."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _cached(value: str | None, key: str) -> str | None:
    if value is None:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("text"), str):
        text: str = data["text"]
        return text
    return None


# --- rendering the snapshot ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Parts:
    count: int
    first_prompt: SessionEvent | None
    last_prompt: SessionEvent | None
    decisions: list[SessionEvent]
    errors: list[SessionEvent]
    edits: list[SessionEvent]
    recent: list[SessionEvent]


def _read_parts(conn: sqlite3.Connection, root: str) -> _Parts:
    def newest(kind: str | None, limit: int, oldest: bool = False) -> list[SessionEvent]:
        where = f"session = ? AND {_public('meta')}" + (" AND kind = ?" if kind else "")
        params: tuple[object, ...] = (root, kind, limit) if kind else (root, limit)
        order = "id" if oldest else "id DESC"
        rows = conn.execute(
            f"SELECT * FROM events WHERE {where} ORDER BY {order} LIMIT ?", params
        ).fetchall()
        return [_event(r) for r in rows]

    count = conn.execute(
        f"SELECT count(*) FROM events WHERE session = ? AND {_public('meta')}", (root,)
    ).fetchall()[0][0]
    first = newest("prompt", 1, oldest=True)
    last = newest("prompt", 1)
    return _Parts(
        count=int(count),
        first_prompt=first[0] if first else None,
        last_prompt=last[0] if last else None,
        decisions=newest("decision", _SECTION_ROWS["decision"]),
        errors=newest("error", _SECTION_ROWS["error"]),
        edits=newest("edit", _SECTION_ROWS["edit"]),
        recent=newest(None, _SECTION_ROWS["recent"]),
    )


@dataclass(slots=True)
class _Item:
    line: str
    event_ids: tuple[int, ...]


def _render(root: str, parts: _Parts, budget: int) -> str:
    if parts.count == 0:
        return ""
    header = f"# Session {root}: {parts.count} events"
    task: list[_Item] = []
    if parts.first_prompt is not None and parts.last_prompt is not None:
        if parts.first_prompt.id == parts.last_prompt.id:
            task.append(_item("Prompt: ", parts.first_prompt, _PROMPT_CHARS))
        else:
            task.append(_item("First prompt: ", parts.first_prompt, _PROMPT_CHARS))
            task.append(_item("Latest prompt: ", parts.last_prompt, _PROMPT_CHARS))
    decisions = [_item("", e, _ITEM_CHARS) for e in parts.decisions]
    errors = _dedup_errors(parts.errors)
    files: list[_Item] = []
    seen_paths: set[str] = set()
    for event in parts.edits:
        paths = event.meta.get("paths")  # an edit of several files (a patch) lists them all
        for path in paths if isinstance(paths, list) else [event.meta.get("path")]:
            if isinstance(path, str) and path.strip() and path not in seen_paths:
                seen_paths.add(path)
                files.append(_Item(f"- {_flat(path, _ITEM_CHARS)}", (event.id,)))
    sections = [
        (i, item) for i, items in enumerate((task, decisions, errors, files)) for item in items
    ]
    recent = [(e, _recent_item(e)) for e in parts.recent]

    def unshown(shown: set[int]) -> list[_Item]:
        """Recent activity less what the sections above show (edits always count)."""
        return [item for e, item in recent if e.id not in shown or e.kind == "edit"]

    from ._tokens import default_counter, surely_fits

    seen = {event_id for _, item in sections for event_id in item.event_ids}
    whole = _assemble(header, [*sections, *((_RECENT, item) for item in unshown(seen))])
    if surely_fits(whole, budget):
        return whole  # and so does every part of it: the loop below would take it all
    counter = default_counter()
    # Items are taken in priority order; `taken` keeps that order so the least important
    # can be given back if the joined text counts more than its parts.
    taken: list[tuple[int, _Item]] = []
    shown: set[int] = set()
    # Token counts of the parts are an estimate of the whole (pieces merge across a join),
    # good for the bulk; near the budget the joined text itself is counted.
    used = counter.count(header)
    exact = True
    if used > budget:
        return ""

    def take(index: int, item: _Item) -> None:
        taken.append((index, item))
        shown.update(item.event_ids)

    def fill(index: int, items: Sequence[_Item]) -> None:
        nonlocal used, exact
        for item in items:
            empty = not any(i == index for i, _ in taken)
            heading = counter.count("\n" + _TITLES[index]) if empty else 0
            cost = heading + counter.count("\n" + item.line)
            if used + cost > budget and not exact:
                used, exact = counter.count(_assemble(header, taken)), True
            if used + cost <= budget:
                take(index, item)
                used, exact = used + cost, False
                continue
            if used + cost <= budget + _SLACK:
                trial = counter.count(_assemble(header, [*taken, (index, item)]))
                if trial <= budget:
                    take(index, item)
                    used, exact = trial, True
                    continue
            room = budget - used - heading - counter.count("\n…")
            if room >= _MIN_PARTIAL:
                cut = counter.truncate(item.line, room).rstrip()
                take(index, _Item(cut + "…", item.event_ids))
                used, exact = counter.count(_assemble(header, taken)), True

    for index, items in enumerate((task, decisions, errors, files)):
        fill(index, items)
    fill(_RECENT, unshown(shown))  # recent activity comes last

    while True:
        text = _assemble(header, taken)
        if counter.count(text) <= budget:
            return text
        if not taken:
            return ""
        taken.pop()


_TITLES = ("## Task", "## Decisions", "## Errors", "## Files edited", "## Recent activity")
_RECENT = 4
"""Index of recent activity in :data:`_TITLES`, the section read oldest first."""


def _assemble(header: str, taken: Sequence[tuple[int, _Item]]) -> str:
    lines = [header]
    for index, title in enumerate(_TITLES):
        items = [item for i, item in taken if i == index]
        if not items:
            continue
        if index == _RECENT:
            items.reverse()  # taken newest first, read oldest first
        lines.append(title)
        lines.extend(item.line for item in items)
    return "\n".join(lines)


def _item(label: str, event: SessionEvent, chars: int) -> _Item:
    return _Item(f"- {label}{_flat(event.text, chars)}{_from(event)}", (event.id,))


def _recent_item(event: SessionEvent) -> _Item:
    text = event.text
    if event.kind == "edit" and isinstance(event.meta.get("path"), str):
        text = f"{event.meta['path']}: {text}"
    elif event.kind == "tool":
        text = _tool_gist(event)
    return _Item(f"- [{event.kind}] {_flat(text, _RECENT_CHARS)}{_from(event)}", (event.id,))


def _tool_gist(event: SessionEvent) -> str:
    """A tool result in one line: the tool's name when ``meta`` gives one, the first line
    of its output, and its first line that signals an error."""
    lines = [line for line in event.text.splitlines() if line.strip()]
    name = next(
        (v for k in ("tool", "name", "command") if isinstance(v := event.meta.get(k), str)), ""
    )
    named = name.strip() and not (lines and lines[0].lstrip().startswith(name.strip()))
    parts = [name.strip()] if named else []  # hooks write "Bash: pytest" already
    if lines:
        parts.append(lines[0].strip())
        signal = next((line for line in lines[1:] if _signals(line)), None)
        if signal is not None:
            parts.append(signal.strip())
    return " | ".join(parts)


def _from(event: SessionEvent) -> str:
    return "" if event.origin == event.session else f" (from {event.origin})"


def _dedup_errors(errors: Sequence[SessionEvent]) -> list[_Item]:
    """Newest first; an error seen again is listed once, where it last occurred."""
    order: list[str] = []
    ids: dict[str, list[int]] = {}
    origin: dict[str, str] = {}
    for event in errors:
        text = _flat(event.text, _ITEM_CHARS)
        if text not in ids:
            order.append(text)
            ids[text] = []
            origin[text] = _from(event)
        ids[text].append(event.id)
    items = []
    for text in order:
        times = len(ids[text])
        repeated = f" ({times} times)" if times > 1 else ""
        items.append(_Item(f"- {text}{origin[text]}{repeated}", tuple(ids[text])))
    return items


def _flat(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"


# --- rows and values ----------------------------------------------------------------------


def _event(row: sqlite3.Row) -> SessionEvent:
    return SessionEvent(
        id=row["id"],
        session=row["session"],
        origin=row["origin"],
        kind=row["kind"],
        text=row["text"],
        meta=json.loads(row["meta"]),
        at=_when(row["at"]),
    )


def _filter_meta(
    meta: Mapping[str, Any], tags: tuple[str, ...], privacy: str | None
) -> dict[str, Any]:
    """``meta`` with every string in it (nested too) through the privacy filter. Keys are
    names chosen by code, not content, and stay as they are."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return filter_text(value, tags=tags, level=privacy).text
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return {str(k): clean(v) for k, v in meta.items()}


def _check_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not session_id.strip():
        raise QueryError("a session id must be a non-empty string")
    return scrub(session_id.strip())


def _timestamp(at: datetime | None) -> float:
    if at is None:
        return time.time()
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)  # naive means UTC, as in the database
    return at.timestamp()


def _when(value: float) -> datetime:
    return datetime.fromtimestamp(value, timezone.utc)
