"""The privacy filter on the memory write path: private sections, secrets and privacy levels.

Everything the memory store keeps goes through :func:`filter_text` first, so private content
and secrets never reach its database, its vector index or an embedding provider.

**Private sections.** ``<private>...</private>`` (tag in any case, attributes allowed, any
number of lines) is cut out whole and replaced by ``[private]``. Sections nest: the outermost
one is what is cut. The filter fails closed on broken markup:

* an unclosed ``<private>`` hides everything after it;
* a stray ``</private>`` (no section open) hides everything before it, back to the start of
  the text or the end of the previous section: it most likely closes a section whose opening
  tag was mistyped.

Sections are cut before secrets are looked for, so a secret inside one leaves no trace, not
even its kind.

**Secrets** are replaced by ``[redacted:<kind>]``, in one left-to-right pass (see
``_PROVIDERS`` and the patterns below it for the exact shapes):

* provider tokens, whole: ``anthropic`` (``sk-ant-``), ``openai`` (``sk-proj-`` and the other
  ``sk-<type>-`` keys, or ``sk-`` and 32+ letters and digits), ``github`` (``ghp_``,
  ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), ``gitlab`` (``glpat-`` ...),
  ``slack`` (``xox[abeoprs]-``), ``slack_webhook`` (the path of a hooks.slack.com URL),
  ``google_api_key`` (``AIza`` + 35), ``google_oauth_secret`` (``GOCSPX-``), ``stripe``
  (``sk_live_``, ``sk_test_``, ``rk_live_``, ``rk_test_``), ``stripe_webhook`` (``whsec_``),
  ``aws_access_key_id`` (``AKIA``/``ASIA``/``ABIA``/``ACCA`` + 16), ``huggingface`` (``hf_``),
  ``npm`` (``npm_``), ``pypi`` (``pypi-AgEIcHlwaS5vcmc``), ``sendgrid`` (``SG.``), ``jwt``
  (``eyJ...`` header ``.`` ``eyJ...`` payload ``.`` signature);
* ``private_key``: a PEM ``-----BEGIN ... PRIVATE KEY-----`` block through its END line (an
  unclosed block loses everything that looks like key material after the header);
* ``password`` in a URL: ``scheme://user:password@host`` keeps the scheme, user and host;
* ``authorization``: the credentials of an ``Authorization:`` header (the scheme word, such as
  ``Bearer``, stays), and ``bearer``: ``Bearer <20+ token characters>`` anywhere;
* labelled values: a key ending in ``password``, ``passwd``, ``passphrase``, ``pass`` (as
  ``db_pass``), ``secret``, ``token``, ``api_key``/``apikey``, ``access_key``, ``secret_key``,
  ``private_key``, ``client_key``, ``auth_key``, ``signing_key``, ``encryption_key`` or
  ``master_key`` (any case, ``_``/``-``/none between words, quoted or not), then ``=``, ``:``,
  ``=>`` or a type annotation and ``=``, then the value. The kind follows the key
  (``password``, ``secret``, ``token``, ``api_key``, ``private_key``, ``aws_secret_key``) unless
  the value is itself a provider token, whose kind wins.

Decisions against false positives (a secret filter that mangles code is not used):

* Stripe publishable keys (``pk_live_``, ``pk_test_``) are left: they are public by design
  and sit in every web page that takes a payment. Test-mode secret keys are redacted.
* Git SHAs, UUIDs and hex digests have no provider prefix and are never matched; old
  40-hex GitHub tokens are therefore not found either (only labelled, as ``token=...``).
* A token is only found at the start of a word: never inside a longer identifier, base64 or
  base64url run (so ``data:`` URLs with base64 images are left alone).
* Words such as "token" or "password" in prose are left unless a value is assigned to them.
  A quoted value is redacted unless it is shorter than 4 characters, a template (``${X}``,
  ``{{ x }}``, ``{x}``, ``%(x)s``, ``$X``), a placeholder in brackets (``<your-key>``,
  ``[PAD]``, ``</s>``), a mask (``****``, ``xxxx``), an environment variable's name
  (``"OPENAI_API_KEY"``) or a placeholder word (``"password"``, ``"token"``...).
* An unquoted value is redacted unless it reads as code: a name without digits (``token:
  str``, ``password = None``, ``secret: changeme`` too), a dotted name (``args.password``),
  a call or subscript (``get_token()``), a literal list or mapping, a number of at most 3
  digits, a template, a YAML tag, alias or block indicator. In an environment file line
  (``DB_PASSWORD=value``: upper-case key at the start of the line, ``=`` without spaces)
  every value but a template is redacted.
* Passwords in URLs must be percent-encoded where they contain ``/`` (as the URL syntax
  requires); raw ``@``, ``:``, ``?`` and ``#`` are handled. A URL whose password is a
  placeholder (``password``, ``${DB_PASSWORD}``, ``****``) is left.

Unquoted values are read up to whitespace or a quote; an unquoted value longer than 256
characters is taken as a secret in full. All patterns are compiled once and run in linear
time: no ambiguous nested repetition, tokens only start at word boundaries, and a value that
reads as code is re-read at most once (a 1 MB adversarial text takes well under a second).

**Levels.** ``public`` (the default), ``private`` (stored, left out of default retrieval) and
``blocked`` (never stored). :func:`classify` maps a record's explicit level and tags to one;
:func:`filter_text` returns ``Filtered(text="", level="blocked")`` for a blocked record and
the caller refuses it (there is no exception for it: refusing is the normal outcome).

:func:`redact` gives the filtered text alone, for logs and error messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Literal

from ._unicode import scrub

__all__ = [
    "LEVELS",
    "PRIVATE_MARKER",
    "Filtered",
    "Level",
    "classify",
    "filter_text",
    "redact",
]

Level = Literal["public", "private", "blocked"]
"""How a memory record may be kept: ``public`` (default), ``private`` (kept, left out of
default retrieval) or ``blocked`` (refused)."""

LEVELS: Final[tuple[Level, ...]] = ("public", "private", "blocked")
"""The levels, from least to most restricted."""

PRIVATE_MARKER: Final = "[private]"
"""What a ``<private>`` section is replaced by."""

_BLOCKED_TAGS: Final = frozenset(
    {
        "blocked",
        "block",
        "do-not-store",
        "dont-store",
        "don't-store",
        "do-not-remember",
        "dont-remember",
        "never-store",
        "no-store",
        "nostore",
    }
)
_PRIVATE_TAGS: Final = frozenset(
    {
        "private",
        "secret",
        "secrets",
        "sensitive",
        "confidential",
        "credentials",
        "personal",
        "pii",
    }
)


@dataclass(frozen=True)
class Filtered:
    """What may be stored of one text, from :func:`filter_text`."""

    text: str
    """The text with private sections and secrets replaced; ``""`` for a blocked record."""
    redactions: tuple[str, ...]
    """The kind of every secret redacted, in the order they appear in the text."""
    private_sections: int
    """How many private sections (or broken-markup regions) were cut out."""
    level: Level
    """The record's level, from :func:`classify`."""

    @property
    def blocked(self) -> bool:
        """Whether the record must be refused (``level == "blocked"``)."""
        return self.level == "blocked"


