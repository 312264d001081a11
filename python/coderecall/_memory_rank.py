"""How memory search ranks records: BM25F over each record and its window (the record and
the records around it in its session), a share of a neighbour's score for each record, and the
fusion of channels. :class:`coderecall._memory.MemoryStore` runs a search with these
pieces; each rule was measured on LoCoMo (benches/memory/README.md, "Ranking rules").
"""

from __future__ import annotations

import json
import marshal
import os
import re
import sqlite3
import sys
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ._native import KeySet, TextIndex, word_variants
from ._timephrase import resolve, tells_duration, tells_time, where_told

__all__ = [
    "ASKING_WEIGHT",
    "DEPTH",
    "NAMED_WEIGHT",
    "SEMANTIC_WEIGHT",
    "WHEN_WEIGHT",
    "Lexicon",
    "blend",
    "build_lexicon",
    "clarity",
    "favour",
    "label",
    "lexicon_from_bytes",
    "lexicon_to_bytes",
    "prefer",
    "with_context",
    "words",
]

_WORD = re.compile(r"\w+")
DEPTH = 60
"""Candidates each channel brings to fusion, whatever the limit (up to this many). Scores
count from the last candidate's (``_above_floor``), so a depth that grew with the limit would
reorder the first results: ``limit=5`` would not be the first five of ``limit=20``. On the
LoCoMo benchmark (hybrid, ``limit=20``), depths 40 / 50 / 60 / 80 / 100 gave Hit@10 0.842 /
0.847 / 0.849 / 0.843 / 0.842 and Recall@20 0.822 / 0.822 / 0.825 / 0.828 / 0.827."""
_RRF_K = 60
_BEFORE_WEIGHT = 0.5
"""Share of a record's score the record before it in its session earns in each channel (see
``with_context``)."""
_REPLY_WEIGHT = 0.75
"""Share of the score of a record that asks (``_ASKS``) the record after it earns: the
reply, which answers in words of its own ("What genre is it?" ... "A mix of drama and
romance!")."""
_FOLLOW_WEIGHT = 0.35
"""Share of the score of a record that does not ask the record after it earns."""
_ASKS = re.compile(r"\?[\"')\]]*\s*(?:\[[^\[\]]*\]\s*)?$")
"""A record that ends with a question, perhaps before a closing note in brackets
(``... right? [image: a bowl]``)."""
SEMANTIC_WEIGHT = 1.0
"""The vector channel's vote in fusion. Raw MiniLM vectors of whole records ranked below
plain BM25 on conversational memory (LoCoMo Hit@10 0.55 against 0.59) and earned half a
vote; centred and read sentence by sentence (:mod:`coderecall._memory_vectors`) they reach
0.69 alone,
and an equal vote gains on both halves of the data (benches/memory/README.md)."""
_WINDOW_REACH = 2
"""A record's window: itself and up to this many records before and after it in its
session. What a turn of a conversation is about is often said in the turns around it ("How
was the workshop?" ... "I loved it"), so a query's words may meet only in the window."""
_LENGTH_NORM = 0.5
"""BM25's length normalisation (b) for records and windows, softer than code's 0.75: a long
turn of a conversation is not less about what it names (on LoCoMo it ranked better on
both halves of the data; benches/memory/README.md)."""
_LABEL = re.compile(r"[^\s:][^:\n]{0,38}:\s")
"""A record's label: ``Caroline:``, ``Decision:`` (up to four words before a colon)."""
NAMED_WEIGHT = 2.0
"""How many times its score a record earns when the query names its label (every word of
it): what a question says someone did or thought is mostly told in that one's own records
(on LoCoMo, 96% of the evidence turns of a question naming one of the two speakers are that
speaker's). Their words alone weigh little, being in every other record."""
ASKING_WEIGHT = 0.75
"""How many times its score a record that asks (``_ASKS``) keeps: a question holds no answer,
and it echoes the words of what it asks about ("Your pottery class sounds fun! What did you
make?"), which the question that searches for the answer repeats too. On LoCoMo 12% of the
evidence turns end with a question, against 26% of all turns; the reply still earns its share
of the question's score whole (``with_context``), since this applies after it."""
WHEN_WEIGHT = 1.5
"""How many times its score a record that dates something (``tells_time``) earns when the
query asks when (``asks_when``): on LoCoMo, 73% of the evidence turns of "When ..." questions
date what they tell ("I went there last week"), against 9% of all turns. A record that states
a duration (``tells_duration``) earns as much when the query asks how long
(``asks_how_long``): 13 of 14 such questions have an evidence turn that does, 4% of turns."""


