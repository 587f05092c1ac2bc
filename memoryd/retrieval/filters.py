"""The filters a search, list or timeline request names (a
:class:`~memoryd.retrieval.records.FilterRequest`, validated where it was parsed) turned into
the store's :class:`~memoryd.store.query.EntryQuery` and the vector index's
:class:`~memoryd.store.vectors.VectorFilter`."""

from __future__ import annotations

from dataclasses import dataclass, replace

from memoryd.agents import teams as team_namespaces
from memoryd.agents import with_subagents
from memoryd.project import project_of
from memoryd.retrieval.records import FilterRequest
from memoryd.store.database import Store
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
    #: a category named that no entry has, in any form (Store.categories_named)
    unknown_category: str | None = None

    def within(self, start: float, end: float) -> Filter:
        since = max(start, self.vectors.since) if self.vectors.since is not None else start
        until = min(end, self.vectors.until) if self.vectors.until is not None else end
        return replace(self, vectors=replace(self.vectors, since=since, until=until),
                       query=self.query.created_within(start, end))


def request_filter(store: Store, request: FilterRequest) -> Filter:
    """The filters a request names, for the vector index and the store: the agents with
    their subagents, the category as the categories it names (any case, a heading's words:
    "Mistakes" is the section's "mistakes"), and the directories as their projects."""
    agents, unknown = _agents(store, request.agents, request.teams)
    categories, unknown_category = None, None
    if request.category is not None:
        named = store.categories_named(request.category)
        categories = named or [request.category]
        unknown_category = None if named else request.category
    kinds = list(request.kinds) if request.kinds is not None else None
    project = project_of(request.project) if request.project else None
    statuses = list(request.statuses)
    query = EntryQuery().agents(agents).categories(categories).kinds(kinds) \
        .projects([project] if project else None)
    projects: list[str | None] | None = [project] if project else None
    if request.in_project is not None:
        scope = project_of(request.in_project)
        query = query.in_project(scope)
        projects = [scope, None]
    query = query.statuses(statuses)
    if request.since is not None:
        query = query.created_since(request.since)
    if request.until is not None:
        query = query.created_until(request.until)
    for tag in request.tags:
        query = query.tag(tag)
    vector_filter = VectorFilter(agents, categories, kinds, projects, tuple(statuses),
                                 request.since, request.until)
    return Filter(vector_filter, query, request.tags, unknown, unknown_category)


def _agents(store: Store, named: tuple[str, ...] | None, teams: bool = False
            ) -> tuple[list[str] | None, tuple[str, ...]]:
    """The agents to search (None: every one) with their subagents (and with ``teams``, the
    teams' namespaces), and those named that have no entry at all."""
    if named is None:
        return None, ()
    # a harness agent's subagents (claude-code.<agentId>) roll up under it
    known = store.known_agents()
    unknown = tuple(name for name in named if known.isdisjoint(with_subagents([name], known)))
    agents = with_subagents(named, known)
    agents += [team for team in (team_namespaces(known) if teams else ()) if team not in agents]
    return agents, unknown
