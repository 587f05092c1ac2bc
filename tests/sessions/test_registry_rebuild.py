"""What a rebuilt index keeps of the session registry: a session whose transcript is gone is
listed again from its archived turns, a session extracted stays extracted, and what was
injected into a session (`memory explain`) is still explained. Real daemon, real
`memoryd reindex`, real files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client

from tests.conftest import reindexed, run_cli, run_memoryd, start_daemon, wait_until
from tests.ingest.test_ingest import assistant, eventually, user, write_lines
from tests.sessions.test_usage import FORCE, SESSION, UV, iso, lessons, run_session

ARCHIVED = "3c9e1a7b-5d2f-4e8a-9b6c-1f0d2e3a4b5c"


def claude_exchange(n: int, question: str, answer: str, ts: float) -> list[dict[str, Any]]:
    """A question and its answer in Claude Code's format, said at ``ts``."""
    return [{**user(f"arch-u{n}", question), "sessionId": ARCHIVED, "timestamp": iso(ts)},
            {**assistant(f"arch-a{n}", f"msg_arch{n}", [{"type": "text", "text": answer}]),
             "sessionId": ARCHIVED, "timestamp": iso(ts + 5)}]


def listed(session: str) -> dict[str, Any]:
    """The session as `memory sessions --json` lists it."""
    shown = run_cli("sessions", "--json")
    assert shown.returncode == 0, shown.stderr
    found = [s for s in json.loads(shown.stdout)["sessions"] if s["id"] == session]
    assert len(found) == 1, shown.stdout
    return found[0]


