"""Retrieval quality of coderecall against BM25 windows and ripgrep on pinned corpora.

    python -m benches.quality [--quick] [--projects a,b] [--json]
                              [--family doc|question|symbol|declaration|message|constant]
                              [--ablate RULE[,RULE+RULE...]] [--cap N] [--seed N] [--cache DIR]

Prints markdown tables (or JSON with ``--json``); progress goes to stderr. Exit 0 on success,
1 with a one-line message on failure, 2 on usage errors. See ``benches/quality/README.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benches import corpora
from benches.quality.baselines import (
    BM25Windows,
    Hit,
    build_bm25,
    ripgrep,
    ripgrep_search,
)
from benches.quality.metrics import Outcome, chunk_rank, file_rank, result_lines
from benches.quality.queries import (
    CONSTANT,
    DECLARATION,
    DOC,
    FAMILIES,
    MESSAGE,
    QUESTION,
    SYMBOL,
    DocTarget,
    Query,
    declaration_queries,
    make_copy,
    question_queries,
    sample_constant,
    sample_doc,
    sample_message,
    sample_symbol,
    source_files,
)
from benches.quality.report import ProjectInfo, Record, markdown, to_json
from coderecall import CodeIndex, learn_model, load_embedder
from coderecall import Error as CoderecallError
from coderecall._embedding import local_model_id
from coderecall._learn import learned_summary
from coderecall._models import describe, find_model

SEED = 20240601
CAP = 60
QUICK_CAP = 20
LIMIT = 10
VERSION = 1
"""Bump when sampling or blanking changes, so cached copies are not reused."""


class BenchError(Exception):
    """A failure worth one clear line (missing corpus module, unknown rule, ...)."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benches.quality", description=__doc__.split("\n")[0] if __doc__ else ""
    )
    parser.add_argument("--quick", action="store_true", help="the quick corpora, fewer queries")
    parser.add_argument("--projects", help="comma-separated corpus names (default: all)")
    parser.add_argument("--family", choices=FAMILIES, help="run one query family only")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument(
        "--ablate",
        default="",
        help="comma-separated ranking rules to disable, one extra row each; join with + "
        "to disable several together, RULE=VALUE to set a factor instead "
        "(exact_symbol,path_terms+path_match,exact_case=2)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="MODEL",
        help="embedding model (folder or cached name): one hybrid row per model (repeatable)",
    )
    parser.add_argument(
        "--fusion",
        default="",
        metavar="W[,W...]",
        help="semantic weights for the --model rows, one row each (default: the engine's own)",
    )
    parser.add_argument(
        "--learn",
        type=int,
        default=0,
        metavar="CHUNKS",
        help="fit each static --model to --teacher on this many chunks of each project's "
        "blanked copy first (coderecall.learn_model), and rank with the fitted model",
    )
    parser.add_argument("--teacher", metavar="MODEL", help="the transformer for --learn")
    parser.add_argument("--cap", type=int, help=f"queries per project and family ({CAP})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"sampling seed ({SEED})")
    parser.add_argument("--cache", type=Path, help="cache folder for corpora and copies")
    args = parser.parse_args(argv)
    if args.cap is None:
        args.cap = QUICK_CAP if args.quick else CAP
    if args.cap < 1:
        parser.error("--cap must be at least 1")
    try:
        args.fusion = [float(w) for w in args.fusion.split(",") if w.strip()]
    except ValueError:
        parser.error("--fusion takes comma-separated numbers")
    if any(not 0.0 <= w <= 1.0 for w in args.fusion):
        parser.error("--fusion weights lie between 0 and 1")
    if args.fusion and not args.model:
        parser.error("--fusion weighs the --model rows: name at least one --model")
    if args.learn < 0 or bool(args.learn) != bool(args.teacher):
        parser.error("--learn CHUNKS and --teacher MODEL go together")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        log("quality: interrupted")
        return 130
    except BenchError as exc:
        log(f"quality: {exc}")
        return 1
    except (CoderecallError, OSError, RuntimeError, ValueError) as exc:
        log(f"quality: {type(exc).__name__}: {exc}")
        return 1


def run(args: argparse.Namespace) -> int:
    cache: Path = args.cache or corpora.default_cache()
    names = [n.strip() for n in args.projects.split(",") if n.strip()] if args.projects else None
    families = (args.family,) if args.family else FAMILIES
    ablations = [spec.strip() for spec in args.ablate.split(",") if spec.strip()]
    started = time.perf_counter()
    notes: list[str] = []

    def fetch_log(message: str) -> None:
        """Substitutions belong in the output, not only in the progress log."""
        log(message)
        if "substitut" in message:
            notes.append(message)

    try:
        fetched = corpora.fetch(names, quick=args.quick, cache=cache, log=fetch_log)
    except Exception as exc:  # the corpus module's own errors vary: report any in one line
        raise BenchError(f"fetching the corpora failed: {type(exc).__name__}: {exc}") from exc
    if not fetched:
        raise BenchError("no corpus to run")
    rg = ripgrep()
    if rg is None:
        notes.append("ripgrep (`rg`) is not installed: its row is skipped (apt install ripgrep)")
    projects: list[ProjectInfo] = []
    records: list[Record] = []
    for corpus in fetched:
        info = ProjectInfo(
            corpus.name, corpus.language, corpus.version, corpus.source, corpus.archive_sha256
        )
        projects.append(info)
        records += run_project(corpus, info, families, args, cache, rg, ablations, notes)
    seconds = time.perf_counter() - started
    notes.append(
        f"{len(records)} results in {seconds:.0f} s; seed {args.seed}, cap {args.cap} per "
        f"project and family; BM25 windows: 40 lines, non-overlapping; averages are over "
        f"queries (micro)"
    )
    settings = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "python": platform.python_version(),
        "seed": args.seed,
        "cap": args.cap,
        "quick": args.quick,
        "families": list(families),
        "ablations": ablations,
        "seconds": seconds,
    }
    if args.json:
        print(json.dumps(to_json(projects, records, notes, settings), indent=1))
    else:
        print(f"# Retrieval quality ({settings['date']}, {settings['machine']})\n")
        print(markdown(projects, records, notes), end="")
    return 0


