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
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

import coderecall._watch
from coderecall import CodeIndex, IndexReport, QueryError
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
    with index.watch() as watcher:
        assert watcher.wait_idle(TIMEOUT)
        assert paths_found(index, "compute_invoice_total") == {"src/shop/billing.py"}
        git(project, "checkout", "-q", "other")
        eventually(
            lambda: paths_found(index, "award_loyalty_points") == {"src/shop/loyalty.py"},
            "the other branch's file is searchable",
        )
        eventually(lambda: not paths_found(index, "compute_invoice_total"), "main's file left")
        settled(watcher)
        # HEAD moved: the whole tree was re-indexed, not only the files that changed.
        assert watcher.last_report is not None
        assert watcher.last_report.files_seen == index.status().files
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
    with CodeIndex(worktree, QUIET) as index, index.watch() as watcher:
        assert watcher.wait_idle(TIMEOUT)
        assert not index.index_dir.is_relative_to(worktree)  # shared, in the common dir
        assert not paths_found(index, "redeem_coupon_code")
        git(worktree, "checkout", "-q", "topic")
        eventually(
            lambda: paths_found(index, "redeem_coupon_code") == {"src/shop/coupons.py"},
            "the worktree's branch switch is seen",
        )
        settled(watcher)
        assert watcher.last_report is not None
        assert watcher.last_report.files_seen == index.status().files == len(SAMPLE_PROJECT) + 1
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


def test_a_failed_update_is_reported_and_watching_goes_on(
    project: Path, index: CodeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors: list[BaseException] = []
    reports: list[IndexReport] = []
    with index.watch(on_update=reports.append, on_error=errors.append) as watcher:
        assert watcher.wait_idle(TIMEOUT)
        real_index = index.index

        def failing(**kwargs: object) -> IndexReport:
            monkeypatch.setattr(index, "index", real_index)  # only once
            raise OSError(errno.EIO, "the disk hiccuped")

        monkeypatch.setattr(index, "index", failing)
        (project / "README.md").write_text("first change\n")
        eventually(lambda: bool(errors), "the failure is reported")
        assert isinstance(errors[0], OSError)
        (project / "README.md").write_text("a second change, about marmalade\n")
        eventually(lambda: paths_found(index, "marmalade") == {"README.md"}, "watching goes on")
        settled(watcher)
        # After a failure, the next update is a full one: what was published is unknown.
        assert reports[-1].files_seen == index.status().files
        assert watcher.updates == len(reports) == 2


def test_cli_watch_prints_a_line_per_update_and_stops_on_ctrl_c(project: Path) -> None:
    env = {**os.environ, "CODERECALL_EMBEDDING_PROVIDER": "none"}
    with subprocess.Popen(
        [sys.executable, "-m", "coderecall", "watch", str(project), "--debounce", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        first = read_line(process)
        (project / "src" / "shop" / "auth.py").write_text("def rotate_keys():\n    ...\n")
        second = read_line(process)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert f"watching {project}" in stderr
    assert re.fullmatch(r"\d\d:\d\d:\d\d indexed \d+ files? \(.*\) in \d+\.\d\d s\n", first)
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d indexed 1 file \(1 parsed, 0 removed\) in \d+\.\d\d s\n", second
    )


def test_cli_watch_json(project: Path) -> None:
    env = {**os.environ, "CODERECALL_EMBEDDING_PROVIDER": "none"}
    with subprocess.Popen(
        [sys.executable, "-m", "coderecall", "watch", "--json", "--debounce", "0.05"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        first = json.loads(read_line(process))
        (project / "web" / "cart.js").unlink()
        second = json.loads(read_line(process))
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert first["files_seen"] == len(SAMPLE_PROJECT)
    assert second["files_removed"] == 1
    assert "time" in second
