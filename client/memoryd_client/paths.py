"""Where memoryd keeps its state and its socket; one definition for daemon and clients.

``MEMORYD_HOME`` relocates everything (database, ledgers, config, socket, spool). Without it
the platform's user directories are used (platformdirs). ``MEMORYD_SOCKET`` overrides the
socket path alone.
"""

from __future__ import annotations

import os
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


def socket_text(lean: bool = False) -> str:
    """The socket path as a string, without pathlib when the environment decides it. On Linux
    platformdirs (~10 ms to import, with shutil, tempfile and random) puts the runtime dir in
    $XDG_RUNTIME_DIR when it accepts that directory, else in /run/user/UID, else in
    runtime-UID of the temporary directory: a socket in $XDG_RUNTIME_DIR/memoryd means the
    daemon's platformdirs accepted it. ``lean`` (a hook, which only needs a daemon to talk
    to): the first of those places that holds a socket, and with none no daemon listens (only
    a daemon's platformdirs chose where), so the first place is as good an answer."""
    explicit = os.environ.get("MEMORYD_SOCKET")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    home = home_text()
    if home is not None:
        return os.path.join(home, "memoryd.sock")
    if sys.platform.startswith("linux"):
        runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
        candidates = _runtime_candidates() if lean else \
            [os.path.join(runtime, APP, "memoryd.sock")] if os.path.isabs(runtime) else []
        for candidate in candidates:
            if os.path.exists(candidate):
                return candidate
        if lean:
            return candidates[0]
    return str(socket_path())


def _runtime_candidates() -> list[str]:
    """Where platformdirs may put the socket on Linux, in the order it tries them."""
    uid = os.geteuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    temporary = [value for name in ("TMPDIR", "TEMP", "TMP")
                 if os.path.isabs(value := os.environ.get(name, ""))]
    bases = ([runtime] if os.path.isabs(runtime) else []) + [f"/run/user/{uid}"] + [
        os.path.join(t, f"runtime-{uid}") for t in [*temporary, "/tmp", "/var/tmp", "/usr/tmp"]]
    return [os.path.join(base, APP, "memoryd.sock") for base in bases]


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


def socket_origin(path: object) -> str:
    """What chose this socket path, for "not running" messages: a daemon started with another
    MEMORYD_HOME or MEMORYD_SOCKET than this shell's listens elsewhere."""
    explicit = os.environ.get("MEMORYD_SOCKET")
    home = home_text()
    if explicit and str(path) == os.path.expanduser(explicit):
        return "MEMORYD_SOCKET of this shell"
    if home is not None and not explicit and str(path) == os.path.join(home, "memoryd.sock"):
        return f"MEMORYD_HOME={home} of this shell"
    if not explicit and home is None and str(path) == str(socket_path()):
        return ("the default socket: neither MEMORYD_HOME nor MEMORYD_SOCKET is set in this "
                "shell, so a daemon started with one of them is not found here")
    return "the socket given"


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

