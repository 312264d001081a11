"""MemoryStore's semantic channel: vectors on write, hybrid search, dedup by cosine, privacy
towards the embedding engine, vectors filled in for records written without one, and two
models never mixing. On the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

import random
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from coderecall import Embedder
from coderecall._errors import QueryError
from coderecall._memory import MemoryStore

PROJECT = "github.com/acme/shop"


class Recording:
    """An embedding engine in Python that remembers every text it was sent, as a provider
    would receive them; vectors come from the real model."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.sent: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.sent.extend(texts)
        return self.model.embed(list(texts))

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.sent.append(text)
        vector: npt.NDArray[np.float32] = self.model.embed([text])[0]
        return vector


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(db: Path, transformer: Embedder) -> Iterator[MemoryStore]:
    with MemoryStore(PROJECT, path=db, embedder=transformer) as memory:
        yield memory


def _vectors(db: Path) -> dict[int, str]:
    with closing(sqlite3.connect(db)) as conn, conn:
        return dict(conn.execute("SELECT record_id, model FROM vectors").fetchall())


def test_hybrid_search_finds_a_paraphrase_sharing_no_word(store: MemoryStore) -> None:
    store.add("Deploys go out from the release branch every Tuesday.", "decision")
    wanted = store.add("Customer passwords are hashed with argon2id.", "decision").record
    store.add("The storefront caches product pages for five minutes.", "architecture")
    assert wanted is not None
    hits = store.search("how do we store user credentials securely", limit=3)
    assert hits[0].id == wanted.id
    assert hits[0].channels == ("semantic",)
    both = store.search("argon2id password hashing", limit=3)
    assert both[0].id == wanted.id
    assert both[0].channels == ("lexical", "semantic")

    # Filters hold in the semantic channel too: the paraphrase is a decision, not one of these.
    assert all(
        h.type == "architecture" and h.id != wanted.id
        for h in store.search("how do we store user credentials securely", type="architecture")
    )


def test_a_record_no_channel_found_is_not_a_hit(store: MemoryStore) -> None:
    wanted = store.add("Refunds go back to the original payment method.", "decision").record
    assert wanted is not None
    for text in (
        "We use PostgreSQL 16 for the main database.",
        "The CI runs on GitHub Actions with two workers.",
        "Tabs are never used; indent with four spaces.",
    ):
        store.add(text, "decision")
    hits = store.search("refunds", limit=10)
    assert hits[0].id == wanted.id
    # The semantic channel's farthest record scores 0 (its floor): no evidence, no hit. The
    # printed list showed every record of the store, the last at score 0.0.
    assert all(hit.score > 0 for hit in hits)
    assert len(hits) < 4
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


class _Table:
    """An engine whose vectors are chosen by hand: each text's from a table."""

    def __init__(self, table: dict[str, npt.NDArray[np.float32]]) -> None:
        self.table = table

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.table[text] for text in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        vector: npt.NDArray[np.float32] = self.table[text]
        return vector


def test_a_direction_every_record_shares_does_not_decide_the_nearest(db: Path) -> None:
    # Axis 0 is what a project's records all lean towards, axis 1 the subject asked about.
    # The unrelated record leans furthest along axis 0, so raw cosine puts it just above the
    # record on the subject; with the shared direction partly taken out, the subject decides.
    query = "how are user credentials stored"
    wanted, generic = "Customer passwords hashed with argon2id.", "Lunch on Fridays is pizza."
    table = {
        query: _axes((0, 0.9), (1, 0.436)),
        wanted: _axes((0, 0.6), (1, 0.8)),
        generic: _axes((0, 0.99), (2, 0.141)),
    }
    table |= {f"Standup moved to room {k}.": _axes((0, 0.9), (3 + k, 0.436)) for k in range(60)}
    assert float(table[query] @ table[generic]) > float(table[query] @ table[wanted])
    engine = Embedder.delegate(_Table(table), 64)
    with MemoryStore(PROJECT, path=db, embedder=engine, model_id="table-64") as memory:
        ids = {text: memory.add(text, "observation").record for text in table if text != query}
        assert all(record is not None for record in ids.values())
        hits = memory.search(query, limit=3)
        # The 60 alike records tie at the channel's floor (the list is cut among them): they
        # score 0, no evidence, and are no hits.
        assert [h.channels for h in hits] == [("semantic",)] * 2
        assert hits[0].id == ids[wanted].id  # type: ignore[union-attr]
        assert hits[1].id == ids[generic].id  # type: ignore[union-attr]


