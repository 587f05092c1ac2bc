"""The wire's requests about entries and searches, parsed into the records the layers below
take (memoryd.store.records, memoryd.retrieval.records): the wire's
:class:`~memoryd.server.params.Params` stops here. Each parse says what is wrong with a request
in the method's words, as Params does, in the order the params were always checked (a request
with two mistakes is told the same first one).
"""

from __future__ import annotations

import time

from memoryd.agents import sharing
from memoryd.errors import BadParamsError
from memoryd.names import agent_problem
from memoryd.passes.scope import TIERS
from memoryd.redact import redact
from memoryd.retrieval.records import MAX_HITS, MAX_QUERY_CHARS, FilterRequest, SearchRequest
from memoryd.server.params import Params, echo
from memoryd.store.entries import KINDS, MAX_TEXT_CHARS, STATUSES
from memoryd.store.records import (
    Asker,
    EntryRequest,
    ProjectMoveRequest,
    RememberRequest,
    ScopeRequest,
)
from memoryd.text import lower_keeping_marks
from memoryd.times import span_refusal
from memoryd.writes import MAX_BATCH


def remember_request(params: Params) -> RememberRequest:
    """A remember request, or one of remember_many's entries (its method: remember_many)."""
    agent = params.agent()
    text = params.text("text", required=True, max_len=MAX_TEXT_CHARS)
    assert agent is not None and text is not None
    key = params.key()
    polarity = params.choice("polarity", ("negative", "positive"))
    # a polarity says what a lesson is about (do / don't): it makes a lesson of an entry
    # without a kind, and is refused on any other kind rather than silently dropped
    kind = params.choice("kind", KINDS, default="lesson" if polarity else "fact" if key else "note")
    if polarity and kind != "lesson":
        raise params.refuse("polarity", f"is for lessons (kind lesson); got kind {kind!r}")
    confidence = params.number("confidence", low=0.0, high=1.0)
    project = params.text("project", max_len=4096)
    cwd = params.path("cwd")
    created = params.time("created")
    via = params.choice("via", ("api", "extract"), default="api")
    assert kind is not None and via is not None
    if created is not None and not 0 < created <= time.time() + 86_400:
        raise params.refuse("created", f"must be a past time; got {created!r}")
    return RememberRequest(
        agent=agent, text=text, key=key, kind=kind, polarity=polarity, confidence=confidence,
        project=project, cwd=cwd, created=created, via=via,
        category=params.text("category", default="", max_len=200) or "",
        tags=tuple(params.strings("tags") or ()),
        writer=params.text("writer", max_len=200),
        session=params.text("session", max_len=200),
        message_id=params.text("message_id", max_len=200),
        force=params.flag("force"))


def remember_many_requests(params: Params) -> list[RememberRequest]:
    """remember_many's entries, each parsed as a remember (a bad one fails them all before
    any is stored)."""
    items = params.raw.get("entries")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
        raise BadParamsError(f"remember_many: entries must be a list of 1 to {MAX_BATCH} maps")
    for number, item in enumerate(items):  # not "params must be a map": the entry must
        if not isinstance(item, dict):
            name, detail = f"entries[{number}]", f"must be a map, got {type(item).__name__}"
            raise BadParamsError(f"remember_many: {name} {detail}", "remember_many", name,
                                 detail)
    return [remember_request(Params("remember_many", item)) for item in items]


def asker(params: Params) -> Asker:
    """Who asks: the agent the request names, and the connection it came on."""
    caller = params.caller
    return Asker(agent=params.agent(required=False),
                 writer=caller.writer if caller is not None else None,
                 human=caller is None or caller.human)


def entry_id(params: Params) -> str:
    value = params.text("id", required=True, max_len=200)
    assert value is not None
    return value


def get_request(params: Params) -> EntryRequest:
    return EntryRequest(id=entry_id(params))


def owned_request(params: Params) -> EntryRequest:
    """A change of an entry that names nothing else (release): the entry and who asks."""
    return EntryRequest(id=entry_id(params), asker=asker(params))


def forget_request(params: Params) -> EntryRequest:
    found = entry_id(params)
    reason = params.text("reason", max_len=2000)
    return EntryRequest(id=found, asker=asker(params),  # kept in the ledger and the run log
                        reason=redact(reason) if reason else reason)


def supersede_request(params: Params) -> EntryRequest:
    found = entry_id(params)
    who = asker(params)
    text = params.text("text", required=True, max_len=MAX_TEXT_CHARS)
    return EntryRequest(id=found, asker=who, text=text,
                        confidence=params.number("confidence", low=0.0, high=1.0))


def scope_request(params: Params) -> ScopeRequest:
    tier = params.choice("scope", TIERS)
    if tier is None:
        raise BadParamsError("scope: say where the entry goes: scope 'global' or 'project' "
                             "(with the project's directory)")
    directory = params.path("project")
    if tier == "global" and directory is not None:
        raise BadParamsError("scope: a directory goes with scope 'project' only")
    if tier == "project" and directory is None:
        raise BadParamsError("scope: scope 'project' needs the project's directory "
                             "(project=DIR)")
    return ScopeRequest(EntryRequest(id=entry_id(params), asker=asker(params)), tier, directory)


