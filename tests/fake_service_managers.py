"""Stand-ins for systemctl, journalctl, loginctl and launchctl, installed on PATH by
tests/server/test_service.py: ``python fake_service_managers.py NAME ARGS…``.

Each call appends ``[NAME, *ARGS]`` as a JSON line to ``$FAKE_MANAGER_DIR/calls.jsonl`` and keeps
the service's state (enabled, running, loaded) in ``$FAKE_MANAGER_DIR/state.json``, answering
the way the real commands do for the arguments memoryd uses. ``FAKE_NO_BUS=1`` makes
``systemctl --user`` fail as it does without a user manager (files-only commands still work);
``FAKE_LAUNCHD_FAIL=1`` makes ``launchctl bootstrap`` fail. ``FAKE_MAIN_PID`` is the pid reported
for the running service.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

DIR = Path(os.environ["FAKE_MANAGER_DIR"])
STATE = DIR / "state.json"
UNIT = "memoryd.service"
LABEL = "dev.memoryd.agent"


def load() -> dict:
    return json.loads(STATE.read_text()) if STATE.exists() else {}


def save(state: dict) -> None:
    STATE.write_text(json.dumps(state))


def fail(message: str, code: int = 1) -> int:
    print(message, file=sys.stderr)
    return code


def unit_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ["HOME"], ".config")
    return Path(base) / "systemd" / "user" / UNIT


def systemctl(args: list[str]) -> int:
    assert args[0] == "--user", args
    verb, rest = args[1], args[2:]
    state = load()
    if verb in ("enable", "disable") and os.environ.get("FAKE_NO_BUS") and "--now" not in rest:
        pass  # these two work on the unit files alone, as the real systemctl does
    elif os.environ.get("FAKE_NO_BUS"):
        return fail("Failed to connect to bus: No medium found")
    if verb == "show":
        loaded = unit_file().exists()
        running = state.get("running", False)
        print(f"LoadState={'loaded' if loaded else 'not-found'}")
        enabled = "enabled" if state.get("enabled") else "disabled"
        print(f"UnitFileState={enabled if loaded else ''}")
        print(f"ActiveState={'active' if running else 'inactive'}")
        print(f"SubState={'running' if running else 'dead'}")
        print(f"MainPID={os.environ.get('FAKE_MAIN_PID', '4242') if running else 0}")
        print("Result=success")
        print("NeedDaemonReload=no")
        return 0
    if verb == "daemon-reload":
        return 0
    if rest[-1] != UNIT:
        return fail(f"Unit {rest[-1]} not found.", 5)
    if verb in ("enable", "start", "restart") and not unit_file().exists():
        return fail(f"Failed to {verb} unit: Unit file {UNIT} does not exist.", 1)
    if verb == "enable":
        state["enabled"] = True
    elif verb == "disable":
        state["enabled"] = False
        if "--now" in rest:
            state["running"] = False
    elif verb in ("start", "restart"):
        state["running"] = True
    elif verb == "stop":
        state["running"] = False
    else:
        return fail(f"fake systemctl: unexpected {args}", 64)
    save(state)
    return 0


def launchctl(args: list[str]) -> int:
    verb, rest = args[0], args[1:]
    state = load()
    domain = f"gui/{os.getuid()}"
    target = f"{domain}/{LABEL}"
    if verb == "print":
        assert rest == [target], rest
        if not state.get("loaded"):
            return fail(f'Could not find service "{LABEL}" in domain for user gui: '
                        f'{os.getuid()}', 113)
        running = state.get("running", False)
        print(f"{target} = {{")
        print(f"\tstate = {'running' if running else 'not running'}")
        if running:
            print(f"\tpid = {os.environ.get('FAKE_MAIN_PID', '4343')}")
        print("\tlast exit code = (never exited)")
        print("}")
        return 0
    if verb == "print-disabled":
        print("disabled services = {\n}")
        return 0
    if verb == "enable":
        assert rest == [target], rest
        return 0
    if verb == "bootstrap":
        assert rest[0] == domain and Path(rest[1]).is_absolute(), rest
        if os.environ.get("FAKE_LAUNCHD_FAIL"):
            return fail("Bootstrap failed: 5: Input/output error", 5)
        if state.get("loaded"):
            return fail("Bootstrap failed: 5: Input/output error", 5)  # already loaded
        state.update(loaded=True, running=True)  # RunAtLoad
    elif verb == "bootout":
        assert rest == [target], rest
        if not state.get("loaded"):
            return fail("Boot-out failed: 3: No such process", 3)
        state.update(loaded=False, running=False)
    elif verb == "kickstart":
        assert rest == [target], rest
        state["running"] = True
    elif verb == "kill":
        assert rest == ["SIGTERM", target], rest
        state["running"] = False
    else:
        return fail(f"fake launchctl: unexpected {args}", 64)
    save(state)
    return 0


def main() -> int:
    name, args = sys.argv[1], sys.argv[2:]
    with (DIR / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps([name, *args]) + "\n")
    if name == "systemctl":
        return systemctl(args)
    if name == "launchctl":
        return launchctl(args)
    if name == "journalctl":
        print("journal of", " ".join(args))
        return 0
    if name == "loginctl":
        print("no")  # Linger
        return 0
    return fail(f"fake: unknown command {name}", 64)


if __name__ == "__main__":
    sys.exit(main())