def _axes(*parts: tuple[int, float]) -> npt.NDArray[np.float32]:
    out = np.zeros(64, dtype=np.float32)
    for axis, value in parts:
        out[axis] = value
    out /= np.linalg.norm(out)
    return out


def test_a_record_of_several_sentences_is_as_near_as_its_nearest_sentence(db: Path) -> None:
    # The whole turn's vector averages a beach trip with a pottery class; the question asks
    # about the class, which its second sentence says alone.
    query = "what new hobby did she pick up"
    wanted = "Maria: We went to the beach. I started a pottery class on Monday."
    other = "Lunch is pizza."
    table = {
        query: _axes((1, 1.0)),
        wanted: _axes((1, 0.3), (2, 0.95)),
        "Maria: We went to the beach.": _axes((2, 1.0)),
        "Maria: I started a pottery class on Monday.": _axes((1, 0.95), (3, 0.31)),
        other: _axes((1, 0.6), (4, 0.8)),
    }
    engine = Embedder.delegate(_Table(table), 64)
    with MemoryStore(PROJECT, path=db, embedder=engine, model_id="table-64") as memory:
        first = memory.add(wanted, "observation").record
        second = memory.add(other, "observation").record
        assert first is not None
        assert second is not None
        assert [h.id for h in memory.search(query, limit=2)] == [first.id, second.id]
    with closing(sqlite3.connect(db)) as conn, conn:
        parts = dict(conn.execute("SELECT record_id, length(parts) FROM vectors").fetchall())
    assert parts == {first.id: 2 * 64 * 4, second.id: 0}

    # A store written before sentences had vectors gets them when it is searched.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("ALTER TABLE vectors DROP COLUMN parts")
        conn.execute("PRAGMA user_version = 2")
    with MemoryStore(PROJECT, path=db, embedder=engine, model_id="table-64") as memory:
        assert [h.id for h in memory.search(query, limit=2)] == [first.id, second.id]
    with closing(sqlite3.connect(db)) as conn, conn:
        filled = dict(conn.execute("SELECT record_id, length(parts) FROM vectors").fetchall())
    assert filled == parts


def test_sentences_carry_the_record_label_or_its_first_sentence() -> None:
    from coderecall import _memory_vectors as vectors

    assert vectors.parts("Caroline: Hey Mel! I went to a pottery class.") == [
        "Caroline: Hey Mel!",
        "Caroline: I went to a pottery class.",
    ]
    assert vectors.parts("Deploys run on Tuesdays. Rollbacks need two approvals? Yes.") == [
        "Deploys run on Tuesdays.",
        "Deploys run on Tuesdays. Rollbacks need two approvals?",
        "Deploys run on Tuesdays. Yes.",
    ]
    assert vectors.parts("One sentence, version 1.2 of it.") == []
    assert vectors.parts("  ") == []
    many = " ".join(f"Step {k} done." for k in range(40))
    assert len(vectors.parts(many)) == vectors.MAX_PARTS
    # A colon inside a long opening is not a label.
    long = "The deploy script we wrote last spring for staging: it failed. Then it worked."
    assert (
        vectors.parts(long)[1]
        == "The deploy script we wrote last spring for staging: it failed. Then it worked."
    )


def test_without_a_model_the_paraphrase_is_not_found(db: Path) -> None:
    with MemoryStore(PROJECT, path=db) as lexical:
        lexical.add("Customer passwords are hashed with argon2id.", "decision")
        assert lexical.search("how do we store user credentials securely") == []


