"""Time phrases in memory queries, resolved against the dates of the records.

``resolve("what did we decide yesterday about caching", anchor)`` finds ``yesterday``, turns it
into a half-open range ``[start, end)`` and returns the query without it ("what did we decide
about caching"). The *anchor* is the newest record's (or session's) time, not the wall clock:
memory read a month after it was written still means by "yesterday" the day before the
last session.

Ranges are whole calendar units in the anchor's time zone (a naive anchor is taken as UTC, and
the range is then aware, in UTC). Day boundaries are built from dates, so they fall at local
midnight also across daylight-saving changes. The phrases, and what they name:

* ``today``, ``earlier today``: the anchor's day. ``yesterday``: the calendar day before it;
  ``the day before yesterday``: two days before.
* ``this morning`` (0-12 h), ``this afternoon`` (12-18 h), ``this evening`` (18-24 h) of the
  anchor's day; ``tonight`` and ``last night``: 18 h to 6 h of the next day. A one-day phrase
  may take a part of day too: ``yesterday morning``, ``Monday evening``.
* ``Monday``, ``on Monday``, ``last Monday``, ``this past Monday``: the most recent Monday
  *before* the anchor's day, so on a Monday the one a week back (that day itself is
  ``today``). ``this Monday``: the Monday of the anchor's ISO week, even if after the anchor.
* ``this week``, ``last week``, ``previous week``: ISO weeks, Monday to Sunday.
  ``this month``, ``last month``: calendar months (in January, ``last month`` is December of
  the year before). ``this year``, ``last year``: calendar years.
* ``N days ago`` (``weeks``, ``months``, ``years``): the one day, ISO week, month or year N
  units back. N is digits, ``a``/``an``, ``one`` to ``twelve``, or ``a couple of``.
* ``the last week``, ``past week``, ``this past week``, ``last 7 days``, ``past 3 months``,
  ``the last 24 hours``: rolling, the N units (default 1) that end with the end of the
  anchor's day (hours: that start N hours before the anchor). With ``the``, ``past`` or a
  number a phrase is rolling; bare ``last week`` is the calendar week.
* ``March 5``, ``5 March``, ``the 5th of March``, ``March 5, 2024``, ``2024-03-05``: that day.
  Without a year, the most recent one on or before the anchor's day (``February 29`` goes back
  to a leap year). An impossible date (``April 31``) is not a phrase.
* ``March 2024``, ``2024-03``: that month. ``in March``, ``during March``: the most recent
  March that has begun by the anchor (this year's if the anchor is in or after March, else last
  year's). ``last March``: the most recent March *before* the anchor's month.
* ``in 2023``, ``during 2023``: that year, for years from 1970 to the anchor's.
* ``since X``: from the start of X to the end of the anchor's day. ``after X``: from the end
  of X to the end of the anchor's day. ``before X``: no start, up to the start of X.
  ``until X``: no start, up to the end of X. ``between X and Y``, ``from X to Y``: from the
  earlier start to the later end.
* ``N days before X`` (``weeks``, ``months``, ``years``), ``the week before X``, ``the Friday
  before X``: from that point back from the start of X to the end of X. The event lies back
  there; what tells of it was written then or later, by X at the latest ("two weeks before
  August 11" is how one retells "I got a puppy two weeks ago" said on August 11).

Matching is case-insensitive and takes one phrase per query: the leftmost, and of those starting
there the longest (``since last Tuesday`` rather than ``last Tuesday``). One pair is read
together: a relative phrase and a date that needs no anchor, in either order ("what did she
finish last Friday, on 23 January 2022"). The relative phrase is then read from that date, and
the range runs from its start to the end of the date: the date is when it was said.

A leading ``in``, ``on``, ``during``, ``from``, ``over``, ``within`` or ``throughout`` and a
trailing ``'s`` (``yesterday's``) are part of the phrase and leave the query with it.

Words that are also ordinary words are dates only in context:

* A month name alone is never a phrase ("march through the list", "it may fail"). It needs a
  preposition (``in March``, ``since May``), ``last``, a day (``March 5``) or a year
  (``March 2024``). Abbreviated months (``Mar``, ``Sept``) need a day or a year.
* After a preposition, ``may`` followed by a verb-like word stays a verb ("the cache from may
  be stale"). A number before ``march``/``may`` makes a date only with an ordinal, ``of`` or a
  year (``3rd May``, ``3 of May``, ``3 May 2024``; not "all 3 may fail").
* A year needs a preposition, lies between 1970 and the anchor's year, and is not followed by
  a unit ("in 2000 lines", "over 2000 files" are counts).
* Weekdays count alone but only in full (``Sat``, ``Sun``, ``Wed`` are words or too short).
* Vague phrases (``recently``, ``a few days ago``, ``before the release``) are not phrases;
  such queries come back unchanged.

Known limit: a month name followed by a number is a date even where the month is a verb
("march 5 steps").

Apart from ranges, :func:`asks_when` tells a question that asks for a time ("When did ...",
"What year ...") and :func:`tells_time` a text that dates something, loosely (``yesterday``,
``last week``, ``3 days ago``, ``on Friday``, ``May 5``, ``2023``): the memory store ranks
such records first for such questions; :func:`asks_how_long` and :func:`tells_duration` do
the same for durations ("How long has ...", ``for 3 years``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from functools import cache

from ._errors import QueryError

__all__ = [
    "Resolved",
    "asks_how_long",
    "asks_when",
    "parse_bound",
    "resolve",
    "tells_duration",
    "tells_time",
    "where_told",
]

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_ASKS_WHEN = (
    r"\s*(?:when|what (?:time|date|day|month|year)|which (?:date|day|month|year)|how long ago)\b"
)
_ASKS_HOW_LONG = (
    r"\s*(?:for\s+)?how\s+(?:long|many\s+(?:years|months|weeks|days|hours|minutes))\b(?!\s+ago)"
)
_COUNT = (
    r"\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
    r"|a few|a couple of|several|many"
)
# The two below are matched against lowercased text: without IGNORECASE they run twice as
# fast.
_TELLS_DURATION = (
    rf"\b(?:(?:{_COUNT})(?:[-\u2013 ]\d+)? (?:second|minute|hour|day|week|month|year|decade)s?"
    r"|since)\b"
)
_TELLS_TIME = (
    r"\b(?:yesterday|today|tonight|tomorrow|ago|weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|(?:last|next|this|past) (?:night|week|month|year|morning|evening|summer|winter|spring|fall)"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d|[12]\d{3})\b"
)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A query with its time phrase taken out, and the range the phrase names."""

    query: str
    """The query without the phrase, whitespace tidied; unchanged when there is no phrase."""
    start: datetime | None
    """Inclusive start, in the anchor's time zone; ``None`` for no lower bound."""
    end: datetime | None
    """Exclusive end, in the anchor's time zone; ``None`` for no upper bound."""
    phrase: str | None
    """The phrase as written in the query, or ``None`` when there was none."""


