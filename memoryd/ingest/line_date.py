"""A memory file line's date (``- [2026-11-05] …``: memoryd.ingest.markdown) as a time, and a
time as such a date: the user's local day, in the daemon's time zone, as the listings, `today`
and the days a question names (memoryd.retrieval.dates) have it. Until 2026-12-01 a date was
read as 00:00 UTC: west of UTC a line listed on the day before its date, a question about its
day missed it, and a correction written today was older than what was stored this morning.

A dated line's ``created`` (:func:`line_created`):

- the start of its local day;
- the time it was first indexed, when that was on its day: a line written today is newer than
  what was stored earlier today (a correction beats what it corrects);
- never later than the time it is read: a day still to come (a typo, a plan) is dated when
  read, and said (:func:`still_to_come`);
- the ``created`` it has while that is within its day: read again (any edit of its file), or
  found again by a rebuild of the index (memoryd.maintenance.rebuild records what the old
  index held), it keeps it.

Lines of one date that hold the same ``created`` (dated by their day's start, or indexed in
one read) are ordered by their file: the upper is the newer, as a notebook is written (newest
first; the notebook pass sorts so): memoryd.retrieval.versions.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

#: A time this far ahead of the clock is said to be in the future (a transcript's turns
#: timed by another machine's clock, a file's mtime set by a copy): anything ahead is capped.
FUTURE_SLACK_S = 60.0


def day_bounds(day: str) -> tuple[float, float]:
    """Epoch seconds of the local midnight that starts ``day`` (``YYYY-MM-DD``) and of the one
    that ends it."""
    first = date.fromisoformat(day)
    return (datetime.combine(first, datetime.min.time()).timestamp(),
            datetime.combine(first + timedelta(days=1), datetime.min.time()).timestamp())


def day_start(day: str) -> float:
    """Epoch seconds of the local midnight that starts ``day``."""
    return day_bounds(day)[0]


def local_date(when: float) -> str:
    """The local day of ``when`` as a line's date: ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(when).date().isoformat()


def local_day(when: float) -> int:
    """The local day of ``when`` as a number (days are told apart by it, and shown with
    :func:`day_text`)."""
    return datetime.fromtimestamp(when).date().toordinal()


def day_text(day: int) -> str:
    """A :func:`local_day` as ``YYYY-MM-DD``."""
    return date.fromordinal(day).isoformat()


def still_to_come(day: str, now: float) -> bool:
    """Whether ``day`` starts after ``now``."""
    return day_start(day) > now


def line_created(day: str, now: float, kept: float | None) -> float:
    """A line dated ``day``, read at ``now``: its ``created`` (see the module docstring).
    ``kept``: the one its entry has (None: new to the index, and never in it before)."""
    start, end = day_bounds(day)
    if kept is not None and kept <= now and (start <= kept < end or start > now):
        return kept  # as it was (a day still to come: dated when it was first read)
    return start if now >= end else now
