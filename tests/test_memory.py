"""MemoryStore: the write path (privacy, dedup, aging), supersede and forget, project
identity, export/import, and many processes writing one database."""

from __future__ import annotations

import io
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from coderecall import _memory as memory_module
from coderecall import _memory_rank as rank_module
from coderecall._errors import QueryError, StoreError
from coderecall._memory import MemoryStore
from helpers import MakeRepo, database_bytes

PROJECT = "github.com/acme/shop"
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[1] / "python")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(db: Path) -> Iterator[MemoryStore]:
    with MemoryStore(PROJECT, path=db) as memory:
        yield memory


def test_a_near_duplicate_updates_in_place_and_merges_tags(store: MemoryStore) -> None:
    first = store.add("Use SQLite in WAL mode so readers never block.", "decision", tags=["db"])
    again = store.add("Use SQLite in WAL mode, so readers never block!", "decision", tags=["wal"])
    assert (first.action, again.action) == ("added", "updated")
    assert first.record is not None
    assert again.record is not None
    assert again.record.id == first.record.id
    assert again.record.tags == ("db", "wal")
    other = store.add("Readers of the index take no lock at all.", "decision")
    assert other.action == "added"
    # Another type or scope never merges with it.
    assert store.add("Use SQLite in WAL mode so readers never block.", "observation").action == (
        "added"
    )
    assert len(store.records(type="decision")) == 2


def test_structural_types_merge_more_readily(store: MemoryStore) -> None:
    # Word overlap 8 of 16: above the structural threshold (0.5), below the general (0.8).
    short = "The index is a Rust core with a Python API."
    longer = "The index is a Rust core, with Python bindings, a CLI, an MCP server and hooks."
    a = store.add(short, "architecture")
    b = store.add(longer, "architecture")
    assert (a.action, b.action) == ("added", "updated")
    assert [r.text for r in store.records(type="architecture")] == [longer]
    c = store.add(short, "decision")
    d = store.add(longer, "decision")
    assert (c.action, d.action) == ("added", "added")


def test_progress_keeps_only_its_newest_record_current(store: MemoryStore) -> None:
    old = store.add("Migrated the store to schema 4.", "progress")
    new = store.add("Call graph landed; memory store next.", "progress")
    assert old.record is not None
    assert new.record is not None
    assert new.superseded == (old.record.id,)
    assert [r.text for r in store.records(type="progress")] == [
        "Call graph landed; memory store next."
    ]
    history = store.records(type="progress", include_history=True)
    assert [r.superseded_by for r in history] == [new.record.id, None]


def test_session_summaries_beyond_the_cap_are_condensed(db: Path) -> None:
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    with MemoryStore(PROJECT, path=db, max_session_summaries=4) as memory:
        for day in range(5):
            memory.add(
                f"Session {day}: worked on feature number {day} and its tests.",
                "session-summary",
                at=start + timedelta(days=day),
                events=[f"e{day}"],
            )
        summaries = memory.records(type="session-summary")
        (pattern,) = memory.records(type="learned-pattern")
    assert [s.text[:9] for s in summaries] == ["Session 2", "Session 3", "Session 4"]
    assert "2026-03-01: Session 0" in pattern.text
    assert "2026-03-02: Session 1" in pattern.text
    assert pattern.events == ("e0", "e1")
    assert pattern.created_at == start + timedelta(days=1)


def test_supersede_keeps_the_history(store: MemoryStore) -> None:
    old = store.add("Deploys run on Fridays.", "decision", tags=["ops"])
    assert old.record is not None
    new = store.supersede(old.record.id, "Deploys run on Tuesdays; never on Fridays.")
    assert (new.type, new.tags) == ("decision", ("ops",))
    assert [r.text for r in store.records(type="decision")] == [new.text]
    chain = store.history(old.record.id)
    assert [r.id for r in chain] == [old.record.id, new.id]
    assert chain[0].superseded_by == new.id
    assert chain[0].text == "Deploys run on Fridays."
    assert store.history(new.id) == chain
    with pytest.raises(QueryError, match="superseded"):
        store.supersede(old.record.id, "again")


def test_private_sections_secrets_and_blocked_records_never_reach_the_file(
    store: MemoryStore, db: Path
) -> None:
    key = "sk-" + "Q7" * 24
    token = "ghp_" + "x1Y2" * 9
    written = store.add(
        f"Deploy with key {key}.\n<private>home address: 12 Elm Street</private>\n"
        f"CI token {token}; db at postgres://app:{'hunter2' * 3}@db.local/shop",
        "error-solution",
    )
    assert written.record is not None
    assert written.redactions == ("openai", "github", "password")
    assert written.private_sections == 1
    refused = store.add("The launch code is 0000.", "observation", tags=["do-not-store"])
    assert (refused.action, refused.record) == ("refused", None)
    secret = store.add("Salary bands live in the HR wiki.", "observation", privacy="private")
    assert secret.record is not None
    assert secret.record.privacy == "private"
    assert secret.record.id not in [r.id for r in store.records()]
    assert secret.record.id in [r.id for r in store.records(include_private=True)]
    store.close()
    raw = database_bytes(db)
    for leaked in (key, token, "Elm Street", "hunter2", "launch code"):
        assert leaked.encode() not in raw, leaked
    assert b"[redacted:openai]" in raw
    assert b"HR wiki" in raw


def test_forget_erases_the_text_and_keeps_a_tombstone(store: MemoryStore, db: Path) -> None:
    written = store.add("The staging password rotates weekly via the vault job.", "observation")
    assert written.record is not None
    gone = store.forget(written.record.id, "user asked")
    assert (gone.text, gone.tags, gone.forget_reason) == ("", (), "user asked")
    assert not gone.current
    assert store.records() == []
    with pytest.raises(QueryError, match="reason"):
        store.forget(written.record.id, " ")
    store.close()
    assert b"vault job" not in database_bytes(db)


