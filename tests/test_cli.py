"""The ``coderecall`` command, run as a real process."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import coderecall
from helpers import SAMPLE_PROJECT, MakeRepo, large_project


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coderecall", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("coderecall: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture(autouse=True)
def _lexical_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests read stderr exactly: no notice about semantic search (test_embedding.py
    checks that one)."""
    monkeypatch.setenv("CODERECALL_EMBEDDING_PROVIDER", "none")


@pytest.fixture
def project(make_repo: MakeRepo) -> Path:
    return make_repo(SAMPLE_PROJECT)


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"coderecall {coderecall.__version__}"


def test_index_json(project: Path) -> None:
    result = run("index", str(project), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["root"] == str(project)
    assert report["files_seen"] == report["files_parsed"] == len(SAMPLE_PROJECT)
    assert report["skipped"] == {}
    assert result.stderr == "", "no progress bar when stderr is not a terminal"


def test_index_summary_for_people(project: Path) -> None:
    (project / "debug.log").write_text("x\n")
    result = run("index", cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"Indexed {project}" in result.stdout
    assert f"{len(SAMPLE_PROJECT)} seen" in result.stdout
    assert "ignored 1" in result.stdout
    assert "ignored: debug.log" in result.stdout
    assert "\x1b[" not in result.stdout, "no colour codes when piped"


def test_search_json_fields(project: Path) -> None:
    result = run("search", "refresh_access_token", "--path", str(project), "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits
    fields = {"path", "start_line", "end_line", "symbol", "symbol_path", "kind", "language"}
    assert fields | {"score", "content"} <= set(hits[0])
    assert hits[0]["path"] == "src/shop/auth.py"
    assert "def refresh_access_token" in hits[0]["content"]


def test_peek_is_search_without_the_text(project: Path) -> None:
    query = ["refresh the access token", "--path", str(project), "--json"]
    peeked = json.loads(run("peek", *query).stdout)
    searched = json.loads(run("search", *query).stdout)
    assert peeked
    assert all(hit["content"] is None for hit in peeked)
    assert [hit["path"] for hit in peeked] == [hit["path"] for hit in searched]
    people = run("peek", *query[:-1])
    assert people.returncode == 0, people.stderr
    assert "src/shop/auth.py" in people.stdout
    assert "def refresh_access_token" not in people.stdout


def test_search_filters_and_no_content(project: Path) -> None:
    args = ["search", "token cart request config", "--path", str(project), "--json"]
    result = run(*args, "--lang", "go", "--lang", "rust", "--no-content", "--limit", "3")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert 0 < len(hits) <= 3
    assert {hit["language"] for hit in hits} <= {"go", "rust"}
    assert all(hit["content"] is None for hit in hits)
    in_web = json.loads(run(*args, "--dir", "./web/").stdout)
    assert in_web
    assert {hit["path"] for hit in in_web} == {"web/cart.js"}
    classes = json.loads(run(*args, "--kind", "class").stdout)
    assert classes
    assert {hit["kind"] for hit in classes} == {"class"}


def test_search_listing_for_people(project: Path) -> None:
    result = run("search", "compute_invoice_total", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = re.fullmatch(r"(\S+):(\d+)-(\d+)  (\w+) ([\w.]+)  \((\d+\.\d+)\)", lines[0])
    assert header, lines[0]
    assert header[1] == "src/shop/billing.py"
    assert header[4] == "function"
    assert header[5] == "shop.billing.compute_invoice_total"
    snippet = "\n".join(lines[1:9])
    assert "def compute_invoice_total" in snippet
    assert "\x1b[" not in result.stdout


def test_status(project: Path) -> None:
    before = json.loads(run("status", "--path", str(project), "--json").stdout)
    assert before["exists"] is False
    assert "not built yet" in run("status", cwd=project).stdout

    assert run("index", str(project)).returncode == 0
    result = run("status", "--path", str(project), "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["exists"] is True
    assert status["files"] == len(SAMPLE_PROJECT)
    assert status["index_dir"] == str(project / ".git" / "coderecall")
    assert status["last_report"]["files_parsed"] == len(SAMPLE_PROJECT)
    people = run("status", cwd=project).stdout
    assert re.search(rf"files\s+{len(SAMPLE_PROJECT)}\b", people), people


def run_in_terminal(*args: str, stream: str) -> tuple[str, str]:
    """Run with ``stream`` ("stdout" or "stderr") on a pseudo-terminal and the other piped;
    return what each received."""
    controller, terminal = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "coderecall", *args],
        stdin=subprocess.DEVNULL,
        stdout=terminal if stream == "stdout" else subprocess.PIPE,
        stderr=terminal if stream == "stderr" else subprocess.PIPE,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"},
    ) as process:
        os.close(terminal)
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            seen += chunk
        os.close(controller)
        piped = process.stderr if stream == "stdout" else process.stdout
        assert piped is not None
        other = piped.read().decode()
        assert process.wait(timeout=60) == 0, other
    return seen.decode(errors="replace"), other


def test_progress_bar_and_colour_only_on_a_terminal(project: Path) -> None:
    bar, stdout = run_in_terminal("index", str(project), stream="stderr")
    assert "Indexing" in bar
    assert f"Indexed {project}" in stdout
    query = "compute_invoice_total"
    listing, _ = run_in_terminal("search", query, "--path", str(project), stream="stdout")
    assert "\x1b[" in listing
    assert query in listing


def test_errors_are_one_line(tmp_path: Path, project: Path) -> None:
    assert_one_error_line(
        run("search", "x", "--path", str(tmp_path / "missing")), "missing", "No such file"
    )
    (tmp_path / "notes.txt").write_text("no marker here\n")
    assert_one_error_line(run("index", str(tmp_path)), "no project marker", "--force-root")
    assert run("index", str(tmp_path), "--force-root").returncode == 0
    assert_one_error_line(run("search", "   ", "--path", str(project)), "empty")
    assert_one_error_line(run("search", "x", "--path", str(project), "--lang", "cobol"), "cobol")
    (project / ".coderecall.toml").write_text("limit = [\n")
    assert_one_error_line(run("status", "--path", str(project)), ".coderecall.toml", "line")


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["search"],
        ["search", "x", "--limit", "0"],
        ["search", "x", "--limit", "many"],
        ["frobnicate"],
        ["index", "--no-such-flag"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert "usage: coderecall" in result.stderr
    assert "Traceback" not in result.stderr


def test_ctrl_c_exits_130_quietly(make_repo: MakeRepo) -> None:
    root = make_repo(large_project(), init=False)
    with subprocess.Popen(
        [sys.executable, "-m", "coderecall", "index", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        # The index folder appears when indexing starts, well inside the command's handler.
        deadline = time.monotonic() + 60
        while not (root / ".coderecall").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stdout == ""
    assert json.loads(run("status", "--path", str(root), "--json").stdout)["exists"] is False


def test_python_dash_m_and_console_script_agree() -> None:
    script = Path(sys.executable).parent / ("coderecall.exe" if os.name == "nt" else "coderecall")
    result = subprocess.run([script, "--version"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert result.stdout == run("--version").stdout
