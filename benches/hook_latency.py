"""Latency of the lifecycle hooks as a host sees it: ``python -m benches.hook_latency [--quick]``.

Claude Code and Codex start ``coderecall hook EVENT`` as a new process for every prompt, tool
call and stop, and wait for its answer, so a hook's cost is its whole process: the
interpreter's start, coderecall's imports and the event's work. Each row runs one event N times
(20; 5 with ``--quick``) in a fresh git project with a fresh memory database, payloads in Claude
Code's format, timed from spawn to exit. Two rows without coderecall's work split that cost:
the bare interpreter (``python -c pass``) and ``import coderecall``. The last rows answer a
prompt from stores of a mature project (``SEEDED`` records, one of them on the prompt's
subject), each run in a new session, so that the prompt searches and recalls.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .speed.report import table
from .speed.run import load, machine, native_build
from .speed.stats import fmt_ms, median, percentile

RUNS = 20
QUICK_RUNS = 5
SEEDED = (300, 3_000)
SUBJECTS = [
    "cart",
    "checkout",
    "invoice",
    "webhook",
    "refund",
    "shipping",
    "tax",
    "warehouse",
    "login",
    "session",
    "cache",
    "queue",
    "report",
    "export",
    "import",
    "search",
    "email",
    "payment",
    "order",
    "customer",
    "product",
    "price",
    "stock",
]
KINDS = ("decision", "error-solution", "learned-pattern", "observation", "session-summary")
SESSION = "5d0c6a7e-2f1b-4e3d-9c8b-7a6f5e4d3c2b"
TOOL_OUTPUT = "\n".join(
    [f"tests/test_cart.py::test_{n} PASSED" for n in range(40)]
    + ["tests/test_cart.py::test_discount FAILED", "E   assert 90 == 81", "1 failed, 40 passed"]
)


def payloads(project: Path, transcript: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(command, payload)`` per row: what Claude Code sends for each event."""
    common = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
    }
    return [
        ("session-start", {**common, "hook_event_name": "SessionStart", "source": "startup"}),
        (
            "prompt",
            {
                **common,
                "hook_event_name": "UserPromptSubmit",
                "prompt": "The discount is applied twice when a coupon is reused; fix it.",
            },
        ),
        (
            "tool",
            {
                **common,
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "pytest tests/test_cart.py"},
                "tool_response": {"stdout": TOOL_OUTPUT, "stderr": "", "interrupted": False},
            },
        ),
        (
            "stop",
            {
                **common,
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "The coupon is now applied once per order.",
            },
        ),
        ("compact", {**common, "hook_event_name": "PreCompact", "trigger": "auto"}),
    ]


def timed(argv: Sequence[str], stdin: str, env: dict[str, str]) -> float:
    """Seconds from spawn to exit; a failing command stops the bench."""
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return seconds


def bench(runs: int, scratch: Path) -> list[tuple[str, list[float]]]:
    # `pip install` compiles a package's bytecode; a source checkout run with
    # PYTHONDONTWRITEBYTECODE set would compile every module in every hook instead.
    import compileall

    import coderecall

    compileall.compile_dir(Path(coderecall.__file__).parent, quiet=1)
    project = scratch / "shop"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    transcript = scratch / "transcript.jsonl"
    transcript.write_text("", encoding="utf-8")
    env = dict(os.environ, CODERECALL_MEMORY=str(scratch / "memory.db"))
    python = sys.executable
    rows: list[tuple[str, list[float]]] = [
        ("python -c pass", [timed([python, "-c", "pass"], "", env) for _ in range(runs)]),
        (
            "python -c 'import coderecall'",
            [timed([python, "-c", "import coderecall"], "", env) for _ in range(runs)],
        ),
    ]
    for command, payload in payloads(project, transcript):
        argv = [python, "-m", "coderecall", "hook", command]
        rows.append(
            (f"hook {command}", [timed(argv, json.dumps(payload), env) for _ in range(runs)])
        )
    prompt = dict(payloads(project, transcript)[1][1])
    argv = [python, "-m", "coderecall", "hook", "prompt"]
    for size in SEEDED:
        database = scratch / f"seeded-{size}.db"
        count = seed(project, database, size)
        env["CODERECALL_MEMORY"] = str(database)
        recalling = []
        for run in range(runs):
            prompt["session_id"] = f"{SESSION}-{size}-{run}"  # a new session: nothing shown yet
            recalling.append(timed(argv, json.dumps(prompt), env))
        rows.append((f"hook prompt, recalling from {count:,} records", recalling))
    return rows


def seed(project: Path, database: Path, size: int) -> int:
    """A mature project's memory: ``size`` records written on the subjects above, among them
    the one the benchmark's prompt recalls; how many the store kept (aging condenses old
    session summaries)."""
    import random

    from coderecall import MemoryStore

    rng = random.Random(7)
    with MemoryStore(project, path=database) as store:
        for i in range(size - 1):
            a, b, c = rng.sample(SUBJECTS, 3)
            store.add(
                f"Note {i}: the {a} module calls the {b} service before the {c} step runs.",
                KINDS[i % len(KINDS)],
            )
        store.add("A coupon is applied once per order: the cart keeps its discount.", "decision")
        return len(store.records())


def render(rows: list[tuple[str, list[float]]], runs: int) -> str:
    lines = [
        "## Hook latency\n",
        f"{machine()}; {native_build()}; {load()}\n",
        f"{runs} processes per row, each timed from spawn to exit; hooks in a fresh git project "
        "with a fresh memory database (no embedding model; the last rows' are seeded), payloads "
        "in Claude Code's format; "
        "coderecall's bytecode compiled first, as `pip install` does\n",
    ]
    body = []
    for label, seconds in rows:
        ms = [s * 1000 for s in seconds]
        body.append([label, fmt_ms(median(ms)), fmt_ms(percentile(ms, 95)), fmt_ms(max(ms))])
    lines.append(table(["process", "p50 ms", "p95 ms", "max ms"], body))
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benches.hook_latency", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs per row")
    parser.add_argument("--runs", type=int, help=f"runs per row (default {RUNS})")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    runs = args.runs or (QUICK_RUNS if args.quick else RUNS)
    with tempfile.TemporaryDirectory(prefix="coderecall-hook-bench-") as scratch:
        rows = bench(runs, Path(scratch))
    print(render(rows, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
