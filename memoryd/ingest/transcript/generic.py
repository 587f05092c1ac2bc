"""The generic one-message-per-line format, and pi session files (see the package
docstring)."""

from __future__ import annotations

from collections.abc import Sequence
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
from memoryd.text import speaker_name

#: An ``id`` this long (a UUID, a ULID, a hash) is taken as unique across sessions; a shorter
#: one only within its session.
GLOBAL_ID_CHARS = 16
#: Other names of the two roles: LangChain's messages ("human", "ai"), Gemini's API ("model").
ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant"}
#: Roles whose messages are no one's words: instructions (skipped as meta), tool output and
#: what a harness logs beside a conversation (left out).
META_ROLES = frozenset({"system", "developer"})
TOOL_ROLES = frozenset({"tool", "function", "ipython", "observation", "event", "log", "info",
                        "debug", "warning", "error", "status", "data", "metadata", "context"})
#: Where a message's time is: "timestamp", else the names chat exports give it.
TIME_FIELDS = ("timestamp", "time", "date", "created_at", "create_time", "ts")
#: Where its session is: "session_id", else the names exports and frameworks give it (a file
#: of many chats says which each line is of; without any, the file is the session).
SESSION_FIELDS = ("session_id", "sessionId", "conversation_id", "thread_id", "chat_id",
                  "session")
#: pi's records besides its messages (integrations.md §4.1); a later one has a ``parentId``.
PI_RECORDS = frozenset({"model_change", "thinking_level_change", "branch_summary", "custom",
                        "custom_message", "label", "session_info"})
#: Content blocks that hold text: chat messages' ("text"), OpenAI's Responses API's
#: ("input_text" of a user, "output_text" of a model).
TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})


