"""Session event logs: order and privacy, tool output compaction, child and cyclic sessions,
the priority snapshot, many processes writing one log, session summaries, and moving the
whole database through export and import."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from coderecall import _tokens as tokens_module
from coderecall._errors import QueryError, StoreError
from coderecall._memory import MemoryStore
from coderecall._memory_io import TableCounts, export_memory, import_memory
from coderecall._privacy import filter_text
from coderecall._sessions import EVENT_KINDS, Sessions, compact_output
from coderecall._tokens import count_tokens
from helpers import database_bytes

PROJECT = "github.com/acme/app"
T0 = datetime(2026, 5, 4, 9, 0, tzinfo=timezone.utc)
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[1] / "python")
_OMITTED = re.compile(r"^… (\d+) lines omitted(?:, (\d+) of them error lines)? …$")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(db: Path) -> Iterator[MemoryStore]:
    with MemoryStore(PROJECT, path=db) as memory:
        yield memory


@pytest.fixture
def sessions(store: MemoryStore) -> Sessions:
    return Sessions(store)


def _cached_snapshot(db: Path, session: str) -> str | None:
    with closing(sqlite3.connect(db)) as conn, conn:
        rows = conn.execute("SELECT snapshot FROM sessions WHERE id = ?", (session,)).fetchall()
    value = rows[0][0] if rows else None
    assert value is None or isinstance(value, str)
    return value


def _clear_snapshot_cache(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("UPDATE sessions SET snapshot = NULL")
    finally:
        conn.close()


# --- the log ------------------------------------------------------------------------------


def test_the_log_keeps_arrival_order_and_earlier_events_never_change(sessions: Sessions) -> None:
    for n, kind in enumerate(EVENT_KINDS):
        sessions.record("s1", kind, f"{kind} number {n}", at=T0 + timedelta(minutes=n))
    sessions.record("s2", "note", "another session's log")
    before = sessions.events("s1")
    assert [e.kind for e in before] == list(EVENT_KINDS)
    assert [e.text for e in before] == [f"{k} number {n}" for n, k in enumerate(EVENT_KINDS)]
    assert [e.at for e in before] == [T0 + timedelta(minutes=n) for n in range(len(EVENT_KINDS))]
    assert {(e.session, e.origin) for e in before} == {("s1", "s1")}
    assert [e.id for e in before] == sorted({e.id for e in before})

    # An event dated earlier still goes to the end of the log: the log is arrival order.
    late = sessions.record("s1", "note", "imported late", at=T0 - timedelta(days=1))
    after = sessions.events("s1")
    assert [e.to_dict() for e in after[:-1]] == [e.to_dict() for e in before]
    assert late is not None
    assert after[-1] == late

    assert [e.kind for e in sessions.events("s1", kinds=["error", "decision"])] == [
        "decision",
        "error",
    ]
    page = sessions.events("s1", after=before[2].id, limit=2)
    assert [e.id for e in page] == [before[3].id, before[4].id]
    info = sessions.info("s1")
    assert info is not None
    assert (info.events, info.started_at, info.root, info.project) == (8, late.at, "s1", PROJECT)
    assert [e.text for e in sessions.events("s2")] == ["another session's log"]


def test_record_refuses_unknown_kinds_and_stores_nothing_for_empty_text(
    sessions: Sessions,
) -> None:
    with pytest.raises(QueryError, match="unknown event kind"):
        sessions.record("s1", "thought", "hmm")
    with pytest.raises(QueryError):
        sessions.record("  ", "note", "no session id")
    with pytest.raises(QueryError):
        sessions.record("s1", "note", "x", privacy="secretive")
    assert sessions.record("s1", "note", "  \n ") is None
    assert sessions.record("s1", "note", "<private>all of it</private>") is None
    assert sessions.events("s1") == []


def test_secrets_and_private_sections_never_reach_the_database_file(
    sessions: Sessions, store: MemoryStore, db: Path
) -> None:
    secret = "sk-proj-" + "Q7xZ9" * 10
    hidden = "my home address is 12 Elm Street"
    prompt = sessions.record(
        "s1",
        "prompt",
        f"deploy with {secret} then <private>{hidden}</private> and report back",
        meta={
            "env": f"OPENAI_API_KEY={secret}",
            "notes": [{"why": f"<private>{hidden}</private>"}],
        },
    )
    assert prompt is not None
    assert prompt.text == "deploy with [redacted:openai] then [private] and report back"
    assert prompt.meta == {
        "env": "OPENAI_API_KEY=[redacted:openai]",
        "notes": [{"why": "[private]"}],
    }
    output = "\n".join([f"curl -H 'Authorization: Bearer {secret}'", *["ok"] * 3000])
    tool = sessions.record("s1", "tool", output)
    assert tool is not None
    assert "[redacted:" in tool.text
    assert sessions.record("s1", "note", "xyzzy-blocked-words", tags=["do-not-store"]) is None
    assert sessions.record("s1", "note", "plugh-blocked-words", privacy="blocked") is None
    sessions.snapshot("s1")  # the cached snapshot is written to the file too
    store.close()
    data = database_bytes(db)
    assert b"[redacted:openai]" in data  # the events are in the file...
    for absent in (secret, hidden, "xyzzy-blocked-words", "plugh-blocked-words"):
        assert absent.encode() not in data  # ...but not what the filter took out


def test_private_events_are_kept_but_left_out_of_default_reads(sessions: Sessions) -> None:
    sessions.record("s1", "prompt", "Refactor the billing module", at=T0)
    hidden = sessions.record(
        "s1", "decision", "Salary bands stay in HR's wiki", privacy="private", at=T0
    )
    assert hidden is not None
    assert hidden.meta == {"privacy": "private"}
    assert [e.kind for e in sessions.events("s1")] == ["prompt"]
    assert [e.kind for e in sessions.events("s1", include_private=True)] == ["prompt", "decision"]
    assert "Salary" not in sessions.snapshot("s1")
    assert [e.kind for e in sessions.around(T0)] == ["prompt"]


# --- compaction ---------------------------------------------------------------------------


def test_a_long_tool_output_keeps_head_tail_and_error_lines() -> None:
    lines = [f"collecting item {i}" for i in range(5000)]
    signals = {
        1200: "ERROR: disk quota exceeded",
        2500: "E       assert 41 == 42",
        3000: "error[E0308]: mismatched types",
        3500: "Traceback (most recent call last):",
        3900: "ValueError: bad checksum",
        4000: "make: *** [all] exited with code 2",
        4200: "FAILED tests/test_cart.py::test_total - AssertionError",
    }
    noise = {
        1000: "ran 12 tests: errors=0 failures=0",
        1100: "compiling src/errors.rs",
        1300: "0 failed, 12 passed in 0.3s",
        1400: "process finished with exit code 0",
        1500: "cargo build --config -Werror",
        1600: "set on_error handler",
    }
    for index, line in {**signals, **noise}.items():
        lines[index] = line
    out = compact_output("\n".join(lines)).split("\n")
    assert out[:15] == lines[:15]
    assert out[-15:] == lines[-15:]
    middle = [line for line in out[15:-15] if not _OMITTED.match(line)]
    assert middle == [signals[i] for i in sorted(signals)]
    markers = [m for line in out if (m := _OMITTED.match(line))]
    assert len(markers) == len(signals) + 1
    assert sum(int(m[1]) for m in markers) + len(out) - len(markers) == len(lines)

    # Short output comes back byte for byte; a single dropped line is kept, not marked.
    short = "\n".join(f"line {i}" for i in range(31)) + "\n"
    assert compact_output(short) == short
    assert compact_output("a\nERROR\n") == "a\nERROR\n"
    assert compact_output("a\nb\nERROR\nd\ne", head=1, tail=1) == "a\nb\nERROR\nd\ne"
    # A huge line is cut with a marker.
    (cut,) = compact_output("x" * 1000).split("\n")
    assert cut == "x" * 400 + " … [600 chars cut]"
    # Past 50,000 lines, those far from both ends are not tested: the cost stays bounded.
    many = ["ok"] * 120_000
    many[60_000] = "ERROR: lost in the middle"
    out = compact_output("\n".join(many)).split("\n")
    assert out[15] == "… 119970 lines omitted, 69970 not searched for errors …"


def test_too_many_error_lines_keep_the_first_and_last_and_count_the_rest() -> None:
    lines = [f"step {i}" for i in range(20)] + [f"error: case {i}" for i in range(100)]
    lines += [f"step {i}" for i in range(20)]
    out = compact_output("\n".join(lines), head=5, tail=5, max_signal_lines=10).split("\n")
    kept_errors = [line for line in out if line.startswith("error:")]
    assert kept_errors == [f"error: case {i}" for i in (*range(5), *range(95, 100))]
    counted = [int(m[2]) for line in out if (m := _OMITTED.match(line)) and m[2]]
    assert counted == [90]
    with pytest.raises(QueryError):
        compact_output("x", head=-1)


def test_a_tool_event_is_stored_compacted(sessions: Sessions) -> None:
    output = "\n".join(["$ pytest", *[f"test_{i} PASSED" for i in range(800)], "1 failed"])
    output = output.replace("test_400 PASSED", "test_400 FAILED")
    event = sessions.record("s1", "tool", output, meta={"tool": "Bash"})
    assert event is not None
    assert event.text == compact_output(output)
    assert "test_400 FAILED" in event.text
    assert len(event.text.splitlines()) < 40
    assert sessions.events("s1")[0].text == event.text


def test_a_huge_tool_output_is_filtered_exactly_at_the_cost_of_what_is_kept(
    sessions: Sessions, store: MemoryStore, db: Path
) -> None:
    # Megabytes of output: private sections and private keys are cut from the whole text,
    # secrets looked for in the lines kept only, a secret a cut would split included.
    token = "sk-proj-" + "Q7xZ9" * 10
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "k3Yq" * 4
    key = "\n".join(["-----BEGIN PRIVATE KEY-----", *[body] * 30, "-----END PRIVATE KEY-----"])
    filler = [f"compiling crate {i:<6} " + "." * 100 for i in range(20_000)]
    lines = [
        f"using {token}",
        "x" * 395 + f" {token}",  # across the cut of a long line
        "<private>a home address, 12 Elm Street",  # opened in the head...
        *filler[:100],
        "12 Elm Street again</private> done",  # ...closed in lines dropped
        *filler,
        f"ERROR: upload rejected for {token}",  # an error line kept from the middle
        *filler,
        key,  # its header is dropped, its last lines are in the tail
        "ok",
    ]
    output = "\n".join(lines)
    assert len(output) > 4_000_000
    handed: list[int] = []

    def counted(text: str, redact: Callable[[str], str]) -> str:
        def counting(part: str) -> str:
            handed.append(len(part))
            return redact(part)

        return compact_output(text, redact=counting)

    filtered = filter_text(output, shrink=counted)
    assert sum(handed) < 60_000  # the kept lines, not the megabytes
    event = sessions.record("s1", "tool", output)
    assert event is not None
    assert event.text == filtered.text
    assert event.text.startswith("using [redacted:openai]\n" + "x" * 395 + " [red … [")
    assert "\n[private] done\n" in event.text
    assert "\nERROR: upload rejected for [redacted:openai]\n" in event.text
    assert event.text.endswith("\n[redacted:private_key]\nok")
    unclosed = sessions.record("s1", "tool", "\n".join([*filler, "<private>", *filler, key]))
    assert unclosed is not None
    assert unclosed.text.endswith(f"\n{filler[-1]}\n[private]")  # hides all after it
    store.close()
    data = database_bytes(db)
    for absent in ("sk-proj", "Q7xZ9", "Elm Street", "MIIEvQIB", "k3Yq", "PRIVATE KEY"):
        assert absent.encode() not in data


# --- child sessions -----------------------------------------------------------------------


def test_children_resolve_to_their_root_and_write_into_its_log(sessions: Sessions) -> None:
    sessions.start("root", host="claude-code", at=T0)
    child = sessions.start("child", parent="root", host="claude-code")
    sessions.start("grandchild", parent="child")
    assert (child.parent, child.root, child.host) == ("root", "root", "claude-code")
    assert sessions.root("grandchild") == "root"
    assert sessions.root("never-seen") == "never-seen"
    assert sessions.info("never-seen") is None

    first = sessions.record("grandchild", "decision", "Cache tokens per file")
    sessions.record("child", "edit", "add cache", meta={"path": "src/cache.py"})
    sessions.record("root", "note", "all good")
    assert first is not None
    assert (first.session, first.origin) == ("root", "grandchild")
    log = sessions.events("root")
    assert [e.origin for e in log] == ["grandchild", "child", "root"]
    assert sessions.events("grandchild") == log == sessions.events("child")
    info = sessions.info("child")
    assert info is not None
    assert (info.root, info.events) == ("root", 1)
    root_info = sessions.info("root")
    assert root_info is not None
    assert root_info.events == 3
    assert [s.id for s in sessions.sessions()] == ["root"]

    # A repeated start fills nothing it already has and never re-parents.
    again = sessions.start("child", parent="elsewhere", host="other-host")
    assert (again.parent, again.host) == ("root", "claude-code")


def test_a_late_link_moves_the_childs_events_into_the_roots_log(sessions: Sessions) -> None:
    sessions.record("root", "prompt", "Fix the checkout")
    sessions.record("orphan", "note", "side task started")
    sessions.record("root", "note", "meanwhile")
    sessions.record("orphan", "error", "timeout talking to the payment API")
    assert [s.id for s in sessions.sessions()] == ["orphan", "root"]
    snapshot = sessions.snapshot("root")
    assert "payment API" not in snapshot

    sessions.link("orphan", "root")
    log = sessions.events("root")
    assert [e.text for e in log] == [
        "Fix the checkout",
        "side task started",
        "meanwhile",
        "timeout talking to the payment API",
    ]
    assert [e.origin for e in log] == ["root", "orphan", "root", "orphan"]
    assert {e.session for e in log} == {"root"}
    assert sessions.events("orphan") == log
    assert [s.id for s in sessions.sessions()] == ["root"]
    assert "payment API" in sessions.snapshot("root")


@pytest.mark.timeout(20)
def test_cycles_resolve_without_hanging_and_to_the_same_root(sessions: Sessions) -> None:
    # a -> b -> a: both resolve to the smallest id of the cycle.
    sessions.link("a", "b")
    sessions.link("b", "a")
    assert sessions.root("a") == sessions.root("b") == "a"
    event = sessions.record("b", "note", "from b")
    assert event is not None
    assert (event.session, event.origin) == ("a", "b")
    assert sessions.events("a") == sessions.events("b") == [event]

    # A self-loop is its own root.
    sessions.link("solo", "solo")
    assert sessions.root("solo") == "solo"
    solo = sessions.record("solo", "note", "alone")
    assert solo is not None
    assert solo.session == "solo"

    # The same root whichever member of a longer cycle resolution starts from, and for a
    # session hanging off the cycle.
    sessions.link("r", "q")
    sessions.link("q", "p")
    sessions.link("p", "r")
    sessions.link("tail", "q")
    assert {s: sessions.root(s) for s in ("p", "q", "r", "tail")} == dict.fromkeys(
        ("p", "q", "r", "tail"), "p"
    )

    # Events of a session that was a root before a cycle formed follow it to the new root.
    sessions.record("y", "note", "written while y was its own root")
    sessions.link("x", "y")
    assert sessions.root("x") == "y"
    sessions.link("y", "x")
    assert sessions.root("x") == sessions.root("y") == "x"
    assert [(e.session, e.origin) for e in sessions.events("x")] == [("x", "y")]

    assert sorted(s.id for s in sessions.sessions()) == ["a", "p", "solo", "x"]


# --- the snapshot -------------------------------------------------------------------------


def _busy_session(sessions: Sessions) -> None:
    at = iter(T0 + timedelta(minutes=n) for n in range(1000))
    sessions.record("s", "prompt", "Make the checkout total exact to the cent.", at=next(at))
    for n in range(30):
        sessions.record("s", "note", f"early exploration note number {n}", at=next(at))
    for n, path in enumerate(["src/cart.py", "src/money.py", "src/cart.py", "tests/test_cart.py"]):
        sessions.record("s", "edit", f"change {n}", meta={"path": path}, at=next(at))
    sessions.record("sub", "note", "subagent started", at=next(at))
    sessions.link("sub", "s")
    decisions = [
        "Store amounts as integer cents",
        "Round half to even only at display time",
        "Keep the legacy float API as a thin wrapper",
    ]
    for text in decisions:
        sessions.record("sub", "decision", text, at=next(at))
    for text in [
        "TypeError: float * Decimal",
        "AssertionError: 1999 != 2000",
        "TypeError: float * Decimal",
    ]:
        sessions.record("s", "error", text, at=next(at))
    sessions.record("s", "prompt", "Now also fix the tax rounding.", at=next(at))
    for n in range(10):
        sessions.record("s", "tool", f"ran step {n}\nall fine", meta={"tool": "Bash"}, at=next(at))


def test_a_tool_named_in_its_own_output_is_named_once(sessions: Sessions) -> None:
    # The tool hook writes "NAME: COMMAND" as the first line, and the name in meta.
    sessions.record("s", "prompt", "Run the tests.")
    sessions.record(
        "s", "tool", "Bash: pytest -q\n3 passed\nERROR: one flaky", meta={"tool": "Bash"}
    )
    recent = sessions.snapshot("s", budget=4000).split("## Recent activity\n")[1].splitlines()
    assert recent[-1] == "- [tool] Bash: pytest -q | ERROR: one flaky"


def test_the_snapshot_has_its_sections_in_order_within_every_budget(sessions: Sessions) -> None:
    _busy_session(sessions)
    full = sessions.snapshot("s", budget=4000)
    headings = ["## Task", "## Decisions", "## Errors", "## Files edited", "## Recent activity"]
    positions = [full.index(h) for h in headings]
    assert positions == sorted(positions)
    assert full.startswith("# Session s: ")
    assert "- First prompt: Make the checkout total exact to the cent." in full
    assert "- Latest prompt: Now also fix the tax rounding." in full
    assert "- Keep the legacy float API as a thin wrapper (from sub)" in full
    assert "- TypeError: float * Decimal (2 times)" in full
    files = full.split("## Files edited\n")[1].split("\n## ")[0].splitlines()
    assert files == ["- tests/test_cart.py", "- src/cart.py", "- src/money.py"]
    recent = full.split("## Recent activity\n")[1].splitlines()
    assert recent[-1] == "- [tool] Bash | ran step 9"  # newest last
    for budget in (10, 30, 60, 150, 400, 1200, 4000):
        text = sessions.snapshot("s", budget=budget)
        assert count_tokens(text) <= budget, budget
        assert len(text) <= len(full)
    assert sessions.snapshot("s", budget=5) == ""
    with pytest.raises(QueryError):
        sessions.snapshot("s", budget=0)


def test_a_snapshot_that_surely_fits_is_rendered_without_the_tokenizer_as_with_it(
    sessions: Sessions, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot whose utf-8 bytes fit the budget fits in tokens too (a token is at least a
    byte), so it is returned without loading the tokenizer, and must be exactly what the
    budgeted fill gives."""
    _busy_session(sessions)
    budgets = (150, 1200, 10_000)
    fast = [sessions.snapshot("s", budget=budget) for budget in budgets]
    assert len(fast[-1].encode()) <= 10_000
    _clear_snapshot_cache(db)
    monkeypatch.setattr(tokens_module, "surely_fits", lambda text, budget: False)
    assert [sessions.snapshot("s", budget=budget) for budget in budgets] == fast
    monkeypatch.undo()

    def no_tokenizer() -> None:
        raise AssertionError("the tokenizer was loaded")

    _clear_snapshot_cache(db)
    monkeypatch.setattr(tokens_module, "default_counter", no_tokenizer)
    assert sessions.snapshot("s", budget=10_000) == fast[-1]
    with pytest.raises(AssertionError, match="tokenizer"):
        sessions.snapshot("s", budget=150)


