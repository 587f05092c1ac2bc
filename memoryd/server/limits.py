"""What keeps the daemon available when clients misbehave: a cap on connections, an idle
timeout, a budget for request frames being received, the open-file limit and the listen
backlog (the ``[server]`` settings in ``default.toml``).

A connection over the cap, or a frame that would take the buffered bytes over their budget, is
answered ``unavailable`` (a frame over the budget is read and dropped, so the connection stays
usable). The cap is also kept under the open-file limit, so the daemon never runs out of file
descriptors for its own files (which would also make ``accept`` fail for everyone).
"""

from __future__ import annotations

import logging
import resource

from memoryd.config import ServerConfig

log = logging.getLogger(__name__)

#: File descriptors kept for the daemon's own files: database, ledgers, archives, the
#: watcher's inotify handles, the model, logs, the lock and the listening socket.
RESERVED_FDS = 64
#: ``listen()`` backlog: a burst of clients waits in the kernel's queue instead of being
#: refused (Linux caps it at net.core.somaxconn, 4096 by default).
LISTEN_BACKLOG = 4096
#: Where the soft open-file limit is raised to when the hard limit is unlimited.
NOFILE_TARGET = 65536


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE toward the hard limit (as Redis does for ``maxclients``);
    returns the soft limit in effect."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = NOFILE_TARGET if hard == resource.RLIM_INFINITY else min(hard, NOFILE_TARGET)
    if soft != resource.RLIM_INFINITY and soft < target:
        for wanted in (target, 10240):  # macOS refuses more than OPEN_MAX (10240)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
                soft = wanted
                break
            except (ValueError, OSError):
                continue
    return NOFILE_TARGET if soft == resource.RLIM_INFINITY else soft


class ConnectionLimits:
    """Counts connections and buffered frame bytes (event-loop thread only)."""

    def __init__(self, config: ServerConfig, open_files: int) -> None:
        self.max_connections = max(1, min(config.max_connections, open_files - RESERVED_FDS))
        if self.max_connections < config.max_connections:
            log.warning("Serving %d connections at most (server.max_connections is %d): the "
                        "open-file limit is %d.", self.max_connections, config.max_connections,
                        open_files)
        self.idle_timeout_s = config.idle_timeout_s
        self.buffered_frame_bytes = config.buffered_frame_bytes
        self.connections = 0
        self.buffered = 0
        self.refused = 0

    def admit(self) -> bool:
        if self.connections >= self.max_connections:
            self.refused += 1
            return False
        self.connections += 1
        return True

    def leave(self) -> None:
        self.connections -= 1

    def reserve(self, length: int) -> bool:
        """Room for a frame body of ``length`` bytes; False when the budget is spent."""
        if self.buffered + length > self.buffered_frame_bytes:
            return False
        self.buffered += length
        return True

    def release(self, length: int) -> None:
        self.buffered -= length

    def status(self) -> dict[str, int | float]:
        return {"connections": self.connections, "max_connections": self.max_connections,
                "refused_connections": self.refused, "idle_timeout_s": self.idle_timeout_s,
                "buffered_frame_bytes": self.buffered}
