"""Long requests and the client's timeout (N7, R10): a request that can take long asks for
progress frames; the client waits as long as they come, shows them on a terminal, and still
times out (exit 3) when the daemon stops answering.

The work is made long by real work only: a large import is embedded and stored."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from conftest import run_cli, spawn_daemon, stop_process
from memoryd_client import Client, wire


def _import_file(path: Path, n: int, tag: str) -> Path:
    """n entries of distinct words, long enough that embedding each takes ~50 ms of a core
    (60 of them outlast a timeout of 1 s a few times over)."""
    with path.open("w") as out:
        for i in range(n):
            words = " ".join(f"{tag}{i * 53 + j}q" for j in range(48))
            out.write(json.dumps({"agent": "importer", "category": "notes",
                                  "text": f"imported note {i}: {words}"}) + "\n")
    return path


def test_an_import_longer_than_the_timeout_completes_while_progress_flows(
        memoryd_home: Path) -> None:
    """60 entries (one batch, embedded for seconds) with --timeout 1: before,
    `memory import` exited 3 ("did not answer 'remember_many' within 1 s") while the daemon
    carried on; now every entry is stored and the command exits 0."""
    proc = spawn_daemon(memoryd_home)
    try:
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
    finally:
        assert stop_process(proc) == 0


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


def _on_terminal(*args: str) -> tuple[int, str]:
    """The `memory` command with stderr on a pseudo-terminal: its exit code and what the
    terminal showed."""
    main, side = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "memoryd_client", *args],
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
        memoryd_home: Path) -> None:
    proc = spawn_daemon(memoryd_home)
    try:
        source = _import_file(memoryd_home / "import.jsonl", 60, "t")
        code, shown = _on_terminal("import", str(source))
        assert code == 0
        assert f"\rimporting {source}: embedding and storing entries" in shown
        assert "/60 (" in shown
        assert "\n" not in shown.strip()  # one line, written over, then taken away
        again = _import_file(memoryd_home / "again.jsonl", 30, "j")
        code, shown = _on_terminal("--json", "import", str(again))
        assert code == 0
        assert shown.strip() == ""
    finally:
        assert stop_process(proc) == 0


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
        memoryd_home: Path) -> None:
    proc = spawn_daemon(memoryd_home)
    try:
        seen: list[dict[str, object]] = []
        entries = [{**json.loads(line), "force": True} for line in
                   _import_file(memoryd_home / "a.jsonl", 60, "a").read_text().splitlines()]
        with Client(memoryd_home / "memoryd.sock", timeout_s=1, progress=seen.append) as c:
            reply = c.remember_many(entries)
        assert all(r["stored"] for r in reply["results"])
        assert seen and all(f["method"] == "remember_many" and f["total"] == 60 for f in seen)
        assert 0 <= min(f["done"] for f in seen) <= max(f["done"] for f in seen) <= 60
        # the protocol: progress frames only when asked for, with the request's id
        more = [json.loads(line) for line in
                _import_file(memoryd_home / "b.jsonl", 100, "b").read_text().splitlines()]
        for flag, batch in ((False, more[:40]), (True, more[40:])):
            with socket.socket(socket.AF_UNIX) as raw:
                raw.connect(str(memoryd_home / "memoryd.sock"))
                request = {"id": 7, "method": "remember_many", "params": {"entries": batch}}
                raw.sendall(wire.pack({**request, "progress": True} if flag else request))
                frames = _frames(raw)
            assert all(f["id"] == 7 for f in frames)
            assert len(frames[-1]["result"]["results"]) == len(batch)  # type: ignore[index]
            if flag:
                assert len(frames) > 1 and all("progress" in f for f in frames[:-1])
            else:
                assert len(frames) == 1
    finally:
        assert stop_process(proc) == 0
