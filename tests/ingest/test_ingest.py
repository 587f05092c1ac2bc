"""Live ingestion with real files, the real watcher and the real daemon."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
import sqlite_vec
from memoryd_client import Client, wire

from tests.conftest import run_memoryd, start_daemon, wait_until

NOTEBOOK = """\
# Designer Agent Memory
## Mistakes
- [2026-03-15] Generated sticker with floating speech bubble,
  disconnected from character. Die-cut requires a single continuous
  shape.
## Learnings
- [2026-03-14] The image model sometimes pre-removes the green background.
## Shareholder Feedback
- [2026-03-10] "Sticker designs must feature illustration or visual humor."
## Session Log
- [2026-03-15] WQ-3412: created the cyberpunk cat sticker, passed QA.
"""

SESSION = "5b0c2e9a-1f3d-4c8e-9a6b-2d7f0e1c3b5a"


def cc(kind: str, uuid: str, **extra: Any) -> dict[str, Any]:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/tmp",
            "sessionId": SESSION, "version": "2.1.201", "type": kind, "uuid": uuid,
            "timestamp": "2026-06-01T09:58:00.000Z", **extra}


def user(uuid: str, text: Any, **extra: Any) -> dict[str, Any]:
    return cc("user", uuid, message={"role": "user", "content": text}, **extra)


def assistant(uuid: str, message_id: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return cc("assistant", uuid, requestId="req_" + message_id, message={
        "model": "claude-opus-4-5", "id": message_id, "type": "message", "role": "assistant",
        "content": blocks, "stop_reason": None})


def search(client: Client, query: str, **filters: Any) -> list[dict[str, Any]]:
    return client.search(query, **{"agents": ["*"], **filters})["hits"]


def eventually(fn, timeout_s: float = 15.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = fn()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        else:
            return result
        time.sleep(0.05)


@pytest.fixture
def home(memoryd_home: Path) -> Path:
    return memoryd_home / "user"


def test_notebook_bullets_are_indexed_with_kinds_dates_and_spans(home: Path, daemon, client) -> None:
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "notebook.md").write_text(NOTEBOOK)

    eventually(lambda: _entries(client, "designer", 4))
    [mistake] = [h for h in search(client, "die-cut continuous shape", agent="designer")
                 if h["category"] == "mistakes"]
    assert mistake["kind"] == "lesson" and mistake["polarity"] == "negative"
    assert (mistake["line_start"], mistake["line_end"]) == (3, 5)
    assert mistake["source"] == str(memory / "notebook.md") and mistake["via"] == "watch"
    assert time.strftime("%Y-%m-%d", time.gmtime(mistake["created"])) == "2026-03-15"
    [feedback] = search(client, "visual humor", agent="designer", category="shareholder-feedback")
    assert feedback["kind"] == "feedback"
    [learning] = search(client, "green background", agent="designer", category="learnings")
    assert learning["kind"] == "lesson" and learning["polarity"] == "positive"


def test_a_bullet_moved_to_another_section_is_filtered_by_its_new_section(
        home: Path, daemon, client) -> None:
    """Moving a bullet between sections changes its entry's category and kind, not its text
    (no new vector): filters must see the new ones, on the vector side too (the question
    shares no word with the bullet)."""
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    notebook = memory / "notebook.md"
    notebook.write_text(NOTEBOOK)
    question = "chroma key backdrop vanishes before we get the artwork"

    def found(category: str, expected: bool = False) -> list[dict[str, Any]]:
        hits = [h for h in search(client, question, agent="designer", category=category)
                if "green background" in h["text"]]
        assert hits or not expected
        return hits

    [learning] = eventually(lambda: found("learnings", True))  # once it has its vector
    assert learning["score"]["keyword"] is None  # found by its vector alone
    notebook.write_text(NOTEBOOK.replace(
        "## Learnings\n- [2026-03-14] The image model sometimes pre-removes the green background.\n",
        "## Learnings\n").replace(
        "## Shareholder Feedback\n", "## Shareholder Feedback\n"
        "- [2026-03-14] The image model sometimes pre-removes the green background.\n"))

    def moved() -> list[dict[str, Any]]:
        hits = found("shareholder-feedback", True)
        assert hits[0]["kind"] == "feedback"
        return hits

    assert eventually(moved)[0]["id"] == learning["id"]
    assert not found("learnings")
    assert not [h for h in search(client, question, agent="designer", kind="lesson")
                if "green background" in h["text"]]


LONG_BULLET = (
    "- [2026-03-16] The plotter tears tentacles thinner than 1.5 mm off the sticker sheet, so "
    "the octopus stickers for the autumn fair came out ragged twice this week. Order the 45 "
    "degree blades from the usual supplier before the next batch; the invoice goes to the "
    "accountant every Monday. The firmware update on Tuesday made the plotter cut two sheets "
    "a minute. Keep the spare cutting mats in the cupboard next to the printer, never on the "
    "shelf above the radiator. Ask Dana before ordering more than fifty blades at once: she "
    "keeps the budget sheet for the shop. The fair opens on the third Saturday of October.\n")


def test_a_long_entry_is_searchable_by_its_sentences_then_refined(
        home: Path, daemon, client, embedder) -> None:
    """A long entry from a file is searchable once its sentences are embedded (its vector
    their mean: its text runs through the model once before that); then its text is run
    whole in the background, and its vector is the one a single write would give it."""
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "notebook.md").write_text("# Designer Agent Memory\n## Learnings\n" + LONG_BULLET)
    [entry] = eventually(lambda: _entries(client, "designer", 1))
    eventually(lambda: _refined(client))
    [hit] = search(client, "which blades for the plotter", agent="designer")
    assert hit["id"] == entry["id"]
    text = LONG_BULLET[len("- [2026-03-16] "):].strip()
    [(whole, parts)] = embedder.embed_entries([entry["text"]])
    assert len(parts) > 2 and float(whole @ embedder.embed([text])[0]) > 0.9
    stored = _stored_vector(daemon.config.db_path, entry["id"])
    mean = parts.mean(axis=0) / np.linalg.norm(parts.mean(axis=0))
    assert float(stored @ whole) > 0.97 > float(stored @ mean)


def _refined(client: Client) -> bool:
    status = client.status()
    assert status["backlog"] == 0 and status["refining"] == 0
    return True


def _stored_vector(db_path: Path, uid: str) -> np.ndarray:
    """An entry's vector as the database holds it, read beside the daemon."""
    db = apsw.Connection(f"file:{db_path}?mode=ro",
                         flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    try:
        (blob,), = db.execute("SELECT v.embedding FROM entries e JOIN entries_vec v "
                              "ON v.rowid = e.id WHERE e.uid = ?", (uid,))
    finally:
        db.close()
    return np.frombuffer(blob, dtype=np.float32)


def test_editing_one_bullet_changes_only_that_entry(home: Path, daemon, client) -> None:
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    path = memory / "notebook.md"
    path.write_text(NOTEBOOK)
    before = eventually(lambda: _entries(client, "designer", 4))
    path.write_text(NOTEBOOK.replace("pre-removes the green background", "keeps the green backdrop"))
    after = eventually(lambda: _changed(client, before))
    kept = {e["id"] for e in after} & {e["id"] for e in before}
    assert len(kept) == 3 and len(after) == 4
    [new] = [e for e in after if e["id"] not in kept]
    assert "green backdrop" in new["text"] and new["line_start"] == 7
    [gone] = [e for e in before if e["id"] not in kept]
    events = client.history(gone["id"])["events"]
    assert [e["action"] for e in events] == ["indexed", "removed"]


def _entries(client: Client, agent: str, count: int) -> list[dict[str, Any]]:
    """All of an agent's entries, once indexed and embedded (vector search ranks them all)."""
    status = client.status()
    assert status["backlog"] == 0 and status["ingest"]["queue"] == 0
    hits = search(client, "sticker green humor cat", agent=agent, limit=50)
    assert len(hits) == count, len(hits)
    return hits


def _changed(client: Client, before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    after = _entries(client, "designer", 4)
    assert {e["id"] for e in after} != {e["id"] for e in before}
    return after


def test_a_renamed_file_keeps_its_entries(home: Path, daemon, client) -> None:
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "old.md").write_text("- Always export stickers at 300 dpi.\n")
    [entry] = eventually(lambda: _one(client, "300 dpi"))
    os.rename(memory / "old.md", memory / "new.md")
    moved = eventually(lambda: _moved(client, str(memory / "new.md")))
    assert moved["id"] == entry["id"]
    assert "moved" in [e["action"] for e in client.history(entry["id"])["events"]]


def _one(client: Client, query: str) -> list[dict[str, Any]]:
    hits = search(client, query, match=True)
    assert len(hits) == 1
    return hits


def _moved(client: Client, path: str) -> dict[str, Any]:
    [hit] = _one(client, "300 dpi")
    assert hit["source"] == path
    return hit


def test_pinned_and_frontmatter_are_kept_for_the_file(home: Path, daemon, client, memoryd_home) -> None:
    memory = home / ".mastersof-ai/agents/coder/memory"
    (memory / "system").mkdir(parents=True)
    (memory / "CONTEXT.md").write_text("I am the coder agent. I prefer small commits.\n")
    (memory / "deploys.md").write_text("---\ndescription: How we deploy\ntype: project\n---\n- Use the release workflow.\n")
    eventually(lambda: _one(client, "release workflow"))
    eventually(lambda: _one(client, "small commits"))
    import apsw

    db = apsw.Connection(str(memoryd_home / "memoryd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    rows = {Path(p).name: (pinned, d, t) for p, pinned, d, t in
            db.execute("SELECT path, pinned, description, type FROM files")}
    assert rows["CONTEXT.md"][0] == 1
    assert rows["deploys.md"] == (0, "How we deploy", "project")


def write_lines(path: Path, records: list[Any], *, partial_tail: str = "") -> None:
    with path.open("a") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")
        handle.write(partial_tail)
        handle.flush()


def test_claude_code_transcript_is_tailed_once_without_noise(home: Path, memoryd_home, embedder) -> None:
    project = home / ".claude/projects/-tmp-shop"
    project.mkdir(parents=True)
    path = project / f"{SESSION}.jsonl"
    path.write_text("")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
            first = json.dumps(user("u1", f"please rotate the deploy token {secret} before friday"))
            write_lines(path, [], partial_tail=first[:40])  # a partial line: nothing yet
            time.sleep(0.4)
            write_lines(path, [first[40:]])
            write_lines(path, [
                assistant("a1", "msg_1", [{"type": "thinking", "thinking": "secret plan"}]),
                assistant("a2", "msg_1", [{"type": "text", "text": "Rotating the token with the vault CLI."}]),
                assistant("a3", "msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "vault rotate"}}]),
                user("u2", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rotated-ok-output"}]),
                cc("attachment", "at1", attachment={"type": "hook_additional_context", "content": wire.INJECTION_MARKER + "\ninjected memory block"}),
                user("u3", wire.INJECTION_MARKER + "\nechoed memory block text"),
                user("u4", "<command-name>/clear</command-name>"),
            ])
            eventually(lambda: _one(client, "rotate deploy token"))
            assert search(client, "rotated-ok-output", match=True) == []
            assert search(client, "secret plan", match=True) == []
            assert search(client, "echoed memory block", match=True) == []
            assert search(client, secret, match=True) == []
            [hit] = _one(client, "rotate deploy token")
            assert secret not in hit["text"] and "[REDACTED" in hit["text"]
            assert "Rotating the token with the vault CLI." in hit["text"]
            assert hit["agent"] == "claude-code" and hit["kind"] == "turn" and hit["session"] == SESSION
            write_lines(path, [
                cc("system", "c1", subtype="compact_boundary", content="Conversation compacted",
                   compactMetadata={"trigger": "auto", "preTokens": 155025}),
                user("c2", [{"type": "text", "text": "This session is being continued. Summary: the team moved deploys to the release train."}],
                     isCompactSummary=True, isVisibleInTranscriptOnly=True),
            ])
            [summary] = eventually(lambda: _one(client, "release train"))
            assert summary["kind"] == "summary"
            # the lines left out on purpose (a slash command, memoryd's own block) are no
            # problem of the file: `memory status` had warned of one in every such session
            status = client.call("status", {})
            assert "skipped" not in [c["check"] for c in status["health"]["checks"]]
            write_lines(path, ["{not json"])

            def named() -> None:
                checks = client.call("status", {})["health"]["checks"]
                assert [c["detail"] for c in checks if c["check"] == "skipped"] == [
                    f"1 malformed line skipped in {path.name} (the rest of it is indexed)"]
            eventually(named)
        running.stop()
        # a restart resumes at the stored offset: nothing is indexed twice
        write_lines(path, [user("u9", "one more question about the release train cadence")])
        running = start_daemon(embedder)
        with Client(running.socket) as client:
            eventually(lambda: _one(client, "cadence"))
            chunks = [e for e in client.list_entries(status="any", limit=1000)["entries"]
                      if e["session"] == SESSION]
            texts = [e["text"] for e in chunks]
            assert len(texts) == len(set(texts)), texts
            assert [e["kind"] for e in chunks].count("summary") == 1
            assert sum("cadence" in text for text in texts) == 1
            sessions = client.call("sessions", {})["sessions"]
            assert [(s["id"], s["harness"], s["user_messages"]) for s in sessions] == [(SESSION, "claude-code", 2)]
    finally:
        running.stop()


def test_an_exchange_searched_before_its_answer_is_scored_by_the_answer_too(
        home: Path, daemon, client) -> None:
    """A transcript chunk grows when its answer arrives; search weighs the words it has now,
    not those it had when it was first a candidate."""
    project = home / ".claude/projects/-tmp-shop"
    project.mkdir(parents=True)
    path = project / f"{SESSION}.jsonl"
    write_lines(path, [user("u1", "how should we deploy the billing worker")])
    [first] = eventually(lambda: _one(client, "deploy the billing worker"))
    assert "zeppelin" not in first["text"]
    write_lines(path, [
        assistant("a1", "msg_1", [{"type": "text", "text": "Through the zeppelin pipeline."}]),
        user("u2", "thanks, and the invoices?"),
    ])

    def answered() -> dict[str, Any]:
        hits = search(client, "zeppelin pipeline billing worker")
        assert hits and "zeppelin" in hits[0]["text"]
        return hits[0]

    hit = eventually(answered)
    assert hit["id"] == first["id"]
    assert hit["evidence"]["coverage"] == 1.0


def test_codex_rollout_is_indexed(home: Path, daemon, client) -> None:
    day = home / ".codex/sessions/2026/03/02"
    day.mkdir(parents=True)
    path = day / "rollout-2026-03-02T09-14-05-019c2a7e-3b1d-7c40-9e1a-5d2f8a0b4c11.jsonl"
    write_lines(path, [
        {"timestamp": "2026-03-02T09:14:05.120Z", "type": "session_meta", "payload": {"id": "019c2a7e-3b1d-7c40-9e1a-5d2f8a0b4c11", "timestamp": "2026-03-02T09:14:05.101Z", "cwd": "/tmp", "originator": "codex_cli_rs", "cli_version": "0.98.0", "source": "cli", "model_provider": "openai"}},
        {"timestamp": "2026-03-02T09:14:40.002Z", "type": "event_msg", "payload": {"type": "user_message", "message": "add an idempotency key to the charge endpoint", "images": []}},
        {"timestamp": "2026-03-02T09:14:40.003Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add an idempotency key to the charge endpoint"}]}},
        {"timestamp": "2026-03-02T09:15:10.400Z", "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"rg charge\"}", "call_id": "call_7"}},
        {"timestamp": "2026-03-02T09:15:20.400Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "phase": "final_answer", "content": [{"type": "output_text", "text": "Added an Idempotency-Key header check to the charge handler."}]}},
    ])
    [hit] = eventually(lambda: _one(client, "idempotency key charge"))
    assert hit["agent"] == "codex" and "Idempotency-Key header" in hit["text"]
    assert all("exec_command" not in h["text"] and "rg charge" not in h["text"]
               for h in search(client, "rg charge exec_command"))  # the tool call is not indexed


def test_generic_transcripts_numbering_their_messages_alike_are_all_kept(
        home: Path, daemon, client) -> None:
    """Two chats whose messages carry ids 1, 2 in each file: the second file's first exchange
    replaced the first file's, which was gone from search."""
    chats = home / "chats"
    chats.mkdir()
    client.sources("add", name="chats", path=str(chats / "*.jsonl"), kind="transcript",
                   format="generic", agent="chatter")
    for name, session, question, answer in (
            ("a", "A", "What is the capital of Peru?", "Lima."),
            ("b", "B", "How tall is Mount Fuji?", "3,776 metres.")):
        write_lines(chats / f"{name}.jsonl", [
            {"id": 1, "role": "user", "content": question, "session_id": session},
            {"id": 2, "role": "assistant", "content": answer, "session_id": session}])
    eventually(lambda: _one(client, "How tall is Mount Fuji"))
    eventually(lambda: _one(client, "What is the capital of Peru"))
    turns = client.list_entries(agents=["chatter"], kind=["turn"])["entries"]
    assert sorted(" ".join(t["text"].split()) for t in turns) == [
        "User: How tall is Mount Fuji? Assistant: 3,776 metres.",
        "User: What is the capital of Peru? Assistant: Lima."]
    from tests.conftest import run_cli

    listed = run_cli("list", "chatter").stdout  # one exchange a line, for grep and head
    assert len(listed.splitlines()) == 2 and "Peru? Assistant: Lima." in listed


def test_a_log_of_many_chats_registers_each_and_an_emptied_one_counts_once(
        home: Path, daemon, client) -> None:
    """A file whose lines name their chat (``conversation_id``) holds three sessions: each is
    registered with its own messages and dates (only the last one was, holding them all, and
    the others were never extracted). A log emptied and written again counts its messages
    once, and an empty file is no session."""
    chats = home / "exports"
    chats.mkdir()
    client.sources("add", name="exports", path=str(chats / "*.jsonl"), kind="transcript",
                   format="generic", agent="exporter")
    many = chats / "all.jsonl"
    write_lines(many, [{"conversation_id": chat, "role": role, "content": f"{chat} {role} {n}",
                        "timestamp": f"2026-0{month}-0{n + 1}T10:00:00Z"}
                       for month, chat in enumerate(("mx-one", "mx-two", "mx-three"), 1)
                       for n in range(3) for role in ("user", "assistant")])
    (chats / "empty.jsonl").touch()

    def sessions() -> dict[str, Any]:  # a chat named by a short id is one of its file's
        return {s["id"].rpartition(":")[2] if s["id"].startswith("all-") else s["id"]: s
                for s in client.call("sessions", {})["sessions"]}

    wait_until(lambda: sessions().get("mx-three", {}).get("user_messages") == 3)
    found = sessions()
    assert {chat: found[chat]["user_messages"] for chat in ("mx-one", "mx-two", "mx-three")} \
        == {"mx-one": 3, "mx-two": 3, "mx-three": 3}
    assert time.strftime("%Y-%m-%d", time.gmtime(found["mx-two"]["started"])) == "2026-02-01"
    assert not [s for s in found if s.startswith("empty")]
    single = chats / "one.jsonl"
    lines = [{"role": role, "content": f"kiln {role} {n}"} for n in range(2)
             for role in ("user", "assistant")]
    write_lines(single, lines)
    wait_until(lambda: any(s.startswith("one-") for s in sessions()))
    [one] = [s for s in sessions() if s.startswith("one-")]
    wait_until(lambda: sessions()[one]["user_messages"] == 2)
    single.write_text("")  # emptied, then the same lines again
    time.sleep(0.5)
    write_lines(single, lines)
    time.sleep(1.0)
    assert sessions()[one]["user_messages"] == 2


def test_two_files_chats_numbered_alike_are_two_chats_and_both_are_kept(
        home: Path, daemon, client) -> None:
    """Two exports (and another agent's log) whose chats are numbered 1 with messages
    numbered 1, 2: each file's chat is its own, nothing of one replaces the other's (the
    later file's exchange took the earlier's place, and the other agent's took both)."""
    for name, agent in (("exports", "mybot"), ("others", "otherbot")):
        (home / name).mkdir()
        client.sources("add", name=name, path=str(home / name / "*.jsonl"), kind="transcript",
                       format="generic", agent=agent)
    words = {"exports/a.jsonl": "heron", "exports/b.jsonl": "egret", "others/o.jsonl": "ibis"}
    for path, word in words.items():
        write_lines(home / path, [
            {"session_id": 1, "id": 1, "role": "user", "content": f"where does the {word} nest?"},
            {"session_id": 1, "id": 2, "role": "assistant",
             "content": ["in the reeds,", f"the {word} nests low"]}])  # LangChain's strings

    def found(agent: str, word: str) -> list[str]:
        return [h["text"] for h in client.search(f"{word} nest", agents=[agent])["hits"]
                if word in h["text"]]

    wait_until(lambda: all(found(a, w) for a, w in
                           (("mybot", "heron"), ("mybot", "egret"), ("otherbot", "ibis"))))
    assert "the heron nests low" in found("mybot", "heron")[0]
    assert not found("mybot", "ibis") and not found("otherbot", "heron")
    listed = {s["id"] for s in client.call("sessions", {})["sessions"]}
    assert len([s for s in listed if s.endswith(":1")]) == 3


def test_two_sessions_whose_records_share_an_id_keep_both_exchanges(
        home: Path, daemon, client) -> None:
    """A record was found by its id across every file: two logs whose first lines were alike
    (a short id, `u1`, and the same "go on"), or two Copilot sessions numbering their events
    `u1`, `e2`, kept one exchange: the second's text under the first's session and project.
    A record's identity is its session's now (a record copied into another file of the same
    session is still found once); an id-less Copilot event is indexed too."""
    (home / "logs").mkdir()
    client.sources("add", name="logs", path=str(home / "logs/*.jsonl"), kind="transcript",
                   format="generic", agent="mybot")
    for name, answer in (("a", "the heron nests in the reeds"), ("b", "the egret nests high")):
        write_lines(home / f"logs/{name}.jsonl", [
            {"id": "u1", "role": "user", "content": "go on"},
            {"id": "e2", "role": "assistant", "content": answer}])
    for session, word in (("0a1b2c3d-0000-4000-8000-00000000000a", "kestrel"),
                          ("0a1b2c3d-0000-4000-8000-00000000000b", "merlin")):
        events = home / f".copilot/session-state/{session}/events.jsonl"
        events.parent.mkdir(parents=True)
        write_lines(events, [
            {"type": "session.start", "id": "s0", "data": {"sessionId": session}},
            {"type": "user.message", "id": "u1", "data": {"content": f"where is the {word}?"}},
            {"type": "assistant.message", "id": "e2",
             "data": {"content": f"the {word} is on the ridge"}},
            {"type": "user.message", "data": {"content": f"and the {word}'s nest, no id?"}},
            {"type": "assistant.message", "data": {"content": f"the {word} nests in a scrape"}}])

    def said() -> dict[str, tuple[str | None, str]]:
        entries = client.list_entries(agents=["mybot", "copilot"], kind=["turn"],
                                      limit=50)["entries"]
        return {e["text"].split("Assistant: ")[-1]: (e["session"], e["agent"]) for e in entries}

    wait_until(lambda: len(said()) == 6)
    found = said()
    heron, egret = found["the heron nests in the reeds"][0], found["the egret nests high"][0]
    assert (heron or "").startswith("a-") and (egret or "").startswith("b-")  # each its file's
    for word, session in (("kestrel", "0a1b2c3d-0000-4000-8000-00000000000a"),
                          ("merlin", "0a1b2c3d-0000-4000-8000-00000000000b")):
        assert found[f"the {word} is on the ridge"] == (session, "copilot")
        assert found[f"the {word} nests in a scrape"] == (session, "copilot")
    sessions = {s["id"]: s for s in client.call("sessions", {})["sessions"]}
    assert sessions["0a1b2c3d-0000-4000-8000-00000000000a"]["user_messages"] == 2


def test_records_of_two_sessions_sharing_an_id_stay_two_through_a_reindex(
        home: Path, embedder) -> None:
    """The exchange a second session's record of the same id makes has an id of its own; a
    reindex (which keeps the transcripts' entries, then reads the files again) keeps the
    two, each once, and each file's own."""
    (home / ".copilot/session-state").mkdir(parents=True)
    for session, word in (("0a1b2c3d-0000-4000-8000-00000000000a", "kestrel"),
                          ("0a1b2c3d-0000-4000-8000-00000000000b", "merlin")):
        (home / f".copilot/session-state/{session}").mkdir()
        write_lines(home / f".copilot/session-state/{session}/events.jsonl", [
            {"type": "session.start", "id": "s0", "data": {"sessionId": session}},
            {"type": "user.message", "id": "u1", "data": {"content": f"where is the {word}?"}},
            {"type": "assistant.message", "id": "e2",
             "data": {"content": f"the {word} is on the ridge"}}])

    def turns(client: Client) -> list[tuple[str, str]]:
        return sorted((e["text"].split("Assistant: ")[-1], e["source"].split("/")[-2][-1])
                      for e in client.list_entries(agent="copilot", kind=["turn"],
                                                   status="any", limit=50)["entries"])

    expected = [("the kestrel is on the ridge", "a"), ("the merlin is on the ridge", "b")]
    for rebuild in (False, True):
        if rebuild:
            result = run_memoryd("reindex", "--no-vectors")
            assert result.returncode == 0, result.stderr
        running = start_daemon(embedder)
        try:
            watcher = running.daemon.watcher
            assert watcher is not None
            wait_until(lambda w=watcher: w.initial.finished is not None and not w.pending)
            with Client(running.socket) as client:  # every file read: two, not four
                assert turns(client) == expected
        finally:
            running.stop()


def test_a_notebook_emptied_and_written_again_keeps_its_entries_ids(
        home: Path, daemon, client) -> None:
    """An editor that saves in place empties the file, then writes it: when the watcher
    reads it empty in between, the bullets leave the index; written back, each keeps the id
    it had (its history, its use, what cites it), not a new one."""
    notebook = home / ".claude" / "CLAUDE.md"
    notebook.parent.mkdir(parents=True)
    text = "- Ship on Tuesdays only.\n- Never push on Fridays.\n- Keep answers short.\n"
    notebook.write_text(text)

    def ids() -> list[str]:
        return sorted(e["id"] for e in client.list_entries(agent="claude-code",
                                                           limit=50)["entries"])

    wait_until(lambda: len(ids()) == 3)
    before = ids()
    notebook.write_text("")
    wait_until(lambda: ids() == [])
    notebook.write_text(text)
    wait_until(lambda: len(ids()) == 3)
    assert ids() == before
    removed = [e["action"] for e in client.history(before[0])["events"]]
    assert "removed" in removed and removed[-1] == "indexed"


def test_a_transcript_exported_again_whole_counts_its_user_messages_once(
        home: Path, daemon, client) -> None:
    """A chat exported again and again, whole (an exporter that writes a new file and renames
    it over the old one): each export is read from its start, the exchanges dedupe by their
    ids, and the session keeps the export's count of user messages, not the sum of them."""
    chats = home / "exports"
    chats.mkdir()
    client.sources("add", name="exports", path=str(chats / "*.jsonl"), kind="transcript",
                   format="generic", agent="exporter")
    lines = [{"id": f"m{n}", "role": "user" if n % 2 else "assistant",
              "content": f"message {n} about the {word} rota", "session_id": "chat-1"}
             for n, word in enumerate(["kiln", "glaze", "clay", "wheel", "shelf", "brush"], 1)]

    def export(count: int) -> None:
        scratch = chats / ".export.tmp"
        scratch.write_text("".join(json.dumps(line) + "\n" for line in lines[:count]))
        scratch.rename(chats / "chat-1.jsonl")

    def sessions() -> dict[str, Any]:  # "chat-1", a short id, is the file's chat
        return {s["id"].rpartition(":")[2]: s for s in client.call("sessions", {})["sessions"]}

    export(4)
    eventually(lambda: _one(client, "message 3 about the clay rota"))
    assert sessions()["chat-1"]["user_messages"] == 2
    export(6)
    eventually(lambda: _one(client, "message 5 about the shelf rota"))

    def counted() -> None:
        assert sessions()["chat-1"]["user_messages"] == 3

    eventually(counted)
    turns = [" ".join(t["text"].split()) for t in
             client.list_entries(agents=["exporter"], kind=["turn"])["entries"]]
    assert len(turns) == 3 and len(set(turns)) == 3, turns


def test_a_chat_log_whose_roles_name_its_speakers_keeps_their_sides_across_a_restart(
        home: Path, memoryd_home: Path, embedder) -> None:
    """A chat log that writes each speaker's name as the role is indexed as their chat (its
    lines were dropped without a word), the first name on the user's side; and a restart in
    the middle of an exchange does not swap the sides when the other one speaks first after
    it."""
    chats = home / "talk"
    chats.mkdir()
    log = chats / "s1.jsonl"

    def line(number: int, who: str, text: str) -> dict[str, Any]:
        return {"id": number, "session_id": "s1", "role": who, "content": text,
                "timestamp": f"2026-05-0{number}T10:00:00Z"}

    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            client.sources("add", name="talk", path=str(chats / "*.jsonl"), kind="transcript",
                           format="generic", agent="talkers")
            write_lines(log, [line(1, "Caroline", "the kiln is finally fixed")])
            eventually(lambda: _one(client, "the kiln is finally fixed"))  # left open
    finally:
        running.stop()
    write_lines(log, [line(2, "Melanie", "oh good, what broke?"),
                      line(3, "Caroline", "the thermocouple read forty degrees low")])
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            def both() -> None:
                turns = client.list_entries(agents=["talkers"], kind=["turn"])["entries"]
                assert sorted(" ".join(t["text"].split()) for t in turns) == [
                    "[2026-05-01] User (Caroline): the kiln is finally fixed Assistant "
                    "(Melanie): oh good, what broke?",
                    "[2026-05-03] User (Caroline): the thermocouple read forty degrees low"]

            eventually(both)
    finally:
        running.stop()


def test_a_chat_that_names_its_speakers_is_searched_and_shown_by_their_names(
        home: Path, daemon, client) -> None:
    """A generic transcript's ``name``: the chunk says who spoke, so a question naming a
    speaker finds what they said, and the passage around a hit still splits into turns."""
    chats = home / "talk"
    chats.mkdir()
    client.sources("add", name="talk", path=str(chats / "*.jsonl"), kind="transcript",
                   format="generic", agent="talkers")
    said = [("Caroline", "morning! the kiln is finally fixed"),
            ("Melanie", "oh good, what broke?"),
            ("Caroline", "the thermocouple, it read 40 degrees low"),
            ("Melanie", "and I signed up for a pottery class on Thursdays"),
            ("Caroline", "nice, wheel or hand-building?"),
            ("Melanie", "wheel. first lesson is next week")]
    write_lines(chats / "s1.jsonl", [
        {"id": number, "session_id": "s1", "role": "user" if number % 2 == 0 else "assistant",
         "name": name, "content": text, "timestamp": f"2026-05-0{1 + number // 2}T10:00:00Z"}
        for number, (name, text) in enumerate(said)])

    def found() -> dict[str, Any]:
        hits = search(client, "when did Melanie start a pottery class", agents=["talkers"])
        assert hits and "pottery class" in hits[0]["text"]
        return hits[0]

    hit = eventually(found)
    turns = client.list_entries(agents=["talkers"], kind=["turn"])["entries"]
    assert any("User (Caroline): nice, wheel or hand-building?" in t["text"] for t in turns)
    assert "Assistant (Melanie): and I signed up for a pottery class" in hit["text"]
    context = [*hit["context"]["before"], *hit["context"]["after"]]
    assert context and all(t.startswith(("User (Caroline): ", "Assistant (Melanie): "))
                           and "\n\n" not in t for t in context)  # one turn each


def test_bad_input_is_skipped_with_a_reason_and_nothing_is_lost(home: Path, daemon, client, memoryd_home) -> None:
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "good.md").write_text("- Keep this lesson about kerning.\n")
    eventually(lambda: _one(client, "kerning"))
    (memory / "binary.md").write_bytes(b"\x00\x01\x02 binary junk")
    (memory / "latin1.md").write_bytes("- caf\xe9 notes about espresso machines\n".encode("latin-1"))
    (memory / "huge.md").write_text("- x\n" * 600_000)
    (memory / "locked.md").write_text("- locked away\n")
    (memory / "loop").symlink_to(memory, target_is_directory=True)
    transcripts = home / ".claude/projects/-p"
    transcripts.mkdir(parents=True)
    write_lines(transcripts / "s.jsonl", [
        "{not json", "[1, 2]", '{"type": "user", "message": ' + '"x' * 10 + '"}',
        user("g1", "the giant line above did not stop this zebra question"),
    ])
    with (transcripts / "s.jsonl").open("ab") as handle:
        handle.write(b'{"type": "user", "text": "\xff\xfe invalid utf8"}\n')
        handle.write(b'{"pad": "' + b"y" * 5_000_000 + b'"}\n')
    write_lines(transcripts / "s.jsonl", [user("g2", "after the giant line: grinder calibration")])
    eventually(lambda: _one(client, "grinder calibration"))
    eventually(lambda: _one(client, "zebra question"))
    [latin] = eventually(lambda: _one(client, "espresso machines"))  # recovered, not lost
    assert latin["text"].startswith("caf")

    def reasons() -> dict[str, str]:
        status = client.call("sources", {})
        errors = {}
        for source in status["sources"]:
            if source["last_error"]:
                errors[source["name"]] = source["last_error"]
            errors.update({f"{source['name']}:{k}": str(v) for k, v in source["skipped"].items()})
        assert "claude-transcripts:line-too-long" in errors and "claude-transcripts:invalid-utf8" in errors
        return errors

    eventually(reasons)
    import apsw

    db = apsw.Connection(str(memoryd_home / "memoryd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    errors = {Path(p).name: e for p, e in db.execute("SELECT path, error FROM files WHERE error IS NOT NULL")}
    assert "binary" in errors["binary.md"]
    assert "cap" in errors["huge.md"]
    assert "invalid UTF-8" in errors["latin1.md"]
    assert client.status()["version"]  # still serving
    assert _one(client, "kerning")


def test_watched_directory_deleted_and_recreated(home: Path, memoryd_home, embedder) -> None:
    root = home / ".mastersof-ai"
    memory = root / "agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "a.md").write_text("- First life of the notebook: vellum paper.\n")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: _one(client, "vellum paper"))
            import shutil

            shutil.rmtree(root)
            eventually(lambda: _none(client, "vellum paper"))
            memory.mkdir(parents=True)
            (memory / "a.md").write_text("- Second life of the notebook: linen paper.\n")
            eventually(lambda: _one(client, "linen paper"))
    finally:
        running.stop()


def _none(client: Client, query: str) -> None:
    assert search(client, query, match=True) == []


def test_sources_can_be_added_listed_and_removed(home: Path, daemon, client, memoryd_home) -> None:
    from tests.conftest import run_cli

    notes = home / "notes" / "researcher"
    notes.mkdir(parents=True)
    (notes / "ideas.md").write_text("- Sparse retrieval beats dense on short notes.\n")
    added = run_cli("sources", "add", "my-notes", str(home / "notes/{agent}/**/*.md"), "--kind", "memory")
    assert added.returncode == 0, added.stderr
    assert "my-notes:" in added.stdout
    [hit] = eventually(lambda: _one(client, "sparse retrieval"))
    assert hit["agent"] == "researcher"
    assert "my-notes" in (memoryd_home / "sources.toml").read_text()
    listing = run_cli("status", "--sources").stdout
    assert "my-notes" in listing and "claude-transcripts" in listing
    # a second source over the same files reads none of them: it says which source does
    again = run_cli("sources", "add", "more-notes", str(home / "notes/*/*.md"), "--kind",
                    "memory", "--agent", "researcher")
    assert again.returncode == 0, again.stderr
    assert "1 file it matches is read by source my-notes already" in again.stdout
    assert run_cli("sources", "remove", "more-notes").returncode == 0
    duplicate = run_cli("sources", "add", "my-notes", str(home / "x/*.md"), "--kind", "memory", "--agent", "a")
    assert duplicate.returncode == 2 and "exists already" in duplicate.stderr
    bad = run_cli("sources", "add", "bad", "relative/*.md", "--kind", "memory", "--agent", "a")
    assert bad.returncode == 2 and "bad" in bad.stderr
    assert run_cli("sources", "remove", "claude-transcripts").returncode == 0
    names = [s["name"] for s in client.sources()["sources"]]
    assert "claude-transcripts" not in names and "my-notes" in names
    assert run_cli("sources", "remove", "my-notes").returncode == 0
    assert "my-notes" not in [s["name"] for s in client.sources()["sources"]]


def test_project_root_files_are_indexed(home: Path, daemon, client, tmp_path) -> None:
    from tests.conftest import run_cli

    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# Rules\n- Run the linter before every commit.\n")
    (project / "AGENTS.md").write_text("- Prefer small pull requests.\n")
    assert run_cli("sources", "add", "--project", str(project)).returncode == 0
    [claude] = eventually(lambda: _one(client, "linter before every commit"))
    assert claude["agent"] == "claude-code" and claude["project"] == str(project)
    [codex] = eventually(lambda: _one(client, "small pull requests"))
    assert codex["agent"] == "codex"


def test_config_errors_on_reload_keep_the_running_configuration(daemon, client, memoryd_home) -> None:
    from memoryd_client import ConfigError

    (memoryd_home / "config.toml").write_text("[watch]\ndebounce_ms = 'soon'\n")
    with pytest.raises(ConfigError, match="watch.debounce_ms must be a whole number, got .soon."):
        client.reload()
    assert client.status()["ingest"]["sources"]


def test_malformed_transcript_lines_are_counted_per_source(home: Path, daemon, client) -> None:
    from tests.conftest import run_cli

    transcripts = home / ".claude/projects/-q"
    transcripts.mkdir(parents=True)
    write_lines(transcripts / "t.jsonl", [user("m1", "a first question about tea kettles")])
    eventually(lambda: _one(client, "tea kettles"))
    write_lines(transcripts / "t.jsonl", [
        "{not json at all", "[1, 2]", user("m2", "a second question about copper pans")])
    eventually(lambda: _one(client, "copper pans"))
    [source] = [s for s in client.status()["ingest"]["sources"] if s["name"] == "claude-transcripts"]
    assert source["skipped"] == {"invalid_json": 1, "not_object": 1}
    assert source["last_error"] == "skipped lines: 1 invalid_json, 1 not_object"
    write_lines(transcripts / "t.jsonl", ["{again not json", user("m3", "third: cast iron")])
    eventually(lambda: _one(client, "cast iron"))
    [source] = [s for s in client.status()["ingest"]["sources"] if s["name"] == "claude-transcripts"]
    assert source["skipped"] == {"invalid_json": 2, "not_object": 1}  # counted once each
    listing = run_cli("status", "--sources").stdout
    assert "skipped: 2 invalid_json, 1 not_object" in listing


def test_a_file_read_again_as_indexed_is_not_parsed_again(memoryd_home: Path, monkeypatch,
                                                          tmp_path: Path) -> None:
    from memoryd.config import load_config
    from memoryd.ingest import file_read
    from memoryd.ingest import indexer as indexing
    from memoryd.store.database import Store
    from memoryd.store.entries import Entries
    from memoryd.store.ledger import Ledger

    config = load_config()
    store = Store(config.db_path)
    index = indexing.Indexer(store, Entries(config.remember, store, Ledger(config.ledger_dir)))
    parsed: list[str] = []
    real_parse = indexing.parse_memory_file
    monkeypatch.setattr(indexing, "parse_memory_file",
                        lambda text, relative: parsed.append(relative) or real_parse(text, relative))
    path = tmp_path / "notes.md"

    def read(text: str, relative: str = "notes.md", agent: str = "coder") -> indexing.Changes:
        path.write_text(text)
        facts = file_read.stat_facts(path, "src", "memory", agent, None)
        return index.apply_memory_file(file_read.read_memory_file(facts, relative, 1 << 20))

    try:
        assert read("- one\n- two\n").added == 2
        read("- one\n- two\n")  # touched: the same text
        assert parsed == ["notes.md"]
        assert read("- two\n- one\n").updated == 2  # reordered: read again
        read("- two\n- one\n", "system/notes.md")  # the same text, now pinned
        read("- two\n- one\n", "system/notes.md", agent="designer")  # another agent's
        assert parsed == ["notes.md", "notes.md", "system/notes.md", "system/notes.md"]
        assert store._db.execute("SELECT pinned, agent FROM files").fetchall() == [(1, "designer")]
    finally:
        store.close()


def test_an_entry_taken_out_while_its_file_is_read_again_says_so(memoryd_home: Path,
                                                                   tmp_path: Path) -> None:
    """An editor's save (a new file renamed over the old) has the watcher take the file's
    entries out, then read the file again, when they come back under their ids. Asked for
    in between, `memory forget ID` answered "no entry with id …" for a line in the file."""
    from memoryd.config import load_config
    from memoryd.errors import NotFoundError
    from memoryd.ingest import file_read
    from memoryd.ingest import indexer as indexing
    from memoryd.store.database import Store
    from memoryd.store.entries import Entries
    from memoryd.store.ledger import Ledger
    from memoryd.store.query import EntryQuery

    config = load_config()
    store = Store(config.db_path)
    entries = Entries(config.remember, store, Ledger(config.ledger_dir))
    index = indexing.Indexer(store, entries)
    path = tmp_path / "notes.md"
    try:
        path.write_text("- prefers small commits\n- uses ruff, not flake8\n")
        facts = file_read.stat_facts(path, "src", "memory", "coder", None)
        index.apply_memory_file(file_read.read_memory_file(facts, "notes.md", 1 << 20))
        uid = next(e.uid for e in store.entries(EntryQuery().source(str(path)))
                   if "ruff" in e.text)
        index.remove_file(str(path))  # the old file renamed over: not read again yet
        with pytest.raises(NotFoundError, match=f"its line in {path} is being read again "
                                                ".*try again in a moment"):
            entries.resolve(uid)
        path.write_text("- prefers small commits\n")  # the line deleted: no entry, as said
        with pytest.raises(NotFoundError) as deleted:
            entries.resolve(uid)
        assert str(deleted.value) == f"no entry with id {uid!r}"
    finally:
        store.close()


def test_a_pass_that_read_the_index_before_an_edit_was_indexed_leaves_no_entry_behind(
        memoryd_home: Path, tmp_path: Path) -> None:
    """A pass reads a notebook's entries from the index, then the watcher indexes an agent's
    edit, then the pass writes the notebook and indexes it with the entries it knew: the
    entry the edit added was neither kept nor moved, and stayed in the index under a text the
    file no longer held, for good (the watcher found the file indexed as it is: 13 of 471 runs
    of the concurrent-edits test of the passes)."""
    from memoryd.config import load_config
    from memoryd.ingest import file_read
    from memoryd.ingest import indexer as indexing
    from memoryd.ingest.markdown import parse_memory_file
    from memoryd.store.database import Store
    from memoryd.store.entries import Entries
    from memoryd.store.ledger import Ledger
    from memoryd.store.query import EntryQuery

    config = load_config()
    store = Store(config.db_path)
    index = indexing.Indexer(store, Entries(config.remember, store, Ledger(config.ledger_dir)))
    path = tmp_path / "notes.md"

    def indexed(text: str) -> dict[str, int]:
        path.write_text(text)
        facts = file_read.stat_facts(path, "src", "memory", "coder", None)
        index.apply_memory_file(file_read.read_memory_file(facts, "notes.md", 1 << 20))
        return {e["text"]: e["id"] for e in store.entry_fields(
            EntryQuery().source(str(path)).active(), ("id", "text"))}

    try:
        known = indexed("- one\n- two\n")  # what the pass read
        assert set(indexed("- three\n- one\n- two\n")) == {"one", "two", "three"}  # the edit
        written = "- two\n- one\n"  # the pass's text (the edit's line went to the archive)
        path.write_text(written)
        facts = file_read.stat_facts(path, "src", "memory", "coder", None)
        index.apply_known(facts, parse_memory_file(written, "notes.md"),
                          file_read.memory_key(written, False), [known["two"], known["one"]])
        assert sorted(e["text"] for e in store.entry_fields(
            EntryQuery().source(str(path)).active(), ("text",))) == ["one", "two"]
    finally:
        store.close()


def test_memory_files_indexed_before_their_text_was_kept_are_read_again_at_start(
        home: Path, memoryd_home: Path, embedder) -> None:
    import apsw

    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "a.md").write_text("- Vellum paper for the prints.\n")

    def keys() -> list[tuple[str | None]]:
        db = apsw.Connection(str(memoryd_home / "memoryd.db"))
        try:
            return db.execute("SELECT text_key FROM files WHERE kind='memory'").fetchall()
        finally:
            db.close()

    for _ in range(2):
        running = start_daemon(embedder)
        try:
            with Client(running.socket) as client:
                eventually(lambda: _one(client, "vellum paper"))
                eventually(lambda: _keyed(keys()))
        finally:
            running.stop()
        db = apsw.Connection(str(memoryd_home / "memoryd.db"))
        db.execute("UPDATE files SET text_key=NULL")  # as an older memoryd left it
        db.close()


def _keyed(keys: list[tuple[str | None]]) -> None:
    assert keys and keys[0][0] is not None


def test_indexing_progress_ends_when_a_folder_arrives_with_its_file(home: Path, daemon,
                                                                     client) -> None:
    """A folder made with a file in it (a pass's first archive, the undo taking both away)
    reaches the watcher as the folder and the file: the file was counted twice and indexed
    once, and `memory status` (and the viewer's Health page) said "indexing files 3/4"
    forever after."""
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "notebook.md").write_text(NOTEBOOK)
    eventually(lambda: _entries(client, "designer", 4))
    archive = memory / "archive"
    archive.mkdir()
    (archive / "notebook.md").write_text(
        "# Archive of notebook.md\n\n## Mistakes\n- [2026-01-02] Forgot the bleed margin on "
        "the kiln labels\n")
    eventually(lambda: _entries(client, "designer", 5))

    def idle() -> None:
        ingest = client.status()["ingest"]
        assert ingest["queue"] == 0 and ingest["indexing"] is None, ingest["indexing"]

    eventually(idle, timeout_s=10)
    shutil.rmtree(archive)  # and back: the folder and its file go together
    eventually(lambda: _entries(client, "designer", 4))
    eventually(idle, timeout_s=10)


