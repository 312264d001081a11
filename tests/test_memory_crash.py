"""Memory writers killed with SIGKILL at random moments lose nothing they reported written:
the database opens and passes SQLite's integrity check, every acknowledged write is there
whole (its record, vector, session event and supersede link), nothing half-written is, and
the next writers carry on."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from coderecall import Embedder
from coderecall._memory import MemoryStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

PROJECT = "github.com/acme/shop"
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[1] / "python")

# Each writer cycles through the kinds of write (a plain add, a session event remembered as
# a record, a supersede), searching between them, and appends one line to its own log once
# a write has returned: that line is the acknowledgement the test holds the store to. A line
# is written whole or not at all by one `write` of a few dozen bytes.
_WRITER = """
import json, os, sys
from pathlib import Path
from coderecall import Embedder
from coderecall._memory import MemoryStore
from coderecall._sessions import Sessions
from test_memory_crash import note
db, model, log, worker, start = sys.argv[1:6]
worker, start = int(worker), int(start)
ack = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
# Merging near duplicates off (thresholds of 1): the notes share a template, and each write
# is to stand for itself here.
embedder = Embedder.static_model(model)
with MemoryStore(
    "github.com/acme/shop", path=db, embedder=embedder, dedup_general=1.0
) as store:
    sessions = Sessions(store)
    last = None
    for n in range(start, start + 100_000):
        text = note(worker, n)
        step = n % 4
        if step == 0 or last is None:
            done = store.add(text, "observation", tags=[f"w{worker}"])
            assert done.action == "added", done
            line = {"op": "add", "n": n, "id": done.record.id}
            last = done.record.id
        elif step == 1:
            event = sessions.record(f"s{worker}-{n // 20}", "note", text, remember=True)
            line = {"op": "event", "n": n, "event": event.id}
        elif step == 2:
            new = store.supersede(last, text)
            line = {"op": "supersede", "n": n, "old": last, "id": new.id}
            last = new.id
        else:
            store.search(note(worker, n - 3), limit=5)
            continue
        os.write(ack, (json.dumps(line) + "\\n").encode())
"""


def note(worker: int, n: int) -> str:
    """A distinct text per write, of a few sentences (so it has sentence vectors too)."""
    rng = random.Random(worker * 1_000_000 + n)
    words = " ".join(f"w{w}" for w in rng.sample(range(20_000), 10))
    return f"Worker {worker} wrote note {n}. It holds {words}. Nothing else repeats it."


def _start(db: Path, model: Path, log: Path, worker: int, start: int) -> subprocess.Popen[bytes]:
    here = str(Path(__file__).parent)
    env = {"PYTHONPATH": os.pathsep.join([_PACKAGE_PARENT, here]), "PATH": "/usr/bin:/bin"}
    args = [str(db), str(model), str(log), str(worker), str(start)]
    return subprocess.Popen([sys.executable, "-c", _WRITER, *args], env=env, stderr=subprocess.PIPE)


def _acknowledged(log: Path) -> list[dict[str, int | str]]:
    if not log.exists():
        return []
    # Whole lines only: a writer may be half-way through one while the test polls.
    return [json.loads(line) for line in log.read_text().split("\n")[:-1]]


WORKERS = 3
ROUNDS = 8


@pytest.mark.slow
def test_writers_killed_at_random_moments_lose_nothing_they_acknowledged(
    tmp_path: Path, static_model: Path
) -> None:
    db = tmp_path / "memory.db"
    logs = [tmp_path / f"worker-{w}.jsonl" for w in range(WORKERS)]
    rng = random.Random(20261127)
    kills = 0
    for round_ in range(ROUNDS):
        # Numbers never repeat across rounds, so every text names the one write it was.
        before = [len(_acknowledged(log)) for log in logs]
        procs = [_start(db, static_model, logs[w], w, round_ * 100_000) for w in range(WORKERS)]
        # Past start-up, into the writes: each writer has acknowledged one, then a moment more.
        deadline = time.monotonic() + 120
        while any(len(_acknowledged(log)) == seen for log, seen in zip(logs, before, strict=True)):
            assert all(p.poll() is None for p in procs), "a writer stopped"
            assert time.monotonic() < deadline, "the writers wrote nothing in 2 minutes"
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.5))
        for proc in procs:
            time.sleep(rng.uniform(0.0, 0.3))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            _, stderr = proc.communicate(timeout=60)
            assert proc.returncode == -signal.SIGKILL, stderr.decode()
        _check(db, logs, static_model)
    assert kills == WORKERS * ROUNDS


def _check(db: Path, logs: list[Path], model: Path) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        records = {
            row[0]: row[1:]
            for row in conn.execute("SELECT id, text, superseded_by, events FROM records")
        }
        vectors = {row[0] for row in conn.execute("SELECT record_id FROM vectors")}
        # Sentence vectors: whole rows of the record vector's length.
        lengths = conn.execute("SELECT length(vector), length(parts) FROM vectors").fetchall()
        assert all(parts is None or parts % size == 0 for size, parts in lengths)
        assert any(parts for _, parts in lengths)
        events = {row[0]: row[1] for row in conn.execute("SELECT id, text FROM events")}
    # Nothing half-written: every record and event says one whole note, and every record,
    # current or superseded, has its vector (written in the record's own transaction).
    written = {}
    for text in [*(r[0] for r in records.values()), *events.values()]:
        worker, n = (int(w) for w in text.split(".")[0].split()[1::3])
        assert text == note(worker, n)
        written[text] = (worker, n)
    assert set(records) == vectors
    remembered = {}
    for text, superseded_by, sources in records.values():
        assert superseded_by is None or superseded_by in records, text
        for event in json.loads(sources):
            assert events[int(event)] == text  # an event and its record: both or neither
            remembered[int(event)] = text
    assert set(events) == set(remembered)
    # Everything acknowledged is there as it was acknowledged.
    for worker, log in enumerate(logs):
        for line in _acknowledged(log):
            text = note(worker, int(line["n"]))
            if line["op"] == "event":
                assert remembered[int(line["event"])] == text, line
                continue
            assert records[int(line["id"])][0] == text, line
            if line["op"] == "supersede":
                assert records[int(line["old"])][1] == int(line["id"]), line
    # The store reads it all back: a sample of acknowledged notes is found by its words.
    with MemoryStore(PROJECT, path=db, embedder=Embedder.static_model(model)) as store:
        current = {r.text for r in store.records()}
        assert current == {t for t, superseded_by, _ in records.values() if superseded_by is None}
        for worker, log in enumerate(logs):
            for line in _acknowledged(log)[-3:]:
                text = note(worker, int(line["n"]))
                if text in current:
                    found = store.get(h.id for h in store.search(text, limit=3))
                    assert text in [r.text for r in found], line
