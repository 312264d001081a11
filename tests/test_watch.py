"""Watching: real git repositories, real file-system events, real indexing.

Nothing here asserts how fast anything is (the machine may be loaded): changes are awaited by
polling with a generous timeout, and only counts and contents are asserted.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

import coderecall._watch
from coderecall import CodeIndex, IndexReport, QueryError, RootNotFoundError, StoreError
from coderecall._lease import watched
from coderecall._watch import Watcher
from helpers import (
    GIT_ENV,
    SAMPLE_PROJECT,
    MakeRepo,
    git,
    large_project,
    read_line,
    write_files,
)

DEBOUNCE = 0.05
TIMEOUT = 10.0
QUIET = {"watch_debounce": DEBOUNCE, "embedding_provider": "none"}


def eventually(check: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:g} s: {what}")
        time.sleep(0.02)


def paths_found(index: CodeIndex, word: str) -> set[str]:
    """The files whose hits for ``word`` hold it (a search also ranks partial matches)."""
    return {hit.path for hit in index.search(word, limit=50) if word in (hit.content or "")}


def settled(watcher: Watcher, *, extra: float = 0.0) -> None:
    """Waits out the debounce (and what events may still be on their way), then the update."""
    time.sleep(watcher.debounce + 0.3 + extra)
    assert watcher.wait_idle(TIMEOUT), "the watcher did not settle"


@pytest.fixture
def project(make_repo: MakeRepo) -> Path:
    return make_repo(SAMPLE_PROJECT)


@pytest.fixture
def index(project: Path) -> Iterator[CodeIndex]:
    with CodeIndex(project, QUIET) as index:
        yield index


@pytest.fixture
def watcher(index: CodeIndex) -> Iterator[Watcher]:
    with index.watch() as watcher:
        assert watcher.wait_idle(TIMEOUT)
        yield watcher


def test_index_of_given_paths_looks_at_nothing_else(project: Path, index: CodeIndex) -> None:
    index.index(progress=False)
    (project / "src" / "shop" / "billing.py").write_text("def ledger_balance():\n    ...\n")
    (project / "web" / "cart.js").unlink()
    (project / "server" / "ratelimit.go").write_text("package server\n\nfunc Throttled() {}\n")
    report = index.index(
        progress=False, paths=["src/shop/billing.py", str(project / "web" / "cart.js")]
    )
    assert (report.files_seen, report.files_parsed, report.files_removed) == (1, 1, 1)
    assert paths_found(index, "ledger_balance") == {"src/shop/billing.py"}
    assert not paths_found(index, "addItemToCart")
    assert not paths_found(index, "Throttled")  # changed, but not given: not looked at
    report = index.index(progress=False, paths=["server"])  # a folder: all below it
    assert paths_found(index, "Throttled") == {"server/ratelimit.go"}
    (project / ".gitignore").write_text("docs/\n")
    report = index.index(progress=False, paths=["docs/deployment.md"])
    assert report.files_removed == 1  # ignored now: it leaves the index
    assert report.skipped == {"ignored": 1}
    with pytest.raises(QueryError, match="outside the root"):
        index.index(paths=["../elsewhere.py"])


def test_first_update_indexes_everything(index: CodeIndex, watcher: Watcher) -> None:
    assert watcher.updates == 1
    assert watcher.last_report is not None
    assert watcher.last_report.files_seen == index.status().files > 0
    assert paths_found(index, "compute_invoice_total") == {"src/shop/billing.py"}
    assert not watcher.polling


def test_edited_file_becomes_searchable(project: Path, index: CodeIndex, watcher: Watcher) -> None:
    billing = project / "src" / "shop" / "billing.py"
    billing.write_text("def settle_the_quarterly_ledger(total):\n    return total\n")
    eventually(
        lambda: paths_found(index, "settle_the_quarterly_ledger") == {"src/shop/billing.py"},
        "the edit is searchable",
    )
    eventually(lambda: not paths_found(index, "compute_invoice_total"), "the old code is gone")
    settled(watcher)
    report = watcher.last_report
    assert report is not None
    # Only the saved file was looked at: no walk of the tree.
    assert (report.files_seen, report.files_parsed) == (1, 1)
    assert watcher.last_flush_started is not None


def test_new_and_deleted_files(project: Path, index: CodeIndex, watcher: Watcher) -> None:
    files = index.status().files
    write_files(project, {"src/shop/shipping/rates.py": "def shipping_rate_for(zone):\n    ...\n"})
    eventually(
        lambda: paths_found(index, "shipping_rate_for") == {"src/shop/shipping/rates.py"},
        "the new file in a new folder is searchable",
    )
    (project / "web" / "cart.js").unlink()
    eventually(lambda: not paths_found(index, "addItemToCart"), "the deleted file is gone")
    settled(watcher)
    assert index.status().files == files


def test_burst_is_coalesced(project: Path, index: CodeIndex) -> None:
    # A longer debounce than elsewhere: writing 300 files must fit in one quiet window
    # even on a loaded machine.
    with index.watch(debounce=0.5) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        before = watcher.updates
        write_files(
            project,
            {
                f"gen/mod_{n}.py": f"def generated_function_{n}():\n    return {n}\n"
                for n in range(300)
            },
        )
        eventually(
            lambda: paths_found(index, "generated_function_299") == {"gen/mod_299.py"},
            "the burst is indexed",
        )
        settled(watcher)
        assert 1 <= watcher.updates - before <= 3
        assert paths_found(index, "generated_function_0") == {"gen/mod_0.py"}
        assert index.status().files == len(SAMPLE_PROJECT) + 300


def test_ignored_files_cause_no_update(project: Path, index: CodeIndex, watcher: Watcher) -> None:
    before = watcher.updates
    write_files(project, {"debug.log": "x\n", "build/out.py": "def built(): ...\n"})
    (project / "src" / "trace.log").write_text("x\n")
    (project / "debug.log").unlink()
    (index.index_dir / "scratch.txt").write_text("x\n")  # our own folder
    git(project, "status")  # rewrites .git/index: git internals
    settled(watcher, extra=DEBOUNCE * 4)
    assert watcher.updates == before
    assert not paths_found(index, "built")


def test_index_folder_inside_the_root_causes_no_loop(project: Path) -> None:
    config = {**QUIET, "index_dir": str(project / "idx")}
    with CodeIndex(project, config) as index, index.watch() as watcher:
        assert watcher.wait_idle(TIMEOUT)
        (project / "README.md").write_text("# The shop\n\nA cheerful storefront.\n")
        eventually(lambda: paths_found(index, "storefront") == {"README.md"}, "the edit")
        settled(watcher)
        updates = watcher.updates
        # Each update writes into the index folder; none of that may start another one.
        settled(watcher, extra=DEBOUNCE * 4)
        assert watcher.updates == updates == 2


def test_gitignore_change_reindexes_everything(
    project: Path, index: CodeIndex, watcher: Watcher
) -> None:
    assert paths_found(index, "ShoppingCart") == {"web/cart.js"}
    with (project / ".gitignore").open("a") as file:
        file.write("web/\n")
    eventually(lambda: not paths_found(index, "ShoppingCart"), "web/ is ignored now")
    settled(watcher)
    assert watcher.last_report is not None
    assert watcher.last_report.files_seen == len(SAMPLE_PROJECT) - 1


def test_branch_switch_shows_the_new_branch(project: Path, index: CodeIndex) -> None:
    git(project, "checkout", "-q", "-b", "other")
    (project / "src" / "shop" / "billing.py").unlink()
    write_files(project, {"src/shop/loyalty.py": "def award_loyalty_points(order):\n    ...\n"})
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "loyalty instead of billing")
    git(project, "checkout", "-q", "main")
    reports: list[IndexReport] = []
    with index.watch(on_update=reports.append) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        assert paths_found(index, "compute_invoice_total") == {"src/shop/billing.py"}
        before = len(reports)
        git(project, "checkout", "-q", "other")
        eventually(
            lambda: paths_found(index, "award_loyalty_points") == {"src/shop/loyalty.py"},
            "the other branch's file is searchable",
        )
        eventually(lambda: not paths_found(index, "compute_invoice_total"), "main's file left")
        settled(watcher)
        # HEAD moved: the whole tree was re-indexed, not only the files that changed (events
        # the checkout's writes send after that update may add a small one).
        files = index.status().files
        assert any(report.files_seen == files for report in reports[before:]), reports
        git(project, "checkout", "-q", "main")
        eventually(lambda: not paths_found(index, "award_loyalty_points"), "back on main")
        eventually(
            lambda: paths_found(index, "compute_invoice_total") == {"src/shop/billing.py"},
            "main's file is back",
        )


def test_branch_switch_in_a_linked_worktree(project: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "worktree"
    git(project, "worktree", "add", "-q", "-b", "topic", str(worktree))
    write_files(worktree, {"src/shop/coupons.py": "def redeem_coupon_code(code):\n    ...\n"})
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", "coupons")
    git(worktree, "checkout", "-q", "-b", "plain", "main")
    reports: list[IndexReport] = []
    with CodeIndex(worktree, QUIET) as index, index.watch(on_update=reports.append) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        assert not index.index_dir.is_relative_to(worktree)  # shared, in the common dir
        assert not paths_found(index, "redeem_coupon_code")
        switched = len(reports)
        git(worktree, "checkout", "-q", "topic")
        eventually(
            lambda: paths_found(index, "redeem_coupon_code") == {"src/shop/coupons.py"},
            "the worktree's branch switch is seen",
        )
        settled(watcher)
        assert index.status().files == len(SAMPLE_PROJECT) + 1
        # A whole update (and perhaps a small one for the checkout's late events).
        assert any(r.files_seen == len(SAMPLE_PROJECT) + 1 for r in reports[switched:]), reports
        # The main worktree's own HEAD is not this view's business.
        before = watcher.updates
        git(project, "checkout", "-q", "-b", "elsewhere")
        settled(watcher, extra=DEBOUNCE * 4)
        assert watcher.updates == before


def fast_import_commits(root: Path, branch: str, parent: str, count: int) -> None:
    """``count`` commits on ``branch`` after ``parent``, each rewriting one of 50 files, made
    by one ``git fast-import`` (500 ``git commit`` runs would take most of a minute)."""
    chunks = []
    for n in range(count):
        message = f"step {n}".encode()
        content = f"def feature_{n % 50}_v{n}():\n    return {n}\n".encode()
        chunks += [
            f"commit refs/heads/{branch}\n".encode(),
            f"committer Test <test@example.com> {1_700_000_000 + n} +0000\n".encode(),
            f"data {len(message)}\n".encode() + message + b"\n",
            f"from {parent}\n".encode() if n == 0 else b"",
            f"M 100644 inline feature/f{n % 50}.py\n".encode(),
            f"data {len(content)}\n".encode() + content + b"\n",
        ]
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=root,
        input=b"".join(chunks),
        env={**os.environ, **GIT_ENV},
        check=True,
    )


@pytest.mark.slow
def test_rebase_of_500_commits_ends_in_the_right_view(
    project: Path, index: CodeIndex, tmp_path: Path
) -> None:
    base = git(project, "rev-parse", "HEAD").strip()
    fast_import_commits(project, "feature", base, 500)
    write_files(project, {"src/shop/tax.py": "def regional_tax_table():\n    ...\n"})
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "diverge")
    git(project, "checkout", "-q", "feature")
    with index.watch() as watcher:
        assert watcher.wait_idle(TIMEOUT)
        assert not paths_found(index, "regional_tax_table")
        git(project, "rebase", "-q", "main")
        eventually(
            lambda: paths_found(index, "regional_tax_table") == {"src/shop/tax.py"},
            "the rebased branch holds main's commit",
            timeout=60,
        )
        settled(watcher, extra=1.0)
        assert git(project, "status", "--porcelain") == ""
        with CodeIndex(project, {**QUIET, "index_dir": str(tmp_path / "fresh")}) as fresh:
            fresh.index(progress=False)
            assert index.status().files == fresh.status().files == len(SAMPLE_PROJECT) + 51
            assert index.status().languages == fresh.status().languages
            queries = [
                "regional_tax_table",
                "feature_7_v457",  # the last version of feature/f7.py
                "feature_7_v407",  # an earlier one: in neither
                "feature_49_v499",
                "compute_invoice_total",
                "refresh access token",
            ]
            for query in queries:
                assert paths_found(index, query) == paths_found(fresh, query), query
            assert paths_found(index, "feature_7_v457") == {"feature/f7.py"}
            assert not paths_found(index, "feature_7_v407")


def test_polling_when_forced(project: Path, index: CodeIndex) -> None:
    with Watcher(index, force_polling=True, poll_interval=0.1) as watcher:
        assert watcher.polling
        assert watcher.wait_idle(TIMEOUT)
        (project / "docs" / "deployment.md").write_text("# Deployment\n\nUse the blue lever.\n")
        eventually(lambda: paths_found(index, "lever") == {"docs/deployment.md"}, "polled")
        # What a poll looks at (watchdog's last snapshot): not what never matters.
        write_files(project, {"build/out.py": "x = 1\n"})  # ignored by the sample's rules
        settled(watcher, extra=0.2)
        assert watcher._observer is not None
        polled = {
            os.fsdecode(path)
            for emitter in watcher._observer.emitters
            for path in getattr(getattr(emitter, "_snapshot", None), "paths", ())
        }
        assert str(project / "docs" / "deployment.md") in polled
        assert str(project / ".git" / "HEAD") in polled
        assert not {path for path in polled if "/.git/objects" in path or "/build" in path}
        assert not {path for path in polled if path.startswith(str(index.index_dir))}


def test_polling_a_large_tree_waits_in_proportion_to_its_snapshots() -> None:
    # A tenth of a core at most: nine times as long idle as the last snapshot kept busy.
    assert coderecall._watch.poll_wait(0.01, 1.0) == 1.0
    assert coderecall._watch.poll_wait(0.5, 1.0) == pytest.approx(4.5)
    assert coderecall._watch.poll_wait(1000.0, 1.0) == 60.0  # still sees edits once a minute


def test_a_polling_watcher_spaces_its_snapshots_as_poll_wait_says(
    project: Path, index: CodeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshots: list[float] = []

    class Counting(Watcher):
        def _polled(self, folder: str | None) -> Iterator[os.DirEntry[str]]:
            if folder == str(index.root):
                snapshots.append(time.monotonic())
            return super()._polled(folder)

    monkeypatch.setattr(coderecall._watch, "poll_wait", lambda busy, interval: 0.6)
    with Counting(index, force_polling=True, poll_interval=0.05) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        time.sleep(2.0)
        start = time.monotonic()
        (project / "docs" / "deployment.md").write_text("# Deployment\n\nUse the blue lever.\n")
        eventually(lambda: paths_found(index, "lever") == {"docs/deployment.md"}, "polled")
    later = [t for t in snapshots if t >= start - 2.0]
    # Every 0.05 s would be some 40 snapshots in those two seconds; every 0.6 s, four.
    assert 2 <= len(later) <= 8, len(later)


def test_out_of_watches_falls_back_to_polling(
    project: Path,
    index: CodeIndex,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    started: list[BaseObserver] = []

    def exhausted(*, timeout: float = 1.0) -> BaseObserver:
        """An observer whose start fails as inotify does past fs.inotify.max_user_watches."""
        observer = PollingObserver(timeout=timeout)

        def start() -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

        monkeypatch.setattr(observer, "start", start)
        started.append(observer)
        return observer

    monkeypatch.setattr(coderecall._watch, "Observer", exhausted)
    with caplog.at_level(logging.WARNING, logger="coderecall"):
        watcher = Watcher(index, poll_interval=0.1).start()
    with watcher:
        assert started
        assert watcher.polling
        assert "polling" in caplog.text
        assert "inotify watch limit reached" in caplog.text
        assert watcher.wait_idle(TIMEOUT)
        (project / "docs" / "deployment.md").write_text("# Deployment\n\nUse the red lever.\n")
        eventually(lambda: paths_found(index, "lever") == {"docs/deployment.md"}, "polled")


def watch_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "coderecall-watch"]


def test_waiting_on_a_watcher_never_started_is_an_error(index: CodeIndex) -> None:
    watcher = Watcher(index)
    with pytest.raises(RuntimeError, match="never started"):
        watcher.wait_idle(TIMEOUT)
    watcher.stop()
    assert not watcher.wait_idle(TIMEOUT)


def test_stop_is_prompt_and_final(index: CodeIndex) -> None:
    watcher = index.watch()
    assert watcher.wait_idle(TIMEOUT)
    assert watch_threads()
    watcher.stop()
    assert not watch_threads()
    watcher.stop()  # idempotent


@pytest.mark.slow
def test_stop_cancels_a_running_update(make_repo: MakeRepo) -> None:
    root = make_repo(large_project(600))
    with CodeIndex(root, QUIET) as index:
        watcher = index.watch()
        deadline = time.monotonic() + TIMEOUT
        while not watcher._busy and time.monotonic() < deadline:
            time.sleep(0.001)
        watcher.stop()  # while the first full update runs
        assert not watch_threads()
        assert watcher.updates == 0


def test_a_file_system_without_locks_is_watched_all_the_same(
    project: Path, index: CodeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_locks(self: object) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(coderecall._lease.WatchMark, "hold", no_locks)
    with index.watch() as watcher:
        assert watcher.wait_idle(TIMEOUT)
        (project / "README.md").write_text("a change about marmalade\n")
        eventually(lambda: paths_found(index, "marmalade") == {"README.md"}, "watched")
        # Unmarked: queries from other processes catch up themselves.
        assert not watched(index.index_dir)


def test_no_locks_means_nobody_watches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "watch.lock").write_bytes(b"")

    def refused(fd: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(coderecall._lease, "try_lock", refused)
    assert not watched(tmp_path)

    def held(fd: int) -> None:
        raise BlockingIOError(errno.EWOULDBLOCK, "Resource temporarily unavailable")

    monkeypatch.setattr(coderecall._lease, "try_lock", held)
    assert watched(tmp_path)


def test_a_failed_update_is_reported_and_watching_goes_on(
    project: Path, index: CodeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors: list[BaseException] = []
    reports: list[IndexReport] = []
    with index.watch(on_update=reports.append, on_error=errors.append) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        assert watched(index.index_dir)
        real_index = index.index

        def failing(**kwargs: object) -> IndexReport:
            monkeypatch.setattr(index, "index", real_index)  # only once
            raise OSError(errno.EIO, "the disk hiccuped")

        monkeypatch.setattr(index, "index", failing)
        (project / "README.md").write_text("first change\n")
        eventually(lambda: bool(errors), "the failure is reported")
        assert isinstance(errors[0], OSError)
        # A failing watcher does not vouch for the index: queries catch up themselves.
        assert not watched(index.index_dir)
        (project / "README.md").write_text("a second change, about marmalade\n")
        eventually(lambda: paths_found(index, "marmalade") == {"README.md"}, "watching goes on")
        settled(watcher)
        # After a failure, the next update is a full one: what was published is unknown.
        assert reports[-1].files_seen == index.status().files
        assert watcher.updates == len(reports) == 2
        assert watched(index.index_dir)
    assert not watched(index.index_dir)


CLI_ENV = {**os.environ, "CODERECALL_EMBEDDING_PROVIDER": "none"}


def watch_cli(
    *options: str, cwd: Path | None = None, prefix: Sequence[str] = ()
) -> subprocess.Popen[str]:
    """``coderecall watch`` with a short debounce, lexical only, as a child process (run
    through ``prefix``: a namespace or lowered privileges)."""
    command = [sys.executable, "-m", "coderecall", "watch", *options, "--debounce", "0.05"]
    return subprocess.Popen(
        [*prefix, *command],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=CLI_ENV,
    )


def test_cli_watch_prints_a_line_per_update_and_stops_on_ctrl_c(project: Path) -> None:
    with watch_cli(str(project)) as process:
        first = read_line(process)
        (project / "src" / "shop" / "auth.py").write_text("def rotate_keys():\n    ...\n")
        second = read_line(process)
        stderr = interrupted(process)
    assert "Traceback" not in stderr
    assert f"watching {project}" in stderr
    assert re.fullmatch(r"\d\d:\d\d:\d\d indexed \d+ files? \(.*\) in \d+\.\d\d s\n", first)
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d indexed 1 file \(1 parsed, 0 removed\) in \d+\.\d\d s\n", second
    )


def test_cli_watch_json(project: Path) -> None:
    with watch_cli("--json", cwd=project) as process:
        first = json.loads(read_line(process))
        (project / "web" / "cart.js").unlink()
        second = json.loads(read_line(process))
        interrupted(process)
    assert first["files_seen"] == len(SAMPLE_PROJECT)
    assert second["files_removed"] == 1
    assert "time" in second


def interrupted(process: subprocess.Popen[str]) -> str:
    """Stops a watching process as Ctrl-C does; its stderr, once it exited with 130."""
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    return stderr


def fewer_inotify_watches(limit: int) -> list[str] | None:
    """A command prefix that runs a program with at most ``limit`` inotify watches, set only
    inside a private user namespace (nothing global changes); ``None`` where that fails."""
    script = f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$@"'
    prefix = ["unshare", "--user", "--map-root-user", "sh", "-c", script, "sh"]
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return prefix if probe.returncode == 0 else None


def edits_are_indexed(project: Path, files: dict[str, str], what: str) -> None:
    """Writes ``files``, each defining one function, and waits until each name is found."""
    write_files(project, files)
    names = [re.findall(r"def (\w+)", text)[0] for text in files.values()]
    with CodeIndex(project, QUIET) as index:
        eventually(lambda: all(paths_found(index, name) for name in names), what)


def test_watches_running_out_part_way_falls_back_to_polling(make_repo: MakeRepo) -> None:
    # Watchdog 7 raises the error of the root's watch only: with 8 watches for ~40 folders
    # (.git's included), most folders would be silently unwatched.
    prefix = fewer_inotify_watches(8)
    if prefix is None:
        pytest.skip("no user namespace to lower the inotify watch limit in")
    modules = {f"src/m{n}/mod.py": f"def before_{n}():\n    ...\n" for n in range(20)}
    project = make_repo(modules)
    with watch_cli(str(project), prefix=prefix) as process:
        read_line(process)
        edits_are_indexed(
            project,
            {f"src/m{n}/mod.py": f"def edited_{n}_x():\n    ...\n" for n in range(20)},
            "every edit is indexed",
        )
        stderr = interrupted(process)
    assert "folders got no watch" in stderr
    assert f"coderecall: polling {project}" in stderr


def test_watches_running_out_after_the_start_falls_back_to_polling(make_repo: MakeRepo) -> None:
    # Every folder has its watch at the start, with one to spare; folders made later go
    # past the limit, and watchdog says nothing when it cannot watch them.
    project = make_repo({"src/app.py": "def first():\n    ...\n"})
    with CodeIndex(project, QUIET) as index:
        index.index()
    folders = sum(len(dirs) for _, dirs, _ in os.walk(project)) + 1
    prefix = fewer_inotify_watches(folders + 1)
    if prefix is None:
        pytest.skip("no user namespace to lower the inotify watch limit in")
    with watch_cli(str(project), prefix=prefix) as process:
        read_line(process)
        edits_are_indexed(
            project,
            {f"pkg{n}/deep/mod.py": f"def before_{n}():\n    ...\n" for n in range(3)},
            "the new folders' files are indexed",
        )
        edits_are_indexed(
            project,
            {f"pkg{n}/deep/mod.py": f"def edited_{n}_y():\n    ...\n" for n in range(3)},
            "edits inside folders made after the start are indexed",
        )
        stderr = interrupted(process)
    assert "by polling every" in stderr
    assert "no watch for the new folder" in stderr


POLLING_WATCHER = """
import sys
from coderecall import CodeIndex
from coderecall._watch import Watcher

