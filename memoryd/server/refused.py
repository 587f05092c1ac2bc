"""The writes the disk refused lately (a full disk, a file-size limit, a read-only file
system): each was answered ``unavailable: not stored: …`` (memoryd.errors.WriteRefusedError)
and kept nothing, and `memory status` and `memory doctor` say so until none has been refused
for :data:`RECENT_S`. The dispatcher notes each one (memoryd.server.dispatch); the first of a
run of them, and each new reason, is logged."""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)

#: A run of refused writes ends when none has come for this long: status is healthy again.
RECENT_S = 900.0


class RefusedWrites:
    def __init__(self) -> None:
        self.count = 0  # the writes refused in this run
        self.since: float | None = None  # when the first of them was refused
        self.last: float | None = None  # when the last one was
        self.reason = ""  # why the last one was (its answer)

    def note(self, message: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        since = self.since if self.recent(now) and self.since is not None else now
        if since == now:
            self.count, self.reason = 0, ""
        self.count, self.since, self.last = self.count + 1, since, now
        if message != self.reason:
            log.warning("A write was refused (%d since %s): %s", self.count,
                        time.strftime("%H:%M:%S", time.localtime(since)), message)
        self.reason = message

    def recent(self, now: float | None = None) -> bool:
        """Whether a write was refused within :data:`RECENT_S`."""
        now = time.time() if now is None else now
        return self.last is not None and now - self.last < RECENT_S