def test_a_paraphrase_is_deduplicated_by_its_vector(store: MemoryStore, db: Path) -> None:
    first = store.add("Run make test before committing.", "preference")
    again = store.add("Always run make test before you commit.", "preference")
    assert (first.action, again.action) == ("added", "updated")
    assert first.record is not None
    assert again.record is not None
    assert again.record.id == first.record.id
    assert again.record.text == "Always run make test before you commit."
    different = store.add("The user prefers tabs to spaces.", "preference")
    assert different.action == "added"
    # Word overlap alone (4 of 8 words) keeps them apart.
    with MemoryStore(PROJECT, path=db.with_name("words.db")) as lexical:
        lexical.add("Run make test before committing.", "preference")
        assert lexical.add("Always run make test before you commit.", "preference").action == (
            "added"
        )


def test_vectors_follow_the_records(store: MemoryStore, db: Path) -> None:
    kept = store.add("The API is served by uvicorn behind nginx.", "architecture").record
    private = store.add("The staging host is db7.internal.", "tech-context", privacy="private")
    forgotten = store.add("Orders older than a year are archived nightly.", "decision").record
    assert kept is not None
    assert private.record is not None
    assert forgotten is not None
    assert set(_vectors(db)) == {kept.id, forgotten.id}  # a private record gets none
    assert _vectors(db)[kept.id] == store.model
    store.forget(forgotten.id, "wrong")
    newer = store.supersede(kept.id, "The API is served by gunicorn behind nginx.")
    assert set(_vectors(db)) == {kept.id, newer.id}
    with closing(sqlite3.connect(db)) as conn, conn:
        (blob,) = conn.execute(
            "SELECT vector FROM vectors WHERE record_id = ?", (newer.id,)
        ).fetchone()
    stored = np.frombuffer(blob, dtype=np.float32)
    expected = store._embedder.embed([newer.text])[0]  # type: ignore[union-attr]
    assert float(stored @ expected) == pytest.approx(1.0, abs=1e-5)


def test_an_open_store_ranks_as_one_opened_afresh_after_every_kind_of_write(
    store: MemoryStore, db: Path, transformer: Embedder
) -> None:
    """An open store brings its search indexes up to date write by write, analysing only
    what changed (a record, the windows around it, vectors of new texts). After each kind of
    write, its ranking must be exactly what indexes built from scratch give."""
    day = datetime(2024, 3, 4, 10, 0, tzinfo=timezone.utc)

    def say(minute: int, session: str, text: str) -> int:
        at = day + timedelta(minutes=minute)
        written = store.add(text, "observation", session=session, at=at).record
        assert written is not None
        return written.id

    queries = [
        "What did Ana bake for the party?",
        "Where did Ben go hiking?",
        "chocolate cake recipe",
        "When was the trip to the mountains?",
        "Whose birthday was it?",
    ]

    def ranks_as_afresh() -> None:
        with MemoryStore(PROJECT, path=db, embedder=transformer) as fresh:
            for query in queries:
                kept = [(h.id, h.score, h.channels) for h in store.search(query, limit=10)]
                new = [(h.id, h.score, h.channels) for h in fresh.search(query, limit=10)]
                assert [k[::2] for k in kept] == [n[::2] for n in new], query
                assert [k[1] for k in kept] == pytest.approx([n[1] for n in new], rel=1e-6)

    say(0, "s1", "Ana: I baked a chocolate cake for the party.")
    say(2, "s1", "Ben: It was delicious, can you share the recipe?")
    trip = say(4, "s2", "Ben: Last weekend I went hiking in the mountains.")
    say(6, "s2", "Ana: Which trail did you take?")
    ranks_as_afresh()
    say(1, "s1", "Ben: Did you use dark chocolate?")  # between two turns: windows change
    ranks_as_afresh()
    say(8, "s3", "Ana: The recipe is on my blog.")  # a new session
    ranks_as_afresh()
    store.supersede(trip, "Ben: Two weeks ago I went hiking in the Alps.")
    ranks_as_afresh()
    again = store.add(
        "Ana: I baked a chocolate cake for the birthday party.", "observation", session="s1"
    )
    assert again.action == "updated"  # in place: same id, new text
    ranks_as_afresh()
    forgotten = say(7, "s2", "Ben: The north trail, it was steep.")
    ranks_as_afresh()
    store.forget(forgotten, "said by mistake")
    ranks_as_afresh()
    with MemoryStore(PROJECT, path=db, embedder=transformer) as other:  # another writer
        assert other.add("Ana: I will bake a lemon tart next time.", "observation").record
    ranks_as_afresh()


