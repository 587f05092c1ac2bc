"""After an upgrade the installed client is new at once (the agents' hooks run it), while a
daemon started before keeps its code until it is restarted. The older daemon here is one
honestly: memoryd run, in a process of its own, from a copy of this checkout whose wire is as it
was before the hook took ``cwd`` (2026-11-30) and before revisions were reported; it refuses a
hook's ``cwd`` with the words every older daemon refused it with."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from memoryd_client import Client, wire

from tests.conftest import run_cli, run_hook, spawn_daemon, stop_process

ROOT = Path(__file__).resolve().parents[2]
SESSION = "0ld-da3m0n-5e55-10n"
TODAY = '"hook": frozenset({"harness", "event", "raw", "payload", "ts", "cwd"}),'


@pytest.fixture(scope="module")
def older_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of memoryd and its client, whose wire takes no ``cwd`` in a hook and has no
    revision to report (the model left out: the daemon runs keyword-only)."""
    root = tmp_path_factory.mktemp("older")
    skip = shutil.ignore_patterns("__pycache__", "model.onnx")
    shutil.copytree(ROOT / "memoryd", root / "memoryd", ignore=skip)
    shutil.copytree(ROOT / "client" / "memoryd_client", root / "client" / "memoryd_client",
                    ignore=skip)
    copied = root / "client" / "memoryd_client" / "wire.py"
    text = copied.read_text()
    assert TODAY in text
    copied.write_text(text.replace(TODAY, TODAY.replace(', "cwd"', ""))
                      .replace("REVISION = ", "REVISION = 0  # "))
    return root


@pytest.fixture
def older_daemon(older_code: Path, memoryd_home: Path) -> Iterator[subprocess.Popen[str]]:
    proc = spawn_daemon(memoryd_home, model=False, env={
        "PYTHONPATH": f"{older_code}{os.pathsep}{older_code / 'client'}"})
    yield proc
    stop_process(proc)


def test_a_hook_of_the_upgraded_client_still_reaches_a_daemon_not_restarted(
        older_daemon, memoryd_home, tmp_path) -> None:
    """It was refused, dropped and said nowhere the agent shows (rc 0, stderr only): the
    session never appeared and the agent had no block."""
    with Client(memoryd_home / "memoryd.sock") as client:
        client.remember("claude-code", "git", "Never force-push to main", kind="lesson",
                        polarity="negative")
    started = run_hook("claude-code", "SessionStart", {
        "session_id": SESSION, "cwd": str(tmp_path), "transcript_path": str(tmp_path / "t.jsonl"),
        "hook_event_name": "SessionStart", "source": "startup"})
    assert started.returncode == 0
    context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Never force-push to main" in context
    assert "memoryd runs older code than this hook" in started.stderr, started.stderr
    sessions = run_cli("sessions")
    assert sessions.returncode == 0 and SESSION in sessions.stdout, sessions.stderr
    assert not (memoryd_home / "spool.msgpack").exists()  # taken: nothing to replay twice


def test_status_and_doctor_say_the_daemon_runs_older_code_and_how_to_restart_it(
        older_code, older_daemon, memoryd_home) -> None:
    older = (f"memoryd runs older code than the installed client (wire revision none against "
             f"the client's {wire.REVISION}; it refuses what it does not know, hook events "
             f"included): restart it (stop the memoryd that runs (pid {older_daemon.pid}) and "
             "start `memoryd serve` again)")
    status = run_cli("status")
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[0].startswith(f"problem: version: {older} (and "), \
        status.stdout  # a problem: the model is left out
    doctor = run_cli("--json", "doctor")
    [version] = [c for c in json.loads(doctor.stdout)["checks"] if c["check"] == "version"]
    assert version["status"] == "warning" and version["detail"] == older
    # the daemon's own check: its code on disk changed since it started (an upgrade); doctor
    # looks at once, status (which may be asked every few ms) every 10 s at most, and says
    # what doctor found
    upgraded = older_code / "memoryd" / "server" / "daemon.py"
    upgraded.write_text(upgraded.read_text() + "\n# upgraded\n")
    [code] = [c for c in json.loads(run_cli("--json", "doctor").stdout)["checks"]
              if c["check"] == "code"]
    assert code["status"] == "warning" and code["detail"].startswith(
        f"memoryd runs older code than the installed one: {upgraded} changed at ")
    assert code["detail"].endswith(f"restart it (stop this memoryd (pid {older_daemon.pid}) "
                                   "and start `memoryd serve` again)")
    status = json.loads(run_cli("--json", "status").stdout)
    assert code in status["health"]["checks"]


def test_a_daemon_of_this_code_says_its_revision_and_nothing_older(client) -> None:
    status = client.status()
    assert status["revision"] == wire.REVISION
    assert [c for c in status["health"]["checks"] if c["check"] in ("code", "version")] == []
    line = run_cli("status").stdout.splitlines()[0]
    assert "older code" not in line, line