config = {"embedding_provider": "none", "watch_debounce": 0.05}
with CodeIndex(sys.argv[1], config) as index:
    show = lambda report: print(report.files_seen, flush=True)
    with Watcher(index, force_polling=True, poll_interval=0.1, on_update=show):
        sys.stdin.read()
"""


def test_polling_walks_no_symlink_cycle(project: Path) -> None:
    # os.stat would follow both links: a tree of 2**40 paths, and a start that never ends
    # (in a child process, which a failure can kill).
    (project / "a").mkdir()
    (project / "a" / "loop").symlink_to("..")
    (project / "a" / "self").symlink_to(".")
    with subprocess.Popen(
        [sys.executable, "-c", POLLING_WATCHER, str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=CLI_ENV,
    ) as process:
        assert int(read_line(process, TIMEOUT)) == len(SAMPLE_PROJECT)
        write_files(project, {"a/later.py": "def added_after_the_loop():\n    ...\n"})
        with CodeIndex(project, QUIET) as index:
            eventually(
                lambda: paths_found(index, "added_after_the_loop") == {"a/later.py"}, "polled"
            )
        _, stderr = process.communicate("", timeout=30)
    assert process.returncode == 0, stderr


def delete(root: Path) -> None:
    """``rm -rf``, whatever a watcher's update writes meanwhile."""
    while root.exists():
        shutil.rmtree(root, ignore_errors=True)