def run_project(
    corpus: corpora.Corpus,
    info: ProjectInfo,
    families: Sequence[str],
    args: argparse.Namespace,
    cache: Path,
    rg: str | None,
    ablations: Sequence[str],
    notes: list[str],
) -> list[Record]:
    """Sample, blank, index, and run every system on one corpus."""
    name = corpus.name
    root = corpus.root
    log(f"[{name}] sampling queries from {root}")
    files = source_files(root)
    queries: list[Query] = []
    edits: dict[str, list[DocTarget]] = {}
    if DOC in families or QUESTION in families:
        doc, edits, candidates = sample_doc(name, files, args.cap, args.seed)
        if DOC in families:
            queries += doc
            info.candidates[DOC] = candidates
        if QUESTION in families:
            queries += question_queries(name, doc, args.seed)
            info.candidates[QUESTION] = candidates
    if MESSAGE in families:
        blanked = {
            (rel, line)
            for rel, targets in edits.items()
            for t in targets
            for line in range(t.doc_start, t.doc_start + len(t.replacement))
        }
        message, candidates = sample_message(name, files, args.cap, args.seed)
        queries += [q for q in message if (q.path, q.ranges[0][0]) not in blanked]
        info.candidates[MESSAGE] = candidates
    if CONSTANT in families:
        constant, candidates = sample_constant(name, files, args.cap, args.seed)
        queries += constant
        info.candidates[CONSTANT] = candidates
    if SYMBOL in families or DECLARATION in families:
        symbol, candidates = sample_symbol(name, files, args.cap, args.seed)
        if SYMBOL in families:
            queries += symbol
            info.candidates[SYMBOL] = candidates
        if DECLARATION in families:
            declared = declaration_queries(symbol)
            queries += declared
            info.candidates[DECLARATION] = len(declared)
    key = hashlib.sha256(
        json.dumps(
            [
                VERSION,
                corpus.archive_sha256,
                str(root),
                sorted((p, [t.doc_start for t in ts]) for p, ts in edits.items()),
            ]
        ).encode()
    ).hexdigest()[:12]
    work = cache / "quality" / f"{name}-{key}"
    _drop_stale_copies(work)
    tree = work / "tree"
    log(f"[{name}] blanked copy at {tree} ({sum(map(len, edits.values()))} doc comments)")
    make_copy(root, tree, edits)

    # The lexical row stays lexical whatever models the user's cache holds; --model adds rows.
    config = {"index_dir": _index_dir(work), "embedding": {"provider": "none"}}
    with CodeIndex(tree, config, force=True) as index:
        started = time.perf_counter()
        # Every file is read again, but content the index already holds keeps its chunks (and
        # vectors): the index belongs to one build of the native module.
        index.index(force=True, progress=False)
        info.index_seconds = time.perf_counter() - started
        native = index._open()
        indexed = {p for p, (_, _, reason) in native.file_stats().items() if reason is None}
        info.files = len(indexed)
        kept = [q for q in queries if q.path in indexed]
        if len(kept) < len(queries):
            notes.append(f"{name}: {len(queries) - len(kept)} queries target unindexed files")
        for family in families:
            info.queries[family] = sum(1 for q in kept if q.family == family)
            # Declarations are the symbol family's plain names: fewer by construction.
            if family != DECLARATION and info.queries[family] < args.cap:
                notes.append(
                    f"{name}: {info.queries[family]} {family} queries, fewer than the cap "
                    f"{args.cap} (only {info.candidates[family]} candidates)"
                )
        log(
            f"[{name}] {info.files} files indexed in {info.index_seconds:.1f} s; "
            f"{len(kept)} queries"
        )

        def coderecall(query: str) -> list[Hit]:
            hits = index.search(query, limit=LIMIT, with_content=False)
            return [(h.path, h.start_line, h.end_line) for h in hits]

        coderecall("warm up")
        records = evaluate("coderecall", coderecall, kept)
        records += run_ablations(native, coderecall, kept, ablations, notes)
        for model in args.model:
            given = Path(model).name
            if args.learn:
                model, fit = _fitted(model, args.teacher, tree, work, args.learn)
                log(f"[{name}] fitted {model.name}: {fit}")
            embedder = load_embedder(model)
            label = f"coderecall+{embedder.kind}" + ("-learned" if args.learn else "")
            if len(args.model) > 1:  # two models of one kind must not share their rows
                label += f" {given}"
            assert embedder.path is not None  # a local model
            # Named by the model's files, not its path: a model distilled again into the same
            # folder must not reuse the cached copy's old vectors.
            model_id = local_model_id(describe(embedder.path), embedder.dims, embedder.recipe)
            native.set_embedder(embedder, model_id)
            started = time.perf_counter()
            embedded = native.embed_pending()
            log(
                f"[{name}] {label}: {embedded} chunks embedded in "
                f"{time.perf_counter() - started:.1f} s"
            )
            for weight in args.fusion or [None]:
                if weight is not None:
                    native.set_embedder(embedder, model_id, weight=weight)
                row = label if weight is None else f"{label} w={weight:g}"
                coderecall("warm up")
                records += evaluate(row, coderecall, kept)

    started = time.perf_counter()
    bm25 = build_bm25(tree, indexed)
    info.windows = len(bm25.windows)
    log(f"[{name}] BM25 over {info.windows} windows built in {time.perf_counter() - started:.1f} s")
    records += evaluate("bm25-windows", _bm25_search(bm25), kept)
    if rg is not None:
        records += evaluate(
            "ripgrep",
            lambda q: ripgrep_search(rg, tree, q, indexed, LIMIT),
            kept,
            chunk_level=False,
        )
    return records


