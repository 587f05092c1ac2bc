"""memoryd-client: the thin client of memoryd (msgpack over a Unix socket).

Importing this package never imports numpy, onnxruntime or apsw.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hook ~4 ms
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "AsyncClient": "memoryd_client.client",
    "Client": "memoryd_client.client",
    "socket_path": "memoryd_client.paths",
    "state_dir": "memoryd_client.paths",
}


def __getattr__(name: str) -> Any:
    """Names are imported on first use, so that a hook process imports only what it needs."""
    if name not in __all__:  # e.g. `from memoryd_client import wire` asks first: not ours
        raise AttributeError(f"module 'memoryd_client' has no attribute {name!r}")
    import importlib

    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    errors = importlib.import_module("memoryd_client.errors")
    if name in __all__ and hasattr(errors, name):
        return getattr(errors, name)
    raise AttributeError(f"module 'memoryd_client' has no attribute {name!r}")


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
