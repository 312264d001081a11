"""Local embedding models: where they live, what they are, loading and distilling them.

A model is a folder. A *transformer* has ``config.json`` (a BERT-family config),
``tokenizer.json`` and ``model.safetensors``; a *static* model (the Model2Vec format) has
``tokenizer.json`` and ``model.safetensors`` holding an ``embeddings`` table, and a
``config.json`` whose ``model_type`` is ``model2vec``. Models named without a path are looked up
in the user's model cache: ``$CODERECALL_MODELS``, else ``$XDG_CACHE_HOME/coderecall/models``,
else ``~/.cache/coderecall/models``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ._collect import collect
from ._config import load_config
from ._dirs import user_cache_dir
from ._errors import ModelError
from ._native import Embedder, model_recipe
from ._native import distill as _distill

__all__ = [
    "ModelInfo",
    "distill_model",
    "find_model",
    "list_models",
    "load_embedder",
    "models_dir",
]

ModelKind = Literal["transformer", "static"]

_REQUIRED = ("tokenizer.json", "model.safetensors")

_PIECE_LINES = 20
"""Lines tokenized together when counting (about 200 tokens of code, under any model's limit)."""

_MIN_DIMS = 8
"""Fewest dimensions ``model distill`` builds: a table narrower than that tells texts apart too
poorly to rank them (at 1 every vector is +1 or -1)."""

_CORPUS_BYTES = 64 << 20
"""Text read from a corpus to count token frequencies: far more than the counts need."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model folder: its name (the folder's), kind, vector length when known, and size; for
    a transformer, how it pools and prompts where that departs from mean pooling without
    prompts (:attr:`Embedder.recipe`), or why the engine cannot run it."""

    name: str
    path: Path
    kind: ModelKind
    dims: int | None
    bytes: int
    recipe: str = ""
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "kind": self.kind,
            "dims": self.dims,
            "bytes": self.bytes,
            "recipe": self.recipe,
            "problem": self.problem,
        }


def models_dir() -> Path:
    """The user's model cache (it may not exist yet)."""
    if explicit := os.environ.get("CODERECALL_MODELS"):
        return Path(explicit).expanduser()
    return user_cache_dir() / "models"


def describe(path: Path) -> ModelInfo:
    """What the model in ``path`` is; :class:`ModelError` if it is not a model folder."""
    if not path.is_dir():
        raise ModelError(f"{path}: no such model folder")
    missing = [name for name in _REQUIRED if not (path / name).is_file()]
    if missing:
        raise ModelError(f"{path}: not a model folder ({', '.join(missing)} missing)")
    config: dict[str, Any] = {}
    config_file = path / "config.json"
    if config_file.is_file():
        try:
            loaded = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelError(f"{config_file}: {exc}") from None
        config = loaded if isinstance(loaded, dict) else {}
    recipe, problem = "", None
    if config.get("model_type") == "model2vec" or not config_file.is_file():
        kind: ModelKind = "static"
        dims = config.get("hidden_dim")
    else:
        kind = "transformer"
        dims = config.get("hidden_size")
        try:
            recipe = model_recipe(path)
        except ModelError as exc:
            problem = str(exc)
    size = sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())
    return ModelInfo(
        name=path.name,
        path=path,
        kind=kind,
        dims=dims if isinstance(dims, int) else None,
        bytes=size,
        recipe=recipe,
        problem=problem,
    )


def list_models(directory: Path | None = None) -> list[ModelInfo]:
    """The models in the cache (or ``directory``), by name; folders that are not models are
    left out."""
    root = models_dir() if directory is None else directory
    if not root.is_dir():
        return []
    found = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and not entry.name.startswith("."):
            try:
                found.append(describe(entry))
            except ModelError:
                continue
    return found