@pytest.mark.parametrize("semantic", [False, True], ids=["lexical", "hybrid"])
def test_threads_sharing_a_store_write_and_search_at_once(
    db: Path, transformer: Embedder, semantic: bool
) -> None:
    """A store is shared between threads while its indexes are updated in place (by
    whichever search finds them behind): searches running through every kind of write
    neither fail nor leave the store ranking otherwise than one opened afresh."""
    embedder = transformer if semantic else None
    topics = [
        "cake",
        "trip",
        "river",
        "tram",
        "flat",
        "parser",
        "decision",
        "deploy",
        "cache",
        "index",
        "query",
    ]
    errors: list[BaseException] = []

    def guarded(work: Callable[[int], None], n: int) -> threading.Thread:
        def run() -> None:
            try:
                work(n)
            except BaseException as error:  # reported below, whatever it is
                errors.append(error)

        return threading.Thread(target=run)

    with MemoryStore(PROJECT, path=db, embedder=embedder) as store:

        def write(n: int) -> None:
            pick = random.Random(n)
            for i in range(40 if semantic else 120):
                text = f"Speaker{n}: " + " ".join(pick.choices(topics, k=6)) + f", note {i}."
                written = store.add(text, "observation", session=f"s{n}-{i // 8}").record
                assert written is not None
                if i % 9 == 4:
                    store.forget(written.id, "a test")
                elif i % 11 == 6:
                    store.supersede(written.id, f"{text} Revised.")

        def search(n: int) -> None:
            pick = random.Random(100 + n)
            for _ in range(80 if semantic else 240):
                store.search(f"What did Speaker{n} say about the {pick.choice(topics)}?")

        threads = [guarded(write, n) for n in range(3)] + [guarded(search, n) for n in range(3)]
        switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-5)  # threads interleave often, as on a busy server
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            sys.setswitchinterval(switch)
        assert not errors, errors
        with MemoryStore(PROJECT, path=db, embedder=embedder) as fresh:
            for topic in topics:
                kept = [(h.id, h.score) for h in store.search(topic)]
                new = [(h.id, h.score) for h in fresh.search(topic)]
                assert [k for k, _ in kept] == [k for k, _ in new], topic
                assert [s for _, s in kept] == pytest.approx([s for _, s in new], rel=1e-6)


def test_private_text_secrets_and_blocked_records_never_reach_the_engine(
    db: Path, transformer: Embedder
) -> None:
    engine = Recording(transformer)
    embedder = Embedder.delegate(engine, transformer.dims)
    with MemoryStore(PROJECT, path=db, embedder=embedder, model_id="recording") as store:
        store.add("Deploy with <private>the root password hunter2</private> the script.")
        store.add("The key is sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789ABCD for the bot.")
        store.add("Staging lives on host db7.internal.", privacy="private")
        store.add("Anything at all about launch codes.", tags=["blocked"])
        store.search("launch codes staging deploy", include_private=True)
    sent = "\n".join(engine.sent)
    assert "Deploy with" in sent  # the engine was used
    for secret in ("hunter2", "sk-proj-Abcdefghij", "db7.internal", "launch codes."):
        assert secret not in sent


