"""Time phrases in memory queries, resolved against the newest record's date."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from coderecall._errors import QueryError
from coderecall._timephrase import (
    Resolved,
    _grammar,
    asks_how_long,
    asks_when,
    resolve,
    tells_duration,
    tells_time,
)

UTC = timezone.utc


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


# Anchors (naive: taken as UTC).
WED = datetime(2024, 3, 13, 15, 30)  # Wednesday; 2024 is a leap year
JAN3 = datetime(2024, 1, 3, 10)  # Wednesday, early in the year
NEW_YEAR = datetime(2024, 1, 1, 9)  # Monday
SUNDAY = datetime(2024, 3, 17, 20)
MONDAY = datetime(2024, 3, 18, 8)
LEAP_DAY = datetime(2024, 2, 29, 12)

CASES = [
    # (query, anchor, start, end, cleaned query)
    # Days.
    (
        "what did we decide yesterday about caching",
        WED,
        at(2024, 3, 12),
        at(2024, 3, 13),
        "what did we decide about caching",
    ),
    (
        "Yesterday, we fixed the parser",
        WED,
        at(2024, 3, 12),
        at(2024, 3, 13),
        "we fixed the parser",
    ),
    ("what broke yesterday?", WED, at(2024, 3, 12), at(2024, 3, 13), "what broke?"),
    (
        "yesterday's decision on caching",
        WED,
        at(2024, 3, 12),
        at(2024, 3, 13),
        "decision on caching",
    ),
    ("yesterday", NEW_YEAR, at(2023, 12, 31), at(2024, 1, 1), ""),
    ("yesterday", datetime(2024, 3, 1, 9), at(2024, 2, 29), at(2024, 3, 1), ""),
    ("notes from the day before yesterday", WED, at(2024, 3, 11), at(2024, 3, 12), "notes"),
    ("what changed earlier today", WED, at(2024, 3, 13), at(2024, 3, 14), "what changed"),
    ("TODAY", WED, at(2024, 3, 13), at(2024, 3, 14), ""),
    # Parts of days.
    ("errors this morning", WED, at(2024, 3, 13), at(2024, 3, 13, 12), "errors"),
    ("this afternoon", WED, at(2024, 3, 13, 12), at(2024, 3, 13, 18), ""),
    ("this evening", WED, at(2024, 3, 13, 18), at(2024, 3, 14), ""),
    ("deploy tonight", WED, at(2024, 3, 13, 18), at(2024, 3, 14, 6), "deploy"),
    ("what failed last night", WED, at(2024, 3, 12, 18), at(2024, 3, 13, 6), "what failed"),
    ("yesterday morning", WED, at(2024, 3, 12), at(2024, 3, 12, 12), ""),
    ("on Monday evening", WED, at(2024, 3, 11, 18), at(2024, 3, 12), ""),
    # Weekdays: the most recent one before the anchor's day.
    ("what did we do on Monday", WED, at(2024, 3, 11), at(2024, 3, 12), "what did we do"),
    ("since Tuesday", WED, at(2024, 3, 12), at(2024, 3, 14), ""),
    ("Friday deploy", WED, at(2024, 3, 8), at(2024, 3, 9), "deploy"),
    ("on Wednesday", WED, at(2024, 3, 6), at(2024, 3, 7), ""),  # same day: a week back
    ("last Sunday", SUNDAY, at(2024, 3, 10), at(2024, 3, 11), ""),
    ("on Saturday", SUNDAY, at(2024, 3, 16), at(2024, 3, 17), ""),
    ("on Sunday", MONDAY, at(2024, 3, 17), at(2024, 3, 18), ""),
    ("on Monday", MONDAY, at(2024, 3, 11), at(2024, 3, 12), ""),
    ("this past Friday", MONDAY, at(2024, 3, 15), at(2024, 3, 16), ""),
    ("this Monday", SUNDAY, at(2024, 3, 11), at(2024, 3, 12), ""),  # the anchor's ISO week
    ("this Friday", WED, at(2024, 3, 15), at(2024, 3, 16), ""),
    ("on Sunday", NEW_YEAR, at(2023, 12, 31), at(2024, 1, 1), ""),
    # ISO weeks.
    ("errors last week", WED, at(2024, 3, 4), at(2024, 3, 11), "errors"),
    ("last week's errors", WED, at(2024, 3, 4), at(2024, 3, 11), "errors"),
    ("this week", WED, at(2024, 3, 11), at(2024, 3, 18), ""),
    ("this week", SUNDAY, at(2024, 3, 11), at(2024, 3, 18), ""),
    ("this week", MONDAY, at(2024, 3, 18), at(2024, 3, 25), ""),
    ("last week", SUNDAY, at(2024, 3, 4), at(2024, 3, 11), ""),
    ("last week", MONDAY, at(2024, 3, 11), at(2024, 3, 18), ""),
    ("last week", NEW_YEAR, at(2023, 12, 25), at(2024, 1, 1), ""),
    ("previous week", JAN3, at(2023, 12, 25), at(2024, 1, 1), ""),
    ("the previous week", JAN3, at(2023, 12, 28), at(2024, 1, 4), ""),  # "the": rolling
    # Calendar months and years.
    ("last month", WED, at(2024, 2, 1), at(2024, 3, 1), ""),
    ("last month", JAN3, at(2023, 12, 1), at(2024, 1, 1), ""),
    ("this month", LEAP_DAY, at(2024, 2, 1), at(2024, 3, 1), ""),
    ("last month", datetime(2024, 3, 31), at(2024, 2, 1), at(2024, 3, 1), ""),
    ("last year", WED, at(2023, 1, 1), at(2024, 1, 1), ""),
    ("this year", JAN3, at(2024, 1, 1), at(2025, 1, 1), ""),
    # N units ago.
    ("two days ago", WED, at(2024, 3, 11), at(2024, 3, 12), ""),
    (
        "what broke 3 days ago in the parser",
        JAN3,
        at(2023, 12, 31),
        at(2024, 1, 1),
        "what broke in the parser",
    ),
    ("a day ago", WED, at(2024, 3, 12), at(2024, 3, 13), ""),
    ("a week ago", WED, at(2024, 3, 4), at(2024, 3, 11), ""),
    ("a couple of weeks ago", WED, at(2024, 2, 26), at(2024, 3, 4), ""),
    ("2 weeks ago", NEW_YEAR, at(2023, 12, 18), at(2023, 12, 25), ""),
    ("three months ago", WED, at(2023, 12, 1), at(2024, 1, 1), ""),
    ("2 months ago", JAN3, at(2023, 11, 1), at(2023, 12, 1), ""),
    ("twelve months ago", JAN3, at(2023, 1, 1), at(2023, 2, 1), ""),
    ("a year ago", LEAP_DAY, at(2023, 1, 1), at(2024, 1, 1), ""),
    # Rolling windows ending with the anchor's day.
    ("errors in the last 7 days", WED, at(2024, 3, 7), at(2024, 3, 14), "errors"),
    ("past week", WED, at(2024, 3, 7), at(2024, 3, 14), ""),
    ("over the past week", WED, at(2024, 3, 7), at(2024, 3, 14), ""),
    ("this past week", WED, at(2024, 3, 7), at(2024, 3, 14), ""),
    ("the last 2 weeks", JAN3, at(2023, 12, 21), at(2024, 1, 4), ""),
    ("in the past 24 hours", WED, at(2024, 3, 12, 15) + timedelta(minutes=30), at(2024, 3, 14), ""),
    ("within the last hour", WED, at(2024, 3, 13, 14) + timedelta(minutes=30), at(2024, 3, 14), ""),
    ("the past month", datetime(2024, 3, 30), at(2024, 2, 29), at(2024, 3, 31), ""),
    ("the last 3 months", WED, at(2023, 12, 14), at(2024, 3, 14), ""),
    ("past year", LEAP_DAY, at(2023, 3, 1), at(2024, 3, 1), ""),
    # Named days.
    ("2024-03-05", WED, at(2024, 3, 5), at(2024, 3, 6), ""),
    (
        "logs from 2023-12-31 about the cache",
        JAN3,
        at(2023, 12, 31),
        at(2024, 1, 1),
        "logs about the cache",
    ),
    ("March 5", WED, at(2024, 3, 5), at(2024, 3, 6), ""),
    ("what happened on March 5th?", WED, at(2024, 3, 5), at(2024, 3, 6), "what happened?"),
    ("March 20", WED, at(2023, 3, 20), at(2023, 3, 21), ""),  # after the anchor: last year's
    ("on Dec 24", JAN3, at(2023, 12, 24), at(2023, 12, 25), ""),
    ("5 March 2024", WED, at(2024, 3, 5), at(2024, 3, 6), ""),
    ("the 5th of March", WED, at(2024, 3, 5), at(2024, 3, 6), ""),
    ("3rd May", WED, at(2023, 5, 3), at(2023, 5, 4), ""),
    ("March 5, 2023", WED, at(2023, 3, 5), at(2023, 3, 6), ""),
    ("Sept. 9 2021", WED, at(2021, 9, 9), at(2021, 9, 10), ""),
    ("Tuesday, March 12 notes", WED, at(2024, 3, 12), at(2024, 3, 13), "notes"),
    ("February 29", LEAP_DAY, at(2024, 2, 29), at(2024, 3, 1), ""),
    ("February 29", datetime(2024, 2, 28), at(2020, 2, 29), at(2020, 3, 1), ""),
    ("February 29", datetime(2025, 6, 1), at(2024, 2, 29), at(2024, 3, 1), ""),
    ("Feb 29 2024", WED, at(2024, 2, 29), at(2024, 3, 1), ""),
    # Months.
    ("in March", WED, at(2024, 3, 1), at(2024, 4, 1), ""),
    (
        "what did we decide in March about logging",
        JAN3,
        at(2023, 3, 1),
        at(2023, 4, 1),
        "what did we decide about logging",
    ),
    ("in December", JAN3, at(2023, 12, 1), at(2024, 1, 1), ""),
    ("in January", JAN3, at(2024, 1, 1), at(2024, 2, 1), ""),
    ("during February", LEAP_DAY, at(2024, 2, 1), at(2024, 3, 1), ""),
    ("in may", WED, at(2023, 5, 1), at(2023, 6, 1), ""),
    ("last March", WED, at(2023, 3, 1), at(2023, 4, 1), ""),
    ("last February", WED, at(2024, 2, 1), at(2024, 3, 1), ""),
    ("last January", JAN3, at(2023, 1, 1), at(2023, 2, 1), ""),
    ("March 2023", WED, at(2023, 3, 1), at(2023, 4, 1), ""),
    ("errors in 2024-02 logs", WED, at(2024, 2, 1), at(2024, 3, 1), "errors logs"),
    # Years.
    ("in 2023", WED, at(2023, 1, 1), at(2024, 1, 1), ""),
    ("bugs fixed during 2022", WED, at(2022, 1, 1), at(2023, 1, 1), "bugs fixed"),
    # Bounds and ranges.
    ("since March", WED, at(2024, 3, 1), at(2024, 3, 14), ""),
    ("since last week", WED, at(2024, 3, 4), at(2024, 3, 14), ""),
    ("since 2023", JAN3, at(2023, 1, 1), at(2024, 1, 4), ""),
    ("since yesterday evening", WED, at(2024, 3, 12, 18), at(2024, 3, 14), ""),
    ("changes after 2024-03-10", WED, at(2024, 3, 11), at(2024, 3, 14), "changes"),
    ("before March 5", WED, None, at(2024, 3, 5), ""),
    ("until yesterday", WED, None, at(2024, 3, 13), ""),
    ("between March 1 and March 5", WED, at(2024, 3, 1), at(2024, 3, 6), ""),
    ("from Monday to Wednesday", SUNDAY, at(2024, 3, 11), at(2024, 3, 14), ""),
    ("from January through February", WED, at(2024, 1, 1), at(2024, 3, 1), ""),
    ("between Friday and Monday", WED, at(2024, 3, 8), at(2024, 3, 12), ""),
    # Offsets: from the point back to the end of the day named.
    (
        "the puppy she got two weeks before March 11, 2024",
        WED,
        at(2024, 2, 26),
        at(2024, 3, 12),
        "the puppy she got",
    ),
    ("what we did the week before March 3", WED, at(2024, 2, 25), at(2024, 3, 4), "what we did"),
    ("the day before 2024-03-01", WED, at(2024, 2, 29), at(2024, 3, 2), ""),
    ("the Sunday before March 13", WED, at(2024, 3, 10), at(2024, 3, 14), ""),
    ("the Sunday before March 10", WED, at(2024, 3, 3), at(2024, 3, 11), ""),
    ("3 months before May 31, 2023", WED, at(2023, 2, 28), at(2023, 6, 1), ""),
    ("a year before yesterday", WED, at(2023, 3, 12), at(2024, 3, 13), ""),
    # A relative phrase with a date that needs no anchor: read from that date, to its end.
    (
        "what did she finish last Friday on 23 January, 2022?",
        WED,
        at(2022, 1, 21),
        at(2022, 1, 24),
        "what did she finish?",
    ),
    (
        "the writing issue last week, as mentioned on November 6, 2023",
        WED,
        at(2023, 10, 30),
        at(2023, 11, 7),
        "the writing issue, as mentioned",
    ),
    ("on 2023-11-06, yesterday's plan", WED, at(2023, 11, 5), at(2023, 11, 7), "plan"),
    # Two dates, or two relative phrases: the first phrase alone.
    ("on 2023-11-06 and 2023-11-08", WED, at(2023, 11, 6), at(2023, 11, 7), "and 2023-11-08"),
    ("yesterday and last week", WED, at(2024, 3, 12), at(2024, 3, 13), "and last week"),
]


@pytest.mark.parametrize(("query", "anchor", "start", "end", "cleaned"), CASES)
def test_phrases(
    query: str,
    anchor: datetime,
    start: datetime | None,
    end: datetime | None,
    cleaned: str,
) -> None:
    resolved = resolve(query, anchor)
    assert (resolved.start, resolved.end, resolved.query) == (start, end, cleaned)
    assert resolved.phrase is not None
    assert resolved.phrase.lower() in query.lower()


UNCHANGED = [
    "how does the parser handle  nested   classes",
    "march through the list of files",
    "March through the list",
    "the cache from may be stale",
    "all 3 may fail",
    "the 5 march in step",
    "functions with over 2000 lines",
    "files in 2000 lines",
    "what did we decide before the release",
    "two weeks before the release",
    "the week before we shipped",
    "recently changed files",
    "errors a few days ago",
    "April 31 release notes",
    "2024-13-01 is not a date",
    "parse 2024-03-05T10:00 timestamps",
    "in 2031",  # after the anchor's year: not taken as a year
    "monday_job scheduler",
    "Mondays are slow",
    "Sun and Sat in the solver",
    "",
]


@pytest.mark.parametrize("query", UNCHANGED)
def test_queries_without_a_phrase_are_unchanged(query: str) -> None:
    assert resolve(query, WED) == Resolved(query, None, None, None)


def test_a_query_without_a_time_word_is_answered_without_the_grammar() -> None:
    # Hooks search in a fresh process each time: compiling the grammar is most of a
    # search's time there.
    _grammar.cache_clear()
    assert resolve("fix the failing test in the config loader", WED).phrase is None
    assert _grammar.cache_info().currsize == 0
    assert resolve("fix what failed yesterday", WED).phrase == "yesterday"
    assert _grammar.cache_info().currsize == 1


def test_phrase_is_reported_as_written() -> None:
    resolved = resolve("What did we decide Last Week about caching?", WED)
    assert resolved.phrase == "Last Week"
    assert resolved.query == "What did we decide about caching?"


def test_only_the_first_phrase_is_taken() -> None:
    resolved = resolve("errors yesterday, not last week", WED)
    assert (resolved.start, resolved.end) == (at(2024, 3, 12), at(2024, 3, 13))
    assert resolved.query == "errors, not last week"


def test_longest_phrase_at_the_first_position_wins() -> None:
    resolved = resolve("since last Tuesday", WED)
    assert resolved.phrase == "since last Tuesday"
    assert (resolved.start, resolved.end) == (at(2024, 3, 12), at(2024, 3, 14))


def test_naive_anchor_is_utc_and_aware_anchor_keeps_its_zone() -> None:
    naive = resolve("yesterday", WED)
    assert naive.start is not None
    assert naive.start.tzinfo is UTC

    plus_two = timezone(timedelta(hours=2))
    # 23:30 UTC on the 13th is already the 14th in UTC+2.
    aware = resolve("yesterday", datetime(2024, 3, 14, 1, 30, tzinfo=plus_two))
    assert aware.start == datetime(2024, 3, 13, tzinfo=plus_two)
    assert aware.end == datetime(2024, 3, 14, tzinfo=plus_two)


def test_day_boundaries_are_local_midnight_across_daylight_saving() -> None:
    new_york = ZoneInfo("America/New_York")  # clocks went forward on 2024-03-10
    resolved = resolve("yesterday", datetime(2024, 3, 11, 9, tzinfo=new_york))
    assert resolved.start == datetime(2024, 3, 10, tzinfo=new_york)
    assert resolved.end == datetime(2024, 3, 11, tzinfo=new_york)
    assert resolved.start is not None
    assert resolved.end is not None
    assert resolved.end.astimezone(UTC) - resolved.start.astimezone(UTC) == timedelta(hours=23)


def test_extreme_dates_do_not_raise() -> None:
    assert resolve("tomorrow or 9999 years ago", WED).start is None
    assert resolve("last year", datetime(1, 1, 1)).start is None
    # The day after 9999-12-31 is beyond datetime: no range, and the query stays as it was.
    assert resolve("today", datetime(9999, 12, 31)) == Resolved("today", None, None, None)
    resolve("since yesterday and last week", datetime(9999, 12, 31))
    resolve("since yesterday and last week", datetime(1, 1, 1))


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Ana move to Lisbon?", True),
        ("  when was the cache added", True),
        ("What year did the project start?", True),
        ("Which day is the release?", True),
        ("How long ago did we switch to WAL?", True),
        ("What did Ana do when she moved?", False),
        ("Whenever the build fails, what runs?", False),
        ("How long does the build take?", False),
    ],
)
def test_a_question_asks_when_by_its_opening_words(query: str, asks: bool) -> None:
    assert asks_when(query) is asks


@pytest.mark.parametrize(
    ("text", "dated"),
    [
        ("Ana: I moved to Lisbon yesterday.", True),
        ("We switched to WAL last week", True),
        ("Two days AGO the build broke", True),
        ("The demo is on Friday", True),
        ("Released on May 5 after review", True),
        ("Started in 2019", True),
        ("This weekend was fun", True),
        ("Ana: I moved to Lisbon.", False),
        ("Last of all, the tests", False),
        ("It has 500 lines", False),
        ("a friday_task identifier", False),
    ],
)
def test_a_text_tells_a_time_by_day_words_units_dates_or_years(text: str, dated: bool) -> None:
    assert tells_time(text) is dated


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("How long has Ana lived in Lisbon?", True),
        ("For how long did the migration run?", True),
        ("how many years has the service been up", True),
        ("How long ago did we switch to WAL?", False),  # that asks when
        ("How many tests failed?", False),
        ("What took so long?", False),
        ("How longer builds hurt", False),
    ],
)
def test_a_question_asks_how_long_by_its_opening_words(query: str, asks: bool) -> None:
    assert asks_how_long(query) is asks


@pytest.mark.parametrize(
    ("text", "lasting"),
    [
        ("Ana: I've lived here for 3 years now.", True),
        ("Seven years already!", True),
        ("We held it for 30-60 seconds", True),
        ("It took a couple of weeks", True),
        ("Painting since I was 17", True),
        ("Ana: I moved to Lisbon.", False),
        ("A yearly review", False),
        ("It has 500 lines", False),
    ],
)
def test_a_text_tells_a_duration_by_a_count_and_a_unit(text: str, lasting: bool) -> None:
    assert tells_duration(text) is lasting


def test_bounds_at_the_ends_of_the_calendar_and_bad_dates_say_why() -> None:
    from coderecall._timephrase import parse_bound

    assert parse_bound("9999-12-31", end=True) == datetime.max.replace(tzinfo=timezone.utc)
    assert parse_bound("0001-01-01").year == 1
    assert parse_bound("2026-03-05", end=True) - parse_bound("2026-03-05") == timedelta(days=1)
    with pytest.raises(QueryError, match=r"not a date: '2026-13-01' \(month must be in 1\.\.12"):
        parse_bound("2026-13-01")


def test_since_after_until_is_an_error(tmp_path: Path) -> None:
    from coderecall._memory import MemoryStore

    with MemoryStore("github.com/acme/shop", path=tmp_path / "m.db") as store:
        store.add("We chose SQLite.", "decision")
        with pytest.raises(QueryError, match="must come before until"):
            store.search("sqlite", since=datetime(2030, 1, 1), until=datetime(2020, 1, 1))