def test_a_session_whose_transcript_is_gone_is_listed_again_from_its_archive(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    """Defect: its turns came back from the transcript archive, still naming the session,
    but the session itself left `memory sessions` (and `memory session show` exited 1)."""
    project = memoryd_home / "user/.claude/projects/-tmp-shop"
    project.mkdir(parents=True)
    path = project / f"{ARCHIVED}.jsonl"
    first = float(int(time.time()) - 7200)
    write_lines(path, claude_exchange(0, "which queue prints the stickers?",
                                      "The eu-west-1 print queue, beside the fulfilment API.",
                                      first)
                + claude_exchange(1, "and who restocks the printer?",
                                  "Tomasz restocks it every Tuesday.", first + 600))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            before = eventually(lambda: _read(client))
            assert client.pass_run("retain")["counts"]["archived"] == 2
    finally:
        running.stop()
    path.rename(tmp_path / path.name)  # moved away: only the archive holds its turns
    running = reindexed(embedder)
    try:
        with Client(running.socket) as client:
            session = listed(ARCHIVED)
            assert {k: session[k] for k in ("harness", "agent", "project", "user_messages",
                                            "source")} \
                == {k: before[k] for k in ("harness", "agent", "project", "user_messages",
                                           "source")}
            assert session["started"] == before["started"] == first
            assert session["last_seen"] == first + 600  # its last turn's question
            shown = run_cli("session", "show", ARCHIVED[:8])
            assert shown.returncode == 0, shown.stderr
            assert f"session {ARCHIVED} (claude-code, agent claude-code)" in shown.stdout
            assert "user messages: 2" in shown.stdout
            assert "exchanges indexed: 2" in shown.stdout
    finally:
        running.stop()


def _read(client: Client) -> dict[str, Any]:
    status = client.status()
    assert status["ingest"]["queue"] == 0 and not status["ingest"]["scanning"]
    session = client.session(ARCHIVED)["session"]
    assert session["user_messages"] == 2
    return dict(session)


def test_a_session_extracted_before_a_rebuild_stays_extracted(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    """Defect: the rebuild reset every session's extraction mark, so a session read before
    counted as not extracted (import-history and quiet extraction read it again) and
    `memory session show` called one that never ended open."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            lessons(client)  # the block given at its start is logged: the session is known
            run_session(client, tmp_path, SESSION, [
                ("user", "add requests to the project"), ("bash", "uv add requests"),
                ("user", "now run the tests"), ("bash", "uv run pytest"),
                ("user", "and commit it"), ("bash", "git commit -am 'add requests'")],
                end=False)  # it goes quiet, no end is heard of
            client.extract(SESSION)
            extracted = client.session(SESSION)["session"]["extracted"]
            assert extracted is not None
    finally:
        running.stop()
    running = reindexed(embedder)
    try:
        assert listed(SESSION)["extracted"] == extracted
        shown = run_cli("session", "show", SESSION)
        assert shown.returncode == 0, shown.stderr
        assert "(no end was seen)" in shown.stdout and ", open" not in shown.stdout
    finally:
        running.stop()
    (memoryd_home / "memoryd.db").unlink()  # a deleted index, rebuilt at start
    running = start_daemon(embedder)
    try:
        assert listed(SESSION)["extracted"] == extracted
    finally:
        running.stop()


def test_what_was_injected_into_a_session_is_explained_after_a_rebuild(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    """Defect: `memory explain SESSION` said nothing was injected after a reindex, while
    `memory get ID` still counted the session the entry was injected into."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            ids = lessons(client)
            run_session(client, tmp_path, SESSION, [
                ("user", "sync main with the remote"), ("bash", "git push --force origin main"),
                ("bash", "uv sync")])
            wait_until(lambda: client.get(ids[FORCE])["usage"]["broken"] == 1)
            explained = json.loads(run_cli("explain", SESSION, "--json").stdout)["injections"]
            text = run_cli("explain", SESSION).stdout
    finally:
        running.stop()
    assert [i["id"] for inj in explained for i in inj["items"]].count(ids[UV]) == 1
    running = reindexed(embedder)
    try:
        assert json.loads(run_cli("explain", SESSION, "--json").stdout)["injections"] \
            == explained
        assert run_cli("explain", SESSION).stdout == text
        assert "usage: injected into 1 session" in run_cli("get", ids[UV]).stdout
    finally:
        running.stop()


def test_a_purge_takes_its_entries_out_of_the_injection_log_and_a_rebuild_keeps_them_out(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            ids = lessons(client)
            secret = client.remember("claude-code", "workflow",
                                     "The deploy token is tok_9f8e7d6c5b", kind="note")
            run_session(client, tmp_path, SESSION, [("user", "add rich"),
                                                    ("bash", "uv add rich")])
            wait_until(lambda: client.get(ids[UV])["usage"]["pending"] == 0)
            purged = run_cli("purge", "--agent", "claude-code", "--match", "tok_9f8e7d6c5b",
                             "--yes")
            assert purged.returncode == 0, purged.stderr
            explained = run_cli("explain", SESSION, "--json").stdout
    finally:
        running.stop()
    assert "tok_9f8e7d6c5b" not in explained and secret["entry"]["id"] not in explained
    assert ids[UV] in explained
    kept = (memoryd_home / "outcomes.jsonl").read_text()
    assert "tok_9f8e7d6c5b" not in kept and secret["entry"]["id"] not in kept
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        assert json.loads(run_cli("explain", SESSION, "--json").stdout) \
            == json.loads(explained)
    finally:
        running.stop()


def test_an_index_from_before_the_file_held_the_log_writes_it_there_once(tmp_path: Path) -> None:
    """A database whose injection log and extraction marks were kept in it alone (made
    before this): its first start writes them to the outcomes file, and an index rebuilt
    from the file has them; a second start writes nothing more."""
    from memoryd.store.database import Store
    from memoryd.store.usage_log import LOG_KEY, UsageLog, replay_usage_log

    old = Store(tmp_path / "memoryd.db")
    now = time.time()
    old._db.execute("INSERT INTO sessions(id, harness, agent, project, last_seen, extracted) "
                    "VALUES ('s1', 'claude-code', 'claude-code', '/src/shop', ?, ?)",
                    (now, now - 5))
    old.sessions.log_injection(now - 60, "s1", "claude-code", "SessionStart", 120, 6000,
                               [{"section": "lessons", "id": "e1", "text": "Use uv"}])
    old._db.execute("DELETE FROM meta WHERE key=?", (LOG_KEY,))
    file = UsageLog.beside(old)
    replay_usage_log(old, file)  # its first start
    size = file.size()
    replay_usage_log(old, file)  # and the next
    assert file.size() == size and old.meta(LOG_KEY) == "1"
    logged = old.sessions.injections("s1")
    old.close()

    rebuilt = Store(tmp_path / "memoryd.db.new")
    replay_usage_log(rebuilt, UsageLog.beside(rebuilt))
    assert rebuilt.sessions.injections("s1") == logged
    extracted = rebuilt.sessions.get("s1")
    assert extracted is not None and extracted.extracted == now - 5
    rebuilt.close()


def test_explain_says_when_a_sessions_log_was_lost_with_an_older_index(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    """An index rebuilt by a memoryd that kept the injection log in the database alone: what
    the session was given is still counted (its outcomes), and `memory explain` says the log
    was lost rather than "nothing injected yet"."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            ids = lessons(client)
            run_session(client, tmp_path, SESSION, [("user", "add rich"),
                                                    ("bash", "pip install rich")])
            wait_until(lambda: client.get(ids[UV])["usage"]["broken"] == 1)
    finally:
        running.stop()
    outcomes = memoryd_home / "outcomes.jsonl"  # as an older memoryd wrote it
    outcomes.write_bytes(b"".join(line for line in outcomes.read_bytes().splitlines(True)
                                  if json.loads(line)["op"] != "log"))
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        shown = run_cli("explain", SESSION)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(
            f"the log of what was injected into session {SESSION} was lost with an index "
            "rebuilt before memoryd kept it in outcomes.jsonl; the entries it was given:\n")
        assert f"    {ids[UV]}: broken\n" in shown.stdout
        assert f"    {ids[FORCE]}: no occasion\n" in shown.stdout
    finally:
        running.stop()


@pytest.mark.parametrize("older", [False, True], ids=["today", "older index"])
def test_a_session_only_a_hook_told_of_is_listed_after_a_rebuild(
        memoryd_home: Path, embedder, tmp_path: Path, older: bool) -> None:
    """A session whose transcript memoryd never read (no memory given, none extracted) left
    `memory sessions` with the index: the hook's report of it was in the database alone.
    ``older``: the index and the outcomes file as a memoryd that kept it so left them; the
    reindex writes it to the file from the index it sets aside."""
    import subprocess
    import sys

    import apsw

    payload = {"session_id": "hooked-only-1", "transcript_path": str(tmp_path / "gone.jsonl"),
               "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup"}
    running = start_daemon(embedder)
    try:
        started = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "claude-code",
                                  "SessionStart"], input=json.dumps(payload), text=True,
                                 capture_output=True, timeout=30)
        assert started.returncode == 0 and not started.stderr, started.stderr
        before = listed("hooked-only-1")
    finally:
        running.stop()
    if older:
        outcomes = memoryd_home / "outcomes.jsonl"
        outcomes.write_bytes(b"".join(line for line in outcomes.read_bytes().splitlines(True)
                                      if json.loads(line)["op"] != "session"))
        db = apsw.Connection(str(memoryd_home / "memoryd.db"))
        with db:
            db.execute("DELETE FROM meta WHERE key='usage_log:sessions'")
        db.close()
    running = reindexed(embedder)
    try:
        after = listed("hooked-only-1")
        assert (after["cwd"], after["harness"], after["started"]) == \
            (str(tmp_path), "claude-code", before["started"])
    finally:
        running.stop()


def test_an_index_from_before_the_file_held_its_sessions_writes_them_there_once(
        tmp_path: Path) -> None:
    """A database of a memoryd that kept the sessions hooks reported in it alone (those it
    gave nothing to and never extracted): its first start writes them to the outcomes file,
    so a rebuilt index lists them; one only a transcript told of is not written (read again,
    the transcript tells it)."""
    from memoryd.store.database import Store
    from memoryd.store.usage_log import SESSIONS_KEY, UsageLog, replay_usage_log

    old = Store(tmp_path / "memoryd.db")
    now = time.time()
    old.sessions.register("hooked", "claude-code", "claude-code", "/src/shop", "/src/shop",
                          "/gone/hooked.jsonl", now - 60)
    old.sessions.read_from_transcript(
        {"id": "read", "harness": "codex", "cwd": "/src/shop", "started": now - 30,
         "last_seen": now, "user_messages": 2}, "codex", "/src/shop", "codex")
    old._db.execute("DELETE FROM meta WHERE key=?", (SESSIONS_KEY,))
    file = UsageLog.beside(old)
    replay_usage_log(old, file)  # its first start
    size = file.size()
    replay_usage_log(old, file)  # and the next
    assert size and file.size() == size and old.meta(SESSIONS_KEY) == "1"
    old.close()

    rebuilt = Store(tmp_path / "memoryd.db.new")
    replay_usage_log(rebuilt, UsageLog.beside(rebuilt))
    hooked = rebuilt.sessions.get("hooked")
    assert hooked is not None and hooked.cwd == "/src/shop" and hooked.started == now - 60
    assert rebuilt.sessions.get("read") is None
    rebuilt.close()
