"""Which agent a connection writes as, and who is on the other end.

A connection binds to one agent, once: with the ``bind`` method, or through the ``agent`` of
its first write (:data:`memoryd_client.wire.WRITE_METHODS`). From then on every write goes to
that agent's namespace whatever the params say: a write naming another agent is refused, a
forget or supersede without an agent acts as the bound one (so it cannot touch another
agent's entry), and ``writer``/``via`` are set here, never taken from the request. Reads name
other namespaces explicitly, as before.

The channel is what the client declares (the MCP server says ``mcp``, the `memory` command
``terminal`` when a person types it and ``cli`` otherwise). Our own MCP server and hooks
cannot be made to declare another one by what a model sends them; only a person's channel
creates ``feedback`` or releases a quarantined entry, and the MCP and hook channels cannot call
the maintenance methods; what only a person writes (feedback) only a person's channel forgets
or supersedes (memoryd.provenance, asked where those requests are served). A program of the
same user that speaks the protocol itself can declare anything — as it can edit the memory
files, or run the `memory` command in a terminal it made (``script``); the namespace protects
against confused deputies, not against the user's own code (docs/guarantees.md, "Namespaces").
"""

from __future__ import annotations

import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any

from memoryd_client.wire import CHANNELS, HUMAN_CHANNELS, TEAM_PREFIX, WRITE_METHODS

from memoryd.errors import BadParamsError, ForbiddenError, MemorydError
from memoryd.server.params import Params
from memoryd.sessions.registry import HARNESS_AGENTS

#: Methods a person runs (maintenance, configuration, deleting): not over MCP or a hook.
PERSON_METHODS = frozenset({"purge", "release", "pass_run", "undo", "promote_accept",
                            "notebook_check", "sources", "reload", "extract", "sync_init",
                            "sync", "sync_add_shared", "sync_remove_shared", "share"})
#: Methods that store an entry's text: their writer and via are the daemon's to set.
ENTRY_WRITES = frozenset({"remember", "remember_many", "supersede"})


@dataclass
class Caller:
    """One connection's identity, recorded by the daemon."""

    agent: str | None = None
    channel: str = "api"
    declared: bool = False  # the channel came from a bind
    refused: str | None = None  # why its last bind was refused: nothing else is served
    pid: int | None = None  # the process at the other end, where the system tells (Linux)

    @property
    def human(self) -> bool:
        return self.channel in HUMAN_CHANNELS

    @property
    def writer(self) -> str:
        """Provenance of what this connection writes: the agent, and the channel unless it is
        the plain API ("designer", "claude-code (hook)", "designer (mcp)")."""
        assert self.agent is not None
        return self.agent if self.channel == "api" else f"{self.agent} ({self.channel})"

    def bind_to(self, agent: str, how: str) -> None:
        if agent.startswith(TEAM_PREFIX):
            raise ForbiddenError(
                f"{how}: {agent!r} is a team's shared namespace, read-only here: an entry gets "
                "there only by `memory share ID NAME`, and leaves it when its line is taken "
                "out of entries.jsonl in the team's git repository (commit and push: every "
                "follower's next sync takes it out); `memory sync remove-shared NAME` stops "
                "following the team here (docs/sync.md)")
        if self.agent is None:
            self.agent = agent
        elif agent != self.agent:
            raise ForbiddenError(
                f"{how}: this connection is bound to agent {self.agent!r} and writes only its "
                f"namespace; open another connection to write as {agent!r}")


def bind(caller: Caller, params: Params) -> dict[str, Any]:
    """The ``bind`` method: say once which agent this connection is, and its channel. A
    refused bind refuses what follows it on the connection too, until a bind succeeds: a
    client may send its first request right behind its bind without waiting (the Python
    client does), and that request must not run as someone the connection is not."""
    try:
        result = _bind(caller, params)
    except MemorydError as exc:
        caller.refused = exc.message
        raise
    caller.refused = None
    return result


def _bind(caller: Caller, params: Params) -> dict[str, Any]:
    params.check_names()
    agent = params.agent(required=False)
    channel = params.choice("channel", CHANNELS)
    if channel is not None:
        if caller.declared and channel != caller.channel:
            raise ForbiddenError(f"bind: this connection already said it is {caller.channel!r}")
        caller.channel, caller.declared = channel, True
    if agent is not None:
        caller.bind_to(agent, "bind")
    return {"agent": caller.agent, "channel": caller.channel}


def enforce(caller: Caller, params: Params) -> None:
    """Make a request act as its connection (before it is dispatched): bind on the first
    write, refuse another namespace, set writer and via, keep feedback for people."""
    method = params.method
    params.caller = caller
    if caller.refused is not None:
        raise ForbiddenError(f"{method}: not served: this connection's bind was refused "
                             f"({caller.refused})")
    if method in PERSON_METHODS and caller.channel in ("mcp", "hook"):
        raise ForbiddenError(f"{method}: a person runs this, not an agent's {caller.channel} "
                             "connection")
    if method == "hook":
        harness = params.raw.get("harness")
        if isinstance(harness, str) and harness in HARNESS_AGENTS:
            if not caller.declared:
                caller.channel = "hook"
            caller.bind_to(HARNESS_AGENTS[harness], "hook")
        return
    if method not in WRITE_METHODS:
        return
    requests = [params]
    if method == "remember_many":
        items = params.raw.get("entries")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return  # the method itself says what is wrong with it
        requests = [Params(method, item) for item in items]
    for request in requests:
        _enforce_write(caller, request, method)


def _enforce_write(caller: Caller, request: Params, method: str) -> None:
    """One write (or one entry of a bulk write) as its connection's agent and writer."""
    named = request.agent(required=False)
    if named is not None:
        caller.bind_to(named, method)
    elif caller.agent is None:
        if method in ("forget", "supersede", "release", "scope"):
            raise ForbiddenError(
                f"{method}: this connection is not bound to an agent; name the agent "
                "(agent=…) or bind first")
        return  # the method says that the agent is required
    request.raw["agent"] = caller.agent
    if method in ENTRY_WRITES:  # a request's own writer or via was refused already
        request.raw["writer"] = caller.writer
        if request.raw.get("kind") == "feedback" and not caller.human:
            raise ForbiddenError(feedback_refusal(method))
    if method == "purge" and not isinstance(request.raw.get("agent"), str):
        raise BadParamsError("purge: agent is required")


def feedback_refusal(method: str) -> str:
    return (f"{method}: feedback is the user's own words, and only a person creates it (a "
            "Feedback section in a memory file, or `memory store --kind feedback` at a "
            "terminal); store this as a note or a lesson")


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED / LOCAL_PEERCRED)."""
    if hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1]
    if sys.platform == "darwin":  # struct xucred { u_int version; uid_t uid; ... }
        local_peercred, sol_local = 0x001, 0
        creds = sock.getsockopt(sol_local, local_peercred, struct.calcsize("2I"))
        return struct.unpack("2I", creds[: struct.calcsize("2I")])[1]
    return None


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process at the other end, where the system says (SO_PEERCRED: Linux):
    which agent process a hook or an MCP server came from (memoryd.sessions.mcp_reads)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[0] or None