def test_a_short_budget_keeps_decisions_and_errors_over_old_activity(sessions: Sessions) -> None:
    _busy_session(sessions)
    full = sessions.snapshot("s", budget=4000)
    upto_errors = full.split("\n## Files edited")[0]
    budget = count_tokens(upto_errors) + 3
    short = sessions.snapshot("s", budget=budget)
    assert count_tokens(short) <= budget
    assert short == upto_errors
    assert "## Recent activity" not in short
    assert "exploration note" not in short
    # Shorter still: the task comes first, then the newest decisions.
    tight = sessions.snapshot("s", budget=60)
    assert "## Task" in tight
    assert "## Errors" not in tight
    assert "Make the checkout total exact" in tight


def test_an_item_too_big_for_what_is_left_is_cut_with_a_marker(sessions: Sessions) -> None:
    sessions.record("s", "prompt", "Rewrite the importer. " + "It must accept every dialect. " * 40)
    text = sessions.snapshot("s", budget=60)
    assert count_tokens(text) <= 60
    assert text.startswith("# Session s: 1 events\n## Task\n- Prompt: Rewrite the importer.")
    assert text.endswith("…")


def test_the_snapshot_is_byte_stable_cached_and_rebuilt_when_events_arrive(
    sessions: Sessions, db: Path
) -> None:
    _busy_session(sessions)
    first = sessions.snapshot("s", budget=400)
    assert _cached_snapshot(db, "s") is not None
    assert sessions.snapshot("s", budget=400) == first
    assert sessions.snapshot("sub", budget=400) == first  # a child's snapshot is its root's
    _clear_snapshot_cache(db)
    assert sessions.snapshot("s", budget=400) == first  # rebuilt from the log: same bytes

    sessions.record("sub", "decision", "Switch the tax table to integer basis points")
    assert _cached_snapshot(db, "s") is None  # the write cleared it in its transaction
    second = sessions.snapshot("s", budget=400)
    assert second != first
    assert "Switch the tax table to integer basis points" in second
    assert sessions.snapshot("s", budget=400) == second