def classify(tags: Iterable[str] = (), level: str | None = None) -> Level:
    """The privacy level of a record, from its explicit ``level`` and its ``tags``.

    ``level`` is one of :data:`LEVELS` (any case, surrounding spaces ignored); anything else
    raises :class:`ValueError` naming the allowed ones. Tags are compared in lower case with
    ``_`` and spaces read as ``-``:

    * ``blocked``, ``block``, ``do-not-store``, ``dont-store``, ``no-store``, ``nostore``,
      ``never-store``, ``do-not-remember``, ``dont-remember`` -> ``blocked``;
    * ``private``, ``secret``, ``secrets``, ``sensitive``, ``confidential``, ``credentials``,
      ``personal``, ``pii`` -> ``private``;
    * other tags say nothing.

    The most restricted of the explicit level and the tags wins, so a tag is never overridden
    into exposure (``level="public"`` with tag ``secret`` is ``private``). A single string
    passed as ``tags`` is one tag, not a sequence of letters.
    """
    rank = 0
    if level is not None:
        name = level.strip().lower()
        if name not in LEVELS:
            allowed = ", ".join(LEVELS)
            raise ValueError(f"unknown privacy level {level!r}; expected one of: {allowed}")
        rank = LEVELS.index(name)
    for tag in (tags,) if isinstance(tags, str) else tags:
        norm = tag.strip().lower().replace("_", "-").replace(" ", "-")
        if norm in _BLOCKED_TAGS:
            return "blocked"
        if norm in _PRIVATE_TAGS:
            rank = max(rank, 1)
    return LEVELS[rank]


Shrink = Callable[[str, Callable[[str], str]], str]
"""A cut of a long text: ``shrink(text, redact)`` (see :func:`filter_text`)."""


