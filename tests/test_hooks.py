"""``coderecall hook``: recorded payloads of Claude Code and Codex in, the JSON each host
expects out, and the events they leave in the session log."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderecall._hooks import main
from coderecall._memory import MemoryStore
from coderecall._sessions import Sessions
from helpers import REPORT_IMPORTS, database_bytes

PAYLOADS = Path(__file__).parent / "hook_payloads"
CLAUDE = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"
CODEX = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
COMMAND = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "PostToolUse": "tool",
    "Stop": "stop",
    "SessionEnd": "stop",
    "PreCompact": "compact",
}
PYTEST_OUTPUT = "\n".join(
    [
        "============================= test session starts ==============================",
        *(f"tests/test_refund.py::test_case_{i} PASSED" for i in range(300)),
        "FAILED tests/test_refund.py::test_partial_refund - AssertionError: 9.99 != 10.0",
        *(f"tests/test_refund.py::test_more_{i} PASSED" for i in range(300)),
        "========================= 1 failed, 600 passed in 3.21s =========================",
    ]
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "shop").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "remote", "add", "origin", "git@github.com:acme/shop.git"],
        check=True,
    )
    return root


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(project: Path, memory: Path) -> Iterator[MemoryStore]:
    with MemoryStore(project, path=memory) as opened:
        yield opened


def _payloads(name: str, **values: str) -> list[dict[str, Any]]:
    out = []
    for line in (PAYLOADS / name).read_text(encoding="utf-8").splitlines():
        for key, value in values.items():
            line = line.replace("{" + key + "}", json.dumps(value)[1:-1])
        out.append(json.loads(line))
    return out


def _hook(payload: dict[str, Any], memory: Path) -> dict[str, Any]:
    out = io.StringIO()
    status = main(
        COMMAND[payload["hook_event_name"]], io.StringIO(json.dumps(payload)), out, str(memory)
    )
    assert status == 0
    answer: dict[str, Any] = json.loads(out.getvalue())
    return answer


def _context(answer: dict[str, Any], event: str) -> str:
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    context: str = answer["hookSpecificOutput"]["additionalContext"]
    return context


def test_a_claude_code_session_is_recorded_and_restored_after_compaction(
    project: Path, memory: Path, store: MemoryStore, tmp_path: Path
) -> None:
    store.add("A web shop for bicycle parts.", "project-brief")
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text(
        "\n".join(
            json.dumps(entry)
            for entry in [
                {"type": "user", "message": {"role": "user", "content": "Fix the test"}},
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
                            {"type": "text", "text": "Froze the clock in the refund test."},
                        ],
                    },
                },
            ]
        ),
        encoding="utf-8",
    )
    steps = _payloads(
        "claude_code.jsonl",
        cwd=str(project),
        transcript=str(transcript),
        pytest_output=PYTEST_OUTPUT,
    )
    answers = [_hook(payload, memory) for payload in steps]

    start = _context(answers[0], "SessionStart")
    assert start.startswith("[MEMORY]")
    assert "bicycle parts" in start
    assert "## Task" not in start  # a new session has no snapshot yet
    assert all(answer == {} for answer in answers[1:7])

    sessions = Sessions(store)
    log = sessions.events(CLAUDE)
    assert [e.kind for e in log] == ["prompt", "tool", "edit", "error", "summary", "note"]
    prompt, tool, edit, error, summary, _ = log
    assert "sk-proj-Abcdefghij" not in prompt.text  # redacted
    assert "FAILED tests/test_refund.py::test_partial_refund" in tool.text
    assert tool.text.count("\n") < 80  # compacted: head, the failure, tail
    assert edit.meta["path"].endswith("shop/refunds.py")
    assert error.origin == f"{CLAUDE}/agent/a7f3"  # the subagent's session...
    assert error.session == CLAUDE  # ...logs into the root's
    assert "could not read Username" in error.text
    assert summary.text == "Froze the clock in the refund test."

    restored = _context(answers[7], "SessionStart")
    assert "bicycle parts" in restored
    assert "Fix the flaky refund test" in restored
    assert "refunds.py" in restored
    assert "could not read Username" in restored

    summaries = store.records(type="session-summary")
    assert len(summaries) == 1
    assert summaries[0].session == CLAUDE
    assert "Fix the flaky refund test" in summaries[0].text
    around = store.events_around(summaries[0].id, before=3, after=3)
    assert [e.kind for e in around] == ["error", "summary", "note"]  # what led up to it
    raw = database_bytes(memory)
    assert b"sk-proj-Abcdefghij" not in raw


def test_a_codex_session_resumes_with_its_snapshot(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    answers = [_hook(p, memory) for p in _payloads("codex.jsonl", cwd=str(project))]
    assert answers[0] == {}  # no memory yet: nothing to add
    assert answers[1:4] == [{}, {}, {}]
    resumed = _context(answers[4], "SessionStart")
    assert "Add a CSV export to the orders page" in resumed
    assert "error[E0425]" in resumed
    info = Sessions(store).info(CODEX)
    assert info is not None
    assert info.host == "codex"
    kinds = [e.kind for e in Sessions(store).events(CODEX)]
    assert kinds == ["prompt", "tool", "summary"]


def _added(store: MemoryStore, text: str, kind: str = "decision") -> int:
    record = store.add(text, kind).record
    assert record is not None
    return record.id


def _prompt(project: Path, memory: Path, prompt: str, **extra: Any) -> dict[str, Any]:
    payload = _payloads("codex.jsonl", cwd=str(project))[1]
    return _hook({**payload, "prompt": prompt, **extra}, memory)


def test_a_prompt_recalls_the_records_it_names_once_per_session(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    decision = _added(
        store, "Orders are exported as CSV with semicolons, since Excel in Germany reads them."
    )
    fix = _added(
        store,
        "Error: refund totals off by a cent; fix: round with Decimal.quantize, not float.",
        "error-solution",
    )
    store.add("Orders export as CSV from the admin pages.", "architecture")  # in the block
    Sessions(store).record(CODEX, "decision", "Orders CSV export goes to S3.", remember=True)
    store.add("A CSV import exists for products.", "observation")  # one shared word: "csv"

    recalled = _context(
        _prompt(project, memory, "Add a CSV export of the orders page"), "UserPromptSubmit"
    )
    assert recalled.startswith("[MEMORY]\n## Recalled for this prompt\n")
    assert f"#{decision})" in recalled
    assert "Excel in Germany" in recalled
    assert "refund" not in recalled  # no word in common
    assert "admin pages" not in recalled  # the session-start block shows architecture
    assert "S3" not in recalled  # this session's own record: already in its context
    assert "products" not in recalled
    prompts = Sessions(store).events(CODEX, kinds=["prompt"])
    assert prompts[-1].meta == {"recalled": [decision]}

    # Once per session: the same subject again brings nothing new...
    assert _prompt(project, memory, "Now the orders CSV export needs a header row") == {}
    # ...a prompt on another subject brings its own record; a one-word overlap brings none.
    refund = _context(_prompt(project, memory, "The refund totals are wrong"), "UserPromptSubmit")
    assert f"#{fix})" in refund
    assert f"#{decision})" not in refund
    assert _prompt(project, memory, "Add tests for the products page") == {}
    # Another session is shown the decision again.
    again = _prompt(project, memory, "Export orders to CSV", session_id="other-session")
    assert f"#{decision})" in _context(again, "UserPromptSubmit")


def test_a_prompt_recalls_nothing_by_its_private_words_or_when_told_not_to(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    store.add("Orders are exported as CSV with semicolons.", "decision")
    store.add("Do it all over again when it fails.", "learned-pattern")
    private = "Fix the layout <private>orders CSV export semicolons</private>"
    assert _prompt(project, memory, private) == {}
    assert _prompt(project, memory, "Do it all over again") == {}  # function words only
    out = io.StringIO()
    payload = {**_payloads("codex.jsonl", cwd=str(project))[1], "prompt": "Orders CSV export"}
    assert main("prompt", io.StringIO(json.dumps(payload)), out, str(memory), recall=False) == 0
    assert json.loads(out.getvalue()) == {}
    kinds = [(e.kind, e.meta) for e in Sessions(store).events(CODEX)]
    assert kinds == [("prompt", {})] * 3  # all recorded, nothing recalled


def test_a_compacted_session_gets_the_records_relevant_to_its_latest_prompt(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    store.add("A web shop for bicycle parts.", "project-brief")
    store.add("Refunds are rounded with Decimal.quantize, never float.", "decision")
    steps = _payloads("codex.jsonl", cwd=str(project))
    _hook(steps[0], memory)
    _hook({**steps[1], "prompt": "Why are refunds rounded this way?"}, memory)
    compacted = _context(_hook({**steps[0], "source": "compact"}, memory), "SessionStart")
    assert "## Relevant to the task\n- Refunds are rounded" in compacted
    assert "# Session" in compacted  # and the snapshot


def test_bad_payloads_never_break_the_host(
    memory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for event, stdin in [
        ("prompt", "not json"),
        ("prompt", "[1, 2]"),
        ("tool", json.dumps({"cwd": "/"})),  # no session id
        ("nonsense", json.dumps({"session_id": "s", "cwd": "/"})),
        ("prompt", "[" * 100_000),  # deeper than Python's recursion limit
    ]:
        out = io.StringIO()
        assert main(event, io.StringIO(stdin), out, str(memory)) == 0
        assert json.loads(out.getvalue()) == {}
    assert capsys.readouterr().err.count("coderecall hook") == 5


def _hook_process(memory: Path, *args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "coderecall", "hook", *args],
        input=stdin,
        capture_output=True,
        env=dict(os.environ, CODERECALL_MEMORY=str(memory)),
        timeout=120,
        check=False,
    )


def test_a_bad_hook_command_line_fails_without_blocking_the_host(memory: Path) -> None:
    # Status 2 would tell Claude Code to block the prompt; a typo in a settings file must not.
    for args in [("bogus",), ("prompt", "--unknown"), ()]:
        done = _hook_process(memory, *args, stdin=b"{}")
        assert done.returncode == 1, (args, done.stderr)
        assert json.loads(done.stdout) == {}
        assert b"usage: coderecall hook" in done.stderr
    assert _hook_process(memory, "--help", stdin=b"").returncode == 0


def test_a_payload_with_bytes_that_are_not_utf8_is_recorded(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    payload = json.dumps(
        {
            "session_id": "s\udcff1",
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "PLACEHOLDER",
        }
    ).encode()
    # A raw byte that is not UTF-8, and a JSON escape of a lone surrogate.
    payload = payload.replace(b"PLACEHOLDER", b"fix the \xff\xfe parser \\udcff now")
    done = _hook_process(memory, "prompt", stdin=payload)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    (event,) = Sessions(store).events("s\ufffd1", kinds=["prompt"])
    assert event.text == "fix the \ufffd\ufffd parser \ufffd now"


def test_the_command_line_hook_answers_the_host(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    store.add("Prefer small pull requests.", "preference", scope="user")
    payload = _payloads("claude_code.jsonl", cwd=str(project), transcript="", pytest_output="")[0]
    env = dict(os.environ, CODERECALL_MEMORY=str(memory))
    done = subprocess.run(
        [sys.executable, "-m", "coderecall", "hook", "session-start"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert "Prefer small pull requests." in _context(json.loads(done.stdout), "SessionStart")


# Hosts run a hook process on every prompt and tool call: what it imports is its latency.
_HEAVY = (
    *("httpx", "numpy", "pathspec", "pygments", "rich", "watchdog"),
    # Blocks and snapshots this small surely fit their budgets: no tokenizer to count them.
    "tiktoken",
    # The code index and the rest of the command line (its parser imports every command).
    *("coderecall._cli", "coderecall._config", "coderecall._hub", "coderecall._index"),
)
# A hook that only records an event (a prompt, a tool call, a message) reads nothing back:
# ranking, time phrases, vectors, the context block and the token counter stay unloaded.
_READ_PATH = (
    *("coderecall._memory_rank", "coderecall._memory_vectors", "coderecall._memory_context"),
    *("coderecall._timephrase", "coderecall._stopwords", "coderecall._tokens", "hashlib"),
)
_RECORD_ONLY = frozenset({"UserPromptSubmit", "PostToolUse", "Stop"})
_REPORT_IMPORTS = (
    REPORT_IMPORTS
    + """
    # A hook that does not search reads no time phrase; one that does compiles the time
    # grammar (7 ms) only for a query with a time word in it.
    phrases = sys.modules.get("coderecall._timephrase")
    read = phrases is not None and phrases._probe.cache_info().currsize > 0
    compiled = phrases is not None and phrases._grammar.cache_info().currsize > 0
    print("time phrases read:", read, file=sys.stderr)
    print("time grammar compiled:", compiled, file=sys.stderr)
