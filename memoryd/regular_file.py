"""Reading the user's files without ever blocking on one that is not a file.

A project, a memory directory or a transcript directory can hold a FIFO, a socket or a device,
itself or behind a symlink. ``open()`` of a FIFO blocks until a writer comes, forever if none
does: the staleness pass hung so on an untracked symlink to a FIFO, every later pass waited
behind it, and the daemon could not stop (its worker thread stuck in the open). So every read
of a file memoryd does not own goes through here: the path is ``stat``-ed first (through
symlinks) and only a regular file is opened; it is opened with ``O_NONBLOCK``, so one swapped
for a FIFO between the two calls opens at once instead of blocking, and is refused by the
``fstat`` of what was opened.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class SpecialFileError(OSError):
    """The path leads to something other than a regular file: never opened, or closed at once
    (an ``OSError``, so the callers that skip an unreadable file skip it too)."""


def kind_of(mode: int) -> str:
    """What a ``st_mode`` that is not a regular file's is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: str | os.PathLike[str], mode: int) -> SpecialFileError:
    return SpecialFileError(errno.EINVAL, f"not a regular file ({kind_of(mode)})",
                            os.fspath(path))


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> int:
    """A descriptor of the regular file ``path`` leads to (through symlinks), without blocking
    on anything else: :class:`SpecialFileError` for a FIFO, socket, device or directory;
    ``FileNotFoundError`` and the other ``OSError`` as ``os.open`` raises them."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(path, mode)
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # swapped for something else since the stat
            raise _refuse(path, mode)
        os.set_blocking(fd, True)  # no effect on a regular file's reads; as callers expect
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` leads to (at most ``limit``), as
    :func:`open_regular` opens it."""
    fd = open_regular(path)
    try:
        chunks = []
        size = 0
        while limit is None or size < limit:
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: str | os.PathLike[str]) -> str:
    """:func:`read_regular` decoded as UTF-8, undecodable bytes replaced."""
    return read_regular(path).decode("utf-8", errors="replace")


def is_regular(path: str | os.PathLike[str] | Path) -> bool:
    """Whether ``path`` leads to a regular file (through symlinks)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def why_unread(path: str) -> str | None:
    """Why the file at ``path`` cannot be read although something is there, in words: a FIFO,
    a device or a directory in its place, a symlink loop or one whose target is missing, a
    directory on the way that cannot be entered. None: a regular file (through symlinks).
    Raises ``FileNotFoundError`` (or ``NotADirectoryError``) when nothing is at the path: the
    file is gone. A watched file that is there but unreadable keeps its entries (an
    unreadable directory is no deletion: the user's text is still on the disk)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        os.lstat(path)  # raises when nothing is there: gone
        return f"a symlink to {os.readlink(path)}, which does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop (too many levels of symbolic links)"
        if exc.errno == errno.EACCES:
            closed = next((str(d) for d in reversed(Path(path).parents)
                           if os.path.isdir(d) and not os.access(d, os.X_OK)), None)
            if closed is not None:
                return f"unreadable: permission denied (its directory {closed} cannot be entered)"
        return f"unreadable: {exc.strerror or exc}"
    return None if stat.S_ISREG(mode) else f"not a regular file ({kind_of(mode)})"
