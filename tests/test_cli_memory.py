"""``coderecall memory``: every action, human and ``--json`` output, error exits, and an
export -> import round trip, against real SQLite files (in-process through ``main``, and as
a real process where exit codes and stdin matter)."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from coderecall._cli import main
from coderecall._mcp_docs import MEMORY_SEARCH_DOC
from coderecall._memory import MemoryStore
from coderecall._sessions import Sessions
from helpers import MakeRepo, git

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[1] / "python")

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The memory database every command of a test uses by default."""
    path = tmp_path / "memory.db"
    monkeypatch.setenv("CODERECALL_MEMORY", str(path))
    return path


@pytest.fixture
def root(make_repo: MakeRepo) -> Path:
    return make_repo({"README.md": "# shop\n"})


@pytest.fixture
def cli(
    root: Path, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Cli:
    """``cli("search", "x", stdin=...) -> (exit code, stdout, stderr)``, run in-process with
    ``--root`` set to the test's project."""

    def run(
        *args: str, stdin: str | None = None, project: Path | None = None
    ) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = main(["memory", *args, "--root", str(project or root)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return {
            table: [
                tuple((value, type(value)) for value in row)
                for row in conn.execute(f"SELECT * FROM {table} ORDER BY id")
            ]
            for table in ("records", "sessions", "events")
        }
    finally:
        conn.close()


def ok(cli: Cli, *args: str, stdin: str | None = None) -> Any:
    """Runs ``args --json`` and returns its JSON; it must succeed, silently on stderr."""
    code, out, err = cli(*args, "--json", stdin=stdin)
    assert code == 0, err
    assert err == ""
    return json.loads(out)


def process(*args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coderecall", "memory", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [_PACKAGE_PARENT, os.environ.get("PYTHONPATH")])
            ),
            **env,
        },
    )


def test_add_reports_action_redactions_and_refusals(cli: Cli) -> None:
    added = ok(
        cli,
        "add",
        "Use SQLite in WAL mode so readers never block.",
        "--type",
        "decision",
        "--tag",
        "db",
    )
    assert added["action"] == "added"
    record = added["record"]
    assert (record["type"], record["scope"], record["tags"]) == ("decision", "project", ["db"])
    assert record["text"] == "Use SQLite in WAL mode so readers never block."
    again = ok(
        cli,
        "add",
        "Use SQLite in WAL mode, so readers never block!",
        "--type",
        "decision",
        "--tag",
        "wal",
    )
    assert again["action"] == "updated"
    assert again["record"]["id"] == record["id"]
    assert again["record"]["tags"] == ["db", "wal"]

    secret = ok(cli, "add", "The staging password=hunter2hunter2 is in the vault.")
    assert secret["redactions"] == ["password"]
    assert "hunter2" not in secret["record"]["text"]
    code, out, _ = cli("add", "Deploy key: api_key = abcdefghijklmnop0123456789 (rotate monthly)")
    assert code == 0
    assert out.startswith("added #")
    assert "redacted: api_key" in out

    code, out, err = cli("add", "never keep this", "--tag", "do-not-store")
    assert code == 1, "a refused record is not a success"
    # exit 1: one line on stderr, as for errors (README)
    assert out == ""
    assert err.strip() == "coderecall: error: refused: the record is tagged as blocked"
    refused = cli("add", "never keep this", "--tag", "do-not-store", "--json")
    assert refused[0] == 1
    assert refused[2].strip() == "coderecall: error: refused: the record is tagged as blocked"
    data = json.loads(refused[1])
    assert (data["action"], data["record"]) == ("refused", None)
    assert data["reason"] == "the record is tagged as blocked"

    private = ok(
        cli, "add", "The user is on parental leave in May.", "--private", "--scope", "user"
    )
    assert (private["record"]["privacy"], private["record"]["scope"]) == ("private", "user")
    from_stdin = ok(cli, "add", "-", "--type", "progress", stdin="Memory CLI landed.\n")
    assert from_stdin["record"]["text"] == "Memory CLI landed."


def test_search_help_says_a_time_phrase_ranks_not_filters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["memory", "search", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    # The window's records come first; the others still follow (only --since/--until filter).
    assert "narrows" not in text
    assert "records of a time phrase's window (yesterday, in March) rank first" in text
    assert "the others still follow" in text
    # The MCP tool's description says it as well.
    tool_doc = " ".join(MEMORY_SEARCH_DOC.split())
    assert "narrows" not in tool_doc
    assert "ranks the records of that window first, the others still following" in tool_doc


def test_search_filters_and_human_output(cli: Cli, root: Path, db: Path) -> None:
    # Records dated in the past, written through the API into the same database.
    with MemoryStore(root, path=db) as store:
        old = store.add(
            "Chose BM25F for memory search over plain BM25.",
            "decision",
            tags=["search"],
            at=datetime(2025, 3, 5, 12, tzinfo=timezone.utc),
        ).record
        new = store.add(
            "Memory search fuses BM25F with vectors by reciprocal rank.",
            "decision",
            tags=["search", "vectors"],
            at=datetime(2025, 6, 1, 12, tzinfo=timezone.utc),
        ).record
        store.add(
            "Search results are slow on large repositories.",
            "observation",
            at=datetime(2025, 6, 2, 12, tzinfo=timezone.utc),
        )
        store.add("I search with ripgrep first.", "preference", scope="user", privacy="private")
    assert old is not None
    assert new is not None

    hits = ok(cli, "search", "memory search")
    assert {h["id"] for h in hits} >= {old.id, new.id}
    assert all(
        set(h) >= {"id", "type", "scope", "snippet", "tags", "created_at", "score"} for h in hits
    )
    assert [h["type"] for h in ok(cli, "search", "search", "--type", "observation")] == [
        "observation"
    ]
    two = ok(cli, "search", "search", "--type", "observation", "--type", "decision")
    assert {h["type"] for h in two} == {"observation", "decision"}
    assert [h["id"] for h in ok(cli, "search", "search", "--tag", "vectors")] == [new.id]
    assert [
        h["id"] for h in ok(cli, "search", "search", "--tag", "search", "--until", "2025-03-05")
    ] == [old.id]
    assert [
        h["id"] for h in ok(cli, "search", "search", "--tag", "search", "--since", "2025-03-06")
    ] == [new.id]
    assert ok(cli, "search", "search", "--since", "2025-03-06", "--until", "2025-05-31") == []
    assert len(ok(cli, "search", "search", "--limit", "1")) == 1

    # Private records only when asked; scope filters.
    assert all(h["scope"] == "project" for h in ok(cli, "search", "search"))
    private = ok(cli, "search", "ripgrep", "--include-private")
    assert [h["type"] for h in private] == ["preference"]
    assert ok(cli, "search", "ripgrep") == []
    assert ok(cli, "search", "ripgrep", "--include-private", "--scope", "project") == []

    code, out, _ = cli("search", "BM25F", "--tag", "search", "--until", "2025-03-05")
    assert code == 0
    assert out.splitlines() == [
        f"#{old.id}  decision  {old.created_at.astimezone():%Y-%m-%d}  "
        "Chose BM25F for memory search over plain BM25.  [search]"
    ]
    code, out, _ = cli("search", "nothing like this at all")
    assert (code, out.strip()) == (0, "no memories found")


def test_show_history_timeline_and_forget(cli: Cli, root: Path, db: Path) -> None:
    with MemoryStore(root, path=db) as store:
        first = store.add("Tokens live one hour.", "decision", tags=["auth"]).record
        assert first is not None
        replaced = store.supersede(first.id, "Tokens live thirty minutes.")
        later = store.add("Checkout retries twice on timeout.", "error-solution").record
        assert later is not None

    shown = ok(cli, "show", str(replaced.id), str(later.id))
    assert [r["id"] for r in shown] == [replaced.id, later.id]
    assert shown[0]["text"] == "Tokens live thirty minutes."
    assert shown[0]["tags"] == ["auth"]
    history = ok(cli, "show", str(replaced.id), "--history")
    assert history == [
        {
            "id": replaced.id,
            "versions": [
                {**history[0]["versions"][0], "id": first.id, "superseded_by": replaced.id},
                {**history[0]["versions"][1], "id": replaced.id, "superseded_by": None},
            ],
        }
    ]
    assert history[0]["versions"][0]["text"] == "Tokens live one hour."
    code, out, _ = cli("show", f"#{first.id}")
    assert code == 0
    assert f"superseded by {replaced.id}" in out
    assert "Tokens live one hour." in out

    timeline = ok(cli, "timeline", str(first.id))
    assert timeline["center"] == first.id
    ids = [r["id"] for r in timeline["records"]]
    assert ids == [first.id, replaced.id, later.id]
    assert timeline["records"][0]["state"] == f"superseded by {replaced.id}"
    assert [r["id"] for r in ok(cli, "timeline", str(later.id), "--before", "0")["records"]] == [
        later.id
    ]
    code, out, _ = cli("timeline", str(replaced.id), "--after", "0")
    assert code == 0
    assert out.splitlines()[-1].startswith(f">#{replaced.id}  decision  ")

    tombstone = ok(cli, "forget", str(later.id), "--reason", "  wrong: it retries three times  ")
    assert tombstone["text"] == ""
    assert tombstone["forget_reason"] == "wrong: it retries three times"
    assert tombstone["forgotten_at"]
    with MemoryStore(root, path=db) as store:
        (stored,) = store.get([later.id])
    assert (stored.text, stored.forget_reason) == ("", "wrong: it retries three times")
    assert ok(cli, "search", "checkout retries") == []
    code, out, _ = cli("show", str(later.id))
    assert "forgotten" in out
    assert "wrong: it retries three times" in out
    code, out, _ = cli("timeline", str(later.id))
    assert code == 0
    assert out.splitlines()[-1].endswith("(forgotten: wrong: it retries three times)")


def test_errors_are_one_line_and_non_zero(cli: Cli, root: Path, db: Path, tmp_path: Path) -> None:
    ok(cli, "add", "A record to find.")
    with MemoryStore("github.com/acme/other", path=db) as other:
        foreign = other.add("Another project's secret plan.").record
    assert foreign is not None
    private = ok(cli, "add", "A private note.", "--private")["record"]["id"]

    for args, message in [
        (("show", "999"), "no memory 999 in this project"),
        (("show", "1", "999"), "no memory 999 in this project"),
        (("show", str(foreign.id)), f"no memory {foreign.id} in this project"),
        (("show", str(private)), f"memory {private} is private (pass --include-private)"),
        (("timeline", "999"), "no memory 999 in this project"),
        (("timeline", str(private)), f"memory {private} is private"),
        (("forget", "999", "--reason", "x"), "no memory 999 in this project"),
        (("forget", "1", "--reason", "  "), "forgetting a record needs a reason"),
        (("add", "x", "--type", "Bad Type!"), "bad memory type"),
        (("import", str(tmp_path / "missing.jsonl")), "missing.jsonl: No such file or directory"),
    ]:
        code, out, err = cli(*args)
        assert code == 1, (args, out, err)
        assert out == ""
        (line,) = err.splitlines()
        assert line.startswith("coderecall: error: ")
        assert message in line, (args, err)
    assert ok(cli, "show", str(private), "--include-private")[0]["text"] == "A private note."

    (tmp_path / "broken.jsonl").write_text('{"id": 1}\n')
    code, _, err = cli("import", str(tmp_path / "broken.jsonl"))
    assert code == 1
    assert "line 1: not an exported memory record ('created_at' is missing)" in err
    code, _, err = cli("search", "x", project=tmp_path / "nowhere")
    assert code == 1
    assert "no such project folder" in err


def test_usage_errors_exit_2(db: Path, root: Path) -> None:
    no_reason = process("forget", "1", "--root", str(root))
    assert no_reason.returncode == 2
    assert "the following arguments are required: --reason" in no_reason.stderr
    bad_id = process("show", "one", "--root", str(root))
    assert bad_id.returncode == 2
    assert "not a memory id: 'one'" in bad_id.stderr
    bad_date = process("search", "x", "--since", "yesterday-ish", "--root", str(root))
    assert bad_date.returncode == 2
    assert "not a date: 'yesterday-ish'" in bad_date.stderr
    # A bad id of a real process: exit 1, one line, no traceback.
    missing = process("show", "7", "--root", str(root))
    assert missing.returncode == 1
    assert missing.stderr == "coderecall: error: no memory 7 in this project\n"
    assert missing.stdout == ""


def test_ids_sqlite_cannot_hold_are_usage_errors_and_unknown_to_the_api(
    db: Path, root: Path
) -> None:
    for wide in ("99999999999999999999", str(1 << 63), "0", "-3"):
        shown = process("show", wide, "--root", str(root))
        assert shown.returncode == 2, shown.stderr
        assert f"not a memory id: '{wide}'" in shown.stderr
        assert "Traceback" not in shown.stderr
    with MemoryStore(root, path=db) as store:
        kept = store.add("Tokens live one hour.", "decision").record
        assert kept is not None
        assert store.get([1 << 64, -1, kept.id]) == [kept]
        assert store.readable([1 << 64])[1] == [1 << 64]


def test_bytes_that_are_not_utf8_are_stored_and_searched_as_replacement_characters(
    db: Path, root: Path
) -> None:
    # Python hands undecodable argv bytes over as lone surrogates: b"\xff" is "\udcff".
    added = process(
        "add", "the \udcffcache\udcfe keeps stale tokens", "--tag", "\udcffx", "--root", str(root)
    )
    assert added.returncode == 0, added.stderr
    found = process("search", "stale \udcfftokens", "--json", "--root", str(root))
    assert found.returncode == 0, found.stderr
    (hit,) = json.loads(found.stdout)
    assert hit["snippet"] == "the \ufffdcache\ufffd keeps stale tokens"
    assert hit["tags"] == ["\ufffdx"]
    conn = sqlite3.connect(db)
    try:
        (text,) = conn.execute("SELECT text FROM records").fetchone()
    finally:
        conn.close()
    assert text == "the \ufffdcache\ufffd keeps stale tokens"


def test_forgetting_a_forgotten_record_keeps_its_first_reason(cli: Cli) -> None:
    record = ok(cli, "add", "Checkout retries twice on timeout.")["record"]["id"]
    ok(cli, "forget", str(record), "--reason", "wrong")
    code, out, err = cli("forget", str(record), "--reason", "changed my mind")
    assert code == 1
    assert out == ""
    assert f"memory {record} was already forgotten on " in err
    assert err.rstrip().endswith(": wrong")
    assert ok(cli, "show", str(record))[0]["forget_reason"] == "wrong"


def test_an_export_merges_into_a_database_with_memories_of_its_own(
    cli: Cli, root: Path, db: Path, tmp_path: Path
) -> None:
    laptop = tmp_path / "laptop.db"
    with MemoryStore(root, path=laptop) as store:
        sessions = Sessions(store)
        event = sessions.record("s-laptop", "decision", "Keep tokens for one hour.", remember=True)
        assert event is not None
        (remembered,) = store.records()
        newer = store.supersede(remembered.id, "Keep tokens for thirty minutes.")
        with (tmp_path / "laptop.jsonl").open("w", encoding="utf-8") as out:
            store.export(out)
    with MemoryStore(root, path=db) as store:  # the desktop: ids 1 and up are taken
        Sessions(store).record("s-desktop", "prompt", "Fix the flaky checkout test.")
        own = store.add("Checkout retries twice on timeout.", "error-solution").record
        assert own is not None

    export = str(tmp_path / "laptop.jsonl")
    code, _, err = cli("import", export)
    assert code == 1
    assert "memory import --merge" in err
    merged = ok(cli, "import", export, "--merge")
    assert merged == {"imported": {"records": 2, "sessions": 1, "events": 1}}
    assert ok(cli, "import", export, "--merge") == {
        "imported": {"records": 0, "sessions": 0, "events": 0}
    }

    with MemoryStore(root, path=db) as store:
        current = {r.text: r for r in store.records()}
        assert set(current) == {
            "Checkout retries twice on timeout.",
            "Keep tokens for thirty minutes.",
        }
        assert current["Checkout retries twice on timeout."].id == own.id
        moved = current["Keep tokens for thirty minutes."]
        assert moved.id != newer.id  # the desktop's ids were taken
        chain = store.history(moved.id)
        assert [r.text for r in chain] == [
            "Keep tokens for one hour.",
            "Keep tokens for thirty minutes.",
        ]
        (source,) = chain[0].events
        (decision,) = Sessions(store).events("s-laptop")
        assert source == str(decision.id)
        assert decision.text == "Keep tokens for one hour."
        assert [e.text for e in Sessions(store).events("s-desktop")] == [
            "Fix the flaky checkout test."
        ]
        assert [h.id for h in store.search("tokens thirty minutes")] == [moved.id]


def test_export_import_round_trip_is_byte_identical(
    cli: Cli, root: Path, db: Path, tmp_path: Path
) -> None:
    with MemoryStore(root, path=db) as store:
        a = store.add("Ünïcode survives: naïve café.", "decision", tags=["i18n"]).record
        assert a is not None
        store.supersede(a.id, "Unicode survives, with accents: naïve café.")
        b = store.add("A record to forget.", "observation").record
        assert b is not None
        store.forget(b.id, "test")
        store.add("Private: <private>hidden</private> visible", "observation", privacy="private")
        store.add("Always answer in English.", "preference", scope="user")
    with MemoryStore("github.com/acme/other", path=db) as other:
        other.add("Another project's record.", "observation", session="s-1", events=["e1"])
        logs = Sessions(other)
        logs.start("s-1", host="claude-code")
        logs.record("s-1", "prompt", "Rename the café module", meta={"lang": "ünïcode"})
        logs.start("s-2", parent="s-1")
        logs.record("s-2", "edit", "renamed", meta={"path": "cafe.py"})
        logs.snapshot("s-1")
        logs.end("s-1")
    counts = {"records": 6, "sessions": 2, "events": 2}

    first = tmp_path / "first.jsonl"
    assert ok(cli, "export", str(first)) == {"exported": counts, "file": str(first)}
    code, out, _ = cli("export")
    assert code == 0
    assert out == first.read_text(encoding="utf-8"), "stdout and file exports agree"

    fresh = tmp_path / "fresh.db"
    imported = ok(cli, "import", str(first), "--memory", str(fresh))
    assert imported == {"imported": counts}
    assert _tables(fresh) == _tables(db), "every column of every row"
    second = tmp_path / "second.jsonl"
    code, out, _ = cli("export", str(second), "--memory", str(fresh))
    assert (code, out.strip()) == (0, f"exported 6 records, 2 sessions and 2 events to {second}")
    assert second.read_bytes() == first.read_bytes()

    # Importing the same records again adds nothing; from stdin, through a real process.
    again = process(
        "import", "-", "--memory", str(fresh), "--root", str(root), stdin=first.read_text()
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "imported 0 records, 0 sessions and 0 events"
    piped = process("export", "--memory", str(fresh), "--root", str(root))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.encode() == first.read_bytes()


def test_clones_share_memory_through_their_git_remote(make_repo: MakeRepo, cli: Cli) -> None:
    """The project is named by its git remote, so a second clone reads the first's memory."""
    clones = [make_repo({"README.md": "x\n"}, name=name) for name in ("one", "two")]
    for clone in clones:
        git(clone, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    code, out, err = cli("add", "Releases are cut on Thursdays.", "--json", project=clones[0])
    assert code == 0, err
    assert json.loads(out)["record"]["project"] == "github.com/acme/shop"
    code, out, _ = cli("search", "releases thursdays", "--json", project=clones[1] / ".")
    assert [h["snippet"] for h in json.loads(out)] == ["Releases are cut on Thursdays."]
    subfolder = clones[1] / "docs"
    subfolder.mkdir()
    code, out, _ = cli("search", "releases", "--json", project=subfolder)
    assert len(json.loads(out)) == 1, "a sub-folder belongs to its repository"


def test_context_prints_the_memory_block(cli: Cli, root: Path, db: Path) -> None:
    code, out, _ = cli("context")
    assert code == 0
    assert "nothing remembered" in out
    with MemoryStore(root, path=db) as store:
        store.add("Refunds are issued to the original payment method.", "decision")
    code, out, _ = cli("context")
    assert code == 0
    assert "sections" in out
    assert "searches the project's 1 record" in out.replace("\n", " ")
    with MemoryStore(root, path=db) as store:
        store.add("A shop for bicycle parts.", "project-brief")
    code, out, _ = cli("context", "how are refunds paid out")
    assert code == 0
    assert out.startswith("[MEMORY]\n## Project brief\n- A shop for bicycle parts.")
    assert "original payment method" in out.split("## Relevant to the task")[1]
    block = ok(cli, "context", "how are refunds paid out", "--budget", "60")
    assert block["tokens"] <= 60
    assert block["query"] == "how are refunds paid out"


def test_context_of_an_unknown_session_is_an_error(cli: Cli, root: Path, db: Path) -> None:
    with MemoryStore(root, path=db) as store:
        store.add("Refunds are issued to the original payment method.", "decision")
        Sessions(store).record("s-known", "prompt", "how are refunds paid out")
    # A typo in the id must not pass for "the session has no task": say so, as `show` does.
    code, out, err = cli("context", "--session", "s-nosuch")
    assert (code, out) == (1, "")
    assert err.strip() == "coderecall: error: no session 's-nosuch' in the memory"
    code, out, err = cli("context", "--session", "s-nosuch", "--json")
    assert (code, out) == (1, "")
    block = ok(cli, "context", "--session", "s-known")
    assert block["query"] == "how are refunds paid out"
