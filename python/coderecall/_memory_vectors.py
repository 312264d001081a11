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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._memory_rank import label
from ._native import centred_nearest, dot_rows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ._native import Embedder

__all__ = [
    "MAX_PARTS",
    "Embedding",
    "Vectors",
    "assemble",
    "embedding",
    "embeddings",
    "nearest",
    "parts",
    "rows_kept",
]

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
    """One generation of a project's record vectors, kept as stored: centring is applied
    in the scores (see :func:`nearest`), so a write that moves the mean rewrites no row, and
    the next generation reuses every row whose record is unchanged."""

    generation: str
    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]
    """Each record's vector, one row per id."""
    shift: npt.NDArray[np.float32]
    """What centring takes from every vector: ``_CENTRE`` x the mean of the records'
    vectors (see ``_CENTRE_PRIOR``)."""
    scale: npt.NDArray[np.float32]
    """1 / the length of each row less ``shift`` (0 for a row that is all shift)."""
    parts: npt.NDArray[np.float32]
    """The sentence vectors of the records that have some, in the order of their records."""
    part_scale: npt.NDArray[np.float32]
    owners: npt.NDArray[np.int64]
    """The row in ``matrix`` of each record that has sentence vectors."""
    starts: npt.NDArray[np.int64]
    """The first row in ``parts`` of each of ``owners``."""
    windows: npt.NDArray[np.float32]
    """The sum of the vectors of each record's window (see
    ``_memory_rank._WINDOW_REACH``), members without a row left out."""
    counts: npt.NDArray[np.float32]
    """How many vectors each window sums (its centred vector is ``windows - counts x
    shift``)."""
    window_scale: npt.NDArray[np.float32]
    alone: npt.NDArray[np.bool_]
    """The records alone in their window: it scores as the record itself."""
    raw: dict[int, tuple[str, npt.NDArray[np.float32], npt.NDArray[np.float32]]]
    """Each record's text, vector and sentence vectors as stored, for the next generation
    to reuse while the text is unchanged."""
    members: dict[int, tuple[int, ...]]
    """The window members each row of ``windows`` was summed from (before rows without a
    vector were left out)."""


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
    previous: Vectors | None,
    fresh: set[int],
) -> Vectors:
    """The :class:`Vectors` of records ``ids`` (ascending) from their stored vectors ``raw``
    (every id has an entry) and their windows' members. Rows of ``previous`` are reused for
    the ids not in ``fresh`` (those whose vectors were read or embedded anew), and so are its
    window sums while their members are the same and unchanged: after a write, only the
    new record's rows and the windows around it are computed."""
    import numpy as np

    n = len(ids)
    keys = np.fromiter(ids, dtype=np.int64, count=n)
    matrix = np.empty((n, dims), dtype=np.float32)
    windows = np.empty((n, dims), dtype=np.float32)
    counts = np.empty(n, dtype=np.float32)
    at = np.zeros(n, dtype=np.int64)  # each id's row in previous, where it has one
    kept = np.zeros(n, dtype=np.bool_)
    if previous is not None and len(previous.ids) and n:
        at = np.minimum(np.searchsorted(previous.ids, keys), len(previous.ids) - 1)
        kept = previous.ids[at] == keys
        if fresh:
            kept &= ~np.isin(keys, np.fromiter(fresh, dtype=np.int64, count=len(fresh)))
        matrix[kept] = previous.matrix[at[kept]]
    for new in np.flatnonzero(~kept).tolist():
        matrix[new] = raw[ids[new]][1]
    # A window sum stands while its members are the same and none of them changed or went.
    changed = set(fresh)
    if previous is not None:
        changed.update(np.setdiff1d(previous.ids, keys).tolist())
    before = previous.members if previous is not None else {}
    members: dict[int, tuple[int, ...]] = {}
    stands = np.zeros(n, dtype=np.bool_)
    summed: list[int] = []
    flags = kept.tolist()
    for row, key in enumerate(ids):
        group = window_members.get(key, (key,))
        members[key] = group
        if flags[row] and before.get(key) == group and changed.isdisjoint(group):
            stands[row] = True
        else:
            summed.append(row)
    if previous is not None:  # one gather, not a copy per row
        windows[stands] = previous.windows[at[stands]]
        counts[stands] = previous.counts[at[stands]]
    if summed:
        row_of = {k: r for r, k in enumerate(ids)}
        for row in summed:
            rows = [row_of[m] for m in members[ids[row]] if m in row_of]
            windows[row] = matrix[rows].sum(axis=0) if rows else 0.0
            counts[row] = len(rows)
    shift = (_CENTRE * matrix.sum(axis=0, dtype=np.float64) / (n + _CENTRE_PRIOR)).astype(
        np.float32
    )
    sentences = [raw[key][2] for key in ids]
    owner_rows = [row for row, s in enumerate(sentences) if len(s)]
    owners = np.array(owner_rows, dtype=np.int64)
    sizes = [len(sentences[row]) for row in owner_rows]
    parts = (
        np.concatenate([sentences[row] for row in owner_rows])
        if owner_rows
        else np.empty((0, dims), np.float32)
    )
    return Vectors(
        generation,
        keys,
        matrix,
        shift,
        _inverse_length(matrix, shift, 1.0),
        parts,
        _inverse_length(parts, shift, 1.0),
        owners,
        np.cumsum([0, *sizes[:-1]], dtype=np.int64) if sizes else np.empty(0, np.int64),
        windows,
        counts,
        _inverse_length(windows, shift, counts),
        counts <= 1,
        raw,
        members,
    )


