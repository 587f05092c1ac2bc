"""The one database thread: every SQLite call runs on it, so no locking is needed.

Once the daemon closes, new calls get the "stopping" answer instead of new work (a request
still running never meets a closed store); the daemon's own closing steps still run here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from memoryd.errors import stopping_error

T = TypeVar("T")


class DatabaseThread:
    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="memoryd-db")
        self.opened = False  # the store is open: from now on a closing refuses new calls
        self.closing = False

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the database thread."""
        if self.closing and self.opened:
            raise stopping_error()
        return await self.submit(fn, *args)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queued now, whether or not closing: what comes after it there finds it done."""
        return asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def closing_call(self, fn: Callable[..., T], *args: Any) -> T:
        """The daemon's own closing steps."""
        return await self.submit(fn, *args)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)
