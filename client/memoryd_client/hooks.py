"""``memory hook AGENT EVENT``: lifecycle hooks for Claude Code and Codex.

Reads the agent's JSON on stdin, tells the daemon, prints the agent's own output format. A hook
never blocks its agent: it always exits 0 with valid (possibly empty) output — on bad stdin, a
usage mistake, a slow or dead daemon — and it answers within a deadline well under the agent's
hook timeout. When the daemon cannot be reached the event is appended to a spool file that the
daemon replays when it is back. The payload is forwarded as it came: the daemon parses it and
renders the agent's output, so a hook process never imports json (or typing, or pathlib), and
it speaks the wire protocol without msgpack (memoryd_client.hook_wire).

Kept free of argparse and of the rest of the CLI so that a hook process starts fast.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

TYPE_CHECKING = False  # typing and pathlib cost a hook process ~10 ms; it needs neither
if TYPE_CHECKING:
    from typing import Any

from memoryd_client import hook_wire

HARNESSES = ("claude-code", "codex")
#: The events memoryd's hooks handle, per agent (what `memory hook install` registers).
HARNESS_EVENTS = {
    "claude-code": ("SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "PostCompact",
                    "Stop", "SubagentStop", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "PostCompact",
              "Stop", "SessionEnd"),
}
#: Event names the agents send, and the aliases accepted on the command line.
EVENTS = {
    "sessionstart": "SessionStart", "session-start": "SessionStart",
    "userpromptsubmit": "UserPromptSubmit", "prompt": "UserPromptSubmit",
    "pretooluse": "PreToolUse", "pre-tool-use": "PreToolUse",
    "precompact": "PreCompact", "pre-compact": "PreCompact",
    "postcompact": "PostCompact", "post-compact": "PostCompact",
    "stop": "Stop", "subagentstop": "SubagentStop", "subagent-stop": "SubagentStop",
    "sessionend": "SessionEnd", "session-end": "SessionEnd",
}
#: Events whose output carries context into the conversation.
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse")
#: Seconds the whole exchange with the daemon may take, per event (agents allow 5-60 s).
#: PreToolUse runs before every tool call: a daemon slower than this is not waited for.
DEADLINE_S = {"SessionStart": 2.5, "UserPromptSubmit": 1.5, "PreToolUse": 0.25}
#: Events not worth replaying later: a tool call's lesson is of use only before the call.
NOT_SPOOLED = ("PreToolUse",)
DEFAULT_DEADLINE_S = 0.5
MAX_STDIN_BYTES = 4 * 1024 * 1024
SPOOL_NAME = "spool.msgpack"


USAGE = ("usage: memory hook claude-code|codex EVENT < payload.json\n"
         "       memory hook install|uninstall claude-code|codex [--project DIR]")


def help_text(harness: str | None = None) -> str:
    """`memory hook [AGENT] --help`: the usage and the EVENT names (with their aliases)."""
    lines = [USAGE if harness is None else
             f"usage: memory hook {harness} EVENT < payload.json", "",
             "The agent runs the hook with its JSON payload on stdin; the hook tells memoryd and",
             "prints the agent's own output. A hook always exits 0 (fail open). Run from a",
             "terminal without a payload it prints this usage and reads nothing.", ""]
    for name in (HARNESSES if harness is None else (harness,)):
        lines.append(f"EVENT for {name} (case-insensitive; aliases in parentheses):")
        for event in HARNESS_EVENTS[name]:
            aliases = [a for a, e in EVENTS.items() if e == event and a != event.lower()]
            lines.append(f"  {event}" + (f" ({', '.join(aliases)})" if aliases else ""))
    if harness is None:
        lines += ["", "memory hook install|uninstall --help: adding the hooks to an agent's "
                  "settings."]
    return "\n".join(lines)


def spool_path() -> str:
    from memoryd_client.paths import data_text

    return os.path.join(data_text(), SPOOL_NAME)


def append_spool(request: dict[str, Any]) -> None:
    """Append one event (a msgpack frame) for the daemon to replay; locked against the
    daemon's replay."""
    path = spool_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    frame = hook_wire.frame(request)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, frame)
    finally:
        os.close(fd)


def read_spool(data: bytes) -> list[dict[str, Any]]:
    """The requests in a spool file's bytes; a torn or corrupt tail is dropped."""
    from memoryd_client import wire  # the daemon's side: msgpack is loaded there anyway

    requests = []
    offset = 0
    while offset + wire.HEADER.size <= len(data):
        length = wire.frame_length(data[offset: offset + wire.HEADER.size])
        end = offset + wire.HEADER.size + length
        if end > len(data):
            break
        try:
            requests.append(wire.unpack(data[offset + wire.HEADER.size: end]))
        except Exception:
            pass
        offset = end
    return requests


