"""What memoryd must leave as it is, and what it keeps of a file besides its text.

A file memoryd must leave as it is: it is read-only for its owner (the user made it so), it
has more than one hard link (a rename would put a new file at this name and leave the other
names with the old text: the link broken, silently), another process holds it open for writing
(an appending logger would write on into the replaced file: its lines lost), or it cannot be
replaced at all (immutable, a read-only file system, a directory memoryd cannot write). Such a
file is not rewritten: :func:`rewrite_refusal` says why, and a write raises
:class:`NotRewrittenError` with the reason — a pass skips the file and reports it
(:class:`NotWritten`), a request fails with it (:class:`FileNotWrittenError`).

A file it rewrites keeps its owner and group (where the daemon may set them) and its extended
attributes, ACLs among them (Linux; Python has no xattr calls on macOS): :func:`keep_attributes`.
What a killed memoryd left beside the files it writes is settled at the next start:
:func:`remove_stale_temporaries`.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import signal
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import MemorydError
from memoryd.regular_file import SpecialFileError, open_regular

log = logging.getLogger(__name__)


class NotRewrittenError(OSError):
    """A file memoryd leaves as it is (see the module docstring); the message says why."""


@dataclass(frozen=True)
class NotWritten:
    """Why a file was not written: the file, and what its write's error says."""

    path: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


def not_written(exc: OSError, path: str) -> NotWritten:
    """The error of a write of ``path`` (the file its error names, if another)."""
    return NotWritten(str(exc.filename or path), exc.strerror or str(exc))


class FileNotWrittenError(MemorydError):
    """A file change was not made: the file may not or cannot be rewritten (the message says
    which file and why; ``what``, when known). Nothing was written (CLI exit 1)."""

    def __init__(self, message: str, what: NotWritten | None = None) -> None:
        super().__init__(message)
        self.what = what


class FileChangedError(MemorydError):
    """The file changed between reading and writing it: nothing was written (exit 1)."""


#: Errors of a write that concern the one file (or its directory), not the whole run: a pass
#: skips that file and goes on with the others. Anything else fails the run.
FILE_ERRNOS = frozenset({errno.EPERM, errno.EACCES, errno.EROFS, errno.ETXTBSY})
#: A full disk (or quota): the one file's problem when it is not the state dir's disk (a
#: notebook on a full USB stick or network share); on the state dir's, the run fails (its run
#: log, ledgers and database cannot be written either).
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: FS_IOC_GETFLAGS and its immutable and append-only flags (linux/fs.h).
_GETFLAGS = 0x80086601
_FLAGS = ((0x10, "immutable (chattr +i)"), (0x20, "append-only (chattr +a)"))


def is_file_error(exc: OSError, path: str, state_dir: Path | None) -> bool:
    """Whether a write's error concerns this file only (see FILE_ERRNOS and FULL_ERRNOS):
    ``path``, the file written (or the one its error names), ``state_dir``, memoryd's (None:
    a full disk fails the run wherever it is)."""
    if isinstance(exc, NotRewrittenError | SpecialFileError) or exc.errno in FILE_ERRNOS:
        return True
    return exc.errno in FULL_ERRNOS and state_dir is not None and \
        not same_disk(Path(exc.filename or path).parent, state_dir)


def same_disk(directory: Path, state_dir: Path) -> bool:
    """Whether ``directory`` lies on the file system of the state dir (True when either cannot
    be looked at: then the run fails, as it did)."""
    try:
        return os.stat(directory).st_dev == os.stat(state_dir).st_dev
    except OSError:
        return True


def rewrite_refusal(real: Path, fd: int | None = None, *, removing: bool = False) -> str | None:
    """Why memoryd must not rewrite this file (None: it may). ``fd``: the file, open;
    ``removing``: to remove it (the other names of a hard link keep the file then)."""
    try:
        facts = os.fstat(fd) if fd is not None else os.stat(real)
    except FileNotFoundError:
        return None  # created, not rewritten
    if not facts.st_mode & stat.S_IWUSR:
        return (f"read-only (mode {facts.st_mode & 0o777:04o}): memoryd leaves a file its owner "
                "cannot write as it is (chmod u+w to have it maintained)")
    if facts.st_nlink > 1 and not removing:
        return (f"it has {facts.st_nlink} hard links: a rewrite would leave the other names "
                "with the old text, so memoryd leaves it as it is (a symlink instead of the "
                "hard link lets memoryd maintain it)")
    flags = _inode_flags(real, fd)
    for bit, name in _FLAGS:
        if flags & bit:
            return f"{name}: it cannot be replaced"
    if not removing and _held_for_writing(real, fd):
        return ("another process holds it open for writing (a logger, `tee -a`?): its next "
                "writes would go into the file a rewrite replaces, so memoryd leaves it for a "
                "later run")
    try:
        if os.statvfs(real.parent).f_flag & os.ST_RDONLY:
            return "on a read-only file system (a service's sandbox?): it cannot be replaced"
    except OSError:
        pass
    if not os.access(real.parent, os.W_OK):
        return f"its directory {real.parent} is not writable: it cannot be replaced"
    return None


