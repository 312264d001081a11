"""The ``[MEMORY]`` block: what an agent should know of a project, for its system prompt;
and the few records a prompt brings back (:func:`build_recall`).

Structured sections come first (project brief, preferences, architecture, tech and product
context, recent progress), then the records most relevant to the current task. The budget is
counted with the real tokenizer on the exact text returned.

**Byte-stable.** Hosts cache the prompt prefix, so the block must not change between turns
unless what it says changed: sections have a fixed order, records within a section are in
creation order (never by score), dates are record dates (never "now"), and nothing counts
time or turns. Relevant records are a set chosen by the query but rendered in creation order
in the last section, so a new turn with another task changes only the tail of the block.

**Budget.** Records are taken in priority order (the brief first, relevant records last)
while they fit; one that does not fit whole is cut with a marker if enough room is left to
say something, else left out and counted in ``dropped``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._errors import QueryError
from ._memory import SECTIONS

if TYPE_CHECKING:
    from ._memory import MemoryRecord, MemoryStore

__all__ = ["MIN_BUDGET", "RECALLED", "SECTIONS", "MemoryBlock", "build_block", "build_recall"]

RELEVANT = "Relevant to the task"
RECALLED = "Recalled for this prompt"
_SHARED = 2
"""Distinct content words of a prompt that a record must hold to be recalled: one shared word
("test", "error") says little about a record among hundreds."""
MIN_BUDGET = 60
_PER_SECTION = 8
"""Newest records of one type a structured section shows at most."""
_RELEVANT = 8
_MIN_CUT = 24
"""A record is cut to fit only if at least this many tokens of it can be shown."""
_CUT = " […]"


@dataclass(frozen=True, slots=True)
class MemoryBlock:
    """A ``[MEMORY]`` block and what went into it."""

    text: str
    """Empty when the store holds nothing for this project."""
    records: tuple[int, ...] = ()
    """Ids of the records shown, in the order shown."""
    dropped: int = 0
    """Records that were chosen but did not fit the budget."""
    query: str | None = None
    truncated: tuple[int, ...] = field(default=())
    """Ids of the records shown cut short."""

    @property
    def tokens(self) -> int:
        """Tokens of ``text``, counted when asked: a block that surely fits its budget is
        built without loading the tokenizer (see ``_fit``)."""
        from ._tokens import default_counter

        return default_counter().count(self.text) if self.text else 0

    def to_dict(self) -> dict[str, object]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "records": list(self.records),
            "dropped": self.dropped,
            "truncated": list(self.truncated),
            "query": self.query,
        }


def build_block(store: MemoryStore, query: str | None, budget: int) -> MemoryBlock:
    """The block for ``store``'s project, with the records relevant to ``query``."""
    if budget < MIN_BUDGET:
        raise QueryError(f"the memory budget must be at least {MIN_BUDGET} tokens, got {budget}")
    sections: list[tuple[str, list[MemoryRecord]]] = []
    shown: set[int] = set()
    for kind, title in SECTIONS:
        newest = store.records(type=kind)[-_PER_SECTION:]
        sections.append((title, newest))
        shown.update(r.id for r in newest)
    relevant: list[MemoryRecord] = []
    text = (query or "").strip()
    if text:
        hits = [h.id for h in store.search(text, limit=_RELEVANT + len(shown))]
        relevant = store.get([i for i in hits if i not in shown][:_RELEVANT])
        relevant.sort(key=lambda r: (r.created_at, r.id))
    sections.append((RELEVANT, relevant))
    return _fit(sections, budget, text or None)


def build_recall(
    store: MemoryStore,
    prompt: str,
    *,
    besides: Sequence[str],
    shown: Iterable[int],
    session: str | None,
    limit: int,
    budget: int,
) -> MemoryBlock:
    """The records ``prompt`` brings back: the best of ``store.search`` that hold at least
    two of its content words (after stemming, as the lexical channel reads them), of none of
    the ``besides`` types, not written by ``session``, not among ``shown``; at most
    ``limit``, in creation order, within ``budget``."""
    from ._native import TextIndex
    from ._stopwords import STOP_WORDS, content_query

    said = {w.lower() for w in content_query(prompt).split()} - STOP_WORDS
    if len(said) < _SHARED:
        return MemoryBlock("", query=prompt)
    skip = set(shown)
    hits = [
        h
        for h in store.search(prompt, limit=4 * limit + len(skip))
        if h.id not in skip and h.type not in besides and "lexical" in h.channels
    ]
    records = [r for r in store.get(h.id for h in hits) if session is None or r.session != session]
    # The words each record holds, read by the analyzer that ranked it: a tiny index of
    # the candidates, asked one word at a time.
    candidates = TextIndex()
    for i, record in enumerate(records):
        candidates.insert(i, " ".join([record.text, *record.tags]))
    shared = [0] * len(records)
    for word in said:
        for i, _ in candidates.search(word, len(records) or 1):
            shared[i] += 1
    chosen = [r for r, n in zip(records, shared, strict=True) if n >= _SHARED][:limit]
    chosen.sort(key=lambda r: (r.created_at, r.id))
    return _fit([(RECALLED, chosen)], budget, prompt)


def _fit(
    sections: Sequence[tuple[str, Sequence[MemoryRecord]]], budget: int, query: str | None
) -> MemoryBlock:
    from ._tokens import default_counter, surely_fits  # hashing and file reads: when used

    head, tail = "[MEMORY]", "[/MEMORY]"

    def render(lines: dict[int, str]) -> str:
        out = [head]
        for title, records in sections:
            items = [lines[r.id] for r in records if r.id in lines]
            if items:
                out.append(f"## {title}")
                out.extend(items)
        out.append(tail)
        return "\n".join(out)

    lines = {r.id: _line(r) for _, records in sections for r in records}
    if not lines:
        return MemoryBlock("", query=query)
    order = list(lines)  # section order
    if surely_fits(whole := render(lines), budget):
        # Then so does every part of it: the loop below would take every record whole.
        return MemoryBlock(whole, tuple(order), query=query)
    counter = default_counter()
    chosen: dict[int, str] = {}
    truncated: set[int] = set()
    dropped = 0
    for _, records in sections:  # priority = section order; newest first within one
        for record in reversed(records):
            line = lines[record.id]
            trial = {**chosen, record.id: line}
            over = counter.count(render(trial)) - budget
            if over <= 0:
                chosen = trial
                continue
            # Tokens may merge across the cut: shrink until the whole block fits.
            room = counter.count(line) - over - counter.count(_CUT)
            while room >= _MIN_CUT:
                cut = _line(record, counter.truncate(_flat(record.text), room).rstrip() + _CUT)
                trial = {**chosen, record.id: cut}
                if counter.count(render(trial)) <= budget:
                    chosen = trial
                    truncated.add(record.id)
                    break
                room -= 2
            else:
                dropped += 1
    if not chosen:
        return MemoryBlock("", dropped=dropped, query=query)
    shown = [i for i in order if i in chosen]
    return MemoryBlock(
        render(chosen), tuple(shown), dropped, query, tuple(i for i in shown if i in truncated)
    )


def _line(record: MemoryRecord, text: str | None = None) -> str:
    """One record as a bullet: its text on one line, its type, date and id (so an agent can
    fetch, supersede or forget it)."""
    shown = _flat(record.text) if text is None else text
    return f"- {shown} ({record.type}, {record.created_at.date().isoformat()}, #{record.id})"


def _flat(text: str) -> str:
    return " ".join(text.split())
