"""The one database thread: every SQLite call runs on it, so no locking is needed.

Once the daemon closes, new calls get the "stopping" answer instead of new work (a request
still running never meets a closed store); the daemon's own closing steps still run here.

Work that ends with a call here but first waits for something else (a single write's
sentence vectors, embedded once it is acknowledged, then stored) can be put ahead of the calls
made after it (``ahead``): they wait for it as they would for a call queued before them, so
that what the write changes is there for them (a search, the next write's near-duplicate
check) exactly as if it had all been done before the acknowledgement.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from memoryd.errors import stopping_error

T = TypeVar("T")

#: How long a call waits, at most, for the work put ahead of it: a bound for an embedder that
#: is stuck, not for a slow one (the work it waits for is the model's on a few sentences).
AHEAD_WAIT_S = 5.0


class DatabaseThread:
    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="memoryd-db")
        self.opened = False  # the store is open: from now on a closing refuses new calls
        self.closing = False
        self.pending: set[asyncio.Future[Any]] = set()  # work put ahead of the calls to come

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the database thread, after the work put ahead of it."""
        if self.closing and self.opened:
            raise stopping_error()
        if self.pending:
            await asyncio.wait(set(self.pending), timeout=AHEAD_WAIT_S)
            if self.closing and self.opened:  # it began meanwhile
                raise stopping_error()
        return await self.submit(fn, *args)

    def ahead(self, work: asyncio.Future[Any]) -> None:
        """Calls made from now on wait for ``work`` (at most AHEAD_WAIT_S) before theirs is
        queued. Its own calls here go through :meth:`submit`, which waits for nothing."""
        if not work.done():
            self.pending.add(work)
            work.add_done_callback(self.pending.discard)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queued now, whether or not closing: what comes after it there finds it done."""
        return asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def closing_call(self, fn: Callable[..., T], *args: Any) -> T:
        """The daemon's own closing steps."""
        return await self.submit(fn, *args)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)
