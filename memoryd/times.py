"""What a time may be when someone writes one: epoch seconds (a number, or its digits as
text: `--since 1796000000`), an ISO-8601 date or time, an
age such as 7d, 12h, 30m, 2w, or the words today, yesterday and now. Requests take times so
(memoryd.server.params), and so may anything else that reads a time a person typed; nothing
here is about a request.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_EPOCH = re.compile(r"^[+-]?\d+(?:\.\d*)?$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
#: Times: years 1 to 9999 (what an ISO date can say).
EARLIEST_S, LATEST_S = -62135596800.0, 253402300799.0


#: Words for a time: the start of today, of yesterday (local midnight, as a person means
#: them), and this moment; days back from today's start.
_DAY_WORDS = {"today": 0, "yesterday": 1}


def parse_time(value: str) -> float | None:
    """Epoch seconds of an ISO-8601 date or time (UTC unless it says), of an age before now
    (7d, 12h, 30m, 2w), of today's or yesterday's start (local time) or of now, or written as
    such (``"1796000000"``, ``"0"``: a command line's time is text); None when ``value`` is
    none of them. Eight digits are a date (``20260315``, ISO's basic form), not a time in
    1970."""
    value = value.strip()
    word = value.lower()
    if word == "now":
        return time.time()
    if word in _DAY_WORDS:
        day = datetime.now().date() - timedelta(days=_DAY_WORDS[word])
        return datetime.combine(day, datetime.min.time()).astimezone().timestamp()  # local
    if _EPOCH.match(value) and not (len(value) == 8 and value.isdigit()):
        return float(value)
    relative = _RELATIVE.match(value)
    if relative:
        return time.time() - float(relative.group(1)) * _UNIT_S[relative.group(2)]
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
