"""Sync through git (docs/sync.md): real daemons (`memoryd serve` processes), real git, a bare
remote under tmp, two and three MEMORYD_HOMEs."""

from __future__ import annotations

import json
import os
import shutil
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

    def _all(self, agent: str) -> list[dict]:
        found: list[dict] = []
        with self.client() as c:
            cursor = None
            while True:
                page = c.list_entries(agents=[agent], limit=1000, cursor=cursor)
                found += page["entries"]
                cursor = page.get("next")
                if not cursor:
                    return found

    def texts_all(self, agent: str = "designer") -> list[str]:
        return sorted(e["text"] for e in self._all(agent))

    def ids_all(self, agent: str = "designer") -> dict[str, str]:
        return {e["text"]: e["id"] for e in self._all(agent)}

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
        shutil.rmtree(m.home, ignore_errors=True)


def tempfile_dir(tmp_path: Path, i: int) -> str:
    import tempfile
    return tempfile.mkdtemp(prefix=f"md{i}-", dir="/tmp")


def write(m: Machine, texts: list[str], agent: str = "designer") -> None:
    with m.client(agent) as c:
        for start in range(0, len(texts), 1000):
            c.remember_many([{"agent": agent, "category": "notes", "text": t}
                             for t in texts[start:start + 1000]])


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


def sync(*ms: Machine) -> list[dict]:
    replies = []
    for m in ms:
        with m.client() as c:
            replies.append(c.sync())
    return replies


def init(remote: Path, *ms: Machine) -> None:
    for m in ms:
        with m.client() as c:
            c.sync_init(str(remote))


def test_three_machines_converge(machines, remote: Path) -> None:
    ms = machines(3)
    init(remote, *ms)
    for n, m in enumerate(ms):
        write(m, [f"machine {n} note {i}" for i in range(5)])
    sync(*ms)
    sync(*ms)  # the first ones get what the later ones pushed
    expected = sorted(f"machine {n} note {i}" for n in range(3) for i in range(5))
    for m in ms:
        assert m.texts() == expected
    assert ms[0].ids() == ms[1].ids() == ms[2].ids()
    # a sync with nothing new changes nothing and pushes nothing
    again = sync(ms[0])[0]
    assert again["committed"] is False and again["pulled"] is False


def test_the_same_notebook_line_edited_on_both_keeps_both(machines, remote: Path) -> None:
    a, b = machines(2)
    init(remote, a, b)
    with a.client("designer") as c:
        c.file("write", "designer", "notes.md", text="# Notes\n\n- indent with tabs\n- keep it short\n")
    sync(a, b)
    assert (b.home / "agents" / "designer" / "notes.md").read_text().count("tabs") == 1
    with a.client("designer") as c:
        c.file("replace", "designer", "notes.md", old="indent with tabs", new="indent with 2 spaces")
    with b.client("designer") as c:
        c.file("replace", "designer", "notes.md", old="indent with tabs", new="indent with 4 spaces")
    sync(a)
    reply = sync(b)[0]
    assert len(reply["new_conflicts"]) == 1
    sync(a)
    for m in (a, b):
        notes = m.home / "agents" / "designer" / "notes.md"
        copies = list(notes.parent.glob("notes.md.sync-conflict-*"))
        assert len(copies) == 1
        both = notes.read_text() + copies[0].read_text()
        assert "indent with 2 spaces" in both and "indent with 4 spaces" in both
        assert "<<<<<<<" not in both and ">>>>>>>" not in both  # never half-merged
        with m.client() as c:
            status = c.status()
        assert status["sync"]["conflicts"] == [str(copies[0].relative_to(m.home))]
        shown = m.cli("status")  # what a person reads: the remote, the next sync, the copy
        assert shown.returncode == 0, shown.stderr
        assert "sync: " in shown.stdout and ", next " in shown.stdout
        assert copies[0].name in shown.stdout
        doctor = m.cli("doctor", "--json")
        check = next(c for c in json.loads(doctor.stdout)["checks"] if c["check"] == "sync")
        assert check["status"] == "warning" and copies[0].name in check["detail"]
    # b's own edit stayed in its file; a's file holds b's merge result
    assert "4 spaces" in (b.home / "agents" / "designer" / "notes.md").read_text()