def _inode_flags(real: Path, fd: int | None) -> int:
    """The file's inode flags (chattr), 0 where the file system has none."""
    try:
        own = fd if fd is not None else open_regular(real)
    except OSError:
        return 0
    try:
        return int.from_bytes(fcntl.ioctl(own, _GETFLAGS, b"\0" * 8)[:4], "little")
    except OSError:
        return 0
    finally:
        if own != fd:
            os.close(own)


def _held_for_writing(real: Path, fd: int | None) -> bool:
    """Whether some process has the file open for writing (Linux: a read lease is refused
    then; it is granted to the file's owner only, so for a file the daemon does not own this
    cannot tell, and says no). Taken and given back at once: nobody waits on it.

    A writer that opens the file while the lease is held breaks it, and the kernel tells the
    lease's holder with a signal: SIGIO unless the file says otherwise, and SIGIO ends a process
    that does not handle it (an agent's write at that moment killed the daemon). So the lease
    is taken on a file whose break signal is one the process ignores; where none is (each has
    a handler of the program's own), the question is not asked."""
    if not hasattr(fcntl, "F_SETLEASE"):
        return False
    quiet = _ignored_signal()
    if quiet is None:
        return False
    try:
        own = fd if fd is not None else open_regular(real)
    except OSError:
        return False
    try:
        before = fcntl.fcntl(own, fcntl.F_GETSIG)
        fcntl.fcntl(own, fcntl.F_SETSIG, quiet)
        try:
            fcntl.fcntl(own, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        except OSError as exc:
            return exc.errno == errno.EAGAIN
        else:
            fcntl.fcntl(own, fcntl.F_SETLEASE, fcntl.F_UNLCK)
            return False
        finally:
            fcntl.fcntl(own, fcntl.F_SETSIG, before)
    except OSError:
        return False
    finally:
        if own != fd:
            os.close(own)


# Signals whose default action is to be ignored, and which a daemon has no use for.
_QUIET_SIGNALS = (signal.SIGURG, signal.SIGWINCH)


def _ignored_signal() -> int | None:
    """A signal this process ignores (no handler of Python's set for it), for a lease break."""
    for candidate in _QUIET_SIGNALS:
        if signal.getsignal(candidate) in (signal.SIG_DFL, signal.SIG_IGN):
            return int(candidate)
    return None


def refuse_rewrite(real: Path, fd: int, *, removing: bool = False) -> None:
    why = rewrite_refusal(real, fd, removing=removing)
    if why is not None:
        raise NotRewrittenError(errno.EPERM, why, str(real))


def keep_attributes(source_fd: int, temporary: Path) -> None:
    """The replaced file's owner and group and extended attributes (ACLs among them) onto
    the file replacing it, as far as the daemon may set them (a user's daemon cannot give a
    file away; ``security.*`` and ``trusted.*`` need privileges): the rest is left out."""
    facts = os.fstat(source_fd)
    mine = os.stat(temporary)
    changed = False
    if (facts.st_uid, facts.st_gid) != (mine.st_uid, mine.st_gid):
        for owner in ((facts.st_uid, facts.st_gid), (-1, facts.st_gid)):  # else the group
            try:
                os.chown(temporary, *owner)
            except OSError:
                continue
            changed = True
            break
    names: list[str] = []
    if hasattr(os, "listxattr"):  # not on macOS: Python has no xattr calls there
        try:
            names = os.listxattr(source_fd)
        except OSError:
            names = []
    for name in names:
        try:
            os.setxattr(temporary, name, os.getxattr(source_fd, name))
            changed = True
        except OSError:
            log.debug("%s: extended attribute %s not kept", temporary, name)
    if changed:  # a chown clears set-id bits, an ACL sets the group bits: the mode again
        os.chmod(temporary, stat.S_IMODE(facts.st_mode))


#: A temporary file memoryd writes beside a file (memoryd.store.durable.temporary_beside): the
#: file's name (absent when it was too long) and the writing process.
_TEMPORARY = re.compile(r"^\.(?:(?P<name>.+)\.)?memoryd-(?P<pid>\d+)\.tmp$")
_CONFLICT = re.compile(r"\.memoryd-conflict-[0-9-]+$")


def remove_stale_temporaries(directories: Iterable[Path]) -> int:
    """What a memoryd killed mid-write (kill -9, a power loss) left beside the files it
    writes, in these directories: the temporary files of processes that are gone. A new text
    that never reached its file is removed (its change holds it, and recovery completes or
    puts back its change); a copy of someone's edit on its way to ``NAME.memoryd-conflict-…``
    is put there, being the only copy of it. Returns how many were settled."""
    settled = 0
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            match = _TEMPORARY.match(name)
            if match is None or _alive(int(match["pid"])):
                continue
            path = directory / name
            try:
                if match["name"] and _CONFLICT.search(match["name"]):
                    if os.path.lexists(directory / match["name"]):
                        continue
                    os.rename(path, directory / match["name"])
                    log.warning("%s: an edit memoryd was keeping beside the file when it "
                                "stopped is kept in %s", directory, match["name"])
                elif match["name"] is None:
                    continue  # whose it was cannot be told: left alone
                else:
                    path.unlink()
            except OSError:
                continue
            settled += 1
    return settled


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True