"""
)


def test_a_hook_process_loads_no_network_array_console_or_code_index_library(
    project: Path, memory: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("", encoding="utf-8")
    payloads = _payloads(
        "claude_code.jsonl", cwd=str(project), transcript=str(transcript), pytest_output=""
    )
    env = dict(os.environ, CODERECALL_MEMORY=str(memory))
    # The native module is always loaded: its name in the report shows the report works.
    for payload in payloads:
        event = COMMAND[payload["hook_event_name"]]
        read_path: tuple[str, ...] = ()
        if payload["hook_event_name"] in _RECORD_ONLY:
            read_path = _READ_PATH
        if payload["hook_event_name"] == "UserPromptSubmit":  # nothing to recall: no search
            read_path = tuple(m for m in read_path if m != "coderecall._memory_context")
        wanted = ",".join(("coderecall._native", *_HEAVY, *read_path))
        done = subprocess.run(
            [sys.executable, "-c", _REPORT_IMPORTS, "hook", event, wanted],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        json.loads(done.stdout)  # the host's answer
        report = done.stderr.splitlines()[-3:]
        # Only a session that resumes with a task searches (and reads a time phrase); its
        # task names no time.
        searched = payload.get("source") in ("resume", "compact")
        assert report == [
            "loaded: coderecall._native",
            f"time phrases read: {searched}",
            "time grammar compiled: False",
        ], (event, done.stderr)
