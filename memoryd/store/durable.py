"""Writing bytes so that they survive a crash: the whole buffer, fsynced, and a file replaced
atomically (a temporary file beside it, fsynced, renamed over it, the directory fsynced)."""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
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
#: The state dir's directory of torn last lines set aside (:func:`mend_tail`); never synced.
TORN_DIR = "torn"


def refused_by_disk(exc: BaseException) -> bool:
    """Whether the disk refused a write (full, read-only, failing, a quota or a file-size
    limit): nothing a traceback would help with."""
    return isinstance(exc, (WriteRefusedError, *DISK_ERRORS)) or (
        isinstance(exc, OSError) and exc.errno in REFUSED_WRITE_ERRNOS)


def disk_full(exc: BaseException) -> bool:
    """Whether the write was refused for want of space (the disk or a quota full)."""
    return isinstance(exc, apsw.FullError) or (
        isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT))


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
    why = f"{what} ({refusal(exc, system_errno)})"
    return WriteRefusedError(f"not stored: {why}; nothing of this request was kept", why)


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
    """Where the last line of a line file opened for reading starts when it lacks its newline
    (an append a crash interrupted, or a file another program wrote without a final newline):
    (the end of the line before it, the file's size); None when the file ends with a newline
    or is empty. Reads only the file's end."""
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


@dataclass(frozen=True)
class MendedTail:
    """A line file's last line that lacked its newline, and what became of it: a whole record
    got its newline (``aside`` None); a torn one was moved to the side file ``aside``."""

    path: Path
    offset: int  # where the line starts
    length: int  # its bytes
    aside: Path | None

    def describe(self) -> str:
        if self.aside is None:
            return (f"its last line ({self.length} bytes at byte {self.offset}) was a whole "
                    "record without its newline (the file rewritten by another program?): "
                    "the newline was added, the record kept")
        return (f"a torn last line of {self.length} bytes at byte {self.offset} (a write "
                f"interrupted before it was acknowledged) was moved to {self.aside}")


def mend_tail(path: Path, whole: Callable[[bytes], bool], aside: Path) -> MendedTail | None:
    """Mend a line file whose last line lacks its newline (at open, before anything is
    appended to it), reading only its end: a line ``whole`` accepts (a complete record that
    lost only its newline, as an editor writes a file) gets the newline; any other (an
    append a crash or a full disk interrupted: never acknowledged) is moved to a side file,
    ``aside`` with the time added (``torn/passes.jsonl.20261130T101500Z``), written durably
    before the file is cut, so no byte memoryd kept is destroyed. None: nothing to mend."""
    with path.open("rb+") as handle:
        torn = torn_tail(handle)
        if torn is None:
            return None
        end, size = torn
        handle.seek(end)
        line = handle.read(size - end)
        if whole(line):
            handle.seek(size)
            handle.write(b"\n")
            handle.flush()
            os.fsync(handle.fileno())
            return MendedTail(path, end, size - end, None)
        side = _side_file(aside)
        replace_file(side, line)
        handle.truncate(end)
        handle.flush()
        os.fsync(handle.fileno())
    return MendedTail(path, end, size - end, side)


def _side_file(aside: Path) -> Path:
    """A name not taken yet for a torn line set aside (its directory made, durably)."""
    if not aside.parent.is_dir():
        aside.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fsync_directory(aside.parent.parent)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    side = aside.with_name(f"{aside.name}.{stamp}")
    number = 1
    while side.exists():
        side = aside.with_name(f"{aside.name}.{stamp}-{number}")
        number += 1
    return side


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
