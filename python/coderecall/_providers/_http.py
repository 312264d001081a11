"""The HTTP side of the remote embedders: one client, retries, and rate-limit etiquette.

One :class:`Transport` serves one embedder and all its worker threads (an ``httpx.Client`` is
thread-safe and pools connections). Its rules:

* 408, 429, 5xx answers, broken connections and timeouts are retried up to ``max_retries``
  times, after an exponential backoff with full jitter (a random wait between zero and
  ``backoff_base * 2**attempt``, capped at ``backoff_max``), so that many clients that failed
  together do not come back together;
* a connection that cannot be opened (refused, host unknown, network unreachable) is retried
  once: a server that is not running, or a machine that is offline, does not come back within
  a backoff, and the whole retry budget kept every index run waiting (16 s by default);
* a ``Retry-After`` (or ``retry-after-ms``) header replaces the backoff; a wait longer than
  ``backoff_max`` fails at once instead (a daily quota is not worth a sleeping thread), and so
  does one longer than a caller's ``max_wait`` (a search falls back to lexical hits instead);
* a 429, or any answer with ``Retry-After``, closes one shared *gate*: no thread of this
  transport starts a request before the gate time, because the limit is per key, not per
  thread;
* request starts are at least ``request_interval`` apart;
* 401 and 403 raise :class:`ProviderAuthError`, other 4xx :class:`ProviderError`.

API keys stay out of every message: server excerpts are scrubbed, the host is shown without
credentials, and errors are raised outside ``except`` blocks so that no httpx exception (which
holds the request, headers included) hangs off them as ``__cause__`` or ``__context__``.
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from coderecall._errors import (
    ProviderAuthError,
    ProviderError,
    ProviderResponseError,
    ProviderUnavailableError,
)

__all__ = ["Counters", "RetryPolicy", "Transport", "display_host", "parse_retry_after", "scrub"]

log = logging.getLogger("coderecall.providers")

_EXCERPT_CHARS = 300
"""Enough of a server's error message to act on, short enough for one log line."""

_CONNECT_RETRIES = 1
"""Retries of a connection that could not be opened: one, for a server that is restarting."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int
    backoff_base: float
    backoff_max: float

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in ``[0, min(backoff_max, backoff_base * 2**attempt)]``."""
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** min(attempt, 62))
        return random.uniform(0.0, ceiling)


class Counters:
    """Requests, retries and tokens of one embedder, shared by its threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.retries = 0
        self.tokens = 0

    def add(self, *, requests: int = 0, retries: int = 0, tokens: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.tokens += tokens

    def snapshot(self) -> tuple[int, int, int]:
        with self._lock:
            return self.requests, self.retries, self.tokens


def display_host(url: str) -> str:
    """``host[:port]`` of ``url``, without any ``user:password@`` part."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced, whitespace collapsed, cut to a log-line length."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    text = " ".join(text.split())
    if len(text) > _EXCERPT_CHARS:
        text = text[: _EXCERPT_CHARS - 3] + "..."
    return text


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        seconds = _seconds(milliseconds)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT, even when it fails to say so
        return None
    return max(0.0, when.timestamp() - time.time())


def _seconds(value: str) -> float | None:
    if not re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
        return None
    return float(value)


def _retries(failure: _Failure, policy: RetryPolicy) -> int:
    """How many retries ``failure`` gets in all."""
    return min(policy.max_retries, _CONNECT_RETRIES) if failure.unreachable else policy.max_retries


@dataclass(frozen=True, slots=True)
class _Failure:
    """A failed attempt that is worth another."""

    reason: str
    status: int | None = None
    retry_after: float | None = None
    unreachable: bool = False
    """No connection could be opened: nothing answered at the host, or no route to it."""


