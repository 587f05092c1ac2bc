"""The filters a search, list or timeline request names, checked and turned into the store's
:class:`~memoryd.store.query.EntryQuery` and the vector index's
:class:`~memoryd.store.vectors.VectorFilter`."""

from __future__ import annotations

from dataclasses import dataclass, replace

from memoryd.agents import with_subagents
from memoryd.errors import BadParamsError
from memoryd.names import agent_problem
from memoryd.params import Params
from memoryd.project import project_of
from memoryd.store.database import Store
from memoryd.store.entries import KINDS, STATUSES
from memoryd.store.query import EntryQuery
from memoryd.store.vectors import VectorFilter


@dataclass(frozen=True)
class Filter:
    """The search's filters, for the vector index and for the store."""

    vectors: VectorFilter
    query: EntryQuery
    tags: tuple[str, ...]
    #: agents named that have no entry at all (a misspelt name finds nothing, and says so)
    unknown_agents: tuple[str, ...] = ()

    def within(self, start: float, end: float) -> Filter:
        since = max(start, self.vectors.since) if self.vectors.since is not None else start
        until = min(end, self.vectors.until) if self.vectors.until is not None else end
        return replace(self, vectors=replace(self.vectors, since=since, until=until),
                       query=self.query.created_within(start, end))




def request_filter(store: Store, params: Params, *, every_agent: bool = False,
                   any_status: bool = False) -> Filter:
    """The filters a request names. ``every_agent``: without agent or agents, every agent's
    entries (list and timeline; search asks for a namespace); ``any_status``: without status,
    every status's (timeline; the others keep to the active)."""
    agents, unknown = _agents(store, params, every_agent)
    category = params.text("category", max_len=200)
    categories = [category.strip()] if category not in (None, "", "-") else None
    kinds = params.strings("kind")
    for kind in kinds or ():
        if kind not in KINDS:
            raise BadParamsError(
                f"{params.method}: kind must be among {', '.join(KINDS)}; got {kind!r}")
    project = params.path("project")
    if project:  # a directory inside a repository, or a worktree of it: its project
        project = project_of(project)
    # "cwd" (`memory search --here`) and "in_project" (the prompt hook's search): the
    # entries of that directory's project and the global ones, as its block shows them
    in_project = params.path("cwd") or params.path("in_project")
    statuses = _statuses(params, any_status)
    since, until = params.time("since"), params.time("until")
    if since is not None and until is not None and since >= until:
        raise BadParamsError(
            f"{params.method}: since ({params.raw['since']}) is not before until "
            f"({params.raw['until']}): nothing could match; an age counts back from now, so "
            "--since 7d --until 1d is the week up to yesterday")
    tags = [t.lower() for t in params.strings("tags") or []]

    query = EntryQuery().agents(agents).categories(categories).kinds(kinds) \
        .projects([project] if project else None)
    projects: list[str | None] | None = [project] if project else None
    if in_project is not None:
        scope = project_of(in_project)
        query = query.in_project(scope)
        projects = [scope, None]
    query = query.statuses(statuses)
    if since is not None:
        query = query.created_since(since)
    if until is not None:
        query = query.created_until(until)
    for tag in tags:
        query = query.tag(tag)
    vector_filter = VectorFilter(agents, categories, kinds, projects, tuple(statuses), since,
                                 until)
    return Filter(vector_filter, query, tuple(tags), unknown)


def _agents(store: Store, params: Params, every_agent: bool
            ) -> tuple[list[str] | None, tuple[str, ...]]:
    """The agents to search (None: every one) with their subagents, and those named that
    have no entry at all."""
    agents = params.strings("agents")
    if agents is None:
        agent = params.agent(required=False)
        if agent is None and every_agent:
            agents = ["*"]
        elif agent is None:
            raise BadParamsError(f"{params.method}: give agent (your own namespace) or "
                                 "agents (a list, or ['*'] for all)")
        else:
            agents = [agent]
    if agents == ["*"]:
        return None, ()
    for name in agents:
        problem = agent_problem(name)
        if problem is not None:
            raise BadParamsError(f"{params.method}: agent {problem}")
    # a harness agent's subagents (claude-code.<agentId>) roll up under it
    known = store.known_agents()
    unknown = tuple(name for name in agents if known.isdisjoint(with_subagents([name], known)))
    return with_subagents(agents, known), unknown


def _statuses(params: Params, any_status: bool) -> list[str]:
    statuses = params.strings("status")
    if statuses is None and any_status:
        statuses = ["any"]
    statuses = statuses or ["active"]
    if statuses == ["any"]:
        statuses = list(STATUSES)
    for status in statuses:
        if status not in STATUSES:
            raise BadParamsError(
                f"{params.method}: status must be among {', '.join(STATUSES)} or any")
    return statuses
