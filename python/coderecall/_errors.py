"""The one exception tree of coderecall.

Every exception coderecall raises on purpose derives from :class:`coderecall.Error`, so callers
can catch one class. The root and the storage errors are defined by the compiled core (so Rust
errors map straight onto them); the rest are raised by the Python layer. Where the meaning
matches, a class also derives from the standard exception a caller would expect::

    Error                       root; defined in the compiled core
    ├── ConfigError             also ValueError: a bad setting, naming the key and its source
    ├── QueryError              also ValueError: an empty query or a bad search argument
    ├── RootRefusedError        the folder does not look like a project (pass force=True)
    │   ├── RootNotFoundError   also FileNotFoundError: the root is missing, deleted or moved
    │   └── RootNotADirectoryError  also NotADirectoryError: the root is a file
    ├── IndexBusyError          another process holds the index's write lease (``holder``)
    ├── StoreError              the index database or its derived files failed
    │   ├── IndexCorruptError   an index file failed its integrity check; re-index to repair
    │   └── IndexDirError       also OSError: the index folder cannot be created (``errno``)
    ├── ModelError              an embedding model folder is missing, incomplete or unusable
    ├── ProviderError           a remote embedding service failed or refused a request
    │   │                       (carries ``provider`` and, when known, the HTTP ``status``)
    │   ├── ProviderAuthError          no API key, or the service rejected it
    │   ├── ProviderUnavailableError   network failure, timeout, or retries used up
    │   └── ProviderResponseError      the answer was malformed or had the wrong shape
    └── CancelledError          a long operation was cancelled; nothing was published

The file-system errors about the root and the index folder derive from the standard
:class:`OSError` subclasses too (``errno``, ``strerror``, ``filename``), so code catching
``FileNotFoundError`` keeps working.

Provider errors never contain an API key: messages are built from the provider name, the
server's host and a scrubbed excerpt of its answer, and they are raised without chaining the
HTTP library's exceptions (which hold the request and its headers).
"""

from __future__ import annotations

import errno
import os
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from ._native import CancelledError, Error, IndexCorruptError, ModelError, StoreError

__all__ = [
    "CancelledError",
    "ConfigError",
    "Error",
    "IndexBusyError",
    "IndexCorruptError",
    "IndexDirError",
    "ModelError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderResponseError",
    "ProviderUnavailableError",
    "QueryError",
    "RootNotADirectoryError",
    "RootNotFoundError",
    "RootRefusedError",
    "StoreError",
]


class ConfigError(Error, ValueError):
    """A configuration value is unknown or invalid.

    ``key`` is the setting as it was spelled and ``source`` where it came from (a file path,
    an environment variable or ``"overrides"``), so the message can point at the exact line
    to fix.
    """

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None):
        super().__init__(message)
        self.key = key
        self.source = source


class QueryError(Error, ValueError):
    """A search request cannot be run: the query is empty or an argument is out of range."""


class RootRefusedError(Error):
    """The folder is ``/``, the home directory, or has no project marker; or its path is not
    valid UTF-8.

    Indexing such a folder by accident would read a whole disk or home directory, so it needs
    ``force=True`` (``--force-root`` on the command line). A path that is not UTF-8 cannot be
    stored: nothing overrides that.
    """

    def __init__(self, message: str, *, root: Path):
        super().__init__(message)
        self.root = root


class _RootOSError(RootRefusedError, OSError):
    """A root that is no folder, which is also the standard OSError of its ``errno``:
    ``filename`` is the path as given, ``root`` the path (``filename`` by default)."""

    _errno: ClassVar[int]

    def __init__(
        self,
        message: str,
        filename: str | os.PathLike[str] | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        _os_error(self, self._errno, message, filename)
        self.root = Path(root if root is not None else filename or "")


class RootNotFoundError(_RootOSError, FileNotFoundError):
    """The root folder does not exist, or was deleted or moved away while it was watched.

    Also a ``FileNotFoundError`` (``errno`` is ``ENOENT``). ``force=True`` does not help:
    there is nothing to index.
    """

    _errno = errno.ENOENT


class RootNotADirectoryError(_RootOSError, NotADirectoryError):
    """The root is a file, not a folder. Also a ``NotADirectoryError`` (``errno`` is
    ``ENOTDIR``)."""

    _errno = errno.ENOTDIR


class IndexDirError(StoreError, OSError):
    """The folder the index lives in cannot be created or used (``index-dir`` names a path
    that cannot exist, say ``/proc/x``, or a file, or a folder without write permission).

    Also an ``OSError`` carrying the system's ``errno``, ``strerror`` and ``filename``.
    """

    def __init__(
        self, code: int, message: str, filename: str | os.PathLike[str] | None = None
    ) -> None:
        _os_error(self, code, message, filename)


def _os_error(
    error: OSError, code: int, message: str, filename: str | os.PathLike[str] | None
) -> None:
    """Sets ``errno``, ``strerror`` and ``filename`` of ``error``, as OSError does."""
    if filename is None:
        OSError.__init__(error, code, message)
    else:
        OSError.__init__(error, code, message, os.fspath(filename))


class IndexBusyError(Error):
    """Another process is writing the index and the caller chose not to wait (or not longer).

    ``holder`` describes it (process id, host, what it does, since when) as it recorded itself,
    and ``since`` is when it took the lease (``None`` if it did not say). The lease dies with
    its holder, so this never outlives a crashed writer.
    """

    def __init__(self, message: str, *, holder: str, since: datetime | None = None):
        super().__init__(message)
        self.holder = holder
        self.since = since


class ProviderError(Error):
    """A remote embedding service could not embed the texts.

    ``provider`` names the service (``"openai"``, ``"voyage"``, ...) and ``status`` is the HTTP
    status of the last answer, or ``None`` when no answer arrived. Raised as is for requests
    the service rejected (a 400 for an unknown model, say); the subclasses say more.
    """

    def __init__(self, message: str, *, provider: str, status: int | None = None):
        super().__init__(message)
        self.provider = provider
        self.status = status


class ProviderAuthError(ProviderError):
    """No API key was configured, or the service rejected it (HTTP 401 or 403).

    The message names the environment variable or setting to fix, never the key.
    """


class ProviderUnavailableError(ProviderError):
    """The service could not be reached or kept failing: a network error, a timeout, or 429
    and 5xx answers until the retries ran out."""


class ProviderResponseError(ProviderError):
    """The service answered, but not with what was asked: malformed JSON, the wrong number of
    vectors, or vectors of the wrong length."""


class WidthChangedError(ProviderResponseError):
    """A remote model answered with another width than it did before: a new model under the
    same name. Internal: the index chooses the engine again and never raises it to callers."""
