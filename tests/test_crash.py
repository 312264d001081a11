"""A writer killed with SIGKILL at any moment leaves an index that opens, and a re-index then
gives exactly the results of a fresh build."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coderecall import CodeIndex
from helpers import MakeRepo

QUERIES = ["function_7_12", "function_79_3", "pkg/module_12.py", "setup"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


def results(index: CodeIndex, iteration: int) -> list[list[tuple[str, int, int, str, float]]]:
    """Identifier and path queries (exact lookups, so both builds must agree to the score)."""
    queries = [*QUERIES, f"edited_{iteration}", "edited"]
    return [
        [
            (h.path, h.start_line, h.end_line, h.symbol_path, round(h.score, 4))
            for h in index.search(q, limit=10)
        ]
        for q in queries
    ]


def start_indexer(root: Path, index_dir: Path, model: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "CODERECALL_INDEX_DIR": str(index_dir),
        "CODERECALL_EMBEDDING_PROVIDER": "static",
        "CODERECALL_EMBEDDING_MODEL": str(model),
        "CODERECALL_GC_GRACE": "0",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "coderecall", "index", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def project(modules: int) -> dict[str, str]:
    return {
        f"pkg/module_{m}.py": "".join(
            f"def function_{m}_{n}(value):\n    return value * {n} + {m}\n\n" for n in range(25)
        )
        for m in range(modules)
    } | {"setup.py": "from setuptools import setup\n\nsetup()\n"}


ITERATIONS = 50


@pytest.mark.slow
def test_sigkill_at_random_moments_then_health_and_reindex_match_a_fresh_build(
    make_repo: MakeRepo, tmp_path: Path, static_model: Path
) -> None:
    """Each of 50 writers (parsing, publishing, embedding, collecting garbage) is killed at a
    random moment; every time the index must open, pass `health`, and after a re-index answer
    exactly as a fresh build of the same files does."""
    modules = 80
    root = make_repo(project(modules))
    config = {
        "embedding": {"provider": "static", "model": str(static_model)},
        "gc_grace": 0,
    }
    rng = random.Random(20261121)

    def edit(label: str) -> None:
        # Give every run real work: new content to parse, store, embed and publish, and old
        # versions to collect.
        for m in rng.sample(range(modules), 12):
            path = root / "pkg" / f"module_{m}.py"
            path.write_text(path.read_text() + f"\ndef edited_{label}_{m}():\n    pass\n")

    def timed_run(index_dir: Path) -> float:
        started = time.perf_counter()
        assert start_indexer(root, index_dir, static_model).wait(timeout=300) == 0
        return time.perf_counter() - started

    # Time a first build and an update once, then kill runs of each kind at random points
    # across its span (and beyond, where the kill lands while derived files are written or
    # after the commit). Updates are shorter than a first build: timed against it, about half
    # of them finished before the kill. The median of three updates, as one can land on a
    # slow moment of a busy machine.
    cold = timed_run(tmp_path / "probe")
    updates = []
    for probe in range(3):
        edit(f"probe_{probe}")
        updates.append(timed_run(tmp_path / "probe"))
    update = sorted(updates)[1]

    index_dir = tmp_path / "killed"
    kills = 0
    for iteration in range(ITERATIONS):
        edit(str(iteration))
        span = cold if iteration == 0 else update
        proc = start_indexer(root, index_dir, static_model)
        time.sleep(rng.uniform(0.0, span * 1.1))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        with CodeIndex(root, {**config, "index_dir": index_dir}) as survivor:
            health = survivor.health()
            assert health.ok, f"iteration {iteration}: {health.problems}"
            report = survivor.index(progress=False)
            assert report.embeddings_pending == 0
            assert survivor.health().ok
            got = results(survivor, iteration)
        fresh_dir = tmp_path / f"fresh-{iteration}"
        with CodeIndex(root, {"index_dir": fresh_dir, "embedding": {"provider": "none"}}) as fresh:
            fresh.index(progress=False)
            assert got == results(fresh, iteration), f"iteration {iteration}"
        shutil.rmtree(fresh_dir)
    assert kills >= ITERATIONS // 2, f"only {kills} of {ITERATIONS} runs were killed mid-run"
