"""Remote embedding services: OpenAI (and any server with its API), Voyage, Gemini, Ollama.

>>> settings = ProviderSettings("voyage")          # the key comes from $VOYAGE_API_KEY
>>> with make_provider(settings) as embedder:      # doctest: +SKIP
...     rows = embedder.embed_documents(["def f(): ...", "class A: ..."])
...     query = embedder.embed_query("where is f defined")
...     print(embedder.model_id, embedder.usage.cost_usd)

Each provider module holds its wire format, limits and defaults; :mod:`._base` the batching,
threads, checks and accounting that all share; :mod:`._http` the retries and rate-limit
handling; :mod:`._tokens` the token estimate that every size and cost decision uses.
Log records go to the ``coderecall.providers`` logger and never contain keys or texts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._settings import PROVIDERS, ProviderSettings
from ._tokens import estimate_tokens

if TYPE_CHECKING:
    from ._base import Estimate, RemoteEmbedder, Usage

__all__ = [
    "PROVIDERS",
    "Estimate",
    "ProviderSettings",
    "RemoteEmbedder",
    "Usage",
    "estimate_tokens",
    "make_provider",
]


def make_provider(settings: ProviderSettings) -> RemoteEmbedder:
    """The embedder for ``settings.provider``; nothing is sent until it is used.

    A missing API key is reported (as :class:`~coderecall.ProviderAuthError`) by the first
    call that would send a request, so :meth:`RemoteEmbedder.estimate` works without one.
    """
    # The wire formats load with the first provider: httpx and numpy would add about 0.1 s
    # to every process that imports coderecall, most of which never embeds remotely.
    from ._gemini import GeminiEmbedder
    from ._ollama import OllamaEmbedder
    from ._openai import OpenAICompatibleEmbedder, OpenAIEmbedder
    from ._voyage import VoyageEmbedder

    classes: dict[str, type[RemoteEmbedder]] = {
        "openai": OpenAIEmbedder,
        "openai-compatible": OpenAICompatibleEmbedder,
        "voyage": VoyageEmbedder,
        "gemini": GeminiEmbedder,
        "ollama": OllamaEmbedder,
    }
    assert set(classes) == set(PROVIDERS)
    return classes[settings.provider](settings)


def __getattr__(name: str) -> object:
    if name in ("Estimate", "RemoteEmbedder", "Usage"):
        from . import _base

        return getattr(_base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
