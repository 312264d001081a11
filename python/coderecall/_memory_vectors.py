"""The vector side of memory search: each record's vector and its sentences' vectors,
centred on the project's records, with a vector per window, scored against a query.

Exact search: a project's memory is thousands of records, where one matrix product beats an
approximate index. :class:`coderecall._memory.MemoryStore` reads and writes the vectors;
this module embeds texts and ranks by them. numpy is imported by the functions that use it:
a store without an embedding model (and a hook that only records an event) never loads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._memory_rank import label

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ._native import Embedder

__all__ = ["MAX_PARTS", "Embedding", "Vectors", "assemble", "embedding", "embeddings", "parts"]

_EMBED_BATCH = 64
_CENTRE = 0.5
"""Share of the mean record vector taken from every vector before cosine. One project's
records share a direction (its register, its names, its subjects) that raw cosine rewards in
every record alike; taking it out ranks by what sets a record apart. On LoCoMo, MiniLM
vectors alone went from Hit@10 0.547 to 0.587 with half the mean taken out (0.568 with all
of it), hybrid from 0.849 to 0.854 (benches/memory/README.md)."""
_CENTRE_PRIOR = 20
"""The mean is taken as if this many zero vectors were among the records: what a few records
share is mostly what each of them says (the mean of one record is that record, and taking it
out would turn every query away from it), only many reveal a common direction."""
_PART_WEIGHT = 0.85
"""Share of a record's vector score that comes from its nearest sentence (see ``parts``),
the rest from its whole text."""
MAX_PARTS = 16
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Vectors:
    """One generation of a project's record vectors."""

    generation: str
    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]
    """One unit row per record, its vector less ``_CENTRE`` x ``centre``."""
    centre: npt.NDArray[np.float32]
    """The mean of the records' vectors (see ``_CENTRE_PRIOR``)."""
    parts: npt.NDArray[np.float32]
    """The sentence vectors of the records that have some, centred like ``matrix``, in
    the order of their records."""
    owners: npt.NDArray[np.int64]
    """The row in ``matrix`` of each record that has sentence vectors."""
    starts: npt.NDArray[np.int64]
    """The first row in ``parts`` of each of ``owners``."""
    windows: npt.NDArray[np.float32]
    """Each record's window vector (see ``_WINDOW_REACH``), from the rows of ``matrix``."""
    alone: npt.NDArray[np.bool_]
    """The records alone in their window: it scores as the record itself."""
    raw: dict[int, tuple[str, npt.NDArray[np.float32], npt.NDArray[np.float32]]]
    """Each record's text, vector and sentence vectors as stored, for the next generation
    to reuse while the text is unchanged."""


@dataclass(frozen=True)
class Embedding:
    """A record's vector, and one row per sentence when it has more than one."""

    vector: npt.NDArray[np.float32]
    parts: npt.NDArray[np.float32]


def embedding(embedder: Embedder, text: str) -> Embedding:
    return embeddings(embedder, [text])[0]


def embeddings(embedder: Embedder, texts: Sequence[str]) -> list[Embedding]:
    """Each text's :class:`Embedding`, embedded ``_EMBED_BATCH`` texts at a time."""
    import numpy as np

    pieces = [[text, *parts(text)] for text in texts]
    flat = [piece for group in pieces for piece in group]
    vectors = np.concatenate(
        [
            np.asarray(embedder.embed(flat[start : start + _EMBED_BATCH]), dtype=np.float32)
            for start in range(0, len(flat), _EMBED_BATCH)
        ]
        or [np.empty((0, embedder.dims), np.float32)]
    )
    out, at = [], 0
    for group in pieces:
        out.append(Embedding(vectors[at], vectors[at + 1 : at + len(group)]))
        at += len(group)
    return out


