"""A tokenizer-free estimate of how many tokens a remote model will count.

Remote services bill and limit by their own tokenizers, which we do not ship (tiktoken alone
would need its vocabulary files downloaded at run time). BPE vocabularies of the OpenAI,
Voyage and Gemini kind agree closely enough on code that counting *word pieces* works:

* a word, or each hump of a camelCase / snake_case identifier, is one token, plus one more per
  further 8 letters (long words split);
* digits count in groups of up to three (the usual BPE digit grouping);
* each punctuation mark and each non-ASCII character is one token;
* a line break with its indentation, or any run of two or more spaces, is one token; a single
  space is free (BPE merges it into the next word).

On source code this lands at or somewhat above the real counts (it never merges operators such
as ``!=`` or ``->``), which is the safe side for request limits and cost estimates. Every size
decision in :mod:`coderecall._providers` goes through :func:`estimate_tokens`.
"""

from __future__ import annotations

import re

__all__ = ["estimate_tokens", "truncate_tokens"]

_PIECES = re.compile(
    r"""
      [A-Z]?[a-z]+          # a lower-case word, or one camelCase hump
    | [A-Z]+(?![a-z])       # an acronym or an upper-case word
    | [0-9]{1,3}            # digits, grouped by up to three
    | \n[ \t]* | [ \t]{2,}  # a line break with its indentation, or a run of spaces
    | [^\sA-Za-z0-9]        # punctuation, or one non-ASCII character
    """,
    re.VERBOSE,
)

_LETTERS_PER_EXTRA_TOKEN = 8


def _piece_tokens(piece: str) -> int:
    if piece[0].isascii() and piece[0].isalpha():
        return 1 + (len(piece) - 1) // _LETTERS_PER_EXTRA_TOKEN
    return 1


def estimate_tokens(text: str) -> int:
    """About how many tokens a remote embedding model counts for ``text`` (see the module)."""
    return sum(_piece_tokens(match.group()) for match in _PIECES.finditer(text))


def truncate_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` estimated at no more than ``limit`` tokens.

    Cuts fall between pieces, never inside a word.
    """
    # Every piece is at least one character and counts at most one token per character.
    if len(text) <= limit:
        return text
    used = 0
    for match in _PIECES.finditer(text):
        used += _piece_tokens(match.group())
        if used > limit:
            return text[: match.start()]
    return text
