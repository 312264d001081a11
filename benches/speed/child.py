"""Measured phases, each run in a fresh interpreter so its peak RSS is its own.

    python -m benches.speed.child PHASE SPEC.json

prints one JSON object. The parent only orchestrates: it never builds an index in its own
process, so one engine's memory (or page cache of its own files) never inflates another's
numbers. Tests call :func:`execute` in-process instead of :func:`run_phase`.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

Spec = dict[str, Any]
Result = dict[str, Any]

WARMUP = 20
"""Queries run before timing, so caches and lazily loaded index files are warm."""
PROJECT = Path(__file__).resolve().parents[2]


def run_phase(phase: str, spec: Spec) -> Result:
    """Run one phase in a child interpreter and return what it measured."""
    spec_file = Path(spec["work"]) / f"spec-{phase}.json"
    spec_file.write_text(json.dumps(spec))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")])),
    )
    done = subprocess.run(
        [sys.executable, "-m", "benches.speed.child", phase, str(spec_file)],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"phase {phase} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result: Result = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def execute(phase: str, spec: Spec) -> Result:
    return PHASES[phase](spec)


def peak_rss() -> int:
    """Peak resident set of this process in bytes (VmHWM; ru_maxrss where /proc is absent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def tree_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _config(spec: Spec) -> dict[str, object]:
    # Lexical only: these rows measure parsing and BM25; benches.semantic measures embedding.
    return {
        "index_dir": spec["index_dir"],
        "exclude": list(spec["exclude"]),
        "embedding": {"provider": "none"},
    }


def cold(spec: Spec) -> Result:
    """Build a fresh index; also lists the files it indexed, for the baselines and queries."""
    from coderecall import CodeIndex
    from coderecall._native import NativeIndex

    with CodeIndex(spec["root"], _config(spec), force=True) as index:
        start = time.perf_counter()
        report = index.index(progress=False)
        seconds = time.perf_counter() - start
        rss = peak_rss()
        chunks = index.status().chunks
    native = NativeIndex(spec["index_dir"], str(Path(spec["root"]).resolve()))
    try:
        view = native.file_stats()
    finally:
        native.close()
    return {
        "seconds": seconds,
        "files_seen": report.files_seen,
        "files": sum(1 for _, _, reason in view.values() if reason is None),
        "bytes": report.bytes_parsed,
        "chunks": chunks,
        "peak_rss": rss,
        "index_bytes": tree_bytes(Path(spec["index_dir"])),
        "paths": sorted(path for path, (_, _, reason) in view.items() if reason is None),
    }


def session(spec: Spec) -> Result:
    """Opening the index for a first query (what a command-line search pays after start-up),
    then no-op re-index, edit-to-searchable and warm query latency on an index built by cold."""
    from coderecall import CodeIndex

    queries = json.loads(Path(spec["queries"]).read_text())
    start = time.perf_counter()
    with CodeIndex(spec["root"], _config(spec), force=True) as index:
        first = [*queries["natural"], *queries["identifier"], "main"][0]
        index.search(first, limit=10, with_content=False)
        open_query = time.perf_counter() - start
        noop: list[float] = []
        reparsed = 0
        for _ in range(spec["runs"]):
            start = time.perf_counter()
            report = index.index(progress=False)
            noop.append(time.perf_counter() - start)
            reparsed = max(reparsed, report.files_parsed)
        edits = [
            _edit(index, Path(spec["root"]), spec["edit_path"], spec["comment"], run)
            for run in range(spec["runs"] if spec["edit_path"] else 0)
        ]

        def search(query: str) -> None:
            index.search(query, limit=10, with_content=False)

        latency = latencies(search, queries)
        return {
            "open_query": open_query,
            "noop": noop,
            "noop_reparsed": reparsed,
            "edit_reindex": [edit[0] for edit in edits],
            "edit_searchable": [edit[1] for edit in edits],
            "peak_rss": peak_rss(),
            **latency,
        }


def _edit(index: Any, root: Path, path: str, comment: str, run: int) -> tuple[float, float | None]:
    """Append a comment with a new word to ``path``; time the re-index and until it is found.

    The file is restored byte for byte (and its mtime) afterwards, and indexed again, so the
    corpus and the next run are unchanged.
    """
    marker = "zqxbenchedit" + "abcdefghijklmnopqrstuvwxyz"[run % 26]
    file = root / path
    original = file.read_bytes()
    stat = file.stat()
    searchable: float | None = None
    try:
        start = time.perf_counter()
        with file.open("ab") as handle:
            handle.write(f"\n{comment} {marker}\n".encode())
        index.index(progress=False)
        reindex = time.perf_counter() - start
        for _ in range(20):
            if any(hit.path == path for hit in index.search(marker, limit=10, with_content=False)):
                searchable = time.perf_counter() - start
                break
            index.index(progress=False)
    finally:
        file.write_bytes(original)
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        index.index(progress=False)
    return reindex, searchable


def latencies(
    search: Callable[[str], object], queries: dict[str, list[str]], warmup: int = WARMUP
) -> Result:
    """Per-query milliseconds of each family, after a warm-up on the identifier queries."""
    for query in queries["identifier"][:warmup]:
        search(query)
    out: Result = {}
    for family, items in queries.items():
        times = []
        for query in items:
            start = time.perf_counter()
            search(query)
            times.append((time.perf_counter() - start) * 1000)
        out[f"ms_{family}"] = times
    return out


def _documents(root: Path, paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    for path in paths:
        yield path, (root / path).read_text(encoding="utf-8", errors="replace")


def tantivy_phase(spec: Spec) -> Result:
    """tantivy: one document per file (path and body, both stored), default tokenizer.

    Index time includes reading the files; queries are parsed over both fields (OR of terms,
    BM25) and return the top 10 document addresses.
    """
    import tantivy  # type: ignore[import-not-found, unused-ignore]

    root, folder = Path(spec["root"]), Path(spec["index_dir"])
    folder.mkdir(parents=True)
    paths = json.loads(Path(spec["paths"]).read_text())
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("path", stored=True)
    builder.add_text_field("body", stored=True)
    index = tantivy.Index(builder.build(), path=str(folder))
    start = time.perf_counter()
    writer = index.writer()
    for path, body in _documents(root, paths):
        writer.add_document(tantivy.Document(path=path, body=body))
    writer.commit()
    writer.wait_merging_threads()
    seconds = time.perf_counter() - start
    index.reload()
    searcher = index.searcher()

    def search(query: str) -> None:
        searcher.search(index.parse_query(query, ["path", "body"]), 10, count=False)

    latency = latencies(search, json.loads(Path(spec["queries"]).read_text()))
    return {
        "seconds": seconds,
        "index_bytes": tree_bytes(folder),
        "peak_rss": peak_rss(),
        **latency,
    }


def fts5_query(query: str) -> str:
    """An FTS5 MATCH expression: every word quoted (so no operator syntax leaks), ORed."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in query.split())


def fts5_phase(spec: Spec) -> Result:
    """SQLite FTS5 (stdlib sqlite3): ``fts5(path, body)``, unicode61 tokenizer, bm25 rank."""
    root, folder = Path(spec["root"]), Path(spec["index_dir"])
    folder.mkdir(parents=True)
    database = folder / "fts5.db"
    paths = json.loads(Path(spec["paths"]).read_text())
    start = time.perf_counter()
    connection = sqlite3.connect(database)
    connection.execute("CREATE VIRTUAL TABLE docs USING fts5(path, body)")
    with connection:
        connection.executemany(
            "INSERT INTO docs(path, body) VALUES (?, ?)", _documents(root, paths)
        )
    seconds = time.perf_counter() - start

    def search(query: str) -> None:
        connection.execute(
            "SELECT path FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10", (fts5_query(query),)
        ).fetchall()

    latency = latencies(search, json.loads(Path(spec["queries"]).read_text()))
    connection.close()
    return {
        "seconds": seconds,
        "index_bytes": tree_bytes(folder),
        "peak_rss": peak_rss(),
        **latency,
    }


def noop_phase(spec: Spec) -> Result:
    """Cold index once, then time no-op re-indexes: the many-files target's measurement."""
    from coderecall import CodeIndex

    with CodeIndex(spec["root"], _config(spec), force=True) as index:
        start = time.perf_counter()
        report = index.index(progress=False)
        seconds = time.perf_counter() - start
        noop = []
        for _ in range(spec["runs"]):
            start = time.perf_counter()
            index.index(progress=False)
            noop.append(time.perf_counter() - start)
    return {"cold": seconds, "files": report.files_seen, "noop": noop}


PHASES: dict[str, Callable[[Spec], Result]] = {
    "cold": cold,
    "noop": noop_phase,
    "session": session,
    "tantivy": tantivy_phase,
    "fts5": fts5_phase,
}


def main(argv: Sequence[str]) -> None:
    phase, spec_file = argv
    print(json.dumps(execute(phase, json.loads(Path(spec_file).read_text()))))


if __name__ == "__main__":
    main(sys.argv[1:])
