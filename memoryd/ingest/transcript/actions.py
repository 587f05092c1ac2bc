"""What happened in a session, in order: messages *and* tool calls, for the outcome judge.

The turn parsers of this package keep what people said and drop tool calls; judging whether an
agent followed a memory needs the calls too (memoryd.sessions.outcomes). :class:`StepReader`
reads a transcript line by line into :class:`Step` records: the genuine user messages and the
assistant's prose (exactly the turns the format's turn parser keeps, with their record ids), and
every tool call the assistant made, with what it does in a harness-neutral form: the shell
command lines it runs, the paths it writes and reads, and the text it adds to files.

Pure parsing: no file I/O, no database; ``feed`` never raises (an odd line yields nothing).

Tool calls by format
--------------------

``claude-code``
    ``assistant`` records' ``tool_use`` blocks (``id``, ``name``, ``input``): ``Bash``
    (``command``), ``Edit`` (``file_path``, ``new_string``), ``MultiEdit`` (``edits[]``),
    ``Write`` (``file_path``, ``content``), ``NotebookEdit`` (``notebook_path``,
    ``new_source``), ``Read``/``Grep``/``Glob``/``LS`` (paths read), MCP and other tools (their
    input as text). Subagent (sidechain) records are marked.

``codex``
    ``response_item`` payloads: ``function_call`` (``name``, ``arguments`` a JSON string,
    ``call_id``): ``shell`` (``command`` an argv list, ``["bash", "-lc", "…"]``),
    ``shell_command`` / ``exec_command`` (``command`` / ``cmd`` a string), ``apply_patch``
    (``input``); ``custom_tool_call`` (``apply_patch`` with the raw patch as ``input``);
    ``local_shell_call`` (``action.command`` an argv list). A shell command that is
    ``apply_patch`` with a patch argument is read as the patch.

``generic``
    An assistant record's ``tool_calls`` list (OpenAI style ``{"id", "function": {"name",
    "arguments"}}`` or ``{"id", "name", "input"|"arguments"}``), and content blocks of type
    ``tool_use`` / ``toolCall`` / ``tool_call`` (pi: ``{"type": "toolCall", "id", "name",
    "arguments"}``), in the generic line format or in pi's ``message`` entries. A record with
    ``role: "tool"`` and a ``name``/``input`` is read as a call too.

A call's input is read by its keys whatever the tool is named: ``command``/``cmd``/``script``
(a string or an argv list) are shell commands; ``file_path``/``path``/``notebook_path``/
``filename`` are the path it writes when the tool edits or writes (its name holds edit, write,
create, patch, replace or insert) and reads otherwise; ``new_string``/``content``/``newText``/
``new_source``/``text`` are the text it adds; a patch (``*** Begin Patch`` or a unified diff)
gives its files and its ``+`` lines.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any

from memoryd.ingest.transcript import make_parser
from memoryd.ingest.transcript.lines import line_id, parse_timestamp

#: A tool whose name holds one of these writes the path it names.
_WRITING = re.compile(r"edit|write|create|patch|replace|insert|str_replace|notebook", re.I)
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file")
_TEXT_KEYS = ("new_string", "content", "newText", "new_text", "new_source", "text", "file_text",
              "new_str")
_COMMAND_KEYS = ("command", "cmd", "script")
_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash")
#: A patch's file headers: Codex's ``*** Update File: p`` and a unified diff's ``+++ b/p``.
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$"
                         r"|^\+\+\+ (?:b/)?(.+)$", re.M)
#: Text added to a file by a patch: its ``+`` lines (not the ``+++`` header).
_PATCH_ADDED = re.compile(r"^\+(?!\+\+ )(.*)$", re.M)
_MAX_TEXT = 20_000  # of a call's input kept as text (enough to match in; bounded memory)
#: Claude Code's tool result when the user rejects a call.
_REJECTED = re.compile(r"^The user doesn't want to proceed|tool use was rejected", re.I)


@dataclass(frozen=True)
class Step:
    """One thing that happened in a session: a user message, the assistant's prose, or a tool
    call (``role`` ``"tool"``) with what it does."""

    record_id: str
    role: str  # 'user' | 'assistant' | 'tool' | 'rejected' (a call the user refused)
    timestamp: float | None
    text: str = ""  # what was said; for a tool call, its input as text
    tool: str = ""  # the tool's name as the harness gives it
    call_id: str = ""
    commands: tuple[str, ...] = ()  # shell command lines it runs
    writes: tuple[str, ...] = ()  # paths it writes or edits
    reads: tuple[str, ...] = ()  # paths it reads or searches
    added: str = ""  # text it puts into files
    sidechain: bool = False


def _as_object(value: object) -> dict[str, Any]:
    """A call's input: an object, or a JSON string of one (Codex's ``arguments``)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return {"input": value}
        return decoded if isinstance(decoded, dict) else {"input": value}
    return {}