# --- many writers -------------------------------------------------------------------------

_WRITER = """
import sys
from coderecall._memory import MemoryStore
from coderecall._sessions import Sessions

db, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kinds = ("note", "decision", "error", "tool", "edit")
with MemoryStore("github.com/acme/app", path=db) as store:
    sessions = Sessions(store)
    me = f"worker-{worker}"
    if worker % 2 == 0:
        sessions.start(me, parent="main")
    for n in range(count):
        if worker % 2 and n == count // 2:
            sessions.link(me, "main")  # its first half moves into main's log meanwhile
        text = f"{me} event {n}"
        event = sessions.record(me, kinds[n % 5], text, meta={"path": f"src/{me}.py"})
        assert event is not None and event.text == text, event
        if n % 25 == 0:
            sessions.snapshot("main", budget=300)
"""


@pytest.mark.timeout(120)
def test_eight_processes_writing_one_log_lose_nothing(db: Path) -> None:
    workers, writes = 8, 100
    env = {**os.environ, "PYTHONPATH": _PACKAGE_PARENT}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(db), str(w), str(writes)], env=env)
        for w in range(workers)
    ]
    assert [p.wait(timeout=100) for p in procs] == [0] * workers
    with MemoryStore(PROJECT, path=db) as store:
        sessions = Sessions(store)
        log = sessions.events("main")
        assert len(log) == workers * writes
        assert {e.session for e in log} == {"main"}
        for w in range(workers):
            mine = [e.text for e in log if e.origin == f"worker-{w}"]
            assert mine == [f"worker-{w} event {n}" for n in range(writes)]
        # Whatever a worker cached last must be what the log gives now.
        cached = sessions.snapshot("main", budget=300)
        _clear_snapshot_cache(db)
        assert sessions.snapshot("main", budget=300) == cached
        assert [s.id for s in sessions.sessions()] == ["main"]


