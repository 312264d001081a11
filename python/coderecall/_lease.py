"""File locks that the operating system releases when their holder dies.

Writers of one index (CLI runs, watchers, MCP servers, in any number of processes) take turns
through :class:`WriteLease`: an exclusive lock on ``<index>/write.lock``. The OS drops the
lock when its process exits or is killed, so a crashed writer never blocks the next one and
nothing has to guess whether a recorded holder is still alive. Readers take no lock at all:
SQLite's write-ahead log gives them a consistent snapshot while a writer works.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, NamedTuple

from ._errors import IndexBusyError, StoreError
from ._fork import lock_dropped, lock_taken

__all__ = ["LEASE_FILE", "WATCH_FILE", "WatchMark", "WriteLease", "try_lock", "watched"]

LEASE_FILE = "write.lock"
WATCH_FILE = "watch.lock"
_FIRST_POLL = 0.01
_MAX_POLL = 0.25

_log = logging.getLogger("coderecall")


def try_lock(fd: int) -> None:
    """A non-blocking exclusive lock on ``fd``; ``OSError`` when another holder has it.

    ``flock`` locks belong to the open file, so two handles in one process exclude each other
    just as two processes do.
    """
    if sys.platform == "win32":
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


class WriteLease:
    """The right to write one index, held by one handle at a time across processes."""

    def __init__(self, index_dir: Path, purpose: str = "indexing") -> None:
        self._path = index_dir / LEASE_FILE
        self._purpose = purpose

    @contextlib.contextmanager
    def hold(self, wait: bool | float = True) -> Iterator[None]:
        """Hold the lease for the ``with`` block.

        ``wait`` is ``True`` to wait as long as it takes (saying so once in the log),
        ``False`` to fail at once, or a number of seconds to wait at most. Raises
        :class:`~coderecall.IndexBusyError` naming the holder when the lease is not had, and
        :class:`~coderecall.StoreError` when the index folder is gone.
        """
        handle = self._acquire(wait)
        lock_taken(handle)
        try:
            self._describe_holder(handle)
            yield
        finally:
            lock_dropped(handle)
            with contextlib.suppress(OSError):
                handle.truncate(0)
            handle.close()  # releases the lock

    def _acquire(self, wait: bool | float) -> BinaryIO:
        deadline = None if wait is True else time.monotonic() + (0.0 if wait is False else wait)
        try:
            handle = open(self._path, "a+b")  # noqa: SIM115 (held until release)
        except (FileNotFoundError, NotADirectoryError):
            # The folder went away under an open index (its root deleted, say): a bare
            # "No such file or directory: write.lock" would not tell what happened.
            raise StoreError(
                f"the index folder {self._path.parent} was deleted or moved while in use; "
                "opening the index again rebuilds it"
            ) from None
        pause = _FIRST_POLL
        told = False
        try:
            while True:
                try:
                    try_lock(handle.fileno())
                    return handle
                except OSError:
                    pass
                if deadline is not None and time.monotonic() >= deadline:
                    waited = "" if wait is False else f" after waiting {wait:g} s"
                    holder = self._holder()
                    raise IndexBusyError(
                        f"another process is writing the index{waited}: {holder.text}",
                        holder=holder.text,
                        since=holder.since,
                    )
                if not told:
                    holder = self._holder()
                    # Turns taken within one process (a server and its own watcher) are the
                    # normal course of things, not worth a warning.
                    _log.log(
                        logging.INFO if holder.mine else logging.WARNING,
                        "waiting for another process writing the index: %s",
                        holder.text,
                    )
                    told = True
                time.sleep(pause if deadline is None else min(pause, _remaining(deadline)))
                pause = min(pause * 2, _MAX_POLL)
        except BaseException:
            handle.close()
            raise

    def _describe_holder(self, handle: BinaryIO) -> None:
        """Who holds the lease, for the message a waiting writer shows (best effort)."""
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "purpose": self._purpose,
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        with contextlib.suppress(OSError):
            handle.seek(0)
            handle.truncate(0)
            handle.write(json.dumps(record).encode())
            handle.flush()

    def _holder(self) -> _Holder:
        try:
            record = json.loads(self._path.read_bytes() or b"{}")
        except (OSError, ValueError):
            record = {}
        if not isinstance(record, dict) or "pid" not in record:
            return _Holder(f"{self._path} is locked", mine=False, since=None)
        here = record["pid"] == os.getpid() and record.get("host") == socket.gethostname()
        mine = " (this very process: another CodeIndex or watcher of the same index)"
        text = (
            f"pid {record['pid']}{mine if here else ''} on {record.get('host', '?')}, "
            f"{record.get('purpose', '?')} since {record.get('since', '?')} "
            f"(lock file {self._path})"
        )
        return _Holder(text, mine=here, since=_moment(record.get("since")))


class _Holder(NamedTuple):
    """Who holds a lease, as it recorded itself."""

    text: str
    mine: bool
    """Whether that is this very process."""
    since: datetime | None


def _moment(text: object) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return moment.replace(tzinfo=timezone.utc) if moment and not moment.tzinfo else moment


class WatchMark:
    """Says, while held, that a watcher keeps the index current, so a one-off query (a
    command-line search) needs no update of its own first.

    A shared lock on ``<index>/watch.lock``: any number of watchers hold it at once, and the
    OS drops it when a holder exits or is killed, so a dead watcher never vouches for an
    index. Not on Windows, which has no shared locks there: queries then always update.
    """

    def __init__(self, index_dir: Path) -> None:
        self._path = index_dir / WATCH_FILE
        self._handle: BinaryIO | None = None

    def hold(self) -> None:
        if sys.platform == "win32" or self._handle is not None:
            return
        import fcntl

        handle = open(self._path, "a+b")  # noqa: SIM115 (held until release)
        try:
            # Blocking: a query's probe holds the lock exclusively for an instant only.
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        except BaseException:
            handle.close()
            raise
        self._handle = handle
        lock_taken(handle)

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            lock_dropped(handle)
            handle.close()


def watched(index_dir: Path) -> bool:
    """Whether a watcher holds the :class:`WatchMark` of the index in ``index_dir``."""
    if sys.platform == "win32":
        return False
    try:
        handle = open(index_dir / WATCH_FILE, "rb")  # noqa: SIM115 (closed below)
    except OSError:
        return False  # no watcher ever marked this index
    with handle:
        try:
            try_lock(handle.fileno())
        except OSError as exc:
            # Held; or a file system without locks, where nobody can vouch for the index.
            return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
        return False  # closing the handle drops the lock just taken


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())
