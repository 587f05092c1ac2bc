"""Shared fixtures: every test gets its own MEMORYD_HOME; the model loads once per session;
``daemon`` runs the real daemon in-process (its own event loop, in a thread) on a short socket
path, and ``client`` talks to it over the socket."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from memoryd_client import Client, DaemonUnreachableError

from memoryd.config import load_config
from memoryd.embedding.model import Embedder
from memoryd.server.daemon import Daemon, run_daemon
from memoryd.settings import Config

# The daemons and commands the tests start are Python processes that import memoryd from this
# checkout: where writing bytecode is turned off (PYTHONDONTWRITEBYTECODE), every one compiled
# the whole daemon again (~0.4 s a start, ~90 starts a run). Their bytecode goes to a cache of
# the tests' own instead, outside the checkout.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    os.environ.setdefault("PYTHONPYCACHEPREFIX",
                          str(Path(tempfile.gettempdir()) / f"memoryd-tests-pycache-{os.getuid()}"))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores. The tests spend a good part of their time
    waiting on daemons, commands and the disk; a third worker on two cores took the suite
    from 288 s to 248 s (a fourth gained nothing more)."""
    return len(os.sched_getaffinity(0)) + 1


#: The test files that take longest (test time, `--durations=0`, 2026-11-30): run first. The
#: workers take whole files (`--dist loadfile`), in collection order; one of these collected
#: last (tests/sync comes late in the alphabet) kept one worker busy for a minute after the
#: others had finished.
LONGEST_FIRST = ("tests/passes/test_passes.py", "tests/sync/test_sync.py",
                 "tests/server/test_availability.py", "tests/test_lifecycle.py",
                 "tests/sessions/test_import_history.py", "tests/client/test_viewer.py",
                 "tests/store/test_durability.py", "tests/client/test_install.py",
                 "tests/client/test_progress.py", "tests/client/test_mcp.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, the rest in their order (a file's tests stay together)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(autouse=True)
def memoryd_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private state dir (AF_UNIX paths are limited to ~104 bytes), and the working
    directory of the test."""
    home = private_home(monkeypatch)
    yield home
    shutil.rmtree(home, ignore_errors=True)


def private_home(monkeypatch: pytest.MonkeyPatch) -> Path:
    home = Path(tempfile.mkdtemp(prefix="md-", dir="/tmp"))
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    (home / "user").mkdir()
    monkeypatch.setenv("HOME", str(home / "user"))  # default sources look under ~: a fake home
    monkeypatch.delenv("MEMORYD_SOCKET", raising=False)
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR",
                 "COPILOT_HOME", "CLINE_DIR", "XDG_CONFIG_HOME", "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
                 "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"):  # `hook install` writes there, the
        # sources look there
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("MEMORYD_") and name != "MEMORYD_HOME":
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMORYD_WATCH_RESCAN_INTERVAL_S", "0.2")  # notice new roots quickly
    # a notebook a test has just written is checked at once (a person's editor is done with
    # it; tests/passes/test_unsettled_notebooks.py has the pass wait as it does by default)
    monkeypatch.setenv("MEMORYD_PASSES_SETTLE_S", "0")
    # outside any git repository: what `memory store` and the library write is global unless
    # a test says where it works, wherever the tests are run from (a checkout or not)
    monkeypatch.chdir(home)
    return home


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The model, loaded once for the session: every daemon started in this process uses it."""
    return Embedder(load_config().embed)


@dataclass
class RunningDaemon:
    config: Config
    daemon: Daemon
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    errors: list[BaseException]

    @property
    def socket(self) -> Path:
        return self.config.socket_path

    def stop(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.daemon.should_exit.set)
            self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "daemon did not stop"


def start_daemon(embedder: Embedder | None, wait_for_model: bool = True) -> RunningDaemon:
    config = load_config()
    started = threading.Event()
    box: dict[str, object] = {}
    errors: list[BaseException] = []

    def ready(daemon: Daemon) -> None:
        box["daemon"] = daemon
        box["loop"] = asyncio.get_running_loop()
        started.set()

    def main() -> None:
        try:
            asyncio.run(run_daemon(config, ready=ready, embedder=embedder))
        except BaseException as exc:  # surfaced by the fixture
            errors.append(exc)
            started.set()

    thread = threading.Thread(target=main, name="memoryd-test", daemon=True)
    thread.start()
    assert started.wait(30), "daemon did not start"
    if errors:
        raise errors[0]
    running = RunningDaemon(config, box["daemon"], box["loop"], thread, errors)  # type: ignore[arg-type]
    if wait_for_model:
        wait_until(lambda: running.daemon.parts is not None and running.daemon.threads.ready is not None
                   and running.daemon.threads.ready.done()
                   and (running.daemon.threads.embedder is None
                        or running.daemon.parts.derived.index is not None))
    return running


def wait_until(condition, timeout_s: float = 30.0,  # type: ignore[no-untyped-def]
               every: float | None = None) -> None:
    """Ask ``condition`` until it holds: soon at first, then less often (most conditions ask
    the daemon, whose work is what is waited for: asking every 10 ms took a share of its
    CPU on two cores); ``every``: at that pace throughout (a test that keeps the daemon from
    being quiet by asking)."""
    deadline = time.monotonic() + timeout_s
    pause = every or 0.005
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(pause)
        pause = every or min(pause * 1.5, 0.1)


def serving(running: RunningDaemon) -> Iterator[RunningDaemon]:
    """A fixture's daemon: stopped after its test, which fails if the daemon raised."""
    yield running
    running.stop()
    assert not running.errors, running.errors


@pytest.fixture
def daemon(embedder: Embedder) -> Iterator[RunningDaemon]:
    yield from serving(start_daemon(embedder))


@pytest.fixture
def keyword_daemon(monkeypatch: pytest.MonkeyPatch, memoryd_home: Path
                   ) -> Iterator[RunningDaemon]:
    """A daemon without the model where it looks: keyword-only search, nothing embedded (a
    mode of the product, as when the model cannot load). For tests of what reads no vector,
    where embedding their thousand entries cost the suite seconds of CPU."""
    monkeypatch.setenv("MEMORYD_EMBED_MODEL", str(memoryd_home / "no-model"))
    yield from serving(start_daemon(None))


@pytest.fixture
def client(daemon: RunningDaemon) -> Iterator[Client]:
    with Client(daemon.socket, timeout_s=30) as c:
        yield c


@pytest.fixture(scope="module")
def shared_daemon(embedder: Embedder) -> Iterator[RunningDaemon]:
    """One daemon for the tests of a module that only read what it holds (a module fixture
    fills it): started once, in a state dir of its own. A test that writes, or runs `memory`
    (whose MEMORYD_HOME is the test's), takes ``daemon``."""
    with pytest.MonkeyPatch.context() as patch:
        home = private_home(patch)
        running = start_daemon(embedder)
    yield running
    running.stop()
    shutil.rmtree(home, ignore_errors=True)
    assert not running.errors, running.errors


def run_cli(*args: str, cwd: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real `memory` command, as a separate process."""
    return subprocess.run([sys.executable, "-m", "memoryd_client", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=os.environ.copy())


def run_hook(harness: str, event: str, payload: object, env: dict[str, str] | None = None,
             timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`memory hook HARNESS EVENT` as an agent runs it: ``payload`` (JSON, or a text as is)
    on stdin, in this environment (or ``env``)."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([sys.executable, "-m", "memoryd_client", "hook", harness, event],
                          input=data, capture_output=True, text=True, timeout=timeout,
                          env=env or os.environ.copy(), check=False)


def run_cli_from_script(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real `memory` command as a script or an agent's shell runs it: stdin is no
    terminal (whatever the terminal pytest runs in)."""
    return subprocess.run([sys.executable, "-m", "memoryd_client", *args], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy(),
                          stdin=subprocess.DEVNULL, check=False)


def run_cli_at_terminal(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real `memory` command as a person types it: its stdin is a terminal (a pty)."""
    leader, follower = os.openpty()
    try:
        return subprocess.run([sys.executable, "-m", "memoryd_client", *args], stdin=follower,
                              capture_output=True, text=True, timeout=timeout,
                              env=os.environ.copy(), check=False)
    finally:
        os.close(leader)
        os.close(follower)


def run_memoryd(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memoryd", *args], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())


def reindexed(embedder: Embedder | None) -> RunningDaemon:
    """``memoryd reindex --no-vectors`` (the index rebuilt from the files, the daemon
    stopped), then the daemon started on the rebuilt index."""
    done = run_memoryd("reindex", "--no-vectors")
    assert done.returncode == 0, done.stderr
    return start_daemon(embedder)


def spawn_daemon(home: Path, nofile: tuple[int, int] | None = None,
                 env: dict[str, str] | None = None, model: bool = True,
                 wrapper: list[str] | None = None) -> subprocess.Popen[str]:
    """`memoryd serve` as a process (optionally under an open-file limit, or started by the
    command ``wrapper``, which runs its arguments), once it answers with its vector index
    ready; without ``model``, keyword-only (no model where it looks), once it answers."""
    if not model:
        env = {**(env or {}), "MEMORYD_EMBED_MODEL": str(home / "no-model")}

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

    log = home / "daemon.log"
    with log.open("a") as stderr:
        proc = subprocess.Popen([*(wrapper or []), sys.executable, "-m", "memoryd", "serve"],
                                stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                                env={**os.environ, **(env or {})}, preexec_fn=limit)

    def ready() -> bool:
        assert proc.poll() is None, log.read_text()
        try:
            with Client(home / "memoryd.sock", timeout_s=5) as c:
                return c.status()["vector_index"]["ready"] or not model
        except DaemonUnreachableError:
            return False

    try:
        wait_until(ready, timeout_s=60)
    except BaseException:  # not left running (and loading the machine) after the test
        proc.kill()
        proc.wait()
        raise
    return proc


def stop_process(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=30)
