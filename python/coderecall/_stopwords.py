"""English function words: the words of a question that say how it is asked, not what
about. They match every other turn of a conversation ("how did you ...", "what do you ..."),
so a natural-language query searches better without them. So do the adverbs that place a
question around now ("What workshop did Mia attend recently?"): they match every short reply
that says "recently" or "lately", never what the question is about."""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "content_query"]

_LIST = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves
    currently lately nowadays recently
"""
STOP_WORDS = frozenset(_LIST.split())

_WORD = re.compile(r"[\w'\u2019]+")


def content_query(query: str) -> str:
    """``query`` without its function words, or as it is when nothing else is left."""
    words = [w for w in _WORD.findall(query) if w.lower().replace("\u2019", "'") not in STOP_WORDS]
    return " ".join(words) if words else query
