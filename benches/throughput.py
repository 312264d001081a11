"""Indexing throughput and no-op cost, through the public API (``CodeIndex``).

    python benches/throughput.py [DIR ...] [--runs N]

With no DIR, measures two corpora of real code that exist on any machine that builds
coderecall: the CPython standard library of the running interpreter (without
``site-packages``) and the cargo registry sources. Each run builds a fresh index in a
temporary folder (cold: collect + read + hash + parse + chunk + store + lexical index), then
indexes again with nothing changed (no-op: collect + one stat per file), then times warm
searches: identifiers and three-word phrases sampled with a fixed seed from the corpus. Prints
a markdown table of medians over N runs; MB/s per core divides by the cores the machine has.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path

from coderecall import CodeIndex


def default_corpora() -> list[Path]:
    corpora = [Path(sysconfig.get_paths()["stdlib"])]
    registry = Path.home() / ".cargo" / "registry" / "src"
    if registry.is_dir():
        corpora.append(registry)
    return corpora


QUERIES = 200
IDENTIFIER = re.compile(r"\b(?:def|fn|func|class|struct|function)\s+([A-Za-z_][A-Za-z0-9_]{3,})")
WORD = re.compile(r"\b[a-z]{4,12}\b")


def sample_queries(index: CodeIndex, rng: random.Random) -> tuple[list[str], list[str]]:
    """Identifiers defined in the corpus and phrases of words found in it."""
    identifiers: list[str] = []
    words: list[str] = []
    for hit in index.search("return value error", limit=200, with_content=True):
        identifiers += IDENTIFIER.findall(hit.content or "")
        words += WORD.findall(hit.content or "")
    identifiers = sorted(set(identifiers))
    words = sorted(set(words))
    return (
        [rng.choice(identifiers) for _ in range(QUERIES)],
        [" ".join(rng.sample(words, 3)) for _ in range(QUERIES)],
    )


def latencies(index: CodeIndex, queries: list[str]) -> list[float]:
    out = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, limit=10, with_content=False)
        out.append(time.perf_counter() - start)
    return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def measure(root: Path, runs: int) -> dict[str, float]:
    cold: list[float] = []
    noop: list[float] = []
    ident_ms: list[float] = []
    words_ms: list[float] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            config = {"index_dir": Path(tmp), "exclude": ["site-packages/"]}
            with CodeIndex(root, config, force=True) as index:
                start = time.perf_counter()
                report = index.index(progress=False)
                cold.append(time.perf_counter() - start)
                start = time.perf_counter()
                again = index.index(progress=False)
                noop.append(time.perf_counter() - start)
                assert again.files_parsed == 0, "nothing changed between the two runs"
                identifiers, phrases = sample_queries(index, random.Random(7))
                latencies(index, identifiers[:20])  # warm-up
                ident_ms += [t * 1000 for t in latencies(index, identifiers)]
                words_ms += [t * 1000 for t in latencies(index, phrases)]
    seconds = statistics.median(cold)
    megabytes = report.bytes_parsed / 1e6
    cores = os.cpu_count() or 1
    return {
        "files": report.files_seen,
        "parsed": report.files_parsed,
        "mb": megabytes,
        "chunks": report.chunks_added,
        "seconds": seconds,
        "mb_s": megabytes / seconds,
        "mb_s_core": megabytes / seconds / cores,
        "chunks_s": report.chunks_added / seconds,
        "noop": statistics.median(noop),
        "ident_p50": percentile(ident_ms, 0.5),
        "ident_p99": percentile(ident_ms, 0.99),
        "words_p50": percentile(words_ms, 0.5),
        "words_p99": percentile(words_ms, 0.99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, runs: {args.runs} (medians)\n")
    print(
        "| corpus | files | parsed | MB parsed | chunks | cold index s | MB/s | MB/s/core "
        "| chunks/s | no-op re-index s | identifier query p50/p99 ms | phrase query p50/p99 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for root in args.dirs or default_corpora():
        r = measure(root.resolve(), args.runs)
        print(
            f"| {root} | {r['files']:.0f} | {r['parsed']:.0f} | {r['mb']:.1f} "
            f"| {r['chunks']:.0f} | {r['seconds']:.2f} | {r['mb_s']:.1f} | {r['mb_s_core']:.1f} "
            f"| {r['chunks_s']:.0f} | {r['noop']:.3f} "
            f"| {r['ident_p50']:.2f} / {r['ident_p99']:.2f} "
            f"| {r['words_p50']:.2f} / {r['words_p99']:.2f} |"
        )


if __name__ == "__main__":
    main()
