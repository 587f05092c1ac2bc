"""The daemon as a process: single instance, stale sockets, signals, crashes, reindex."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from memoryd_client import Client

from memoryd.config import load_config
from tests.conftest import run_memoryd, spawn_daemon, start_daemon, stop_process, wait_until


def test_second_daemon_exits_3_with_a_clear_message(daemon) -> None:
    result = run_memoryd("serve", timeout=60)
    assert result.returncode == 3
    assert "already serving" in result.stderr and str(daemon.socket) in result.stderr
    with Client(daemon.socket) as c:  # the first one is untouched
        assert c.status()["pid"] == os.getpid()
    # another socket on the same state dir: the state dir is what one daemon holds, said so
    # (it said the other socket was served, by the first daemon's pid)
    other = daemon.socket.with_name("other.sock")
    env = {**os.environ, "MEMORYD_SOCKET": str(other)}
    second = subprocess.run([sys.executable, "-m", "memoryd", "serve"], capture_output=True,
                            text=True, timeout=60, env=env)
    assert second.returncode == 3
    assert f"already serving the state dir {daemon.socket.parent}" in second.stderr
    assert not other.exists()


def test_a_setting_in_the_environment_that_is_no_yes_or_no_is_refused(memoryd_home,
                                                                      monkeypatch) -> None:
    """MEMORYD_OUTCOMES_ENABLED=ture (a typo) turned the feature off without a word: every
    value that was not a yes was taken for a no. The daemon refuses it, as it refuses a number
    that is none, and says which variable; the words for no are taken as no."""
    monkeypatch.setenv("MEMORYD_OUTCOMES_ENABLED", "ture")
    result = run_memoryd("serve", timeout=60)
    assert result.returncode == 3, result.stderr
    assert "MEMORYD_OUTCOMES_ENABLED='ture' is not yes or no" in result.stderr
    monkeypatch.delenv("MEMORYD_OUTCOMES_ENABLED")
    for word, meant in (("Off", False), ("0", False), ("no", False), ("", False),
                        ("YES", True), ("on", True)):
        monkeypatch.setenv("MEMORYD_EXTRACT_WHEN_QUIET", word)
        assert load_config().extract.when_quiet is meant, word


def test_a_log_level_in_the_environment_that_is_none_is_refused(memoryd_home,
                                                               monkeypatch) -> None:
    """MEMORYD_LOG_LEVEL=verbose: a traceback ("ValueError: Unknown level: 'VERBOSE'") and
    exit 1, which systemd restarts on. Refused as the other MEMORYD_* variables are: exit 3,
    naming the variable and the levels; --log-level still wins, any case is taken."""
    monkeypatch.setenv("MEMORYD_LOG_LEVEL", "verbose")
    result = run_memoryd("serve", timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stderr == ("memoryd: MEMORYD_LOG_LEVEL='verbose' is not a log level: it is "
                             "debug, info, warning or error\n")
    assert run_memoryd("--log-level", "error", "check-config").returncode == 0
    monkeypatch.setenv("MEMORYD_LOG_LEVEL", "WARNING")
    assert run_memoryd("check-config").returncode == 0


def test_stale_socket_from_a_crashed_daemon_is_replaced(memoryd_home, embedder) -> None:
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(memoryd_home / "memoryd.sock"))
    dead.close()  # the file stays, nobody listens: what a crash leaves behind
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            assert c.status()["version"]
    finally:
        running.stop()
    assert not (memoryd_home / "memoryd.sock").exists()


def test_sigterm_finishes_inflight_writes_then_exits_0(memoryd_home) -> None:
    proc = spawn_daemon(memoryd_home)
    entries = [{"agent": "bulk", "category": "c", "text": f"distinct memory number {i} about topic {i * 7}"}
               for i in range(300)]
    reply: dict = {}

    def write() -> None:
        with Client(memoryd_home / "memoryd.sock", timeout_s=60) as c:
            reply.update(c.remember_many(entries))

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.3)
    assert stop_process(proc) == 0
    writer.join(timeout=60)
    assert len(reply["results"]) == 300
    stored = sum(r["stored"] for r in reply["results"])
    assert not (memoryd_home / "memoryd.sock").exists()
    proc = spawn_daemon(memoryd_home)
    try:
        with Client(memoryd_home / "memoryd.sock") as c:
            assert c.status()["entries"]["active"] == stored
    finally:
        assert stop_process(proc) == 0


def test_acknowledged_writes_survive_kill_9_and_a_deleted_database(memoryd_home) -> None:
    proc = spawn_daemon(memoryd_home)
    with Client(memoryd_home / "memoryd.sock") as c:
        ids = [c.remember("coder", "tools", text)["entry"]["id"] for text in
               ("We use ruff for linting", "Tests run with pytest -x", "Never force-push to main")]
        c.forget(ids[2], agent="coder")
    proc.kill()
    proc.wait()
    for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm"):
        (memoryd_home / name).unlink(missing_ok=True)
    proc = spawn_daemon(memoryd_home)  # replays the ledgers into a fresh database
    try:
        with Client(memoryd_home / "memoryd.sock") as c:
            assert [c.get(i)["status"] for i in ids] == ["active", "active", "forgotten"]
            wait_until(lambda: c.status()["backlog"] == 0)
            hit = c.search("ruff linter", agent="coder")["hits"][0]
            assert hit["id"] == ids[0] and hit["score"]["vector"] > 0.3  # vectors rebuilt too
    finally:
        assert stop_process(proc) == 0


def test_reindex_rebuilds_the_database_from_the_ledgers(memoryd_home, embedder) -> None:
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        first = c.remember("designer", "feedback", "Stickers need an illustration, not just text")["entry"]
        c.remember("designer", "prefs", "Palette is teal", key="pref.palette")
        c.remember("designer", "prefs", "Palette is orange", key="pref.palette")
        # the same text in two projects: two memories, and two again after the rebuild
        repos = [memoryd_home / name for name in ("shop", "blog")]
        for repo in repos:
            (repo / ".git").mkdir(parents=True)
        both = [c.remember("designer", "layout", "Logos sit top left.", cwd=str(repo))["entry"]
                for repo in repos]
    running.stop()
    assert run_memoryd("reindex").returncode == 0  # with no database at all it works too
    typo = subprocess.run([sys.executable, "-m", "memoryd", "reindex"], capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "MEMORYD_HOME": str(memoryd_home) + "-typo"})
    assert typo.returncode == 1 and "does not exist: there is nothing to rebuild" in typo.stderr
    assert not Path(str(memoryd_home) + "-typo").exists()  # nothing made
    (memoryd_home / "memoryd.db").unlink()
    result = run_memoryd("reindex")
    assert result.returncode == 0, result.stderr
    assert "reindexed 5 entries from 1 ledgers" in result.stdout
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            assert c.get(first["id"])["text"] == first["text"]
            history = c.history(agent="designer", key="pref.palette")
            assert [e["status"] for e in history["entries"]] == ["superseded", "active"]
            assert [c.get(e["id"])["project"] for e in both] == [e["project"] for e in both]
            assert c.status()["backlog"] == 0
            hits = c.search("drawings matter more than lettering", agent="designer")["hits"]
            assert hits[0]["id"] == first["id"]
    finally:
        running.stop()


def test_reindex_refuses_while_the_daemon_runs(daemon) -> None:
    result = run_memoryd("reindex")
    assert result.returncode == 3 and "stop it first" in result.stderr


def test_without_a_model_the_daemon_degrades_to_keyword_search(memoryd_home, monkeypatch) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_MODEL", str(memoryd_home / "no-such-model"))
    running = start_daemon(None)
    try:
        with Client(running.socket) as c:
            status = c.status()
            assert status["degraded"] == "keyword-only"
            assert "no-such-model" in status["degraded_reason"]
            c.remember("coder", "tools", "We use ruff for linting")
            result = c.search("ruff", agent="coder")
            assert result["degraded"] is True and result["hits"][0]["score"]["vector"] is None
            assert result["hits"][0]["text"] == "We use ruff for linting"
    finally:
        running.stop()
    from tests.conftest import run_cli
    # and a model that does load again embeds the backlog it left
    monkeypatch.delenv("MEMORYD_EMBED_MODEL")
    proc = spawn_daemon(memoryd_home)
    try:
        with Client(memoryd_home / "memoryd.sock") as c:
            wait_until(lambda: c.status()["backlog"] == 0)
            assert c.search("which linter", agent="coder")["hits"][0]["score"]["vector"] > 0.2
        assert "degraded" not in run_cli("status").stdout
    finally:
        assert stop_process(proc) == 0


def test_a_config_saved_with_a_byte_order_mark_is_read(memoryd_home) -> None:
    """An editor that begins the file with a byte-order mark: the settings hold (the daemon
    refused to start: "Invalid statement (at line 1, column 1)", of a character nobody sees)."""
    (memoryd_home / "config.toml").write_bytes(b"\xef\xbb\xbf[search]\r\nlimit = 7\r\n")
    assert load_config().search.limit == 7


def test_bad_config_is_a_startup_failure(memoryd_home) -> None:
    (memoryd_home / "config.toml").write_text("[search]\nlimit = 'ten'\n")
    result = run_memoryd("serve", timeout=30)
    assert result.returncode == 3
    assert "search.limit must be a whole number, got 'ten'" in result.stderr