def find_model(name_or_path: str | os.PathLike[str]) -> Path:
    """A model folder from a path, or a name in the model cache."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    cached = models_dir() / str(name_or_path)
    if not os.path.isabs(name_or_path) and cached.is_dir():
        return cached
    raise ModelError(
        f"no model {str(name_or_path)!r}: not a folder, and not in the model cache {models_dir()}"
    )


def load_embedder(name_or_path: str | os.PathLike[str], *, max_tokens: int = 256) -> Embedder:
    """Loads a transformer or a static model, whichever the folder holds."""
    info = describe(find_model(name_or_path))
    if info.kind == "static":
        return Embedder.static_model(info.path)
    return Embedder.transformer(info.path, max_tokens)


def distill_model(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str] | None = None,
    *,
    dims: int = 256,
    corpus: str | os.PathLike[str] | None = None,
    learn: int = 0,
    progress: Callable[[int, int], object] | None = None,
) -> ModelInfo:
    """Builds a static model from a transformer, offline (see ``coderecall model distill``).

    ``destination`` defaults to ``<source name>-static-<dims>`` in the model cache. With
    ``corpus`` (a project folder), tokens are weighted by how often they occur in its files
    instead of by their rank in the vocabulary: on the quality benchmark that lifted the
    hybrid doc-to-code NDCG@10 of the distilled MiniLM from 0.275 to 0.368. With ``learn``,
    the transformer also embeds that many of the corpus's chunks and the table is fitted to
    them (see ``learn_model``); ``progress`` then follows that step too.
    """
    src = find_model(source)
    info = describe(src)
    if info.kind != "transformer":
        raise ModelError(f"{src}: distilling needs a transformer model, this one is static")
    if dims < _MIN_DIMS:
        raise ModelError(f"dims must be at least {_MIN_DIMS}, got {dims}")
    if info.dims is not None and dims > info.dims:
        raise ModelError(f"dims must be at most {info.dims}, the width of {src.name}; got {dims}")
    if learn < 0 or (learn and corpus is None):
        raise ModelError("learning needs a corpus and a positive number of chunks")
    dst = new_model_folder(destination, f"{src.name}-static-{dims}")
    texts = None
    if corpus is not None and learn:
        from ._learn import learning_texts  # it indexes the corpus; the index imports us

        texts = learning_texts(corpus, learn)  # too few fail before minutes of distilling
    frequencies = None if corpus is None else token_frequencies(src, Path(corpus))
    dst.parent.mkdir(parents=True, exist_ok=True)
    if texts is None:
        _distill(src, dst, dims, progress, frequencies)
        return describe(dst)
    from ._learn import fit_learned

    staging = dst.with_name(f".{dst.name}.distilled-{os.getpid()}")
    try:
        _distill(src, staging, dims, progress, frequencies)
        info, _ = fit_learned(staging, src, dst, texts, progress)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return info


def new_model_folder(destination: str | os.PathLike[str] | None, default_name: str) -> Path:
    """Where a new model goes: ``destination``, else ``default_name`` in the model cache; never
    over an existing folder."""
    dst = models_dir() / default_name if destination is None else Path(destination).expanduser()
    if dst.exists():
        raise ModelError(f"{dst} already exists; remove it or choose another destination")
    return dst


def token_frequencies(model: Path, corpus: Path, max_bytes: int = _CORPUS_BYTES) -> list[float]:
    """Occurrences of each token id of ``model``'s tokenizer in the text files of ``corpus``
    (its ignore rules honoured), read up to ``max_bytes``."""
    if not corpus.is_dir():
        raise ModelError(f"{corpus}: the corpus must be a folder")
    tokenizer = Embedder.transformer(model, max_tokens=1 << 20)
    found = collect(corpus, load_config(corpus))
    counts: list[float] = []
    texts: list[str] = []
    budget = max_bytes

    def count() -> None:
        for ids in tokenizer.tokenize(texts):
            for token in ids:
                if token >= len(counts):
                    counts.extend([0.0] * (token + 1 - len(counts)))
                counts[token] += 1.0
        texts.clear()

    for relative in sorted(found.files):
        if budget <= 0:
            break
        try:
            text = (corpus / relative).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        budget -= len(text)
        # The tokenizer cuts inputs at the model's length: count in pieces well below it.
        lines = text.splitlines(keepends=True)
        for start in range(0, len(lines), _PIECE_LINES):
            texts.append("".join(lines[start : start + _PIECE_LINES]))
        if len(texts) >= 256:
            count()
    count()
    if not any(counts):
        raise ModelError(f"{corpus}: no readable text to count tokens in")
    return counts
