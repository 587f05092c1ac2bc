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

``gemini``
    Gemini CLI chats: a ``gemini`` message's ``toolCalls`` (``{id, name, args, status,
    timestamp, result?}``; ``packages/core/src/services/chatRecordingTypes.ts`` of
    google-gemini/gemini-cli), written when the calls complete (``success``, ``error`` or
    ``cancelled``): ``run_shell_command`` (``command``), ``write_file`` (``file_path``,
    ``content``), ``replace`` (``file_path``, ``new_string``), ``read_file``
    (``absolute_path`` or ``file_path``), ``read_many_files`` (``paths``), … A message is
    written again each time a call is added to it, with the calls it had: a call is read once,
    by its id. A ``cancelled`` call (the user declined it, or stopped the turn) is followed by
    a ``rejected`` step, as Claude Code's refused calls are. The record id is the message's.

``copilot``
    Copilot CLI's ``tool.execution_start`` events (``data.toolCallId``, ``data.toolName``,
    ``data.arguments``): ``bash`` (``command``), ``edit`` (``path``, ``new_str``), ``create``
    (``path``, ``file_text``), ``view`` (``path``), …; the record id is the event's. A call
    the user declined ends in a ``tool.execution_complete`` that did not succeed, like a
    failed one: Copilot's log does not tell them apart, so none is read as refused.

``aider``
    Aider's chat history records what Aider did as ``> `` lines: ``> Running CMD`` for each
    shell command the model suggested and the user let run, ``> Applied edit to PATH`` for
    each file an answer's edit changed. The edit's text comes from the answer's fenced blocks
    before it (the ``REPLACE`` half of a ``SEARCH``/``REPLACE`` block, the ``+`` lines of a
    diff, a whole file's content), matched by the file named above or in the block. An
    answer's shell block that Aider offered to run and the user declined (``> Run shell
    command? … n``) is a call the user refused: its commands, each followed by a ``rejected``
    step. What the user runs (``/run``, ``!``) and an edit Aider did not apply are not the
    agent's doing and give no step. Aider writes no time per
    message, and its header's time is local: Aider's steps have no time (the whole session is
    after its injection). Record ids start with the session's id and ``:``, like its turns',
    since one file holds many sessions; a step's call id is its record id.

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
from memoryd.ingest.transcript.aider import AIDER_FENCE, AIDER_HEADER
from memoryd.ingest.transcript.parser_base import Turn, line_id, parse_timestamp

#: The formats whose tool calls are read as such; any other is read as ``generic``.
HARNESSES = ("claude-code", "codex", "gemini", "copilot", "cline", "aider", "generic")
#: A tool whose name holds one of these writes the path it names.
_WRITING = re.compile(r"edit|write|create|patch|replace|insert|str_replace|notebook", re.IGNORECASE)
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "absolute_path",
              "dir_path")
_TEXT_KEYS = ("new_string", "content", "newText", "new_text", "new_source", "text", "file_text",
              "new_str")
_COMMAND_KEYS = ("command", "cmd", "script")
_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash")
#: A patch's file headers: Codex's ``*** Update File: p`` and a unified diff's ``+++ b/p``.
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$"
                         r"|^\+\+\+ (?:b/)?(.+)$", re.MULTILINE)
#: Text added to a file by a patch: its ``+`` lines (not the ``+++`` header).
_PATCH_ADDED = re.compile(r"^\+(?!\+\+ )(.*)$", re.MULTILINE)
_MAX_TEXT = 20_000  # of a call's input kept as text (enough to match in; bounded memory)
#: Claude Code's tool result when the user rejects a call.
_REJECTED = re.compile(r"^The user doesn't want to proceed|tool use was rejected", re.IGNORECASE)


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


