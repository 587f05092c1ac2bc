"""The retain pass and what outlives a reindex: transcripts deleted from disk, and forgets of
file-backed, transcript and API entries. Real daemon, real files, real model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client

from memoryd.scheduling import paced
from memoryd.store import archive
from memoryd.store.archive import AgentArchive, MemberWriter, archive_record
from memoryd.store.database import ENTRY_COLUMNS
from tests.conftest import reindexed, run_memoryd, start_daemon
from tests.ingest.test_ingest import assistant, eventually, search, user, write_lines

NOTEBOOK = """\
# Designer Agent Memory
## Learnings
- [2026-03-14] Export stickers at 300 dpi with a two pixel bleed.
- [2026-03-12] Kraft paper mutes neon inks; proof on kraft first.
- [2026-03-10] Matte lamination hides fingerprints on die-cut stickers.
"""


@pytest.fixture
def home(memoryd_home: Path) -> Path:
    return memoryd_home / "user"


def exchange(session: str, n: int, question: str, answer: str) -> list[dict[str, Any]]:
    """A user message and its answer, in Claude Code's transcript format."""
    return [{**user(f"{session[:4]}u{n}", question), "sessionId": session},
            {**assistant(f"{session[:4]}a{n}", f"msg_{session[:4]}{n}",
                         [{"type": "text", "text": answer}]), "sessionId": session}]


def transcript(home: Path, session: str, *exchanges: tuple[str, str]) -> Path:
    project = home / ".claude/projects/-tmp-shop"
    project.mkdir(parents=True, exist_ok=True)
    path = project / f"{session}.jsonl"
    for n, (question, answer) in enumerate(exchanges):
        write_lines(path, exchange(session, n, question, answer))
    return path


def one(client: Client, query: str, status: str = "active") -> dict[str, Any]:
    hits = search(client, query, match=True, status=status)
    assert len(hits) == 1, [h["text"] for h in hits]
    return hits[0]


def settled(client: Client) -> None:
    """Scanned, indexed, embedded, and every word in the lexicon (a candidate scored without
    its words' alignment is judged less sharply: the matches below count on the full model)."""
    status = client.status()
    assert status["backlog"] == 0 and status["ingest"]["queue"] == 0
    assert not status["ingest"]["scanning"]  # a start's scan has not queued its files yet
    assert not status["lexicon"]["entries_behind"]


def archived(memoryd_home: Path, agent: str = "claude-code") -> list[dict[str, Any]]:
    """The archive's entries in order: all its members read as one gzip stream."""
    with gzip.open(memoryd_home / "transcripts" / f"{agent}.jsonl.gz") as handle:
        return [json.loads(line)["entry"] for line in handle]


SESSION_A = "5b0c2e9a-1f3d-4c8e-9a6b-2d7f0e1c3b5a"
SESSION_B = "7d1e4f0b-2a4c-4d9f-8b7c-3e8a1f2d4c6b"
SESSION_C = "9f3a6b2d-4c6e-4fa1-9d8e-5a0c3b4e6d8f"


def test_a_transcript_deleted_from_disk_is_still_searchable_after_reindex(
        home: Path, memoryd_home: Path, embedder) -> None:
    path = transcript(
        home, SESSION_A,
        ("how do we rotate the staging database password?",
         "Run the vault rotation job, then restart the pgbouncer pods."),
        ("which region hosts the sticker print queue?",
         "The print queue runs in eu-west-1 next to the fulfilment API."))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            before = eventually(lambda: _both(client))
            result = client.pass_run("retain")
            assert result["status"] == "done" and result["counts"]["archived"] == 2
    finally:
        running.stop()
    path.unlink()  # Claude Code's cleanup
    result = run_memoryd("reindex")
    assert result.returncode == 0, result.stderr
    assert "1 transcript archives (2 entries, 0 archived first)" in result.stdout
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: settled(client))
            hits = client.search("credentials rotation for the staging db", agent="claude-code")
            assert hits["hits"][0]["id"] == before[0]["id"]
            assert hits["hits"][0]["score"]["vector"] > 0.3  # embedded again by the real model
            for entry in before:
                assert {k: v for k, v in client.get(entry["id"]).items() if k != "rowid"} == \
                    {k: v for k, v in entry.items() if k != "rowid"}
    finally:
        running.stop()


