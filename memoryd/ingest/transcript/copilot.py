"""GitHub Copilot CLI session logs (see the package docstring)."""

from __future__ import annotations

from typing import Any

from memoryd.ingest.transcript.parser_base import (
    LineParser,
    Skip,
    Turn,
    check_text,
    line_id,
    object_field,
    parse_timestamp,
    text_or_none,
)

#: Events that are the CLI's own bookkeeping, not what anyone said.
_META_PREFIXES = ("session.", "assistant.turn_", "hook.", "abort", "system.")
#: Events of the tools the assistant ran, and of its reasoning.
_TOOL_PREFIXES = ("tool.", "assistant.reasoning", "subagent.", "skill.")


class CopilotParser(LineParser):
    """Copilot CLI ``session-state/<session>/events.jsonl`` files (see the module docstring)."""

    harness = "copilot"
    #: Read from the start of the file after a restart (memoryd.ingest.context.replay): the
    #: session's id and directory are on its first event only.
    needs_context = True
    #: The directory the session ran in, from its ``workspace.yaml`` (memoryd.ingest.context),
    #: for the versions whose first event does not name it.
    takes_cwd = True

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        kind = record.get("type")
        if not isinstance(kind, str) or not kind:
            raise Skip("bad_field")
        timestamp = parse_timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        if kind == "session.start":
            self._start(object_field(record, "data"))
            return
        if kind in ("user.message", "assistant.message"):
            data = object_field(record, "data")
            # an event without its id (a version that wrote none, a log written by hand) is
            # the line's: the same on every read of the file
            event_id = text_or_none(record.get("id")) or line_id(line)
            text = data.get("content")
            if text is not None and not isinstance(text, str):
                raise Skip("bad_field")
            text = (text or "").strip()
            if kind == "assistant.message" and not text:
                raise Skip("tool")  # a message of tool calls alone
            check_text(text)
            role = "user" if kind == "user.message" else "assistant"
            if role == "user":
                self.user_messages += 1
            out.append(Turn(record_id=event_id, session_id=self.session_id, role=role,
                            text=text, timestamp=timestamp, cwd=self.cwd, sidechain_agent=None,
                            message_id=text_or_none(data.get("messageId"))))
            return
        if kind.startswith(_TOOL_PREFIXES):
            raise Skip("tool")
        raise Skip("meta" if kind.startswith(_META_PREFIXES) else "ignored")

    def _start(self, data: dict[str, Any]) -> None:
        """The first event: the session's id, its start and (newer versions) its directory."""
        self.session_id = text_or_none(data.get("sessionId")) or self.session_id
        self._note_time(parse_timestamp(data.get("startTime")))
        context = data.get("context")
        if isinstance(context, dict):
            self.cwd = text_or_none(context.get("cwd")) or self.cwd
