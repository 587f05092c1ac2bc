"""A transcript hit is shown with the turns around it (memoryd.retrieval.passage); a later hit
whose turns that passage shows already is left out, and the hits after it fill the limit
(search reads the hits' rows as it needs them, a few beyond the limit at a time)."""

from __future__ import annotations

from pathlib import Path

from memoryd_client import Client

from tests.conftest import wait_until
from tests.ingest.test_ingest import SESSION, assistant, user, write_lines

OTHER = "0e9d4c1b-7a2f-4b3e-8c5d-6f1a2b3c4d5e"


def settled(client: Client) -> bool:
    """No entry waits for its vectors or its words, no file for indexing."""
    status = client.status()
    ingest = status.get("ingest") or {}
    return not ((status["backlog"] or 0) + (status["lexicon"]["entries_behind"] or 0)
                + (ingest.get("queue") or 0) + bool(ingest.get("scanning")))


def test_turns_an_earlier_passage_shows_make_room_for_the_next_hit(
        daemon, client: Client, memoryd_home: Path) -> None:
    project = memoryd_home / "user" / ".claude/projects/-tmp-cafe"
    project.mkdir(parents=True)
    write_lines(project / f"{SESSION}.jsonl", [
        record for i in range(5) for record in (
            user(f"u{i}", f"Grinder burrs setting {i} for the espresso?"),
            assistant(f"a{i}", f"msg_{i}", [{"type": "text", "text": "Noted."}]))])
    elsewhere = [user("v0", "The grinder was cleaned before the market opened.", sessionId=OTHER),
                 assistant("b0", "msg_b0", [{"type": "text", "text": "Good."}])]
    elsewhere[1]["sessionId"] = OTHER
    write_lines(project / f"{OTHER}.jsonl", elsewhere)
    wait_until(lambda: len(client.list_entries(agent="claude-code", kind="turn",
                                               limit=50)["entries"]) == 6 and settled(client))

    hits = client.search("grinder burrs setting espresso", agents=["claude-code"],
                         limit=2)["hits"]

    # the first hit's passage shows the other four exchanges of its session: the second
    # hit is the other session's, read after them
    assert len(hits) == 2
    assert "Grinder burrs setting" in hits[0]["text"]
    assert "cleaned before the market" in hits[1]["text"]
    shown = set(hits[0]["records"])
    assert {f"u{i}" for i in range(5)} <= shown
