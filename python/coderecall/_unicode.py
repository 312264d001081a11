"""Text that came from bytes which are not UTF-8.

Python decodes such bytes in argv, file names and (under a C locale) stdin to lone surrogates,
and a JSON payload may spell them as ``\\udcff`` escapes. No UTF-8 encoder takes them: SQLite
and the native core would fail on the first one. The write and query paths pass text through
:func:`scrub` first, so such input is stored and searched with U+FFFD in place of each bad
byte, as a browser shows it.
"""

from __future__ import annotations

import re

__all__ = ["scrub"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (``text`` itself when it has none)."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)
