"""How old an entry is, as people read it: "45d", and the note an old entry carries.

An entry older than ``AGE_NOTE_DAYS`` carries its age ("45d old"); older than ``VERIFY_DAYS``
also a warning ("120d old: verify before acting"). Search hits and ``get`` have it as the
entry's ``age_note``, the memory block as a suffix (:mod:`memoryd.sessions.context`)."""

from __future__ import annotations

AGE_NOTE_DAYS = 30
VERIFY_DAYS = 90


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
