"""What every remote embedder does, whatever the service: batching, threads, checks, accounting.

A provider subclass only says how to build one request and read one answer
(:meth:`RemoteEmbedder._request`, :meth:`RemoteEmbedder._parse`) and declares its limits and
defaults as class attributes. Everything else lives here:

* texts are cut to the provider's per-input token limit, so a huge chunk never earns a 400;
  a batch that earns one all the same (a self-hosted model with a shorter context than its
  server's API suggests) is split to find the input, which is sent shortened rather than
  stopping every later batch;
* they are grouped into batches of consecutive texts, bounded by ``batch_size`` and by a token
  budget per request, and the batches run on up to ``concurrency`` threads; output order is
  input order;
* every answer is checked (count, width, finite values) and every row is L2-normalised, since
  some services (Gemini below full size) return raw vectors;
* tokens are counted from the service's usage field when it has one, else estimated.
"""

from __future__ import annotations

import abc
import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from coderecall._errors import (
    ConfigError,
    ProviderAuthError,
    ProviderError,
    ProviderResponseError,
    WidthChangedError,
)

from ._http import Counters, RetryPolicy, Transport, display_host, log
from ._settings import ProviderSettings
from ._tokens import estimate_tokens, truncate_tokens

__all__ = ["Estimate", "InputKind", "ModelFacts", "RemoteEmbedder", "Usage", "count_field"]

InputKind = Literal["document", "query"]

_QUERY_CACHE_SIZE = 256
"""Queries are short and repeat within an agent session; 256 vectors of 3072 floats is 3 MB."""

_QUERY_RETRIES = 1
"""Retries of a query embedding: a search should fall back to lexical rather than wait."""
_QUERY_READ_TIMEOUT = 10.0
"""Seconds a search waits for its query embedding (at most the configured read timeout)."""
_QUERY_MAX_WAIT = 3.0
"""Longest pause before a query's retry: a server asking for more (``Retry-After``) fails the
query at once, and the search answers lexically instead of stalling an agent."""
_MALFORMED_RETRIES = 1
"""A malformed answer is usually a proxy's hiccup: ask once more, then fail."""

_PROBE_TEXT = "dimension probe"

