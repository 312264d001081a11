"""Several processes on one index: one writer at a time through a lease that dies with its
holder, readers that never block and never see a half-published state."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from coderecall import CodeIndex, IndexBusyError
from helpers import SAMPLE_PROJECT, MakeRepo, read_line

HOLD_LEASE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from coderecall._lease import WriteLease
    with WriteLease(Path(sys.argv[1]), "a test holding the lease").hold():
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


HOLD_WRITE_LOCK = textwrap.dedent(
    """
    import sqlite3, sys
    writer = sqlite3.connect(sys.argv[1], isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    print("held", flush=True)
    sys.stdin.read()  # until the test closes it
    writer.execute("ROLLBACK")
    """
)


def hold_lease(index_dir: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, str(index_dir), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert read_line(proc).strip() == "held"
    return proc


def test_a_holder_in_this_very_process_is_named_as_such(make_repo: MakeRepo) -> None:
    from coderecall._lease import WriteLease

    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index, CodeIndex(root) as other:
        index.index(progress=False)
        with (
            WriteLease(index.index_dir, "indexing").hold(False),
            pytest.raises(IndexBusyError) as busy,
        ):
            other.index(progress=False, wait=False)
    assert busy.value.holder.startswith(f"pid {os.getpid()} (this very process: ")


def test_opening_an_index_never_waits_for_a_writer_holding_the_database(
    make_repo: MakeRepo,
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
        database = index.index_dir / "index.db"
    # A writer in the middle of a long transaction (or stopped with ^Z while in one), in a
    # process of its own: two SQLite libraries in one process break each other's locks.
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITE_LOCK, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as writer:
        assert read_line(writer).strip() == "held"
        # Before, every open took the write lock: this failed after the 30 s busy timeout.
        cli = subprocess.run(
            [sys.executable, "-m", "coderecall", "search", "TokenStore", "--json"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        with CodeIndex(root) as index:
            files = index.status().files
        writer.communicate("", timeout=60)  # lets it roll back and end
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)[0]["path"] == "src/shop/auth.py"
    assert files == len(SAMPLE_PROJECT)
    assert [p.name for p in root.glob(".git/coderecall*")] == ["coderecall"]


def test_a_second_writer_fails_at_once_waits_or_times_out_as_asked(
    make_repo: MakeRepo, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
        holder = hold_lease(index.index_dir, 60)
        try:
            with pytest.raises(IndexBusyError, match=f"pid {holder.pid}") as busy:
                index.index(progress=False, wait=False)
            assert "a test holding the lease" in busy.value.holder
            started = time.perf_counter()
            with pytest.raises(IndexBusyError, match=r"after waiting 0\.3 s"):
                index.index(progress=False, wait=0.3)
            assert time.perf_counter() - started >= 0.3
            searched = index.search("TokenStore")
            assert searched[0].path == "src/shop/auth.py", "readers never wait for the lease"

            cli = subprocess.run(
                [sys.executable, "-m", "coderecall", "index", str(root), "--no-wait"],
                capture_output=True,
                text=True,
                check=False,
            )
            assert cli.returncode == 1
            assert "another process is writing the index" in cli.stderr
        finally:
            # A holder killed outright releases the lease: no stale lock to clean up.
            holder.send_signal(signal.SIGKILL)
            holder.communicate()
        assert index.index(progress=False, wait=False).files_parsed == 0


def test_a_waiting_writer_says_so_and_goes_on_when_the_holder_ends(
    make_repo: MakeRepo, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
        holder = hold_lease(index.index_dir, 0.5)
        (root / "src/shop/extra.py").write_text("def waited_for_the_lease():\n    pass\n")
        with caplog.at_level(logging.WARNING, logger="coderecall"):
            report = index.index(progress=False)
        holder.communicate()
        assert holder.returncode == 0
        assert report.files_parsed == 1
        waiting = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
        assert len(waiting) == 1, "said once, not on every poll"
        assert f"pid {holder.pid}" in waiting[0]


WORKER = textwrap.dedent(
    """
    import json, sys, time
    from coderecall import CodeIndex
    root, role, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    rounds = errors = 0
    problems = []
    deadline = time.monotonic() + seconds
    with CodeIndex(root) as index:
        while time.monotonic() < deadline:
            try:
                if role == "writer":
                    index.index(progress=False)
                hits = index.search("TokenStore", limit=3)
                if not hits or hits[0].path != "src/shop/auth.py":
                    problems.append(f"TokenStore -> {[h.path for h in hits]}")
                for hit in index.search("churn_marker", limit=20):
                    text = hit.content or ""
                    # A chunk is one published version: its marker line and its body agree.
                    if text.count("churn_marker_") != text.count("round_value"):
                        problems.append(f"half a version in {hit.path}: {text!r}")
                rounds += 1
            except Exception as exc:
                errors += 1
                problems.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps({"role": role, "rounds": rounds, "errors": errors, "problems": problems[:5]}))
    """
)


@pytest.mark.slow
def test_four_processes_index_and_search_one_repository_at_once(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    files = dict(SAMPLE_PROJECT)
    for n in range(40):
        files[f"churn/file_{n}.py"] = f"def churn_marker_{n}_0():\n    return 'round_value 0'\n"
    root = make_repo(files)
    with CodeIndex(root) as index:
        index.index(progress=False)
    seconds = 8.0
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), role, str(seconds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in ("writer", "writer", "reader", "reader")
    ]
    # Meanwhile the files keep changing, as an agent's edits would.
    round_ = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        round_ += 1
        for n in range(0, 40, 3):
            path = root / f"churn/file_{n}.py"
            # Written aside and renamed, as editors save: a reader never sees half a file.
            draft = path.with_suffix(".tmp")
            draft.write_text(
                f"def churn_marker_{n}_{round_}():\n    return 'round_value {round_}'\n"
            )
            draft.rename(path)
        time.sleep(0.05)
    outcomes = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        outcomes.append(json.loads(out))
    for outcome in outcomes:
        assert outcome["errors"] == 0, outcome
        assert outcome["problems"] == [], outcome
        assert outcome["rounds"] > 0, outcome

    # After the storm, one more run gives exactly what a fresh build gives.
    with CodeIndex(root) as index:
        index.index(progress=False)
        assert index.health().ok
        got = [(h.path, h.start_line, h.symbol) for h in index.search("churn_marker", limit=50)]
        status = index.status()
    with CodeIndex(root, {"index_dir": tmp_path / "fresh"}) as fresh:
        fresh.index(progress=False)
        want = [(h.path, h.start_line, h.symbol) for h in fresh.search("churn_marker", limit=50)]
        assert status.files == fresh.status().files
    assert sorted(got) == sorted(want)
    assert os.path.exists(root / ".git" / "coderecall" / "write.lock")


# Run in a fresh interpreter, so that the threads the parent has are the ones the script
# started. `in_forked_child(work)` forks, runs `work()` in the child and returns its JSON
# result, or None if the child did not finish within a minute (it is killed then).
FORK_HARNESS = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from pathlib import Path
    from coderecall import CodeIndex

    def thread_names():
        names = []
        for task in Path("/proc/self/task").iterdir():
            try:
                names.append((task / "comm").read_text().strip())
            except FileNotFoundError:
                continue
        return names

    def in_forked_child(work):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(read)
                os.write(write, json.dumps(work()).encode())
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        deadline = time.monotonic() + 60
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if done[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        with os.fdopen(read) as pipe:
            return json.loads(pipe.read() or "null")
    """
)

