"""Wire methods that decide what memory is trusted with: ``purge`` (delete an agent's entries
for good: :mod:`memoryd.maintenance.purge`) and ``release`` (let a quarantined entry be injected:
:mod:`memoryd.quarantine`). The connection binding (:mod:`memoryd.server.binding`) has already
made the request act as its connection's agent; a person releases, and neither method is open
to the MCP or hook channels."""

from __future__ import annotations

import asyncio
from typing import Any

from memoryd.errors import BadParamsError, ForbiddenError
from memoryd.maintenance.purge import Purge
from memoryd.maintenance.purge_records import PurgeReport
from memoryd.server.params import Params
from memoryd.server.parts import Parts
from memoryd.server.replies import entry_reply, purge_reply
from memoryd.server.requests import owned_request
from memoryd.store.archive import AgentArchive
from memoryd.store.run_log import RunLog
from memoryd.sync.shared import shared_copies


class TrustMethods:
    def __init__(self, parts: Parts) -> None:
        self.parts = parts

    def methods(self) -> dict[str, Any]:
        return {"purge": self.m_purge, "release": self.m_release}

    async def m_release(self, params: Params) -> dict[str, Any]:
        if params.caller is not None and not params.caller.human:
            raise ForbiddenError(
                "release: a person releases a quarantined entry, at a terminal "
                f"(`memory release ID`); this connection is {params.caller.channel!r}")
        return entry_reply(await self.parts.db(self.parts.entries.release,
                                               owned_request(params)))

    async def m_purge(self, params: Params) -> dict[str, Any]:
        agent = params.agent()
        since = params.time("since")
        match = params.text("match", max_len=10_000)
        if match is not None and not match.strip():
            raise BadParamsError("purge: match must not be empty")
        if since is None and match is None:
            raise BadParamsError("purge: give since, match, or both")
        confirm = params.flag("confirm")
        actor = params.caller.writer if params.caller is not None else "user"
        parts = self.parts
        assert agent is not None and parts.store is not None

        def purge() -> PurgeReport:
            assert parts.store is not None
            job = Purge(parts.store, parts.entries.ledger,
                        AgentArchive(parts.settings.config.archive_dir), agent, since, match,
                        history=AgentArchive(parts.settings.config.history_dir),
                        run_log=RunLog.in_state(parts.settings.config.state_dir))
            report = job.run(dry_run=not confirm, actor=actor)
            lexicon = parts.derived.lexicon
            if job.words and lexicon is not None:
                lexicon.forget(job.words)
            if not report.dry_run:
                for entry in report.entries:
                    if entry.rowid is not None:
                        parts.entries.unindex(entry.rowid)
            return report

        async with parts.sync_applying:  # a sync's records applied first: purged too
            report = await parts.db(purge)
        if confirm:
            parts.threads.query_cache.clear()  # a query may have held the text
        # a copy shared with a team is the team's: it stays in its repository until a
        # teammate takes its line out there (docs/sync.md)
        shared = await asyncio.to_thread(shared_copies, parts.settings.config.state_dir,
                                         [entry.uid for entry in report.entries])
        return {**purge_reply(report), "shared": shared}
