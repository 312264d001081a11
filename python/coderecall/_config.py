"""Settings, merged from defaults, project files, the environment and explicit overrides.

Each layer overrides only the keys it sets. From lowest to highest precedence:

1. built-in defaults;
2. the ``[tool.coderecall]`` table of ``<root>/pyproject.toml``;
3. the top level of ``<root>/.coderecall.toml``;
4. environment variables ``CODERECALL_<KEY>``, the key in upper case with underscores
   (``CODERECALL_MAX_FILE_SIZE=2MB``);
5. explicit overrides: the ``config=`` argument of ``CodeIndex`` and command-line flags
   (a value of ``None`` there means "not set").

Keys may be spelled in kebab-case or snake_case (``max-file-size`` or ``max_file_size``):

=====================  ===========  =========  ===============================================
key                    type         default    meaning
=====================  ===========  =========  ===============================================
``include``            globs        ``[]``     gitignore-style patterns; when set, only
                                               matching files are indexed
``exclude``            globs        ``[]``     gitignore-style patterns never indexed
``max-file-size``      size         ``1MiB``   larger files are skipped as "too large"
``index-dir``          path         see below  where the index lives
``respect-gitignore``  bool         ``true``   honour ``.gitignore`` files and
                                               ``.git/info/exclude``
``limit``              int >= 1     ``10``     default number of search results
``per-file``           int >= 1     ``4``      results of one file past this many rank
                                               lower (a fifth lower each), so they show
                                               only when they outscore other files by that
                                               much
``gc-grace``           duration     ``7d``     file versions, chunks and vectors no view has
                                               used for this long are deleted
``watch-debounce``     duration     ``300ms``  quiet time a watcher waits for before it
                                               indexes a burst of changes
``mcp-token-cap``      int >= 1     ``4000``   most tokens one answer of ``coderecall mcp``
                                               may hold (whole hits are dropped)
``context-budget``     int >= 100   ``3000``   tokens of one ``codebase_context`` evidence
                                               pack (counted with a real tokenizer)
``mcp-tools``          names        all        the tool sets ``coderecall mcp`` serves:
                                               ``code`` (always), ``memory``,
                                               ``knowledge``, ``diagnostics``
=====================  ===========  =========  ===============================================

The ``[embedding]`` table (``[tool.coderecall.embedding]`` in ``pyproject.toml``; in the
environment ``CODERECALL_EMBEDDING_PROVIDER`` and so on; in overrides a nested mapping or
``embedding_provider=...``) chooses the semantic channel:

=====================  ==========  ========  ===================================================
key                    type        default   meaning
=====================  ==========  ========  ===================================================
``provider``           name        ``auto``  ``auto``, ``static``, ``transformer``, ``none``, or
                                             a remote API: ``openai``, ``openai-compatible``,
                                             ``voyage``, ``gemini``, ``ollama``
``model``              str                   a local model folder or cache name, or the
                                             remote model id
``base-url``           str                   the API's address (required for
                                             ``openai-compatible``)
``api-key-env``        name                  variable holding the API key (each provider has
                                             its usual default, such as ``OPENAI_API_KEY``);
                                             a name, never the key itself
``api-key``            str                   the key itself; better kept in the environment
``dims``               int >= 1              vector length to ask a remote API for (sent
                                             as ``dimensions``; unset, the model's own)
``batch-size``         int >= 1              inputs per request (default: the API's limit)
``concurrency``        int >= 1              requests in flight
``input-token-limit``  int >= 1              tokens of each input sent to a remote API
                                             (default: the API's limit; lower it for a
                                             self-hosted model with a shorter context)
``max-retries``        int >= 0    ``6``     retries of a failed remote request
``read-timeout``       duration    ``60s``   wait for a remote answer
``connect-timeout``    duration    ``10s``   wait for a connection to a remote API
``backoff-max``        duration    ``60s``   longest pause before a retry; a longer
                                             ``Retry-After`` fails at once
``max-tokens``         int >= 1    ``256``   tokens a transformer reads of each chunk
``query-prompt``       str                   text put before every query a transformer
                                             embeds (default: the model folder's, e5's
                                             ``"query: "``; ``""`` for none)
``document-prompt``    str                   the same before every chunk and memory record
``quantization``       name        ``bf16``  how the vector graph stores vectors: ``bf16``,
                                             ``f16`` (same memory, slower inserts), or ``i8``
                                             (half the memory, faster inserts, slightly lower
                                             recall)
``weight``             0 to 1                share of the semantic channel in hybrid ranking
                                             (default: 0.1 for a static model, 0.5 for others)
=====================  ==========  ========  ===================================================

``auto`` uses the configured local ``model``, else a model already in the user's model cache
(static before transformer), else runs lexical-only and says which command enables semantic
search. Code is sent to a remote API only when one is named here.

A duration is a number of seconds or a string with a unit: ``ms``, ``s``, ``m``, ``h`` or
``d`` (``"300ms"``, ``"12h"``, ``"7d"``).

A size is a number of bytes or a string with a unit: ``KB``/``MB``/``GB`` are powers of
1000, ``KiB``/``MiB``/``GiB`` and the git-style ``k``/``m``/``g`` are powers of 1024
(case-insensitive, so ``"2MB"``, ``"512KiB"`` and ``"1.5m"`` all work). By default the index
lives in ``<git common dir>/coderecall/`` inside a git repository (shared by all its
worktrees, invisible to ``git status``) and in ``<root>/.coderecall/`` elsewhere. A relative
``index-dir`` is resolved against the project root in the two files and against the current
directory in the environment and overrides.

In the environment, lists are comma-separated and booleans are ``1``/``0``, ``true``/``false``,
``yes``/``no`` or ``on``/``off``. Environment variables with the prefix that name no key are
ignored, because other parts of coderecall read variables of their own. Anything else that is
unknown or invalid raises :class:`~coderecall.ConfigError` naming the key and where it came
from; invalid TOML names the file and the line.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pathspec

from ._errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "MAX_COUNT",
    "MCP_TOOLSETS",
    "PROVIDER_NAMES",
    "Config",
    "load_config",
]

DEFAULT_MAX_FILE_SIZE = 1_048_576
"""Files above 1 MiB are almost always generated code or data, not something to search."""
MAX_COUNT = (1 << 31) - 1
"""The largest limit, line or count handed to the core, which holds them in 32 bits: a larger
one (a limit of 10**20) means "all of them" all the same."""

ENV_PREFIX = "CODERECALL_"

MCP_TOOLSETS = ("code", "memory", "knowledge", "diagnostics")
"""The tool sets of the MCP server, in the order it lists them: searching and reading the code
(with indexing it), the agent memory, knowledge bases, and the index's health, metrics and
logs. Each tool definition costs an agent's context tokens in every session, so a host that
uses no memory can leave its eight tools out."""


@dataclass(frozen=True, slots=True)
class Config:
    """Resolved settings for one project root; see the module docstring for each key.

    Values are validated and normalised on construction (lists become tuples, sizes become
    integers), so ``Config(include=["src/"])`` works and ``Config(limit=0)`` raises
    :class:`~coderecall.ConfigError`.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    index_dir: Path | None = None
    respect_gitignore: bool = True
    limit: int = 10
    per_file: int = 4
    gc_grace: float = 7 * 24 * 3600.0
    watch_debounce: float = 0.3
    mcp_token_cap: int = 4000
    context_budget: int = 3000
    mcp_tools: tuple[str, ...] = MCP_TOOLSETS
    embedding_provider: str = "auto"
    embedding_model: str | None = None
    embedding_base_url: str | None = None
    embedding_api_key: str | None = dataclasses.field(default=None, repr=False)
    embedding_api_key_env: str | None = None
    embedding_dims: int | None = None
    embedding_batch_size: int | None = None
    embedding_concurrency: int | None = None
    embedding_input_token_limit: int | None = None
    embedding_max_retries: int | None = None
    embedding_read_timeout: float | None = None
    embedding_connect_timeout: float | None = None
    embedding_backoff_max: float | None = None
    embedding_max_tokens: int = 256
    embedding_query_prompt: str | None = None
    embedding_document_prompt: str | None = None
    embedding_quantization: Literal["bf16", "f16", "i8"] = "bf16"
    embedding_weight: float | None = None

    def __post_init__(self) -> None:
        source = _Source("Config()")
        for field in dataclasses.fields(self):
            value = _convert(field.name, field.name, getattr(self, field.name), source)
            object.__setattr__(self, field.name, value)