def _command(data: dict[str, Any]) -> str | None:
    """The command line a tool call runs: the first command key's value (an argv or a line)."""
    for key in _COMMAND_KEYS:
        value = data.get(key)
        if isinstance(value, list) and value:
            return _argv_command(value)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _written(data: dict[str, Any]) -> list[str]:
    """The text a writing tool call puts in a file: its own text keys, then its edits'."""
    added = [value for key in _TEXT_KEYS if isinstance(value := data.get(key), str)]
    for edit in data.get("edits") or []:
        if isinstance(edit, dict):
            added.extend(edit[key] for key in _TEXT_KEYS if isinstance(edit.get(key), str))
    return added


def tool_step(record_id: str, timestamp: float | None, name: str, raw_input: object,
              call_id: str = "", sidechain: bool = False) -> Step:
    """A tool call as a :class:`Step`, read by its input's keys (see the module docstring)."""
    data = _as_object(raw_input)
    commands: list[str] = []
    writes: list[str] = []
    reads: list[str] = []
    added: list[str] = []
    writing = bool(_WRITING.search(name))
    command = _command(data)
    if command is not None and command.startswith("apply_patch") \
            and "*** Begin Patch" in command:
        files, text = _patch(command)
        writes.extend(files)
        added.append(text)
    elif command is not None:
        commands.append(command)
    for key in _PATH_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value:
            (writes if writing else reads).append(value)
    if isinstance(data.get("paths"), list):
        reads.extend(p for p in data["paths"] if isinstance(p, str))
    if writing:
        added.extend(_written(data))
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
    """A stateful reader of one transcript (``harness``: one of :data:`HARNESSES`), fed line
    by line. ``cwd``: the project the file's path names, for the formats whose records do not
    (Aider's session ids are made from it)."""

    def __init__(self, harness: str, cwd: str | None = None) -> None:
        self.harness = harness if harness in HARNESSES else "generic"
        self.turns = make_parser(self.harness, cwd=cwd)
        self._calls_seen: set[str] = set()  # Gemini: calls read already, by id
        self._cancelled: set[str] = set()
        self._aider = _AiderActions() if self.harness == "aider" else None

    @property
    def many_sessions(self) -> bool:
        """One file holds many sessions (Aider): a session's steps are those whose record id
        starts with its id and ``:``."""
        return bool(getattr(self.turns, "many_sessions", False))

    def feed(self, line: str) -> list[Step]:
        if self._aider is not None:  # markdown, where a line's leading spaces count
            line = line.rstrip("\r\n")
            out = self._steps(self.turns.feed(line))
            session = self.turns.session_id or "aider"
            with contextlib.suppress(TypeError, ValueError, IndexError):
                out.extend(self._aider.feed(line, session))
            return out
        line = line.strip()
        if not line:
            return []
        out = self._steps(self.turns.feed(line))
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
        return self._steps(self.turns.flush())

    def _steps(self, turns: list[Turn]) -> list[Step]:
        untimed = self._aider is not None  # see the module docstring
        return [Step(t.record_id, t.role, None if untimed else t.timestamp, t.text,
                     sidechain=t.sidechain_agent is not None)
                for t in turns if t.role in ("user", "assistant")]

    def _calls(self, record: dict[str, Any], line: str) -> list[Step]:
        if self.harness == "claude-code":
            return self._claude_code(record, line)
        if self.harness == "codex":
            return self._codex(record, line)
        if self.harness == "gemini":
            return self._gemini(record)
        if self.harness == "copilot":
            return self._copilot(record)
        if self.harness == "cline":
            return self._cline(record)
        return self._generic(record, line)

    def _cline(self, record: dict[str, Any]) -> list[Step]:
        """A Cline task's command (its text is the command line) or tool use (its text is the
        JSON ``{"tool": name, "path", "content" | "diff", …}``), asked or done."""
        kind = record.get(record.get("type") or "")
        text, ts = record.get("text"), record.get("ts")
        if kind not in ("command", "tool") or not isinstance(text, str) or record.get("partial"):
            return []
        record_id = f"{self.turns.session_id}:{ts}:{kind}"
        if kind == "command":
            return [tool_step(record_id, parse_timestamp(ts), "execute_command",
                              {"command": text})]
        data = _as_object(text)
        return [tool_step(record_id, parse_timestamp(ts), str(data.get("tool") or ""), data)]

    def _copilot(self, record: dict[str, Any]) -> list[Step]:
        data = record.get("data")
        event_id = record.get("id")
        if record.get("type") != "tool.execution_start" or not isinstance(data, dict) \
                or not isinstance(event_id, str):
            return []
        return [tool_step(event_id, parse_timestamp(record.get("timestamp")),
                          str(data.get("toolName") or ""), data.get("arguments"),
                          str(data.get("toolCallId") or ""), False)]

    def _gemini(self, record: dict[str, Any]) -> list[Step]:
        calls = record.get("toolCalls")
        message_id = record.get("id")
        if record.get("type") != "gemini" or not isinstance(calls, list) \
                or not isinstance(message_id, str):
            return []
        sidechain = bool(getattr(self.turns, "subagent", False))
        steps = []
        for call in calls:
            if not isinstance(call, dict):
                continue
            call_id = str(call.get("id") or "")
            key = call_id or json.dumps([call.get("name"), call.get("args")], sort_keys=True)
            ts = parse_timestamp(call.get("timestamp"))
            ts = ts if ts is not None else parse_timestamp(record.get("timestamp"))
            if key not in self._calls_seen:
                self._calls_seen.add(key)
                steps.append(tool_step(message_id, ts, str(call.get("name") or ""),
                                       call.get("args"), call_id, sidechain))
            if call.get("status") == "cancelled" and key not in self._cancelled:
                self._cancelled.add(key)
                shown = call.get("resultDisplay")
                steps.append(Step(message_id, "rejected", ts, shown[:2000] if isinstance(
                    shown, str) and shown else "the call was cancelled", call_id=call_id,
                    sidechain=sidechain))
        return steps

    def _claude_code(self, record: dict[str, Any], line: str) -> list[Step]:
        message = record.get("message")
        if record.get("type") not in ("assistant", "user") or not isinstance(message, dict):
            return []
        content = message.get("content")
        if not isinstance(content, list):
            return []
        uuid = record.get("uuid")
        record_id = uuid if isinstance(uuid, str) else line_id(line)
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
            inner = call.get("function")
            function = inner if isinstance(inner, dict) else call
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