def label(text: str) -> str | None:
    """The label that opens ``text`` (see ``_LABEL``), colon and space included."""
    found = _LABEL.match(text.lstrip())
    return found.group(0) if found and len(found.group(0).split()) <= 4 else None


def favour(
    ranked: Sequence[tuple[int, float]], favoured: Container[int], weight: float
) -> list[tuple[int, float]]:
    """``ranked`` with the ``favoured`` records at ``weight`` times their scores."""
    rescored = [(key, score * weight if key in favoured else score) for key, score in ranked]
    return sorted(rescored, key=lambda kv: (-kv[1], kv[0]))


@dataclass(frozen=True)
class Lexicon:
    """The text side of a project's records: two BM25F indexes and what each record's
    context is. One lexicon serves every generation: ``build_lexicon`` updates it in place
    (a search that began on the previous generation may meet some of the next one's
    entries, never a missing one: searches read it by key)."""

    records: TextIndex
    windows: TextIndex
    """Each record's window (see ``_WINDOW_REACH``) as one text, under the record's id."""
    neighbours: dict[int, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    """The records written just before and after each record in its session, with the
    share of the record's score each earns (see ``with_context``)."""
    window_members: dict[int, tuple[int, ...]] = field(default_factory=dict)
    labels: dict[int, frozenset[str]] = field(default_factory=dict)
    """The words of each labelled record's label (see ``label``), lowercased."""
    told: dict[int, tuple[str, bool, bool]] = field(default_factory=dict)
    """Whether a record dates something (``tells_time``) and states a duration
    (``tells_duration``), read at the first query that asks, with the text it was read from:
    only a question's candidates are ever read (a build reading every record spent a fifth
    of its time on these two patterns)."""
    spans: dict[int, tuple[str, tuple[float, float] | None]] = field(default_factory=dict)
    """What ``tells_of`` read so far, by record, with the text it was read from."""
    docs: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    """What ``records`` holds under each key (text, tags as stored, type)."""
    sessions: dict[str, tuple[tuple[int, ...], tuple[bool, ...]]] = field(default_factory=dict)
    """Each session's records in order and which are public: while neither changes and
    none of its records' docs did, its neighbours and windows stand."""

    def search(
        self, query: str, depth: int, allowed: KeySet
    ) -> tuple[list[tuple[int, float]], set[int]]:
        """BM25F of each record plus that of its window, best ``depth`` first, and the
        records whose own text matched."""
        own = _above_floor(self.records.search(query, depth, allowed), depth)
        scores = dict(own)
        for key, score in _above_floor(self.windows.search(query, depth, allowed), depth).items():
            scores[key] = scores.get(key, 0.0) + score
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:depth], set(own)

    def tells_of(self, key: int, written: float, low: float, high: float) -> bool:
        """Whether a dated record's time phrase, read against ``written``, its own date,
        names a time that overlaps ``[low, high)``: "last month" in a turn of April tells of
        March. What a record tells of may lie before the day it was written. The phrase is
        read at the first query that asks (0.1-0.2 ms a record, see ``_told``), then kept
        with the text it was read from (a rebuild may change the text meanwhile)."""
        doc = self.docs.get(key)
        if doc is None or not self.dates(key):
            return False
        known = self.spans.get(key)
        if known is None or known[0] != doc[0]:
            known = (doc[0], _told(doc[0], written))
            self.spans[key] = known
        span = known[1]
        return span is not None and span[0] < high and span[1] > low

    def asks(self, key: int) -> bool:
        """Whether the record ends with a question (``_ASKS``)."""
        doc = self.docs.get(key)
        return doc is not None and _ASKS.search(doc[0]) is not None

    def dates(self, key: int) -> bool:
        """Whether the record dates something (``tells_time``)."""
        return self._read(key)[1]

    def lasts(self, key: int) -> bool:
        """Whether the record states a duration (``tells_duration``)."""
        return self._read(key)[2]

    def _read(self, key: int) -> tuple[str, bool, bool]:
        doc = self.docs.get(key)
        if doc is None:
            return ("", False, False)
        known = self.told.get(key)
        if known is None or known[0] != doc[0]:
            known = (doc[0], tells_time(doc[0]), tells_duration(doc[0]))
            self.told[key] = known
        return known


