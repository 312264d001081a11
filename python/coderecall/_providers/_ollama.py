"""A local (or self-hosted) Ollama server.

``POST {base}/api/embed`` with ``{"model", "input": [...], "truncate": true, "dimensions"?}``;
the answer is ``{"embeddings": [[...]], "prompt_eval_count"?}``. No key unless a proxy in front
asks for one (then a bearer token from api_key / api_key_env). Ollama has no input types, but
the nomic-embed models expect the task prefixes of their model card, so they get them.
"""

from __future__ import annotations

from typing import Any

from ._base import InputKind, RemoteEmbedder, count_field

__all__ = ["OllamaEmbedder"]

_NOMIC_PREFIX = {"document": "search_document: ", "query": "search_query: "}


class OllamaEmbedder(RemoteEmbedder):
    default_model = "nomic-embed-text"
    default_base_url = "http://127.0.0.1:11434"
    key_envs = ()
    key_required = False
    # No API limit; modest batches keep one slow request from holding much work.
    max_batch_size = 2048
    default_batch_size = 64
    default_batch_tokens = 64_000
    input_token_limit = 8_000
    default_concurrency = 2
    names_server = True
    unreachable_hint = "is Ollama running (`ollama serve`), and is embedding.base-url its address?"

    def _prepare(self, text: str, kind: InputKind) -> str:
        if self.model.startswith("nomic-embed"):
            return _NOMIC_PREFIX[kind] + text
        return text

    def _request(self, texts: list[str], kind: InputKind) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "truncate": True}
        if self._settings.dims is not None:
            body["dimensions"] = self._settings.dims
        return "/api/embed", body

    def _parse(self, data: Any, count: int) -> tuple[list[Any], int | None]:
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list):
            raise self._malformed("no 'embeddings' list")
        return vectors, count_field(data, "prompt_eval_count")