#: Aider's own lines (after ``> ``) that say what it did.
_AIDER_RAN = re.compile(r"Running (.+?)\s*$")
_AIDER_APPLIED = re.compile(r"Applied edit to (.+?)\s*$")
#: The line naming an edit's file: a path alone, maybe in backticks or bold.
_AIDER_PATH = re.compile(r"[`*]*([\w./~+@-]+\.?[\w-]*)[`*:]*")
_SEARCH, _DIVIDER, _REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
#: Aider asking whether to run an answer's shell block, and the user's answer (``y``/``n``/…).
_AIDER_ASKED = re.compile(r"Run shell commands?\? .*\]: *(\w?)")
#: The fences of an answer's shell commands (Aider offers to run these).
_AIDER_SHELLS = {"bash", "sh", "shell", "zsh", "fish", "ksh", "csh", "tcsh", "cmd", "batch",
                 "powershell", "ps1"}


class _AiderActions:
    """What Aider did, from its ``> `` lines and the answers' edit blocks before them (see the
    module docstring). Follows the fences as the turn parser does, so a ``> `` line inside an
    answer's code block is the answer's, not Aider's."""

    def __init__(self) -> None:
        self._fence: str | None = None
        self._block: list[str] = []
        self._named = ""  # the file named on the line above the open block
        self._last = ""  # the last line of prose outside a block
        self._edits: list[tuple[str, str]] = []  # (file, text added) of this turn's blocks
        self._shell = False  # the open block is shell commands
        self._offered: list[list[str]] = []  # shell blocks Aider has yet to ask about
        self._count = 0

    def feed(self, line: str, session: str) -> list[Step]:
        if self._fence is not None:
            if line.lstrip().startswith(self._fence):
                self._fence = None
                if self._shell:
                    self._offered.append([c.strip() for c in self._block if c.strip()
                                          and not c.strip().startswith("#")])
                else:
                    self._edits.extend(_aider_block(self._block, self._named))
                self._block = []
            else:
                self._block.append(line)
            return []
        if AIDER_HEADER.match(line) or line == "####" or line.startswith("#### "):
            # a new session or prompt: what is offered and edited is the next answer's
            self._edits, self._offered, self._last = [], [], ""
            return []
        if line.startswith(">"):
            said = line[1:].strip()
            ran = _AIDER_RAN.fullmatch(said)
            if ran is not None:
                return [self._step(session, "run", {"command": ran.group(1)})]
            asked = _AIDER_ASKED.fullmatch(said)
            if asked is not None and self._offered:
                commands = self._offered.pop(0)
                if asked.group(1).lower() in ("y", "a"):
                    return []  # its ``Running`` lines follow
                refused = []  # declined: proposed and refused, as a call the user rejects
                for command in commands:
                    step = self._step(session, "run", {"command": command})
                    refused += [step, Step(step.record_id, "rejected", None, said,
                                           call_id=step.call_id)]
                return refused
            applied = _AIDER_APPLIED.fullmatch(said)
            if applied is not None:
                path = applied.group(1)
                added = "\n".join(text for name, text in self._edits if _same_file(name, path))
                return [self._step(session, "edit", {"file_path": path, "new_string": added})]
            return []
        fence = AIDER_FENCE.match(line)
        if fence is not None:
            self._fence, self._block, self._named = fence.group(1), [], self._last
            self._shell = line.strip()[len(fence.group(1)):].strip().lower() in _AIDER_SHELLS
        elif line.strip():
            self._last = line.strip()
        return []

    def _step(self, session: str, tool: str, data: dict[str, str]) -> Step:
        self._count += 1
        record_id = f"{session}:t{self._count}"
        return tool_step(record_id, None, tool, data, call_id=record_id)


