"""Dates written in questions become windows of local days."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memoryd.retrieval.dates import window

TODAY = date(2026, 11, 24)  # a Tuesday


@pytest.mark.parametrize(("question", "first", "last"), [
    ("what did we decide yesterday", date(2026, 11, 23), date(2026, 11, 23)),
    ("what did we decide last Tuesday", date(2026, 11, 17), date(2026, 11, 17)),
    ("what did Biscuit eat on Friday", date(2026, 11, 20), date(2026, 11, 20)),
    ("the bug from three days ago", date(2026, 11, 21), date(2026, 11, 21)),
    ("what changed two weeks ago", date(2026, 11, 7), date(2026, 11, 13)),
    ("what did we ship last week", date(2026, 11, 16), date(2026, 11, 22)),
    ("the incident in October", date(2026, 10, 1), date(2026, 10, 31)),
    ("notes from last month", date(2026, 10, 1), date(2026, 10, 31)),
    ("what happened on 14 October", date(2026, 10, 14), date(2026, 10, 14)),
    ("what happened on Oct 3rd", date(2026, 10, 3), date(2026, 10, 3)),
    ("the release of 2026-10-14", date(2026, 10, 14), date(2026, 10, 14)),
    ("the trip in March 2026", date(2026, 3, 1), date(2026, 3, 31)),
    ("the talk in December", date(2025, 12, 1), date(2025, 12, 31)),  # the last December past
    ("what did we do earlier this week", date(2026, 11, 23), date(2026, 11, 24)),
])
def test_time_expressions(question: str, first: date, last: date) -> None:
    found = window(question, TODAY)
    assert found is not None and (found.first, found.last) == (first, last)


@pytest.mark.parametrize("question", [
    "when did we switch to uv",           # asks for a time, names none
    "which linter do we use",
    "I have Portuguese on Tuesdays",      # a habit, not a day
    "may I ask which cache we chose",     # the verb, not the month
    "set the retry limit to 3 may be",
])
def test_no_time_named(question: str) -> None:
    assert window(question, TODAY) is None


def test_window_bounds_are_local_days() -> None:
    found = window("yesterday", TODAY)
    assert found is not None
    start, end = found.bounds()
    assert datetime.fromtimestamp(start).date() == date(2026, 11, 23)
    assert end - start in (23 * 3600, 24 * 3600, 25 * 3600)  # a day, or one with a DST change

