"""The wire's requests about entries, parsed into the records the layers below take
(memoryd.store.records): the wire's :class:`~memoryd.params.Params` stops here. Each parse
says what is wrong with a request in the method's words, as Params does, in the order the
params were always checked (a request with two mistakes is told the same first one).
"""

from __future__ import annotations

import time

from memoryd.errors import BadParamsError
from memoryd.params import Params
from memoryd.passes.scope import TIERS
from memoryd.store.entries import KINDS, MAX_TEXT_CHARS
from memoryd.store.records import Asker, EntryRequest, RememberRequest, ScopeRequest
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
        raise BadParamsError(f"{params.method}: polarity is for lessons (kind lesson); "
                             f"got kind {kind!r}")
    confidence = params.number("confidence", low=0.0, high=1.0)
    project = params.text("project", max_len=4096)
    cwd = params.path("cwd")
    created = params.time("created")
    via = params.choice("via", ("api", "extract"), default="api")
    assert kind is not None and via is not None
    if created is not None and not 0 < created <= time.time() + 86_400:
        raise BadParamsError(f"{params.method}: created must be a past time; got {created!r}")
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
    return EntryRequest(id=found, asker=asker(params),
                        reason=params.text("reason", max_len=2000))


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
