"""How old an entry is, as people read it: "45d", and the note an old entry carries.

An entry older than ``AGE_NOTE_DAYS`` carries its age ("45d old"); older than ``VERIFY_DAYS``
also a warning ("120d old: verify before acting"). Search hits and ``get`` have it as the
entry's ``age_note``. The memory block (:mod:`memoryd.sessions.context`) words it by the last
threshold passed instead ("over 90 days old: verify before acting", :func:`age_bucket`): an
age counted in days would change the block every day, and a provider's prompt cache with it."""

from __future__ import annotations

AGE_NOTE_DAYS = 30
VERIFY_DAYS = 90
YEAR_DAYS = 365
#: The thresholds the memory block words an age by, the highest first: (days, words).
AGE_BUCKETS = ((YEAR_DAYS, "over a year old"), (VERIFY_DAYS, "over 90 days old"),
               (AGE_NOTE_DAYS, "over 30 days old"))


def format_age(seconds: float) -> str:
    for unit, size in (("y", 31_536_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(max(seconds, 0))}s"


def age_note(created: float, now: float) -> str | None:
    """None for an entry of 30 days or less; "45d old"; "120d old: verify before acting"."""
    days = (now - created) / 86_400
    if days > VERIFY_DAYS:
        return f"{format_age(now - created)} old: verify before acting"
    if days > AGE_NOTE_DAYS:
        return f"{format_age(now - created)} old"
    return None


def age_bucket(created: float, now: float) -> str | None:
    """The age as the memory block gives it: the last threshold passed, so that an entry's
    line changes only on the day it crosses one. None for an entry of 30 days or less;
    "over 30 days old"; "over 90 days old: verify before acting"; "over a year old: verify
    before acting"."""
    days = (now - created) / 86_400
    for threshold, words in AGE_BUCKETS:
        if days > threshold:
            return f"{words}: verify before acting" if days > VERIFY_DAYS else words
    return None
