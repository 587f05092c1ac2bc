"""memoryd-client: the thin client of memoryd (msgpack over a Unix socket).

Importing this package never imports numpy, onnxruntime or apsw.
"""

from memoryd_client.client import AsyncClient, Client
from memoryd_client.errors import (
    BadFrameError,
    BadParamsError,
    ConfigError,
    DaemonUnreachableError,
    ForbiddenError,
    FrameTooLargeError,
    InternalError,
    MemorydError,
    NotFoundError,
    UnavailableError,
    UnknownMethodError,
)
from memoryd_client.paths import socket_path, state_dir

__all__ = [
    "AsyncClient",
    "BadFrameError",
    "BadParamsError",
    "Client",
    "ConfigError",
    "DaemonUnreachableError",
    "ForbiddenError",
    "FrameTooLargeError",
    "InternalError",
    "MemorydError",
    "NotFoundError",
    "UnavailableError",
    "UnknownMethodError",
    "socket_path",
    "state_dir",
]
