"""The second baseline: vectors only, exact cosine over one embedding per turn.

One document per turn (the same text the store gets), embedded with the same local model as
the store's ``transformer`` row; the query is embedded the same way, and every turn is scored
by the dot product of the two L2-normalised vectors (cosine), exactly, with no index. Ties
rank by document order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from coderecall import Embedder

__all__ = ["Dense"]


class Dense:
    def __init__(self, embedder: Embedder, documents: Sequence[str]) -> None:
        self.embedder = embedder
        self.vectors = embedder.embed(list(documents))

    def search(self, query: str, limit: int) -> list[int]:
        """The ``limit`` nearest documents, best first."""
        scores = self.vectors @ self.embedder.embed([query])[0]
        return [int(doc) for doc in np.argsort(-scores, kind="stable")[:limit]]
