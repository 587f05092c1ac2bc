"""The daemon's errors: the shared tree of :mod:`memoryd_client.errors` plus startup errors.

    MemorydError (memoryd_client.errors; each has a wire code)
    ├── UnavailableError
    │   └── WriteRefusedError a write the disk refused (full, a file-size limit, read-only):
    │       │                 "not stored: …" (wire code "unavailable"; counted for status)
    │       └── PartlyStoredError  a remember_many refused after its first slices were
    │                         stored: "604 of 1000 stored; …", their results in ``data``
    ├── StartupError          daemon exit 3
    │   ├── ConfigError       bad configuration (also the client's ConfigError: one wire code;
    │   │                     the daemon exits 3 at start, a client shown it exits 2)
    │   └── AlreadyRunningError   another daemon holds the socket
    ├── EmbedderError         the model cannot load or run (the daemon goes keyword-only)
    └── ServiceError          `memoryd service` could not do it (exit 1)
"""

from __future__ import annotations

from typing import Any

from memoryd_client import errors as wire_errors
from memoryd_client.errors import (  # noqa: F401  (re-exported for the daemon's modules)
    BadFrameError,
    BadParamsError,
    ForbiddenError,
    FrameTooLargeError,
    InternalError,
    MemorydError,
    NotFoundError,
    UnavailableError,
    UnknownMethodError,
)

from memoryd.redact import redact

STARTUP_FAILURE = 3


class StartupError(MemorydError):
    code = "startup"
    exit_code = STARTUP_FAILURE


class ConfigError(StartupError, wire_errors.ConfigError):
    """Bad configuration: at start the daemon exits 3 (``StartupError`` comes first); sent
    over the wire to a client it is the client's ``ConfigError`` (a usage mistake, exit 2).

    The message echoes the values at fault (``got [...]``, an environment variable's value,
    an ``[extract] command`` that cannot be split), and goes where secrets must not: a
    reload's error, the daemon's log, `memory status` and `memory doctor` (pasted into bug
    reports). So it is redacted (memoryd.redact): an API key in a setting is shown as
    ``[REDACTED:<kind>]``, the rest of the value as it is."""

    code = "config"

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class AlreadyRunningError(StartupError):
    code = "already_running"


class EmbedderError(MemorydError):
    code = "embedder"


class WriteRefusedError(UnavailableError):
    """A write that was itself fine, refused by the disk (full, a file-size limit, read-only,
    failing): nothing of the request was kept. On the wire it is ``unavailable``; the daemon
    counts these for `memory status` (memoryd.server.refused). ``why``: what the disk refused,
    without the words about the request ("cannot write the ledger of 'a' (No space left on
    device)")."""

    def __init__(self, message: str, why: str | None = None) -> None:
        super().__init__(message)
        self.why = why or message


class PartlyStoredError(WriteRefusedError):
    """A bulk write (remember_many) stored in slices, each committed on its own, refused by
    the disk after some were: those stay stored (the ledger holds them, a restart keeps them)
    and the request's answer says so. ``written``: what each entry stored did, in order (the
    server puts their results in the error's ``data``); ``total``: the entries asked for."""

    def __init__(self, refused: WriteRefusedError, written: list[Any], total: int) -> None:
        stored = len(written)
        super().__init__(
            f"{stored} of {total} entries stored; the other {total - stored} not: "
            f"{refused.why}; the {stored} stored are kept (their results are in the error's "
            "data: retrying the whole request stores none twice)", refused.why)
        self.written = written
        self.total = total


def stopping_error() -> UnavailableError:
    """The answer to a request that arrives (or needs the database) while memoryd stops."""
    return UnavailableError("memoryd is stopping: request not served (a bulk write may be "
                            "partly stored); retry once it is back, nothing is stored twice")


class ServiceError(MemorydError):
    """The service manager refused or is missing; the message says what to do instead."""

    code = "service"


def what_went_wrong(exc: BaseException) -> str:
    """What went wrong, the messages of a group of exceptions too."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(what_went_wrong(inner) for inner in exc.exceptions)
    return str(exc) or type(exc).__name__