def test_a_deleted_root_stops_the_watcher_with_an_error(project: Path, index: CodeIndex) -> None:
    errors: list[BaseException] = []
    with index.watch(on_error=errors.append) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        assert not watcher.wait(0)
        delete(project)
        with pytest.raises(FileNotFoundError, match="was deleted or moved; watching stopped"):
            watcher.wait(TIMEOUT)
        assert watcher.error is errors[-1]
        assert isinstance(watcher.error, RootNotFoundError)  # a coderecall.Error too
        assert watcher.error.root == project
        eventually(lambda: not watch_threads(), "its thread ends")


def test_a_moved_root_stops_the_watcher_with_an_error(
    project: Path, index: CodeIndex, tmp_path: Path
) -> None:
    with index.watch() as watcher:
        assert watcher.wait_idle(TIMEOUT)
        project.rename(tmp_path / "moved")  # no event says so: the root's own check does
        with pytest.raises(FileNotFoundError, match=f"the root {project} was deleted or moved"):
            watcher.wait(TIMEOUT)


def test_cli_watch_exits_when_the_root_is_deleted(project: Path) -> None:
    with watch_cli(str(project)) as process:
        read_line(process)
        delete(project)
        try:
            _, stderr = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("the watcher went on without its root")
    assert process.returncode == 1, stderr
    error = f"coderecall: error: the root {project} was deleted or moved; watching stopped"
    assert stderr.splitlines()[-1] == error
    assert stderr.count(error) == 1
    assert "Traceback" not in stderr