def test_a_file_named_in_another_encoding_is_named_and_costs_no_other_file(
        memoryd_home: Path, embedder) -> None:
    """A notebook whose name is not UTF-8 (Latin-1 bytes, from an old archive): memoryd cannot
    hold its name as text, so it says so and indexes the files around it. At start it failed
    the whole batch it was in (the files beside it were never indexed, status said all was
    well); written while memoryd ran, it stopped the watching for good, without a word."""
    from tests.client.test_doctor import by_name, doctor

    memory = memoryd_home / "user/.mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "kiln.md").write_text("- The kiln fires stoneware at 1240 degrees.\n")
    Path(os.fsdecode(os.fsencode(memory) + b"/caf\xe9.md")).write_text("- Latin-1 notes.\n")
    running = start_daemon(embedder)
    try:
        with Client(running.config.socket_path, timeout_s=30) as client:
            eventually(lambda: _one(client, "kiln fires stoneware"))
            Path(os.fsdecode(os.fsencode(memory) + b"/r\xe9sum\xe9.md")).write_text("- more\n")
            time.sleep(0.5)  # its event, then another file's
            (memory / "glaze.md").write_text("- The celadon glaze needs a reduction firing.\n")
            eventually(lambda: _one(client, "celadon glaze reduction firing"))
            skipped = by_name(doctor()[1])["skipped"]
            assert skipped["status"] == "warning"
            assert "designer/memory/r\\xe9sum\\xe9.md: not indexed: the file's name is not " \
                   "valid UTF-8 (rename the file)" in skipped["detail"]
            # counted with the files the index holds a problem of ("1 file", then two named)
            (memory / "binary.md").write_bytes(b"\x00\x01 binary junk")
            eventually(lambda: "binary.md: binary file" in _skipped(client) or _fail())
            transcripts = memoryd_home / "user/.claude/projects/-p"
            transcripts.mkdir(parents=True)
            Path(os.fsdecode(os.fsencode(transcripts) + b"/caf\xe9.jsonl")).write_text("{}\n")
            eventually(lambda: "caf\\xe9.jsonl: not indexed" in _skipped(client) or _fail())
            detail = _skipped(client)
            named = detail.count(": not indexed: ") + detail.count(": binary file")
            assert named >= 2 and detail.startswith(f"{named} files with a problem: "), detail
            # deleted, it is no problem any more (it was until a restart)
            for name in (b"/r\xe9sum\xe9.md", b"/caf\xe9.md", b"/binary.md"):
                os.unlink(os.fsencode(memory) + name)
            os.unlink(os.fsencode(transcripts) + b"/caf\xe9.jsonl")
            eventually(lambda: all(c["check"] != "skipped"
                                   for c in client.status()["health"]["checks"]) or _fail())
            sources = client.call("sources", {})["sources"]
            assert not [s["last_error"] for s in sources if s["last_error"]]
    finally:
        running.stop()
    assert not running.errors, running.errors


