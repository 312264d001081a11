"""Knowledge bases: extra folders (docs, a sibling repository) indexed beside the code.

Each knowledge base is a view of the same store, named by its absolute folder like any root,
so its files share content-addressed storage, vectors and garbage collection with the code.
The list lives in the store's metadata (key ``knowledge_bases``): every worktree of the
repository sees the same knowledge bases. Searches run over the code and every knowledge
base by default, or over a chosen ``source``; lists from different sources are merged by
reciprocal rank, because BM25 scores of different corpora are not comparable.

Any process may add or remove a knowledge base while others search it, so each process keeps
the index it opened for one entry of the list (a re-added one is a new view: its ``added``
differs) and retires it when the entry changes, is removed, or fails: a retired index never
opens again, since opening re-creates a view that removal dropped.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ._collect import PathSorter
from ._errors import Error, QueryError, StoreError
from ._lease import WriteLease
from ._paths import find_git
from ._progress import ProgressCallback
from ._results import SearchHit

if TYPE_CHECKING:
    from ._index import CodeIndex
    from ._native import NativeIndex

__all__ = [
    "CODE",
    "KnowledgeBase",
    "KnowledgeBases",
    "fuse",
    "load_entries",
    "save_entries",
    "valid_name",
]

META_KEY = "knowledge_bases"
CODE = "code"
"""The ``source`` of hits in the project's own files."""
_RESERVED = {CODE, "kb", "all"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_RRF_K = 60

_log = logging.getLogger("coderecall")


class Entry(TypedDict):
    name: str
    path: str
    added: str


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    """A folder indexed beside the code and searchable with it or alone."""

    name: str
    path: Path
    added: datetime
    exists: bool
    """Whether the folder is still there. A missing one stays listed and searchable in the
    index it keeps until removed (or until ``gc-grace`` after its last indexing, when garbage
    collection drops the views of folders that no longer exist)."""
    files: int
    chunks: int
    last_indexed: datetime | None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["path"] = str(self.path)
        data["added"] = self.added.isoformat()
        data["last_indexed"] = self.last_indexed.isoformat() if self.last_indexed else None
        return data


def valid_name(name: str) -> str:
    if not _NAME.fullmatch(name) or name.lower() in _RESERVED:
        raise QueryError(
            f"bad knowledge base name {name!r}: use letters, digits, '_', '.' or '-' "
            f"(up to 64), not one of {', '.join(sorted(_RESERVED))}"
        )
    return name


def load_entries(native: NativeIndex) -> list[Entry]:
    raw = native.get_meta(META_KEY)
    if not raw:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(data, list):
        return []
    return [
        Entry(name=str(e["name"]), path=str(e["path"]), added=str(e.get("added", "")))
        for e in data
        if isinstance(e, dict) and "name" in e and "path" in e
    ]


def save_entries(native: NativeIndex, entries: Sequence[Entry]) -> None:
    native.set_meta(META_KEY, json.dumps(list(entries), sort_keys=True))


def fuse(lists: Sequence[tuple[str, list[SearchHit]]], limit: int) -> list[SearchHit]:
    """Merges ranked lists from several sources by reciprocal rank (k = 60), each hit
    labelled with its source; ties keep the sources' order. A hit scored 0 (no word of the
    query in it, the last of a semantic channel's neighbours) is no evidence: by rank alone
    a source's first such hit would take the second place of every search."""
    scored: list[tuple[float, int, int, SearchHit]] = []
    for order, (source, hits) in enumerate(lists):
        for rank, hit in enumerate(hit for hit in hits if hit.score > 0):
            labelled = dataclasses.replace(hit, source=source)
            scored.append((1.0 / (_RRF_K + rank + 1), -order, -rank, labelled))
    scored.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
    return [hit for *_, hit in scored[:limit]]


class KnowledgeBases:
    """The knowledge bases of one project's index, and their own indexes (one
    :class:`~coderecall.CodeIndex` per folder, opened on first use, closed with the owner)."""

    def __init__(self, owner: CodeIndex) -> None:
        self._owner = owner
        self._lock = threading.Lock()  # reading the list and opening indexes vs. removal
        self._open: dict[str, _Slot] = {}

    def close(self) -> None:
        with self._lock:
            slots, self._open = list(self._open.values()), {}
        for slot in slots:
            # Retired, not just closed: a search still holding one would reopen it, and
            # nothing would close it again.
            slot.retire()

    def add(
        self,
        path: str | os.PathLike[str],
        name: str | None,
        *,
        index: bool,
        progress: bool | ProgressCallback | None,
    ) -> KnowledgeBase:
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise QueryError(f"{str(path)!r} is not a folder")
        self._check_folder(folder)
        label = valid_name(name if name is not None else folder.name)
        native = self._owner._open()
        with WriteLease(self._owner.index_dir).hold(True):
            entries = load_entries(native)
            for entry in entries:
                if entry["name"] == label and Path(entry["path"]) != folder:
                    raise QueryError(
                        f"a knowledge base named {label!r} already indexes {entry['path']}"
                    )
                if entry["name"] != label and Path(entry["path"]) == folder:
                    raise QueryError(f"{folder} is already the knowledge base {entry['name']!r}")
            if not any(e["name"] == label for e in entries):
                added = datetime.now(timezone.utc).isoformat()
                entries.append({"name": label, "path": str(folder), "added": added})
                save_entries(native, entries)
        if index:
            slot = next(s for s in self._slots(native) if s.entry["name"] == label)
            slot.index.index(progress=progress)
        return next(kb for kb in self.listed() if kb.name == label)

    def _check_folder(self, folder: Path) -> None:
        """Refuses a folder the project's walk indexes already, and one whose index would
        be the project's own or a worktree's."""
        root = self._owner.root
        if folder == root or root in folder.parents:
            relative = folder.relative_to(root)
            if ".git" in relative.parts or self._owner.index_dir in (folder, *folder.parents):
                raise QueryError(f"{folder} holds git's or coderecall's own files")
            # A folder the walk leaves out (gitignored vendor docs) is not indexed: the
            # collector's own rules decide, so the two can never disagree.
            sorter = PathSorter(root, self._owner.config)
            if folder == root or not sorter.ignores(f"{relative.as_posix()}/"):
                raise QueryError(
                    f"{folder} is inside the project root and already indexed; "
                    "search it with --dir (directory= in Python) instead"
                )
        if folder in root.parents:
            raise QueryError(f"{folder} holds the project root: the code would be indexed twice")
        if folder.parent == folder or folder == Path.home().resolve():
            raise QueryError(f"refusing to index {folder} as a knowledge base (too broad)")
        if _worktree_of_same_repository(root, folder):
            raise QueryError(
                f"{folder} is a worktree of this repository, indexed on its own in this same "
                "index (a knowledge base would be that worktree's own view, and removing it "
                f"would drop it): search it with `coderecall search --path {folder}` or "
                f"CodeIndex({str(folder)!r})"
            )

    def listed(self) -> list[KnowledgeBase]:
        native = self._owner._open_existing()
        if native is None:
            return []
        out = []
        for slot in self._slots(native):
            entry = slot.entry
            try:  # a missing folder's index is kept, and counted
                status = slot.index.status()
            except Error as exc:  # removed meanwhile, or its view is damaged
                _log.info("knowledge base %s: no status (%s)", entry["name"], exc)
                status = None
            out.append(
                KnowledgeBase(
                    name=entry["name"],
                    path=Path(entry["path"]),
                    added=_parse_time(entry["added"]) or datetime.now(timezone.utc),
                    exists=Path(entry["path"]).is_dir(),
                    files=status.files if status else 0,
                    chunks=status.chunks if status else 0,
                    last_indexed=status.last_indexed if status else None,
                )
            )
        return out

    def remove(self, name: str) -> bool:
        native = self._owner._open_existing()
        if native is None:
            return False
        with WriteLease(self._owner.index_dir).hold(True):
            # Under the lock, so that no search of this process opens it again after this
            # (which would re-create the view dropped below).
            with self._lock:
                entries = load_entries(native)
                gone = [e for e in entries if e["name"] == name]
                if not gone:
                    return False
                save_entries(native, [e for e in entries if e["name"] != name])
                slot = self._open.pop(name, None)
            if slot is not None:
                slot.retire()
            folder = Path(gone[0]["path"])
            # A list written before worktrees were refused may name one: its view is that
            # worktree's own index, which servers of it are using.
            if folder == self._owner.root or _worktree_of_same_repository(self._owner.root, folder):
                _log.warning("knowledge base %s: %s keeps its own index", name, folder)
            else:
                native.drop_view(str(folder))
        return True

    def sources(self, source: str | Sequence[str] | None) -> list[tuple[str, CodeIndex]]:
        """(label, index) pairs to search for ``source`` (see ``CodeIndex.search``); a
        knowledge base whose folder is missing is searched in the index it keeps."""
        wanted = [source] if isinstance(source, str) else list(source or [])
        native = self._owner._open_existing()
        slots = self._slots(native) if native is not None else []
        kbs = [(slot.entry["name"], slot.index) for slot in slots]
        if not wanted:
            return [(CODE, self._owner), *kbs]
        out: list[tuple[str, CodeIndex]] = []
        for item in wanted:
            if item == CODE:
                out.append((CODE, self._owner))
            elif item == "kb":
                out.extend(kbs)
            else:
                match = [(n, i) for n, i in kbs if n == item]
                if not match:
                    known = ", ".join([CODE, "kb", *(n for n, _ in kbs)])
                    raise QueryError(f"unknown source {item!r}; known: {known}")
                out.append(match[0])
        return list(dict.fromkeys(out))

    def refresh(self, native: NativeIndex, *, force: bool, embed: bool, wait: bool | float) -> None:
        """Brings every knowledge base up to date (what ``CodeIndex.index`` does last)."""
        for slot in self._slots(native):
            name, folder = slot.entry["name"], Path(slot.entry["path"])
            if not folder.is_dir():
                _log.warning(
                    "knowledge base %s: %s is gone (remove it with `coderecall kb remove %s`)",
                    name,
                    folder,
                    name,
                )
                continue
            # An earlier one's run may have been long: one removed meanwhile by another
            # process must not be indexed back into being.
            if slot.entry not in load_entries(native):
                continue
            try:
                report = slot.index.index(force, progress=False, embed=embed, wait=wait)
            except StoreError as exc:  # removed meanwhile, or its view is gone or damaged
                if not slot.gate.retired:
                    _log.warning("knowledge base %s not refreshed: %s", name, exc)
                    slot.retire()  # the next use opens it afresh
                continue
            _log.info(
                "knowledge base %s: %d files, %d parsed",
                name,
                report.files_seen,
                report.files_parsed,
            )

    def _slots(self, native: NativeIndex) -> list[_Slot]:
        """The index of every listed knowledge base, in the list's order, opened for its
        entry as it is now; those of entries gone or changed (another process removed or
        re-added them) and those that failed are retired."""
        with self._lock:
            entries = load_entries(native)
            stale = [s for s in self._open.values() if s.gate.retired or s.entry not in entries]
            for slot in stale:
                del self._open[slot.entry["name"]]
            for entry in entries:
                if entry["name"] not in self._open:
                    gate = _Gate()
                    index = _index_type()(self._owner, entry, gate)
                    self._open[entry["name"]] = _Slot(entry, index, gate)
            slots = [self._open[entry["name"]] for entry in entries]
        for slot in stale:
            slot.retire()
        return slots


class _Gate:
    """Whether a knowledge base's index may still open its view."""

    __slots__ = ("lock", "retired")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.retired = False

    def retire(self, index: CodeIndex) -> None:
        """Never to open again, and closed: searches running on it end without it."""
        with self.lock:  # waits for an opening under way, which close() then undoes
            self.retired = True
        index.close()


@dataclass(frozen=True, slots=True)
class _Slot:
    """A knowledge base's index as opened for one entry of the list."""

    entry: Entry
    index: CodeIndex
    gate: _Gate

    def retire(self) -> None:
        self.gate.retire(self.index)


@functools.cache
def _index_type() -> Callable[[CodeIndex, Entry, _Gate], CodeIndex]:
    """The class of a knowledge base's index, defined on first use: ``_index`` imports this
    module, so ``CodeIndex`` does not exist yet when it is loaded."""
    from ._index import CodeIndex, _Filters

    class KnowledgeBaseIndex(CodeIndex):
        """A knowledge base's own index: a view of the project's store named by its folder,
        which never opens once retired, and whose failures leave it out of a search rather
        than failing the search."""

        def __init__(self, owner: CodeIndex, entry: Entry, gate: _Gate) -> None:
            config = dataclasses.replace(owner.config, index_dir=owner.index_dir)
            # Made on the project's root, then pointed at the folder: a missing folder (an
            # unmounted share, a checkout being cloned again) is still searched in its view.
            super().__init__(owner.root, config, force=True)
            self._root = Path(entry["path"])
            self._is_kb = True
            self._name = entry["name"]
            self._gate = gate

        def _open(self, *, rebuild_broken: bool = False) -> NativeIndex:
            with self._gate.lock:
                if self._gate.retired:
                    raise StoreError(f"knowledge base {self._name} was removed or reopened")
                return super()._open(rebuild_broken=rebuild_broken)

        def _search_here(self, query: str, filters: _Filters) -> list[SearchHit]:
            if not self._root.is_dir():
                self._built = True  # searched as kept: indexing it would publish it empty
            try:
                return super()._search_here(query, filters)
            except QueryError:  # the query's fault: the code's search says it too
                raise
            except Error as exc:
                if not self._gate.retired:
                    _log.warning("knowledge base %s left out of a search: %s", self._name, exc)
                    self._gate.retire(self)  # the next search opens it afresh
                return []

    return KnowledgeBaseIndex


def _worktree_of_same_repository(root: Path, folder: Path) -> bool:
    """Whether ``folder`` is the top of a worktree of ``root``'s repository: its index is
    the same store, and its view is named by that folder."""
    ours, theirs = find_git(root), find_git(folder)
    return (
        ours is not None
        and theirs is not None
        and theirs.work_tree == folder
        and theirs.common_dir.resolve() == ours.common_dir.resolve()
    )


def _parse_time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