def test_a_vanished_index_folder_is_a_store_error(project: Path, index: CodeIndex) -> None:
    index.index(progress=False)
    shutil.rmtree(index.index_dir)
    with pytest.raises(StoreError, match="was deleted or moved while in use"):
        index.index(progress=False)
    with CodeIndex(project, QUIET) as again:  # as the message says
        again.index(progress=False)
        assert paths_found(again, "compute_invoice_total") == {"src/shop/billing.py"}


def test_permission_and_time_changes_update_their_paths(
    project: Path, index: CodeIndex, watcher: Watcher
) -> None:
    # Root reads a chmod 000 file all the same (see the next test for what this is for):
    # what counts here is that such an event alone updates its path, and only it.
    before = watcher.updates
    os.chmod(project / "web" / "cart.js", 0o600)
    eventually(lambda: watcher.updates > before, "a chmod is an update")
    settled(watcher)
    assert watcher.last_report is not None
    assert watcher.last_report.files_seen == 1
    before = watcher.updates
    os.chmod(project / "src" / "shop", 0o700)  # a folder: what it holds is looked at again
    eventually(lambda: watcher.updates > before, "a folder's chmod is an update")
    settled(watcher)
    assert watcher.last_report is not None
    assert watcher.last_report.files_seen == sum(
        1 for name in SAMPLE_PROJECT if name.startswith("src/shop/")
    )


