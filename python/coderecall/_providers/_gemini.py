"""Google's Gemini API (``generativelanguage.googleapis.com``), batch embedding.

``POST {base}/models/{model}:batchEmbedContents`` with the key in ``x-goog-api-key`` (never in
the URL, where it would reach logs) and ``{"requests": [{"model": "models/{model}", "content":
{"parts": [{"text"}]}, "taskType", "outputDimensionality"?}]}``; the answer is
``{"embeddings": [{"values": [...]}]}`` with no token count, so tokens are estimated. At most
100 texts per batch, 2048 tokens per text. Vectors below the full 3072 dimensions come back
unnormalised (normalising is done for every provider anyway).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar
from urllib.parse import quote

from ._base import InputKind, ModelFacts, RemoteEmbedder
from ._settings import ProviderSettings

__all__ = ["GeminiEmbedder"]


class GeminiEmbedder(RemoteEmbedder):
    default_model = "gemini-embedding-001"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    key_envs = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    max_batch_size = 100
    default_batch_tokens = 200_000
    input_token_limit = 2_000
    default_concurrency = 2
    # List prices (USD per million tokens), override with price_per_million.
    models: ClassVar[dict[str, ModelFacts]] = {
        "gemini-embedding-001": ModelFacts(3072, 0.15),
    }

    def __init__(self, settings: ProviderSettings) -> None:
        # Google's docs spell models both ways; "models/x" and "x" are the same model.
        if settings.model is not None:
            settings = dataclasses.replace(settings, model=settings.model.removeprefix("models/"))
        super().__init__(settings)
        # The code-specific query task exists for the gemini-embedding models only.
        coder = self.model.startswith("gemini-embedding")
        self._query_task = "CODE_RETRIEVAL_QUERY" if coder else "RETRIEVAL_QUERY"

    def _headers(self, key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": key} if key else {}

    def _request(self, texts: list[str], kind: InputKind) -> tuple[str, dict[str, Any]]:
        common: dict[str, Any] = {
            "model": f"models/{self.model}",
            "taskType": "RETRIEVAL_DOCUMENT" if kind == "document" else self._query_task,
        }
        if self._settings.dims is not None:
            common["outputDimensionality"] = self._settings.dims
        requests = [{**common, "content": {"parts": [{"text": text}]}} for text in texts]
        return f"/models/{quote(self.model, safe='')}:batchEmbedContents", {"requests": requests}

    def _parse(self, data: Any, count: int) -> tuple[list[Any], int | None]:
        items = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise self._malformed("no 'embeddings' list")
        if not all(isinstance(item, dict) for item in items):
            raise self._malformed("an embedding that is not an object")
        return [item.get("values") for item in items], None
