"""The memory tools' versions outlive the index: every write is appended to the agent's
history archive before it commits (memoryd.store.file_history), and a rebuild — `memoryd
reindex`, a start on a database that is gone — restores them, but for those the retain pass
moved out of the index. A purge takes a text out of those records too. Real daemon, real
files, real `memoryd reindex`."""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from memoryd_client import Client, UnavailableError

from memoryd.maintenance.purge_match import strings
from memoryd.store.archive import AgentArchive, MemberWriter
from memoryd.store.file_versions import delta
from tests.conftest import run_cli, run_memoryd, start_daemon
from tests.server.test_tools import read_only_memory_dir  # noqa: F401 (a fixture)
from tests.writes.test_secrets import state_holds

UID = "file:coder:notes.md"


def shown(client: Client, uid: str = UID) -> list[tuple[Any, ...]]:
    """A file's versions as `memory history` shows them: what, when, who, texts."""
    return [(e["action"], e["ts"], e["actor"], (e["before"] or {}).get("text"),
             e["after"]["text"]) for e in client.history(uid)["events"]]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, sort_keys=True).encode() + b"\n"


def records(home: Path, agent: str = "coder") -> list[dict[str, Any]]:
    path = home / "history" / f"{agent}.jsonl.gz"
    if not path.exists() or not path.stat().st_size:
        return []
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]


def rebuilt(home: Path, embedder: Any) -> Any:
    """The index rebuilt from the files alone, and the daemon started on it."""
    (home / "memoryd.db").unlink()
    result = run_memoryd("reindex", "--no-vectors")
    assert result.returncode == 0, result.stderr
    return start_daemon(embedder), result.stdout