# The parent indexes, then opens the index again (which decodes its saved lexical snapshot in
# parallel) and runs a broad query (walked by a query helper); a forked child inherits those
# pools without their threads. Prints the parent's hits, whether a query helper ran, and the
# child's hits (null if the child never answered).
FORK_AFTER_QUERY = FORK_HARNESS + textwrap.dedent(
    """
    root, query = Path(sys.argv[1]), sys.argv[2]

    def search():
        with CodeIndex(root) as index:
            return [[h.path, h.start_line] for h in index.search(query, limit=10)]

    with CodeIndex(root) as index:
        index.index(progress=False)
    parent = search()
    threads = thread_names()
    helper = any(n.startswith("coderecall-quer") for n in threads)
    child = in_forked_child(search)
    print(json.dumps({"parent": parent, "helper": helper, "threads": threads, "child": child}))
    """
)

# Every other native path that works in parallel, in the parent and then in a forked child,
# each in its own folders: indexing with a static model (embedding, the vector graph), a
# hybrid search, the call graph, a memory store with enough records to be analysed in
# parallel, and a transformer embedding a batch. Prints both results and the parent's
# threads once it is done.
FORK_AFTER_EVERYTHING = FORK_HARNESS + textwrap.dedent(
    """
    from coderecall import Embedder

    static, transformer, base = sys.argv[1], Embedder.transformer(sys.argv[2]), Path(sys.argv[3])
    words = "cache parser router socket ledger schema thread cursor bundle signal widget".split()

    def work(name):
        root = base / name
        for i in range(120):
            path = root / f"pkg/mod_{i}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            body = "    return step_{}_{}(value) + {}\\n\\n\\n"
            path.write_text("".join(
                f"def step_{i}_{j}(value):\\n" + body.format(i, (j + 1) % 6, j) for j in range(6)
            ))
        config = {"embedding": {"provider": "static", "model": static}}
        with CodeIndex(root, config, force=True) as index:
            index.index(progress=False)
            hits = index.search("the next step of a value", limit=5)
            callers = index.call_graph("step_3_2", direction="callers").callers
            memory = index.memory(path=base / f"{name}-memory.db")
            for i in range(90):
                a, b, c = words[i % 11], words[(i // 11 + 3 * i) % 11], words[(7 * i + 5) % 11]
                memory.add(f"the {a} talks to the {b} before the {c} in release {i}")
            found = memory.search("which parser talks to the router", limit=3)
            stored = len(memory.records())
            memory.close()
        vectors = transformer.embed(["a parser for the router", "the widget cache"])
        return {
            "hits": [[h.path, h.start_line, sorted(h.channels)] for h in hits],
            "callers": sorted(f"{c.path}:{c.line}" for c in callers),
            "memory": [stored, [h.snippet for h in found]],
            "transformer": [round(float(x), 4) for x in vectors[:, :4].ravel()],
        }

    parent = work("parent")
    threads = thread_names()
    child = in_forked_child(lambda: work("child"))
    print(json.dumps({"parent": parent, "threads": threads, "child": child}))
    """
)


