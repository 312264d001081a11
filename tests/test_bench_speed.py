"""The speed benchmark's arithmetic, sampling and tables, and one tiny in-process run.

Nothing here times anything: the point is that ``python -m benches.speed`` never rots.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from benches import corpora
from benches.speed import child, run
from benches.speed.queries import sample_queries, split_words
from benches.speed.report import EngineRun, ManyFiles, Results, Row, render, table
from benches.speed.stats import Latency, percentile, ratio
from benches.speed.trees import comment_for, edit_candidate

PYTHON = '''"""A module."""


class Client:
    def send_request(self, payload):
        return payload

    def parseHTTPResponse(self, raw):
        return raw


def refresh_access_token(client):
    return client.send_request("token")
'''
RUST = "pub fn read_config_file(path: &str) -> String {\n    path.to_string()\n}\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for number in range(6):
        (root / f"pkg{number}").mkdir(parents=True)
        (root / f"pkg{number}" / "client.py").write_text(
            PYTHON.replace("Client", f"Client{number}")
        )
        (root / f"pkg{number}" / "config.rs").write_text(RUST.replace("file", f"file{number}"))
    return root


def test_percentile_interpolates_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0) == 1
    assert percentile(values, 100) == 100
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile([10.0, 20.0], 25) == pytest.approx(12.5)
    assert percentile([3.0], 99) == 3
    assert percentile([5.0, 1.0, 3.0], 50) == 3  # order of the input does not matter


def test_percentile_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="0-100"):
        percentile([1.0], 101)


def test_latency_summary() -> None:
    latency = Latency.of([float(v) for v in range(1, 201)])
    assert latency.queries == 200
    assert (latency.p50, latency.p95, latency.p99) == pytest.approx((100.5, 190.05, 198.01))


def test_ratio_formatting() -> None:
    assert ratio(1.4, 1.0) == "1.40x"
    assert ratio(30, 2) == "15x"
    assert ratio(1, 400) == "0.003x"
    assert ratio(None, 1) == "n/a"
    assert ratio(1, 0) == "n/a"


def test_split_words() -> None:
    assert split_words("parseHTTPResponse_v2") == ["parse", "http", "response"]
    assert split_words("refresh_access_token") == ["refresh", "access", "token"]


def test_sampling_is_deterministic(tree: Path) -> None:
    paths = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())
    first = sample_queries(tree, paths, 50, seed=7)
    assert first == sample_queries(tree, paths, 50, seed=7)
    assert len(first.identifiers) == len(first.phrases) == 50
    assert "refresh_access_token" in first.identifiers
    assert all(3 <= len(phrase.split()) <= 5 for phrase in first.phrases)
    assert set(sample_queries(tree, paths, 5, seed=8).identifiers) <= set(first.identifiers)


def test_edit_candidate_needs_a_comment_syntax(tree: Path) -> None:
    assert comment_for("a/b.rs") == "//"
    assert comment_for("a/b.md") is None
    path, comment = edit_candidate(tree, ["pkg0/client.py", "pkg0/config.rs", "x.md"]) or ("", "")
    assert (path, comment) in {("pkg0/client.py", "#"), ("pkg0/config.rs", "//")}
    assert edit_candidate(tree, []) is None


def test_fts5_query_quotes_every_word() -> None:
    assert child.fts5_query('parse "args" NEAR') == '"parse" OR """args""" OR "NEAR"'


def _row(
    label: str, ours: float, tantivy_bytes: int, chunks: int = 120_000, p50: float = 0.5
) -> Row:
    latency = {"identifier": Latency(200, p50, 0.9, 1.2), "natural": Latency(200, 0.8, 1, 2)}
    return Row(
        label=label,
        source="hand-made",
        files=10,
        bytes=2_000_000,
        lines=50_000,
        chunks=chunks,
        noop_seconds=0.01,
        noop_reparsed=0,
        edit_file="a.py",
        edit_reindex=0.02,
        edit_searchable=0.03,
        query_rss=1,
        query_note="test",
        open_query=0.25,
        engines={
            "coderecall": EngineRun(ours, 1_400_000, 50_000_000, latency),
            "tantivy": EngineRun(2.0, tantivy_bytes, 60_000_000, latency),
            "fts5": EngineRun(4.0, 2_800_000, 10_000_000, latency),
        },
    )


def test_table_alignment() -> None:
    assert table(["a", "b"], [["x", "1"]], text=1).splitlines() == [
        "| a | b |",
        "| --- | ---: |",
        "| x | 1 |",
    ]


def test_render_shows_ratios_and_targets() -> None:
    results = Results(
        header={"date": "d", "machine": "m", "python": "p", "coderecall": "c", "baselines": "b"},
        runs=1,
        rows=[_row("small", 1.0, 1_000_000)],
        many=ManyFiles(files=10_000, source="copies", cold_seconds=9.0, noop_seconds=0.2),
        cores=2,
    )
    text = render(results)
    assert "| small | 1.000 |" in text
    assert "0.50x" in text  # cold index: coderecall / tantivy
    assert "1.40x" in text  # index size: coderecall / tantivy
    assert "| 0.200 s (10,000 files) | yes |" in text
    assert "| 0.010 | 0.020 | 0.030 | 0.250 |" in text  # no-op, edit, searchable, open + query
    assert "| 1.0 MB/s/core (small) | **no** |" in text
    assert "| 200 identifier |" in text
    assert "n/a" in text  # ripgrep is missing: a cell, not a crash


def test_the_query_target_is_judged_at_the_size_it_names() -> None:
    # The smallest tree of at least 100k chunks decides; a larger one is shown beside it.
    rows = [
        _row("medium", 1.0, 1_000_000, chunks=4_000, p50=0.2),
        _row("target", 1.0, 1_000_000, chunks=107_000, p50=0.9),
        _row("large", 1.0, 1_000_000, chunks=152_000, p50=1.3),
    ]
    header = {"date": "d", "machine": "m", "python": "p", "coderecall": "c", "baselines": "b"}
    results = Results(header=header, runs=1, rows=rows, many=None, cores=2)
    line = next(x for x in render(results).splitlines() if x.startswith("| warm lexical query"))
    assert (
        "0.900 / 0.800 ms (target, 107,000 chunks); 1.30 / 0.800 ms (large, 152,000 chunks)" in line
    )
    assert line.endswith("| yes |")
    results = Results(header=header, runs=1, rows=[rows[0], rows[2]], many=None, cores=2)
    line = next(x for x in render(results).splitlines() if x.startswith("| warm lexical query"))
    assert "(large, 152,000 chunks) | **no** |" in line


def test_quick_run_in_process(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every code path of a run, with phases in-process and a 20-file no-op tree."""
    monkeypatch.setattr(child, "run_phase", child.execute)
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    argv = ["--quick", "--dirs", str(tree), "--runs", "1", "--queries", "25"]
    argv += ["--many-files", "20", "--cache", str(tmp_path / "cache")]
    assert run.main(argv) == 0
    text = capsys.readouterr().out
    for section in ("Trees", "Indexing", "Index size", "Query latency", "Targets", "Notes"):
        assert f"### {section}" in text
    assert f"| tree | {tree} | 12 |" in text
    assert "no-op re-index of a 10k-file tree" in text
    assert "edit appends a comment line" in text
    assert "open + first query" in text
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before

    assert run.main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"][0]["files"] == 12
    assert data["many"]["files"] == 20


