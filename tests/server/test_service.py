"""`memoryd service`: the unit and the agent rendered for this installation, install/uninstall
against stand-in service managers on PATH, and the daemon's side of the notify protocol (READY
after the signal handlers, RELOADING/READY around SIGHUP, WATCHDOG from the event loop,
STOPPING) with a real datagram socket as NOTIFY_SOCKET."""

from __future__ import annotations

import dataclasses
import json
import os
import plistlib
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from memoryd_client import Client, DaemonUnreachableError

from memoryd.cli import main
from memoryd.service import (
    LABEL,
    MARKER,
    Installation,
    render_plist,
    render_unit,
    this_installation,
)
from tests.conftest import run_cli, run_cli_at_terminal, start_daemon, wait_until
from tests.passes.test_passes import propose_a_recurring_rule

ROOT = Path(__file__).resolve().parents[2]
FAKES = Path(__file__).resolve().parents[1] / "fake_service_managers.py"
HARDENING = ["NoNewPrivileges=yes", "UMask=0077", "RestrictAddressFamilies=AF_UNIX",
             "LockPersonality=yes", "RestrictRealtime=yes", "SystemCallArchitectures=native"]


@pytest.fixture
def home(memoryd_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake home (conftest points HOME at it); XDG dirs default to it."""
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = Path(os.environ["HOME"])
    (home / ".config").mkdir()
    return home


@pytest.fixture
def managers(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """systemctl, journalctl, loginctl and launchctl stand-ins first on PATH; returns their
    directory (calls.jsonl, state.json)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("systemctl", "journalctl", "loginctl", "launchctl"):
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKES}" {name} "$@"\n')
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_MANAGER_DIR", str(bin_dir))
    return bin_dir


def calls(managers: Path) -> list[list[str]]:
    log = managers / "calls.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return [json.loads(line) for line in lines]


def service(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["service", *args])
    out, err = capsys.readouterr()
    return code, out, err


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- rendering ------------------------------------------------------------------------