def test_reindex_archives_what_no_retain_run_copied_yet(home: Path, memoryd_home: Path,
                                                        embedder) -> None:
    path = transcript(home, SESSION_B, ("who restocks the sticker printer?",
                                        "Tomasz restocks it every Tuesday."))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            [entry] = eventually(lambda: (settled(client), [one(client, "Tomasz")])[1])
    finally:
        running.stop()
    path.unlink()
    result = run_memoryd("reindex", "--no-vectors")
    assert result.returncode == 0, result.stderr
    assert "1 transcript archives (1 entries, 1 archived first)" in result.stdout
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            assert client.get(entry["id"])["text"] == entry["text"]
            assert client.pass_run("retain")["counts"] == {}  # the archive has it already
    finally:
        running.stop()


def _both(client: Client) -> list[dict[str, Any]]:
    settled(client)
    entries = [client.get(one(client, query)["id"]) for query in ("pgbouncer", "fulfilment")]
    assert all(e["kind"] == "turn" and e["session"] == SESSION_A for e in entries)
    return entries


def test_forget_of_file_transcript_and_api_entries_survives_reindex(
        home: Path, memoryd_home: Path, embedder) -> None:
    memory = home / ".mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "notebook.md").write_text(NOTEBOOK)
    transcript(home, SESSION_A, ("what glue for the cardboard mailers?", "Use the hot-melt glue gun."),
               ("and the tape?", "Paper tape, never plastic."))
    deleted = transcript(home, SESSION_B, ("which courier for Norway?", "Posten, with tracking."),
                         ("and for Iceland?", "Iceland Post, via Reykjavik."))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: (settled(client), one(client, "Reykjavik"), one(client, "plastic"),
                                one(client, "kraft"), one(client, "bleed")))
            assert client.pass_run("retain")["counts"]["archived"] == 4
            # written after the retain run, so only its forget can keep it forgotten
            transcript(home, SESSION_C, ("what size are the gift boxes?", "Twelve by twelve cm."),
                       ("and their colour?", "Matte forest green."))
            api = [client.remember("designer", "prefs", text)["entry"] for text in
                   ("Invoices go out on the first Monday.", "Refunds need a photo of the damage.")]
            eventually(lambda: (settled(client), one(client, "forest green")))
            forgotten = {query: one(client, query) for query in
                         ("bleed", "glue gun", "Posten", "gift boxes")}
            for entry in [*forgotten.values(), api[0]]:
                client.forget(entry["id"], reason="test")
            client.supersede(one(client, "kraft")["id"], "Brown stock needs a white "
                             "underbase under neon inks.", agent="designer")
            # a file's entry is forgotten and superseded in the file itself (M2)
            notebook = (memory / "notebook.md").read_text()
            assert "bleed" not in notebook and "Kraft" not in notebook
            assert "Brown stock needs a white underbase under neon inks." in notebook
    finally:
        running.stop()
    deleted.unlink()
    running = reindexed(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: (settled(client), one(client, "gift boxes", "any"),
                                one(client, "lamination"), one(client, "underbase")))
            assert [client.get(e["id"])["status"] for e in api] == ["forgotten", "active"]
            # the file is the truth: what was forgotten or superseded in it is not there
            assert search(client, "bleed", match=True, status="any") == []
            assert search(client, "kraft", match=True, status="any") == []
            assert one(client, "underbase")["source"] == str(memory / "notebook.md")
            assert one(client, "lamination")["status"] == "active"
            # transcript chunks keep their uid: from disk (A, C) or the archive (B)
            for query in ("glue gun", "Posten", "gift boxes"):
                assert client.get(forgotten[query]["id"])["status"] == "forgotten", query
            for query in ("plastic", "Reykjavik", "forest green"):
                assert one(client, query)["status"] == "active", query
    finally:
        running.stop()


