"""Per-question outcomes and their means (pure: the tests pin them by hand).

A system answers a question with a ranked list of results, each naming the turns it holds (a
store record lists several when dedup merged near-identical turns). Against the question's
evidence turns:

- **Hit@10**: 1 if any evidence turn is in the first 10 results;
- **Recall@k** (k = 5, 10, 20): the share of the evidence turns found in the first k results;
- **MRR@10**: 1 / the rank of the first result holding an evidence turn, 0 beyond 10.

Means are over questions (micro).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["HIT_AT", "RECALL_AT", "Outcome", "Summary", "outcome", "summarize"]

HIT_AT = 10
RECALL_AT = (5, 10, 20)
"""The cut-offs of Recall@k; the last is also how many results each system is asked for."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One system on one question."""

    ranks: tuple[int, ...]
    """For each evidence turn found, the 1-based rank of the first result holding it,
    ascending."""
    evidence: int

    @property
    def first(self) -> int | None:
        """Rank of the first result holding an evidence turn (``None``: not in the list)."""
        return self.ranks[0] if self.ranks else None

    @property
    def hit(self) -> float:
        return 1.0 if self.first is not None and self.first <= HIT_AT else 0.0

    @property
    def reciprocal_rank(self) -> float:
        return 1.0 / self.first if self.first is not None and self.first <= HIT_AT else 0.0

    def found(self, k: int) -> int:
        """Evidence turns among the first ``k`` results."""
        return sum(rank <= k for rank in self.ranks)

    def recall(self, k: int) -> float:
        return self.found(k) / self.evidence


def outcome(evidence: Sequence[str], ranked: Sequence[Iterable[str]]) -> Outcome:
    """Score ``ranked`` (the turn ids of each result, best first) against ``evidence``."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a scored question needs evidence")
    ranks: dict[str, int] = {}
    for rank, turns in enumerate(ranked, 1):
        for turn in wanted.intersection(turns):
            ranks.setdefault(turn, rank)
    return Outcome(tuple(sorted(ranks.values())), len(wanted))


@dataclass(frozen=True, slots=True)
class Summary:
    questions: int
    hit: float
    recall: dict[int, float]
    """Mean Recall@k for each k of ``RECALL_AT``."""
    mrr: float


def summarize(outcomes: Sequence[Outcome]) -> Summary:
    n = len(outcomes)
    if not n:
        return Summary(0, 0.0, dict.fromkeys(RECALL_AT, 0.0), 0.0)
    return Summary(
        n,
        sum(o.hit for o in outcomes) / n,
        {k: sum(o.recall(k) for o in outcomes) / n for k in RECALL_AT},
        sum(o.reciprocal_rank for o in outcomes) / n,
    )
