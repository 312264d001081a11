"""Type stubs for the compiled core (``coderecall._native``).

The binding is deliberately coarse: one call indexes a whole batch of files with the GIL
released; searches return plain dicts that the Python facade turns into frozen dataclasses.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Final, Literal, Protocol, TypedDict, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

__all__ = [
    "SCHEMA_VERSION",
    "CallGraph",
    "CancelledError",
    "Embedder",
    "Error",
    "IndexCorruptError",
    "KeySet",
    "ModelError",
    "NativeIndex",
    "StoreError",
    "TextIndex",
    "__version__",
    "centred_nearest",
    "detect_language",
    "distill",
    "dot_rows",
    "extract_symbols",
    "languages",
    "learn",
    "model_recipe",
    "word_variants",
]

__version__: Final[str]
SCHEMA_VERSION: Final[int]

class Error(Exception):
    """Root of every coderecall exception (re-exported as ``coderecall.Error``)."""

class StoreError(Error):
    """The index database or one of its derived files could not be read or written."""

class IndexCorruptError(StoreError):
    """An index file failed its integrity check; rebuilding the index repairs it."""

class CancelledError(Error):
    """A long operation was cancelled; nothing was published."""

class ModelError(Error):
    """An embedding model folder is missing a file, unreadable, or not a supported model."""

class _EmbeddingTarget(Protocol):
    """What :meth:`Embedder.delegate` calls."""

    def embed_documents(self, texts: list[str], /) -> npt.ArrayLike: ...
    def embed_query(self, text: str, /) -> npt.ArrayLike: ...

@final
class Embedder:
    """A loaded local embedding model (re-exported as ``coderecall.Embedder``).

    Thread-safe; every call releases the GIL while the model works.
    """

    @staticmethod
    def transformer(
        path: str | PathLike[str],
        max_tokens: int = 256,
        *,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ) -> Embedder:
        """A BERT-family sentence-embedding model from a folder with ``config.json``,
        ``tokenizer.json`` and ``model.safetensors``; inputs are cut to ``max_tokens`` tokens.
        Pooling and prompts follow the folder's sentence-transformers files; the prompts, when
        given, replace those (``""``: none)."""
    @staticmethod
    def static_model(path: str | PathLike[str]) -> Embedder:
        """A static (Model2Vec-format) model from a folder with ``tokenizer.json`` and
        ``model.safetensors``."""
    @staticmethod
    def delegate(target: _EmbeddingTarget, dims: int) -> Embedder:
        """An engine implemented in Python: ``target.embed_documents(texts)`` returns an
        array (any array-like of numbers, cast to ``float32``) of shape ``(len(texts), dims)``
        and ``target.embed_query(text)`` one of shape ``(dims,)``, both L2-normalised and
        finite (else ``ValueError``). The index calls back with the GIL held; whatever the
        target raises reaches the caller of the index unchanged."""
    @property
    def dims(self) -> int:
        """Length of every vector."""
    @property
    def kind(self) -> str:
        """``"transformer"``, ``"static"`` or ``"delegate"``."""
    @property
    def path(self) -> Path | None:
        """The model folder (``None`` for a delegate)."""
    @property
    def recipe(self) -> str:
        """How a transformer pools, prompts and cuts where it departs from mean pooling without
        prompts at 256 tokens (``'pooling=cls; query prompt="query: "'``, ``"max_tokens=512"``);
        empty otherwise."""
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised row per text: a ``float32`` array of shape ``(len(texts), dims)``."""
    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The vector of a search query: a ``float32`` array of shape ``(dims,)``. A transformer
        remembers its latest queries, so one question searched in several places (code and
        memory) goes through the model once."""
    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids the model sees for each text, after truncation (with the special
        tokens for a transformer, without them for a static model)."""

class DistillReport(TypedDict):
    tokens: int
    dims: int
    explained_variance: float
    path: Path

def distill(
    src: str | PathLike[str],
    dst: str | PathLike[str],
    dims: int = 256,
    progress: Callable[[int, int], object] | None = None,
    frequencies: Sequence[float] | None = None,
) -> DistillReport:
    """Builds a static model in ``dst`` from the transformer in ``src``; ``progress(done,
    total)`` is called as tokens are embedded; ``frequencies[id]`` counts token ``id`` in a
    representative corpus (else Zipf over the ids). Returns what was built."""

def word_variants(word: str) -> tuple[str | None, list[str]]:
    """The other spellings of one lowercase word of prose, by the analyzer's rules beyond
    ASCII: the word typed without its diacritics (``None`` when it has none to drop), and
    each run of Chinese, Japanese or Korean characters in it with the run's overlapping
    pairs."""

def model_recipe(path: str | PathLike[str]) -> str:
    """How the transformer in ``path`` pools and prompts, as :attr:`Embedder.recipe` says once
    it is loaded (read from its sentence-transformers files, not its weights); raises
    :class:`ModelError` for a recipe the engine cannot follow."""

def centred_nearest(
    ids: npt.NDArray[np.int64],
    matrix: npt.NDArray[np.float32],
    scale: npt.NDArray[np.float32],
    parts: npt.NDArray[np.float32],
    part_scale: npt.NDArray[np.float32],
    owners: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    windows: npt.NDArray[np.float32],
    counts: npt.NDArray[np.float32],
    window_scale: npt.NDArray[np.float32],
    alone: npt.NDArray[np.bool_],
    query: npt.NDArray[np.float32],
    offset: float,
    part_weight: float,
    keep: npt.NDArray[np.bool_] | None,
    limit: int,
) -> list[tuple[int, float]]:
    """The ``limit`` records nearest a centred query, ``(id, score)`` best first, among the
    rows ``keep`` allows (all without it); the rows are ``_memory_vectors.Vectors``'s. Every
    array C-contiguous (else ``ValueError``); the GIL is released."""

