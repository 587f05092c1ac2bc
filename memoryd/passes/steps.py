"""What a pass yields to the runner besides a plain slice point (see memoryd.passes.runner)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Offload:
    """Work a pass wants done off the database thread; its result is sent back (``wait``
    False: a handle is, at once, for a later :class:`Collect`)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    wait: bool = True


@dataclass(frozen=True)
class Collect:
    """The result of an ``Offload(wait=False)``, once it is done: sent back into the pass."""

    handle: asyncio.Future[Any]


def in_thread(fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """``fn(*args)`` on a thread of its own, as a future of the running loop. Not the loop's
    default executor: its threads are joined when the daemon exits, so a worker stuck in a
    system call (an open() of a FIFO kept it forever once) kept the daemon from stopping at
    all. This thread is a daemon thread: the process exits without it, and what it did not
    finish is settled at the next start like after a kill."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        try:
            result, error = fn(*args), None
        except Exception as exc:  # noqa: BLE001  (raised where the pass awaits it)
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=contextvars.copy_context().run, args=(work,),
                     name="memoryd-pass-worker", daemon=True).start()
    return future
