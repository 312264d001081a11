"""``CodeIndex``: the Python facade over the compiled index of one project.

The facade holds policy (which files, which root, where the index lives, how progress and
interruption behave); the native handle does the heavy work in one coarse call per operation
with the GIL released.
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import posixpath
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypedDict, TypeVar, cast

from ._collect import Collection, collect, collect_paths, scope_of
from ._config import MAX_COUNT, Config, load_config
from ._context import ContextPack, build_context
from ._embedding import EmbeddingChoice, select_embedding
from ._errors import (
    Error,
    IndexBusyError,
    IndexCorruptError,
    IndexDirError,
    ProviderError,
    QueryError,
    RootNotADirectoryError,
    RootNotFoundError,
    RootRefusedError,
    WidthChangedError,
)
from ._fork import keep, track
from ._graph import (
    CallGraphResult,
    CallPath,
    Definition,
    Direction,
    definitions,
    missing,
    neighbourhood,
    shortest_path,
)
from ._kb import CODE, KnowledgeBase, KnowledgeBases, fuse, load_entries
from ._lease import WriteLease, watched
from ._logs import LogEntry, attach_file_log, detach_file_log, read_logs
from ._metrics import Recorder
from ._native import NativeIndex
from ._paths import LOCAL_INDEX_DIR, check_root, find_index_dir
from ._progress import ProgressCallback, progress_reporter
from ._results import (
    EmbeddingEstimate,
    HealthReport,
    IndexMetrics,
    IndexReport,
    IndexStatus,
    SearchHit,
)
from ._unicode import is_storable, scrub

if TYPE_CHECKING:
    from ._memory import MemoryStore
    from ._native import CallGraph, HitDict, UpdateStats  # types that exist only in the stub
    from ._watch import Watcher

__all__ = ["CodeIndex"]

_EXAMPLES_PER_REASON = 5
_REBUILD_HINT = " (index at {}; `coderecall index --force` sets it aside and rebuilds)"
_POLL_SECONDS = 0.05
_LOCAL_BATCH = {"transformer": 64, "static": 4096}
"""Chunks per call of a local model: enough to keep its threads busy, small enough that
Ctrl-C and progress stay prompt (a few seconds of a transformer's work, a fifth of a second of
a static model's). Each batch is also one transaction and one graph insertion: the static
engine at 64 took half as long again over the large benchmark tree (21 s against 14-15)."""
_EMBEDDING_META = "embedding"
_NOTICE_META = "notice"
_BUSY_NOTICE = 5.0
"""Seconds another writer must have been at it before a query's catch-up says it answers from
the index as it was."""

_log = logging.getLogger("coderecall")


class _Filters(TypedDict):
    limit: int
    languages: list[str] | None
    directories: list[str] | None
    kinds: list[str] | None
    per_file: int
    with_content: bool


@dataclass(frozen=True, slots=True)
class _Embedded:
    """What the embedding step of an indexing run did, for its report."""

    model_id: str | None = None
    done: int = 0
    pending: int = 0
    error: str | None = None
    notices: tuple[str, ...] = ()


_T = TypeVar("_T")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _timed(
    operation: str,
) -> Callable[[Callable[Concatenate[CodeIndex, _P], _R]], Callable[Concatenate[CodeIndex, _P], _R]]:
    """Records the method's latency under ``operation`` (see :meth:`CodeIndex.metrics`)."""

    def wrap(
        method: Callable[Concatenate[CodeIndex, _P], _R],
    ) -> Callable[Concatenate[CodeIndex, _P], _R]:
        @functools.wraps(method)
        def timed(self: CodeIndex, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            with self._recorder.timed(operation):
                return method(self, *args, **kwargs)

        return timed

    return wrap


class CodeIndex:
    """The code index of one project root.

    ``config`` is a :class:`Config` used as is, or a mapping of overrides merged on top of the
    project's files and environment (see :func:`load_config`). Unless ``force`` is true, the
    root must look like a project: not ``/`` nor the home directory, and holding a marker such
    as ``.git`` or ``pyproject.toml`` (or lying inside a git work tree). Nothing is read or
    created on construction beyond the configuration; the index is opened on first use.

    Use it as a context manager, or call :meth:`close`, to release the index files promptly.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        config: Config | Mapping[str, object] | None = None,
        *,
        force: bool = False,
    ) -> None:
        path = Path(root).expanduser()
        resolved = path.resolve()
        if not resolved.is_dir():
            # coderecall errors that are also the standard ones (FileNotFoundError,
            # NotADirectoryError), so both kinds of `except` catch them.
            error = RootNotADirectoryError if resolved.exists() else RootNotFoundError
            raise error(f"{os.strerror(error._errno)} (the root must be a directory)", str(path))
        if not is_storable(str(resolved)):
            raise RootRefusedError(
                f"the root {scrub(str(resolved))} has a name that is not valid UTF-8; the index "
                "stores paths as text: rename the folder",
                root=resolved,
            )
        if config is not None and not isinstance(config, (Config, Mapping)):
            raise TypeError(f"config must be a Config or a mapping, not {type(config).__name__}")
        check_root(resolved, force=force)
        self._root = resolved
        self._config = config if isinstance(config, Config) else load_config(resolved, config)
        self._index_dir = find_index_dir(resolved, self._config)
        self._is_kb = False  # a knowledge base's own index: it has none of its own
        self._unopened()
        track(self)

    def _unopened(self) -> None:
        """The state of an index not opened yet in this process: what a new object starts
        with, and what a forked child goes back to."""
        self._lock = threading.Lock()
        self._native: NativeIndex | None = None
        self._built = False
        self._embedding: EmbeddingChoice | None = None
        self._semantic_on: NativeIndex | None = None  # the handle the model was given to
        self._semantic_lock = threading.Lock()
        self._knowledge_bases = KnowledgeBases(self)
        self._recorder = Recorder()
        self._memory: MemoryStore | None = None
        # What the index recorded of its model when the configured remote model was last
        # left unprobed, and that choice: until the record changes there is nothing new.
        self._unprobed: tuple[dict[str, object], EmbeddingChoice] | None = None

    def _after_fork(self) -> None:
        """In a forked child: the parent's handles are kept, unused and unclosed (see
        :mod:`coderecall._fork`), and the next call opens the index again."""
        keep(self._native, self._embedding, self._unprobed, self._knowledge_bases, self._memory)
        self._unopened()

    @property
    def root(self) -> Path:
        """The resolved project root."""
        return self._root

    @property
    def config(self) -> Config:
        return self._config

    @property
    def index_dir(self) -> Path:
        """Where the index lives: ``index_dir`` from the config, else the repository's
        ``<git common dir>/coderecall`` (shared by its worktrees), else ``<root>/.coderecall``.
        """
        return self._index_dir

    def __repr__(self) -> str:
        return f"CodeIndex(root={str(self._root)!r}, index_dir={str(self._index_dir)!r})"

    def __enter__(self) -> CodeIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the index files; the object reopens them if used again."""
        with self._lock:
            native, self._native = self._native, None
            choice, self._embedding = self._embedding, None
            self._semantic_on = None
            memory, self._memory = self._memory, None
        self._knowledge_bases.close()
        if memory is not None:
            memory.close()
        if native is not None:
            native.close()
        if choice is not None:
            choice.close()

    def index(
        self,
        force: bool = False,
        progress: bool | ProgressCallback | None = None,
        *,
        embed: bool = True,
        wait: bool | float = True,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the files under the root.

        Only files whose (mtime, size) changed are read; with ``force`` every file is re-read
        (unchanged content is still not parsed twice). ``progress`` is a ``(done, total)``
        callback, ``False`` for none, or ``None``/``True`` for a bar when stderr is a
        terminal. Ctrl-C cancels cleanly: the previous index state stays published.

        Then, with ``embed`` and an embedding engine (see ``embedding.provider``), the chunk
        contents that have no vector yet are embedded; contents seen before, in any file,
        branch or earlier run, are not embedded again. Last, what no worktree has used for
        ``gc-grace`` is deleted.

        One process writes an index at a time (searches never wait). When another one is
        writing, ``wait`` decides: ``True`` waits (logging once whom for), ``False`` raises
        :class:`~coderecall.IndexBusyError` at once, a number waits at most that many seconds.

        ``paths`` (relative to the root, or absolute inside it; a folder stands for everything
        below it) limits the update to those paths, by the same rules, without walking the
        rest of the tree: what a watcher does after a few files changed. A given path that no
        longer exists (or is now ignored) leaves the index.
        """
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]  # one path, not its characters
        relative = None if paths is None else [self._relative(path) for path in paths]
        walked = self._walk_ahead() if relative is None else None
        return self._index(force, progress, embed, wait, relative, walked)

    def _walk_ahead(self) -> Future[Collection] | None:
        """The walk of the whole root, started in a thread when the index is not open yet:
        opening it in a new process takes longer than the walk and releases the GIL, so the
        two overlap (a command-line ``index`` or query catch-up waits for the longer one
        only). Walking before the write lease is taken is as good as walking under it: files
        change at any moment of a walk anyway."""
        if self._native is not None:
            return None
        walked: Future[Collection] = Future()
        root, config = self._root, self._config

        def walk() -> None:
            try:
                walked.set_result(collect(root, config))
            except BaseException as exc:  # raised where the walk is used
                walked.set_exception(exc)

        threading.Thread(target=walk, name="coderecall-walk", daemon=True).start()
        return walked

    @_timed("index")
    def _index(
        self,
        force: bool,
        progress: bool | ProgressCallback | None,
        embed: bool,
        wait: bool | float,
        relative: list[str] | None,
        walked: Future[Collection] | None,
    ) -> IndexReport:
        """:meth:`index` with its paths made relative; ``walked`` the walk already under
        way, if any (only when ``relative`` is ``None``)."""
        started = time.perf_counter()

        def leased(native: NativeIndex) -> IndexReport:
            with WriteLease(self._index_dir).hold(wait):
                return self._index_leased(native, started, force, progress, embed, relative, walked)

        native = self._open(rebuild_broken=force)
        try:
            report = leased(native)
        except IndexCorruptError as exc:
            if not force:
                raise IndexCorruptError(f"{exc}{_REBUILD_HINT.format(self._index_dir)}") from exc
            # Damage the open did not see (a malformed page deep in the file).
            native = self._reopen_set_aside()
            report = leased(native)
        if relative is None and not self._is_kb:
            self._knowledge_bases.refresh(native, force=force, embed=embed, wait=wait)
        return report

    def _index_leased(
        self,
        native: NativeIndex,
        started: float,
        force: bool,
        progress: bool | ProgressCallback | None,
        embed: bool,
        paths: list[str] | None = None,
        walked: Future[Collection] | None = None,
    ) -> IndexReport:
        if paths is None:
            collection = walked.result() if walked else collect(self._root, self._config)
            scope = None
        else:
            collection = collect_paths(self._root, self._config, paths)
            scope = scope_of(paths)
        # Only the part of the view in scope: a few lookups rather than the whole index.
        view = native.file_stats(scope)
        changed: list[tuple[str, int, int]] = []
        skipped = {reason: list(paths) for reason, paths in collection.skipped.items()}
        for path, (mtime_ns, size) in collection.files.items():
            known = None if force else view.get(path)
            if known is None or known[:2] != (mtime_ns, size):
                changed.append((path, mtime_ns, size))
            elif known[2] is not None:
                # Skipped for its content last time and unchanged since: not read again.
                skipped.setdefault(known[2], []).append(path)
        removed = [path for path in view if path not in collection.files]
        stats = self._update(native, changed, removed, progress)
        embedding = self._embed(native, progress) if embed else _Embedded()
        for path, reason in stats["skipped"]:
            skipped.setdefault(reason, []).append(path)
        decoded: dict[str, list[str]] = {}
        for path, encoding in stats["decoded"]:
            decoded.setdefault(encoding, []).append(path)
        report = IndexReport(
            root=self._root,
            files_seen=len(collection.files),
            files_unchanged=len(collection.files) - len(changed),
            files_parsed=stats["files_parsed"],
            files_reused=stats["files_reused"],
            files_removed=stats["files_removed"],
            chunks_added=stats["chunks_added"],
            symbols_added=stats["symbols_added"],
            bytes_parsed=stats["bytes_parsed"],
            skipped=_counts(skipped),
            skipped_examples=_examples(skipped),
            seconds=time.perf_counter() - started,
            generation=stats["generation"],
            decoded=_counts(decoded),
            decoded_examples=_examples(decoded),
            embedding_model=embedding.model_id,
            chunks_embedded=embedding.done,
            embeddings_pending=embedding.pending,
            embedding_error=embedding.error,
            notices=embedding.notices,
        )
        for notice in report.notices:
            # Once per index, not on every run: agents index often.
            if native.get_meta(_NOTICE_META) != notice:
                _log.warning("%s", notice)
                native.set_meta(_NOTICE_META, notice)
        if paths is None:  # a watcher's few-file update would hide the last full report
            native.set_meta(self._meta_key("last_report"), json.dumps(report.to_dict()))
        native.set_meta(self._meta_key("last_indexed"), datetime.now(timezone.utc).isoformat())
        _log.info(
            "indexed %s: %d files, %d parsed, %d removed, %d chunks added in %.2f s",
            self._root,
            report.files_seen,
            report.files_parsed,
            report.files_removed,
            report.chunks_added,
            report.seconds,
        )
        collected = native.collect_garbage(self._config.gc_grace)
        if any(collected.values()):
            _log.info("collected unused index data: %s", collected)
        self._built = True
        return report

    def _meta_key(self, name: str) -> str:
        """Worktrees share the index: what belongs to one root is stored under its name."""
        return f"{name}:{self._root}"

    def health(self, repair: bool = False, *, wait: bool | float = True) -> HealthReport:
        """Check the index: SQLite's own integrity, that every stored file version reads
        back, and the files derived from it (this root's lexical index, the vector graph of
        the recorded embedding model, temporary files of interrupted writes) against it.

        With ``repair``, derived files are rebuilt from SQLite (no embedding provider is
        called) and file versions that cannot be read back are dropped, their paths read
        again by the next :meth:`index`, under the write lease (``wait`` as in
        :meth:`index`). Damage to SQLite itself is reported, never repaired here:
        ``index(force=True)`` sets such an index aside and rebuilds it. A root never indexed
        is reported with ``exists=False`` (and no problem), and no index is created.
        """
        try:
            native = self._open_existing()
        except IndexCorruptError as exc:  # the message says how to rebuild
            return HealthReport(self._index_dir, (str(exc),), ())
        if native is None:
            return HealthReport(self._index_dir, (), (), exists=False)
        try:
            return self._health(native, repair, wait)
        except IndexCorruptError as exc:
            problem = f"{exc}{_REBUILD_HINT.format(self._index_dir)}"
            return HealthReport(self._index_dir, (problem,), ())

    def _health(self, native: NativeIndex, repair: bool, wait: bool | float) -> HealthReport:
        if native.status()["generation"] == 0:  # a first index killed before it published
            return HealthReport(self._index_dir, (), (), exists=False)
        recorded = _recorded_embedding(native)
        model, dims = recorded.get("model_id"), recorded.get("dims")
        vectors = (
            (model, dims, self._config.embedding_quantization)
            if isinstance(model, str) and isinstance(dims, int)
            else None
        )
        lease = WriteLease(self._index_dir, "repairing").hold(wait) if repair else nullcontext()
        with lease:
            found = native.health(repair, vectors)
        return HealthReport(self._index_dir, tuple(found["problems"]), tuple(found["repaired"]))

    def _update(
        self,
        native: NativeIndex,
        changed: list[tuple[str, int, int]],
        removed: list[str],
        progress: bool | ProgressCallback | None,
    ) -> UpdateStats:
        def poll() -> tuple[int, int]:
            return native.progress()

        return _run_cancellable(
            native,
            lambda: native.update(str(self._root), changed, removed, self._config.max_file_size),
            progress,
            "Indexing",
            poll,
            (len(changed), len(changed)),
        )

    def _embed(
        self, native: NativeIndex, progress: bool | ProgressCallback | None, *, again: bool = True
    ) -> _Embedded:
        """Embeds the contents that have no vector for the model yet.

        The lexical index is already published: a remote provider that fails leaves the rest
        pending for the next run (every finished batch is stored), and says why. A remote
        model found to have changed width is chosen again (checked, under a new id) and the
        run goes on with it once.
        """
        try:
            choice = self._semantic(native)
        except ProviderError as exc:  # probing a remote model's width failed
            _log.warning("embedding skipped: %s (the next run tries again)", exc)
            return _Embedded(error=str(exc))
        notices = (choice.notice,) if choice.notice else ()
        if choice.embedder is None or choice.model_id is None:
            return _Embedded(notices=notices)
        counts = [0, 0]  # (done, total) as the native call reports them

        def note(done: int, total: int) -> None:
            counts[:] = [done, total]

        remote = choice.remote
        if remote is None:
            batch = _LOCAL_BATCH.get(choice.embedder.kind, 64)
        else:
            batch = remote.batch_size * remote.concurrency
        error = None
        try:
            done = _run_cancellable(
                native,
                lambda: native.embed_pending(batch, note),
                progress,
                "Embedding",
                lambda: (counts[0], counts[1]),
                None,
            )
        except WidthChangedError as exc:
            self._drop_engine(choice)
            if again:
                _log.warning("%s", exc)
                return self._embed(native, progress, again=False)
            done, error = counts[0], str(exc)
        except ProviderError as exc:
            done, error = counts[0], str(exc)
            _log.warning("embedding stopped early: %s (the next run goes on)", exc)
        pending = 0
        if error:
            # The native call reports its total with each batch; before the first, count.
            total = counts[1] or len(native.pending_texts(choice.model_id))
            pending = total - done
        return _Embedded(choice.model_id, done, pending, error, notices)

    def _last_report(self, native: NativeIndex) -> IndexReport | None:
        """The report of this root's last full index run, if one is stored and reads back
        (a damaged one is no reason to fail a status or a search)."""
        stored = native.get_meta(self._meta_key("last_report"))
        if not stored:
            return None
        try:
            return IndexReport.from_dict(json.loads(stored))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def _why_no_vectors(self, native: NativeIndex) -> str:
        """What to do about a model with no vectors: run an index, or, when the last run
        could not embed, what stopped it (a user who just indexed is not told to index)."""
        report = self._last_report(native)
        if report is not None and report.embedding_error:
            error = report.embedding_error
            return f"; the last index run could not embed: {error} (`coderecall index` retries)"
        return " (`coderecall index` embeds the code)"

    def _drop_engine(self, choice: EmbeddingChoice) -> None:
        """Forgets ``choice`` (a remote model that changed width) so that the next index run
        chooses the engine again and checks the model's width."""
        with self._semantic_lock:
            if self._embedding is not choice:
                return  # another thread dropped it already
            self._embedding, self._semantic_on = None, None
        choice.close()

    def _semantic(self, native: NativeIndex, *, probe: bool = True) -> EmbeddingChoice:
        """The configured embedding engine, chosen once and handed to ``native``. Without
        ``probe``, a remote model of unknown width is left unchosen: it has stored no vector
        to compare a query with, and a search must not wait on a provider that may be down
        (an index run probes it, with all its retries)."""
        with self._semantic_lock:  # searches and an update may race here (an MCP server)
            return self._semantic_locked(native, probe)

    def _semantic_locked(self, native: NativeIndex, probe: bool) -> EmbeddingChoice:
        if self._embedding is None:
            recorded = _recorded_embedding(native)
            # A search would otherwise build (and close) a provider's HTTP client every time.
            if not probe and self._unprobed is not None and self._unprobed[0] == recorded:
                return self._unprobed[1]
            choice = select_embedding(self._config, recorded=recorded, probe=probe)
            if choice.embedder is None and choice.remote is not None:
                choice.close()
                if self._unprobed is None:
                    _log.warning(
                        "semantic channel unavailable, searching lexically: no vectors of %s yet%s",
                        choice.model,
                        self._why_no_vectors(native),
                    )
                self._unprobed = (recorded, choice)
                return choice
            self._embedding = choice
        choice = self._embedding
        if choice.embedder is not None and choice.model_id and self._semantic_on is not native:
            native.set_embedder(
                choice.embedder,
                choice.model_id,
                self._config.embedding_quantization,
                self._config.embedding_weight,
            )
            self._semantic_on = native
            record = {
                "provider": choice.provider,
                "model": choice.model,
                "model_id": choice.model_id,
                "dims": choice.embedder.dims,
            }
            if _recorded_embedding(native) != record:
                native.set_meta(_EMBEDDING_META, json.dumps(record, sort_keys=True))
        return choice

    def estimate(self) -> EmbeddingEstimate:
        """What embedding the chunks without a vector would cost, sending nothing.

        The lexical index is brought up to date first (that is local); then the pending chunk
        contents are counted with the local model's tokenizer, or estimated for a remote API
        at its list price.
        """
        native = self._open()
        self.index(progress=False, embed=False)
        recorded = _recorded_embedding(native)
        choice = self._embedding or select_embedding(self._config, recorded=recorded, probe=False)
        if choice.provider == "none":
            return EmbeddingEstimate("none", None, 0, 0, 0.0)
        # A remote model of unknown width has no vectors yet: every content is pending.
        texts = native.pending_texts(choice.model_id or "")
        if choice.remote is not None:
            estimate = choice.remote.estimate(texts)
            if choice.embedder is None:
                choice.close()  # kept only when it can embed
            else:
                self._embedding = choice
            return EmbeddingEstimate(
                choice.provider, choice.model, len(texts), estimate.tokens, estimate.cost_usd
            )
        self._embedding = choice
        assert choice.embedder is not None  # a local choice always has its engine
        tokens = sum(
            len(ids)
            for start in range(0, len(texts), 256)
            for ids in choice.embedder.tokenize(texts[start : start + 256])
        )
        return EmbeddingEstimate(choice.provider, choice.model, len(texts), tokens, 0.0)

    @_timed("search")
    def search(
        self,
        query: str,
        limit: int | None = None,
        *,
        language: str | Sequence[str] | None = None,
        directory: str | Sequence[str] | None = None,
        kind: str | Sequence[str] | None = None,
        with_content: bool = True,
        source: str | Sequence[str] | None = None,
    ) -> list[SearchHit]:
        """The chunks that best match ``query``, best first.

        ``query`` may be an identifier, a path fragment or plain words. ``limit`` defaults
        to the configured ``limit``. ``language``, ``directory`` (relative to the root, or
        absolute inside it) and ``kind`` each take one value or several and keep only
        matching chunks. An index that was never built is built first. A unit too long for
        one chunk is split into overlapping windows: for plain words, neighbouring windows of
        one unit among the first ten candidates show as one hit that spans them.

        ``source`` picks what is searched: ``None`` (the default) the code and every
        knowledge base, ``"code"`` the code alone, ``"kb"`` every knowledge base, or the
        names of knowledge bases (see :meth:`add_knowledge_base`). Each hit's ``source``
        says where it comes from; a knowledge base's paths are relative to its folder, and
        ``directory`` filters only the code.
        """
        if not query.strip():
            raise QueryError("the search query is empty")
        query = scrub(query)
        filters = self._filters(limit, language, directory, kind, with_content)
        sources = [(CODE, self)] if self._is_kb else self._knowledge_bases.sources(source)
        lists = [
            (
                label,
                index._search_here(
                    query, filters if label == CODE else {**filters, "directories": None}
                ),
            )
            for label, index in sources
        ]
        if len(lists) == 1 and lists[0][0] == CODE:
            return lists[0][1]
        return fuse(lists, filters["limit"])

    def _search_here(self, query: str, filters: _Filters) -> list[SearchHit]:
        native = self._ready()
        return self._hits(
            native, lambda lexical_only: native.search(query, **filters, lexical_only=lexical_only)
        )

    def add_knowledge_base(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        index: bool = True,
        progress: bool | ProgressCallback | None = None,
    ) -> KnowledgeBase:
        """Index the folder ``path`` (docs, a sibling repository) beside the code, under
        ``name`` (default: the folder's name), and index it now unless ``index`` is false.

        Its files are searched with the code by default (see ``source`` in :meth:`search`)
        and kept up to date by every :meth:`index`. Refused: a folder inside the root that
        the project's walk indexes (use ``directory=`` to search it alone; one it leaves out,
        such as gitignored vendor docs, may be added), another worktree of this repository
        (indexed on its own in the same index), one holding the root, ``/`` and the home
        folder, and a folder already added under another name.
        """
        return self._knowledge_bases.add(path, name, index=index, progress=progress)

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        """The knowledge bases of this index, with their size and when they were indexed."""
        return self._knowledge_bases.listed()

    def remove_knowledge_base(self, name: str) -> bool:
        """Stop indexing and searching the knowledge base ``name`` and drop its index (its
        stored files are collected after ``gc-grace``). False if there is none by that name."""
        return self._knowledge_bases.remove(name)

    @_timed("find_similar")
    def find_similar(
        self,
        code: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        limit: int | None = None,
        language: str | Sequence[str] | None = None,
        directory: str | Sequence[str] | None = None,
        kind: str | Sequence[str] | None = None,
        with_content: bool = True,
    ) -> list[SearchHit]:
        """The chunks most like a piece of ``code``, or like the chunk of ``path`` (relative
        to the root, or absolute inside it) that holds ``line`` (1-based; that chunk itself is
        left out, and so are the other windows of a unit split for length). Nearest
        neighbours by meaning when an embedding engine is configured, otherwise the chunks
        sharing the most terms; neighbouring windows of another long unit show as one hit.
        Filters as in :meth:`search`.
        """
        if (code is None) == (path is None):
            raise QueryError("find_similar needs either code or a path and line")
        if code is not None and not code.strip():
            raise QueryError("the code to compare with is empty")
        relative = None
        if path is not None:
            if line is None or line < 1:
                raise QueryError(f"a line number of at least 1 is needed with path, got {line}")
            line = min(line, MAX_COUNT)  # past any file's end all the same
            relative = self._relative(path)
        filters = self._filters(limit, language, directory, kind, with_content)
        native = self._ready()
        return self._hits(
            native,
            lambda lexical_only: native.similar(
                code, relative, line or 0, **filters, lexical_only=lexical_only
            ),
        )

    def _filters(
        self,
        limit: int | None,
        language: str | Sequence[str] | None,
        directory: str | Sequence[str] | None,
        kind: str | Sequence[str] | None,
        with_content: bool,
    ) -> _Filters:
        """The native search arguments every kind of search shares, checked."""
        limit = self._config.limit if limit is None else limit
        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        return {
            "limit": min(limit, MAX_COUNT),
            "languages": _lowered(language),
            "directories": self._directories(directory),
            "kinds": _lowered(kind),
            "per_file": self._config.per_file,
            "with_content": with_content,
        }

    def _ready(self) -> NativeIndex:
        """The open index, built first if it never was, with its embedding engine set."""
        native = self._open()
        if not self._built:
            if native.generation() == 0 and not native.file_stats():
                self.index()
            self._built = True
        try:
            self._semantic(native, probe=False)
        except ProviderError as exc:
            _log.warning("semantic channel unavailable, searching lexically: %s", exc)
        return native

    def _catch_up(self) -> None:
        """Before a one-off query (a command-line search in a new process): bring an index
        that exists up to date, since files may have changed since it was last written.

        Nothing to do while a watcher keeps it current (see :class:`~._lease.WatchMark`) or
        another process is writing it (the query reads what it last published). New code is
        embedded only by the static engine, which costs microseconds per chunk; a slower
        engine's vectors wait for the next ``index`` (the chunks are found lexically until
        then), and a remote provider is never called on a query's behalf. A failed update
        is logged and the query answered from the index as it is.
        """
        if watched(self._index_dir) or not self._index_dir.is_dir():
            return  # a watcher's; or none yet, which the query builds (_ready)
        walked = self._walk_ahead()
        native = self._open()
        if native.generation() == 0 and not native.file_stats():
            return
        try:
            static = self._semantic(native, probe=False).provider == "static"
        except ProviderError:
            static = False  # the query says why, as it would without an update
        try:
            # A bar on a terminal, for a catch-up that takes long (after a branch switch).
            self._index(
                force=False, progress=None, embed=static, wait=False, relative=None, walked=walked
            )
        except IndexBusyError as exc:
            # Brief overlaps (another query's catch-up) go unsaid; a long run is news.
            since = exc.since
            busy = (datetime.now(timezone.utc) - since).total_seconds() if since else 0.0
            if busy > _BUSY_NOTICE:
                _log.warning(
                    "another process has been writing the index for %.0f s; answering from the "
                    "index as it was before that run (%s)",
                    busy,
                    exc.holder,
                )
        except (Error, OSError) as exc:  # OSError: an index folder this user may not write
            _log.warning("the index could not be brought up to date, answering as it is: %s", exc)

    def _hits(self, native: NativeIndex, run: Callable[[bool], list[HitDict]]) -> list[SearchHit]:
        """Runs a search; when a remote provider cannot embed the query, runs it again
        lexical-only (the hits' channels say so) rather than failing."""
        try:
            try:
                hits = run(False)
            except ProviderError as exc:
                _log.warning("semantic channel unavailable, searching lexically: %s", exc)
                if isinstance(exc, WidthChangedError) and (choice := self._embedding):
                    self._drop_engine(choice)
                hits = run(True)
        except ValueError as exc:  # the core names an unknown language, kind or path
            raise QueryError(str(exc)) from None
        return [
            SearchHit(
                path=hit["path"],
                start_line=hit["start_line"],
                end_line=hit["end_line"],
                language=hit["language"],
                kind=hit["kind"],
                symbol=hit["symbol"],
                symbol_path=hit["symbol_path"],
                score=hit["score"],
                content=hit["content"],
                channels=tuple(hit["channels"]),
            )
            for hit in hits
        ]

    def _relative(self, given: str | os.PathLike[str], *, what: str = "path") -> str:
        """A root-relative POSIX path (absolute ones must lie inside the root)."""
        path = Path(given).expanduser()
        if path.is_absolute():
            path = Path(os.path.relpath(path.resolve(), self._root))
        relative = posixpath.normpath(path.as_posix())
        if relative == ".." or relative.startswith("../"):
            raise QueryError(f"{what} {str(given)!r} is outside the root {self._root}")
        return relative

    def _directories(self, directory: str | Sequence[str] | None) -> list[str] | None:
        """Root-relative POSIX folders; ``None`` when the whole root is searched."""
        folders = []
        for given in _as_list(directory):
            folder = self._relative(given, what="directory")
            if folder == ".":
                return None
            folders.append(folder)
        return folders or None

    @_timed("implementation_lookup")
    def implementation_lookup(
        self, symbol: str, *, limit: int = 5, with_content: bool = True
    ) -> list[Definition]:
        """The definitions of ``symbol``, the authoritative one first.

        ``symbol`` is a name (``parse_args``), a qualified name (``Client.send``,
        ``pkg.client.Client.send``, ``store::Store::open``) or ``path:line``. Implementation
        comes before tests and ``impl`` blocks; an exact name before a case-insensitive match.
        """
        native = self._ready()
        return definitions(
            native.call_graph(), native.lines, symbol, limit=limit, with_content=with_content
        )

    def _no_definition(self, symbol: str) -> str:
        """Why :meth:`implementation_lookup` found nothing, with names spelled like it."""
        return missing(self._ready().call_graph(), symbol)

    @_timed("call_graph")
    def call_graph(
        self,
        symbol: str,
        *,
        direction: Direction = "both",
        depth: int = 1,
        limit: int = 100,
    ) -> CallGraphResult:
        """Who calls ``symbol`` and what it calls, up to ``depth`` (1 to 5) calls away.

        Every edge says how it was resolved (``resolved``, ``inferred`` or ``unresolved``
        with a reason); ``complete`` is false when callers may be missing, so an empty list
        is only "no callers" when ``complete`` is true.
        """
        return neighbourhood(
            self._call_graph(), symbol, direction=direction, depth=depth, limit=limit
        )

    @_timed("call_graph_path")
    def call_graph_path(self, source: str, target: str, *, max_depth: int = 8) -> CallPath:
        """The shortest chain of calls from ``source`` to ``target`` (symbols as in
        :meth:`implementation_lookup`)."""
        return shortest_path(self._call_graph(), source, target, max_depth=max_depth)

    @_timed("context")
    def context(self, query: str, *, budget: int | None = None) -> ContextPack:
        """The evidence an agent needs for ``query``, within ``budget`` tokens (default
        ``context-budget``), counted with a real tokenizer.

        An identifier gets its definition, its callers' call sites and its callees'
        signatures; a file path gets the file's outline, head and most-called definitions;
        anything else gets hybrid search hits. See :mod:`coderecall._context`.
        """
        budget = self._config.context_budget if budget is None else budget
        native = self._ready()
        return build_context(self, native.call_graph, native.lines, scrub(query), budget)

    def _indexed(self, path: str) -> bool:
        """Whether the index holds the file ``path`` (root-relative)."""
        return path in self._ready().file_stats([path])

    def memory(self, *, path: str | os.PathLike[str] | None = None) -> MemoryStore:
        """This project's :class:`MemoryStore` (in the user's memory database unless
        ``path``), searching with the index's local embedding model when it has one. A
        remote provider is never given memory: records stay lexical then."""
        with self._lock:
            if self._memory is not None and (path is None or self._memory.path == Path(path)):
                return self._memory
        with self._semantic_lock:
            choice = self._embedding or select_embedding(self._config, probe=False)
            local = choice.provider in ("static", "transformer") and choice.embedder is not None
            if self._embedding is None:
                if local:
                    self._embedding = choice  # loaded once, for code search too
                else:
                    choice.close()
        from ._memory import MemoryStore  # only for the projects that use memory (50 ms)

        store = MemoryStore(
            self._root,
            path=path,
            embedder=choice.embedder if local else None,
            model_id=choice.model_id if local else None,
        )
        with self._lock:
            if self._memory is None:
                self._memory = store
        return store

    def metrics(self) -> IndexMetrics:
        """Counts and sizes of the index, its call graph, and the latency (p50/p95) of the
        operations this object ran recently."""
        status = self.status()
        native = self._open_existing()
        graph: dict[str, float] = {}
        kbs = 0
        if native is not None and status.exists:
            graph = dict(cast("Mapping[str, float]", native.call_graph().stats()))
            kbs = len(load_entries(native))
        return IndexMetrics(
            status=status,
            graph=graph,
            vectors=status.vectors,
            embedding_model=status.embedding_model,
            knowledge_bases=kbs,
            operations=cast("Mapping[str, Mapping[str, float]]", self._recorder.snapshot()),
        )

    def logs(
        self,
        limit: int = 100,
        *,
        level: str | None = None,
        since: datetime | None = None,
        contains: str | None = None,
    ) -> list[LogEntry]:
        """Recent records of the index log (``<index>/logs/coderecall.log``, written by the
        CLI, watchers and MCP servers), oldest first: at most ``limit``, at or above
        ``level``, after ``since``, with ``contains`` in the message."""
        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        try:
            return read_logs(self._index_dir, limit, level=level, since=since, contains=contains)
        except ValueError as exc:
            raise QueryError(str(exc)) from None

    def _log_to_file(self) -> None:
        """Also write this process's log records to the index log (see :meth:`logs`); for
        the CLI, watchers and MCP servers, which own their process's logging. Only the folder
        is made: the index itself may be damaged, for ``index --force`` to set aside."""
        with self._lock:
            self._ensure_index_dir()
        attach_file_log(self._index_dir)

    def _call_graph(self) -> CallGraph:
        return self._ready().call_graph()

    def status(self) -> IndexStatus:
        """Counts and sizes of the index, and the report of the last indexing run."""
        native = self._open_existing()
        if native is None:
            return IndexStatus(
                root=self._root,
                index_dir=self._index_dir,
                exists=False,
                generation=0,
                files=0,
                chunks=0,
                symbols=0,
                file_versions=0,
                languages={},
                db_bytes=0,
                lexical_bytes=0,
                last_indexed=None,
                last_report=None,
            )
        counts = native.status()
        last_indexed = native.get_meta(self._meta_key("last_indexed"))
        model = _recorded_embedding(native).get("model_id")
        model = model if isinstance(model, str) else None
        return IndexStatus(
            root=self._root,
            index_dir=self._index_dir,
            exists=counts["generation"] > 0,
            generation=counts["generation"],
            files=counts["files"],
            chunks=counts["chunks"],
            symbols=counts["symbols"],
            file_versions=counts["file_versions"],
            languages=dict(counts["languages"]),
            db_bytes=counts["db_bytes"],
            lexical_bytes=counts["lexical_bytes"],
            last_indexed=datetime.fromisoformat(last_indexed) if last_indexed else None,
            last_report=self._last_report(native),
            embedding_model=model,
            vectors=native.vector_count(model) if model is not None else 0,
            watched=watched(self._index_dir),
        )

    def _open(self, *, rebuild_broken: bool = False) -> NativeIndex:
        with self._lock:
            if self._native is None:
                self._ensure_index_dir()
                try:
                    self._native = NativeIndex(str(self._index_dir), str(self._root))
                except IndexCorruptError as exc:
                    # Only damage: an index that is busy (another process holds its write lock
                    # for long) or on a failing disk is not set aside, nor said to need it.
                    if not rebuild_broken:
                        hint = _REBUILD_HINT.format(self._index_dir)
                        raise IndexCorruptError(f"{exc}{hint}") from exc
                    self._set_aside_broken_index()
                    self._native = NativeIndex(str(self._index_dir), str(self._root))
            return self._native

    def _reopen_set_aside(self) -> NativeIndex:
        """Close the damaged index, set it aside and open a new one in its place."""
        with self._lock:
            native, self._native = self._native, None
            if native is not None:
                native.close()
            self._set_aside_broken_index()
        return self._open()

    def _set_aside_broken_index(self) -> None:
        """Rename an index that cannot be opened, so a rebuild starts clean and nothing is
        deleted: the old files stay beside it for inspection."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        aside = self._index_dir.with_name(f"{self._index_dir.name}.broken-{stamp}")
        logging_here = detach_file_log(self._index_dir)  # its open file would move along
        self._index_dir.rename(aside)
        self._create_index_dir()
        if logging_here:
            attach_file_log(self._index_dir)
        _log.warning("the damaged index was set aside as %s; rebuilding", aside)

    def _open_existing(self) -> NativeIndex | None:
        """The index if one was ever created; status() must not create files."""
        if self._native is None and not self._index_dir.is_dir():
            return None
        return self._open()

    def _ensure_index_dir(self) -> None:
        if not self._index_dir.is_dir():
            self._create_index_dir()

    def _create_index_dir(self) -> None:
        try:
            self._index_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            code = exc.errno if exc.errno is not None else errno.EIO
            raise IndexDirError(
                code,
                f"cannot create the index folder ({exc.strerror or exc}); set index-dir to a "
                "folder that can be written",
                str(self._index_dir),
            ) from None
        if self._index_dir == self._root / LOCAL_INDEX_DIR:
            # Keeps the index out of `git status` should the folder become a repository.
            (self._index_dir / ".gitignore").write_text("*\n", encoding="utf-8")

    def watch(
        self,
        *,
        debounce: float | None = None,
        on_update: Callable[[IndexReport], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> Watcher:
        """Keep the index current while files change, from a background thread.

        Indexes once, then once per burst of changes after ``debounce`` seconds of quiet
        (default: the ``watch-debounce`` setting): only the changed files, or everything
        when the checkout switches branch or the ignore rules change. ``on_update`` gets
        each update's report; ``on_error`` each failure (logged too; watching goes on),
        and the error that ends watching when the root is deleted or moved (which its
        ``wait()`` raises and its ``error`` holds). Returns the running
        :class:`~coderecall._watch.Watcher`: call its ``stop()``, or use it as a context
        manager.
        """
        from ._watch import Watcher  # watchdog is loaded only by those who watch

        return Watcher(self, debounce=debounce, on_update=on_update, on_error=on_error).start()

    def _cancel(self) -> None:
        """Ask an update running in another thread to stop (a watcher stopping); it raises
        ``CancelledError`` there and publishes nothing."""
        native = self._native
        if native is not None:
            native.cancel()


def _counts(paths_by_key: dict[str, list[str]]) -> dict[str, int]:
    """How many paths each reason or encoding of a report has, in order."""
    return {key: len(paths) for key, paths in sorted(paths_by_key.items())}


def _examples(paths_by_key: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    """A few paths of each reason or encoding of a report, in order."""
    return {
        key: tuple(sorted(paths)[:_EXAMPLES_PER_REASON])
        for key, paths in sorted(paths_by_key.items())
    }


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _lowered(value: str | Sequence[str] | None) -> list[str] | None:
    """Language and kind names are lower-case in the index."""
    names = [name.strip().lower() for name in _as_list(value)]
    return names or None


def _recorded_embedding(native: NativeIndex) -> dict[str, object]:
    """The embedding engine the index last used (provider, model, model id, dims)."""
    text = native.get_meta(_EMBEDDING_META)
    try:
        record = json.loads(text) if text else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _run_cancellable(
    native: NativeIndex,
    work: Callable[[], _T],
    progress: bool | ProgressCallback | None,
    label: str,
    poll: Callable[[], tuple[int, int]],
    final: tuple[int, int] | None,
) -> _T:
    """Run a native call in a worker thread so the main thread stays responsive.

    A native call blocks signal handling for its duration, so Ctrl-C would only land after
    the whole call. Waiting here instead lets KeyboardInterrupt arrive at once; it cancels
    the call, waits for it to unwind and propagates, as does an exception of the progress
    callback: the call must not outlive the write lease its caller holds. ``poll`` feeds the
    progress display; ``final`` is shown at the end, however quick the call was.
    """
    outcome: list[_T | BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the waiting thread, which re-raises
            outcome.append(exc)

    worker = threading.Thread(target=run, name=f"coderecall-{label.lower()}", daemon=True)
    with progress_reporter(progress, label) as report:
        worker.start()
        try:
            while worker.is_alive():
                worker.join(_POLL_SECONDS)
                if report is not None:
                    report(*poll())
        except BaseException:  # Ctrl-C, or the progress callback raised
            native.cancel()
            worker.join()
            raise
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        if report is not None:
            report(*(final or poll()))
    return result
