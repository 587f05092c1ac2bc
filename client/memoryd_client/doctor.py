"""``memory doctor``: every check a user (or a bug report) needs, each ok, warning or problem
with the fix in one line.

The client's half runs even when the daemon is down: the daemon answers on this shell's socket
and runs the client's code (its wire revision, memoryd_client.revision: the version string is
the same in every commit); ``MEMORYD_HOME`` of this shell, of the daemon, of the service and of
every installed hook agree; the hooks and the service run a program that exists; the service is
installed, enabled and running; no hook events wait in the spool; with the daemon down, its
configuration is one it would start with (``memoryd check-config``). The daemon's half (wire
method ``doctor``, :mod:`memoryd.server.health`) checks that its code on disk is what it runs,
the model and its hash, that onnxruntime's telemetry is off, the database (``PRAGMA
quick_check``), the ledgers against the index, disk space, the sources, skipped files and
lines, the backlogs, and the configuration files as its next reload or start would read them.

Exit codes: 0 healthy (warnings allowed), 1 a problem, 2 usage error.
"""

from __future__ import annotations

import os
import sys

from memoryd_client.hooks import CHOICE
from memoryd_client.revision import daemon_revision, revision_check

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client

OK, WARNING, PROBLEM = "ok", "warning", "problem"
DAEMON_CHECKS = ("model", "telemetry", "database", "ledger lines", "ledger", "disk", "sources",
                 "skipped", "backlog")


def check(name: str, status: str, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"check": name, "status": status, "detail": detail, "fix": fix}


def _home(path: str | None) -> str | None:
    return os.path.abspath(os.path.expanduser(path)) if path else None


def _default_state_dir() -> str:
    """The state dir of a process without MEMORYD_HOME (platformdirs)."""
    from memoryd_client.paths import _platform_dir

    return str(_platform_dir("data"))


def _state_of(home: str | None) -> str:
    return _home(home) or _default_state_dir()


def _describe_home(home: str | None, state: str | None = None) -> str:
    """A MEMORYD_HOME, or where the state is without one: ``state`` when it is known (a
    daemon's), else this shell's default."""
    return f"MEMORYD_HOME={home}" if home else \
        f"no MEMORYD_HOME (state in {state or _default_state_dir()})"


def client_version() -> str:
    try:
        from importlib.metadata import version

        return version("memoryd-client")
    except ImportError:  # not installed as a distribution (a source checkout on sys.path;
        # PackageNotFoundError is an ImportError)
        import memoryd_client

        return str(getattr(memoryd_client, "__version__", "unknown"))


# -- the daemon -------------------------------------------------------------------------------

def ask_daemon(client: Client) -> tuple[dict[str, Any] | None, str | None]:
    """The daemon's doctor reply, or None and why not."""
    from memoryd_client.errors import DaemonUnreachableError, MemorydError

    try:
        return client.call("doctor", {}), None
    except DaemonUnreachableError as exc:
        return None, exc.message
    except MemorydError as exc:
        if exc.code == "unknown_method":
            try:
                status = client.status()
            except MemorydError as again:
                return None, again.message
            return {"daemon": {"version": status.get("version"), "pid": status.get("pid"),
                               "revision": status.get("revision"),
                               "state_dir": status.get("state_dir"),
                               "socket": status.get("socket"), "memoryd_home": None,
                               "too_old": True}, "checks": []}, None
        return None, exc.message


def _other_daemons(sockets: dict[str, dict[str, str | None]],
                   own: str) -> tuple[list[str], list[str]]:
    """Sockets (other than this shell's) where a memoryd answers, described: those serving the
    state dir of what looks there (``sockets``: each socket's origins and their MEMORYD_HOME),
    and strangers, which serve another (a daemon of another HOME or XDG_DATA_HOME shares the
    runtime dir: it is no daemon of this user's to point a shell at)."""
    from memoryd_client.client import Client
    from memoryd_client.errors import MemorydError

    found, strangers = [], []
    for socket, origins in sockets.items():
        if socket == own or not os.path.exists(socket):
            continue
        try:
            with Client(socket, timeout_s=2) as other:
                status = other.status()
        except (MemorydError, OSError):
            continue
        theirs = str(status.get("state_dir") or "")
        served = [origin for origin, home in origins.items()
                  if not theirs or os.path.realpath(_state_of(home)) == os.path.realpath(theirs)]
        where = f"a memoryd (pid {status.get('pid')}) answers on {socket}"
        if served:
            found.append(f"{where} (where {' and '.join(served)} look; state in "
                         f"{theirs or '?'})")
        else:
            strangers.append(f"{where}, for the state in {theirs}: not that of "
                             f"{' nor of '.join(origins)}")
    return found, strangers


