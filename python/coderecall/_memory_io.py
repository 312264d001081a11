"""Moving a whole memory database: :func:`export_memory` writes it (records, sessions,
events) as one JSON Lines stream and :func:`import_memory` reads it back, values as stored.
:meth:`MemoryStore.export` and :meth:`MemoryStore.import_` are the same, counting records
only."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from ._errors import QueryError
from ._memory import MemoryStore, _from_dict, _record
from ._sessions import EVENT_KINDS, _reading, _when

__all__ = ["TableCounts", "export_memory", "import_memory"]


_TABLE = "table"
"""The key naming the table of a session or event line. Record lines have none (they are
:meth:`~coderecall._memory.MemoryRecord.to_dict`, as before sessions were exported, so older
exports still import); no column of records, sessions or events is called ``table``."""
_COLUMNS: dict[str, tuple[tuple[str, type, bool], ...]] = {
    "sessions": (
        ("id", str, False),
        ("project", str, False),
        ("parent", str, True),
        ("host", str, True),
        ("started_at", float, False),
        ("updated_at", float, False),
        ("ended_at", float, True),
        ("snapshot", str, True),
    ),
    "events": (
        ("id", int, False),
        ("session", str, False),
        ("origin", str, False),
        ("kind", str, False),
        ("text", str, False),
        ("meta", str, False),
        ("at", float, False),
    ),
}
"""The columns of each table exported line by line: name, JSON type, nullable. Values are
the stored ones (times as REAL floats, ``meta`` and ``snapshot`` as their JSON text), so an
import writes back the same values and bytes."""
_EXACT = "timestamps"
"""The key of a record line holding the record's stored times as floats: its ISO 8601 times
stop at the microsecond, and a float from ``time.time()`` has more digits."""
_RECORD_TIMES = ("created_at", "updated_at", "forgotten_at")
_NOUNS = {"records": "memory record", "sessions": "session", "events": "event"}


@dataclass(frozen=True, slots=True)
class TableCounts:
    """Rows of each table that :func:`export_memory` wrote or :func:`import_memory` added."""

    records: int = 0
    sessions: int = 0
    events: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def export_memory(store: MemoryStore, out: IO[str]) -> TableCounts:
    """The whole memory database of ``store`` (every project) as JSON Lines, read in one
    transaction; returns how many rows of each table were written.

    Lines come in this order, keys sorted:

    * records by id, history and tombstones included: :meth:`MemoryRecord.to_dict` plus
      ``"timestamps"``, the stored ``created_at``, ``updated_at`` and ``forgotten_at``;
    * sessions by id, then events by id: ``{"table": "sessions"|"events", column: value}``
      with every column as stored, the ``snapshot`` cache included. Sessions have no foreign
      keys (a parent may be unknown, links may form cycles), so their order is free.

    Not exported: ``vectors``, derived data the store recomputes from records at its next
    search, and ``meta``, the database's change counter.
    """
    conn = store._db.conn()
    counts = dict.fromkeys(("records", *_COLUMNS), 0)
    with _reading(conn):  # every table as of one moment, whatever writers do meanwhile
        for row in conn.execute("SELECT * FROM records ORDER BY id"):
            _write_line(out, {**_record(row).to_dict(), _EXACT: {k: row[k] for k in _RECORD_TIMES}})
            counts["records"] += 1
        for table, columns in _COLUMNS.items():
            names = ", ".join(name for name, _, _ in columns)
            for row in conn.execute(f"SELECT {names} FROM {table} ORDER BY id"):
                _write_line(out, {_TABLE: table, **dict(row)})
                counts[table] += 1
    return TableCounts(**counts)


def import_memory(store: MemoryStore, lines: Iterable[str], *, merge: bool = False) -> TableCounts:
    """Lines of :func:`export_memory` (or of older versions: records only, times to the
    microsecond) into ``store``'s database, ids and values kept, in one transaction. A row
    whose id exists already must be identical (a session's ``snapshot`` cache aside), else a
    :class:`QueryError` names the line and nothing is written. Returns the rows added.

    With ``merge``, the export joins a database that has memories of its own (another
    machine's, say): events and records get new ids where they are new, and the links
    between them (a record's source events, ``superseded_by``) follow; a row equal to a stored
    one (same text, kind and time) is not added twice, so merging the same export again adds
    nothing, and a session already stored keeps its stored row."""
    if merge:
        return _merge(store, lines)
    added = dict.fromkeys(("records", *_COLUMNS), 0)
    with store._db.write() as conn:
        conn.execute("PRAGMA defer_foreign_keys = ON")  # superseded_by may point forward
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            table, row, coarse = _parse_line(number, line)
            names = ", ".join(row)
            stored = conn.execute(
                f"SELECT {names} FROM {table} WHERE id = ?", (row["id"],)
            ).fetchall()
            if not stored:
                try:
                    _insert(conn, table, row)
                except sqlite3.IntegrityError as exc:  # what the checks above let through
                    raise QueryError(f"line {number}: {exc}") from None
                added[table] += 1
            elif _differs(table, dict(stored[0]), row, coarse):
                raise QueryError(
                    f"line {number}: {table[:-1]} {row['id']!r} differs from the stored one"
                    " (this database has memories of its own: merge the export instead, with"
                    " `coderecall memory import --merge`)"
                )
        # A dangling link would only fail at COMMIT, after the rollback had its chance.
        broken = conn.execute("PRAGMA foreign_key_check(records)").fetchall()
        if broken:
            raise QueryError(f"record {broken[0]['rowid']} is superseded by a record not imported")
    return TableCounts(**added)


_SAME_EVENT = ("session", "origin", "kind", "text", "at")
_SAME_RECORD = ("project", "scope", "type", "text", "created_at", "forgotten_at")
"""What makes an imported row the same as a stored one when merging (ids aside)."""


def _merge(store: MemoryStore, lines: Iterable[str]) -> TableCounts:
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in _NOUNS}
    for number, line in enumerate(lines, 1):
        if line.strip():
            table, row, _ = _parse_line(number, line)
            tables[table].append(row)
    added = dict.fromkeys(_NOUNS, 0)
    with store._db.write() as conn:
        for row in tables["sessions"]:
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (row["id"],)).fetchall():
                _insert(conn, "sessions", row)
                added["sessions"] += 1
        events: dict[str, str] = {}
        for row in tables["events"]:
            new_id, fresh = _merged_row(conn, "events", row, _SAME_EVENT)
            events[str(row["id"])] = str(new_id)
            added["events"] += fresh
        records: dict[int, int] = {}
        for row in tables["records"]:
            sources = [events.get(e, e) for e in json.loads(row["events"])]
            row = {**row, "events": json.dumps(sources), "superseded_by": None}
            records[row["id"]], fresh = _merged_row(conn, "records", row, _SAME_RECORD)
            added["records"] += fresh
        for row in tables["records"]:
            later = row["superseded_by"]
            if later is not None and later not in records:
                raise QueryError(f"record {row['id']} is superseded by a record not imported")
            if later is not None:
                conn.execute(
                    "UPDATE records SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL",
                    (records[later], records[row["id"]]),
                )
    return TableCounts(**added)


def _merged_row(
    conn: sqlite3.Connection, table: str, row: dict[str, Any], same: tuple[str, ...]
) -> tuple[int, bool]:
    """The id ``row`` has in the database when merged, and whether it was added for that."""
    match = " AND ".join(f"{name} IS ?" for name in same)
    found = conn.execute(
        f"SELECT id FROM {table} WHERE {match} ORDER BY id LIMIT 1", [row[n] for n in same]
    ).fetchall()
    if found:
        return int(found[0][0]), False
    return _insert(conn, table, {k: v for k, v in row.items() if k != "id"}), True


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> int:
    names, marks = ", ".join(row), ", ".join("?" * len(row))
    cursor = conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(row.values()))
    return int(cursor.lastrowid or 0)


def _write_line(out: IO[str], data: Mapping[str, Any]) -> None:
    out.write(json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n")


def _parse_line(number: int, line: str) -> tuple[str, dict[str, Any], bool]:
    """The table of an export line, its row (columns in table order) and whether the row's
    times are only to the microsecond (a record line without ``timestamps``)."""
    try:
        data = json.loads(line)
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
    except (ValueError, TypeError) as exc:
        raise QueryError(f"line {number}: not an exported memory line ({exc})") from None
    table = data.pop(_TABLE, "records")
    if not isinstance(table, str) or table not in _NOUNS:
        raise QueryError(f"line {number}: unknown table {table!r}")
    try:
        if table == "records":
            return table, *_record_row(data)
        return table, _row(table, data), False
    except KeyError as exc:
        detail = f"{exc.args[0]!r} is missing"
    # Overflow and OS errors: a time no datetime can hold.
    except (ValueError, TypeError, OverflowError, OSError) as exc:
        detail = str(exc)
    raise QueryError(f"line {number}: not an exported {_NOUNS[table]} ({detail})")


def _record_row(data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    record = _from_dict(data)
    row: dict[str, Any] = {
        "id": record.id,
        "project": record.project,
        "scope": record.scope,
        "type": record.type,
        "text": record.text,
        "tags": json.dumps(list(record.tags)),  # as the store writes them
        "privacy": record.privacy,
        "session": record.session,
        "events": json.dumps(list(record.events)),
        "created_at": record.created_at.timestamp(),
        "updated_at": record.updated_at.timestamp(),
        "superseded_by": record.superseded_by,
        "forgotten_at": record.forgotten_at.timestamp() if record.forgotten_at else None,
        "forget_reason": record.forget_reason,
    }
    exact = data.get(_EXACT)
    if exact is None:
        return row, True
    for key in _RECORD_TIMES:
        value = exact[key]
        # A hand-edited ISO time must not be silently overridden by a stale float.
        if (None if value is None else _when(value)) != getattr(record, key):
            raise ValueError(f"{_EXACT}.{key} disagrees with {key}")
        row[key] = None if value is None else float(value)
    return row, False


def _row(table: str, data: dict[str, Any]) -> dict[str, Any]:
    columns = _COLUMNS[table]
    unknown = sorted(set(data) - {name for name, _, _ in columns})
    if unknown:  # a newer schema's columns: importing without them would lose them
        raise ValueError(f"unknown columns {unknown}")
    row: dict[str, Any] = {}
    for name, kind, nullable in columns:
        if name not in data:
            raise ValueError(f"{name} is missing")
        value = data[name]
        if kind is float and type(value) is int:
            value = float(value)  # a REAL column stores 5 as 5.0 anyway
        if type(value) is not kind and not (nullable and value is None):
            raise TypeError(f"{name} must be {kind.__name__}{' or null' if nullable else ''}")
        row[name] = value
    if table == "events":
        if row["kind"] not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {row['kind']!r}")
        if not isinstance(json.loads(row["meta"]), dict):  # readers load it as a dict
            raise TypeError("meta must be a JSON object")
    return row


def _differs(table: str, stored: dict[str, Any], row: dict[str, Any], coarse: bool) -> bool:
    for name, value in row.items():
        old = stored[name]
        if table == "sessions" and name == "snapshot":
            continue  # a cache, refreshed by reads since the export: the stored one is as good
        if coarse and name in _RECORD_TIMES and old is not None:
            old = _when(old).timestamp()  # what an export without timestamps said of it
        if old != value:
            return True
    return False
