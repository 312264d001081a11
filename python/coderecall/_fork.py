"""What a forked child does with the index and memory handles it inherits.

A child must not use its parent's SQLite connections (their locks and caches are the
parent's), nor close them: closing a file drops every POSIX lock the child holds on it, those
of the connections it opened itself included. Nor can it trust a lock that one of the
parent's threads held at the moment of the fork: that thread does not exist in the child.
So in the child, every live :class:`~coderecall.CodeIndex` and memory database forgets its
handles and locks (the next call opens its files again), and the handles are kept here,
never closed, for as long as the child lives. The native index refuses calls and leaks its
connections on drop in any process but the one that opened it.

Lock files are the other way round: a ``flock`` lock belongs to the open file, which a fork
shares, so a child that kept its copy of one (a worker that lives for hours) would hold the
parent's write lease or watch mark long after the parent let go. The child closes its copies
of the lock files recorded with :func:`lock_taken` (the parent's locks stay).
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import IO, Protocol

__all__ = ["Forkable", "keep", "lock_dropped", "lock_taken", "track"]


class Forkable(Protocol):
    def _after_fork(self) -> None:
        """Called in a forked child: forget inherited handles (hand them to :func:`keep`)
        and make new locks."""


_LIVE: weakref.WeakSet[Forkable] = weakref.WeakSet()
_INHERITED: list[object] = []
_LOCKING: set[IO[bytes]] = set()


def track(owner: Forkable) -> None:
    """Have ``owner._after_fork()`` called in every child forked while it lives."""
    _LIVE.add(owner)


def keep(*handles: object) -> None:
    """Keep inherited handles referenced, so that nothing closes them in this child."""
    _INHERITED.extend(handle for handle in handles if handle is not None)


def lock_taken(handle: IO[bytes]) -> None:
    """``handle`` now holds a lock, which a child forked from here on must let go of."""
    _LOCKING.add(handle)


def lock_dropped(handle: IO[bytes]) -> None:
    """``handle`` no longer holds its lock (it is about to be closed)."""
    _LOCKING.discard(handle)


def _after_fork_in_child() -> None:
    for handle in list(_LOCKING):
        with contextlib.suppress(OSError, ValueError):
            handle.close()  # this copy only: the lock stays the parent's
    _LOCKING.clear()
    for owner in list(_LIVE):
        owner._after_fork()


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