class Transport:
    """POSTs JSON to one service for one embedder; see the module docstring for the rules."""

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        headers: Mapping[str, str],
        secrets: Iterable[str],
        auth_hint: str,
        unreachable_hint: str,
        connect_timeout: float,
        read_timeout: float,
        policy: RetryPolicy,
        request_interval: float,
        max_connections: int,
        counters: Counters,
    ) -> None:
        self.provider = provider
        self.host = display_host(base_url)
        self._secrets = tuple(secret for secret in secrets if secret)
        self._auth_hint = auth_hint
        self._unreachable_hint = unreachable_hint
        self._read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._policy = policy
        self._interval = request_interval
        self._counters = counters
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=dict(headers),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        )
        self._lock = threading.Lock()
        self._gate = 0.0  # monotonic time before which no request may start
        self._next_start = 0.0

    def close(self) -> None:
        self._client.close()

    def post(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        max_retries: int | None = None,
        read_timeout: float | None = None,
        max_wait: float | None = None,
    ) -> Any:
        """The decoded JSON answer to ``POST path``, after as many retries as allowed.

        ``max_retries``, ``read_timeout`` and ``max_wait`` (the longest pause before a retry,
        or before the shared gate opens) lower the configured ones for a caller that cannot
        wait, such as a search.
        """
        timeout = self._read_timeout
        if read_timeout is not None:
            timeout = min(read_timeout, self._read_timeout)
        policy = self._policy
        if max_retries is not None:
            policy = replace(policy, max_retries=min(max_retries, policy.max_retries))
        if max_wait is not None:
            policy = replace(policy, backoff_max=min(max_wait, policy.backoff_max))
        attempt = 0
        while True:
            self._wait_turn(policy.backoff_max if max_wait is not None else None)
            self._counters.add(requests=1, retries=1 if attempt else 0)
            outcome = self._attempt(path, body, timeout)
            if not isinstance(outcome, _Failure):
                return outcome
            wait = self._plan_wait(outcome, attempt, policy)
            level = logging.INFO if outcome.status == 429 else logging.WARNING
            log.log(
                level,
                "%s: %s from %s; retry %d of %d in %.2f s%s",
                self.provider,
                outcome.reason,
                self.host,
                attempt + 1,
                _retries(outcome, policy),
                wait,
                " (Retry-After)" if outcome.retry_after is not None else "",
            )
            if outcome.status == 429 or outcome.retry_after is not None:
                with self._lock:
                    self._gate = max(self._gate, time.monotonic() + wait)
            else:
                time.sleep(wait)
            attempt += 1

    def _plan_wait(self, failure: _Failure, attempt: int, policy: RetryPolicy) -> float:
        """How long to wait before the next attempt, or raise when no attempt is left."""
        if attempt >= _retries(failure, policy):
            attempts = f"{attempt + 1} attempt{'s' if attempt else ''}"
            if failure.unreachable:
                message = (
                    f"{self.provider}: {failure.reason} to {self.host}, {attempts}; "
                    f"{self._unreachable_hint}"
                )
            else:
                message = (
                    f"{self.provider}: {failure.reason} from {self.host} after {attempts}; "
                    "check the network and the service's status, or raise "
                    "embedding.max-retries / embedding.read-timeout"
                )
            raise ProviderUnavailableError(message, provider=self.provider, status=failure.status)
        if failure.retry_after is None:
            return policy.backoff(attempt)
        if failure.retry_after > policy.backoff_max:
            # The configured cap, or a query's own: only the first is the user's to change.
            if policy.backoff_max < self._policy.backoff_max:
                limit = f"the {policy.backoff_max:g} s a query may wait"
            else:
                limit = (
                    f"embedding.backoff-max ({policy.backoff_max:g} s); try again later or "
                    "raise embedding.backoff-max"
                )
            raise ProviderUnavailableError(
                f"{self.provider}: {failure.reason} from {self.host}, and the server asks to "
                f"wait {failure.retry_after:.0f} s, more than {limit}",
                provider=self.provider,
                status=failure.status,
            )
        return failure.retry_after

    def _wait_turn(self, max_wait: float | None) -> None:
        """Sleep until the shared gate is open and the request spacing allows a start; fail at
        once when the gate stays shut for longer than ``max_wait``."""
        while True:
            with self._lock:
                now = time.monotonic()
                ready = max(self._gate, self._next_start)
                if ready <= now:
                    self._next_start = now + self._interval
                    return
                if max_wait is not None and self._gate - now > max_wait:
                    raise ProviderUnavailableError(
                        f"{self.provider}: {self.host} asked to wait {self._gate - now:.0f} s "
                        f"more after a rate limit, longer than the {max_wait:g} s a query may "
                        "wait",
                        provider=self.provider,
                    )
            # Looping re-reads the gate: another thread may have closed it while we slept.
            time.sleep(ready - now)

    def _attempt(self, path: str, body: Mapping[str, Any], read_timeout: float) -> Any:
        """One request: the decoded answer, a :class:`_Failure` to retry, or an exception."""
        failure: _Failure | None = None
        timeout = httpx.Timeout(
            connect=self._connect_timeout,
            read=read_timeout,
            write=read_timeout,
            pool=self._connect_timeout + read_timeout,
        )
        try:
            response = self._client.post(path, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            failure = _Failure(self._describe_timeout(exc, read_timeout))
        except httpx.ConnectError as exc:
            failure = _Failure(
                f"cannot connect ({type(exc).__name__}: {self._scrub(str(exc))})", unreachable=True
            )
        except httpx.TransportError as exc:
            failure = _Failure(f"network error ({type(exc).__name__}: {self._scrub(str(exc))})")
        if failure is not None:
            return failure
        status = response.status_code
        if status == 429 or status == 408 or status >= 500:
            return _Failure(
                f"HTTP {status}", status=status, retry_after=parse_retry_after(response.headers)
            )
        if status in (401, 403):
            raise ProviderAuthError(
                f"{self.provider} rejected the API key (HTTP {status} from {self.host}: "
                f"{self._excerpt(response)}); {self._auth_hint}",
                provider=self.provider,
                status=status,
            )
        if not 200 <= status < 300:
            hint = " (check embedding.model and embedding.base-url)" if status == 404 else ""
            raise ProviderError(
                f"{self.provider} rejected the request (HTTP {status} from {self.host}: "
                f"{self._excerpt(response)}){hint}",
                provider=self.provider,
                status=status,
            )
        decoded: Any = None
        malformed = False
        try:
            decoded = response.json()
        except ValueError:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
            malformed = True
        if malformed:
            raise ProviderResponseError(
                f"{self.provider}: {self.host} answered HTTP {status} with a body that is not "
                f"JSON ({self._scrub(response.text[:80])!r}...); is embedding.base-url right?",
                provider=self.provider,
                status=status,
            )
        return decoded

    def _describe_timeout(self, exc: httpx.TimeoutException, read_timeout: float) -> str:
        if isinstance(exc, httpx.ConnectTimeout):
            return f"no connection within embedding.connect-timeout = {self._connect_timeout:g} s"
        if isinstance(exc, httpx.PoolTimeout):
            return "no free connection in the pool"
        if read_timeout < self._read_timeout:
            return f"no answer within {read_timeout:g} s (a query waits no longer)"
        return f"no answer within embedding.read-timeout = {read_timeout:g} s"

    def _excerpt(self, response: httpx.Response) -> str:
        """The server's own error message, from the usual JSON shapes or the raw text."""
        message: Any = None
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                message = error.get("message")
            elif isinstance(error, str):
                message = error
            for key in ("detail", "message"):
                if message is None and data.get(key) is not None:
                    message = data[key]
        if message is None:
            message = response.text
        text = self._scrub(str(message))
        return text or "no message"

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)
