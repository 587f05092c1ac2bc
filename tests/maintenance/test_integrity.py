"""The index's integrity (D13): a damaged database is never served; it is moved aside and
rebuilt from the ledgers, the archives and the watched files, with a log line; a reindex never
overwrites the last good backup (D15)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.store.integrity import damage
from tests.conftest import run_memoryd, start_daemon, wait_until

FACTS = ["We use ruff for linting", "Tests run with pytest -x", "Never force-push to main",
         "The staging database lives in Frankfurt", "Deploys happen on Tuesdays after lunch"]


def fill(home: Path, monkeypatch: pytest.MonkeyPatch, bulk: int = 20) -> tuple[list[str], Path]:
    """A database worth damaging: API entries, a watched memory file, many pages (written
    keyword-only, which is quicker)."""
    notes = home / "user" / ".claude" / "CLAUDE.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("# Notes\n\n- The build server is called hopper\n")
    with monkeypatch.context() as patch:
        patch.setenv("MEMORYD_EMBED_MODEL", str(home / "no-model"))
        running = start_daemon(None)
    try:
        with Client(running.socket) as c:
            ids = [c.remember("coder", "tools", text)["entry"]["id"] for text in FACTS]
            c.remember_many([{"agent": "bulk", "text": f"bulk entry {i} " + "lorem ipsum " * 40,
                              "force": True} for i in range(bulk)])
            wait_until(lambda: c.search("hopper build server", agent="claude-code")["hits"])
    finally:
        running.stop()
    return ids, home / "memoryd.db"


def assert_facts_served(embedder, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    """A daemon started on the state dir serves every fact stored by :func:`fill`."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            assert [c.get(i)["text"] for i in ids] == FACTS
    finally:
        running.stop()


def damage_middle(db: Path) -> None:
    size = db.stat().st_size
    assert size > 200_000
    with db.open("r+b") as handle:  # 16 KB of garbage in the middle, header intact
        handle.seek((size // 2) // 4096 * 4096)
        handle.write(os.urandom(16384))


def test_a_subtly_damaged_database_is_moved_aside_and_rebuilt(
        memoryd_home, embedder, caplog, monkeypatch) -> None:
    ids, db = fill(memoryd_home, monkeypatch, 300)
    backup = memoryd_home / "memoryd.db.bak"
    backup.write_bytes(b"the last good backup")
    damage_middle(db)
    assert damage(db)  # what the daemon finds at start
    with caplog.at_level(logging.INFO, logger="memoryd"):
        running = start_daemon(embedder)
    try:
        assert "failed its integrity check" in caplog.text and "rebuilding" in caplog.text
        with Client(running.socket) as c:
            assert [c.get(i)["text"] for i in ids] == FACTS
            wait_until(lambda: c.status()["entries"]["active"] == len(FACTS) + 300 + 1)
            wait_until(lambda: c.search("hopper build server", agent="claude-code")["hits"])
    finally:
        running.stop()
    assert damage(db) == []
    assert backup.read_bytes() == b"the last good backup"
    assert len(list(memoryd_home.glob("memoryd.db.corrupt-*"))) == 1


def test_a_database_with_a_garbage_header_is_rebuilt_not_refused(
        memoryd_home, embedder, monkeypatch) -> None:
    ids, db = fill(memoryd_home, monkeypatch)
    with db.open("r+b") as handle:
        handle.write(b"this is not a database header")
    assert_facts_served(embedder, ids)


def test_a_killed_reindex_never_costs_the_last_good_backup(
        memoryd_home, embedder, monkeypatch) -> None:
    ids, db = fill(memoryd_home, monkeypatch)
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    good = (memoryd_home / "memoryd.db.bak").read_bytes()
    assert damage(memoryd_home / "memoryd.db.bak") == []
    proc = subprocess.Popen([sys.executable, "-m", "memoryd", "reindex"], env=os.environ.copy(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: (memoryd_home / "memoryd.db.new").exists(), 60)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)  # killed half-way through the rebuild
    proc.wait()
    assert (memoryd_home / "memoryd.db.bak").read_bytes() == good
    assert run_memoryd("reindex", "--no-vectors").returncode == 0  # and once more
    assert damage(memoryd_home / "memoryd.db.bak") == []
    assert_facts_served(embedder, ids)
    assert not (memoryd_home / "memoryd.db.new").exists()


def test_a_start_removes_what_a_killed_reindex_left(memoryd_home, embedder,
                                                    monkeypatch, caplog) -> None:
    """A killed `memoryd reindex` left memoryd.db.new and its WAL (16 MB in the report) until
    the next reindex; the daemon said nothing of them. A start (which holds the lock a
    reindex holds) removes them, and logs it."""
    ids, db = fill(memoryd_home, monkeypatch)
    proc = subprocess.Popen([sys.executable, "-m", "memoryd", "reindex", "--no-vectors"],
                            env=os.environ.copy(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    new = memoryd_home / "memoryd.db.new"
    wait_until(lambda: new.exists() or proc.poll() is not None, 60)
    proc.kill()  # killed half-way through the rebuild
    proc.wait()
    if not new.exists():  # it finished first: leave what a killed one leaves
        new.write_bytes(db.read_bytes())
        new.with_name("memoryd.db.new-wal").write_bytes(b"\0" * 4096)
    with caplog.at_level(logging.WARNING, logger="memoryd.store.integrity"):
        assert_facts_served(embedder, ids)
    assert not [p.name for p in memoryd_home.iterdir() if p.name.startswith("memoryd.db.new")]
    assert "the unfinished index of a reindex" in caplog.text


def test_state_is_private_whatever_the_umask(memoryd_home: Path) -> None:
    """D11: a state dir left 0755 and a daemon started under umask 022 (a shell, not the unit)."""
    state = memoryd_home / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)
    (state / "agents" / "old").mkdir(parents=True)
    os.chmod(state / "agents", 0o755)
    os.chmod(state / "agents" / "old", 0o755)
    run = memoryd_home / "run"
    env = {**os.environ, "MEMORYD_HOME": str(state), "MEMORYD_SOCKET": str(run / "m.sock"),
           "MEMORYD_EMBED_MODEL": str(memoryd_home / "no-model")}
    proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: os.umask(0o022))
    try:
        wait_until(lambda: (run / "m.sock").exists(), 60)
        with Client(run / "m.sock") as c:
            c.remember("coder", "tools", "We use ruff for linting")
            c.call("file_write", {"agent": "coder", "path": "notes/today.md", "text": "- a note\n"})
            c.call("sources", {"action": "add", "name": "extra", "kind": "memory",
                               "path": str(memoryd_home / "x/*.md"), "format": "markdown",
                               "agent": "coder"})
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    created = [state, *state.rglob("*")]
    assert any(p.name == "sources.toml" for p in created)
    assert any(p.name == "memoryd.db" for p in created)
    assert any(p.name == "today.md" for p in created)
    wide = {str(p.relative_to(memoryd_home)): oct(p.stat().st_mode & 0o777) for p in created
            if p.stat().st_mode & 0o077}
    assert wide == {}
