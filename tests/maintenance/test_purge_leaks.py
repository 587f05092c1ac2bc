"""What a purge left behind, or let come back (the 2026-12 exploratory test): the outcomes'
events quoting the text, a session judged again after the purge, a forget's change whose reason
mentions it, a memory file's heading holding it, the backup a reindex kept. Real daemon, real
`memory` command, and a rebuild of the index from the files; the state dir is searched byte by
byte (tests/writes/test_secrets.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryd_client import Client

from tests.conftest import run_cli, start_daemon, wait_until
from tests.maintenance.test_purge import reindexed
from tests.sessions.test_usage import SESSION, UV, lessons, run_session
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
    running = reindexed(memoryd_home, embedder)  # the events made again from the files
    try:
        [event] = outcome_events(ids[UV])
        assert "[PURGED]" in event["after"]["why"] and SECRET not in event["after"]["why"]
    finally:
        running.stop()
    assert state_holds(memoryd_home, SECRET) == []
