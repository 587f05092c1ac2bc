"""Wire methods of the maintenance passes: list, run, show, undo, accept, notebook check.

The passes themselves live in :mod:`memoryd.passes`; this is the asynchronous half the daemon
dispatches to.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from memoryd_client.wire import MAX_FRAME_BYTES

from memoryd.errors import BadParamsError
from memoryd.passes.notebooks import checked_paths
from memoryd.passes.runner import PASSES, PassRunner
from memoryd.passes.runs import RunsRequest
from memoryd.project import project_of
from memoryd.server.params import Params

#: The passes a run can be asked to do in full (as a first run), not only what changed since.
FULL_PASSES = ("consolidate", "staleness")
#: The changes of a run shown in one reply, at most (as JSON; the rest are paged): half a
#: frame, the rest of the reply is small.
SHOWN_BYTES = MAX_FRAME_BYTES // 2


def runs_request(params: Params) -> RunsRequest:
    limit = params.integer("limit", default=50, low=1, high=1000)
    offset = params.integer("offset", default=0, low=0, high=10_000_000)
    return RunsRequest(name=params.text("name", max_len=40),
                       entry=params.text("entry", max_len=200), limit=limit, offset=offset)


class PassMethods:
    def __init__(self, passes: PassRunner) -> None:
        self.passes = passes

    def methods(self) -> dict[str, Any]:
        return {"pass_list": self.m_pass_list, "pass_run": self.m_pass_run,
                "pass_show": self.m_pass_show, "pass_runs": self.m_pass_runs, "undo": self.m_undo,
                "promote_accept": self.m_promote_accept, "notebook_check": self.m_notebook_check}

    async def m_pass_list(self, params: Params) -> dict[str, Any]:
        return {"passes": await self.passes.listing(), "running": self.passes.current}

    async def m_pass_run(self, params: Params) -> dict[str, Any]:
        name = params.text("name", required=True, max_len=40)
        if name not in PASSES:
            raise BadParamsError(f"no pass named {name!r} (passes: {', '.join(PASSES)})")
        project = params.path("project")
        if project is not None:
            project = project_of(project)
        full = params.flag("full")
        if full and name not in FULL_PASSES:
            raise BadParamsError("full applies to consolidate (it compares every entry, not only "
                                 "what changed since its last run) and staleness (it checks "
                                 "every entry, as a first run does) only")
        return await self.passes.run(name, agent=params.agent(required=False), project=project,
                                     dry_run=params.flag("dry_run"),
                                     extra={"full": True} if full else None)

    async def m_pass_runs(self, params: Params) -> dict[str, Any]:
        """The newest runs, newest first: of every pass, or of ``name`` (a pass, or what
        else runs are made by: undo, forget, scope), or those whose scope names the
        ``entry`` (the forget of an entry); ``offset`` skips the first; ``total`` counts them
        all."""
        return await self.passes.db(self.passes.runs.page, runs_request(params))

    async def m_pass_show(self, params: Params) -> dict[str, Any]:
        """A run with a page of its changes (``offset``: from the how-manyth; the reply's
        ``next`` is where the next page starts, None after the last), or one change."""
        target = params.text("id", max_len=40)
        offset = params.integer("offset", default=0, low=0, high=10_000_000)
        if target is None:  # the newest run
            runs = await self.passes.db(self.passes.runs.newest, None, 1)
            if not runs:
                raise BadParamsError("no pass has run yet (memory pass run NAME)")
            target = runs[0]["run"]
        return await self.passes.show(target, offset, SHOWN_BYTES)

    async def m_undo(self, params: Params) -> dict[str, Any]:
        target = params.text("id", required=True, max_len=40)
        assert target is not None
        return await self.passes.undo(target)

    async def m_promote_accept(self, params: Params) -> dict[str, Any]:
        target = params.text("id", required=True, max_len=40)
        assert target is not None
        caller = params.caller
        return await self.passes.accept(target, human=caller is None or caller.human)

    async def m_notebook_check(self, params: Params) -> dict[str, Any]:
        """The notebook pass over one file, the notebooks under a directory, or all of them;
        a preview unless ``fix``."""
        path = params.text("path", max_len=4096)
        paths = None
        if path is not None:
            resolved = Path(path).expanduser()
            if not resolved.is_absolute():
                raise BadParamsError(f"path {path!r} must be absolute")
            if not resolved.exists():
                raise BadParamsError(f"{resolved}: no such file or directory")
            store = self.passes.parts.store
            files = await self.passes.db(store.files.memory_files)
            paths = await asyncio.to_thread(checked_paths, files, resolved)
        summary = await self.passes.run("notebooks", agent=params.agent(required=False),
                                        paths=paths, dry_run=not params.flag("fix"))
        return {**summary, **await self.passes.show(summary["run"], 0, SHOWN_BYTES)}
