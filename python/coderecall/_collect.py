"""Step 1 of indexing: walk a root and list the files worth handing to the core.

The walk honours ``.gitignore`` files at every level (a nested file governs its own subtree,
with paths relative to its folder; ``!`` re-includes; a leading ``/`` anchors), the repository's
``info/exclude`` (read from the git common directory, as git does for worktrees), the
``.gitignore`` files above the root when the root is a sub-folder of a work tree, and the
user's ``include``/``exclude`` globs. As in git, the deepest file that has a matching pattern
decides, and nothing inside an ignored directory can be re-included, so ignored directories are
never entered (and counted once, as ``dir/``). ``.git`` and the index directory are never
collected. When the root itself lies in a directory the enclosing repository ignores, the
user asked for it explicitly, so the rules from above the root are dropped.

Nothing is skipped silently: every file left out is listed under one of the reasons below,
which are the same strings the core uses for what it skips later ("binary", "not valid UTF-8",
"no parser", "deleted"):

``"ignored"``
    matched by a gitignore rule or an exclude glob, or not matched by the include globs.
``"too large"``
    bigger than ``max_file_size`` (by its stat size; the file is never opened).
``"symlink"``
    any symbolic link. Linked directories are never followed (no loops, no escaping the root)
    and linked files are not read either: a target inside the root is indexed at its real
    path, and one outside it is not part of the project.
``"unreadable"``
    a directory that cannot be listed, an entry that cannot be stat'ed, or something that is
    not a regular file (a FIFO or a device would block or never end when read).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pathspec

from ._config import Config
from ._paths import LOCAL_INDEX_DIR, find_git, find_index_dir

__all__ = [
    "SKIP_IGNORED",
    "SKIP_SYMLINK",
    "SKIP_TOO_LARGE",
    "SKIP_UNREADABLE",
    "Collection",
    "collect",
]

SKIP_IGNORED = "ignored"
SKIP_TOO_LARGE = "too large"
SKIP_SYMLINK = "symlink"
SKIP_UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class Collection:
    """The outcome of a walk."""

    files: dict[str, tuple[int, int]]
    """Candidate files: root-relative POSIX path -> ``(mtime_ns, size)``."""
    skipped: dict[str, list[str]]
    """Reason -> root-relative paths left out, sorted; directories end with ``/``."""


class _Rules:
    """The patterns of one ignore file, applied to paths below the folder holding it.

    A path relative to the walk's root becomes relative to the rules' folder by dropping the
    first ``strip`` characters (a folder below the root) or prepending ``add`` (a folder above
    it). Most paths match no pattern at all, so one combined regex answers that first, in C,
    before pathspec works out which pattern wins.
    """

    __slots__ = ("_add", "_any", "_spec", "_strip")

    def __init__(self, spec: pathspec.GitIgnoreSpec, *, strip: int = 0, add: str = ""):
        self._spec = spec
        self._strip = strip
        self._add = add
        regexes = [
            _GROUP.sub("(?:", pattern.regex.pattern)
            for pattern in spec.patterns
            if pattern.include is not None and pattern.regex is not None
        ]
        self._any = re.compile("|".join(f"(?:{regex})" for regex in regexes))

    def decide(self, path: str) -> bool | None:
        """``True`` ignored, ``False`` re-included by ``!``, ``None`` no pattern matches."""
        path = self._add + path[self._strip :]
        if self._any.search(path) is None:
            return None
        return self._spec.check_file(path).include


# Named groups (pathspec marks directory matches with one) may not repeat in one regex.
_GROUP = re.compile(r"\(\?P<\w+>")


def collect(root: Path, config: Config) -> Collection:
    """Walk ``root`` iteratively (no recursion limit, no symlink loops) and sort what it finds."""
    root_dir = os.path.abspath(root)
    files: dict[str, tuple[int, int]] = {}
    skipped: defaultdict[str, list[str]] = defaultdict(list)
    exclude = _rules(config.exclude)
    include = pathspec.GitIgnoreSpec.from_lines(config.include) if config.include else None
    never = _never_collected(root_dir, config)
    max_size = config.max_file_size

    # (relative dir, absolute dir, rules in force there, deepest first)
    stack = [("", root_dir, _rules_above(root_dir) if config.respect_gitignore else ())]
    while stack:
        rel_dir, abs_dir, rules = stack.pop()
        prefix = f"{rel_dir}/" if rel_dir else ""
        try:
            with os.scandir(abs_dir) as listing:
                entries = list(listing)
        except OSError:
            skipped[SKIP_UNREADABLE].append(prefix or ".")
            continue
        if config.respect_gitignore:
            rules = _with_gitignore(entries, prefix, rules, skipped)

        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            path = prefix + name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if path in never:
                        continue
                    if _ignored(f"{path}/", rules, exclude):
                        skipped[SKIP_IGNORED].append(f"{path}/")
                    else:
                        stack.append((path, entry.path, rules))
                    continue
                if _ignored(path, rules, exclude) or (
                    include is not None and not include.match_file(path)
                ):
                    skipped[SKIP_IGNORED].append(path)
                    continue
                if entry.is_symlink():
                    skipped[SKIP_SYMLINK].append(path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    skipped[SKIP_UNREADABLE].append(path)
                    continue
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                skipped[SKIP_UNREADABLE].append(path)
                continue
            if stat.st_size > max_size:
                skipped[SKIP_TOO_LARGE].append(path)
            else:
                files[path] = (stat.st_mtime_ns, stat.st_size)

    return Collection(files, {reason: sorted(paths) for reason, paths in skipped.items()})


def _ignored(path: str, rules: tuple[_Rules, ...], exclude: _Rules | None = None) -> bool:
    """Whether ``path`` is left out; an exclude glob wins over any gitignore negation."""
    if exclude is not None and exclude.decide(path):
        return True
    for rule in rules:
        decision = rule.decide(path)
        if decision is not None:
            return decision
    return False


def _rules(patterns: tuple[str, ...], *, strip: int = 0, add: str = "") -> _Rules | None:
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    if not any(pattern.include is not None for pattern in spec.patterns):
        return None
    return _Rules(spec, strip=strip, add=add)


def _read_rules(path: str, *, strip: int = 0, add: str = "") -> _Rules | None:
    """Rules from an ignore file; ``None`` if it has no patterns. Raises ``OSError``.

    Like git, a line that is not a valid pattern (a lone ``!``, say) is ignored rather than
    spoiling the whole file.
    """
    with open(path, encoding="utf-8", errors="surrogateescape") as file:
        lines = tuple(file.read().splitlines())
    try:
        return _rules(lines, strip=strip, add=add)
    except ValueError:  # pathspec's GitIgnorePatternError
        return _rules(tuple(filter(_is_valid_pattern, lines)), strip=strip, add=add)


def _is_valid_pattern(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True


def _with_gitignore(
    entries: list[os.DirEntry[str]],
    prefix: str,
    rules: tuple[_Rules, ...],
    skipped: defaultdict[str, list[str]],
) -> tuple[_Rules, ...]:
    """``rules`` plus the folder's own ``.gitignore``, which takes precedence."""
    for entry in entries:
        # A symlinked .gitignore is not followed, as in git since 2.32.
        if entry.name == ".gitignore" and entry.is_file(follow_symlinks=False):
            try:
                own = _read_rules(entry.path, strip=len(prefix))
            except OSError:
                skipped[SKIP_UNREADABLE].append(prefix + entry.name)
                return rules
            return rules if own is None else (own, *rules)
    return rules


