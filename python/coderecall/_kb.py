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
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ._errors import QueryError
from ._results import SearchHit

if TYPE_CHECKING:
    from ._native import NativeIndex

__all__ = ["CODE", "KnowledgeBase", "fuse", "load_entries", "save_entries", "valid_name"]

META_KEY = "knowledge_bases"
CODE = "code"
"""The ``source`` of hits in the project's own files."""
_RESERVED = {CODE, "kb", "all"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_RRF_K = 60


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