@pytest.fixture(params=["MEMORYD_HOME set", "MEMORYD_HOME unset"])
def installation(request: pytest.FixtureRequest, home: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Installation:
    if request.param == "MEMORYD_HOME unset":
        monkeypatch.delenv("MEMORYD_HOME")
    return this_installation()


def test_the_unit_runs_this_installation(installation: Installation, home: Path) -> None:
    unit = render_unit(installation)
    lines = unit.splitlines()
    assert lines[0].startswith(f"# {MARKER}")
    # every placeholder filled, and the template's notes on them left out
    assert re.findall(r"@[A-Z]+@", unit) == [] and "placeholders" not in unit
    assert lines[3] == "" and lines[4] == "[Unit]"
    memoryd = Path(sys.executable).parent / "memoryd"
    assert f"ExecStart={memoryd} serve" in lines and memoryd.is_absolute()
    environment = [line for line in lines if line.startswith("Environment=")]
    if os.environ.get("MEMORYD_HOME"):
        assert f"Environment=MEMORYD_HOME={os.environ['MEMORYD_HOME']}" in environment
    else:
        assert not any("MEMORYD_HOME" in line for line in environment)
    for directive in ["Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure",
                      "RestartPreventExitStatus=2 3", "Environment=ORT_DISABLE_TELEMETRY=1",
                      "LimitNOFILE=8192", "RuntimeDirectory=memoryd", *HARDENING]:
        assert directive in lines, directive
    assert any(line.startswith("WatchdogSec=") for line in lines)
    assert any(line.startswith("TimeoutStopSec=") for line in lines)
    # memoryd edits the user's files where they are: no file-system sandbox (N3; see
    # test_the_daemon_under_the_units_file_system_view_edits_the_users_files)
    assert not [line for line in lines if line.split("=", 1)[0] in FILE_SYSTEM_SETTINGS]


def systemd_analyze_verify(unit: Path, runtime_dir: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze --user verify`, falling back to the system manager's rules where a user
    manager's paths cannot be set up."""
    runtime_dir.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir)}
    result = subprocess.run(["systemd-analyze", "--user", "verify", str(unit)],
                            capture_output=True, text=True, env=env, timeout=60)
    if result.returncode != 0 and "Failed to initialize manager" in result.stderr:
        result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                                text=True, env=env, timeout=60)
    return result


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_analyze_verifies_the_unit(installation: Installation, tmp_path: Path) -> None:
    unit = tmp_path / "memoryd.service"
    unit.write_text(render_unit(installation))
    result = systemd_analyze_verify(unit, tmp_path / "runtime")
    complaints = [line for line in result.stderr.splitlines() if str(unit) in line]
    assert result.returncode == 0 and complaints == [], result.stderr
    # the check has teeth: a memoryd that does not exist is refused
    missing = dataclasses.replace(installation, command=(str(tmp_path / "no" / "memoryd"),))
    unit.write_text(render_unit(missing))
    assert systemd_analyze_verify(unit, tmp_path / "runtime").returncode != 0


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_paths_with_blanks_and_percent_signs_survive_systemd_quoting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    odd = tmp_path / "my tools %h $HOME"
    (odd / "bin").mkdir(parents=True)
    script = odd / "bin" / "memoryd"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("MEMORYD_HOME", str(odd / "state"))
    installation = this_installation(executable=str(odd / "bin" / "python"))
    assert installation.command == (str(script),)
    unit = tmp_path / "memoryd.service"
    unit.write_text(render_unit(installation))
    result = systemd_analyze_verify(unit, tmp_path / "runtime")
    assert result.returncode == 0 and str(unit) not in result.stderr, result.stderr
    text = unit.read_text()
    assert f'ExecStart="{tmp_path}/my tools %%h $HOME/bin/memoryd" serve' in text
    assert f'Environment="MEMORYD_HOME={tmp_path}/my tools %%h $HOME/state"' in text


def test_the_service_carries_where_claude_codex_and_gemini_keep_their_files(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's Claude Code, Codex and Gemini sources follow $CLAUDE_CONFIG_DIR,
    $CODEX_HOME and $GEMINI_CLI_HOME (memoryd.sources): a service installed from a shell that
    sets them gets them too."""
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini profile"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "gemini-system.json"))
    installation = this_installation()
    unit = render_unit(installation)
    assert f'Environment="GEMINI_CLI_HOME={tmp_path}/gemini profile"' in unit
    assert f"Environment=GEMINI_CLI_SYSTEM_SETTINGS_PATH={tmp_path}/gemini-system.json" in unit
    assert f"Environment=CODEX_HOME={tmp_path}/codex" in unit
    assert f"Environment=CLAUDE_CONFIG_DIR={tmp_path}/claude" in unit
    carried = plistlib.loads(render_plist(installation).encode())["EnvironmentVariables"]
    assert carried["GEMINI_CLI_HOME"] == f"{tmp_path}/gemini profile"


def test_without_a_console_script_the_unit_runs_python_m_memoryd(tmp_path: Path) -> None:
    python = tmp_path / "bin" / "python3"
    assert this_installation(executable=str(python)).command == (str(python), "-m", "memoryd")


def test_the_plist_has_what_launchd_needs(installation: Installation) -> None:
    text = render_plist(installation)
    assert re.findall(r"@[A-Z]+@", text) == [] and "launchd expands neither" not in text
    plist = plistlib.loads(text.encode())
    assert plist["Label"] == LABEL
    program = plist["ProgramArguments"]
    assert Path(program[0]).is_absolute() and Path(program[0]).exists() and program[-1] == "serve"
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"Crashed": True}  # not exit 2/3 forever: see the template
    assert plist["StandardOutPath"] == plist["StandardErrorPath"] == \
        str(installation.home / "Library" / "Logs" / "memoryd" / "memoryd.log")
    environment = plist["EnvironmentVariables"]
    assert environment["ORT_DISABLE_TELEMETRY"] == "1"
    assert environment.get("MEMORYD_HOME") == os.environ.get("MEMORYD_HOME")


def test_the_plist_escapes_what_xml_would_misread(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "a <b> & 'c'"))
    plist = plistlib.loads(render_plist(this_installation()).encode())
    assert plist["EnvironmentVariables"]["MEMORYD_HOME"] == str(tmp_path / "a <b> & 'c'")


# -- the daemon under the unit's file-system view ---------------------------------------

#: The settings of systemd.exec(5) that change what the service sees of the file system: the
#: test below builds each one it finds in the rendered unit, and refuses one it cannot build.
FILE_SYSTEM_SETTINGS = ("ProtectSystem", "ProtectHome", "ReadWritePaths", "ReadOnlyPaths",
                        "InaccessiblePaths", "PrivateTmp", "TemporaryFileSystem", "BindPaths",
                        "BindReadOnlyPaths", "RootDirectory", "RootImage", "MountAPIVFS",
                        "PrivateMounts", "ProtectKernelTunables", "ProtectControlGroups")
#: What ProtectSystem= and ProtectHome= make read-only (or hide), after systemd.exec(5).
PROTECT_SYSTEM = {"yes": ["/usr", "/boot", "/efi"], "full": ["/usr", "/boot", "/efi", "/etc"],
                  "strict": ["/"], "no": []}
PROTECT_HOME = {"read-only": ["/home", "/root", "/run/user"], "no": []}
API_FILE_SYSTEMS = ("/dev", "/proc", "/sys")


def unit_settings(unit: str) -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in unit.splitlines():
        if line and not line.startswith(("#", "[")) and "=" in line:
            name, value = line.split("=", 1)
            settings.setdefault(name, []).append(value)
    return settings


def mount_script(unit: str) -> str:
    """Shell commands that give a process in a new mount namespace the file-system view this
    unit gives the service (as root: `unshare -m`), derived from its settings: read-only
    what ProtectSystem=/ProtectHome=/ReadOnlyPaths= make read-only (each mount under it but
    the API file systems), writable again what ReadWritePaths= names, a private /tmp for
    PrivateTmp=yes. A setting of the file system this cannot build fails the test."""
    settings = unit_settings(unit)
    unknown = [name for name in settings if name in FILE_SYSTEM_SETTINGS and name not in (
        "ProtectSystem", "ProtectHome", "ReadWritePaths", "ReadOnlyPaths", "PrivateTmp")]
    assert not unknown, f"the test cannot build {unknown}: teach mount_script them"
    read_only = [path for value in settings.get("ProtectSystem", []) for path in
                 PROTECT_SYSTEM[value]]
    for value in settings.get("ProtectHome", []):
        assert value in PROTECT_HOME, f"ProtectHome={value}: teach mount_script it"
        read_only += PROTECT_HOME[value]
    read_only += [p.lstrip("-") for v in settings.get("ReadOnlyPaths", []) for p in v.split()]
    writable = [p for v in settings.get("ReadWritePaths", []) for p in shlex.split(v)]
    mounts = [line.split()[4].replace("\\040", " ")
              for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    lines = ["set -e"]
    for path in writable:  # a bind of its own first: the read-only remounts leave it as it is
        optional, path = path.startswith("-"), path.lstrip("-")
        if not os.path.exists(path):
            assert optional, f"ReadWritePaths={path} does not exist"
            continue
        lines.append(f"mount --bind {shlex.quote(path)} {shlex.quote(path)}")
    for root in read_only:
        if not os.path.exists(root):
            continue
        under = [m for m in mounts if (m == root or m.startswith(root.rstrip("/") + "/"))
                 and not m.startswith(API_FILE_SYSTEMS)]
        if root not in mounts:
            lines.append(f"mount --bind {shlex.quote(root)} {shlex.quote(root)}")
            under.append(root)
        lines += [f"mount -o remount,bind,ro {shlex.quote(m)}" for m in sorted(set(under))]
    if settings.get("PrivateTmp", ["no"])[-1] in ("yes", "true"):
        lines += ["mount -t tmpfs tmpfs /tmp", "mount -t tmpfs tmpfs /var/tmp"]
    if "UMask" in settings:
        lines.append(f"umask {settings['UMask'][-1]}")
    return "\n".join(lines)


def test_the_mount_script_builds_what_a_sandbox_declares() -> None:
    """The derivation itself (else the test below could pass on a script that mounts
    nothing): the sandbox the unit had before N3 makes everything read-only but its paths."""
    script = mount_script("ProtectSystem=strict\nReadWritePaths=-/var/tmp -/nonexistent\n"
                          "PrivateTmp=yes\nProtectHome=read-only\n")
    assert "mount --bind /var/tmp /var/tmp" in script and "/nonexistent" not in script
    assert "mount -o remount,bind,ro /" in script.splitlines()
    assert "mount -t tmpfs tmpfs /tmp" in script
    with pytest.raises(AssertionError, match="TemporaryFileSystem"):
        mount_script("TemporaryFileSystem=/var\n")


def test_the_daemon_under_the_units_file_system_view_edits_the_users_files(
        memoryd_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """N3 of the newcomer report: the unit made the file system read-only but the state and
    config directories, so forget of a ~/.claude/CLAUDE.md line failed (EROFS), and promotion,
    the notebook pass outside the state dir and undo would too. Here the real daemon runs the
    unit's command in a mount namespace built from the rendered unit's own settings (so the
    test fails whenever the unit and what memoryd edits disagree), with the user's files
    outside the state dir, and does each of those."""
    if sys.platform != "linux" or shutil.which("unshare") is None:
        pytest.skip("needs Linux mount namespaces (unshare)")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False).returncode:
        pytest.skip("unshare -m is not permitted here (it needs root or CAP_SYS_ADMIN)")
    home = tmp_path / "home"  # outside MEMORYD_HOME, as a real home is
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    claude = home / ".claude" / "CLAUDE.md"
    claude.write_text("# Preferences\n\n- Answer in British English.\n- Keep answers short.\n")
    notes = home / ".mastersof-ai" / "agents" / "designer" / "memory"
    notes.mkdir(parents=True)
    notebook = notes / "notebook.md"
    notebook.write_text("# Designer notebook\n\n## Session Log\n" + "".join(
        f"- [2026-{1 + i // 28:02d}-{1 + i % 28:02d}] session {i}: drew sticker {i}\n"
        for i in range(90)))
    project = tmp_path / "proj" / "shop"
    (project / ".git").mkdir(parents=True)
    rules = project / "CLAUDE.md"
    rules.write_text("# Shop\n\nBuild with make.\n")

    unit = render_unit(this_installation())
    settings = unit_settings(unit)
    command = shlex.split(settings["ExecStart"][0].replace("%%", "%").replace("$$", "$"))
    environment = dict(os.environ)
    for value in settings.get("Environment", []):
        name, _, setting = shlex.split(value)[0].partition("=")
        environment[name] = setting
    script = mount_script(unit) + "\nexec " + shlex.join(command)
    log = memoryd_home / "daemon.log"
    with log.open("a") as stderr:
        proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                                stdout=subprocess.DEVNULL, stderr=stderr, env=environment)
    try:
        def answers() -> bool:
            assert proc.poll() is None, log.read_text()
            try:
                with Client(memoryd_home / "memoryd.sock", timeout_s=5) as c:
                    return c.status()["vector_index"]["ready"]
            except DaemonUnreachableError:
                return False

        wait_until(answers, timeout_s=90)
        with Client(memoryd_home / "memoryd.sock", timeout_s=60) as client:
            def entry(words: str) -> dict | None:
                hits = client.search(words, agents=["*"], limit=5)["hits"]
                return next((h for h in hits if words in h["text"]), None)

            wait_until(lambda: entry("British English") is not None
                       and entry("session 89") is not None, timeout_s=60)
            # forget a line of ~/.claude/CLAUDE.md
            forgot = run_cli("forget", entry("British English")["id"])
            assert forgot.returncode == 0, forgot.stderr
            assert "British" not in claude.read_text()
            # the notebook pass, on a notebook outside the state dir
            run = client.pass_run("notebooks")
            assert run["status"] == "done" and run["counts"].get("applied"), run
            assert len(notebook.read_text().splitlines()) <= 80
            assert (notes / "archive" / "notebook.md").exists()
            # promotion accepted into a project's CLAUDE.md
            _, proposal = propose_a_recurring_rule(client, project)
            # lessons an agent wrote (the library): a person accepts them, at a terminal
            accepted = run_cli_at_terminal("promote", "accept", proposal["change"], "--json")
            assert accepted.returncode == 0, accepted.stderr
            assert "pytest -x" in rules.read_text()
            # and undo, of the promotion and of the forget
            for undone in (json.loads(accepted.stdout)["run"], forgot.stdout.split(
                    "`memory undo ")[1].split("`")[0]):
                result = run_cli("undo", undone)
                assert result.returncode == 0, result.stderr
            assert rules.read_text() == "# Shop\n\nBuild with make.\n"
            assert "British" in claude.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- install, uninstall, status … against stand-in managers -----------------------------


def test_systemd_install_twice_changes_nothing_and_uninstall_removes_it(
        managers: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree(home)
    unit = home / ".config" / "systemd" / "user" / "memoryd.service"
    code, out, _ = service(capsys, "--manager", "systemd", "install")
    assert code == 0, out
    assert f"wrote {unit}" in out and "enabled memoryd.service" in out and "started memoryd" in out
    assert "loginctl enable-linger $USER" in out
    assert [c[:3] for c in calls(managers) if c[0] == "systemctl"] == [
        ["systemctl", "--user", "show"], ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable"], ["systemctl", "--user", "start"]]
    assert unit.read_text() == render_unit(this_installation())
    mtime = unit.stat().st_mtime_ns

    code, out, _ = service(capsys, "--manager", "systemd", "install")
    assert code == 0 and "nothing changed" in out
    assert [c[:3] for c in calls(managers) if c[0] == "systemctl"] == [
        ["systemctl", "--user", "show"]]
    assert unit.stat().st_mtime_ns == mtime

    code, out, _ = service(capsys, "--manager", "systemd", "uninstall")
    assert code == 0 and f"removed {unit}" in out
    assert [c for c in calls(managers) if c[0] == "systemctl"] == [
        ["systemctl", "--user", "show", "memoryd.service",
         "--property=LoadState,UnitFileState,ActiveState,SubState,MainPID,Result,NeedDaemonReload"],
        ["systemctl", "--user", "disable", "--now", "memoryd.service"],
        ["systemctl", "--user", "daemon-reload"]]
    assert tree(home) == before  # exactly what install made is gone

    code, out, _ = service(capsys, "--manager", "systemd", "uninstall")
    assert code == 0 and "nothing to do" in out and calls(managers) == []


def test_a_changed_installation_updates_the_unit_and_restarts(
        managers: Path, home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert service(capsys, "install")[0] == 0
    calls(managers)
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "elsewhere"))
    code, out, _ = service(capsys, "install")
    assert code == 0 and "updated" in out and "restarted memoryd" in out
    assert ["systemctl", "--user", "restart", "memoryd.service"] in calls(managers)
    unit = (home / ".config" / "systemd" / "user" / "memoryd.service").read_text()
    assert f"Environment=MEMORYD_HOME={tmp_path / 'elsewhere'}" in unit


def test_without_a_user_manager_install_writes_the_unit_and_says_how_to_run_memoryd(
        managers: Path, home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NO_BUS", "1")
    unit = home / ".config" / "systemd" / "user" / "memoryd.service"
    code, out, err = service(capsys, "install")
    assert code == 1
    assert unit.exists() and f"wrote {unit}" in out
    assert f"{Path(sys.executable).parent / 'memoryd'} serve" in out
    assert err.strip() == ("memoryd: memoryd.service written but not enabled: no systemd user "
                           "manager answers (Failed to connect to bus: No medium found)")
    assert not any(c[:3] == ["systemctl", "--user", "enable"] for c in calls(managers))
    code, out, _ = service(capsys, "install")
    assert code == 1 and "is up to date" in out
    code, out, _ = service(capsys, "status")
    assert code == 1 and "enabled:  unknown, no systemd user manager answers" in out
    code, out, _ = service(capsys, "uninstall")
    assert code == 0 and not unit.exists() and "Not stopped" in out


def test_without_a_user_manager_install_names_the_memoryd_that_answers(
        keyword_daemon, managers: Path, home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """F-6 (2026-11-30): with a memoryd answering already, install said "Run memoryd yourself
    meanwhile: …/memoryd serve" (a second one would refuse: the socket is in use)."""
    monkeypatch.setenv("FAKE_NO_BUS", "1")
    code, out, _ = service(capsys, "install")
    assert code == 1 and "Run memoryd yourself" not in out
    assert (f"The memoryd that answers meanwhile (pid {os.getpid()}, on "
            f"{keyword_daemon.socket}) keeps running") in out


def test_systemd_status_start_stop_and_logs(managers: Path, home: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MAIN_PID", str(os.getpid()))  # a process in our mount namespace
    code, out, _ = service(capsys, "status")
    assert code == 1 and "not installed: `memoryd service install`" in out
    code, _, err = service(capsys, "start")
    assert code == 1 and "not installed" in err
    assert service(capsys, "install")[0] == 0
    code, out, _ = service(capsys, "status")
    assert code == 0
    assert "enabled:  yes" in out and f"running:  yes (pid {os.getpid()})" in out
    assert f"runs:     {Path(sys.executable).parent / 'memoryd'} serve" in out
    assert "sandbox:  system-call filters only" in out  # same mount namespace as ours
    calls(managers)
    assert service(capsys, "stop")[0] == 0
    assert ["systemctl", "--user", "stop", "memoryd.service"] in calls(managers)
    code, out, _ = service(capsys, "status")
    assert code == 1 and "running:  no (inactive, dead)" in out
    assert service(capsys, "start")[0] == 0
    assert ["systemctl", "--user", "start", "memoryd.service"] in calls(managers)
    calls(managers)
    assert main(["service", "logs", "-n", "5"]) == 0
    assert main(["service", "logs", "--follow"]) == 0
    assert calls(managers) == [
        ["journalctl", "--user", "-u", "memoryd.service", "-n", "5", "--no-pager"],
        ["journalctl", "--user", "-u", "memoryd.service", "-n", "50", "--no-pager", "-f"]]


def test_status_says_when_the_installed_unit_is_stale(managers: Path, home: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A unit an older memoryd wrote keeps its settings until a reinstall: the file-system
    sandbox of before N3 kept breaking memoryd's edits. Status names what would change."""
    assert service(capsys, "install")[0] == 0
    unit = home / ".config" / "systemd" / "user" / "memoryd.service"
    old = unit.read_text().replace("[Install]", "ProtectSystem=strict\nReadWritePaths=-/x\n\n"
                                   "[Install]")
    unit.write_text(old)
    _, out, _ = service(capsys, "status")
    [line] = [line for line in out.splitlines() if line.startswith("unit:")]
    assert "stale: `memoryd service install` would write it differently: " \
        "-ProtectSystem=strict, -ReadWritePaths=-/x; run it to update it" in line
    assert service(capsys, "install")[0] == 0
    assert "(as `memoryd service install` writes it)" in service(capsys, "status")[1]


def test_logs_without_a_unit_say_where_the_logs_are(managers: Path, home: Path,
                                                    memoryd_home: Path, embedder,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """L-m of the newcomer report: `service logs` with nothing installed printed the
    journal's "No entries" and exited 0, not saying that the daemon logs to its stderr."""
    for manager in ("systemd", "launchd"):
        code, out, err = service(capsys, "--manager", manager, "logs")
        assert code == 1 and "not installed" in err, (out, err)
        assert "no memoryd answers; one you start with `memoryd serve` logs to its standard " \
            "error" in err
    assert [c for c in calls(managers) if c[0] in ("journalctl", "tail")] == []
    running = start_daemon(embedder)
    try:
        code, _, err = service(capsys, "logs")
        assert code == 1 and f"memoryd (pid {os.getpid()}) answers and logs to standard " \
            f"error of the memoryd process (pid {os.getpid()})" in err
    finally:
        running.stop()


def test_status_with_nothing_installed_says_not_enabled(
        managers: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """F-8 (2026-11-30): launchd's status with nothing installed said "not installed" and then
    "enabled: yes, not loaded"; systemd's said "enabled: no (no)"."""
    for manager in ("systemd", "launchd"):
        code, out, _ = service(capsys, "--manager", manager, "status")
        assert code == 1 and "(not installed: `memoryd service install`)" in out, out
        assert "enabled:  no (not installed)\n" in out, out


def test_a_unit_install_did_not_write_is_left_alone(managers: Path, home: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    unit = home / ".config" / "systemd" / "user" / "memoryd.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/opt/memoryd serve\n")
    for action in ("install", "uninstall"):
        code, _, err = service(capsys, action)
        assert code == 1 and "was not written by `memoryd service install`" in err
    assert unit.read_text() == "[Service]\nExecStart=/opt/memoryd serve\n"
    assert calls(managers) == []


def test_launchd_install_twice_changes_nothing_and_uninstall_removes_it(
        managers: Path, home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    capsys = capfd  # `logs` runs tail, which writes to the file descriptor
    (home / "Library" / "LaunchAgents").mkdir(parents=True)
    (home / "Library" / "Logs").mkdir()
    before = tree(home)
    plist = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    logs = home / "Library" / "Logs" / "memoryd"
    target = f"gui/{os.getuid()}/{LABEL}"
    code, out, _ = service(capsys, "--manager", "launchd", "install")
    assert code == 0 and f"wrote {plist}" in out and "loaded dev.memoryd.agent" in out
    assert calls(managers) == [["launchctl", "print", target], ["launchctl", "enable", target],
                               ["launchctl", "bootstrap", f"gui/{os.getuid()}", str(plist)]]
    assert logs.is_dir()  # launchd does not create StandardErrorPath's directory
    assert Path(plistlib.loads(plist.read_bytes())["StandardErrorPath"]).parent == logs

    code, out, _ = service(capsys, "--manager", "launchd", "install")
    assert code == 0 and "nothing changed" in out
    assert calls(managers) == [["launchctl", "print", target]]

    code, out, _ = service(capsys, "--manager", "launchd", "status")
    assert code == 0 and "running:  yes (pid 4343" in out and f"{logs}/memoryd.log" in out
    calls(managers)
    assert service(capsys, "--manager", "launchd", "stop")[0] == 0
    assert service(capsys, "--manager", "launchd", "start")[0] == 0
    assert [c[:2] for c in calls(managers) if c[1] in ("kill", "kickstart")] == [
        ["launchctl", "kill"], ["launchctl", "kickstart"]]
    (logs / "memoryd.log").write_text("INFO memoryd: one\nINFO memoryd: two\n")
    code, out, _ = service(capsys, "--manager", "launchd", "logs", "-n", "1")
    assert code == 0 and out == "INFO memoryd: two\n"
    code, out, _ = service(capsys, "--manager", "launchd", "uninstall")
    assert code == 0 and f"removed {plist}" in out and f"kept the logs in {logs}" in out
    assert ["launchctl", "bootout", target] in calls(managers)
    (logs / "memoryd.log").unlink()
    logs.rmdir()
    assert tree(home) == before

    code, out, _ = service(capsys, "--manager", "launchd", "uninstall")
    assert code == 0 and "nothing to do" in out and calls(managers) == []


def test_launchd_refusing_the_agent_is_a_failure_with_the_way_out(
        managers: Path, home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LAUNCHD_FAIL", "1")
    code, out, err = service(capsys, "--manager", "launchd", "install")
    assert code == 1 and "serve" in out
    assert "launchctl bootstrap" in err and "Input/output error" in err


def test_service_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["service"]) == 2
    assert main(["service", "restart"]) == 2
    assert main(["service", "logs", "-n", "0"]) == 2
    assert main(["service", "--manager", "runit", "status"]) == 2


# -- the daemon under a service manager -------------------------------------------------


def caught_signals(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigCgt")


def receive(sock: socket.socket, timeout_s: float = 30) -> str:
    sock.settimeout(timeout_s)
    return sock.recv(4096).decode()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/status")
def test_ready_follows_the_signal_handlers_and_a_sighup_right_after_it_reloads(
        memoryd_home: Path) -> None:
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(memoryd_home / "notify"))
    # Fill the socket's queue: the daemon's first datagram, READY=1, then blocks until we read.
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    filler.connect(str(memoryd_home / "notify"))
    filler.setblocking(False)
    queued = 0
    while True:
        try:
            filler.send(b"filler")
            queued += 1
        except BlockingIOError:
            break
    env = {**os.environ, "NOTIFY_SOCKET": str(memoryd_home / "notify"), "WATCHDOG_USEC": "400000"}
    log = memoryd_home / "daemon.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env,
                                stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        # While READY=1 cannot be delivered, SIGTERM (and SIGHUP) must already be handled.
        term, hup = 1 << (signal.SIGTERM - 1), 1 << (signal.SIGHUP - 1)
        wait_until(lambda: proc.poll() is None and caught_signals(proc.pid) & term, timeout_s=60)
        assert caught_signals(proc.pid) & hup
        proc.send_signal(signal.SIGHUP)  # before READY: reloads once started
        assert [receive(notify) for _ in range(queued)] == ["filler"] * queued
        ready = receive(notify)
        assert ready.startswith("READY=1\nSTATUS=serving on ")
        proc.send_signal(signal.SIGHUP)  # right after READY: a reload, not a death
        messages: list[str] = []
        while sum(m.startswith("READY=1") for m in messages) < 2:
            messages.append(receive(notify, timeout_s=30))
        reloads = [m.split("\n")[0] for m in messages if m != "WATCHDOG=1"]
        assert sorted(reloads) == ["READY=1", "READY=1", "RELOADING=1", "RELOADING=1"]
        assert all(m.split("\n")[1].startswith("MONOTONIC_USEC=")
                   for m in messages if m.startswith("RELOADING=1"))
        assert proc.poll() is None
        wait_until(lambda: log.read_text().count("Configuration reloaded") == 2)
        started = time.monotonic()
        pings = 0
        while time.monotonic() - started < 1.0:
            pings += receive(notify, timeout_s=5) == "WATCHDOG=1"
        assert pings >= 3  # every 0.2 s
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()
        assert "STOPPING=1" in pending(notify)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()
        filler.close()


def listen(memoryd_home: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> socket.socket:
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(memoryd_home / "notify"))
    monkeypatch.setenv("NOTIFY_SOCKET", str(memoryd_home / "notify"))
    for name in ("WATCHDOG_USEC", "WATCHDOG_PID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return notify


def pending(notify: socket.socket) -> list[str]:
    """What is already queued."""
    notify.setblocking(False)
    got = []
    while True:
        try:
            got.append(notify.recv(4096).decode())
        except BlockingIOError:
            return got


def quiet_for(notify: socket.socket, seconds: float) -> list[str]:
    """What arrives within ``seconds``."""
    notify.settimeout(0.05)
    got, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            got.append(notify.recv(4096).decode())
        except TimeoutError:
            pass
    return got


@pytest.mark.parametrize("env", [{}, {"WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"}],
                         ids=["no WatchdogSec", "watchdog of another process"])
def test_no_watchdog_pings_unless_asked(embedder, memoryd_home: Path,
                                        monkeypatch: pytest.MonkeyPatch, env: dict) -> None:
    notify = listen(memoryd_home, monkeypatch, **env)
    running = start_daemon(embedder, wait_for_model=False)
    try:
        assert receive(notify).startswith("READY=1")
        assert quiet_for(notify, 0.5) == []
    finally:
        running.stop()
        notify.close()


def test_watchdog_pings_come_from_the_event_loop(embedder, memoryd_home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    notify = listen(memoryd_home, monkeypatch, WATCHDOG_USEC="100000")  # a ping every 50 ms
    running = start_daemon(embedder, wait_for_model=False)
    try:
        assert receive(notify).startswith("READY=1")
        assert quiet_for(notify, 0.3).count("WATCHDOG=1") >= 4
        wedged = threading.Event()

        def wedge() -> None:
            wedged.set()
            time.sleep(0.6)

        running.loop.call_soon_threadsafe(wedge)  # a wedged loop …
        assert wedged.wait(5)
        pending(notify)  # what was sent before it
        assert quiet_for(notify, 0.4) == []  # … sends nothing, so systemd restarts it
        assert "WATCHDOG=1" in quiet_for(notify, 0.4)
    finally:
        running.stop()
        notify.close()
