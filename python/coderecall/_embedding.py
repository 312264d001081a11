"""Which engine computes the semantic channel's vectors, and what the index calls it.

Selection follows ``embedding.provider`` (see :mod:`coderecall._config`). Local engines run
in-process; remote providers are reached only when configured by name, so code never leaves
the machine by default. Each choice carries a *model id* under which the index stores its
vectors: two models never share an id, so their vectors never mix, and switching back to a
model finds its vectors still there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._config import Config
from ._errors import ConfigError, ModelError
from ._models import ModelInfo, describe, find_model, list_models, models_dir
from ._native import Embedder
from ._providers import ProviderSettings, make_provider

if TYPE_CHECKING:
    from ._providers import RemoteEmbedder

__all__ = ["EmbeddingChoice", "local_model_id", "select_embedding"]

SUGGESTED_MODEL = "minishlab/potion-base-8M"
"""A small published static model: what the lexical-only notice suggests pulling."""

_LOCAL = ("static", "transformer")

_SAMPLE_BYTES = 1 << 16


@dataclass(frozen=True, slots=True)
class EmbeddingChoice:
    """The engine of the semantic channel, or why there is none."""

    provider: str
    """``static``, ``transformer``, a remote provider's name, or ``none``."""
    model: str | None
    """The model: a folder name for a local model, the API's model id for a remote one."""
    model_id: str | None
    """Name of the model's vectors in the index (``None`` without a model)."""
    embedder: Embedder | None = field(default=None, repr=False)
    remote: RemoteEmbedder | None = field(default=None, repr=False)
    notice: str | None = None
    """Said once when ``auto`` found no model: how to enable semantic search."""

    @property
    def enabled(self) -> bool:
        return self.embedder is not None

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()


def select_embedding(
    config: Config, *, recorded: Mapping[str, object] | None = None, probe: bool = True
) -> EmbeddingChoice:
    """The engine ``config`` asks for, loaded; :class:`ModelError` or :class:`ConfigError`
    when the asked-for model cannot be had. ``recorded`` is what the index noted of the
    model it last used: when that is this remote model, its width spares a probe request.
    Without ``probe`` a remote model of unknown width gets no engine (an estimate needs
    none)."""
    provider = config.embedding_provider
    if provider == "none":
        return EmbeddingChoice("none", None, None)
    if provider in ("auto", *_LOCAL):
        return _local_choice(config, provider)
    remote = _remote(config)
    hint = (recorded or {}).get("dims")
    if remote.known_dims is None and isinstance(hint, int) and hint > 0:
        # The width recorded for this very model is only expected, never sent (a server may
        # refuse `dimensions`): a search trusts it, an index run checks it (confirm_dims), so
        # a model that changed width under its name gets a new model id and is re-embedded.
        hinted = _remote(config, expected_dims=hint)
        if hinted.model_id == (recorded or {}).get("model_id"):
            remote.close()
            remote = hinted
        else:
            hinted.close()
    if not probe and remote.known_dims is None:
        return EmbeddingChoice(provider, remote.model, None, remote=remote)
    try:
        if probe:
            remote.confirm_dims()
        embedder = Embedder.delegate(remote, remote.dims)
    except BaseException:
        remote.close()
        raise
    return EmbeddingChoice(
        provider, remote.model, remote.model_id, embedder=embedder, remote=remote
    )


def _remote(config: Config, *, expected_dims: int | None = None) -> RemoteEmbedder:
    # What the user left unset keeps the settings' defaults.
    tuning: dict[str, Any] = {
        "max_retries": config.embedding_max_retries,
        "read_timeout": config.embedding_read_timeout,
        "connect_timeout": config.embedding_connect_timeout,
        "backoff_max": config.embedding_backoff_max,
    }
    return make_provider(
        ProviderSettings(
            provider=config.embedding_provider,
            model=config.embedding_model,
            base_url=config.embedding_base_url,
            api_key=config.embedding_api_key,
            api_key_env=config.embedding_api_key_env,
            dims=config.embedding_dims,
            expected_dims=expected_dims,
            input_token_limit=config.embedding_input_token_limit,
            batch_size=config.embedding_batch_size,
            concurrency=config.embedding_concurrency,
            **{name: value for name, value in tuning.items() if value is not None},
        )
    )