# --- ending and time ----------------------------------------------------------------------


def test_ending_a_session_with_a_summary_records_a_session_summary(
    sessions: Sessions, store: MemoryStore
) -> None:
    sessions.record("main", "prompt", "Fix rounding")
    sessions.start("helper", parent="main")
    helped = sessions.record("helper", "note", "looked up the tax rules")
    sessions.record("main", "edit", "fixed", meta={"path": "src/tax.py"})
    assert helped is not None
    sessions.end("helper", summary="The tax rules round per line, not per invoice.")
    end = T0 + timedelta(hours=2)
    secret = "ghp_" + "a1B2c3D4e5" * 4
    sessions.end("main", summary=f"Fixed the rounding; used token {secret}", at=end)

    by_text = {r.text: r for r in store.records(type="session-summary")}
    assert sorted(by_text) == [
        "Fixed the rounding; used token [redacted:github]",
        "The tax rules round per line, not per invoice.",
    ]
    helper_summary = by_text["The tax rules round per line, not per invoice."]
    main_summary = by_text["Fixed the rounding; used token [redacted:github]"]
    assert (helper_summary.session, helper_summary.events) == ("main", (str(helped.id),))
    assert (main_summary.session, main_summary.created_at) == ("main", end)
    assert main_summary.events == tuple(str(e.id) for e in sessions.events("main"))
    info = sessions.info("main")
    helper = sessions.info("helper")
    assert info is not None
    assert helper is not None
    assert info.ended_at == end
    assert helper.ended_at is not None
    sessions.end("quiet")  # no summary: nothing is recorded
    assert len(store.records(type="session-summary")) == 2


