"""A clean stop under load (SIGTERM while clients are writing).

From the signal on, no new request is served, on new *or existing* connections: a request that
arrives is answered ``unavailable`` ("memoryd is stopping …; nothing was stored") and its
connection closed. Requests in flight finish (up to ``SHUTDOWN_WAIT_S``); a request still
running after that gets the same ``unavailable`` answer when it next needs the database (the
database thread refuses work once it is closing), never a closed store. Idle connections are
closed by the daemon, so their handlers end normally (no CancelledError tracebacks at exit).
"""

from __future__ import annotations

import asyncio
import logging

from memoryd.errors import stopping_error  # noqa: F401  (re-exported for the daemon)

log = logging.getLogger(__name__)


class Connections:
    """The open connections, and whether each is answering a request."""

    def __init__(self) -> None:
        self.busy: dict[asyncio.StreamWriter, bool] = {}
        self.tasks: set[asyncio.Task[object]] = set()

    def opened(self, writer: asyncio.StreamWriter) -> None:
        self.busy[writer] = False
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)

    def closed(self, writer: asyncio.StreamWriter) -> None:
        self.busy.pop(writer, None)
        task = asyncio.current_task()
        if task is not None:
            self.tasks.discard(task)

    def close_idle(self) -> int:
        idle = [w for w, busy in self.busy.items() if not busy]
        for writer in idle:
            writer.close()
        return len(idle)

    async def close_all(self, timeout_s: float = 2.0) -> None:
        """Close every connection and let its handler end by itself."""
        for writer in list(self.busy):
            writer.close()
        pending = [t for t in self.tasks if t is not asyncio.current_task()]
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)
