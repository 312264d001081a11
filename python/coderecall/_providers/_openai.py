"""OpenAI's embeddings API, and any server that speaks it (vLLM, LM Studio, LiteLLM, ...).

``POST {base}/embeddings`` with a bearer key and ``{"model", "input": [...],
"encoding_format": "float", "dimensions"?}``. The API has no query/document distinction.
Limits: 2048 inputs and 300k tokens per request, 8191 tokens per input.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._base import InputKind, ModelFacts, RemoteEmbedder

__all__ = ["OpenAICompatibleEmbedder", "OpenAIEmbedder"]


class OpenAIEmbedder(RemoteEmbedder):
    default_model: ClassVar[str | None] = "text-embedding-3-small"
    default_base_url: ClassVar[str | None] = "https://api.openai.com/v1"
    key_envs: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    max_batch_size = 2048
    default_batch_tokens = 250_000
    input_token_limit = 8_000
    default_concurrency = 4
    # List prices (USD per million tokens), override with price_per_million.
    models: ClassVar[dict[str, ModelFacts]] = {
        "text-embedding-3-small": ModelFacts(1536, 0.02),
        "text-embedding-3-large": ModelFacts(3072, 0.13),
        "text-embedding-ada-002": ModelFacts(1536, 0.10),
    }

    def _request(self, texts: list[str], kind: InputKind) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._settings.dims is not None:
            body["dimensions"] = self._settings.dims
        return "/embeddings", body

    def _parse(self, data: Any, count: int) -> tuple[list[Any], int | None]:
        return self._parse_data_list(data)


class OpenAICompatibleEmbedder(OpenAIEmbedder):
    """A self-hosted or third-party server with OpenAI's wire format.

    Nothing is assumed: base_url and model are required, the key is optional and read only from
    api_key or api_key_env (never OPENAI_API_KEY, which must not travel to another server),
    the width is learnt from the first answer and the price is zero unless configured.
    """

    default_model = None
    default_base_url = None
    key_envs = ()
    key_required = False
    default_concurrency = 2
    models: ClassVar[dict[str, ModelFacts]] = {}
    names_server = True
