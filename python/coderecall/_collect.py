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
which are the same strings the core uses for what it skips later ("binary", "no parser",
"deleted"):

``"ignored"``
    matched by a gitignore rule or an exclude glob, or not matched by the include globs; every
    ``.coderecall.toml`` (coderecall's settings, which may hold an API key); and a linked
    worktree inside the root (another branch's files, indexed as a view of their own).
``"too large"``
    bigger than ``max_file_size`` (by its stat size; the file is never opened).
``"symlink"``
    any symbolic link. Linked directories are never followed (no loops, no escaping the root)
    and linked files are not read either: a target inside the root is indexed at its real
    path, and one outside it is not part of the project.
``"unreadable"``
    a directory that cannot be listed, an entry that cannot be stat'ed, or something that is
    not a regular file (a FIFO or a device would block or never end when read).
``"deleted"``
    a file or folder that vanished between the listing of its folder and its own look (the
    core uses the same reason for one that vanishes before it is read).
``"name not UTF-8"``
    a file or folder whose name is not valid UTF-8: the index stores paths as text. It is
    listed with U+FFFD in place of each bad byte.

:func:`collect_paths` sorts only some given paths (what a watcher saw change) by exactly these
rules: one :class:`_Sorter` decides every entry for both, so a targeted update can never
disagree with a full walk.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pathspec

from ._config import Config
from ._paths import LOCAL_INDEX_DIR, PROJECT_FILE, find_git, find_index_dir
from ._unicode import is_storable, scrub

__all__ = [
    "SKIP_BAD_NAME",
    "SKIP_DELETED",
    "SKIP_IGNORED",
    "SKIP_SYMLINK",
    "SKIP_TOO_LARGE",
    "SKIP_UNREADABLE",
    "Collection",
    "PathSorter",
    "collect",
    "collect_paths",
    "scope_of",
]

SKIP_IGNORED = "ignored"
SKIP_TOO_LARGE = "too large"
SKIP_SYMLINK = "symlink"
SKIP_UNREADABLE = "unreadable"
SKIP_BAD_NAME = "name not UTF-8"
SKIP_DELETED = "deleted"


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

_RuleStack = tuple[_Rules, ...]
"""The rules in force in one folder, deepest first."""


class _Entry(Protocol):
    """What sorting needs of an entry: an ``os.DirEntry`` from a listing, or a :class:`_Lstat`
    of a given path. Only ever asked with ``follow_symlinks=False``."""

    @property
    def name(self) -> str: ...

    def is_dir(self, *, follow_symlinks: bool = True) -> bool: ...

    def is_file(self, *, follow_symlinks: bool = True) -> bool: ...

    def is_symlink(self) -> bool: ...

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result: ...


class _Lstat:
    """A given path as an entry: one ``lstat`` answers everything a listing's entry would."""

    __slots__ = ("_stat", "name")

    def __init__(self, name: str, result: os.stat_result) -> None:
        self.name = name
        self._stat = result

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return stat.S_ISDIR(self._stat.st_mode)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return stat.S_ISREG(self._stat.st_mode)

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self._stat.st_mode)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._stat


class PathSorter:
    """Sorts entries under one root into collected files and skip reasons.

    The full walk and the check of given paths both go through :meth:`_sort`, so they cannot
    disagree on any entry. For given paths, the rules in force in each folder are worked out
    from the root down once per sorter (each ignore file is read once), and kept: a sorter
    reflects the files as they were when it first looked, so make a new one per batch.
    """

    def __init__(self, root: Path | str, config: Config) -> None:
        self._root_dir = os.path.abspath(root)
        self._files: dict[str, tuple[int, int]] = {}
        self._skipped: defaultdict[str, set[str]] = defaultdict(set)
        self._exclude = _rules(config.exclude)
        self._include = (
            pathspec.GitIgnoreSpec.from_lines(config.include) if config.include else None
        )
        self._never = _never_collected(self._root_dir, config)
        self._max_size = config.max_file_size
        self._respect_gitignore = config.respect_gitignore
        self._above = _rules_above(self._root_dir) if config.respect_gitignore else ()
        self._folders: dict[str, _RuleStack | None] = {}

    def collection(self) -> Collection:
        """What was sorted so far."""
        return Collection(
            self._files, {reason: sorted(paths) for reason, paths in self._skipped.items()}
        )

    def walk(self) -> None:
        """Sorts the whole tree, as :func:`collect` does."""
        self._walk("", self._root_dir, self._above)

    def add(self, path: str) -> None:
        """Sorts one root-relative POSIX path as the walk would: a file into the files or a
        skip reason, a folder by walking it. A path that does not exist is left out, and so is
        one below a folder the walk never enters (whose own reason is recorded instead, as the
        walk records it: ``build/`` for ``build/out.js``)."""
        path = _normal(path)
        if not path:
            self.walk()
            return
        parent, _, name = path.rpartition("/")
        rules = self._rules_in(parent)
        if rules is None:
            return
        abs_path = os.path.join(self._root_dir, path)
        try:
            entry = _Lstat(name, os.lstat(abs_path))
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError:
            self._skipped[SKIP_UNREADABLE].add(path)
            return
        if self._sort(entry, path, rules):
            self._walk(path, abs_path, rules)

    def ignores(self, path: str) -> bool:
        """Whether the rules leave ``path`` out whatever it holds.

        Judged by the name alone (a folder ends with ``/``) so that a deleted path is judged
        too: it is ``.git`` or one of our index folders, lies in a folder the walk never
        enters, matches an ignore rule, or misses the ``include`` globs.
        """
        folder = path.endswith("/")
        path = _normal(path)
        if not path:
            return False
        parent, _, name = path.rpartition("/")
        rules = self._rules_in(parent)
        if rules is None:
            return True
        if folder:
            return name == ".git" or self._skips_folder(path, rules) is not None
        return name == ".git" or self._ignores_file(path, rules)

    def _walk(self, rel_dir: str, abs_dir: str, rules: _RuleStack) -> None:
        """Sorts everything in a folder the walk enters and below, iteratively (no recursion
        limit, no symlink loops); ``rules`` are those of the folder's parent."""
        stack = [(rel_dir, abs_dir, rules)]
        while stack:
            rel_dir, abs_dir, rules = stack.pop()
            prefix = f"{rel_dir}/" if rel_dir else ""
            try:
                with os.scandir(abs_dir) as listing:
                    entries = list(listing)
            except (FileNotFoundError, NotADirectoryError):
                self._skipped[SKIP_DELETED].add(prefix or ".")  # gone since its parent's listing
                continue
            except OSError:
                self._skipped[SKIP_UNREADABLE].add(prefix or ".")
                continue
            names = {entry.name: entry for entry in entries}
            # Looked for here, where the listing is at hand, rather than by trying to open a
            # .git in every folder before entering it (the root may be a linked worktree).
            if rel_dir and ".git" in names and _linked_worktree(abs_dir):
                self._skipped[SKIP_IGNORED].add(prefix)
                continue
            gitignore = names.get(".gitignore") if self._respect_gitignore else None
            # A symlinked .gitignore is not followed, as in git since 2.32.
            if gitignore is not None and gitignore.is_file(follow_symlinks=False):
                rules = self._with_gitignore(gitignore.path, prefix, rules)
            for entry in entries:
                path = prefix + entry.name
                if self._sort(entry, path, rules):
                    stack.append((path, entry.path, rules))

    def _sort(self, entry: _Entry, path: str, rules: _RuleStack) -> bool:
        """Records where one entry goes; ``True`` for a folder to enter."""
        if entry.name == ".git":
            return False
        try:
            if not is_storable(path):
                folder = entry.is_dir(follow_symlinks=False)
                self._skipped[SKIP_BAD_NAME].add(scrub(path) + ("/" if folder else ""))
                return False
            if entry.is_dir(follow_symlinks=False):
                reason = self._skips_folder(path, rules, worktree=False)  # _walk checks
                if reason:
                    self._skipped[reason].add(f"{path}/")
                return reason is None
            if self._ignores_file(path, rules):
                self._skipped[SKIP_IGNORED].add(path)
                return False
            if entry.is_symlink():
                self._skipped[SKIP_SYMLINK].add(path)
                return False
            if not entry.is_file(follow_symlinks=False):
                self._skipped[SKIP_UNREADABLE].add(path)
                return False
            result = entry.stat(follow_symlinks=False)
        except FileNotFoundError:  # gone since the folder was listed
            self._skipped[SKIP_DELETED].add(path)
            return False
        except OSError:
            self._skipped[SKIP_UNREADABLE].add(path)
            return False
        if result.st_size > self._max_size:
            self._skipped[SKIP_TOO_LARGE].add(path)
        else:
            self._files[path] = (result.st_mtime_ns, result.st_size)
        return False

    def _skips_folder(self, path: str, rules: _RuleStack, *, worktree: bool = True) -> str | None:
        """Why the walk does not enter a folder: ``""`` when it passes over it silently (our
        index folders), ``"ignored"``, or ``None`` when it enters. ``worktree`` also looks
        inside it for a linked worktree's ``.git`` file."""
        if path in self._never:
            return ""
        if _ignored(f"{path}/", rules, self._exclude) or (
            worktree and _linked_worktree(os.path.join(self._root_dir, path))
        ):
            return SKIP_IGNORED
        return None

    def _ignores_file(self, path: str, rules: _RuleStack) -> bool:
        # coderecall's own settings may hold an API key (embedding.api-key): never searchable,
        # nor sent to an embedding provider.
        return (
            path.rpartition("/")[2] == PROJECT_FILE
            or _ignored(path, rules, self._exclude)
            or (self._include is not None and not self._include.match_file(path))
        )

    def _with_gitignore(self, path: str, prefix: str, rules: _RuleStack) -> _RuleStack:
        """``rules`` plus a folder's own ``.gitignore`` at ``path``, which takes precedence."""
        try:
            own = _read_rules(path, strip=len(prefix))
        except OSError:
            self._skipped[SKIP_UNREADABLE].add(f"{prefix}.gitignore")
            return rules
        return rules if own is None else (own, *rules)

    def _rules_in(self, rel_dir: str) -> _RuleStack | None:
        """The rules in force inside a folder, or ``None`` when the walk never enters it.

        Worked out from the deepest folder already known down, iteratively, since paths can
        be deep. A folder that no longer exists is judged as an empty one would be (recording
        nothing), so that paths below a deleted folder are still judged by the rules.
        """
        if rel_dir in self._folders:
            return self._folders[rel_dir]
        chain = [rel_dir]
        while chain[-1] and chain[-1].rpartition("/")[0] not in self._folders:
            chain.append(chain[-1].rpartition("/")[0])
        rules: _RuleStack | None = None
        for folder in reversed(chain):
            if folder:
                outer = self._folders[folder.rpartition("/")[0]]
                rules = None if outer is None else self._enter(folder, outer)
            else:
                rules = self._enter_root()
            self._folders[folder] = rules
        return rules

    def _enter_root(self) -> _RuleStack | None:
        return self._listed("", self._root_dir, self._above)

    def _enter(self, rel_dir: str, outer: _RuleStack) -> _RuleStack | None:
        """The rules inside folder ``rel_dir`` of a folder entered with ``outer`` in force."""
        abs_dir = os.path.join(self._root_dir, rel_dir)
        if rel_dir.rpartition("/")[2] == ".git":
            return None
        try:
            mode = os.lstat(abs_dir).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return outer if self._skips_folder(rel_dir, outer) is None else None
        except OSError:
            mode = stat.S_IFDIR  # the walk would list it and fail: unreadable, unless skipped
        if not stat.S_ISDIR(mode):
            return None  # no path can lie below a file; a symlink is never followed
        reason = self._skips_folder(rel_dir, outer)
        if reason is not None:
            if reason:
                self._skipped[reason].add(f"{rel_dir}/")
            return None
        return self._listed(f"{rel_dir}/", abs_dir, outer)

    def _listed(self, prefix: str, abs_dir: str, rules: _RuleStack) -> _RuleStack | None:
        """What the walk does on entering a folder: list it (here only checking that it can
        be), then add its ``.gitignore``."""
        try:
            os.scandir(abs_dir).close()
        except FileNotFoundError:
            return rules
        except OSError:
            self._skipped[SKIP_UNREADABLE].add(prefix or ".")
            return None
        if not self._respect_gitignore:
            return rules
        path = os.path.join(abs_dir, ".gitignore")
        try:
            is_file = stat.S_ISREG(os.lstat(path).st_mode)
        except OSError:
            return rules
        return self._with_gitignore(path, prefix, rules) if is_file else rules


def collect(root: Path, config: Config) -> Collection:
    """Walk ``root`` and sort what it finds."""
    sorter = PathSorter(root, config)
    sorter.walk()
    return sorter.collection()


def collect_paths(root: Path, config: Config, paths: Iterable[str]) -> Collection:
    """Sort only ``paths`` (root-relative POSIX; a folder stands for everything below it) by
    the rules of :func:`collect`, without walking the rest of the tree.

    A path that does not exist is absent from both ``files`` and ``skipped``. Raises
    ``ValueError`` for a path outside the root.
    """
    sorter = PathSorter(root, config)
    for path in paths:
        sorter.add(path)
    return sorter.collection()


def scope_of(paths: Iterable[str]) -> list[str] | None:
    """The normalised ``paths`` that :func:`collect_paths` gives the whole truth about (each
    stands for itself and everything below it), for reading the same part of the index;
    ``None`` when the root itself is among them. A path that is not UTF-8 is left out: the
    index holds nothing under it."""
    given = sorted({_normal(path) for path in paths if is_storable(path)})
    return None if "" in given else given


def _linked_worktree(folder: str) -> bool:
    """Whether ``folder`` is a linked worktree (``git worktree add`` inside the checkout): its
    ``.git`` is a file naming ``<git dir>/worktrees/<name>``. Its files are another branch's,
    indexed as a view of their own; in this one they would double every definition. (A
    submodule's ``.git`` file names ``modules/``: its files are this checkout's.)"""
    try:
        with open(os.path.join(folder, ".git"), "rb") as handle:
            head = handle.read(4096)
    except OSError:  # mostly: no such file (or a folder: a nested repository)
        return False
    text = head.decode("utf-8", "replace").strip().replace("\\", "/")
    return text.startswith("gitdir:") and "/worktrees/" in text


def _normal(path: str) -> str:
    """A root-relative POSIX path without ``.``, ``..`` or a trailing ``/``; ``""`` is the
    root. Raises ``ValueError`` for a path that is absolute or leaves the root."""
    normal = posixpath.normpath(path) if path else "."
    if normal == ".":
        return ""
    if normal.startswith(("/", "../")) or normal == "..":
        raise ValueError(f"{path!r} is not a relative path inside the root")
    return normal


def _ignored(path: str, rules: _RuleStack, exclude: _Rules | None = None) -> bool:
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
