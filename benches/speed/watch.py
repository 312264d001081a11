"""Edit-to-searchable latency under the watcher: ``python -m benches.speed.watch [--quick]``.

A generated tree of Python files (2,000; 200 with ``--quick``) in a temporary git repository
is watched as ``coderecall watch`` does. One file is then rewritten again and again (30 times;
10 with ``--quick``), each time defining a new unique identifier, and the benchmark times:

* after the debounce: from the moment the burst was over (the watcher's
  ``last_flush_started``, i.e. when its quiet time ended) to the first search that finds the
  identifier. This is the work the watcher does, and what the 100 ms target is about; the
  debounce is a setting, a wait by design, so it is reported beside it rather than in it.
* write to searchable: from the end of the write to the same search, debounce included.

Searches poll every millisecond from the main thread, as an agent's would while the watcher
works in its own. The native module is used as installed: a dev build (``pip install -e .``)
is slower than a release wheel, and the header says which one ran.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from coderecall import CodeIndex, IndexReport
from coderecall._watch import Watcher

from .report import table
from .run import load, machine, native_build
from .stats import fmt_ms, median, percentile
from .trees import generated_repo, module_path, with_marker

FILES = 2_000
QUICK_FILES = 200
EDITS = 30
QUICK_EDITS = 10
FUNCTIONS_PER_FILE = 12
TIMEOUT = 60.0
POLL = 0.001


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benches.speed.watch", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a small tree and few edits")
    parser.add_argument("--files", type=int, help=f"files in the tree (default {FILES:,})")
    parser.add_argument(
        "--debounce",
        type=float,
        help="quiet time in seconds (default: the watch-debounce setting, 0.3)",
    )
    return parser.parse_args(argv)


class Flushes:
    """Collects each update's burst-end time, in order, for the main thread to wait on."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._started: list[float] = []
        self.reports: list[IndexReport] = []
        self.watcher: Watcher | None = None

    def on_update(self, report: IndexReport) -> None:
        started = None if self.watcher is None else self.watcher.last_flush_started
        assert started is not None  # set before the watcher reports
        with self._cond:
            self._started.append(started)
            self.reports.append(report)
            self._cond.notify_all()

    def first_after(self, moment: float) -> float:
        """The burst end of the first update that began after ``moment``."""
        with self._cond:
            found = self._cond.wait_for(
                lambda: any(started > moment for started in self._started), TIMEOUT
            )
            if not found:
                raise TimeoutError("no update followed the edit")
            return next(started for started in self._started if started > moment)


def searchable(index: CodeIndex, word: str) -> float:
    """Polls the search until ``word`` is found; returns when (``perf_counter``)."""
    deadline = time.perf_counter() + TIMEOUT
    while time.perf_counter() < deadline:
        hits = index.search(word, limit=3)
        now = time.perf_counter()
        if any(word in (hit.content or "") for hit in hits):
            return now
        time.sleep(POLL)
    raise TimeoutError(f"{word} never became searchable")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    files = args.files or (QUICK_FILES if args.quick else FILES)
    edits = QUICK_EDITS if args.quick else EDITS
    header = f"{machine()}; {native_build()}; {load()}"
    with tempfile.TemporaryDirectory(prefix="coderecall-watch-bench-") as folder:
        root = Path(folder) / "tree"
        root.mkdir()
        generated_repo(root, files, FUNCTIONS_PER_FILE)
        target = module_path(root, 0)
        config: dict[str, object] = {"embedding_provider": "none"}
        if args.debounce is not None:
            config["watch_debounce"] = args.debounce
        after_debounce: list[float] = []
        after_write: list[float] = []
        flushes = Flushes()
        with CodeIndex(root, config) as index:
            watcher = Watcher(index, on_update=flushes.on_update)
            flushes.watcher = watcher
            with watcher:
                if not watcher.wait_idle(600):
                    raise TimeoutError("the first index did not finish")
                original = target.read_text(encoding="utf-8")
                for n in range(edits):
                    word, edited = with_marker(original, n)
                    target.write_text(edited, encoding="utf-8")
                    written = time.perf_counter()
                    found = searchable(index, word)
                    ended = flushes.first_after(written)
                    after_debounce.append((found - ended) * 1000)
                    after_write.append((found - written) * 1000)
                    if not watcher.wait_idle(TIMEOUT):
                        raise TimeoutError("the watcher did not settle")
                update_seconds = [report.seconds * 1000 for report in flushes.reports[1:]]
                debounce = watcher.debounce
                polling = watcher.polling
    rows = [
        [
            f"{files:,} Python files",
            f"{debounce * 1000:g} ms",
            str(edits),
            fmt_ms(median(after_debounce)),
            fmt_ms(percentile(after_debounce, 95)),
            fmt_ms(median(update_seconds)),
            fmt_ms(median(after_write)),
            fmt_ms(percentile(after_write, 95)),
        ]
    ]
    headers = [
        "tree",
        "debounce",
        "edits",
        "after debounce p50 ms",
        "p95 ms",
        "update p50 ms",
        "write to searchable p50 ms",
        "p95 ms",
    ]
    print("## Watch latency\n")
    print(header + ("; polling" if polling else "") + "\n")
    print(table(headers, rows))
    print(
        "\nafter debounce: from the end of the quiet time to the first search finding the"
        " edit; update: the watcher's index(paths=...) call alone; write to searchable:"
        " from the write, debounce included."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