def _fitted(
    model: str | Path, teacher: str, tree: Path, work: Path, samples: int
) -> tuple[Path, str]:
    """``model`` fitted to ``teacher`` on ``samples`` chunks of ``tree``, kept in ``work``
    under the names of both models' files (fitting again only when either changes)."""
    ids = [local_model_id(describe(find_model(m)), 0) for m in (model, teacher)]
    key = hashlib.sha256("|".join(ids).encode()).hexdigest()[:12]
    dst = work / f"learned-{samples}-{key}"
    if not dst.is_dir():
        learn_model(model, teacher, dst, corpus=tree, samples=samples)
    fit = learned_summary(dst)
    if fit is None:
        raise BenchError(f"{dst} records no fit: remove it to fit again")
    return dst, (
        f"{fit['texts']} texts, held-out cosine {fit['cosine_before']:.3f} -> "
        f"{fit['cosine_after']:.3f}, ridge {fit['ridge']}"
    )


def _native_build() -> str:
    """A digest of the native module's file: what chunks and ranks."""
    from coderecall import _native

    digest = hashlib.blake2b(digest_size=6)
    with open(_native.__file__, "rb") as library:
        for block in iter(lambda: library.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _index_dir(work: Path) -> Path:
    """The project's index for this build of the native module; those of other builds go.
    A file's chunks are reused while the chunker's version is unchanged, and that version
    does not move while the chunker is being changed: an index kept across builds would rank
    chunks of an earlier one."""
    build = _BUILD.setdefault("native", _native_build())
    index = work / f"index-{build}"
    if work.is_dir():
        for entry in work.iterdir():
            if entry.name.startswith("index") and entry != index and entry.is_dir():
                shutil.rmtree(entry)
    return index


_BUILD: dict[str, str] = {}


def _drop_stale_copies(work: Path) -> None:
    """Remove this project's copies made for other query sets, so the cache does not grow."""
    name = work.name[: -len("-0123456789ab")]
    stale = re.compile(rf"{re.escape(name)}-[0-9a-f]{{12}}(\.complete)?")
    if not work.parent.is_dir():
        return
    for entry in work.parent.iterdir():
        if entry.name not in (work.name, f"{work.name}.complete") and stale.fullmatch(entry.name):
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()


def _bm25_search(bm25: BM25Windows) -> Callable[[str], list[Hit]]:
    return lambda query: bm25.search(query, LIMIT)


def evaluate(
    system: str,
    search: Callable[[str], list[Hit]],
    queries: Sequence[Query],
    *,
    chunk_level: bool = True,
) -> list[Record]:
    records = []
    for query in queries:
        started = time.perf_counter()
        hits = search(query.text)
        seconds = time.perf_counter() - started
        outcome = Outcome(
            chunk_rank(hits, query.path, query.ranges) if chunk_level else None,
            file_rank(hits, query.path),
            seconds,
            chunk_level,
            result_lines(hits) if chunk_level else None,
        )
        records.append(Record(system, query, outcome))
    return records


#: Ranking rules that 0 turns off: the additive neighbours' share, the phrase rule (1 + weight x
#: share), the per-file cap's overflow factor (0: the cap drops what lies past it), and the
#: horizon of folded windows (0: none fold).
OFF_AT_ZERO = frozenset({"neighbours", "per_file_overflow", "phrase", "fold_windows"})


def run_ablations(
    native: Any,
    search: Callable[[str], list[Hit]],
    queries: Sequence[Query],
    ablations: Sequence[str],
    notes: list[str],
) -> list[Record]:
    """Rows of coderecall with ranking rules disabled (a factor set to 1.0; see OFF_AT_ZERO).

    The weights live in the native core; ``set_weights`` changes them for this handle only
    and the originals are restored afterwards.
    """
    if not ablations:
        return []
    set_weights = getattr(native, "set_weights", None)
    get_weights = getattr(native, "weights", None)
    if set_weights is None or get_weights is None:
        note = "ablations unavailable: this build has no NativeIndex.set_weights"
        if note not in notes:
            notes.append(note)
        return []
    base = {str(k): float(v) for k, v in dict(get_weights()).items()}
    records: list[Record] = []
    for spec in ablations:
        changes = _weight_changes(spec, base)
        set_weights({**base, **changes})
        label = f"coderecall {spec}" if "=" in spec else f"coderecall -{spec}"
        try:
            records += evaluate(label, search, queries)
        finally:
            set_weights(base)
    return records


def _weight_changes(spec: str, known: dict[str, float]) -> dict[str, float]:
    """``rule+rule=value``: each rule off (see OFF_AT_ZERO), or set to the value given."""
    changes: dict[str, float] = {}
    for part in spec.split("+"):
        rule, given, value = part.partition("=")
        if rule not in known:
            raise BenchError(f"unknown ranking rule {rule!r}; known: {', '.join(known)}")
        try:
            changes[rule] = float(value) if given else (0.0 if rule in OFF_AT_ZERO else 1.0)
        except ValueError:
            raise BenchError(f"{part!r}: the value of a ranking rule is a number") from None
    return changes


if __name__ == "__main__":
    sys.exit(main())
