"""Connecting to the daemon's socket, riding out a full listen backlog.

When a burst of clients outpaces ``accept``, the kernel's queue for the socket fills: Linux
answers ``EAGAIN`` to a non-blocking connect, macOS ``ECONNREFUSED``. Neither means the daemon
is down, so a connect is retried for a short while (``RETRY_S``) when the socket file is there
and something may listen on it; with no socket file, or nobody listening (the daemon named in
``memoryd.lock`` is gone), the error comes back at once. Kept small and free of heavy imports:
the hook process uses it too.
"""

from __future__ import annotations

import _socket  # socket.py costs a `memory` run ~3 ms (its enums and selectors)
import errno
import os
import time

#: How long a connect is retried while the backlog is full.
RETRY_S = 2.0
_RETRIED = (errno.EAGAIN, errno.EWOULDBLOCK, errno.ECONNREFUSED)


def _lock_pid(path: str) -> int | None:
    """The pid the lock file beside the socket (``<socket>.lock``) names, if it names one."""
    try:
        with open(path + ".lock", "rb") as lock:
            pid = int(lock.read(32).strip() or b"0")
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another uid
        return True
    return True


def _daemon_alive(path: str) -> bool:
    """Whether a memoryd may be listening: the socket file exists and, when the lock file
    beside it (``<socket>.lock``) names a pid, that process is alive."""
    if not os.path.exists(path):
        return False
    pid = _lock_pid(path)
    return pid is None or _alive(pid)  # no lock to read: give it the benefit of the doubt


def holder(path: str) -> int | None:
    """The pid of the memoryd that holds the socket ``path`` (its file there, the process its
    lock names alive), or None. One that holds it and refuses connections has closed its
    listener: it is stopping (or, for moments, starting over a socket a crash left)."""
    pid = _lock_pid(path) if os.path.exists(path) else None
    return pid if pid is not None and _alive(pid) else None


def connect(path: str, timeout_s: float, retry_s: float = RETRY_S) -> _socket.socket:
    """A connected blocking socket (with ``timeout_s`` set); raises the last OSError."""
    deadline = time.monotonic() + min(retry_s, timeout_s)
    pause = 0.005
    while True:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(path)
            return sock
        except OSError as exc:
            sock.close()
            if time.monotonic() + pause > deadline or exc.errno not in _RETRIED \
                    or not _daemon_alive(path):
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


async def connect_async(path: str, retry_s: float = RETRY_S):  # type: ignore[no-untyped-def]
    """``asyncio.open_unix_connection`` with the same retries; returns (reader, writer)."""
    import asyncio

    deadline = time.monotonic() + retry_s
    pause = 0.005
    while True:
        try:
            return await asyncio.open_unix_connection(path)
        except OSError as exc:
            if time.monotonic() + pause > deadline or exc.errno not in _RETRIED \
                    or not _daemon_alive(path):
                raise
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.1)
