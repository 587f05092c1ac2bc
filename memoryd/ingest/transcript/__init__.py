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
    ``session_id``, ``id`` and ``cwd`` are optional. The record id is the ``id`` when it is a
    long one (16 characters or more: a UUID), ``f"{session_id}:{id}"`` for a shorter one (unique
    only within its session, such as the message's number), and :func:`line_id` of the line
    without either.

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

from memoryd_client.wire import INJECTION_MARKER

from memoryd.ingest.transcript.chunks import MAX_CHUNK_CHARS, chunk_exchanges
from memoryd.ingest.transcript.claude_code import CLAUDE_CODE_WRAPPERS, ClaudeCodeParser
from memoryd.ingest.transcript.codex import CODEX_INJECTED_PREFIXES, CodexParser
from memoryd.ingest.transcript.generic import GenericParser
from memoryd.ingest.transcript.lines import (
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

_PARSERS: dict[str, type[LineParser]] = {
    "claude-code": ClaudeCodeParser,
    "codex": CodexParser,
    "generic": GenericParser,
}


def make_parser(fmt: str) -> TranscriptParser:
    """A fresh parser for ``fmt``: ``"claude-code"``, ``"codex"`` or ``"generic"``."""
    try:
        parser_class = _PARSERS[fmt]
    except KeyError:
        known = ", ".join(sorted(_PARSERS))
        raise ValueError(f"unknown transcript format {fmt!r} (expected one of: {known})") from None
    return parser_class()