def _argv_command(argv: list[Any]) -> str:
    """An argv list as one command line: ``["bash", "-lc", "x"]`` is ``x``."""
    words = [str(w) for w in argv]
    if len(words) >= 3 and words[0] in _SHELLS and words[1] in ("-c", "-lc", "-ic", "-l"):
        return words[-1]
    return " ".join(w if re.fullmatch(r"[\w@%+=:,./-]+", w) else "'" + w.replace("'", "'\\''")
                    + "'" for w in words)


def _patch(text: str) -> tuple[tuple[str, ...], str]:
    """The files a patch writes and the text it adds."""
    files = tuple(dict.fromkeys(next(g for g in m.groups() if g).strip()
                                for m in _PATCH_FILE.finditer(text)))
    added = "\n".join(m.group(1) for m in _PATCH_ADDED.finditer(text))
    return files, added


def _is_patch(text: str) -> bool:
    return text.lstrip().startswith(("*** Begin Patch", "--- ", "diff --git"))


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content[:2000]
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict)
                         and isinstance(b.get("text"), str))[:2000]
    return ""


def tool_step(record_id: str, timestamp: float | None, name: str, raw_input: object,
              call_id: str = "", sidechain: bool = False) -> Step:
    """A tool call as a :class:`Step`, read by its input's keys (see the module docstring)."""
    data = _as_object(raw_input)
    commands: list[str] = []
    writes: list[str] = []
    reads: list[str] = []
    added: list[str] = []
    writing = bool(_WRITING.search(name))
    for key in _COMMAND_KEYS:
        value = data.get(key)
        if isinstance(value, list) and value:
            command = _argv_command(value)
        elif isinstance(value, str) and value.strip():
            command = value
        else:
            continue
        if command.startswith("apply_patch") and "*** Begin Patch" in command:
            files, text = _patch(command)
            writes.extend(files)
            added.append(text)
        else:
            commands.append(command)
        break
    for key in _PATH_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value:
            (writes if writing else reads).append(value)
    if isinstance(data.get("paths"), list):
        reads.extend(p for p in data["paths"] if isinstance(p, str))
    if writing:
        for key in _TEXT_KEYS:
            value = data.get(key)
            if isinstance(value, str):
                added.append(value)
        for edit in data.get("edits") or []:
            if isinstance(edit, dict):
                for key in _TEXT_KEYS:
                    if isinstance(edit.get(key), str):
                        added.append(edit[key])
    patch = data.get("input") if isinstance(data.get("input"), str) else data.get("patch")
    if isinstance(patch, str) and _is_patch(patch):
        files, text = _patch(patch)
        writes.extend(files)
        added.append(text)
    try:
        shown = json.dumps(data, ensure_ascii=False)[:_MAX_TEXT]
    except (TypeError, ValueError):
        shown = str(data)[:_MAX_TEXT]
    return Step(record_id, "tool", timestamp, shown, name, call_id, tuple(commands),
                tuple(dict.fromkeys(writes)), tuple(dict.fromkeys(reads)),
                "\n".join(added)[:_MAX_TEXT], sidechain)


