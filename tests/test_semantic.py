"""The semantic channel of an index: vectors stored by content hash, the HNSW graph derived from
them, and hybrid natural-language search. Runs on the static model distilled from the real
all-MiniLM-L6-v2 (see ``conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from coderecall import CodeIndex, Embedder, load_embedder
from coderecall._native import NativeIndex
from helpers import SAMPLE_PROJECT, MakeRepo


@pytest.fixture
def static_embedder(static_model: Path) -> Embedder:
    return load_embedder(static_model)


def native_of(index: CodeIndex) -> NativeIndex:
    return index._open()


@pytest.fixture
def indexed(make_repo: MakeRepo) -> Iterator[CodeIndex]:
    """The sample project, indexed (lexically); closed after the test."""
    with CodeIndex(make_repo(SAMPLE_PROJECT)) as index:
        index.index(progress=False)
        yield index


def vector_files(index: CodeIndex) -> list[Path]:
    return sorted(Path(index.status().index_dir).glob("vectors-*.usearch"))


def test_chunks_are_embedded_once_and_reused_across_files_and_runs(
    indexed: CodeIndex, static_embedder: Embedder
) -> None:
    native = native_of(indexed)
    native.set_embedder(static_embedder, "static-test")
    done: list[tuple[int, int]] = []
    first = native.embed_pending(batch_size=3, progress=lambda *report: done.append(report))
    assert first > 0
    assert done == sorted(done)
    assert done[-1] == (first, first)
    assert native.embed_pending() == 0, "nothing is embedded twice"
    assert len(vector_files(indexed)) == 1
    # The same content under a new name needs no new vector.
    root = indexed.root
    source = next(p for p in SAMPLE_PROJECT if p.endswith(".py"))
    (root / "copy_of.py").write_text((root / source).read_text())
    indexed.index(progress=False)
    assert native.embed_pending() == 0


def test_hybrid_search_fuses_channels_for_natural_language_only(
    indexed: CodeIndex, static_embedder: Embedder
) -> None:
    index = indexed
    lexical_only = index.search("refresh the access token before it expires")
    assert all(hit.channels == ("lexical",) for hit in lexical_only)
    native = native_of(index)
    native.set_embedder(static_embedder, "static-test")
    native.embed_pending()
    hybrid = index.search("refresh the access token before it expires", limit=20)
    assert any("semantic" in hit.channels for hit in hybrid)
    assert {hit.to_dict()["channels"][0] for hit in hybrid} <= {"lexical", "semantic"}
    identifier = index.search("refresh_token")
    assert all(hit.channels == ("lexical",) for hit in identifier)
    filtered = index.search("refresh the access token", language="markdown", limit=20)
    assert all(hit.language == "markdown" for hit in filtered)


class _Recording:
    """Embeds with a real engine and remembers the queries it was asked to embed."""

    def __init__(self, engine: Embedder) -> None:
        self.engine = engine
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return self.engine.embed(texts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.queries.append(text)
        vector: npt.NDArray[np.float32] = self.engine.embed([text])[0]
        return vector


def test_a_request_is_embedded_without_its_opening(
    indexed: CodeIndex, static_embedder: Embedder
) -> None:
    recording = _Recording(static_embedder)
    native = native_of(indexed)
    native.set_embedder(Embedder.delegate(recording, static_embedder.dims), "recording")
    native.embed_pending()
    indexed.search("where is the code that refreshes the access token")
    indexed.search("refresh the access token")
    assert recording.queries == ["refreshes the access token", "refresh the access token"]


def test_the_graph_is_derived_and_rebuilt_without_the_model(
    make_repo: MakeRepo, static_embedder: Embedder
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
        native = native_of(index)
        native.set_embedder(static_embedder, "static-test")
        native.embed_pending()
        before = [hit.path for hit in index.search("store tokens on disk", limit=5)]
        graph = vector_files(index)[0]
    graph.unlink()
    with CodeIndex(root) as index:
        native = native_of(index)
        native.set_embedder(static_embedder, "static-test")
        assert graph.is_file(), "rebuilt from the vectors in SQLite"
        assert native.embed_pending() == 0
        assert [hit.path for hit in index.search("store tokens on disk", limit=5)] == before


def test_models_never_mix(
    indexed: CodeIndex, static_embedder: Embedder, transformer: Embedder
) -> None:
    index = indexed
    native = native_of(index)
    with pytest.raises(ValueError, match="no embedding model"):
        native.embed_pending()
    native.set_embedder(static_embedder, "shared-name")
    assert native.embed_pending() > 0
    with pytest.raises(ValueError, match="256-dimensional"):
        native.set_embedder(transformer, "shared-name")
    native.set_embedder(transformer, "minilm")
    assert native.embed_pending() > 0, "another model embeds for itself"
    assert len(vector_files(index)) == 2
