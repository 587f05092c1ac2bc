"""sd_notify without libsystemd: one datagram to $NOTIFY_SOCKET. Does nothing when unset.

The daemon sends ``READY=1`` once its signal handlers are installed and its socket listens,
``RELOADING=1`` … ``READY=1`` around a SIGHUP reload, ``STOPPING=1`` on shutdown, and
``WATCHDOG=1`` from the event loop at half the interval systemd asks for (``WatchdogSec=``
exports it as $WATCHDOG_USEC), so a wedged loop misses its pings and gets restarted.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time


def sd_notify(*fields: str) -> bool:
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    elif not address.startswith("/"):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall("\n".join(fields).encode())
    except OSError:
        return False
    return True


def monotonic_usec() -> str:
    """The MONOTONIC_USEC field systemd wants beside RELOADING=1."""
    return f"MONOTONIC_USEC={time.monotonic_ns() // 1000}"


def watchdog_interval_s() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of $WATCHDOG_USEC), or None: no watchdog asked
    for, or it is meant for another process ($WATCHDOG_PID)."""
    usec, pid = os.environ.get("WATCHDOG_USEC"), os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        interval = int(usec) / 2e6
    except ValueError:
        return None
    return interval if interval > 0 else None


async def ping_watchdog(interval_s: float) -> None:
    """Ping from the event loop itself: a loop that stops turning stops pinging."""
    while True:
        sd_notify("WATCHDOG=1")
        await asyncio.sleep(interval_s)
