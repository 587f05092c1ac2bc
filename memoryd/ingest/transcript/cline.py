"""Cline's and Roo Code's task logs, ``tasks/<task>/ui_messages.json`` (see the package
docstring)."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from memoryd.ingest.transcript.parser_base import (
    LineParser,
    Skip,
    Turn,
    check_text,
    parse_timestamp,
    text_or_none,
)

#: The header line :func:`task_lines` puts before the messages: the task's id, its directory's
#: name (the messages do not hold it), and the directory its first request names (``cwd``).
TASK_KEY = "memoryd_task"
#: The working directory the first request's environment details name: Cline's ``# Current
#: Working Directory (/path) Files``, Roo Code's ``# Current Workspace Directory (/path) Files``.
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((/[^\n]*?)\) Files")
#: What the assistant ran or read, and how: ``say`` and ``ask`` kinds that are tool use.
_TOOL_KINDS = frozenset({
    "tool", "command", "command_output", "reasoning", "browser_action", "browser_action_launch",
    "browser_action_result", "use_mcp_server", "mcp_server_request_started",
    "mcp_server_response", "checkpoint_created", "diff_error", "clineignore_error",
    "codebase_search_result", "subtask_result", "generate_explanation", "load_mcp_documentation",
    "new_task",
})


def task_lines(text: str, path: str) -> list[str]:
    """A task's ``ui_messages.json`` (one JSON array of messages, written whole on every
    change) as the lines :class:`ClineParser` reads: a header with the task's id (the name of
    the file's directory) and the directory its first request names (the task itself comes
    before it), then a line for each message. ValueError when ``text`` is not such an
    array."""
    try:
        messages = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(messages, list):
        raise ValueError("not a Cline task's messages")
    task = os.path.basename(os.path.dirname(path))
    cwd = next((_request_cwd(message.get("text")) for message in messages
                if isinstance(message, dict) and message.get("say") == "api_req_started"), None)
    return [json.dumps({TASK_KEY: task, "cwd": cwd}), *(json.dumps(m) for m in messages)]


class ClineParser(LineParser):
    """The messages of one Cline or Roo Code task (see the package docstring)."""

    harness = "cline"
    #: The directory the task ran in, from the task history beside the tasks
    #: (memoryd.ingest.context); the first request's environment details name it too.
    takes_cwd = True

    def __init__(self) -> None:
        super().__init__()
        self._requested = False  # a request went to the model: a "text" message is its answer

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        if TASK_KEY in record:
            self.session_id = text_or_none(record[TASK_KEY]) or self.session_id
            self.cwd = self.cwd or text_or_none(record.get("cwd"))  # the task history's wins
            return
        kind_of = record.get("type")
        if kind_of not in ("say", "ask"):
            raise Skip("bad_field")
        kind = record.get(kind_of)
        if not isinstance(kind, str):
            raise Skip("bad_field")
        timestamp = parse_timestamp(record.get("ts"))
        if timestamp is None:
            raise Skip("bad_field")  # the message's id
        self._note_time(timestamp)
        text = record.get("text")
        if text is not None and not isinstance(text, str):
            raise Skip("bad_field")
        text = text or ""
        if record.get("partial") is True:
            raise Skip("ignored")  # still streaming: the whole of it is written next
        role, said = self._said(kind_of, kind, text)
        said = said.strip()
        check_text(said)
        if role == "user":
            self.user_messages += 1
        out.append(Turn(record_id=f"{self.session_id}:{record['ts']}:{kind}",
                        session_id=self.session_id, role=role, text=said,
                        timestamp=timestamp, cwd=self.cwd, sidechain_agent=None,
                        message_id=None))

    def _said(self, kind_of: str, kind: str, text: str) -> tuple[str, str]:
        """Who said what in a message, or Skip: the task and the user's replies are the
        user's; the model's prose, its questions and its result are the assistant's."""
        if kind_of == "say":
            if kind == "api_req_started":
                self._requested = True
                raise Skip("meta")
            if kind == "task" or (kind == "text" and not self._requested):
                return "user", text  # Roo Code (and older Cline) say the task as "text"
            if kind in ("user_feedback", "user_feedback_diff"):
                return "user", text
            if kind in ("text", "completion_result"):
                return "assistant", text
        elif kind in ("followup", "plan_mode_respond", "act_mode_respond"):
            return "assistant", _field(text, "question" if kind == "followup" else "response")
        raise Skip("tool" if kind in _TOOL_KINDS else "meta")


def _field(text: str, name: str) -> str:
    """A question's or a plan's words: ``text`` is the JSON ``{"question": …, "options": …}``
    (``{"response": …}``) in current versions, the words alone in older ones."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(value, dict):
        words = value.get(name)
        if not isinstance(words, str):
            raise Skip("bad_field")
        return words
    return text


def _request_cwd(text: object) -> str | None:
    """The working directory a request's environment details name (``text``: the JSON
    ``{"request": …}`` of an ``api_req_started`` message)."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
    request = value.get("request") if isinstance(value, dict) else None
    found = _CWD.search(request) if isinstance(request, str) else None
    return found.group(1) if found else None
