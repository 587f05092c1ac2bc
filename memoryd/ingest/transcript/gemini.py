"""Gemini CLI chat recordings (see the package docstring)."""

from __future__ import annotations

import json
import re
from typing import Any

from memoryd.ingest.transcript.parser_base import (
    MAX_LINE_CHARS,
    LineParser,
    Skip,
    Turn,
    check_text,
    parse_timestamp,
    text_or_none,
)

#: Message types that are the CLI talking to the user, not the conversation.
_GEMINI_META_TYPES = frozenset({"info", "error", "warning"})
#: Context a hook added to a prompt, as Gemini CLI wraps it (BeforeAgent's is appended to the
#: prompt, SessionStart's prepended to it without a terminal) and records it in the user's
#: message. It is not what the user said: memoryd's own block among it would come back as the
#: user's words (Gemini escapes its ``<``/``>``, so the injection marker no longer matches).
HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*", re.DOTALL)


class GeminiParser(LineParser):
    """Gemini CLI ``chats/session-*.jsonl`` files (see the module docstring).

    A message id can be appended again (its tokens or tool calls filled in later), so the text
    first seen for an id is the one kept; the file names no working directory, so the caller
    passes the project root Gemini CLI recorded beside the chats (``cwd``)."""

    harness = "gemini"
    #: Read from the start of the file after a restart (memoryd.ingest.context.replay): the
    #: session id is on the first line only, and repeated message ids must be known.
    needs_context = True
    takes_cwd = True

    def __init__(self, *, max_line_chars: int = MAX_LINE_CHARS) -> None:
        super().__init__(max_line_chars=max_line_chars)
        self._agent: str | None = None
        self._seen: set[str] = set()

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        if "$rewindTo" in record or "$set" in record:
            # a rewind drops messages from Gemini's context; what was said stays in memory.
            # Metadata updates (title summary, directories, a rewritten history) add nothing.
            raise Skip("ignored")
        message_id = record.get("id")
        if message_id is None:
            if isinstance(record.get("sessionId"), str):
                self._metadata(record)
                return
            raise Skip("ignored")
        if not isinstance(message_id, str) or not message_id:
            raise Skip("bad_field")
        timestamp = parse_timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        kind = record.get("type")
        if kind is not None and not isinstance(kind, str):
            raise Skip("bad_field")
        if kind in _GEMINI_META_TYPES:
            raise Skip("meta")
        if kind not in ("user", "gemini"):
            raise Skip("ignored" if kind is None or isinstance(kind, str) else "bad_field")
        if message_id in self._seen:
            raise Skip("ignored")  # the same message again, with its tokens or tool calls
        text = part_text(record.get("content"))
        if kind == "user" and "<hook_context>" in text:
            text = HOOK_CONTEXT.sub("", text).strip()
        if not text and kind == "gemini" and record.get("toolCalls"):
            self._seen.add(message_id)
            raise Skip("tool")
        check_text(text)
        self._seen.add(message_id)
        if kind == "user":
            self.user_messages += 1
        out.append(Turn(record_id=message_id, session_id=self.session_id,
                        role="user" if kind == "user" else "assistant", text=text,
                        timestamp=timestamp, cwd=self.cwd, sidechain_agent=self._agent,
                        message_id=None))

    @property
    def subagent(self) -> bool:
        """The file is a subagent's chat (its metadata's ``kind``)."""
        return self._agent is not None

    def _metadata(self, record: dict[str, Any]) -> None:
        # The first metadata line is the file's own; a resumed session keeps its id.
        if self.session_id is None:
            self.session_id = text_or_none(record.get("sessionId"))
        self._note_time(parse_timestamp(record.get("startTime")))
        if record.get("kind") == "subagent":
            self._agent = "subagent"
        directories = record.get("directories")
        if self.cwd is None and isinstance(directories, list) and directories:
            self.cwd = text_or_none(directories[0])


def part_text(content: object) -> str:
    """The text of a Gemini ``PartListUnion``: a string, a part, or a list of either. Parts
    other than text (function calls and responses, inline data) and model thoughts
    (``thought: true``) are left out; a wrongly typed content raises ``bad_field``."""
    if content is None:
        return ""
    items = content if isinstance(content, list) else [content]
    parts = []
    for item in items:
        if isinstance(item, str):
            text = item
        elif isinstance(item, dict):
            if item.get("thought") is True or "text" not in item:
                continue
            text = item["text"]
            if not isinstance(text, str):
                raise Skip("bad_field")
        else:
            raise Skip("bad_field")
        if text.strip():
            parts.append(text.strip())
    return "\n\n".join(parts)


def legacy_chat_lines(text: str) -> list[str]:
    """A legacy chat (``session-*.json``: one document ``{sessionId, projectHash, startTime,
    lastUpdated, messages: [...], summary?, directories?}``, written whole on every message) as
    the lines of today's ``.jsonl`` chat: its metadata, then a line for each message, for
    :class:`GeminiParser`. ValueError when the text is not such a document."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        raise ValueError("not a Gemini CLI chat")
    metadata = {key: value for key, value in document.items() if key != "messages"}
    return [json.dumps(metadata), *(json.dumps(message) for message in document["messages"])]
