"""Agent namespaces and the subagents that roll up under them.

A Claude Code subagent's turns are kept in a namespace of their own, ``claude-code.<agentId>``
(:func:`memoryd.ingest.indexer.agent_for_sidechain`), one per subagent run, so there are as
many as there were runs; a Codex subagent's ``codex.<nickname or role>``, a Gemini CLI
subagent's chat ``gemini.subagent`` (the transcript parsers that mark subagents' turns:
claude_code, codex, gemini). They roll up under their harness agent: a search or a listing of
``claude-code`` includes them (a search of ``claude-code.<agentId>`` itself still reads that
one namespace only), and the agents ``memory status`` lists are the harness agents with a count
of their subagent namespaces.
"""

from __future__ import annotations

from collections.abc import Iterable

from memoryd_client.wire import TEAM_PREFIX

#: Agents whose transcripts put subagents in namespaces ``<agent>.<id>``.
SUBAGENT_PARENTS = ("claude-code", "codex", "gemini")


def parent_of(agent: str) -> str | None:
    """The harness agent a subagent namespace rolls up under (None: not a subagent's)."""
    parent, dot, rest = agent.partition(".")
    return parent if dot and rest and parent in SUBAGENT_PARENTS else None


def with_subagents(agents: Iterable[str], known: Iterable[str]) -> list[str]:
    """``agents`` and, for each harness agent among them, its subagents' namespaces."""
    wanted = list(dict.fromkeys(agents))
    parents = {a for a in wanted if a in SUBAGENT_PARENTS}
    if parents:
        wanted += sorted(a for a in known if parent_of(a) in parents and a not in wanted)
    return wanted


def teams(known: Iterable[str]) -> list[str]:
    """The teams' namespaces among the ``known`` agents (``team.NAME``, memoryd.sync.shared:
    what every agent is given beside its own), in order."""
    return sorted(agent for agent in known if agent.startswith(TEAM_PREFIX))


def sharing(agent: str, shared_agents: Iterable[str]) -> tuple[str, ...]:
    """``agent`` and the agents it shares what it knows with (``context.shared_agents``, the
    harnesses with hooks: a lesson Claude Code learned reaches Codex): its own first."""
    shared = tuple(shared_agents)
    return (agent, *(a for a in shared if a != agent)) if agent in shared else (agent,)


def rolled_up(agents: Iterable[str]) -> tuple[list[str], dict[str, int]]:
    """The agents without subagent namespaces, and how many of those each parent has."""
    top: list[str] = []
    subagents: dict[str, int] = {}
    for agent in agents:
        parent = parent_of(agent)
        if parent is None:
            top.append(agent)
        else:
            subagents[parent] = subagents.get(parent, 0) + 1
            top.append(parent)
    return sorted(set(top)), subagents