def filter_text(
    text: str,
    *,
    tags: Iterable[str] = (),
    level: str | None = None,
    shrink: Shrink | None = None,
) -> Filtered:
    """``text`` as it may be stored: private sections cut out, secrets redacted.

    The level comes from :func:`classify` (so an unknown ``level`` raises ValueError). A
    blocked record is not read at all: the result has ``text=""``, no redactions and
    ``level="blocked"``, and the caller must refuse it. Filtering is idempotent: filtering
    the filtered text changes nothing.

    ``shrink`` keeps the secret scan, the costly part, to the text that is kept of a long
    one (a tool's output of megabytes): it is called with the text less its private
    sections and private keys (cut in linear passes over the whole text, private keys
    being the one secret that spans lines) and a ``redact`` function, and must return only
    text that went through ``redact``, a secret that its cut would split included (as
    :func:`coderecall._sessions.compact_output` does). What it returns is scanned once
    more, whole. The private keys are then the first ``redactions``.
    """
    lvl = classify(tags, level)
    if lvl == "blocked":
        return Filtered(text="", redactions=(), private_sections=0, level=lvl)
    visible, sections = _cut_private(scrub(text))
    found: list[str] = []
    if shrink is not None:

        def redact_part(part: str) -> str:
            clean, kinds = _redact_secrets(part)
            found.extend(kinds)
            return clean

        keys, kinds = _redact_secrets(visible, _PEM_ONLY)
        found.extend(kinds)
        visible = shrink(keys, redact_part)
    clean, kinds = _redact_secrets(visible)
    found.extend(kinds)
    return Filtered(text=clean, redactions=tuple(found), private_sections=sections, level=lvl)


def redact(text: str) -> str:
    """``text`` with private sections cut out and secrets redacted, for logs and errors."""
    return _redact_secrets(_cut_private(text)[0])[0]


# --- private sections -------------------------------------------------------------------

_TAG: Final = re.compile(r"<[ \t]*(/?)[ \t]*private(?:\s[^<>]*)?>", re.IGNORECASE)
"""An opening or closing private tag; ``[^<>]*`` keeps a scan from crossing another tag."""


def _cut_private(text: str) -> tuple[str, int]:
    """``text`` with its private sections replaced by the marker, and how many there were."""
    parts: list[str] = []
    depth = 0
    sections = 0
    visible_from = 0  # start of the text not yet copied (nor hidden)
    for m in _TAG.finditer(text):
        if not m.group(1):  # <private>
            if depth == 0:
                parts.append(text[visible_from : m.start()])
            depth += 1
        elif depth > 0:  # </private> closing an open section
            depth -= 1
            if depth == 0:
                parts.append(PRIVATE_MARKER)
                sections += 1
                visible_from = m.end()
        else:  # stray </private>: fail closed, hide what precedes it
            before = text[visible_from : m.start()]
            if before.strip():
                parts.append(PRIVATE_MARKER)
                sections += 1
            else:
                parts.append(before)
            visible_from = m.end()
    if depth > 0:  # unclosed: everything after the opening tag is private
        parts.append(PRIVATE_MARKER)
        sections += 1
    else:
        parts.append(text[visible_from:])
    if sections == 0 and len(parts) == 1:
        return text, 0
    return "".join(parts), sections


# --- secrets ----------------------------------------------------------------------------

_START: Final = r"(?<![A-Za-z0-9_+/-])"
"""A token starts a word: not inside an identifier, a base64 or a base64url run."""
_END: Final = r"(?![A-Za-z0-9_-])"