def test_user_scope_follows_the_user_and_projects_never_mix(db: Path) -> None:
    with (
        MemoryStore(PROJECT, path=db) as shop,
        MemoryStore("github.com/acme/blog", path=db) as blog,
    ):
        tabs = shop.add("Prefers tabs over spaces.", "preference", scope="user").record
        orders = shop.add("Orders are sharded by region.", "architecture").record
        blog.add("Posts are rendered at build time.", "architecture")
        assert tabs is not None
        assert orders is not None
        assert [r.id for r in blog.get([orders.id, tabs.id])] == [tabs.id]  # by id neither
        with pytest.raises(QueryError, match="no memory"):
            blog.forget(orders.id, "not yours")
        assert {r.text for r in blog.records()} == {
            "Prefers tabs over spaces.",
            "Posts are rendered at build time.",
        }
        assert {r.text for r in shop.records(scope="project")} == {"Orders are sharded by region."}
    with MemoryStore(None, path=db) as nobody:
        assert [r.text for r in nobody.records()] == ["Prefers tabs over spaces."]
        with pytest.raises(QueryError, match="needs a project"):
            nobody.add("x y z", "decision")


def test_two_clones_share_memory_and_two_projects_do_not(
    make_repo: MakeRepo, tmp_path: Path, db: Path
) -> None:
    origin = make_repo({"README.md": "shop\n"})
    clones = []
    for name in ("one", "two"):
        target = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(origin), str(target)], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(target),
                "remote",
                "set-url",
                "origin",
                "git@github.com:Acme/Shop.git",
            ],
            check=True,
        )
        clones.append(target)
    other = make_repo({"README.md": "blog\n"}, name="blog")
    with MemoryStore(clones[0], path=db) as first:
        first.add("Checkout totals are computed in cents.", "decision")
    with MemoryStore(clones[1], path=db) as second, MemoryStore(other, path=db) as third:
        assert second.project == "github.com/acme/shop"
        assert [r.text for r in second.records()] == ["Checkout totals are computed in cents."]
        assert third.records() == []


def test_a_plain_name_is_an_identity_even_beside_a_folder_of_that_name(
    make_repo: MakeRepo, tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo({"README.md": "shop\n"}, name="shop")
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "https://github.com/acme/shop.git"],
        check=True,
    )
    monkeypatch.chdir(repo.parent)
    assert (repo.parent / "shop").is_dir()
    with MemoryStore("shop", path=db) as named:
        assert named.project == "shop"
    for written in ("./shop", str(repo), repo):
        with MemoryStore(written, path=db) as rooted:
            assert rooted.project == "github.com/acme/shop"
    monkeypatch.setenv("HOME", str(repo.parent))
    with MemoryStore("~/shop", path=db) as home:
        assert home.project == "github.com/acme/shop"


def test_a_new_database_opens_while_another_connection_writes_to_it(tmp_path: Path) -> None:
    # Switching a database to WAL while another connection holds its write lock fails at
    # once, without the busy handler: first openers racing on a new database met it when one
    # was half-way through its own switch (about one start in a hundred with 12 threads).
    import sqlite3
    import threading
    import time

    from coderecall._memdb import MemoryDatabase

    path = tmp_path / "memory.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, in rollback-journal mode
    released = threading.Event()

    def release() -> None:
        time.sleep(0.3)
        holder.execute("COMMIT")
        released.set()

    threading.Thread(target=release).start()
    database = MemoryDatabase(path)
    try:
        mode = database.conn().execute("PRAGMA journal_mode").fetchall()[0][0]
        assert released.is_set()
        assert mode == "wal"
    finally:
        database.close()
        released.wait()
        holder.close()


def test_a_database_from_a_newer_release_is_refused_and_left_closed(tmp_path: Path) -> None:
    import os
    import sqlite3
    from contextlib import closing

    path = tmp_path / "memory.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA user_version = 999")

    def open_files() -> int:
        fds = Path("/proc/self/fd")
        return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path))

    with MemoryStore("project", path=path) as store, pytest.raises(StoreError, match="newer"):
        store.add("Prefer small pull requests.")
    assert open_files() == 0  # the refused connection was closed, not left to the collector


def test_export_then_import_round_trips_exactly(store: MemoryStore, tmp_path: Path) -> None:
    old = store.add("Use feature flags for risky changes.", "decision", tags=["process"])
    assert old.record is not None
    store.supersede(old.record.id, "Use feature flags for every risky change.")
    gone = store.add("Temporary note about a flaky test.", "observation")
    assert gone.record is not None
    store.forget(gone.record.id, "obsolete")
    store.add("Café ünïcode and emoji 🚀 survive.", "observation", scope="user", session="s1")
    first = io.StringIO()
    assert store.export(first) == 4
    with MemoryStore(PROJECT, path=tmp_path / "copy.db") as copy:
        assert copy.import_(first.getvalue().splitlines()) == 4
        assert copy.import_(first.getvalue().splitlines()) == 0  # idempotent
        second = io.StringIO()
        copy.export(second)
    assert second.getvalue() == first.getvalue()
    rows = [json.loads(line) for line in first.getvalue().splitlines()]
    assert {row["id"] for row in rows} == {1, 2, 3, 4}
    with (
        MemoryStore(PROJECT, path=tmp_path / "bad.db") as bad,
        pytest.raises(QueryError, match="line 1"),
    ):
        bad.import_(["{not json"])


def test_an_export_without_exact_timestamps_still_imports(
    store: MemoryStore, tmp_path: Path
) -> None:
    """Exports of older versions have ISO times only (to the microsecond), and no sessions."""
    old = store.add("Deploys go out on Tuesdays.", "decision").record
    assert old is not None
    store.supersede(old.id, "Deploys go out on Wednesdays.")
    exported = io.StringIO()
    store.export(exported)
    lines = [json.loads(line) for line in exported.getvalue().splitlines()]
    assert all("table" not in line and "timestamps" in line for line in lines)
    older = [json.dumps({k: v for k, v in line.items() if k != "timestamps"}) for line in lines]
    # Into the database it came from: the stored times agree to the microsecond.
    assert store.import_(older) == 0
    with MemoryStore(PROJECT, path=tmp_path / "copy.db") as copy:
        assert copy.import_(older) == 2
        assert [r.to_dict() for r in copy.history(old.id)] == [
            r.to_dict() for r in store.history(old.id)
        ]


