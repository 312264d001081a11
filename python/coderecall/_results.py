"""The small, immutable result objects the API returns (plain data, JSON-ready via ``to_dict``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["EmbeddingEstimate", "HealthReport", "IndexReport", "IndexStatus", "SearchHit"]


def counted(n: int, noun: str) -> str:
    """``1 file``, ``2,048 files``: a count and its noun for people to read."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: a chunk of a file, best first in a result list."""

    path: str
    """File path relative to the root, with ``/`` separators."""
    start_line: int
    """First line of the chunk, 1-based."""
    end_line: int
    """Last line of the chunk, inclusive."""
    language: str
    kind: str
    """What the chunk is: ``function``, ``method``, ``class``, ``section``, ..."""
    symbol: str
    """Name of the chunk's symbol (``""`` for chunks without one). A chunk may hold several
    small units (a class's getters, a run of one-line helpers): a query that names one (an
    identifier, or a sentence with a compound identifier such as ``parse_args``) gets that
    unit's name, ``kind`` and ``symbol_path``, the lines staying the chunk's."""
    symbol_path: str
    """Qualified name, such as ``pkg.module.Class.method``."""
    score: float
    """Relevance; comparable only within one result list."""
    content: str | None
    """The chunk's source text, or ``None`` when it was not requested."""
    channels: tuple[str, ...] = ("lexical",)
    """Which retrieval channels found it: ``"lexical"``, ``"semantic"`` or both."""
    source: str = "code"
    """Where it comes from: ``"code"`` (the project), or a knowledge base's name (then
    ``path`` is relative to that knowledge base's folder)."""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["channels"] = list(self.channels)
        return data


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one indexing run did. Every file left out is counted under a reason."""

    root: Path
    files_seen: int
    """Candidate files after ignore rules, globs and the size cap."""
    files_unchanged: int
    """Candidates whose (mtime, size) matched the index, so they cost one stat."""
    files_parsed: int
    """Files whose content was new to the index and had to be parsed."""
    files_reused: int
    """Changed files whose content the index already held (a branch switch back, a copy)."""
    files_removed: int
    chunks_added: int
    symbols_added: int
    bytes_parsed: int
    skipped: Mapping[str, int]
    """Reason (``"ignored"``, ``"binary"``, ``"too large"``, ...) -> number of files."""
    skipped_examples: Mapping[str, tuple[str, ...]]
    """Reason -> a few of the paths, to show what a reason covers."""
    seconds: float
    generation: int
    """Number of the index state this run published."""
    decoded: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Files parsed by this run whose text was not UTF-8, by how they were decoded
    (the WHATWG name of a legacy encoding such as ``"windows-1252"`` or ``"Shift_JIS"``,
    ``"UTF-16LE"``, ``"UTF-16BE"``, ``"UTF-8 with invalid bytes replaced"``): indexed all
    the same."""
    decoded_examples: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Encoding -> a few of those paths."""
    embedding_model: str | None = None
    """The semantic channel's model id, or ``None`` when the index is lexical-only."""
    chunks_embedded: int = 0
    """Chunk contents embedded by this run (contents the model had seen cost nothing)."""
    embeddings_pending: int = 0
    """Contents still without a vector (after an error or Ctrl-C); the next run embeds them."""
    embedding_error: str | None = None
    """Why embedding stopped early, if it did; the lexical index is published regardless."""
    notices: tuple[str, ...] = ()
    """Things worth telling the user once, such as how to enable semantic search."""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["root"] = str(self.root)
        data["notices"] = list(self.notices)
        data["skipped"] = dict(self.skipped)
        data["skipped_examples"] = {k: list(v) for k, v in self.skipped_examples.items()}
        data["decoded"] = dict(self.decoded)
        data["decoded_examples"] = {k: list(v) for k, v in self.decoded_examples.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexReport:
        """Inverse of :meth:`to_dict`, for the report stored with the index."""
        fields = {field.name for field in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in fields}
        values["root"] = Path(data["root"])
        values["skipped"] = dict(data["skipped"])
        values["skipped_examples"] = {k: tuple(v) for k, v in data["skipped_examples"].items()}
        values["decoded"] = dict(data.get("decoded", {}))  # reports stored before it: none
        examples = data.get("decoded_examples", {})
        values["decoded_examples"] = {k: tuple(v) for k, v in examples.items()}
        values["notices"] = tuple(data.get("notices", ()))
        return cls(**values)


@dataclass(frozen=True, slots=True)
class EmbeddingEstimate:
    """What embedding the chunks that have no vector yet would cost; nothing was sent."""

    provider: str
    model: str | None
    chunks: int
    """Chunk contents without a vector for the model (each distinct content counts once)."""
    tokens: int
    """Tokens they amount to (counted by a local tokenizer, or estimated for a remote API)."""
    cost_usd: float
    """At the provider's list price (0 for local engines)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """The state of a project's index, as cheap to get as a few database counts."""

    root: Path
    index_dir: Path
    exists: bool
    """Whether an index has been built (if not, every count is zero)."""
    generation: int
    files: int
    chunks: int
    symbols: int
    file_versions: int
    """Distinct file contents stored; above ``files`` when other branches' versions are kept."""
    languages: Mapping[str, int]
    """Language -> number of files."""
    db_bytes: int
    lexical_bytes: int
    last_indexed: datetime | None
    last_report: IndexReport | None
    embedding_model: str | None = None
    """The model the index's vectors were last computed with (``None`` if none was)."""
    vectors: int = 0
    """Stored vectors of that model: one per distinct chunk content."""
    watched: bool = False
    """Whether a watcher (``coderecall watch``, an MCP server, :meth:`CodeIndex.watch`) keeps
    the index current right now, in this process or another."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "index_dir": str(self.index_dir),
            "exists": self.exists,
            "generation": self.generation,
            "files": self.files,
            "chunks": self.chunks,
            "symbols": self.symbols,
            "file_versions": self.file_versions,
            "languages": dict(self.languages),
            "db_bytes": self.db_bytes,
            "lexical_bytes": self.lexical_bytes,
            "last_indexed": self.last_indexed.isoformat() if self.last_indexed else None,
            "last_report": self.last_report.to_dict() if self.last_report else None,
            "embedding_model": self.embedding_model,
            "vectors": self.vectors,
            "watched": self.watched,
        }


@dataclass(frozen=True, slots=True)
class IndexMetrics:
    """What ``index_metrics`` reports: the index's counts and sizes, its call graph, and the
    latency of this process's recent operations."""

    status: IndexStatus
    graph: Mapping[str, float]
    """Definitions, edges by confidence, inheritance edges, build seconds (empty when the
    index was never built)."""
    vectors: int
    """Stored vectors of the recorded embedding model."""
    embedding_model: str | None
    knowledge_bases: int
    operations: Mapping[str, Mapping[str, float]]
    """Operation -> count, p50_ms, p95_ms, max_ms (this process, last 1024 runs each)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.to_dict(),
            "graph": dict(self.graph),
            "vectors": self.vectors,
            "embedding_model": self.embedding_model,
            "knowledge_bases": self.knowledge_bases,
            "operations": {op: dict(stats) for op, stats in self.operations.items()},
        }


@dataclass(frozen=True, slots=True)
class HealthReport:
    """What :meth:`CodeIndex.health` found: the store checked against its derived files."""

    index_dir: Path
    problems: tuple[str, ...]
    """Each problem found, in words; empty when the index is sound."""
    repaired: tuple[str, ...]
    """What a repair did (rebuilt derived files from the store, removed leftovers)."""
    exists: bool = True
    """Whether the root was ever indexed (a first index killed before it published counts as
    never): with no index there is nothing to damage, and nothing was checked."""

    @property
    def ok(self) -> bool:
        """Whether no problem was found (a repair may have fixed the ones that were)."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "index_dir": str(self.index_dir),
            "exists": self.exists,
            "ok": self.ok,
            "problems": list(self.problems),
            "repaired": list(self.repaired),
        }
