"""The wire methods of memory itself: ``remember``, ``remember_many`` (with what a write
corrects recorded as a run), ``search``, ``get`` and ``history``."""

from __future__ import annotations

import time
from typing import Any

from memoryd.passes import corrections
from memoryd.passes.runner import PassRunner
from memoryd.server.params import Params
from memoryd.server.parts import Parts
from memoryd.server.replies import entry_reply, public_entry, search_reply
from memoryd.server.requests import (
    get_request,
    remember_many_requests,
    remember_request,
    search_request,
)


class MemoryMethods:
    def __init__(self, parts: Parts, passes: PassRunner) -> None:
        self.parts = parts
        self.passes = passes

    def methods(self) -> dict[str, Any]:
        return {"remember": self.m_remember, "remember_many": self.m_remember_many,
                "search": self.m_search, "get": self.m_get, "history": self.m_history}

    async def m_remember(self, params: Params) -> dict[str, Any]:
        reply = await self.parts.writes.remember(remember_request(params))
        await self._corrections([reply])
        return reply

    async def m_remember_many(self, params: Params) -> dict[str, Any]:
        reply = await self.parts.writes.remember_many(remember_many_requests(params))
        await self._corrections(reply["results"])
        return reply

    async def _corrections(self, replies: list[dict[str, Any]]) -> None:
        """What a write corrected or contradicts, recorded as a run (memoryd.passes.corrections):
        its name in each reply that has some."""
        if not any(r.get("corrects") for r in replies):
            return
        run = await self.parts.db(corrections.record, self.passes.runs, replies)
        for reply in replies:
            if reply.get("corrects"):
                reply["run"] = run

    async def m_search(self, params: Params) -> dict[str, Any]:
        request = search_request(params, self.parts.settings.config.search.limit)
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
