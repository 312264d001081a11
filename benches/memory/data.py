"""LoCoMo conversations as turns and scored questions, with the evidence ids repaired.

The file is a list of samples: ``conversation`` holds ``speaker_a``/``speaker_b``,
``session_N`` (lists of turns ``{speaker, dia_id, text}``, some with ``blip_caption`` for a
shared image) and ``session_N_date_time`` (``"1:56 pm on 8 May, 2023"``); ``qa`` holds
``question``, ``answer``, ``category`` and ``evidence`` (the ``dia_id``s of the turns that
answer it). Category 5 (adversarial) has no answer in the conversation: its questions are
counted but not scored. Evidence ids are normalised (``"D:11:26"``, ``"D8:6; D9:17"``);
ids naming no turn of the conversation are dropped, and so are questions left without any.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "ENV",
    "Conversation",
    "DataError",
    "EvidenceCounts",
    "Question",
    "Turn",
    "default_path",
    "load",
    "normalise_evidence",
    "parse_conversation",
    "parse_when",
]

ENV = "CODERECALL_LOCOMO"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""The scored categories; 5 (adversarial) is counted, never scored."""
ADVERSARIAL = 5

_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
"""A turn id, tolerant of the slips in the data: ``D1:3``, ``D:11:26``, ``D 4 : 7``."""


class DataError(Exception):
    """The data file is missing or not in the LoCoMo format."""


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    session: int
    at: datetime

    def record_text(self) -> str:
        """The text stored as one memory: who said it, and the shared image's caption."""
        text = f"{self.speaker}: {self.text}"
        return f"{text} [image: {self.caption}]" if self.caption else text


@dataclass(frozen=True, slots=True)
class Question:
    sample_id: str
    index: int
    """Position in the sample's ``qa`` list: the question's stable id."""
    text: str
    category: int
    evidence: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.sample_id}#{self.index}"


@dataclass(slots=True)
class EvidenceCounts:
    """What normalising the evidence did, for the notes of the report."""

    repaired: int = 0
    """Evidence entries rewritten into valid ids (split, spaces, stray colons)."""
    invalid: int = 0
    """Entries, or ids out of them, that name no turn of the conversation."""
    unanswerable: int = 0
    """Scored-category questions left without valid evidence (dropped)."""

    def add(self, other: EvidenceCounts) -> None:
        self.repaired += other.repaired
        self.invalid += other.invalid
        self.unanswerable += other.unanswerable


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    """The scored questions (categories 1-4 with valid evidence), in file order."""
    adversarial: int
    """Category-5 questions: counted, not scored."""
    evidence: EvidenceCounts


def default_path(repo: Path) -> Path:
    """``$CODERECALL_LOCOMO``, else ``../shared/data/locomo-dev.json`` next to the repository."""
    given = os.environ.get(ENV)
    return Path(given) if given else repo.parent / "shared" / "data" / "locomo-dev.json"


def load(path: Path) -> list[Conversation]:
    if not path.is_file():
        raise DataError(
            f"no LoCoMo data at {path}: pass --data PATH or set {ENV} (the file is CC BY-NC "
            "and is never part of this repository)"
        )
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(samples, list) or not samples:
        raise DataError(f"{path}: expected a non-empty list of LoCoMo samples")
    return [parse_conversation(sample) for sample in samples]


def parse_when(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    try:
        when = datetime.strptime(" ".join(value.split()), "%I:%M %p on %d %B, %Y")
    except ValueError:
        raise DataError(f"unexpected session date {value!r}") from None
    return when.replace(tzinfo=timezone.utc)


def normalise_evidence(raw: Iterable[object], known: set[str]) -> tuple[list[str], EvidenceCounts]:
    """The valid turn ids in ``raw`` (each once, in order) and what it took to get them."""
    counts = EvidenceCounts()
    found: list[str] = []
    for entry in raw:
        text = str(entry)
        ids = [f"D{int(m.group(1))}:{int(m.group(2))}" for m in _DIA_ID.finditer(text)]
        if not ids:
            counts.invalid += 1
            continue
        if ids != [text]:
            counts.repaired += 1
        for dia_id in ids:
            if dia_id not in known:
                counts.invalid += 1
            elif dia_id not in found:
                found.append(dia_id)
    return found, counts


def parse_conversation(sample: Any) -> Conversation:
    try:
        sample_id = str(sample["sample_id"])
        conversation = sample["conversation"]
        qa: Sequence[Any] = sample["qa"]
    except (KeyError, TypeError) as exc:
        raise DataError(f"not a LoCoMo sample (missing {exc})") from None
    sessions = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.fullmatch(key)))
    turns: list[Turn] = []
    for n in sessions:
        stamp = conversation.get(f"session_{n}_date_time")
        if not isinstance(stamp, str):
            raise DataError(f"{sample_id}: session {n} has no date")
        at = parse_when(stamp)
        for turn in conversation[f"session_{n}"]:
            try:
                caption = turn.get("blip_caption")
                turns.append(
                    Turn(
                        dia_id=str(turn["dia_id"]),
                        speaker=str(turn["speaker"]),
                        text=str(turn["text"]),
                        caption=str(caption) if caption else None,
                        session=n,
                        at=at,
                    )
                )
            except (KeyError, AttributeError) as exc:
                raise DataError(f"{sample_id}: session {n}: bad turn (missing {exc})") from None
    known = {turn.dia_id for turn in turns}
    questions: list[Question] = []
    adversarial = 0
    counts = EvidenceCounts()
    for index, item in enumerate(qa):
        category = int(item["category"])
        if category == ADVERSARIAL:
            adversarial += 1
            continue
        if category not in CATEGORIES:
            raise DataError(f"{sample_id}: question {index} has unknown category {category}")
        evidence, fixed = normalise_evidence(item.get("evidence") or (), known)
        counts.add(fixed)
        if not evidence:
            counts.unanswerable += 1
            continue
        questions.append(
            Question(sample_id, index, str(item["question"]), category, tuple(evidence))
        )
    return Conversation(sample_id, tuple(turns), tuple(questions), adversarial, counts)
