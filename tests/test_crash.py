"""A writer killed with SIGKILL at any moment leaves an index that opens, and a re-index then
gives exactly the results of a fresh build."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coderecall import CodeIndex
from helpers import MakeRepo, large_project

QUERIES = [
    "function_7_42",
    "function_1999_3",
    "return value times",
    "pkg/module_12.py",
    "setup",
]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


def results(index: CodeIndex) -> list[list[tuple[str, int, int, str, float]]]:
    return [
        [
            (h.path, h.start_line, h.end_line, h.symbol_path, round(h.score, 4))
            for h in index.search(q, limit=10)
        ]
        for q in QUERIES
    ]


def start_indexer(root: Path, index_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CODERECALL_INDEX_DIR": str(index_dir)}
    return subprocess.Popen(
        [sys.executable, "-m", "coderecall", "index", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_sigkill_at_random_moments_then_reindex_matches_fresh_build(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    root = make_repo(large_project(600))
    with CodeIndex(root, {"index_dir": tmp_path / "fresh"}) as fresh:
        fresh.index(progress=False)
        expected = results(fresh)
    assert all(expected), "every query finds something in a fresh build"

    # Time a full run once, then kill runs at random points across that span (and beyond,
    # where the kill lands while the lexical snapshot is written or after the commit).
    probe = start_indexer(root, tmp_path / "probe")
    started = time.perf_counter()
    assert probe.wait(timeout=300) == 0
    full = time.perf_counter() - started

    original = {path: path.read_text() for path in (root / "pkg").iterdir()}
    rng = random.Random(20261121)
    index_dir = tmp_path / "killed"
    kills = attempts = 0
    # Load changes how long a run takes, so keep going until 8 runs were really killed.
    while kills < 8 and attempts < 30:
        attempts += 1
        proc = start_indexer(root, index_dir)
        time.sleep(rng.uniform(0.05, full * 1.1))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        # Whatever state the kill left must open and answer searches.
        with CodeIndex(root, {"index_dir": index_dir}) as survivor:
            survivor.status()
            for q in QUERIES:
                survivor.search(q, limit=3)
        # Give the next run real work: new content to parse, store and publish.
        for m in rng.sample(range(600), 150):
            path = root / "pkg" / f"module_{m}.py"
            path.write_text(original[path] + f"\nEDITED_{attempts} = {m}\n")
    assert kills == 8, f"only {kills} of {attempts} runs were still running when killed"

    for path, text in original.items():
        path.write_text(text)

    with CodeIndex(root, {"index_dir": index_dir}) as recovered:
        recovered.index(progress=False)
        assert results(recovered) == expected