def test_claude_codes_moved_auto_memory_is_followed_while_memoryd_runs(
        home: Path, daemon, client) -> None:
    """`autoMemoryDirectory` in ~/.claude/settings.json moves Claude Code's auto memory out of
    ~/.claude/projects/: set while memoryd runs, its files are indexed as Claude Code's; set
    to another directory, that one's are, and the first's leave the index (the files stay)."""
    synced = home / "sync/claude-memory"
    synced.mkdir(parents=True)
    (synced / "build.md").write_text("---\nname: build\ntype: project\n---\n\n"
                                     "- The nightly build runs on the orchard runner.\n")
    settings = home / ".claude/settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"autoMemoryDirectory": "~/sync/claude-memory"}))
    [hit] = eventually(lambda: _only(client, "orchard runner"), timeout_s=30)
    assert (hit["agent"], hit["source"]) == ("claude-code", str(synced / "build.md"))

    moved = home / "Dropbox/memory"
    moved.mkdir(parents=True)
    (moved / "deploy.md").write_text("- Deploys need the release captain's approval.\n")
    settings.write_text(json.dumps({"autoMemoryDirectory": str(moved)}))
    [hit] = eventually(lambda: _only(client, "release captain"), timeout_s=30)
    assert (hit["agent"], hit["source"]) == ("claude-code", str(moved / "deploy.md"))
    eventually(lambda: _none(client, "orchard runner"))
    assert (synced / "build.md").exists()