def test_retain_is_incremental_and_a_dry_run_writes_nothing(
        home: Path, memoryd_home: Path, daemon, client) -> None:
    path = transcript(home, SESSION_A, ("where do returns go?", "To the Leeds warehouse."),
                      ("who signs for them?", "Priya at goods-in."))
    eventually(lambda: (settled(client), one(client, "Leeds"), one(client, "Priya")))
    archive = memoryd_home / "transcripts" / "claude-code.jsonl.gz"

    preview = client.pass_run("retain", dry_run=True)
    assert preview["counts"] == {"preview": 2} and not archive.exists()
    [change] = client.pass_show(preview["run"])["changes"]
    assert (change["kind"], change["state"], change["target"]) == ("archive", "preview", str(archive))

    first = client.pass_run("retain")
    assert first["counts"]["archived"] == 2 and first["counts"]["bytes"] == archive.stat().st_size
    size = archive.stat().st_size
    second = client.pass_run("retain")
    assert second["status"] == "done" and second["counts"] == {}
    assert archive.stat().st_size == size

    write_lines(path, exchange(SESSION_A, 2, "when is the next stock count?", "Friday at eight."))
    eventually(lambda: (settled(client), one(client, "Friday")))
    assert client.pass_run("retain")["counts"]["archived"] == 1
    leeds = one(client, "Leeds")
    client.forget(leeds["id"])
    assert client.pass_run("retain")["counts"]["archived"] == 1
    records = archived(memoryd_home)
    assert len(records) == 4  # four members, read as one stream
    assert [r["status"] for r in records if r["uid"] == leeds["id"]] == ["active", "forgotten"]
    assert {"uid", "agent", "project", "kind", "category", "text", "hash", "confidence",
            "created", "updated", "session", "source", "message_id", "status"} <= set(records[0])