def _session_text(value: object) -> str | None:
    """A session named by text or by a number (a chat's number, as an id's)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text_or_none(value)


def _number(record_id: str) -> int:
    """A record id made of a line's hash (32 hex digits) as a number of its first 64 bits;
    -1 for any other."""
    try:
        return int(record_id[:16], 16)
    except ValueError:
        return -1


class GenericParser(LineParser):
    """The generic one-message-per-line format, and pi session files (see the module
    docstring). ``harness`` names the agent in the session registry. A file whose lines name
    no session is one (memoryd.ingest.transcript.make_parser names it by the file): its
    chunks have neighbours, it is in the registry, its end is extracted."""

    wants_known = True

    def __init__(self, *, harness: str = "generic", max_line_chars: int = MAX_LINE_CHARS) -> None:
        super().__init__(max_line_chars=max_line_chars)
        self.harness = harness
        #: the record ids made of a line's hash so far (as 64-bit numbers: a log of 100,000
        #: such lines keeps ~6 MB), and the last record id of any kind
        self._hashed: set[int] = set()
        self._previous = ""
        #: each session its lines named (a file of many chats), or the file's: when it
        #: started and was last seen, and its user messages (the registry is told each)
        self.sessions: dict[str, tuple[float | None, float | None, int]] = {}
        #: session id → the speaker named first by a line's role (that chat's user side)
        self._first_named: dict[str | None, str] = {}
        #: the session the lines named (not the file's): a short record id is unique within
        #: it (record ids stay what they were before files named sessions)
        self._named_session: str | None = None
        #: the file's own session (memoryd.ingest.transcript.make_parser): a session a line
        #: names by a short id (a chat's number) is one of this file's
        self.file_scope: str | None = None

    def resume(self, turns: Sequence[Turn], known: set[str] | None = None) -> None:
        """The exchange left open before a restart: its user side's speaker stays on the
        user's side (the first name read after the restart could be the other one's); the
        last record id and those ``known`` (the file's chunks'), so that a line said again
        after the restart gets the id a first read of the file gives it."""
        for turn in turns:
            if turn.role == "user" and turn.speaker:
                self._first_named.setdefault(turn.session_id, turn.speaker)
        for record_id in (*(known or ()), *(turn.record_id for turn in turns)):
            if len(record_id) == 32:
                self._hashed.add(_number(record_id))
        if turns:
            self._previous = turns[-1].record_id

    def _handle(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        if "role" in record:
            self._generic(record, line, out)
            return
        kind = record.get("type")
        if kind is None:  # neither a message of this format nor a record of pi's: say so
            raise Skip("bad_field")
        timestamp = parse_timestamp(record.get("timestamp"))
        self._note_time(timestamp)
        if kind == "session":  # pi header
            self._named_session = text_or_none(record.get("id")) or self._named_session
            self.session_id = self._named_session or self.session_id
            self.cwd = text_or_none(record.get("cwd")) or self.cwd
        elif kind == "message":
            message = object_field(record, "message")
            if timestamp is None:
                timestamp = parse_timestamp(message.get("timestamp"))
                self._note_time(timestamp)
            record_id = self._pi_record_id(record, line)
            self._message(message.get("role"), message.get("content"), record_id, timestamp, out)
        elif kind == "compaction":
            summary = record.get("summary")
            if not isinstance(summary, str):
                raise Skip("bad_field")
            record_id = self._pi_record_id(record, line)
            self._message("summary", summary, record_id, timestamp, out)
        elif (isinstance(kind, str) and kind in PI_RECORDS) or "parentId" in record:
            raise Skip("ignored")  # pi's other records (model changes, labels, …)
        else:  # another agent's line (Claude Code's "user", "assistant"): not this format
            raise Skip("bad_field")

    def _generic(self, record: dict[str, Any], line: str, out: list[Turn]) -> None:
        sessions = {key: _session_text(record.get(key)) for key in SESSION_FIELDS}
        # a short record id is made unique by session_id alone, as it was before the other
        # names were read: a log read again (memoryd reindex) keeps its record ids
        self._named_session = self._scoped(sessions["session_id"]) or self._named_session
        self.session_id = self._scoped(next((s for s in sessions.values() if s), None)) \
            or self.session_id
        self.cwd = text_or_none(record.get("cwd")) or self.cwd
        timestamp = parse_timestamp(next(
            (record[key] for key in TIME_FIELDS if record.get(key) is not None), None))
        self._note_time(timestamp)
        record_id = record.get("id")
        if isinstance(record_id, int) and not isinstance(record_id, bool):
            record_id = str(record_id)
        elif record_id is not None and (not isinstance(record_id, str) or not record_id):
            raise Skip("bad_field")
        # who spoke: "name" as OpenAI's chat messages give it, "speaker" as chat logs often do
        name = record.get("name", record.get("speaker"))
        if name is not None and not isinstance(name, str):
            raise Skip("bad_field")
        speaker = speaker_name(name) if name else None
        role = record.get("role")
        if not isinstance(role, str):
            raise Skip("bad_field")
        role, named = self._role(role)
        self._message(role, record.get("content"), self._record_id(record_id, line),
                      timestamp, out, speaker or named)

    def _scoped(self, session: str | None) -> str | None:
        """A session a line names: a long id (a UUID) as it is, unique across files; a short
        one (a chat's number: two exports' "1", two agents' logs) as one of this file's,
        ``<file's session>:<id>``, so that no file's chat replaces another's."""
        if session is None or len(session) >= GLOBAL_ID_CHARS or self.file_scope is None:
            return session
        return f"{self.file_scope}:{session}"

    def _role(self, given: str) -> tuple[str, str | None]:
        """A generic line's role as :meth:`_message` takes it, with the speaker it names: the
        two roles under any of their names and in any case; a role that is a person's name
        (a chat log between people: ``{"role": "Caroline", …}``) is that person's line, on
        the user's side for the first name of its session and the assistant's for the
        others, so that a chunk pairs the two sides of the chat as it does a user and an
        agent. Instructions are skipped as ``meta``; a tool's output and a harness's own log
        lines as ``ignored``."""
        role = given.strip().lower()
        role = ROLE_ALIASES.get(role, role)
        if role in ("user", "assistant", "summary"):
            return role, None
        if role in META_ROLES:
            raise Skip("meta")
        named = speaker_name(given)
        if role in TOOL_ROLES or "tool" in role or "function" in role or named is None:
            raise Skip("ignored")  # a tool's output ("tool_result"), a harness's log, no name
        first = self._first_named.setdefault(self.session_id, named)
        return ("user" if named == first else "assistant"), named

    def _pi_record_id(self, record: dict[str, Any], line: str) -> str:
        return self._record_id(text_or_none(record.get("id")), line)

    def _record_id(self, given: str | None, line: str) -> str:
        """A record id unique across transcripts: a long ``given`` one (a UUID) as it is, a
        short one within its session (a message's number, or pi's 8 hex digits: taken as it
        was, the first exchange of one transcript replaced the first of every other), else
        the line's hash; a line said again in the file (a user's "go on", "yes"; a chat
        exported with no ids), its hash chained to the record before it, so that its
        exchange is one of its own, not the first one's replacement. Each is what a first
        read of the file up to that line gives (a log read again keeps its ids)."""
        if given is not None and len(given) >= GLOBAL_ID_CHARS:
            return given
        if given is not None and self._named_session is not None:
            return f"{self._named_session}:{given}"
        record_id = line_id(line)
        while _number(record_id) in self._hashed:  # said before: told apart by what preceded
            record_id = line_id(f"{self._previous}\n{record_id}")
        self._hashed.add(_number(record_id))
        return record_id

    def _message(
        self,
        role: object,
        content: object,
        record_id: str,
        timestamp: float | None,
        out: list[Turn],
        speaker: str | None = None,
    ) -> None:
        if not isinstance(role, str):
            raise Skip("bad_field")
        role = ROLE_ALIASES.get(role, role)
        if role not in ("user", "assistant", "summary"):
            raise Skip("meta" if role in META_ROLES else "ignored")
        text = content_text(content, TEXT_BLOCKS, loose=True)
        check_text(text)
        self._previous = record_id
        if role == "user":
            self.user_messages += 1
        if self.session_id is not None:
            started, last_seen, users = self.sessions.get(self.session_id, (None, None, 0))
            if timestamp is not None:
                started = timestamp if started is None else min(started, timestamp)
                last_seen = timestamp if last_seen is None else max(last_seen, timestamp)
            self.sessions[self.session_id] = (started, last_seen, users + (role == "user"))
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
                speaker=speaker,
            )
        )