_Span = tuple[datetime, datetime]


@dataclass(frozen=True, slots=True)
class _Context:
    anchor: datetime
    today: date
    tz: tzinfo

    def midnight(self, day: date) -> datetime:
        return datetime(day.year, day.month, day.day, tzinfo=self.tz)

    def days(self, first: date, stop: date) -> _Span:
        return self.midnight(first), self.midnight(stop)

    def day(self, day: date) -> _Span:
        return self.days(day, day + timedelta(days=1))

    @property
    def end_of_today(self) -> datetime:
        return self.midnight(self.today + timedelta(days=1))


def asks_when(query: str) -> bool:
    """Whether ``query`` opens by asking for a time: "When did ...", "What year ...",
    "Which day ...", "How long ago ..."."""
    return _probe("asks_when").match(query) is not None


def tells_time(text: str) -> bool:
    """Whether ``text`` dates something: a day word (``yesterday``, ``tonight``), a weekday,
    ``last``/``next``/``this``/``past`` and a unit, ``ago``, a month and a day, or a year.
    Looser than :func:`resolve`, which must also name the range."""
    return where_told(text) is not None


def where_told(text: str) -> tuple[int, int] | None:
    """Where in ``text`` the first time :func:`tells_time` finds is, or ``None``."""
    found = _probe("tells_time").search(text.lower())
    return None if found is None else found.span()


