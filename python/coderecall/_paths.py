"""Where a project's index lives, and which folders may be indexed at all.

Git layout is read from the file system rather than by running ``git``: it costs a few stats
instead of a process per call, and works where git is not installed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import RootRefusedError

if TYPE_CHECKING:
    from ._config import Config

__all__ = [
    "LOCAL_INDEX_DIR",
    "PROJECT_FILE",
    "PROJECT_MARKERS",
    "GitLayout",
    "check_root",
    "find_git",
    "find_index_dir",
    "project_root",
]

LOCAL_INDEX_DIR = ".coderecall"
"""Index folder name inside a root that is not in a git repository."""
PROJECT_FILE = ".coderecall.toml"
"""A project's own settings file, at its root."""

PROJECT_MARKERS = frozenset(
    {
        ".git",
        PROJECT_FILE,
        "pyproject.toml",
        "setup.py",
        "package.json",
        "deno.json",
        "Cargo.toml",
        "go.mod",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "Gemfile",
        "composer.json",
        "mix.exs",
        "CMakeLists.txt",
        "Makefile",
    }
)
"""File names whose presence makes a folder a project; ``*.sln`` counts too."""


@dataclass(frozen=True, slots=True)
class GitLayout:
    """The git directories that govern a path inside a work tree."""

    work_tree: Path
    """The folder holding ``.git``: paths in ``.gitignore`` and ``info/exclude`` are relative
    to it."""
    git_dir: Path
    """This work tree's own git directory (``.git/worktrees/<name>`` for a linked worktree)."""
    common_dir: Path
    """The directory shared by every worktree: objects, ``info/exclude``, and our index."""


def find_git(path: Path) -> GitLayout | None:
    """The git layout of the work tree containing ``path``, or ``None`` outside git.

    Follows what git itself does without ``GIT_DIR``: the nearest ``.git`` upwards is either
    the git directory, or a file ``gitdir: <path>`` (linked worktrees, submodules). A git
    directory with a ``commondir`` file shares the directory it names. A ``.git`` file that
    does not lead to a directory is not a repository, as for git.
    """
    path = Path(os.path.abspath(path))
    for folder in (path, *path.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            git_dir_or_none = _read_gitdir_file(dot_git)
            if git_dir_or_none is None:
                return None
            git_dir = git_dir_or_none
        else:
            continue
        return GitLayout(work_tree=folder, git_dir=git_dir, common_dir=_common_dir(git_dir))
    return None


def _read_gitdir_file(dot_git: Path) -> Path | None:
    try:
        text = dot_git.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    first_line = text.splitlines()[0] if text else ""
    if not first_line.startswith("gitdir:"):
        return None
    git_dir = dot_git.parent / first_line.removeprefix("gitdir:").strip()
    return _normalise(git_dir) if git_dir.is_dir() else None


def _common_dir(git_dir: Path) -> Path:
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    return _normalise(git_dir / common) if common else git_dir


def _normalise(path: Path) -> Path:
    """Absolute and without ``..``: ``commondir`` is usually ``../..``."""
    return Path(os.path.normpath(os.path.abspath(path)))


def find_index_dir(root: Path, config: Config) -> Path:
    """The folder holding the index of ``root``.

    ``config.index_dir`` if set; else ``<git common dir>/coderecall`` so that every worktree
    shares one index and nothing shows in ``git status``; else ``<root>/.coderecall``.
    """
    if config.index_dir is not None:
        return config.index_dir
    git = find_git(root)
    if git is not None:
        return git.common_dir / "coderecall"
    return Path(os.path.abspath(root)) / LOCAL_INDEX_DIR


def check_root(root: Path, *, force: bool = False) -> None:
    """Raise :class:`~coderecall.RootRefusedError` unless ``root`` looks like a project.

    Refused: the file-system root, the home directory, and a folder that neither holds a
    project marker (:data:`PROJECT_MARKERS`, ``*.sln``) nor lies inside a git work tree (a
    sub-folder of a repository is part of a project) nor holds a local index (one forced
    index is enough). ``force`` skips every check.
    """
    if force:
        return
    root = Path(os.path.realpath(root))
    hint = "pass --force-root (force=True in Python) to index it anyway"
    if root.parent == root:
        raise RootRefusedError(f"refusing to index the file-system root {root}; {hint}", root=root)
    if root == Path(os.path.realpath(Path.home())):
        raise RootRefusedError(f"refusing to index the home directory {root}; {hint}", root=root)
    if _marks_project(root) or find_git(root) is not None:
        return
    raise RootRefusedError(
        f"{root} has no project marker (.git, pyproject.toml, package.json, Cargo.toml, go.mod,"
        f" Makefile, .coderecall.toml, ...); {hint}",
        root=root,
    )


def project_root(start: str | os.PathLike[str] = ".") -> Path:
    """The project a command run in ``start`` means, as git and cargo find theirs: the nearest
    folder from ``start`` upwards that holds a project marker (``.git`` among them) or a local
    index (``.coderecall/``, left by an index of a folder that needed ``force``). The search
    stops below the home directory and the file-system root, so a dotfiles repository in
    ``~`` never captures a folder under it; ``start`` itself when nothing is found.
    """
    start_path = Path(os.path.abspath(start))
    home = Path(os.path.abspath(Path.home()))
    for folder in (start_path, *start_path.parents):
        if folder == home or folder.parent == folder:
            break
        if _marks_project(folder):
            return folder
    return start_path


def _marks_project(folder: Path) -> bool:
    """A project marker, or a local index: one forced index of a folder is enough."""
    return _has_marker(folder) or (folder / LOCAL_INDEX_DIR).is_dir()


def _has_marker(root: Path) -> bool:
    try:
        with os.scandir(root) as entries:
            return any(
                entry.name in PROJECT_MARKERS or entry.name.endswith(".sln") for entry in entries
            )
    except OSError:
        return False