def parts(text: str) -> list[str]:
    """The sentences of a record of several, each as its own text to embed: the vector of
    a whole turn or note averages what each sentence says, so a question about one of them
    meets it diluted. Each sentence after the first carries the record's label ("Caroline:",
    "Decision:") when it has one, else follows the first sentence, which names what the
    record is about. At most ``MAX_PARTS``."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s][:MAX_PARTS]
    if len(sentences) < 2:
        return []
    lead = label(sentences[0]) or sentences[0] + " "
    return [sentences[0], *(lead + s for s in sentences[1:])]


def _dot(rows: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row's dot product with ``query``, on this thread. A BLAS matrix product would
    wake BLAS's threads, which keep spinning after it and take the cores from the embedding
    engine's next query (on 2 cores: search p99 19 to 45-80 ms on LoCoMo)."""
    import numpy as np

    dots: npt.NDArray[np.float32] = np.einsum("ij,j->i", rows, query)
    return dots


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``vectors`` (one, or one per row) scaled to length 1; zero vectors stay zero."""
    import numpy as np

    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def assemble(
    generation: str,
    ids: Sequence[int],
    raw: dict[int, tuple[str, npt.NDArray[np.float32], npt.NDArray[np.float32]]],
    window_members: Mapping[int, tuple[int, ...]],
    dims: int,
) -> Vectors:
    """The :class:`Vectors` of records ``ids`` (in this order) from their stored vectors
    ``raw`` (every id has an entry) and their windows' members."""
    import numpy as np

    matrix = np.empty((len(ids), dims), dtype=np.float32)
    sentences: list[npt.NDArray[np.float32]] = []
    owners: list[int] = []
    for k, key in enumerate(ids):
        _, vector, own = raw[key]
        matrix[k] = vector
        if len(own):
            sentences.append(own)
            owners.append(k)
    keys = np.fromiter(ids, dtype=np.int64, count=len(ids))
    centre = matrix.sum(axis=0) / (len(ids) + _CENTRE_PRIOR)
    sizes = [len(p) for p in sentences]
    centred = _unit(matrix - _CENTRE * centre)
    windows, alone = _window_matrix(keys, centred, window_members)
    return Vectors(
        generation,
        keys,
        centred,
        centre,
        _unit(np.concatenate(sentences) - _CENTRE * centre)
        if sentences
        else np.empty((0, dims), np.float32),
        np.array(owners, dtype=np.int64),
        np.cumsum([0, *sizes[:-1]], dtype=np.int64) if sentences else np.empty(0, np.int64),
        windows,
        alone,
        raw,
    )


def nearest(
    stored: Vectors, query: npt.NDArray[np.float32], allowed: set[int], limit: int
) -> list[tuple[int, float]]:
    """The ``allowed`` records of ``stored`` nearest the (raw) ``query`` vector, best
    ``limit`` first, each scored by its own cosine plus its window's."""
    import numpy as np

    ids = stored.ids
    if not len(ids):
        return []
    centred = _unit(query - _CENTRE * stored.centre)
    keep = np.isin(ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
    own = _dot(stored.matrix, centred)
    if len(stored.starts):
        # A record of several sentences is as near as its text and its nearest sentence.
        best = np.maximum.reduceat(_dot(stored.parts, centred), stored.starts)
        own[stored.owners] = (1 - _PART_WEIGHT) * own[stored.owners] + _PART_WEIGHT * best
    # A record's own cosine plus its window's, which for a record alone in its window is its
    # own; scoring every row and then keeping the allowed ones copies no matrix.
    context = np.where(stored.alone, own, _dot(stored.windows, centred))
    ids, scores = ids[keep], (own + context)[keep]
    top = np.argsort(-scores, kind="stable")[:limit]
    return [(int(ids[k]), float(scores[k])) for k in top]


def _window_matrix(
    ids: npt.NDArray[np.int64],
    matrix: npt.NDArray[np.float32],
    members: Mapping[int, tuple[int, ...]],
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
    """Each row of ``matrix``'s window vector: the normalised sum of its window members'
    vectors (members without a vector, private ones, count for nothing); and which rows
    are alone in their window."""
    import numpy as np

    row_of = {int(key): row for row, key in enumerate(ids)}
    pairs = [
        (row, row_of[member])
        for row, key in enumerate(ids)
        for member in members.get(int(key), ())
        if member in row_of
    ]
    rows, sources = np.array(pairs, dtype=np.int64).reshape(-1, 2).T
    windows = np.zeros_like(matrix)
    if len(rows):
        # Pairs come row by row: each row's members are one run to sum (np.add.at, which
        # takes any order, was a third of a rebuild).
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        windows[rows[starts]] = np.add.reduceat(matrix[sources], starts)
    return _unit(windows), np.bincount(rows, minlength=len(ids)) <= 1
