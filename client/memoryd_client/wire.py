"""The wire protocol between memoryd and its clients, defined once (the daemon imports it).

A frame is a 4-byte big-endian unsigned length followed by that many bytes of msgpack, which
must decode to a map.

    request  {"id": int, "method": str, "params": map, "progress": bool (optional)}
    reply    {"id": int, "result": any}
          or {"id": int, "error": {"code": str, "message": str}}
    progress {"id": int, "progress": {"what": str, "phase": str, "done": int, "total": int,
                                      "counts": map, "eta_s": float}}
             (every field but "what" optional; eta_s: the seconds left, when known)

The error codes are the ``code`` attributes of the classes in :mod:`memoryd_client.errors`.

A request with ``"progress": true`` is answered, while the daemon works on it, by progress
frames with its id, one every ~0.5 s (changed or not), then by its reply: a client waits as
long as they come (its timeout is an idle timeout, reset by each frame), and a daemon that
stops answering still times out. A request without it gets its reply alone, as before (a
daemon that predates progress frames ignores the flag, so a new client works with it too).
Clients ask for progress on the requests that can take long (:data:`PROGRESS_METHODS`).

A connection binds to one agent, once: with ``{"method": "bind", "params": {"agent": …,
"channel": …}}`` or, failing that, through the ``agent`` of its first write. Every write on
it (:data:`WRITE_METHODS`) then goes to that agent's namespace; a write naming another agent
is refused (``forbidden``). Reads name any agent explicitly. The channel says who is on the
other end (:data:`CHANNELS`); only a person at a terminal (:data:`HUMAN_CHANNELS`) creates
``feedback`` or releases a quarantined entry. A connection's frames are answered in order, so
a client may send its first request right behind its bind without waiting; after a refused
bind nothing more is served on that connection until a bind succeeds.

The protocol has a revision, :data:`REVISION`, that the daemon reports (``status`` and
``doctor``'s ``revision``): after an upgrade the installed client is new at once, while a daemon
started before it runs the old code until it is restarted, and may refuse what the new client
sends (an older daemon refuses a param it does not know). A daemon without a revision predates
them. Additions are additive: a new daemon serves an old client as before.
"""

from __future__ import annotations

import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The protocol's revision: raised whenever a request may carry a param, or a reply a field,
#: that a daemon of the revision before does not know. 1 (2026-12-01): ``hook`` takes ``cwd``
#: (2026-11-30), and ``status`` and ``doctor`` say the daemon's ``revision`` (none before).
#: 2 (2026-12): ``supersede``'s reply and each of ``remember_many``'s results say
#: ``redacted`` (the kinds of secret taken out), as ``remember``'s did.
REVISION = 2
#: Largest frame either side accepts (the length prefix excluded).
MAX_FRAME_BYTES = 8 * 1024 * 1024
HEADER = struct.Struct(">I")

#: Methods that write an agent's namespace: they act as the connection's bound agent.
WRITE_METHODS = frozenset({"remember", "remember_many", "supersede", "forget", "file_write",
                           "file_replace", "file_insert", "release", "purge", "scope",
                           "move_project"})
#: What each method takes. The daemon refuses a request carrying any other name, so that a
#: misspelt filter ("kinds") is an error rather than a search of everything. Each map of
#: ``remember_many``'s ``entries`` takes ``remember``'s params. ``writer`` and ``via`` are
#: never a request's: the daemon sets them from the connection.
_FILTERS = frozenset({"agent", "agents", "category", "kind", "tags", "project", "cwd", "status",
                      "since", "until", "shared"})
PARAMS: dict[str, frozenset[str]] = {
    "bind": frozenset({"agent", "channel"}),
    "status": frozenset({"sources"}),
    "doctor": frozenset(),
    "reload": frozenset(),
    "remember": frozenset({"agent", "category", "text", "kind", "key", "tags", "confidence",
                           "force", "cwd", "project", "session", "polarity", "created",
                           "message_id"}),
    "remember_many": frozenset({"entries"}),
    "search": _FILTERS | {"query", "limit", "min_score", "match", "now", "explain"},
    "list": _FILTERS | {"limit", "offset", "cursor", "order", "prefix"},
    "timeline": _FILTERS | {"bucket"},
    "get": frozenset({"id"}),
    "forget": frozenset({"id", "agent", "reason"}),
    "supersede": frozenset({"id", "text", "agent", "confidence"}),
    "scope": frozenset({"id", "agent", "scope", "project"}),
    "move_project": frozenset({"from", "to", "global", "agent"}),
    "history": frozenset({"id", "agent", "key"}),
    "sources": frozenset({"action", "name", "path", "kind", "format", "agent", "project_root",
                          "notebook_lines"}),
    "file_list": frozenset({"agent"}),
    "file_read": frozenset({"agent", "path"}),
    "file_write": frozenset({"agent", "path", "text"}),
    "file_replace": frozenset({"agent", "path", "old", "new"}),
    "file_insert": frozenset({"agent", "path", "line", "text"}),
    "context": frozenset({"agent", "cwd", "prompt", "budget", "session"}),
    "hook": frozenset({"harness", "event", "raw", "payload", "ts", "cwd"}),
    "mcp_read": frozenset({"agent", "tool", "entries", "cwd", "session", "started"}),
    "explain": frozenset({"session"}),
    "extract": frozenset({"session", "dry_run"}),
    "session": frozenset({"id"}),
    "sessions": frozenset({"agent", "project", "limit", "offset"}),
    "usage": frozenset({"by", "agents", "kind", "limit"}),
    "pass_list": frozenset(),
    "pass_run": frozenset({"name", "agent", "project", "dry_run", "full"}),
    "pass_show": frozenset({"id", "offset"}),
    "pass_runs": frozenset({"name", "entry", "limit", "offset"}),
    "undo": frozenset({"id"}),
    "promote_accept": frozenset({"id"}),
    "notebook_check": frozenset({"path", "agent", "fix"}),
    "purge": frozenset({"agent", "since", "match", "confirm"}),
    "import_history": frozenset({"harnesses", "since", "dry_run", "detach"}),
    "release": frozenset({"id", "agent"}),
    "sync_init": frozenset({"remote"}),
    "sync": frozenset(),
    "sync_add_shared": frozenset({"name", "remote"}),
    "sync_remove_shared": frozenset({"name"}),
    "share": frozenset({"id", "name", "agent"}),
}
#: Methods that change nothing: one that timed out may be sent again. Any other may still be
#: carried out after its client gave up waiting (a daemon stopped, then resumed, works through
#: what it was sent): sent again, an insert is made twice.
READ_METHODS = frozenset({"status", "doctor", "search", "list", "timeline", "get", "history",
                          "file_list", "file_read", "context", "explain", "session",
                          "sessions", "usage", "pass_list", "pass_show", "pass_runs"})
