"""A case's steps as a real transcript: Claude Code JSONL, a Codex rollout, a Gemini CLI chat,
Aider's chat history, generic JSONL (OpenAI-style ``tool_calls``) or a pi session file. See
README.md for the step forms."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

CWD = "/home/sam/src/shop"
START = 1_780_000_000.0  # the first step's time; the injection is at INJECTED unless moved
STEP_S = 7.0


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _abs(path: str) -> str:
    return path if path.startswith("/") else f"{CWD}/{path}"


def _patch(path: str, old: str, new: str, add: bool = False) -> str:
    head = f"*** Add File: {path}" if add else f"*** Update File: {path}\n@@"
    minus = "" if add else "".join(f"-{line}\n" for line in old.splitlines())
    plus = "".join(f"+{line}\n" for line in new.splitlines())
    return f"*** Begin Patch\n{head}\n{minus}{plus}*** End Patch"


def timeline(steps: list[list[Any]]) -> tuple[list[tuple[float, list[Any]]], float]:
    """Each step with its time, and the injection's time (an ``inject`` step, or before the
    first step)."""
    out: list[tuple[float, list[Any]]] = []
    injected = START - 60
    ts = START
    for step in steps:
        if step[0] == "inject":
            injected = ts
            ts += 1
            continue
        out.append((ts, step))
        ts += STEP_S
    return out, injected


def render(case: dict[str, Any]) -> tuple[list[str], float]:
    """The transcript's lines and the injection's time."""
    timed, injected = timeline(case["steps"])
    harness = case["harness"]
    session = hashlib.sha256(case["id"].encode()).hexdigest()[:32]
    session = f"{session[:8]}-{session[8:12]}-{session[12:16]}-{session[16:20]}-{session[20:]}"
    writer = {"claude-code": _claude, "codex": _codex, "generic": _generic, "pi": _pi,
              "gemini": _gemini, "aider": _aider}[harness]
    return writer(timed, session, case), injected


def _claude(timed: list[tuple[float, list[Any]]], session: str, case: dict[str, Any]) -> list[str]:
    lines: list[dict[str, Any]] = []
    parent = None
    last_call = ""

    def add(record: dict[str, Any], ts: float) -> None:
        nonlocal parent
        uid = hashlib.sha256(f"{session}{len(lines)}".encode()).hexdigest()[:32]
        uid = f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}"
        lines.append({"parentUuid": parent, "isSidechain": False, "userType": "external",
                      "cwd": CWD, "sessionId": session, "version": "2.1.200",
                      "gitBranch": "main", "uuid": uid, "timestamp": _iso(ts), **record})
        parent = uid

    def call(ts: float, name: str, data: dict[str, Any]) -> None:
        nonlocal last_call
        last_call = "toolu_" + hashlib.sha256(f"{session}{len(lines)}".encode()).hexdigest()[:20]
        add({"type": "assistant", "requestId": "req_" + last_call[6:],
             "message": {"id": "msg_" + last_call[6:], "role": "assistant", "model": "claude",
                         "type": "message", "content": [
                             {"type": "tool_use", "id": last_call, "name": name, "input": data}]}},
            ts)
        add({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": last_call, "content": "ok"}]},
            "toolUseResult": {"stdout": "ok"}}, ts + 1)

    for ts, step in timed:
        kind = step[0]
        if kind == "user":
            add({"type": "user", "message": {"role": "user", "content": step[1]}}, ts)
        elif kind == "assistant":
            add({"type": "assistant", "message": {"id": f"msg_t{len(lines)}", "role": "assistant",
                                                  "model": "claude", "content": [
                                                      {"type": "text", "text": step[1]}]}}, ts)
        elif kind == "bash":
            call(ts, "Bash", {"command": step[1], "description": "run"})
        elif kind == "edit":
            old = step[3] if len(step) > 3 else "pass"
            call(ts, "Edit", {"file_path": _abs(step[1]), "old_string": old,
                              "new_string": step[2]})
        elif kind == "write":
            call(ts, "Write", {"file_path": _abs(step[1]), "content": step[2]})
        elif kind == "read":
            call(ts, "Read", {"file_path": _abs(step[1])})
        elif kind == "tool":
            call(ts, step[1], step[2])
        elif kind == "reject":  # the user refuses the last call
            lines.pop()
            add({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": last_call, "is_error": True,
                 "content": "The user doesn't want to proceed with this tool use. The tool use "
                            "was rejected (eg. if it was a file edit, the new_string was NOT "
                            "written to the file). STOP what you are doing and wait for the "
                            "user to tell you how to proceed."}]},
                 "toolUseResult": "Error: rejected"}, ts)
        else:
            raise ValueError(f"{case['id']}: unknown step {kind!r}")
    return [json.dumps(r) for r in lines]


def _codex(timed: list[tuple[float, list[Any]]], session: str, case: dict[str, Any]) -> list[str]:
    variant = int(hashlib.sha256(case["id"].encode()).hexdigest(), 16) % 3
    lines = [{"timestamp": _iso(START - 120), "type": "session_meta", "payload": {
        "id": session, "timestamp": _iso(START - 120), "cwd": CWD, "originator": "codex_cli_rs",
        "cli_version": "0.98.0", "source": "cli", "model_provider": "openai"}}]

    def item(ts: float, payload: dict[str, Any]) -> None:
        lines.append({"timestamp": _iso(ts), "type": "response_item", "payload": payload})

    for n, (ts, step) in enumerate(timed):
        kind = step[0]
        call_id = f"call_{n}"
        if kind == "user":
            lines.append({"timestamp": _iso(ts), "type": "event_msg",
                          "payload": {"type": "user_message", "message": step[1], "images": []}})
            item(ts, {"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": step[1]}]})
        elif kind == "assistant":
            item(ts, {"type": "message", "role": "assistant", "phase": "commentary",
                      "content": [{"type": "output_text", "text": step[1]}]})
        elif kind in ("bash", "read"):
            command = step[1] if kind == "bash" else f"sed -n 1,200p {step[1]}"
            if variant == 0:
                args = {"command": ["bash", "-lc", command], "workdir": CWD}
                item(ts, {"type": "function_call", "name": "shell", "call_id": call_id,
                          "arguments": json.dumps(args)})
            elif variant == 1:
                item(ts, {"type": "function_call", "name": "exec_command", "call_id": call_id,
                          "arguments": json.dumps({"cmd": command})})
            else:
                item(ts, {"type": "local_shell_call", "call_id": call_id, "status": "completed",
                          "action": {"type": "exec", "command": ["bash", "-lc", command]}})
            item(ts + 1, {"type": "function_call_output", "call_id": call_id, "output": "ok"})
        elif kind in ("edit", "write"):
            old = step[3] if kind == "edit" and len(step) > 3 else "pass"
            patch = _patch(step[1], old, step[2], add=kind == "write")
            item(ts, {"type": "custom_tool_call", "name": "apply_patch", "call_id": call_id,
                      "input": patch})
            item(ts + 1, {"type": "custom_tool_call_output", "call_id": call_id, "output": "ok"})
        elif kind == "tool":
            item(ts, {"type": "function_call", "name": step[1], "call_id": call_id,
                      "arguments": json.dumps(step[2])})
        else:
            raise ValueError(f"{case['id']}: step {kind!r} is not in a Codex rollout")
    return [json.dumps(line) for line in lines]


def _call(kind: str, step: list[Any]) -> tuple[str, dict[str, Any]]:
    if kind == "bash":
        return "bash", {"command": step[1]}
    if kind == "edit":
        return "edit", {"path": step[1], "oldText": step[3] if len(step) > 3 else "pass",
                        "newText": step[2]}
    if kind == "write":
        return "write", {"path": step[1], "content": step[2]}
    if kind == "read":
        return "read", {"path": step[1]}
    return step[1], step[2]


def _generic(timed: list[tuple[float, list[Any]]], session: str,
             case: dict[str, Any]) -> list[str]:
    lines = []
    for n, (ts, step) in enumerate(timed):
        kind = step[0]
        base = {"timestamp": _iso(ts), "session_id": session, "id": str(n), "cwd": CWD}
        if kind in ("user", "assistant"):
            lines.append({**base, "role": kind, "content": step[1]})
        elif kind in ("bash", "edit", "write", "read", "tool"):
            name, args = _call(kind, step)
            lines.append({**base, "role": "assistant", "content": "", "tool_calls": [
                {"id": f"call_{n}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}]})
            lines.append({"timestamp": _iso(ts + 1), "session_id": session, "id": f"{n}r",
                          "role": "tool", "tool_call_id": f"call_{n}", "content": "ok"})
        else:
            raise ValueError(f"{case['id']}: step {kind!r} is not in a generic transcript")
    return [json.dumps(line) for line in lines]


def _pi(timed: list[tuple[float, list[Any]]], session: str, case: dict[str, Any]) -> list[str]:
    lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": session,
                                    "timestamp": _iso(START - 120), "cwd": CWD}]
    parent = None
    for n, (ts, step) in enumerate(timed):
        kind = step[0]
        entry_id = hashlib.sha256(f"{session}{n}".encode()).hexdigest()[:8]
        if kind in ("user", "assistant"):
            message: dict[str, Any] = {"role": kind, "content": [{"type": "text",
                                                                   "text": step[1]}]}
        elif kind in ("bash", "edit", "write", "read", "tool"):
            name, args = _call(kind, step)
            message = {"role": "assistant", "content": [
                {"type": "toolCall", "id": f"tc{n}", "name": name, "arguments": args}]}
        else:
            raise ValueError(f"{case['id']}: step {kind!r} is not in a pi session")
        lines.append({"type": "message", "id": entry_id, "parentId": parent,
                      "timestamp": _iso(ts), "message": message})
        parent = entry_id
    return [json.dumps(line) for line in lines]


#: memoryd's block as Gemini CLI records it in a prompt: a hook's context, its < and > escaped.
_MARKER = "&lt;memoryd-context&gt;"


def _gemini(timed: list[tuple[float, list[Any]]], session: str,
            case: dict[str, Any]) -> list[str]:
    """Gemini CLI's chat JSONL as its ChatRecordingService appends it: the memory block in the
    prompt it was injected with (SessionStart's in the first, BeforeAgent's after an
    ``inject``), each call added to the last ``gemini`` message, which is written again with
    all its calls; a refused call ``cancelled``."""
    lines: list[dict[str, Any]] = [{"sessionId": session, "projectHash": "shop",
                                    "startTime": _iso(START - 120), "kind": "main"}]
    block = f"<hook_context>{_MARKER}\n- “{case['entry']['text']}”</hook_context>"
    pending = not any(step[0] == "inject" for step in case["steps"])  # at the start
    message: dict[str, Any] | None = None  # the last gemini message, while it is the last
    called = 0  # the line of the last call

    def uid(n: int) -> str:
        h = hashlib.sha256(f"{session}{n}".encode()).hexdigest()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"

    # the prompt after an ``inject`` carries BeforeAgent's block (``timeline`` drops the step)
    carries = set()
    waiting = False
    for step in case["steps"]:
        if step[0] == "inject":
            waiting = True
        elif waiting and step[0] == "user":
            carries.add(id(step))
            waiting = False
    for ts, step in timed:
        kind = step[0]
        if kind == "user":
            parts = [{"text": step[1]}]
            if pending:  # SessionStart's context is put before the first prompt
                parts, pending = [{"text": block}, *parts], False
            elif id(step) in carries:  # BeforeAgent's after its prompt
                parts = [*parts, {"text": block}]
            lines.append({"id": uid(len(lines)), "timestamp": _iso(ts), "type": "user",
                          "content": parts})
            message = None
        elif kind == "assistant":
            message = {"id": uid(len(lines)), "timestamp": _iso(ts), "type": "gemini",
                       "content": step[1], "thoughts": [], "model": "gemini-2.5-pro"}
            lines.append(message)
        elif kind in ("bash", "edit", "write", "read", "tool"):
            name, args = _gemini_call(step)
            if message is None:
                message = {"id": uid(len(lines)), "timestamp": _iso(ts), "type": "gemini",
                           "content": "", "thoughts": [], "model": "gemini-2.5-pro"}
            call_id = f"{name}-{int(ts * 1000)}-{len(lines)}"
            message = {**message, "toolCalls": [*message.get("toolCalls", []), {
                "id": call_id, "name": name, "args": args, "status": "success",
                "timestamp": _iso(ts + 1), "displayName": name, "description": "",
                "result": [{"functionResponse": {"id": call_id, "name": name,
                                                 "response": {"output": "ok"}}}]}]}
            called = len(lines)
            lines.append(message)
        elif kind == "reject":  # the user declined the last call: recorded as cancelled
            assert message is not None and message.get("toolCalls"), case["id"]
            last = {**message["toolCalls"][-1], "status": "cancelled", "result": None,
                    "resultDisplay": "Tool call cancelled by user."}
            lines[called] = message = {**message,
                                       "toolCalls": [*message["toolCalls"][:-1], last]}
        else:
            raise ValueError(f"{case['id']}: unknown step {kind!r}")
        if kind != "reject":
            lines.append({"$set": {"lastUpdated": _iso(ts + 1)}})
    return [json.dumps(line) for line in lines]


def _gemini_call(step: list[Any]) -> tuple[str, dict[str, Any]]:
    kind = step[0]
    if kind == "bash":
        return "run_shell_command", {"command": step[1], "description": "run"}
    if kind == "edit":
        return "replace", {"file_path": _abs(step[1]), "new_string": step[2],
                           "old_string": step[3] if len(step) > 3 else "pass"}
    if kind == "write":
        return "write_file", {"file_path": _abs(step[1]), "content": step[2]}
    if kind == "read":
        return "read_file", {"file_path": _abs(step[1])}
    return step[1], step[2]


def _aider(timed: list[tuple[float, list[Any]]], session: str,
           case: dict[str, Any]) -> list[str]:
    """Aider's ``.aider.chat.history.md``: prompts as ``#### `` lines, the model's answers with
    its edits as SEARCH/REPLACE blocks and its shell commands as ``bash`` blocks, Aider's own
    output as ``> `` lines (``Applied edit to``, the offer to run a block, ``Running``).
    Aider has no other tools, and no time per message (so no ``inject`` step)."""
    if any(step[0] == "inject" for step in case["steps"]):
        raise ValueError(f"{case['id']}: Aider's history has no time to inject at")
    started = datetime.fromtimestamp(START - 120, UTC).strftime("%Y-%m-%d %H:%M:%S")
    out = ["", f"# aider chat started at {started}", "", "> Aider v0.86.1  ",
           "> Main model: anthropic/claude-sonnet-4-5 with diff edit format  ", ""]
    steps = [step for _, step in timed]
    for n, step in enumerate(steps):
        kind = step[0]
        refused = n + 1 < len(steps) and steps[n + 1][0] == "reject"
        if kind == "user":
            out += ["#### " + "  \n#### ".join(step[1].splitlines()), ""]
        elif kind == "assistant":
            out += [step[1], ""]
        elif kind == "bash":
            if "\n" in step[1]:
                raise ValueError(f"{case['id']}: Aider runs a block line by line")
            out += ["```bash", step[1], "```", "", f"> {step[1]}  ",
                    "> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: "
                    + ("n" if refused else "y") + "  "]
            if not refused:
                out += ["", f"> Running {step[1]}  "]
            out += [""]
        elif kind in ("edit", "write"):
            old = step[3] if kind == "edit" and len(step) > 3 else ""
            out += [step[1], "```", "<<<<<<< SEARCH", *old.splitlines(), "=======",
                    *step[2].splitlines(), ">>>>>>> REPLACE", "```", ""]
            out += [f"> Applied edit to {step[1]}  ", ""]
        elif kind == "reject":
            if steps[n - 1][0] != "bash":
                raise ValueError(f"{case['id']}: Aider asks only before a shell block")
        else:
            raise ValueError(f"{case['id']}: step {kind!r} is not in Aider's history")
    return out
