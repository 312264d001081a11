"""Remote embedding providers against real HTTP servers on 127.0.0.1 (no mocked transport).

Each fake server speaks one provider's wire format (see ``provider_servers``); timeouts and
backoffs are tiny so that the retry paths run in milliseconds.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from email.utils import formatdate
from typing import Any

import httpx
import numpy as np
import pytest

from coderecall import ConfigError, Error
from coderecall._errors import (
    ProviderAuthError,
    ProviderError,
    ProviderResponseError,
    ProviderUnavailableError,
)
from coderecall._providers import (
    PROVIDERS,
    ProviderSettings,
    RemoteEmbedder,
    _base,
    estimate_tokens,
    make_provider,
)
from coderecall._providers._http import parse_retry_after
from coderecall._providers._tokens import truncate_tokens
from provider_servers import (
    TOKENS_PER_TEXT,
    Dialect,
    FakeServer,
    Reply,
    Seen,
    SilentServer,
    unit_vector,
)

KEY = "test-key-for-fake-servers"
SECRET = "sk-leakcheck-9f8e7d6c5b4a3210"
"""A distinctive key that must never show up in an error, a repr or a log record."""

_BASE_PATH = {"openai": "/v1", "openai-compatible": "/v1", "voyage": "/v1", "gemini": "/v1beta"}
_KEY_VARIABLES = ("OPENAI_API_KEY", "VOYAGE_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")

Serve = Callable[..., FakeServer]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key or proxy of the developer's shell may reach the fake servers."""
    for name in (*_KEY_VARIABLES, "ALL_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Factory: ``serve(dialect, key=KEY, dims=8)`` starts a fake server, closed afterwards."""
    servers: list[FakeServer] = []

    def start(dialect: Dialect, *, key: str | None = KEY, dims: int = 8) -> FakeServer:
        server = FakeServer(dialect, key=key, dims=dims)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def settings_for(provider: str, url: str, **overrides: Any) -> ProviderSettings:
    """Settings pointing at a fake server, with timeouts and backoffs for tests."""
    values: dict[str, Any] = {
        "base_url": url + _BASE_PATH.get(provider, ""),
        "api_key": KEY,
        "connect_timeout": 1.0,
        "read_timeout": 2.0,
        "max_retries": 2,
        "backoff_base": 0.01,
        "backoff_max": 1.0,
    }
    if provider == "openai-compatible":
        values["model"] = "local-model"
    values.update(overrides)
    return ProviderSettings(provider, **values)


def connect(provider: str, url: str, **overrides: Any) -> RemoteEmbedder:
    return make_provider(settings_for(provider, url, **overrides))


def assert_rows(rows: np.ndarray[Any, Any], texts: list[str], dims: int) -> None:
    assert rows.dtype == np.float32
    assert rows.shape == (len(texts), dims)
    expected = np.stack([unit_vector(text, dims) for text in texts])
    np.testing.assert_allclose(rows, expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)


TEXTS = ["def alpha(): pass", "class Beta:\n    x = 1", "gamma = [1, 2, 3]", "delta()", "eps"]

# -- each provider's wire format ------------------------------------------------------------


def test_openai_sends_the_wire_format_and_keeps_order(serve: Serve) -> None:
    server = serve("openai")
    with connect("openai", server.url, dims=16, batch_size=2, concurrency=1) as embedder:
        rows = embedder.embed_documents(TEXTS)
        usage = embedder.usage
        model_id = embedder.model_id
    assert_rows(rows, TEXTS, 16)
    assert [seen.texts for seen in server.requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    for seen in server.requests:
        assert seen.path == "/v1/embeddings"
        assert seen.headers["authorization"] == f"Bearer {KEY}"
        assert seen.body["model"] == "text-embedding-3-small"
        assert seen.body["encoding_format"] == "float"
        assert seen.body["dimensions"] == 16
    assert model_id == "openai:text-embedding-3-small:16"
    # Tokens are the server's count, not the estimate; the price is the model's list price.
    assert (usage.requests, usage.retries, usage.tokens) == (3, 0, TOKENS_PER_TEXT * 5)
    assert usage.cost_usd == pytest.approx(TOKENS_PER_TEXT * 5 * 0.02 / 1e6)


def test_openai_known_model_needs_no_probe(serve: Serve) -> None:
    server = serve("openai", dims=1536)
    with connect("openai", server.url) as embedder:
        assert embedder.known_dims == 1536
        assert (embedder.batch_size, embedder.concurrency) == (2048, 4)
        assert embedder.dims == 1536
        assert embedder.model_id == "openai:text-embedding-3-small:1536"
        assert embedder.embed_documents([]).shape == (0, 1536)
        assert server.requests == []
        assert_rows(embedder.embed_documents(["x"]), ["x"], 1536)
    assert "dimensions" not in server.requests[0].body


def test_openai_compatible_key_is_optional_and_never_the_openai_one(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # must not travel to another server
    server = serve("openai", key=None, dims=12)
    with connect("openai-compatible", server.url, api_key=None) as embedder:
        # The width is learnt with one tiny request; the id names the server.
        assert embedder.model_id == f"openai-compatible:local-model:12@127.0.0.1:{server.port}/v1"
        assert len(server.requests) == 1
        assert_rows(embedder.embed_documents(TEXTS), TEXTS, 12)
        assert embedder.usage.cost_usd == 0.0
    assert all("authorization" not in seen.headers for seen in server.requests)
    assert server.requests[1].body["model"] == "local-model"


def test_openai_compatible_key_from_the_named_variable(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", KEY)
    server = serve("openai")
    with connect("openai-compatible", server.url, api_key=None, api_key_env="LOCAL_LLM_KEY") as e:
        assert_rows(e.embed_documents(["a"]), ["a"], 8)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_voyage_input_types_dims_and_query_cache(serve: Serve) -> None:
    server = serve("voyage")
    with connect("voyage", server.url, dims=32) as embedder:
        assert embedder.model_id == "voyage:voyage-code-3:32"
        assert_rows(embedder.embed_documents(TEXTS), TEXTS, 32)
        query = embedder.embed_query("where is alpha")
        query[:] = 0  # the caller's copy; the cache keeps its own
        again = embedder.embed_query("where is alpha")
        usage = embedder.usage
    np.testing.assert_allclose(again, unit_vector("where is alpha", 32), atol=1e-6)
    documents, queries = server.requests
    assert documents.path == queries.path == "/v1/embeddings"
    assert documents.headers["authorization"] == f"Bearer {KEY}"
    assert documents.body["input_type"] == "document"
    assert queries.body["input_type"] == "query"
    assert queries.texts == ["where is alpha"]
    for seen in server.requests:
        assert seen.body["model"] == "voyage-code-3"
        assert seen.body["output_dimension"] == 32
        assert seen.body["truncation"] is True
    assert usage.tokens == TOKENS_PER_TEXT * 6
    assert usage.cost_usd == pytest.approx(TOKENS_PER_TEXT * 6 * 0.18 / 1e6)


def test_gemini_wire_format_task_types_and_estimated_tokens(serve: Serve) -> None:
    server = serve("gemini")
    with connect("gemini", server.url, dims=24) as embedder:
        rows = embedder.embed_documents(TEXTS)
        query = embedder.embed_query("how is beta built")
        usage = embedder.usage
    assert_rows(rows, TEXTS, 24)
    np.testing.assert_allclose(query, unit_vector("how is beta built", 24), atol=1e-6)
    documents, queries = server.requests
    for seen in server.requests:
        assert seen.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
        assert seen.headers["x-goog-api-key"] == KEY
        assert "authorization" not in seen.headers
        for one in seen.body["requests"]:
            assert one["model"] == "models/gemini-embedding-001"
            assert one["outputDimensionality"] == 24
    assert {one["taskType"] for one in documents.body["requests"]} == {"RETRIEVAL_DOCUMENT"}
    assert queries.body["requests"][0]["taskType"] == "CODE_RETRIEVAL_QUERY"
    # Gemini reports no usage: the tokens are the estimate.
    estimated = sum(estimate_tokens(text) for text in [*TEXTS, "how is beta built"])
    assert usage.tokens == estimated
    assert usage.cost_usd == pytest.approx(estimated * 0.15 / 1e6)


def test_gemini_key_falls_back_to_google_api_key(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    server = serve("gemini")
    with connect("gemini", server.url, api_key=None, dims=8, model="models/gemini-embedding-001"):
        pass
    with connect("gemini", server.url, api_key=None, dims=8) as embedder:
        assert_rows(embedder.embed_documents(["a"]), ["a"], 8)
    assert server.requests[0].headers["x-goog-api-key"] == KEY


def test_gemini_batches_hold_at_most_100_texts(serve: Serve) -> None:
    server = serve("gemini")
    texts = [f"text number {i}" for i in range(250)]
    with connect("gemini", server.url, dims=8) as embedder:
        assert_rows(embedder.embed_documents(texts), texts, 8)
    assert sorted(len(seen.texts) for seen in server.requests) == [50, 100, 100]
    with pytest.raises(ConfigError, match="limit of 100") as caught:
        connect("gemini", server.url, batch_size=500)
    assert caught.value.key == "batch_size"


def test_ollama_wire_format_prefixes_and_probed_dims(serve: Serve) -> None:
    server = serve("ollama", key=None, dims=10)
    with connect("ollama", server.url, api_key=None) as embedder:
        assert embedder.known_dims is None
        assert (embedder.batch_size, embedder.concurrency) == (64, 2)
        assert embedder.dims == 10  # one probe request
        assert embedder.known_dims == 10
        assert embedder.model_id == f"ollama:nomic-embed-text:10@127.0.0.1:{server.port}"
        rows = embedder.embed_documents(TEXTS)
        query = embedder.embed_query("find gamma")
        usage = embedder.usage
    assert_rows(rows, [f"search_document: {text}" for text in TEXTS], 10)
    np.testing.assert_allclose(query, unit_vector("search_query: find gamma", 10), atol=1e-6)
    probe, _, queries = server.requests
    for seen in server.requests:
        assert seen.path == "/api/embed"
        assert "authorization" not in seen.headers
        assert seen.body["model"] == "nomic-embed-text"
        assert seen.body["truncate"] is True
    assert len(probe.texts) == 1
    assert queries.texts == ["search_query: find gamma"]
    assert usage.tokens == TOKENS_PER_TEXT * 7  # prompt_eval_count
    assert usage.cost_usd == 0.0


def test_defaults_need_no_request() -> None:
    expected = {
        "openai": "openai:text-embedding-3-small:1536",
        "voyage": "voyage:voyage-code-3:1024",
        "gemini": "gemini:gemini-embedding-001:3072",
    }
    for provider, model_id in expected.items():
        # An unroutable base URL: any request would fail the test.
        with make_provider(
            ProviderSettings(provider, base_url="http://192.0.2.1:9", connect_timeout=0.01)
        ) as embedder:
            assert embedder.model_id == model_id
    with make_provider(ProviderSettings("ollama")) as embedder:
        assert embedder.model == "nomic-embed-text"
        assert "127.0.0.1:11434" in repr(embedder)
    assert set(PROVIDERS) == {"openai", "openai-compatible", "voyage", "gemini", "ollama"}


# -- batching, truncation, concurrency --------------------------------------------------------


def test_batches_respect_the_token_budget(serve: Serve) -> None:
    server = serve("openai")
    texts = [" ".join(["word"] * 20) + f" n{i}" for i in range(5)]  # 22 tokens each
    assert {estimate_tokens(text) for text in texts} == {22}
    with connect("openai", server.url, dims=8, max_batch_tokens=50, concurrency=1) as embedder:
        estimate = embedder.estimate(texts)
        assert_rows(embedder.embed_documents(texts), texts, 8)
    assert [len(seen.texts) for seen in server.requests] == [2, 2, 1]
    assert estimate.requests == 3
    for seen in server.requests:
        assert sum(estimate_tokens(text) for text in seen.texts) <= 50


def test_huge_inputs_are_cut_to_the_input_limit(serve: Serve) -> None:
    server = serve("openai")
    huge = "alpha beta(gamma);\n" * 5000  # about 30k estimated tokens, over OpenAI's 8191
    with connect("openai", server.url, dims=8) as embedder:
        embedder.embed_documents([huge, "small"])
    sent = server.requests[0].texts[0]
    assert huge.startswith(sent)
    assert 7000 < estimate_tokens(sent) <= 8000
    assert server.requests[0].texts[1] == "small"


def test_the_input_token_limit_can_be_lowered(serve: Serve) -> None:
    server = serve("openai")
    long = "alpha beta(gamma);\n" * 100  # about 600 estimated tokens
    with connect("openai-compatible", server.url, input_token_limit=50) as embedder:
        embedder.embed_documents([long, "small"])
    sent = server.requests[-1].texts
    assert long.startswith(sent[0])
    assert 40 < estimate_tokens(sent[0]) <= 50
    assert sent[1] == "small"


# -- inputs the service refuses ---------------------------------------------------------------


def _refusing_long_inputs(limit: int) -> Callable[[Seen], Reply | None]:
    """A server whose model reads at most ``limit`` characters, as TEI and vLLM refuse an
    input over a short model's context: HTTP 400 for the whole batch."""

    def hook(seen: Seen) -> Reply | None:
        if any(len(text) > limit for text in seen.texts):
            return Reply(400, {"error": {"message": "Input validation error: too many tokens"}})
        return None

    return hook


def test_a_refused_input_is_found_and_sent_shortened(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve("openai")
    server.hook = _refusing_long_inputs(400)
    long = "def handler(request):\n    return response.json()\n" * 20  # 1000 characters
    texts = [f"chunk {i}" for i in range(8)]
    texts[5] = long
    with (
        caplog.at_level(logging.WARNING, "coderecall"),
        connect("openai-compatible", server.url, batch_size=8) as embedder,
    ):
        rows = embedder.embed_documents(texts)
    # The batch, its halves, the refused half's halves, and so on down to the one input.
    assert [len(seen.texts) for seen in server.requests[:7]] == [8, 4, 4, 2, 2, 1, 1]
    (cut,) = server.requests[-1].texts
    assert long.startswith(cut)
    assert 0 < len(cut) <= 400
    assert len(server.requests) <= 7 + 2
    shortened = [*texts[:5], cut, *texts[6:]]
    assert_rows(rows, shortened, 8)
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "input 6 of 8" in message
    assert f"{len(long)} characters" in message
    assert "embedding.input-token-limit" in message
    assert "handler" not in message, "never the text itself"


def test_a_request_refused_whole_costs_four_requests(serve: Serve) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(400, {"error": {"message": "model 'nope' does not exist"}})
    texts = [f"chunk {i} " * 30 for i in range(64)]
    with (
        connect("openai-compatible", server.url) as embedder,
        pytest.raises(ProviderError, match="model 'nope' does not exist") as caught,
    ):
        embedder.embed_documents(texts)
    assert type(caught.value) is ProviderError
    assert caught.value.status == 400
    assert "input" not in str(caught.value), "not about one input"
    # The batch, its halves, then one short text alone, which is refused too.
    assert [len(seen.texts) for seen in server.requests] == [64, 32, 32, 1]
    assert server.requests[-1].texts[0] not in texts


def test_refused_inputs_in_both_halves_are_each_found(serve: Serve) -> None:
    """Two inputs over the model's length, one in each half, refused with the same message:
    inputs at fault, not the request (a short text alone passes), so both are shortened."""
    server = serve("openai")
    server.hook = _refusing_long_inputs(400)
    long = "def handler(request):\n    return response.json()\n" * 20
    texts = [f"chunk {i}" for i in range(8)]
    texts[1] = texts[6] = long
    with connect("openai-compatible", server.url, batch_size=8) as embedder:
        rows = embedder.embed_documents(texts)
    assert rows.shape == (8, 8)
    # Each long input was sent alone, cut to what the model reads.
    cuts = [seen.texts for seen in server.requests if seen.texts[0].startswith("def ")]
    assert sum(len(cut) == 1 and len(cut[0]) <= 400 for cut in cuts) == 2
    assert [len(seen.texts) for seen in server.requests[:4]] == [8, 4, 4, 1]
    assert len(server.requests) <= 4 + 2 * (2 + 2 + 2)


def test_an_input_refused_even_shortened_is_named(serve: Serve) -> None:
    server = serve("openai")
    filtered = "FORBIDDEN " + "word " * 200

    def hook(seen: Seen) -> Reply | None:
        if any(text.startswith("FORBIDDEN") for text in seen.texts):
            return Reply(422, {"detail": "content filtered"})
        return None

    server.hook = hook
    texts = ["a", "b", filtered, "c"]
    with (
        connect("openai-compatible", server.url) as embedder,
        pytest.raises(ProviderError, match="content filtered") as caught,
    ):
        embedder.embed_documents(texts)
    message = str(caught.value)
    assert f"input 3 of 4 ({len(filtered)} characters" in message
    assert "even cut to 1/16" in message
    assert caught.value.status == 422
    # The batch, two halves, two quarters, then four ever shorter cuts: bounded.
    assert len(server.requests) == 1 + 2 + 2 + 4


@pytest.mark.parametrize("status", [401, 404, 429])
def test_other_refusals_are_not_split(serve: Serve, status: int) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(status, {"error": {"message": "no"}})
    with (
        connect("openai-compatible", server.url, max_retries=0) as embedder,
        pytest.raises(ProviderError),
    ):
        embedder.embed_documents([f"chunk {i}" for i in range(8)])
    assert len(server.requests) == 1


def test_concurrent_batches_keep_the_input_order(serve: Serve) -> None:
    server = serve("openai")
    texts = [f"chunk {i}" for i in range(12)]
    # Earlier texts answer later, so completion order is the reverse of input order.
    server.hook = lambda seen: Reply(delay=0.01 * (12 - int(seen.texts[0].split()[1])))
    with connect("openai", server.url, dims=8, batch_size=1, concurrency=4) as embedder:
        assert_rows(embedder.embed_documents(texts), texts, 8)
    spans = [(seen.arrived, seen.answered) for seen in server.requests]
    in_flight = max(sum(1 for a, b in spans if a <= start < b) for start, _ in spans)
    assert 2 <= in_flight <= 4
    assert len(server.requests) == 12


def test_request_starts_are_spaced(serve: Serve) -> None:
    server = serve("openai")
    texts = [f"t{i}" for i in range(4)]
    with connect(
        "openai", server.url, dims=8, batch_size=1, concurrency=4, request_interval=0.1
    ) as embedder:
        embedder.embed_documents(texts)
    starts = sorted(seen.arrived for seen in server.requests)
    # Spaced on the client; the server sees them with a few milliseconds of scheduling noise.
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.06
    assert starts[-1] - starts[0] >= 0.28


# -- retries and rate limits ------------------------------------------------------------------


def test_retry_after_is_honoured(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    server = serve("openai")
    server.queue(Reply(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0.3"}))
    with (
        caplog.at_level(logging.INFO, "coderecall.providers"),
        connect("openai", server.url, dims=8) as embedder,
    ):
        assert_rows(embedder.embed_documents(["a"]), ["a"], 8)
        usage = embedder.usage
    limited, retried = server.requests
    assert retried.arrived - limited.answered >= 0.29
    assert (usage.requests, usage.retries) == (2, 1)
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert "HTTP 429" in record.getMessage()
    assert "Retry-After" in record.getMessage()


def test_a_429_holds_back_every_thread(serve: Serve) -> None:
    """With four requests in flight, the first gets a 429; the other three finish soon after,
    but their threads must wait for the shared gate before starting anything new."""
    server = serve("openai")
    arrivals = 0
    limited: list[Seen] = []
    all_in = threading.Condition()

    def hook(seen: Seen) -> Reply | None:
        nonlocal arrivals
        with all_in:
            arrivals += 1
            mine = arrivals
            all_in.notify_all()
            if mine == 1:
                all_in.wait_for(lambda: arrivals >= 4, timeout=2.0)
                limited.append(seen)
                return Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.4"})
        return Reply(delay=0.1) if mine <= 4 else None

    server.hook = hook
    texts = [f"t{i}" for i in range(8)]
    with connect("openai", server.url, dims=8, batch_size=1, concurrency=4) as embedder:
        assert_rows(embedder.embed_documents(texts), texts, 8)
    (gate,) = limited
    later = [seen.arrived for seen in server.requests if seen.arrived > gate.answered]
    assert len(later) == 9 - 4
    assert min(later) >= gate.answered + 0.39


def test_server_error_then_success(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    server = serve("voyage")
    server.queue(Reply(500, {"detail": "internal error"}))
    with (
        caplog.at_level(logging.INFO, "coderecall.providers"),
        connect("voyage", server.url, dims=8) as embedder,
    ):
        assert_rows(embedder.embed_documents(TEXTS), TEXTS, 8)
        assert embedder.usage.retries == 1
    assert len(server.requests) == 2
    assert [record.levelno for record in caplog.records] == [logging.WARNING]
    assert "HTTP 500" in caplog.records[0].getMessage()


def test_retries_run_out(serve: Serve) -> None:
    server = serve("openai")
    server.queue(*[Reply(503, {"error": {"message": "overloaded"}})] * 3)
    with (
        connect("openai", server.url, dims=8, max_retries=2) as embedder,
        pytest.raises(ProviderUnavailableError, match="after 3 attempts") as caught,
    ):
        embedder.embed_documents(["a"])
    assert len(server.requests) == 3
    assert caught.value.status == 503
    assert caught.value.provider == "openai"
    assert f"127.0.0.1:{server.port}" in str(caught.value)


def test_a_retry_after_beyond_backoff_max_fails_at_once(serve: Serve) -> None:
    server = serve("openai")
    server.queue(Reply(429, {"error": {"message": "daily quota"}}, {"Retry-After": "3600"}))
    with connect("openai", server.url, dims=8, backoff_max=1.0) as embedder:
        started = time.monotonic()
        with pytest.raises(ProviderUnavailableError, match=r"raise embedding\.backoff-max"):
            embedder.embed_documents(["a"])
    assert time.monotonic() - started < 1.0
    assert len(server.requests) == 1


def test_a_slow_answer_is_retried(serve: Serve) -> None:
    server = serve("openai")
    server.queue(Reply(delay=1.0))
    with connect("openai", server.url, dims=8, read_timeout=0.2) as embedder:
        assert_rows(embedder.embed_documents(["a"]), ["a"], 8)
        assert embedder.usage.retries == 1
    assert len(server.requests) == 2


def test_answers_that_never_come_in_time(serve: Serve) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(delay=1.0)
    with connect("openai", server.url, dims=8, read_timeout=0.2, max_retries=1) as embedder:
        started = time.monotonic()
        with pytest.raises(
            ProviderUnavailableError,
            match=r"embedding\.read-timeout = 0\.2 s.*embedding\.max-retries",
        ) as caught:
            embedder.embed_documents(["a"])
    assert time.monotonic() - started < 1.0
    assert caught.value.status is None


def test_a_hung_server_ends_in_bounded_time() -> None:
    with (
        SilentServer() as silent,
        connect("openai", silent.url, dims=8, read_timeout=0.2, max_retries=1) as embedder,
    ):
        started = time.monotonic()
        with pytest.raises(ProviderUnavailableError, match="no answer"):
            embedder.embed_documents(["a"])
    assert time.monotonic() - started < 1.5


def test_a_query_waits_less_than_indexing_on_a_hung_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_base, "_QUERY_READ_TIMEOUT", 0.2)
    with (
        SilentServer() as silent,
        connect("openai", silent.url, dims=8, read_timeout=30, max_retries=5) as embedder,
    ):
        started = time.monotonic()
        with pytest.raises(ProviderUnavailableError, match=r"within 0\.2 s \(a query"):
            embedder.embed_query("where is the retry loop")
        assert embedder.usage.requests == 2, "one quick retry"
    assert time.monotonic() - started < 5, "not the 30 s an indexing batch may wait"


def _closed_port() -> int:
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_refused_connection_is_unavailable_after_one_retry() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with connect("openai", url, dims=8, max_retries=6, backoff_base=0.01) as embedder:
        with pytest.raises(ProviderUnavailableError, match="cannot connect") as caught:
            embedder.embed_documents(["a"])
        # Nothing listening is not fixed by waiting: one retry, not the six allowed.
        assert embedder.usage.requests == 2
    assert "2 attempts; check the network and embedding.base-url" in str(caught.value)


def test_an_ollama_that_is_not_running_is_named() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with connect("ollama", url, model="nomic-embed-text", dims=8) as embedder:
        with pytest.raises(ProviderUnavailableError, match=r"`ollama serve`"):
            embedder.embed_documents(["a"])
        assert embedder.usage.requests == 2


# -- answers and errors -----------------------------------------------------------------------


def test_malformed_json_is_asked_again_then_fails(serve: Serve) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(body=b"<html>gateway says hello</html>")
    with (
        connect("openai", server.url, dims=8) as embedder,
        pytest.raises(ProviderResponseError, match="not JSON"),
    ):
        embedder.embed_documents(["a"])
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"data": [{"index": 0, "embedding": [1.0] * 8}]}, "1 vectors for 2 inputs"),
        (
            {"data": [{"index": 0, "embedding": [1.0] * 8}, {"index": 1, "embedding": [1.0] * 9}]},
            "not lists of numbers of one length",
        ),
        (
            {"data": [{"index": 0, "embedding": [1.0] * 8}, {"index": 0, "embedding": [1.0] * 8}]},
            "repeated",
        ),
        (
            {"data": [{"index": 0, "embedding": ["x"] * 8}, {"index": 1, "embedding": [None] * 8}]},
            "not lists of numbers",
        ),
        ({"vectors": []}, "no 'data' list"),
    ],
)
def test_answers_of_the_wrong_shape(serve: Serve, body: Any, message: str) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(body=body)
    with (
        connect("openai", server.url, dims=8) as embedder,
        pytest.raises(ProviderResponseError, match=message),
    ):
        embedder.embed_documents(["a", "b"])


def test_vectors_of_an_unexpected_width(serve: Serve) -> None:
    server = serve("gemini", dims=8)
    server.hook = lambda seen: Reply(body={"embeddings": [{"values": [0.5] * 8}]})
    with (
        connect("gemini", server.url, dims=16) as embedder,
        pytest.raises(
            ProviderResponseError, match=r"8-dimensional vectors although embedding\.dims = 16"
        ),
    ):
        embedder.embed_documents(["a"])


def test_a_rejected_key_names_the_variable(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "a-wrong-key")
    server = serve("openai")
    with (
        connect("openai", server.url, api_key=None, dims=8) as embedder,
        pytest.raises(ProviderAuthError, match="OPENAI_API_KEY") as caught,
    ):
        embedder.embed_documents(["a"])
    assert caught.value.status == 401
    assert len(server.requests) == 1  # never retried
    assert "a-wrong-key" not in str(caught.value)


@pytest.mark.parametrize(
    ("provider", "variable"),
    [("openai", "OPENAI_API_KEY"), ("voyage", "VOYAGE_API_KEY"), ("gemini", "GOOGLE_API_KEY")],
)
def test_a_missing_key_sends_nothing(serve: Serve, provider: str, variable: str) -> None:
    server = serve("voyage")
    with connect(provider, server.url, api_key=None, dims=8) as embedder:
        with pytest.raises(ProviderAuthError, match=variable):
            embedder.embed_documents(["a"])
        with pytest.raises(ProviderAuthError, match=variable):
            embedder.embed_query("a")
    assert server.requests == []


def test_other_client_errors_carry_the_server_message(serve: Serve) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(400, {"error": {"message": "bad dims " + "x" * 1000}})
    with (
        connect("openai", server.url, dims=8) as embedder,
        pytest.raises(ProviderError, match="bad dims xxx") as caught,
    ):
        embedder.embed_documents(["a"])
    assert type(caught.value) is ProviderError
    assert caught.value.status == 400
    assert len(str(caught.value)) < 500
    assert len(server.requests) == 1


def test_errors_belong_to_the_tree() -> None:
    for cls in (ProviderAuthError, ProviderUnavailableError, ProviderResponseError):
        assert issubclass(cls, ProviderError)
    assert issubclass(ProviderError, Error)


# -- keys never leak --------------------------------------------------------------------------


def _texts_of(error: BaseException) -> list[str]:
    """The messages and reprs of an exception and of everything chained to it."""
    found = []
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        found += [str(current), repr(current), *map(str, current.args)]
        pending += [current.__cause__, current.__context__]
    return found


@pytest.mark.parametrize(
    "scenario", ["rejected", "bad-request", "server-error", "malformed", "timeout", "refused"]
)
@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_the_key_never_leaks(
    serve: Serve, caplog: pytest.LogCaptureFixture, provider: str, scenario: str
) -> None:
    server = serve("gemini" if provider == "gemini" else "openai", key="another-key")
    echo = {"error": {"message": f"key {SECRET} is not allowed here"}}
    url = server.url
    if scenario == "bad-request":
        server.hook = lambda seen: Reply(400, echo)
    elif scenario == "server-error":
        server.hook = lambda seen: Reply(503, echo)
    elif scenario == "malformed":
        server.hook = lambda seen: Reply(body=f"<p>{SECRET}</p>".encode())
    elif scenario == "timeout":
        server.hook = lambda seen: Reply(delay=1.0)
    elif scenario == "refused":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    settings = settings_for(provider, url, api_key=SECRET, dims=8, read_timeout=0.2)
    with caplog.at_level(logging.DEBUG), make_provider(settings) as embedder:
        with pytest.raises(ProviderError) as caught:
            embedder.embed_documents(["a"])
        texts = [*_texts_of(caught.value), repr(embedder), repr(settings)]
    texts += [record.getMessage() for record in caplog.records]
    texts += [record.exc_text or "" for record in caplog.records]
    assert caplog.records or scenario in ("rejected", "bad-request")
    assert not [text for text in texts if SECRET in text]
    if scenario == "rejected":
        # The server did echo the key; the client scrubbed it.
        assert SECRET in server.requests[0].headers.get(
            "x-goog-api-key", server.requests[0].headers.get("authorization", "")
        )
        assert "[redacted]" in str(caught.value)


# -- offline parts ----------------------------------------------------------------------------


def test_estimate_sends_nothing_and_needs_no_key(serve: Serve) -> None:
    server = serve("openai")
    texts = [f"def function_{i}(value): return value * {i}" for i in range(3000)]
    with connect("openai", server.url, api_key=None) as embedder:
        estimate = embedder.estimate(texts)
    tokens = sum(estimate_tokens(text) for text in texts)
    assert (estimate.texts, estimate.tokens, estimate.requests) == (3000, tokens, 2)
    assert estimate.cost_usd == pytest.approx(tokens * 0.02 / 1e6)
    with connect("openai", server.url, price_per_million=2.5) as embedder:
        assert embedder.estimate(texts).cost_usd == pytest.approx(tokens * 2.5 / 1e6)
    assert server.requests == []


def test_closed_embedders_refuse_work(serve: Serve) -> None:
    server = serve("openai")
    embedder = connect("openai", server.url, dims=8)
    embedder.close()
    with pytest.raises(ProviderError, match="closed"):
        embedder.embed_documents(["a"])
    assert server.requests == []


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"provider": "cohere"}, "provider"),
        ({"provider": "openai-compatible"}, "base_url"),
        ({"provider": "openai-compatible", "base_url": "http://h/v1"}, "model"),
        ({"base_url": "ftp://example.com"}, "base_url"),
        ({"concurrency": 0}, "concurrency"),
        ({"dims": True}, "dims"),
        ({"read_timeout": 0}, "read_timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"request_interval": float("nan")}, "request_interval"),
        ({"api_key_env": " "}, "api_key_env"),
        ({"api_key_env": "2KEYS"}, "api_key_env"),
        ({"expected_dims": 0}, "expected_dims"),
        ({"input_token_limit": 0}, "input_token_limit"),
    ],
)
def test_settings_are_checked(overrides: dict[str, Any], key: str) -> None:
    values: dict[str, Any] = {"provider": "openai", **overrides}
    with pytest.raises(ConfigError) as caught:
        ProviderSettings(**values)
    assert caught.value.key == key


def test_a_missing_server_names_the_setting_to_write() -> None:
    with pytest.raises(ConfigError) as caught:
        ProviderSettings("openai-compatible")
    assert "needs embedding.base-url:" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        ProviderSettings("openai-compatible", base_url="http://h/v1")
    assert "needs embedding.model:" in str(caught.value)


def test_settings_repr_hides_the_key() -> None:
    settings = ProviderSettings("openai", api_key=SECRET)
    assert SECRET not in repr(settings)
    assert settings.api_key == SECRET


def test_retry_after_values() -> None:
    def parse(**headers: str) -> float | None:
        return parse_retry_after(httpx.Headers(headers))

    assert parse() is None
    assert parse(**{"retry-after": "2"}) == 2.0
    assert parse(**{"retry-after": "0.5"}) == 0.5
    assert parse(**{"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse(**{"retry-after": "soon"}) is None
    assert parse(**{"retry-after": formatdate(time.time() - 60, usegmt=True)}) == 0.0
    ahead = parse(**{"retry-after": formatdate(time.time() + 30, usegmt=True)})
    assert ahead is not None
    assert 28.0 <= ahead <= 30.0


def test_token_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("hello world") == 2
    assert estimate_tokens("getUserName") == 3  # camelCase humps
    assert estimate_tokens("HTTPServer") == 2
    assert estimate_tokens("x != y;") == 5  # punctuation counts one each
    assert estimate_tokens("12345678") == 3  # digits in threes
    assert estimate_tokens("internationalization") == 3  # long words split
    assert estimate_tokens("if x:\n        return") == 5  # a newline and its indent: one
    assert estimate_tokens("naïve café") == 5  # non-ASCII characters: one each


def test_truncation_keeps_the_longest_prefix_within_the_limit() -> None:
    text = "def handler(request):\n    return response.json()\n" * 50
    for limit in (0, 1, 7, 100, 10_000):
        cut = truncate_tokens(text, limit)
        assert text.startswith(cut)
        assert estimate_tokens(cut) <= limit
        if cut != text:  # one more piece would break the limit
            assert estimate_tokens(text[: len(cut) + 1].rstrip()) >= estimate_tokens(cut)
    assert truncate_tokens(text, 10_000) == text


def test_a_query_gets_one_quick_retry_so_a_search_can_fall_back(serve: Serve) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(503, {"error": {"message": "overloaded"}})
    with (
        connect("openai", server.url, dims=8, max_retries=5) as embedder,
        pytest.raises(ProviderUnavailableError, match="after 2 attempts"),
    ):
        embedder.embed_query("where is the retry loop")
    assert len(server.requests) == 2


def test_a_query_does_not_wait_out_a_long_retry_after(serve: Serve) -> None:
    server = serve("openai")
    server.hook = lambda seen: Reply(
        429, {"error": {"message": "slow down"}}, {"Retry-After": "45"}
    )
    with connect("openai", server.url, dims=8, backoff_max=60) as embedder:
        started = time.monotonic()
        with pytest.raises(ProviderUnavailableError, match="45 s, more than the 3 s a query"):
            embedder.embed_query("where is the retry loop")
        assert time.monotonic() - started < 30, "not the 45 s the server asked for"
        assert len(server.requests) == 1
        # Indexing still honours it, up to backoff_max.
        server.hook = None
        server.queue(Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.5"}))
        assert_rows(embedder.embed_documents(["a"]), ["a"], 8)
    limited, retried = server.requests[1:]
    assert retried.arrived - limited.answered >= 0.49


def test_a_query_does_not_wait_behind_a_rate_limit_of_indexing(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_base, "_QUERY_MAX_WAIT", 0.2)
    server = serve("openai")
    server.queue(Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "1.5"}))
    with connect("openai", server.url, dims=8, backoff_max=60) as embedder:
        indexing = threading.Thread(target=embedder.embed_documents, args=(["a"],))
        indexing.start()
        deadline = time.monotonic() + 5
        while embedder._transport._gate <= time.monotonic() < deadline:  # shut by the 429
            time.sleep(0.01)
        gate = embedder._transport._gate
        with pytest.raises(ProviderUnavailableError, match="rate limit"):
            embedder.embed_query("where is the retry loop")
        assert time.monotonic() < gate, "answered before the rate limit lifted"
        indexing.join()
    assert len(server.requests) == 2, "the query sent nothing"


# -- a width learnt earlier is expected, never asked for ---------------------------------------


def test_an_expected_width_is_never_sent(serve: Serve) -> None:
    server = serve("openai", dims=12)
    server.dims_param = "refuse"
    with connect("openai-compatible", server.url, expected_dims=12) as embedder:
        assert embedder.known_dims == 12
        assert embedder.model_id.startswith("openai-compatible:local-model:12@")
        assert_rows(embedder.embed_documents(TEXTS), TEXTS, 12)
        embedder.embed_query("where")
        embedder.confirm_dims()  # confirmed by the answers already: nothing sent
    assert len(server.requests) == 2
    assert not [seen for seen in server.requests if "dimensions" in seen.body]


def test_a_model_that_changed_width_is_a_new_model(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve("ollama", key=None, dims=16)
    server.dims_param = "ignore"
    with connect("ollama", server.url, model="mxbai", expected_dims=12) as embedder:
        # A search trusts the width without asking, and fails at once when it is wrong.
        with pytest.raises(ProviderResponseError, match="now returns 16-dimensional vectors"):
            embedder.embed_query("where")
        assert len(server.requests) == 1, "not asked again"
        with caplog.at_level(logging.WARNING, "coderecall"):
            embedder.confirm_dims()  # what an index run does first
        assert embedder.dims == 16
        assert ":mxbai:16@" in embedder.model_id
        assert "now returns 16-dimensional vectors" in caplog.records[0].getMessage()
        assert_rows(embedder.embed_documents(["a"]), ["a"], 16)
    assert not [seen for seen in server.requests if "dimensions" in seen.body]


def test_an_unchecked_width_stands_when_the_server_is_down() -> None:
    with SilentServer() as silent:
        settings = settings_for("openai-compatible", silent.url, expected_dims=12, read_timeout=0.2)
        with make_provider(settings) as embedder:
            embedder.confirm_dims()
            assert embedder.dims == 12
            assert embedder.usage.requests == 1, "no retry: the width stands"


def test_a_key_given_as_the_variable_name_is_refused_unechoed() -> None:
    with pytest.raises(ConfigError, match="looks like a key, not a variable name") as caught:
        ProviderSettings("openai", api_key_env=SECRET)
    assert SECRET not in str(caught.value)
    assert ProviderSettings("openai", api_key_env="MY_KEY_2").api_key_env == "MY_KEY_2"


def test_backoff_max_below_the_base_lowers_it() -> None:
    settings = ProviderSettings("openai", backoff_base=2.0, backoff_max=0.0)
    assert (settings.backoff_base, settings.backoff_max) == (0.0, 0.0)
