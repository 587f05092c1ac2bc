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
    One JSON object per line; ``type`` says what it is (docs/sources.md).

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

``codex`` — ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (docs/sources.md).
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
    - After a restart the rollout is read again from its start up to where the tailer stopped
      (``needs_context``, memoryd.ingest.context.replay): ``codex resume`` appends to the
      same file, and its new lines need the ``session_meta`` at its top.

``gemini`` — Gemini CLI, ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` (and subagent chats
``chats/<parent session>/<session>.jsonl``; docs/harnesses.md).

    - The first line is the session's metadata (``sessionId``, ``projectHash``, ``startTime``,
      ``kind``): it gives ``session_id`` and the start time; ``kind: "subagent"`` marks the
      turns with ``sidechain_agent`` ``"subagent"``. The file names no working directory: the
      project root Gemini CLI writes in ``<project>/.project_root`` is passed in as ``cwd``
      (memoryd.ingest.context).
    - Message lines have ``id`` (a UUID: the record id), ``timestamp``, ``type`` and ``content``
      (a Gemini ``PartListUnion``: a string, a ``{"text"}`` part, or a list of either). ``user``
      is kept; ``gemini`` is the assistant (text parts only: ``thought`` parts, tool calls and
      their results are dropped); ``info`` / ``error`` / ``warning`` are the CLI's own (``meta``).
    - A message id appended again (its tokens or tool calls filled in) is ``ignored``: the first
      text is kept. ``{"$set": …}`` metadata updates and ``{"$rewindTo": id}`` are ``ignored``
      (a rewind takes messages out of Gemini's context, not out of what was said).
    - Legacy chats, ``chats/session-*.json``, are one document (the metadata's fields and
      ``messages``, a list of the same messages) that Gemini CLI wrote whole on every message:
      a *document* transcript (:func:`is_document`), read whole each time it changes, its
      messages fed to the parser as the lines above (:func:`document_lines`); record ids
      dedupe what was read before.

``copilot`` — GitHub Copilot CLI, ``$COPILOT_HOME/session-state/<session>/events.jsonl``
(``~/.copilot``; older versions: ``session-state/<session>.jsonl``; docs/harnesses.md).

    - Each line is an event ``{"type", "id", "timestamp", "parentId", "data"}``. The first,
      ``session.start``, gives ``session_id`` (``data.sessionId``), the start time and, in
      newer versions, the directory (``data.context.cwd``); for older ones the ``cwd`` of the
      ``workspace.yaml`` beside the file is passed in (memoryd.ingest.context).
    - ``user.message`` is kept (``data.content``: what the user typed); ``assistant.message``
      is the assistant's prose (``data.content``; one of tool calls alone, with an empty
      content, is ``tool``). The record id is the event's ``id``.
    - ``tool.*``, ``assistant.reasoning`` and subagents' events are ``tool``; ``session.*``
      (resume, info, errors, truncation, compaction, model changes), turn boundaries, hooks
      and ``abort`` are ``meta``; anything else ``ignored``.

``cline`` — Cline's and Roo Code's task logs, ``<storage>/tasks/<task>/ui_messages.json`` (the
VS Code extension's global storage, of any editor; the Cline CLI's ``~/.cline/data``;
docs/harnesses.md).

    - The file is one JSON array of messages, written whole on every change: a *document*
      transcript (:func:`is_document`), its messages fed to the parser as lines
      (:func:`~memoryd.ingest.transcript.cline.task_lines`) after a header naming the task:
      the directory's name, the session's id. A message is ``{"ts", "type": "say" | "ask",
      "say" | "ask": kind, "text", "partial"?}``; the record id is
      ``f"{task}:{ts}:{kind}"`` (``ts``, epoch milliseconds, is how Cline itself tells its
      messages apart).
    - The user's: ``say`` ``task`` (the task as typed), ``user_feedback`` (a reply); Roo Code
      and older Cline versions say the task as ``text``, before the first request to the
      model. The assistant's: ``say`` ``text`` after a request (its prose),
      ``completion_result`` (what it did), and its questions, ``ask`` ``followup``
      (``{"question"}``), ``plan_mode_respond`` / ``act_mode_respond`` (``{"response"}``).
    - Tool calls, commands and their output, reasoning, browser and MCP use, checkpoints are
      ``tool``; requests (``api_req_*``), errors, resumes and the like are ``meta``; a
      message still streaming (``partial: true``) is ``ignored``: it is read whole when it is
      written again.
    - The project is the task's ``cwdOnTaskInitialization`` in the task history beside the
      tasks (``state/taskHistory.json``, memoryd.ingest.context); for versions without one,
      the directory the first request's environment details name (``# Current Working
      Directory (/path) Files``; Roo Code's ``# Current Workspace Directory``).

``aider`` — Aider's ``.aider.chat.history.md`` in a project root: markdown, not JSON. Each
    launch appends ``# aider chat started at YYYY-MM-DD HH:MM:SS`` (a new session, whose id is
    a hash of the project and that time; the time, local and taken as UTC, dates its turns);
    the user's input lines start with ``#### ``, Aider's own output is a ``> `` blockquote
    (``tool``), and other lines are the model's answer (a fenced code block in it is the
    answer's, whatever its lines start with: an edit's ``>>>>>>> REPLACE``). Blank lines are
    not significant. Slash
    commands are ``meta`` except ``/ask``, ``/code`` and ``/architect``, whose argument is the
    prompt. Record ids are ``f"{session_id}:{n}"`` for the n-th user turn of a session (and
    ``…:{n}a{k}`` for the answers after it). The project is the file's directory.

``generic`` — for other harnesses, one message per line::

      {"role": "user", "content": "…", "timestamp": "2026-06-01T10:00:00Z",
       "session_id": "…", "id": "…", "cwd": "…"}

    ``role`` is ``user``, ``assistant`` or ``summary`` (kept; ``human``, ``ai`` and ``model``
    are taken for the first two, in any case), ``system`` / ``developer`` (meta) or ``tool``,
    ``function``, ``event``, ``log`` … (dropped: ``generic.TOOL_ROLES``); any other role
    names the person who spoke (a chat log between people), on the user's side for the first
    name of its session and the assistant's for the others; a line without ``role`` (nor a
    pi ``type``) is malformed (``bad_field``). ``name`` (or ``speaker``) names the speaker
    too. ``content`` is a string or a list of ``{"type": "text", "text": …}`` blocks
    (``input_text`` and ``output_text`` too, as OpenAI's Responses API writes them; other
    block types are ignored). ``timestamp`` (or ``date``, ``created_at``, … as exports name
    it: ISO-8601, with a zone named UTC or GMT too, epoch seconds, milliseconds, microseconds
    or nanoseconds, or a date as people write it,
    :func:`~memoryd.ingest.transcript.parser_base.parse_timestamp`), ``session_id`` (text or
    a number), ``id`` and ``cwd`` are optional. The record id is the ``id`` when it is a
    long one (16 characters or more: a UUID), ``f"{session_id}:{id}"`` for a shorter one (unique
    only within its session, such as the message's number), and :func:`line_id` of the line
    without either.

    The generic parser also reads pi coding agent session files (``badlogic/pi-mono``, format
    v3): the ``session`` header gives ``session_id``, ``cwd`` and the start
    time; ``message`` entries whose ``message.role`` is ``user`` or ``assistant`` are kept (text
    blocks only, so ``thinking`` and ``toolCall`` blocks are dropped); ``compaction`` entries
    become ``summary`` turns. pi entry ids are 8 hex digits, unique only within a session, so the
    record id is ``f"{session_id}:{id}"``. Only the header names the session, so a file that
    begins with one is read again from its start after a restart
    (memoryd.ingest.context.reads_from_start).

Every format: content containing memoryd's own :data:`INJECTION_MARKER` is dropped, so injected
memory never feeds back into memory.

Defensive parsing
-----------------

``feed`` never raises. A line that is blank is ignored; any other line that yields no turn and
is not used for session metadata is counted in the parser's ``skipped`` dict under one reason:

=================  =================================================================================
``too_long``       longer than ``max_line_chars`` (:data:`MAX_LINE_CHARS`) — not even decoded
``invalid_json``   not JSON (including JSON nested too deeply to decode)
``not_object``     JSON, but not an object
``bad_field``      a field the parser needs has the wrong type (``message`` not an object,
                   ``content`` neither string nor list, ``uuid`` not a string, a flag not a
                   bool, …)
``ignored``        a record kind memoryd never indexes (progress, attachments, system events,
                   titles, telemetry, unknown types, streams that repeat another one)
``tool``           tool calls, tool results, model reasoning
``meta``           harness-generated messages (``isMeta``, non-human ``origin``, synthetic assistant
                   messages, ``developer`` / ``system`` roles, injected Codex context)
``wrapper``        a Claude Code harness wrapper (slash commands, shell mode, reminders, …)
``marker``         carries :data:`INJECTION_MARKER`
``empty``          a message with no text left
``bad_timestamp``  the line is read, but none of its times is in a form memoryd reads
                   (:func:`~memoryd.ingest.transcript.parser_base.parse_timestamp`): its turn
                   has no time (its exchange takes another turn's, else when it was read)
=================  =================================================================================

Optional context fields (timestamps, session ids, cwd) are read leniently: a value of the wrong
type or an unparseable timestamp counts as absent rather than skipping the line (a line none
of whose times could be read is counted all the same, as ``bad_timestamp``). An unexpected
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
import os

from memoryd_client.wire import INJECTION_MARKER

from memoryd.ingest.transcript.aider import AiderParser
from memoryd.ingest.transcript.chunks import MAX_CHUNK_CHARS, chunk_exchanges
from memoryd.ingest.transcript.claude_code import CLAUDE_CODE_WRAPPERS, ClaudeCodeParser
from memoryd.ingest.transcript.cline import ClineParser, task_lines
from memoryd.ingest.transcript.codex import CODEX_INJECTED_PREFIXES, CodexParser
from memoryd.ingest.transcript.copilot import CopilotParser
from memoryd.ingest.transcript.gemini import GeminiParser, legacy_chat_lines
from memoryd.ingest.transcript.generic import GenericParser
from memoryd.ingest.transcript.parser_base import (
    MAX_LINE_CHARS,
    Chunk,
    LineParser,
    TranscriptParser,
    Turn,
    line_id,
)

__all__ = [
    "CLAUDE_CODE_WRAPPERS",
    "CODEX_INJECTED_PREFIXES",
    "INJECTION_MARKER",
    "MAX_CHUNK_CHARS",
    "MAX_LINE_CHARS",
    "AiderParser",
    "Chunk",
    "ClaudeCodeParser",
    "ClineParser",
    "CodexParser",
    "CopilotParser",
    "GeminiParser",
    "GenericParser",
    "TranscriptParser",
    "Turn",
    "chunk_exchanges",
    "document_lines",
    "is_document",
    "line_id",
    "make_parser",
    "needs_context",
    "text_lines",
]

_PARSERS: dict[str, type[LineParser | AiderParser]] = {
    "claude-code": ClaudeCodeParser,
    "codex": CodexParser,
    "gemini": GeminiParser,
    "copilot": CopilotParser,
    "cline": ClineParser,
    "aider": AiderParser,
    "generic": GenericParser,
}


def make_parser(fmt: str, *, cwd: str | None = None, path: str | None = None
                ) -> TranscriptParser:
    """A fresh parser for ``fmt`` (memoryd.sources.TRANSCRIPT_FORMATS). ``cwd``: the project
    the file's path names, for the formats whose records do not (``takes_cwd``); ``path``:
    the file, which is the session of a generic log whose lines name none, and the scope of
    a session its lines name by a short id (GenericParser.file_scope)."""
    try:
        parser_class = _PARSERS[fmt]
    except KeyError:
        known = ", ".join(sorted(_PARSERS))
        raise ValueError(f"unknown transcript format {fmt!r} (expected one of: {known})") from None
    parser = parser_class()
    if cwd is not None and getattr(parser_class, "takes_cwd", False):
        parser.cwd = cwd
    if path is not None and isinstance(parser, GenericParser):
        parser.session_id = parser.file_scope = file_session(path)
    return parser


def file_session(path: str) -> str:
    """The session of a transcript whose lines name none: the file's name and a digest of its
    path (two folders' ``chat.jsonl`` are two sessions), the same on every read."""
    name = os.path.basename(path).split(".")[0] or "session"
    return f"{name[:40]}-{hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def text_lines(fmt: str) -> bool:
    """Whether a file of ``fmt`` is lines of text, not of JSON (Aider's markdown): bytes that
    are not UTF-8 are replaced in it, not its line skipped (memoryd.ingest.tail)."""
    return bool(getattr(_PARSERS.get(fmt), "text_lines", False))


def needs_context(fmt: str) -> bool:
    """Whether a parser of ``fmt`` must read its file from the start to make sense of later
    lines (memoryd.ingest.context.replay)."""
    return bool(getattr(_PARSERS.get(fmt), "needs_context", False))


def is_document(fmt: str, path: str) -> bool:
    """Whether a transcript of ``fmt`` at ``path`` is one JSON document written whole each time
    (Gemini CLI's legacy ``.json`` chats, Cline's task logs) rather than lines appended: it is
    read whole, and its records fed to the parser as lines (:func:`document_lines`)."""
    return fmt == "cline" or (fmt == "gemini" and path.endswith(".json"))


def document_lines(fmt: str, text: str, path: str) -> list[str]:
    """The records of the document transcript at ``path`` (:func:`is_document`), ``text``, as
    the lines its format's parser reads; ValueError when ``text`` is not such a document."""
    if fmt == "cline":
        return task_lines(text, path)
    if fmt != "gemini":
        raise ValueError(f"format {fmt!r} has no document transcripts")
    return legacy_chat_lines(text)
