"""``memory hook AGENT EVENT``: lifecycle hooks for Claude Code, Codex, Gemini CLI, Cursor,
GitHub Copilot CLI, Cline (whose hook files, memoryd_client/cline_hooks.py, run this command)
and OpenCode (whose plugin, memoryd_client/opencode_plugin.js, runs it too).

Reads the agent's JSON on stdin, tells the daemon, prints the agent's own output format. A hook
never blocks its agent: it always exits 0 with valid (possibly empty) output — on bad stdin, a
usage mistake, a slow or dead daemon — and it answers within a deadline well under the agent's
hook timeout. When the daemon cannot be reached the event is appended to a spool file that the
daemon replays when it is back. A daemon not restarted since an upgrade runs older code than the
hook, and refuses a field it does not know: the event is sent again with the fields every
daemon takes (:data:`FIELDS_TAKEN`). The payload is forwarded as it came: the daemon parses it and
renders the agent's output, so a hook process never imports json (or typing, or pathlib), and
it speaks the wire protocol without msgpack (memoryd_client.hook_wire).

Kept free of argparse and of the rest of the CLI so that a hook process starts fast.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

from memoryd_client import hook_wire

TYPE_CHECKING = False  # typing and pathlib cost a hook process ~10 ms; it needs neither
if TYPE_CHECKING:
    from typing import Any

HARNESSES = ("claude-code", "codex", "gemini", "cursor", "copilot", "cline", "opencode")
#: The agents as a usage line names them: ``claude-code|codex|…``.
CHOICE = "|".join(HARNESSES)
#: The events memoryd's hooks handle, per agent, by the agent's own names (what `memory hook
#: install` registers). Gemini CLI and Cursor name theirs differently: NATIVE_EVENTS says which
#: of memoryd's events each one is.
HARNESS_EVENTS = {
    "claude-code": ("SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "PostCompact",
                    "Stop", "SubagentStop", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "PostCompact",
              "Stop", "SessionEnd"),
    "gemini": ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent",
               "SessionEnd"),
    "cursor": ("sessionStart", "beforeShellExecution", "stop", "sessionEnd"),
    "copilot": ("sessionStart", "preToolUse", "postToolUse", "agentStop", "sessionEnd"),
    "cline": ("TaskStart", "TaskResume", "UserPromptSubmit", "TaskComplete"),
    "opencode": ("session.created", "tool.execute.before", "tool.execute.after", "session.idle",
                 "session.deleted"),
}
#: An agent's own event names (lower case) → memoryd's. Gemini CLI: BeforeAgent is its
#: UserPromptSubmit, BeforeTool its PreToolUse (it cannot add context there: a hard rule's deny
#: only), AfterTool where a lesson the call went against reaches the model (appended to the
#: tool's result), AfterAgent its Stop. Cursor: beforeShellExecution can only deny (a hard
#: rule); beforeSubmitPrompt cannot add context, so it is not installed. OpenCode (memoryd's
#: plugin passes its hook and event names): tool.execute.before can only block a call (a hard
#: rule), tool.execute.after is where a lesson reaches the model (appended to the tool's output),
#: session.idle (the agent finished its turn) is its Stop; the block goes into the system prompt.
#: Copilot CLI: its camelCase events; preToolUse can only deny (a hard rule), postToolUse adds
#: a lesson the call went against to the tool's result, agentStop is its Stop, and
#: userPromptSubmitted's output is dropped (not installed). Cline: a task's start and its
#: resumption are a session's start (each gets the block), TaskComplete its Stop; its tool hooks
#: can only cancel the whole task, so they are not installed.
NATIVE_EVENTS = {
    "gemini": {"beforeagent": "UserPromptSubmit", "beforetool": "PreToolUse",
               "aftertool": "PostToolUse", "afteragent": "Stop", "precompress": "PreCompact"},
    "cursor": {"beforeshellexecution": "PreToolUse", "pretooluse": "PreToolUse",
               "posttooluse": "PostToolUse", "beforesubmitprompt": "UserPromptSubmit",
               "precompact": "PreCompact"},
    "copilot": {"agentstop": "Stop", "userpromptsubmitted": "UserPromptSubmit"},
    "cline": {"taskstart": "SessionStart", "taskresume": "SessionStart", "taskcomplete": "Stop",
              "taskcancel": "Stop"},
    "opencode": {"session.created": "SessionStart", "tool.execute.before": "PreToolUse",
                 "tool.execute.after": "PostToolUse", "session.idle": "Stop",
                 "session.deleted": "SessionEnd"},
}
#: Event names the agents send, and the aliases accepted on the command line.
EVENTS = {
    "sessionstart": "SessionStart", "session-start": "SessionStart",
    "userpromptsubmit": "UserPromptSubmit", "prompt": "UserPromptSubmit",
    "pretooluse": "PreToolUse", "pre-tool-use": "PreToolUse",
    "posttooluse": "PostToolUse", "post-tool-use": "PostToolUse",
    "precompact": "PreCompact", "pre-compact": "PreCompact",
    "postcompact": "PostCompact", "post-compact": "PostCompact",
    "stop": "Stop", "subagentstop": "SubagentStop", "subagent-stop": "SubagentStop",
    "sessionend": "SessionEnd", "session-end": "SessionEnd",
}
#: Events whose output carries context into the conversation.
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse")
#: Seconds the whole exchange with the daemon may take, per event (agents allow 5-60 s).
#: PreToolUse runs before every tool call (PostToolUse after): a daemon slower than this is
#: not waited for.
DEADLINE_S = {"SessionStart": 2.5, "UserPromptSubmit": 1.5, "PreToolUse": 0.25,
              "PostToolUse": 0.25}
#: Events not worth replaying later: a tool call's lesson is of use only next to the call.
NOT_SPOOLED = ("PreToolUse", "PostToolUse")
DEFAULT_DEADLINE_S = 0.5
MAX_STDIN_BYTES = 4 * 1024 * 1024
SPOOL_NAME = "spool.msgpack"
#: The hook request's fields every daemon takes, whatever its wire revision (``cwd`` came in
#: revision 1): what a hook sends again to a daemon that refused a field it does not know, in
#: the words every revision refuses it with (memoryd.server.params).
FIELDS_TAKEN = ("harness", "event", "raw", "ts")
UNKNOWN_PARAM = "unknown param"
#: ``memory hook HARNESS --serve``: answer events, one JSON line each, until stdin closes.
SERVE = "--serve"


USAGE = (f"usage: memory hook {CHOICE} EVENT < payload.json\n"
         f"       memory hook install|uninstall {CHOICE} [--project DIR]")


def canonical(harness: str, name: str) -> str:
    """memoryd's name for an event an agent calls ``name`` (an unknown name as it is)."""
    folded = name.lower().replace("_", "-")
    return NATIVE_EVENTS.get(harness, {}).get(folded) or EVENTS.get(folded, name)


