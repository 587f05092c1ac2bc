"""Memory an agent read through its MCP tools, counted as injected into its session (issue 37 §1).

The session-start block and the prompt hook know their session: the hook's payload names it.
An MCP server does not: the agent starts it with a fixed command line and environment, and the
MCP protocol carries no session. Claude Code gives ``CLAUDE_CODE_SESSION_ID`` to the commands
its Bash tool runs but not to MCP servers (anthropics/claude-code#61752), Codex sets
``CODEX_THREAD_ID`` for its commands, not its MCP servers (openai/codex#19937). So the server
says what it knows of itself (memoryd_client.mcp_server) and the daemon finds the session:

1. **The harness's session id**, when the server's environment has one (a harness that sets
   ``CLAUDE_CODE_SESSION_ID`` or ``CODEX_THREAD_ID`` for it) and that session has not ended:
   after ``/clear`` Claude Code goes on with a new session and the same server, whose
   environment still names the old one.
2. **The agent process both came from.** The agent starts its hooks and its MCP server
   itself. The daemon sees which process is at the other end of a connection (SO_PEERCRED)
   and reads its parents from ``/proc`` (Linux): those of a session's hooks (SessionStart,
   UserPromptSubmit), and those of the MCP server. Among the agent's sessions not ended and
   seen since the server started, the one whose hooks share the nearest ancestor with the
   server (the fewest steps up, both sides) is its session: two sessions in one repository,
   two terminals, two worktrees are told apart. The daemon keeps the hooks' parents in
   memory: after a restart a session is known again at its next prompt.
3. **Otherwise** (no hooks, no ``/proc`` as on macOS, a daemon restarted since the session's
   last prompt): the agent's session not ended in the server's project (its git repository)
   seen most recently since the server started — a guess, right unless two sessions of the
   agent work in one project at once.

Nothing found (a server used outside any session memoryd knows): the read is not counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memoryd.sessions.context import SECTION_OF_KIND, Block, Item, render
from memoryd.store.records import StoredEntry
from memoryd.store.usage import USABLE_KINDS, LiveSession

#: The MCP tools whose answers hold entries' text (memoryd_client.mcp_tools).
READ_TOOLS = ("memory_search", "memory_recent", "memory_get", "memory_context")
#: A session seen this long before the server started may still be the server's (its
#: SessionStart hook ran before the agent started the server).
STARTED_SLACK_S = 300.0
#: The hook events whose processes' parents the daemon keeps for their session.
ANCESTRY_EVENTS = ("SessionStart", "UserPromptSubmit")
#: How many sessions' hook ancestors the daemon keeps (sessions that crashed never end).
KEEP_SESSIONS = 2000
#: How many ancestors of a hook or a server are read: the agent is its parent, or its
#: grandparent (a shell between; a wrapper such as ``uv run``).
DEPTH = 4


def ancestors(pid: int | None, depth: int = DEPTH) -> tuple[int, ...]:
    """``pid``'s parent, grandparent, … (``depth`` of them, init excluded), read from /proc;
    () where there is none (macOS) or the process is gone. A few file reads: ~50 µs."""
    found: list[int] = []
    while pid is not None and pid > 1 and len(found) < depth:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            break
        # "pid (command) state ppid …": the command may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 2 or not fields[1].isdigit():
            break
        pid = int(fields[1])
        if pid > 1:
            found.append(pid)
    return tuple(found)


@dataclass(frozen=True)
class Reader:
    """What an MCP server says of itself, to find its session."""

    agent: str
    project: str | None  # the git repository it runs in
    pids: tuple[int, ...]  # its parent, grandparent, …
    started: float | None  # when it started
    session: str | None  # a session id from its environment


def nearest(server: Sequence[int], hooks: Sequence[int]) -> int | None:
    """How far apart the server and a session's hooks are: the fewest steps up from both to
    an ancestor they share (None: none)."""
    best = None
    for up, pid in enumerate(server):
        if pid in hooks:
            steps = up + list(hooks).index(pid)
            best = steps if best is None else min(best, steps)
    return best


def session_of(reader: Reader, hinted_ended: bool | None, live: Sequence[LiveSession],
               hook_pids: Mapping[str, Sequence[int]]) -> str | None:
    """The session an MCP read belongs to (see the module's text); ``hinted_ended``: whether
    the session its environment names ended (None: unknown to the index); ``live``: the
    agent's sessions not ended, seen since the server started, latest first."""
    if reader.session and not hinted_ended:
        return reader.session
    linked = [(steps, n, s.id) for n, s in enumerate(live)
              if (steps := nearest(reader.pids, hook_pids.get(s.id, ()))) is not None]
    if linked:
        return min(linked)[2]
    if reader.project is not None:
        return next((s.id for s in live if s.project == reader.project), None)
    return None


def read_block(entries: Sequence[StoredEntry]) -> Block:
    """What the agent read, as an injection (the items ``memory explain`` shows): the entries
    an agent is told to act on, active and not quarantined."""
    items: list[Item] = []
    for entry in entries:
        if entry.kind not in USABLE_KINDS or entry.status != "active" or entry.quarantined:
            continue
        items.append(Item(SECTION_OF_KIND[entry.kind], f"- {render(entry)}", len(items),
                          entry_id=entry.uid))
    return Block("\n".join(i.text for i in items), items)