def test_a_remembered_event_is_searchable_at_once_as_a_record_of_its_root(
    sessions: Sessions, store: MemoryStore, db: Path
) -> None:
    sessions.start("sub", parent="main")
    said = T0 + timedelta(minutes=5)
    event = sessions.record(
        "sub", "decision", "Keep invoices in integer cents.", at=said, remember=True
    )
    note = sessions.record("main", "note", "Cents avoid float drift.", remember=True)
    sessions.record("main", "prompt", "Why cents and not floats?")  # logged only
    assert event is not None
    assert note is not None
    (hit,) = store.search("invoices cents", limit=1)
    (record,) = store.get([hit.id])
    assert (record.type, record.session, record.events) == ("decision", "main", (str(event.id),))
    assert record.created_at == said == event.at
    assert [r.type for r in store.records()] == ["decision", "observation"]
    assert "floats" not in " ".join(r.text for r in store.records())
    # The write path applies: secrets are redacted, a blocked event becomes nothing.
    secret = "ghp_" + "a1B2c3D4e5" * 4
    sessions.record("main", "note", f"pushed with {secret}", remember=True)
    assert sessions.record("main", "note", "hidden", tags=["blocked"], remember=True) is None
    assert secret.encode() not in database_bytes(db)
    assert len(store.records()) == 3


