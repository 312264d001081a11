"""What a remote embedder is asked to be: the provider, its model and how hard to push it.

Settings are checked when they are made, so a bad value fails at configuration time with a
:class:`~coderecall.ConfigError` naming the field. Everything left at ``None`` takes the
provider's default when the embedder is built (see each provider module).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from coderecall._errors import ConfigError

__all__ = ["PROVIDERS", "ProviderSettings"]

PROVIDERS = ("openai", "openai-compatible", "voyage", "gemini", "ollama")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """How to reach one embedding service and how hard to push it.

    ``api_key`` is left out of the repr (and so out of logs and error messages that show the
    settings); prefer ``api_key_env``, which names the environment variable holding the key.
    Numbers left at ``None`` take the provider's default: its API limits for ``batch_size`` and
    ``max_batch_tokens``, a polite ``concurrency``, no ``request_interval``, and the list price
    of the model for ``price_per_million``.

    ``dims`` is sent to the service (for models that can shorten their vectors);
    ``expected_dims`` never is: it is a width learnt earlier, which spares the request that
    would learn it again, and gives way when the service answers with another width.
    ``input_token_limit`` replaces the provider's tokens per input, for a self-hosted model
    with a shorter context. A ``backoff_max`` below ``backoff_base`` lowers that too.
    """

    provider: str
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    dims: int | None = None
    expected_dims: int | None = None
    input_token_limit: int | None = None
    batch_size: int | None = None
    max_batch_tokens: int | None = None
    concurrency: int | None = None
    request_interval: float | None = None
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    max_retries: int = 6
    backoff_base: float = 0.5
    backoff_max: float = 60.0
    price_per_million: float | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ConfigError(
                f"unknown embedding provider {self.provider!r}; "
                f"expected one of {', '.join(PROVIDERS)}",
                key="provider",
            )
        if self.provider == "openai-compatible":
            for name in ("base_url", "model"):
                if not getattr(self, name):
                    setting = f"embedding.{name.replace('_', '-')}"
                    raise ConfigError(
                        f"the openai-compatible provider needs {setting}: "
                        "there is no default server or model",
                        key=name,
                    )
        if self.model is not None and not self.model.strip():
            raise ConfigError("model must not be empty", key="model")
        if self.base_url is not None:
            _check_url(self.base_url)
        env = self.api_key_env
        if env is not None and not (isinstance(env, str) and _ENV_NAME.fullmatch(env)):
            # Not echoed: the usual slip is the key itself in place of its variable's name.
            raise ConfigError(
                "api_key_env must name an environment variable (letters, digits and "
                "underscores, not starting with a digit); the value given looks like a key, "
                "not a variable name",
                key="api_key_env",
            )
        for name in (
            "dims",
            "expected_dims",
            "input_token_limit",
            "batch_size",
            "max_batch_tokens",
            "concurrency",
        ):
            _check_int(name, getattr(self, name), minimum=1, optional=True)
        _check_int("max_retries", self.max_retries, minimum=0, optional=False)
        for name in ("connect_timeout", "read_timeout"):
            _check_number(name, getattr(self, name), positive=True)
        for name in ("request_interval", "price_per_million"):
            _check_number(name, getattr(self, name), positive=False, optional=True)
        for name in ("backoff_base", "backoff_max"):
            _check_number(name, getattr(self, name), positive=False)
        # A cap below the first backoff lowers it: backoff_max = 0 means "never wait".
        object.__setattr__(self, "backoff_base", min(self.backoff_base, self.backoff_max))


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        # Only the scheme and host are echoed: the URL may carry credentials.
        raise ConfigError(
            f"base_url must be an http:// or https:// URL with a host (got scheme "
            f"{parts.scheme or 'none'!r})",
            key="base_url",
        )


def _check_int(name: str, value: object, *, minimum: int, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}", key=name)


def _check_number(name: str, value: object, *, positive: bool, optional: bool = False) -> None:
    if value is None and optional:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}", key=name)
