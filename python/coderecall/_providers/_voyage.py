"""Voyage AI's embeddings API; ``voyage-code-3`` is trained for code retrieval.

``POST https://api.voyageai.com/v1/embeddings`` with a bearer key and ``{"input": [...],
"model", "input_type": "document" | "query", "truncation": true, "output_dimension"?}``; the
answer has OpenAI's shape with ``usage.total_tokens``. Limits for voyage-code-3: 1000 inputs
and 120k tokens per request, 32k tokens per input.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._base import InputKind, ModelFacts, RemoteEmbedder

__all__ = ["VoyageEmbedder"]


class VoyageEmbedder(RemoteEmbedder):
    default_model = "voyage-code-3"
    default_base_url = "https://api.voyageai.com/v1"
    key_envs = ("VOYAGE_API_KEY",)
    max_batch_size = 1000
    default_batch_tokens = 100_000
    input_token_limit = 30_000
    default_concurrency = 2
    # List prices (USD per million tokens), override with price_per_million.
    models: ClassVar[dict[str, ModelFacts]] = {
        "voyage-code-3": ModelFacts(1024, 0.18),
        "voyage-3-large": ModelFacts(1024, 0.18),
        "voyage-3.5": ModelFacts(1024, 0.06),
        "voyage-3.5-lite": ModelFacts(1024, 0.02),
    }

    def _request(self, texts: list[str], kind: InputKind) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "input": texts,
            "model": self.model,
            "input_type": kind,
            "truncation": True,
        }
        if self._settings.dims is not None:
            body["output_dimension"] = self._settings.dims
        return "/embeddings", body

    def _parse(self, data: Any, count: int) -> tuple[list[Any], int | None]:
        return self._parse_data_list(data)