def test_notes_a_claude_md_imports_are_indexed_and_followed_while_memoryd_runs(
        home: Path, daemon, client) -> None:
    """Claude Code loads the files its CLAUDE.md imports (``@path``), and theirs in turn:
    added while memoryd runs, they are indexed as Claude Code's; an import taken out of
    CLAUDE.md takes its file's entries out of the index (the file stays)."""
    claude_md = home / ".claude/CLAUDE.md"
    claude_md.parent.mkdir(parents=True, exist_ok=True)
    claude_md.write_text("# Me\n- Answer briefly.\n")
    prefs = home / "notes/prefs.md"
    prefs.parent.mkdir(parents=True)
    prefs.write_text("- Demo slides use the heron colour scheme.\n@deeper/tools.md\n")
    tools = home / "notes/deeper/tools.md"
    tools.parent.mkdir()
    tools.write_text("- The kiln scheduler is deployed with nomad.\n")
    fenced = home / "notes/example.md"
    fenced.write_text("- The abacus ledger closes on Fridays.\n")
    claude_md.write_text("# Me\n- Answer briefly.\n- My preferences: @~/notes/prefs.md\n"
                         "```\n@~/notes/example.md\n```\n")
    [hit] = eventually(lambda: _only(client, "heron colour scheme slides"), timeout_s=30)
    assert (hit["agent"], hit["source"]) == ("claude-code", str(prefs))
    [hit] = eventually(lambda: _only(client, "kiln scheduler nomad"), timeout_s=30)
    assert (hit["agent"], hit["source"]) == ("claude-code", str(tools))
    assert not [h for h in search(client, "abacus ledger Fridays") if h["source"] == str(fenced)]

    claude_md.write_text("# Me\n- Answer briefly.\n")
    eventually(lambda: _none(client, "heron colour scheme slides"), timeout_s=30)
    eventually(lambda: _none(client, "kiln scheduler nomad"), timeout_s=30)
    assert prefs.exists() and tools.exists()