def _aider_block(lines: list[str], named: str) -> list[tuple[str, str]]:
    """The (file, text added) of an answer's fenced block: a ``SEARCH``/``REPLACE`` edit (its
    file named above the fence, or first inside it), a unified diff, or a whole file."""
    name = _AIDER_PATH.fullmatch(named)
    path = name.group(1) if name else ""
    if any(line.strip() == _SEARCH for line in lines):
        first = next((line.strip() for line in lines if line.strip()), "")
        inside = _AIDER_PATH.fullmatch(first) if first != _SEARCH else None
        added: list[str] = []
        replacing = False
        for line in lines:
            if line.strip() == _DIVIDER:
                replacing = True
            elif line.strip() in (_REPLACE, _SEARCH):
                replacing = False
            elif replacing:
                added.append(line)
        return [(inside.group(1) if inside else path, "\n".join(added))]
    text = "\n".join(lines)
    if any(line.startswith("+++ ") for line in lines):
        files, added_text = _patch(text)
        return [(file, added_text) for file in files]
    return [(path, text)] if path else []


def _same_file(named: str, applied: str) -> bool:
    """An edit block's file is the one Aider says it applied an edit to (its name relative to
    the project, or an absolute one ending with it)."""
    if not named:
        return False
    return named == applied or applied.endswith("/" + named.lstrip("./")) \
        or named.endswith("/" + applied.lstrip("./"))


def read_steps(lines: list[str], harness: str, cwd: str | None = None) -> list[Step]:
    """Every step of a transcript's lines, in order."""
    reader = StepReader(harness, cwd)
    steps: list[Step] = []
    for line in lines:
        steps.extend(reader.feed(line))
    steps.extend(reader.flush())
    return steps
