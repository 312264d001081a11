"""Fitting a static model to the real all-MiniLM-L6-v2 on real code (``model distill --learn``).

The corpus is a copy of a standard-library package: real code this project did not write, on
every machine that runs the tests.
"""

from __future__ import annotations

import email
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from coderecall import Embedder, ModelError, distill_model, learn_model, load_embedder
from coderecall._learn import MIN_TEXTS, comment_sentence, corpus_texts, learned_summary


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("learn") / "email"
    shutil.copytree(Path(email.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_comment_sentences_are_prose_only() -> None:
    chunk = (
        "def refresh(token):\n"
        "    # Refresh the access token when it is about to expire. Then retry.\n"
        "    # (More detail here.)\n"
        "    return token\n"
    )
    assert comment_sentence(chunk) == "Refresh the access token when it is about to expire."
    assert comment_sentence('    """Return the parsed headers of a message part."""') == (
        "Return the parsed headers of a message part."
    )
    assert comment_sentence("// See above.") is None  # too short to read like a query
    assert comment_sentence("# 0x1f 0x2e 0x3d 0x4c 0x5b 0x6a 0x79") is None  # not words
    assert comment_sentence("x = 1\ny = 2\n") is None


def test_corpus_texts_are_chunks_then_their_sentences(corpus: Path) -> None:
    texts = corpus_texts(corpus, 50)
    assert texts == corpus_texts(corpus, 50)  # the sample is seeded
    chunks, sentences = texts[:50], texts[50:]
    assert sentences, "the email package documents its functions"
    assert sentences == [s for s in map(comment_sentence, chunks) if s is not None]
    assert sum("def " in c or "class " in c for c in chunks) > 25
    assert len(corpus_texts(corpus, 10_000)) > len(texts)  # a larger sample takes every chunk
    with pytest.raises(ModelError, match="must be a folder"):
        corpus_texts(corpus / "nothing", 5)
    empty = corpus.parent / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match="no chunk"):
        corpus_texts(empty, 5)


def _neighbour_agreement(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """Mean share of each row's k nearest rows under ``a`` that are also nearest under ``b``."""
    overlaps = []
    for sims_a, sims_b, i in zip(a @ a.T, b @ b.T, range(len(a)), strict=True):
        sims_a[i] = sims_b[i] = -np.inf
        top_a = set(np.argsort(-sims_a)[:k].tolist())
        top_b = set(np.argsort(-sims_b)[:k].tolist())
        overlaps.append(len(top_a & top_b) / k)
    return float(np.mean(overlaps))


def test_a_fitted_model_agrees_with_its_teacher_more_than_its_base(
    static_model: Path, minilm: Path, transformer: Embedder, corpus: Path, tmp_path: Path
) -> None:
    dst = tmp_path / "learned"
    info, summary = learn_model(static_model, minilm, dst, corpus=corpus, samples=150)
    assert (info.kind, info.dims, info.path) == ("static", 256, dst)
    assert summary["held_out"] > 5
    assert summary["texts"] > 150
    assert summary["ridge"] is not None, "a refit beat the aligned base on held-out texts"
    assert summary["cosine_after"] > summary["cosine_before"], summary
    config = json.loads((dst / "config.json").read_text())
    assert config["learned"]["teacher"] == minilm.name
    assert config["learned"]["cosine_after"] == summary["cosine_after"]
    assert learned_summary(static_model) is None  # a distilled model records no fit
    assert (config["hidden_dim"], config["normalize"]) == (256, True)
    assert (dst / "tokenizer.json").read_bytes() == (static_model / "tokenizer.json").read_bytes()

    # Independently of the fit's own report: on chunks of the corpus it did not learn from,
    # the fitted model's nearest neighbours are closer to the transformer's than the base
    # model's are.
    sample = set(corpus_texts(corpus, 150)[:150])
    unseen = [t for t in corpus_texts(corpus, 100_000) if t not in sample][:100]
    assert len(unseen) == 100
    teacher = transformer.embed(unseen)
    base = load_embedder(static_model).embed(unseen)
    fitted = load_embedder(dst).embed(unseen)
    assert np.allclose(np.linalg.norm(fitted, axis=1), 1.0, atol=1e-5)
    before = _neighbour_agreement(teacher, base)
    after = _neighbour_agreement(teacher, fitted)
    assert after > before + 0.02, (before, after)


def test_learning_refuses_what_it_cannot_do(
    static_model: Path, minilm: Path, corpus: Path, tmp_path: Path
) -> None:
    with pytest.raises(ModelError, match="base of a fit must be a static model"):
        learn_model(minilm, minilm, tmp_path / "a", corpus=corpus)
    with pytest.raises(ModelError, match="teacher of a fit must be a transformer"):
        learn_model(static_model, static_model, tmp_path / "b", corpus=corpus)
    with pytest.raises(ModelError, match="already exists"):
        learn_model(static_model, minilm, tmp_path, corpus=corpus)
    with pytest.raises(ModelError, match="at least 1"):
        learn_model(static_model, minilm, tmp_path / "c", corpus=corpus, samples=0)
    with pytest.raises(ModelError, match="needs a corpus"):
        distill_model(minilm, tmp_path / "d", learn=10)
    assert not any((tmp_path / name).exists() for name in "abcd")


def test_too_few_texts_to_check_a_fit_are_refused(
    static_model: Path, minilm: Path, tmp_path: Path
) -> None:
    """A tiny project gives a text or two: nothing could be held out to check the refit, which
    would only learn those (the CLI printed "0 held-out texts 0.000 -> 0.000")."""
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "main.py").write_text('def main():\n    """Print a greeting."""\n    print("hi")\n')
    with pytest.raises(ModelError, match=f"a fit needs at least {MIN_TEXTS}") as caught:
        learn_model(static_model, minilm, tmp_path / "a", corpus=tiny, samples=20)
    assert "1 text to learn from (20 chunks asked for" in str(caught.value)
    # distilling with learning refuses first, before minutes of distilling
    with pytest.raises(ModelError, match=f"a fit needs at least {MIN_TEXTS}"):
        distill_model(minilm, tmp_path / "b", corpus=tiny, learn=20)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]


@pytest.mark.slow
def test_distill_learn_on_the_command_line(minilm: Path, corpus: Path, tmp_path: Path) -> None:
    dst = tmp_path / "fitted"
    command = [sys.executable, "-m", "coderecall", "model", "distill", str(minilm), str(dst)]
    done = subprocess.run(
        [*command, "--corpus", str(corpus), "--learn", "60", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["kind"], out["dims"], out["path"]) == ("static", 256, str(dst))
    assert out["learned"]["cosine_after"] > out["learned"]["cosine_before"]
    assert json.loads((dst / "config.json").read_text())["distilled_from"] == minilm.name
    assert [p.name for p in tmp_path.iterdir()] == ["fitted"]  # no staging folder left
    again = subprocess.run([*command, "--learn", "60"], capture_output=True, text=True, check=False)
    assert again.returncode == 1
    assert "learning needs a corpus" in again.stderr