def test_import_refuses_inconsistent_records_and_writes_nothing(
    store: MemoryStore, tmp_path: Path
) -> None:
    old = store.add("Use tabs.", "preference").record
    assert old is not None
    store.supersede(old.id, "Use four spaces.")
    exported = io.StringIO()
    store.export(exported)
    first, second = (json.loads(line) for line in exported.getvalue().splitlines())
    with MemoryStore(PROJECT, path=tmp_path / "copy.db") as copy:
        # The float and the ISO time must name the same microsecond.
        moved = first | {"timestamps": first["timestamps"] | {"created_at": 0.0}}
        with pytest.raises(QueryError, match=r"line 1: .*timestamps\.created_at disagrees"):
            copy.import_([json.dumps(moved)])
        # A record superseded by one the import lacks: refused before the commit.
        with pytest.raises(QueryError, match=f"record {first['id']} is superseded by"):
            copy.import_([json.dumps(first)])
        assert copy.records(include_history=True) == []
        assert copy.import_([json.dumps(second), json.dumps(first)]) == 2  # still usable


def test_bad_arguments_are_query_errors(store: MemoryStore) -> None:
    with pytest.raises(QueryError, match="memory type"):
        store.add("text", "Not A Type!")
    with pytest.raises(QueryError, match="scope"):
        store.add("text", "decision", scope="team")  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="no memory 99"):
        store.forget(99, "why")
    assert store.add("   ", "decision").action == "refused"
    assert store.add("custom types work", "deploy-note").action == "added"


def _note(worker: int, n: int) -> str:
    """A distinct note per write: random words, so no two are near duplicates."""
    words = random.Random(worker * 100_000 + n).sample(range(5_000), 8)
    return f"worker {worker} note {n}: " + " ".join(f"w{w}" for w in words)


_WRITER = """
import sys
from pathlib import Path
from coderecall._memory import MemoryStore
from test_memory import _note
db, worker, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
with MemoryStore("github.com/acme/shop", path=db) as memory:
    for n in range(count):
        result = memory.add(_note(worker, n), "observation")
        assert result.action == "added", result
        if n % 100 == 0:
            assert memory.get([result.record.id])[0].text == _note(worker, n)
"""


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_twenty_processes_writing_lose_nothing(db: Path) -> None:
    workers, writes = 20, 1000
    here = str(Path(__file__).parent)
    env = {"PYTHONPATH": os.pathsep.join([_PACKAGE_PARENT, here]), "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(db), str(w), str(writes)], env=env)
        for w in range(workers)
    ]
    assert [p.wait(timeout=1200) for p in procs] == [0] * workers
    with MemoryStore(PROJECT, path=db) as memory:
        records = memory.records()
    assert len(records) == workers * writes
    assert sorted(r.text for r in records) == sorted(
        _note(w, n) for w in range(workers) for n in range(writes)
    )


_SEARCHER = """
import sys
from pathlib import Path
from coderecall import _memory
from test_memory import _note
_memory._SAVED_LEXICON_MIN_RECORDS = 1  # every process keeps its lexicon for the next
db, worker, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for n in range(count):
    with _memory.MemoryStore("github.com/acme/shop", path=db) as memory:  # a new process's
        written = memory.add(_note(worker, n), "observation").record
        words = _note(worker, n).split(": ")[1]
        found = [h.id for h in memory.search(words, limit=3)]
        assert found[:1] == [written.id], (worker, n, found)
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_processes_writing_and_searching_share_kept_lexicons_safely(
    db: Path, tmp_path: Path
) -> None:
    """Each search starts from the lexicon another process kept (often one write behind,
    sometimes being replaced at that moment) and must still find the record just written."""
    workers, rounds = 8, 40
    here = str(Path(__file__).parent)
    env = {"PYTHONPATH": os.pathsep.join([_PACKAGE_PARENT, here]), "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SEARCHER, str(db), str(w), str(rounds)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=500)
        assert proc.returncode == 0, err
    with MemoryStore(PROJECT, path=db) as memory:
        kept = memory._saved_lexicon()
        assert kept is not None
        assert len(kept.docs) == workers * rounds
        assert len(memory.records()) == workers * rounds


def test_search_ranks_by_text_tags_and_type_and_filters(store: MemoryStore) -> None:
    store.add("Deploys go through the blue-green pipeline on Tuesdays.", "decision", tags=["ops"])
    store.add("The checkout total is computed in integer cents.", "decision", tags=["billing"])
    store.add("Flaky test: the payment webhook times out under load.", "error-solution")
    store.add("Prefers short commit messages.", "preference", scope="user")
    store.add("Salary data of the team lives in the HR wiki.", "observation", privacy="private")
    (hit, *_) = store.search("how do deploys run")
    assert hit.snippet.startswith("Deploys go through the blue-green pipeline")
    assert (hit.type, hit.tags) == ("decision", ("ops",))
    assert hit.score > 0
    assert [h.type for h in store.search("checkout total cents", type="error-solution")] == []
    assert [h.snippet for h in store.search("commit messages", scope="user")] == [
        "Prefers short commit messages."
    ]
    assert store.search("deploys", tags=["billing"]) == []
    assert store.search("salary HR wiki") == []
    assert [h.type for h in store.search("salary HR wiki", include_private=True)] == ["observation"]
    full = store.get([hit.id])[0]
    assert full.text == "Deploys go through the blue-green pipeline on Tuesdays."
    with pytest.raises(QueryError, match="limit"):
        store.search("x", limit=0)


def _converse(
    store: MemoryStore, said: list[tuple[str, str]], private: frozenset[int] = frozenset()
) -> list[int]:
    """Write ``(session, text)`` turns a minute apart as observations; their record ids."""
    day = datetime(2024, 3, 4, 10, 0, tzinfo=timezone.utc)
    ids = []
    for n, (session, text) in enumerate(said):
        privacy = "private" if n in private else None
        at = day + timedelta(minutes=n)
        result = store.add(text, "observation", session=session, at=at, privacy=privacy)
        assert result.record is not None
        ids.append(result.record.id)
    return ids


def test_a_reply_is_found_through_the_turn_it_answers(store: MemoryStore) -> None:
    """The answer to a question about a conversation is often a reply that repeats none of
    its words: it ranks through its session neighbour, and only within its session."""
    said = [
        ("s1", "Ben: I gave Ana a ceramic teapot for her birthday."),
        ("s1", "Ana: Oh wow, I love it so much, thank you!"),
        ("s2", "Ana: The weather was lovely on Sunday."),
        ("s2", "Ben: Work has been busy lately."),
        ("s3", "Ana: Lunch was fine."),
    ]
    ids = _converse(store, said)
    hits = store.search("How did Ana feel about the teapot?", limit=3)
    # The reply first: the question names its speaker (see _NAMED_WEIGHT).
    assert [h.id for h in hits[:2]] == [ids[1], ids[0]]
    assert hits[0].channels == ("lexical",)  # "Ana" matches, but the teapot turn lifts it
    assert hits[1].channels == ("lexical",)
    # Across a session boundary nothing is lifted: the reply to the birthday in s2 is not
    # a neighbour of s1's last turn.
    assert [h.id for h in store.search("ceramic teapot", limit=5)] == [ids[0], ids[1]]
    assert store.search("ceramic teapot", limit=5)[1].channels == ("context",)


@pytest.mark.parametrize("rule", [True, False])
def test_a_question_passes_more_of_its_score_to_its_reply(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    """A turn that asks is answered by the turn after it, in words of its own: that reply
    earns more of the question's score than a turn after a statement earns of the statement's,
    even when the statement matches the query a little better."""
    if not rule:
        monkeypatch.setattr(rank_module, "_REPLY_WEIGHT", rank_module._FOLLOW_WEIGHT)
    said = [
        ("s1", "Ana: So what did you think of that jazz concert downtown on Friday night?"),
        ("s1", "Ben: Honestly the best night of my whole year."),
        ("s2", "Ana: The jazz concert was on Friday."),
        ("s2", "Ben: Honestly the worst week of my whole life."),
    ]
    ids = _converse(store, said)
    ranked = [h.id for h in store.search("jazz concert", limit=4)]
    assert ranked[0] == ids[2]  # the statement matches better than the question
    if rule:
        assert ranked.index(ids[1]) < ranked.index(ids[3])
    else:  # the rule decides this ranking
        assert ranked.index(ids[1]) > ranked.index(ids[3])


@pytest.mark.parametrize("rule", [True, False])
def test_a_query_that_names_a_label_prefers_its_records(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    """What a question says someone thinks is mostly told in that one's own records, though
    another's may repeat its words more often."""
    if not rule:
        monkeypatch.setattr(rank_module, "NAMED_WEIGHT", 1.0)
    said = [
        ("s1", "Ana: Honestly I think that new bakery downtown is rather wonderful."),
        ("s2", "Ben: I think the bakery! The bakery bread, the bakery cakes, the bakery staff."),
    ]
    # Both names are common, as speakers' names are in a conversation.
    chat = ["Lunch was fine.", "Work is busy.", "It rained.", "The bus was late."]
    said += [
        (f"s{3 + n}", f"{who}: {line}") for n, line in enumerate(chat) for who in ("Ana", "Ben")
    ]
    ana, ben, *_ = _converse(store, said)
    named = [h.id for h in store.search("What does Ana think of the bakery?")][:2]
    assert named == ([ana, ben] if rule else [ben, ana])
    # Naming both, or a label that is not the record's, favours no one.
    assert [h.id for h in store.search("Ana and Ben on the bakery")][:2] == [ben, ana]
    assert [h.id for h in store.search("Anabel on the bakery")][:2] == [ben, ana]


