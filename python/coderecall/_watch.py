"""Keeping an index current while files change: :class:`Watcher`, behind
:meth:`CodeIndex.watch() <coderecall.CodeIndex.watch>` and ``coderecall watch``.

Why it works the way it does:

* Editors, formatters and git write in bursts: one save is several events, a rebase or a
  formatter touches thousands of files. An event only marks its path as pending; one update
  runs once no event has come for the debounce time, so a burst costs one update. A stream
  that never pauses (a build writing all the time) is flushed every ``_MAX_DELAY_FACTOR``
  debounces at the latest, so it cannot starve the index.
* A few changed files are indexed on their own, ``index(paths=...)``: re-walking the whole
  tree for one saved file would cost more than the change itself.
* A full ``index()`` runs instead when the view switches (``HEAD`` or the branch it names
  moves: checkout, rebase, reset, commit; other branches, tags and remote refs never touch
  the tree), when the rules change (a ``.gitignore``,
  ``info/exclude``), when a folder is deleted or moved (its files' events may not all
  come), when a burst is large, and after a failed update. Its stat walk is cheap, and it
  is the truth whatever events were missed.
* Ignored paths never cause work. Git internals and the index's own folder are dropped as
  their events arrive (the index writes there on every update, which would otherwise loop);
  ignore rules are applied to the pending paths when they are flushed, with one
  :class:`~coderecall._collect.PathSorter` per batch, so a ``.gitignore`` edited a moment
  ago is already in force. A batch left with nothing the index could hold runs no update.
* Updates run one at a time on one thread, and events arriving meanwhile wait for the next
  one; each update takes the write lease without blocking, so another process writing the
  index delays the watcher without ever making :meth:`Watcher.stop` wait for it.
* When the system runs out of inotify watches or instances, watching falls back to
  polling, with a warning saying so and how to raise the limit. A look at a large tree costs
  a lot (0.35 s of CPU for 10,000 files), so polling waits in proportion to what its last
  look cost: a background server must not keep a core busy. Watchdog 7 raises that
  error for the root alone and swallows it for the folders below, so after starting, its
  watch table is compared with the folders it was to watch, and later with each folder made
  while watching (before the update of its burst, which is then a full one). Polling uses
  ``lstat`` (a symlink to a parent folder must not make the tree endless) and skips ignored
  folders, git internals that cannot switch the view, and the index's own folder. When the
  kernel's event queue overflows (a flood of events, mostly under ``.git/objects`` during
  a rebase), events are lost: watchdog 6 and later log that, and the next update is then a
  full one.
* A change of permissions or times alone counts as a change: a file unreadable when an
  update ran, and readable again, must come back.
* A root deleted or moved away (or replaced by another folder) leaves nothing to watch:
  events cannot say so reliably (no event comes when a parent folder moves), so the root's
  identity is checked before each update and every ``_ROOT_CHECK`` seconds while quiet, and
  the watcher then stops with an error (:attr:`Watcher.error`, raised by
  :meth:`Watcher.wait`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import posixpath
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import watchdog.events
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserverVFS

from ._collect import PathSorter
from ._errors import CancelledError, IndexBusyError, RootNotFoundError
from ._lease import WatchMark
from ._paths import find_git
from ._results import IndexReport

if TYPE_CHECKING:
    from ._index import CodeIndex

__all__ = ["Watcher"]

_log = logging.getLogger("coderecall")
_T = TypeVar("_T")

_FULL_THRESHOLD = 2_000
"""Relevant paths in one batch above which a full walk replaces the targeted update."""
_PENDING_CAP = 100_000
"""Pending paths kept at most (memory stays bounded); beyond, the next update is full."""
_MAX_DELAY_FACTOR = 10
_MIN_MAX_DELAY = 2.0
"""A batch waits at most ``max(_MIN_MAX_DELAY, _MAX_DELAY_FACTOR * debounce)`` seconds."""
_BUSY_RETRY = 0.25
"""Seconds between attempts while another process holds the write lease."""
_STOP_TIMEOUT = 2.0
"""Longest :meth:`Watcher.stop` waits for a running update to be cancelled."""
_CANCEL_POLL = 0.02
_ROOT_CHECK = 1.0
"""Seconds between checks, while no event comes, that the root is still there."""
_WATCH_CHECKS = 3
_WATCH_SETTLE = 0.1
"""Looks at the watch table after start, and seconds between them: a folder made meanwhile
gets its watch only once its event is read."""
_GIT_POLLED = frozenset({"HEAD", "packed-refs", "info", "refs", "reftable"})
"""What polling looks at in a git directory: what can switch the view or the rules."""
_OUT_OF_WATCHES = frozenset({errno.ENOSPC, errno.EMFILE, errno.ENFILE})
_POLL_IDLE_SHARE = 9
_POLL_MAX_WAIT = 60.0
"""Polling waits at least ``_POLL_IDLE_SHARE`` times as long as its last snapshot took (so
it keeps at most a tenth of one core busy, however large the tree), at most this long."""
_WATCHDOG_LOGGER = "watchdog.observers"

# Opening and reading files (which indexing does to every file it reads) must not count:
# only what changes content, names or the tree's shape.
_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    # chmod, chown, touch: watchdog 7 reports them apart (older versions as modifications).
    *(
        getattr(watchdog.events, name)
        for name in ("FileAttribEvent", "DirAttribEvent")
        if hasattr(watchdog.events, name)
    ),
]
_KINDS = frozenset({"created", "modified", "deleted", "moved", "closed", "attrib"})


class _Handler(FileSystemEventHandler):
    """Hands every event to the watcher, which sorts them itself."""

    def __init__(self, sink: Callable[[FileSystemEvent], None]) -> None:
        super().__init__()
        self._sink = sink

    def dispatch(self, event: FileSystemEvent) -> None:
        self._sink(event)


class _LostEvents(logging.Handler):
    """Watchdog tells event handlers nothing when the kernel dropped events (its inotify
    queue overflowed); it only logs it, so its log is the signal."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self._on_lost = on_lost

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self._on_lost()


