"""coderecall: a fast, local, always-fresh code index for AI coding agents.

>>> from coderecall import CodeIndex
>>> with CodeIndex("path/to/project") as index:
...     hits = index.search("where are tokens refreshed")
"""

import importlib
from typing import TYPE_CHECKING

from ._errors import (
    CancelledError,
    ConfigError,
    Error,
    IndexBusyError,
    IndexCorruptError,
    IndexDirError,
    ModelError,
    ProviderAuthError,
    ProviderError,
    ProviderResponseError,
    ProviderUnavailableError,
    QueryError,
    RootNotADirectoryError,
    RootNotFoundError,
    RootRefusedError,
    StoreError,
)
from ._native import Embedder, __version__

if TYPE_CHECKING:
    from ._config import Config, load_config
    from ._context import ContextPack, Evidence
    from ._graph import CallEdge, CallGraphResult, CallPath, Definition
    from ._hub import pull_model
    from ._index import CodeIndex
    from ._kb import KnowledgeBase
    from ._learn import LearnSummary, learn_model
    from ._memory import MemoryHit, MemoryRecord, MemoryStore, WriteResult
    from ._memory_context import MemoryBlock
    from ._models import ModelInfo, distill_model, list_models, load_embedder, models_dir
    from ._results import (
        EmbeddingEstimate,
        HealthReport,
        IndexMetrics,
        IndexReport,
        IndexStatus,
        SearchHit,
    )
    from ._sessions import SessionEvent, SessionInfo, Sessions
    from ._watch import Watcher

__all__ = [
    "CallEdge",
    "CallGraphResult",
    "CallPath",
    "CancelledError",
    "CodeIndex",
    "Config",
    "ConfigError",
    "ContextPack",
    "Definition",
    "Embedder",
    "EmbeddingEstimate",
    "Error",
    "Evidence",
    "HealthReport",
    "IndexBusyError",
    "IndexCorruptError",
    "IndexDirError",
    "IndexMetrics",
    "IndexReport",
    "IndexStatus",
    "KnowledgeBase",
    "LearnSummary",
    "MemoryBlock",
    "MemoryHit",
    "MemoryRecord",
    "MemoryStore",
    "ModelError",
    "ModelInfo",
    "ProviderAuthError",
    "ProviderError",
    "ProviderResponseError",
    "ProviderUnavailableError",
    "QueryError",
    "RootNotADirectoryError",
    "RootNotFoundError",
    "RootRefusedError",
    "SearchHit",
    "SessionEvent",
    "SessionInfo",
    "Sessions",
    "StoreError",
    "Watcher",
    "WriteResult",
    "__version__",
    "distill_model",
    "learn_model",
    "list_models",
    "load_config",
    "load_embedder",
    "models_dir",
    "pull_model",
]

# Where each public object not imported above lives. They load on first use: a lifecycle hook
# runs as a new process on every tool call, and importing the whole package (the code index,
# configuration, model hub, watcher) would cost it more than its own work.
_LAZY = {
    "CallEdge": "_graph",
    "CallGraphResult": "_graph",
    "CallPath": "_graph",
    "CodeIndex": "_index",
    "Config": "_config",
    "ContextPack": "_context",
    "Definition": "_graph",
    "EmbeddingEstimate": "_results",
    "Evidence": "_context",
    "HealthReport": "_results",
    "IndexMetrics": "_results",
    "IndexReport": "_results",
    "IndexStatus": "_results",
    "KnowledgeBase": "_kb",
    "LearnSummary": "_learn",
    "MemoryBlock": "_memory_context",
    "MemoryHit": "_memory",
    "MemoryRecord": "_memory",
    "MemoryStore": "_memory",
    "ModelInfo": "_models",
    "SearchHit": "_results",
    "SessionEvent": "_sessions",
    "SessionInfo": "_sessions",
    "Sessions": "_sessions",
    "Watcher": "_watch",
    "WriteResult": "_memory",
    "distill_model": "_models",
    "learn_model": "_learn",
    "list_models": "_models",
    "load_config": "_config",
    "load_embedder": "_models",
    "models_dir": "_models",
    "pull_model": "_hub",
}

# Public objects live in private modules; present them as `coderecall.X` in reprs, tracebacks
# and docs, so the private layout can change freely.
for __name in __all__:
    if not __name.startswith("__") and __name not in _LAZY:
        globals()[__name].__module__ = "coderecall"


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    value.__module__ = "coderecall"
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
