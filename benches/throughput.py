"""Indexing throughput of the native core: read + hash + parse + chunk + store + lexical index.

    python benches/throughput.py [DIR ...] [--runs N]

With no DIR, measures two corpora that exist on any machine that builds coderecall: the
CPython standard library of the running interpreter and the cargo registry sources. Prints a
markdown table with the median of N cold runs (fresh index each time), MB/s overall and per
core, and the median no-op re-index time (nothing changed; every file costs one stat).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from coderecall._native import NativeIndex

if TYPE_CHECKING:
    from coderecall._native import UpdateStats

MAX_FILE_BYTES = 1 << 20


def default_corpora() -> list[Path]:
    corpora = [Path(sysconfig.get_paths()["stdlib"])]
    registry = Path.home() / ".cargo" / "registry" / "src"
    if registry.is_dir():
        corpora.append(registry)
    return corpora


def walk(root: Path) -> list[tuple[str, int, int]]:
    files = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in {".git", "target", "__pycache__"}]
        for name in names:
            path = os.path.join(directory, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            files.append((os.path.relpath(path, root), st.st_mtime_ns, st.st_size))
    return files


def measure(root: Path, runs: int) -> dict[str, float]:
    files = walk(root)
    cold: list[float] = []
    noop: list[float] = []
    stats: UpdateStats | None = None
    changed: list[tuple[str, int, int]] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            index = NativeIndex(tmp)
            start = time.perf_counter()
            stats = index.update(str(root), files, [], MAX_FILE_BYTES)
            cold.append(time.perf_counter() - start)
            start = time.perf_counter()
            known = index.file_stats()
            changed = [f for f in files if (known.get(f[0]) or (0, 0, None))[:2] != (f[1], f[2])]
            index.update(str(root), changed, [], MAX_FILE_BYTES)
            noop.append(time.perf_counter() - start)
    assert stats is not None, "runs must be at least 1"
    seconds = statistics.median(cold)
    megabytes = stats["bytes_parsed"] / 1e6
    cores = os.cpu_count() or 1
    return {
        "files": len(files),
        "parsed": stats["files_parsed"],
        "mb": megabytes,
        "chunks": stats["chunks_added"],
        "seconds": seconds,
        "mb_s": megabytes / seconds,
        "mb_s_core": megabytes / seconds / cores,
        "chunks_s": stats["chunks_added"] / seconds,
        "noop": statistics.median(noop),
        "noop_changed": len(changed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, runs: {args.runs} (medians)\n")
    print(
        "| corpus | files | parsed | MB parsed | chunks | cold index s | MB/s | MB/s/core "
        "| chunks/s | no-op re-index s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for root in args.dirs or default_corpora():
        r = measure(root.resolve(), args.runs)
        print(
            f"| {root} | {r['files']} | {r['parsed']} | {r['mb']:.1f} | {r['chunks']} "
            f"| {r['seconds']:.2f} | {r['mb_s']:.1f} | {r['mb_s_core']:.1f} "
            f"| {r['chunks_s']:.0f} | {r['noop']:.3f} |"
        )


if __name__ == "__main__":
    main()
