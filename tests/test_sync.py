"""Sync through git (docs/sync.md): real daemons (`memoryd serve` processes), real git, a bare
remote under tmp, two and three MEMORYD_HOMEs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import spawn_daemon, stop_process


class Machine:
    """One MEMORYD_HOME with its daemon."""

    def __init__(self, home: Path) -> None:
        self.home = home
        (home / "user").mkdir(parents=True, exist_ok=True)
        self.env = {"MEMORYD_HOME": str(home), "HOME": str(home / "user")}
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            self.proc = spawn_daemon(self.home)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_process(self.proc)
        self.proc = None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def client(self, agent: str | None = None) -> Client:
        return Client(self.home / "memoryd.sock", timeout_s=120, agent=agent)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        import sys
        return subprocess.run([sys.executable, "-m", "memoryd_client", *args],
                              check=False, capture_output=True, text=True, timeout=300,
                              env={**os.environ, **self.env})

    def texts(self, agent: str = "designer") -> list[str]:
        with self.client() as c:
            return sorted(e["text"] for e in c.list_entries(agents=[agent], limit=1000)["entries"])

    def ids(self, agent: str = "designer") -> dict[str, str]:
        with self.client() as c:
            return {e["text"]: e["id"] for e in c.list_entries(agents=[agent], limit=1000)["entries"]}


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    return bare


@pytest.fixture
def machines(tmp_path: Path) -> Iterator[list[Machine]]:
    made: list[Machine] = []

    def make(n: int) -> list[Machine]:
        for i in range(n):
            m = Machine(Path(tempfile_dir(tmp_path, i)))
            m.start()
            made.append(m)
        return made

    yield make  # type: ignore[misc]
    for m in made:
        m.stop()


def tempfile_dir(tmp_path: Path, i: int) -> str:
    import tempfile
    return tempfile.mkdtemp(prefix=f"md{i}-", dir="/tmp")


def write(m: Machine, texts: list[str], agent: str = "designer") -> None:
    with m.client(agent) as c:
        c.remember_many([{"agent": agent, "category": "notes", "text": t} for t in texts])


def test_concurrent_writes_sync_to_the_union_with_stable_ids(machines, remote: Path) -> None:
    a, b = machines(2)
    for m in (a, b):
        with m.client() as c:
            c.sync_init(str(remote))
    write(a, ["alpha one", "alpha two"])
    with a.client() as c:
        c.sync()
    with b.client() as c:
        c.sync()  # b gets a's first records
    # then both write at once, and sync both ways
    threads = [threading.Thread(target=write, args=(a, [f"from a {i}" for i in range(30)])),
               threading.Thread(target=write, args=(b, [f"from b {i}" for i in range(30)]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in (a, b, a):
        with m.client() as c:
            c.sync()
    expected = sorted(["alpha one", "alpha two", *[f"from a {i}" for i in range(30)],
                       *[f"from b {i}" for i in range(30)]])
    assert a.texts() == expected
    assert b.texts() == expected
    assert a.ids() == b.ids()
    # the ledgers hold each record once, in the same bytes on both machines
    la = (a.home / "ledger" / "designer.jsonl").read_bytes()
    lb = (b.home / "ledger" / "designer.jsonl").read_bytes()
    assert la == lb
    uids = [json.loads(line)["entry"]["uid"] for line in la.splitlines()
            if json.loads(line)["op"] == "remember"]
    assert len(uids) == len(set(uids)) == len(expected)