class _GitDir:
    """One git directory and the files in it whose change switches the view or the rules:
    ``names``, everything under ``reftable/`` (which cannot tell one ref from another), and,
    with ``refs``, the branch that ``head`` (this worktree's ``HEAD`` file) names."""

    __slots__ = ("head", "names", "prefix", "refs")

    def __init__(self, path: str, names: frozenset[str], *, refs: bool, head: str) -> None:
        self.prefix = path.rstrip(os.sep) + os.sep
        self.names = names
        self.refs = refs
        self.head = head

    def switches(self, relative: str) -> bool:
        if relative in self.names or relative.startswith("reftable/"):
            return True
        return self.refs and relative.startswith("refs/") and relative == self._branch()

    def _branch(self) -> str | None:
        """The ref ``HEAD`` names (``refs/heads/main``); ``None`` when detached. Read at
        each ref event, since HEAD moves too."""
        try:
            with open(self.head, encoding="utf-8") as file:
                text = file.read(4096)
        except (OSError, UnicodeDecodeError):
            return None
        return text.removeprefix("ref:").strip() if text.startswith("ref:") else None


class Watcher:
    """Keeps one :class:`~coderecall.CodeIndex` current while files change.

    Made by :meth:`CodeIndex.watch() <coderecall.CodeIndex.watch>` (already started), or
    directly and then :meth:`start`-ed. It indexes everything once, then runs one update per
    burst of changes in a background thread until :meth:`stop` (or the end of a ``with``
    block). ``debounce`` is the quiet time in seconds a burst must end with (default: the
    ``watch-debounce`` setting); ``on_update`` gets the report of every update, and
    ``on_error`` every exception an update raised (it is logged too, and watching goes on).
    Both are called on the watcher's thread.

    ``force_polling`` polls every ``poll_interval`` seconds instead of using the operating
    system's notifications, which is also what happens, with a warning, when those run out.

    When the root is deleted or moved away, watching stops on its own: :attr:`error` is then
    a :class:`~coderecall.RootNotFoundError` (also a ``FileNotFoundError``) saying so,
    ``on_error`` gets it, and :meth:`wait` raises it.
    """

    def __init__(
        self,
        index: CodeIndex,
        *,
        debounce: float | None = None,
        on_update: Callable[[IndexReport], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        force_polling: bool = False,
        poll_interval: float = 1.0,
    ) -> None:
        debounce = index.config.watch_debounce if debounce is None else debounce
        if not 0 <= debounce < float("inf"):
            raise ValueError(f"debounce must be at least 0 seconds, got {debounce}")
        if not 0 < poll_interval < float("inf"):
            raise ValueError(f"poll_interval must be positive, got {poll_interval}")
        self._index = index
        self._debounce = float(debounce)
        self._max_delay = max(_MIN_MAX_DELAY, _MAX_DELAY_FACTOR * self._debounce)
        self._on_update = on_update
        self._on_error = on_error
        self._force_polling = force_polling
        self._poll_interval = poll_interval

        self._root = str(index.root)
        self._root_prefix = self._root.rstrip(os.sep) + os.sep
        own = str(index.index_dir)
        self._own = tuple(
            {os.path.abspath(own).rstrip(os.sep), os.path.realpath(own).rstrip(os.sep)}
        )
        self._git_dirs, self._git_watches = self._git_layout()
        self._root_id: tuple[int, int] | None = None
        self._poll_sorter: PathSorter | None = None
        self._poll_resumed: float | None = None  # when the latest snapshot began

        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._gone: set[str] = set()
        self._full = True  # the first update brings the index up to date
        self._redo_full = False
        self._first_event: float | None = None
        self._last_event = float("-inf")
        self._busy = False
        self._started = False
        self._stopping = False
        self._busy_logged = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._observer: BaseObserver | None = None
        self._mark = WatchMark(index.index_dir)
        self._lost = _LostEvents(lambda: self._note([], [], full=True))
        self._polling = False
        self._made: set[bytes] = set()  # folders made while watched, not checked yet
        self._updates = 0
        self._last_report: IndexReport | None = None
        self._last_flush_started: float | None = None

    def __repr__(self) -> str:
        state = "stopped" if self._stopping else "running" if self._started else "new"
        how = "polling" if self._polling else "notified"
        return f"Watcher(root={self._root!r}, {state}, {how}, updates={self._updates})"

    @property
    def debounce(self) -> float:
        """Seconds without events that end a burst."""
        return self._debounce

    @property
    def polling(self) -> bool:
        """Whether the tree is polled rather than watched through OS notifications."""
        return self._polling

    @property
    def updates(self) -> int:
        """Updates run so far, the first full one included."""
        return self._updates

    @property
    def last_report(self) -> IndexReport | None:
        """The report of the latest update."""
        return self._last_report

    @property
    def error(self) -> BaseException | None:
        """The error that ended the watching on its own (the root deleted or moved), if one
        did; a failed update is not one (watching goes on after it)."""
        return self._error

    @property
    def last_flush_started(self) -> float | None:
        """When the latest update's burst was over (``time.perf_counter()``): the moment
        from which its latency counts."""
        return self._last_flush_started

    def start(self) -> Watcher:
        """Starts watching, then indexing in the background; returns the watcher.

        Raises ``OSError`` if the root cannot be watched at all (polling included), and
        ``RuntimeError`` once stopped: a watcher runs once.
        """
        with self._cond:
            if self._stopping:
                raise RuntimeError("this watcher was stopped; make a new one")
            if self._started:
                return self
            self._started = True
        try:
            root = os.stat(self._root)
            self._root_id = (root.st_dev, root.st_ino)
            self._observer = self._start_observer()
        except BaseException:
            with self._cond:
                self._started = False
            raise
        try:  # queries from other processes can rely on us from now on
            self._index._ensure_index_dir()
            self._mark.hold()
        except OSError as exc:  # a file system without locks: they catch up themselves
            _log.info("watch: cannot mark the index as watched: %s", exc)
        logging.getLogger(_WATCHDOG_LOGGER).addHandler(self._lost)
        self._thread = threading.Thread(target=self._run, name="coderecall-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops watching; a running update is cancelled (nothing half-done is published).

        Returns within a fraction of a second; idempotent.
        """
        with self._cond:
            self._stopping = True
            self._mark.release()
            self._cond.notify_all()
        observer, thread = self._observer, self._thread
        if observer is not None:
            observer.stop()
        deadline = time.monotonic() + _STOP_TIMEOUT
        if thread is not None and thread is not threading.current_thread():
            while thread.is_alive() and time.monotonic() < deadline:
                if self._busy:
                    self._index._cancel()
                thread.join(_CANCEL_POLL)
            if thread.is_alive():
                _log.debug("watch: the update did not stop in time; left to finish alone")
        if observer is not None and observer.is_alive():
            observer.join(max(0.0, deadline - time.monotonic()))
        logging.getLogger(_WATCHDOG_LOGGER).removeHandler(self._lost)

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until watching ends; ``False`` on timeout.

        Raises the error that ended it on its own (see :attr:`error`); returns ``True`` once
        :meth:`stop` was called. A watcher never started raises ``RuntimeError``.
        """
        with self._cond:
            if not self._started and not self._stopping:
                raise RuntimeError("the watcher was never started: call start() first")
            if not self._cond.wait_for(lambda: self._stopping, timeout):
                return False
            if self._error is not None:
                raise self._error
            return True

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Waits until no change is pending and no update runs; ``False`` on timeout.

        Events still on their way from the operating system are not known yet: after
        writing files, wait at least the debounce time (plus the poll interval when
        polling) before relying on this. A watcher never started raises ``RuntimeError``:
        it would never become idle.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            if not self._started and not self._stopping:
                raise RuntimeError("the watcher was never started: call start() first")
            while not self._idle():
                if self._stopping:
                    return False
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def _idle(self) -> bool:
        return self._started and not (self._busy or self._pending or self._full)

    # Watching: runs on the observer's thread, so it only files paths away.

    def _git_layout(self) -> tuple[tuple[_GitDir, ...], list[tuple[str, bool]]]:
        """The git directories to judge events in, most specific first, and the extra
        watches they need (those outside the root, which the root's watch does not cover).
        """
        git = find_git(self._index.root)
        if git is None:
            return (), []
        own, common = str(git.git_dir), str(git.common_dir)
        head = os.path.join(own, "HEAD")
        shared = frozenset({"packed-refs", "info/exclude"})
        dirs: tuple[_GitDir, ...]
        if own == common:
            dirs = (_GitDir(own, shared | {"HEAD"}, refs=True, head=head),)
        else:  # a linked worktree: its HEAD is its own, the branches are shared
            dirs = (
                _GitDir(own, frozenset({"HEAD"}), refs=False, head=head),
                _GitDir(common, shared, refs=True, head=head),
            )
        watches = [(own, False)]
        if own != common:
            watches.append((common, False))
        for folder, recursive in (("refs/heads", True), ("info", False), ("reftable", False)):
            path = os.path.join(common, folder)
            if os.path.isdir(path):
                watches.append((path, recursive))
        outside = [(path, recursive) for path, recursive in watches if not self._inside(path)]
        return dirs, outside

    def _inside(self, path: str) -> bool:
        return path == self._root or path.startswith(self._root_prefix)

    def _start_observer(self) -> BaseObserver:
        if not self._force_polling:
            observer: BaseObserver | None = None
            try:
                observer = Observer()
                self._schedule(observer)
                observer.start()
                self._check_watches(observer)
                return observer
            except OSError as exc:
                _discard(observer)
                if exc.errno not in _OUT_OF_WATCHES:
                    raise
                self._warn_polling(exc.strerror or str(exc))
        observer = self._polling_observer()
        self._polling = True
        return observer

    def _polling_observer(self) -> BaseObserver:
        observer = PollingObserverVFS(os.lstat, self._polled, polling_interval=self._poll_interval)
        self._schedule(observer)
        observer.start()
        return observer

    def _warn_polling(self, why: str) -> None:
        _log.warning(
            "watching %s by polling every %g s (less often if the tree is so large that this "
            "would take more than a tenth of a core): the system is out of file watches (%s); "
            "raising fs.inotify.max_user_watches / max_user_instances (sysctl) lets it "
            "watch natively",
            self._root,
            self._poll_interval,
            why,
        )

    def _poll_instead(self) -> None:
        """Replaces the inotify observer by polling (on the worker thread): a folder made
        while watching got no watch, so the limit was reached since the start, and edits
        below it would go unseen."""
        observer = self._polling_observer()
        with self._cond:
            stopping = self._stopping
            old = self._observer
            if not stopping:
                self._observer, self._polling = observer, True
        if stopping:  # stop() may have taken the old observer: this one is ours to end
            _discard(observer)
        _discard(old)

    def _check_watches(self, observer: BaseObserver) -> None:
        """Raises ``ENOSPC`` when folders the observer was to watch got no inotify watch."""
        for attempt in range(_WATCH_CHECKS):
            missing = _unwatched(observer)
            if not missing:
                return
            if attempt + 1 < _WATCH_CHECKS:
                time.sleep(_WATCH_SETTLE)
        raise OSError(
            errno.ENOSPC, f"inotify watch limit reached: {len(missing)} folders got no watch"
        )

    def _polled(self, folder: str | None) -> Iterator[os.DirEntry[str]]:
        """The entries of ``folder`` that polling looks at (its snapshots call this for
        every folder they enter): not the index's own folder, nor ignored folders, nor what
        in a git directory cannot switch the view."""
        assert folder is not None
        if folder == self._root:  # a new snapshot
            self._pause_polling()
        with os.scandir(folder) as listing:
            entries = list(listing)
        if any(folder + os.sep == git_dir.prefix for git_dir in self._git_dirs):
            return iter([entry for entry in entries if entry.name in _GIT_POLLED])
        if folder == self._root:  # the ignore rules as they are now
            self._poll_sorter = PathSorter(self._index.root, self._index.config)
        kept = []
        for entry in entries:
            if entry.path in self._own:
                continue
            if (
                self._poll_sorter is not None
                and entry.path.startswith(self._root_prefix)
                and entry.is_dir(follow_symlinks=False)
                and not any(entry.path + os.sep == git.prefix for git in self._git_dirs)
            ):
                relative = entry.path[len(self._root_prefix) :].replace(os.sep, "/")
                if self._poll_sorter.ignores(relative + "/"):
                    continue
            kept.append(entry)
        return iter(kept)

    def _pause_polling(self) -> None:
        """Before a snapshot: waits on top of the poll interval, as long as the last
        snapshot and its comparison took (see :func:`poll_wait`); at once when stopping."""
        if self._poll_resumed is not None:
            busy = time.monotonic() - self._poll_resumed - self._poll_interval
            extra = poll_wait(busy, self._poll_interval) - self._poll_interval
            if extra > 0:
                with self._cond:
                    self._cond.wait_for(lambda: self._stopping, extra)
        self._poll_resumed = time.monotonic()

    def _schedule(self, observer: BaseObserver) -> None:
        handler = _Handler(self._on_event)
        observer.schedule(handler, self._root, recursive=True, event_filter=_EVENTS)
        for path, recursive in self._git_watches:
            observer.schedule(handler, path, recursive=recursive, event_filter=_EVENTS)

    def _on_event(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind not in _KINDS or (event.is_directory and kind in ("modified", "closed")):
            return
        found: list[str] = []
        switch = False
        for raw in (event.src_path, event.dest_path):
            if not raw:
                continue
            judged = self._judge(os.fsdecode(raw))
            if judged is True:
                switch = True
            elif isinstance(judged, str):
                found.append(f"{judged}/" if event.is_directory else judged)
        if switch or found:
            # A folder deleted or moved away: the events of its files may not all come.
            gone = found if event.is_directory and kind in ("deleted", "moved") else []
            self._note(found, gone, full=switch)
        if kind == "created" and event.is_directory and found and not self._polling:
            with self._cond:
                self._made.add(os.fsencode(event.src_path))

    def _unwatched_made(self) -> bool:
        """Whether a folder made while watching got no watch: watchdog adds them quietly, and
        out of watches says nothing. Checked on the worker thread once the burst has settled
        (a folder made inside a new one is watched when its own event is read)."""
        with self._cond:
            made, self._made = self._made, set()
        observer = self._observer
        if self._polling or observer is None:
            return False
        for folder in sorted(made):
            if os.path.isdir(folder) and _unwatched(observer, folder):
                self._warn_polling(f"no watch for the new folder {os.fsdecode(folder)}")
                return True
        return False

    def _judge(self, path: str) -> str | bool | None:
        """The root-relative path an event marks as pending; ``True`` for a git file whose
        change calls for a full update (and for the root itself: the update checks it is
        still there); ``None`` for what never matters."""
        if path == self._root:
            return True
        for own in self._own:
            if path == own or path.startswith(own + os.sep):
                return None
        for git_dir in self._git_dirs:
            if path.startswith(git_dir.prefix):
                relative = path[len(git_dir.prefix) :].replace(os.sep, "/")
                return git_dir.switches(relative) or None
        if not path.startswith(self._root_prefix):
            return None
        relative = path[len(self._root_prefix) :].replace(os.sep, "/")
        if f"/{relative}/".find("/.git/") >= 0:
            return None  # a nested repository's internals, or a worktree's .git file
        return relative

    def _note(self, paths: list[str], gone: list[str], *, full: bool) -> None:
        """Files paths away as pending (folders end with ``/``; ``gone`` are folders deleted
        or moved away), or asks for a full update."""
        with self._cond:
            if self._stopping:
                return
            was_quiet = not (self._pending or self._full)
            self._full = self._full or full
            self._pending.update(paths)
            self._gone.update(gone)
            if len(self._pending) > _PENDING_CAP:
                self._pending.clear()
                self._gone.clear()
                self._full = True
            now = time.monotonic()
            self._last_event = now
            if was_quiet:
                self._first_event = now
                self._cond.notify_all()  # the worker waits without a timeout only when quiet

    # Updating: runs on the watcher's own thread, one update at a time.

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            paths, gone, full, ended = batch
            if self._unwatched_made():
                self._poll_instead()
                full = True  # what changed below it until now went unseen
            self._flush(paths, gone, full, ended)

    def _next_batch(self) -> tuple[set[str], set[str], bool, float] | None:
        """Waits for a burst to end; returns its paths, the folders among them that went
        away, whether the update must be full, and when the burst ended. ``None`` once
        stopping."""
        with self._cond:
            self._busy = False
            self._cond.notify_all()
            while True:
                if self._stopping:
                    return None
                if not (self._pending or self._full):
                    if not self._cond.wait(_ROOT_CHECK):
                        return set(), set(), False, 0.0  # quiet: time to check the root
                    continue
                now = time.monotonic()
                first = now if self._first_event is None else self._first_event
                due = min(self._last_event + self._debounce, first + self._max_delay)
                if now < due:
                    self._cond.wait(due - now)
                    continue
                paths, gone, full = self._pending, self._gone, self._full or self._redo_full
                self._pending, self._gone, self._full, self._redo_full = set(), set(), False, False
                self._first_event = None
                self._busy = True
                return paths, gone, full, time.perf_counter()

    def _flush(self, paths: set[str], gone: set[str], full: bool, ended: float) -> None:
        if self._root_lost():
            return
        if not (paths or full):
            return
        try:
            targets = None if full else self._sift(paths, gone)
            if (targets is not None and not targets) or self._stopping:
                return  # only ignored paths: nothing the index holds can have changed
            report = self._index.index(progress=False, wait=False, paths=targets)
        except IndexBusyError as exc:
            self._retry_later(paths, gone, full, exc)
            return
        except CancelledError as exc:
            if not self._stopping:  # someone else cancelled: a failure like any other
                self._failed(exc)
            return
        except Exception as exc:
            if not self._root_lost():  # else its files and index went with it: no failure
                self._failed(exc)
            return
        self._busy_logged = False
        with self._cond:
            if not self._stopping:
                with contextlib.suppress(OSError):
                    self._mark.hold()  # again, after a failure
            self._updates += 1
            self._last_report = report
            self._last_flush_started = ended
        self._call(self._on_update, report)

    def _sift(self, paths: set[str], gone: set[str]) -> list[str] | None:
        """The pending paths that matter (a new folder stands for what it holds), or ``None``
        when only a full update will do."""
        sorter = PathSorter(self._index.root, self._index.config)
        relevant = sorted(path for path in paths if not sorter.ignores(path))
        if len(relevant) > _FULL_THRESHOLD or any(
            path in gone or posixpath.basename(path) == ".gitignore" for path in relevant
        ):
            return None
        return [path.rstrip("/") for path in relevant]

    def _retry_later(
        self, paths: set[str], gone: set[str], full: bool, exc: IndexBusyError
    ) -> None:
        """Another process is writing the index: the batch waits for the next attempt."""
        if not self._busy_logged:
            _log.warning("watch: waiting for another process writing the index: %s", exc.holder)
            self._busy_logged = True
        with self._cond:
            self._pending |= paths
            self._gone |= gone
            self._full = self._full or full
            if self._first_event is None:
                self._first_event = time.monotonic()
            self._cond.wait_for(lambda: self._stopping, _BUSY_RETRY)

    def _root_lost(self) -> bool:
        """Whether the root was deleted or moved away (or replaced); if so, ends the
        watching with an error saying so."""
        try:
            root = os.stat(self._root)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError:
            return False  # unreadable for a moment, say: the next check tells
        else:
            if (root.st_dev, root.st_ino) == self._root_id:
                return False
        exc = RootNotFoundError(
            f"the root {self._root} was deleted or moved; watching stopped",
            root=self._root,
        )
        # Not logged as an error: the caller gets it (on_error, error, wait), and the
        # command line prints it once.
        _log.info("watch: %s", exc.strerror)
        with self._cond:
            self._error = exc
        self._call(self._on_error, exc)
        self.stop()
        return True

    def _failed(self, exc: Exception) -> None:
        """An update failed: say so, and make the next one (at the next change) full, since
        what was published is unknown."""
        _log.error("watch: updating the index failed: %s (watching goes on)", exc)
        with self._cond:
            # Until an update succeeds, queries from other processes catch up themselves.
            self._mark.release()
            self._redo_full = True
        self._call(self._on_error, exc)

    def _call(self, callback: Callable[[_T], object] | None, argument: _T) -> None:
        if callback is None:
            return
        try:
            callback(argument)
        except Exception:  # a broken callback must not end the watching
            _log.exception("watch: the %s callback failed", getattr(callback, "__name__", "?"))


def poll_wait(snapshot: float, interval: float) -> float:
    """Seconds between two snapshots of a polled tree whose last snapshot took ``snapshot``
    seconds: the poll interval, or longer for a tree so large that polling it that often
    would keep a core busy."""
    return max(interval, min(_POLL_MAX_WAIT, _POLL_IDLE_SHARE * snapshot))


def _unwatched(observer: BaseObserver, below: bytes | None = None) -> list[bytes]:
    """The folders an inotify observer was to watch and holds no watch for (readable ones:
    an unreadable folder cannot be watched whatever the limits); with ``below``, only that
    folder and those inside it.

    Watchdog keeps no public record of them, so this reads its watch table: watchdog 7's
    ``InotifyWatchGroup``, or the ``Inotify`` of older versions. Another observer (another
    system, an unknown watchdog) has neither, and nothing is reported missing.
    """
    missing: list[bytes] = []
    for emitter in observer.emitters:
        group = getattr(emitter, "_inotify", None)
        table = getattr(group, "_active_callbacks_by_path", None)  # watchdog 7
        if table is None:
            table = getattr(getattr(group, "_inotify", None), "_wd_for_path", None)
        if not isinstance(table, dict):
            continue
        top = os.fsencode(emitter.watch.path)
        if below is not None:
            if not (below == top or below.startswith(top.rstrip(b"/") + b"/")):
                continue
            if below != top and not emitter.watch.is_recursive:
                continue
            top = below
        expected = [top]
        if emitter.watch.is_recursive:  # what watchdog walks: os.walk, symlinks left out
            for parent, folders, _ in os.walk(top):
                expected += [os.path.join(parent, name) for name in folders]
        missing += [
            path
            for path in expected
            if path not in table and not os.path.islink(path) and os.access(path, os.R_OK)
        ]
    return missing


def _discard(observer: BaseObserver | None) -> None:
    """Releases an observer that failed to start (its inotify descriptor, its threads)."""
    if observer is None:
        return
    with contextlib.suppress(OSError, RuntimeError):
        observer.stop()
        if observer.is_alive():
            observer.join(_STOP_TIMEOUT)