def project_move_request(params: Params) -> ProjectMoveRequest:
    """``move_project``: ``from`` a project's directory (an absolute path; it need not exist
    any more) ``to`` the project of a directory, or ``global``."""
    old = params.path("from", required=True)
    assert old is not None
    if not old.startswith("/"):
        raise BadParamsError(f"move_project: from must be an absolute path; got {old!r}")
    to = params.path("to")
    if (to is None) == (not params.flag("global")):
        raise BadParamsError("move_project: say where the entries go: to=DIR (the project of "
                             "that directory) or global=true")
    caller = params.caller  # unbound (every agent's entries): recorded as the channel's
    who = asker(params) if caller is None or caller.agent is not None else Asker(
        agent=None, writer=f"user ({caller.channel})", human=caller.human)
    return ProjectMoveRequest(old, who, to)


def filter_request(params: Params, shared_agents: tuple[str, ...], *, every_agent: bool = False,
                   any_status: bool = False) -> FilterRequest:
    """The filters a search, list or timeline names. ``every_agent``: without agent or
    agents, every agent's entries (list and timeline; search asks for a namespace);
    ``any_status``: without status, every status's (timeline; the others keep to the
    active). ``shared`` (a flag): the agents named as their blocks show them, with the agents
    each shares with (``shared_agents``, the configuration's) and the teams' namespaces."""
    agents = _agents(params, every_agent)
    shared = params.flag("shared")
    if shared and agents is not None:
        agents = tuple(dict.fromkeys(a for named in agents for a in sharing(named, shared_agents)))
    category = params.text("category", max_len=200)
    kinds = _named(params, "kind", f"kind: give some of {', '.join(KINDS)}, or leave it out "
                   "for every kind")
    for kind in kinds or ():
        if kind not in KINDS:
            raise params.refuse("kind", f"must be among {', '.join(KINDS)}; got {echo(kind)}")
    project = params.path("project")
    # "cwd" (`memory search --here`): the entries of that directory's project and the
    # global ones, as its block shows them
    in_project = params.path("cwd")
    statuses = _statuses(params, any_status)
    tags = _named(params, "tags", "tag: leave it out for entries with any tags or none")
    since, until = params.time("since"), params.time("until", end_of_day=True)
    if since is not None and until is not None and since >= until:
        # the other option as the command line names it (the first is, by the client)
        raise params.refuse("since", span_refusal(params.raw["since"], params.raw["until"]))
    return FilterRequest(
        agents=agents, category=category.strip() if category not in (None, "", "-") else None,
        kinds=tuple(kinds) if kinds is not None else None, project=project or None,
        in_project=in_project or None, statuses=statuses, since=since, until=until,
        tags=tuple(lower_keeping_marks(t) for t in tags or ()),
        teams=shared)


def _named(params: Params, name: str, what: str) -> list[str] | None:
    """A filter's list of names (None: not given). One given that names none (``''``,
    ``','``: an unset variable) is refused, not taken for "every one" nor for "none": read
    one way or the other it would answer a question nobody asked (``what``: the noun it names
    and what to do instead)."""
    names = params.strings(name)
    if names is not None and not names:
        raise params.refuse(name, f"{params.raw[name]!r} names no {what}")
    return names


def _agents(params: Params, every_agent: bool) -> tuple[str, ...] | None:
    """The agents named (None: every one)."""
    agents = params.strings("agents")
    if agents is None:
        agent = params.agent(required=False)
        if agent is None and every_agent:
            return None
        if agent is None:
            raise BadParamsError(f"{params.method}: give agent (your own namespace) or "
                                 "agents (a list, or ['*'] for all)", params.method)
        agents = [agent]
    if agents == ["*"]:
        return None
    for name in agents:
        problem = agent_problem(name)
        if problem is not None:
            raise params.refuse("agent", problem)
    return tuple(agents)


def _statuses(params: Params, any_status: bool) -> tuple[str, ...]:
    statuses = _named(params, "status", f"status: give some of {', '.join(STATUSES)}, or any")
    if statuses is None and any_status:
        statuses = ["any"]
    statuses = statuses or ["active"]
    if statuses == ["any"]:
        return STATUSES
    for status in statuses:
        if status not in STATUSES:
            raise params.refuse("status", f"must be among {', '.join(STATUSES)} or any")
    return tuple(statuses)


def search_request(params: Params, default_limit: int,
                   shared_agents: tuple[str, ...]) -> SearchRequest:
    """A search (``default_limit``: its limit when it names none, ``[search] limit``;
    ``shared_agents``: ``[context] shared_agents``, for the ``shared`` flag)."""
    query = params.text("query", required=True, max_len=MAX_QUERY_CHARS)
    assert query is not None
    limit = params.integer("limit", default=default_limit, low=1, high=MAX_HITS)
    min_score = params.number("min_score", low=0.0, high=1.0)
    now = params.time("now")
    # unsaid, a min_score's search keeps to the matches (what the wire always did); an
    # explicit false lists every ranked hit (memoryd.retrieval.records.SearchRequest)
    match = params.flag("match") if "match" in params.raw else None
    where = filter_request(params, shared_agents)
    return SearchRequest(query, where, limit, min_score=min_score, match=match, now=now,
                         explain=params.flag("explain"))
