"""Claude Code session files (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memoryd_client.wire import INJECTION_MARKER

from memoryd.ingest.transcript.parser_base import (
    MAX_LINE_CHARS,
    LineParser,
    Skip,
    Turn,
    block_types,
    check_text,
    content_text,
    flag_field,
    object_field,
    parse_timestamp,
    string_field,
    text_or_none,
)

#: Claude Code user texts starting with one of these are harness output, not typed prompts
#: (docs/sources.md).
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

_NO_RESPONSE = "No response requested."
_SYNTHETIC_MODEL = "<synthetic>"


@dataclass
class _PendingMessage:
    """An assistant message whose lines are still being merged."""

    message_id: str
    session_id: str | None
    timestamp: float | None
    cwd: str | None
    sidechain_agent: str | None
    parts: list[str] = field(default_factory=list)


class ClaudeCodeParser(LineParser):
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
        timestamp = parse_timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        self.session_id = text_or_none(record.get("sessionId")) or self.session_id
        self.cwd = text_or_none(record.get("cwd")) or self.cwd
        if kind == "assistant":
            self._assistant(record, timestamp, out)
        elif kind == "user":
            self._emit_pending(out)
            self._user(record, timestamp, out)
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            self._emit_pending(out)
            self._boundary_time = timestamp
        elif kind is not None and not isinstance(kind, str):
            raise Skip("bad_field")
        else:
            raise Skip("ignored")

    def _turn(
        self, record: dict[str, Any], record_id: str, role: str, text: str, ts: float | None
    ) -> Turn:
        return Turn(
            record_id=record_id,
            session_id=text_or_none(record.get("sessionId")) or self.session_id,
            role=role,
            text=text,
            timestamp=ts,
            cwd=text_or_none(record.get("cwd")) or self.cwd,
            sidechain_agent=_sidechain_agent(record),
            message_id=None,
        )

    def _user(self, record: dict[str, Any], timestamp: float | None, out: list[Turn]) -> None:
        message = object_field(record, "message")
        if message.get("role") != "user":
            raise Skip("bad_field")
        record_id = string_field(record, "uuid")
        content = message.get("content")
        if flag_field(record, "isCompactSummary"):
            text = content_text(content)
            check_text(text)
            ts = timestamp if timestamp is not None else self._boundary_time
            out.append(self._turn(record, record_id, "summary", text, ts))
            return
        if flag_field(record, "isMeta") or flag_field(record, "isVisibleInTranscriptOnly"):
            raise Skip("meta")
        sidechain = _sidechain_agent(record)
        origin = record.get("origin")
        if origin is not None and not (isinstance(origin, dict) and origin.get("kind") == "human"):
            raise Skip("meta")
        text = content_text(content)
        if "toolUseResult" in record or (not text and "tool_result" in block_types(content)):
            raise Skip("tool")
        check_text(text)
        if text.startswith(CLAUDE_CODE_WRAPPERS):
            raise Skip("wrapper")
        if sidechain is None:
            self.user_messages += 1
        out.append(self._turn(record, record_id, "user", text, timestamp))

    def _assistant(self, record: dict[str, Any], timestamp: float | None, out: list[Turn]) -> None:
        message = object_field(record, "message")
        if message.get("role") != "assistant":
            raise Skip("bad_field")
        record_id = string_field(record, "uuid")
        message_id = text_or_none(message.get("id"))
        if self._pending is not None and self._pending.message_id != message_id:
            self._emit_pending(out)
        if (
            flag_field(record, "isMeta")
            or flag_field(record, "isApiErrorMessage")
            or message.get("model") == _SYNTHETIC_MODEL
        ):
            raise Skip("meta")
        content = message.get("content")
        text = content_text(content)
        if not text:
            raise Skip("tool" if block_types(content) - {"text"} else "empty")
        if message_id is None:  # nothing to merge by: the line is a message of its own
            check_text(text)
            out.append(self._turn(record, record_id, "assistant", text, timestamp))
            return
        if self._pending is None:
            self._pending = _PendingMessage(
                message_id=message_id,
                session_id=text_or_none(record.get("sessionId")) or self.session_id,
                timestamp=timestamp,
                cwd=text_or_none(record.get("cwd")) or self.cwd,
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
    agent_id = text_or_none(record.get("agentId"))
    if agent_id is not None:
        return agent_id
    return "subagent" if flag_field(record, "isSidechain") else None
