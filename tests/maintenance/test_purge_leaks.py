"""What a purge left behind, or let come back (the 2026-12 exploratory test): the outcomes'
events quoting the text, a session judged again after the purge, a forget's change whose reason
mentions it, a memory file's heading holding it, the backup a reindex kept. Real daemon, real
`memory` command, and a rebuild of the index from the files; the state dir is searched byte by
byte (tests/writes/test_secrets.py)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from memoryd_client import Client

from tests.conftest import reindexed, run_cli, start_daemon, wait_until
from tests.sessions.test_usage import (
    SESSION,
    UV,
    claude_transcript,
    hook,
    lessons,
    run_session,
)
from tests.writes.test_secrets import state_holds

SECRET = "quillfeather77"


def outcome_events(entry: str) -> list[dict[str, Any]]:
    shown = run_cli("history", entry, "--json")
    assert shown.returncode == 0, shown.stderr
    return [e for e in json.loads(shown.stdout)["events"] if e["action"] == "outcome"]


def test_the_outcome_events_quoting_the_text_are_scrubbed_and_a_reindex_keeps_them_so(
        memoryd_home: Path, embedder: Any, tmp_path: Path) -> None:
    """A lesson broken by a command holding the text: the purge (which selects no entry)
    replaced it in the outcome and the outcomes file, but the outcome's event in the
    lesson's history (`memory history ID`) still quoted it."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            ids = lessons(c)
            run_session(c, tmp_path, SESSION, [
                ("user", "add rich"),
                ("bash", f"pip install rich --index-url https://pkgs.example/{SECRET}/simple")])
            wait_until(lambda: c.get(ids[UV])["usage"]["broken"] == 1)
            assert SECRET in outcome_events(ids[UV])[0]["after"]["why"]
            done = run_cli("purge", "--agent", "claude-code", "--match", SECRET, "--yes")
            assert done.returncode == 0, done.stderr
            assert f"session {SESSION}: what became of an entry there" in done.stdout
            [event] = outcome_events(ids[UV])
            assert event["after"]["outcome"] == "broken"
            assert event["after"]["why"].startswith(
                "broken: Bash: pip install rich --index-url https://pkgs.example/[PURGED]/simple")
            assert state_holds(memoryd_home, SECRET) == []
    finally:
        running.stop()
    running = reindexed(embedder)  # the events made again from the files
    try:
        [event] = outcome_events(ids[UV])
        assert "[PURGED]" in event["after"]["why"] and SECRET not in event["after"]["why"]
    finally:
        running.stop()
    assert state_holds(memoryd_home, SECRET) == []


def test_a_forget_whose_reason_mentions_the_text_keeps_its_change_and_can_be_undone(
        memoryd_home: Path, embedder: Any) -> None:
    """The forget's reason was replaced in the ledger, but its change (run r…, kept in the
    index and passes.jsonl) was deleted for holding the text: `memory undo` of it said
    "nothing to undo". The change stays, its reason scrubbed, through a reindex too."""
    phone = "628-555-0143"
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            entry = c.remember("alice", "contacts", "Ask Dana about the invoices")["entry"]["id"]
            forgot = run_cli("forget", entry, "--reason", f"ask Marisol at {phone} instead",
                             "--json")
            assert forgot.returncode == 0, forgot.stderr
            run = json.loads(forgot.stdout)["undo"]
            done = run_cli("purge", "--agent", "alice", "--match", phone, "--yes")
            assert done.returncode == 0, done.stderr
            assert f"{entry}: the reason of a forget or supersede" in done.stdout
            assert f"{entry}: the reason of a change in the run log" in done.stdout
            [change] = c.pass_show(run)["changes"]
            assert change["why"].endswith("ask Marisol at [PURGED] instead"), change
            assert state_holds(memoryd_home, phone) == []
    finally:
        running.stop()
    running = reindexed(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            undone = run_cli("undo", run)
            assert undone.returncode == 0, undone.stdout + undone.stderr
            assert c.get(entry)["status"] == "active"
    finally:
        running.stop()
    assert state_holds(memoryd_home, phone) == []


def test_a_session_whose_transcript_holds_the_text_is_not_judged_from_it_again(
        memoryd_home: Path, embedder: Any, tmp_path: Path) -> None:
    """The text only in a tool call of the session's transcript (no indexed turn): the purge
    scrubbed the outcome quoting it, then the session was judged again (resumed; or moved
    on, within a minute) and the outcome quoted it again, in the index and the outcomes
    file. The purge names the transcript and seals the session, through a reindex too."""
    path = tmp_path / f"{SESSION}.jsonl"
    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(tmp_path),
               "source": "startup"}

    def resume_and_show() -> None:
        hook("claude-code", "SessionStart", {**payload, "source": "resume"})
        shown = run_cli("session", "show", SESSION)  # judges what it shows, when due
        assert shown.returncode == 0 and SECRET not in shown.stdout, shown.stdout

    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            ids = lessons(c)
            hook("claude-code", "SessionStart", payload)
            claude_transcript(path, SESSION, [  # said before the purge, as a real one is
                ("user", "add rich"),
                ("bash", f"pip install rich --index-url https://pkgs.example/{SECRET}/simple")],
                start=time.time() - 4)
            hook("claude-code", "SessionEnd", {**payload, "reason": "other"})
            wait_until(lambda: c.get(ids[UV])["usage"]["broken"] == 1)
            done = run_cli("purge", "--agent", "claude-code", "--match", SECRET, "--yes")
            assert done.returncode == 0, done.stderr
            assert f"session {SESSION}: what it did until now is not judged again" \
                in done.stdout, done.stdout
            assert f"still in the agent's transcript {path}" in done.stderr
            resume_and_show()
            assert c.get(ids[UV])["usage"]["broken"] == 1  # what it learned stays
            assert state_holds(memoryd_home, SECRET) == []
    finally:
        running.stop()
    running = reindexed(embedder)
    try:
        resume_and_show()
    finally:
        running.stop()
    assert state_holds(memoryd_home, SECRET) == []