def test_an_unfinished_append_is_ignored_and_cut_off(tmp_path: Path) -> None:
    archive = AgentArchive(tmp_path)
    writer = MemberWriter()
    writer.add([archive_record({"uid": f"t{n}", "agent": "coder"}) for n in range(3)])
    whole = writer.data()
    start, end = archive.append("coder", whole, None)
    assert (start, end) == (0, len(whole))
    with archive.path("coder").open("ab") as handle:  # a crash in the middle of an append
        handle.write(whole[: len(whole) // 2])
    assert [(e, len(r)) for e, r in archive.read("coder")] == [(end, 3)]
    writer.add([archive_record({"uid": "t9", "agent": "coder"})])
    start, _ = archive.append("coder", writer.data(), end)
    assert start == end  # the torn half is gone
    assert [r["entry"]["uid"] for _, records in archive.read("coder") for r in records] == \
        ["t0", "t1", "t2", "t9"]
    # a corrupt member is skipped; the members after it are still read
    data = bytearray(archive.path("coder").read_bytes())
    data[end // 2] ^= 0xFF
    archive.path("coder").write_bytes(bytes(data))
    assert [r["entry"]["uid"] for _, records in archive.read("coder") for r in records] == ["t9"]


def test_reindex_works_when_the_old_database_cannot_be_read(memoryd_home: Path) -> None:
    (memoryd_home / "memoryd.db").write_bytes(b"not a database" * 1000)
    result = run_memoryd("reindex", "--no-vectors")
    assert result.returncode == 0, result.stderr
    assert "Not archiving transcripts from the old database" in result.stderr


def test_a_batch_is_archived_whole_with_pauses_for_searches_between_a_few_records(
        tmp_path: Path) -> None:
    """Compressing a batch (256 transcript chunks took ~20 ms of a core) gives way to the
    searches in flight every GIVE_WAY_ROWS records, and every record still arrives."""
    rows = [(number, *[{"uid": f"t{number}", "agent": "coder", "text": f"chunk {number}",
                        "tags": ",build,"}.get(column) for column in ENTRY_COLUMNS])
            for number in range(100)]
    pauses: list[int] = []
    writer = MemberWriter()
    paced(lambda: pauses.append(1), archive._compress, writer, rows)
    agent_archive = AgentArchive(tmp_path)
    agent_archive.append("coder", writer.data(), None)
    records = [r["entry"] for _, batch in agent_archive.read("coder") for r in batch]
    assert [(r["uid"], r["text"], r["tags"]) for r in records] == \
        [(f"t{n}", f"chunk {n}", ["build"]) for n in range(100)]
    assert len(pauses) == -(-100 // archive.GIVE_WAY_ROWS) > 1


def _copy_index(memoryd_home: Path, to: Path) -> None:
    """The index's files (the daemon stopped), as they are now."""
    to.mkdir(exist_ok=True)
    for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm"):
        if (memoryd_home / name).exists():
            (to / name).write_bytes((memoryd_home / name).read_bytes())
        elif (to / name).exists():
            (to / name).unlink()


def test_records_appended_before_a_crash_are_restored_and_not_archived_again(
        home: Path, memoryd_home: Path, tmp_path: Path, embedder) -> None:
    """A retain run killed after its archive was fsynced but before the database recorded
    it: the next start restores the members past the recorded end, and the next run does
    not append the same turns a second time. (The crash is the index as it was before the
    run, put back beside the archive as the run left it.)"""
    transcript(home, SESSION_A, ("where do returns go?", "To the Leeds warehouse."),
               ("who signs for them?", "Priya at goods-in."))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: (settled(client), one(client, "Leeds"), one(client, "Priya")))
    finally:
        running.stop()
    _copy_index(memoryd_home, tmp_path / "before")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            assert client.pass_run("retain")["counts"]["archived"] == 2
    finally:
        running.stop()
    for name in ("memoryd.db-wal", "memoryd.db-shm"):
        (memoryd_home / name).unlink(missing_ok=True)
    _copy_index(tmp_path / "before", memoryd_home)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            assert client.pass_run("retain")["counts"] == {}
            eventually(lambda: (settled(client), one(client, "Leeds"), one(client, "Priya")))
    finally:
        running.stop()
    uids = [r["uid"] for r in archived(memoryd_home)]
    assert len(uids) == len(set(uids)) == 2  # each turn once


def test_an_archive_holding_a_turn_twice_shows_it_once(home: Path, memoryd_home: Path,
                                                       embedder) -> None:
    """Older memoryd could archive a turn again after a sync restored it, so an archive may
    hold the same record twice. Restoring keeps one row per turn: search, the entry list
    and the next retain run see each turn once, and nothing is taken out of the file."""
    path = transcript(home, SESSION_C, ("what size are the gift boxes?", "Twelve by twelve cm."),
                      ("and their colour?", "Matte forest green."))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: (settled(client), one(client, "forest green")))
            assert client.pass_run("retain")["counts"]["archived"] == 2
    finally:
        running.stop()
    file = memoryd_home / "transcripts" / "claude-code.jsonl.gz"
    file.write_bytes(file.read_bytes() * 2)  # every member again, as a second run wrote it
    path.unlink()
    result = run_memoryd("reindex", "--no-vectors")
    assert result.returncode == 0, result.stderr
    assert "1 transcript archives (2 entries, 0 archived first)" in result.stdout
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: settled(client))
            for query in ("gift boxes", "forest green"):
                one(client, query)
            listed = client.list_entries(agents=["claude-code"], limit=100)["entries"]
            assert sorted(e["text"] for e in listed) == \
                sorted({e["text"] for e in listed}) and len(listed) == 2
            assert client.pass_run("retain")["counts"] == {}
    finally:
        running.stop()
    assert len(archived(memoryd_home)) == 4  # the file is left as it is
