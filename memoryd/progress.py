"""How far along long work is, and how fast it goes: the initial indexing of watched files and
the embedding of the vector backlog, for `memory status` ("indexing 1,234/5,000 (25%, ~2 min
left)") and `memory doctor` (a backlog that does not move); and how far a long request is
(an import, a pass), for the client that asked (:func:`report`).

The counters are updated from one thread at a time; a rate is measured over the last
``WINDOW_S`` seconds, so an estimate follows the current speed, not the average since start.
"""

from __future__ import annotations

import time
from collections import deque
from contextvars import ContextVar, Token
from typing import Any

WINDOW_S = 60.0


class Throughput:
    """Units done, with the rate over the last WINDOW_S seconds."""

    def __init__(self) -> None:
        self.done = 0
        self.last_progress: float | None = None  # time.time() of the latest advance
        self._samples: deque[tuple[float, int]] = deque()

    def advance(self, n: int, now: float | None = None) -> None:
        if n <= 0:
            return
        now = time.time() if now is None else now
        if not self._samples:
            self._samples.append((now, self.done))  # the start of this stretch of work
        self.done += n
        self.last_progress = now
        self._samples.append((now, self.done))
        while len(self._samples) > 2 and now - self._samples[1][0] > WINDOW_S:
            self._samples.popleft()

    def rate(self, now: float | None = None) -> float | None:
        """Units per second over the window; None before there is a measurement."""
        now = time.time() if now is None else now
        if len(self._samples) < 2 or self.last_progress is None:
            return None
        if now - self.last_progress > WINDOW_S:
            return None
        (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
        elapsed = max(now - t0, t1 - t0)
        return (n1 - n0) / elapsed if elapsed > 0 else None

    def eta_s(self, remaining: int, now: float | None = None) -> float | None:
        rate = self.rate(now)
        if not remaining:
            return 0.0
        return remaining / rate if rate else None


class InitialIndexing:
    """The first pass over the watched files after the daemon starts: every file the first scan
    queued, and any queued before the queue first runs dry. ``finish`` is called once."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.finished: float | None = None
        self.total = 0  # the files queued: new or changed since the last run
        self.watched = 0  # the files the first scan found
        self.files = Throughput()
        self.entries = 0
        self._seen: set[str] = set()

    @property
    def active(self) -> bool:
        return self.started is not None and self.finished is None

    def begin(self) -> None:
        if self.started is None:
            self.started = time.time()

    def queued(self, paths: list[str]) -> None:
        """Count files once, though a scan may queue a file again while it is indexed."""
        if self.finished is None:
            new = [path for path in paths if path not in self._seen]
            self._seen.update(new)
            self.total += len(new)

    def processed(self, n: int, entries: int = 0) -> None:
        if self.finished is None:
            self.files.advance(min(n, self.total - self.files.done))
            self.entries += entries

    def finish(self) -> float:
        """Mark it done; returns how long it took in seconds."""
        self.finished = time.time()
        self._seen.clear()
        return self.finished - (self.started or self.finished)

    def snapshot(self) -> dict[str, Any]:
        done = self.files.done
        return {
            "done": done if self.finished is None else self.total,
            "total": self.total,
            "watched": self.watched,
            "started": self.started,
            "finished": self.finished,
            "entries": self.entries,
            "eta_s": None if self.finished is not None else self.files.eta_s(self.total - done),
            "duration_s": (self.finished - self.started)
            if self.finished is not None and self.started is not None else None,
        }


# -- a request's progress, for the client that asked (wire: progress frames) -----------------

#: How often a request that asked for progress is told it (wire.PROGRESS_METHODS): a frame
#: every PROGRESS_EVERY_S while its handler works, changed or not, so that a client's idle
#: timeout (the `memory` command's --timeout) is reset as long as the daemon works on it, and
#: a daemon that stopped answering (SIGSTOP, a hung machine) still times out.
PROGRESS_EVERY_S = 0.5


class Reporter:
    """What the request being answered is doing, as its handler reports it (:func:`report`);
    the daemon sends it to the client in progress frames. Updated on the event loop only."""

    def __init__(self, method: str) -> None:
        self.fields: dict[str, Any] = {"what": method}
        self.reported = False  # the handler said how far it got at least once

    def update(self, **fields: Any) -> None:
        self.fields.update(fields)
        self.reported = True

    def frame(self) -> dict[str, Any]:
        return {name: value for name, value in self.fields.items() if value is not None}


_current: ContextVar[Reporter | None] = ContextVar("memoryd_progress", default=None)


def report(*, what: str | None = None, phase: str | None = None, done: int | None = None,
           total: int | None = None, counts: dict[str, int] | None = None,
           eta_s: float | None = None) -> None:
    """Tell the client of the request being answered how far it got: ``what`` is being done,
    in which ``phase``, ``done`` of ``total`` units, counts so far and, when known, the
    seconds left (``eta_s``). Nothing when the client did not ask for progress. Call it from
    the event loop (a thread does not see the request's context)."""
    reporter = _current.get()
    if reporter is not None:
        reporter.update(**{name: value for name, value in (
            ("what", what), ("phase", phase), ("done", done), ("total", total),
            ("counts", counts), ("eta_s", eta_s)) if value is not None})


def reporting(reporter: Reporter) -> Token[Reporter | None]:
    """Make ``reporter`` the current request's (undone with ``_current.reset``, see
    :func:`stop_reporting`)."""
    return _current.set(reporter)


def stop_reporting(token: Token[Reporter | None]) -> None:
    _current.reset(token)
