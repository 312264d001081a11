"""An index whose semantic channel is a remote provider: a real HTTP server on 127.0.0.1 that
speaks the OpenAI wire format (``provider_servers.py``). Provider calls are counted to prove
that content is embedded once across files, branches and re-indexes, and failures leave a
working lexical index with the rest pending for the next run."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import coderecall._index as index_module
from coderecall import CodeIndex
from coderecall._embedding import select_embedding
from coderecall._providers import estimate_tokens
from helpers import SAMPLE_PROJECT, MakeRepo, git
from provider_servers import FakeServer, Reply, Seen, SilentServer

KEY = "sk-remote-index-test-0123456789"
NATURAL = "refresh the access token before it expires"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("openai", key=KEY, dims=16) as fake:
        yield fake


def settings(server: FakeServer, **extra: Any) -> dict[str, object]:
    return {
        "embedding": {
            "provider": "openai-compatible",
            "base_url": server.url + "/v1",
            "model": "fake-embedder",
            "api_key_env": "FAKE_EMBEDDER_KEY",
            **extra,
        }
    }


def embedded_texts(server: FakeServer, since: int = 0) -> list[str]:
    return [text for seen in server.requests[since:] for text in seen.texts]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_EMBEDDER_KEY", KEY)


def test_content_is_embedded_once_across_files_branches_and_reindexes(
    make_repo: MakeRepo, server: FakeServer
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, settings(server)) as index:
        first = index.index(progress=False)
        assert first.embedding_model is not None
        assert first.embedding_model.startswith("openai-compatible:fake-embedder:16@")
        sent = embedded_texts(server)
        assert first.chunks_embedded > 0
        # One probe learns the width, then every distinct content once.
        assert len(sent) == first.chunks_embedded + 1
        assert len(set(sent)) == len(sent)

        calls = len(server.requests)
        assert index.index(progress=False).chunks_embedded == 0
        assert len(server.requests) == calls, "a re-index sends nothing"

        (root / "src/shop/auth_copy.py").write_text((root / "src/shop/auth.py").read_text())
        assert index.index(progress=False).chunks_embedded == 0
        assert len(server.requests) == calls, "a copied file sends nothing"

        git(root, "checkout", "-q", "-b", "feature")
        billing = root / "src/shop/billing.py"
        billing.write_text(
            billing.read_text() + "\n\ndef refund(amount: float) -> float:\n    return -amount\n"
        )
        on_feature = index.index(progress=False)
        new = embedded_texts(server, calls)
        assert 1 <= on_feature.chunks_embedded <= 2, "only the new code"
        assert len(new) == on_feature.chunks_embedded
        assert any("refund" in text for text in new)
        git(root, "checkout", "-q", "--", ".")
        git(root, "checkout", "-q", "main")
        calls = len(server.requests)
        assert index.index(progress=False).chunks_embedded == 0
        assert len(server.requests) == calls, "switching back sends nothing"

    with CodeIndex(root, settings(server)) as index:
        hits = index.search(NATURAL, limit=20)
    asked = server.requests[calls:]
    assert len(asked) == 1, "a new handle embeds the query only: the width comes from the index"
    assert asked[0].texts == [NATURAL]
    assert any("semantic" in hit.channels for hit in hits)


def test_a_failing_provider_leaves_a_working_lexical_index_and_the_rest_pending(
    make_repo: MakeRepo, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    refused = Reply(401, {"error": {"message": "invalid key"}})
    server.hook = lambda seen: refused if len(server.requests) > 2 else None
    with CodeIndex(root, settings(server, dims=16, batch_size=2, concurrency=1)) as index:
        with caplog.at_level(logging.WARNING, "coderecall"):
            report = index.index(progress=False)
        assert report.embedding_error is not None
        assert "FAKE_EMBEDDER_KEY" in report.embedding_error
        assert report.chunks_embedded == 4, "two batches of two went through"
        assert report.embeddings_pending > 0
        assert any("embedding stopped early" in r.getMessage() for r in caplog.records)
        # Searching still works; the query cannot be embedded, so it is lexical only.
        hits = index.search(NATURAL)
        assert hits
        assert all(hit.channels == ("lexical",) for hit in hits)
        assert index.search("TokenStore")[0].symbol == "TokenStore"

        server.hook = None
        calls = len(server.requests)
        retried = index.index(progress=False)
        assert retried.embedding_error is None
        assert retried.chunks_embedded == report.embeddings_pending
        assert retried.embeddings_pending == 0
        assert len(embedded_texts(server, calls)) == report.embeddings_pending


def test_a_search_never_waits_on_a_provider_whose_model_stored_no_vectors(
    make_repo: MakeRepo,
    server: FakeServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The model's width is unknown until the provider answers once; with the provider down,
    # learning it took every retry of a document request (20 s) on every search, for a
    # model with no vectors to compare the query with.
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, {"embedding": {"provider": "none"}}) as lexical:
        lexical.index(progress=False)
    server.hook = lambda seen: Reply(503, {"error": {"message": "overloaded"}})
    # Each choice builds a provider and its HTTP client (20 ms): once while nothing changes.
    chosen: list[bool] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        chosen.append(kwargs.get("probe", True))
        return select_embedding(*args, **kwargs)

    monkeypatch.setattr(index_module, "select_embedding", counted)
    with CodeIndex(root, settings(server)) as index:
        with caplog.at_level(logging.WARNING, "coderecall"):
            hits = index.search(NATURAL)
            assert index.search("TokenStore")[0].symbol == "TokenStore"
            index.search(NATURAL)
        assert chosen == [False]
        assert hits
        assert all(hit.channels == ("lexical",) for hit in hits)
        assert server.requests == [], "no probe"
        noted = [r.getMessage() for r in caplog.records if "no vectors of" in r.getMessage()]
        assert len(noted) == 1, "said once"
        assert "fake-embedder" in noted[0]

        server.hook = None  # back up: an index run learns the width and embeds
        report = index.index(progress=False)
        assert report.chunks_embedded > 0
        assert "semantic" in index.search(NATURAL)[0].channels


def test_a_search_after_a_failed_index_run_says_why_there_are_no_vectors(
    make_repo: MakeRepo, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Telling a user who has just run `coderecall index` to run it sends them in a circle.
    root = make_repo(SAMPLE_PROJECT)
    server.hook = lambda seen: Reply(503, {"error": {"message": "overloaded"}})
    config = settings(server, max_retries=0)
    with CodeIndex(root, config) as index:
        report = index.index(progress=False)
    assert report.embedding_error is not None
    with CodeIndex(root, config) as index, caplog.at_level(logging.WARNING, "coderecall"):
        assert index.search(NATURAL)
    noted = [r.getMessage() for r in caplog.records if "no vectors of" in r.getMessage()]
    assert len(noted) == 1
    assert "the last index run could not embed" in noted[0]
    assert "503" in noted[0]
    assert "embeds the code" not in noted[0]
    assert KEY not in noted[0]


def test_estimate_sends_nothing_and_prices_the_pending_tokens(
    make_repo: MakeRepo, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    root = make_repo(SAMPLE_PROJECT)
    config = {"embedding": {"provider": "openai", "base_url": server.url + "/v1"}}
    with CodeIndex(root, config) as index:
        estimate = index.estimate()
        assert server.requests == []
        assert estimate.provider == "openai"
        assert estimate.model == "text-embedding-3-small"
        assert estimate.chunks > 0
        assert estimate.tokens > estimate.chunks
        assert estimate.cost_usd == pytest.approx(estimate.tokens * 0.02 / 1e6)
        # The same width the server answers with: 1536 for this model.
        server.dims = 1536
        report = index.index(progress=False)
        assert report.chunks_embedded == estimate.chunks
        assert index.estimate().chunks == 0


def test_the_key_never_reaches_the_index_or_the_report(
    make_repo: MakeRepo, server: FakeServer
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    server.hook = lambda seen: Reply(401, {"error": {"message": f"bad key {KEY}"}})
    with CodeIndex(root, settings(server, dims=16)) as index:
        report = index.index(progress=False)
        assert report.embedding_error is not None
        server.hook = None
        index.index(progress=False)
        index_dir = index.index_dir
    assert KEY not in str(report.to_dict())
    for path in Path(index_dir).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


LONG_LINE = 'BANNER = "' + "=-" * 1000 + '"\n\n\ndef print_report(rows):\n    print(BANNER, rows)\n'
"""A line of 2,000 characters: a chunk longer than any other, too long for the server below."""


@pytest.mark.parametrize("limit", [None, 200])
def test_a_chunk_the_server_refuses_no_longer_blocks_the_rest(
    make_repo: MakeRepo,
    server: FakeServer,
    caplog: pytest.LogCaptureFixture,
    limit: int | None,
) -> None:
    # A self-hosted model with a short context behind an OpenAI-compatible server refuses
    # the whole batch holding one long input; every run used to stop at that batch.
    root = make_repo({**SAMPLE_PROJECT, "src/shop/reports.py": LONG_LINE})

    def short_context(seen: Seen) -> Reply | None:
        if any(len(text) > 1500 for text in seen.texts):  # the others are at most 1,200
            return Reply(400, {"error": {"message": "input is longer than 512 tokens"}})
        return None

    server.hook = short_context
    tuning = {} if limit is None else {"input_token_limit": limit}
    with CodeIndex(root, settings(server, batch_size=4, concurrency=1, **tuning)) as index:
        with caplog.at_level(logging.WARNING, "coderecall"):
            report = index.index(progress=False)
        assert report.embedding_error is None
        assert report.embeddings_pending == 0
        shortened = [r for r in caplog.records if "embedded cut to" in r.getMessage()]
        refused = [seen for seen in server.requests if any(len(t) > 1500 for t in seen.texts)]
        if limit is None:
            assert len(shortened) == 1
            assert refused
            assert any(text.startswith("BANNER") for text in embedded_texts(server))
        else:  # the user said what the model reads: nothing is refused
            assert (shortened, refused) == ([], [])
            assert max(estimate_tokens(text) for text in embedded_texts(server)) <= limit
        assert "semantic" in index.search(NATURAL)[0].channels


def test_the_width_recorded_by_the_index_is_never_sent(
    make_repo: MakeRepo, server: FakeServer
) -> None:
    server.dims_param = "refuse"  # as vLLM answers for a model that cannot shorten vectors
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, settings(server)) as index:
        assert index.index(progress=False).embedding_error is None
    (root / "src/shop/extra.py").write_text("def extra(): return 1\n")
    with CodeIndex(root, settings(server)) as index:
        report = index.index(progress=False)
        assert report.embedding_error is None
        assert report.chunks_embedded >= 1
        assert "semantic" in index.search(NATURAL)[0].channels
    assert not [seen for seen in server.requests if "dimensions" in seen.body]


def test_a_model_that_changed_width_is_re_embedded_apart(
    make_repo: MakeRepo, server: FakeServer
) -> None:
    server.dims_param = "ignore"  # as Ollama does for most models
    server.dims = 12
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, settings(server)) as index:
        first = index.index(progress=False)
    assert first.embedding_model is not None
    assert ":fake-embedder:12@" in first.embedding_model
    server.dims = 16  # another model under the same name
    with CodeIndex(root, settings(server)) as index:
        started = time.monotonic()
        hits = index.search(NATURAL)
        assert time.monotonic() - started < 30, "no waiting on the provider"
        assert all(hit.channels == ("lexical",) for hit in hits)
    with CodeIndex(root, settings(server)) as index:
        report = index.index(progress=False)
        assert report.embedding_error is None
        assert report.embedding_model is not None
        assert ":fake-embedder:16@" in report.embedding_model
        assert report.chunks_embedded == first.chunks_embedded, "all of it, under the new id"
        assert "semantic" in index.search(NATURAL)[0].channels


def test_a_long_lived_index_follows_a_model_that_changed_width(
    make_repo: MakeRepo, server: FakeServer
) -> None:
    """An MCP server or a watcher keeps one handle: after the model changes width, its next
    index run (with or without new content) embeds under the new id, and searches use it."""
    server.dims_param = "ignore"
    server.dims = 12
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, settings(server)) as index:
        first = index.index(progress=False)
        assert "semantic" in index.search(NATURAL)[0].channels
        server.dims = 16
        asked = "renew a token that is about to expire"  # not a query the handle remembers
        assert all(hit.channels == ("lexical",) for hit in index.search(asked))
        report = index.index(progress=False)
        assert report.embedding_error is None
        assert report.embedding_model is not None
        assert ":fake-embedder:16@" in report.embedding_model
        assert report.chunks_embedded == first.chunks_embedded
        assert "semantic" in index.search(NATURAL)[0].channels
        # Changed again while a file is new: the run that meets it embeds under the new id.
        server.dims = 20
        (root / "src/shop/extra.py").write_text("def extra(): return 1\n")
        report = index.index(progress=False)
        assert report.embedding_error is None
        assert report.embedding_model is not None
        assert ":fake-embedder:20@" in report.embedding_model
        assert report.chunks_embedded > first.chunks_embedded
        assert "semantic" in index.search(NATURAL)[0].channels


def test_a_search_does_not_wait_out_a_long_retry_after(
    make_repo: MakeRepo, server: FakeServer
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root, settings(server)) as index:
        index.index(progress=False)
    server.queue(Reply(429, {"error": {"message": "rate limited"}}, {"Retry-After": "45"}))
    with CodeIndex(root, settings(server)) as index:
        started = time.monotonic()
        hits = index.search(NATURAL)
        assert time.monotonic() - started < 30, "one quick try, then lexical hits (not 45 s)"
    assert hits
    assert all(hit.channels == ("lexical",) for hit in hits)


def test_timeouts_and_retries_come_from_the_config(make_repo: MakeRepo) -> None:
    root = make_repo(SAMPLE_PROJECT)
    with SilentServer() as silent:
        config = {
            "embedding": {
                "provider": "openai-compatible",
                "base-url": silent.url + "/v1",
                "model": "hung",
                "dims": 8,
                "read-timeout": "200ms",
                "max-retries": 0,
                "backoff-max": 1,
            }
        }
        with CodeIndex(root, config) as index:
            started = time.monotonic()
            report = index.index(progress=False)
            assert time.monotonic() - started < 30, "not the default 60 s read timeout"
    assert report.embedding_error is not None
    assert "no answer within embedding.read-timeout = 0.2 s" in report.embedding_error
    assert "embedding.max-retries" in report.embedding_error
