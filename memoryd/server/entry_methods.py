"""Wire methods ``forget``, ``supersede``, ``scope`` and ``move_project``: the request parsed
here (memoryd.server.requests), the work done by the passes' safe edits (a file entry's edit of
its file: memoryd.passes.entry_files; a move between tiers: memoryd.passes.scope)."""

from __future__ import annotations

from typing import Any

from memoryd.passes.entry_files import EntryEdit, FileEntryEdits
from memoryd.passes.scope import ScopeMoves
from memoryd.redact import redacted_kinds
from memoryd.server.params import Params
from memoryd.server.replies import entry_reply
from memoryd.server.requests import (
    forget_request,
    project_move_request,
    scope_request,
    supersede_request,
)


class EntryMethods:
    def __init__(self, edits: FileEntryEdits, scopes: ScopeMoves) -> None:
        self.edits = edits
        self.scopes = scopes

    def methods(self) -> dict[str, Any]:
        return {"forget": self.m_forget, "supersede": self.m_supersede, "scope": self.m_scope,
                "move_project": self.m_move_project}

    async def m_forget(self, params: Params) -> dict[str, Any]:
        """The entry forgotten; ``undo``: the run that takes it back; ``edited``: its file's
        edit."""
        done = await self.edits.forget(forget_request(params))
        return {**entry_reply(done.entry), **_extras(done)}

    async def m_supersede(self, params: Params) -> dict[str, Any]:
        """The new version (``entry``) and the old one (``superseded``); ``edited``: the
        file's edit; ``redacted``: the kinds of secret taken out of the new text, when any
        were (out of the entry only, for a file's: the file holds the text as typed)."""
        request = supersede_request(params)
        done = await self.edits.supersede(request)
        assert done.superseded is not None
        reply = {"entry": entry_reply(done.entry), "superseded": entry_reply(done.superseded),
                 **_extras(done)}
        kinds = sorted(redacted_kinds(request.text or "", done.entry.text))
        return {**reply, "redacted": kinds} if kinds else reply

    async def m_scope(self, params: Params) -> dict[str, Any]:
        done = await self.scopes.scope(scope_request(params))
        reply = {"entry": entry_reply(done.entry), "moved": done.moved, "scope": done.scope,
                 "project": done.project}
        if done.undo is not None:
            reply.update(before=done.before, undo=done.undo)
        return reply

    async def m_move_project(self, params: Params) -> dict[str, Any]:
        """``from`` and ``to`` (None: global) as resolved, how many ``moved``, the entries
        ``left`` where they were (``{id, why}``), the ``undo`` run (None: nothing moved)."""
        done = await self.scopes.move_project(project_move_request(params))
        return {"from": done.old, "to": done.new, "moved": done.moved, "undo": done.undo,
                "left": [{"id": uid, "why": why} for uid, why in done.left]}


def _extras(done: EntryEdit) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    if done.undo is not None:
        extras["undo"] = done.undo
    if done.edited is not None:
        edited = done.edited
        extras["edited"] = {"file": edited.file, "run": edited.run, "lines": list(edited.lines)}
    return extras
