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
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import coderecall
from helpers import (
    CALLS_PROJECT,
    HANDBOOK,
    LEDGER,
    LEDGER_CODE,
    LEDGER_FUNCTION,
    REPORT_IMPORTS,
    SAMPLE_PROJECT,
    MakeRepo,
    large_project,
    write_files,
)


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


def test_a_query_with_bytes_that_are_not_utf8_is_searched(project: Path) -> None:
    # Undecodable argv bytes reach Python as lone surrogates ("\udcff" for b"\xff").
    result = run("search", "refresh_access_token\udcff\udcfe", "--path", str(project), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["path"] == "src/shop/auth.py"
    context = run("context", "\udcffrefresh an expired access token", "--path", str(project))
    assert context.returncode == 0, context.stderr
    assert "auth.py" in context.stdout


def test_a_command_run_in_a_sub_folder_serves_the_whole_project(
    project: Path, tmp_path: Path
) -> None:
    assert run("index", "--json", cwd=project).returncode == 0
    below = project / "src" / "shop"
    found = run("search", "compute invoice total", "--json", cwd=below)
    assert found.returncode == 0, found.stderr
    assert "src/shop/billing.py" in [hit["path"] for hit in json.loads(found.stdout)]
    status = run("status", "--json", cwd=below)
    assert json.loads(status.stdout)["root"] == str(project)

    # A folder without a marker, indexed once with --force-root, needs it no more.
    notes = tmp_path / "notes"
    (notes / "2026").mkdir(parents=True)
    (notes / "2026" / "plan.md").write_text("# Plan\n\nShip the invoice exporter.\n")
    refused = run("index", cwd=notes)
    assert refused.returncode == 1
    assert "--force-root" in refused.stderr
    assert run("index", "--force-root", cwd=notes).returncode == 0
    again = run("search", "invoice exporter", "--json", cwd=notes / "2026")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["path"] == "2026/plan.md"


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
    # -n is --limit, as in head and git log.
    assert json.loads(run(*args, "-n", "2").stdout) == json.loads(run(*args, "--limit", "2").stdout)
    assert len(json.loads(run(*args, "-n", "1").stdout)) == 1


def test_a_reader_that_stops_early_is_not_a_failure(project: Path) -> None:
    assert run("index", str(project)).returncode == 0
    with subprocess.Popen(
        [sys.executable, "-m", "coderecall", "search", "invoice", "--path", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()  # as `| head` does once it has its lines
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=120) == 0, stderr
    assert stderr == ""


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


def test_calls_lists_each_caller_once_source_before_tests(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "src/app.py": "def target():\n    return 1\n\n\ndef user():\n    return target()\n",
            "tests/test_app.py": (
                "from app import target\n\n\ndef test_target():\n"
                "    assert target()\n    assert target()\n    assert target()\n"
            ),
            "zz/late.py": "from app import target\n\n\ndef late():\n    return target()\n",
        }
    )
    shown = run("calls", "target", "--callers", cwd=root)
    assert shown.returncode == 0, shown.stderr
    rows = [row.split("  ")[1:3] for row in shown.stdout.splitlines()[2:]]
    assert rows == [
        ["app.user", "src/app.py:6"],
        ["zz.late.late", "zz/late.py:5"],
        ["tests.test_app.test_target", "tests/test_app.py:5, 6, 7"],
    ], shown.stdout


def test_a_query_that_starts_with_a_dash_is_told_where_it_goes(project: Path) -> None:
    refused = run("search", "--slurp", cwd=project)
    assert refused.returncode == 2
    assert "coderecall search -- -QUERY" in refused.stderr
    found = run("search", "--json", "--", "--slurp", cwd=project)
    assert found.returncode == 0, found.stderr


def test_a_long_hit_shows_where_the_query_matches(make_repo: MakeRepo) -> None:
    """An error message deep in a long function: the listing shows the function's first
    line and the lines that hold the message, not only its opening."""
    steps = "".join(f"    total_{k} = total_{k - 1} + {k}\n" for k in range(1, 40))
    body = (
        "def settle(total_0):\n"
        f"{steps}"
        "    if total_39 < 0:\n"
        "        raise ValueError('ledger went negative while settling')\n"
        "    return total_39\n"
    )
    root = make_repo({"ledger.py": body})
    result = run("search", "ledger went negative", cwd=root)
    assert result.returncode == 0, result.stderr
    shown = result.stdout.splitlines()
    assert shown[1].endswith("def settle(total_0):")
    assert shown[2].strip() == "…"
    raised = next(line for line in shown if "ledger went negative" in line)
    assert raised.split()[0] == str(
        body.splitlines().index("        raise ValueError('ledger went negative while settling')")
        + 1
    )
    assert len([line for line in shown[1:] if re.match(r"\s+\d+  ", line)]) == 8
    assert re.search(r"… \d+ more lines", result.stdout)


# Every command is a fresh process: what it imports is part of its latency. Code commands
# leave the memory store (50 ms of imports), the model hub, the network and array libraries
# and the tokenizers alone.
_NOT_FOR_CODE = (
    *("coderecall._memory", "coderecall._sessions", "coderecall._hub", "coderecall._learn"),
    *("httpx", "numpy", "tiktoken", "mcp"),
)


@pytest.mark.parametrize(
    "command",
    [
        ["index"],
        ["search", "refresh a token"],
        ["def", "TokenStore"],
        ["calls", "TokenStore"],
        ["status"],
        ["search", "refresh a token", "--json"],
        ["def", "TokenStore", "--json"],
    ],
)
def test_a_code_command_loads_no_memory_network_or_array_library(
    project: Path, command: list[str]
) -> None:
    # The native module is always loaded: its name in the report shows the report works.
    # Machine output needs no console library either.
    console = ("rich",) if "--json" in command else ()
    wanted = ",".join(("coderecall._native", *_NOT_FOR_CODE, *console))
    done = subprocess.run(
        [sys.executable, "-c", REPORT_IMPORTS, *command, wanted],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "loaded: coderecall._native", done.stderr


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


# The code-intelligence commands (context, def, calls, path, kb, metrics, logs), each with
# --json (the data the MCP tools return) and for people.


@pytest.fixture
def calls_project(make_repo: MakeRepo) -> Path:
    """CALLS_PROJECT, indexed (through the CLI, so the index log has the run)."""
    root = make_repo(CALLS_PROJECT)
    result = run("index", str(root), "--json")
    assert result.returncode == 0, result.stderr
    return root


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def test_context_routes(calls_project: Path) -> None:
    where = ["--path", str(calls_project)]
    pack = run_json("context", "compute_invoice_total", *where)
    assert pack["route"] == "identifier"
    assert pack["query"] == "compute_invoice_total"
    assert (pack["budget"], pack["truncated"], pack["dropped"]) == (3000, False, 0)
    kinds = [(item["kind"], item["path"]) for item in pack["items"]]
    assert kinds[:2] == [("definition", "src/shop/billing.py"), ("caller", "src/shop/checkout.py")]
    definition = pack["items"][0]
    assert (definition["start_line"], definition["end_line"]) == (21, 24)
    assert definition["symbol_path"] == "shop.billing.compute_invoice_total"
    assert definition["text"].startswith("def compute_invoice_total(")
    assert "calls it at line 10 (resolved)" in pack["items"][1]["why"]
    assert 0 < pack["tokens"] <= pack["budget"]
    assert pack["notes"] == ["calls not resolved to indexed code: round, sum"]

    outline = run_json("context", "src/shop/auth.py", *where)
    assert outline["route"] == "path"
    assert outline["items"][0]["kind"] == "outline"
    assert "L15-19 method shop.auth.TokenStore.issue_token" in outline["items"][0]["text"]

    asked = run_json("context", "how are invoices totalled with tax", *where)
    assert asked["route"] == "search"
    assert asked["items"][0]["kind"] == "hit"
    assert asked["items"][0]["symbol_path"] == "shop.billing.compute_invoice_total"

    small = run_json("context", "TokenStore", "--budget", "120", *where)
    assert small["budget"] == 120
    assert small["tokens"] <= 120
    assert small["truncated"] is True

    people = run("context", "compute_invoice_total", cwd=calls_project)
    assert people.returncode == 0, people.stderr
    lines = people.stdout.splitlines()
    assert lines[0].startswith(
        "[definition] src/shop/billing.py:21-24 shop.billing.compute_invoice_total — "
    )
    assert "def compute_invoice_total(items: list[LineItem], tax_rate: float) -> float:" in lines
    assert any(line.startswith("[caller] src/shop/checkout.py:") for line in lines)
    assert re.fullmatch(r"identifier: \d+ items, \d+/3000 tokens \(.+\)", lines[-1]), lines[-1]
    assert "\x1b[" not in people.stdout

    assert_one_error_line(run("context", "  ", *where), "empty")
    assert run("context", "x", "--budget", "0", *where).returncode == 2
    assert_one_error_line(run("context", "x", "--budget", "50", *where), "at least 100")


def test_def(calls_project: Path) -> None:
    where = ["--path", str(calls_project)]
    (found,) = run_json("def", "checkout", *where)
    assert (found["path"], found["start_line"], found["end_line"]) == (
        "src/shop/checkout.py",
        7,
        10,
    )
    assert (found["kind"], found["symbol_path"]) == ("function", "shop.checkout.checkout")
    assert (found["callers"], found["callees"]) == (1, 2)
    assert found["content"].startswith("def checkout(store: TokenStore")
    (method,) = run_json("def", "TokenStore.issue_token", "--no-content", *where)
    assert (method["path"], method["start_line"]) == ("src/shop/auth.py", 15)
    assert "content" not in method
    (by_line,) = run_json("def", "src/shop/billing.py:23", "--limit", "1", *where)
    assert by_line["symbol_path"] == "shop.billing.compute_invoice_total"
    # A line outside every definition is the module's, which ends where the file does.
    billing = (calls_project / "src/shop/billing.py").read_text().splitlines()
    (module,) = run_json("def", "src/shop/billing.py:1", *where)
    assert (module["kind"], module["start_line"], module["end_line"]) == (
        "module",
        1,
        len(billing),
    )
    past_end = run("def", f"src/shop/billing.py:{len(billing) + 5}", *where)
    assert_one_error_line(past_end, "no definition of 'src/shop/billing.py:")
    assert past_end.stdout == ""

    people = run("def", "checkout", *where)
    assert people.returncode == 0, people.stderr
    lines = people.stdout.splitlines()
    assert lines[0] == (
        "src/shop/checkout.py:7-10  function shop.checkout.checkout  (callers 1, callees 2)"
    )
    assert lines[1].startswith("def checkout(")
    locations = run("def", "checkout", "--no-content", *where).stdout.splitlines()
    assert locations == lines[:1]

    # Exit 1 comes with its one line on stderr (README), as `calls` says it; stdout is empty
    # but for --json, whose answer stays there.
    missing = run("def", "no_such_symbol", *where)
    assert_one_error_line(missing, "no definition of 'no_such_symbol' in the index")
    assert "did you mean" not in missing.stderr
    assert missing.stdout == ""
    as_json = run("def", "no_such_symbol", "--json", *where)
    assert_one_error_line(as_json, "no definition of 'no_such_symbol'")
    assert json.loads(as_json.stdout) == []
    # A typo gets the names spelled like it.
    typo = run("def", "TokenStore.issue_tokne", *where)
    assert_one_error_line(typo, "; did you mean issue_token?")
    assert_one_error_line(run("calls", "chekout", *where), "did you mean checkout?")


def test_def_prints_the_head_of_a_long_definition_and_the_definitions_in_the_rest(
    make_repo: MakeRepo,
) -> None:
    methods = "".join(
        f"    def step_{n}(self, value: int) -> int:\n"
        f'        """Step {n} of the ledger."""\n'
        + "".join(f"        value += {k}\n" for k in range(6))
        + "        return value\n\n"
        for n in range(30)
    )
    source = f'class Ledger:\n    """Thirty steps."""\n\n{methods}'
    root = make_repo({"pyproject.toml": "[project]\nname = 'big'\n", "ledger.py": source})
    total = len(source.rstrip().splitlines())  # 302 lines: cut to 100
    shown = run("def", "Ledger", "--path", str(root))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"ledger.py:1-{total}  class ledger.Ledger  (callers 0, callees 0)"
    assert lines[1:101] == source.splitlines()[:100]
    # step_N spans lines 4 + 10N to 12 + 10N: line 100 lies in step_9, so the rest holds
    # step_10 to step_29.
    assert lines[101] == f"… {total - 100} more lines, holding 20 definitions:"
    assert lines[102] == "  L104-112  method step_10"
    assert lines[121] == f"  L{total - 8}-{total}  method step_29"
    assert lines[122] == "(--lines 0 prints all of it; coderecall def NAME one of these)"
    assert len(lines) == 123

    few = run("def", "Ledger", "--lines", "40", "--path", str(root)).stdout.splitlines()
    assert few[41] == f"… {total - 40} more lines, holding 26 definitions:"
    assert few[42] == "  L44-52  method step_4"
    assert len(few) == 41 + 1 + 26 + 1
    whole = run("def", "Ledger", "--lines", "0", "--path", str(root)).stdout.splitlines()
    assert whole[1:] == source.rstrip().splitlines()
    # A quarter more than asked is printed whole; --json always holds the whole text.
    assert (
        run("def", "Ledger", "--lines", "250", "--path", str(root)).stdout.splitlines()[1:]
        == source.rstrip().splitlines()
    )
    (found,) = run_json("def", "Ledger", "--path", str(root))
    assert found["content"] == source.rstrip()


def test_calls(calls_project: Path) -> None:
    where = ["--path", str(calls_project)]
    graph = run_json("calls", "checkout", *where)
    assert graph["symbol"]["symbol_path"] == "shop.checkout.checkout"
    (caller,) = graph["callers"]
    assert (caller["caller"], caller["confidence"]) == (
        "shop.api.handle_checkout_request",
        "resolved",
    )
    assert (caller["path"], caller["line"]) == ("src/shop/api.py", 8)
    callees = {edge["callee"]: edge["confidence"] for edge in graph["callees"]}
    assert callees == {
        # `store: TokenStore` declares the receiver's type.
        "shop.auth.TokenStore.refresh_access_token": "resolved",
        "shop.billing.compute_invoice_total": "resolved",
    }
    assert graph["complete"] is True

    deep = run_json("calls", "compute_invoice_total", "--callers", "--depth", "2", *where)
    assert deep["callees"] == []
    assert {(e["caller"], e["depth"]) for e in deep["callers"]} == {
        ("shop.checkout.checkout", 1),
        ("shop.api.handle_checkout_request", 2),
    }

    people = run("calls", "checkout", *where)
    assert people.returncode == 0, people.stderr
    lines = people.stdout.splitlines()
    assert lines[0] == "shop.checkout.checkout  src/shop/checkout.py:7-10"
    assert lines[1] == "callers:"
    assert "  shop.api.handle_checkout_request  src/shop/api.py:8  (resolved)" in lines
    assert "callees:" in lines
    assert "  shop.billing.compute_invoice_total  src/shop/checkout.py:10  (resolved)" in lines
    only_callees = run("calls", "checkout", "--callees", *where).stdout
    assert "callers:" not in only_callees
    assert "shop.auth.TokenStore.refresh_access_token" in only_callees
    leaf = run("calls", "handle_checkout_request", "--callers", *where).stdout.splitlines()
    assert leaf[1:3] == ["callers:", "  none"]
    assert leaf[-1].startswith("note: no call of this name anywhere in the index")
    no_callees = run("calls", "Invoice.__init__", "--callees", *where).stdout.splitlines()
    assert no_callees[-2:] == ["callees:", "  none"]
    external = run("calls", "issue_token", "--callees", *where).stdout
    assert "hmac.new  src/shop/auth.py:17  (unresolved, external: hmac)" in external

    assert_one_error_line(run("calls", "no_such_symbol", *where), "no definition of")
    too_deep = run("calls", "checkout", "--depth", "9", *where)
    assert too_deep.returncode == 2  # a usage error, as for path --max-depth
    assert "argument --depth: must be between 1 and 5, got 9" in too_deep.stderr
    assert run("calls", "checkout", "--callers", "--callees", *where).returncode == 2


def test_path(calls_project: Path) -> None:
    where = ["--path", str(calls_project)]
    chain = run_json("path", "handle_checkout_request", "issue_token", *where)
    assert chain["found"] is True
    assert [(e["callee"], e["line"], e["confidence"]) for e in chain["edges"]] == [
        ("shop.checkout.checkout", 8, "resolved"),
        ("shop.auth.TokenStore.refresh_access_token", 9, "resolved"),
        ("shop.auth.TokenStore.issue_token", 26, "resolved"),
    ]
    people = run("path", "handle_checkout_request", "issue_token", *where)
    assert people.returncode == 0, people.stderr
    assert people.stdout.splitlines() == [
        "shop.api.handle_checkout_request",
        "  -> shop.checkout.checkout  src/shop/api.py:8 (resolved)",
        "  -> shop.auth.TokenStore.refresh_access_token  src/shop/checkout.py:9 (resolved)",
        "  -> shop.auth.TokenStore.issue_token  src/shop/auth.py:26 (resolved)",
    ]

    none = run("path", "compute_invoice_total", "issue_token", *where)
    assert_one_error_line(none, "no call chain: no chain of at most 8")
    assert none.stdout == ""
    as_json = run("path", "compute_invoice_total", "issue_token", "--json", *where)
    assert_one_error_line(as_json, "no call chain")
    assert json.loads(as_json.stdout)["found"] is False
    short = run("path", "handle_checkout_request", "issue_token", "--max-depth", "2", *where)
    assert_one_error_line(short, "no call chain")
    assert_one_error_line(run("path", "checkout", "no_such_symbol", *where), "no definition")
    # Out of range is a usage error (exit 2), naming the CLI's option, not max_depth=.
    too_deep = run("path", "checkout", "issue_token", "--max-depth", "13", *where)
    assert too_deep.returncode == 2
    assert "argument --max-depth: must be between 1 and 12, got 13" in too_deep.stderr
    assert "max_depth" not in too_deep.stderr
    too_far = run("calls", "checkout", "--depth", "6", *where)
    assert too_far.returncode == 2
    assert "argument --depth: must be between 1 and 5, got 6" in too_far.stderr


@pytest.mark.slow
def test_knowledge_bases_and_search_source(calls_project: Path, tmp_path: Path) -> None:
    where = ["--path", str(calls_project)]
    handbook = tmp_path / "handbook"
    write_files(handbook, HANDBOOK)
    assert run_json("kb", "list", *where) == []
    assert "no knowledge bases" in run("kb", "list", *where).stdout

    added = run_json("kb", "add", str(handbook), *where)
    assert (added["name"], added["path"]) == ("handbook", str(handbook))
    assert (added["files"], added["exists"]) == (len(HANDBOOK), True)
    assert added["chunks"] >= len(HANDBOOK)
    # A second one from a folder relative to the working directory, indexed by the next run.
    write_files(tmp_path / "notes", {"ideas.txt": "Gift cards for the checkout.\n"})
    later = run("kb", "add", "../notes", "--no-index", cwd=calls_project)
    assert later.returncode == 0, later.stderr
    assert later.stdout.strip() == f"knowledge base notes: {tmp_path / 'notes'} (0 files, 0 chunks)"

    listed = run_json("kb", "list", *where)
    assert [(kb["name"], kb["files"]) for kb in listed] == [("handbook", 2), ("notes", 0)]
    assert listed[1]["last_indexed"] is None
    assert run("index", str(calls_project)).returncode == 0
    assert [kb["files"] for kb in run_json("kb", "list", *where)] == [2, 1]
    people = run("kb", "list", *where).stdout.splitlines()
    assert people[0] == f"handbook  {handbook}  2 files, {added['chunks']} chunks"

    query = ["search", "rotating the signing secret", *where]
    alone = run_json(*query, "--source", "handbook")
    assert alone
    assert {hit["source"] for hit in alone} == {"handbook"}
    assert alone[0]["path"] == "runbook.md"
    code = run_json(*query, "--source", "code")
    assert code
    assert {hit["source"] for hit in code} == {"code"}
    both = run_json(*query, "--source", "handbook", "--source", "code", "--limit", "20")
    assert {hit["source"] for hit in both} == {"handbook", "code"}
    peeked = run_json("peek", "checkout flow", *where, "--source", "handbook")
    assert [hit["path"] for hit in peeked] == ["onboarding/first-week.md"]
    assert peeked[0]["content"] is None
    people_hits = run(*query, "--source", "handbook")
    assert people_hits.returncode == 0, people_hits.stderr
    assert people_hits.stdout.startswith("[handbook] runbook.md:")
    assert_one_error_line(run(*query, "--source", "nope"), "unknown source 'nope'")

    assert_one_error_line(run("kb", "add", str(tmp_path / "missing"), *where), "not a folder")
    assert_one_error_line(run("kb", "add", str(calls_project / "src"), *where), "inside")
    assert_one_error_line(
        run("kb", "add", str(handbook), "--name", "code", *where), "bad knowledge base name"
    )

    removed = run("kb", "remove", "notes", *where)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.strip() == "removed knowledge base notes"
    assert run_json("kb", "remove", "handbook", *where) == {"removed": True, "name": "handbook"}
    assert run_json("kb", "list", *where) == []
    unknown = run("kb", "remove", "handbook", *where)
    assert_one_error_line(unknown, "no knowledge base named handbook")
    assert unknown.stdout == ""
    unknown_json = run("kb", "remove", "handbook", "--json", *where)
    assert_one_error_line(unknown_json, "no knowledge base named handbook")
    assert json.loads(unknown_json.stdout) == {"removed": False, "name": "handbook"}
    assert_one_error_line(run(*query, "--source", "handbook"), "unknown source 'handbook'")


def test_metrics(calls_project: Path) -> None:
    metrics = run_json("metrics", "--path", str(calls_project))
    assert metrics["status"]["files"] == len(CALLS_PROJECT)
    graph = metrics["graph"]
    assert graph["files"] == len(CALLS_PROJECT)
    assert graph["definitions"] >= 20
    # `store = TokenStore(...)` in the tests names its receiver's type: every call of the
    # chain and of the tests resolves.
    assert graph["resolved"] >= 7, graph
    assert graph["edges"] == graph["resolved"] + graph["inferred"] + graph["unresolved"]
    assert (metrics["vectors"], metrics["embedding_model"]) == (0, None)
    assert metrics["knowledge_bases"] == 0
    assert metrics["operations"] == {}, "a fresh process ran nothing else"

    people = run("metrics", cwd=calls_project)
    assert people.returncode == 0, people.stderr
    rows = dict(line.split(None, 1) for line in people.stdout.splitlines() if line)
    assert rows["files"].startswith(f"{len(CALLS_PROJECT)} (")
    assert re.search(r"call graph\s+\d+ definitions, \d+ edges: \d+% resolved", people.stdout)
    assert "no embedding model" in people.stdout


def test_logs_after_index(calls_project: Path) -> None:
    where = ["--path", str(calls_project)]
    entries = run_json("logs", *where)
    indexed = [e for e in entries if e["message"].startswith(f"indexed {calls_project}: ")]
    assert len(indexed) == 1
    assert f"{len(CALLS_PROJECT)} files, {len(CALLS_PROJECT)} parsed" in indexed[0]["message"]
    assert indexed[0]["level"] == "INFO"
    assert indexed[0]["logger"] == "coderecall"
    times = [e["time"] for e in entries]
    assert times == sorted(times), "oldest first, as a log reads"

    people = run("logs", *where)
    assert people.returncode == 0, people.stderr
    line = next(line for line in people.stdout.splitlines() if "indexed" in line)
    assert re.fullmatch(
        rf"\S+Z INFO    \[\d+\] indexed {re.escape(str(calls_project))}: .+", line
    ), line

    assert run("index", str(calls_project)).returncode == 0
    again = run_json("logs", *where, "--contains", "INDEXED")
    assert len(again) == 2
    assert all("indexed" in e["message"] for e in again)
    assert run_json("logs", *where, "--limit", "1") == run_json("logs", *where)[-1:]
    assert run_json("logs", *where, "--level", "warning") == []
    assert "no log records" in run("logs", *where, "--level", "error").stdout
    assert_one_error_line(run("logs", *where, "--level", "loud"), "unknown log level")
    assert run("logs", *where, "--limit", "0").returncode == 2


# -- a query reads the files changed since the index was written --------------------------


def _ledger_hits(project: Path, *options: str) -> list[dict[str, Any]]:
    """The hits in the ledger file of a search for its function."""
    result = run("search", LEDGER_FUNCTION, "--path", str(project), "--json", *options)
    assert result.returncode in (0, 1), result.stderr
    hits: list[dict[str, Any]] = json.loads(result.stdout or "[]")
    return [hit for hit in hits if hit["path"] == LEDGER]


def test_queries_read_the_files_changed_since_the_index_was_written(project: Path) -> None:
    assert run("index", str(project)).returncode == 0
    write_files(project, {LEDGER: LEDGER_CODE})
    assert not _ledger_hits(project, "--no-update")
    (hit,) = _ledger_hits(project)
    assert hit["content"] == LEDGER_CODE.rstrip("\n")
    assert hit["start_line"] == 1

    write_files(project, {LEDGER: "import os\n\n\n\n\n\n" + LEDGER_CODE})
    assert _ledger_hits(project, "--no-update")[0]["end_line"] == 3
    assert _ledger_hits(project)[0]["end_line"] == 9

    # The other query commands catch up too: a definition, and one gone.
    write_files(
        project,
        {
            "src/shop/close.py": "from .ledger import reconcile_ledger_entries\n\n\n"
            "def close_month(ledger, statement):\n"
            "    return reconcile_ledger_entries(ledger, statement)\n"
        },
    )
    found = run("def", "close_month", "--path", str(project), "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["path"] == "src/shop/close.py"
    (project / LEDGER).unlink()
    assert run("def", LEDGER_FUNCTION, "--path", str(project)).returncode == 1
    assert not _ledger_hits(project)
    assert json.loads(run("status", "--path", str(project), "--json").stdout)["files"] == (
        len(SAMPLE_PROJECT) + 1
    )


def _status(project: Path) -> dict[str, Any]:
    result = run("status", "--path", str(project), "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_query_leaves_updates_to_a_running_watcher(project: Path) -> None:
    from coderecall import CodeIndex

    with CodeIndex(project) as index:
        index.index(progress=False)
        # A debounce of an hour: after its first update this watcher writes nothing, so
        # whatever the command answers is what it read itself.
        with index.watch(debounce=3600) as watcher:
            assert watcher.wait_idle(60)
            write_files(project, {LEDGER: LEDGER_CODE})
            assert not _ledger_hits(project)
            assert _status(project)["watched"] is True
            shown = run("status", "--path", str(project))
            assert re.search(r"^watched +yes", shown.stdout, re.MULTILINE), shown.stdout
        assert _status(project)["watched"] is False
        assert _ledger_hits(project)


def test_a_query_answers_while_another_process_writes(project: Path) -> None:
    from coderecall._lease import WriteLease

    assert run("index", str(project)).returncode == 0
    write_files(project, {LEDGER: LEDGER_CODE})
    index_dir = project / ".git" / "coderecall"
    with WriteLease(index_dir).hold():
        result = run("search", "TokenStore", "--path", str(project), "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)[0]["path"] == "src/shop/auth.py"
        assert result.stderr == ""  # no waiting, no warning: the writer catches up
        assert not _ledger_hits(project)
        # A writer at it for a minute (a branch switch on a large tree) is worth a line.
        lease = index_dir / "write.lock"
        record = json.loads(lease.read_text())
        record["since"] = (datetime.now(timezone.utc) - timedelta(minutes=1)).isoformat()
        lease.write_text(json.dumps(record))
        result = run("search", "TokenStore", "--path", str(project), "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)[0]["path"] == "src/shop/auth.py"
        (line,) = result.stderr.splitlines()
        assert re.search(r"another process has been writing the index for 6\d s", line), line
        assert "as it was before that run" in line
    assert _ledger_hits(project)
