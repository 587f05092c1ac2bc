"""The `memory` command's progress line: what a long request (an import, a pass) is doing, on
one line of stderr that is written over as the daemon's progress frames come (wire.py):

    importing notes.jsonl: embedding and storing entries [###---] 600/1,400 (42%) ~31 s left · 22 s

Only on a terminal: never under --json, and never when stderr is a pipe or a file (a script
reads the result, not a stream of carriage returns). `memoryd reindex` draws the same line
(:class:`Bar` is all it needs: no frames, no client).
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque

from memoryd_client.printable import printable, unfiltered

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

#: The line is written over at most this often (frames come every ~0.5 s).
EVERY_S = 0.25
#: ... and only once a request has run this long: a quick one prints nothing.
AFTER_S = 1.0
#: The rate behind an estimate is measured over this last stretch, so that it follows the
#: current speed (an import's first batch waits for the model; a pass slows as it goes).
RATE_WINDOW_S = 30.0
#: Widest and narrowest bar, in characters.
BAR_WIDTH, BAR_MIN = 24, 8
#: The width of a terminal that does not say: wide, as a line may as well be cut late.
UNKNOWN_WIDTH = 200


def duration(seconds: float) -> str:
    """A rough time left: "12 s", "4 min", "1.5 h"."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Estimate:
    """The time left of ``done`` out of ``total``, from the rate of the last RATE_WINDOW_S."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, done: int) -> None:
        if self._samples and done < self._samples[-1][1]:
            self._samples.clear()  # another phase started over from 0
        self._samples.append((now, done))
        while len(self._samples) > 2 and now - self._samples[1][0] > RATE_WINDOW_S:
            self._samples.popleft()

    def left_s(self, done: int, total: int) -> float | None:
        """Seconds left, or None before a rate can be measured (nothing moved yet)."""
        if len(self._samples) < 2:
            return None
        (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
        if n1 <= n0 or t1 - t0 < 0.5:
            return None
        return max(total - done, 0) * (t1 - t0) / (n1 - n0)


def bar(done: int, total: int, width: int) -> str:
    filled = width * min(done, total) // total if total else width
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def columns(stream: TextIO) -> int:
    """The terminal's width (UNKNOWN_WIDTH when it does not say: a pseudo-terminal nobody
    sized)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or UNKNOWN_WIDTH
    except (OSError, ValueError, AttributeError):
        return UNKNOWN_WIDTH


class Bar:
    """One line written over in place: ``show(text before, done, total, text after)``; ``clear``
    takes it away. Fits the terminal's width (a line that wraps is not written over)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = unfiltered(stream or sys.stderr)  # its carriage returns are its own
        self.shown = False
        self.began = time.monotonic()
        self.estimate = Estimate()
        self._total: int | None = None
        self._width = 0

    def line(self, head: str, done: int | None, total: int | None, tail: str = "", *,
             share: bool = False, left_s: float | None = None) -> str:
        """The line for ``done`` of ``total`` (either None: no bar, no estimate); ``share``
        shows the percentage alone (units a person does not count: bytes); ``left_s`` is the
        daemon's own estimate, when it sends one (else the rate seen here gives it). What
        does not fit goes: first the bar, then the middle of ``head``, then the end of
        ``tail``."""
        width = columns(self.stream) - 1
        numbers = [f"· {time.monotonic() - self.began:.0f} s"]
        if done is not None and total:
            if total != self._total:  # a new phase, or a total that grew: measure afresh
                self.estimate, self._total = Estimate(), total
            self.estimate.add(time.monotonic(), done)
            left = None if done >= total else \
                left_s if left_s is not None else self.estimate.left_s(done, total)
            percent = f"{100 * min(done, total) // total}%"
            numbers[:0] = [percent if share else f"{done:,}/{total:,} ({percent})",
                           *([f"~{duration(left)} left"] if left is not None else [])]
        rest = " ".join(numbers) + (f" · {tail}" if tail else "")
        room = width - len(head) - len(" ".join(numbers)) - 4  # two spaces, two brackets
        if done is not None and total and room >= BAR_MIN:
            return f"{head} {bar(done, total, min(room, BAR_WIDTH))} {rest}"[:width]
        keep = width - len(" ".join(numbers)) - 1
        if len(head) > keep:
            head = head[:max(keep // 2 - 1, 8)] + "…" + head[-max(keep - keep // 2, 8):]
        return f"{head} {rest}"[:width]

    def show(self, text: str) -> None:
        shown = printable(text)
        self.stream.write("\r" + shown.ljust(self._width))
        self.stream.flush()
        self._width = len(shown)
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self.shown = False


class ProgressLine:
    """A callable for ``Client(progress=…)``; ``clear`` takes the line away again."""

    def __init__(self, stream: TextIO | None = None, *, prefix: str | None = None) -> None:
        self.bar = Bar(stream)
        self.prefix = prefix  # what the command says it does ("importing x.jsonl")
        self.offset = 0  # entries of the calls before this one (an import sends batches)
        self.total: int | None = None
        self._last = 0.0

    @property
    def shown(self) -> bool:
        return self.bar.shown

    def __call__(self, frame: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - self.bar.began < AFTER_S or now - self._last < EVERY_S:
            return
        self._last = now
        self.bar.show(self.text(frame))

    def text(self, frame: dict[str, Any]) -> str:
        what = self.prefix or frame.get("what") or frame.get("method") or "working"
        head = f"{what}: {frame['phase']}" if frame.get("phase") else f"{what}:"
        done, total = frame.get("done"), frame.get("total")
        total = self.total or (total + self.offset if isinstance(total, int) else None)
        if isinstance(done, int) and total is not None:
            done += self.offset
        else:
            done = total = None
        counts = frame.get("counts")
        tail = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                         for k, v in counts.items()) if isinstance(counts, dict) else ""
        eta = frame.get("eta_s")
        return self.bar.line(head, done, total, tail,
                             left_s=float(eta) if isinstance(eta, (int, float)) and eta > 0
                             else None)

    def clear(self) -> None:
        self.bar.clear()
