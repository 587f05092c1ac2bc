"""sd_notify without libsystemd: one datagram to $NOTIFY_SOCKET. Does nothing when unset."""

from __future__ import annotations

import os
import socket


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