def _rules_above(root_dir: str) -> tuple[_Rules, ...]:
    """Rules that reach into the root from its repository: ``info/exclude`` and the
    ``.gitignore`` files of the folders between the work tree and the root, deepest first."""
    git = find_git(Path(root_dir))
    if git is None:
        return ()
    top = str(git.work_tree)
    sources = []
    folder = root_dir
    while folder != top and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        sources.append((os.path.join(folder, ".gitignore"), folder))
    sources.append((str(git.common_dir / "info" / "exclude"), top))
    rules: list[_Rules] = []
    for path, base in sources:
        add = os.path.relpath(root_dir, base).replace(os.sep, "/") + "/"
        try:
            found = _read_rules(path, add="" if add == "./" else add)
        except OSError:  # absent, as it mostly is; unreadable ones cannot be reported by path
            continue
        if found is not None:
            rules.append(found)
    if root_dir != top and _ignored("", tuple(rules)):
        return ()  # "" is the root itself: each rule's ``add`` makes it "<root>/" there
    return tuple(rules)


def _never_collected(root_dir: str, config: Config) -> set[str]:
    """Root-relative folders that are ours: the index directory and ``.coderecall``."""
    never = {LOCAL_INDEX_DIR}
    relative = os.path.relpath(find_index_dir(Path(root_dir), config), root_dir)
    if not relative.startswith(".."):
        never.add(relative.replace(os.sep, "/"))
    return never