def test_records_written_without_a_model_get_vectors_when_searched(
    db: Path, transformer: Embedder
) -> None:
    with MemoryStore(PROJECT, path=db) as lexical:
        target = lexical.add("Customer passwords are hashed with argon2id.", "decision").record
        lexical.add("Deploys go out from the release branch every Tuesday.", "decision")
    assert target is not None
    assert _vectors(db) == {}
    with MemoryStore(PROJECT, path=db, embedder=transformer) as semantic:
        hits = semantic.search("how are user credentials stored", limit=1)
        assert [h.id for h in hits] == [target.id]
        assert len(_vectors(db)) == 2
        generation = semantic._db.generation()
        semantic.search("release schedule")
        assert semantic._db.generation() == generation  # filling vectors is not a write


def test_two_models_never_mix(db: Path, transformer: Embedder) -> None:
    narrow = Embedder.delegate(_Truncated(transformer, 64), 64)
    with MemoryStore(PROJECT, path=db, embedder=transformer) as wide:
        wide.add("Customer passwords are hashed with argon2id.", "decision")
    with MemoryStore(PROJECT, path=db, embedder=narrow, model_id="narrow-64") as small:
        assert small.search("how are user credentials stored", limit=1)
        with closing(sqlite3.connect(db)) as conn, conn:
            rows = conn.execute("SELECT model, length(vector) FROM vectors ORDER BY model")
            by_model = dict(rows.fetchall())
        assert by_model == {"narrow-64": 64 * 4, wide.model: transformer.dims * 4}


def test_a_python_engine_needs_a_model_id(db: Path, transformer: Embedder) -> None:
    with pytest.raises(QueryError, match="model_id"):
        MemoryStore(PROJECT, path=db, embedder=Embedder.delegate(Recording(transformer), 384))


class _Truncated:
    """Another model: the first ``dims`` components of the real one, normalised."""

    def __init__(self, model: Embedder, dims: int) -> None:
        self.model, self.dims = model, dims

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        cut = self.model.embed(list(texts))[:, : self.dims]
        normalised: npt.NDArray[np.float32] = cut / np.linalg.norm(cut, axis=1, keepdims=True)
        return normalised.astype(np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector


def test_a_code_index_gives_its_project_memory_its_local_model(
    tmp_path: Path, minilm: Path, db: Path
) -> None:
    from coderecall import CodeIndex

    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    config = {"embedding": {"provider": "transformer", "model": str(minilm)}}
    with CodeIndex(root, config) as index:
        memory = index.memory(path=db)
        assert memory is index.memory(path=db)
        assert memory.model is not None
        assert memory.model.startswith("transformer:")
        memory.add("Customer passwords are hashed with argon2id.", "decision")
        assert "semantic" in memory.search("how are user credentials stored")[0].channels
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as lexical:
        assert lexical.memory(path=db).model is None


class _Plain:
    """An engine written the plain numpy way: float64 arrays, and lists."""

    def __init__(self, value: float) -> None:
        self.value = value

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        return np.full((len(texts), 4), self.value)  # float64, numpy's default

    def embed_query(self, text: str) -> list[float]:
        return [self.value] * 4


def test_a_delegate_may_answer_float64_or_lists_but_never_nan() -> None:
    plain = Embedder.delegate(_Plain(0.5), 4)
    assert plain.embed(["a", "b"]).dtype == np.float32
    assert plain.embed(["a", "b"]).shape == (2, 4)
    assert plain.embed_query("a").tolist() == [0.5] * 4
    broken = Embedder.delegate(_Plain(float("nan")), 4)
    with pytest.raises(ValueError, match="returned a vector holding NaN or infinity"):
        broken.embed(["a"])
    with pytest.raises(ValueError, match="returned a vector holding NaN or infinity"):
        broken.embed_query("a")
    wrong = Embedder.delegate(_Plain(0.5), 3)
    with pytest.raises(ValueError, match=r"returned an array of shape \[1, 4\], expected \[1, 3\]"):
        wrong.embed(["a"])
