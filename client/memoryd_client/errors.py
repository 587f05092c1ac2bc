"""Errors shared by memoryd and its clients.

    MemorydError                 code "error"            CLI exit 1
    ├── FrameTooLargeError       code "frame_too_large"
    ├── BadFrameError            code "bad_frame"
    ├── UnknownMethodError       code "unknown_method"
    ├── BadParamsError           code "bad_params"
    ├── NotFoundError            code "not_found"
    ├── ForbiddenError           code "forbidden"
    ├── UnavailableError         code "unavailable"      (e.g. no embedding model loaded)
    ├── ConfigError              code "config"           a bad setting or source (CLI exit 2)
    ├── InternalError            code "internal"
    └── DaemonUnreachableError   code "unreachable"      CLI exit 3 (client side only)

The daemon raises these inside its code; the server turns them into an error frame
``{code, message}`` (with ``data`` when the error carries what was done before it: a
remember_many whose later entries a full disk refused lists the results of those it stored);
the client turns the frame back into the same class.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a hook process ~20 ms; it needs it only for mypy
if TYPE_CHECKING:
    from typing import Any


class MemorydError(Exception):
    """Base class; ``code`` travels on the wire, ``exit_code`` is the CLI's; ``data`` (on the
    wire too, when set): what the request did before it failed (``{"results": [...]}`` of a
    remember_many stored in part)."""

    code = "error"
    exit_code = 1
    data: dict[str, Any] | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            wire["data"] = self.data
        return wire


class FrameTooLargeError(MemorydError):
    code = "frame_too_large"


class BadFrameError(MemorydError):
    code = "bad_frame"


class UnknownMethodError(MemorydError):
    code = "unknown_method"


class BadParamsError(MemorydError):
    """A request's parameter refused. ``method``, ``param`` and ``detail`` (on the wire too,
    when known) say which and what is wrong with it, so that a client can say it in its own
    words (the CLI: its command and option); the message says it as the daemon does,
    ``METHOD: PARAM DETAIL`` (``list: since 'x' is not a time``)."""

    code = "bad_params"

    def __init__(self, message: str, method: str | None = None, param: str | None = None,
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.method = method
        self.param = param
        self.detail = detail

    def to_wire(self) -> dict[str, Any]:
        wire = super().to_wire()
        wire.update((name, value) for name, value in (
            ("method", self.method), ("param", self.param), ("detail", self.detail)) if value)
        return wire


class NotFoundError(MemorydError):
    code = "not_found"


class ForbiddenError(MemorydError):
    code = "forbidden"


class UnavailableError(MemorydError):
    code = "unavailable"


class ConfigError(MemorydError):
    code = "config"
    exit_code = 2


class InternalError(MemorydError):
    code = "internal"


class DaemonUnreachableError(MemorydError):
    """No answer from the daemon. ``sent``: the request reached it before the wait ended (a
    timeout, a connection broken during the call), so it may still be carried out: a client
    looks before sending a write again."""

    code = "unreachable"
    exit_code = 3

    def __init__(self, message: str, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


_BY_CODE: dict[str, type[MemorydError]] = {
    cls.code: cls
    for cls in (
        MemorydError,
        FrameTooLargeError,
        BadFrameError,
        UnknownMethodError,
        BadParamsError,
        NotFoundError,
        ForbiddenError,
        UnavailableError,
        ConfigError,
        InternalError,
        DaemonUnreachableError,
    )
}


def error_from_wire(error: object) -> MemorydError:
    """The exception matching an error frame's ``{code, message}``."""
    if not isinstance(error, dict):
        return MemorydError(f"malformed error reply: {error!r}")
    cls = _BY_CODE.get(str(error.get("code")), MemorydError)
    message = str(error.get("message", ""))
    if cls is BadParamsError:
        method, param, detail = (value if isinstance(value := error.get(name), str) else None
                                 for name in ("method", "param", "detail"))
        return BadParamsError(message, method, param, detail)
    raised = cls(message)
    data = error.get("data")
    if isinstance(data, dict):
        raised.data = data
    return raised


class UsageError(Exception):
    """A usage mistake found by the parser or by a command (exit 2)."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage
