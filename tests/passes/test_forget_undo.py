"""A forget is taken back the way every other change is (L-i of the 2026-11-28 newcomer
report): `memory forget` of an entry written through the API (or of a transcript turn) prints
the run that takes it back, and `memory undo RUN` makes the entry active again under its id,
with its date and its history — also after the index is rebuilt from the files. Real daemon,
real model, the real `memory` command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memoryd_client import Client

from tests.conftest import run_cli, start_daemon
from tests.ingest.test_ingest import eventually
from tests.passes.test_passes import rebuilt_from_files
from tests.passes.test_retain import SESSION_C, one, settled, transcript


def forgotten_with_undo(entry_id: str) -> str:
    """`memory forget ID`; returns the run it names as taking it back."""
    done = run_cli("forget", entry_id, "--reason", "wrong project")
    assert done.returncode == 0, done.stderr
    found = re.search(r"`memory undo (r\d+)` takes it back", done.stdout)
    assert found, done.stdout
    return found.group(1)


def test_a_forgotten_api_entry_comes_back_with_its_id_date_and_history(
        memoryd_home: Path, embedder: Any) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            stored = c.remember("coder", "prefs", "Answer in British English.")["entry"]
            run = forgotten_with_undo(stored["id"])
            assert c.get(stored["id"])["status"] == "forgotten"
            shown = run_cli("pass", "show", run)
            assert shown.returncode == 0 and "forget [applied]" in shown.stdout, shown.stdout
            # what changed, and only that (not "superseded_by: None → None")
            assert "status: 'active' → 'forgotten'" in shown.stdout
            assert "None → None" not in shown.stdout, shown.stdout
            undone = run_cli("undo", run)
            assert undone.returncode == 0, undone.stderr
            back = c.get(stored["id"])
            assert back["status"] == "active" and back["created"] == stored["created"]
            actions = [e["action"] for e in c.history(stored["id"])["events"]]
            assert actions[:2] == ["remember", "forgotten"] and len(actions) == 3
            assert c.search("which spelling do we answer in", agent="coder")["hits"][0]["id"] \
                == stored["id"]
            # the entry can be superseded again: it is an ordinary active entry
            c.supersede(stored["id"], "Answer in British English, with -ise spellings.")
    finally:
        running.stop()
    running = rebuilt_from_files(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            after = c.get(stored["id"])
            assert after["status"] == "superseded" and after["created"] == stored["created"]
            nothing = run_cli("undo", run)  # the forget was undone already, also after a rebuild
            assert nothing.returncode == 1 and "nothing to undo" in nothing.stderr
    finally:
        running.stop()


def test_a_forgotten_transcript_turn_comes_back_and_stays_back_after_a_rebuild(
        memoryd_home: Path, embedder: Any) -> None:
    home = memoryd_home / "user"
    transcript(home, SESSION_C, ("who restocks the sticker printer?",
                                 "Tomasz restocks it every Tuesday."))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            turn = eventually(lambda: (settled(c), one(c, "Tomasz"))[1])
            run = forgotten_with_undo(turn["id"])
            assert c.get(turn["id"])["status"] == "forgotten"
            assert run_cli("undo", run).returncode == 0
            assert c.get(turn["id"])["status"] == "active"
    finally:
        running.stop()
    running = rebuilt_from_files(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            eventually(lambda: settled(c))
            assert c.get(turn["id"])["status"] == "active"
    finally:
        running.stop()