def carries_context(harness: str, event: str) -> bool:
    """Whether the agent adds what memoryd answers at ``event`` to the model's context (the
    rest can only deny a call, or nothing)."""
    if event not in CONTEXT_EVENTS:
        return False
    if harness == "gemini":
        return event != "PreToolUse"  # BeforeTool can deny or rewrite a call, not add to it
    if harness in ("cursor", "copilot", "opencode"):  # before a call: a deny only
        return event in ("SessionStart", "PostToolUse")
    if harness == "cline":  # its tool hooks are not installed (a cancel ends the task)
        return event in ("SessionStart", "UserPromptSubmit")
    return event != "PostToolUse"  # Claude Code and Codex: not installed there


def native(harness: str, event: str) -> str:
    """The agent's own name for memoryd's ``event`` (the first of its installed events that
    is it; ``event`` itself when the agent has no other name for it)."""
    return next((name for name in HARNESS_EVENTS.get(harness, ())
                 if canonical(harness, name) == event), event)


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
            ours = canonical(name, event)
            if ours.lower() != event.lower():  # the agent's own name for one of memoryd's
                lines.append(f"  {event} (memoryd's {ours})")
                continue
            aliases = [a for a, e in EVENTS.items() if e == ours and a != event.lower()]
            lines.append(f"  {event}" + (f" ({', '.join(aliases)})" if aliases else ""))
    lines += ["", f"memory hook {harness or 'AGENT'} --serve: the events one JSON line each "
              "on stdin, answered one line each, until stdin closes (a hook that stays: "
              "memoryd's OpenCode plugin runs it)."]
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

    sock = connect(socket_text(), deadline_s, retry_s=deadline_s / 2)  # a bare _socket
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
    if not isinstance(error, dict) or not error.get("message"):
        return {}
    message = error["message"]
    return {"problem": f"the daemon refused the event: {message}",
            "older": error.get("code") == "bad_params" and UNKNOWN_PARAM in str(message)}