def _only(client: Client, query: str) -> list[dict[str, Any]]:
    hits = search(client, query, match=True)
    assert len(hits) == 1, hits
    return hits


def _none(client: Client, query: str) -> None:
    assert not search(client, query, match=True)


def test_a_chat_log_whose_lines_name_no_session_is_one_session_per_file(
        home: Path, daemon, client) -> None:
    """A generic log without ``session_id`` (one file a chat): the file is the session, so a
    hit is shown with the turns around it, and the chat is in the session registry. Its
    chunks had no session: no passage, nothing in `memory sessions`, nothing extracted."""
    chats = home / "logs"
    for folder in ("ana", "ben"):  # the same file name in two folders: two sessions
        (chats / folder).mkdir(parents=True)
    client.sources("add", name="logs", path=str(chats / "*" / "*.jsonl"), kind="transcript",
                   format="generic", agent="travellers")
    said = ["I finally booked the ferry to Hydra for the 14th of March",
            "Nice! Are you taking the early one?",
            "Yes, the 7:30 from Piraeus",
            "Good choice, the later ones sell out",
            "Dimitra is coming along with her sister"]
    write_lines(chats / "ana" / "chat.jsonl", [
        {"role": "user" if number % 2 == 0 else "assistant", "content": text,
         "timestamp": f"2026-02-01T10:0{number}:00Z"} for number, text in enumerate(said)])
    write_lines(chats / "ben" / "chat.jsonl", [
        {"role": "user", "content": "the boiler needs a service before winter",
         "timestamp": "2026-02-02T10:00:00Z"}])

    def found() -> dict[str, Any]:
        hits = search(client, "Dimitra coming along with her sister", agents=["travellers"])
        assert hits and "Dimitra" in hits[0]["text"]
        return hits[0]

    hit = eventually(found)
    assert any("ferry to Hydra" in turn or "7:30 from Piraeus" in turn
               for turn in hit["context"]["before"])

    def registered() -> list[dict[str, Any]]:
        sessions = [s for s in client.call("sessions", {})["sessions"]
                    if s["agent"] == "travellers"]
        assert sorted(s["id"].split("-")[0] for s in sessions) == ["chat", "chat"]
        assert len({s["id"] for s in sessions}) == 2
        return sessions

    ana = next(s for s in eventually(registered) if s["user_messages"] == 3)
    from tests.conftest import run_cli

    shown = run_cli("session", "show", ana["id"][:8])  # what it indexed, not only what it wrote
    assert shown.returncode == 0, shown.stderr
    assert "exchanges indexed: 3" in shown.stdout and "(extracted, or written in it): 0" \
        in shown.stdout


