"""Percentiles and ratios: the only arithmetic the tables need, kept pure so tests pin it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) with linear interpolation between ranks.

    Interpolation (numpy's default) keeps p99 of 200 samples from being just the maximum.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within 0-100, got {p}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Latency:
    """Summary of one engine on one query family, in milliseconds."""

    queries: int
    p50: float
    p95: float
    p99: float

    @classmethod
    def of(cls, milliseconds: Sequence[float]) -> Latency:
        return cls(
            queries=len(milliseconds),
            p50=percentile(milliseconds, 50),
            p95=percentile(milliseconds, 95),
            p99=percentile(milliseconds, 99),
        )

    def cell(self) -> str:
        return f"{fmt_ms(self.p50)} / {fmt_ms(self.p95)} / {fmt_ms(self.p99)}"


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def fmt_ms(value: float) -> str:
    """Milliseconds with enough digits to compare sub-millisecond and 100 ms latencies."""
    if value < 1:
        return f"{value:.3f}"
    if value < 10:
        return f"{value:.2f}"
    return f"{value:.1f}"


def ratio(ours: float | None, theirs: float | None) -> str:
    """``ours / theirs`` as ``1.4x``; ``n/a`` when either side is missing or zero."""
    if ours is None or theirs is None or theirs == 0:
        return "n/a"
    value = ours / theirs
    if value < 0.1:
        return f"{value:.3f}x"
    return f"{value:.2f}x" if value < 10 else f"{value:.0f}x"
