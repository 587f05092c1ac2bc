"""What a daemon owns on disk, and how it keeps it: the single-instance locks and the socket.

Two locks, each an ``flock`` on a file holding the daemon's pid: ``memoryd.lock`` in the state
dir (one daemon per database) and ``<socket>.lock`` beside the socket (one daemon per socket
path, whatever its state dir). A socket file found at start is probed with ``connect()``: when
something answers, this daemon refuses to start; only a socket nobody listens on is replaced.
The daemon remembers the identity (device, inode) of the socket it bound and of its lock files:
``check`` re-creates a socket or a lock file that was deleted (``rm memoryd.sock``, a state dir
removed under a running daemon), and at shutdown only a socket that is still its own is removed.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
import stat
from pathlib import Path

from memoryd_client.paths import MAX_SOCKET_PATH_BYTES

from memoryd.errors import AlreadyRunningError, StartupError

log = logging.getLogger(__name__)

#: How often the socket and the locks are checked (a deleted socket is back within this).
CHECK_INTERVAL_S = 1.0
PROBE_TIMEOUT_S = 1.0


def file_identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _unwritable(path: Path, exc: OSError) -> StartupError:
    why = exc.strerror or str(exc)
    existing = next((p for p in path.parents if os.path.lexists(p)), None)
    if existing is not None and not existing.is_dir():  # mkdir said "File exists"
        why = f"{existing} is a file, not a directory"
    return StartupError(f"cannot write {path}: {why}; memoryd needs its state directory and "
                        "socket directory writable (set MEMORYD_HOME to move them)")


class Lock:
    """An exclusive ``flock`` on ``path``, which holds the pid."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what  # "serving <socket>": for the message a second daemon prints
        self.fd: int | None = None
        self.identity: tuple[int, int] | None = None

    def take(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise _unwritable(self.path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise AlreadyRunningError(f"another memoryd (pid {holder}) is already {self.what}") \
                from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        except OSError as exc:
            os.close(fd)
            raise _unwritable(self.path, exc) from None
        self.release()
        self.fd = fd
        self.identity = (os.fstat(fd).st_dev, os.fstat(fd).st_ino)

    def intact(self) -> bool:
        return self.fd is not None and file_identity(self.path) == self.identity

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Ownership:
    """The locks and the socket of one daemon."""

    def __init__(self, state_lock: Path, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.locks = [Lock(state_lock, f"serving the state dir {state_lock.parent} (one "
                           f"state dir has one daemon; this one would serve {socket_path})"),
                      Lock(socket_path.with_name(socket_path.name + ".lock"),
                           f"serving {socket_path}")]
        self.socket_identity: tuple[int, int] | None = None
        self.warned = False

    def take_locks(self) -> None:
        for lock in self.locks:
            lock.take()

    def bind(self, backlog: int) -> socket.socket:
        """A listening socket at the path; a socket file there is replaced only when nobody
        answers on it."""
        path = self.socket_path
        if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
            raise StartupError(
                f"socket path {path} is longer than {MAX_SOCKET_PATH_BYTES} bytes; "
                "set MEMORYD_SOCKET to a shorter path"
            )
        try:
            path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            os.chmod(path.parent, 0o700)
        except OSError as exc:
            raise _unwritable(path.parent, exc) from None
        self._clear_stale(path)
        # bound at a name of its own (as long: the OS's limit holds) and put in place once it
        # listens: a client never finds the socket file before it answers (a connect in that
        # moment was refused: "daemon unreachable" from a daemon that was starting)
        staging = path.with_name(path.name[:-1] + ("#" if path.name.endswith("~") else "~"))
        staging.unlink(missing_ok=True)  # left by a start that died here (the lock is ours)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(staging))
            os.chmod(staging, 0o600)
            sock.listen(backlog)
            os.replace(staging, path)
        except OSError as exc:
            sock.close()
            staging.unlink(missing_ok=True)
            raise _unwritable(path, exc) from None
        finally:
            os.umask(old_umask)
        sock.setblocking(False)
        self.socket_identity = file_identity(path)
        return sock

    def _clear_stale(self, path: Path) -> None:
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(found.st_mode):
            raise StartupError(f"{path} exists and is not a socket; move it away or set "
                               "MEMORYD_SOCKET to another path")
        if self._answers(path):
            raise AlreadyRunningError(f"another memoryd is already serving {path} (it answers "
                                      "there); stop it first")
        log.info("Replacing stale socket %s (nothing answers on it).", path)
        path.unlink(missing_ok=True)

    @staticmethod
    def _answers(path: Path) -> bool:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(PROBE_TIMEOUT_S)
        try:
            probe.connect(str(path))
            return True
        except (BlockingIOError, TimeoutError):
            return True  # a full backlog: someone listens
        except OSError as exc:
            return exc.errno not in (errno.ECONNREFUSED, errno.ENOENT)
        finally:
            probe.close()

    def owns_socket(self) -> bool:
        return self.socket_identity is not None and \
            file_identity(self.socket_path) == self.socket_identity

    def check(self, backlog: int) -> socket.socket | None:
        """Re-take a lock file that was deleted; re-create a deleted socket. Returns the new
        listening socket, or None when nothing had to change (or another daemon took over the
        path, which is logged once and left alone)."""
        for lock in self.locks:
            if lock.fd is not None and not lock.intact():
                try:
                    lock.take()
                    log.warning("Lock file %s was removed; re-created it.", lock.path)
                except StartupError as exc:
                    self._lost(exc.message)
                    return None
        if self.socket_identity is None or self.owns_socket():
            return None
        if file_identity(self.socket_path) is not None:
            self._lost(f"{self.socket_path} was replaced by another process")
            return None
        try:
            sock = self.bind(backlog)
        except StartupError as exc:
            self._lost(exc.message)
            return None
        log.warning("Socket %s was removed; re-created it.", self.socket_path)
        self.warned = False
        return sock

    def _lost(self, why: str) -> None:
        if not self.warned:
            log.error("This daemon no longer owns its socket: %s. It goes on serving the "
                      "connections it has; stop it with SIGTERM.", why)
            self.warned = True
        self.socket_identity = None
        return None

    def release(self) -> None:
        """Remove the socket if it is still ours; drop the locks."""
        if self.owns_socket():
            self.socket_path.unlink(missing_ok=True)
        self.socket_identity = None
        for lock in self.locks:
            lock.release()
