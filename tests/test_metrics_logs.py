"""``CodeIndex.metrics`` (counts, call graph, latency of this object's operations) and
``CodeIndex.logs`` (the index log the CLI, watchers and servers write)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from coderecall import CodeIndex, QueryError
from coderecall._logs import detach_file_log
from helpers import MakeRepo, write_files

PROJECT: dict[str, str] = {
    "pyproject.toml": '[project]\nname = "shop"\n',
    "shop/__init__.py": "",
    "shop/db.py": "def write(table, row):\n    return (table, row)\n",
    "shop/repo.py": """\
from shop.db import write


class Repository:
    def save(self, row):
        return write("rows", row)


class Special(Repository):
    pass


def flush(handle):
    return handle.sync()
""",
    "shop/views.py": "def show(repo, row):\n    return repo.save(row)\n",
    "web/app.js": "function a() { return b(); }\nfunction b() { return 1; }\n",
    "README.md": "# Shop\n\nA tiny shop.\n",
}


@pytest.fixture
def root(make_repo: MakeRepo) -> Path:
    return make_repo(PROJECT)


@pytest.fixture
def index(root: Path) -> Iterator[CodeIndex]:
    with CodeIndex(root) as code_index:
        code_index.index()
        yield code_index


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "coderecall", *args],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    return done


# metrics


def test_metrics_before_any_index(root: Path) -> None:
    with CodeIndex(root) as index:
        metrics = index.metrics()
        assert not metrics.status.exists
        assert metrics.graph == {}
        assert (metrics.vectors, metrics.embedding_model, metrics.knowledge_bases) == (0, None, 0)
        assert metrics.operations == {}
        assert not index.index_dir.exists(), "metrics must not create an index"


def test_metrics_counts_match_status_and_the_graph_adds_up(index: CodeIndex) -> None:
    metrics = index.metrics()
    status = index.status()
    assert metrics.status == status
    assert metrics.status.files == len(PROJECT)
    graph = metrics.graph
    assert set(graph) == {
        "files",
        "definitions",
        "edges",
        "resolved",
        "inferred",
        "unresolved",
        "ambiguous",
        "external",
        "unknown",
        "inherits",
        "build_seconds",
    }
    assert graph["edges"] == graph["resolved"] + graph["inferred"] + graph["unresolved"]
    assert graph["unresolved"] == graph["ambiguous"] + graph["external"] + graph["unknown"]
    # Calls: save -> write (resolved), show -> repo.save (inferred), handle.sync
    # (unresolved), a -> b (resolved); Special(Repository) is an inheritance edge.
    assert graph["resolved"] >= 2
    assert graph["inferred"] >= 1
    assert graph["unresolved"] >= 1
    assert graph["inherits"] == 1
    assert 0 < graph["files"] <= status.files
    assert graph["definitions"] >= 7  # write, Repository, save, Special, flush, show, a, b
    assert graph["build_seconds"] >= 0
    assert (metrics.vectors, metrics.embedding_model) == (0, None)  # no embedding model here
    assert metrics.knowledge_bases == 0
    data = json.loads(json.dumps(metrics.to_dict()))
    assert data["graph"]["edges"] == graph["edges"]
    assert data["status"]["files"] == status.files


def test_operations_record_counts_and_latency(index: CodeIndex, tmp_path: Path) -> None:
    # `index` ran once in the fixture.
    for query in ("write a row", "Repository", "flush"):
        index.search(query)
    index.context("write", budget=500)  # identifier route: no search inside
    index.context("shop/repo.py", budget=500)  # path route: no search either
    index.call_graph("write")
    index.implementation_lookup("save")
    operations = index.metrics().operations
    assert operations["index"]["count"] == 1
    assert operations["search"]["count"] == 3
    assert operations["context"]["count"] == 2
    assert operations["call_graph"]["count"] == 1
    assert operations["implementation_lookup"]["count"] == 1
    for stats in operations.values():
        assert set(stats) == {"count", "p50_ms", "p95_ms", "max_ms"}
        assert 0 < stats["p50_ms"] <= stats["p95_ms"] <= stats["max_ms"]

    # A question is answered with a search, which counts as one; a failure costs time too.
    index.context("how are rows written to a table", budget=500)
    with pytest.raises(QueryError):
        index.search("  ")
    operations = index.metrics().operations
    assert operations["context"]["count"] == 3
    assert operations["search"]["count"] == 5

    # Per object: another CodeIndex of the same root starts from nothing.
    with CodeIndex(index.root) as other:
        assert other.metrics().operations == {}

    docs = tmp_path / "docs"
    write_files(docs, {"guide.md": "# Guide\n"})
    index.add_knowledge_base(docs)
    assert index.metrics().knowledge_bases == 1


# logs


def test_the_cli_writes_the_index_log(root: Path) -> None:
    done = _cli("index", str(root), "--json")
    report = json.loads(done.stdout)
    with CodeIndex(root) as index:
        entries = index.logs()
        assert entries, "the CLI attaches the file log"
        indexed = [e for e in entries if e["message"].startswith(f"indexed {root}:")]
        (entry,) = indexed
        assert entry["level"] == "INFO"
        assert entry["logger"] == "coderecall"
        assert entry["pid"] != os.getpid()
        assert f"{report['files_seen']} files" in entry["message"]
        moment = datetime.fromisoformat(entry["time"].replace("Z", "+00:00"))
        assert datetime.now(timezone.utc) - moment < timedelta(minutes=2)

        # The once-per-index notice about semantic search is a warning.
        warnings = index.logs(level="warning")
        assert warnings
        assert {e["level"] for e in warnings} <= {"WARNING", "ERROR", "CRITICAL"}
        assert any("semantic search is off" in e["message"] for e in warnings)
        assert index.logs(level="WARNING") == warnings
        assert index.logs(level="error") == []
        assert index.logs(level="debug") == index.logs(level="info") == entries

        assert index.logs(contains="INDEXED " + str(root)) == indexed
        assert index.logs(contains="no such message") == []
        assert index.logs(level="info", contains="semantic search") == [
            e for e in warnings if "semantic search" in e["message"]
        ]
        assert index.logs(since=datetime.now(timezone.utc) + timedelta(hours=1)) == []

    _cli("index", str(root))
    with CodeIndex(root) as index:
        runs = index.logs(contains="indexed ")
        assert len(runs) == 2
        assert index.logs(1, contains="indexed ") == runs[-1:]  # newest last
        assert "0 parsed" in runs[-1]["message"]


def test_bad_log_queries_raise(index: CodeIndex) -> None:
    with pytest.raises(QueryError, match="unknown log level 'loud'"):
        index.logs(level="loud")
    for limit in (0, -1):
        with pytest.raises(QueryError, match="limit must be at least 1"):
            index.logs(limit)


def test_no_log_without_a_logging_process(index: CodeIndex) -> None:
    # A library user's CodeIndex writes no file log unless asked to.
    assert index.logs() == []
    assert not (index.index_dir / "logs").exists()


def test_log_to_file_attaches_this_process(index: CodeIndex) -> None:
    logger = logging.getLogger("coderecall")
    level = logger.level
    try:
        index._log_to_file()
        index._log_to_file()  # once per index folder and process
        index.index()
        entries = index.logs(contains="indexed ")
    finally:
        detach_file_log(index.index_dir)
    assert logger.level == level
    (entry,) = entries
    assert entry["pid"] == os.getpid()
    index.index()
    assert len(index.logs(contains="indexed ")) == 1  # detached: no more records