_TOLD_REACH = 40
"""Characters read on either side of a record's time (see ``_told``): enough for the longest
phrases ("two weeks before Sunday, August 11, 2023")."""


def build_lexicon(rows: Sequence[sqlite3.Row], previous: Lexicon | None) -> tuple[Lexicon, bool]:
    """The lexicon of ``rows`` (current records in session order): ``previous`` brought up
    to date in place, analysing only the records whose docs changed and rebuilding the
    context of only the sessions that changed (a write adds one record to thousands); and
    whether anything changed. Any ``previous`` is made right: one of another store or
    project only costs the work of its differences."""
    lexicon = previous or Lexicon(TextIndex(b=_LENGTH_NORM), TextIndex(b=_LENGTH_NORM))
    docs = lexicon.docs
    # Columns as plain lists: this pass runs over every record after every write.
    ids = [row["id"] for row in rows]
    texts = [row["text"] for row in rows]
    sessions = [row["session"] for row in rows]
    public = [row["privacy"] == "public" for row in rows]
    changed = set()
    # Inserted in batches: the native index analyses a batch's texts on every core.
    inserts: list[tuple[int, str, str, str]] = []
    for key, text, row in zip(ids, texts, rows, strict=True):
        doc = (text, row["tags"], row["type"])
        if docs.get(key) == doc:
            continue
        inserts.append((key, text, _tag_text(row["tags"]), row["type"]))
        docs[key] = doc
        changed.add(key)
        found = label(text)
        if found is not None:
            lexicon.labels[key] = words(found)
        else:
            lexicon.labels.pop(key, None)
    lexicon.records.insert_many(inserts)
    inserts.clear()
    gone_keys = docs.keys() - set(ids)
    for gone in gone_keys:
        del docs[gone]
        lexicon.records.remove(gone)
        lexicon.windows.remove(gone)
        lexicon.labels.pop(gone, None)
        lexicon.told.pop(gone, None)
        lexicon.spans.pop(gone, None)
        lexicon.neighbours.pop(gone, None)
        lexicon.window_members.pop(gone, None)
    seen: dict[str, tuple[tuple[int, ...], tuple[bool, ...]]] = {}
    start, count = 0, len(rows)
    for end in range(1, count + 1):
        if end < count and sessions[end] == sessions[start]:
            continue
        session = sessions[start]
        if session is None:  # each record without a session is its own window
            for at in range(start, end):
                if ids[at] in changed or lexicon.window_members.get(ids[at]) != (ids[at],):
                    _context_of(lexicon, at, at, at + 1, ids, texts, public, changed, inserts)
        else:
            signature = (tuple(ids[start:end]), tuple(public[start:end]))
            seen[session] = signature
            if lexicon.sessions.get(session) != signature or not changed.isdisjoint(signature[0]):
                for at in range(start, end):
                    _context_of(lexicon, at, start, end, ids, texts, public, changed, inserts)
        start = end
    lexicon.windows.insert_many(inserts)
    touched = bool(changed or gone_keys or inserts) or lexicon.sessions != seen
    lexicon.sessions.clear()
    lexicon.sessions.update(seen)
    return lexicon, touched


_SNAPSHOT_FORMAT = 1
"""Moves when what a lexicon holds, or how ``build_lexicon`` fills it, changes in a way the
identity below does not see."""


def _snapshot_identity(owner: str) -> tuple[int, tuple[tuple[int, ...], ...], float, str]:
    """What a lexicon's bytes are valid for: this format and interpreter (marshal's format
    may change with Python's version), the code that built them (the native analyzer and
    this module, by their files' size and time) and ``owner``. OSError if those files
    cannot be read."""
    from . import _native

    code = tuple((st.st_size, st.st_mtime_ns) for st in map(os.stat, (_native.__file__, __file__)))
    python = (*sys.version_info[:2], marshal.version)
    return (_SNAPSHOT_FORMAT, (python, *code), _LENGTH_NORM, owner)


