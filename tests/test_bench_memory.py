"""The memory benchmark's own parts on a made-up conversation in the LoCoMo format (never the
licensed data): evidence repair, the metrics at known ranks, the baselines, the context's
tokens, the whole run."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from benches.memory import __main__ as bench
from benches.memory.bm25 import BM25, tokenize
from benches.memory.data import (
    ENV,
    DataError,
    EvidenceCounts,
    default_path,
    load,
    normalise_evidence,
    parse_when,
)
from benches.memory.dense import Dense
from benches.memory.metrics import Outcome, outcome, summarize
from benches.memory.run import (
    BASELINE,
    DENSE_BASELINE,
    bm25_engine,
    context_tokens,
    dense_engine,
    has_vector_channel,
    run_system,
    store_engine,
)

from coderecall import Embedder

# --- evidence and dates -----------------------------------------------------------------------


def test_malformed_evidence_is_repaired_or_dropped() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D1:3"}
    raw = ["D8:6; D9:17", "D:11:26", "D", " D1:3 ", "D99:1", "D1:3", "D01:03"]
    found, counts = normalise_evidence(raw, known)
    assert found == ["D8:6", "D9:17", "D11:26", "D1:3"]  # each once, in order
    # Rewritten: the pair split at ';', the stray colon, the spaces, the leading zeros.
    assert counts.repaired == 4
    assert counts.invalid == 2  # "D" names nothing; D99:1 is not a turn of the conversation
    assert normalise_evidence([], known) == ([], EvidenceCounts())


def test_session_dates_are_utc() -> None:
    assert parse_when("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert parse_when("12:09 am on  1 January, 2024").hour == 0
    with pytest.raises(DataError):
        parse_when("yesterday")


def test_data_path_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_path(tmp_path / "repo") == tmp_path / "shared" / "data" / "locomo-dev.json"
    monkeypatch.setenv(ENV, str(tmp_path / "x.json"))
    assert default_path(tmp_path / "repo") == tmp_path / "x.json"
    with pytest.raises(DataError, match="no LoCoMo data"):
        load(tmp_path / "x.json")


# --- metrics ----------------------------------------------------------------------------------


def test_outcome_at_known_ranks() -> None:
    evidence = ["D1:2", "D2:5", "D3:1"]
    other: tuple[str, ...] = ("D9:9",)
    ranked = [other] * 20 + [("D3:1",)]
    ranked[3] = ("D2:4", "D2:5")  # a merged record: any of its turns counts, at rank 4
    ranked[14] = ("D1:2",)  # rank 15: inside Recall@20, outside Hit@10 / MRR@10
    got = outcome(evidence, ranked)
    assert got == Outcome(ranks=(4, 15, 21), evidence=3)
    assert (got.first, got.hit, got.reciprocal_rank) == (4, 1.0, 0.25)
    assert got.found(20) == 2  # D3:1 at rank 21 is not found
    assert [got.recall(k) for k in (5, 10, 20)] == pytest.approx([1 / 3, 1 / 3, 2 / 3])

    late = outcome(evidence, [("D9:9",)] * 10 + [("D1:2",)])
    assert (late.first, late.hit, late.reciprocal_rank) == (11, 0.0, 0.0)
    assert [late.recall(k) for k in (5, 10, 20)] == pytest.approx([0, 0, 1 / 3])
    missed = outcome(["D1:1"], [])
    assert (missed.first, missed.hit, missed.recall(20)) == (None, 0.0, 0.0)

    mean = summarize([got, late, missed, outcome(["D1:1", "D1:1"], [("D1:1",)])])
    assert mean.questions == 4
    assert mean.hit == pytest.approx(2 / 4)
    assert mean.recall[5] == pytest.approx((1 / 3 + 0 + 0 + 1) / 4)
    assert mean.recall[10] == pytest.approx((1 / 3 + 0 + 0 + 1) / 4)
    assert mean.recall[20] == pytest.approx((2 / 3 + 1 / 3 + 0 + 1) / 4)
    assert mean.mrr == pytest.approx((0.25 + 0 + 0 + 1) / 4)
    with pytest.raises(ValueError, match="evidence"):
        outcome([], [])


def test_recall_at_each_cutoff() -> None:
    """Recall@k counts turns, not results: a merged record brings two evidence turns at once,
    and a turn seen again lower down counts once, at its first rank."""
    evidence = ["D1:1", "D1:2", "D2:1", "D3:3", "D4:4"]
    ranked: list[tuple[str, ...]] = [("D9:9",)] * 20
    ranked[2] = ("D1:1", "D1:2")  # rank 3: two evidence turns in one merged record
    ranked[4] = ("D9:8",)  # rank 5, the last one Recall@5 sees, holds none
    ranked[5] = ("D2:1",)  # rank 6: inside Recall@10 only
    ranked[9] = ("D1:2",)  # rank 10: already found at rank 3
    ranked[19] = ("D3:3",)  # rank 20: inside Recall@20 only; D4:4 never comes back
    got = outcome(evidence, ranked)
    assert got.ranks == (3, 3, 6, 20)
    assert (got.recall(5), got.recall(10), got.recall(20)) == (2 / 5, 3 / 5, 4 / 5)
    assert (got.found(2), got.recall(1)) == (0, 0.0)


def test_bm25_scores_by_hand() -> None:
    index = BM25(["A b", "a c c", "d"])
    assert tokenize("Hey, it's D1!") == ["hey", "it", "s", "d1"]
    scores = index.scores("c c")  # a repeated query term counts once
    assert list(scores) == [1]
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 2)  # document length 3, average 2
    assert scores[1] == pytest.approx(idf * 2 * 2.2 / (2 + norm))
    assert index.search("a", 5) == [0, 1]  # the shorter document first
    assert index.search("zebra", 5) == []


def test_dense_ranks_by_cosine(transformer: Embedder) -> None:
    index = Dense(transformer, ["I adopted a puppy.", "I play the violin.", "Stocks fell today."])
    assert index.vectors.shape == (3, transformer.dims)
    assert index.search("my new dog", 3)[0] == 0
    assert index.search("a string instrument", 3)[0] == 1
    assert len(index.search("anything", 2)) == 2
    assert Dense(transformer, []).search("anything", 5) == []


def test_context_tokens_count_the_first_ten_texts() -> None:
    # cl100k_base, the memory block's tokenizer: "hello world" is 2 tokens, each newline 1.
    assert context_tokens(["hello world"] * 12) == 10 * 2 + 9
    assert context_tokens(["hello world"]) == 2
    assert context_tokens([]) == 0


# --- the whole run on a made-up conversation --------------------------------------------------


def _conversation() -> list[dict[str, Any]]:
    def turn(speaker: str, dia_id: str, text: str, **extra: str) -> dict[str, str]:
        return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}

    session_1 = [
        turn("Alice", "D1:1", "Hi Bob! I finally adopted a puppy named Biscuit."),
        turn("Bob", "D1:2", "Congrats! What breed is Biscuit?"),
        turn(
            "Alice",
            "D1:3",
            "A beagle, rescued at the shelter downtown.",
            img_url="https://example.invalid/dog.jpg",
            blip_caption="a photo of a small dog on a couch",
        ),
        turn("Bob", "D1:4", "Sounds great!"),
    ]
    session_2 = [
        turn("Bob", "D2:1", "I started learning the violin."),
        turn("Alice", "D2:2", "Nice, keep practising."),
        turn("Bob", "D2:3", "Sounds great!"),  # the store merges it with D1:4
        turn("Alice", "D2:4", "I ran a marathon in Chicago."),
    ]
    qa = [
        {"question": "Which shelter was the beagle rescued at?", "evidence": ["D1:3"],
         "category": 4, "answer": "downtown"},
        {"question": "Where did Alice run a marathon?", "evidence": ["D:2:4", "D9:9"],
         "category": 2, "answer": "Chicago"},
        {"question": "Sounds great", "evidence": ["D2:3"], "category": 4, "answer": "-"},
        {"question": "Which pet food brand do they prefer?", "evidence": ["D1:4"],
         "category": 3, "answer": "-"},
        {"question": "What is Alice's cat called?", "evidence": ["D1:1"], "category": 5,
         "adversarial_answer": "Biscuit"},
        {"question": "Would Bob like a cat?", "evidence": [], "category": 3, "answer": "-"},
    ]  # fmt: skip
    return [
        {
            "sample_id": "conv-test",
            "conversation": {
                "speaker_a": "Alice",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": session_1,
                "session_2_date_time": "10:04 am on 19 June, 2023",
                "session_2": session_2,
                "session_3_date_time": "9:00 am on 1 July, 2023",  # a date with no session
            },
            "qa": qa,
        }
    ]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(_conversation()), encoding="utf-8")
    return path


def test_loading_the_format(data: Path) -> None:
    (conversation,) = load(data)
    assert [t.dia_id for t in conversation.turns][:2] == ["D1:1", "D1:2"]
    assert len(conversation.turns) == 8
    image = conversation.turns[2]
    assert image.record_text() == (
        "Alice: A beagle, rescued at the shelter downtown. [image: a photo of a small dog on a "
        "couch]"
    )
    assert conversation.turns[4].at == datetime(2023, 6, 19, 10, 4, tzinfo=timezone.utc)
    assert [q.index for q in conversation.questions] == [0, 1, 2, 3]
    assert conversation.questions[1].evidence == ("D2:4",)
    assert conversation.adversarial == 1
    counts = conversation.evidence
    assert (counts.repaired, counts.invalid, counts.unanswerable) == (1, 1, 1)


def test_store_and_baseline_ranks(data: Path) -> None:
    conversations = load(data)
    store = {q.index: o for q, o in run_system("lexical", conversations, store_engine()).results}
    base = {q.index: o for q, o in run_system(BASELINE, conversations, bm25_engine).results}
    for ranks in (store, base):
        assert ranks[0].first == 1
        assert ranks[1].first == 1
        assert ranks[3].first is None  # no word in common with the evidence turn
    # Dedup merged D1:4 and D2:3 into one record, which holds the evidence at rank 1; the
    # baseline has the two identical turns, D1:4 first (ties go by document order).
    assert store[2].first == 1
    assert base[2].first == 2
    assert base[2].reciprocal_rank == 0.5


def test_context_tokens_of_a_run(data: Path) -> None:
    """The baseline's context for a question is the texts of its results, one per line."""
    (conversation,) = load(data)
    run = run_system(BASELINE, [conversation], bm25_engine)
    texts = {turn.dia_id: turn.record_text() for turn in conversation.turns}
    # "Which shelter was the beagle rescued at?" shares words with D1:3 (the image turn), then
    # "the" with D2:1 only.
    assert BM25(list(texts.values())).search(conversation.questions[0].text, 20) == [2, 4]
    assert run.context_tokens[0] == context_tokens([texts["D1:3"], texts["D2:1"]])
    assert run.context_tokens[0] > context_tokens([texts["D1:3"]]) > 10
    assert len(run.context_tokens) == len(run.results) == 4


