"""The index log: what the indexer did recently (runs, errors, watcher events), kept on disk.

:func:`attach_file_log` makes the ``coderecall`` logger also write INFO and above to
``<index_dir>/logs/coderecall.log``, one JSON object a line (wrapped here)::

    {"time": "2025-01-31T12:00:00.123Z", "level": "INFO", "pid": 4242,
     "logger": "coderecall", "message": "indexed 12 files"}

:func:`read_logs` reads them back, newest last, for the ``index_logs`` tool and for people.

The file rotates at :data:`MAX_BYTES` and keeps :data:`BACKUP_COUNT` older files
(``coderecall.log.1`` is the newest of those). Every process that works on an index (CLI
runs, watchers, MCP servers) appends to the same file: it is opened with ``O_APPEND`` and each
line goes out in one ``write``, so lines of different processes do not mix. Rotation is not
coordinated between processes: when two of them rotate around the same moment, a few lines
land out of order or in a smaller file, and the oldest backup may go early. That is accepted
for a diagnostic log; :func:`read_logs` skips whatever it cannot parse and never raises.
"""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import os
import re
import threading
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict, cast

__all__ = [
    "BACKUP_COUNT",
    "LOG_DIR",
    "LOG_FILE",
    "MAX_BYTES",
    "LogEntry",
    "attach_file_log",
    "detach_all_file_logs",
    "detach_file_log",
    "read_logs",
]

LOG_DIR = "logs"
"""Folder of the log inside an index folder."""
LOG_FILE = "coderecall.log"
MAX_BYTES = 1 << 20
"""Size at which the log rotates (read when a log is attached)."""
BACKUP_COUNT = 3
"""Rotated files kept besides the current one (read when a log is attached)."""

_LOGGER = "coderecall"
_LINE_BUFFER = 1 << 20
"""Write buffer of the log file: a line up to this size leaves in a single ``write``."""
_RECORD_START = b'{"time": '
_BACKUP = re.compile(re.escape(LOG_FILE) + r"\.(\d+)")

_log = logging.getLogger(_LOGGER)


class LogEntry(TypedDict):
    """One record of the index log."""

    time: str
    """When, ISO 8601 in UTC with milliseconds (``2025-01-31T12:00:00.123Z``)."""
    level: str
    """``DEBUG``, ``INFO``, ``WARNING``, ``ERROR`` or ``CRITICAL``."""
    pid: int
    """The process that wrote it."""
    logger: str
    """``coderecall`` or one of its children (``coderecall.providers``)."""
    message: str
    """The message, with the traceback when one was logged."""


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            message = f"{message}\n{record.exc_text}"
        if record.stack_info:
            message = f"{message}\n{self.formatStack(record.stack_info)}"
        entry: LogEntry = {
            "time": _utc_iso(record.created),
            "level": record.levelname,
            "pid": record.process or os.getpid(),
            "logger": record.name,
            "message": message,
        }
        return json.dumps(entry, ensure_ascii=False)


class _FileHandler(logging.handlers.RotatingFileHandler):
    def _open(self) -> io.TextIOWrapper:
        # A large buffer, flushed after every record: one `write` per line, which O_APPEND
        # places whole at the end even while other processes append.
        stream = open(  # noqa: SIM115  (the handler owns and closes it)
            self.baseFilename,
            self.mode,
            buffering=_LINE_BUFFER,
            encoding=self.encoding,
            errors=self.errors,
        )
        return cast(io.TextIOWrapper, stream)  # text mode: always a TextIOWrapper


_lock = threading.Lock()
_handlers: dict[str, _FileHandler] = {}
_saved_level: int | None = None
"""The ``coderecall`` logger's own level before the first attach lowered it."""


def attach_file_log(index_dir: Path) -> None:
    """Write the ``coderecall`` logger's INFO and above to ``<index_dir>/logs/coderecall.log``.

    Once per index folder and process; later calls do nothing. ``index_dir`` must exist. When
    the log cannot be created (a read-only index folder) nothing is attached and the reason is
    logged at DEBUG. The logger's level is lowered to INFO if it was higher; other handlers
    are left alone, so a console handler at WARNING stays as quiet as it was. INFO records do
    reach handlers of parent loggers that let everything through (``propagate``).
    """
    global _saved_level
    key = os.path.abspath(index_dir)
    with _lock:
        if key in _handlers:
            return
        folder = Path(key) / LOG_DIR
        try:
            folder.mkdir(exist_ok=True)
            handler = _FileHandler(
                folder / LOG_FILE,
                maxBytes=MAX_BYTES,
                backupCount=BACKUP_COUNT,
                encoding="utf-8",
                # A lone surrogate in a message is written as its JSON escape, not refused.
                errors="backslashreplace",
            )
        except OSError as exc:
            _log.debug("no index log in %s: %s", folder, exc)
            return
        handler.setLevel(logging.INFO)
        handler.setFormatter(_JsonFormatter())
        logger = logging.getLogger(_LOGGER)
        if logger.getEffectiveLevel() > logging.INFO:
            if _saved_level is None:
                _saved_level = logger.level
            logger.setLevel(logging.INFO)
        logger.addHandler(handler)
        _handlers[key] = handler


