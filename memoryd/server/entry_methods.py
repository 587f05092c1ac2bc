"""Wire methods ``forget``, ``supersede`` and ``scope``: the request parsed here
(memoryd.server.requests), the work done by the passes' safe edits (a file entry's edit of its
file: memoryd.passes.entry_files; a move between tiers: memoryd.passes.scope)."""

from __future__ import annotations

from typing import Any

from memoryd.passes.entry_files import FileEntryEdits
from memoryd.passes.scope import ScopeMoves
from memoryd.server.params import Params
from memoryd.server.requests import forget_request, scope_request, supersede_request


class EntryMethods:
    def __init__(self, edits: FileEntryEdits, scopes: ScopeMoves) -> None:
        self.edits = edits
        self.scopes = scopes

    def methods(self) -> dict[str, Any]:
        return {"forget": self.m_forget, "supersede": self.m_supersede, "scope": self.m_scope}

    async def m_forget(self, params: Params) -> dict[str, Any]:
        return await self.edits.forget(forget_request(params))

    async def m_supersede(self, params: Params) -> dict[str, Any]:
        return await self.edits.supersede(supersede_request(params))

    async def m_scope(self, params: Params) -> dict[str, Any]:
        return await self.scopes.scope(scope_request(params))