def _skipped(client: Client) -> str:
    """The health check of the files with a problem (`memory status`, `memory doctor`)."""
    checks = {c["check"]: c for c in client.status()["health"]["checks"]}
    assert "skipped" in checks, checks
    return str(checks["skipped"]["detail"])


@pytest.mark.parametrize(("replacement", "reason"), [
    ("fifo", "not a regular file (a FIFO)"),
    ("device", "not a regular file (a character device)"),
    ("loop", "a symlink loop"),
    ("dangling", "which does not exist"),
])
def test_a_notebook_replaced_by_what_cannot_be_read_keeps_its_entries(
        replacement: str, reason: str, memoryd_home: Path, monkeypatch) -> None:
    """A notebook renamed over by a FIFO, a symlink to /dev/zero, a symlink loop or a symlink
    whose target is missing: it was taken for deleted ("is gone: removed 1 entries"), its
    entries dropped without a word. The path is there: its entries stay (at a restart too)
    and its problem is named; a regular file back in its place is read as usual."""
    monkeypatch.setenv("MEMORYD_EMBED_MODEL", str(memoryd_home / "no-model"))
    memory = memoryd_home / "user/.mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    notes = memory / "notes.md"
    notes.write_text("- The kiln fires stoneware at 1240 degrees.\n")
    running = start_daemon(None)
    try:
        with Client(running.config.socket_path, timeout_s=30) as client:
            eventually(lambda: _one(client, "kiln fires stoneware"))
            swap = memory / ".notes.swap"
            if replacement == "fifo":
                os.mkfifo(swap)
            else:
                swap.symlink_to({"device": "/dev/zero", "loop": "notes.md",
                                 "dangling": str(memory / "moved-away.md")}[replacement])
            os.rename(swap, notes)
            eventually(lambda: f"{notes}: not read: " in _skipped(client)
                       and reason in _skipped(client) or _fail())
            assert _one(client, "kiln fires stoneware")  # kept
    finally:
        running.stop()
    running = start_daemon(None)  # its scan does not find the file: not a deletion either
    try:
        with Client(running.config.socket_path, timeout_s=30) as client:
            eventually(lambda: reason in _skipped(client) or _fail())
            assert _one(client, "kiln fires stoneware")
            notes.unlink()
            notes.write_text("- The kiln fires porcelain at 1280 degrees.\n")
            eventually(lambda: _one(client, "kiln fires porcelain"))
            _none(client, "stoneware")
            # read again as a file: its problem is over, for status --sources too
            eventually(lambda: all(c["check"] != "skipped"
                                   for c in client.status()["health"]["checks"]) or _fail())
            assert not [s["last_error"] for s in client.call("sources", {})["sources"]
                        if s["last_error"]]
    finally:
        running.stop()
    assert not running.errors, running.errors


