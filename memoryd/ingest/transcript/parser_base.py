"""The base every transcript format's parser shares: the turns and chunks parsers make,
line decoding, skip counting, and the small readers of a decoded record (see the package
docstring)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from memoryd_client.wire import INJECTION_MARKER

log = logging.getLogger(__name__)

#: Lines longer than this (in characters) are skipped undecoded, as ``too_long``. Genuine
#: messages are far shorter; lines this long are spilled tool output or inline images.
MAX_LINE_CHARS = 10_000_000

# An epoch number at or above this is in a finer unit than seconds (1e11 s is in the year
# 5138): milliseconds, microseconds or nanoseconds, each a thousand times the one before.
_EPOCH_MS_THRESHOLD = 1e11
_EPOCH_FINER_UNITS = 3
_MAX_EPOCH_S = 253_402_300_799.0  # 9999-12-31T23:59:59Z
_EPOCH_TEXT = re.compile(r"[0-9]{1,19}(?:\.[0-9]{1,9})?")
#: A zone written by its name after an ISO-8601 time (``2024-02-03 04:05:06 UTC``, as logs
#: and databases print it): these name UTC; another name (``CET``, ``PST``) is ambiguous.
_UTC_NAME = re.compile(r"\s*(?:UTC|GMT|UT|Z)\Z", re.IGNORECASE)
#: Dates as people and chat exports write them, beside ISO-8601 (the month by its name only:
#: 05/08 is May in one country and August in another). Taken as UTC, like ISO without a zone.
_WRITTEN_DATES = (
    "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y",
    "%d %B, %Y", "%d %b, %Y", "%Y/%m/%d", "%Y/%m/%d %H:%M", "%Y/%m/%d %H:%M:%S",
    "%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y",  # "1:56 pm on 8 May, 2023"
    "%d %B %Y %H:%M", "%d %b %Y %H:%M", "%B %d, %Y %H:%M", "%b %d, %Y %H:%M",
    "%B %d, %Y %I:%M %p", "%b %d, %Y %I:%M %p",
)


@dataclass
class _LineTimes:
    """The times one line gave :func:`parse_timestamp`: how many it read, and how many it
    could not (a line none of whose times could be read is counted, ``bad_timestamp``)."""

    read: int = 0
    unread: list[object] = field(default_factory=list)


#: The line being fed to a parser (LineParser.feed), whose times parse_timestamp tells of.
_LINE_TIMES: ContextVar[_LineTimes | None] = ContextVar("line_times", default=None)


@dataclass(frozen=True)
class Turn:
    """One thing said in a session: a user prompt, an assistant answer, or a summary."""

    record_id: str
    session_id: str | None
    role: str  # 'user' | 'assistant' | 'summary'
    text: str
    timestamp: float | None  # epoch seconds
    cwd: str | None
    sidechain_agent: str | None
    message_id: str | None
    #: who said it, when the transcript names the speaker (generic ``name``)
    speaker: str | None = None


@dataclass(frozen=True)
class Chunk:
    """One exchange (a user message and the answers to it) or one summary, ready to index."""

    chunk_id: str
    kind: str  # 'turn' | 'summary'
    text: str
    record_ids: tuple[str, ...]
    session_id: str | None
    timestamp: float | None
    cwd: str | None
    sidechain_agent: str | None


class TranscriptParser(Protocol):
    """A stateful parser for one transcript file, fed line by line."""

    harness: str
    session_id: str | None
    cwd: str | None
    started: float | None
    last_seen: float | None
    user_messages: int
    skipped: dict[str, int]

    def feed(self, line: str) -> list[Turn]:
        """Parse one complete JSONL line (no newline); return the turns it completes."""
        ...

    def flush(self) -> list[Turn]:
        """End of the available input: return any turn still being assembled."""
        ...

    def resume(self, turns: Sequence[Turn], known: set[str] | None = None) -> None:
        """A fresh parser goes on where one stopped before a restart: ``turns``, the exchange
        it left open, and ``known``, the record ids its file's chunks hold (when it
        :attr:`wants_known` them), are what it knows of the lines before."""
        ...

    #: whether :meth:`resume` needs the record ids the file's chunks hold
    wants_known: bool


def line_id(line: str) -> str:
    """Record id for a line without one: 32 hex digits of the sha256 of the trimmed line."""
    return hashlib.sha256(line.strip().encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Skip(Exception):
    """Raised inside a parser to drop the current line, counted under ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SessionCounts:
    """What every transcript parser tells of the session it read: its id and directory, when
    it started and was last seen, its user messages, and the lines it skipped by reason."""

    def __init__(self, *, max_line_chars: int = MAX_LINE_CHARS) -> None:
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.started: float | None = None
        self.last_seen: float | None = None
        self.user_messages = 0
        self.skipped: dict[str, int] = {}
        self._max_line_chars = max_line_chars

    def _count(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    wants_known = False

    def resume(self, turns: Sequence[Turn], known: set[str] | None = None) -> None:
        """See :class:`TranscriptParser`: nothing to take from them for most formats."""

    def _note_time(self, timestamp: float | None) -> None:
        if timestamp is None:
            return
        if self.started is None or timestamp < self.started:
            self.started = timestamp
        if self.last_seen is None or timestamp > self.last_seen:
            self.last_seen = timestamp


class LineParser(SessionCounts, ABC):
    """Line decoding, skip counting and session bookkeeping shared by the JSON-lines formats."""

    harness = "generic"

    def feed(self, line: str) -> list[Turn]:
        out: list[Turn] = []
        line = line.lstrip("\ufeff").strip()  # the byte order mark a Windows export begins with
        if not line:
            return out
        times = _LineTimes()
        token = _LINE_TIMES.set(times)
        try:
            if len(line) > self._max_line_chars:
                raise Skip("too_long")
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                raise Skip("invalid_json") from None
            if not isinstance(record, dict):
                raise Skip("not_object")
            self._handle(record, line, out)
        except Skip as skip:
            self._count(skip.reason)
        except Exception:
            log.exception("Unexpected error parsing a %s transcript line.", self.harness)
            self._count("internal_error")
        finally:
            _LINE_TIMES.reset(token)
        if times.unread and not times.read:  # undated: said, not silent
            log.debug("A %s transcript line's time %r is in no form memoryd reads.",
                      self.harness, times.unread[0])
            self._count("bad_timestamp")
        return out

    def flush(self) -> list[Turn]:
        return []

    @abstractmethod
    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        """Turn one decoded record into turns appended to ``out`` (or raise Skip)."""


def _written_time(text: str) -> datetime | None:
    """A time written as a date: ISO-8601 (with its zone as a name, ``… 04:05:06 UTC``, too),
    an e-mail's date (RFC 2822), or a date with its month's name (``_WRITTEN_DATES``)."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    named = _UTC_NAME.sub("", text)
    if named != text and named:
        with contextlib.suppress(ValueError):
            parsed = datetime.fromisoformat(named)
            if parsed.tzinfo is None:
                return parsed.replace(tzinfo=UTC)
    if len(text) > 40 or (not any(c.isalpha() for c in text) and "/" not in text):
        return None  # none of those: the formats are not tried on every line of a log
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return parsedate_to_datetime(text)
    for form in _WRITTEN_DATES:
        with contextlib.suppress(ValueError):
            return datetime.strptime(text, form)
    return None


def parse_timestamp(value: object) -> float | None:
    """Epoch seconds from a time written as a date (:func:`_written_time`) or epoch seconds,
    milliseconds, microseconds or nanoseconds, as a number or as its digits
    (``"1780308005"``, Slack's ``"1512085950.000216"``); None if unusable. The line being fed
    to a parser (:meth:`LineParser.feed`) is told of it: one none of whose times could be
    read is counted as ``bad_timestamp``."""
    seconds = _epoch_seconds(value)
    times = _LINE_TIMES.get()
    if times is not None:
        if seconds is not None:
            times.read += 1
        elif value is not None and not (isinstance(value, str) and not value.strip()):
            times.unread.append(value)
    return seconds


def _epoch_seconds(value: object) -> float | None:
    """:func:`parse_timestamp`, untold."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        parsed = _written_time(text)
        if parsed is not None:
            seconds = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
            return seconds if 0 <= seconds <= _MAX_EPOCH_S else None
        if not _EPOCH_TEXT.fullmatch(text):
            return None
        value = float(text)
    if not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    for _ in range(_EPOCH_FINER_UNITS):
        if not abs(seconds) >= _EPOCH_MS_THRESHOLD:
            break
        seconds /= 1000
    if not math.isfinite(seconds) or not 0 <= seconds <= _MAX_EPOCH_S:
        return None
    return seconds


def text_or_none(value: object) -> str | None:
    """A non-empty string, or None (context fields are read leniently)."""
    return value if isinstance(value, str) and value else None


def object_field(record: dict[str, Any], name: str) -> dict[str, Any]:
    value = record.get(name)
    if not isinstance(value, dict):
        raise Skip("bad_field")
    return value


def string_field(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value:
        raise Skip("bad_field")
    return value


def flag_field(record: dict[str, Any], name: str) -> bool:
    value = record.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise Skip("bad_field")
    return value


def block_types(content: object) -> set[str]:
    if not isinstance(content, list):
        return set()
    return {b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)}


def content_text(content: object, text_types: frozenset[str] = frozenset({"text"}),
                 loose: bool = False) -> str:
    """The trimmed text of a string, or of the text blocks of a block list, joined by a blank
    line. Other block types are ignored; a wrongly typed content or text raises
    ``bad_field``. ``loose`` (the generic format): one text block alone, and a string in the
    list, are text too (LangChain's ``list[str | dict]``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if loose and isinstance(content, dict):  # one block: a text block, or a wrong content
        if not isinstance(content.get("type"), str) or content["type"] not in text_types:
            raise Skip("bad_field")
        content = [content]
    if not isinstance(content, list):
        raise Skip("bad_field")
    parts = []
    for block in content:
        if loose and isinstance(block, str):
            if block.strip():
                parts.append(block.strip())
            continue
        if not isinstance(block, dict):
            raise Skip("bad_field")
        kind = block.get("type")
        if isinstance(kind, str) and kind in text_types:
            text = block.get("text")
            if not isinstance(text, str):
                raise Skip("bad_field")
            if text.strip():
                parts.append(text.strip())
    return "\n\n".join(parts)


def check_text(text: str) -> None:
    if not text:
        raise Skip("empty")
    if INJECTION_MARKER in text:
        raise Skip("marker")