def asks_how_long(query: str) -> bool:
    """Whether ``query`` opens by asking for a duration: "How long ...", "For how long ...",
    "How many years ..." (not "How long ago ...", which asks when)."""
    return _probe("asks_how_long").match(query) is not None


def tells_duration(text: str) -> bool:
    """Whether ``text`` states a duration, loosely: a count and a unit (``3 years``, ``two
    weeks``, ``30-60 seconds``) or ``since``."""
    return _probe("tells_duration").search(text.lower()) is not None


def resolve(query: str, anchor: datetime) -> Resolved:
    """Find the first time phrase in ``query`` and resolve it against ``anchor``.

    ``anchor`` is the time of the newest record; a naive one is taken as UTC. Without a phrase
    the result is ``Resolved(query, None, None, None)`` with ``query`` exactly as given.
    """
    tz = anchor.tzinfo if anchor.utcoffset() is not None else None
    if tz is None:
        tz = timezone.utc
        anchor = anchor.replace(tzinfo=tz)
    if _probe("may_name_time").search(query) is None:  # most queries: skip the grammar
        return Resolved(query, None, None, None)
    ctx = _Context(anchor=anchor, today=anchor.date(), tz=tz)
    first = _find_phrase(query, 0, ctx)
    if first is None:
        return Resolved(query, None, None, None)
    pos, stop, start, end = first
    rest = query[:pos] + " " + query[stop:]
    phrase = query[pos:stop].strip()
    second = _find_phrase(query, stop, ctx)
    if second is not None:
        dated = _dated_pair(query, first, second, ctx)
        if dated is not None:
            start, end = dated
            rest = query[:pos] + " " + query[stop : second[0]] + " " + query[second[1] :]
            phrase = query[pos : second[1]].strip()
    return Resolved(_tidy(rest), start, end, phrase)


_Found = tuple[int, int, datetime | None, datetime | None]
"""A phrase found in a query: where it starts and stops, and its range."""


def _find_phrase(query: str, offset: int, ctx: _Context) -> _Found | None:
    """The first phrase at or after ``offset``: where it starts and stops, and its range."""
    for word in _grammar().phrase_start.finditer(query, offset):
        try:
            found = _parse_phrase(query, word.start(), ctx)
        except (ValueError, OverflowError):  # beyond year 1 or 9999
            continue
        if found is not None:
            return word.start(), *found
    return None


def _dated_pair(
    query: str, a: _Found, b: _Found, ctx: _Context
) -> tuple[datetime | None, datetime | None] | None:
    """The range of two phrases of which one is relative ("last Friday") and the other a date
    that needs no anchor ("23 January 2022"): the relative one read from that date, up to the
    end of it. None for any other pair."""
    # A phrase whose range moves with the anchor is relative: read each again a while later.
    later = timedelta(days=400)
    try:
        other = _Context(anchor=ctx.anchor + later, today=ctx.today + later, tz=ctx.tz)
        fixed = [_parse_phrase(query, found[0], other) == found[1:] for found in (a, b)]
    except (ValueError, OverflowError):  # near year 9999
        return None
    if fixed.count(True) != 1:
        return None
    relative, dated = (b, a) if fixed[0] else (a, b)
    if dated[2] is None or dated[3] is None:
        return None
    day = dated[2].date()
    told = _Context(anchor=ctx.midnight(day), today=day, tz=ctx.tz)
    try:
        found = _parse_phrase(query, relative[0], told)
    except (ValueError, OverflowError):
        return None
    if found is None or (found[1] is not None and found[1] >= dated[3]):
        return None
    return found[1], dated[3]


# Vocabulary.

