"""Markdown tables for people and one JSON document for machines, from the same numbers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benches.quality.metrics import METRICS, Outcome, Summary, summarize
from benches.quality.queries import FAMILIES, FAMILY_NAMES, Query


@dataclass(slots=True)
class ProjectInfo:
    """What the run learned about one corpus, for the header table and the notes."""

    name: str
    language: str
    version: str
    source: str
    archive_sha256: str
    files: int = 0
    windows: int = 0
    index_seconds: float = 0.0
    candidates: dict[str, int] = field(default_factory=dict)
    queries: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Record:
    """One system's outcome on one query."""

    system: str
    query: Query
    outcome: Outcome


def split(projects: Sequence[str]) -> dict[str, str]:
    """Projects sorted by name, alternately ``dev`` and ``holdout``: a rule tuned on one half
    must keep its gain on the other."""
    return {name: ("dev" if i % 2 == 0 else "holdout") for i, name in enumerate(sorted(projects))}


def _groups(
    records: Sequence[Record], key: Callable[[Record], tuple[str, ...]]
) -> dict[tuple[str, ...], Summary]:
    grouped: dict[tuple[str, ...], list[Outcome]] = {}
    for record in records:
        grouped.setdefault(key(record), []).append(record.outcome)
    return {k: summarize(v) for k, v in grouped.items()}


def _fmt(value: float) -> str:
    return f"{value:.3f}"


def _table(header: Sequence[str], rows: dict[tuple[str, ...], Summary]) -> list[str]:
    names = [*header, "n", *(f"chunk {m}" for m in METRICS), *(f"file {m}" for m in METRICS)]
    out = [
        "| " + " | ".join([*names, "lines", "p50 ms"]) + " |",
        "|" + " --- |" * (len(names) + 2),
    ]
    for raw in sorted(rows, key=_order):
        summary = rows[raw]
        key = [FAMILY_NAMES.get(part, part) for part in raw]
        chunk = [_fmt(summary.chunk[m]) for m in METRICS] if summary.chunk else ["-"] * 5
        cells = [*key, str(summary.queries), *chunk, *(_fmt(summary.file[m]) for m in METRICS)]
        size = "-" if summary.lines is None else f"{summary.lines:.1f}"
        out.append("| " + " | ".join([*cells, size, f"{summary.median_ms:.2f}"]) + " |")
    return out


def _order(key: tuple[str, ...]) -> tuple[Any, ...]:
    """Families in their fixed order and coderecall rows before the baselines."""
    rank = {"coderecall": 0, "bm25-windows": 2, "ripgrep": 3}
    return tuple(
        (FAMILIES.index(part), part)
        if part in FAMILIES
        else (rank.get(part, 1 if part.startswith("coderecall") else 4), part)
        for part in key
    )


def markdown(
    projects: Sequence[ProjectInfo], records: Sequence[Record], notes: Sequence[str]
) -> str:
    halves = split([p.name for p in projects])
    language = {p.name: p.language for p in projects}
    lines = [
        "## Corpora and queries",
        "",
        "| project | language | version | files | windows | index s | "
        + " | ".join(FAMILY_NAMES[f] for f in FAMILIES)
        + " |",
        "|" + " --- |" * (6 + len(FAMILIES)),
    ]
    for p in sorted(projects, key=lambda p: p.name):
        counts = [
            f"{p.queries.get(f, 0)} of {p.candidates.get(f, 0)}" if f in p.queries else "-"
            for f in FAMILIES
        ]
        lines.append(
            f"| {p.name} ({halves[p.name]}) | {p.language} | {p.version} | {p.files} "
            f"| {p.windows} | {p.index_seconds:.1f} | " + " | ".join(counts) + " |"
        )
    sections: list[tuple[str, Sequence[str], Callable[[Record], tuple[str, ...]]]] = [
        ("Overall", ("family", "system"), lambda r: (r.query.family, r.system)),
        (
            "Dev / holdout split",
            ("half", "family", "system"),
            lambda r: (halves[r.query.project], r.query.family, r.system),
        ),
        (
            "Per language",
            ("language", "family", "system"),
            lambda r: (language[r.query.project], r.query.family, r.system),
        ),
        (
            "Per project",
            ("project", "family", "system"),
            lambda r: (r.query.project, r.query.family, r.system),
        ),
    ]
    for title, header, key in sections:
        lines += ["", f"## {title}", "", *_table(header, _groups(records, key))]
    if notes:
        lines += ["", "## Notes", "", *(f"- {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def to_json(
    projects: Sequence[ProjectInfo],
    records: Sequence[Record],
    notes: Sequence[str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    halves = split([p.name for p in projects])
    language = {p.name: p.language for p in projects}

    def summaries(key: Callable[[Record], tuple[str, ...]]) -> list[dict[str, Any]]:
        return [
            {
                "group": list(k),
                "queries": s.queries,
                "chunk": s.chunk,
                "file": s.file,
                "median_ms": s.median_ms,
                "lines": s.lines,
            }
            for k, s in sorted(_groups(records, key).items(), key=lambda i: _order(i[0]))
        ]

    return {
        "settings": settings,
        "projects": [
            {
                "name": p.name,
                "language": p.language,
                "version": p.version,
                "source": p.source,
                "archive_sha256": p.archive_sha256,
                "half": halves[p.name],
                "files": p.files,
                "windows": p.windows,
                "index_seconds": p.index_seconds,
                "candidates": p.candidates,
                "queries": p.queries,
            }
            for p in projects
        ],
        "overall": summaries(lambda r: (r.query.family, r.system)),
        "split": summaries(lambda r: (halves[r.query.project], r.query.family, r.system)),
        "per_language": summaries(lambda r: (language[r.query.project], r.query.family, r.system)),
        "per_project": summaries(lambda r: (r.query.project, r.query.family, r.system)),
        "results": [
            {
                "system": r.system,
                "project": r.query.project,
                "family": r.query.family,
                "query": r.query.text,
                "path": r.query.path,
                "ranges": r.query.ranges,
                "chunk_rank": r.outcome.chunk if r.outcome.chunk_level else None,
                "file_rank": r.outcome.file,
                "ms": r.outcome.seconds * 1000,
            }
            for r in records
        ],
        "notes": list(notes),
    }
