"""What a rebuilt index keeps of the session registry: a session whose transcript is gone is
listed again from its archived turns. Real daemon, real `memoryd reindex`, real files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from memoryd_client import Client

from tests.conftest import run_cli, run_memoryd, start_daemon
from tests.ingest.test_ingest import assistant, eventually, user, write_lines
from tests.sessions.test_usage import iso

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
    result = run_memoryd("reindex", "--no-vectors")
    assert result.returncode == 0, result.stderr
    running = start_daemon(embedder)
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
