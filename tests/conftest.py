"""Shared fixtures: real files in temporary folders, real git repositories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import Files, MakeRepo, git, write_files


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
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CODERECALL_* variable of the developer's shell may change a test's outcome."""
    for name in list(os.environ):
        if name.startswith("CODERECALL_"):
            monkeypatch.delenv(name)
