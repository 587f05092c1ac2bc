"""Codex CLI rollout files (see the package docstring)."""

from __future__ import annotations

from typing import Any

from memoryd.ingest.transcript.parser_base import (
    MAX_LINE_CHARS,
    LineParser,
    Skip,
    Turn,
    check_text,
    content_text,
    line_id,
    object_field,
    parse_timestamp,
    text_or_none,
)

#: Codex user texts starting with one of these are context the harness injected
#: (docs/sources.md).
CODEX_INJECTED_PREFIXES = (
    "# AGENTS.md instructions for",
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<codex_internal_context",
)

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


class CodexParser(LineParser):
    """Codex CLI rollout files (see the module docstring)."""

    harness = "codex"
    #: Read from the start of the file after a restart (memoryd.ingest.context.replay): the
    #: session's id and directory are on its first line (``session_meta``), and ``codex
    #: resume`` appends to the same rollout.
    needs_context = True

    def __init__(self, *, max_line_chars: int = MAX_LINE_CHARS) -> None:
        super().__init__(max_line_chars=max_line_chars)
        self._agent: str | None = None
        self._meta_seen = False

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        kind = record.get("type")
        timestamp = parse_timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        if kind not in ("session_meta", "turn_context", "event_msg", "response_item", "compacted"):
            raise Skip("ignored" if kind is None or isinstance(kind, str) else "bad_field")
        payload = object_field(record, "payload")
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self.cwd = text_or_none(payload.get("cwd")) or self.cwd
        elif kind == "event_msg":
            if payload.get("type") != "user_message":
                raise Skip("ignored")
            text = payload.get("message")
            if not isinstance(text, str):
                raise Skip("bad_field")
            kind_of_input = payload.get("kind")
            text = text.strip()
            if kind_of_input not in (None, *_CODEX_PLAIN_KINDS) or text.startswith(
                CODEX_INJECTED_PREFIXES
            ):
                raise Skip("meta")
            check_text(text)
            self.user_messages += 1
            out.append(self._turn(line, "user", text, timestamp, None))
        elif kind == "response_item":
            out.append(self._answer(payload, line, timestamp))
        else:  # compacted
            text = payload.get("message")
            if text is not None and not isinstance(text, str):
                raise Skip("bad_field")
            text = (text or "").strip()
            check_text(text)
            out.append(self._turn(line, "summary", text, timestamp, None))

    def _answer(self, payload: dict[str, Any], line: str, timestamp: float | None) -> Turn:
        """A ``response_item``: the assistant's message (else Skip)."""
        item_type = payload.get("type")
        if item_type is not None and not isinstance(item_type, str):
            raise Skip("bad_field")
        if item_type in _CODEX_TOOL_ITEMS:
            raise Skip("tool")
        if item_type != "message":
            raise Skip("ignored")
        role = payload.get("role")
        if role == "user":
            raise Skip("ignored")  # repeats event_msg/user_message, plus injections
        if role != "assistant":
            raise Skip("meta")
        text = content_text(payload.get("content"), frozenset({"output_text", "text"}))
        check_text(text)
        return self._turn(line, "assistant", text, timestamp, text_or_none(payload.get("id")))

    def _session_meta(self, payload: dict[str, Any]) -> None:
        # The first session_meta is the file's own; a fork may copy its parent's after it.
        if self._meta_seen:
            return
        self._meta_seen = True
        self.session_id = text_or_none(payload.get("id")) or self.session_id
        self.cwd = self.cwd or text_or_none(payload.get("cwd"))
        self._note_time(parse_timestamp(payload.get("timestamp")))
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self._agent = (
                text_or_none(payload.get("agent_nickname"))
                or text_or_none(payload.get("agent_role"))
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
