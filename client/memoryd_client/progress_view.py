"""The `memory` command's progress line: what a long request (an import, a pass) is doing, on
one line of stderr that is written over as the daemon's progress frames come (wire.py).

Only on a terminal: never under --json, and never when stderr is a pipe or a file (a script
reads the result, not a stream of carriage returns).
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

#: The line is written over at most this often (frames come every ~0.5 s).
EVERY_S = 0.25
#: ... and only once a request has run this long: a quick one prints nothing.
AFTER_S = 1.0


class ProgressLine:
    """A callable for ``Client(progress=…)``; ``clear`` takes the line away again."""

    def __init__(self, stream: TextIO | None = None, *, prefix: str | None = None) -> None:
        self.stream = stream or sys.stderr
        self.prefix = prefix  # what the command says it does ("importing x.jsonl")
        self.offset = 0  # entries of the calls before this one (an import sends batches)
        self.total: int | None = None
        self.shown = False
        self._began = time.monotonic()
        self._last = 0.0
        self._width = 0

    def __call__(self, frame: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - self._began < AFTER_S or now - self._last < EVERY_S:
            return
        self._last = now
        text = self.text(frame)
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)
        self.shown = True

    def text(self, frame: dict[str, Any]) -> str:
        what = self.prefix or frame.get("what") or frame.get("method") or "working"
        parts = [f"{what}:"]
        if frame.get("phase"):
            parts.append(str(frame["phase"]))
        done, total = frame.get("done"), frame.get("total")
        if isinstance(done, int) and (self.total or isinstance(total, int)):
            done += self.offset
            total = self.total or (total + self.offset)
            percent = f" ({100 * done // total}%)" if total else ""
            parts.append(f"{done:,}/{total:,}{percent}")
        counts = frame.get("counts")
        if isinstance(counts, dict) and counts:
            parts.append(", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                                   for k, v in counts.items()))
        eta = frame.get("eta_s")
        if isinstance(eta, (int, float)) and eta > 0:
            parts.append(f"~{eta / 60:.0f} min left" if eta >= 90 else f"~{eta:.0f} s left")
        elapsed = time.monotonic() - self._began
        parts.append(f"· {elapsed:.0f} s")
        return " ".join(parts)[:200]

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self.shown = False
