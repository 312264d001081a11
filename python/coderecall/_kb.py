"""Knowledge bases: extra folders (docs, a sibling repository) indexed beside the code.

Each knowledge base is a view of the same store, named by its absolute folder like any root,
so its files share content-addressed storage, vectors and garbage collection with the code.
The list lives in the store's metadata (key ``knowledge_bases``): every worktree of the
repository sees the same knowledge bases. Searches run over the code and every knowledge
base by default, or over a chosen ``source``; lists from different sources are merged by
reciprocal rank, because BM25 scores of different corpora are not comparable.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ._errors import QueryError
from ._lease import WriteLease
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
    """Whether the folder is still there (a missing one keeps its index until removed)."""
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
    labelled with its source; ties keep the sources' order."""
    scored: list[tuple[float, int, int, SearchHit]] = []
    for order, (source, hits) in enumerate(lists):
        for rank, hit in enumerate(hits):
            labelled = dataclasses.replace(hit, source=source)
            scored.append((1.0 / (_RRF_K + rank + 1), -order, -rank, labelled))
    scored.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
    return [hit for *_, hit in scored[:limit]]


class KnowledgeBases:
    """The knowledge bases of one project's index, and their own indexes (one
    :class:`~coderecall.CodeIndex` per folder, opened on first use, closed with the owner)."""

    def __init__(self, owner: CodeIndex) -> None:
        self._owner = owner
        self._lock = threading.Lock()
        self._open: dict[str, CodeIndex] = {}

    def close(self) -> None:
        with self._lock:
            indexes, self._open = list(self._open.values()), {}
        for index in indexes:
            index.close()

    def add(
        self,
        path: str | os.PathLike[str],
        name: str | None,
        *,
        index: bool,
        progress: bool | ProgressCallback | None,
    ) -> KnowledgeBase:
        root = self._owner.root
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise QueryError(f"{str(path)!r} is not a folder")
        if folder == root or root in folder.parents:
            raise QueryError(
                f"{folder} is inside the project root and already indexed; "
                "search it with directory= instead"
            )
        if folder in root.parents:
            raise QueryError(f"{folder} holds the project root: the code would be indexed twice")
        if folder.parent == folder or folder == Path.home().resolve():
            raise QueryError(f"refusing to index {folder} as a knowledge base (too broad)")
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
            self._index(label, folder).index(progress=progress)
        return next(kb for kb in self.listed() if kb.name == label)

    def listed(self) -> list[KnowledgeBase]:
        native = self._owner._open_existing()
        if native is None:
            return []
        out = []
        for entry in load_entries(native):
            folder = Path(entry["path"])
            exists = folder.is_dir()
            status = self._index(entry["name"], folder).status() if exists else None
            out.append(
                KnowledgeBase(
                    name=entry["name"],
                    path=folder,
                    added=_parse_time(entry["added"]) or datetime.now(timezone.utc),
                    exists=exists,
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
            entries = load_entries(native)
            gone = [e for e in entries if e["name"] == name]
            if not gone:
                return False
            save_entries(native, [e for e in entries if e["name"] != name])
            with self._lock:
                index = self._open.pop(name, None)
            if index is not None:
                index.close()
            native.drop_view(gone[0]["path"])
        return True

    def sources(self, source: str | Sequence[str] | None) -> list[tuple[str, CodeIndex]]:
        """(label, index) pairs to search for ``source`` (see ``CodeIndex.search``)."""
        wanted = [source] if isinstance(source, str) else list(source or [])
        native = self._owner._open_existing()
        entries = load_entries(native) if native is not None else []
        kbs = [(e["name"], Path(e["path"])) for e in entries if Path(e["path"]).is_dir()]
        if not wanted:
            return [(CODE, self._owner)] + [(n, self._index(n, f)) for n, f in kbs]
        out: list[tuple[str, CodeIndex]] = []
        for item in wanted:
            if item == CODE:
                out.append((CODE, self._owner))
            elif item == "kb":
                out.extend((n, self._index(n, f)) for n, f in kbs)
            else:
                match = [(n, f) for n, f in kbs if n == item]
                if not match:
                    known = ", ".join([CODE, "kb", *(n for n, _ in kbs)])
                    raise QueryError(f"unknown source {item!r}; known: {known}")
                out.append((item, self._index(*match[0])))
        return list(dict.fromkeys(out))

    def refresh(self, native: NativeIndex, *, force: bool, embed: bool, wait: bool | float) -> None:
        """Brings every knowledge base up to date (what ``CodeIndex.index`` does last)."""
        for entry in load_entries(native):
            folder = Path(entry["path"])
            if not folder.is_dir():
                _log.warning(
                    "knowledge base %s: %s is gone (remove it with `coderecall kb remove %s`)",
                    entry["name"],
                    folder,
                    entry["name"],
                )
                continue
            report = self._index(entry["name"], folder).index(
                force, progress=False, embed=embed, wait=wait
            )
            _log.info(
                "knowledge base %s: %d files, %d parsed",
                entry["name"],
                report.files_seen,
                report.files_parsed,
            )

    def _index(self, name: str, folder: Path) -> CodeIndex:
        with self._lock:
            index = self._open.get(name)
            if index is None or index.root != folder:
                index = self._owner._knowledge_base_index(folder)
                self._open[name] = index
            return index


def _parse_time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
