"""D8: a daemon restart in the middle of an exchange (the user asked, the answer comes after the
restart) leaves one exchange entry, as a fresh read of the whole file does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.ingest.open_exchange import load_open_turns, save_open_turns
from memoryd.ingest.transcript import Turn, chunk_exchanges
from memoryd.store.database import Store
from tests.conftest import start_daemon, wait_until
from tests.ingest.test_ingest import SESSION, assistant, user


def turns(client: Client) -> list[dict]:
    """The transcript's turn chunks as stored (a search shows adjacent chunks as one passage)."""
    return client.list_entries(agent="claude-code", kind="turn", status="any",
                               limit=50)["entries"]


def turn_chunks(client: Client) -> list[str]:
    return sorted(e["text"] for e in turns(client))


def append(path: Path, records: list[dict]) -> None:
    with path.open("a") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


@pytest.mark.parametrize("how", ["stop", "kill -9"])
def test_a_restart_mid_exchange_does_not_split_it(how: str, memoryd_home: Path, embedder) -> None:
    home = memoryd_home / "user"
    project = home / ".claude/projects/-tmp-cafe"
    project.mkdir(parents=True)
    path = project / f"{SESSION}.jsonl"
    append(path, [user("u1", "How do I calibrate the espresso grinder burrs?")])
    if how == "stop":
        running = start_daemon(embedder)
        with Client(running.socket) as c:
            wait_until(lambda: len(turn_chunks(c)) == 1)
        running.stop()
    else:
        env = {**os.environ, "MEMORYD_EMBED_MODEL": str(memoryd_home / "no-model")}
        proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: (memoryd_home / "memoryd.sock").exists(), 60)
            with Client(memoryd_home / "memoryd.sock") as c:
                wait_until(lambda: len(turn_chunks(c)) == 1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    append(path, [assistant("a1", "msg_1", [{"type": "text", "text":
                  "Start two steps finer than the factory setting and dial in by taste."}])])
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            wait_until(lambda: any("dial in" in t for t in turn_chunks(c)))
            [chunk] = turn_chunks(c)
            assert "User: How do I calibrate" in chunk and "Assistant: Start two steps" in chunk
            # memoryd's own "Assistant:" label is not a planted role tag, whether the answer
            # came later (the chunk updated) or with its question (read at once)
            append(path, [user("u2", "And how fine for the espresso grinder on a moka pot?"),
                          assistant("a2", "msg_2", [{"type": "text", "text": "Coarser."}])])
            wait_until(lambda: len(turn_chunks(c)) == 2)
            assert [e["quarantined"] for e in turns(c)] == [False, False]
    finally:
        running.stop()


def test_a_chat_saying_go_on_again_and_again_keeps_each_exchange(memoryd_home: Path,
                                                                  embedder) -> None:
    """A chat log with no ids, where the user says "go on" after each answer: each of those
    exchanges is kept and found (the second replaced the first, and "egret" was gone), and
    one more after a restart of the daemon is kept beside them."""
    chats = memoryd_home / "user" / "chats"
    chats.mkdir()
    path = chats / "heron.jsonl"
    said = [("user", "Let us plan the heron migration"),
            ("assistant", "Phase A: freeze writes to the heron cluster"),
            ("user", "go on"), ("assistant", "Phase B: copy the egret indexes"),
            ("user", "go on"), ("assistant", "Phase C: switch the readers over")]
    append(path, [{"role": role, "content": text} for role, text in said])
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.sources("add", name="chats", path=str(chats / "*.jsonl"), kind="transcript",
                      format="generic", agent="planner")
            wait_until(lambda: len(planner_turns(c)) == 3)
            assert any("egret" in t for t in planner_turns(c))
            assert c.search("egret indexes", agent="planner")["hits"]
    finally:
        running.stop()
    append(path, [{"role": "user", "content": "go on"},
                  {"role": "assistant", "content": "Phase D: the ibis cutover"}])
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            wait_until(lambda: len(planner_turns(c)) == 4)
            texts = planner_turns(c)
            assert [sum(word in t for t in texts) for word in ("Phase A", "egret", "Phase C",
                                                                "ibis")] == [1, 1, 1, 1]
    finally:
        running.stop()


def planner_turns(client: Client) -> list[str]:
    return [e["text"] for e in client.list_entries(agent="planner", kind="turn",
                                                   limit=50)["entries"]]


def test_a_transcript_renamed_mid_exchange_keeps_it_whole(daemon, client: Client,
                                                         memoryd_home: Path) -> None:
    """A harness that moves its session file (an archive folder, a new name) between a question
    and its answer: the answer joins its question, as it does when the file stays put."""
    project = memoryd_home / "user" / ".claude/projects/-tmp-cafe"
    project.mkdir(parents=True)
    path = project / f"{SESSION}.jsonl"
    append(path, [user("u1", "How do I calibrate the espresso grinder burrs?")])
    wait_until(lambda: len(turn_chunks(client)) == 1)
    moved = project / "renamed.jsonl"
    os.rename(path, moved)
    wait_until(lambda: turns(client)[0]["source"] == str(moved))
    append(moved, [assistant("a1", "msg_1", [{"type": "text", "text":
                   "Start two steps finer than the factory setting and dial in by taste."}])])
    wait_until(lambda: any("dial in" in t for t in turn_chunks(client)))
    [chunk] = turn_chunks(client)
    assert "User: How do I calibrate" in chunk and "Assistant: Start two steps" in chunk


def test_a_transcript_renamed_over_another_continues_its_own_exchange(
        daemon, client: Client, memoryd_home: Path) -> None:
    """A session file moved over another one (a harness that rotates its files): the answer
    appended after the move joins the moved file's open question, not the replaced file's."""
    project = memoryd_home / "user" / ".claude/projects/-tmp-cafe"
    project.mkdir(parents=True)
    replaced, moving = project / f"{SESSION}.jsonl", project / "next.jsonl"
    append(replaced, [user("r1", "How do I calibrate the espresso grinder burrs?")])
    append(moving, [user("m1", "Which beans suit a moka pot?"),
                    assistant("m2", "msg_m2", [{"type": "text", "text": "A medium roast."}]),
                    user("m3", "How long should the moka pot cool before cleaning?")])
    wait_until(lambda: any("cool before" in t for t in turn_chunks(client))
               and any("grinder burrs" in t for t in turn_chunks(client)))
    os.rename(moving, replaced)
    append(replaced, [assistant("m4", "msg_m4", [{"type": "text", "text":
                      "Let it cool for five minutes under a cold tap."}])])
    wait_until(lambda: any("five minutes" in t for t in turn_chunks(client)))
    [answered] = [t for t in turn_chunks(client) if "five minutes" in t]
    assert "cool before cleaning" in answered and "grinder burrs" not in answered


def test_an_open_exchange_keeps_its_speakers_names_across_a_restart(tmp_path: Path) -> None:
    """The open turns are stored with the file's offset: a named chat's question keeps its
    speaker's name when its answer arrives after a restart."""
    asked = Turn(record_id="s:1", session_id="s", role="user", text="is the kiln fixed?",
                 timestamp=None, cwd=None, sidechain_agent=None, message_id=None,
                 speaker="Caroline")
    store = Store(tmp_path / "db")
    with store.transaction():
        save_open_turns(store, "/chats/s.jsonl", [asked])
    store.close()
    reopened = Store(tmp_path / "db")
    [loaded] = load_open_turns(reopened, "/chats/s.jsonl")
    reopened.close()
    answer = Turn(record_id="s:2", session_id="s", role="assistant", text="yes, Tuesday",
                  timestamp=None, cwd=None, sidechain_agent=None, message_id=None,
                  speaker="Melanie")
    [chunk] = chunk_exchanges([loaded, answer])
    assert chunk.text == "User (Caroline): is the kiln fixed?\n\nAssistant (Melanie): yes, Tuesday"
