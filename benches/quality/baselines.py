"""The two baselines coderecall must beat, measured on the same blanked copy.

- ``BM25Windows``: textbook BM25 (k1=1.2, b=0.75) over non-overlapping 40-line windows of
  every file the index holds, with the plainest tokenizer (lowercase ASCII alphanumerics). It
  is what "chunk the files and run BM25" gives without any code awareness.
- ``ripgrep_search``: files ranked by how often the query words occur (``rg --count-matches``),
  what an agent gets from grep alone. File-level only.
"""

from __future__ import annotations

import heapq
import math
import re
import shutil
import subprocess
from array import array
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

Hit = tuple[str, int, int]
"""A ranked result: root-relative path, first line, last line (1-based, inclusive)."""

WINDOW = 40
K1 = 1.2
B = 0.75
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25Windows:
    """An inverted index of fixed line windows, pure Python, compact enough for ~100k windows.

    Postings are two ``array`` columns per term (window ids and term frequencies), which keeps
    memory near 8 bytes a posting instead of a tuple's ~70.
    """

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self.windows: list[Hit] = []
        self._lengths = array("I")
        self._docs: dict[str, array[int]] = {}
        self._freqs: dict[str, array[int]] = {}
        self._norm: list[float] = []

    def add(self, path: str, text: str) -> None:
        lines = text.splitlines()
        for first in range(0, len(lines), self.window):
            tokens = tokenize("\n".join(lines[first : first + self.window]))
            doc = len(self.windows)
            self.windows.append((path, first + 1, min(len(lines), first + self.window)))
            self._lengths.append(len(tokens))
            for term, count in Counter(tokens).items():
                docs = self._docs.get(term)
                if docs is None:
                    docs = self._docs[term] = array("I")
                    self._freqs[term] = array("I")
                docs.append(doc)
                self._freqs[term].append(count)

    def finish(self) -> None:
        """Precompute the length normalisation; call once after the last ``add``."""
        average = sum(self._lengths) / max(1, len(self._lengths))
        self._norm = [K1 * (1 - B + B * length / (average or 1)) for length in self._lengths]

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        total = len(self.windows)
        scores: dict[int, float] = {}
        for term in set(tokenize(query)):
            docs = self._docs.get(term)
            if docs is None:
                continue
            idf = math.log(1 + (total - len(docs) + 0.5) / (len(docs) + 0.5))
            norm = self._norm
            for doc, freq in zip(docs, self._freqs[term], strict=True):
                scores[doc] = scores.get(doc, 0.0) + idf * freq * (K1 + 1) / (freq + norm[doc])
        best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))
        return [self.windows[doc] for doc, _ in best]


def build_bm25(root: Path, paths: Iterable[str]) -> BM25Windows:
    """Windows over ``paths`` (root-relative), skipping files that are not UTF-8 text."""
    index = BM25Windows()
    for path in sorted(paths):
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        index.add(path, text)
    index.finish()
    return index


STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "if", "in"}
    | {"into", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "with"}
)


def ripgrep() -> str | None:
    return shutil.which("rg")


def ripgrep_search(
    rg: str, root: Path, query: str, allowed: set[str], limit: int = 10
) -> list[Hit]:
    """Files under ``root`` by total case-insensitive matches of the query words.

    Only files in ``allowed`` (what the index holds) are ranked, so every system sees the same
    files; ties go to the shorter path, then alphabetical order, for determinism.
    """
    words = sorted({word for word in tokenize(query) if word not in STOP_WORDS})
    if not words:
        return []
    command = [rg, "--count-matches", "-i", "-F", "--no-messages", "--hidden", "--no-ignore"]
    for word in words:
        command += ["-e", word]
    done = subprocess.run([*command, "."], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"rg failed ({done.returncode}): {done.stderr.strip()[:200]}")
    counts: list[tuple[int, str]] = []
    for line in done.stdout.splitlines():
        path, _, count = line.rpartition(":")
        path = path.removeprefix("./")
        if path in allowed and count.isdigit():
            counts.append((-int(count), path))
    counts.sort(key=lambda item: (item[0], len(item[1]), item[1]))
    return [(path, 0, 0) for _, path in counts[:limit]]
