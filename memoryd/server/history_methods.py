"""The wire method of `memory import-history`: the request parsed into a
:class:`~memoryd.sessions.history.HistoryRequest`, then the import started (or joined) and
followed with progress frames, or previewed (a dry run).
"""

from __future__ import annotations

from typing import Any

from memoryd.progress import report
from memoryd.server.params import Params
from memoryd.sessions.history import HistoryImport, HistoryProgress, HistoryRequest

WHAT = "import-history"


def parse_request(params: Params) -> HistoryRequest:
    """``harnesses`` (a list; none: all), ``since`` (a time), ``dry_run``, ``detach``."""
    harnesses = params.strings("harnesses") or []
    return HistoryRequest(harnesses=tuple(dict.fromkeys(harnesses)), since=params.time("since"),
                          dry_run=params.flag("dry_run"), detach=params.flag("detach"))


def _report(progress: HistoryProgress) -> None:
    report(what=WHAT, counts=progress.counts, eta_s=progress.eta_s(), **progress.frame())


class HistoryMethods:
    def __init__(self, history: HistoryImport) -> None:
        self.history = history

    def methods(self) -> dict[str, Any]:
        return {"import_history": self.m_import_history}

    async def m_import_history(self, params: Params) -> dict[str, Any]:
        request = parse_request(params)
        if request.dry_run:
            return await self.history.preview(request, lambda frame: report(what=WHAT, **frame))
        await self.history.start(request)
        if request.detach:
            status = self.history.status()
            assert status is not None
            return {**status, "detached": True}
        return await self.history.follow(_report)
