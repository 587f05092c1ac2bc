"""D15: the memory tools' journal keeps a delta per write, not two whole copies of the file, and
the retain pass can compact it; every version can still be rebuilt."""

from __future__ import annotations

import time
from types import SimpleNamespace

import apsw
from memoryd_client import Client

from memoryd.store.database import Store
from memoryd.store.file_journal import compact, versions


def journal_bytes(db: apsw.Connection) -> int:
    return db.execute("SELECT coalesce(sum(length(before)) + sum(length(after)), 0) FROM events "
                      "WHERE uid LIKE 'file:%'").fetchone()[0]


def big_text(version: int) -> str:
    lines = [f"- line {i}: the quick brown fox jumps over the lazy dog {i * 7919 % 10007}"
             for i in range(15_500)]  # ~1 MB
    lines[version * 311 % len(lines)] = f"- line edited in version {version}"
    return "\n".join(lines) + "\n"


def test_twenty_writes_of_a_megabyte_file_cost_about_one_copy(daemon, client: Client) -> None:
    texts = [big_text(v) for v in range(20)]
    assert len(texts[0].encode()) > 900_000
    for text in texts:
        client.call("file_write", {"agent": "coder", "path": "big.md", "text": text})
    client.call("file_replace", {"agent": "coder", "path": "big.md",
                                 "old": "- line edited in version 19", "new": "- replaced"})
    db = apsw.Connection(str(daemon.config.db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        size = journal_bytes(db)
        history = versions(SimpleNamespace(db=db), "file:coder:big.md")  # type: ignore[arg-type]
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


def test_compaction_drops_old_versions_and_keeps_the_rest_whole(daemon, client: Client) -> None:
    texts = [f"- fact {i}\n" * (i + 1) for i in range(12)]
    for text in texts:
        client.call("file_write", {"agent": "coder", "path": "c.md", "text": text})
    daemon.stop()
    store = Store(daemon.config.db_path)
    try:
        dropped, freed = compact(store, now=time.time() + 40 * 86_400, keep_versions=5)
        assert dropped == 7 and freed > 0
        kept = versions(store, "file:coder:c.md")
        assert [v.after for v in kept] == texts[7:]
        assert kept[0].before == texts[6]  # the oldest kept version is a whole-text base
        assert compact(store, now=time.time() + 40 * 86_400, keep_versions=5) == (0, 0)
    finally:
        store.close()