def test_a_remembered_event_and_its_record_commit_together_or_not_at_all(
    sessions: Sessions, store: MemoryStore, db: Path
) -> None:
    sessions.record("main", "note", "Logged before the failure.")
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "CREATE TRIGGER no_records BEFORE INSERT ON records"
            " BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
        conn.commit()
    with pytest.raises(StoreError, match="disk says no"):
        sessions.record("main", "decision", "Ship on Fridays.", remember=True)
    assert [e.text for e in sessions.events("main")] == ["Logged before the failure."]
    assert store.records() == []
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("DROP TRIGGER no_records")
        conn.commit()
    event = sessions.record("main", "decision", "Ship on Fridays.", remember=True)
    assert event is not None
    (record,) = store.records()
    assert record.events == (str(event.id),)


def test_around_gives_this_projects_events_nearest_a_time(sessions: Sessions, db: Path) -> None:
    for n in range(10):
        sessions.record("s1", "note", f"note {n}", at=T0 + timedelta(minutes=n))
    with MemoryStore("github.com/acme/other", path=db) as other:
        Sessions(other).record("o1", "note", "other project", at=T0 + timedelta(minutes=5))
    near = sessions.around(T0 + timedelta(minutes=5, seconds=30), before=2, after=2)
    assert [e.text for e in near] == ["note 4", "note 5", "note 6", "note 7"]
    assert [e.text for e in sessions.around(T0, before=0, after=1)] == ["note 1"]
    assert sessions.around(T0 - timedelta(days=1), before=3, after=0) == []