def _local_choice(config: Config, provider: str) -> EmbeddingChoice:
    """The configured local model (its failure to load is the caller's error), else the
    first of the cache's models of ``provider``'s kind that loads: a model in the cache that
    cannot run (a pooling the engine lacks, a truncated download) must not take semantic
    search, or every index and search, down with it while another one would serve."""
    if config.embedding_model is not None:
        info = describe(find_model(config.embedding_model))
        if provider in _LOCAL and info.kind != provider:
            raise ConfigError(
                f"embedding.model {config.embedding_model!r} is a {info.kind} model but "
                f"embedding.provider is {provider!r}",
                key="embedding.model",
            )
        return _load(config, info)
    cached = list_models()
    unusable: list[str] = []
    for kind in _LOCAL:  # static first: the fast engine
        for info in cached:
            if info.kind != kind or provider not in ("auto", kind):
                continue
            try:
                if info.problem is not None:
                    raise ModelError(info.problem)
                return _load(config, info)
            except ModelError as exc:
                unusable.append(f"{info.name} ({exc})")
    if provider == "auto":
        return EmbeddingChoice("none", None, None, notice=_lexical_only_notice(unusable))
    found = f"; none of them loads: {'; '.join(unusable)}" if unusable else ""
    raise ModelError(
        f"embedding.provider is {provider!r} but no {provider} model is configured "
        f"(embedding.model) or in the model cache {models_dir()}{found}; "
        f"`coderecall model pull MODEL_ID` downloads one"
    )


def _load(config: Config, info: ModelInfo) -> EmbeddingChoice:
    if info.kind == "static":
        embedder = Embedder.static_model(info.path)
    else:
        embedder = Embedder.transformer(
            info.path,
            config.embedding_max_tokens,
            query_prompt=config.embedding_query_prompt,
            document_prompt=config.embedding_document_prompt,
        )
    return EmbeddingChoice(
        info.kind,
        info.name,
        local_model_id(info, embedder.dims, embedder.recipe),
        embedder=embedder,
    )


def local_model_id(info: ModelInfo, dims: int, recipe: str = "") -> str:
    """``kind:name:dims:fingerprint``. The fingerprint covers the config, the tokenizer's
    size and the weights' size, head and tail, so a folder whose files were replaced by
    another model's gets another id without hashing gigabytes; and ``recipe``
    (:attr:`Embedder.recipe`: pooling and prompts other than the default), so vectors
    pooled or prompted otherwise never mix with a model's earlier ones."""
    digest = hashlib.sha256()
    if recipe:
        digest.update(f"recipe:{recipe};".encode())
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        path = info.path / name
        if not path.is_file():
            continue
        size = path.stat().st_size
        digest.update(f"{name}:{size};".encode())
        with path.open("rb") as handle:
            if name == "config.json":
                digest.update(handle.read())
            elif name == "model.safetensors":
                digest.update(handle.read(_SAMPLE_BYTES))
                handle.seek(max(size - _SAMPLE_BYTES, 0))
                digest.update(handle.read(_SAMPLE_BYTES))
    return f"{info.kind}:{info.name}:{dims}:{digest.hexdigest()[:12]}"


def _lexical_only_notice(unusable: list[str]) -> str:
    if unusable:
        return (
            f"semantic search is off: no model in {models_dir()} loads "
            f"({'; '.join(unusable)}). `coderecall model pull {SUGGESTED_MODEL}` downloads a "
            'small local model; set embedding.provider = "none" to silence this notice'
        )
    return (
        f"semantic search is off: no embedding model in {models_dir()}. "
        f"`coderecall model pull {SUGGESTED_MODEL}` downloads a small local model "
        "(or `coderecall model distill FOLDER` builds one from a transformer); "
        'set embedding.provider = "none" to silence this notice'
    )