_PROVIDERS: Final[tuple[tuple[str, str], ...]] = (
    ("anthropic", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    (
        "openai",
        r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,}[A-Za-z0-9_-]*)",
    ),
    ("github", r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{30,})"),
    (
        "gitlab",
        r"gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*",
    ),
    ("slack", r"xox[abeoprs]-[A-Za-z0-9-]{10,}"),
    ("google_api_key", r"AIza[A-Za-z0-9_-]{35}" + _END),
    ("google_oauth_secret", r"GOCSPX-[A-Za-z0-9_-]{20,}"),
    ("stripe", r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("stripe_webhook", r"whsec_[A-Za-z0-9]{24,}"),
    ("aws_access_key_id", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _END),
    ("huggingface", r"hf_[A-Za-z0-9]{34,}"),
    ("npm", r"npm_[A-Za-z0-9]{36,}"),
    ("pypi", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    ("sendgrid", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _END),
    ("jwt", r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
)

_PEM_CHARS: Final = r"[A-Za-z0-9+/=\s\\:,]"  # base64, headers (Proc-Type: 4,ENCRYPTED), "\n"
_PEM: Final = (
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    rf"(?P<pem_body>{_PEM_CHARS}*(?:-(?!----){_PEM_CHARS}*)*)"
    r"(?P<pem_end>-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
)
_VALUE_MAX: Final = 256
_UNQUOTED: Final = rf"[^\s\"'`]{{1,{_VALUE_MAX}}}"
_QUOTED: Final = r"\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?|`[^`\n]*`?"
_KEY: Final = (
    r"(?:[A-Za-z0-9_.-]*[_.-])?pass"
    r"|[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|apikey"
    r"|(?:api|access|secret|private|client|auth|signing|encryption|master)[_-]?key)"
)
_SEP: Final = (
    r"[\"']?(?:"
    r"[ \t]*:[ \t]+[A-Za-z_][A-Za-z0-9_.\[\], |]{0,40}?[ \t]+=(?![=>])"  # x: str = ...
    r"|[ \t]*(?:=>|=(?![=>])|:(?![:=]))"
    r")[ \t]*"
)

_WORD_BRANCHES: Final = (
    *((f"p_{kind}", _START + rx) for kind, rx in _PROVIDERS),
    (
        "url",
        r"(?P<url_keep>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://)"
        r"(?P<url_user>[^\s:/?#@\"'<>]*):(?P<url_pw>[^\s/\"'<>]+)@",
    ),
    (
        "auth",
        r"(?P<auth_keep>(?<![A-Za-z0-9_-])(?i:(?:proxy-)?authorization)"
        r"[\"']?[ \t]*[:=][ \t]*[\"']?)"
        r"(?P<auth_scheme>(?i:bearer|basic|token|bot|apikey)[ \t]+)?"
        rf"(?P<auth_val>{_UNQUOTED})",
    ),
    (
        "bearer",
        r"(?P<bearer_keep>(?<![A-Za-z0-9_-])[Bb]earer[ \t]+)[A-Za-z0-9._~+/-]{20,}=*",
    ),
    (
        "kv",
        rf"(?P<kv_key>(?<![A-Za-z0-9_.-])(?i:{_KEY})(?![A-Za-z0-9_.-]))"
        rf"(?P<kv_sep>{_SEP})(?P<kv_val>{_QUOTED}|{_UNQUOTED})",
    ),
)
"""Branches that start a word. They share one look-behind, so a position inside a word is
dismissed with one test instead of one per branch (most of the scanning time)."""
_OTHER_BRANCHES: Final = (
    ("pem", _PEM),
    (
        "slackhook",
        r"(?P<slackhook_keep>hooks\.slack\.com/(?:services|workflows|triggers)/)"
        r"[A-Za-z0-9_/-]{16,}",
    ),
)


def _alternatives(branches: Iterable[tuple[str, str]]) -> str:
    return "|".join(f"(?P<{name}>{rx})" for name, rx in branches)


_SECRET: Final = re.compile(
    rf"(?<![A-Za-z0-9_])(?:{_alternatives(_WORD_BRANCHES)})|{_alternatives(_OTHER_BRANCHES)}"
)
_PEM_ONLY: Final = re.compile(_alternatives(_OTHER_BRANCHES[:1]))
"""Private keys alone: a literal start, so a pass over megabytes takes milliseconds."""
_PROVIDER: Final = re.compile(_alternatives(_PROVIDERS))
"""Used with ``fullmatch`` only: whether a labelled value is itself a provider token."""
_RUN_REST: Final = re.compile(r"[^\s\"'`]*")
_BASE64_RUN: Final = re.compile(r"[A-Za-z0-9+/]{40}")

_PLACEHOLDER_WORDS: Final = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "bearer",
        "basic",
        "none",
        "null",
        "undefined",
        "true",
        "false",
    }
)
_TEMPLATE: Final = re.compile(
    r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Z_][A-Z0-9_]*|\$?\{\{[^{}]*\}?\}?|\$\([^()]*\)?"
    r"|\{[A-Za-z_][\w.]*\}|%\(\w+\)[sd]|%[sd]"
)
"""A reference filled in elsewhere: ``${VAR}``, ``$VAR``, ``{{ x }}``/``${{ x }}`` (also
their first word, as an unquoted value ends at a space), ``$(command``, ``{x}``, ``%(x)s``."""
_QUOTED_PLACEHOLDER: Final = re.compile(
    r"\[[^\[\]\n]*\]|<[^<>\n]*>|\*+|[xX]+|\.+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
)
_CODE_CALL: Final = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?=[(\[])")
_CODE_NAME: Final = re.compile(
    r"[A-Za-z_]+|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+[!?]?|-?\d{1,3}"
    r"|[*&][A-Za-z_][\w-]*|![\w!./:-]*|[|>][-+]?\d?|\*+|~"
)


def _redact_secrets(text: str, pattern: re.Pattern[str] = _SECRET) -> tuple[str, tuple[str, ...]]:
    """``text`` with every secret replaced by its marker, and the kinds in text order."""
    parts: list[str] = []
    kinds: list[str] = []
    copied = 0  # text[:copied] is in parts
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        found = _judge(m)
        if isinstance(found, int):  # not a secret: resume scanning from there
            pos = max(found, m.start() + 1)
            continue
        start, end, replacement, found_kinds = found
        parts.append(text[copied:start])
        parts.append(replacement)
        kinds.extend(found_kinds)
        copied = pos = end
    if not parts:
        return text, ()
    parts.append(text[copied:])
    return "".join(parts), tuple(kinds)


_Replace = tuple[int, int, str, tuple[str, ...]]
"""``(start, end, replacement, kinds)``: replace ``text[start:end]``."""


def _judge(m: re.Match[str]) -> _Replace | int:
    """What to do with one match: a replacement, or the offset to resume scanning at."""
    name = m.lastgroup
    assert name is not None
    if name.startswith("p_"):
        return m.start(), m.end(), _marker(name[2:]), (name[2:],)
    if name == "pem":
        if m.group("pem_end") is None and not _BASE64_RUN.search(m.group("pem_body")):
            return m.start("pem_body")  # the header is mentioned, no key follows
        return m.start(), m.end(), _marker("private_key"), ("private_key",)
    if name == "slackhook":
        return _keep(m, "slackhook_keep", "slack_webhook")
    if name == "url":
        return _judge_url(m)
    if name == "auth":
        return _judge_auth(m)
    if name == "bearer":
        value = m.group(0)[m.end("bearer_keep") - m.start() :]
        return _keep(m, "bearer_keep", _provider_kind(value) or "bearer")
    return _judge_labelled(m)


def _marker(kind: str) -> str:
    return f"[redacted:{kind}]"


def _keep(m: re.Match[str], group: str, kind: str) -> _Replace:
    """Redact the match after its ``group`` prefix."""
    return m.start(), m.end(), m.group(group) + _marker(kind), (kind,)


def _provider_kind(value: str) -> str | None:
    found = _PROVIDER.fullmatch(value)
    return None if found is None else found.lastgroup


def _is_marker(value: str) -> bool:
    return value.startswith(("[redacted:", PRIVATE_MARKER))


def _judge_url(m: re.Match[str]) -> _Replace | int:
    user, password = m.group("url_user"), m.group("url_pw")
    if (
        "[redacted:" in password
        or password.lower() in _PLACEHOLDER_WORDS
        or _TEMPLATE.fullmatch(password)
        or _QUOTED_PLACEHOLDER.fullmatch(password)
    ):
        return m.end("url_keep")  # the user part may still hold a token
    kinds: list[str] = []
    user_kind = _provider_kind(user)
    if user_kind is not None:
        user = _marker(user_kind)
        kinds.append(user_kind)
    kind = _provider_kind(password) or "password"
    kinds.append(kind)
    replacement = f"{m.group('url_keep')}{user}:{_marker(kind)}@"
    return m.start(), m.end(), replacement, tuple(kinds)


def _judge_auth(m: re.Match[str]) -> _Replace | int:
    start = m.start("auth_val")
    value = m.group("auth_val")
    if _is_marker(value) or _TEMPLATE.fullmatch(value):
        return m.end()
    cut = m.end() - start == _VALUE_MAX
    if m.group("auth_scheme") is None and _reads_as_code(value, cut):
        return start
    value, end = _trim(*_whole_value(m, "auth_val"))
    kind = _provider_kind(value) or "authorization"
    return m.start(), end, m.string[m.start() : start] + _marker(kind), (kind,)


def _judge_labelled(m: re.Match[str]) -> _Replace | int:
    key = m.group("kv_key")
    value = m.group("kv_val")
    start = m.start("kv_val")
    kind = _labelled_kind(key)
    if value[0] in "\"'`":
        quote = value[0]
        closed = len(value) > 1 and value.endswith(quote)
        inner = value[1:-1] if closed else value[1:]
        if _quoted_placeholder(inner, key):
            return start + 1  # a template may still hold a token: read inside it
        kind = _provider_kind(inner) or kind
        replacement = m.string[m.start() : start + 1] + _marker(kind) + (quote if closed else "")
        return m.start(), m.end(), replacement, (kind,)
    end = m.end()
    if _is_marker(value):
        return end
    before = m.string[m.start() - 1 : m.start()]
    if before in ("?", "&"):  # a URL query: the value ends at the next parameter
        cut = min((i for i in (value.find("&"), value.find("#")) if i >= 0), default=-1)
        if cut == 0:
            return start
        if cut > 0:
            value, end = value[:cut], start + cut
    if _env_line(m):  # KEY=value in an environment file: anything but a template
        if _TEMPLATE.fullmatch(value):
            return end
    elif _reads_as_code(value, end - start == _VALUE_MAX):
        return start
    if end == m.end():
        value, end = _whole_value(m, "kv_val")
    value, end = _trim(value, end)
    kind = _provider_kind(value) or kind
    return m.start(), end, m.string[m.start() : start] + _marker(kind), (kind,)


def _whole_value(m: re.Match[str], group: str) -> tuple[str, int]:
    """The unquoted value of ``group`` and its end, past the length bound if it goes on.

    Only called for a value judged a secret, which is then replaced: each character is
    read here at most once, so a run of values that read as code stays linear."""
    end = m.end(group)
    if end - m.start(group) == _VALUE_MAX:
        rest = _RUN_REST.match(m.string, end)
        assert rest is not None
        end = rest.end()
    return m.string[m.start(group) : end], end


def _trim(value: str, end: int) -> tuple[str, int]:
    """Leave a trailing ``,`` or ``;`` and unbalanced closing brackets out of a value."""
    stop = len(value)
    if stop > 1 and value[-1] in ",;":
        stop -= 1
    excess = {c: value.count(c, 0, stop) - value.count(o, 0, stop) for o, c in ("()", "[]", "{}")}
    while stop > 1 and excess.get(value[stop - 1], 0) > 0:
        excess[value[stop - 1]] -= 1
        stop -= 1
    return value[:stop], end - (len(value) - stop)


def _reads_as_code(value: str, cut: bool) -> bool:
    """Whether an unquoted value reads as code or a template, not as a secret.

    The caller then resumes scanning at the value, so a provider token that also reads as a
    name (``ghp_`` and letters) is still found. ``cut``: ``value`` is the first
    ``_VALUE_MAX`` characters of a longer one, a secret unless it opens with a call, a
    subscript or a bracket.
    """
    if value[0] in "([{<" or _CODE_CALL.match(value):
        return True
    if cut:
        return False
    if _TEMPLATE.fullmatch(value.rstrip(",;")):
        return True
    core = value.rstrip(",;.:!?)]}") or value
    return bool(_CODE_NAME.fullmatch(core))


def _quoted_placeholder(inner: str, key: str) -> bool:
    stripped = inner.strip()
    return (
        len(stripped) < 4
        or stripped.lower() in _PLACEHOLDER_WORDS
        or stripped.lower() == key.lower()
        or _TEMPLATE.fullmatch(stripped) is not None
        or _QUOTED_PLACEHOLDER.fullmatch(stripped) is not None
    )


def _labelled_kind(key: str) -> str:
    k = key.lower().replace("-", "").replace("_", "").replace(".", "")
    if "secretaccesskey" in k or ("aws" in k and "secret" in k):
        return "aws_secret_key"
    if k.endswith("privatekey"):
        return "private_key"
    if k.endswith(("apikey", "accesskey", "clientkey", "authkey")):
        return "api_key"
    if k.endswith("token"):
        return "token"
    if k.endswith(("secret", "key")):
        return "secret"
    return "password"


_ENV_HEAD: Final = frozenset({"", "export", "-"})


def _env_line(m: re.Match[str]) -> bool:
    """Whether the match is ``KEY=value`` opening a line of an environment file."""
    key = m.group("kv_key")
    if m.group("kv_sep") != "=" or not key.isupper():
        return False
    start = m.start()
    low = max(0, start - 16)
    head = m.string[low:start]
    newline = head.rfind("\n")
    if newline < 0 and low > 0:
        return False
    return head[newline + 1 :].strip() in _ENV_HEAD
