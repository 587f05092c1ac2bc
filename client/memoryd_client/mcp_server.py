"""``memory mcp --agent NAME``: memoryd's memory tools as an MCP stdio server.

Built on the official ``mcp`` SDK (PyPI ``mcp``, 2.x; the client's ``mcp`` extra). Every tool
talks to the daemon; stdout is the JSON-RPC wire, so nothing else prints to it.

The server works for the directory it was started in, as `memory store` does there (agents start
it in their workspace): memory_remember writes for that git repository unless its ``scope`` is
"global", and memory_context shows that project's block. A tool refuses arguments it does not
take, naming the ones it takes (the SDK would drop them silently), and an argument of the wrong
type, out of its range or not among its values, naming it and what it takes (the SDK's message
is pydantic's dump).

What search, recent, get and context show the model counts as injected into the agent's
session, as the hooks' block does, and is judged with it (:class:`Reads`; which session:
memoryd.sessions.mcp_reads).

The tools are a table (memoryd_client.mcp_tools), their answers in the model's words
(memoryd_client.mcp_text). This module registers them: the SDK reads each tool's parameters from
a signature made of the table, with the SDK's types, and each call talks to the daemon over a
client of its own, in a worker thread.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from memoryd_client import wire
from memoryd_client.client import Client
from memoryd_client.command_spec import Values
from memoryd_client.commands import command_at
from memoryd_client.errors import DaemonUnreachableError, MemorydError, UsageError
from memoryd_client.mcp_arguments import REQUIRED, Param, Tool, refusing
from memoryd_client.mcp_tools import TOOLS, Shown
from memoryd_client.methods import DEFAULT_TIMEOUT_S

INSTRUCTIONS = (
    "Persistent memory for this agent, kept by memoryd across sessions. Your memory directory "
    "holds markdown files you maintain (CONTEXT.md is loaded into every session). Search before "
    "re-deriving something you may have learned before; remember lasting preferences, "
    "corrections and non-obvious facts, not task progress or things the project itself shows. "
    "Without session hooks, call memory_context once at the start of a session."
)
#: The SDK the server is built on, as the client's ``mcp`` extra pins it.
MCP_REQUIREMENT = "mcp==2.3.0"


def client_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memoryd-client")
    except PackageNotFoundError:
        return "0+unknown"


def working_directory() -> str:
    """Where the server was started; "/" (no project: global) if that directory is gone."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        return "/"


def scope_of(cwd: str) -> tuple[str | None, str]:
    """The project memory_remember writes for by default (the git repository the server was
    started in: Claude Code and Codex start it in the workspace), and how to say so."""
    from memoryd_client.project import repository_of

    repository = repository_of(cwd)
    if repository is None:
        return None, (f"this server runs outside a git repository ({cwd}), so every memory "
                      "is global: shown in every project")
    return repository, (f"project (the default): the memory belongs to the repository this "
                        f"server runs in ({repository}) and is shown only there; global: shown "
                        "in every project, for what holds everywhere (the user's preferences, "
                        "how they like to work), not for this codebase")


class Reads:
    """Tells the daemon which entries a tool's answer showed the agent, so that they count as
    injected into its session and are judged like the block's (the ``mcp_read`` method:
    memoryd.sessions.mcp_reads). The server cannot know its session: it sends what the daemon
    finds it by (when it started, its directory, a session id its environment may hold; the
    daemon sees which process it is). Never fails a tool: a refusal or a daemon gone (or one
    from before ``mcp_read``) is logged, and the answer goes to the model as it is."""

    #: Where a harness may put its session id in the server's environment.
    SESSION_VARIABLES = ("CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID")

    def __init__(self, agent: str, cwd: str) -> None:
        self.agent = agent
        self.cwd = cwd
        self.started = time.time()
        self.session = next((os.environ[name] for name in self.SESSION_VARIABLES
                             if os.environ.get(name)), None)

    def record(self, client: Client, tool: str, entries: list[str]) -> None:
        """What ``tool`` showed, told over its call's ``client``."""
        if not entries:
            return
        try:
            client.call("mcp_read", {
                "agent": self.agent, "tool": tool, "entries": list(dict.fromkeys(entries)),
                "cwd": self.cwd, "started": self.started,
                **({"session": self.session} if self.session else {})})
        except MemorydError as exc:
            print(f"memoryd MCP: what {tool} showed is not counted for the session: "
                  f"{exc.message}", file=sys.stderr)