def dot_rows(
    rows: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Each row's dot product with ``query`` (float32; the GIL is released). Raises
    ``ValueError`` when ``query`` is not as long as a row."""

class LearnReport(TypedDict):
    texts: int
    held_out: int
    tokens: int
    cosine_before: float
    cosine_after: float
    ridge: float | None
    iterations: int
    path: Path

def learn(
    base: str | PathLike[str],
    teacher: str | PathLike[str],
    dst: str | PathLike[str],
    texts: Sequence[str],
    dims: int = 256,
    progress: Callable[[int, int], object] | None = None,
) -> LearnReport:
    """Builds in ``dst`` the static model in ``base`` fitted to the transformer in ``teacher``
    on ``texts``; ``progress(done, total)`` is called as the teacher embeds the texts. Returns
    how well the fit went: mean cosines with the teacher on held-out texts, before (the base
    only aligned) and after, and the ridge the held-out texts chose (``None``: the aligned
    base fitted them best)."""

class UpdateStats(TypedDict):
    files_parsed: int
    files_reused: int
    files_removed: int
    chunks_added: int
    symbols_added: int
    bytes_parsed: int
    generation: int
    skipped: list[tuple[str, str]]
    decoded: list[tuple[str, str]]
    """``(path, encoding)`` of the files parsed whose text was not UTF-8 (``"windows-1252"``,
    ``"Shift_JIS"``, ``"UTF-16LE"``, ``"UTF-16BE"``, ``"UTF-8 with invalid bytes replaced"``)."""

class HitDict(TypedDict):
    path: str
    start_line: int
    end_line: int
    language: str
    kind: str
    symbol: str
    symbol_path: str
    score: float
    content: str | None
    channels: list[str]

class GcDict(TypedDict):
    views: int
    file_versions: int
    chunks: int
    vectors: int

class HealthDict(TypedDict):
    problems: list[str]
    repaired: list[str]

class StatusDict(TypedDict):
    schema_version: int
    generation: int
    files: int
    chunks: int
    symbols: int
    file_versions: int
    languages: dict[str, int]
    db_bytes: int
    lexical_bytes: int

def languages() -> list[str]:
    """Names of every language the core can chunk."""

def detect_language(path: str, head: bytes) -> str | None:
    """Language name for a file, or ``None`` for text that is not indexed."""

def extract_symbols(path: str, text: str) -> list[tuple[str, str, str, int, int]]:
    """Definitions of a file as ``(name, kind, local path, start line, end line)``.

    Lines are 1-based and inclusive; the start includes attached doc comments and decorators.
    Empty for files without a grammar.
    """

class GraphNodeDict(TypedDict):
    id: int
    path: str
    language: str
    name: str
    symbol_path: str
    kind: str
    start_line: int
    end_line: int
    callers: int
    callees: int

class GraphEdgeDict(TypedDict):
    kind: Literal["call", "inherit"]
    path: str
    line: int
    callee: str
    confidence: Literal["resolved", "inferred", "unresolved"]
    depth: int
    reason: Literal["ambiguous", "external", "unknown"] | None
    external: str | None
    candidates: list[GraphNodeDict]
    to: GraphNodeDict | None

class GraphStatsDict(TypedDict):
    files: int
    definitions: int
    edges: int
    resolved: int
    inferred: int
    unresolved: int
    ambiguous: int
    external: int
    unknown: int
    inherits: int
    build_seconds: float

@final
class CallGraph:
    """The call graph of one view at one generation: immutable, queried without the store.

    Nodes are definitions (plus one per file for its top level, kind ``module``); edges are
    calls and inheritance, each ``resolved`` (through scope, imports or a stated type),
    ``inferred`` (the only definition of that name) or ``unresolved`` (``reason``: ambiguous,
    external, unknown). An edge dict also has ``"from"``, the calling node (a keyword in Python).
    """

    def stats(self) -> GraphStatsDict: ...
    def language_stats(self) -> dict[str, dict[str, int]]:
        """Calls per language of the calling file: resolved, inferred, unresolved."""
    def find(self, symbol: str, limit: int = 20) -> list[GraphNodeDict]:
        """Definitions matching a name, a qualified name or ``path:line``, implementation
        (not tests, not impl blocks) first."""
    def similar_names(self, symbol: str, limit: int = 3) -> list[str]:
        """Defined names spelled like the last part of ``symbol``, nearest first (for a name
        that is not defined: a typo's suggestions)."""
    def node_info(self, id: int) -> GraphNodeDict: ...
    def edges(
        self, id: int, callers: bool, depth: int = 1, limit: int = 200
    ) -> list[GraphEdgeDict]:
        """Edges reaching (``callers``) or leaving node ``id``, breadth first to ``depth``;
        ambiguous edges are listed but not walked."""
    def unresolved_named(self, id: int) -> int:
        """Calls of the node's name that resolved to nothing (callers that may be unseen)."""
    def path(self, source: int, target: int, max_depth: int = 8) -> list[GraphEdgeDict] | None:
        """The shortest call chain between two nodes; ambiguous edges only if nothing else."""
    def outline(self, path: str) -> list[GraphNodeDict]:
        """The definitions of one file, in source order."""

@final
class TextIndex:
    """The core's BM25F index over short texts keyed by integers (memory records), held in
    memory. ``body`` is the text, ``name`` its labels (weighted like a definition's name),
    ``kind`` its type. Thread-safe."""

    def __new__(cls, *, k1: float | None = None, b: float | None = None) -> Self:
        """``k1`` and ``b`` (the body's length normalisation) default to the code index's;
        ValueError unless ``k1 >= 0`` and ``0 <= b <= 1``."""
    def insert(self, key: int, body: str, name: str = "", kind: str = "") -> None:
        """Add (or replace) the text under ``key``."""
    def to_bytes(self, meta: bytes) -> bytes:
        """The index as bytes (compressed, checksummed), with ``meta`` kept beside it."""
    @staticmethod
    def from_bytes(data: bytes) -> tuple[TextIndex, bytes]:
        """An index and its ``meta`` from :meth:`to_bytes`; ValueError if ``data`` is not
        such bytes (torn, of another format version, or corrupt)."""
    def insert_many(self, docs: Sequence[tuple[int, str, str, str]]) -> None:
        """Add (or replace) each ``(key, body, name, kind)`` as :meth:`insert` would one
        after the other, analysing the texts in parallel with the GIL released."""
    def remove(self, key: int) -> bool: ...
    def __len__(self) -> int: ...
    def search(
        self, query: str, limit: int, allowed: KeySet | set[int] | frozenset[int] | None = None
    ) -> list[tuple[int, float]]:
        """The best ``limit`` keys as ``(key, score)``, score descending; with ``allowed``,
        only those keys compete (statistics stay those of the whole index). A Python set is
        converted on every call; a :class:`KeySet` is built once."""

@final
class KeySet:
    """An immutable set of integer keys, built once for many ``TextIndex.search`` calls."""

    def __new__(cls, keys: Iterable[int]) -> Self: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: object, /) -> bool: ...

@final
class NativeIndex:
    """A handle on one index directory (``index.db`` plus derived lexical files).

    Thread-safe: searches run concurrently; updates are serialised.
    """

    def __new__(cls, index_dir: str, view: str) -> Self:
        """Open (creating if needed) the index in ``index_dir`` and its view ``view`` (by
        convention the absolute root: worktrees share the store, each has its own view)."""
    def close(self) -> None:
        """Release the database handles once running calls finish; later calls raise
        ``StoreError``."""

    def file_stats(
        self, under: Sequence[str] | None = None
    ) -> dict[str, tuple[int, int, str | None]]:
        """The view as ``path -> (mtime_ns, size, skip reason)``, for stat-based deltas;
        with ``under``, only those paths and the paths below them.

        Indexed files have no reason. Files skipped for their content (binary, no parser)
        are remembered with their reason until their stat changes.
        """

    def update(
        self,
        root: str,
        files: Sequence[tuple[str, int, int]],
        removed: Sequence[str],
        max_file_bytes: int,
    ) -> UpdateStats:
        """Index ``files`` (``(relative path, mtime_ns, size)``) and drop ``removed``.

        Reads, hashes and parses in parallel with the GIL released, then publishes the new
        state atomically. Files that cannot be indexed are listed in ``skipped`` with a reason;
        files that were not UTF-8 are decoded and listed in ``decoded``.
        """

    def progress(self) -> tuple[int, int]:
        """``(done, total)`` files of the running (or last) update; safe to poll from
        another thread."""

    def cancel(self) -> None:
        """Ask the running update to stop; it raises ``CancelledError`` and publishes nothing."""
    def set_embedder(
        self,
        embedder: Embedder,
        model: str,
        quantization: Literal["bf16", "f16", "i8"] = "bf16",
        weight: float | None = None,
    ) -> None:
        """Sets the embedding model of the semantic channel; ``model`` names it in the index
        (vectors of different names never mix). Natural-language searches then fuse both
        channels. ``quantization`` is how the graph stores vectors (SQLite keeps f16);
        ``weight`` the channel's share in hybrid ranking (default: the engine's own)."""
    def embed_pending(
        self, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int:
        """Embeds the chunks that have no vector for the model yet, ``batch_size`` per call of
        the model; ``progress(done, total)`` after each batch. Returns how many were embedded.
        """
    def pending_texts(self, model: str) -> list[str]:
        """Texts of the chunks without a vector for ``model``, as they would be embedded."""

    def search(
        self,
        query: str,
        limit: int = 10,
        languages: Sequence[str] | None = None,
        directories: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        per_file: int = 4,
        with_content: bool = False,
        lexical_only: bool = False,
    ) -> list[HitDict]: ...
    def similar(
        self,
        text: str | None = None,
        path: str | None = None,
        line: int = 0,
        limit: int = 10,
        languages: Sequence[str] | None = None,
        directories: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        per_file: int = 4,
        with_content: bool = False,
        lexical_only: bool = False,
    ) -> list[HitDict]:
        """The chunks most like ``text``, or like the chunk of ``path`` that holds ``line``
        (left out of the results)."""
    def generation(self) -> int:
        """The view's published generation (0: never indexed), without counting anything."""
    def status(self) -> StatusDict: ...
    def weights(self) -> dict[str, float]:
        """The ranking layer's factors by name (see ``coderecall_core::rank::Weights``)."""

    def set_weights(self, values: Mapping[str, float]) -> None:
        """Change ranking factors for this handle, all or nothing; benchmarks use it for
        ablations (a multiplicative factor of 1.0 turns its rule off). Unknown names and
        negative or non-finite values raise ``ValueError``."""
    def collect_garbage(self, grace_seconds: float) -> GcDict:
        """Delete what no view has referenced for ``grace_seconds``: views of roots that no
        longer exist, orphaned file versions with their chunks and symbols, vectors of
        contents no chunk has. Returns how many of each went."""
    def health(
        self, repair: bool = False, vectors: tuple[str, int, str] | None = None
    ) -> HealthDict:
        """Check SQLite and the derived files (this view's lexical snapshot; the graph of
        ``vectors`` = (model, dims, quantization)); with ``repair``, rebuild those from
        SQLite without embedding anything."""
    def vector_count(self, model: str) -> int:
        """Vectors stored for the embedding model ``model`` (its model id)."""
    def drop_view(self, name: str) -> bool:
        """Delete another view of the store (a removed knowledge base) and its snapshot; its
        file versions are collected after the grace period. False if there is no such view."""
    def lines(self, path: str, start: int, end: int) -> str | None:
        """Lines ``start..=end`` (1-based, inclusive) of ``path`` as indexed, so that they
        match the index's line numbers even if the file changed since; None if not indexed."""
    def call_graph(self) -> CallGraph:
        """The call graph of the view as published (rebuilt on first use after a change)."""
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
