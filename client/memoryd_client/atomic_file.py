"""Replacing a file so that a crash leaves the old text or the new, never half of either: the
agents' settings files (memoryd_client.install) and a repository's exclude file
(memoryd_client.git_exclude)."""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_atomically(path: str, text: str, mode: int, owner: tuple[int, int] | None = None) -> None:
    """Replace `path` (a real file, not a link) with `text`: a temporary file in its directory,
    fsync, rename, then fsync of the directory. The file gets `mode` (and `owner` when given and
    allowed)."""
    directory = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".memoryd-tmp",
                                     dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), mode)
            if owner is not None and owner != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):  # only root may give a file away
                    os.fchown(out.fileno(), *owner)
            os.fsync(out.fileno())
        os.replace(temporary, path)
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
