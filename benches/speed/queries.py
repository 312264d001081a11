"""Deterministic query sampling from the files a run indexes.

Identifier queries are names of definitions (``extract_symbols``, the chunker's own view), so
each has a real target. Natural-language queries are 3 to 5 consecutive words of the
definition names of one file, split at ``snake_case`` and ``camelCase``: every language has
them, unlike doc comments, and they mix words the way a description of that file would. Both
come from a ``random.Random(seed)``, so the same files give the same queries on any machine.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coderecall._native import extract_symbols

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,47}")
WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
MAX_FILE_BYTES = 256 * 1024
"""Larger files are skipped while sampling: parsing them only adds time, not variety."""


@dataclass(frozen=True, slots=True)
class Queries:
    identifiers: tuple[str, ...]
    phrases: tuple[str, ...]
    note: str
    """How the queries were drawn, and whether a pool was too small (then drawn with repeats)."""


def split_words(identifier: str) -> list[str]:
    """Lower-case words of an identifier: ``parseHTTPResponse_v2`` -> parse, http, response."""
    return [word.lower() for word in WORD.findall(identifier) if len(word) >= 2]


def sample_queries(root: Path, paths: Sequence[str], count: int, seed: int) -> Queries:
    """``count`` identifier and ``count`` phrase queries drawn from ``paths`` under ``root``.

    Files are visited in a seeded shuffle and stop being read once both pools hold four times
    ``count`` candidates, so sampling a million-line tree costs a few hundred parses.
    """
    rng = random.Random(seed)
    order = sorted(paths)
    rng.shuffle(order)
    identifiers: dict[str, None] = {}
    phrases: dict[str, None] = {}
    for path in order:
        if len(identifiers) >= 4 * count and len(phrases) >= 4 * count:
            break
        file = root / path
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                continue
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        names = [name for name, *_ in extract_symbols(path, text) if IDENTIFIER.fullmatch(name)]
        identifiers.update(dict.fromkeys(names))
        words = [word for name in names for word in split_words(name) if len(word) >= 3]
        for _ in range(len(words) // 15 + 1 if len(words) >= 3 else 0):
            size = rng.randint(3, min(5, len(words)))
            start = rng.randrange(len(words) - size + 1)
            phrases[" ".join(words[start : start + size])] = None
    return Queries(
        identifiers=_draw(rng, list(identifiers), count),
        phrases=_draw(rng, list(phrases), count),
        note=(
            f"identifiers: definition names (pool {len(identifiers)}); natural language: "
            f"3-5 consecutive words of one file's definition names (pool {len(phrases)}); "
            f"seed {seed}"
        ),
    )


def _draw(rng: random.Random, pool: list[str], count: int) -> tuple[str, ...]:
    """``count`` distinct items, or with repeats when the pool is smaller (a tiny tree)."""
    if not pool:
        return ()
    if len(pool) >= count:
        return tuple(rng.sample(pool, count))
    return tuple(rng.choices(pool, k=count))
