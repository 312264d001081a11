"""Text that came from bytes which are not UTF-8.

Python decodes such bytes in argv, file names and (under a C locale) stdin to lone surrogates,
and a JSON payload may spell them as ``\\udcff`` escapes. No UTF-8 encoder takes them: SQLite
and the native core would fail on the first one. The write and query paths pass text through
:func:`scrub` first, so such input is stored and searched with U+FFFD in place of each bad
byte, as a browser shows it.
"""

from __future__ import annotations

import re

__all__ = ["is_storable", "scrub"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def is_storable(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 as it is (it holds no lone surrogate)."""
    return text.isascii() or _LONE_SURROGATE.search(text) is None


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (``text`` itself when it has none)."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)
