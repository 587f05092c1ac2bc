"""What an agent's hook payload says, in Claude Code's words.

memoryd's hooks were written for Claude Code's payloads (Codex sends the same fields). Gemini CLI
and Cursor send their own, and :func:`normalize` reads them into those fields, so that the rest
of the hook's path (memoryd.server.session_methods) reads one shape:

- Gemini CLI (``docs/hooks/reference.md``, ``packages/core/src/hooks/types.ts`` of
  google-gemini/gemini-cli) sends ``session_id``, ``transcript_path`` (its chat file), ``cwd``
  and ``hook_event_name`` like Claude Code, ``prompt`` (BeforeAgent), ``tool_name`` and
  ``tool_input`` (BeforeTool, AfterTool: ``run_shell_command`` ``{command}``, ``write_file``
  ``{file_path, content}``, ``replace`` ``{file_path, old_string, new_string}``), and
  ``prompt_response`` (AfterAgent: the turn's answer). A prompt can carry context an earlier
  hook added, wrapped in ``<hook_context>…</hook_context>`` (Gemini prepends SessionStart's to
  the first prompt when it runs without a terminal): that is not what the user asked, and is
  cut out before the prompt is searched.
- Cursor (https://cursor.com/docs/agent/hooks) names the conversation ``conversation_id`` (and
  ``session_id`` in ``sessionStart``), its folders ``workspace_roots``; ``beforeShellExecution``
  gives ``command`` and ``cwd``. Its ``transcript_path``, where a version sends one, is a file
  memoryd cannot read (Cursor's history is not read: docs/harnesses.md), so it is not kept.
- GitHub Copilot CLI (its hooks reference, docs/harnesses.md) sends camelCase fields to the
  camelCase events memoryd installs: ``sessionId``, ``cwd``, ``timestamp`` (milliseconds),
  ``toolName`` and ``toolArgs`` (``bash`` ``{command}``, ``edit`` ``{path, old_str, new_str}``,
  ``create`` ``{path, file_text}``; the arguments may come as a JSON string), ``transcriptPath``
  (agentStop: its ``events.jsonl``). A session's events file is known from its id when a
  payload does not name it.
- Cline (its hooks reference and ``src/core/hooks`` of cline/cline; docs/harnesses.md) names
  its event ``hookName``, the task ``taskId`` (the session: the task log memoryd reads is
  ``tasks/<taskId>/ui_messages.json``), its folders ``workspaceRoots`` (the first is the
  ``cwd``); ``userPromptSubmit.prompt`` is the prompt, ``taskComplete.taskMetadata.result``
  the task's result (its last answer).
- OpenCode has no hook commands; memoryd's plugin (memoryd_client/opencode_plugin.js) sends
  Claude Code's fields itself, the tool's arguments in OpenCode's names (``filePath``, …).
"""

from __future__ import annotations

import json
import os
from typing import Any

from memoryd.agent_settings import copilot_home
from memoryd.ingest.transcript.gemini import HOOK_CONTEXT


def normalize(harness: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with Claude Code's field names (the fields it already has are kept)."""
    if harness == "gemini":
        return _gemini(payload)
    if harness == "cursor":
        return _cursor(payload)
    if harness == "opencode":
        return _opencode(payload)
    if harness == "copilot":
        return _copilot(payload)
    if harness == "cline":
        return _cline(payload)
    return payload


def _gemini(payload: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload)
    prompt = payload.get("prompt")
    if isinstance(prompt, str) and "<hook_context>" in prompt:
        out["prompt"] = HOOK_CONTEXT.sub("", prompt)
    answer = payload.get("prompt_response")
    if isinstance(answer, str) and "last_assistant_message" not in payload:
        out["last_assistant_message"] = answer
    return out


def _cursor(payload: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload)
    session = payload.get("conversation_id")
    if not isinstance(session, str) or not session:
        session = payload.get("session_id")
    out["session_id"] = session if isinstance(session, str) and session else None
    if not isinstance(payload.get("cwd"), str) or not payload["cwd"]:
        roots = payload.get("workspace_roots")
        first = roots[0] if isinstance(roots, list) and roots else None
        out["cwd"] = first if isinstance(first, str) else None
    out["transcript_path"] = None
    command = payload.get("command")
    if "tool_name" not in payload and isinstance(command, str):  # beforeShellExecution
        out["tool_name"] = "Shell"
        out["tool_input"] = {"command": command}
    return out


#: OpenCode's tool arguments (packages/opencode/src/tool/edit.ts, write.ts) in Claude Code's
#: names: ``edit`` ``{filePath, oldString, newString}``, ``write`` ``{filePath, content}``.
_OPENCODE_ARGS = {"filePath": "file_path", "oldString": "old_string", "newString": "new_string"}


def _opencode(payload: dict[str, Any]) -> dict[str, Any]:
    """memoryd's plugin sends Claude Code's field names already; the tool's own arguments are
    OpenCode's (``bash`` ``{command, description}`` reads as it is)."""
    out = dict(payload)
    args = payload.get("tool_input")
    if isinstance(args, dict):
        out["tool_input"] = {_OPENCODE_ARGS.get(key, key): value for key, value in args.items()}
    out["transcript_path"] = None  # OpenCode keeps its history in a database (docs/harnesses.md)
    return out


#: Copilot CLI's camelCase fields in Claude Code's names.
_COPILOT_FIELDS = {"sessionId": "session_id", "transcriptPath": "transcript_path",
                   "toolName": "tool_name", "toolArgs": "tool_input"}


def _copilot(payload: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload)
    for given, ours in _COPILOT_FIELDS.items():
        if given in payload and ours not in payload:
            out[ours] = payload[given]
    args = out.get("tool_input")
    if isinstance(args, str):  # the arguments as the model wrote them: a JSON object
        try:
            out["tool_input"] = json.loads(args)
        except (ValueError, RecursionError):
            out["tool_input"] = {"command": args} if out.get("tool_name") == "bash" else {}
    session = out.get("session_id")
    if "toolName" not in payload and not isinstance(out.get("transcript_path"), str) \
            and isinstance(session, str) and session and "/" not in session \
            and session not in (".", ".."):  # a session's event (a tool call needs no file)
        events = os.path.join(os.path.expanduser(copilot_home()), "session-state", session,
                              "events.jsonl")
        out["transcript_path"] = events if os.path.isfile(events) else None
    return out


def _cline(payload: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload)
    given = {"hook_event_name": payload.get("hookName"), "session_id": payload.get("taskId")}
    roots = payload.get("workspaceRoots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        given["cwd"] = roots[0]
    prompt = payload.get("userPromptSubmit")
    if isinstance(prompt, dict):
        given["prompt"] = prompt.get("prompt")
    complete = payload.get("taskComplete")
    metadata = complete.get("taskMetadata") if isinstance(complete, dict) else None
    if isinstance(metadata, dict):
        given["last_assistant_message"] = metadata.get("result")
    for ours, value in given.items():
        if isinstance(value, str) and value and ours not in payload:
            out[ours] = value
    return out
