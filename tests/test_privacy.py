"""Nothing leaves the machine: the daemon opens no socket but Unix ones, from startup through
model load, indexing and search (onnxruntime's telemetry is on by default in its official
builds; memoryd turns it off before importing it)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import wait_until

STRACE = shutil.which("strace")
TELEMETRY_WINDOW_S = 12.0


def strace_works() -> str | None:
    """None when strace can trace a child here, else why not."""
    if STRACE is None:
        return "strace is not installed"
    probe = subprocess.run([STRACE, "-f", "-e", "trace=network", "-o", "/dev/null", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.strip()[:200]}"
    return None


def foreign_sockets(trace: str) -> list[str]:
    """Lines of an strace log that create or address a socket of any family but AF_UNIX."""
    bad = []
    for line in trace.splitlines():
        if re.search(r"\bsocket\((?!AF_UNIX)AF_\w+", line):
            bad.append(line)
        elif re.search(r"\b(connect|sendto|sendmsg|bind)\(.*sa_family=(?!AF_UNIX)AF_\w+", line):
            bad.append(line)
    return bad


def test_foreign_sockets_are_recognised() -> None:
    trace = (
        '7171  connect(18, {sa_family=AF_INET, sin_port=htons(53), '
        'sin_addr=inet_addr("10.255.255.53")}, 16) = 0\n'
        "7172  socket(AF_INET6, SOCK_DGRAM, IPPROTO_IP) = 17\n"
        "7173  socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0) = 5\n"
        '7173  connect(5, {sa_family=AF_UNIX, sun_path="/tmp/md/memoryd.sock"}, 110) = 0\n'
    )
    assert len(foreign_sockets(trace)) == 2


def test_daemon_opens_only_unix_sockets(memoryd_home: Path) -> None:
    reason = strace_works()
    if reason:
        pytest.skip(reason)
    home = Path(os.environ["HOME"])
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("- Deploys go out on Thursdays only.\n")
    log = memoryd_home / "strace.txt"
    daemon = subprocess.Popen(
        [STRACE, "-f", "-e", "trace=network", "-o", str(log),
         sys.executable, "-m", "memoryd", "serve"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        socket = memoryd_home / "memoryd.sock"
        wait_until(socket.exists, timeout_s=60)
        with Client(socket, timeout_s=60) as client:
            wait_until(lambda: client.status()["model"] is not None, timeout_s=60)
            loaded = time.monotonic()
            client.remember("coder", "tools", "We lint with ruff, not flake8")
            assert client.search("which linter", agent="coder")["hits"]
            wait_until(lambda: client.search("Thursdays", agent="claude-code")["hits"],
                       timeout_s=30)
            wait_until(lambda: client.status()["backlog"] == 0, timeout_s=30)
            # onnxruntime's telemetry first uploads ~9 s after the model loads (measured with
            # it on): stay up past that
            time.sleep(max(0.0, loaded + TELEMETRY_WINDOW_S - time.monotonic()))
    finally:
        # the daemon is strace's child: signal it, not strace (its pid is in the lock file)
        pid = (memoryd_home / "memoryd.lock").read_text().strip()
        os.kill(int(pid) if pid else daemon.pid, signal.SIGTERM)
        _, stderr = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, stderr.decode(errors="replace")[-2000:]
    trace = log.read_text(errors="replace")
    assert "AF_UNIX" in trace  # the trace did record the daemon's own socket
    assert foreign_sockets(trace) == []
    assert not (home / ".cache" / "Microsoft").exists()  # onnxruntime's telemetry state
