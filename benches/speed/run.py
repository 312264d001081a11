"""Orchestration of ``python -m benches.speed``: pick the trees, run the phases, print tables.

Every measured build and query loop runs in a child interpreter (``child.py``); this process
only copies trees, samples queries and times ripgrep, whose cost is a process start anyway.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import platform
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benches import corpora

from . import child
from .queries import sample_queries
from .report import EngineRun, ManyFiles, Results, Row, render
from .stats import Latency, median
from .trees import Target, concatenate, edit_candidate, line_count, many_files

SEED = 7
MANY_FILES = 10_000
QUICK_MANY_FILES = 1_000
SMALL_LINES = 20_000
MEDIUM_LINES = 200_000
FAMILIES = ("identifier", "natural")
Log = Callable[[str], None]


def speed_cache(cache: Path | None) -> Path:
    """Copied trees live next to the corpora: ``<corpora cache>/speed``."""
    folder = (cache or corpora.default_cache()).expanduser() / "speed"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benches.speed", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="small inputs, 1 run")
    parser.add_argument("--dirs", nargs="+", type=Path, help="measure these trees (one row each)")
    parser.add_argument(
        "--exclude", action="append", default=[], help="glob left out (with --dirs)"
    )
    parser.add_argument("--runs", type=int, help="runs per timing, median reported (default 3)")
    parser.add_argument("--queries", type=int, default=200, help="queries per family")
    parser.add_argument("--many-files", type=int, help="size of the no-op target tree")
    parser.add_argument("--cache", type=Path, help="corpora cache (default: benches.corpora's)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every row, then the many-files tree, and print the tables (or JSON)."""
    args = parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    if runs < 1 or args.queries < 1:
        raise SystemExit("--runs and --queries must be at least 1")

    def log(message: str) -> None:
        print(f"[speed] {message}", file=sys.stderr, flush=True)

    notes: list[str] = []
    if args.dirs:
        targets = [
            Target(d.name or str(d), d.resolve(), str(d), tuple(args.exclude)) for d in args.dirs
        ]
    else:
        targets = corpus_targets(args.quick, args.cache, notes, log)
    tools = available_tools(notes)
    head = header(tools)
    rows: list[Row] = []
    listings: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="coderecall-speed-") as tmp:
        for number, target in enumerate(targets):
            log(f"{target.label}: {target.root}")
            work = Path(tmp) / f"row{number}"
            work.mkdir()
            row, paths = measure(target, work, runs, args.queries, tools, log)
            rows.append(row)
            listings.append(paths)
            shutil.rmtree(work, ignore_errors=True)
        count = args.many_files or (QUICK_MANY_FILES if args.quick else MANY_FILES)
        cache = speed_cache(args.cache)
        many = measure_many(targets, listings, cache, count, runs, Path(tmp), log)
    results = Results(
        header=head,
        runs=runs,
        rows=rows,
        many=many,
        notes=notes,
        cores=os.cpu_count() or 1,
    )
    if args.json:
        print(json.dumps(dataclasses.asdict(results), indent=2, default=str))
    else:
        print(render(results))
    return 0


def corpus_targets(quick: bool, cache: Path | None, notes: list[str], log: Log) -> list[Target]:
    """Small, medium, target and large rows from the pinned corpora (``benches.corpora``).

    Small and medium are the single corpora closest to 20k and 200k lines (with ``--quick``,
    the smallest and largest of ``corpora.QUICK``); large is every fetched corpus copied into
    one tree, since no single pinned corpus reaches a million lines; target (not with
    ``--quick``) is the large tree without its largest corpus, the size the query target
    names.
    """

    def noted(message: str) -> None:
        if "substitute" in message:
            notes.append(message)
        log(message)

    try:
        fetched = corpora.fetch(quick=quick, cache=cache, log=noted)
    except corpora.CorpusError as exc:
        raise SystemExit(f"corpora: {exc}") from None
    if not fetched:
        raise SystemExit("no corpus could be fetched; pass --dirs DIR ...")
    sized = sorted(((corpora.tree_stats(c.root)[1], c) for c in fetched), key=lambda p: p[0])

    def closest(lines: int, other: corpora.Corpus | None = None) -> corpora.Corpus:
        pool = [pair for pair in sized if pair[1] is not other] or sized
        return min(pool, key=lambda pair: abs(pair[0] - lines))[1]

    small = sized[0][1] if quick else closest(SMALL_LINES)
    medium = sized[-1][1] if quick else closest(MEDIUM_LINES, small)
    total = sum(lines for lines, _ in sized)
    large = concatenate(speed_cache(cache), "large", {c.name: c.root for _, c in sized})
    if total < 1_000_000:
        notes.append(f"the large tree has {total:,} lines, below the 1M-line goal")
    rows = [
        Target("small", small.root, describe(small)),
        Target("medium", medium.root, describe(medium)),
    ]
    if not quick and len(sized) > 2:
        # The query target is set at 100k chunks: the large tree without its largest corpus
        # comes closest from above (107k of 152k chunks with the pinned corpora).
        *rest, (_, biggest) = sized
        rows.append(
            Target(
                "target",
                concatenate(speed_cache(cache), "target", {c.name: c.root for _, c in rest}),
                f"{len(rest)} corpora concatenated (the large tree without {biggest.name})",
                parts=tuple(describe(c) for _, c in rest),
            )
        )
    rows.append(
        Target(
            "large",
            large,
            f"{len(sized)} corpora concatenated",
            parts=tuple(describe(c) for _, c in sized),
        )
    )
    return rows