def lexicon_to_bytes(lexicon: Lexicon, owner: str) -> bytes:
    """``lexicon`` as bytes for :func:`lexicon_from_bytes` (``owner`` names the store and
    project it was built from). The told-time caches are left out: they fill again on use."""
    state = (
        _snapshot_identity(owner),
        lexicon.neighbours,
        lexicon.window_members,
        lexicon.labels,
        lexicon.docs,
        lexicon.sessions,
    )
    # The state rides as the records index's metadata, under its checksum.
    records = lexicon.records.to_bytes(marshal.dumps(state))
    return len(records).to_bytes(8, "little") + records + lexicon.windows.to_bytes(b"")


def lexicon_from_bytes(data: bytes, owner: str) -> Lexicon | None:
    """The lexicon :func:`lexicon_to_bytes` made for ``owner`` with this code, or ``None``
    for bytes that are torn, corrupt, of another owner or made by other code."""
    size = int.from_bytes(data[:8], "little")
    try:
        records, meta = TextIndex.from_bytes(data[8 : 8 + size])
        windows, _ = TextIndex.from_bytes(data[8 + size :])
        identity, neighbours, members, labels, docs, sessions = marshal.loads(meta)
    except (ValueError, EOFError, TypeError):
        return None
    if identity != _snapshot_identity(owner):
        return None
    return Lexicon(
        records,
        windows,
        neighbours=neighbours,
        window_members=members,
        labels=labels,
        docs=docs,
        sessions=sessions,
    )


def _context_of(
    lexicon: Lexicon,
    at: int,
    start: int,
    end: int,
    ids: Sequence[int],
    texts: Sequence[str],
    public: Sequence[bool],
    changed: set[int],
    inserts: list[tuple[int, str, str, str]],
) -> None:
    """The neighbours and window of the record at ``at`` of a session that spans rows
    ``start`` to ``end`` (a record without a session spans its own row), its window
    added to ``inserts`` when its members or their docs changed."""
    key = ids[at]
    after = _REPLY_WEIGHT if _ASKS.search(texts[at]) else _FOLLOW_WEIGHT
    lexicon.neighbours[key] = tuple(
        (ids[other], weight)
        for other, weight in ((at - 1, _BEFORE_WEIGHT), (at + 1, after))
        if start <= other < end
    )
    # A private record lends its words to no other record's window.
    members = tuple(
        other
        for other in range(max(at - _WINDOW_REACH, start), min(at + _WINDOW_REACH + 1, end))
        if other == at or public[other]
    )
    member_ids = tuple(ids[other] for other in members)
    # A window is as indexed while its members are and none changed (its own tags and type
    # are in its record's doc: the record is a member).
    if lexicon.window_members.get(key) != member_ids or not changed.isdisjoint(member_ids):
        lexicon.window_members[key] = member_ids
        _, tags, kind = lexicon.docs[key]
        text = "\n".join(texts[other] for other in members)
        inserts.append((key, text, _tag_text(tags), kind))


def _tag_text(tags: str) -> str:
    """Stored tags (a JSON list) as the text the indexes weigh."""
    return "" if tags == "[]" else " ".join(json.loads(tags))


def _above_floor(ranked: Sequence[tuple[int, float]], depth: int) -> dict[int, float]:
    """Scores counted from what a record the channel did not bring would score: the last
    candidate's when the list was cut at ``depth``, else zero."""
    if not ranked:
        return {}
    floor = ranked[-1][1] if len(ranked) >= depth else min(ranked[-1][1], 0.0)
    return {key: score - floor for key, score in ranked}


