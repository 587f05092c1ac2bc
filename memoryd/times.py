"""What a time may be when someone writes one: epoch seconds (a number, or its digits as
text: `--since 1796000000`), an ISO-8601 date or time, an age such as 7d, 12h, 30m, 2w, 1y,
or the words today, yesterday and now. Requests take times so (memoryd.server.params), and
so may anything else that reads a time a person typed; nothing here is about a request.

The one definition is the client's (:mod:`memoryd_client.times`): a client reads the times
its user writes in the user's time zone and sends epoch seconds; a text the daemon is sent
(an older client's, a caller of the socket's) is read the same way, in the daemon's: a date,
a zone-less time, today and yesterday are its local time, and a date as the end of a span
(``end_of_day``) is the end of that day.
"""

from __future__ import annotations

from memoryd_client.times import (
    EARLIEST_S,
    LATEST_S,
    milliseconds_hint,
    parse_time,
    span_refusal,
)

__all__ = ["EARLIEST_S", "LATEST_S", "milliseconds_hint", "parse_time", "span_refusal"]