@dataclass(frozen=True, slots=True)
class _Source:
    """Where a layer of settings came from, for messages and relative paths."""

    label: str
    base: Path | None = None  # relative paths resolve against this; None: the current dir
    text: bool = False  # values are strings to parse (the environment)


class _InvalidValueError(Exception):
    """A value failed validation; carries what was expected, for ConfigError's message."""


def load_config(
    root: str | os.PathLike[str], overrides: Mapping[str, object] | None = None
) -> Config:
    """Merge every layer for ``root`` into one :class:`Config` (precedence in module docs)."""
    root = Path(os.path.abspath(root))
    pyproject = root / "pyproject.toml"
    values = _layer(_pyproject_table(pyproject), _Source(f"{pyproject} [tool.coderecall]", root))
    dotfile = root / ".coderecall.toml"
    values.update(_layer(_read_toml(dotfile), _Source(str(dotfile), root)))
    values.update(_environment_layer())
    if overrides:
        source = _Source("overrides")
        given = {k: v for k, v in _flatten_tables(overrides, source) if v is not None}
        values.update(_layer(given, source))
    return Config(**values)  # type: ignore[arg-type]  # every value was converted by _layer


def _pyproject_table(path: Path) -> dict[str, object]:
    tool = _read_toml(path).get("tool", {})
    table = tool.get("coderecall", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.coderecall] must be a table", source=str(path))
    return table