_PER_INPUT_STATUSES = frozenset({400, 413, 422})
"""Rejections that may be about one input (too long, filtered) rather than the request."""
_SHORTEN_STEPS = 4
"""A rejected input is tried at 1/2, 1/4, 1/8 and 1/16 of its tokens before giving up."""


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What is known of a hosted model without asking: its default width and list price."""

    dims: int
    price_per_million: float
    """USD per million input tokens: list prices, override with ``price_per_million``."""


@dataclass(frozen=True, slots=True)
class Usage:
    """What an embedder has consumed so far.

    ``requests`` counts HTTP requests sent, ``retries`` those that repeated an earlier one,
    ``tokens`` the input tokens of successful requests (the service's count where it reports
    one, else an estimate) and ``cost_usd`` their price.
    """

    requests: int
    retries: int
    tokens: int
    cost_usd: float


@dataclass(frozen=True, slots=True)
class Estimate:
    """What embedding some texts would take, computed offline: nothing is sent."""

    texts: int
    tokens: int
    requests: int
    cost_usd: float


class RemoteEmbedder(abc.ABC):
    """Embeds texts with a remote service; one subclass per provider.

    Thread-safe. Use it as a context manager, or call :meth:`close`, to release its
    connections. Vectors are ``float32`` rows of unit length, like the local ``Embedder``'s.
    """

    # Facts about the service, set by each subclass.
    default_model: ClassVar[str | None] = None
    default_base_url: ClassVar[str | None] = None
    key_envs: ClassVar[tuple[str, ...]] = ()
    """Environment variables tried, in order, when neither api_key nor api_key_env is set."""
    key_required: ClassVar[bool] = True
    max_batch_size: ClassVar[int]
    """The API's limit on inputs per request."""
    default_batch_size: ClassVar[int | None] = None
    """Inputs per request when batch_size is not set; ``None`` means the API's limit."""
    default_batch_tokens: ClassVar[int]
    """Token budget per request: the API's limit less a margin for estimation error."""
    input_token_limit: ClassVar[int]
    """Tokens per input: the model's context less a margin."""
    default_concurrency: ClassVar[int] = 2
    models: ClassVar[Mapping[str, ModelFacts]] = {}
    names_server: ClassVar[bool] = False
    """Whether the model id names the server: a self-hosted model name says little."""
    unreachable_hint: ClassVar[str] = "check the network and embedding.base-url"
    """What to check when no connection to the service can be opened."""

    provider: str
    model: str

    def __init__(self, settings: ProviderSettings) -> None:
        self.provider = settings.provider
        model = settings.model or self.default_model
        base_url = settings.base_url or self.default_base_url
        if model is None or base_url is None:  # the settings check this for the provider
            raise ConfigError(f"{self.provider} needs a model and a base_url", key="model")
        self.model = model
        self._settings = settings
        self._base_url = base_url.rstrip("/")
        self._batch_size = settings.batch_size or self.default_batch_size or self.max_batch_size
        if self._batch_size > self.max_batch_size:
            raise ConfigError(
                f"embedding.batch-size {self._batch_size} is above {self.provider}'s limit of "
                f"{self.max_batch_size} inputs per request",
                key="batch_size",
            )
        self._batch_tokens = settings.max_batch_tokens or self.default_batch_tokens
        input_tokens = settings.input_token_limit or self.input_token_limit
        self._input_tokens = min(input_tokens, self._batch_tokens)
        self._concurrency = settings.concurrency or self.default_concurrency
        facts = self.models.get(model)
        self._dims: int | None = settings.dims or (facts.dims if facts else None)
        # A width learnt earlier is only expected: the model behind the name may have changed.
        self._dims_expected = self._dims is None and settings.expected_dims is not None
        # Learnt from answers (not set, not a hosted model's table): another width later means
        # another model under the name, not a wrong setting.
        self._dims_learnt = self._dims is None
        self._dims = self._dims or settings.expected_dims
        if settings.price_per_million is not None:
            self._price = settings.price_per_million
        else:
            self._price = facts.price_per_million if facts else 0.0
        key, self._auth_hint = self._resolve_key(settings)
        self._key_missing = key is None and self.key_required
        self._counters = Counters()
        secrets = [key or "", *_url_password(base_url)]
        self._transport = Transport(
            provider=self.provider,
            base_url=self._base_url,
            headers=self._headers(key),
            secrets=secrets,
            auth_hint=self._auth_hint,
            unreachable_hint=self.unreachable_hint,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
            policy=RetryPolicy(settings.max_retries, settings.backoff_base, settings.backoff_max),
            request_interval=settings.request_interval or 0.0,
            max_connections=self._concurrency + 1,
            counters=self._counters,
        )
        self._dims_lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._closed = False

    # -- what subclasses provide ----------------------------------------------------------

    def _headers(self, key: str | None) -> dict[str, str]:
        """Request headers carrying the key (a bearer token unless the service differs)."""
        return {"Authorization": f"Bearer {key}"} if key else {}

    @abc.abstractmethod
    def _request(self, texts: list[str], kind: InputKind) -> tuple[str, dict[str, Any]]:
        """The path (relative to the base URL) and JSON body embedding ``texts``."""

    @abc.abstractmethod
    def _parse(self, data: Any, count: int) -> tuple[list[Any], int | None]:
        """The vectors in an answer, in input order, and the tokens it reports (if any).

        Raises :class:`ProviderResponseError` (see :meth:`_malformed`) when the shape is
        wrong; the vectors' lengths and values are checked afterwards.
        """

    def _prepare(self, text: str, kind: InputKind) -> str:
        """The text as sent; a hook for models that want an instruction prefix."""
        return text

    def _parse_data_list(self, data: Any) -> tuple[list[Any], int | None]:
        """Read the OpenAI-style answer that Voyage shares: ``{"data": [{"index",
        "embedding"}], "usage": {"prompt_tokens" or "total_tokens"}}``."""
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise self._malformed("no 'data' list")
        vectors: list[Any] = [None] * len(items)
        for position, item in enumerate(items):
            if not isinstance(item, dict) or "embedding" not in item:
                raise self._malformed("an item without 'embedding'")
            index = item.get("index", position)
            if (
                not isinstance(index, int)
                or not 0 <= index < len(items)
                or vectors[index] is not None
            ):
                raise self._malformed(f"a missing, repeated or out-of-range index {index!r}")
            vectors[index] = item["embedding"]
        usage = data.get("usage")
        return vectors, count_field(usage, "prompt_tokens", "total_tokens")

    # -- public surface ------------------------------------------------------------------

    @property
    def dims(self) -> int:
        """Length of every vector: known for hosted models and when ``dims`` is set, else
        learnt from the first answer (one tiny request if nothing was embedded yet)."""
        if self._dims is None:
            with self._probe_lock:
                if self._dims is None:
                    self._embed([_PROBE_TEXT], "document")
        assert self._dims is not None  # set by any successful answer
        return self._dims

    @property
    def known_dims(self) -> int | None:
        """:attr:`dims` if it is known without a request (``dims`` set, a hosted model's
        table, ``expected_dims``, or an earlier answer), else ``None``."""
        return self._dims

    def confirm_dims(self) -> None:
        """Check a width that is only expected (``expected_dims``) with one quick request, and
        take the server's: a model replaced under the same name answers with another width,
        and so gets another :attr:`model_id` (its vectors never mix with the old ones). When
        the request fails the expectation stands, without a retry: the calls that embed will
        fail or not, and a run with nothing to embed must not wait on a provider that is
        down."""
        with self._probe_lock:
            if not self._dims_expected or self._key_missing or self._closed:
                return
            with self._dims_lock:
                expected, self._dims = self._dims, None
            try:
                self._embed_batch(self._probe("document"), quick=True, retries=0)
            except ProviderError as exc:
                log.info("%s: the model's width stays unchecked: %s", self.provider, exc)
            with self._dims_lock:
                if self._dims is None:
                    self._dims = expected
                elif self._dims != expected:
                    log.warning(
                        "%s: %s now returns %d-dimensional vectors, not %s: a new model, whose "
                        "vectors are stored apart",
                        self.provider,
                        self.model,
                        self._dims,
                        expected,
                    )

    @property
    def batch_size(self) -> int:
        """Most texts in one request (fewer when the token budget fills first)."""
        return self._batch_size

    @property
    def concurrency(self) -> int:
        """Most requests in flight at once; calls with ``batch_size * concurrency`` texts or
        more keep them all busy."""
        return self._concurrency

    @property
    def model_id(self) -> str:
        """A stable identity for vectors in the index: provider, model and width, plus the
        server for self-hosted providers (two servers may serve different weights under one
        name)."""
        ident = f"{self.provider}:{self.model}:{self.dims}"
        if self.names_server:
            path = _url_path(self._base_url)
            ident += f"@{display_host(self._base_url)}{path}"
        return ident

    @property
    def usage(self) -> Usage:
        requests, retries, tokens = self._counters.snapshot()
        return Usage(requests, retries, tokens, tokens * self._price / 1e6)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit-length row per text, embedded as documents (code to be found).

        A text the service refuses (HTTP 400, 413 or 422 for its batch, while the batch's
        other texts pass) is sent shortened, with a warning; one it refuses even at a
        sixteenth of its length fails the call, naming its position and length."""
        return self._embed(list(texts), "document")

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The unit-length vector of a search query, embedded as a query where the service
        distinguishes the two. Recent queries are cached."""
        with self._cache_lock:
            vector = self._cache.get(text)
            if vector is not None:
                self._cache.move_to_end(text)
        if vector is None:
            vector = self._embed([text], "query", quick=True)[0]
            with self._cache_lock:
                self._cache[text] = vector
                while len(self._cache) > _QUERY_CACHE_SIZE:
                    self._cache.popitem(last=False)
        copy: npt.NDArray[np.float32] = vector.copy()  # callers may scribble on their vector
        return copy

    def estimate(self, texts: Sequence[str]) -> Estimate:
        """Tokens, requests and cost that :meth:`embed_documents` would spend on ``texts``,
        by the same estimate and batching it uses; sends nothing."""
        tokens = [estimate_tokens(text) for text in self._prepare_all(list(texts), "document")]
        total = sum(tokens)
        return Estimate(len(tokens), total, len(self._plan(tokens)), total * self._price / 1e6)

    def close(self) -> None:
        """Release the connections; the embedder cannot be used afterwards."""
        self._closed = True
        self._transport.close()

    def __enter__(self) -> RemoteEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} provider={self.provider!r} model={self.model!r} "
            f"host={display_host(self._base_url)!r}>"
        )

    # -- machinery -----------------------------------------------------------------------

    def _resolve_key(self, settings: ProviderSettings) -> tuple[str | None, str]:
        """The API key, and what to tell the user when it is missing or rejected."""
        if settings.api_key:
            return settings.api_key, "check embedding.api-key"
        names = (settings.api_key_env,) if settings.api_key_env else self.key_envs
        for name in names:
            value = os.environ.get(name, "").strip()
            if value:
                return value, f"set {name} to a valid key"
        if names:
            wanted = " (or ".join(names) + ")" * (len(names) - 1)
            return None, f"set {wanted} to a valid key"
        return None, "set embedding.api-key-env to the environment variable that holds the key"

    def _prepare_all(self, texts: list[str], kind: InputKind) -> list[str]:
        prepared = []
        for text in texts:
            # Services reject empty inputs; a space embeds as "nothing" and keeps the row.
            text = self._prepare(text if text.strip() else " ", kind)
            prepared.append(truncate_tokens(text, self._input_tokens))
        return prepared

    def _plan(self, tokens: list[int]) -> list[tuple[int, int]]:
        """Consecutive ``(start, end)`` ranges within the batch size and token budget."""
        batches = []
        start = 0
        used = 0
        for index, count in enumerate(tokens):
            full = index - start >= self._batch_size or used + count > self._batch_tokens
            if index > start and full:
                batches.append((start, index))
                start, used = index, 0
            used += count
        if start < len(tokens):
            batches.append((start, len(tokens)))
        return batches

    def _embed(
        self, texts: list[str], kind: InputKind, *, quick: bool = False
    ) -> npt.NDArray[np.float32]:
        """``quick``: for a caller that cannot wait (a search's query, a width check): one
        quick retry, no long pause, and a refused text is not sent again shortened."""
        if self._closed:
            raise ProviderError(f"this {self.provider} embedder is closed", provider=self.provider)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        if self._key_missing:
            raise ProviderAuthError(
                f"no API key for {self.provider}: {self._auth_hint}", provider=self.provider
            )
        prepared = self._prepare_all(texts, kind)
        tokens = [estimate_tokens(text) for text in prepared]
        batches = self._plan(tokens)
        stop = threading.Event()

        def run(start: int, end: int) -> npt.NDArray[np.float32]:
            if stop.is_set():  # another batch failed: the whole call fails anyway
                raise ProviderError("cancelled", provider=self.provider)
            batch = _Batch(prepared[start:end], tokens[start:end], start, len(texts), kind)
            if quick:
                return self._embed_batch(batch, quick=True)
            return self._embed_finding_refused(batch)

        if len(batches) == 1 or self._concurrency == 1:
            parts = [run(start, end) for start, end in batches]
        else:
            workers = min(self._concurrency, len(batches))
            with ThreadPoolExecutor(workers, thread_name_prefix="coderecall-embed") as pool:
                futures = [pool.submit(run, start, end) for start, end in batches]
                parts = _results_in_order(futures, stop)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _probe(self, kind: InputKind) -> _Batch:
        """A batch of one short text that any model reads."""
        (text,) = self._prepare_all([_PROBE_TEXT], kind)
        return _Batch([text], [estimate_tokens(text)], 0, 1, kind)

    def _embed_finding_refused(self, batch: _Batch) -> npt.NDArray[np.float32]:
        """The batch's rows; when the service refuses it in a way that may be about one
        input, its halves are sent apart to find that input (see :meth:`embed_documents`)."""
        outcome = self._try_batch(batch)
        if isinstance(outcome, ProviderError):
            return self._bisect(batch, outcome, _Search(outcome))
        return outcome

    def _bisect(
        self, batch: _Batch, refused: ProviderError, search: _Search
    ) -> npt.NDArray[np.float32]:
        """Rows for ``batch``, which was ``refused``: each half is sent, and a refused half
        split again. When both halves are refused and nothing has passed yet, one short text
        is sent alone: refused too, the request is at fault (a wrong model name), not an
        input, and the first refusal is raised after four requests, not ``2n``; else several
        inputs are (two over the model's length, one in each half)."""
        if len(batch.texts) == 1:
            return self._shorten(batch, refused)
        halves = batch.halves()
        outcomes = [self._try_batch(half) for half in halves]
        left, right = outcomes
        if (
            isinstance(left, ProviderError)
            and isinstance(right, ProviderError)
            and not search.passed
            and isinstance(self._try_batch(self._probe(batch.kind)), ProviderError)
        ):
            raise search.original
        search.passed = True
        parts = []
        for half, outcome in zip(halves, outcomes, strict=True):
            if isinstance(outcome, ProviderError):
                outcome = self._bisect(half, outcome, search)
            parts.append(outcome)
        return np.concatenate(parts)

    def _shorten(self, batch: _Batch, refused: ProviderError) -> npt.NDArray[np.float32]:
        """The row of one refused text, embedded cut to a half, a quarter... of its tokens;
        a ProviderError naming the input when even a sixteenth is refused."""
        (text,), (tokens,) = batch.texts, batch.tokens
        tried = ""
        for step in range(1, _SHORTEN_STEPS + 1):
            limit = tokens >> step
            cut = truncate_tokens(text, limit)
            if limit < 1 or not cut.strip():
                break
            tried = f" even cut to 1/{1 << step}"
            outcome = self._try_batch(_Batch([cut], [estimate_tokens(cut)], *batch.where))
            if not isinstance(outcome, ProviderError):
                log.warning(
                    "%s: input %d of %d (%d characters, about %d tokens) was refused "
                    "(HTTP %s) and embedded cut to 1/%d of its length; if the model reads "
                    "fewer tokens, lower embedding.input-token-limit (now %d)",
                    self.provider,
                    batch.offset + 1,
                    batch.total,
                    len(text),
                    tokens,
                    refused.status,
                    1 << step,
                    self._input_tokens,
                )
                return outcome
        raise ProviderError(
            f"{refused}; input {batch.offset + 1} of {batch.total} ({len(text)} characters, "
            f"about {tokens} tokens) refused{tried}; if it is too long for the model, lower "
            f"embedding.input-token-limit (now {self._input_tokens})",
            provider=self.provider,
            status=refused.status,
        )

    def _try_batch(self, batch: _Batch) -> npt.NDArray[np.float32] | ProviderError:
        """The batch's rows, or the error of a refusal that may be about one of its inputs."""
        try:
            return self._embed_batch(batch)
        except ProviderError as exc:
            if type(exc) is not ProviderError or exc.status not in _PER_INPUT_STATUSES:
                raise
            return exc

    def _embed_batch(
        self, batch: _Batch, *, quick: bool = False, retries: int | None = None
    ) -> npt.NDArray[np.float32]:
        """The batch's rows; ``quick`` as for :meth:`_embed`, ``retries`` fewer still."""
        if quick and retries is None:
            retries = _QUERY_RETRIES
        failure: ProviderResponseError | None = None
        for attempt in range(_MALFORMED_RETRIES + 1):
            if attempt:
                self._counters.add(retries=1)
                log.warning("%s; asking again", failure)
            path, body = self._request(batch.texts, batch.kind)
            try:
                # A search waits on a query: one quick retry within a short timeout, then
                # lexical results instead.
                data = self._transport.post(
                    path,
                    body,
                    max_retries=retries,
                    read_timeout=_QUERY_READ_TIMEOUT if quick else None,
                    max_wait=_QUERY_MAX_WAIT if quick else None,
                )
                vectors, reported = self._parse(data, len(batch.texts))
                matrix = self._check(vectors, len(batch.texts))
            except WidthChangedError:
                raise  # asking again gets the same width
            except ProviderResponseError as exc:
                failure = exc
                continue
            self._counters.add(tokens=sum(batch.tokens) if reported is None else reported)
            return matrix
        assert failure is not None
        raise failure

    def _check(self, vectors: list[Any], count: int) -> npt.NDArray[np.float32]:
        """The answer's vectors as unit-length float32 rows, or a ProviderResponseError."""
        if len(vectors) != count:
            raise self._malformed(f"{len(vectors)} vectors for {count} inputs")
        matrix: npt.NDArray[np.float32] | None = None
        with contextlib.suppress(TypeError, ValueError):  # ragged rows, nulls, objects
            matrix = np.asarray(vectors, dtype=np.float32)
        if matrix is None or matrix.ndim != 2 or matrix.shape[1] == 0:
            raise self._malformed("vectors that are not lists of numbers of one length")
        if not np.isfinite(matrix).all():
            raise self._malformed("non-finite values in a vector")
        width = matrix.shape[1]
        with self._dims_lock:
            if self._dims is None:
                self._dims = width
            expected = self._dims
            if width == expected:
                self._dims_expected = False
        if width != expected and self._dims_learnt:
            # Not the caller's to fix: the vectors held are of the old model, and the next
            # index run (see confirm_dims) stores the new model's apart.
            raise WidthChangedError(
                f"{self.provider}: {self.model} now returns {width}-dimensional vectors, not "
                f"the {expected} it returned before: the model changed, and the next index run "
                "embeds with the new width",
                provider=self.provider,
            )
        if width != expected:
            asked = self._settings.dims
            raise self._malformed(
                f"{width}-dimensional vectors although embedding.dims = {asked} (set it to "
                "what the model returns, or remove it)"
                if asked
                else f"{width}-dimensional vectors where {expected} were expected (check "
                "embedding.model, or set embedding.dims to what the model returns)"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        zero = norms[:, 0] == 0
        if zero.any():
            log.warning("%s: %d all-zero vectors left as they are", self.provider, zero.sum())
            norms[zero] = 1.0
        return np.ascontiguousarray(matrix / norms, dtype=np.float32)

    def _malformed(self, what: str) -> ProviderResponseError:
        return ProviderResponseError(
            f"{self.provider}: unexpected answer from {display_host(self._base_url)}: {what}",
            provider=self.provider,
        )


@dataclass(frozen=True, slots=True)
class _Batch:
    """Consecutive prepared texts of one call, their estimated tokens, and where they sit in
    the call (for messages that name a refused input)."""

    texts: list[str]
    tokens: list[int]
    offset: int
    total: int
    kind: InputKind

    @property
    def where(self) -> tuple[int, int, InputKind]:
        return self.offset, self.total, self.kind

    def halves(self) -> tuple[_Batch, _Batch]:
        middle = len(self.texts) // 2
        return (
            _Batch(self.texts[:middle], self.tokens[:middle], *self.where),
            _Batch(
                self.texts[middle:],
                self.tokens[middle:],
                self.offset + middle,
                self.total,
                self.kind,
            ),
        )


@dataclass(slots=True)
class _Search:
    """The hunt for refused inputs in one batch: its first refusal, and whether a request
    has passed since (then inputs are at fault, not the request)."""

    original: ProviderError
    passed: bool = False


def _results_in_order(
    futures: list[Future[npt.NDArray[np.float32]]], stop: threading.Event
) -> list[npt.NDArray[np.float32]]:
    """Each future's result in order; on the first error, cancel what has not started and
    raise it without waiting for the batches still in flight to succeed."""
    wait(futures, return_when=FIRST_EXCEPTION)
    for future in futures:
        error = future.exception() if future.done() else None
        if error is not None:
            stop.set()
            for other in futures:
                other.cancel()
            raise error
    return [future.result() for future in futures]


def count_field(mapping: Any, *keys: str) -> int | None:
    """The first positive integer under one of ``keys``; servers that do not count send 0."""
    if not isinstance(mapping, dict):
        return None
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _url_password(url: str) -> list[str]:
    password = urlsplit(url).password
    return [password] if password else []


def _url_path(url: str) -> str:
    return urlsplit(url).path.rstrip("/")
