"""`health` checks SQLite against the files derived from it and repairs them without calling
an embedding engine; garbage collection follows `gc-grace`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from coderecall import CodeIndex, IndexCorruptError
from helpers import SAMPLE_PROJECT, MakeRepo


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coderecall", *args, "--path", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_health_reports_damage_and_repair_rebuilds_from_the_store(
    make_repo: MakeRepo, static_model: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    (root / ".coderecall.toml").write_text(
        f'[embedding]\nprovider = "static"\nmodel = "{static_model}"\n'
    )
    with CodeIndex(root) as index:
        report = index.index(progress=False)
        assert report.chunks_embedded > 0
        assert index.health().ok
        expected = [h.path for h in index.search("refresh an expired access token")]

    graphs = list((root / ".git" / "coderecall").glob("vectors-*.usearch"))
    assert len(graphs) == 1
    graphs[0].write_bytes(b"\0" * 100)  # a torn or corrupted file
    leftover = root / ".git" / "coderecall" / ".lexical-1.bin.9.9.9.tmp"
    leftover.write_bytes(b"left over")
    an_hour_ago = time.time() - 3600  # younger ones may be a write in progress
    os.utime(leftover, (an_hour_ago, an_hour_ago))

    checked = cli(root, "health", "--json")
    assert checked.returncode == 1, checked.stderr
    found = json.loads(checked.stdout)
    assert not found["ok"]
    assert any("vector graph" in problem for problem in found["problems"])
    assert any("temporary files" in problem for problem in found["problems"])

    # The repair must not embed: point the model at nothing and it still succeeds.
    (root / ".coderecall.toml").write_text('[embedding]\nprovider = "none"\n')
    repaired = cli(root, "health", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "healthy after repair" in repaired.stdout
    assert cli(root, "health").returncode == 0

    (root / ".coderecall.toml").write_text(
        f'[embedding]\nprovider = "static"\nmodel = "{static_model}"\n'
    )
    with CodeIndex(root) as index:
        assert index.index(progress=False).chunks_embedded == 0
        assert [h.path for h in index.search("refresh an expired access token")] == expected


def test_a_file_version_that_cannot_be_read_back_is_reported_and_repair_drops_it(
    make_repo: MakeRepo,
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
        assert index.health().ok
    # SQLite's own checks pass: only the chunks and symbols of one version are garbage.
    with closing(sqlite3.connect(root / ".git" / "coderecall" / "index.db")) as conn, conn:
        damaged = conn.execute(
            "UPDATE files SET outline = x'28b52ffd0000' WHERE hash ="
            " (SELECT file_hash FROM view_files WHERE path = 'src/shop/auth.py')"
        ).rowcount
    assert damaged == 1

    checked = cli(root, "health", "--json")
    assert checked.returncode == 1, checked.stderr
    problems = json.loads(checked.stdout)["problems"]
    assert any("1 file versions cannot be read back" in p for p in problems), problems
    with CodeIndex(root) as index, pytest.raises(IndexCorruptError, match="health --repair"):
        index.search("refresh an expired access token", with_content=True)
    repaired = cli(root, "health", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "dropped 1 file versions that could not be read back" in repaired.stdout
    with CodeIndex(root) as index:
        # Until the next index the path is simply not in the view.
        assert all(h.path != "src/shop/auth.py" for h in index.search("access token"))
        report = index.index(progress=False)
        assert (report.files_parsed, report.files_unchanged) == (1, len(SAMPLE_PROJECT) - 1)
        assert index.health().ok
        hits = index.search("refresh an expired access token", with_content=True)
        assert hits[0].path == "src/shop/auth.py"
        assert "def refresh_access_token" in (hits[0].content or "")


def test_garbage_is_kept_for_the_grace_period_then_collected(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    auth = root / "src/shop/auth.py"
    with CodeIndex(root) as index:
        index.index(progress=False)
        versions = index.status().file_versions
        auth.write_text(auth.read_text() + "\n\ndef another_helper():\n    pass\n")
        index.index(progress=False)
        # The old version stays for a branch switch back (gc-grace defaults to 7 days).
        assert index.status().file_versions == versions + 1
    with CodeIndex(root, {"gc_grace": 0}) as index:
        index.index(progress=False)
        assert index.status().file_versions == versions
        assert index.health().ok