def _corpora(folder: Path, **copies: int) -> list[corpora.Corpus]:
    """One corpus per name, holding that many copies of a Python file (sizes grow with it)."""
    made = []
    for name, count in copies.items():
        root = folder / name
        for number in range(count):
            (root / str(number)).mkdir(parents=True)
            (root / str(number) / "client.py").write_text(PYTHON)
        made.append(corpora.Corpus(name, "python", "1.0", root, "test", "0" * 64))
    return made


def test_corpus_rows_without_network(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small and medium are single corpora, large is a copy of all of them, reused next time."""
    made = _corpora(tmp_path, tiny=1, big=4)

    def fetch(*, quick: bool, cache: Path | None, log: Callable[[str], None]) -> list[Any]:
        log("big: substitute for huge (not packaged)")
        return made

    monkeypatch.setattr(corpora, "fetch", fetch)
    notes: list[str] = []
    targets = run.corpus_targets(True, tmp_path / "cache", notes, lambda _: None)
    assert [t.label for t in targets] == ["small", "medium", "large"]
    assert (targets[0].root, targets[1].root) == (made[0].root, made[1].root)
    assert sorted(p.name for p in targets[2].root.iterdir()) == ["big", "tiny"]
    assert len(list(targets[2].root.rglob("*.py"))) == 5
    assert any("substitute" in note for note in notes)
    assert any("below the 1M-line goal" in note for note in notes)
    again = run.corpus_targets(True, tmp_path / "cache", [], lambda _: None)
    assert again[2].root == targets[2].root


def test_a_full_run_adds_the_target_row(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --quick, a row of every corpus but the largest sits between medium and large."""
    made = _corpora(tmp_path, tiny=1, mid=2, big=4)
    monkeypatch.setattr(corpora, "fetch", lambda **_: made)
    targets = run.corpus_targets(False, tmp_path / "cache", [], lambda _: None)
    assert [t.label for t in targets] == ["small", "medium", "target", "large"]
    assert sorted(p.name for p in targets[2].root.iterdir()) == ["mid", "tiny"]
    assert "without big" in targets[2].source
    assert sorted(p.name for p in targets[3].root.iterdir()) == ["big", "mid", "tiny"]


@pytest.mark.skipif(sys.platform != "linux", reason="the native module is an ELF file on Linux")
def test_native_build_is_named() -> None:
    """The header says whether a release build was measured (dev builds are slower)."""
    from coderecall import _native

    assert ".text" in run.elf_sections(Path(_native.__file__ or "").read_bytes())
    assert "native" in run.native_build()
    with pytest.raises(ValueError, match="ELF"):
        run.elf_sections(b"#!/bin/sh\n")