def daemon_checks(socket: str, reply: dict[str, Any] | None, why: str | None,
                  homes: dict[str, str | None]) -> list[dict[str, Any]]:
    """Reachable, and the version."""
    if reply is None:
        candidates: dict[str, dict[str, str | None]] = {}
        for origin, home in homes.items():
            candidates.setdefault(os.path.join(_state_of(home), "memoryd.sock") if home else
                                  _default_socket(), {})[origin] = home
        others, strangers = _other_daemons(candidates, socket)
        detail = (why or f"nothing answers on {socket}").split("; ")[0]
        if others:
            return [check("daemon", PROBLEM, "; ".join([detail + "; but " + others[0],
                                                        *others[1:], *strangers]),
                          "point this shell at it: set MEMORYD_HOME (or MEMORYD_SOCKET) as "
                          "that daemon has it")]
        from memoryd_client.service_probe import start_hint

        return [check("daemon", PROBLEM, "; ".join([detail, *strangers]),
                      start_hint(mention_doctor=False))]
    facts = reply["daemon"]
    checks = [check("daemon", OK, f"memoryd {facts.get('version')} (pid {facts.get('pid')}) "
                    f"answers on {socket}")]
    mine = client_version()
    older = revision_check(facts)  # the version says nothing: it changes with no commit
    if older is not None:
        checks.append(older)
    elif facts.get("version") == mine:
        checks.append(check("version", OK, f"client and daemon {mine}, wire revision "
                            f"{daemon_revision(facts)}"))
    else:
        checks.append(check("version", WARNING, f"client {mine}, daemon {facts.get('version')}",
                            "install both from the same checkout and restart memoryd"))
    return checks


def _default_socket() -> str:
    from memoryd_client.paths import _platform_dir

    return str(_platform_dir("runtime") / "memoryd.sock")


# -- MEMORYD_HOME, hooks, service, spool ----------------------------------------------------

def home_check(facts: dict[str, Any] | None) -> dict[str, Any]:
    from memoryd_client.paths import state_dir

    shell = os.environ.get("MEMORYD_HOME")
    mine = str(state_dir())
    if facts is None:
        return check("memoryd_home", OK, f"this shell: {_describe_home(_home(shell))} (the "
                     "daemon's is not known while it is down)")
    theirs = facts.get("state_dir")
    if theirs and os.path.realpath(theirs) != os.path.realpath(mine):
        daemon_home = facts.get("memoryd_home")
        detail = (f"this shell: {_describe_home(_home(shell), mine)}; the daemon: "
                  f"{_describe_home(daemon_home, theirs)}; ")
        if shell or daemon_home:
            detail += "this shell's commands reach that daemon only through --socket or " \
                "MEMORYD_SOCKET"
        else:  # both in the same runtime dir, with another XDG_DATA_HOME or HOME
            detail += ("this shell's commands reach it (the same runtime dir), but its state "
                       f"is not this shell's: hooks started from here spool to {mine}, "
                       "which it never replays")
        return check("memoryd_home", PROBLEM, detail, _home_fix(shell, daemon_home, theirs))
    return check("memoryd_home", OK, f"this shell and the daemon: {_describe_home(_home(shell))}")


def _home_fix(shell: str | None, daemon_home: str | None, theirs: str) -> str:
    """How this shell gets the daemon's state dir."""
    if daemon_home:
        return f"use the daemon's in this shell: export MEMORYD_HOME={daemon_home}"
    if os.path.realpath(_default_state_dir()) == os.path.realpath(theirs):
        return "unset MEMORYD_HOME in this shell, as the daemon runs without it"
    parent, name = os.path.split(theirs)
    data = f"export XDG_DATA_HOME={parent}" if name == "memoryd" else \
        "start it with the daemon's HOME and XDG_DATA_HOME"
    return ("unset MEMORYD_HOME and " if shell else "") + f"{data} in this shell: the daemon " \
        f"runs without MEMORYD_HOME, with its state in {theirs}"


