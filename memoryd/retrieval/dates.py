"""Dates written in a question, as a time window: "yesterday", "last Tuesday", "two weeks ago",
"in October", "on 14 October", "2026-10-14", "last month", "earlier this week", …

Pure functions over the local calendar (the user's "yesterday" is a local day). ``window``
returns None when the question names no time; search then ranks as usual. A window is a hint,
not a filter: search gives entries inside it a boost (memory written later about an earlier
event, or imported without its date, must still be found).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH_ABBREVIATIONS = {m[:3]: i for i, m in enumerate(MONTHS)} | {"sept": 8}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 4}
_NUMBER = r"(\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|" \
          r"seven|eight|nine|ten|eleven|twelve)"
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?!s)"


@dataclass(frozen=True)
class Window:
    """Local days ``first`` … ``last`` (inclusive), and the words that named them."""

    first: date
    last: date
    phrase: str

    def bounds(self) -> tuple[float, float]:
        """Epoch seconds: local midnight of ``first`` to local midnight after ``last``."""
        start = datetime.combine(self.first, datetime.min.time()).astimezone()
        end = datetime.combine(self.last + timedelta(days=1), datetime.min.time()).astimezone()
        return start.timestamp(), end.timestamp()


def _month(word: str) -> int:
    return _MONTH_ABBREVIATIONS[word[:4] if word.startswith("sept") else word[:3]] + 1


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _month_window(year: int, month: int, phrase: str) -> Window:
    first = date(year, month, 1)
    following = date(year + (month == 12), month % 12 + 1, 1)
    return Window(first, following - timedelta(days=1), phrase)


def _past_month(month: int, today: date, phrase: str) -> Window:
    """The most recent such month (this one, if it is the current month)."""
    year = today.year if month <= today.month else today.year - 1
    return _month_window(year, month, phrase)


def _day_in_past(month: int, day: int, today: date) -> date | None:
    for year in (today.year, today.year - 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            return None
        if candidate <= today:
            return candidate
    return None


def _rules(today: date) -> list[tuple[re.Pattern[str], object]]:
    monday = today - timedelta(days=today.weekday())

    def ago(m: re.Match[str]) -> Window:
        n, unit = _count(m.group(1)), m.group(2)
        if unit.startswith("day"):
            day = today - timedelta(days=n)
            return Window(day, day, m.group(0))
        if unit.startswith("week"):
            centre = today - timedelta(weeks=n)
            return Window(centre - timedelta(days=3), centre + timedelta(days=3), m.group(0))
        if unit.startswith("month"):
            centre = today - timedelta(days=30 * n)
            return Window(centre - timedelta(days=10), centre + timedelta(days=10), m.group(0))
        centre = today - timedelta(days=365 * n)
        return Window(centre - timedelta(days=60), centre + timedelta(days=60), m.group(0))

    def weekday(m: re.Match[str]) -> Window:
        target = WEEKDAYS.index(m.group(2))
        back = (today.weekday() - target) % 7 or 7
        if m.group(1) == "last " and back < 3:  # "last Tuesday" on a Wednesday: a week before
            back += 7
        day = today - timedelta(days=back)
        return Window(day, day, m.group(0))

    def day_month(m: re.Match[str]) -> Window | None:
        groups = [g for g in m.groups() if g]
        number = next(g for g in groups if g.isdigit())
        name = next(g for g in groups if not g.isdigit())
        day = _day_in_past(_month(name), int(number), today)
        return Window(day, day, m.group(0)) if day else None

    def iso(m: re.Match[str]) -> Window | None:
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return Window(day, day, m.group(0))

    def month_year(m: re.Match[str]) -> Window:
        return _month_window(int(m.group(2)), _month(m.group(1)), m.group(0))

    last_month = today.replace(day=1) - timedelta(days=1)
    return [
        (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), iso),
        # "on 14 October", "the 3rd of May", "Oct 3rd" (a bare "3 may" is too often a verb)
        (re.compile(rf"\b(?:(?:on|the|since|from|by|until|before|after) (\d{{1,2}})"
                    rf"(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th))(?: of)? {_MONTH}\b"
                    rf"|\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)"), day_month),
        (re.compile(rf"\b{_MONTH} (\d{{4}})\b"), month_year),
        (re.compile(r"\b(?:the )?day before yesterday\b"),
         lambda m: Window(today - timedelta(days=2), today - timedelta(days=2), m.group(0))),
        (re.compile(r"\byesterday\b"),
         lambda m: Window(today - timedelta(days=1), today - timedelta(days=1), m.group(0))),
        (re.compile(r"\b(?:today|this morning|this afternoon|tonight|earlier today)\b"),
         lambda m: Window(today, today, m.group(0))),
        (re.compile(rf"\b{_NUMBER} (days?|weeks?|months?|years?) ago\b"), ago),
        (re.compile(r"\blast weekend\b|\bover the weekend\b|\bthe weekend\b"),
         lambda m: Window(monday - timedelta(days=2), monday - timedelta(days=1), m.group(0))),
        (re.compile(r"\blast week\b|\bthe week before\b"),
         lambda m: Window(monday - timedelta(days=7), monday - timedelta(days=1), m.group(0))),
        (re.compile(r"\b(?:this week|earlier this week)\b"),
         lambda m: Window(monday, today, m.group(0))),
        (re.compile(r"\blast month\b"),
         lambda m: _month_window(last_month.year, last_month.month, m.group(0))),
        (re.compile(r"\b(?:this month|earlier this month)\b"),
         lambda m: Window(today.replace(day=1), today, m.group(0))),
        (re.compile(r"\blast year\b"),
         lambda m: Window(date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), m.group(0))),
        (re.compile(rf"\b(last |on |this past )?{_WEEKDAY}\b"), weekday),
        (re.compile(rf"\b(?:in|during|since|back in|early|late|mid) {_MONTH}\b"),
         lambda m: _past_month(_month(m.group(1)), today, m.group(0))),
    ]


def _plain(question: str) -> str:
    return " ".join(question.lower().replace(",", " ").split())


def window(question: str, today: date | None = None) -> Window | None:
    """The first time expression in the question, as a window of local days; None if none."""
    today = today or date.today()
    text = _plain(question)
    for pattern, make in _rules(today):
        m = pattern.search(text)
        if m:
            found = make(m)  # type: ignore[operator]
            if found is not None and found.first <= today:
                return Window(found.first, min(found.last, today), found.phrase)
    return None


def without_time(question: str, found: Window) -> str:
    """The question without the words that named its window ("what did we decide last week"
    → "what did we decide"): they say when, not what, and no entry is about them."""
    return _plain(question).replace(found.phrase, " ", 1)