def build_server(agent: str, connect: Callable[[], Client], cwd: str | None = None) -> Any:
    """The server, its tools registered from :data:`TOOLS`; each call talks to the daemon
    over a client of its own, from ``connect``."""
    try:
        from mcp.server import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
        from pydantic import BeforeValidator, Field, ValidationError
    except ImportError:
        raise SystemExit(
            f"memory mcp needs the MCP SDK (the PyPI package mcp): {sys.executable} -m pip "
            f"install '{MCP_REQUIREMENT}'") from None

    server_cwd = os.path.abspath(cwd or working_directory())
    repository, scope = scope_of(server_cwd)
    facts = {"agent": agent, "cwd": server_cwd, "scope": scope, "project": repository or ""}
    reads = Reads(agent, server_cwd)
    server = refusing(MCPServer, ToolError, ValidationError,
                      {tool.name: tool for tool in TOOLS})(
        "memoryd", instructions=INSTRUCTIONS, version=client_version())
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    adds = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    replaces = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    for tool in TOOLS:
        function = _function(tool, connect, facts, ToolError, reads)
        function.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY,
                               default=inspect.Parameter.empty if p.default is REQUIRED
                               else p.default,
                               annotation=_annotation(p, facts, Field, BeforeValidator))
             for p in tool.params],
            return_annotation=str if tool.text else dict[str, Any])
        server.add_tool(function, name=tool.name, description=tool.description,
                        annotations=(replaces if tool.destructive else adds) if tool.writes
                        else read_only,
                        structured_output=False if tool.text else None)
    return server


def _function(tool: Tool, connect: Callable[[], Client], facts: dict[str, str],
              tool_error: type[Exception], reads: Reads) -> Callable[..., Any]:
    """What the SDK calls for ``tool``; a daemon's refusal reaches the model as a tool error,
    with the reason. The entries an answer shows are counted for the session (``reads``).

    Each call has its own client (its own connection), used in a worker thread, and a call
    the MCP client cancels stops at once: its connection is shut (the thread's wait for the
    daemon ends, as the call's client is no other call's) instead of holding the thread, and
    the server's exit, until the daemon answers or the timeout passes. The SDK runs a sync
    tool in a thread it waits for even when the call is cancelled."""

    async def serve(**values: Any) -> Any:
        import anyio
        import anyio.to_thread

        client = connect()

        def answer() -> Any:
            try:
                return _answer(tool, client, values, facts, tool_error, reads)
            finally:
                client.close()

        try:
            return await anyio.to_thread.run_sync(answer, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            client.interrupt()
            raise

    serve.__name__ = tool.name
    return serve


def _answer(tool: Tool, client: Client, values: dict[str, Any], facts: dict[str, str],
            tool_error: type[Exception], reads: Reads) -> Any:
    """One call of ``tool``, in a worker thread: the daemon's answer in the model's words."""
    try:
        if tool.call is not None:
            answer = tool.call(client, values, facts)
            if isinstance(answer, Shown):
                reads.record(client, tool.name, answer.entries)
                return answer.text
            return answer
        assert tool.command is not None and tool.reply is not None
        command = command_at(tool.command)
        args = Values({**command.defaults(), **{fact: facts[fact] for fact in tool.facts},
                       **{p.dest: values[p.name] for p in tool.params
                          if values[p.name] is not None}})
        assert command.request is not None
        result = command.request(args, client)
        reply = tool.reply(result, args)
        if tool.shown is not None:
            reads.record(client, tool.name, tool.shown(result))
        return reply
    except DaemonUnreachableError as exc:
        if exc.sent and tool.check:  # it may still be carried out: look before a retry
            raise tool_error(f"{exc.message} ({tool.check})") from None
        raise tool_error(exc.message) from None
    except MemorydError as exc:
        raise tool_error(exc.message) from None


def _annotation(param: Param, facts: dict[str, str], field: Any, before: Any) -> Any:
    """The type the SDK makes the parameter's schema of. A number is no boolean (pydantic
    takes true for 1: `limit: true` was a search for one hit)."""
    kind: Any = {"str": str, "int": Annotated[int, before(_no_boolean)],
                 "strs": list[str]}.get(param.kind) \
        if isinstance(param.kind, str) else Literal[param.kind]
    if param.default is None:
        kind = kind | None
    bounds = {name: value for name, value in (("ge", param.ge), ("le", param.le),
                                              ("max_length", param.max_chars))
              if value is not None}
    description = param.description(facts) if callable(param.description) \
        else param.description
    return Annotated[kind, field(description=description, **bounds)]


def _no_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


def run_command(args: Values) -> int:
    """`memory mcp`: its clients find the socket as every client does, or use --socket's. An
    agent's name the daemon would refuse is refused here, at the start (exit 2): a server
    that started would list its tools and fail every call."""
    problem = wire.agent_problem(args.agent)
    if problem is None and args.agent.startswith(wire.TEAM_PREFIX):
        problem = (f"{args.agent!r} is a team's shared namespace, read only: the tools write "
                   "as their agent (memory_search's other_agent reads a team's memory)")
    if problem is not None:
        raise UsageError(f"memory mcp: --agent {problem}")
    return run_mcp(args.agent, args.timeout, args.socket)


def run_mcp(agent: str, timeout_s: float = DEFAULT_TIMEOUT_S, socket: str | None = None) -> int:
    # each call's client is bound to the agent: it writes only its namespace
    server = build_server(agent, lambda: Client(socket, agent=agent, channel="mcp",
                                                timeout_s=timeout_s))
    repository, _ = scope_of(working_directory())
    print(f"memoryd MCP server for agent {agent} on stdio; memory_remember writes for "
          + (f"the project {repository}" if repository else "no project (global): not in "
             "a git repository"), file=sys.stderr)
    server.run()
    return 0
