"""Freshness costs: no-op re-index of a many-file tree, branch switches, garbage collection.

``python -m benches.speed.views [--quick] [--runs N]`` builds a generated git repository in a
temporary folder and prints a markdown table of medians over ``--runs`` runs, each beside the
cold build of the same tree as its baseline:

- no-op re-index of a 10,000-file tree (target < 0.3 s);
- branch switch touching 1,000 files, to content never seen (parsed) and back (all known);
- garbage collection of 100,000 orphaned chunks (``gc-grace`` 0, what ``index`` runs last).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from coderecall import CodeIndex

from .trees import generated_repo, git, module_path, python_module

_NEVER = {"gc_grace": 10 * 365 * 86400, "embedding": {"provider": "none"}}  # no GC unless asked


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def median_of(runs: int, work: Callable[[], float]) -> float:
    return statistics.median(work() for _ in range(runs))


def noop_and_cold(
    files: int, runs: int, log: Callable[[str], None]
) -> list[tuple[str, float, float]]:
    with tempfile.TemporaryDirectory(prefix="cr-views-") as tmp:
        root = Path(tmp) / "repo"
        generated_repo(root, files, 1)
        cold = []
        for run in range(runs):
            with CodeIndex(root, {"index_dir": Path(tmp) / f"cold-{run}", **_NEVER}) as index:
                cold.append(timed(lambda index=index: index.index(progress=False)))  # type: ignore[misc]
        with CodeIndex(root, {"index_dir": Path(tmp) / "cold-0", **_NEVER}) as index:
            index.index(progress=False)
            noop = median_of(runs, lambda: timed(lambda: index.index(progress=False)))
        log(f"no-op on {files} files: {noop:.3f} s")
        return [(f"no-op re-index, {files:,} files", noop, statistics.median(cold))]


def branch_switch(
    files: int, touched: int, runs: int, log: Callable[[str], None]
) -> list[tuple[str, float, float]]:
    results: dict[str, list[float]] = {"new": [], "known": [], "cold": []}
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="cr-views-") as tmp:
            root = Path(tmp) / "repo"
            generated_repo(root, files, 1)
            git(root, "checkout", "-q", "-b", "feature")
            for n in range(touched):
                module_path(root, n).write_text(python_module(n, 1, variant="_v2"))
            git(root, "commit", "-q", "-am", "feature")
            git(root, "checkout", "-q", "main")
            with CodeIndex(root, _NEVER) as index:
                results["cold"].append(timed(lambda: index.index(progress=False)))
                git(root, "checkout", "-q", "feature")
                results["new"].append(timed(lambda: index.index(progress=False)))
                git(root, "checkout", "-q", "main")
                results["known"].append(timed(lambda: index.index(progress=False)))
                hits = index.search(f"handler_{touched - 1}_0_v2")
                assert not hits or hits[0].symbol != f"handler_{touched - 1}_0_v2"
    cold = statistics.median(results["cold"])
    log(f"switch new {statistics.median(results['new']):.3f} s")
    return [
        (
            f"branch switch, {touched:,} of {files:,} files, new content",
            statistics.median(results["new"]),
            cold,
        ),
        (
            f"branch switch back, {touched:,} files, known content",
            statistics.median(results["known"]),
            cold,
        ),
    ]


def garbage(chunks: int, runs: int, log: Callable[[str], None]) -> list[tuple[str, float, float]]:
    per_file = 100
    files = max(1, chunks // per_file)
    seconds, cold, collected = [], [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="cr-views-") as tmp:
            root = Path(tmp) / "repo"
            generated_repo(root, files, per_file)
            with CodeIndex(root, _NEVER) as index:
                cold.append(timed(lambda: index.index(progress=False)))
                for n in range(files):
                    module_path(root, n).write_text(python_module(n, per_file, variant="_new"))
                index.index(progress=False)
            native = CodeIndex(root, {"gc_grace": 0, "embedding": {"provider": "none"}})
            with native:
                handle = native._open()  # the measured call alone, not a whole index run
                start = time.perf_counter()
                stats = handle.collect_garbage(0.0)
                seconds.append(time.perf_counter() - start)
                collected = stats["chunks"]
    log(f"gc of {collected} chunks: {statistics.median(seconds):.3f} s")
    return [
        (
            f"garbage collection, {collected:,} orphaned chunks",
            statistics.median(seconds),
            statistics.median(cold),
        )
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.speed.views", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, 1 run")
    parser.add_argument("--runs", type=int, help="runs per timing (default 3, --quick 1)")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    scale = 10 if args.quick else 1

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    rows = [
        *noop_and_cold(10_000 // scale, runs, log),
        *branch_switch(10_000 // scale, 1_000 // scale, runs, log),
        *garbage(100_000 // scale, runs, log),
    ]
    print(
        f"\nFreshness ({platform.machine()}, {os.cpu_count()} cores, medians of {runs} runs;"
        " baseline: a cold build of the same tree)\n"
    )
    print("| operation | seconds | cold build | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for label, value, baseline in rows:
        print(f"| {label} | {value:.3f} | {baseline:.3f} | {value / baseline:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