def _fail() -> bool:
    raise AssertionError("not yet")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to run the daemon as another user (setpriv)")
def test_a_directory_made_unreadable_keeps_its_files_entries(memoryd_home: Path) -> None:
    """A directory of a memory source made unreadable (chmod 000; a root-owned 0700 one for a
    user's daemon): its files were taken for deleted at the next rescan and their entries
    dropped, with no problem shown. They stay, and the directory and its files are named. The
    daemon runs as nobody (root reads any directory)."""
    import subprocess
    import sys

    from tests.conftest import stop_process

    memory = memoryd_home / "user/.mastersof-ai/agents/designer/memory"
    (memory / "sub").mkdir(parents=True)
    (memory / "sub/C.md").write_text("- The kiln fires stoneware at 1240 degrees.\n")
    (memoryd_home / "config.toml").write_text("[watch]\nfull_scan_interval_s = 1\n")
    shutil.chown(memoryd_home, "nobody")
    for top, dirs, files in os.walk(memoryd_home):
        for name in dirs + files:
            shutil.chown(os.path.join(top, name), "nobody")
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]

    def memory_cli(*args: str) -> Any:
        done = subprocess.run([*as_nobody, sys.executable, "-m", "memoryd_client", *args],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout)

    def found() -> bool:
        hits = memory_cli("search", "designer", "-", "kiln stoneware", "--json")["hits"]
        assert len(hits) == 1, hits
        return True

    env = {**os.environ, "MEMORYD_EMBED_MODEL": str(memoryd_home / "no-model")}
    with (memoryd_home / "daemon.log").open("a") as log_file:  # (spawn_daemon asks as root)
        proc = subprocess.Popen([*as_nobody, sys.executable, "-m", "memoryd", "serve"],
                                stdout=subprocess.DEVNULL, stderr=log_file, env=env)
    try:
        eventually(found, timeout_s=60)
        os.chmod(memory / "sub", 0)
        time.sleep(2.5)  # a rescan or two

        def reported() -> bool:
            checks = {c["check"]: c for c in memory_cli("status", "--json")["health"]["checks"]}
            detail = checks.get("skipped", {}).get("detail", "")
            assert f"{memory}/sub/C.md: not read: unreadable: permission denied (its directory " \
                   f"{memory}/sub cannot be entered)" in detail, detail
            return True

        eventually(reported, timeout_s=30)
        assert found()  # kept
    finally:
        os.chmod(memory / "sub", 0o700)
        stop_process(proc)
    log = (memoryd_home / "daemon.log").read_text()
    assert "is gone" not in log and "C.md: not read: unreadable" in log