def detach_file_log(index_dir: Path) -> bool:
    """Stop writing the log of ``index_dir`` and close its file; whether one was written.
    Restores the logger's level when the last log goes (unless someone else changed it
    meanwhile)."""
    global _saved_level
    with _lock:
        handler = _handlers.pop(os.path.abspath(index_dir), None)
        if handler is None:
            return False
        logger = logging.getLogger(_LOGGER)
        logger.removeHandler(handler)
        handler.close()
        if not _handlers and _saved_level is not None:
            if logger.level == logging.INFO:
                logger.setLevel(_saved_level)
            _saved_level = None
    return True


def detach_all_file_logs() -> None:
    """Detach every file log this process attached (the CLI, when its command ends)."""
    with _lock:
        folders = list(_handlers)
    for folder in folders:
        detach_file_log(Path(folder))


def read_logs(
    index_dir: Path,
    limit: int = 100,
    level: str | None = None,
    since: datetime | None = None,
    contains: str | None = None,
) -> list[LogEntry]:
    """The last ``limit`` entries of the index log that pass the filters, newest last.

    ``level`` is a minimum (``"warning"`` gives WARNING, ERROR and CRITICAL); an unknown name
    raises ``ValueError``. ``since`` keeps entries at or after that moment (a naive datetime
    is local time, as ``datetime.now()`` gives). ``contains`` keeps messages that contain it,
    ignoring case. Reads the rotated files too. Lines that do not parse (cut short by a
    killed process, damaged) are skipped; a missing log is an empty list.
    """
    if limit <= 0:
        return []
    minimum = _level_number(level) if level is not None else None
    if level is not None and minimum is None:
        raise ValueError(
            f"unknown log level {level!r}; use debug, info, warning, error or critical"
        )
    after = since.astimezone(timezone.utc) if since is not None else None
    needle = contains.casefold() if contains else None
    entries: deque[LogEntry] = deque(maxlen=limit)
    for path in _log_files(Path(index_dir) / LOG_DIR):
        try:
            data = path.read_bytes()
        except OSError:  # rotated away since the listing, or unreadable
            continue
        for line in data.split(b"\n"):
            entry = _parse(line)
            if entry is None:
                continue
            if minimum is not None and (_level_number(entry["level"]) or 0) < minimum:
                continue
            if after is not None:
                moment = _parse_time(entry["time"])
                if moment is None or moment < after:
                    continue
            if needle is not None and needle not in entry["message"].casefold():
                continue
            entries.append(entry)
    return list(entries)


def _log_files(folder: Path) -> list[Path]:
    """The log's files, oldest first: the backups from the highest number down, then the
    current file."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    backups = sorted((int(match[1]), name) for name in names if (match := _BACKUP.fullmatch(name)))
    files = [folder / name for _, name in reversed(backups)]
    if LOG_FILE in names:
        files.append(folder / LOG_FILE)
    return files


def _parse(line: bytes) -> LogEntry | None:
    line = line.strip()
    if not line:
        return None
    entry = _decode(line)
    if entry is None:
        # A writer killed mid-line leaves a fragment that the next line is appended to: the
        # fragment is lost, the complete record after it is not.
        start = line.rfind(_RECORD_START)
        if start > 0:
            entry = _decode(line[start:])
    return entry


def _decode(line: bytes) -> LogEntry | None:
    try:
        value = json.loads(line)
    except ValueError:  # includes UnicodeDecodeError
        return None
    if not isinstance(value, dict):
        return None
    time, level, pid = value.get("time"), value.get("level"), value.get("pid")
    logger, message = value.get("logger"), value.get("message")
    if not (
        isinstance(time, str)
        and isinstance(level, str)
        and isinstance(pid, int)
        and not isinstance(pid, bool)
        and isinstance(logger, str)
        and isinstance(message, str)
        and _parse_time(time) is not None
    ):
        return None
    return {"time": time, "level": level, "pid": pid, "logger": logger, "message": message}


def _utc_iso(created: float) -> str:
    moment = datetime.fromtimestamp(created, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def _level_number(name: str) -> int | None:
    """``"warning"`` -> 30; also ``WARN``, ``"30"`` and ``Level 25`` (unnamed levels)."""
    text = name.strip().upper()
    if text.isdigit():
        return int(text)
    if text.startswith("LEVEL ") and text[6:].isdigit():
        return int(text[6:])
    number = logging.getLevelName(text)
    return number if isinstance(number, int) else None
