"""The daemon's background tasks: spawned, cancelled together when it closes, and a failure
logged once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from memoryd.errors import UnavailableError

log = logging.getLogger(__name__)


class Background:
    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []
        self.closing = False

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run in the background; cancelled when the daemon closes."""
        task = asyncio.create_task(coroutine)
        self.tasks.append(task)
        task.add_done_callback(self._ended)
        return task

    async def cancel_all(self) -> None:
        self.closing = True
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def _ended(self, task: asyncio.Task[Any]) -> None:
        """A background task's end: a failure is logged once; the "stopping" answer its next
        database call got while the daemon closes is how it ends then, not a failure (it was
        left unretrieved, and asyncio printed its traceback when the task was collected)."""
        if task in self.tasks:
            self.tasks.remove(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is None or (self.closing and isinstance(error, UnavailableError)):
            return
        log.error("Background work %s failed.", task.get_coro().__qualname__,  # type: ignore[union-attr]
                  exc_info=error)