# The parent indexes, searches and remembers, then forks while one of its threads holds the
# index's lock (a call under way); the child carries on with the objects it inherited:
# indexes a new file, searches, remembers, closes them. Then the parent, with its own
# handles, must see the child's work and go on writing. Prints both sides' results.
FORK_WITH_OPEN_HANDLES = FORK_HARNESS + textwrap.dedent(
    """
    import threading

    root, memory_path = Path(sys.argv[1]), Path(sys.argv[2])
    index = CodeIndex(root)
    index.index(progress=False)
    memory = index.memory(path=memory_path)
    memory.add("the ledger is reconciled every night by the batch job")
    before = [h.path for h in index.search("TokenStore", limit=3)]
    parents = index._native

    def child():
        try:
            parents.generation()
            refused = None
        except Exception as exc:
            refused = f"{type(exc).__name__}: {exc}"
        (root / "src/shop/ledger.py").write_text(
            "def reconcile_ledger_entries(ledger):\\n    return sorted(ledger)\\n"
        )
        report = index.index(progress=False)
        found = [h.path for h in index.search("reconcile_ledger_entries", limit=3)]
        memory.add("statements arrive from the bank as CSV files at six")
        remembered = sorted(h.snippet for h in memory.search("bank statements ledger", limit=5))
        index.close()
        memory.close()
        return {
            "refused": refused,
            "parsed": report.files_parsed,
            "found": found,
            "remembered": remembered,
        }

    held, release = threading.Event(), threading.Event()

    def hold_the_lock():
        with index._lock:
            held.set()
            release.wait()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    held.wait()
    result = in_forked_child(child)
    release.set()
    holder.join()
    after = {
        "found": [h.path for h in index.search("reconcile_ledger_entries", limit=3)],
        "health": index.health().ok,
        "records": len(memory.records()),
    }
    (root / "src/shop/more.py").write_text("def close_the_month():\\n    return 1\\n")
    after["parsed"] = index.index(progress=False).files_parsed
    memory.add("the month is closed on the first working day")
    after["records_then"] = len(memory.records())
    memory.close()
    index.close()
    print(json.dumps({"before": before, "child": result, "after": after}))
    """
)


