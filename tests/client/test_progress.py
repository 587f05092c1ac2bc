"""Long requests and the client's timeout (N7, R10): a request that can take long asks for
progress frames; the client waits as long as they come, shows them on a terminal, and still
times out (exit 3) when the daemon stops answering.

The work is made long by real work only: a large import is embedded and stored."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from memoryd_client import Client, wire

from tests.conftest import RunningDaemon, run_cli, run_memoryd, spawn_daemon, stop_process


def _import_file(path: Path, n: int, tag: str, words_each: int = 48) -> Path:
    """n entries of distinct words, long enough that embedding them takes seconds."""
    with path.open("w") as out:
        for i in range(n):
            words = " ".join(f"{tag}{i * 53 + j}q" for j in range(words_each))
            out.write(json.dumps({"agent": "importer", "category": "notes",
                                  "text": f"imported note {i}: {words}"}) + "\n")
    return path


def test_an_import_longer_than_the_timeout_completes_while_progress_flows(
        memoryd_home: Path, daemon: RunningDaemon) -> None:
    """60 entries (one batch, embedded for seconds) with --timeout 1: before,
    `memory import` exited 3 ("did not answer 'remember_many' within 1 s") while the daemon
    carried on; now every entry is stored and the command exits 0."""
    source = _import_file(memoryd_home / "import.jsonl", 60, "w")
    started = time.monotonic()
    done = run_cli("import", str(source), "--timeout", "1", timeout=100)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "stored 60, already there 0" in done.stdout
    assert elapsed > 1  # it did outlast the timeout: the frames kept it going
    assert "\r" not in done.stderr  # no progress line into a pipe
    listed = run_cli("--json", "list", "importer", "--limit", "1")
    assert json.loads(listed.stdout)["total"] == 60


@pytest.mark.slow  # ~11 s: a daemon process of its own, stopped, and the client's timeout
def test_a_daemon_that_stops_answering_still_times_out_with_exit_3(memoryd_home: Path) -> None:
    """SIGSTOP the daemon mid-import: no frame comes, so the client gives up after --timeout
    (exit 3) and says that running the import again is safe."""
    proc = spawn_daemon(memoryd_home)
    try:
        source = _import_file(memoryd_home / "import.jsonl", 100, "s")
        cli = subprocess.Popen([sys.executable, "-m", "memoryd_client", "import", str(source),
                                "--timeout", "2"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        time.sleep(1)  # the batch is being embedded
        assert cli.poll() is None, cli.communicate()
        os.kill(proc.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            out, err = cli.communicate(timeout=60)
            waited = time.monotonic() - stopped
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert cli.returncode == 3, (out, err)
        assert waited < 2 + 10
        assert "sent nothing for 2 s while answering 'remember_many'" in err
        assert f"running `memory import {source}` again is safe" in err
    finally:
        assert stop_process(proc) == 0


def _on_terminal(*args: str, columns: int = 0,
                 program: str = "memoryd_client") -> tuple[int, str]:
    """The `memory` command (or another ``program``) with stderr on a pseudo-terminal
    ``columns`` wide (0: a terminal that does not say): its exit code and what the terminal
    showed."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", program, *args],
                            stdout=subprocess.DEVNULL, stderr=side, text=True)
    os.close(side)
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the command ended: its side of the terminal closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return proc.wait(timeout=60), shown.decode("utf-8", "replace")


def test_progress_shows_on_a_terminal_as_one_line_and_never_under_json(
        memoryd_home: Path, daemon: RunningDaemon) -> None:
    source = _import_file(memoryd_home / "import.jsonl", 60, "t")
    code, shown = _on_terminal("import", str(source))
    assert code == 0
    assert f"\rimporting {source}: embedding and storing entries" in shown
    assert "/60 (" in shown
    assert "\n" not in shown.strip()  # one line, written over, then taken away
    again = _import_file(memoryd_home / "again.jsonl", 30, "j")  # past the line's 1 s too
    code, shown = _on_terminal("--json", "import", str(again))
    assert code == 0
    assert shown.strip() == ""


#: A bar with an estimate on a line written over: "[#####-----] 256/520 (49%) ~9 s left".
BAR = re.compile(r"\[#*-*\] [\d,]+/[\d,]+ \(\d+%\) ~\d+ (s|min) left")