def test_main_writes_tables_and_json(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench, "MODEL_PACKAGE", "no_such_model_package")  # lexical rows only
    out = tmp_path / "out.json"
    assert bench.main(["--data", str(data), "--json", str(out), "--quick"]) == 0
    printed = capsys.readouterr().out
    assert "| lexical ÷ BM25 |" in printed
    assert "| adversarial (5) | 1 | not scored |" in printed
    assert f"transformer and {DENSE_BASELINE} rows skipped" in printed
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["data"]["questions"] == 6
    assert document["data"]["scored"] == 4
    assert document["data"]["dropped_no_evidence"] == 1
    names = [s["name"] for s in document["systems"]]
    assert names == ["lexical", BASELINE]
    lexical = document["systems"][0]["overall"]
    assert lexical["hit@10"] == pytest.approx(3 / 4)
    assert lexical["recall@5"] == lexical["recall@10"] == pytest.approx(3 / 4)
    assert lexical["mrr@10"] == pytest.approx(3 / 4)
    assert document["systems"][1]["overall"]["mrr@10"] == pytest.approx((1 + 1 + 0.5) / 4)
    tokens = document["systems"][0]["context_tokens@10"]
    assert 0 < tokens["mean"] <= tokens["p95"]
    # The store is also timed writing then searching, once per scored question here; the
    # baseline, built once over the turns, is not.
    after = document["systems"][0]["search_after_write_ms"]
    assert after["searches"] == 4
    assert 0 < after["p50"] <= after["p95"]
    assert document["systems"][1]["search_after_write_ms"] is None
    assert document["settings"]["context"] == {"results": 10, "tokenizer": "cl100k_base"}
    assert "| system | questions | Hit@10 | Recall@5 | Recall@10 | Recall@20 | MRR@10 |" in printed
    first = document["results"][0]
    assert (first["evidence_ranks"], first["found"]) == ([1], 1)


