"""What the client can find out about the daemon's installation without talking to it or
importing it: the ``memoryd`` command of this installation, the unit or agent ``memoryd service
install`` wrote (and the environment it carries), what the service manager says about it, and
from those the one line that tells a user how to start memoryd (or restart it).

The unit file locations are the ones :mod:`memoryd.service` writes; the client does not import
the daemon package (it may not even be installed beside the client).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

UNIT = "memoryd.service"
LABEL = "dev.memoryd.agent"


def launchd() -> bool:
    return sys.platform == "darwin"


def unit_path() -> Path:
    """Where `memoryd service install` writes: the systemd user unit, or the launchd agent."""
    if launchd():
        return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user" / UNIT


def memoryd_command() -> list[str] | None:
    """An absolute command for this installation's ``memoryd``: the script beside this Python,
    one on PATH, or ``PYTHON -m memoryd``; None when the daemon is not installed here."""
    beside = Path(sys.executable).parent / "memoryd"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    import shutil

    found = shutil.which("memoryd")
    if found:
        return [os.path.abspath(found)]
    import importlib.util

    if importlib.util.find_spec("memoryd") is not None:
        return [sys.executable, "-m", "memoryd"]
    return None


def unit_settings(path: Path | None = None) -> tuple[list[str], dict[str, str]] | None:
    """The command (without ``serve``) and the environment of the installed unit or agent;
    None when none is installed or it cannot be read."""
    path = path or unit_path()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if path.suffix == ".plist":
        import plistlib

        try:
            plist = plistlib.loads(data)
        except Exception:  # plistlib raises several kinds on a bad file
            return None
        arguments = [str(a) for a in plist.get("ProgramArguments", [])]
        variables = {str(k): str(v) for k, v in plist.get("EnvironmentVariables", {}).items()}
        return arguments[:-1] if arguments[-1:] == ["serve"] else arguments, variables
    command: list[str] = []
    environment: dict[str, str] = {}
    for line in data.decode("utf-8", errors="replace").splitlines():
        name, _, value = line.strip().partition("=")
        try:
            words = [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(value)]
        except ValueError:
            continue
        if name == "ExecStart":
            command = words[:-1] if words[-1:] == ["serve"] else words
        elif name == "Environment":
            for word in words:
                key, sep, setting = word.partition("=")
                if sep:
                    environment[key] = setting
    return command, environment


#: The environment that decides which state the daemon serves, and where the agents whose
#: files it watches keep them (memoryd.sources.default_sources): ``memoryd service install``
#: carries what of it is set into the service (memoryd.service).
CARRIED_ENVIRONMENT = ("MEMORYD_HOME", "MEMORYD_SOCKET", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
                       "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME",
                       "GEMINI_CLI_SYSTEM_SETTINGS_PATH", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
                       "PI_CODING_AGENT_DIR", "COPILOT_HOME", "CLINE_DIR")
#: What ``memoryd service install`` fills in from the installation: not compared.
_RENDERED = ("ExecStart=", "@", *(f"Environment={name}=" for name in CARRIED_ENVIRONMENT))


def stale_settings(path: Path | None = None) -> list[str]:
    """How the installed systemd unit's settings differ from the template of this
    installation's memoryd (read from its package, not imported): ``-line`` the unit has and
    an install now would not write (the file-system sandbox of before, say), ``+line`` it
    lacks. The lines an install fills in (the command, the carried environment) and comments
    are left out; empty when it is current, unknown (no memoryd here) or launchd's."""
    import importlib.util

    path = path or unit_path()
    spec = importlib.util.find_spec("memoryd")
    if launchd() or spec is None or not spec.submodule_search_locations:
        return []
    try:
        installed = path.read_text("utf-8", errors="replace")
        template = (Path(next(iter(spec.submodule_search_locations))) / "data" / UNIT).read_text(
            "utf-8")
    except OSError:
        return []

    def settings(text: str) -> list[str]:
        lines = (line.strip() for line in text.splitlines())  # a quoted value: "NAME=…"
        return [line for line in lines if line and not line.replace('"', "").startswith(
            ("#", *_RENDERED))]

    have, want = settings(installed), settings(template)
    return [f"-{line}" for line in have if line not in want] + \
        [f"+{line}" for line in want if line not in have]