def _read_toml(path: Path) -> dict[str, object]:
    """The parsed file, or an empty table when it does not exist."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}", source=str(path)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8", source=str(path)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        if "line" not in message:  # "(at end of document)": say which line that is
            last_line = text.count("\n") + 1
            message += f" (line {last_line})"
        raise ConfigError(f"{path}: invalid TOML: {message}", source=str(path)) from None


def _layer(table: Mapping[str, object], source: _Source) -> dict[str, object]:
    """Validate one layer's keys and values, keyed by the canonical (snake_case) name."""
    layer: dict[str, object] = {}
    for key, value in _flatten_tables(table, source):
        name = _canonical_key(key, source)
        if name in layer:
            raise ConfigError(
                f"{source.label}: key {key!r} is set twice (as kebab-case and snake_case)",
                key=key,
                source=source.label,
            )
        layer[name] = _convert(name, key, value, source)
    return layer


def _flatten_tables(table: Mapping[str, object], source: _Source) -> list[tuple[str, object]]:
    """Keys of the ``[embedding]`` table as ``embedding.<key>``; other keys as they are."""
    flat: list[tuple[str, object]] = []
    for key, value in table.items():
        if key in _TABLES:
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"{source.label}: {key!r} must be a table of settings",
                    key=key,
                    source=source.label,
                )
            flat.extend((f"{key}.{sub}", item) for sub, item in value.items())
        else:
            flat.append((key, value))
    return flat


def _display(name: str) -> str:
    """How a canonical name is written in files: ``embedding.base-url``, ``max-file-size``."""
    table, _, rest = name.partition("_")
    if table in _TABLES and rest:
        return f"{table}.{rest.replace('_', '-')}"
    return name.replace("_", "-")


def _environment_layer() -> dict[str, object]:
    layer: dict[str, object] = {}
    for name in _CONVERTERS:
        variable = ENV_PREFIX + name.upper()
        if variable in os.environ:
            source = _Source(f"environment variable {variable}", text=True)
            layer[name] = _convert(name, variable, os.environ[variable], source)
    return layer


