"""The trees a run measures: corpora picked by size, a concatenated large tree, a 10k-file tree.

Copies are plain files (no symlinks, which coderecall never follows, and no hard links, which
an edit would leak into the cache), made once under the cache and reused once a sibling
``.complete`` marker says the copy finished.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

COMMENTS = {
    "#": (".py", ".rb", ".sh", ".bash", ".pl", ".toml", ".yaml", ".yml", ".r"),
    "//": (
        ".rs",
        ".go",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cxx",
        ".java",
        ".js",
        ".ts",
        ".tsx",
        ".jsx",
        ".kt",
        ".swift",
        ".scala",
        ".cs",
        ".php",
        ".zig",
        ".mjs",
    ),
    "--": (".lua", ".sql"),
}


@dataclass(frozen=True, slots=True)
class Target:
    """One row of the tables: a tree to index, and where it came from."""

    label: str
    root: Path
    source: str
    exclude: tuple[str, ...] = ()
    parts: tuple[str, ...] = field(default=())


def line_count(root: Path, paths: Sequence[str]) -> int:
    total = 0
    for path in paths:
        try:
            total += (root / path).read_bytes().count(b"\n")
        except OSError:
            continue
    return total


def comment_for(path: str) -> str | None:
    """The line-comment prefix of ``path``'s language, or None when unknown."""
    suffix = Path(path).suffix.lower()
    for prefix, suffixes in COMMENTS.items():
        if suffix in suffixes:
            return prefix
    return None


def edit_candidate(root: Path, paths: Sequence[str]) -> tuple[str, str] | None:
    """The median-size file with a known comment syntax, and that syntax: a typical edit."""
    sized = []
    for path in paths:
        comment = comment_for(path)
        if comment is not None:
            sized.append(((root / path).stat().st_size, path, comment))
    if not sized:
        return None
    sized.sort()
    _, path, comment = sized[len(sized) // 2]
    return path, comment


def _key(parts: Sequence[object]) -> str:
    return hashlib.sha256("\n".join(map(str, parts)).encode()).hexdigest()[:12]


def concatenate(cache: Path, name: str, roots: dict[str, Path]) -> Path:
    """One tree holding a copy of each root under its own folder (built once, then reused)."""
    target = cache / f"{name}-{_key(sorted((k, str(v)) for k, v in roots.items()))}"
    done = target.with_name(target.name + ".complete")
    if done.exists():
        return target
    if target.exists():
        shutil.rmtree(target)
    for label, root in sorted(roots.items()):
        shutil.copytree(root, target / label, symlinks=True)
    done.write_text("")
    return target


def many_files(cache: Path, root: Path, paths: Sequence[str], count: int) -> Path:
    """A tree of exactly ``count`` files copied from ``paths``, repeated under ``copyN/``.

    Real files keep the mix of sizes and languages of the source; repeats are byte copies,
    which a no-op re-index costs the same as distinct files (one stat each).
    """
    target = cache / f"files{count}-{_key([root, count, *paths[:50], len(paths)])}"
    done = target.with_name(target.name + ".complete")
    if done.exists():
        return target
    if target.exists():
        shutil.rmtree(target)
    ordered = sorted(paths)
    for number in range(count):
        path = ordered[number % len(ordered)]
        copy = target / f"copy{number // len(ordered)}" / path
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / path, copy)
    done.write_text("")
    return target


_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(root: Path, *args: str) -> None:
    """Runs git in ``root`` with no user configuration and a fixed identity."""
    subprocess.run(
        ["git", *args], cwd=root, env={**os.environ, **_GIT_ENV}, check=True, capture_output=True
    )


def module_path(root: Path, n: int) -> Path:
    """Where :func:`generated_repo` puts module ``n``: folders of 50 modules."""
    return root / f"pkg_{n // 50}" / f"module_{n}.py"


def python_module(n: int, functions: int, variant: str = "") -> str:
    """Module ``n`` of a generated tree: ``functions`` definitions, each long enough to be
    its own chunk; ``variant`` renames them all (another version of the same file)."""
    body = "".join(
        f"def handler_{n}_{f}{variant}(request, limit=10):\n"
        f'    """Handle request {n}.{f} within a limit."""\n'
        + "".join(f"    step_{k} = request.get('field_{k}', {k}) * limit\n" for k in range(8))
        + "    return step_0\n\n\n"
        for f in range(functions)
    )
    return f'"""Module {n}."""\n\n\n{body}'


def with_marker(module: str, n: int) -> tuple[str, str]:
    """Edit ``n`` of a module: a function with a new identifier above its text. Returns the
    identifier and the edited text."""
    word = f"edited_marker_{n:04d}"
    return word, f"def {word}(request):\n    return request\n\n\n{module}"


def generated_repo(root: Path, files: int, functions: int) -> None:
    """A git repository of ``files`` generated Python modules, committed on ``main``."""
    for n in range(files):
        path = module_path(root, n)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(python_module(n, functions), encoding="utf-8")
    (root / "pyproject.toml").write_text('[project]\nname = "bench"\n', encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "tree")