@pytest.mark.slow  # ~25 s of embedding on a quiet machine: run with -m slow
def test_an_import_on_a_terminal_shows_a_bar_with_the_time_left_within_its_width(
        memoryd_home: Path) -> None:
    """Issue 39: a long operation shows a progress bar with an estimate of the time left, on
    one line no wider than the terminal (a line that wraps is not written over)."""
    proc = spawn_daemon(memoryd_home)
    try:
        # the daemon reports every 256 entries stored: 400 give an estimate before the end
        source = _import_file(memoryd_home / "import.jsonl", 400, "e", words_each=16)
        code, shown = _on_terminal("import", str(source), columns=150)
        assert code == 0
        lines = shown.split("\r")
        assert any(BAR.search(line) for line in lines), shown[-2000:]
        assert max(len(line.rstrip()) for line in lines) < 150
        assert lines[-1].strip() == ""  # taken away at the end
        narrow_source = _import_file(memoryd_home / "narrow.jsonl", 150, "n")
        code, shown = _on_terminal("import", str(narrow_source), columns=60)
        assert code == 0
        assert max(len(line.rstrip()) for line in shown.split("\r")) < 60
        assert "/150 (" in shown  # the numbers stay when the bar does not fit
    finally:
        assert stop_process(proc) == 0


@pytest.mark.slow  # ~20 s of embedding on a quiet machine: run with -m slow
def test_a_reindex_on_a_terminal_shows_its_phases_with_a_bar_and_none_into_a_pipe(
        memoryd_home: Path) -> None:
    """`memoryd reindex` (the daemon stopped) shows how far the replay of the ledgers and the
    embedding are; into a pipe its stderr has no carriage return."""
    proc = spawn_daemon(memoryd_home)
    try:
        source = _import_file(memoryd_home / "import.jsonl", 300, "r", words_each=16)
        assert run_cli("import", str(source), timeout=300).returncode == 0
    finally:
        assert stop_process(proc) == 0
    code, shown = _on_terminal("reindex", columns=120, program="memoryd")
    assert code == 0, shown
    assert "\rreindexing: replaying the ledgers [" in shown
    assert re.search(r"\rreindexing: embedding entries \[#*-*\] [\d,]+/300 \(", shown), shown
    assert "reindexed 300 entries" not in shown  # stdout, not the terminal's stderr
    piped = run_memoryd("reindex", timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert "reindexed 300 entries" in piped.stdout
    assert "\r" not in piped.stderr


def _frames(sock: socket.socket) -> list[dict[str, object]]:
    """Every frame up to the reply."""
    frames = []
    while True:
        header = b""
        while len(header) < 4:
            header += sock.recv(4 - len(header))
        length, body = wire.frame_length(header), b""
        while len(body) < length:
            body += sock.recv(length - len(body))
        frames.append(wire.unpack(body))
        if "result" in frames[-1] or "error" in frames[-1]:
            return frames


def test_the_library_reports_progress_and_a_request_without_the_flag_gets_its_reply_alone(
        memoryd_home: Path, daemon: RunningDaemon) -> None:
    """Short batches: a request that asked for progress ends with a frame however short it
    was. (That the client waits past its timeout while frames come is the first test's:
    `memory import` reads its frames through this same client.)"""
    seen: list[dict[str, object]] = []
    entries = [{**json.loads(line), "force": True} for line in _import_file(
        memoryd_home / "a.jsonl", 60, "a", words_each=8).read_text().splitlines()]
    with Client(daemon.socket, timeout_s=1, progress=seen.append) as c:
        reply = c.remember_many(entries)
    assert all(r["stored"] for r in reply["results"])
    assert seen and all(f["method"] == "remember_many" and f["total"] == 60 for f in seen)
    assert 0 <= min(f["done"] for f in seen) <= max(f["done"] for f in seen) <= 60
    # the protocol: progress frames only when asked for, with the request's id
    more = [json.loads(line) for line in _import_file(
        memoryd_home / "b.jsonl", 40, "b", words_each=8).read_text().splitlines()]
    for flag, batch in ((False, more[:20]), (True, more[20:])):
        with socket.socket(socket.AF_UNIX) as raw:
            raw.connect(str(daemon.socket))
            request = {"id": 7, "method": "remember_many", "params": {"entries": batch}}
            raw.sendall(wire.pack({**request, "progress": True} if flag else request))
            frames = _frames(raw)
        assert all(f["id"] == 7 for f in frames)
        assert len(frames[-1]["result"]["results"]) == len(batch)  # type: ignore[index]
        if flag:
            assert len(frames) > 1 and all("progress" in f for f in frames[:-1])
        else:
            assert len(frames) == 1
