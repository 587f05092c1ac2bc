"""What a time may be when someone writes one (``--since``, ``--until``, a tool's ``since``):
epoch seconds (a number, or its digits as text: ``1796000000``), an ISO-8601 date or time, an
age such as 7d, 12h, 30m, 2w, 1y, or the words today, yesterday and now.

A date, a time without a zone and the words today and yesterday mean the clock of the person
who wrote them: the local time of the process reading them, as every listing prints it. So the
client reads them (:func:`resolved_times`), where the person is, and sends epoch seconds;
the daemon reads a text it is sent (an older client's, a caller of the socket's) the same way
in its own time zone (``memoryd.times``, the one definition). A date (or today, yesterday) as
the end of a span (``until``) is the end of that day: ``--since 2026-11-05 --until
2026-11-05`` is that whole day.
"""

from __future__ import annotations

import re
import time
from datetime import date, datetime, timedelta

from memoryd_client.errors import BadParamsError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

# an age: a number and a unit, either case but for M (a minute or a month? refused)
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdwySHDWY])$")
_EPOCH = re.compile(r"^[+-]?\d+(?:\.\d*)?$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 365 * 86400}
#: Times: years 1 to 9999 (what an ISO date can say).
EARLIEST_S, LATEST_S = -62135596800.0, 253402300799.0
#: Days back from today of the words for a day.
_DAY_WORDS = {"today": 0, "yesterday": 1}


def parse_time(value: str, *, end_of_day: bool = False) -> float | None:
    """Epoch seconds of a time as a person writes it (see the module docstring); None when
    ``value`` is none of them. A date, a zone-less time and today or yesterday are local
    time; ``end_of_day``: a date (and today, yesterday) is the end of that day (the start of
    the next), as the end of a span means it. Eight digits are a date (``20260315``, ISO's
    basic form), not a time in 1970."""
    value = value.strip()
    word = value.lower()
    if word == "now":
        return time.time()
    if word in _DAY_WORDS:
        return _day_start(date.today() - timedelta(days=_DAY_WORDS[word]), end_of_day)
    if _EPOCH.match(value) and not (len(value) == 8 and value.isdigit()):
        return float(value)
    relative = _RELATIVE.match(value)
    if relative:
        return time.time() - float(relative.group(1)) * _UNIT_S[relative.group(2).lower()]
    try:
        return _day_start(date.fromisoformat(value), end_of_day)
    except (ValueError, OverflowError):
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        return None
    try:
        return moment.timestamp()  # zone-less: local time
    except (ValueError, OverflowError, OSError):
        return None


def _day_start(day: date, next_day: bool) -> float | None:
    """Epoch seconds of local midnight starting ``day`` (``next_day``: the day after)."""
    try:
        if next_day:
            day += timedelta(days=1)
        return datetime.combine(day, datetime.min.time()).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def milliseconds_hint(value: float) -> str:
    """What a number out of the years 1 to 9999 may have been meant as: epoch milliseconds
    (a browser's and Java's ``Date``) read as seconds, said with the seconds to give."""
    if EARLIEST_S <= value / 1000 <= LATEST_S and abs(value) >= 1e11:
        seconds = f"{value / 1000:.3f}".rstrip("0").rstrip(".")
        return f" (epoch milliseconds? give seconds: {seconds})"
    return ""


def span_refusal(since: object, until: object) -> str:
    """What a span that holds no time is told, the times as given: ``since`` not before
    ``until``."""
    return (f"({since}) is not before --until ({until}): nothing could match; an age counts "
            "back from now, so --since 7d --until 1d is the week up to yesterday")


def resolved_times(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with its ``since`` and ``until`` in epoch seconds, as the person who wrote
    them means them (their local time; see the module docstring). A text that is no time is
    left as it is, for the daemon to refuse in its words; a span that holds no time is refused
    here, with the times as they were written (BadParamsError, as the daemon's)."""
    since, until = params.get("since"), params.get("until")
    if not isinstance(since, str) and not isinstance(until, str):
        return params
    resolved = dict(params)
    for name, value in (("since", since), ("until", until)):
        if isinstance(value, str):
            moment = parse_time(value, end_of_day=name == "until")
            if moment is not None and EARLIEST_S <= moment <= LATEST_S:
                resolved[name] = moment
    start, end = resolved.get("since"), resolved.get("until")
    if isinstance(start, float | int) and isinstance(end, float | int) and start >= end:
        detail = span_refusal(since, until)
        raise BadParamsError(f"{method}: since {detail}", method, "since", detail)
    return resolved