def rows_kept(stored: Vectors, allowed: AbstractSet[int]) -> npt.NDArray[np.bool_] | None:
    """Which rows of ``stored`` the ``allowed`` records are; ``None`` when all of them."""
    import numpy as np

    if stored.members.keys() <= allowed:
        return None
    return np.isin(stored.ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))


def nearest(
    stored: Vectors,
    query: npt.NDArray[np.float32],
    kept: npt.NDArray[np.bool_] | None,
    limit: int,
) -> list[tuple[int, float]]:
    """The records of ``stored`` nearest the (raw) ``query`` vector among the rows ``kept``
    (all with ``None``; see :func:`rows_kept`), best ``limit`` first, each scored by its own
    cosine plus its window's, all centred: the cosine of ``v - shift`` and ``q - shift`` is
    ``(v . q' - shift . q') / |v - shift|`` with ``q'`` the unit centred query, so no centred
    row is ever stored. A record of several sentences is as near as its text and its nearest
    sentence (``_PART_WEIGHT``); a record alone in its window counts its own score as its
    window's. Scored by the native core in one pass over the rows."""
    import numpy as np

    if not len(stored.ids):
        return []
    centred = _unit(np.asarray(query, dtype=np.float32) - stored.shift)
    return centred_nearest(
        stored.ids,
        stored.matrix,
        stored.scale,
        stored.parts,
        stored.part_scale,
        stored.owners,
        stored.starts,
        stored.windows,
        stored.counts,
        stored.window_scale,
        stored.alone,
        centred,
        float(stored.shift @ centred),
        _PART_WEIGHT,
        kept,
        limit,
    )


def _inverse_length(
    rows: npt.NDArray[np.float32],
    shift: npt.NDArray[np.float32],
    counts: float | npt.NDArray[np.float32],
) -> npt.NDArray[np.float32]:
    """1 / |row - count x shift| for each row, from the rows' lengths and their dot products
    with ``shift`` (no shifted copy of ``rows``); 0 where that length is 0."""
    import numpy as np

    # f32 sums suffice: lengths near 1, and the shift is far shorter than a row.
    squares = np.einsum("ij,ij->i", rows, rows).astype(np.float64)
    # The native kernel rather than a BLAS product, which would wake BLAS's threads: they
    # keep spinning after it and take the cores from the embedding engine's next query (on
    # 2 cores: search p99 19 to 45-80 ms on LoCoMo).
    across = dot_rows(rows, shift).astype(np.float64)
    length = squares - 2 * counts * across + np.square(counts) * float(shift @ shift)
    safe = np.where(length > 1e-12, length, 1.0)
    return np.where(length > 1e-12, 1 / np.sqrt(safe), 0.0).astype(np.float32)
