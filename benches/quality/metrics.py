"""Rank metrics with one relevant target per query (binary relevance).

With a single relevant item the ideal DCG is 1, so NDCG@k is ``1 / log2(rank + 1)`` and MRR@k
is ``1 / rank`` when the target is within the first ``k`` results, else 0. Chunk level: the
first result in the target's file whose lines intersect the target. File level: the first
result in the target's file, counting each file once (its first occurrence) in the ranking.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benches.quality.baselines import Hit
from benches.quality.queries import Range

CUTOFF = 10
RECALL_AT = (1, 5, 10)
METRICS = ("R@1", "R@5", "R@10", "MRR@10", "NDCG@10")


def chunk_rank(hits: Sequence[Hit], path: str, ranges: Sequence[Range]) -> int | None:
    """1-based rank of the first hit in ``path`` intersecting any of ``ranges``."""
    for rank, (hit_path, start, end) in enumerate(hits, 1):
        if hit_path == path and any(start <= last and first <= end for first, last in ranges):
            return rank
    return None


def file_rank(hits: Sequence[Hit], path: str) -> int | None:
    """1-based rank of ``path`` among the distinct files of ``hits``, in first-seen order."""
    seen: list[str] = []
    for hit_path, _, _ in hits:
        if hit_path not in seen:
            seen.append(hit_path)
            if hit_path == path:
                return len(seen)
    return None


def result_lines(hits: Sequence[Hit], cutoff: int = CUTOFF) -> float | None:
    """Mean lines of the first ``cutoff`` hits: how much code a chunk-level hit costs to read,
    so systems whose results differ in size compare fairly (``None`` without hits)."""
    top = hits[:cutoff]
    return sum(end - start + 1 for _, start, end in top) / len(top) if top else None


def scores(rank: int | None, cutoff: int = CUTOFF) -> dict[str, float]:
    """The metrics of one query whose target sits at ``rank`` (``None``: not found)."""
    found = rank is not None and rank <= cutoff
    r = rank if found and rank is not None else 0
    return {
        **{f"R@{k}": float(found and r <= k) for k in RECALL_AT},
        f"MRR@{cutoff}": 1.0 / r if found else 0.0,
        f"NDCG@{cutoff}": 1.0 / math.log2(r + 1) if found else 0.0,
    }


@dataclass(frozen=True, slots=True)
class Outcome:
    """One system's answer to one query: ranks at both levels and the latency."""

    chunk: int | None
    """``None`` either when missed or, with ``chunk_level`` false, when not measurable."""
    file: int | None
    seconds: float
    chunk_level: bool = True
    lines: float | None = None
    """Mean lines of the first results (see :func:`result_lines`)."""


@dataclass(frozen=True, slots=True)
class Summary:
    queries: int
    chunk: dict[str, float] | None
    """Mean metrics at chunk level; ``None`` for file-only systems."""
    file: dict[str, float]
    median_ms: float
    lines: float | None = None
    """Mean over queries of :attr:`Outcome.lines`; ``None`` for file-only systems."""


def summarize(outcomes: Sequence[Outcome]) -> Summary:
    """Micro-averages: every query weighs the same, whatever its project."""
    if not outcomes:
        return Summary(0, None, dict.fromkeys(METRICS, 0.0), 0.0)

    def mean(ranks: list[int | None]) -> dict[str, float]:
        rows = [scores(rank) for rank in ranks]
        return {name: sum(row[name] for row in rows) / len(rows) for name in METRICS}

    chunk_level = all(outcome.chunk_level for outcome in outcomes)
    sizes = [o.lines for o in outcomes if o.lines is not None]
    return Summary(
        len(outcomes),
        mean([o.chunk for o in outcomes]) if chunk_level else None,
        mean([o.file for o in outcomes]),
        statistics.median(o.seconds for o in outcomes) * 1000,
        statistics.fmean(sizes) if chunk_level and sizes else None,
    )