_WORD_BOUNDARY = r"(?<![\w'\u2019-])"
_END = r"(?![\w-])"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = "(?:" + "|".join(_WEEKDAYS) + ")"
_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_FULL = "(?:" + "|".join(_MONTH_NAMES) + ")"
_MONTH_ANY = f"(?:{_MONTH_FULL}|(?:jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\\.?)"
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_NUMBER = (
    r"(?:\d{1,4}|(?:a\s+)?couple(?:\s+of)?|"
    + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
    + ")"
)
_DAY_OF_MONTH = r"(?P<day>[0-3]?\d)(?P<ordinal>st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_PARTS_OF_DAY = {"morning": (0, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}
_CALENDAR_UNITS = ("week", "month", "year")
_VERB_MONTHS = ("march", "may")
_MODAL_FOLLOWERS = (
    "be|not|have|also|still|only|need|want|fail|break|return|raise|cause|contain|change|"
    "help|take|make|differ|vary|depend|require|affect|happen|occur|lead|work|use|run"
)
"""Words after "may" that make it the verb: "the cache from may be stale"."""
_COUNTED = (
    r"ms|s|secs?|seconds?|minutes?|hours?|days?|lines?|bytes?|[kmgt]i?b|items?|tokens?|files?|"
    r"rows?|records?|chars?|characters?|words?|times|errors?|tests?|calls?|steps?|entries|"
    r"requests?|users?|results?|px"
)
"""Words after a number that make it a count, not a year: "in 2000 lines"."""
_POINT_PREPOSITION = r"(?:on|over|within)\s+"
"""Prepositions taken with a phrase that stands alone: "on Monday", "over the past week"."""
_BARE_PREPOSITION = r"(?:in|during|from|throughout)\s+"
"""Prepositions that also make a month or year name a phrase: "in March", "during 2023"."""
_PART_OF_DAY = r"\s+(?P<part>morning|afternoon|evening|night)" + _END
_POSSESSIVE = r"['\u2019]s" + _END
_BOUND = r"(?P<word>since|after|before|until|till)\s+"
_OFFSET = (
    rf"(?:(?P<n>{_NUMBER})\s+(?P<unit>day|week|month|year)s?|"
    rf"the\s+(?:(?P<one>day|week|month|year)|(?P<weekday>{_WEEKDAY})))\s+before\s+"
)
_RANGE_START = r"(?P<word>between|from)\s+"
_RANGE_JOIN = {
    "between": r"\s+and\s+",
    "from": r"\s*(?:\s(?:to|until|till|through)\s|-|\u2013)\s*",
}


def _month_number(name: str) -> int:
    return next(i for i, full in enumerate(_MONTH_NAMES, 1) if full.startswith(name[:3].lower()))


def _number(text: str) -> int:
    words = text.lower().split()
    if "couple" in words:
        return 2
    return int(text) if text.isdigit() else _NUMBER_WORDS[words[0]]


# Calendar arithmetic.


