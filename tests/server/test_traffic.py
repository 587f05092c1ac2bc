"""Background work on other threads gives way to the requests someone waits on, within bounds.

(What it buys is measured by bench/bench_passes.py: search p99 while a pass runs.)
"""

from __future__ import annotations

import contextvars
import threading
import time

import pytest

from memoryd import scheduling
from memoryd.scheduling import Traffic, give_way, paced


async def _db(fn, *args):  # type: ignore[no-untyped-def]  # never called: no background slice here
    return fn(*args)


def _units(pause, reached: threading.Event, done: threading.Event,
           context: contextvars.Context | None = None) -> threading.Thread:
    """A worker doing two units of work with a give_way between them, as a pass's offload."""
    def work() -> None:
        reached.set()
        give_way()
        done.set()

    def run() -> None:
        (context or contextvars.copy_context()).run(paced, pause, work)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_work_on_another_thread_waits_for_the_search_in_flight(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduling, "GIVE_WAY_S", 30.0)  # only the search's end lets it go on
    lanes = Traffic(_db)
    search = lanes.begin("search")
    reached, done = threading.Event(), threading.Event()
    worker = _units(lanes.pause, reached, done)
    assert reached.wait(10)
    assert not done.wait(0.2), "the work went on while a search was being served"
    lanes.end(search)
    assert done.wait(10), "the work did not go on once the search was answered"
    worker.join()


def test_work_waits_at_most_its_bound_under_endless_requests() -> None:
    lanes = Traffic(_db)
    lanes.begin("context")  # never ends
    reached, done = threading.Event(), threading.Event()
    started = time.monotonic()
    worker = _units(lanes.pause, reached, done)
    assert done.wait(10), "the work starved behind a request that never ends"
    worker.join()
    assert time.monotonic() - started >= scheduling.GIVE_WAY_S


def test_work_neither_waits_for_the_request_it_serves_nor_for_long_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduling, "GIVE_WAY_S", 30.0)
    lanes = Traffic(_db)
    lanes.begin("pass_run")  # a long request nobody waits on at once: not counted
    serving = contextvars.copy_context()
    serving.run(lanes.begin, "forget")  # a file entry's forget runs a pass for itself
    reached, done = threading.Event(), threading.Event()
    _units(lanes.pause, reached, done, context=serving).join(10)
    assert done.is_set(), "the forget's own work waited for the forget"


def test_work_run_outside_the_daemon_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduling, "GIVE_WAY_S", 30.0)
    lanes = Traffic(_db)
    lanes.begin("search")
    reached, done = threading.Event(), threading.Event()
    _units(None, reached, done).join(10)  # a script or test: paced without a pause
    assert done.is_set()