def call_daemon(request: dict[str, Any], deadline_s: float) -> dict[str, Any]:
    """One request with a hard deadline; raises OSError (unreachable) or TimeoutError."""
    from memoryd_client.paths import socket_text

    end = time.monotonic() + deadline_s
    from memoryd_client.connect import connect

    sock = connect(socket_text(lean=True), deadline_s, retry_s=deadline_s / 2)  # a bare _socket
    try:
        sock.sendall(hook_wire.frame({"id": 1, "method": "hook", "params": request}))
        data = b""
        needed = hook_wire.HEADER_SIZE
        length = None
        while len(data) < needed:
            sock.settimeout(max(end - time.monotonic(), 0.001))
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("memoryd closed the connection")
            data += chunk
            if length is None and len(data) >= hook_wire.HEADER_SIZE:
                length = hook_wire.frame_length(data)
                needed = hook_wire.HEADER_SIZE + length
        reply = hook_wire.unpack(data[hook_wire.HEADER_SIZE:needed])
        if not isinstance(reply, dict):
            raise TypeError("the reply is not a map")
    finally:
        sock.close()
    result = reply.get("result")
    if isinstance(result, dict):
        return result
    error = reply.get("error")  # the daemon refused the event: say so (the hook still exits 0)
    message = error.get("message") if isinstance(error, dict) else None
    return {"problem": f"the daemon refused the event: {message}"} if message else {}


def render(event: str, context: str | None, deny: str | None = None) -> str:
    """The agent's own output: JSON with additionalContext for context events, else nothing.
    Codex validates hook output against strict schemas, so only the common subset is used.
    ``deny`` (PreToolUse only: a hard rule the user opted into) denies the call, with the
    reason the agent reads; memoryd never answers "allow", which would skip the user's
    permission prompt. (The daemon renders; the hook process only prints, so it never imports
    json.)"""
    import json

    if event not in CONTEXT_EVENTS or not context:
        return ""
    output: dict[str, str] = {"hookEventName": event, "additionalContext": context}
    if deny and event == "PreToolUse":
        output.update(permissionDecision="deny", permissionDecisionReason=deny)
    return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:  # a closed or exotic stdin: not a terminal
        return False


def run_hook(argv: list[str], stdin: Any = None, stdout: Any = None) -> int:
    """Always returns 0. stdin is forwarded as it is; the daemon parses it."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        if "-h" in argv or "--help" in argv:
            stdout.write(help_text(argv[0] if argv[:1] and argv[0] in HARNESSES else None) + "\n")
            return 0
        if len(argv) != 2 or argv[0] not in HARNESSES:
            print(USAGE, file=sys.stderr)
            return 0
        if _is_terminal(stdin):  # a person typing the command: agents always pipe a payload
            print(help_text(argv[0]), file=sys.stderr)
            return 0
        harness = argv[0]
        event = EVENTS.get(argv[1].lower().replace("_", "-"), argv[1])
        raw = stdin.buffer.read(MAX_STDIN_BYTES) if hasattr(stdin, "buffer") else \
            stdin.read(MAX_STDIN_BYTES).encode("utf-8", errors="replace")
        request = {"harness": harness, "event": event, "raw": raw.decode("utf-8", errors="replace"),
                   "ts": time.time()}
        try:
            result = call_daemon(request, DEADLINE_S.get(event, DEFAULT_DEADLINE_S))
        except (FileNotFoundError, ConnectionError, BlockingIOError) as exc:  # not sent
            if event in NOT_SPOOLED:
                print(f"memoryd hook: daemon unreachable ({exc.__class__.__name__})",
                      file=sys.stderr)
                return 0
            append_spool(request)
            print(f"memoryd hook: daemon unreachable ({exc.__class__.__name__}); event spooled",
                  file=sys.stderr)
            return 0
        except Exception as exc:  # a timeout or a bad reply: fail open
            print(f"memoryd hook: {exc.__class__.__name__}: {exc}", file=sys.stderr)
            return 0
        output = result.get("output")
        if isinstance(output, str) and output:
            stdout.write(output + "\n")
            stdout.flush()
        elif result.get("problem"):
            print(f"memoryd hook: {result['problem']}", file=sys.stderr)
    except BaseException as exc:  # never block the agent, whatever happens
        try:
            print(f"memoryd hook: {exc.__class__.__name__}", file=sys.stderr)
        except Exception:
            pass
    return 0