def _add_months(year: int, month: int, months: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + months
    return index // 12, index % 12 + 1


def _month_span(ctx: _Context, year: int, month: int) -> _Span:
    next_year, next_month = _add_months(year, month, 1)
    return ctx.days(date(year, month, 1), date(next_year, next_month, 1))


def _year_span(ctx: _Context, year: int) -> _Span:
    return ctx.days(date(year, 1, 1), date(year + 1, 1, 1))


def _week_span(ctx: _Context, day: date) -> _Span:
    monday = day - timedelta(days=day.weekday())
    return ctx.days(monday, monday + timedelta(days=7))


def _units_before(day: date, unit: str, n: int) -> date:
    """``day`` moved back by ``n`` days, weeks, months or years."""
    if unit in ("day", "week"):
        return day - timedelta(days=n * (7 if unit == "week" else 1))
    return _shift_date(day, -n * (12 if unit == "year" else 1))


def _weekday_before(day: date, weekday: str) -> date:
    """The most recent ``weekday`` strictly before ``day``."""
    return day - timedelta(days=(day.weekday() - _WEEKDAYS.index(weekday.lower())) % 7 or 7)


def _shift_date(day: date, months: int) -> date:
    """``day`` moved by whole months, clamped to the end of a shorter month."""
    year, month = _add_months(day.year, day.month, months)
    next_year, next_month = _add_months(year, month, 1)
    last_day = (date(next_year, next_month, 1) - timedelta(days=1)).day
    return date(year, month, min(day.day, last_day))


# Points: phrases that name one stretch of time by themselves.

_Handler = Callable[[re.Match[str], _Context], _Span | None]


def _today(m: re.Match[str], ctx: _Context) -> _Span:
    back = {"today": 0, "yesterday": 1}.get(m["word"].lower(), 2)
    return ctx.day(ctx.today - timedelta(days=back))


def _part_today(m: re.Match[str], ctx: _Context) -> _Span:
    word = m["word"].lower()
    if word == "tonight":
        return _part(ctx.day(ctx.today), "night")
    if word.startswith("last"):
        return _part(ctx.day(ctx.today - timedelta(days=1)), "night")
    return _part(ctx.day(ctx.today), word.split()[-1])


def _weekday(m: re.Match[str], ctx: _Context) -> _Span:
    if m["which"] is not None and m["which"].lower() == "this":
        # This week's, even if after the anchor.
        back = ctx.today.weekday() - _WEEKDAYS.index(m["weekday"].lower())
        return ctx.day(ctx.today - timedelta(days=back))
    return ctx.day(_weekday_before(ctx.today, m["weekday"]))


def _calendar(m: re.Match[str], ctx: _Context) -> _Span:
    back = 0 if m["which"].lower() in ("this", "current") else 1
    return _units_ago(ctx, m["unit"].lower(), back)


def _ago(m: re.Match[str], ctx: _Context) -> _Span:
    return _units_ago(ctx, m["unit"].lower(), _number(m["n"]))


def _units_ago(ctx: _Context, unit: str, n: int) -> _Span:
    if unit == "day":
        return ctx.day(ctx.today - timedelta(days=n))
    if unit == "week":
        return _week_span(ctx, ctx.today - timedelta(weeks=n))
    if unit == "month":
        return _month_span(ctx, *_add_months(ctx.today.year, ctx.today.month, -n))
    return _year_span(ctx, ctx.today.year - n)


def _rolling(m: re.Match[str], ctx: _Context) -> _Span | None:
    unit = m["unit"].lower()
    which = m["which"].lower()
    if m["the"] is None and m["n"] is None and which != "past" and unit in _CALENDAR_UNITS:
        return None  # bare "last week": the calendar week, matched by _calendar
    n = 1 if m["n"] is None else _number(m["n"])
    end = ctx.end_of_today
    if unit == "hour":
        return ctx.anchor - timedelta(hours=n), end
    return ctx.midnight(_units_before(ctx.today + timedelta(days=1), unit, n)), end


def _month_day(m: re.Match[str], ctx: _Context) -> _Span | None:
    month, day = _month_number(m["month"]), int(m["day"])
    if m["year"] is not None:
        return ctx.day(date(int(m["year"]), month, day))
    # The most recent such day on or before the anchor's; February 29 needs a leap year.
    for year in range(ctx.today.year, ctx.today.year - 9, -1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate <= ctx.today:
            return ctx.day(candidate)
    return None


def _day_month(m: re.Match[str], ctx: _Context) -> _Span | None:
    # "all 3 may fail", "the 5 march in step": a number before a month that is also a verb
    # is a date only as "3rd May", "3 of May" or "3 May 2024".
    is_verb = m["month"].lower() in _VERB_MONTHS
    if is_verb and not (m["of"] or m["ordinal"] or m["year"]):
        return None
    return _month_day(m, ctx)


def _iso_day(m: re.Match[str], ctx: _Context) -> _Span:
    return ctx.day(date(int(m["year"]), int(m["month"]), int(m["day"])))


def _iso_month(m: re.Match[str], ctx: _Context) -> _Span | None:
    month = int(m["month"])
    return _month_span(ctx, int(m["year"]), month) if 1 <= month <= 12 else None


def _month_year(m: re.Match[str], ctx: _Context) -> _Span:
    return _month_span(ctx, int(m["year"]), _month_number(m["month"]))


def _last_month_name(m: re.Match[str], ctx: _Context) -> _Span:
    month = _month_number(m["month"])
    year = ctx.today.year if ctx.today.month > month else ctx.today.year - 1
    return _month_span(ctx, year, month)


def _bare_month(m: re.Match[str], ctx: _Context) -> _Span:
    month = _month_number(m["month"])
    year = ctx.today.year if ctx.today.month >= month else ctx.today.year - 1
    return _month_span(ctx, year, month)


def _bare_year(m: re.Match[str], ctx: _Context) -> _Span | None:
    year = int(m["year"])
    return _year_span(ctx, year) if 1970 <= year <= ctx.today.year else None


_Rule = tuple[re.Pattern[str], _Handler]


_GROUP_NAME = re.compile(r"\(\?P<\w+>")


def _rule(pattern: str, handler: _Handler) -> _Rule:
    return re.compile(pattern + _END, re.IGNORECASE), handler


_WEEKDAY_PREFIX = rf"(?:{_WEEKDAY},?\s+)?"


@dataclass(frozen=True, slots=True)
class _Grammar:
    """The compiled patterns (see :func:`_grammar`)."""

    points: tuple[_Rule, ...]
    """Phrases that stand alone."""
    with_bare: tuple[_Rule, ...]
    """Those and the phrases that are times only after a preposition: ``in March``,
    ``since 2023``."""
    phrase_start: re.Pattern[str]
    """The starts of words where a phrase may begin: where one of the patterns that
    ``_parse_phrase`` tries first matches. Trying every pattern at every word in Python
    cost a record of a few sentences 0.2-0.4 ms."""
    point_preposition: re.Pattern[str]
    bare_preposition: re.Pattern[str]
    part_of_day: re.Pattern[str]
    possessive: re.Pattern[str]
    bound: re.Pattern[str]
    offset: re.Pattern[str]
    range_start: re.Pattern[str]
    range_join: dict[str, re.Pattern[str]]


@cache
def _grammar() -> _Grammar:
    """The patterns, compiled at first use: a process that reads no time (a hook that only
    records an event) skips compiling them, 10-15 ms."""
    points = (
        _rule(r"(?:earlier\s+)?(?P<word>today)", _today),
        _rule(r"(?:the\s+)?(?P<word>day\s+before\s+yesterday|yesterday)", _today),
        _rule(r"(?P<word>this\s+(?:morning|afternoon|evening)|tonight|last\s+night)", _part_today),
        _rule(rf"(?:(?P<which>last|this\s+past|past|this)\s+)?(?P<weekday>{_WEEKDAY})", _weekday),
        _rule(r"(?P<which>last|previous|this|current)\s+(?P<unit>week|month|year)", _calendar),
        _rule(rf"(?P<n>{_NUMBER})\s+(?P<unit>day|week|month|year)s?\s+ago", _ago),
        _rule(
            rf"(?:(?P<the>the|this)\s+)?(?P<which>last|past|previous)\s+(?:(?P<n>{_NUMBER})\s+)?"
            r"(?P<unit>hour|day|week|month|year)s?",
            _rolling,
        ),
        _rule(
            rf"{_WEEKDAY_PREFIX}(?P<month>{_MONTH_ANY})\s+{_DAY_OF_MONTH}(?:,?\s+{_YEAR})?",
            _month_day,
        ),
        _rule(
            rf"{_WEEKDAY_PREFIX}(?:the\s+)?{_DAY_OF_MONTH}\s+(?P<of>of\s+)?"
            rf"(?P<month>{_MONTH_ANY})(?:,?\s+{_YEAR})?",
            _day_month,
        ),
        _rule(rf"(?P<month>{_MONTH_ANY}),?\s+{_YEAR}", _month_year),
        _rule(rf"{_WEEKDAY_PREFIX}(?P<year>\d{{4}})-(?P<month>\d{{2}})-(?P<day>\d{{2}})", _iso_day),
        _rule(r"(?P<year>\d{4})-(?P<month>\d{2})", _iso_month),
        _rule(rf"last\s+(?P<month>{_MONTH_FULL})", _last_month_name),
    )
    bare = (
        _rule(rf"(?P<month>{_MONTH_FULL})(?!\s+(?:{_MODAL_FOLLOWERS}){_END})", _bare_month),
        _rule(rf"(?P<year>\d{{4}})(?!\s+(?:{_COUNTED}){_END})", _bare_year),
    )

    def insensitive(pattern: str) -> re.Pattern[str]:
        return re.compile(pattern, re.IGNORECASE)

    # Group names repeat across the patterns, and only where they match matters here.
    firsts = [p.pattern for p, _ in points]
    firsts += [_POINT_PREPOSITION, _BARE_PREPOSITION, _BOUND, _OFFSET, _RANGE_START]
    anonymous = "|".join(_GROUP_NAME.sub("(?:", first) for first in firsts)
    return _Grammar(
        points=points,
        with_bare=points + bare,
        phrase_start=insensitive(rf"{_WORD_BOUNDARY}(?=(?:{anonymous}))\w"),
        point_preposition=insensitive(_POINT_PREPOSITION),
        bare_preposition=insensitive(_BARE_PREPOSITION),
        part_of_day=insensitive(_PART_OF_DAY),
        possessive=insensitive(_POSSESSIVE),
        bound=insensitive(_BOUND),
        offset=insensitive(_OFFSET),
        range_start=insensitive(_RANGE_START),
        range_join={word: insensitive(join) for word, join in _RANGE_JOIN.items()},
    )


_PROBES: dict[str, tuple[str, int]] = {
    "asks_when": (_ASKS_WHEN, re.IGNORECASE),
    "asks_how_long": (_ASKS_HOW_LONG, re.IGNORECASE),
    "tells_time": (_TELLS_TIME, 0),
    "tells_duration": (_TELLS_DURATION, 0),
    # What every phrase holds somewhere, since each has a point in it: a day word (`today`,
    # a weekday), a unit, a part of the day, a month name or four digits. A query without any
    # of them has no phrase.
    "may_name_time": (
        rf"day|week|month|year|hour|night|morning|afternoon|evening|\d{{4}}"
        rf"|\b{_MONTH_ANY}(?!\w)",
        re.IGNORECASE,
    ),
}


@cache
def _probe(name: str) -> re.Pattern[str]:
    """One of the small patterns, compiled at first use apart from the grammar (0.1-0.4 ms
    each): a query without a time phrase, the usual one, is answered without compiling the
    grammar (7 ms)."""
    pattern, flags = _PROBES[name]
    return re.compile(pattern, flags)


def _part(span: _Span, part: str) -> _Span:
    first, last = _PARTS_OF_DAY[part]
    return span[0] + timedelta(hours=first), span[0] + timedelta(hours=last)


def _parse_point(text: str, pos: int, ctx: _Context, *, bare: bool) -> tuple[int, _Span] | None:
    """The longest point phrase at ``pos``: its end and its range."""
    best: tuple[int, _Span] | None = None
    grammar = _grammar()
    for pattern, handler in grammar.with_bare if bare else grammar.points:
        m = pattern.match(text, pos)
        if m is None or m.end() == pos or (best is not None and m.end() <= best[0]):
            continue
        try:
            span = handler(m, ctx)
        except (ValueError, OverflowError):  # not a date ("April 31", "2024-13-01")
            continue
        if span is not None:
            best = m.end(), span
    if best is None:
        return None
    stop, span = best
    if span[1] - span[0] == timedelta(days=1) and span[0].time() == datetime.min.time():
        part = _grammar().part_of_day.match(text, stop)
        if part is not None:
            stop, span = part.end(), _part(span, part["part"].lower())
    return stop, span


def _parse_phrase(
    text: str, pos: int, ctx: _Context
) -> tuple[int, datetime | None, datetime | None] | None:
    """The longest phrase at ``pos``: its end (after a possessive ``'s``) and its range."""
    found: list[tuple[int, datetime | None, datetime | None]] = []
    point = _parse_point(text, pos, ctx, bare=False)
    if point is not None:
        found.append((point[0], *point[1]))
    grammar = _grammar()
    for preposition, bare in ((grammar.point_preposition, False), (grammar.bare_preposition, True)):
        lead = preposition.match(text, pos)
        point = None if lead is None else _parse_point(text, lead.end(), ctx, bare=bare)
        if point is not None:
            found.append((point[0], *point[1]))
    bound = grammar.bound.match(text, pos)
    if bound is not None:
        point = _parse_point(text, bound.end(), ctx, bare=True)
        if point is not None:
            found.append((point[0], *_bounded(bound["word"].lower(), point[1], ctx)))
    offset = grammar.offset.match(text, pos)
    if offset is not None:
        point = _parse_point(text, offset.end(), ctx, bare=True)
        if point is not None:
            found.append((point[0], _back_from(offset, point[1][0], ctx), point[1][1]))
    opening = grammar.range_start.match(text, pos)
    if opening is not None:
        first = _parse_point(text, opening.end(), ctx, bare=True)
        join = (
            None
            if first is None
            else grammar.range_join[opening["word"].lower()].match(text, first[0])
        )
        second = None if join is None else _parse_point(text, join.end(), ctx, bare=True)
        if first is not None and second is not None:
            spans = (first[1], second[1])
            found.append((second[0], min(s[0] for s in spans), max(s[1] for s in spans)))
    if not found:
        return None
    stop, start, end = max(found, key=lambda item: item[0])
    possessive = _grammar().possessive.match(text, stop)
    return (possessive.end() if possessive else stop), start, end


def _back_from(m: re.Match[str], start: datetime, ctx: _Context) -> datetime:
    """The start of the stretch an offset phrase (``two weeks before``) names back from
    ``start``."""
    day = start.date()
    if m["weekday"] is not None:
        return ctx.midnight(_weekday_before(day, m["weekday"]))
    n = 1 if m["n"] is None else _number(m["n"])
    return ctx.midnight(_units_before(day, (m["unit"] or m["one"]).lower(), n))


def _bounded(word: str, span: _Span, ctx: _Context) -> tuple[datetime | None, datetime | None]:
    if word == "since":
        return span[0], max(span[0], ctx.end_of_today)
    if word == "after":
        return span[1], max(span[1], ctx.end_of_today)
    if word == "before":
        return None, span[0]
    return None, span[1]  # until, till


_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:?!])")
_REPEATED_COMMA = re.compile(r",(\s*,)+")


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)
    text = _REPEATED_COMMA.sub(",", text)
    return text.strip(" ,;:")


