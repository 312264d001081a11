"""The baseline: plain BM25 over the turns, what any agent could build in twenty lines.

One document per turn (the same text the store gets), a lowercase ``\\w+`` tokenizer, no
stemming or stop words, k1 = 1.2, b = 0.75, and Lucene's idf ``ln(1 + (N - df + 0.5) /
(df + 0.5))``, which never goes negative. A query term counts once however often it repeats.
Ties rank by document order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["BM25", "tokenize"]

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    def __init__(self, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        for doc, text in enumerate(documents):
            counts = Counter(tokenize(text))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings.setdefault(term, []).append((doc, tf))
        n = len(self.lengths)
        self.average = sum(self.lengths) / n if n else 0.0
        self.idf = {
            term: math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            for term, docs in self.postings.items()
        }

    def scores(self, query: str) -> dict[int, float]:
        """Documents sharing a term with ``query``, with their scores."""
        out: dict[int, float] = {}
        k1, b, average = self.k1, self.b, self.average or 1.0
        for term in dict.fromkeys(tokenize(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for doc, tf in self.postings[term]:
                norm = k1 * (1 - b + b * self.lengths[doc] / average)
                out[doc] = out.get(doc, 0.0) + idf * tf * (k1 + 1) / (tf + norm)
        return out

    def search(self, query: str, limit: int) -> list[int]:
        """The ``limit`` best documents, best first."""
        ranked = sorted(self.scores(query).items(), key=lambda item: (-item[1], item[0]))
        return [doc for doc, _ in ranked[:limit]]
