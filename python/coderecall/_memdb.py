"""The memory database: one SQLite file (WAL) shared by every process of a user.

Records (:mod:`coderecall._memory`), their vectors, and session event logs
(:mod:`coderecall._sessions`) live here. This module owns the schema and its migrations,
per-thread connections, and write transactions.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._dirs import user_data_dir
from ._errors import StoreError
from ._fork import keep, track

__all__ = ["MemoryDatabase", "memory_path"]

BUSY_TIMEOUT = 60.0
"""Seconds a connection waits for another one's write lock before giving up."""

_MIGRATIONS = (
    # 1: records
    """
    CREATE TABLE IF NOT EXISTS records (
        id            INTEGER PRIMARY KEY,
        project       TEXT    NOT NULL,
        scope         TEXT    NOT NULL CHECK (scope IN ('user', 'project')),
        type          TEXT    NOT NULL,
        text          TEXT    NOT NULL,
        tags          TEXT    NOT NULL DEFAULT '[]',
        privacy       TEXT    NOT NULL CHECK (privacy IN ('public', 'private')),
        session       TEXT,
        events        TEXT    NOT NULL DEFAULT '[]',
        created_at    REAL    NOT NULL,
        updated_at    REAL    NOT NULL,
        superseded_by INTEGER REFERENCES records(id),
        forgotten_at  REAL,
        forget_reason TEXT
    );
    CREATE INDEX IF NOT EXISTS records_current
        ON records(project, scope, type) WHERE superseded_by IS NULL AND forgotten_at IS NULL;
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    """,
    # 2: vectors of records (one per embedding model), sessions and their event logs
    """
    CREATE TABLE IF NOT EXISTS vectors (
        model     TEXT    NOT NULL,
        record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,
        vector    BLOB    NOT NULL,
        PRIMARY KEY (model, record_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS sessions (
        id         TEXT PRIMARY KEY,
        project    TEXT NOT NULL,
        parent     TEXT,
        host       TEXT,
        started_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        ended_at   REAL,
        snapshot   TEXT
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS events (
        id      INTEGER PRIMARY KEY,
        session TEXT    NOT NULL,
        origin  TEXT    NOT NULL,
        kind    TEXT    NOT NULL,
        text    TEXT    NOT NULL,
        meta    TEXT    NOT NULL DEFAULT '{}',
        at      REAL    NOT NULL
    );
    CREATE INDEX IF NOT EXISTS events_session ON events(session, id);
    CREATE INDEX IF NOT EXISTS events_at ON events(at);
    """,
    # 3: the vectors of a record's sentences, one float32 row each after the other (empty: a
    # record of one sentence; NULL: not computed yet, filled in when searched)
    """
    ALTER TABLE vectors ADD COLUMN parts BLOB;
    """,
)
SCHEMA_VERSION = len(_MIGRATIONS)
"""``events.session`` is the root session (children's events go to their root's log) and
``events.origin`` the session that produced the event."""


def memory_path() -> Path:
    """The user's memory database (it may not exist yet)."""
    if explicit := os.environ.get("CODERECALL_MEMORY"):
        return Path(explicit).expanduser()
    return user_data_dir() / "memory.db"


class MemoryDatabase:
    """Connections to one memory database: one per thread, opened on first use, the
    schema created or migrated by whichever process opens it first."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, busy_timeout: float = BUSY_TIMEOUT
    ) -> None:
        self.path = Path(path).expanduser() if path is not None else memory_path()
        self.busy_timeout = busy_timeout
        self._unopened()
        track(self)

    def _unopened(self) -> None:
        """No connection yet: a new object, or a forked child's."""
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _after_fork(self) -> None:
        """In a forked child: the parent's connections are kept, unused and unclosed (see
        :mod:`coderecall._fork`); each thread opens its own again."""
        keep(*self._connections)
        self._unopened()

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    def conn(self) -> sqlite3.Connection:
        """This thread's connection.

        Read with ``fetchall()``: a statement left mid-way keeps a read transaction open,
        and a connection holding one cannot take the write lock later (``SQLITE_BUSY``)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def generation(self) -> str:
        """Moves on every write of any process: caches built from the database compare it."""
        rows = self.conn().execute("SELECT value FROM meta WHERE key = 'generation'").fetchall()
        return str(rows[0][0]) if rows else "0"

    @contextmanager
    def write(self, *, bump: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front (``BEGIN IMMEDIATE``) so concurrent writers
        queue on SQLite's lock instead of failing half-way. ``bump=False`` for writes that
        change nothing a cache built from the database shows (vectors of unchanged text)."""
        conn = self.conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"the memory database is busy or broken: {exc}") from exc
        try:
            yield conn
            if bump:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key)"
                    " DO UPDATE SET value = CAST(value AS INTEGER) + 1"
                )
        except sqlite3.Error as exc:  # disk full, a corrupt page: nothing half-written stays
            conn.execute("ROLLBACK")
            raise StoreError(f"could not write to the memory database: {exc}") from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:  # a deferred constraint: the transaction is still open
            conn.execute("ROLLBACK")
            raise StoreError(f"could not commit to the memory database: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()  # a database that cannot be used leaves no connection behind
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the memory database {self.path}: {exc}") from exc
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {round(self.busy_timeout * 1000)}")
        _use_wal(conn, self.busy_timeout)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")  # a forgotten text is overwritten
        version = conn.execute("PRAGMA user_version").fetchall()[0][0]
        if version < SCHEMA_VERSION:
            self._migrate(conn)
        elif version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} was written by a newer coderecall")

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        # Statement by statement inside one transaction: executescript() would commit the
        # transaction that keeps two first openers from both migrating.
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchall()[0][0]
            for script in _MIGRATIONS[version:]:
                for statement in script.split(";"):
                    if statement.strip():
                        conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def _use_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switches the database to WAL, which the file keeps. The switch fails at once, without
    the busy handler, while another connection holds the write lock of a database still in
    rollback mode: first openers of a new database met that when one was half-way through
    its own switch (about one start in a hundred with 12 threads). They retry until the busy
    timeout instead."""
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            # The message, not sqlite_errorcode: that attribute came with Python 3.11.
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
