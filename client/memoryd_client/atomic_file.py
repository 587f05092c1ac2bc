"""Replacing a file so that a crash leaves the old text or the new, never half of either: the
agents' settings files (memoryd_client.install), a repository's exclude file
(memoryd_client.git_exclude) and an export (memoryd_client.list_commands)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO


@contextlib.contextmanager
def replaced_at_end(path: str | None, standard: TextIO) -> Iterator[tuple[TextIO, bool]]:
    """A text stream to write ``path`` through, and whether it is written whole or not at all:
    a regular file (or a new one) is written to a temporary file beside it, renamed over it
    when the block ends without an error and removed when it raises, so that the file holds
    the old text or all the new; it keeps the old file's mode (a new one gets the umask's).
    Without ``path``, ``standard`` (left open); a path that is no regular file (a pipe, a
    device) is written as it is. Either of those is not whole (False)."""
    target = os.path.realpath(path) if path is not None else None
    if target is None or (os.path.exists(target) and not os.path.isfile(target)):
        if target is None:
            yield standard, False
            return
        with open(target, "w", encoding="utf-8") as out:
            yield out, False
        return
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    with _beside(target, mode) as out:
        yield out, True


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: str, text: str, mode: int, owner: tuple[int, int] | None = None) -> None:
    """Replace `path` (a real file, not a link) with `text`: a temporary file in its directory,
    fsync, rename, then fsync of the directory. The file gets `mode` (and `owner` when given and
    allowed)."""
    with _beside(path, mode, owner, newline="") as out:
        out.write(text)


@contextlib.contextmanager
def _beside(target: str, mode: int, owner: tuple[int, int] | None = None,
            newline: str | None = None) -> Iterator[TextIO]:
    """A temporary file in ``target``'s directory (``mode``, and ``owner`` when given and
    allowed) to write: fsynced and renamed over ``target`` when the block ends, the directory
    fsynced; removed when it raises."""
    directory = os.path.dirname(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.",
                                     suffix=".memoryd-tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as out:
            os.fchmod(out.fileno(), mode)
            if owner is not None and owner != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):  # only root may give a file away
                    os.fchown(out.fileno(), *owner)
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(directory)


def fsync_directory(directory: str) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a directory be opened
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