def test_touching_many_files_is_one_burst(project: Path, index: CodeIndex) -> None:
    write_files(project, {f"gen/mod_{n}.py": f"def made_{n}():\n    ...\n" for n in range(300)})
    # A debounce long enough for 300 touches to fit in one quiet window on a loaded machine.
    with index.watch(debounce=0.5) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        before = watcher.updates
        for path in (project / "gen").iterdir():
            os.utime(path)
        eventually(lambda: watcher.updates > before, "the touches are an update")
        settled(watcher)
        assert 1 <= watcher.updates - before <= 3
        assert watcher.last_report is not None
        assert watcher.last_report.files_parsed == 0  # same content: nothing to parse


def test_cli_watch_brings_back_what_is_readable_again(make_repo: MakeRepo) -> None:
    # Unreadable files need a process that permissions apply to: as root, one without the
    # capabilities that override them.
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv is needed to drop root's permission override")
        caps = "-dac_override,-dac_read_search"
        prefix = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]
    project = make_repo({"b.py": "def beta_one():\n    ...\n", "d/x.py": "def in_d():\n    ...\n"})
    with watch_cli(str(project), prefix=prefix) as process:
        read_line(process)
        # Saved unreadable, in one step (a rename): the update finds it unreadable.
        saved = project.parent / "b.py.new"
        saved.write_text("def beta_two():\n    ...\n")
        os.chmod(saved, 0)
        saved.rename(project / "b.py")
        assert "1 removed" in read_line(process, TIMEOUT)
        os.chmod(project / "b.py", 0o644)  # an attribute change, nothing else
        assert "1 parsed" in read_line(process, TIMEOUT)
        os.chmod(project / "d", 0)
        assert "1 removed" in read_line(process, TIMEOUT)
        os.chmod(project / "d", 0o755)
        read_line(process, TIMEOUT)
        with CodeIndex(project, QUIET) as index:
            assert paths_found(index, "beta_two") == {"b.py"}
            assert paths_found(index, "in_d") == {"d/x.py"}
        interrupted(process)
