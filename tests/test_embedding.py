"""Choosing the embedding engine (``embedding.provider``), embedding while indexing, model
switches, estimates and ``find_similar``: on real model files (see ``conftest.py``)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coderecall import CodeIndex, ConfigError, ModelError, QueryError
from coderecall._cli import main
from helpers import SAMPLE_PROJECT, MakeRepo, as_if_chunked_by_older_rules

NATURAL = "refresh the access token before it expires"


def vector_files(index: CodeIndex) -> list[Path]:
    return sorted(index.index_dir.glob("vectors-*.usearch"))


def test_auto_without_a_model_is_lexical_only_and_says_how_to_enable_semantic_search(
    make_repo: MakeRepo, caplog: pytest.LogCaptureFixture
) -> None:
    with CodeIndex(make_repo(SAMPLE_PROJECT)) as index, caplog.at_level(logging.WARNING):
        first = index.index(progress=False)
        second = index.index(progress=False)
        hits = index.search(NATURAL)
    assert first.embedding_model is None
    assert first.chunks_embedded == 0
    assert len(first.notices) == 1
    assert "coderecall model pull" in first.notices[0]
    assert second.notices == first.notices, "the report keeps saying it"
    logged = [r.getMessage() for r in caplog.records if "semantic search is off" in r.getMessage()]
    assert len(logged) == 1, "the log says it once per index"
    assert hits
    assert all(hit.channels == ("lexical",) for hit in hits)
    assert not vector_files(index)


def test_auto_passes_over_a_cached_model_that_does_not_load(
    make_repo: MakeRepo, static_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "models"
    broken = shutil.copytree(static_model, cache / "a-cut-short")
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # a download cut short
    monkeypatch.setenv("CODERECALL_MODELS", str(cache))
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        alone = index.index(progress=False)
        assert alone.embedding_model is None
        assert alone.notices
        assert "a-cut-short" in alone.notices[0]
        assert "semantic search is off" in alone.notices[0]
        assert index.search("refresh_token")
    shutil.copytree(static_model, cache / "b-whole")
    with CodeIndex(root) as index:
        report = index.index(progress=False)
        assert report.embedding_model is not None
        assert report.embedding_model.startswith("static:b-whole:")
        assert report.notices == ()
        assert any("semantic" in hit.channels for hit in index.search(NATURAL, limit=20))
    # Named in the configuration, the same model is an error: the user asked for it.
    with (
        CodeIndex(root, {"embedding": {"model": "a-cut-short"}}) as index,
        pytest.raises(ModelError),
    ):
        index.index(progress=False)


def test_new_chunking_rules_chunk_again_and_keep_the_embeddings(
    make_repo: MakeRepo, static_model: Path, in_cache: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        first = index.index(progress=False)
        assert first.chunks_embedded > 0
    as_if_chunked_by_older_rules(index.index_dir / "index.db", list(SAMPLE_PROJECT))
    with CodeIndex(root) as index:
        report = index.index(progress=False)
        assert report.files_parsed == len(SAMPLE_PROJECT)
        assert report.chunks_embedded == 0, "unchanged chunk texts keep their vectors"
        assert report.embeddings_pending == 0
        assert any("semantic" in hit.channels for hit in index.search(NATURAL, limit=20))


def test_provider_none_is_silent(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as index:
        report = index.index(progress=False)
    assert report.notices == ()
    assert report.embedding_model is None


def test_auto_embeds_with_the_cached_static_model_once(
    make_repo: MakeRepo, static_model: Path, in_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        first = index.index(progress=False)
        assert first.embedding_model is not None
        assert first.embedding_model.startswith(f"static:{static_model.name}:256:")
        assert first.chunks_embedded > 0
        assert first.embeddings_pending == 0
        assert first.notices == ()
        hits = index.search(NATURAL, limit=20)
        assert any("semantic" in hit.channels for hit in hits)
        assert index.index(progress=False).chunks_embedded == 0
        # The same content under another name is not embedded again.
        auth = root / "src/shop/auth.py"
        (root / "src/shop/auth_copy.py").write_text(auth.read_text())
        copied = index.index(progress=False)
        assert copied.files_reused == 1
        assert copied.chunks_embedded == 0
    # A new handle (another process, say) finds the vectors and the model again.
    with CodeIndex(root) as index:
        assert index.index(progress=False).chunks_embedded == 0
        assert any("semantic" in hit.channels for hit in index.search(NATURAL, limit=20))
        record = json.loads(index._open().get_meta("embedding") or "{}")
    assert record["provider"] == "static"
    assert record["dims"] == 256
    assert record["model_id"] == first.embedding_model
    # `status` says which model the vectors are of, and how many there are.
    assert main(["status", "--path", str(root)]) == 0
    rows = capsys.readouterr().out.splitlines()
    vectors = next(row for row in rows if row.startswith("vectors"))
    assert vectors.split(maxsplit=1)[1] == f"{first.chunks_embedded:,} ({first.embedding_model})"


def test_switching_models_reembeds_and_switching_back_reuses(
    make_repo: MakeRepo, static_model: Path, minilm: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    static = {"embedding": {"provider": "static", "model": str(static_model)}}
    transformer = {"embedding": {"provider": "transformer", "model": str(minilm)}}
    with CodeIndex(root, static) as index:
        first = index.index(progress=False)
        status = index.status()
        assert (status.embedding_model, status.vectors) == (
            first.embedding_model,
            first.chunks_embedded,
        )
        assert status.to_dict()["vectors"] == first.chunks_embedded
    with CodeIndex(root, transformer) as index:
        switched = index.index(progress=False)
        assert switched.embedding_model != first.embedding_model
        status = index.status()
        assert (status.embedding_model, status.vectors) == (
            switched.embedding_model,
            switched.chunks_embedded,
        ), "the model in use, and only its vectors"
        assert switched.chunks_embedded == first.chunks_embedded, "every content, once more"
        assert any("semantic" in hit.channels for hit in index.search(NATURAL, limit=20))
        assert len(vector_files(index)) == 2, "one graph per model, never mixed"
    with CodeIndex(root, static) as index:
        back = index.index(progress=False)
    assert back.embedding_model == first.embedding_model
    assert back.chunks_embedded == 0, "the first model's vectors are still valid"


def test_i8_quantization_has_its_own_graph_built_from_stored_vectors(
    make_repo: MakeRepo, static_model: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    f16 = {"embedding": {"provider": "static", "model": str(static_model)}}
    i8 = {"embedding": {**f16["embedding"], "quantization": "i8"}}
    with CodeIndex(root, f16) as index:
        first = index.index(progress=False)
        expected = [(h.path, h.start_line) for h in index.search(NATURAL, limit=5)]
    with CodeIndex(root, i8) as index:
        switched = index.index(progress=False)
        assert switched.chunks_embedded == 0, "the stored vectors serve both graphs"
        hits = index.search(NATURAL, limit=5)
        assert any("semantic" in hit.channels for hit in hits)
        assert [(h.path, h.start_line) for h in hits][:2] == expected[:2]
        names = [p.name for p in vector_files(index)]
    assert first.chunks_embedded > 0
    assert len(names) == 2
    assert sum(name.endswith(".i8.usearch") for name in names) == 1
    with pytest.raises(ConfigError, match="bf16, f16, i8"):
        CodeIndex(root, {"embedding": {"quantization": "f32"}})


def test_embedding_weight_sets_the_semantic_share_of_hybrid_ranking(
    make_repo: MakeRepo, static_model: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    model = {"provider": "static", "model": str(static_model)}
    with CodeIndex(root, {"embedding": {**model, "weight": 0}}) as index:
        index.index(progress=False)
        hybrid = index.search(NATURAL, limit=5)
        lexical = index._open().search(NATURAL, 5, lexical_only=True)
    assert [(h.path, h.start_line) for h in hybrid] == [
        (h["path"], h["start_line"]) for h in lexical
    ], "weight 0 keeps the lexical order"
    assert any("semantic" in hit.channels for hit in hybrid), "the channel still answered"
    for bad in (1.5, -0.1, "much"):
        with pytest.raises(ConfigError, match="from 0 to 1"):
            CodeIndex(root, {"embedding": {**model, "weight": bad}})


def test_a_configured_model_of_the_wrong_kind_or_missing_is_a_clear_error(
    make_repo: MakeRepo, static_model: Path, tmp_path: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    wrong = {"embedding": {"provider": "transformer", "model": str(static_model)}}
    with CodeIndex(root, wrong) as index, pytest.raises(ConfigError, match="static model"):
        index.index(progress=False)
    with (
        CodeIndex(root, {"embedding": {"provider": "static"}}) as index,
        pytest.raises(ModelError, match="coderecall model pull"),
    ):
        index.index(progress=False)
    missing = {"embedding": {"model": str(tmp_path / "nowhere")}}
    with CodeIndex(root, missing) as index, pytest.raises(ModelError, match="nowhere"):
        index.index(progress=False)


def test_embedding_settings_come_from_files_and_environment(
    make_repo: MakeRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(
        {
            **SAMPLE_PROJECT,
            "pyproject.toml": '[tool.coderecall.embedding]\nprovider = "voyage"\ndims = 512\n',
            ".coderecall.toml": '[embedding]\nbatch-size = 8\napi-key = "sk-in-a-file"\n',
        }
    )
    monkeypatch.setenv("CODERECALL_EMBEDDING_CONCURRENCY", "3")
    config = CodeIndex(root).config
    assert config.embedding_provider == "voyage"
    assert (config.embedding_dims, config.embedding_batch_size) == (512, 8)
    assert config.embedding_concurrency == 3
    assert "sk-in-a-file" not in repr(config)
    with pytest.raises(ConfigError, match=r"embedding\.provider.*one of auto"):
        CodeIndex(root, {"embedding": {"provider": "word2vec"}})
    with pytest.raises(ConfigError, match=r"did you mean 'embedding\.model'"):
        CodeIndex(root, {"embedding": {"modle": "x"}})
    with pytest.raises(ConfigError, match="hidden value") as caught:
        CodeIndex(root, {"embedding": {"api_key": 12345}})
    assert "12345" not in str(caught.value)


def test_estimate_counts_pending_tokens_and_embeds_nothing(
    make_repo: MakeRepo, static_model: Path, in_cache: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        estimate = index.estimate()
        assert estimate.provider == "static"
        assert estimate.chunks > 0
        assert estimate.tokens > estimate.chunks
        assert estimate.cost_usd == 0.0
        assert index.status().files > 0, "the lexical index was brought up to date"
        assert index.index(progress=False).chunks_embedded == estimate.chunks
        assert index.estimate().chunks == 0


def test_find_similar_by_location_and_by_code(
    make_repo: MakeRepo, static_model: Path, in_cache: Path
) -> None:
    auth = SAMPLE_PROJECT["src/shop/auth.py"]
    assert isinstance(auth, str)
    clone = auth.replace("TokenStore", "KeyRing").replace("issue_token", "grant_key")
    root = make_repo({**SAMPLE_PROJECT, "src/shop/keys.py": clone})
    line = auth.splitlines().index("    def refresh_access_token(self, old_token: str) -> str:")
    with CodeIndex(root) as index:
        index.index(progress=False)
        hits = index.find_similar(path="src/shop/auth.py", line=line + 2, limit=3)
        assert hits[0].path == "src/shop/keys.py"
        # The clone's chunk that holds the same method (a small class is one chunk).
        assert hits[0].start_line <= line + 2 <= hits[0].end_line
        assert "def refresh_access_token" in (hits[0].content or "")
        assert all(h.channels == ("semantic",) for h in hits)
        assert not any(
            h.path == "src/shop/auth.py" and h.start_line <= line + 2 <= h.end_line for h in hits
        ), "the chunk compared with is left out"
        absolute = index.find_similar(path=root / "src/shop/auth.py", line=line + 2, limit=3)
        assert [h.path for h in absolute] == [h.path for h in hits]
        snippet = index.find_similar(
            "def sum_prices(items):\n    return sum(i.price for i in items)"
        )
        assert snippet[0].path == "src/shop/billing.py"
        with pytest.raises(QueryError, match="not in the index"):
            index.find_similar(path="src/shop/nope.py", line=1)
        with pytest.raises(QueryError, match="either code or a path"):
            index.find_similar()
        with pytest.raises(QueryError, match="outside the root"):
            index.find_similar(path="/etc/passwd", line=1)


def test_find_similar_without_a_model_compares_terms(make_repo: MakeRepo) -> None:
    auth = SAMPLE_PROJECT["src/shop/auth.py"]
    assert isinstance(auth, str)
    root = make_repo({**SAMPLE_PROJECT, "src/shop/keys.py": auth.replace("Token", "Key")})
    lines = len(auth.splitlines())
    with CodeIndex(root) as index:
        hits = index.find_similar(path="src/shop/auth.py", line=25, limit=3)
        # The last line is a location; one past it is a mistake, not the last chunk.
        assert index.find_similar(path="src/shop/auth.py", line=lines, limit=3)
        with pytest.raises(QueryError, match=r"auth.py has \d+ lines: line 999 is past its end"):
            index.find_similar(path="src/shop/auth.py", line=999)
    assert hits[0].path == "src/shop/keys.py"
    assert hits[0].channels == ("lexical",)


def test_cli_similar_and_estimate(
    make_repo: MakeRepo,
    static_model: Path,
    in_cache: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    monkeypatch.chdir(root)
    assert main(["index", "--estimate", "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["provider"] == "static"
    assert estimate["chunks"] > 0
    assert main(["index"]) == 0
    assert "embedded" in capsys.readouterr().out
    assert main(["similar", "src/shop/auth.py:20", "--json", "--limit", "2"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 2
    assert hits[0]["channels"] == ["semantic"]
    done = subprocess.run(
        [sys.executable, "-m", "coderecall", "similar", "-", "--no-content"],
        input="function addToBasket(basket, thing) { basket.items.push(thing); }\n",
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("web/cart.js:")
    assert main(["similar", "src/shop/auth.py"]) == 1
    assert "FILE:LINE" in capsys.readouterr().err
    # A symbol stands for its definition's place.
    assert main(["def", "TokenStore", "--json", "--no-content"]) == 0
    (defined,) = json.loads(capsys.readouterr().out)[:1]
    where = f"{defined['path']}:{defined['start_line']}"
    assert main(["similar", where, "--json", "--limit", "3"]) == 0
    by_place = json.loads(capsys.readouterr().out)
    assert main(["similar", "TokenStore", "--json", "--limit", "3"]) == 0
    assert json.loads(capsys.readouterr().out) == by_place


def test_cli_notice_goes_to_stderr_once(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    done = subprocess.run(
        [sys.executable, "-m", "coderecall", "index", "--json"],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("semantic search is off") == 1
    assert done.stderr.startswith("coderecall: semantic search is off")
    assert json.loads(done.stdout)["notices"]
    again = subprocess.run(
        [sys.executable, "-m", "coderecall", "index", "--json"],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert again.stderr == "", "said once per index"
    assert json.loads(again.stdout)["notices"], "the report still carries it"