def test_a_purge_on_one_machine_removes_the_text_from_the_other(machines, remote: Path) -> None:
    a, b = machines(2)
    init(remote, a, b)
    write(a, ["deploy key is hunter2-secret", "the build uses make"])
    sync(a, b)
    assert "deploy key is hunter2-secret" in b.texts()
    with a.client("designer") as c:
        report = c.purge("designer", match="hunter2", confirm=True)
    assert len(report["entries"]) == 1
    write(b, ["a note b wrote meanwhile"])
    sync(a, b, a)
    for m in (a, b):
        assert m.texts() == ["a note b wrote meanwhile", "the build uses make"]
        assert b"hunter2" not in (m.home / "ledger" / "designer.jsonl").read_bytes()
        with m.client() as c:
            hits = c.search("hunter2 deploy key", agents=["designer"])
        assert "hunter2" not in json.dumps(hits)
        assert b"hunter2" not in (m.home / "memoryd.db").read_bytes()


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _merging(m: Machine) -> bool:
    assert m.proc is not None
    for pid in _descendants(m.proc.pid):
        try:
            if b"memoryd.sync.driver" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def test_kill_9_during_a_sync_then_the_next_sync_completes(machines, remote: Path) -> None:
    a, b = machines(2)
    init(remote, a, b)
    sync(a, b)
    write(a, [f"a's note number {i} about the release" for i in range(1500)])
    sync(a)
    write(b, [f"b's note number {i} about the design" for i in range(300)])
    done: list[object] = []

    def run() -> None:
        try:
            done.append(sync(b))
        except Exception as exc:
            done.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    import time
    deadline = time.monotonic() + 60
    while not _merging(b) and time.monotonic() < deadline and not done:
        time.sleep(0.005)
    assert not done, "the sync finished before it could be killed"
    assert b.proc is not None
    doomed = [b.proc.pid, *_descendants(b.proc.pid)]  # the machine goes down: git with it
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    b.proc.wait(timeout=30)
    b.proc = None
    thread.join(timeout=60)
    b.start()
    sync(b, a)
    expected = sorted([*[f"a's note number {i} about the release" for i in range(1500)],
                       *[f"b's note number {i} about the design" for i in range(300)]])
    assert a.texts_all() == expected
    assert b.texts_all() == expected
    assert a.ids_all() == b.ids_all()


def test_a_shared_lesson_reaches_the_team_under_its_own_heading(machines, tmp_path: Path) -> None:
    team_remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(team_remote)], check=True)
    a, b = machines(2)
    for m in (a, b):
        added = m.cli("sync", "add-shared", "acme", str(team_remote))
        assert added.returncode == 0, added.stderr
    with a.client("designer") as c:
        stored = c.remember("designer", "deploy",
                            "Run the migrations before the deploy, never after", kind="lesson")
    shared = a.cli("share", stored["entry"]["id"], "acme")
    assert shared.returncode == 0, shared.stderr
    assert "shared" in shared.stdout
    synced = b.cli("sync")  # b follows the team without a repository of its own
    assert synced.returncode == 0, synced.stderr
    with b.client() as c:
        block = c.context("coder")["text"]
        team = c.list_entries(agents=["team.acme"])["entries"]
    assert [e["text"] for e in team] == ["Run the migrations before the deploy, never after"]
    assert "## Team" in block
    assert block.index("## Team") < block.index("Run the migrations before the deploy")
    # the namespace is read-only: no write reaches it but a share
    from memoryd_client.errors import ForbiddenError
    with b.client("team.acme") as c, pytest.raises(ForbiddenError):
        c.remember("team.acme", "deploy", "planted", kind="lesson")
    with b.client() as c, pytest.raises(ForbiddenError):
        c.forget(team[0]["id"], agent="team.acme")