#: Requests that can take long (a big import, a pass over a big store, a purge, a source's
#: first scan): clients ask for progress frames on them.
PROGRESS_METHODS = frozenset({"remember_many", "pass_run", "undo", "promote_accept",
                              "notebook_check", "purge", "sources", "reload", "extract",
                              "import_history", "sync_init", "sync", "sync_add_shared",
                              "sync_remove_shared", "share"})
#: Who a connection says it is: the Python library or a program speaking the protocol (api),
#: the `memory` command at a terminal (terminal) or not (cli: a script, an agent's shell),
#: the MCP server (mcp), an agent's lifecycle hook (hook).
CHANNELS = ("api", "terminal", "cli", "mcp", "hook")
HUMAN_CHANNELS = frozenset({"terminal"})

#: An agent's name (a bind's, a write's): also a ledger file name, so no path separators and
#: no leading dot (memoryd.names compiles it for the daemon).
AGENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
MAX_AGENT_CHARS = 64


def agent_problem(value: str) -> str | None:
    """Why ``value`` cannot be an agent's name, or None: the daemon's rule, which a client
    can check before it asks (`memory mcp --agent` at its start)."""
    import re  # not at import: a hook's process reads no name

    if len(value) > MAX_AGENT_CHARS:
        return f"is {len(value)} characters long; the limit is {MAX_AGENT_CHARS}"
    if not re.match(AGENT_PATTERN, value):
        return (f"{value!r} is not a valid agent name (letters, digits, '.', '_', '-'; "
                f"{MAX_AGENT_CHARS} at most; starting with a letter or digit)")
    return None


#: The namespaces of the teams a daemon follows (``team.NAME``: `memory sync add-shared`): read
#: only; an entry gets there by ``share``.
TEAM_PREFIX = "team."

#: What a watched source's files are (``sources`` ``add``: ``kind``), and the formats each
#: kind's files may be in (``format``): a transcript's names the agent that writes it
#: (docs/harnesses.md).
SOURCE_KINDS = ("memory", "transcript")
TRANSCRIPT_FORMATS = ("claude-code", "codex", "gemini", "copilot", "cline", "aider", "generic")
SOURCE_FORMATS = ("markdown", *TRANSCRIPT_FORMATS)

#: First line of everything memoryd injects into an agent's context. Ingestion drops any
#: transcript content that carries it, so injected memory never feeds back into memory.
INJECTION_MARKER = "<!-- memoryd:ctx v1 -->"


#: Whether this process reads and writes its frames without msgpack
#: (:mod:`memoryd_client.hook_wire`, standard msgpack in pure Python). A `memory` command sends
#: one request and prints one reply, both small, and importing msgpack (with msgpack.ext,
#: datetime and collections) was ~5 ms of its ~23 ms of CPU: the command line sets it for the
#: commands it reads itself (memoryd_client.cli). A reply over LEAN_MAX_BYTES is still read by
#: msgpack, whose C decoder is the faster one on a big reply.
lean = False
LEAN_MAX_BYTES = 1 << 16


def pack(message: dict[str, Any]) -> bytes:
    """One frame: length prefix plus msgpack body."""
    if lean:
        from memoryd_client import hook_wire

        body = hook_wire.pack(message)
    else:
        import msgpack

        body = msgpack.packb(message, use_bin_type=True)
    if len(body) > MAX_FRAME_BYTES:
        from memoryd_client.errors import FrameTooLargeError

        raise FrameTooLargeError(
            f"frame of {len(body)} bytes exceeds the limit of {MAX_FRAME_BYTES} bytes"
        )
    return HEADER.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    """The body length announced by a 4-byte header."""
    (length,) = HEADER.unpack(header)
    return int(length)


def unpack(body: bytes) -> dict[str, Any]:
    """Decode a frame body; raises BadFrameError unless it is a msgpack map."""
    from memoryd_client.errors import BadFrameError

    try:
        if lean and len(body) <= LEAN_MAX_BYTES:
            from memoryd_client import hook_wire

            message = hook_wire.unpack(body)
        else:
            import msgpack

            message = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception as exc:
        raise BadFrameError(f"frame is not valid msgpack: {exc}") from None
    if not isinstance(message, dict):
        raise BadFrameError(f"frame must be a msgpack map, got {type(message).__name__}")
    return message
