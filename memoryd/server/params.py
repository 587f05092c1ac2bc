"""Typed access to a request's params, with one clear message per mistake. Only the server
reads them: it parses each request into the records the layers below take
(:mod:`memoryd.server.requests`)."""

from __future__ import annotations

import difflib
import math
import re
from typing import Any

from memoryd_client.wire import PARAMS

from memoryd.errors import BadParamsError
from memoryd.names import MAX_AGENT_CHARS, MAX_PATH_BYTES, agent_problem, path_problem
from memoryd.times import EARLIEST_S, LATEST_S, milliseconds_hint, parse_time

_KEY = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
#: The most of a value a refusal repeats: a `since` of a million characters was echoed
#: whole, a million-character error for the caller (an agent's context) to read.
ECHO_CHARS = 60
#: A list param (tags, kinds, statuses) holds at most this many strings of MAX_ITEM_CHARS.
MAX_ITEMS = 64
MAX_ITEM_CHARS = 200


class Params:
    #: the connection the request came on (memoryd.server.binding.Caller); None inside the daemon
    caller: Any = None

    def __init__(self, method: str, params: Any) -> None:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise BadParamsError(f"{method}: params must be a map, got {type(params).__name__}")
        self.method = method
        self.raw = params

    def check_names(self) -> None:
        """Refuse a name the method does not take (:data:`memoryd_client.wire.PARAMS`), and
        one in any of ``remember_many``'s entries: ignored, a misspelt filter would widen a
        search, a misspelt field would store an entry without it, and nobody would know."""
        _check_names(self.method, self.raw, PARAMS.get(self.method, frozenset()))
        entries = self.raw.get("entries") if self.method == "remember_many" else None
        if isinstance(entries, list):
            for number, item in enumerate(entries):
                if isinstance(item, dict):
                    _check_names(f"remember_many: entries[{number}]", item, PARAMS["remember"],
                                 takes="an entry takes")

    def refuse(self, name: str, what: str) -> BadParamsError:
        """The error refusing parameter ``name``: ``METHOD: NAME WHAT``, the method and the
        parameter on the wire too (memoryd_client.errors.BadParamsError)."""
        return BadParamsError(f"{self.method}: {name} {what}", self.method, name, what)

    def text(self, name: str, *, required: bool = False, default: str | None = None,
             max_len: int = 100_000) -> str | None:
        value = self.raw.get(name)
        if value is None:
            if required:
                raise self.refuse(name, "is required")
            return default
        if not isinstance(value, str):
            raise self.refuse(name, f"must be a string, got {type(value).__name__}")
        if required and not value.strip():
            raise self.refuse(name, "must not be empty")
        if len(value) > max_len:
            raise self.refuse(name, f"is {len(value)} characters long; the limit is {max_len}")
        return value

    def path(self, name: str, *, required: bool = False) -> str | None:
        """A file-system path: no NUL, within PATH_MAX, no name over NAME_MAX."""
        value = self.text(name, required=required, max_len=MAX_PATH_BYTES)
        problem = path_problem(value) if value is not None else None
        if problem is not None:
            raise self.refuse(name, problem)
        return value

    def agent(self, name: str = "agent", *, required: bool = True) -> str | None:
        value = self.text(name, required=required, max_len=MAX_AGENT_CHARS)
        problem = agent_problem(value) if value is not None else None
        if problem is not None:
            raise self.refuse(name, problem)
        return value

    def key(self, name: str = "key") -> str | None:
        value = self.text(name, max_len=200)
        if value is not None and not _KEY.match(value):
            raise self.refuse(name, f"{echo(value)} is not a dotted key such as "
                              "pref.commit_style")
        return value

    def choice(self, name: str, choices: tuple[str, ...], default: str | None = None) -> str | None:
        value = self.text(name, default=default)
        if value is not None and value not in choices:
            raise self.refuse(name, f"must be one of {', '.join(choices)}; got {echo(value)}")
        return value

    def strings(self, name: str) -> list[str] | None:
        """A list of strings; a single comma-separated string is accepted too."""
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            items = [v.strip() for v in value.split(",") if v.strip()]
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            items = [v.strip() for v in value if v.strip()]
        else:
            raise self.refuse(name, "must be a list of strings")
        if len(items) > MAX_ITEMS:
            raise self.refuse(name, f"holds {len(items)} items; the limit is {MAX_ITEMS}")
        if any(len(item) > MAX_ITEM_CHARS for item in items):
            raise self.refuse(name, f"items are {MAX_ITEM_CHARS} characters at most")
        return items

    def number(self, name: str, *, default: float | None = None, low: float | None = None,
               high: float | None = None) -> float | None:
        value = self.raw.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.refuse(name, f"must be a number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise self.refuse(name, f"must be a finite number, got {value}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.refuse(name, f"must be between {low:g} and {high:g}; got {value:g}")
        return float(value)

    def integer(self, name: str, *, default: int, low: int, high: int) -> int:
        value = self.raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.refuse(name, f"must be an integer, got {type(value).__name__}")
        if not low <= value <= high:
            raise self.refuse(name, f"must be between {low} and {high}; got {value}")
        return value

    def flag(self, name: str) -> bool:
        value = self.raw.get(name, False)
        if not isinstance(value, bool):
            raise self.refuse(name, f"must be true or false, got {echo(value)}")
        return value

    def time(self, name: str, *, end_of_day: bool = False) -> float | None:
        """Epoch seconds, an ISO-8601 date or time (a date or a zone-less time: the daemon's
        local time), an age such as 7d, 12h, 30m, 2w, 1y, today, yesterday or now
        (memoryd.times); ``end_of_day``: a date (today, yesterday) is the end of that day, as
        the end of a span means it."""
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if EARLIEST_S <= value <= LATEST_S:  # False for NaN too
                return float(value)
            raise self.refuse(name, f"{echo(value)} is not a time between the years 1 and 9999"
                              + milliseconds_hint(value))
        hint = ""
        if isinstance(value, str):
            parsed = parse_time(value, end_of_day=end_of_day)
            if parsed is not None and EARLIEST_S <= parsed <= LATEST_S:
                return parsed
            hint = milliseconds_hint(parsed) if parsed is not None else ""
        raise self.refuse(name, f"{echo(value)} is not a time (epoch seconds, 2026-03-15, "
                          f"7d/12h, today or yesterday){hint}")


def echo(value: Any) -> str:
    """A value a request gave, as a refusal repeats it: its repr, cut to ECHO_CHARS, with
    the length of a text cut."""
    shown = repr(value)
    if len(shown) <= ECHO_CHARS:
        return shown
    size = f" ({len(value):,} characters)" if isinstance(value, str) else ""
    return f"{shown[:ECHO_CHARS - 1]}…{size}"


def _check_names(where: str, raw: dict[Any, Any], known: frozenset[str], *,
                 takes: str = "") -> None:
    for name in raw:
        if name in known:
            continue
        if name in ("writer", "via"):
            raise BadParamsError(f"{where}: {name} is set by memoryd from the connection (its "
                                 "agent and channel), never taken from a request; leave it out")
        close = difflib.get_close_matches(str(name)[:ECHO_CHARS], sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        method = where.split(":")[0]
        taken = ", ".join(sorted(known)) or "nothing"
        raise BadParamsError(f"{where}: unknown param {echo(name)}{hint}; "
                             f"{takes or method + ' takes'} {taken}")

