"""The one exception tree of coderecall.

Every exception coderecall raises on purpose derives from :class:`coderecall.Error`, so callers
can catch one class. The root and the storage errors are defined by the compiled core (so Rust
errors map straight onto them); the rest are raised by the Python layer. Where the meaning
matches, a class also derives from the standard exception a caller would expect::

    Error                       root; defined in the compiled core
    ├── ConfigError             also ValueError: a bad setting, naming the key and its source
    ├── QueryError              also ValueError: an empty query or a bad search argument
    ├── RootRefusedError        the folder does not look like a project (pass force=True)
    ├── StoreError              the index database or its derived files failed
    │   └── IndexCorruptError   an index file failed its integrity check; re-index to repair
    ├── ModelError              an embedding model folder is missing, incomplete or unusable
    └── CancelledError          a long operation was cancelled; nothing was published

File-system problems outside the index (a missing root, say) surface as the standard
:class:`OSError` subclasses.
"""

from __future__ import annotations

from pathlib import Path

from ._native import CancelledError, Error, IndexCorruptError, ModelError, StoreError

__all__ = [
    "CancelledError",
    "ConfigError",
    "Error",
    "IndexCorruptError",
    "ModelError",
    "QueryError",
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
    """The folder is ``/``, the home directory, or has no project marker.

    Indexing such a folder by accident would read a whole disk or home directory, so it needs
    ``force=True`` (``--force-root`` on the command line).
    """

    def __init__(self, message: str, *, root: Path):
        super().__init__(message)
        self.root = root