def _fuse(*rankings: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """Reciprocal rank fusion (k = 60) of ``rankings``: ranks count, scores do not."""
    scores: dict[int, float] = {}
    for ranked in rankings:
        for rank, (key, _) in enumerate(ranked):
            scores[key] = scores.get(key, 0.0) + 1 / (_RRF_K + rank + 1)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


_CLARITY_AT = 20
"""How many of a channel's best records its clarity is read from (see ``clarity``)."""
_CLARITY_FLOOR = 0.05
"""The least clarity a channel's vote is scaled by: a channel whose first records all tie
still counts a little."""


def clarity(ranked: Sequence[tuple[int, float]]) -> float:
    """How clearly a channel's best records stand out from the rest of its first
    ``_CLARITY_AT`` (best first): 1 less their mean score as a share of the best. A channel
    that ranks a few records far ahead is sure of them; one whose first twenty score alike
    has no opinion on their order."""
    if len(ranked) < 2 or ranked[0][1] <= 0:
        return 1.0
    best = ranked[0][1]
    rest = ranked[1:_CLARITY_AT]
    return max(_CLARITY_FLOOR, 1.0 - sum(score for _, score in rest) / (len(rest) * best))


def blend(
    channels: Mapping[str, Sequence[tuple[int, float]]], weights: Mapping[str, float]
) -> list[tuple[int, float]]:
    """The channels' scores, each as a share of its best, summed with their weights (1
    unless ``weights`` says otherwise) times the channel's ``clarity`` for this query.
    Unlike reciprocal ranks, a clear winner of one channel stays ahead of a record both
    channels found only vaguely; and a channel that is sure of its first records outvotes
    one whose first records score alike (on LoCoMo the lexical channel, when the question
    names what only a few turns say)."""
    scores: dict[int, float] = {}
    for name, ranked in channels.items():
        best = ranked[0][1] if ranked else 0.0
        if best <= 0:
            continue
        weight = weights.get(name, 1.0) * clarity(ranked)
        for key, score in ranked:
            scores[key] = scores.get(key, 0.0) + weight * score / best
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def with_context(
    ranked: Sequence[tuple[int, float]],
    neighbours: Mapping[int, tuple[tuple[int, float], ...]],
    allowed: Container[int],
    *,
    depth: int,
) -> list[tuple[int, float]]:
    """One channel's ranking rescored with context: each record also earns a share of its
    session neighbours' scores, the best of them. In a conversation the answer is often the
    reply to what the query matches, or the question before it; a question passes more to
    its reply than other records do. Scores count from the channel's floor
    (``_above_floor``)."""
    own = _above_floor(ranked, depth)
    scores = dict(own)
    for key, score in own.items():
        for other, weight in neighbours.get(key, ()):
            if other in allowed:
                lifted = own.get(other, 0.0) + weight * score
                scores[other] = max(scores.get(other, 0.0), lifted)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def prefer(ranked: Sequence[tuple[int, float]], preferred: set[int]) -> list[tuple[int, float]]:
    """``ranked`` fused by reciprocal rank with its own ``preferred`` part: those rise
    without the others dropping out."""
    return _fuse(ranked, [kv for kv in ranked if kv[0] in preferred])


def words(text: str) -> frozenset[str]:
    """The lowercased words of ``text``, with what the native analyzer also sees beyond
    ASCII: a Latin word with diacritics as it is typed without them (``josé`` is ``jose``),
    and a run of Chinese, Japanese or Korean characters (written without spaces) also as its
    overlapping pairs, so a label or a near-duplicate is seen however it is typed or inside
    a sentence."""
    found = {w.lower() for w in _WORD.findall(text)}
    if text.isascii():
        return frozenset(found)
    for word in tuple(found):
        if word.isascii():
            continue
        bare, pieces = word_variants(word)
        if bare is not None:
            found.discard(word)
            found.add(bare)
        found.update(pieces)
    return frozenset(found)


def _told(text: str, written: float) -> tuple[float, float] | None:
    """The range the time phrase that ``tells_time`` found in ``text`` names, read as of
    ``written``. Only the words around it are read: the reader's cost grows with the text."""
    where = where_told(text)
    if where is None:
        return None
    start = text.rfind(" ", 0, max(0, where[0] - _TOLD_REACH)) + 1  # whole words only
    end = text.find(" ", where[1] + _TOLD_REACH)
    near = text[start : end if end >= 0 else len(text)]
    found = resolve(near, datetime.fromtimestamp(written, timezone.utc))
    if found.phrase is None:
        return None
    low = found.start.timestamp() if found.start is not None else float("-inf")
    high = found.end.timestamp() if found.end is not None else float("inf")
    return low, high
