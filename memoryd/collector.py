"""Python's full garbage collections, at quiet moments instead of in the middle of requests.

CPython collects its oldest generation once enough objects have outlived the younger ones. A
maintenance pass allocates enough to set one off every few seconds of its run, and each held
the GIL for 30-55 ms (three a round of `bench/bench_passes.py`, in a slow hour): a search or a
hook that arrived then waited for it. The daemon turns the automatic full collection off when
it starts and runs it here: once no request has come for ``IDLE_S``, at most every
``MIN_INTERVAL_S``, and at the latest after ``MAX_INTERVAL_S`` even if no quiet moment comes
(cyclic garbage must not pile up during a long import). The younger generations are collected
as before: they are small, and most garbage dies there.

Other work that should wait for the same quiet moments runs after a collection made at one (the
query planner's statistics, :meth:`memoryd.store.database.Store.refresh_statistics`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from memoryd.errors import UnavailableError

log = logging.getLogger(__name__)

IDLE_S = 5.0
CHECK_EVERY_S = 5.0
MIN_INTERVAL_S = 60.0
MAX_INTERVAL_S = 600.0
#: The oldest generation's threshold while full collections are deferred: never reached.
NEVER = 1 << 30


class _Deferral:
    """Daemons deferring in this process (tests run several), and the thresholds before."""

    count = 0
    before = gc.get_threshold()


def defer_full_collections() -> None:
    """From now on the oldest generation is collected only by ``collect_when_quiet``. The
    thresholds are the process's: they come back when the last daemon deferring resumes."""
    if not _Deferral.count:
        _Deferral.before = gc.get_threshold()
        gc.set_threshold(_Deferral.before[0], _Deferral.before[1], NEVER)
    _Deferral.count += 1


def resume_full_collections() -> None:
    """Undo one ``defer_full_collections``."""
    _Deferral.count -= 1
    if not _Deferral.count:
        gc.set_threshold(*_Deferral.before)


def quiet(now: float, last_request: float, in_flight: int) -> bool:
    """No request is running, and none has come for ``IDLE_S``."""
    return not in_flight and now - last_request >= IDLE_S


def due(now: float, last_request: float, last_full: float, in_flight: int) -> bool:
    """Whether a full collection should run now."""
    waited = now - last_full
    if waited >= MAX_INTERVAL_S:
        return True
    return waited >= MIN_INTERVAL_S and quiet(now, last_request, in_flight)


async def collect_when_quiet(last_request: Callable[[], float],
                             in_flight: Callable[[], int],
                             also: Sequence[Callable[[], Awaitable[object]]] = ()) -> None:
    """Run the full collections, and ``also`` after each that came at a quiet moment (not
    one a busy daemon could not put off longer: the statistics of a table grown tenfold take
    ~0.5 s at 100,000 entries, which a request would wait for) (a task for the daemon's
    lifetime; times from time.time())."""
    last_full = time.time()
    while True:
        await asyncio.sleep(CHECK_EVERY_S)
        now = time.time()
        if due(now, last_request(), last_full, in_flight()):
            started = time.perf_counter()
            found = gc.collect()
            last_full = time.time()
            log.debug("Full garbage collection: %d objects freed in %.1f ms.", found,
                      (time.perf_counter() - started) * 1000)
            if not quiet(now, last_request(), in_flight()):
                continue
            for work in also:
                try:
                    await work()
                except UnavailableError:  # the daemon closes
                    raise
                except Exception:  # the next quiet moment tries again; the collections go on
                    log.warning("Work at a quiet moment failed.", exc_info=True)