def not_sent(request: dict[str, Any], why: str) -> str:
    """A hook ``request`` the daemon did not take (``why``), spooled for it to replay when it
    starts, unless its event is one of no use later (a tool call's); no output."""
    if request["event"] in NOT_SPOOLED:
        print(f"memoryd hook: {why}", file=sys.stderr)
        return ""
    append_spool(request)
    print(f"memoryd hook: {why}; event spooled", file=sys.stderr)
    return ""


def render(event: str, context: str | None, deny: str | None = None,
           harness: str = "claude-code", name: str | None = None) -> str:
    """The agent's own output for memoryd's ``event`` (``name``: the agent's name for it). Claude
    Code and Codex: JSON with ``hookSpecificOutput.additionalContext`` for context events (Codex
    validates hook output against strict schemas, so only the common subset is used); ``deny``
    (PreToolUse only: a hard rule the user opted into) denies the call, with the reason the agent
    reads. memoryd never answers "allow", which would skip the user's permission prompt. Gemini CLI:
    the same shape under its own event name; its BeforeTool cannot add context, so there only a deny
    is said (``decision``/``reason``, the reason sent to the model). Cursor: ``additional_context``
    at session start; before a shell command a deny only (``permission``, with ``agent_message`` for
    the model and ``user_message``). Copilot CLI: ``additionalContext`` at session start and after a
    tool call, a deny before one (``permissionDecision``, ``permissionDecisionReason``). Cline:
    ``{"cancel": false, "contextModification": …}`` at a task's start or resumption and with a
    prompt (Cline appends it to the user's message). OpenCode
    (memoryd's own plugin reads it): ``{"context": …}`` at session start and after a tool call,
    ``{"deny": …}`` before one (the plugin throws it, which blocks the call). Nothing (an empty
    string) otherwise. (The daemon renders; the hook process only prints, so it never imports
    json.)"""
    if event not in CONTEXT_EVENTS or not (context or deny):
        return ""
    if event == "PreToolUse" and harness in DENIALS:  # before a call: a deny only
        fields = DENIALS[harness](deny) if deny else None
    else:
        fields = _with_context(harness, event, context, deny, name)
    if fields is None:
        return ""
    import json

    return json.dumps(fields, ensure_ascii=False)


#: How an agent that can only deny a call before it runs is told so.
DENIALS = {
    "gemini": lambda deny: {"decision": "deny", "reason": deny},
    "cursor": lambda deny: {"permission": "deny", "agent_message": deny, "user_message": deny},
    "copilot": lambda deny: {"permissionDecision": "deny", "permissionDecisionReason": deny},
    "opencode": lambda deny: {"deny": deny},
}


def _with_context(harness: str, event: str, context: str | None, deny: str | None,
                  name: str | None) -> dict[str, Any] | None:
    """:func:`render`'s output where the agent takes context (:func:`carries_context`; None:
    nothing to say)."""
    if not context or not carries_context(harness, event):
        return None
    if harness == "gemini":
        return {"hookSpecificOutput": {"hookEventName": name or native(harness, event),
                                       "additionalContext": context}}
    if harness in ("cursor", "copilot"):
        return {"additional_context" if harness == "cursor" else "additionalContext": context}
    if harness == "cline":
        return {"cancel": False, "contextModification": context}
    if harness == "opencode":
        return {"context": context}
    output: dict[str, str] = {"hookEventName": event, "additionalContext": context}
    if deny and event == "PreToolUse":
        output.update(permissionDecision="deny", permissionDecisionReason=deny)
    return {"hookSpecificOutput": output}


def answer(harness: str, name: str, raw: bytes) -> str:
    """The agent's output for its event ``name`` with the payload ``raw`` ("" for none)."""
    event = canonical(harness, name)
    request = {"harness": harness, "event": event, "raw": raw.decode("utf-8", errors="replace"),
               "ts": time.time()}
    try:  # where the agent runs its hooks: the session's directory, for a payload without one
        request["cwd"] = os.getcwd()
    except OSError:  # the directory is gone
        pass
    return send(request)