@pytest.mark.parametrize("rule", [True, False])
def test_a_question_that_asks_when_prefers_records_that_tell_a_time(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    if not rule:
        monkeypatch.setattr(rank_module, "WHEN_WEIGHT", 1.0)
    said = [
        ("s1", "Ana: We finally moved to Lisbon last spring, after all that packing."),
        ("s2", "Ana: Moving to Lisbon! Lisbon is lovely, and moving there was the plan."),
    ]
    dated, other = _converse(store, said)
    ranked = [h.id for h in store.search("When did Ana move to Lisbon?")]
    assert ranked == ([dated, other] if rule else [other, dated])
    # Asked otherwise, a record's dates do not count.
    assert [h.id for h in store.search("Did Ana move to Lisbon?")] == [other, dated]


@pytest.mark.parametrize("rule", [True, False])
def test_a_question_that_asks_how_long_prefers_records_that_tell_a_duration(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    if not rule:
        monkeypatch.setattr(rank_module, "WHEN_WEIGHT", 1.0)
    said = [
        ("s1", "Ana: I've had the bakery for six years, and I still love it."),
        ("s2", "Ana: The bakery! The bakery I had was lovely, and I had fun there."),
    ]
    lasting, other = _converse(store, said)
    ranked = [h.id for h in store.search("How long has Ana had the bakery?")]
    assert ranked == ([lasting, other] if rule else [other, lasting])
    assert [h.id for h in store.search("Has Ana had the bakery?")] == [other, lasting]


def test_a_search_after_an_interrupted_rebuild_ranks_as_a_store_opened_afresh(
    store: MemoryStore, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search indexes are updated in place; a rebuild that stops halfway (an exception,
    a KeyboardInterrupt) must not leave the next search reading half of it as current."""
    said = [
        ("s1", "Ana: We finally moved to Lisbon last spring."),
        ("s1", "Ben: How is the new flat?"),
        ("s2", "Ana: Bright, with a view of the river."),
    ]
    _converse(store, said)
    store.search("Lisbon")  # the indexes are built
    label = rank_module.label

    def interrupted(text: str) -> str | None:
        if "tram" in text:
            raise KeyboardInterrupt
        return label(text)

    store.add("Ben: The tram to the flat takes ten minutes.", "observation", session="s1")
    store.add("Ana: I walk along the river to work.", "observation", session="s2")
    monkeypatch.setattr(rank_module, "label", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.search("tram to the flat")
    monkeypatch.setattr(rank_module, "label", label)
    with MemoryStore(PROJECT, path=db) as fresh:
        for query in ("tram to the flat", "What does Ben say of the tram?", "Who moved?"):
            kept = [(h.id, h.score) for h in store.search(query)]
            assert kept == [(h.id, h.score) for h in fresh.search(query)], query


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Ana: How was it?", True),
        ("Ana: How was it? ", True),
        ('Ana: Did he say "why?"', True),
        ("Ana: Look at this, isn't it cute? [image: a photo of a puppy]", True),
        ("Ana: Why? Because I said so.", False),
        ("Ana: The [what?] part.", False),
        ("Decision: keep the API.", False),
    ],
)
def test_a_record_asks_when_it_ends_with_a_question(text: str, asks: bool) -> None:
    assert bool(rank_module._ASKS.search(text)) is asks


@pytest.mark.parametrize("reach", [0, 2])
def test_a_turn_is_read_with_the_turns_around_it(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, reach: int
) -> None:
    """An answer two turns after its question shares only a name with the query; its
    window (the turns around it) holds the rest. Without windows (reach 0), another session's
    turn of the same speaker outranks it."""
    monkeypatch.setattr(rank_module, "_WINDOW_REACH", reach)
    said = [
        ("s1", "Mel: How was the pottery class on Saturday?"),
        ("s1", "Cam: Messy but fun."),
        ("s1", "Cam: I shaped a bowl with a blue glaze."),
        ("s2", "Cam: It rained all weekend long."),
        ("s2", "Cam: I stayed in and read a novel."),
    ]
    ids = _converse(store, said)
    ranked = [h.id for h in store.search("What did Cam make in the pottery class?", limit=5)]
    if reach:
        assert ranked.index(ids[2]) < ranked.index(ids[3])
    else:  # the rule decides this ranking
        assert ranked.index(ids[2]) > ranked.index(ids[3])


def test_a_turn_that_asks_ranks_below_one_that_tells(store: MemoryStore) -> None:
    """A question echoes the words of what it asks about, and holds no answer: the turns
    that tell rank above it, though it matches more of the query's words, and its reply
    still earns its share of the question's score."""
    said = [
        ("s1", "Ana: Sounds fun! What did you make in the pottery class?"),
        ("s1", "Cam: A bowl."),
        ("s2", "Cam: Weeks later I made a vase in the pottery class."),
        ("s3", "Ana: The weather was lovely on Sunday."),
        ("s3", "Cam: Work has been busy lately."),
    ]
    ids = _converse(store, said)
    ranked = [h.id for h in store.search("What did they make in the pottery class?", limit=5)]
    assert ranked.index(ids[2]) < ranked.index(ids[0])
    assert ranked.index(ids[1]) < ranked.index(ids[0])
    lexicon = store._text_index()
    assert [lexicon.asks(key) for key in ids] == [True, False, False, False, False]


def test_a_private_turn_lends_no_words_to_the_turns_around_it(store: MemoryStore) -> None:
    said = [("s1", "Cam: Hello there."), ("s1", "Cam: My salary is 90k."), ("s1", "Cam: Bye.")]
    ids = _converse(store, said, private=frozenset({1}))
    assert store.search("salary") == []
    assert [h.id for h in store.search("salary", include_private=True)][:1] == [ids[1]]


def test_fusion_keeps_a_clear_winner_of_one_channel_ahead() -> None:
    """Each channel's scores count as a share of its best: a record one channel is sure of
    beats one that both channels found only vaguely (reciprocal ranks would tie them)."""
    lexical = [(1, 9.0), (2, 1.0), (3, 0.5)]
    semantic = [(2, 0.30), (3, 0.29), (1, 0.10)]
    assert [
        key for key, _ in rank_module.blend({"lexical": lexical, "semantic": semantic}, {})
    ] == [1, 2, 3]
    fused = rank_module._fuse(lexical, semantic)
    assert fused[0][0] == 2  # the rank fusion this replaced lets the vague record win


def test_a_channel_sure_of_its_first_records_outvotes_one_whose_records_score_alike() -> None:
    """Record 1 is one of two the lexical channel ranks far above the rest; the semantic
    channel scores nearly everything alike, record 2 first by a hair and record 1 last.
    Summed as shares of each channel's best, record 2 would win (0.8 + 1.0 against 1.0 +
    0.5); each channel's vote scaled by its clarity, the sure channel decides."""
    others = range(3, 23)
    lexical = [(1, 2.0), (2, 1.6), *((key, 0.2) for key in others)]
    semantic = [(2, 1.0), *((key, 0.98) for key in others), (1, 0.5)]
    assert rank_module.clarity(lexical) > 0.8
    assert rank_module.clarity(semantic) < 0.15
    blended = rank_module.blend({"lexical": lexical, "semantic": semantic}, {})
    assert [key for key, _ in blended[:2]] == [1, 2]
    # Clarity scales a channel as a whole: one channel alone keeps its order, and one
    # whose records all tie still counts, at the floor.
    alone = rank_module.blend({"lexical": lexical}, {})
    assert [key for key, _ in alone] == [key for key, _ in lexical]
    flat = [(key, 1.0) for key in range(1, 6)]
    assert rank_module.clarity(flat) == pytest.approx(0.05)
    assert rank_module.clarity([(1, 3.0)]) == 1.0
    assert all(score > 0 for _, score in rank_module.blend({"semantic": flat}, {}))


def test_function_words_of_a_question_do_not_match(store: MemoryStore) -> None:
    """ "What did ... when ..." matches every question asked in a conversation; the answer
    shares the question's content words."""
    answer = store.add("Mia: I adopted a puppy from the shelter.", "observation").record
    store.add("Mia: What did you do when you were there?", "observation")
    store.add("Mia: How did that go, what did they say?", "observation")
    assert answer is not None
    assert store.search("What did Mia adopt?", limit=1)[0].id == answer.id
    # A query of function words alone still searches with them.
    assert store.search("what did they say", limit=1)[0].snippet.startswith("Mia: How did")


def test_a_question_asked_about_lately_matches_what_it_asks_not_when(store: MemoryStore) -> None:
    """ "Recently" says when a question is asked, not what about: with it, the short replies
    that say "recently" outscore the long turn that names the workshop."""
    store.add("Mia: Is that recent?", "observation")
    store.add("Mia: Recently, yes!", "observation")
    store.add("Mia: Lately I have been busy, recently too.", "observation")
    answer = store.add(
        "Mia: I'm still figuring out the details of the new job, but last Friday I went to a"
        " counseling workshop downtown and it was inspiring to meet people who do this work.",
        "observation",
    ).record
    assert answer is not None
    assert store.search("What workshop did Mia attend recently?", limit=1)[0].id == answer.id


def test_an_irregular_past_tense_answers_a_question_in_the_base_form(
    store: MemoryStore,
) -> None:
    """ "What did Mia buy?" is told as "I bought ...": no suffix rule joins the two."""
    store.add("Mia: I want to sell the lamp.", "observation")
    store.add("Mia: It gets busy on Saturdays.", "observation")
    answer = store.add(
        "Mia: After weeks of looking at the market stalls I bought a copper kettle.",
        "observation",
    ).record
    assert answer is not None
    hits = store.search("What did Mia buy?", limit=3)
    assert hits[0].id == answer.id
    assert hits[0].score > hits[1].score


def test_a_word_is_found_inside_a_sentence_written_without_spaces(store: MemoryStore) -> None:
    texts = {
        "decision": "我们决定使用PostgreSQL作为主数据库,因为需要事务支持。",
        "error-solution": "部署脚本在服务器重启后会失败,需要先清理缓存目录。",
        "preference": "ユーザーはダークモードを好みます。",
    }
    ids = {}
    for kind, text in texts.items():
        record = store.add(text, kind).record
        assert record is not None
        ids[kind] = record.id
    for query, kind in (
        ("主数据库", "decision"),
        ("部署为什么失败", "error-solution"),
        ("ダークモード", "preference"),
    ):
        assert [h.id for h in store.search(query, limit=1)] == [ids[kind]], query
    # A near-duplicate differs by a character or two, not by whole words.
    again = store.add("部署脚本在服务器重启以后会失败,需要先清理缓存目录。", "error-solution")
    assert again.action == "updated"
    assert again.record is not None
    assert again.record.id == ids["error-solution"]


def _bakery_talk(name: str) -> list[tuple[str, str]]:
    return [
        ("s1", f"{name}: The new bakery downtown is rather wonderful."),
        ("s2", "Ben: The bakery! The bakery bread, the bakery cakes, the bakery staff."),
        ("s3", f"{name}: It rained."),
        ("s3", "Ben: The bus was late."),
    ]


@pytest.mark.parametrize("rule", [True, False])
@pytest.mark.parametrize(
    ("said", "question"),
    [
        (
            [
                ("s1", "田中: 駅前の新しいパン屋は最高だね。"),
                ("s2", "佐藤: パン屋のパン、パン屋のケーキ、パン屋の店員、パン屋!"),
                ("s3", "田中: 今日は雨でした。"),
                ("s3", "佐藤: バスが遅れました。"),
            ],
            "田中さんはパン屋をどう思いますか",
        ),
        *[
            (_bakery_talk(written), f"What does {typed} think of the bakery?")
            for written, typed in [
                ("José", "Jose"),
                ("Jose", "José"),
                ("Łukasz", "Lukasz"),
                ("Jürgen", "Jurgen"),
            ]
        ],
    ],
)
def test_a_label_is_named_however_the_question_writes_it(
    store: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    rule: bool,
    said: list[tuple[str, str]],
    question: str,
) -> None:
    """Inside a sentence written without spaces, or typed without its accents."""
    if not rule:
        monkeypatch.setattr(rank_module, "NAMED_WEIGHT", 1.0)
    theirs, other, *_ = _converse(store, said)
    named = [h.id for h in store.search(question)][:2]
    assert named == ([theirs, other] if rule else [other, theirs])


def test_search_sees_other_writers_and_leaves_out_superseded_records(db: Path) -> None:
    with MemoryStore(PROJECT, path=db) as reader, MemoryStore(PROJECT, path=db) as writer:
        assert reader.search("cache invalidation") == []
        old = writer.add("Cache invalidation happens on every deploy.", "decision").record
        assert old is not None
        assert [h.id for h in reader.search("cache invalidation")] == [old.id]
        lazy = "Cache entries expire after ten minutes; invalidation is lazy."
        new = writer.supersede(old.id, lazy)
        assert [h.id for h in reader.search("cache invalidation")] == [new.id]


def test_a_smaller_limit_gives_the_first_results_of_a_larger_one(store: MemoryStore) -> None:
    """Asking for fewer results never reorders them, even where far more records match
    than the search weighs (600 records of 30 sessions, each a few words of the same 38)."""
    rng = random.Random(7)
    vocabulary = (
        "cache build index query deploy test config shard replica lock merge branch commit"
        " schema table column vector model token parser grammar server client socket retry"
        " timeout queue worker thread pool memory disk page log metric alert trace span"
    )
    words = vocabulary.split()
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for n in range(600):
        text = " ".join(rng.sample(words, rng.randint(3, 8)))
        store.add(text, "observation", session=f"s{n // 20}", at=start + timedelta(hours=n))
    for query in ("cache lock", "deploy the replica config", "merge test shard index"):
        whole = [h.id for h in store.search(query, limit=60)]
        assert len(whole) == 60, query
        for limit in (1, 3, 10, 20):
            assert [h.id for h in store.search(query, limit=limit)] == whole[:limit], (
                query,
                limit,
            )


def test_time_phrases_are_resolved_against_the_records_dates(store: MemoryStore) -> None:
    days = {
        datetime(2025, 3, 12, 10, tzinfo=timezone.utc): "Chose Postgres for the ledger service.",
        datetime(2025, 6, 2, 9, tzinfo=timezone.utc): "Postgres vacuum tuned for the ledger.",
        datetime(2025, 6, 9, 15, tzinfo=timezone.utc): "Ledger exports moved to a nightly job.",
        datetime(2025, 6, 10, 11, tzinfo=timezone.utc): "Ledger totals now reconcile daily.",
    }
    for at, text in days.items():
        store.add(text, "decision", at=at)
    # The newest record (June 10, 2025) is "today", whatever the wall clock says. Records
    # of the phrase's window come first; the others still follow.
    yesterday = [h.snippet for h in store.search("ledger yesterday")]
    assert yesterday[0] == "Ledger exports moved to a nightly job."
    assert len(yesterday) == 4
    assert [h.snippet for h in store.search("ledger", limit=1)] != yesterday[:1]
    march = [h.snippet for h in store.search("what about postgres in March")]
    assert march == [
        "Chose Postgres for the ledger service.",
        "Postgres vacuum tuned for the ledger.",
    ]
    last_week = store.search("last week")
    assert [h.snippet for h in last_week] == ["Postgres vacuum tuned for the ledger."]
    assert last_week[0].score == 0.0  # only a time phrase: a listing by time
    since = store.search("ledger", since=datetime(2025, 6, 5))
    assert {h.snippet for h in since} == {
        "Ledger exports moved to a nightly job.",
        "Ledger totals now reconcile daily.",
    }


def test_a_record_dated_ahead_does_not_move_today(store: MemoryStore) -> None:
    now = datetime.now(timezone.utc)
    store.add("Rotated the signing keys.", "decision", at=now - timedelta(days=1))
    store.add("Signing keys audited.", "decision", at=now - timedelta(days=9))
    # Written by a machine whose clock runs a year ahead.
    store.add("Signing keys moved to the vault.", "decision", at=now + timedelta(days=365))
    yesterday = store.search("signing keys yesterday", limit=1)
    assert [h.snippet for h in yesterday] == ["Rotated the signing keys."]
    assert [h.snippet for h in store.search("yesterday")] == ["Rotated the signing keys."]


def test_a_record_that_tells_of_the_asked_time_counts_as_in_it(store: MemoryStore) -> None:
    # A question dates the event; a record is dated when it was told, often later: "last
    # month" in a record of April tells of March.
    told = "Last month we moved the ledger to Postgres."
    days = {
        datetime(2025, 3, 3, 10, tzinfo=timezone.utc): "Ledger audit notes filed.",
        datetime(2025, 4, 9, 9, tzinfo=timezone.utc): told,
        datetime(
            2025, 4, 10, 9, tzinfo=timezone.utc
        ): "We moved the ledger reports; moved the ledger.",
        datetime(2025, 6, 2, 9, tzinfo=timezone.utc): "Nothing dated about anything at all.",
    }
    for at, text in days.items():
        store.add(text, "decision", at=at)
    ranked = [h.snippet for h in store.search("where did we move the ledger in March")]
    assert ranked.index(told) < ranked.index("We moved the ledger reports; moved the ledger.")
    # Read against its own date, not the newest record's: June's "last month" would be May.
    assert store.search("ledger move in May")[0].snippet != told


def test_timeline_shows_the_records_around_one(store: MemoryStore) -> None:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    ids = [
        store.add(f"Step {n}: {word} the release.", "observation", at=start + timedelta(hours=n))
        for n, word in enumerate(["plan", "branch", "build", "test", "tag", "ship"])
    ]
    middle = ids[3].record
    assert middle is not None
    around = store.timeline(middle.id, before=2, after=1)
    assert [r.text.split(":")[0] for r in around] == ["Step 1", "Step 2", "Step 3", "Step 4"]


_CONVERSATION = [
    ("s1", "Ana: We finally moved to Lisbon last spring."),
    ("s1", "Ben: How is the new flat?"),
    ("s1", "Ana: Bright, with a view of the river."),
    ("s2", "Ben: The tram to the flat takes ten minutes."),
    ("s2", "Ana: I walk along the river to work."),
    ("s2", "Ben: My bank PIN is something I keep to myself."),
    ("s3", "Ana: The bakery on our street sells pastel de nata."),
    ("s3", "Ben: Did you try the one near the castle?"),
]
_ASKED = ("tram to the flat", "What does Ana say of the river?", "Who moved?", "bakery castle")


def _ranks(store: MemoryStore) -> dict[str, list[tuple[int, float]]]:
    return {query: [(h.id, h.score) for h in store.search(query)] for query in _ASKED}


def _fresh_ranks(db: Path, tmp_path: Path) -> object:
    """The ranks of a store that builds its lexicon from nothing: a copy of the database,
    without the lexicon kept beside it."""
    copy = Path(tempfile.mkdtemp(dir=tmp_path)) / db.name
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    with MemoryStore(PROJECT, path=copy) as fresh:
        return _ranks(fresh)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every lexicon build from now on, as whether it analysed anything; stores of any
    size keep their lexicon between processes."""
    monkeypatch.setattr(memory_module, "_SAVED_LEXICON_MIN_RECORDS", 1)
    touched: list[bool] = []
    build = rank_module.build_lexicon

    def counted(rows: Any, previous: Any) -> Any:
        lexicon, changed = build(rows, previous)
        touched.append(changed)
        return lexicon, changed

    monkeypatch.setattr(rank_module, "build_lexicon", counted)
    return touched


def test_a_new_process_starts_from_the_saved_lexicon_and_ranks_as_if_it_built_it(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[bool]
) -> None:
    with MemoryStore(PROJECT, path=db) as first:
        _converse(first, _CONVERSATION, private=frozenset({5}))
        before = _ranks(first)
    assert builds == [True]  # built from nothing, and kept
    builds.clear()
    with MemoryStore(PROJECT, path=db) as second:  # a new process's store
        assert _ranks(second) == before
    assert builds == [False]  # it analysed nothing
    assert _fresh_ranks(db, tmp_path) == before


def test_a_saved_lexicon_that_other_writes_made_stale_is_brought_up_to_date(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[bool]
) -> None:
    with MemoryStore(PROJECT, path=db) as first:
        ids = _converse(first, _CONVERSATION)
        first.search("Lisbon")
    with MemoryStore(PROJECT, path=db) as writer:  # a process that writes, never searches
        # Writes after the lexicon was kept: a new record, one replaced, one forgotten, a
        # private one, and a session that gains a turn in the middle of its windows.
        writer.add("Ben: The tram broke down twice this week.", "observation", session="s2")
        writer.supersede(ids[6], "Ana: The bakery on our street closed in May.")
        writer.forget(ids[7], reason="test")
        writer.add("Ana: My door code is 4471.", "observation", session="s1", privacy="private")
    builds.clear()
    with MemoryStore(PROJECT, path=db) as second:
        stale = _ranks(second)
    assert builds == [True]
    assert stale == _fresh_ranks(db, tmp_path)
    builds.clear()
    with MemoryStore(PROJECT, path=db) as third:  # the brought-up-to-date one was kept
        assert _ranks(third) == stale
    assert builds == [False]


def test_a_long_lived_store_keeps_the_lexicon_its_writes_changed_when_it_closes(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[bool]
) -> None:
    saved: list[int] = []
    save = MemoryStore._save_lexicon

    def counted(self: MemoryStore, lexicon: Any, generation: str) -> None:
        saved.append(len(lexicon.docs))
        save(self, lexicon, generation)

    monkeypatch.setattr(MemoryStore, "_save_lexicon", counted)
    with MemoryStore(PROJECT, path=db) as server:
        _converse(server, _CONVERSATION)
        server.search("Lisbon")
        server.add("Ben: The tram broke down twice this week.", "observation", session="s2")
        server.search("tram")  # updated in place, not saved after each write
        assert saved == [8]
        later = _ranks(server)
    assert saved == [8, 9]
    builds.clear()
    with MemoryStore(PROJECT, path=db) as second:
        assert _ranks(second) == later
    assert builds == [False]
    assert later == _fresh_ranks(db, tmp_path)


@pytest.mark.parametrize("damage", ["torn", "garbage", "another project's", "other code's"])
def test_a_damaged_or_foreign_saved_lexicon_is_not_used(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[bool], damage: str
) -> None:
    with MemoryStore(PROJECT, path=db) as first:
        _converse(first, _CONVERSATION)
        expected = _ranks(first)
        saved = first._lexicon_file()[0]
    with MemoryStore("another-project", path=db) as other:
        _converse(other, [("t1", "Cy: Our tram to the flat is always late.")])
        other.search("tram")
        foreign = other._lexicon_file()[0].read_bytes()
    data = saved.read_bytes()
    damaged = {"torn": data[: len(data) // 2], "garbage": os.urandom(len(data))}
    if damage == "other code's":  # another analyzer may have split the same texts otherwise
        monkeypatch.setattr(rank_module, "_SNAPSHOT_FORMAT", rank_module._SNAPSHOT_FORMAT + 1)
    else:
        saved.write_bytes(damaged.get(damage, foreign))
    builds.clear()
    with MemoryStore(PROJECT, path=db) as second:
        assert _ranks(second) == expected
    assert builds == [True]  # built from nothing again, and kept in place of the damage
    builds.clear()
    with MemoryStore(PROJECT, path=db) as third:
        assert _ranks(third) == expected
    assert builds == [False]


def test_forgetting_a_record_deletes_every_lexicon_kept_for_the_store(
    db: Path, builds: list[bool]
) -> None:
    from coderecall._memory_rank import lexicon_from_bytes

    with MemoryStore(PROJECT, path=db) as shop, MemoryStore("another", path=db) as other:
        _converse(shop, _CONVERSATION)
        folder = shop._lexicon_file()[0].parent
        folder.mkdir()
        torn = folder / f"{shop._lexicon_file()[0].name}.1234.5678.part"
        torn.write_bytes(b"the vault job, half written by a process killed while saving")
        secret = shop.add("The staging password rotates via the vault job.", scope="user")
        assert secret.record is not None
        shop.search("Lisbon")
        other.search("vault")  # the user-scope record is in this project's lexicon too
        assert len(list(folder.glob("*.bin"))) == 2
        assert torn.exists()  # young: maybe a save in progress
        shop.add("Ben: The tram broke down twice this week.", "observation", session="s2")
        shop.search("tram")  # a change not yet kept: the store would keep it at close
        other.forget(secret.record.id, "user asked")
        assert list(folder.iterdir()) == []
    # Closing kept the store's lexicon again, without the forgotten text.
    path, owner = MemoryStore(PROJECT, path=db)._lexicon_file()
    lexicon = lexicon_from_bytes(path.read_bytes(), owner)
    assert lexicon is not None
    assert secret.record.id not in lexicon.docs
    assert lexicon.records.search("vault", 5) == lexicon.windows.search("vault", 5) == []


def test_saving_a_lexicon_clears_what_killed_savers_left(db: Path, builds: list[bool]) -> None:
    with MemoryStore(PROJECT, path=db) as store:
        _converse(store, _CONVERSATION[:3])
        folder = store._lexicon_file()[0].parent
        folder.mkdir()
        old, young = folder / "0.bin.1.1.part", folder / "0.bin.2.2.part"
        for part in (old, young):
            part.write_bytes(b"half")
        an_hour_ago = time.time() - 3600
        os.utime(old, (an_hour_ago, an_hour_ago))
        store.search("Lisbon")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [young.name, store._lexicon_file()[0].name]
    )


def test_filters_read_their_values_as_writes_store_them(store: MemoryStore) -> None:
    written = store.add("We chose SQLite for the cache.", "Decision", tags="storage").record
    assert written is not None
    assert (written.type, written.tags) == ("decision", ("storage",))  # one tag, not letters
    assert [h.id for h in store.search("sqlite", type="Decision")] == [written.id]
    assert [r.id for r in store.records(type=["DECISION"])] == [written.id]
    assert [h.id for h in store.search("sqlite", tags=["", " storage "])] == [written.id]
    assert [h.id for h in store.search("sqlite", tags="storage", limit=10**30)] == [written.id]
    calls: list[tuple[Callable[[], object], str]] = [
        (
            lambda: store.search("sqlite", scope="global"),  # type: ignore[arg-type]
            "scope must be 'user' or 'project'",
        ),
        (lambda: store.search("sqlite", type="Bad Type!"), "bad memory type"),
        (lambda: store.timeline(written.id, before=-1), "must be 0 or more"),
        (lambda: store.add("x", privacy="secret"), "unknown privacy level"),
    ]
    for call, message in calls:
        with pytest.raises(QueryError, match=message):
            call()


def test_a_text_past_the_cap_is_refused_and_its_event_still_recorded(store: MemoryStore) -> None:
    from coderecall._memory import MAX_TEXT_CHARS
    from coderecall._sessions import Sessions

    huge = "log line\n" * (MAX_TEXT_CHARS // 9 + 1)
    refused = store.add(huge, "observation")
    assert (refused.action, refused.record) == ("refused", None)
    assert f"a memory holds at most {MAX_TEXT_CHARS:,}" in refused.reason
    kept = store.add("x" * MAX_TEXT_CHARS, "observation")
    assert kept.action == "added"
    assert kept.record is not None
    with pytest.raises(QueryError, match="at most"):
        store.supersede(kept.record.id, huge)
    sessions = Sessions(store)
    event = sessions.record("s", "prompt", huge, remember=True)
    assert event is not None
    assert len(event.text) == len(huge.strip())
    assert [r.id for r in store.records()] == [kept.record.id]
