"""Where memoryd keeps its state and its socket; one definition for daemon and clients.

``MEMORYD_HOME`` relocates everything (database, ledgers, config, socket, spool). Without it
the platform's user directories are used (platformdirs). ``MEMORYD_SOCKET`` overrides the
socket path alone.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


APP = "memoryd"
#: AF_UNIX path limits: 108 bytes on Linux, 104 on macOS (including the NUL).
MAX_SOCKET_PATH_BYTES = 103


def home_text() -> str | None:
    """MEMORYD_HOME as an absolute path string (hooks avoid importing pathlib); a relative one
    is taken from the current directory, as a relative path argument would be."""
    value = os.environ.get("MEMORYD_HOME")
    return os.path.abspath(os.path.expanduser(value)) if value else None


def socket_text() -> str:
    """The socket path as a string: the one the daemon binds, and the one every client (the
    CLI, a hook, completion) connects to, in every environment. Without MEMORYD_SOCKET and
    MEMORYD_HOME it is platformdirs' user runtime dir; on Linux that is said here without
    importing platformdirs (~10 ms, with shutil, tempfile and random: a hook's budget) when
    the answer is certain (:func:`_linux_runtime_dir`), and asked of platformdirs otherwise.

    A socket found somewhere platformdirs might have chosen is no answer: a daemon started
    with another XDG_RUNTIME_DIR (or none) listens there for another state dir, and a hook
    that took it sent this shell's events to that daemon instead of spooling them."""
    explicit = os.environ.get("MEMORYD_SOCKET")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    home = home_text()
    if home is not None:
        return os.path.join(home, "memoryd.sock")
    if sys.platform.startswith("linux"):
        runtime = _linux_runtime_dir()
        if runtime is not None:
            return os.path.join(runtime, APP, "memoryd.sock")
    return str(socket_path())


def _linux_runtime_dir() -> str | None:
    """platformdirs' ``user_runtime_dir()`` base on Linux where every platformdirs this client
    accepts (>= 4.6) gives the same one, else None (platformdirs decides). They take
    $XDG_RUNTIME_DIR when it is absolute and private (or missing) below directories no other
    user can replace; without it /run/user/UID when that is private; else runtime-UID in the
    temporary directory. The checks are platformdirs' own, on the directories as they are:
    a symlink, a shared directory, an odd variable leaves the answer to platformdirs."""
    uid = os.geteuid()
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg:
        if not os.path.isabs(xdg) or xdg != xdg.strip() or xdg.startswith("//"):
            return None  # older platformdirs strip it; pathlib keeps a leading //
        parts = [part for part in xdg.split("/") if part not in ("", ".")]
        parent = "/" + "/".join(parts[:-1])
        if _private_dir(xdg, missing_ok=True) and _trusted_parents(parent, missing_ok=True):
            return "/" + "/".join(parts)  # as pathlib writes it
        return None
    default = f"/run/user/{uid}"
    state = _private_dir(default, missing_ok=True)
    if state == "missing":  # no login session made it: the temporary directory
        temporary = next((os.environ[name] for name in ("TMPDIR", "TEMP", "TMP")
                          if os.environ.get(name)), "/tmp")
        if not os.path.isabs(temporary) or temporary.startswith("//") or \
                not os.path.isdir(temporary) or not os.access(temporary, os.W_OK | os.X_OK):
            return None  # tempfile would try the next one: platformdirs decides
        temporary = os.path.abspath(temporary)
        runtime = os.path.join(temporary, f"runtime-{uid}")
        if _trusted_parents(temporary, missing_ok=False) and \
                _private_dir(runtime, missing_ok=True, shared_read=True):
            return runtime
        return None
    return default if state and _trusted_parents("/run/user", missing_ok=False) else None


def _private_dir(path: str, missing_ok: bool, shared_read: bool = False) -> str | None:
    """"private" (a directory, not a symlink, of this user, mode 0700; with ``shared_read``
    only not writable by others, as platformdirs looks up its temporary runtime dir),
    "missing" when ``missing_ok``, else None."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "missing" if missing_ok else None
    except OSError:
        return None
    mode = info.st_mode & 0o777
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or \
            info.st_uid != os.geteuid() or (mode & 0o002 if shared_read else mode != 0o700):
        return None
    return "private"


def _trusted_parents(path: str, missing_ok: bool) -> bool:
    """Every directory from / down to ``path`` is root's or this user's, and writable by no
    one else unless sticky (platformdirs' check of a runtime dir's parents); False for a
    symlink on the way too (platformdirs follows it: it decides then)."""
    owners = (0, os.geteuid())
    current = "/"
    for part in path.split("/"):
        if part in ("", "."):
            continue
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return missing_ok
        except OSError:
            return False
        if info.st_uid not in owners or not stat.S_ISDIR(info.st_mode) or \
                (info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX):
            return False
    return True


def data_text() -> str:
    """The state dir as a string: MEMORYD_HOME, or platformdirs' user data dir, which on Linux
    is $XDG_DATA_HOME/memoryd or ~/.local/share/memoryd (said here without importing it: a
    hook spooling an event while the daemon is down needs nothing else from it)."""
    home = home_text()
    if home is not None:
        return home
    if sys.platform.startswith("linux"):
        xdg = os.environ.get("XDG_DATA_HOME", "")
        user_home = os.environ.get("HOME", "")
        if os.path.isabs(xdg):
            return os.path.join(xdg, APP)
        if os.path.isabs(user_home):
            return os.path.join(os.path.expanduser("~/.local/share"), APP)
    return str(state_dir())  # platformdirs decides (a relative HOME, another platform)


def home_override() -> Path | None:
    from pathlib import Path

    value = home_text()
    return Path(value) if value else None


def _platform_dir(kind: str) -> Path:
    import warnings
    from pathlib import Path

    import platformdirs  # only when MEMORYD_HOME does not decide (it costs a hook ~10 ms)

    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        return Path(getattr(platformdirs, f"user_{kind}_dir")(APP, appauthor=False))


def state_dir() -> Path:
    """Database, ledgers, logs of injections."""
    return home_override() or _platform_dir("data")


def config_dir() -> Path:
    return home_override() or _platform_dir("config")


def socket_path() -> Path:
    from pathlib import Path

    explicit = os.environ.get("MEMORYD_SOCKET")
    if explicit:
        return Path(explicit).expanduser()
    home = home_override()
    if home is not None:
        return home / "memoryd.sock"
    return _platform_dir("runtime") / "memoryd.sock"


#: What :func:`socket_origin` says of a socket no environment chose (`memory --socket PATH`).
GIVEN = "the socket given"


def socket_origin(path: object, whose: str = "this shell") -> str:
    """What chose this socket path, for "not running" messages: a daemon started with another
    MEMORYD_HOME or MEMORYD_SOCKET than this shell's listens elsewhere. ``whose``: the
    environment's, as the message says it ("this MCP server": it has no shell)."""
    explicit = os.environ.get("MEMORYD_SOCKET")
    home = home_text()
    if explicit and str(path) == os.path.expanduser(explicit):
        return f"MEMORYD_SOCKET of {whose}"
    if home is not None and not explicit and str(path) == os.path.join(home, "memoryd.sock"):
        return f"MEMORYD_HOME={home} of {whose}"
    if not explicit and home is None and str(path) == str(socket_path()):
        return (f"the default socket: neither MEMORYD_HOME nor MEMORYD_SOCKET is set in {whose}, "
                "so a daemon started with one of them is not found here")
    return GIVEN


def xdg_documents(config_home: str | None = None) -> str | None:
    """The Documents folder the XDG user directories name (``XDG_DOCUMENTS_DIR`` in
    ``$XDG_CONFIG_HOME/user-dirs.dirs``, ``~/.config`` by default: what ``xdg-user-dir
    DOCUMENTS`` prints), an absolute path with ``$HOME`` expanded; None when none is named.
    Cline keeps its hooks and global rules there on Linux (memoryd_client.cline_hooks,
    memoryd.agent_settings)."""
    home = os.path.expanduser("~")
    config = config_home or os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    try:
        with open(os.path.join(config, "user-dirs.dirs"), encoding="utf-8",
                  errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    value = ""
    for line in lines:  # the last assignment wins, as the shell's
        name, equals, rest = line.strip().partition("=")
        if equals and name.strip() == "XDG_DOCUMENTS_DIR":
            value = rest.strip().strip('"')
    if value.startswith("$HOME"):
        value = home + value[len("$HOME"):]
    value = value.rstrip("/")
    return value if os.path.isabs(value) else None