def send(request: dict[str, Any]) -> str:
    """The agent's output for the hook ``request`` (its ``event``): the daemon asked within
    the event's deadline; what goes wrong is said on stderr, and the event spooled when the
    daemon cannot be reached (a tool call's is of no use later). A daemon of an older wire
    revision (one not restarted since an upgrade) refuses a field it does not know: the event
    goes again with the fields every daemon takes, so that the agent still gets its block, and
    if that is refused too it is spooled for the restarted daemon to replay."""
    event = request["event"]
    deadline_s = DEADLINE_S.get(event, DEFAULT_DEADLINE_S)
    end = time.monotonic() + deadline_s
    try:
        result = call_daemon(request, deadline_s)
        if result.get("older"):
            print(f"memoryd hook: {result['problem']}: memoryd runs older code than this hook "
                  "(restart it: `memory status` says how); sent again without what it does "
                  "not know", file=sys.stderr)
            result = call_daemon({k: v for k, v in request.items() if k in FIELDS_TAKEN},
                                 max(end - time.monotonic(), deadline_s / 2))
    except (FileNotFoundError, ConnectionError, BlockingIOError) as exc:  # not sent
        return not_sent(request, f"daemon unreachable ({exc.__class__.__name__})")
    except Exception as exc:  # a timeout or a bad reply: fail open
        print(f"memoryd hook: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return ""
    if result.get("older"):  # refused again: kept for the daemon that runs the new code
        return not_sent(request, result["problem"])
    output = result.get("output")
    if isinstance(output, str) and output:
        return output
    if result.get("problem"):
        print(f"memoryd hook: {result['problem']}", file=sys.stderr)
    return ""


def serve(harness: str, stdin: Any, stdout: Any) -> int:
    """``memory hook HARNESS --serve``: a hook process that stays, for an agent that runs in a
    process of its own and calls memoryd around every tool call (memoryd's OpenCode plugin):
    a process start per call cost each call tens of milliseconds. One JSON line per event in,
    ``{"id": N, "event": NAME, "payload": {…}}``, one out, ``{"id": N, "output": TEXT}``, the
    output `memory hook HARNESS NAME` would print ("" for none), each answered as that hook
    answers it, in order, until stdin closes. A line it cannot read, or longer than a hook
    reads, is answered with no output (with its id when it has one)."""
    import json

    source = stdin.buffer if hasattr(stdin, "buffer") else stdin
    while line := source.readline(MAX_STDIN_BYTES + 1):
        ident, output, request = None, "", None
        if len(line) <= MAX_STDIN_BYTES:
            try:
                request = json.loads(line)
            except ValueError:
                pass
        else:  # the rest of a line too long to read, skipped
            while line[-1:] not in ("\n", b"\n") and (line := source.readline(1 << 20)):
                pass
        if isinstance(request, dict):
            ident = request.get("id")
            event, payload = request.get("event"), request.get("payload")
            if isinstance(event, str) and isinstance(payload, dict):
                output = answer(harness, event, json.dumps(payload).encode("utf-8"))
        stdout.write(json.dumps({"id": ident, "output": output}) + "\n")
        stdout.flush()
    return 0


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
        if argv[1] == SERVE:
            return serve(argv[0], stdin, stdout)
        raw = stdin.buffer.read(MAX_STDIN_BYTES + 1) if hasattr(stdin, "buffer") else \
            stdin.read(MAX_STDIN_BYTES + 1).encode("utf-8", errors="replace")
        if len(raw) > MAX_STDIN_BYTES:  # cut short, it would read as no JSON at all
            print(f"memoryd hook: the payload is over {MAX_STDIN_BYTES >> 20} MiB; ignored",
                  file=sys.stderr)
            return 0
        output = answer(argv[0], argv[1], raw)
        if output:
            stdout.write(output + "\n")
            stdout.flush()
    except BaseException as exc:  # never block the agent, whatever happens
        try:
            print(f"memoryd hook: {exc.__class__.__name__}", file=sys.stderr)
        except Exception:
            pass
    return 0
