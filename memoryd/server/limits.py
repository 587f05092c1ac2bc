"""What keeps the daemon available when clients misbehave: a cap on connections, an idle
timeout, a budget for request frames being received, the open-file limit and the listen
backlog (the ``[server]`` settings in ``default.toml``).

A connection over the cap first closes the connection idle longest (idle at least
EVICT_IDLE_S), so that one process holding every connection open cannot lock everyone out
until the idle timeout; with none to close it is answered ``unavailable``. A frame that would
take the buffered bytes over their budget is read and dropped and answered ``unavailable``
(the connection stays usable); small frames (a status, a search) have a reserve on top of the
budget that big ones cannot take, and a frame whose bytes stop coming is dropped with its
connection after FRAME_WAIT_S (and a second for each 4 MiB). The cap is kept under the
open-file limit, so the daemon never runs out of file descriptors for its own files; when a
burst still runs ``accept`` out of them, accepting pauses (the clients wait in the listen
queue) with one log line, where asyncio's own loop logged a traceback for every failed
``accept``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
import time
from collections.abc import Awaitable, Callable

from memoryd.settings import ServerConfig

log = logging.getLogger(__name__)

#: File descriptors kept for the daemon's own files: database, ledgers, archives, the
#: watcher's inotify handles, the model, logs, the lock and the listening socket.
RESERVED_FDS = 64
#: ``listen()`` backlog: a burst of clients waits in the kernel's queue instead of being
#: refused (Linux caps it at net.core.somaxconn, 4096 by default).
LISTEN_BACKLOG = 4096
#: Where the soft open-file limit is raised to when the hard limit is unlimited.
NOFILE_TARGET = 65536
#: At the cap, a new connection closes the one idle longest if it has been idle this long
#: (not ones just served in a burst: then the newcomer is refused, as before).
EVICT_IDLE_S = 1.0
#: A frame of this size or less is small (a status is 30 bytes, a search a few hundred)...
SMALL_FRAME_BYTES = 64 << 10
#: ... and small frames may use this much on top of ``buffered_frame_bytes``, which big frames
#: arriving slowly cannot take from them.
SMALL_FRAME_RESERVE = 8 << 20
#: A frame's body must arrive within FRAME_WAIT_S (or the idle timeout, if shorter) and a
#: second per FRAME_BYTES_PER_S (a local client sends 8 MiB in milliseconds); a frame that
#: stalls is dropped, and its connection closed.
FRAME_WAIT_S = 5.0
FRAME_BYTES_PER_S = 4 << 20
#: accept() out of file descriptors: accepting pauses this long, then tries again.
ACCEPT_PAUSE_S = 0.2
#: A pause is logged once in this long, however many follow.
ACCEPT_LOG_EVERY_S = 60.0
#: Connections accepted per wake-up of the listening socket (others wait for the next one).
ACCEPT_BATCH = 64
OUT_OF_FDS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


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
    """Counts connections and buffered frame bytes, and which connections wait idle
    (event-loop thread only)."""

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
        self.evicted = 0
        self.stalled = 0
        #: connections waiting for their next frame, oldest wait first, and since when
        self.idle: dict[asyncio.StreamWriter, float] = {}

    def admit(self) -> bool:
        if self.connections >= self.max_connections and not self._evict():
            self.refused += 1
            return False
        self.connections += 1
        return True

    def _evict(self) -> bool:
        """Close the connection idle longest, if idle EVICT_IDLE_S or more: its handler ends
        (and leaves) by itself; a memoryd client opens a new one on its next call."""
        if not self.idle:
            return False
        writer, since = next(iter(self.idle.items()))
        if time.monotonic() - since < EVICT_IDLE_S:
            return False
        del self.idle[writer]
        writer.close()
        self.evicted += 1
        return True

    def leave(self, writer: asyncio.StreamWriter) -> None:
        self.connections -= 1
        self.idle.pop(writer, None)

    def waiting(self, writer: asyncio.StreamWriter) -> None:
        """The connection waits for its next frame (it may be closed for a newcomer)."""
        self.idle.pop(writer, None)
        self.idle[writer] = time.monotonic()

    def working(self, writer: asyncio.StreamWriter) -> None:
        """A frame began to arrive on the connection: it is not idle until answered."""
        self.idle.pop(writer, None)

    def reserve(self, length: int) -> bool:
        """Room for a frame body of ``length`` bytes; False when the budget is spent (a small
        frame may also use the reserve kept for small frames)."""
        room = self.buffered_frame_bytes + (SMALL_FRAME_RESERVE if length <= SMALL_FRAME_BYTES
                                            else 0)
        if self.buffered + length > room:
            return False
        self.buffered += length
        return True

    def release(self, length: int) -> None:
        self.buffered -= length

    def frame_wait_s(self, length: int) -> float:
        """How long a frame body of ``length`` bytes may take to arrive."""
        return min(FRAME_WAIT_S, self.idle_timeout_s) + length / FRAME_BYTES_PER_S

    def status(self) -> dict[str, int | float]:
        return {"connections": self.connections, "max_connections": self.max_connections,
                "refused_connections": self.refused, "closed_for_newcomers": self.evicted,
                "stalled_frames": self.stalled, "idle_timeout_s": self.idle_timeout_s,
                "buffered_frame_bytes": self.buffered}


async def read_body(reader: asyncio.StreamReader, length: int) -> bytes:
    """A frame body of ``length`` bytes, read a piece at a time. (``readexactly`` grew the
    stream's buffer to the whole frame, and a frame cut short left a copy of it in the
    IncompleteReadError, which a reference cycle kept until the next full collection: 70 MB
    stayed after 30 partial frames had been closed.)"""
    body = bytearray()
    try:
        while len(body) < length:
            piece = await reader.read(min(length - len(body), 1 << 20))
            if not piece:
                raise asyncio.IncompleteReadError(b"", length - len(body))
            body += piece
        return bytes(body)
    finally:
        body.clear()  # whatever the traceback of a failure keeps, not the bytes


class Acceptor:
    """Accepts connections on the listening socket and hands each to ``handle`` as a stream
    pair, as ``asyncio.start_unix_server`` does; but when ``accept`` runs out of file
    descriptors it stops accepting for ACCEPT_PAUSE_S and logs that once. (asyncio's server
    logged a traceback for every failed accept, up to its backlog times a wake-up, and
    scheduled as many retries: ~2,000 tracebacks, 1 MB of log, in a 10 s burst.)"""

    def __init__(self, sock: socket.socket,
                 handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
                 ) -> None:
        self.loop = asyncio.get_running_loop()
        self.sock = sock
        self.handle = handle
        self.closed = False
        self.pauses = 0
        self.logged_at: float | None = None
        self.starting: set[asyncio.Task[object]] = set()
        sock.setblocking(False)
        self.loop.add_reader(sock.fileno(), self._accept)

    def close(self) -> None:
        """Stop accepting and close the listening socket (connections stay open)."""
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self.sock.fileno())
        self.sock.close()

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno in OUT_OF_FDS:
                    self._pause(exc)
                else:
                    log.warning("Accepting a connection failed: %s.", exc.strerror or exc)
                return
            conn.setblocking(False)
            task = self.loop.create_task(self._start(conn))
            self.starting.add(task)
            task.add_done_callback(self.starting.discard)

    def _pause(self, exc: OSError) -> None:
        self.loop.remove_reader(self.sock.fileno())
        self.pauses += 1
        now = time.monotonic()
        if self.logged_at is None or now - self.logged_at >= ACCEPT_LOG_EVERY_S:
            self.logged_at = now
            log.warning("Out of file descriptors (%s): accepting connections paused for "
                        "moments, new ones wait in the listen queue (logged once a minute at "
                        "most; %d pauses so far).", exc.strerror or exc, self.pauses)
        self.loop.call_later(ACCEPT_PAUSE_S, self._resume)

    def _resume(self) -> None:
        if not self.closed:
            self.loop.add_reader(self.sock.fileno(), self._accept)

    async def _start(self, conn: socket.socket) -> None:
        reader = asyncio.StreamReader(loop=self.loop)
        protocol = asyncio.StreamReaderProtocol(reader, self.handle, loop=self.loop)
        try:
            await self.loop.connect_accepted_socket(lambda: protocol, sock=conn)
        except OSError:
            conn.close()
