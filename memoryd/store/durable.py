"""Writing bytes so that they survive a crash: the whole buffer, fsynced, and a file replaced
atomically (a temporary file beside it, fsynced, renamed over it, the directory fsynced)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import apsw

from memoryd.names import MAX_NAME_BYTES

#: SQLite's answers when the disk cannot take a write (full, read-only, failing, gone).
DISK_ERRORS = (apsw.IOError, apsw.FullError, apsw.ReadOnlyError, apsw.CantOpenError)
#: The same from the file system: the write is refused for now, the request was fine.
REFUSED_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                  errno.EPERM, errno.EIO, errno.EFBIG})


def write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd`` (``os.write`` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def fsync_directory(directory: Path) -> None:
    """Make a created, renamed or removed name in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary_beside(path: Path) -> Path:
    """A temporary name in ``path``'s directory for this process (hidden, fits NAME_MAX)."""
    temporary = path.with_name(f".{path.name}.memoryd-{os.getpid()}.tmp")
    if len(os.fsencode(temporary.name)) > MAX_NAME_BYTES:
        temporary = path.with_name(f".memoryd-{os.getpid()}.tmp")
    return temporary


def write_temporary(path: Path, data: bytes, mode: int = 0o600) -> Path:
    """``data`` written and fsynced to a temporary file beside ``path`` (with ``mode``), for
    the caller to rename over it; removed again if the write fails."""
    temporary = temporary_beside(path)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            write_all(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        temporary.unlink(missing_ok=True)  # never leave the caller's bytes behind
        raise
    return temporary


def replace_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` atomically and durably: a reader sees the old bytes or
    the new ones, and after a crash the file holds one of them whole."""
    temporary = write_temporary(path, data, mode)
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