def parse_bound(text: str, *, end: bool = False) -> datetime:
    """A ``--since``/``--until`` bound: an ISO date (``2026-03-05``, local midnight; with
    ``end``, the midnight after it, so the day is included) or an ISO 8601 time (naive
    times are local; ``Z`` is UTC)."""
    value = text.strip()
    try:
        if _ISO_DAY.fullmatch(value):
            day = date.fromisoformat(value)
            if end and day == date.max:
                return datetime.max.replace(tzinfo=timezone.utc)  # no midnight after it
            return _local(datetime.combine(day + timedelta(days=1 if end else 0), time()))
        if value.endswith(("Z", "z")):
            value = value[:-1] + "+00:00"  # Python 3.10 does not read "Z"
        at = datetime.fromisoformat(value)
    except ValueError as exc:
        raise QueryError(
            f"not a date: {text!r} ({exc}; expected YYYY-MM-DD or an ISO 8601 time)"
        ) from None
    return at if at.tzinfo is not None else _local(at)


def _local(at: datetime) -> datetime:
    """A naive time read as local time; at the ends of the calendar, where the local offset
    would take it past year 1 or 9999, as UTC."""
    try:
        return at.astimezone()
    except (OverflowError, ValueError):
        return at.replace(tzinfo=timezone.utc)
