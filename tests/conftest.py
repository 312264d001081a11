"""Shared fixtures: real files in temporary folders, real git repositories."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

# Git must behave the same on every machine: no user or system config, a fixed identity.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}

Files = Mapping[str, str | bytes]
MakeRepo = Callable[..., Path]


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` and return its output; fails the test on a non-zero exit."""
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"git {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


def write_files(root: Path, files: Files) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    """Factory: ``make_repo(files, name="repo", git=True, commit=True) -> root``.

    Writes ``files`` (relative path -> text or bytes) and, with ``git``, runs ``git init``
    (and ``git add -A && git commit`` with ``commit``).
    """

    def make(
        files: Files, *, name: str = "repo", init: bool = True, commit: bool = True
    ) -> Path:
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
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No CODERECALL_* variable of the developer's shell may change a test's outcome."""
    for name in list(os.environ):
        if name.startswith("CODERECALL_"):
            monkeypatch.delenv(name)
    yield