def test_a_reindex_keeps_every_version_the_tools_wrote(memoryd_home: Path, embedder) -> None:
    """The report: versions newer than 30 days lived in the database alone; a rebuild lost
    them, and `memory history file:…` said the tools never wrote the file."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.file("write", "coder", "notes.md", text="- one\n")
            c.file("replace", "coder", "notes.md", old="one", new="two")
            c.file("insert", "coder", "notes.md", line=0, text="# Notes")
            before = shown(c)
    finally:
        running.stop()
    assert [v[3:] for v in before] == [(None, "- one\n"), ("- one\n", "- two\n"),
                                       ("- two\n", "# Notes\n- two\n")]
    running, out = rebuilt(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            assert shown(c) == before  # the same versions, times and writers
        assert "3 memory-file versions from the history archives" in out, out
        with Client(running.socket) as c:
            c.file("replace", "coder", "notes.md", old="two", new="three")  # the chain goes on
            assert shown(c)[-1][3:] == ("# Notes\n- two\n", "# Notes\n- three\n")
    finally:
        running.stop()


def test_a_start_on_a_database_that_is_gone_restores_them(memoryd_home: Path, embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            for n in range(3):
                c.file("write", "coder", "notes.md", text=f"- version {n}\n")
            before = shown(c)
    finally:
        running.stop()
    for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm"):
        (memoryd_home / name).unlink(missing_ok=True)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            assert shown(c) == before and len(before) == 3
    finally:
        running.stop()


def age(home: Path, days: float) -> None:
    """Every write of the tools made ``days`` earlier, in the index and in the archive alike
    (as if they had been written then)."""
    shift = days * 86_400
    db = apsw.Connection(str(home / "memoryd.db"))
    with db:
        db.execute("UPDATE events SET ts = ts - ? WHERE uid >= 'file:' AND uid < 'file;'",
                   (shift,))
    db.close()
    history = AgentArchive(home / "history")
    for agent in history.agents():
        lines = [line({**r, "ts": r["ts"] - shift}) for r in records(home, agent)]
        writer = MemberWriter()
        writer.add(lines)
        history.path(agent).write_bytes(writer.data())


def test_versions_the_retain_pass_moved_out_are_not_restored_nor_moved_twice(
        memoryd_home: Path, embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            for n in range(25):
                c.file("write", "coder", "notes.md", text=f"- v{n}\n")
    finally:
        running.stop()
    age(memoryd_home, 40)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            assert c.pass_run("retain")["counts"]["journal_versions_moved"] == 5
            before = shown(c)
    finally:
        running.stop()
    assert len(before) == 20 and before[0][3:] == ("- v4\n", "- v5\n")
    held = records(memoryd_home)
    assert sorted(r["op"] for r in held) == ["delta"] * 25 + ["version"] * 5
    running, out = rebuilt(memoryd_home, embedder)
    try:
        assert "20 memory-file versions from the history archives" in out, out
        with Client(running.socket) as c:
            assert shown(c) == before  # none twice, the oldest kept one a whole text again
            assert c.pass_run("retain")["counts"].get("journal_versions_moved", 0) == 0
    finally:
        running.stop()
    assert records(memoryd_home) == held  # nothing archived twice


def test_a_purge_takes_the_text_out_of_the_tools_records(memoryd_home: Path, embedder) -> None:
    """A base's text, a small insert and a big one (kept zlib-compressed in the record)."""
    secret = "zqv7k2m9p4wx"
    filler = "".join(f"- line {n} of the runbook, nothing to see\n" for n in range(200))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.file("write", "coder", "notes.md", text=f"- the vault word is {secret}\n")
            c.file("replace", "coder", "notes.md", old=secret, new="in the vault")
            c.file("write", "coder", "big.txt", text="- start\n")
            c.file("insert", "coder", "big.txt", line=2, text=filler + f"- {secret}\n")
            c.file("write", "coder", "other.md", text="- nothing secret\n")
            c.file("write", "coder", "other.md", text="- still nothing\n")
            kept = shown(c, "file:coder:other.md")
            assert any("insert_z" in r["after"] for r in records(memoryd_home))
            done = run_cli("purge", "--agent", "coder", "--match", secret, "--yes")
            assert done.returncode == 0, done.stderr
    finally:
        running.stop()
    assert state_holds(memoryd_home, secret, skip=memoryd_home / "agents") == []
    left = records(memoryd_home)
    assert not [r for r in left if secret in strings(r)]  # the compressed inserts too
    assert {r["uid"] for r in left} >= {"file:coder:other.md"}
    running, _ = rebuilt(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            assert shown(c, "file:coder:other.md") == kept
            assert secret not in json.dumps(c.history(UID))
    finally:
        running.stop()
    assert state_holds(memoryd_home, secret, skip=memoryd_home / "agents") == []


def test_a_write_never_answered_does_not_break_the_versions_after_it(
        memoryd_home: Path, embedder) -> None:
    """A write whose record reached the archive but not the index (killed between the two,
    or its transaction failed and the record could not be taken back) is restored as a
    version; the writes after it, recorded without it, are rebuilt whole all the same."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.file("write", "coder", "notes.md", text="- one\n")
            history = AgentArchive(memoryd_home / "history")
            never = {"op": "delta", "uid": UID, "ts": time.time(), "action": "file.write",
                     "actor": "coder", "before": {"sha256": sha("- one\n"), "bytes": 6},
                     "after": {"sha256": sha("- lost\n"), "bytes": 7,
                               **delta("- one\n", "- lost\n")}}
            writer = MemberWriter()
            writer.add([line(never)])
            history.append("coder", writer.data(), None)
            c.file("replace", "coder", "notes.md", old="one", new="two")
    finally:
        running.stop()
    running, _ = rebuilt(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            assert [v[3:] for v in shown(c)] == [(None, "- one\n"), ("- one\n", "- lost\n"),
                                                 ("- one\n", "- two\n")]
    finally:
        running.stop()


def test_a_write_refused_leaves_no_record(read_only_memory_dir, memoryd_home: Path,  # noqa: F811
                                          embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            with pytest.raises(UnavailableError, match="nothing of this request was kept"):
                c.file("replace", "coder", "CONTEXT.md", old="ruff", new="black")
    finally:
        running.stop()
    assert records(memoryd_home) == []


def test_a_reindex_archives_the_versions_of_an_older_database_first(
        memoryd_home: Path, embedder) -> None:
    """Versions written before every write appended its record live in the database alone:
    the reindex appends them to the archive before it sets that database aside."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            for n in range(3):
                c.file("write", "coder", "notes.md", text=f"- version {n}\n")
            before = shown(c)
    finally:
        running.stop()
    for path in (memoryd_home / "history").iterdir():  # as an older memoryd left it
        path.unlink()
    result = run_memoryd("reindex", "--no-vectors")
    assert result.returncode == 0, result.stderr
    assert "3 memory-file versions" in result.stdout
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            assert shown(c) == before
    finally:
        running.stop()
