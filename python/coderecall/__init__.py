"""coderecall: a fast, local, always-fresh code index for AI coding agents.

>>> from coderecall import CodeIndex
>>> with CodeIndex("path/to/project") as index:
...     hits = index.search("where are tokens refreshed")
"""

from ._config import Config, load_config
from ._errors import (
    CancelledError,
    ConfigError,
    Error,
    IndexCorruptError,
    QueryError,
    RootRefusedError,
    StoreError,
)
from ._index import CodeIndex
from ._native import __version__
from ._results import IndexReport, IndexStatus, SearchHit

__all__ = [
    "CancelledError",
    "CodeIndex",
    "Config",
    "ConfigError",
    "Error",
    "IndexCorruptError",
    "IndexReport",
    "IndexStatus",
    "QueryError",
    "RootRefusedError",
    "SearchHit",
    "StoreError",
    "__version__",
    "load_config",
]

# Public objects live in private modules; present them as `coderecall.X` in reprs, tracebacks
# and docs, so the private layout can change freely.
__locals = locals()
for __name in __all__:
    if not __name.startswith("__"):
        __locals[__name].__module__ = "coderecall"