def describe(corpus: corpora.Corpus) -> str:
    return f"{corpus.name} {corpus.version} ({corpus.language}, {corpus.source})"


def available_tools(notes: list[str]) -> dict[str, str]:
    """Versions of the baselines present; a missing one is a note and a skipped column."""
    tools: dict[str, str] = {"fts5": f"SQLite {sqlite3.sqlite_version} FTS5"}
    rg = shutil.which("rg")
    if rg:
        first = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False)
        tools["ripgrep"] = (first.stdout.splitlines() or ["ripgrep"])[0]
    else:
        notes.append("ripgrep (`rg`) is not installed (Debian: apt-get install ripgrep): skipped")
    try:
        tantivy: Any = importlib.import_module("tantivy")
        tools["tantivy"] = f"tantivy-py {getattr(tantivy, '__version__', '?')}"
    except ImportError:
        notes.append("the tantivy package is not installed (pip install tantivy): skipped")
    return tools


def measure(
    target: Target, work: Path, runs: int, count: int, tools: dict[str, str], log: Log
) -> tuple[Row, list[str]]:
    """All the numbers of one row (cold builds, session, baselines), and the files indexed."""
    base = {"root": str(target.root), "exclude": list(target.exclude), "work": str(work)}
    colds = []
    for run in range(runs):
        index_dir = work / f"index{run}"
        colds.append(child.run_phase("cold", {**base, "index_dir": str(index_dir)}))
        if run + 1 < runs:
            shutil.rmtree(index_dir)
        log(f"  cold {run + 1}/{runs}: {colds[-1]['seconds']:.2f} s")
    last = colds[-1]
    paths: list[str] = last["paths"]
    (work / "paths.json").write_text(json.dumps(paths))
    queries = sample_queries(target.root, paths, count, SEED)
    by_family = {"identifier": list(queries.identifiers), "natural": list(queries.phrases)}
    (work / "queries.json").write_text(json.dumps(by_family))
    edit = edit_candidate(target.root, paths)
    spec = {
        **base,
        "index_dir": str(work / f"index{runs - 1}"),
        "runs": runs,
        "queries": str(work / "queries.json"),
        "paths": str(work / "paths.json"),
        "edit_path": edit[0] if edit else None,
        "comment": edit[1] if edit else "#",
    }
    session = child.run_phase("session", spec)
    log(f"  session: no-op {median(session['noop']):.3f} s")
    engines = {
        "coderecall": EngineRun(
            seconds=median([c["seconds"] for c in colds]),
            index_bytes=last["index_bytes"],
            peak_rss=int(median([c["peak_rss"] for c in colds])),
            latency=latencies(session),
        )
    }
    for name, phase in (("tantivy", "tantivy"), ("fts5", "fts5")):
        if name in tools:
            result = child.run_phase(phase, {**spec, "index_dir": str(work / name)})
            engines[name] = EngineRun(
                seconds=result["seconds"],
                index_bytes=result["index_bytes"],
                peak_rss=result["peak_rss"],
                latency=latencies(result),
            )
            log(f"  {name}: {result['seconds']:.2f} s")
    if "ripgrep" in tools:
        engines["ripgrep"] = EngineRun(
            seconds=None,
            index_bytes=None,
            peak_rss=None,
            latency=latencies(ripgrep(target.root, target.exclude, by_family)),
        )
        log("  ripgrep done")
    edits = [s for s in session["edit_searchable"] if s is not None]
    row = Row(
        label=target.label,
        source=target.source,
        parts=target.parts,
        files=last["files"],
        bytes=last["bytes"],
        lines=line_count(target.root, paths),
        chunks=last["chunks"],
        noop_seconds=median(session["noop"]),
        noop_reparsed=session["noop_reparsed"],
        edit_file=edit[0] if edit else None,
        edit_reindex=median(session["edit_reindex"]) if session["edit_reindex"] else None,
        edit_searchable=median(edits) if edits else None,
        query_rss=session["peak_rss"],
        query_note=queries.note,
        engines=engines,
        open_query=session["open_query"],
    )
    return row, paths


