"""The one database thread: every SQLite call runs on it, so no locking is needed.

Once the daemon closes, new calls get the "stopping" answer instead of new work (a request
still running never meets a closed store); the daemon's own closing steps still run here.

Work that ends with a call here but first waits for something else (a single write's
sentence vectors, embedded once it is acknowledged, then stored) can be put ahead of the reads
that want it done (``ahead``; a search's first call: ``settled``): they wait for it as they
would for a call queued before them, and find what it stores exactly as if it had been stored
before the acknowledgement. Other calls do not wait for it.
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
        """``fn(*args)`` on the database thread."""
        if self.closing and self.opened:
            raise stopping_error()
        return await self.submit(fn, *args)

    def ahead(self, work: asyncio.Future[Any]) -> None:
        """The reads that come after now (:meth:`settled`) wait for ``work``."""
        if not work.done():
            self.pending.add(work)
            work.add_done_callback(self.pending.discard)

    async def settled(self) -> None:
        """The work put ahead so far is done (or has had AHEAD_WAIT_S): a read queued after
        this finds what it stored."""
        if self.pending:
            await asyncio.wait(set(self.pending), timeout=AHEAD_WAIT_S)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queued now, whether or not closing: what comes after it there finds it done."""
        return asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def closing_call(self, fn: Callable[..., T], *args: Any) -> T:
        """The daemon's own closing steps."""
        return await self.submit(fn, *args)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)
