"""Writing bytes so that they survive a crash: the whole buffer, fsynced, and a file replaced
atomically (a temporary file beside it, fsynced, renamed over it, the directory fsynced)."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import BinaryIO

import apsw

from memoryd.errors import WriteRefusedError
from memoryd.names import MAX_NAME_BYTES

log = logging.getLogger(__name__)

#: SQLite's answers when the disk cannot take a write (full, read-only, failing, gone).
DISK_ERRORS = (apsw.IOError, apsw.FullError, apsw.ReadOnlyError, apsw.CantOpenError)
#: The same from the file system: the write is refused for now, the request was fine.
REFUSED_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                  errno.EPERM, errno.EIO, errno.EFBIG})


def refusal(exc: BaseException, system_errno: int = 0) -> str:
    """Why the file system or SQLite refused a write, in words: the OS's text for its errno
    (``system_errno``: the one SQLite saw, for its errors, which say only "disk I/O error"),
    and for EFBIG the likely cause, a file-size limit (``ulimit -f``)."""
    number = exc.errno if isinstance(exc, OSError) else system_errno
    if number == errno.EFBIG:
        return "file too large (a file-size limit?)"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    text = str(exc) or type(exc).__name__
    said = os.strerror(number) if number else ""
    return f"{text}: {said}" if said and said.lower() not in text.lower() else text


def not_stored(what: str, exc: BaseException, system_errno: int = 0) -> WriteRefusedError:
    """The answer to a write the disk refused while memoryd wrote ``what`` ("cannot write
    the ledger of 'a'"), once everything of it was taken back."""
    return WriteRefusedError(f"not stored: {what} ({refusal(exc, system_errno)}); nothing of "
                             "this request was kept")


def write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd`` (``os.write`` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def append_durably(path: Path, data: bytes, *, sync: bool) -> tuple[int, int]:
    """Append ``data`` to ``path`` in one write (creating it, mode 0600, its name made durable);
    returns the file's size before and after. On failure nothing stays appended: the file is
    cut back. Without ``sync`` the bytes survive the process being killed, not yet a power
    loss (the caller fsyncs later)."""
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        before = os.fstat(fd).st_size
        try:
            write_all(fd, data)
            if sync:
                os.fsync(fd)
        except BaseException:
            cut_back(fd, path, before)
            raise
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if created:
        fsync_directory(path.parent)
    return before, size


def cut_back(fd: int, path: Path, size: int) -> bool:
    """Cut an appended file back to ``size`` bytes, durably; False (logged) when it cannot be:
    the next open then finds a torn tail to cut, or a whole record that stays."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError as exc:
        log.error("Could not cut %s back to %d bytes after a failed write: %s", path, size, exc)
        return False
    return True


def torn_tail(handle: BinaryIO) -> tuple[int, int] | None:
    """Where a line file opened for reading at its start must be cut to lose a torn last line
    (an append a crash interrupted: never acknowledged): (the end of its last whole line, its
    size); None when it ends with a newline or is empty. Reads only the file's end."""
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return None
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return None
    position = size
    while position > 0:
        step = min(65536, position)
        handle.seek(position - step)
        found = handle.read(step).rfind(b"\n")
        if found != -1:
            return position - step + found + 1, size
        position -= step
    return 0, size


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
