"""``coderecall hook``: recorded payloads of Claude Code and Codex in, the JSON each host
expects out, and the events they leave in the session log."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderecall import _hooks
from coderecall._hooks import main
from coderecall._memory import MemoryStore
from coderecall._sessions import Sessions
from coderecall._tokens import count_tokens
from helpers import REPORT_IMPORTS, database_bytes

PAYLOADS = Path(__file__).parent / "hook_payloads"
CLAUDE = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"
CODEX = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
COMMAND = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "PostToolUse": "tool",
    "PostToolUseFailure": "tool",
    "Stop": "stop",
    "SubagentStop": "stop",
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


@pytest.fixture(autouse=True)
def _outside_claude_code(monkeypatch: pytest.MonkeyPatch) -> None:
    # What Claude Code exports to its hooks names the project and the host: not here.
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


def _repository(root: Path, remote: str) -> Path:
    (root / "shop").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", remote], check=True)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _repository(tmp_path / "shop", "git@github.com:acme/shop.git")


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
    assert all(answer == {} for answer in answers[1:8])

    sessions = Sessions(store)
    log = sessions.events(CLAUDE)
    kinds = ["prompt", "tool", "edit", "error", "summary", "summary", "note"]
    assert [e.kind for e in log] == kinds
    prompt, tool, edit, error, subagent, summary, _ = log
    assert "sk-proj-Abcdefghij" not in prompt.text  # redacted
    assert "FAILED tests/test_refund.py::test_partial_refund" in tool.text
    assert tool.text.count("\n") < 80  # compacted: head, the failure, tail
    assert edit.meta["path"].endswith("shop/refunds.py")
    # A failed call comes as PostToolUseFailure, its error text at the top level.
    assert error.origin == f"{CLAUDE}/agent/a7f3"  # the subagent's session...
    assert error.session == CLAUDE  # ...logs into the root's
    assert error.text.startswith("Bash: git push\nExit code 128\n")
    assert "could not read Username" in error.text
    assert subagent.origin == f"{CLAUDE}/agent/a7f3"
    assert subagent.text == "The push needs credentials; left the commit local."
    assert summary.text == "Froze the clock in the refund test."

    restored = _context(answers[8], "SessionStart")
    assert "bicycle parts" in restored
    assert "Fix the flaky refund test" in restored
    assert "refunds.py" in restored
    assert "could not read Username" in restored

    summaries = store.records(type="session-summary")
    assert len(summaries) == 1
    assert summaries[0].session == CLAUDE
    assert "Fix the flaky refund test" in summaries[0].text
    around = store.events_around(summaries[0].id, before=3, after=3)
    assert [e.kind for e in around] == ["summary", "summary", "note"]  # what led up to it
    raw = database_bytes(memory)
    assert b"sk-proj-Abcdefghij" not in raw


def test_a_codex_session_resumes_with_its_snapshot(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    answers = [_hook(p, memory) for p in _payloads("codex.jsonl", cwd=str(project))]
    assert answers[0] == {}  # no memory yet: nothing to add
    assert answers[1:6] == [{}] * 5
    resumed = _context(answers[6], "SessionStart")
    assert "Add a CSV export to the orders page" in resumed
    assert "error[E0425]" in resumed
    assert "- src/csv.rs" in resumed  # edited by the patch
    info = Sessions(store).info(CODEX)
    assert info is not None
    assert info.host == "codex"  # its session start does not tell; its turns do
    log = Sessions(store).events(CODEX)
    assert [e.kind for e in log] == ["prompt", "tool", "edit", "error", "summary"]
    _, build, patch, mcp, _ = log
    # Codex passes a Bash command's output as a string without its exit status: a failing
    # build is a tool result whose error lines the snapshot shows.
    assert build.text.startswith("Bash: cargo build\n")
    assert patch.text == "apply_patch src/export.rs, src/csv.rs"
    assert patch.meta == {
        "tool": "apply_patch",
        "path": "src/export.rs",
        "paths": ["src/export.rs", "src/csv.rs"],
    }
    # An MCP tool's result is a CallToolResult: its text parts, failed by isError.
    assert mcp.text == (
        'mcp__github__create_issue: {"title": "CSV export"}\n'
        "403 Forbidden: the token lacks the repo scope"
    )


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
    err = capsys.readouterr().err
    assert err.count("coderecall hook") == 5
    # Said as what it is, not as the JSON parser's bare "Expecting value: line 1 column 1".
    assert "coderecall hook prompt: the hook payload on stdin is not JSON (" in err


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


def _tool_event(
    project: Path, memory: Path, store: MemoryStore, **payload: Any
) -> tuple[str, str, dict[str, Any]]:
    base = {"session_id": "s-tool", "cwd": str(project), "hook_event_name": "PostToolUse"}
    _hook({**base, **payload}, memory)
    (event,) = Sessions(store).events("s-tool", include_private=True)
    return event.kind, event.text, event.meta


def test_a_claude_code_tool_failure_is_an_error_with_its_text_compacted(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    # PostToolUse follows a success only; a failure is PostToolUseFailure, no tool_response.
    trace = [f"  at frame_{i} (src/app.js:{i})" for i in range(600)]
    error = "\n".join(["Exit code 1", *trace[:300], "TypeError: total is undefined", *trace])
    kind, text, meta = _tool_event(
        project,
        memory,
        store,
        hook_event_name="PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "npm test", "description": "Run the tests"},
        tool_use_id="toolu_1",
        error=error,
        is_interrupt=True,
    )
    assert kind == "error"
    assert text.startswith("Bash: npm test\nExit code 1\n")
    assert "TypeError: total is undefined" in text
    assert text.count("\n") < 60  # compacted as a tool's output is
    assert meta == {"tool": "Bash", "interrupted": True}


@pytest.mark.parametrize(
    ("response", "kind", "shown"),
    [
        # Claude Code's Agent tool: the subagent's answer in content parts.
        (
            {"status": "completed", "content": [{"type": "text", "text": "Found 3 routes"}]},
            "tool",
            "Found 3 routes",
        ),
        # An MCP tool's CallToolResult, in camelCase, and bare content parts.
        (
            {"content": [{"type": "text", "text": "403 Forbidden"}], "isError": True},
            "error",
            "403 Forbidden",
        ),
        ({"content": [{"type": "text", "text": "ok"}], "isError": False}, "tool", "ok"),
        ([{"type": "text", "text": "issue #12"}, {"type": "image", "data": "iVBO"}], "tool", "#12"),
        # Codex's Bash output: a string, whose only failure it shows is a timeout.
        ("command timed out after 10000 milliseconds\nbuilding…\n", "error", "building…"),
        (
            "Warning: truncated output (original token count: 12000)\nTotal output lines: 900\n"
            "\ncommand timed out after 10000 milliseconds\nbuilding…\n",
            "error",
            "building…",
        ),
        ("error: no such command\n", "tool", "no such command"),
    ],
)
def test_tool_responses_are_read_from_the_shapes_hosts_send(
    project: Path, memory: Path, store: MemoryStore, response: object, kind: str, shown: str
) -> None:
    got, text, _ = _tool_event(
        project,
        memory,
        store,
        tool_name="mcp__x__y",
        tool_input={"q": "routes"},
        tool_response=response,
    )
    assert (got, shown in text) == (kind, True)


def test_a_codex_patch_is_an_edit_of_every_file_it_names(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: src/b.py\n@@\n-x\n+y\n"
        "*** Delete File: src/old.py\n*** Add File: src/new.py\n+z\n*** End Patch\n"
    )
    kind, text, meta = _tool_event(
        project,
        memory,
        store,
        turn_id="t1",
        tool_name="apply_patch",
        tool_input={"command": patch},
        tool_response="Success. Updated the following files:\nM src/b.py\nD src/old.py\n",
    )
    paths = ["src/a.py", "src/b.py", "src/old.py", "src/new.py"]
    assert (kind, text) == ("edit", f"apply_patch {', '.join(paths)}")
    assert meta == {"tool": "apply_patch", "path": "src/a.py", "paths": paths}
    snapshot = Sessions(store).snapshot("s-tool")
    assert all(f"- {path}" in snapshot for path in paths)


def test_the_host_is_told_by_what_only_it_sends_or_left_unset(
    project: Path, memory: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def host(session: str) -> str | None:
        info = Sessions(store).info(session)
        assert info is not None
        return info.host

    start = {"cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    # Both hosts send `model` at session start; Claude Code's transcript is under ~/.claude.
    claude = "/home/u/.claude/projects/-home-u-shop/c1.jsonl"
    _hook(
        {**start, "session_id": "c1", "model": "claude-opus-4", "transcript_path": claude}, memory
    )
    assert host("c1") == "claude-code"
    _hook({**start, "session_id": "c2", "model": "claude-opus-4", "transcript_path": "/t"}, memory)
    assert host("c2") is None  # nothing tells: no guess, which would stick
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    _hook({**start, "session_id": "c3", "model": "claude-opus-4", "transcript_path": "/t"}, memory)
    assert host("c3") == "claude-code"
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")

    rollout = "/home/u/.codex/sessions/2026/11/28/rollout-2026-11-28T10-00-00-x1.jsonl"
    codex = {**start, "model": "gpt-5-codex", "permission_mode": "default"}
    _hook({**codex, "session_id": "x1", "transcript_path": rollout}, memory)
    assert host("x1") == "codex"
    _hook({**codex, "session_id": "x2", "transcript_path": None}, memory)
    assert host("x2") is None
    _prompt(project, memory, "Add a CSV export", session_id="x2")  # a turn carries turn_id
    assert host("x2") == "codex"


def test_a_subagent_stop_reads_the_subagents_own_transcript(
    project: Path, memory: Path, store: MemoryStore, tmp_path: Path
) -> None:
    def transcript(name: str, text: str) -> str:
        path = tmp_path / name
        entry = {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
        path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
        return str(path)

    stop = {
        "session_id": "main",
        "cwd": str(project),
        "hook_event_name": "SubagentStop",
        "transcript_path": transcript("main.jsonl", "The main agent's words."),
        "stop_hook_active": False,
        "agent_type": "Explore",
    }
    agent = transcript("agent-a1.jsonl", "The subagent's words.")
    _hook({**stop, "agent_id": "a1", "agent_transcript_path": agent}, memory)
    _hook({**stop, "agent_id": "a2"}, memory)  # no transcript of its own: nothing to record
    log = Sessions(store).events("main")
    assert [(e.origin, e.text) for e in log] == [("main/agent/a1", "The subagent's words.")]


def test_a_session_stays_in_its_project_when_the_agent_changes_folder(
    project: Path, memory: Path, store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("A web shop for bicycle parts.", "project-brief")
    other = _repository(tmp_path / "tools", "git@github.com:acme/tools.git")
    start = {"hook_event_name": "SessionStart", "source": "startup"}
    # Claude Code's cwd follows the agent's `cd`; $CLAUDE_PROJECT_DIR names the project.
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    answer = _hook({**start, "session_id": "c1", "cwd": str(other / "shop")}, memory)
    assert "bicycle parts" in _context(answer, "SessionStart")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    # Without it, the session stays in the project it began in.
    _hook({**start, "session_id": "c2", "cwd": str(project)}, memory)
    _prompt(project, memory, "Fix the refund rounding", session_id="c2", cwd=str(other))
    end = {"session_id": "c2", "cwd": str(other), "hook_event_name": "SessionEnd"}
    _hook({**end, "reason": "other"}, memory)
    for session in ("c1", "c2"):
        info = Sessions(store).info(session)
        assert info is not None
        assert info.project == store.project
    (summary,) = store.records(type="session-summary")
    assert "Fix the refund rounding" in summary.text


def test_session_end_waits_briefly_for_a_busy_database(
    project: Path, memory: Path, store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # The hosts give a SessionEnd hook 1.5 s (Claude Code) or 1 s (Codex) by default.
    Sessions(store).record("s-end", "prompt", "Fix the refund rounding")
    writer = sqlite3.connect(memory, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    try:
        began = time.monotonic()
        end = {"session_id": "s-end", "cwd": str(project), "hook_event_name": "SessionEnd"}
        assert _hook({**end, "reason": "other"}, memory) == {}
        waited = time.monotonic() - began
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert "coderecall hook stop" in capsys.readouterr().err
    assert waited < 5  # the other hooks wait up to 10 s


def test_the_session_start_context_fits_what_both_hosts_pass_whole(
    project: Path, memory: Path, store: MemoryStore
) -> None:
    words = [
        "refund",
        "coupon",
        "cart",
        "discount",
        "ledger",
        "invoice",
        "endpoint",
        "migration",
        "schema",
        "token",
    ]

    def sentence(i: int, n: int) -> str:
        return " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(n)).capitalize()

    kinds = ["project-brief", "preference", "architecture", "tech-context", "progress"]
    for i in range(120):
        store.add(f"{sentence(i, 25)} in src/module_{i}/file_{i}.py ({i}).", kinds[i % 5])
    sessions = Sessions(store)
    for i in range(60):
        sessions.record("s-long", "prompt", f"Step {i}: {sentence(i, 30)}.")
        sessions.record("s-long", "error", f"Traceback in module_{i}: {sentence(i, 20)}")
        sessions.record("s-long", "edit", "Edit", meta={"path": f"{project}/src/m_{i}.py"})
        sessions.record("s-long", "decision", f"Decided {i}: {sentence(i, 18)}")
    payload = {
        "session_id": "s-long",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "compact",
    }
    context = _context(_hook(payload, memory), "SessionStart")
    # Claude Code passes 10,000 characters whole, Codex 2,500 tokens of 4 bytes.
    assert len(context.encode()) <= _hooks.CONTEXT_BYTES < 10_000
    assert count_tokens(context) <= 2400
    block = store.context(session="s-long", budget=_hooks.CONTEXT_BUDGET).text
    snapshot = sessions.snapshot("s-long", budget=_hooks.SNAPSHOT_BUDGET)
    assert context.startswith("[MEMORY]\n## Project brief\n- ")
    assert "[/MEMORY]\n\n# Session s-long: 240 events\n## Task\n" in context
    # Cut at whole lines: records and snapshot items.
    assert set(context.splitlines()) <= {"", *block.splitlines(), *snapshot.splitlines()}
