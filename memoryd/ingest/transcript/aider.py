"""Aider's ``.aider.chat.history.md`` (see the package docstring)."""

from __future__ import annotations

import hashlib
import logging
import re

from memoryd.ingest.transcript.parser_base import (
    MAX_LINE_CHARS,
    SessionCounts,
    Skip,
    Turn,
    check_text,
    parse_timestamp,
)

log = logging.getLogger(__name__)

AIDER_HEADER = re.compile(r"# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_USER = "####"
AIDER_FENCE = re.compile(r"\s*(`{3,}|~{3,})")
#: Slash commands whose argument is a prompt to the model; every other command (``/add``,
#: ``/run``, ``/undo``, …) works the tool, and is not part of the conversation.
AIDER_PROMPT_COMMANDS = ("/ask", "/code", "/architect")


class AiderParser(SessionCounts):
    """Markdown lines of an Aider chat history (see the module docstring).

    Not JSON: a turn is a run of lines, complete when a line of another kind (or the end of
    the input, :meth:`flush`) comes. Every launch of Aider appends a session to the same file,
    so one file holds many sessions."""

    harness = "aider"
    #: Read from the start of the file after a restart (memoryd.ingest.context.replay): the
    #: session a line belongs to is named only by the header above it.
    needs_context = True
    #: Lines of text, in the encoding Aider was told (``--encoding``): bytes that are not
    #: UTF-8 are replaced, the line kept (memoryd.ingest.tail).
    text_lines = True
    takes_cwd = True
    many_sessions = True

    def __init__(self, *, max_line_chars: int = MAX_LINE_CHARS) -> None:
        super().__init__(max_line_chars=max_line_chars)
        self._session_time: float | None = None
        self._role: str | None = None  # the turn being assembled
        self._lines: list[str] = []
        self._users = 0  # user turns in this session so far
        self._answers = 0  # assistant turns since the last user turn
        self._fence: str | None = None  # the fence of a code block the answer is in
        #: every session read so far: id → (started, last seen, user messages)
        self.sessions: dict[str, tuple[float | None, float | None, int]] = {}

    def feed(self, line: str) -> list[Turn]:
        out: list[Turn] = []
        try:
            self._feed(line.rstrip("\r\n"), out)
        except Exception:
            log.exception("Unexpected error parsing an aider chat history line.")
            self._count("internal_error")
        return out

    def flush(self) -> list[Turn]:
        out: list[Turn] = []
        self._finish(out)
        return out

    def _feed(self, line: str, out: list[Turn]) -> None:
        if not line.strip():
            return  # blank lines separate paragraphs; the tailer drops them
        if len(line) > self._max_line_chars:
            self._count("too_long")
            return
        if self._fence is not None:  # inside an answer's code block: ``>>>>>>> REPLACE`` too
            self._lines.append(line)
            if line.lstrip().startswith(self._fence):
                self._fence = None
            return
        header = AIDER_HEADER.match(line)
        if header is not None:
            self._finish(out)
            self._start_session(header.group(1))
            return
        if line == _USER or line.startswith(_USER + " "):
            if self._role != "user":
                self._finish(out)
                self._role = "user"
            self._lines.append(line[len(_USER) + 1:].rstrip())
        elif line.startswith(">"):
            self._finish(out)  # Aider's own output: files added, edits applied, commands run
            self._count("tool")
        else:
            if self._role != "assistant":
                self._finish(out)
                self._role = "assistant"
            self._lines.append(line)
            fence = AIDER_FENCE.match(line)
            if fence is not None:
                self._fence = fence.group(1)

    def _start_session(self, stamp: str) -> None:
        self._session_time = parse_timestamp(stamp.replace(" ", "T"))
        self._note_time(self._session_time)
        key = f"{self.cwd or ''}\0{stamp}".encode()
        self.session_id = "aider-" + hashlib.sha256(key).hexdigest()[:16]
        self._users = 0
        self._answers = 0
        self.sessions.setdefault(self.session_id, (self._session_time, self._session_time, 0))

    def _finish(self, out: list[Turn]) -> None:
        role, lines = self._role, self._lines
        self._role, self._lines, self._fence = None, [], None
        if role is None:
            return
        try:
            text = "\n".join(lines).strip()
            if role == "user":
                text = _prompt(text)
            check_text(text)
        except Skip as skip:
            self._count(skip.reason)
            return
        if self.session_id is None:  # a file that does not start with a header
            self._start_session("")
        assert self.session_id is not None  # _start_session sets it
        if role == "user":
            self._users += 1
            self._answers = 0
            self.user_messages += 1
            self.sessions[self.session_id] = (self._session_time, self._session_time,
                                              self._users)
            record_id = f"{self.session_id}:{self._users}"
        else:
            self._answers += 1
            record_id = f"{self.session_id}:{self._users}a{self._answers}"
        out.append(Turn(record_id=record_id, session_id=self.session_id, role=role, text=text,
                        timestamp=self._session_time, cwd=self.cwd, sidechain_agent=None,
                        message_id=None))


def _prompt(text: str) -> str:
    """A user turn's prompt: ``<blank>`` (Aider's mark for an empty input) is empty, a prompt
    command gives its argument, and any other slash command is not a prompt (``meta``)."""
    if text == "<blank>":
        return ""
    if not text.startswith("/"):
        return text
    command, _, rest = text.partition(" ")
    if command in AIDER_PROMPT_COMMANDS:
        return rest.strip()
    raise Skip("meta")
