"""Call-graph build time and edges per second on the large benchmark tree.

``python -m benches.speed.graph [--quick] [--runs N] [--dirs DIR ...]`` indexes the tree once
(lexical only), then builds the call graph ``--runs`` times, each on a freshly opened index so
nothing is cached, and prints a markdown table: files, definitions, edges, the share resolved /
inferred / unresolved, the median build time (loading references and definitions from SQLite,
then resolving; and resolving alone) and edges per second. Per-language rows show where
resolution is strong and where it is not.

The tree is the speed benchmark's large tree (every pinned corpus concatenated; with
``--quick`` the quick corpora), or the folders given with ``--dirs``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from coderecall import CodeIndex
from coderecall._native import NativeIndex

from .run import corpus_targets

_LEXICAL = {"embedding": {"provider": "none"}, "gc_grace": 10 * 365 * 86400}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benches.speed.graph", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the quick corpora, one run")
    parser.add_argument("--runs", type=int, help="builds to take the median of (default 3)")
    parser.add_argument("--dirs", type=Path, nargs="+", help="measure these trees instead")
    parser.add_argument("--cache", type=Path, help="corpora cache (default: benches.corpora's)")
    return parser.parse_args(argv)


def log(message: str) -> None:
    print(f"[graph] {message}", file=sys.stderr, flush=True)


def measure(root: Path, runs: int, work: Path) -> tuple[list[str], list[list[str]]]:
    """Index ``root`` once, build its graph ``runs`` times; the summary row and language rows."""
    config = {"index_dir": work / "index", **_LEXICAL}
    with CodeIndex(root, config, force=True) as index:
        started = time.perf_counter()
        report = index.index(progress=False)
        log(f"indexed {report.files_seen:,} files in {time.perf_counter() - started:.1f} s")
    totals, resolving = [], []
    for _ in range(runs):
        native = NativeIndex(str(work / "index"), str(root))
        started = time.perf_counter()
        graph = native.call_graph()
        totals.append(time.perf_counter() - started)
        stats = graph.stats()
        resolving.append(stats["build_seconds"])
        native.close()
    assert stats, "at least one run"
    total, resolve = statistics.median(totals), statistics.median(resolving)
    edges = stats["edges"]

    def share(n: int) -> str:
        return f"{n / edges:.0%}" if edges else "-"

    summary = [
        root.name,
        f"{stats['files']:,}",
        f"{stats['definitions']:,}",
        f"{edges:,}",
        share(stats["resolved"]),
        share(stats["inferred"]),
        share(stats["unresolved"]),
        f"{share(stats['ambiguous'])} / {share(stats['external'])} / {share(stats['unknown'])}",
        f"{total:.2f} s",
        f"{resolve:.2f} s",
        f"{edges / total:,.0f}" if total else "-",
    ]
    per_language = []
    by_language = graph.language_stats()
    for language, c in sorted(by_language.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(c.values())
        per_language.append(
            [
                language,
                f"{n:,}",
                f"{c['resolved'] / n:.0%}",
                f"{c['inferred'] / n:.0%}",
                f"{c['unresolved'] / n:.0%}",
            ]
        )
    return summary, per_language


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    if runs < 1:
        raise SystemExit("--runs must be at least 1")
    if args.dirs:
        roots = [d.resolve() for d in args.dirs]
    else:
        notes: list[str] = []
        targets = corpus_targets(args.quick, args.cache, notes, log)
        roots = [t.root for t in targets if t.label == "large"]
    summaries, languages = [], []
    for root in roots:
        with tempfile.TemporaryDirectory(prefix="coderecall-graph-") as tmp:
            summary, per_language = measure(root, runs, Path(tmp))
        summaries.append(summary)
        languages = per_language
    print(
        f"## Call graph ({platform.machine()}, {os.cpu_count()} cores, median of {runs} builds)\n"
    )
    print(
        table(
            [
                "tree",
                "files",
                "definitions",
                "edges",
                "resolved",
                "inferred",
                "unresolved",
                "of which ambiguous / external / unknown",
                "build (load + resolve)",
                "resolve only",
                "edges/s",
            ],
            summaries,
        )
    )
    print("\nCalls by language of the calling file (last tree):\n")
    print(table(["language", "calls", "resolved", "inferred", "unresolved"], languages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