def manager_state() -> tuple[dict[str, str] | None, str]:
    """The service manager's view of the installed service: systemd's LoadState,
    UnitFileState, ActiveState, SubState, MainPID; launchd's ``state`` and ``pid``. None and why
    when it cannot tell."""
    import subprocess

    if launchd():
        argv = ["launchctl", "print", f"gui/{os.getuid()}/{LABEL}"]
    else:
        argv = ["systemctl", "--user", "show", UNIT,
                "--property=LoadState,UnitFileState,ActiveState,SubState,MainPID,Result"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=10,
                                stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return None, f"{argv[0]} not found"
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]} did not answer in 10 s"
    if result.returncode != 0:
        reason = next((line.strip() for line in (result.stderr + result.stdout).splitlines()
                       if line.strip()), f"exit {result.returncode}")
        if launchd():
            return {"loaded": "no"}, ""  # launchctl print fails for a job that is not loaded
        return None, f"no systemd user manager answers ({reason})"
    fields: dict[str, str] = {"loaded": "yes"} if launchd() else {}
    for line in result.stdout.splitlines():
        key, sep, value = line.strip().partition(" = " if launchd() else "=")
        if sep and key not in fields:
            fields[key] = value.strip()
    return fields, ""


def restart_hint(pid: object = None) -> str:
    """How to restart the daemon (``pid``: the one that answers) so that it runs the code
    installed now: through the service manager when the service is installed."""
    if unit_settings() is not None:
        if launchd():
            command = memoryd_command()
            memoryd = shlex.join(command) if command else "memoryd"
            return f"`{memoryd} service stop && {memoryd} service start`"
        return "`systemctl --user restart memoryd`"
    which = f" (pid {pid})" if pid else ""
    return f"stop the memoryd that runs{which} and start `memoryd serve` again"


def start_hint(mention_doctor: bool = True, whose: str = "this shell",
               given: str | None = None) -> str:
    """How to start memoryd, with commands that work from this shell, and which environment
    decided the socket (a daemon on another MEMORYD_HOME listens elsewhere), or that none did:
    the socket ``given`` (`memory --socket PATH`); ``whose``: that environment, as the hint
    says it ("this MCP server": it has no shell)."""
    installed = unit_settings()
    command = memoryd_command()
    memoryd = shlex.join(command) if command else "memoryd"
    manager, why = manager_state() if installed is not None else (None, "")
    if installed is not None and manager is None:  # no user manager here: it cannot start it
        hint = (f"start it with `{memoryd} serve` (the service is installed, but {why}: it "
                "does not start here)")
    elif installed is not None:
        if launchd():
            hint = f"start it with `{memoryd} service start` (the launchd agent is installed)"
        else:
            hint = ("start it with `systemctl --user start memoryd` (the unit is installed; "
                    "`memoryd service logs` says why it stopped)")
        unit_home = installed[1].get("MEMORYD_HOME")
        shell_home = os.environ.get("MEMORYD_HOME")
        shell_home = shell_home and os.path.abspath(os.path.expanduser(shell_home))
        if unit_home and shell_home and shell_home != unit_home:
            hint += f"; note: the service runs with MEMORYD_HOME={unit_home}"
        elif unit_home and not shell_home:
            hint += (f"; note: the service runs with MEMORYD_HOME={unit_home}, {whose} has "
                     "none: set it")
        elif shell_home and not unit_home:
            hint += f"; note: {whose} has MEMORYD_HOME set, the service does not"
    elif command is None:
        hint = ("the daemon is not installed in this Python (the client alone does not run "
                "it): install it from the memoryd checkout (`pip install ./client .`), then run "
                "`memoryd serve`")
    else:
        hint = (f"start it with `{memoryd} serve`, or run it at login with "
                f"`{memoryd} service install`")
    if given is not None:
        hint += (f" (the socket given, --socket {given}, is not {whose}'s: a daemon listens "
                 f"there when started with MEMORYD_SOCKET={shlex.quote(given)})")
    elif os.environ.get("MEMORYD_SOCKET"):
        hint += f" ({whose}'s socket comes from MEMORYD_SOCKET)"
    elif os.environ.get("MEMORYD_HOME"):
        hint += f" ({whose}'s socket comes from MEMORYD_HOME; a daemon started without it " \
            "listens elsewhere)"
    elif installed is None:
        hint += f" ({whose} has no MEMORYD_HOME; a daemon started with one listens in that " \
            "directory)"
    return hint + ("; `memory doctor` checks the rest" if mention_doctor else "")