def _settings_files() -> list[tuple[str, str, str | None]]:
    """(harness, path, --project DIR or None) of every settings file memoryd may have written
    that this shell can know: the user's, and the current project's."""
    from memoryd_client.install import HARNESS_EVENTS, legacy_path, settings_path

    files: list[tuple[str, str, str | None]] = [
        (harness, str(settings_path(harness, None)), None) for harness in HARNESS_EVENTS]
    project = _project_root(os.getcwd())
    if project is not None:
        for harness in HARNESS_EVENTS:
            for path in (settings_path(harness, project), legacy_path(harness, project)):
                if path is not None:
                    files.append((harness, str(path), project))
    return files


def _project_root(directory: str) -> str | None:
    """The git root above the current directory (or the directory itself when it has an
    agent's settings)."""
    current = os.path.abspath(directory)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if any(os.path.isdir(os.path.join(directory, d))
           for d in (".claude", ".codex", ".gemini", ".cursor", ".opencode")):
        return os.path.abspath(directory)
    return None


def installed_hooks() -> list[dict[str, Any]]:
    """memoryd's hook handlers in each settings file: the file, the harness, the commands."""
    import json

    from memoryd_client.install import COMMAND_KEY, FLAT, is_ours

    found: list[dict[str, Any]] = []
    for harness, path, project in _settings_files():
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            found.append({"harness": harness, "path": path, "project": project, "commands": [],
                          "error": str(exc)})
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        commands = []
        for groups in (hooks.values() if isinstance(hooks, dict) else []):
            for group in groups if isinstance(groups, list) else []:
                handlers = [group] if harness in FLAT else \
                    (group.get("hooks") or []) if isinstance(group, dict) else []
                for handler in handlers if isinstance(handlers, list) else []:
                    if is_ours(handler, harness):
                        commands.append(handler[COMMAND_KEY.get(harness, "command")])
        if commands:
            found.append({"harness": harness, "path": path, "project": project,
                          "commands": commands, "error": None})
    # in the home directory (or a project whose settings link to the user's) the project's
    # file is the user's: one file, checked and reported once, as the user's
    seen: set[str] = set()
    once = []
    for hook in found + _opencode_plugins() + _cline_hooks():
        real = os.path.realpath(hook["path"])
        if real not in seen:
            seen.add(real)
            once.append(hook)
    return once


def _opencode_plugins() -> list[dict[str, Any]]:
    """memoryd's OpenCode plugin, the user's and this project's, with the commands it runs."""
    from memoryd_client import opencode_plugin

    found: list[dict[str, Any]] = []
    project = _project_root(os.getcwd())
    for where in (None, project) if project is not None else (None,):
        path = str(opencode_plugin.plugin_path(None)) if where is None else \
            os.path.join(where, ".opencode", "plugins", opencode_plugin.FILE_NAME)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        if opencode_plugin.is_ours(text):
            commands = opencode_plugin.hook_commands(text)
            found.append({"harness": "opencode", "path": path, "project": where,
                          "commands": commands,
                          "error": None if commands else "its command line cannot be read"})
    return found


def _cline_hooks() -> list[dict[str, Any]]:
    """memoryd's Cline hook files, the user's and this project's, with the commands they run."""
    from memoryd_client import cline_hooks
    from memoryd_client.hooks import HARNESS_EVENTS
    from memoryd_client.install import read_own_file

    found: list[dict[str, Any]] = []
    project = _project_root(os.getcwd())
    for where in (None, project) if project is not None else (None,):
        directory = cline_hooks.hooks_dir(where)
        for event in HARNESS_EVENTS["cline"]:
            try:
                text = read_own_file(directory / event)
            except OSError:
                continue
            if text is not None and cline_hooks.is_ours(text):
                commands = cline_hooks.hook_commands(text)
                found.append({"harness": "cline", "path": str(directory / event),
                              "project": where, "commands": commands,
                              "error": None if commands else "its command line cannot be read"})
    return found