def _canonical_key(key: str, source: _Source) -> str:
    name = key.replace("-", "_").replace(".", "_")
    if name in _CONVERTERS:
        return name
    known = sorted((_display(name) for name in _CONVERTERS), key=lambda k: ("." in k, k))
    close = difflib.get_close_matches(_display(name), known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
    raise ConfigError(f"{source.label}: unknown key {key!r}{hint}", key=key, source=source.label)


def _convert(name: str, key: str, value: object, source: _Source) -> object:
    """Run the converter for ``name``; ``key`` is the spelling shown in messages."""
    try:
        return _CONVERTERS[name](value, source)
    except _InvalidValueError as exc:
        # The label of an environment variable already names it, as the user wrote it.
        what = "invalid value" if source.text else f"invalid value for {key!r}"
        raise ConfigError(
            f"{source.label}: {what}: expected {exc}, got " + _SECRET.get(name, repr(value)),
            key=key,
            source=source.label,
        ) from None


def _to_globs(value: object, source: _Source) -> tuple[str, ...]:
    expected = "a comma-separated list of globs" if source.text else "a list of glob strings"
    if source.text and isinstance(value, str):
        patterns = tuple(part.strip() for part in value.split(",") if part.strip())
    elif isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        patterns = tuple(value)
    else:
        raise _InvalidValueError(expected)
    try:
        pathspec.GitIgnoreSpec.from_lines(patterns)
    except ValueError as exc:  # pathspec's GitWildMatchPatternError
        raise _InvalidValueError(f"{expected} ({exc})") from None
    return patterns


def toolsets(names: Iterable[str]) -> tuple[str, ...]:
    """The tool sets ``names`` (any case, blanks ignored) in :data:`MCP_TOOLSETS` order, with
    ``code`` always among them. Raises ``ValueError`` naming the first unknown one."""
    wanted = {name.strip().lower() for name in names} - {""}
    unknown = sorted(wanted - set(MCP_TOOLSETS))
    if unknown:
        raise ValueError(f"unknown tool set {unknown[0]!r} (expected {', '.join(MCP_TOOLSETS)})")
    # The code tools are what the server is for; the others build on them.
    return tuple(name for name in MCP_TOOLSETS if name in wanted or name == "code")


def _to_toolsets(value: object, source: _Source) -> tuple[str, ...]:
    expected = "names of tool sets (" + ", ".join(MCP_TOOLSETS) + ")"
    if source.text and isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _InvalidValueError(expected)
    try:
        return toolsets(value)
    except ValueError:
        raise _InvalidValueError(expected) from None


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "k": 1024,
    "m": 1024**2,
    "g": 1024**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_SIZE_EXPECTED = 'a positive size in bytes, such as 1048576, "512KiB" or "2MB"'
_MAX_SIZE = (1 << 63) - 1
"""Larger sizes mean "no cap" all the same; the core holds sizes in 64 bits."""


def _to_size(value: object, source: _Source) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (match := _SIZE.fullmatch(value)):
        unit = _SIZE_UNITS.get(match[2].lower())
        if unit is None:
            raise _InvalidValueError(_SIZE_EXPECTED)
        size = int(float(match[1]) * unit)
    else:
        raise _InvalidValueError(_SIZE_EXPECTED)
    if size < 1:
        raise _InvalidValueError(_SIZE_EXPECTED)
    return min(size, _MAX_SIZE)


_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?\s*", re.IGNORECASE)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_EXPECTED = 'a duration in seconds, such as 0.3, "300ms", "12h" or "7d"'


def _to_duration(value: object, source: _Source) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value)):
        seconds = float(match[1]) * _DURATION_UNITS[(match[2] or "s").lower()]
    else:
        raise _InvalidValueError(_DURATION_EXPECTED)
    if not 0 <= seconds < float("inf"):
        raise _InvalidValueError(_DURATION_EXPECTED)
    return seconds


def _to_optional_duration(value: object, source: _Source) -> float | None:
    return None if value is None else _to_duration(value, source)


def _to_optional_timeout(value: object, source: _Source) -> float | None:
    seconds = _to_optional_duration(value, source)
    if seconds == 0:
        raise _InvalidValueError(_DURATION_EXPECTED.replace("a duration", "a positive duration"))
    return seconds


