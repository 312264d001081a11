"""Latency of the operations one process ran: what ``index_metrics`` reports beside the
index's own counts.

Each :class:`~coderecall.CodeIndex` keeps the last :data:`KEEP` durations per operation
(``search``, ``context``, ``call_graph``...), so percentiles describe recent behaviour and
memory stays bounded however long a server runs.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypedDict

__all__ = ["KEEP", "OperationStats", "Recorder"]

KEEP = 1024


class OperationStats(TypedDict):
    count: int
    """Runs since the process started."""
    p50_ms: float
    p95_ms: float
    max_ms: float


class Recorder:
    """Thread-safe durations per operation name."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._durations: dict[str, deque[float]] = {}
        self._counts: dict[str, int] = {}

    def record(self, operation: str, seconds: float) -> None:
        with self._lock:
            kept = self._durations.setdefault(operation, deque(maxlen=self._keep))
            kept.append(seconds)
            self._counts[operation] = self._counts.get(operation, 0) + 1

    @contextmanager
    def timed(self, operation: str) -> Iterator[None]:
        """Records how long the block took (also when it raises: failures cost time too)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.record(operation, time.perf_counter() - started)

    def snapshot(self) -> dict[str, OperationStats]:
        with self._lock:
            kept = {op: sorted(d) for op, d in self._durations.items()}
            counts = dict(self._counts)
        return {
            op: OperationStats(
                count=counts[op],
                p50_ms=round(_percentile(values, 0.50) * 1000, 3),
                p95_ms=round(_percentile(values, 0.95) * 1000, 3),
                max_ms=round(values[-1] * 1000, 3),
            )
            for op, values in sorted(kept.items())
        }


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of a sorted, non-empty list."""
    rank = min(max(1, math.ceil(q * len(ordered))), len(ordered))
    return ordered[rank - 1]
