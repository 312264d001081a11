"""Fitting a static model to a transformer on the user's own code (``model distill --learn``).

A static model distilled from a transformer embeds every token alone; averaged over a chunk,
those rows say less than the transformer says of the whole chunk. ``learn_model`` samples the
chunks of a project (as the index cuts them) and the first sentences of their comments, has the
transformer embed them, and refits the static table so the mean of each text's rows comes as
close as it can to the transformer's vector (``coderecall._native.learn``: least squares in
Rust). The transformer runs once, over the sample; the result is as fast as any static model.
"""

from __future__ import annotations

import json
import os
import random
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from ._errors import ModelError
from ._index import CodeIndex
from ._models import ModelInfo, describe, find_model, new_model_folder
from ._native import learn as _learn

__all__ = [
    "MIN_TEXTS",
    "LearnSummary",
    "corpus_texts",
    "fit_learned",
    "learn_model",
    "learned_summary",
    "learning_texts",
]

DEFAULT_SAMPLES = 600
"""Chunks the transformer embeds: about two minutes on two cores; on the quality benchmark
600 per project lifted the static channel alone from 0.447 to 0.515 doc-to-code NDCG@10."""

MIN_TEXTS = 50
"""Fewest texts a fit takes: the core holds every tenth text out to check the refit against
the aligned base only from 50 texts on (below, the refit would be trusted unchecked, and on a
handful of texts it only learns those)."""

_COMMENT = re.compile(r"^\s*(?:///?|//!|#+|\*+|/\*+|--|\"\"\"|''')\s?(.*)$")
_COMMENT_CLOSE = re.compile(r"\s*(?:\*+/|\"\"\"|''')\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_SENTENCE_WORDS = (6, 40)


class LearnSummary(TypedDict):
    """How a fit went: texts learned from and held out, the mean cosine with the teacher on the
    held-out texts before (the base table only aligned) and after the refit, and the ridge
    those texts chose (``None``: no refit beat the aligned base, which was kept)."""

    texts: int
    held_out: int
    tokens: int
    cosine_before: float
    cosine_after: float
    ridge: float | None


def comment_sentence(text: str) -> str | None:
    """The first sentence of the first comment block of a chunk, if it reads like prose: the
    natural-language side of a codebase, which is what search queries look like."""
    run: list[str] = []
    for line in text.splitlines():
        match = _COMMENT.match(line)
        body = _COMMENT_CLOSE.sub("", match.group(1)).strip() if match else ""
        if body:
            run.append(body)
        elif run:
            break
    sentence = _SENTENCE_END.split(" ".join(run), maxsplit=1)[0]
    words = sentence.split()
    low, high = _SENTENCE_WORDS
    if low <= len(words) <= high and sum(w.isalpha() for w in words) * 2 >= len(words):
        return sentence
    return None


def corpus_texts(corpus: str | os.PathLike[str], samples: int, *, seed: int = 0) -> list[str]:
    """Up to ``samples`` chunk texts of ``corpus`` (indexed into a temporary folder, with its
    ignore rules), drawn at random with ``seed``, followed by their comments' first sentences."""
    root = Path(corpus).expanduser()
    if not root.is_dir():
        raise ModelError(f"{root}: the corpus must be a folder")
    with tempfile.TemporaryDirectory(prefix="coderecall-learn-") as scratch:
        config = {"index_dir": scratch, "embedding": {"provider": "none"}}
        with CodeIndex(root, config, force=True) as index:
            index.index(progress=False)
            chunks = index._open().pending_texts("learn")
    if not chunks:
        raise ModelError(f"{root}: no chunk to learn from")
    picked = random.Random(seed).sample(chunks, min(samples, len(chunks)))
    sentences = [s for s in map(comment_sentence, picked) if s is not None]
    return picked + sentences


def learn_model(
    base: str | os.PathLike[str],
    teacher: str | os.PathLike[str],
    destination: str | os.PathLike[str] | None = None,
    *,
    corpus: str | os.PathLike[str],
    samples: int = DEFAULT_SAMPLES,
    progress: Callable[[int, int], object] | None = None,
) -> tuple[ModelInfo, LearnSummary]:
    """Builds a static model fitted to the transformer ``teacher`` on ``corpus``, starting from
    the static model ``base`` (whose tokenizer it keeps); ``destination`` defaults to
    ``<base name>-learned`` in the model cache. ``progress(done, total)`` follows the
    transformer through the sampled texts."""
    base_info, teacher_info = describe(find_model(base)), describe(find_model(teacher))
    if base_info.kind != "static":
        raise ModelError(f"{base_info.path}: the base of a fit must be a static model")
    if teacher_info.kind != "transformer":
        raise ModelError(f"{teacher_info.path}: the teacher of a fit must be a transformer")
    if samples < 1:
        raise ModelError(f"samples must be at least 1, got {samples}")
    dst = new_model_folder(destination, f"{base_info.name}-learned")
    texts = learning_texts(corpus, samples)
    return fit_learned(base_info.path, teacher_info.path, dst, texts, progress)


def learning_texts(corpus: str | os.PathLike[str], samples: int) -> list[str]:
    """The texts of ``corpus`` a fit learns from (:func:`corpus_texts`); refused when there
    are fewer than :data:`MIN_TEXTS`, before the transformer spends minutes on them."""
    texts = corpus_texts(corpus, samples)
    if len(texts) < MIN_TEXTS:
        raise ModelError(
            f"{Path(corpus).expanduser()}: {len(texts)} text{'s' * (len(texts) != 1)} to learn "
            f"from ({samples} chunks asked for, and their comments); a fit needs at least "
            f"{MIN_TEXTS}, some held out to check it: ask for more chunks or use a larger "
            "corpus, or distill without learning"
        )
    return texts


def fit_learned(
    base: Path,
    teacher: Path,
    destination: Path,
    texts: list[str],
    progress: Callable[[int, int], object] | None = None,
) -> tuple[ModelInfo, LearnSummary]:
    """Fits the static model ``base`` to the transformer ``teacher`` on ``texts`` into the
    new folder ``destination``."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    # Rust keeps the width at most the teacher's.
    _learn(base, teacher, destination, texts, describe(base).dims or 256, progress)
    summary = learned_summary(destination)
    if summary is None:
        raise ModelError(f"{destination}: the fitted model does not record its fit")
    return describe(destination), summary


def learned_summary(model: str | os.PathLike[str]) -> LearnSummary | None:
    """What fitting recorded in a model folder's ``config.json`` (``None`` for a model that
    was not fitted, or whose config cannot be read)."""
    try:
        config = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
        learned = config["learned"]
        return LearnSummary(
            texts=int(learned["texts"]),
            held_out=int(learned["held_out"]),
            tokens=int(learned["tokens"]),
            cosine_before=float(learned["cosine_before"]),
            cosine_after=float(learned["cosine_after"]),
            ridge=None if learned["ridge"] is None else float(learned["ridge"]),
        )
    except (OSError, ValueError, TypeError, KeyError):
        return None
