"""Background work off the database thread gives way to the requests someone waits on.

The database thread's background slices already wait for the searches and hooks in flight
(memoryd.server.traffic). A pass's work on a worker thread did not: the staleness pass reading
a project's 5,000 files for words held the GIL and a core while a search ran beside it
(py-spy), and the searches during that pass had the worst tail (bench/bench_passes.py, four
runs each way on 2026-11-25, three of them interleaved: search p99 during staleness 37-60 ms,
mean 48, against 45-69, mean 58, before; the other passes within the machine's noise).

Such work calls :func:`give_way` between two of its units (a file, a block of rows). What that
waits for is the daemon's to say: it runs the work through :func:`paced`. Work run any other
way (a test, a script) does not wait.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_PAUSE: ContextVar[Callable[[], None] | None] = ContextVar("memoryd_pause", default=None)


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
