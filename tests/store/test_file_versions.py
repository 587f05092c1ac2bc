"""D15: the memory tools' file versions keep a delta per write, not two whole copies of the file, and
the retain pass moves old versions to the history archive; every version can still be rebuilt,
and none is lost."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import apsw
import pytest
from memoryd_client import Client

from memoryd.store.archive import AgentArchive
from memoryd.store.database import Store
from memoryd.store.file_versions import archive_records, drop, old_versions, versions
from tests.conftest import run_cli, start_daemon, wait_until


def journal_bytes(db: apsw.Connection) -> int:
    return db.execute("SELECT coalesce(sum(length(before)) + sum(length(after)), 0) FROM events "
                      "WHERE uid LIKE 'file:%'").fetchone()[0]


def big_text(version: int) -> str:
    lines = [f"- line {i}: the quick brown fox jumps over the lazy dog {i * 7919 % 10007}"
             for i in range(15_500)]  # ~1 MB
    lines[version * 311 % len(lines)] = f"- line edited in version {version}"
    return "\n".join(lines) + "\n"


@pytest.mark.slow  # ~8 s: twenty megabyte writes
def test_twenty_writes_of_a_megabyte_file_cost_about_one_copy(daemon, client: Client) -> None:
    """The journal of the tools' writes (a .txt file: no source indexes it, and indexing 15,500
    bullets a version is not what this is about; the next test keeps the entries' journal)."""
    texts = [big_text(v) for v in range(20)]
    assert len(texts[0].encode()) > 900_000
    for text in texts:
        client.call("file_write", {"agent": "coder", "path": "big.txt", "text": text})
    client.call("file_replace", {"agent": "coder", "path": "big.txt",
                                 "old": "- line edited in version 19", "new": "- replaced"})
    db = apsw.Connection(str(daemon.config.db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        size = journal_bytes(db)
        history = versions(SimpleNamespace(_db=db), "file:coder:big.txt")  # type: ignore[arg-type]
    finally:
        db.close()
    # whole copies before and after: ~40 MB; a base plus small deltas: about one copy
    assert size < 1.5 * len(texts[0]), size
    assert [v.after for v in history[:20]] == texts  # every version rebuilt exactly
    assert history[20].before == texts[19]
    assert history[20].after == texts[19].replace("- line edited in version 19", "- replaced")


def test_a_file_edited_outside_the_tools_keeps_its_text(daemon, client: Client) -> None:
    client.call("file_write", {"agent": "coder", "path": "n.md", "text": "- one\n"})
    path = daemon.config.state_dir / "agents" / "coder" / "n.md"
    path.write_text("- one\n- typed by a person\n")
    client.call("file_insert", {"agent": "coder", "path": "n.md", "line": 0, "text": "# Notes\n"})
    events = client.history("file:coder:n.md")["events"]
    assert events[1]["before"]["text"] == "- one\n- typed by a person\n"
    assert events[1]["after"]["text"] == "# Notes\n- one\n- typed by a person\n"


def test_old_versions_move_to_the_history_archive_and_the_rest_stay_whole(
        daemon, client: Client) -> None:
    texts = [f"- fact {i}\n" * (i + 1) for i in range(12)]
    for text in texts:
        client.call("file_write", {"agent": "coder", "path": "c.md", "text": text})
    daemon.stop()
    store = Store(daemon.config.db_path)
    history = AgentArchive(daemon.config.history_dir)
    later = time.time() + 40 * 86_400
    try:
        old = list(old_versions(store, now=later, keep_versions=5))
        assert [len(item.events) for item in old] == [7] and old[0].bytes > 0
        for agent, data in archive_records(old).items():
            history.append(agent, data, None)
        for item in old:
            drop(store, item)
        kept = versions(store, "file:coder:c.md")
        assert [v.after for v in kept] == texts[7:]
        assert kept[0].before == texts[6]  # the oldest kept version is a whole-text base
        assert list(old_versions(store, now=later, keep_versions=5)) == []
    finally:
        store.close()
    # nothing is lost: every version moved is in the archive, whole (beside every write's
    # own record: memoryd.store.file_history)
    archived = [record for line in
                gzip.decompress(history.path("coder").read_bytes()).splitlines()
                if (record := json.loads(line))["op"] == "version"]
    assert [r["after"] for r in archived] == texts[:7]
    assert {r["uid"] for r in archived} == {"file:coder:c.md"}


def test_the_retain_pass_moves_versions_past_keeping_and_lists_the_archive(
        memoryd_home, embedder) -> None:
    running = start_daemon(embedder)
    with Client(running.socket) as client:
        for i in range(25):
            client.call("file_write", {"agent": "coder", "path": "c.md", "text": f"- v{i}\n"})
    running.stop()
    db = apsw.Connection(str(running.config.db_path))
    with db:  # written 40 days ago
        db.execute("UPDATE events SET ts = ts - 40 * 86400 WHERE uid='file:coder:c.md'")
    db.close()
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            preview = client.pass_run("retain", dry_run=True)
            assert preview["counts"]["journal_versions_moved"] == 5
            assert moved(running.config.history_dir) == []
            done = client.pass_run("retain")
            assert done["counts"]["journal_versions_moved"] == 5
            [archived] = [c for c in client.pass_show(done["run"])["changes"]
                          if c["target"].endswith("history/coder.jsonl.gz")]
            assert archived["after"]["versions"] == 5
            events = client.history("file:coder:c.md")["events"]
            assert len(events) == 20 and events[0]["after"]["text"] == "- v5\n"
    finally:
        running.stop()
    assert [r["after"] for r in moved(running.config.history_dir)] == \
        [f"- v{i}\n" for i in range(5)]


def moved(history: Path) -> list[dict[str, Any]]:
    """The versions the retain pass moved to the coder's history archive."""
    lines = gzip.decompress((history / "coder.jsonl.gz").read_bytes()).splitlines()
    return [record for line in lines if (record := json.loads(line))["op"] == "version"]


def test_a_big_memory_file_rewritten_keeps_a_bounded_entry_journal(daemon, client: Client
                                                                   ) -> None:
    """D15, the entry half: each version of a memory file read as one big entry was journaled
    whole twice (indexed, then removed): 50 writes of 1 MB grew the database by 100 MB. The
    watcher's events now keep 4,096 characters of a longer text, with its length, and
    `memory history` says so; the memory tools' journal keeps every version whole."""
    words = " ".join(f"word{i * 7919 % 10007}" for i in range(40_000))  # one paragraph: one entry
    texts = [f"# Notes\n\nVersion {v} of the notes: {words}\n" for v in range(5)]
    for v, text in enumerate(texts):
        client.file("write", "coder", "notes.md", text=text)
        wait_until(lambda v=v: any(f"Version {v} of" in h["text"] for h in client.search(
            f"Version {v} of the notes", agent="coder", limit=3)["hits"]), 30)
    db = apsw.Connection(str(daemon.config.db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = db.execute("SELECT uid, action, before, after FROM events "
                          "WHERE action IN ('indexed', 'removed')").fetchall()
        removed = [(uid, json.loads(before)) for uid, action, before, _ in rows
                   if action == "removed"]
        stored = sum(len(b or "") + len(a or "") for _, _, b, a in rows)
    finally:
        db.close()
    assert len(removed) == 4 and stored < 10 * 12_000  # ~5 MB whole
    uid, before = removed[0]
    assert before["text"] == texts[0][len("# Notes\n\n"):-1][:4096]
    assert before["text_chars"] == len(texts[0]) - len("# Notes\n\n") - 1
    shown = run_cli("history", uid)
    assert shown.returncode == 0, shown.stderr
    assert f"its history keeps the first 4,096 of its {before['text_chars']:,} characters" \
        in shown.stdout
    versions_shown = client.history("file:coder:notes.md")["events"]
    assert [e["after"]["text"] for e in versions_shown] == texts  # every version, whole