# --- export and import --------------------------------------------------------------------


def _tables(db: Path) -> dict[str, list[tuple[tuple[object, str], ...]]]:
    """Every column of every row of the exported tables, each value with its Python type
    (a REAL read back as an int would compare equal but not be the same)."""
    conn = sqlite3.connect(db)
    try:
        return {
            table: [
                tuple((value, type(value).__name__) for value in row)
                for row in conn.execute(f"SELECT * FROM {table} ORDER BY id")
            ]
            for table in ("records", "sessions", "events")
        }
    finally:
        conn.close()


def _session_tree(sessions: Sessions, store: MemoryStore, db: Path) -> None:
    """Records and a tree of sessions with events, written through the real APIs at real
    times (floats finer than a microsecond)."""
    decision = store.add("Prices are stored in cents.", "decision", tags=["money"]).record
    assert decision is not None
    store.supersede(decision.id, "Prices are stored in integer cents.")
    gone = store.add("A flaky test note.", "observation").record
    assert gone is not None
    store.forget(gone.id, "obsolete")
    store.add("Always answer in English.", "preference", scope="user")
    sessions.start("root", host="claude-code")
    sessions.start("child", parent="root", host="subagent")
    sessions.record("root", "prompt", "Fix the rounding of taxes, café ünïcode 🚀")
    sessions.record("child", "edit", "rounded per line", meta={"path": "src/tax.py", "n": [1.5]})
    sessions.record("child", "note", "<private>home address</private> kept private", tags=["pii"])
    sessions.record("late", "error", "TypeError: unsupported operand", meta={"exit": 1})
    sessions.link("late", "child")  # its event moves to the root's log
    sessions.snapshot("root")  # the cache is exported too
    sessions.end("child", summary="Taxes round per line, not per invoice.")
    sessions.end("root")
    with MemoryStore("github.com/acme/other", path=db) as other:
        Sessions(other).record("other-1", "note", "another project's log")


