"""`memory status --watch` (issue 39): a live view drawn over in place on a terminal that
Ctrl-C ends with exit 0 and the terminal as it was; plain lines into a pipe; a daemon that
goes away and comes back does not end it. A real daemon, the real command in a process, a
pseudo-terminal for the terminal."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.conftest import RunningDaemon, spawn_daemon, stop_process

ENTER, LEAVE, HOME = "\x1b[?1049h\x1b[?25l", "\x1b[?25h\x1b[?1049l", "\x1b[H"


@pytest.fixture(autouse=True)
def ctrl_c_reaches_the_watch() -> Iterator[None]:
    """A shell starts its background jobs with SIGINT ignored, and their children inherit
    that, as they should (Ctrl-C is for the foreground job): the watch, started by a suite run
    in the background, would ignore these tests' Ctrl-C. So the test process lets SIGINT
    through while they run, and the watch it starts gets Ctrl-C as a terminal's would."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _size(fd: int, rows: int, columns: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


def _read(fd: int, seconds: float, until: str | Callable[[str], bool] | None = None) -> str:
    """What the terminal shows for ``seconds`` (or until ``until`` appears, or holds of what
    was shown)."""
    shown = b""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the command ended
                break
            if not chunk:
                break
            shown += chunk
            text = shown.decode("utf-8", "replace")
            if isinstance(until, str) and until in text or callable(until) and until(text):
                break
    return shown.decode("utf-8", "replace")


def _views(shown: str) -> list[list[str]]:
    """Each drawing of the view, as the lines it wrote (escape sequences taken out)."""
    plain = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
    return [[plain.sub("", line).rstrip("\r") for line in view.split("\n") if plain.sub("", line)
             .strip("\r")] for view in shown.split(HOME)[1:]]


def _whole(view: list[str]) -> bool:
    """Whether a drawing was shown to its end: the line under "last errors" too."""
    ends = [number for number, line in enumerate(view) if line.startswith("last errors")]
    return bool(ends) and ends[-1] < len(view) - 1


def test_on_a_terminal_it_redraws_in_place_follows_a_resize_and_ctrl_c_restores_it(
        daemon: RunningDaemon) -> None:
    leader, follower = pty.openpty()
    _size(follower, 30, 100)
    before = termios.tcgetattr(follower)
    watch = subprocess.Popen([sys.executable, "-m", "memoryd_client", "status", "--watch",
                              "--interval", "0.3"], stdin=follower, stdout=follower,
                             stderr=follower)
    try:
        shown = _read(leader, 30, until="last errors")
        shown += _read(leader, 1.5, until=lambda more: len(drawn := _views(shown + more)) >= 4
                       and _whole(drawn[-1]))
        views = _views(shown)
        assert shown.startswith(ENTER)  # the alternate screen, the cursor hidden
        assert len(views) >= 3, shown  # drawn over again and again, not scrolled
        assert all(view[0].startswith("memoryd ") and "Ctrl-C to quit" in view[0]
                   for view in views[1:])
        last = views[-1]
        assert last[1].startswith("healthy")
        for label in ("indexing", "embedding", "queue", "passes", "entries", "last errors"):
            assert any(line.startswith(label) for line in last), (label, last)
        assert max(len(line) for view in views for line in view) < 100
        # a narrower terminal: the next drawing fits it at once, without waiting for a look
        _size(follower, 30, 50)
        watch.send_signal(signal.SIGWINCH)
        narrow = _views(_read(leader, 1.0, until=lambda more: any(
            _whole(view) and max(len(line) for line in view) < 50 for view in _views(more))))
        assert narrow and max(len(line) for line in narrow[-1]) < 50
        watch.send_signal(signal.SIGINT)  # Ctrl-C
        rest = _read(leader, 10, until=LEAVE)
        assert watch.wait(timeout=10) == 0
        rest += _read(leader, 0.2)  # and whatever it wrote after, before it ended
        assert rest.endswith(LEAVE), repr(rest[-80:])  # the cursor and the screen given back
        assert "Traceback" not in shown + rest
        assert termios.tcgetattr(follower) == before
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
        os.close(leader)
        os.close(follower)


def _lines(stream: IO[str], count: int, seconds: float) -> list[str]:
    """The first ``count`` lines written to ``stream`` (fewer if ``seconds`` pass first)."""
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    while len(lines) < count and (left := deadline - time.monotonic()) > 0:
        if select.select([stream], [], [], left)[0]:
            line = stream.readline()
            if not line:
                break
            lines.append(line)
    return lines


def test_into_a_pipe_it_prints_one_plain_line_a_look(daemon: RunningDaemon) -> None:
    watch = subprocess.Popen([sys.executable, "-m", "memoryd_client", "status", "--watch",
                              "--interval", "0.3"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert watch.stdout is not None
    first = _lines(watch.stdout, 3, 30)
    watch.send_signal(signal.SIGINT)
    out, err = watch.communicate(timeout=10)
    assert watch.returncode == 0, err
    out = "".join(first) + out
    lines = out.splitlines()
    assert len(lines) >= 3
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d healthy · up to date", line)
               for line in lines), lines
    assert "\x1b" not in out + err and "\r" not in out


def test_a_daemon_that_goes_away_is_waited_for_and_picked_up_again(memoryd_home: Path) -> None:
    """The choice documented in docs/commands.md: a watch outlives the daemon it watches (a
    restart, a crash); it says since when there is no answer and why, and carries on."""
    first = spawn_daemon(memoryd_home)
    watch = subprocess.Popen([sys.executable, "-m", "memoryd_client", "status", "--watch",
                              "--json", "--interval", "0.3"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert watch.stdout is not None
    second = None
    try:
        assert json.loads(watch.stdout.readline())["pid"] == first.pid
        assert stop_process(first) == 0
        while "error" not in (gone := json.loads(watch.stdout.readline())):
            pass
        assert gone["error"]["code"] == "unreachable"
        assert "not running on" in gone["error"]["message"]
        time.sleep(1)
        assert watch.poll() is None  # still watching
        second = spawn_daemon(memoryd_home)
        while "error" in (back := json.loads(watch.stdout.readline())):
            pass
        assert back["pid"] == second.pid
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=10) == 0
    finally:
        if watch.poll() is None:
            watch.kill()
        watch.communicate()
        if second is not None:
            assert stop_process(second) == 0


def test_a_bad_interval_is_a_usage_error(memoryd_home: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "memoryd_client", "status", "--watch",
                           "--interval", "0"], capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 2
    assert "--interval must be 0.2 s or more" in done.stderr