def parse_command(command: str) -> tuple[dict[str, str], list[str]]:
    """The environment a hook command carries (``env NAME=VALUE …``) and its program words."""
    import shlex
    words = shlex.split(command)
    environment: dict[str, str] = {}
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
        while words and "=" in words[0] and not words[0].startswith("/"):
            name, _, value = words.pop(0).partition("=")
            environment[name] = value
    return environment, words[:-3]


def hook_checks(hooks: list[dict[str, Any]], served_state: str,
                served_home: str | None, answered: bool = True) -> list[dict[str, Any]]:
    """Each settings file with memoryd's hooks: the program exists, and the hooks reach the
    state dir the daemon serves (``served_home``: its MEMORYD_HOME). ``answered``: a daemon
    answered; when none did, ``served_state`` is only this shell's, and hooks elsewhere may
    be right (a daemon may serve their state dir): said, not called a problem."""
    import shlex
    if not hooks:
        return [check("hooks", OK, "no memoryd hooks installed for this user or this project "
                      f"(memory hook install {CHOICE} adds them)")]
    checks = []
    for found in hooks:
        name = f"hooks {found['harness']}" + (" (project)" if found["project"] else "")
        where = _tilde(found["path"])
        again = f"memory hook install {found['harness']}" + \
            (f" --project {shlex.quote(found['project'])}" if found["project"] else "")
        if found["error"]:
            checks.append(check(name, WARNING, f"{where}: cannot read it: {found['error']}",
                                "fix the file (memory hook install refuses a file it cannot "
                                "parse)"))
            continue
        problems = []
        fixes = []
        programs = {}
        homes = set()
        for command in found["commands"]:
            try:
                environment, program = parse_command(command)
            except ValueError:
                continue
            if program:
                programs[program[0]] = program
            homes.add((environment.get("MEMORYD_HOME"), environment.get("MEMORYD_SOCKET")))
        for path in programs:
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                problems.append(f"runs {path}, which does not exist or is not executable")
                fixes.append(f"reinstall the hooks from the memoryd you use: {again}")
        notes = []
        for home, socket in homes:
            state = _state_of(home)
            if os.path.realpath(state) != os.path.realpath(served_state) and not socket \
                    and not answered:
                notes.append(f"the hooks use {_describe_home(home)}, this shell "
                             f"{served_state}, where no daemon answers: if the daemon runs "
                             f"there, ask it with `MEMORYD_HOME={shlex.quote(home or '')} "
                             "memory doctor`")
            elif os.path.realpath(state) != os.path.realpath(served_state) and not socket:
                problems.append(f"the hooks use {_describe_home(home)}, memoryd serves "
                                f"{served_state}: their events are spooled where no daemon "
                                "replays them")
                fixes.append("reinstall them with the daemon's MEMORYD_HOME: " + (
                    f"MEMORYD_HOME={shlex.quote(served_home)} {again}" if served_home
                    else f"env -u MEMORYD_HOME {again}"))
        running = ", ".join(programs) or "?"
        count = len(found["commands"])
        detail = f"{where}: {count} hook{'' if count == 1 else 's'}, running {running}" + \
            "".join(f" with {_describe_home(h)}" for h, _ in sorted(homes, key=str) if h)
        if problems:
            checks.append(check(name, PROBLEM, f"{where}: " + "; ".join(problems),
                                "; ".join(dict.fromkeys(fixes))))
        elif notes:
            checks.append(check(name, WARNING, f"{where}: " + "; ".join(notes),
                                "nothing here until the daemon they use is known: "
                                "reinstalling them now could point them at no daemon"))
        else:
            checks.append(check(name, OK, detail))
    return checks


