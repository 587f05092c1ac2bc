"""Agent session transcripts → conversation turns → exchange chunks.

Pure parsing: no file I/O, no database. A tailer feeds one complete JSONL line at a time to a
parser (:func:`make_parser`), which returns the :class:`Turn` objects that line completes, and
calls ``flush()`` when it reaches the end of the available input. :func:`chunk_exchanges` then
groups turns into the :class:`Chunk` objects the indexer stores.

What is kept is what the people in the conversation said: the user's typed prompts, the
assistant's prose answers, and compaction summaries. Tool calls and results, reasoning, harness
bookkeeping and anything memoryd injected itself are dropped.

Formats
-------

``claude-code`` — ``~/.claude/projects/<project>/<session>.jsonl`` and subagent files.
    One JSON object per line; ``type`` says what it is (integrations.md §2.2 to §2.4).

    - ``user`` records are kept when they are genuine user messages: ``message.role == "user"``;
      not ``isMeta``, ``isCompactSummary`` or ``isVisibleInTranscriptOnly``; ``origin`` absent or
      ``origin.kind == "human"``; no ``toolUseResult``; the content (a string, or the text blocks
      of a block list) is not empty, i.e. not only ``tool_result`` blocks; and, trimmed, it does
      not start with a harness wrapper (:data:`CLAUDE_CODE_WRAPPERS`).
    - ``assistant`` records: ``text`` blocks only (``thinking`` and ``tool_use`` are dropped).
      One API message spans several lines sharing ``message.id``; their text is merged into one
      turn whose ``record_id`` is the ``message.id``. Synthetic messages (``message.model ==
      "<synthetic>"``, ``isApiErrorMessage``, the text "No response requested.") are dropped.
    - The ``user`` record with ``isCompactSummary`` that follows a ``system`` /
      ``compact_boundary`` record becomes a ``summary`` turn (timestamped from the boundary when it
      has no timestamp of its own). The boundary itself is not required: a parser started past
      it still recognises the summary.
    - Subagent ("sidechain") records — ``isSidechain: true`` or an ``agentId`` — are kept and
      marked with ``sidechain_agent`` (the ``agentId``, or ``"subagent"``). Sidechain user turns
      are prompts the main agent wrote, so they do not count in ``user_messages``.
    - Everything else (``progress``, ``attachment``, other ``system`` subtypes, ``summary``
      titles, ``file-history-snapshot``, ``queue-operation``, unknown types) is dropped.
    - Record id: ``uuid``; for assistant turns, ``message.id``. The session's ``session_id`` and
      ``cwd`` are those of the latest record (a resumed file starts with copies of older records
      that keep their original ``sessionId``).

``codex`` — ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (integrations.md §3.1).
    Lines are ``{"timestamp", "type", "payload"}``.

    - ``session_meta``: the first one gives ``session_id`` (``payload.id``), ``cwd`` and the start
      time. A session whose ``payload.source`` is a ``{"subagent": …}`` object is a subagent
      thread: its turns get ``sidechain_agent`` (``agent_nickname``, ``agent_role``, or
      ``"subagent"``). ``turn_context.cwd`` updates ``cwd`` (the last one wins).
    - User turns come from ``event_msg`` / ``user_message`` (what the user typed). Messages with a
      ``kind`` other than plain, or starting with an injected-context prefix
      (:data:`CODEX_INJECTED_PREFIXES`), are dropped.
    - Assistant turns come from ``response_item`` / ``message`` with ``role == "assistant"``
      (``output_text`` blocks, both ``commentary`` and ``final_answer`` phases).
      ``event_msg`` / ``agent_message`` repeats that text and is ignored, as are
      ``response_item`` user messages (they repeat ``user_message`` plus harness injections) and
      ``developer`` / ``system`` messages (instructions and hook context).
    - ``compacted`` with a non-empty ``message`` becomes a ``summary`` turn.
    - Rollout lines carry no record id, so the record id is :func:`line_id`, a hash of the raw
      line: stable across re-reads, and identical for the copies of a line a fork writes.

``generic`` — for other harnesses, one message per line::

      {"role": "user", "content": "…", "timestamp": "2026-06-01T10:00:00Z",
       "session_id": "…", "id": "…", "cwd": "…"}

    ``role`` is ``user``, ``assistant`` or ``summary`` (kept) or ``system`` / anything else
    (dropped). ``content`` is a string or a list of ``{"type": "text", "text": …}`` blocks (other
    block types are ignored). ``timestamp`` (ISO-8601, or epoch seconds or milliseconds),
    ``session_id``, ``id`` (should be unique across sessions, e.g. a UUID; :func:`line_id` when
    absent) and ``cwd`` are optional.

    The generic parser also reads pi coding agent session files (``badlogic/pi-mono``, format
    v3, integrations.md §4.1): the ``session`` header gives ``session_id``, ``cwd`` and the start
    time; ``message`` entries whose ``message.role`` is ``user`` or ``assistant`` are kept (text
    blocks only, so ``thinking`` and ``toolCall`` blocks are dropped); ``compaction`` entries
    become ``summary`` turns. pi entry ids are 8 hex digits, unique only within a session, so the
    record id is ``f"{session_id}:{id}"``.

Every format: content containing memoryd's own :data:`INJECTION_MARKER` is dropped, so injected
memory never feeds back into memory.

Defensive parsing
-----------------

``feed`` never raises. A line that is blank is ignored; any other line that yields no turn and
is not used for session metadata is counted in the parser's ``skipped`` dict under one reason:

================  ==================================================================================
``too_long``      longer than ``max_line_chars`` (:data:`MAX_LINE_CHARS`) — not even decoded
``invalid_json``  not JSON (including JSON nested too deeply to decode)
``not_object``    JSON, but not an object
``bad_field``     a field the parser needs has the wrong type (``message`` not an object,
                  ``content`` neither string nor list, ``uuid`` not a string, a flag not a bool, …)
``ignored``       a record kind memoryd never indexes (progress, attachments, system events, titles,
                  telemetry, unknown types, streams that repeat another one)
``tool``          tool calls, tool results, model reasoning
``meta``          harness-generated messages (``isMeta``, non-human ``origin``, synthetic assistant
                  messages, ``developer`` / ``system`` roles, injected Codex context)
``wrapper``       a Claude Code harness wrapper (slash commands, shell mode, reminders, …)
``marker``        carries :data:`INJECTION_MARKER`
``empty``         a message with no text left
================  ==================================================================================

Optional context fields (timestamps, session ids, cwd) are read leniently: a value of the wrong
type or an unparseable timestamp counts as absent rather than skipping the line. An unexpected
error while handling a line is logged and counted as ``internal_error``, so one odd record
cannot stall a tailer that would otherwise retry the same line forever.

Unknown record types and unknown fields are ignored, as the formats change between releases.

Tailing
-------

Use one parser per file, read from its start; after a file shrinks or is replaced, start a new
parser and rely on record-id dedupe. ``flush()`` emits the assistant message still being merged.
If lines of that same message arrive after a flush, their text is emitted as a new turn whose
``record_id`` is ``f"{message_id}#{n}"`` (``n`` = 2, 3, …) and whose ``message_id`` is the
message's. (Re-reading the file in one go later merges the parts under ``message_id``; the dedupe
on ``message_id`` then keeps the first, partial, text.)
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from memoryd_client.wire import INJECTION_MARKER

__all__ = [
    "CLAUDE_CODE_WRAPPERS",
    "CODEX_INJECTED_PREFIXES",
    "INJECTION_MARKER",
    "MAX_CHUNK_CHARS",
    "MAX_LINE_CHARS",
    "Chunk",
    "ClaudeCodeParser",
    "CodexParser",
    "GenericParser",
    "TranscriptParser",
    "Turn",
    "chunk_exchanges",
    "line_id",
    "make_parser",
]

log = logging.getLogger(__name__)

#: Lines longer than this (in characters) are skipped undecoded, as ``too_long``. Genuine
#: messages are far shorter; lines this long are spilled tool output or inline images.
MAX_LINE_CHARS = 10_000_000

#: Longest chunk text, date prefix included. Past it, the assistant part is cut first: the user
#: part (or summary) keeps all but :data:`_ASSISTANT_RESERVE_CHARS` of the room.
MAX_CHUNK_CHARS = 4_000
_ASSISTANT_RESERVE_CHARS = 1_000

#: Claude Code user texts starting with one of these are harness output, not typed prompts
#: (integrations.md §2.4, rule 6).
CLAUDE_CODE_WRAPPERS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "<task-notification>",
    "[Request interrupted by user",
    "[Image #",
)

#: Codex user texts starting with one of these are context the harness injected
#: (integrations.md §3.1).
CODEX_INJECTED_PREFIXES = (
    "# AGENTS.md instructions for",
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<codex_internal_context",
)

_NO_RESPONSE = "No response requested."
_SYNTHETIC_MODEL = "<synthetic>"
# Epoch numbers at or above this are milliseconds (1e11 s is in the year 5138).
_EPOCH_MS_THRESHOLD = 1e11
_MAX_EPOCH_S = 253_402_300_799.0  # 9999-12-31T23:59:59Z
_CODEX_TOOL_ITEMS = frozenset(
    {
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "image_generation_call",
        "tool_search_call",
        "tool_search_output",
        "reasoning",
    }
)
_CODEX_PLAIN_KINDS = frozenset({"plain", "user"})


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


def line_id(line: str) -> str:
    """Record id for a line without one: 32 hex digits of the sha256 of the trimmed line."""
    return hashlib.sha256(line.strip().encode("utf-8", "surrogatepass")).hexdigest()[:32]


def make_parser(fmt: str) -> TranscriptParser:
    """A fresh parser for ``fmt``: ``"claude-code"``, ``"codex"`` or ``"generic"``."""
    try:
        parser_class = _PARSERS[fmt]
    except KeyError:
        known = ", ".join(sorted(_PARSERS))
        raise ValueError(f"unknown transcript format {fmt!r} (expected one of: {known})") from None
    return parser_class()


# --- shared parsing machinery -----------------------------------------------------------------


class _Skip(Exception):
    """Raised inside a parser to drop the current line, counted under ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _LineParser(ABC):
    """Line decoding, skip counting and session bookkeeping shared by the three formats."""

    harness = "generic"

    def __init__(self, *, max_line_chars: int = MAX_LINE_CHARS) -> None:
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.started: float | None = None
        self.last_seen: float | None = None
        self.user_messages = 0
        self.skipped: dict[str, int] = {}
        self._max_line_chars = max_line_chars

    def feed(self, line: str) -> list[Turn]:
        out: list[Turn] = []
        line = line.strip()
        if not line:
            return out
        try:
            if len(line) > self._max_line_chars:
                raise _Skip("too_long")
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                raise _Skip("invalid_json") from None
            if not isinstance(record, dict):
                raise _Skip("not_object")
            self._handle(record, line, out)
        except _Skip as skip:
            self._count(skip.reason)
        except Exception:
            log.exception("Unexpected error parsing a %s transcript line.", self.harness)
            self._count("internal_error")
        return out

    def flush(self) -> list[Turn]:
        return []

    @abstractmethod
    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        """Turn one decoded record into turns appended to ``out`` (or raise _Skip)."""

    def _count(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def _note_time(self, timestamp: float | None) -> None:
        if timestamp is None:
            return
        if self.started is None or timestamp < self.started:
            self.started = timestamp
        if self.last_seen is None or timestamp > self.last_seen:
            self.last_seen = timestamp


def _timestamp(value: object) -> float | None:
    """Epoch seconds from ISO-8601 text or epoch seconds/milliseconds; None if unusable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:
            return None
        if abs(seconds) >= _EPOCH_MS_THRESHOLD:
            seconds /= 1000
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        seconds = parsed.timestamp()
    else:
        return None
    if not math.isfinite(seconds) or not 0 <= seconds <= _MAX_EPOCH_S:
        return None
    return seconds


def _text_or_none(value: object) -> str | None:
    """A non-empty string, or None (context fields are read leniently)."""
    return value if isinstance(value, str) and value else None


def _object(record: dict[str, Any], name: str) -> dict[str, Any]:
    value = record.get(name)
    if not isinstance(value, dict):
        raise _Skip("bad_field")
    return value


def _string(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value:
        raise _Skip("bad_field")
    return value


def _flag(record: dict[str, Any], name: str) -> bool:
    value = record.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _Skip("bad_field")
    return value


def _block_types(content: object) -> set[str]:
    if not isinstance(content, list):
        return set()
    return {b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)}


def _content_text(content: object, text_types: frozenset[str] = frozenset({"text"})) -> str:
    """The trimmed text of a string, or of the text blocks of a block list, joined by a blank
    line. Other block types are ignored; a wrongly typed content or text raises ``bad_field``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        raise _Skip("bad_field")
    parts = []
    for block in content:
        if not isinstance(block, dict):
            raise _Skip("bad_field")
        if block.get("type") in text_types:
            text = block.get("text")
            if not isinstance(text, str):
                raise _Skip("bad_field")
            if text.strip():
                parts.append(text.strip())
    return "\n\n".join(parts)


def _check_text(text: str) -> None:
    if not text:
        raise _Skip("empty")
    if INJECTION_MARKER in text:
        raise _Skip("marker")


# --- Claude Code ------------------------------------------------------------------------------


@dataclass
class _PendingMessage:
    """An assistant message whose lines are still being merged."""

    message_id: str
    session_id: str | None
    timestamp: float | None
    cwd: str | None
    sidechain_agent: str | None
    parts: list[str] = field(default_factory=list)


class ClaudeCodeParser(_LineParser):
    """Claude Code session transcripts (see the module docstring)."""

    harness = "claude-code"

    def __init__(self, *, max_line_chars: int = MAX_LINE_CHARS) -> None:
        super().__init__(max_line_chars=max_line_chars)
        self._pending: _PendingMessage | None = None
        self._parts_emitted: dict[str, int] = {}
        self._boundary_time: float | None = None

    def flush(self) -> list[Turn]:
        out: list[Turn] = []
        self._emit_pending(out)
        return out

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        kind = record.get("type")
        timestamp = _timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        self.session_id = _text_or_none(record.get("sessionId")) or self.session_id
        self.cwd = _text_or_none(record.get("cwd")) or self.cwd
        if kind == "assistant":
            self._assistant(record, timestamp, out)
        elif kind == "user":
            self._emit_pending(out)
            self._user(record, timestamp, out)
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            self._emit_pending(out)
            self._boundary_time = timestamp
        elif kind is not None and not isinstance(kind, str):
            raise _Skip("bad_field")
        else:
            raise _Skip("ignored")

    def _turn(
        self, record: dict[str, Any], record_id: str, role: str, text: str, ts: float | None
    ) -> Turn:
        return Turn(
            record_id=record_id,
            session_id=_text_or_none(record.get("sessionId")) or self.session_id,
            role=role,
            text=text,
            timestamp=ts,
            cwd=_text_or_none(record.get("cwd")) or self.cwd,
            sidechain_agent=_sidechain_agent(record),
            message_id=None,
        )

    def _user(self, record: dict[str, Any], timestamp: float | None, out: list[Turn]) -> None:
        message = _object(record, "message")
        if message.get("role") != "user":
            raise _Skip("bad_field")
        record_id = _string(record, "uuid")
        content = message.get("content")
        if _flag(record, "isCompactSummary"):
            text = _content_text(content)
            _check_text(text)
            ts = timestamp if timestamp is not None else self._boundary_time
            out.append(self._turn(record, record_id, "summary", text, ts))
            return
        if _flag(record, "isMeta") or _flag(record, "isVisibleInTranscriptOnly"):
            raise _Skip("meta")
        sidechain = _sidechain_agent(record)
        origin = record.get("origin")
        if origin is not None and not (isinstance(origin, dict) and origin.get("kind") == "human"):
            raise _Skip("meta")
        text = _content_text(content)
        if "toolUseResult" in record or (not text and "tool_result" in _block_types(content)):
            raise _Skip("tool")
        _check_text(text)
        if text.startswith(CLAUDE_CODE_WRAPPERS):
            raise _Skip("wrapper")
        if sidechain is None:
            self.user_messages += 1
        out.append(self._turn(record, record_id, "user", text, timestamp))

    def _assistant(self, record: dict[str, Any], timestamp: float | None, out: list[Turn]) -> None:
        message = _object(record, "message")
        if message.get("role") != "assistant":
            raise _Skip("bad_field")
        record_id = _string(record, "uuid")
        message_id = _text_or_none(message.get("id"))
        if self._pending is not None and self._pending.message_id != message_id:
            self._emit_pending(out)
        if (
            _flag(record, "isMeta")
            or _flag(record, "isApiErrorMessage")
            or message.get("model") == _SYNTHETIC_MODEL
        ):
            raise _Skip("meta")
        content = message.get("content")
        text = _content_text(content)
        if not text:
            raise _Skip("tool" if _block_types(content) - {"text"} else "empty")
        if message_id is None:  # nothing to merge by: the line is a message of its own
            _check_text(text)
            out.append(self._turn(record, record_id, "assistant", text, timestamp))
            return
        if self._pending is None:
            self._pending = _PendingMessage(
                message_id=message_id,
                session_id=_text_or_none(record.get("sessionId")) or self.session_id,
                timestamp=timestamp,
                cwd=_text_or_none(record.get("cwd")) or self.cwd,
                sidechain_agent=_sidechain_agent(record),
            )
        self._pending.parts.append(text)

    def _emit_pending(self, out: list[Turn]) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        text = "\n\n".join(pending.parts)
        if INJECTION_MARKER in text:
            self._count("marker")
            return
        if text == _NO_RESPONSE:
            self._count("meta")
            return
        part = self._parts_emitted.get(pending.message_id, 0) + 1
        self._parts_emitted[pending.message_id] = part
        out.append(
            Turn(
                record_id=pending.message_id if part == 1 else f"{pending.message_id}#{part}",
                session_id=pending.session_id,
                role="assistant",
                text=text,
                timestamp=pending.timestamp,
                cwd=pending.cwd,
                sidechain_agent=pending.sidechain_agent,
                message_id=pending.message_id,
            )
        )


def _sidechain_agent(record: dict[str, Any]) -> str | None:
    agent_id = _text_or_none(record.get("agentId"))
    if agent_id is not None:
        return agent_id
    return "subagent" if _flag(record, "isSidechain") else None


# --- Codex ------------------------------------------------------------------------------------


class CodexParser(_LineParser):
    """Codex CLI rollout files (see the module docstring)."""

    harness = "codex"

    def __init__(self, *, max_line_chars: int = MAX_LINE_CHARS) -> None:
        super().__init__(max_line_chars=max_line_chars)
        self._agent: str | None = None
        self._meta_seen = False

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        kind = record.get("type")
        timestamp = _timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        if kind not in ("session_meta", "turn_context", "event_msg", "response_item", "compacted"):
            raise _Skip("ignored" if kind is None or isinstance(kind, str) else "bad_field")
        payload = _object(record, "payload")
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self.cwd = _text_or_none(payload.get("cwd")) or self.cwd
        elif kind == "event_msg":
            if payload.get("type") != "user_message":
                raise _Skip("ignored")
            text = payload.get("message")
            if not isinstance(text, str):
                raise _Skip("bad_field")
            kind_of_input = payload.get("kind")
            text = text.strip()
            if kind_of_input not in (None, *_CODEX_PLAIN_KINDS) or text.startswith(
                CODEX_INJECTED_PREFIXES
            ):
                raise _Skip("meta")
            _check_text(text)
            self.user_messages += 1
            out.append(self._turn(line, "user", text, timestamp, None))
        elif kind == "response_item":
            item_type = payload.get("type")
            if item_type in _CODEX_TOOL_ITEMS:
                raise _Skip("tool")
            if item_type != "message":
                raise _Skip("ignored")
            role = payload.get("role")
            if role == "user":
                raise _Skip("ignored")  # repeats event_msg/user_message, plus injections
            if role != "assistant":
                raise _Skip("meta")
            text = _content_text(payload.get("content"), frozenset({"output_text", "text"}))
            _check_text(text)
            message_id = _text_or_none(payload.get("id"))
            out.append(self._turn(line, "assistant", text, timestamp, message_id))
        else:  # compacted
            text = payload.get("message")
            if text is not None and not isinstance(text, str):
                raise _Skip("bad_field")
            text = (text or "").strip()
            _check_text(text)
            out.append(self._turn(line, "summary", text, timestamp, None))

    def _session_meta(self, payload: dict[str, Any]) -> None:
        # The first session_meta is the file's own; a fork may copy its parent's after it.
        if self._meta_seen:
            return
        self._meta_seen = True
        self.session_id = _text_or_none(payload.get("id")) or self.session_id
        self.cwd = self.cwd or _text_or_none(payload.get("cwd"))
        self._note_time(_timestamp(payload.get("timestamp")))
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self._agent = (
                _text_or_none(payload.get("agent_nickname"))
                or _text_or_none(payload.get("agent_role"))
                or "subagent"
            )

    def _turn(
        self, line: str, role: str, text: str, timestamp: float | None, message_id: str | None
    ) -> Turn:
        return Turn(
            record_id=line_id(line),
            session_id=self.session_id,
            role=role,
            text=text,
            timestamp=timestamp,
            cwd=self.cwd,
            sidechain_agent=self._agent,
            message_id=message_id,
        )


# --- generic (and pi) -------------------------------------------------------------------------


class GenericParser(_LineParser):
    """The generic one-message-per-line format, and pi session files (see the module
    docstring). ``harness`` names the agent in the session registry."""

    def __init__(self, *, harness: str = "generic", max_line_chars: int = MAX_LINE_CHARS) -> None:
        super().__init__(max_line_chars=max_line_chars)
        self.harness = harness

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        if "role" in record:
            self._generic(record, line, out)
            return
        kind = record.get("type")
        timestamp = _timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        if kind == "session":  # pi header
            self.session_id = _text_or_none(record.get("id")) or self.session_id
            self.cwd = _text_or_none(record.get("cwd")) or self.cwd
        elif kind == "message":
            message = _object(record, "message")
            if timestamp is None:
                timestamp = _timestamp(message.get("timestamp"))
                self._note_time(timestamp)
            record_id = self._pi_record_id(record, line)
            self._message(message.get("role"), message.get("content"), record_id, timestamp, out)
        elif kind == "compaction":
            summary = record.get("summary")
            if not isinstance(summary, str):
                raise _Skip("bad_field")
            record_id = self._pi_record_id(record, line)
            self._message("summary", summary, record_id, timestamp, out)
        else:
            raise _Skip("ignored")

    def _generic(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        self.session_id = _text_or_none(record.get("session_id")) or self.session_id
        self.cwd = _text_or_none(record.get("cwd")) or self.cwd
        timestamp = _timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        record_id = record.get("id")
        if isinstance(record_id, int) and not isinstance(record_id, bool):
            record_id = str(record_id)
        elif record_id is None:
            record_id = line_id(line)
        elif not isinstance(record_id, str) or not record_id:
            raise _Skip("bad_field")
        self._message(record.get("role"), record.get("content"), record_id, timestamp, out)

    def _pi_record_id(self, record: dict[str, Any], line: str) -> str:
        entry_id = _text_or_none(record.get("id"))
        if entry_id is None:
            return line_id(line)
        return f"{self.session_id}:{entry_id}" if self.session_id else entry_id

    def _message(
        self,
        role: object,
        content: object,
        record_id: str,
        timestamp: float | None,
        out: list[Turn],
    ) -> None:
        if not isinstance(role, str):
            raise _Skip("bad_field")
        if role not in ("user", "assistant", "summary"):
            raise _Skip("meta" if role == "system" else "ignored")
        text = _content_text(content)
        _check_text(text)
        if role == "user":
            self.user_messages += 1
        out.append(
            Turn(
                record_id=record_id,
                session_id=self.session_id,
                role=role,
                text=text,
                timestamp=timestamp,
                cwd=self.cwd,
                sidechain_agent=None,
                message_id=None,
            )
        )


_PARSERS: dict[str, type[_LineParser]] = {
    "claude-code": ClaudeCodeParser,
    "codex": CodexParser,
    "generic": GenericParser,
}


# --- exchange chunking ------------------------------------------------------------------------

_LABELS = {"user": "User", "assistant": "Assistant", "summary": "Summary"}


def chunk_exchanges(turns: Sequence[Turn], *, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Group turns into exchange chunks, in the order of each chunk's first turn.

    An exchange is a user turn and the assistant turns after it, up to the next user turn. A
    summary is a chunk of its own. Assistant turns with no user turn before them (the start of
    the input, or just after a summary) form a chunk of their own. Turns of different sessions or
    sidechain agents never share a chunk, so a subagent's turns interleaved with the main thread
    leave the main exchange whole.

    The text is ``"[YYYY-MM-DD] "`` (the UTC date of the first timestamp, when there is one)
    followed by ``"User: …"``, ``"Assistant: …"`` or ``"Summary: …"`` sections separated by a
    blank line, cut to ``max_chars`` (see :data:`MAX_CHUNK_CHARS`). ``chunk_id`` is derived from
    the first record id only, so re-chunking an exchange that has since grown (its answer
    arrived in a later batch) yields the same ``chunk_id``: the indexer replaces the chunk.
    """
    groups: list[list[Turn]] = []
    open_groups: dict[tuple[str | None, str | None], list[Turn]] = {}
    for turn in turns:
        key = (turn.session_id, turn.sidechain_agent)
        if turn.role == "summary":
            open_groups.pop(key, None)
            groups.append([turn])
            continue
        group = open_groups.get(key)
        if group is None or turn.role == "user":
            group = open_groups[key] = []
            groups.append(group)
        group.append(turn)
    return [_make_chunk(group, max_chars) for group in groups]


def _make_chunk(group: list[Turn], max_chars: int) -> Chunk:
    first = group[0]
    timestamp = next((t.timestamp for t in group if t.timestamp is not None), None)
    prefix = ""
    if timestamp is not None:
        prefix = f"[{datetime.fromtimestamp(timestamp, UTC).date().isoformat()}] "
    sections = [f"{_LABELS.get(t.role, 'Assistant')}: {t.text}" for t in group]
    return Chunk(
        chunk_id=hashlib.sha256(f"chunk:{first.record_id}".encode()).hexdigest()[:32],
        kind="summary" if first.role == "summary" else "turn",
        text=prefix + _fit(sections, first.role != "assistant", max_chars - len(prefix)),
        record_ids=tuple(t.record_id for t in group),
        session_id=first.session_id,
        timestamp=timestamp,
        cwd=next((t.cwd for t in group if t.cwd), None),
        sidechain_agent=first.sidechain_agent,
    )


def _fit(sections: list[str], has_lead: bool, budget: int) -> str:
    """Join sections by blank lines within ``budget`` characters, cutting the answers first."""
    text = "\n\n".join(sections)
    if len(text) <= budget:
        return text
    if not has_lead or len(sections) == 1:
        return _cut(text, budget)
    lead, rest = sections[0], "\n\n".join(sections[1:])
    lead = _cut(lead, budget - min(len(rest) + 2, _ASSISTANT_RESERVE_CHARS))
    rest = _cut(rest, budget - len(lead) - 2)
    return f"{lead}\n\n{rest}" if rest else lead


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    return text[: limit - 1].rstrip() + "…"