def test_vectors_only_row_with_a_model(
    data: Path, minilm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    assert bench.main(["--data", str(data), "--model", str(minilm), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"| {DENSE_BASELINE} | 4 |" in printed
    assert f"| {DENSE_BASELINE} ÷ BM25 |" in printed
    document = json.loads(out.read_text(encoding="utf-8"))
    names = [s["name"] for s in document["systems"]]
    stores = ["lexical", "transformer"] if has_vector_channel() else ["lexical"]
    assert names == [*stores, BASELINE, DENSE_BASELINE]
    dense = document["systems"][-1]
    assert dense["ingest"]["records"] == 8
    assert dense["context_tokens@10"]["mean"] > 0
    ranks = {
        r["question"]: r["first_rank"] for r in document["results"] if r["system"] == names[-1]
    }
    assert ranks["conv-test#1"] == 1  # "Where did Alice run a marathon?": D2:4 by meaning too


def test_dense_engine_times_the_query(data: Path, transformer: Embedder) -> None:
    run = run_system(DENSE_BASELINE, load(data), dense_engine(transformer))
    assert len(run.latencies_ms) == 4
    assert min(run.latencies_ms) > 0.1  # embedding the query is inside the timed search
    assert [o.first for _, o in run.results][:2] == [1, 1]


def test_missing_data_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--data", str(tmp_path / "none.json")]) == 1
    assert "no LoCoMo data" in capsys.readouterr().err
