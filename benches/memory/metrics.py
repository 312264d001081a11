"""Per-question outcomes and their means (pure: the tests pin them by hand).

A system answers a question with a ranked list of results, each naming the turns it holds (a
store record lists several when dedup merged near-identical turns). Against the question's
evidence turns:

- **Hit@10**: 1 if any evidence turn is in the first 10 results;
- **Recall@20**: the share of the evidence turns found in the first 20 results;
- **MRR@10**: 1 / the rank of the first result holding an evidence turn, 0 beyond 10.

Means are over questions (micro).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["HIT_AT", "RECALL_AT", "Outcome", "Summary", "outcome", "summarize"]

HIT_AT = 10
RECALL_AT = 20


@dataclass(frozen=True, slots=True)
class Outcome:
    """One system on one question."""

    first: int | None
    """1-based rank of the first result holding an evidence turn (``None``: not in the list)."""
    found: int
    """Evidence turns among the first ``RECALL_AT`` results."""
    evidence: int

    @property
    def hit(self) -> float:
        return 1.0 if self.first is not None and self.first <= HIT_AT else 0.0

    @property
    def recall(self) -> float:
        return self.found / self.evidence

    @property
    def reciprocal_rank(self) -> float:
        return 1.0 / self.first if self.first is not None and self.first <= HIT_AT else 0.0


def outcome(evidence: Sequence[str], ranked: Sequence[Iterable[str]]) -> Outcome:
    """Score ``ranked`` (the turn ids of each result, best first) against ``evidence``."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a scored question needs evidence")
    first: int | None = None
    found: set[str] = set()
    for rank, turns in enumerate(ranked, 1):
        matched = wanted.intersection(turns)
        if matched and first is None:
            first = rank
        if rank <= RECALL_AT:
            found |= matched
    return Outcome(first, len(found), len(wanted))


@dataclass(frozen=True, slots=True)
class Summary:
    questions: int
    hit: float
    recall: float
    mrr: float


def summarize(outcomes: Sequence[Outcome]) -> Summary:
    n = len(outcomes)
    if not n:
        return Summary(0, 0.0, 0.0, 0.0)
    return Summary(
        n,
        sum(o.hit for o in outcomes) / n,
        sum(o.recall for o in outcomes) / n,
        sum(o.reciprocal_rank for o in outcomes) / n,
    )