def _to_index_dir(value: object, source: _Source) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise _InvalidValueError("a directory path")
    path = Path(value).expanduser()
    return source.base / path if source.base else Path(os.path.abspath(path))


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _to_bool(value: object, source: _Source) -> bool:
    if isinstance(value, bool):
        return value
    if source.text and isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE | _FALSE:
            return word in _TRUE
    raise _InvalidValueError(
        "a boolean (1/0, true/false, yes/no)" if source.text else "true or false"
    )


def _to_count(value: object, source: _Source, least: int = 1) -> int:
    expected = f"a whole number of at least {least}"
    if source.text and isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise _InvalidValueError(expected) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise _InvalidValueError(expected)
    return min(value, MAX_COUNT)


def _to_budget(value: object, source: _Source) -> int:
    count = _to_count(value, source)
    if count < 100:
        raise _InvalidValueError("a whole number of at least 100")
    return count


def _to_optional_share(value: object, source: _Source) -> float | None:
    if value is None:
        return None
    if source.text and isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise _InvalidValueError("a number from 0 to 1") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise _InvalidValueError("a number from 0 to 1")
    return float(value)


def _to_optional_count(value: object, source: _Source) -> int | None:
    return None if value is None else _to_count(value, source)


def _to_optional_retries(value: object, source: _Source) -> int | None:
    return None if value is None else _to_count(value, source, least=0)


def _to_prompt(value: object, source: _Source) -> str | None:
    # As written: a prompt's trailing space is part of it, and "" means none.
    if value is None or isinstance(value, str):
        return value
    raise _InvalidValueError("a string")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _to_env_name(value: object, source: _Source) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _ENV_NAME.fullmatch(value.strip()):
        raise _InvalidValueError(
            "the name of an environment variable (letters, digits and underscores, not "
            "starting with a digit)"
        )
    return value.strip()


def _to_optional_text(value: object, source: _Source) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _InvalidValueError("a non-empty string")
    return value.strip()


PROVIDER_NAMES = (
    "auto",
    "static",
    "transformer",
    "none",
    "openai",
    "openai-compatible",
    "voyage",
    "gemini",
    "ollama",
)


QUANTIZATIONS = ("bf16", "f16", "i8")


def _one_of(names: tuple[str, ...]) -> Callable[[object, _Source], str]:
    """A converter accepting one of ``names``, case-insensitive."""

    def convert(value: object, source: _Source) -> str:
        name = value.strip().lower() if isinstance(value, str) else None
        if name not in names:
            raise _InvalidValueError("one of " + ", ".join(names))
        return name

    return convert


_TABLES = ("embedding",)
_SECRET = {
    "embedding_api_key": "a hidden value",
    # Never echoed: the usual slip is the key itself where its variable's name belongs.
    "embedding_api_key_env": "a value that looks like a key, not a variable name",
}
"""What a message says in place of a bad value that may be a secret."""

_CONVERTERS: dict[str, Callable[[object, _Source], object]] = {
    "include": _to_globs,
    "exclude": _to_globs,
    "max_file_size": _to_size,
    "index_dir": _to_index_dir,
    "respect_gitignore": _to_bool,
    "limit": _to_count,
    "per_file": _to_count,
    "gc_grace": _to_duration,
    "watch_debounce": _to_duration,
    "mcp_token_cap": _to_count,
    "context_budget": _to_budget,
    "mcp_tools": _to_toolsets,
    "embedding_provider": _one_of(PROVIDER_NAMES),
    "embedding_model": _to_optional_text,
    "embedding_base_url": _to_optional_text,
    "embedding_api_key": _to_optional_text,
    "embedding_api_key_env": _to_env_name,
    "embedding_dims": _to_optional_count,
    "embedding_batch_size": _to_optional_count,
    "embedding_concurrency": _to_optional_count,
    "embedding_input_token_limit": _to_optional_count,
    "embedding_max_retries": _to_optional_retries,
    "embedding_read_timeout": _to_optional_timeout,
    "embedding_connect_timeout": _to_optional_timeout,
    "embedding_backoff_max": _to_optional_duration,
    "embedding_max_tokens": _to_count,
    "embedding_query_prompt": _to_prompt,
    "embedding_document_prompt": _to_prompt,
    "embedding_quantization": _one_of(QUANTIZATIONS),
    "embedding_weight": _to_optional_share,
}
