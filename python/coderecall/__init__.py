"""coderecall: a fast, local, always-fresh code index for AI coding agents.

>>> from coderecall import CodeIndex
>>> with CodeIndex("path/to/project") as index:
...     hits = index.search("where are tokens refreshed")
"""

from typing import TYPE_CHECKING

from ._config import Config, load_config
from ._context import ContextPack, Evidence
from ._errors import (
    CancelledError,
    ConfigError,
    Error,
    IndexBusyError,
    IndexCorruptError,
    ModelError,
    ProviderAuthError,
    ProviderError,
    ProviderResponseError,
    ProviderUnavailableError,
    QueryError,
    RootRefusedError,
    StoreError,
)
from ._graph import CallEdge, CallGraphResult, CallPath, Definition
from ._hub import pull_model
from ._index import CodeIndex
from ._kb import KnowledgeBase
from ._learn import LearnSummary, learn_model
from ._memory import MemoryHit, MemoryRecord, MemoryStore, WriteResult
from ._memory_context import MemoryBlock
from ._models import ModelInfo, distill_model, list_models, load_embedder, models_dir
from ._native import Embedder, __version__
from ._results import (
    EmbeddingEstimate,
    HealthReport,
    IndexMetrics,
    IndexReport,
    IndexStatus,
    SearchHit,
)
from ._sessions import SessionEvent, SessionInfo, Sessions

if TYPE_CHECKING:
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

# Public objects live in private modules; present them as `coderecall.X` in reprs, tracebacks
# and docs, so the private layout can change freely.
__locals = locals()
for __name in __all__:
    if not __name.startswith("__") and __name in __locals:
        __locals[__name].__module__ = "coderecall"


def __getattr__(name: str) -> object:
    # watchdog loads only for those who watch (CodeIndex.watch imports it the same way).
    if name == "Watcher":
        from ._watch import Watcher

        Watcher.__module__ = "coderecall"
        return Watcher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