def test_export_then_import_copies_records_sessions_and_events_exactly(
    sessions: Sessions, store: MemoryStore, db: Path, tmp_path: Path
) -> None:
    _session_tree(sessions, store, db)
    exported = io.StringIO()
    counts = export_memory(store, exported)
    source = _tables(db)
    assert _cached_snapshot(db, "root") is not None
    assert counts == TableCounts(
        records=len(source["records"]),
        sessions=len(source["sessions"]),
        events=len(source["events"]),
    )
    assert (counts.sessions, counts.events) == (4, 5)
    lines = exported.getvalue().splitlines()
    assert [json.loads(line).get("table", "records") for line in lines] == (
        ["records"] * counts.records + ["sessions"] * counts.sessions + ["events"] * counts.events
    )
    # Every column of the schema is in the export: a new column would have to be added.
    conn = sqlite3.connect(db)
    columns = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in counts.to_dict()}
    conn.close()
    for line in lines:
        data = json.loads(line)
        assert set(data) - {"table", "timestamps"} == columns[data.get("table", "records")]
    # The test means something only if some stored time is finer than a microsecond.
    times = [
        v for table in source.values() for row in table for v, _ in row if isinstance(v, float)
    ]
    assert any(datetime.fromtimestamp(v, timezone.utc).timestamp() != v for v in times)

    copy_db = tmp_path / "copy.db"
    with MemoryStore(PROJECT, path=copy_db) as copy:
        assert import_memory(copy, lines) == counts
        assert _tables(copy_db) == source
        assert import_memory(copy, lines) == TableCounts()  # already there: a no-op
        again = io.StringIO()
        assert export_memory(copy, again) == counts
        assert again.getvalue() == exported.getvalue()
        restored = Sessions(copy)
        assert restored.root("late") == "root"
        assert restored.snapshot("root") == sessions.snapshot("root")
    assert _tables(copy_db) == source


def test_import_refuses_a_changed_or_malformed_line_and_writes_nothing(
    sessions: Sessions, store: MemoryStore, tmp_path: Path
) -> None:
    sessions.record("root", "prompt", "Ship the release")
    sessions.record("root", "decision", "Tag it v2", meta={"why": "breaking change"})
    lines = io.StringIO()
    export_memory(store, lines)
    exported = lines.getvalue().splitlines()
    copy_db = tmp_path / "copy.db"
    with MemoryStore(PROJECT, path=copy_db) as copy:
        assert import_memory(copy, exported) == TableCounts(sessions=1, events=2)
        before = _tables(copy_db)
        # A new session first (it would be added), then a stored event with another text.
        new_session = json.loads(exported[0]) | {"id": "new"}
        event = json.loads(exported[-1])
        tampered = [json.dumps(new_session), *exported[:-1], json.dumps(event | {"text": "v3"})]
        with pytest.raises(QueryError, match=rf"^line 4: event {event['id']} differs"):
            import_memory(copy, tampered)
        assert _tables(copy_db) == before

        bad_lines = {
            "unknown table 'vectors'": {"table": "vectors"},
            "unknown event kind 'thought'": event | {"id": 99, "kind": "thought"},
            "meta must be a JSON object": event | {"id": 99, "meta": "[1]"},
            "at must be float": event | {"id": 99, "at": "yesterday"},
            "unknown columns \\['colour'\\]": event | {"id": 99, "colour": "red"},
            "origin is missing": {k: v for k, v in event.items() if k != "origin"} | {"id": 99},
            "started_at must be float": new_session | {"started_at": None},
        }
        for message, data in bad_lines.items():
            with pytest.raises(QueryError, match=rf"^line 2: .*{message}"):
                import_memory(copy, [exported[0], json.dumps(data)])
        assert _tables(copy_db) == before
