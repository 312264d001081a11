"""`health` checks SQLite against the files derived from it and repairs them without calling
an embedding engine; garbage collection follows `gc-grace`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
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


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command that takes no ``--path``, run in the root."""
    return subprocess.run(
        [sys.executable, "-m", "coderecall", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
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


def test_a_root_never_indexed_is_reported_as_such_and_health_creates_nothing(
    make_repo: MakeRepo,
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    checked = cli(root, "health", "--json")
    assert checked.returncode == 0, checked.stderr
    found = json.loads(checked.stdout)
    assert (found["exists"], found["ok"], found["problems"]) == (False, True, [])
    people = cli(root, "health")
    assert "no index yet (`coderecall index` builds it)" in people.stdout
    assert not (root / ".git" / "coderecall").exists()


def _damage_header(db: Path) -> None:
    with db.open("r+b") as file:
        file.write(b"garbage, not SQLite")


def _damage_pages(db: Path) -> None:
    """Pages past the first: the file still opens, reading those pages fails."""
    page = 4096
    assert db.stat().st_size >= 6 * page
    with db.open("r+b") as file:
        file.seek(2 * page)
        file.write(b"\xff" * (3 * page))


@pytest.mark.parametrize("damage", [_damage_header, _damage_pages], ids=["header", "pages"])
def test_health_reports_a_damaged_database_and_index_force_sets_it_aside(
    make_repo: MakeRepo, damage: Callable[[Path], None]
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    assert run(root, "index", "--json").returncode == 0
    index_dir = root / ".git" / "coderecall"
    for leftover in ("index.db-wal", "index.db-shm"):
        assert not (index_dir / leftover).exists()  # the writer checkpointed and closed
    damage(index_dir / "index.db")

    checked = cli(root, "health", "--json")
    assert checked.returncode == 1, checked.stderr
    (problem,) = json.loads(checked.stdout)["problems"]
    assert "`coderecall index --force` sets it aside and rebuilds" in problem
    searched = cli(root, "search", "refresh token")
    assert searched.returncode == 1
    assert "index --force" in searched.stderr

    rebuilt = run(root, "index", "--force", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["files_parsed"] == len(SAMPLE_PROJECT)
    assert "the damaged index was set aside as" in rebuilt.stderr
    assert cli(root, "health").returncode == 0
    searched = cli(root, "search", "refresh an expired access token", "--json")
    assert json.loads(searched.stdout)[0]["path"] == "src/shop/auth.py"
    (aside,) = root.joinpath(".git").glob("coderecall.broken-*")
    assert (aside / "index.db").stat().st_size > 0  # kept for inspection
