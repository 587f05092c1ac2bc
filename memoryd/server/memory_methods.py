"""The wire methods of memory itself: ``remember``, ``remember_many`` (with what a write
corrects recorded as a run), ``search``, ``get`` and ``history``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from memoryd.errors import PartlyStoredError
from memoryd.passes import corrections
from memoryd.passes.runner import PassRunner
from memoryd.redact import redacted_kinds
from memoryd.server.params import Params
from memoryd.server.parts import Parts
from memoryd.server.replies import (
    entry_reply,
    public_entry,
    remember_many_result,
    remember_reply,
    search_reply,
)
from memoryd.server.requests import (
    get_request,
    remember_many_requests,
    remember_request,
    search_request,
)
from memoryd.store.records import Remembered, RememberRequest


class MemoryMethods:
    def __init__(self, parts: Parts, passes: PassRunner) -> None:
        self.parts = parts
        self.passes = passes

    def methods(self) -> dict[str, Any]:
        return {"remember": self.m_remember, "remember_many": self.m_remember_many,
                "search": self.m_search, "get": self.m_get, "history": self.m_history}

    async def m_remember(self, params: Params) -> dict[str, Any]:
        request = remember_request(params)
        written = await self.parts.writes.remember(request)
        (reply,) = await self._replies([written])
        return told_redacted(reply, request, written)

    async def m_remember_many(self, params: Params) -> dict[str, Any]:
        """Each entry's result by ids (:func:`remember_many_result`): a reply that stays
        small however long the entries, so that a stored batch is never answered with an
        error for its reply's size; ``redacted`` in the result of an entry whose secrets
        were taken out, as remember's. A batch the disk refused after its first slices were
        stored is answered with the refusal, those slices' results in its ``data``."""
        requests = remember_many_requests(params)
        try:
            written = await self.parts.writes.remember_many(requests)
        except PartlyStoredError as exc:
            # what they corrected is not recorded as a run: the disk refuses writes
            exc.data = {"results": [told_redacted(remember_many_result(w), q, w)
                                    for q, w in zip(requests, exc.written)],
                        "total": exc.total}
            raise
        replies = await self._replies(written, remember_many_result)
        return {"results": [told_redacted(reply, request, w)
                            for reply, request, w in zip(replies, requests, written)]}

    async def _replies(self, written: list[Remembered],
                       reply: Callable[[Remembered, str | None], dict[str, Any]] = remember_reply
                       ) -> list[dict[str, Any]]:
        """The writes' replies; what they corrected or contradict recorded as a run
        (memoryd.passes.corrections), its name in each reply that has some."""
        run = None
        if any(w.corrects for w in written):
            run = await self.parts.db(corrections.record, self.passes.runs, written)
        return [reply(w, run if w.corrects else None) for w in written]

    async def m_search(self, params: Params) -> dict[str, Any]:
        config = self.parts.settings.config
        request = search_request(params, config.search.limit, config.context.shared_agents)
        # the viewer (explain): each hit's evidence in words too
        return search_reply(await self.parts.search.search(request), time.time(),
                            why=request.explain)

    async def m_get(self, params: Params) -> dict[str, Any]:
        entry, usage = await self.parts.db(self.parts.entries.get, get_request(params))
        return public_entry(entry, time.time(), usage)

    async def m_history(self, params: Params) -> dict[str, Any]:
        entry_id = params.text("id", max_len=200)
        key = params.key()
        agent = params.agent(required=False) if entry_id is None else None
        history = await self.parts.db(self.parts.entries.history, entry_id, key, agent)
        removed = [history.removed] if history.removed is not None else []
        return {"entries": [entry_reply(e) for e in history.entries] + removed,
                "events": history.events}


def told_redacted(reply: dict[str, Any], request: RememberRequest,
                  written: Remembered) -> dict[str, Any]:
    """``reply`` with ``redacted``: the kinds of secret the write path's redaction took out
    of what ``request`` said (its text, category, key, tags, project, session and message
    id), from the marks it left (not rescanned), when it took any; so the user is told. A
    near duplicate's entry is another text, with marks of its own: nothing is said."""
    said = "\n".join([request.text, request.category, request.key or "", *request.tags,
                      request.project or "", request.session or "", request.message_id or ""])
    kept = written.entry
    stored = "\n".join([kept.text, kept.category, kept.key or "", *kept.tags,
                        kept.project or "", kept.session or "", kept.message_id or ""])
    kinds = sorted(redacted_kinds(said, stored)) \
        if written.stored or written.duplicate == "exact" else []
    return {**reply, "redacted": kinds} if kinds else reply