def test_the_heading_of_a_memory_file_selects_its_entries(
        memoryd_home: Path, embedder: Any) -> None:
    """A notebook's heading holding the text is the category of the entries under it (in
    the index: their rows, their full-text postings, their events): the purge said "nothing
    to purge". It selects them as it selects a text, names the file that still holds the
    heading, and lists them without the text; an API entry's category is a name it leaves."""
    phone = "628-555-0143"
    notebook = memoryd_home / "user" / ".claude" / "CLAUDE.md"
    notebook.parent.mkdir(parents=True)
    notebook.write_text(f"# Notes\n## Escalations: call {phone}\n- Page the on-call first.\n"
                        "- Then the team lead.\n## Deploys\n- Ship on Tuesdays only.\n")
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            def listed() -> dict[str, str]:
                return {e["text"]: e["category"] for e in c.list_entries(
                    agent="claude-code", limit=50)["entries"]}

            wait_until(lambda: len(listed()) == 3)
            named = c.remember("claude-code", f"calls-{phone}", "Calls go to the desk phone")
            preview = run_cli("purge", "--agent", "claude-code", "--match", phone)
            assert preview.returncode == 0 and "would purge 2 entries" in preview.stdout, \
                preview.stdout
            assert "escalations-call-[PURGED]" in preview.stdout
            assert phone not in preview.stdout + preview.stderr
            done = run_cli("purge", "--agent", "claude-code", "--match", phone, "--yes")
            assert done.returncode == 0 and "purged 2 entries" in done.stdout, done.stdout
            assert f"still in {notebook}" in done.stderr
            assert listed() == {"Ship on Tuesdays only.": "deploys",
                                "Calls go to the desk phone": f"calls-{phone}"}
            assert c.get(named["entry"]["id"])["category"] == f"calls-{phone}"
            assert run_cli("purge", "--agent", "claude-code", "--match", "desk phone",
                           "--yes").returncode == 0
    finally:
        running.stop()
    assert state_holds(memoryd_home, phone, skip=memoryd_home / "user") == []


def test_the_backup_a_reindex_kept_goes_with_the_purge_and_doctor_names_older_copies(
        memoryd_home: Path, embedder: Any) -> None:
    """`memoryd.db.bak` (the index a reindex replaced) still held the purged entry, and
    neither the purge nor `memory doctor` said so. The purge deletes it (the files rebuild
    it); an index set aside as damaged is kept for the user to look at, so the purge and
    doctor name it, with the command that removes it."""
    secret = "sesame42vault"
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            c.remember("ops", "vault", f"the vault word is {secret}")
            c.remember("ops", "vault", "the vault opens on mondays")
    finally:
        running.stop()
    running = reindexed(embedder)
    bak = memoryd_home / "memoryd.db.bak"
    damaged = memoryd_home / "memoryd.db.corrupt-20261101T090000Z"
    shutil.copy2(bak, damaged)  # as an integrity check at start sets one aside
    try:
        preview = run_cli("purge", "--agent", "ops", "--match", secret)
        assert f"would delete {bak} (the index a reindex replaced" in preview.stdout, \
            preview.stdout
        done = run_cli("purge", "--agent", "ops", "--match", secret, "--yes")
        assert done.returncode == 0 and f"deleted {bak}" in done.stdout, done.stdout
        assert f"maybe still in {damaged}" in done.stderr and f"rm {damaged}*" in done.stderr
        assert not bak.exists()
        assert state_holds(memoryd_home, secret) == [damaged.name]
        report = json.loads(run_cli("doctor", "--json").stdout)
        [database] = [c for c in report["checks"] if c["check"] == "database"]
        assert database["status"] == "warning", database
        assert f"{damaged.name}: a copy of the index from before the last purge" \
            in database["detail"]
        assert database["fix"] == f"delete it: rm {damaged}*"
        damaged.unlink()
        report = json.loads(run_cli("doctor", "--json").stdout)
        [database] = [c for c in report["checks"] if c["check"] == "database"]
        assert database["status"] == "ok", database
    finally:
        running.stop()
    assert state_holds(memoryd_home, secret) == []
