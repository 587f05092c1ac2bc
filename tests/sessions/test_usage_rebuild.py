"""Issue 37 §2 and non-negotiable 2: what memoryd learned from sessions is in a file
(``outcomes.jsonl``), so a rebuilt index — `memoryd reindex`, a deleted or damaged
``memoryd.db`` — keeps every entry's usage record, even once the transcripts it was learned
from are gone."""

from __future__ import annotations

import json
import time
from pathlib import Path

from memoryd_client import Client

from tests.conftest import run_cli, run_memoryd, start_daemon, wait_until
from tests.sessions.test_usage import CONCISE, FORCE, SESSION, UV, lessons, run_session


def usage_of(ids: dict[str, str]) -> dict[str, dict]:
    """Each entry's usage record as `memory get ID --json` shows it."""
    out = {}
    for text, uid in ids.items():
        shown = run_cli("get", uid, "--json")
        assert shown.returncode == 0, shown.stderr
        out[text] = json.loads(shown.stdout)["usage"]
    return out


def test_usage_records_survive_a_reindex_and_a_deleted_database(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            ids = lessons(client)
            transcript = run_session(client, tmp_path, SESSION, [
                ("user", "add requests to the project"), ("bash", "pip install requests"),
                ("user", "no, we use uv here"), ("bash", "uv add requests"),
                ("bash", "git push origin main")])
            wait_until(lambda: client.get(ids[UV])["usage"]["pending"] == 0
                       and client.get(ids[UV])["usage"]["injected"] == 1)
            before = usage_of(ids)
            ranked = json.loads(run_cli("list", "--usage", "--json").stdout)
    finally:
        running.stop()
    assert (before[UV]["broken"], before[FORCE]["followed"], before[CONCISE]["no_occasion"]) \
        == (1, 1, 1)
    transcript.unlink()  # Claude Code deletes old transcripts: nothing to learn it again from

    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        assert usage_of(ids) == before
        assert json.loads(run_cli("list", "--usage", "--json").stdout) == ranked
        events = json.loads(run_cli("history", ids[UV], "--json").stdout)["events"]
        assert [(e["after"]["session"], e["after"]["outcome"]) for e in events
                if e["action"] == "outcome"] == [(SESSION, "broken")]  # its history too
        sessions = json.loads(run_cli("sessions", "--json").stdout)["sessions"]
        assert [s["id"] for s in sessions] == [SESSION]  # judged: not judged again
        assert sessions[0]["judged"] is not None
    finally:
        running.stop()

    (memoryd_home / "memoryd.db").unlink()
    running = start_daemon(embedder)
    try:
        assert usage_of(ids) == before
    finally:
        running.stop()


def test_a_database_from_before_the_file_writes_its_outcomes_to_it_once(tmp_path: Path) -> None:
    """An index made by a memoryd that kept outcomes in the database alone: its first start
    writes them to the file, and a rebuild from the file has them all."""
    from memoryd.store.database import Store
    from memoryd.store.usage import Usage
    from memoryd.store.usage_log import FILE_NAME, KEY, UsageLog, replay_usage_log

    old = Store(tmp_path / "memoryd.db")
    now = time.time()
    old._db.execute("INSERT INTO sessions(id, harness, agent, project, last_seen) "
                   "VALUES ('s1', 'claude-code', 'claude-code', '/src/shop', ?)", (now,))
    usage = Usage(old)
    usage.record_injection("s1", "claude-code", ["e1", "e2"], now - 60)
    usage.record_injection("s1", "claude-code", ["e1"], now - 30)
    usage.save_outcomes("s1", [("e1", "broken", "broken: pip install", [{"what": "x"}], now),
                               ("e2", "no occasion", "no occasion", [], None)])
    recorded = {uid: usage.record(uid) for uid in ("e1", "e2")}
    (tmp_path / FILE_NAME).unlink()  # as the older memoryd left it: no file, no offset
    old._db.execute("DELETE FROM meta WHERE key=?", (KEY,))

    log = UsageLog.beside(old)
    replay_usage_log(old, log)  # its first start
    assert log.size() > 0 and old.meta(KEY) == str(log.size())
    old.close()

    rebuilt = Store(tmp_path / "memoryd.db.new")
    replay_usage_log(rebuilt, UsageLog.beside(rebuilt))
    again = Usage(rebuilt)
    assert {uid: again.record(uid) for uid in ("e1", "e2")} == recorded
    assert again.session_rows("s1")[0]["injections"] == 2
    assert again.session_projects(["s1"]) == {"s1": "/src/shop"}
    assert not again.due("s1")  # judged: a rebuilt index does not judge it again
    rebuilt.close()


def test_an_entry_no_session_touched_has_no_history_line_per_session(tmp_path: Path) -> None:
    """Most entries injected into most sessions are judged "no occasion": an event each made
    `memory history` one identical line a session (1,763 of an entry's 1,766 after 1,773
    sessions). Neither the live index, a rebuild, nor an index upgraded from one that wrote
    them has such a line; a verdict that says something keeps its."""
    from memoryd.store.database import Store
    from memoryd.store.usage import Usage
    from memoryd.store.usage_log import UsageLog, replay_usage_log
    from tests.store.test_store import as_schema_26

    store = Store(tmp_path / "memoryd.db")
    usage, now = Usage(store), time.time()
    for n in range(3):
        usage.record_injection(f"s{n}", "claude-code", ["e1", "e2"], now + n)
        usage.save_outcomes(f"s{n}", [("e1", "no occasion", "no occasion", [], None),
                                      ("e2", "broken" if n else "no occasion", "why", [], now)])

    def outcomes(db: Store, uid: str) -> list[tuple[str | None, str]]:
        return [((e["before"] or {}).get("outcome"), e["after"]["outcome"])
                for e in db.events_for([uid]) if e["action"] == "outcome"]

    assert outcomes(store, "e1") == []
    assert outcomes(store, "e2") == [(None, "broken"), (None, "broken")]
    assert usage.record("e1").no_occasion == 3  # counted, as `memory get` shows
    # an index from before wrote one event a session: gone at its upgrade
    store.record_event("e1", "outcome", "memoryd (outcomes)", None,
                       {"session": "s0", "outcome": "no occasion", "why": "no occasion"}, now)
    as_schema_26(store)  # the schema of then: migrations run once
    store._db.execute("PRAGMA user_version=24")
    store.close()
    upgraded = Store(tmp_path / "memoryd.db")
    assert outcomes(upgraded, "e1") == [] and len(outcomes(upgraded, "e2")) == 2
    upgraded.close()
    rebuilt = Store(tmp_path / "memoryd.db.new")
    replay_usage_log(rebuilt, UsageLog.beside(rebuilt))
    assert outcomes(rebuilt, "e1") == [] and len(outcomes(rebuilt, "e2")) == 2
    rebuilt.close()


def test_lines_of_a_transaction_that_failed_are_taken_back(tmp_path: Path) -> None:
    """A write whose transaction fails leaves nothing in the file for a rebuild to apply."""
    import pytest

    from memoryd.store.database import Store
    from memoryd.store.usage import Usage
    from memoryd.store.usage_log import UsageLog

    store = Store(tmp_path / "memoryd.db")
    usage = Usage(store)
    usage.record_injection("s1", "claude-code", ["e1"], time.time())
    size = UsageLog.beside(store).size()
    with pytest.raises(RuntimeError), usage.recording():
        usage.record_injection("s1", "claude-code", ["e2"], time.time())
        raise RuntimeError("the transaction fails")
    assert UsageLog.beside(store).size() == size
    assert usage.record("e2").injected == 0
    store.close()


def test_a_memory_files_lines_keep_their_ids_through_a_rebuild(memoryd_home: Path,
                                                               embedder) -> None:
    """Files are the source of truth, and the index is rebuilt from them: each line of a
    memory file comes back with the id it had (ids were new at every rebuild: `memory get`
    of an id a pass's change or a usage record named said "no entry"), a line written twice
    included."""
    notebook = memoryd_home / "user" / ".claude" / "CLAUDE.md"
    notebook.parent.mkdir(parents=True)
    notebook.write_text("# Preferences\n\n- Answer in British English.\n- Keep answers short."
                        "\n- Keep answers short.\n")

    def ids(client: Client) -> list[tuple[str, str]]:
        return sorted((e["text"], e["id"]) for e in client.list_entries(
            agent="claude-code", limit=50)["entries"])

    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            wait_until(lambda: len(ids(client)) == 3)
            before = ids(client)
    finally:
        running.stop()
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            wait_until(lambda: len(ids(client)) == 3)
            assert ids(client) == before
    finally:
        running.stop()
