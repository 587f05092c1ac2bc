"""`memoryd service`: the daemon's side of the notify protocol (READY after the signal handlers,
RELOADING/READY around SIGHUP, WATCHDOG from the event loop, STOPPING) with a real datagram
socket as NOTIFY_SOCKET."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import start_daemon, wait_until


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
