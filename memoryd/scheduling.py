"""Background work gives way to the requests someone waits on: one mechanism, two halves.

**On the database thread** (:class:`Traffic`). A maintenance pass works in slices on the database
thread (memoryd.passes.runner). A search makes two calls on that thread (its keyword half, then
the fusion once its question is embedded); between them the pass's next slice would take the
thread again, so a search waited for up to two slices and, with the pass's Python holding the
GIL, longer: while passes ran, the median search took 2.5× its idle time. So a pass starts its
next slice only once the interactive requests in flight have finished, or after ``GIVE_WAY_S``
(requests that arrive meanwhile do not extend the wait: it never starves under a steady stream
of searches). Indexing what the watcher saw gives way the same (a pass that rewrote a thousand
notebooks makes the watcher reindex them), and background slices take turns: one between two
searches. Long requests — a pass run, a bulk import — are not interactive: they would hold the
passes back for their whole length.

**On other threads** (:func:`give_way`). A pass's work on a worker thread did not wait: the
staleness pass reading a project's 5,000 files for words held the GIL and a core while a search
ran beside it (py-spy), and the searches during that pass had the worst tail (the figures:
docs/passes.md, from bench/bench_passes.py). Such work calls :func:`give_way` between two of
its units (a file, a block of rows). What that waits for is the daemon's to say: it runs the
work through :func:`paced` with :meth:`Traffic.pause`. Work run any other way (a test, a
script) does not wait.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Requests that run long and that nobody waits on at once: passes do not give way to them.
BACKGROUND_METHODS = frozenset({"pass_run", "undo", "promote_accept", "notebook_check",
                                "remember_many", "extract", "purge", "reload", "sources",
                                "import_history"})
#: The longest a pass's next slice waits for interactive requests to finish.
GIVE_WAY_S = 0.05
#: The interactive request the running task serves: background work it does itself (a file
#: entry's forget runs a pass) does not wait for it.
_SERVING: contextvars.ContextVar[int | None] = contextvars.ContextVar("serving", default=None)


class Traffic:
    """The interactive requests in flight (on the event loop)."""

    def __init__(self, db: Callable[..., Awaitable[Any]]) -> None:
        self.db = db
        self.running: set[int] = set()
        self._numbers = itertools.count()
        self._ended = asyncio.Event()
        self._turn = asyncio.Lock()
        self._changed = threading.Condition()  # ``running`` changed: for pauses on other threads

    async def background(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the database thread as background work: one background slice at a
        time (a pass's and the watcher's would otherwise both run between two searches),
        each once the interactive requests in flight have finished."""
        async with self._turn:
            await self.give_way()
            return await self.db(fn, *args)

    def begin(self, method: str) -> int | None:
        """Count a request in: its number (pass it to ``end``), None when it does not count."""
        if method in BACKGROUND_METHODS:
            return None
        number = next(self._numbers)
        with self._changed:
            self.running.add(number)
        _SERVING.set(number)
        return number

    def end(self, number: int | None) -> None:
        if number is not None:
            with self._changed:
                self.running.discard(number)
                self._changed.notify_all()
            _SERVING.set(None)
            self._ended.set()

    async def give_way(self) -> None:
        """Wait until the interactive requests in flight now have finished, for at most
        GIVE_WAY_S. Requests that arrive meanwhile do not extend the wait: under a steady
        stream of searches a pass still gets a slice after each one. The request this task
        serves is not waited for (it waits for this work)."""
        waiting = self.running - {_SERVING.get()}
        if not waiting:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GIVE_WAY_S
        while waiting & self.running:
            self._ended.clear()
            left = deadline - loop.time()
            if left <= 0:
                return
            try:  # not wait_for: in Python 3.11 it can swallow a cancel that arrives as the
                # wait ends, and the cancelled task (the watcher's, at shutdown) then ran on
                async with asyncio.timeout(left):
                    await self._ended.wait()
            except TimeoutError:
                return

    def pause(self) -> None:
        """:meth:`give_way` for work on another thread, between two of its units: wait until
        the interactive requests in flight now have finished, for at most GIVE_WAY_S."""
        deadline = time.monotonic() + GIVE_WAY_S
        with self._changed:
            waiting = self.running - {_SERVING.get()}  # the context the work was started in
            while waiting & self.running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)


# -- work on other threads -----------------------------------------------------------------------

#: What :func:`give_way` calls in the work :func:`paced` runs.
_PAUSE: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "memoryd_pause", default=None)


def give_way() -> None:
    """Between two units of background work: wait while the daemon serves someone (for a
    bounded time: it never starves under a steady stream of requests)."""
    pause = _PAUSE.get()
    if pause is not None:
        pause()


def giving_way(items: Iterable[T], every: int) -> Iterator[T]:
    """The items, with :func:`give_way` before each run of ``every`` of them (the unit of
    work is then ``every`` items)."""
    for number, item in enumerate(items):
        if number % every == 0:
            give_way()
        yield item


def paced(pause: Callable[[], None] | None, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, in whatever thread runs this, with :func:`give_way` calling ``pause``."""
    token = _PAUSE.set(pause)
    try:
        return fn(*args)
    finally:
        _PAUSE.reset(token)