def latencies(result: dict[str, Any]) -> dict[str, Latency]:
    return {f: Latency.of(result[f"ms_{f}"]) for f in FAMILIES if result.get(f"ms_{f}")}


def ripgrep(root: Path, exclude: Sequence[str], queries: dict[str, list[str]]) -> dict[str, Any]:
    """Wall milliseconds of ``rg -i -F -l -e WORD ...`` per query, process start included.

    Files matching any word of the query are listed (the OR of a BM25 query, unranked).
    ``--no-require-git`` honours ``.gitignore`` outside git repositories, as coderecall does.
    """
    command = ["rg", "-i", "-F", "-l", "--no-require-git", "--no-messages"]
    command += [f"--glob=!{glob}" for glob in exclude]

    def search(query: str) -> None:
        words = [part for word in query.split() for part in ("-e", word)]
        subprocess.run(
            [*command, *words, str(root)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )

    # A short warm-up: every query starts a process anyway.
    return child.latencies(search, queries, warmup=5)


def measure_many(
    targets: Sequence[Target],
    listings: Sequence[list[str]],
    cache: Path,
    count: int,
    runs: int,
    tmp: Path,
    log: Log,
) -> ManyFiles | None:
    """No-op re-index of a ``count``-file tree copied from the row with the most files."""
    if not listings:
        return None
    best = max(range(len(listings)), key=lambda i: len(listings[i]))
    tree = many_files(cache, targets[best].root, listings[best], count)
    log(f"many files: {tree}")
    work = tmp / "many"
    work.mkdir()
    spec = {
        "root": str(tree),
        "exclude": [],
        "work": str(work),
        "index_dir": str(work / "index"),
        "runs": max(runs, 3),
    }
    result = child.run_phase("noop", spec)
    return ManyFiles(
        files=result["files"],
        source=f"{count} files copied from {targets[best].label}",
        cold_seconds=result["cold"],
        noop_seconds=median(result["noop"]),
    )


def header(tools: dict[str, str]) -> dict[str, str]:
    import coderecall

    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "python": platform.python_version(),
        "coderecall": f"{coderecall.__version__} ({native_build()})",
        "baselines": ", ".join(tools[name] for name in sorted(tools)),
        "load": load(),
    }


def load() -> str:
    """Load averages when the run started: other work on the machine skews every timing."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load average {one:.1f} (1 min) / {five:.1f} (5 min) at start"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    memory = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {int(line.split()[1]) / 1024**2:.0f} GiB RAM"
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}{memory}, {platform.system()} {platform.release()}"


def native_build() -> str:
    """Whether the native module was stripped (a release build) or carries symbols.

    Dev builds (``pip install -e .``) run our own code at -O1, so their timings are
    pessimistic; the header says which one was measured.
    """
    from coderecall import _native

    path = Path(_native.__file__ or "")
    try:
        names = elf_sections(path.read_bytes())
    except (OSError, ValueError):
        return "native build unknown"
    if ".debug_info" in names:
        kind = "debug info: dev or profiling build"
    elif ".symtab" in names:
        kind = "symbols, no debug info"
    else:
        kind = "stripped: release build"
    return f"native {path.stat().st_size / 1e6:.0f} MB, {kind}"


def elf_sections(data: bytes) -> set[str]:
    """Section names of a 64-bit little-endian ELF file (the only kind wheels ship on Linux)."""
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError("not a 64-bit little-endian ELF file")
    (offset,) = struct.unpack_from("<Q", data, 0x28)
    size, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    (names_offset,) = struct.unpack_from("<Q", data, offset + names_index * size + 0x18)
    sections = set()
    for number in range(count):
        (name,) = struct.unpack_from("<I", data, offset + number * size)
        end = data.index(b"\0", names_offset + name)
        sections.add(data[names_offset + name : end].decode("ascii", "replace"))
    return sections