def _tilde(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if path.startswith(home + os.sep) else path


def service_check(facts: dict[str, Any] | None, served_state: str) -> dict[str, Any]:
    import shlex

    from memoryd_client import service_probe

    path = service_probe.unit_path()
    settings = service_probe.unit_settings(path)
    if settings is None:
        if path.exists():
            return check("service", WARNING, f"{path} cannot be read",
                         "memoryd service install rewrites it")
        command = service_probe.memoryd_command()
        memoryd = shlex.join(command) if command else "memoryd"
        return check("service", OK, "not installed: memoryd runs only while you start it "
                     f"(`{memoryd} service install` runs it at login)")
    command, environment = settings
    program = command[0] if command else "?"
    if not (os.path.isfile(program) and os.access(program, os.X_OK)):
        return check("service", PROBLEM, f"{_tilde(str(path))} runs {program}, which does not "
                     "exist", "run `memoryd service install` from the memoryd you use: it "
                     "rewrites the unit")
    unit_state = _state_of(environment.get("MEMORYD_HOME"))
    if os.path.realpath(unit_state) != os.path.realpath(served_state) and \
            not environment.get("MEMORYD_SOCKET"):
        return check("service", PROBLEM, f"the service runs with "
                     f"{_describe_home(environment.get('MEMORYD_HOME'))}, this shell's memoryd "
                     f"state is {served_state}",
                     "run `memoryd service install` in a shell with the MEMORYD_HOME you use")
    state, why = service_probe.manager_state()
    if state is None:
        return check("service", WARNING, f"{_tilde(str(path))} installed; {why}",
                     "log in to a session with a user manager, or run memoryd serve yourself")
    problem, pid = _service_running(path, state)
    if problem is not None:
        return problem
    detail = f"installed, enabled and running (pid {pid}) from {_tilde(str(path))}"
    if facts is not None and pid and str(facts.get("pid")) != str(pid):
        return check("service", WARNING, detail + f", but the daemon that answers is pid "
                     f"{facts.get('pid')}", "stop the memoryd you started by hand; the service's "
                     "takes over")
    stale = service_probe.stale_settings(path)
    if stale:  # a unit an older memoryd wrote: its file-system sandbox broke memoryd's edits
        shown = ", ".join(stale[:4]) + (f" and {len(stale) - 4} more" if len(stale) > 4 else "")
        return check("service", WARNING, detail + ", but the unit is stale: `memoryd service "
                     f"install` would write it differently ({shown})",
                     "memoryd service install (it rewrites the unit and restarts memoryd)")
    return check("service", OK, detail)


def _service_running(path: Any, state: dict[str, Any]) -> tuple[dict[str, Any] | None, Any]:
    """Why the installed service does not run (not loaded, not enabled, stopped), or its pid."""
    from memoryd_client import service_probe

    if service_probe.launchd():
        if state.get("loaded") != "yes":
            return check("service", PROBLEM, f"{_tilde(str(path))} installed but not loaded",
                         "memoryd service start"), None
        if state.get("state") != "running":
            return check("service", PROBLEM, f"loaded, not running (state {state.get('state')}"
                         f", last exit {state.get('last exit code', '?')})",
                         "memoryd service logs says why; memoryd service start"), None
        return None, state.get("pid")
    if state.get("UnitFileState") != "enabled":
        return check("service", WARNING, f"{_tilde(str(path))} installed, not enabled "
                     f"({state.get('UnitFileState') or 'unknown'}): it will not start at "
                     "login", "memoryd service install (or systemctl --user enable memoryd)"), None
    if state.get("ActiveState") != "active":
        result = state.get("Result")
        return check("service", PROBLEM, f"enabled, not running ({state.get('ActiveState')}"
                     f", {state.get('SubState')}" + (f", last result {result}" if result
                                                     and result != "success" else "") + ")",
                     "memoryd service logs says why; systemctl --user start memoryd"), None
    return None, state.get("MainPID")


def config_check() -> dict[str, Any]:
    """With the daemon down: its configuration as `memoryd serve` would read it from this
    shell (`memoryd check-config`): a bad one is why it does not start, and only the log
    said so."""
    import subprocess

    from memoryd_client import service_probe

    command = service_probe.memoryd_command()
    if command is None:
        return check("config", OK, "not checked: the daemon is not installed in this Python")
    try:
        done = subprocess.run([*command, "check-config"], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return check("config", WARNING, f"`memoryd check-config` did not run: {exc}",
                     "run it yourself: it says what memoryd makes of the configuration")
    said = (done.stderr.strip().splitlines() or ["?"])[-1].removeprefix("memoryd: ")
    if done.returncode == 3:
        return check("config", PROBLEM, said, "correct it: until then `memoryd serve` refuses "
                     "to start (exit 3)")
    if done.returncode != 0:
        return check("config", WARNING, f"`memoryd check-config` failed (exit "
                     f"{done.returncode}): {said}", "run it yourself to see why")
    lines = done.stdout.splitlines()
    warnings = [line.removeprefix("warning: ") for line in lines if line.startswith("warning: ")]
    if warnings:
        return check("config", WARNING, "; ".join(warnings),
                     "correct the names (the warning says which setting holds each)")
    return check("config", OK, lines[0] if lines else "no error")


def spool_check() -> dict[str, Any]:
    import time

    from memoryd_client.hooks import read_spool, spool_path
    from memoryd_client.views import duration

    path = spool_path()
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        since = os.path.getmtime(path)
    except FileNotFoundError:
        return check("spool", OK, "no hook events wait in the spool")
    except OSError as exc:
        return check("spool", WARNING, f"{path}: {exc.strerror or exc}", None)
    events = read_spool(data)
    if not events:
        return check("spool", OK, "no hook events wait in the spool")
    oldest = min([e["ts"] for e in events if isinstance(e.get("ts"), (int, float))],
                 default=since)
    return check("spool", WARNING, f"{len(events)} hook events spooled while memoryd was "
                 f"unreachable, the oldest {duration(time.time() - oldest)} ago ({path})",
                 "memoryd replays them when it starts: start or restart it")


# -- the whole examination -------------------------------------------------------------------

def examine(client: Client) -> dict[str, Any]:
    from memoryd_client import service_probe
    from memoryd_client.paths import state_dir

    reply, why = ask_daemon(client)
    facts = reply["daemon"] if reply is not None else None
    served_state = (facts or {}).get("state_dir") or str(state_dir())
    hooks = installed_hooks()
    homes: dict[str, str | None] = {"a shell without MEMORYD_HOME": None}
    for found in hooks:
        for command in found["commands"]:
            try:
                environment, _ = parse_command(command)
            except ValueError:
                continue
            homes[f"the hooks in {_tilde(found['path'])}"] = environment.get("MEMORYD_HOME")
    unit = service_probe.unit_settings()
    if unit is not None:
        homes["the service"] = unit[1].get("MEMORYD_HOME")
    checks = daemon_checks(str(client.path), reply, why, homes)
    checks.append(home_check(facts))
    checks.append(service_check(facts, served_state))
    served_home = facts.get("memoryd_home") if facts is not None else \
        _home(os.environ.get("MEMORYD_HOME"))
    checks.extend(hook_checks(hooks, served_state, served_home, answered=facts is not None))
    checks.append(spool_check())
    if reply is None:  # the daemon's own check is of the configuration it runs
        checks.append(config_check())
    checks.extend((reply or {}).get("checks") or [])
    statuses = {c["status"] for c in checks}
    return {
        "healthy": PROBLEM not in statuses,
        "problems": sum(1 for c in checks if c["status"] == PROBLEM),
        "warnings": sum(1 for c in checks if c["status"] == WARNING),
        "client": {"version": client_version(), "executable": sys.executable,
                   "memoryd_home": os.environ.get("MEMORYD_HOME"),
                   "socket": str(client.path)},
        "daemon": facts,
        "checks": checks,
        "not_checked": [] if reply is not None and not (facts or {}).get("too_old")
        else list(DAEMON_CHECKS),
    }


def print_report(report: dict[str, Any]) -> None:
    width = max(len(c["check"]) for c in report["checks"])
    for item in report["checks"]:
        print(f"{item['status']:<8} {item['check']:<{width}}  {item['detail']}")
        if item["fix"] and item["status"] != OK:
            print(f"{'':<8} {'':<{width}}  fix: {item['fix']}")
    if report["not_checked"]:
        print(f"not checked without the daemon: {', '.join(report['not_checked'])}")
    daemon = report["daemon"]
    if daemon and daemon.get("config_file"):
        print(f"config: {daemon['config_file']}; log: {daemon.get('log')}")
    counts = []
    if report["problems"]:
        counts.append(f"{report['problems']} problem" + ("s" if report["problems"] > 1 else ""))
    if report["warnings"]:
        counts.append(f"{report['warnings']} warning" + ("s" if report["warnings"] > 1 else ""))
    verdict = "healthy" if report["healthy"] else "not healthy"
    print(f"{verdict}" + (f": {', '.join(counts)}" if counts else ": every check ok"))