class StepReader:
    """A stateful reader of one transcript (``harness``: ``claude-code``, ``codex`` or
    ``generic``), fed line by line."""

    def __init__(self, harness: str) -> None:
        self.harness = harness if harness in ("claude-code", "codex") else "generic"
        self.turns = make_parser(self.harness)

    def feed(self, line: str) -> list[Step]:
        line = line.strip()
        if not line:
            return []
        out = [Step(t.record_id, t.role, t.timestamp, t.text, sidechain=t.sidechain_agent
                    is not None) for t in self.turns.feed(line) if t.role in ("user", "assistant")]
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return out
        if isinstance(record, dict):
            # an odd record: its calls are not read, the rest goes on
            with contextlib.suppress(TypeError, AttributeError, KeyError, ValueError):
                out.extend(self._calls(record, line))
        return out

    def flush(self) -> list[Step]:
        return [Step(t.record_id, t.role, t.timestamp, t.text,
                     sidechain=t.sidechain_agent is not None)
                for t in self.turns.flush() if t.role in ("user", "assistant")]

    def _calls(self, record: dict[str, Any], line: str) -> list[Step]:
        if self.harness == "claude-code":
            return self._claude_code(record, line)
        if self.harness == "codex":
            return self._codex(record, line)
        return self._generic(record, line)

    def _claude_code(self, record: dict[str, Any], line: str) -> list[Step]:
        message = record.get("message")
        if record.get("type") not in ("assistant", "user") or not isinstance(message, dict):
            return []
        content = message.get("content")
        if not isinstance(content, list):
            return []
        record_id = record.get("uuid") if isinstance(record.get("uuid"), str) else line_id(line)
        ts = parse_timestamp(record.get("timestamp"))
        if record["type"] == "user":  # a call the user rejected: a correction of it
            return [Step(record_id, "rejected", ts, _result_text(block.get("content")),
                         call_id=str(block.get("tool_use_id") or ""))
                    for block in content if isinstance(block, dict)
                    and block.get("type") == "tool_result"
                    and _REJECTED.search(_result_text(block.get("content")))]
        sidechain = bool(record.get("isSidechain")) or isinstance(record.get("agentId"), str)
        return [tool_step(record_id, ts, str(block.get("name") or ""), block.get("input"),
                          str(block.get("id") or ""), sidechain)
                for block in content
                if isinstance(block, dict) and block.get("type") == "tool_use"]

    def _codex(self, record: dict[str, Any], line: str) -> list[Step]:
        payload = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(payload, dict):
            return []
        kind = payload.get("type")
        ts = parse_timestamp(record.get("timestamp"))
        call_id = str(payload.get("call_id") or payload.get("id") or "")
        if kind == "function_call":
            return [tool_step(line_id(line), ts, str(payload.get("name") or ""),
                              payload.get("arguments"), call_id)]
        if kind == "custom_tool_call":
            raw = payload.get("input")
            return [tool_step(line_id(line), ts, str(payload.get("name") or ""),
                              {"input": raw} if isinstance(raw, str) else raw, call_id)]
        if kind == "local_shell_call":
            action = payload.get("action")
            return [tool_step(line_id(line), ts, "local_shell",
                              action if isinstance(action, dict) else {}, call_id)]
        return []

    def _generic(self, record: dict[str, Any], line: str) -> list[Step]:
        ts = parse_timestamp(record.get("timestamp"))
        message = record
        if record.get("type") == "message" and isinstance(record.get("message"), dict):
            message = record["message"]  # pi
            ts = ts if ts is not None else parse_timestamp(message.get("timestamp"))
        own = record.get("id") if isinstance(record.get("id"), str) else None
        record_id = own if own and len(own) >= 16 else line_id(line)
        role = message.get("role")
        if role == "tool" and (message.get("name") or message.get("input")):
            return [tool_step(record_id, ts, str(message.get("name") or ""),
                              message.get("input") or message.get("arguments"),
                              str(message.get("tool_call_id") or ""))]
        if role != "assistant":
            return []
        steps = []
        for call in message.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            steps.append(tool_step(record_id, ts, str(function.get("name") or ""),
                                   function.get("arguments", function.get("input")),
                                   str(call.get("id") or "")))
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "toolCall",
                                                                 "tool_call"):
                steps.append(tool_step(record_id, ts, str(block.get("name") or ""),
                                       block.get("input", block.get("arguments")),
                                       str(block.get("id") or "")))
        return steps


def read_steps(lines: list[str], harness: str) -> list[Step]:
    """Every step of a transcript's lines, in order."""
    reader = StepReader(harness)
    steps: list[Step] = []
    for line in lines:
        steps.extend(reader.feed(line))
    steps.extend(reader.flush())
    return steps