def test_a_forked_child_uses_the_index_and_memory_it_inherited(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    """Objects opened before a fork go on working in the child, which opens its own files
    (the parent's SQLite connections are neither used nor closed there, and a lock held by
    one of the parent's threads does not hold the child up); the parent is unharmed."""
    root = make_repo(SAMPLE_PROJECT)
    outcome = run_script(
        FORK_WITH_OPEN_HANDLES,
        root,
        tmp_path / "memory.db",
        env={"CODERECALL_EMBEDDING_PROVIDER": "none"},
    )
    assert outcome["before"][0] == "src/shop/auth.py"
    child = outcome["child"]
    assert child is not None, "the forked child never finished (a lock it inherited held?)"
    assert child["refused"].startswith("StoreError: this index handle was opened by process")
    assert child["parsed"] == 1
    assert child["found"][0] == "src/shop/ledger.py"
    assert len(child["remembered"]) == 2
    after = outcome["after"]
    assert after["found"][0] == "src/shop/ledger.py"
    assert after["health"] is True
    assert after["records"] == 2
    assert after["parsed"] == 1
    assert after["records_then"] == 3


# A child forked while its parent holds the write lease and the watch mark, and which then
# lives on (a worker): once the parent lets go, both must be free, though the child shares
# the open files the locks belong to. Prints what the parent then finds.
FORK_WHILE_LOCKED = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from coderecall._errors import IndexBusyError
    from coderecall._lease import WatchMark, WriteLease, watched

    folder = Path(sys.argv[1])
    mark = WatchMark(folder)
    mark.hold()
    read, write = os.pipe()
    started, running = os.pipe()
    with WriteLease(folder).hold():
        pid = os.fork()
        if pid == 0:  # its fork handlers have run by now
            os.write(running, b"x")
            os.read(read, 1)  # lives until the parent is done
            os._exit(0)
    os.read(started, 1)
    mark.release()
    try:
        with WriteLease(folder).hold(wait=False):
            lease = "free"
    except IndexBusyError as exc:
        lease = str(exc)
    outcome = {"lease": lease, "watched": watched(folder)}
    os.write(write, b"x")
    os.waitpid(pid, 0)
    print(json.dumps(outcome))
    """
)


def test_a_forked_child_does_not_keep_its_parents_locks(tmp_path: Path) -> None:
    outcome = run_script(FORK_WHILE_LOCKED, tmp_path)
    assert outcome == {"lease": "free", "watched": False}


BROAD_QUERY = "handle parse request retries"


def handlers(make_repo: MakeRepo) -> Path:
    """600 files whose every chunk matches :data:`BROAD_QUERY`: postings long enough to be
    walked by two threads."""
    files = {
        f"handlers/mod_{i}.py": "".join(
            f"def handle_{i}_{j}(request):\n    return parse_request(request, retries={j})\n\n\n"
            for j in range(12)
        )
        for i in range(600)
    }
    return make_repo(files)


def run_script(
    script: str, *args: object, timeout: float = 180, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """The JSON a script prints, run in a fresh interpreter with ``env`` added."""
    run = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
        env=dict(os.environ, **(env or {})),
    )
    outcome: dict[str, Any] = json.loads(run.stdout)
    return outcome


def run_fork_after_query(root: Path, **env: str) -> dict[str, Any]:
    return run_script(FORK_AFTER_QUERY, root, BROAD_QUERY, env=env)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the threads in /proc")
def test_a_forked_child_opens_and_searches_without_the_threads_it_did_not_inherit(
    make_repo: MakeRepo,
) -> None:
    """A child forked after its parent opened an index and ran a broad query (postings
    walked by a second thread) inherits the native pools without their threads: it must
    open the index and search all the same."""
    outcome = run_fork_after_query(handlers(make_repo))
    assert len(outcome["parent"]) == 10
    if (os.cpu_count() or 1) > 1:
        assert outcome["helper"], "the broad query did not start a query helper"
    assert outcome["child"] is not None, "the forked child's search never returned"
    assert outcome["child"] == outcome["parent"]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the threads in /proc")
def test_rayon_num_threads_one_keeps_indexing_and_queries_on_one_thread(
    make_repo: MakeRepo,
) -> None:
    """`RAYON_NUM_THREADS=1`: one pool thread and no query helper, with the same answers."""
    root = handlers(make_repo)
    outcome = run_fork_after_query(root, RAYON_NUM_THREADS="1")
    assert not outcome["helper"]
    # The main thread (named after the interpreter) and one pool thread.
    threads = outcome["threads"]
    assert [n for n in threads if n.startswith("coderecall-")] == ["coderecall-0"]
    assert len(threads) == 2, threads
    with CodeIndex(root) as index:
        hits = [[h.path, h.start_line] for h in index.search(BROAD_QUERY, limit=10)]
    assert outcome["parent"] == hits
    assert outcome["child"] == hits


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the threads in /proc")
def test_a_forked_child_embeds_builds_graphs_and_remembers_like_its_parent(
    static_model: Path, minilm: Path, tmp_path: Path
) -> None:
    """Every parallel path (embedding with both engines, the vector graph, the call graph, a
    memory store's analysis) runs on threads this library names and rebuilds after a fork,
    never on rayon's global pool, which a child inherits without its threads: a child of a
    process that had indexed with a static model waited forever for its first embedding."""
    outcome = run_script(
        FORK_AFTER_EVERYTHING,
        static_model,
        minilm,
        tmp_path,
        timeout=300,
        # numpy's OpenBLAS would start a thread of its own (it handles forks itself).
        env={"OPENBLAS_NUM_THREADS": "1"},
    )
    parent = outcome["parent"]
    assert len(parent["hits"]) == 5
    assert all("semantic" in channels for *_, channels in parent["hits"])
    assert parent["callers"] == ["pkg/mod_3.py:6"]  # step_3_1 calls it
    assert parent["memory"][0] >= 64, "too few records for a parallel analysis"
    assert parent["memory"][1]
    # The main thread, and otherwise only the library's own pools.
    others = [name for name in outcome["threads"] if not name.startswith("coderecall-")]
    assert len(others) == 1, outcome["threads"]
    assert outcome["child"] is not None, "the forked child never finished"
    assert outcome["child"] == parent
