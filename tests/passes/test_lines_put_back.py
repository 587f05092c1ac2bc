"""A line `memory forget` or `supersede` took out of its file that the file holds again (an
editor's stale buffer saved, a `git checkout`, the user's own hand) is active again under its
id, searchable, as a rebuild of the index from the file has it; the undo of that forget or
supersede sees the line back and does not write it twice. A line without a date keeps the
date it was first indexed with when the index loses it and finds it again (a file emptied and
written back, the index rebuilt), as it keeps its id. Real daemon, real model, the real
`memory` command."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from memoryd_client import Client, NotFoundError

from memoryd.config import load_config
from memoryd.ingest import file_read
from memoryd.ingest import indexer as indexing
from memoryd.passes.runs import PassRuns
from memoryd.store.database import Store
from memoryd.store.entries import Entries
from memoryd.store.ledger import Ledger
from memoryd.store.query import EntryQuery
from tests.conftest import reindexed, run_cli, start_daemon, wait_until
from tests.ingest.test_ingest import eventually

MARK = ("## Learnings\n\n"
        "- [2026-10-01] Keep the heron service on port 8443\n"
        "- [2026-10-02] The puffin job runs nightly at 02:00\n")
#: 2026-01-10 12:00 UTC: months before the tests run
LONG_AGO = 1_768_046_400.0


def memory_file(text: str, mtime: float | None = None) -> Path:
    """A Claude Code auto-memory file of project p3."""
    path = Path(os.environ["HOME"]) / ".claude/projects/p3/memory/mark.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def found(client: Client, words: str, query: str | None = None) -> dict[str, Any] | None:
    """The active entry holding ``words`` that a search (by ``query``, else the words) finds."""
    hits = client.search(query or words, agents=["*"], limit=5)["hits"]
    return next((h for h in hits if words in h["text"]), None)


def indexed(client: Client, words: str) -> dict[str, Any]:
    return eventually(lambda: _present(found(client, words)))


def _present(hit: dict[str, Any] | None) -> dict[str, Any]:
    assert hit is not None
    return hit


def status(client: Client, uid: str) -> str | None:
    try:
        return str(client.get(uid)["status"])
    except NotFoundError:
        return None


def undo_run(done: Any) -> str:
    assert done.returncode == 0, done.stderr
    run = re.search(r"`memory undo (r\d+)`", done.stdout)
    assert run, done.stdout
    return run.group(1)


def test_a_forgotten_or_superseded_line_put_back_is_active_and_undo_does_not_copy_it(
        memoryd_home: Path, embedder: Any) -> None:
    path = memory_file(MARK)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            heron, puffin = indexed(client, "heron"), indexed(client, "puffin")
            buffer = path.read_text()
            forgot = undo_run(run_cli("forget", heron["id"]))
            # the watcher read the file without the line: the puffin line moved up
            wait_until(lambda: client.get(puffin["id"])["line_start"] == 3)
            path.write_text(buffer)  # the editor's stale buffer saved
            wait_until(lambda: client.get(heron["id"])["status"] == "active", timeout_s=10)
            back = found(client, "heron", "which port does the heron service listen on")
            assert back is not None and back["id"] == heron["id"]

            undone = run_cli("undo", forgot)
            assert undone.returncode == 0, undone.stderr
            assert "already undone 1" in undone.stdout, undone.stdout
            assert path.read_text() == MARK  # the line once, not twice
            assert run_cli("undo", forgot).returncode == 1  # nothing left to undo

            buffer = path.read_text()
            superseded = undo_run(run_cli("supersede", puffin["id"],
                                          "The puffin job runs nightly at 03:00"))
            assert client.get(puffin["id"])["status"] == "superseded"
            path.write_text(buffer)  # `git checkout mark.md` (read by the watcher or not)
            wait_until(lambda: client.get(puffin["id"])["status"] == "active", timeout_s=10)
            assert client.get(puffin["id"])["superseded_by"] is None
            back = found(client, "02:00", "when does the puffin job run")
            assert back is not None and back["id"] == puffin["id"]
            assert found(client, "03:00", "when does the puffin job run") is None

            undone = run_cli("undo", superseded)
            assert undone.returncode == 0 and "already undone 1" in undone.stdout, undone
            assert path.read_text() == MARK
            live = {e["id"]: client.get(e["id"]) for e in (heron, puffin)}
    finally:
        running.stop()
    # a rebuild of the index from the file says what the live index said
    running = reindexed(embedder)
    try:
        with Client(running.socket) as client:
            for uid, entry in live.items():
                wait_until(lambda uid=uid: status(client, uid) == "active")
                again = client.get(uid)
                assert (again["text"], again["created"], again["line_start"]) == \
                    (entry["text"], entry["created"], entry["line_start"])
    finally:
        running.stop()


def test_an_undated_line_keeps_its_date_when_its_file_is_emptied_and_when_the_index_is_rebuilt(
        memoryd_home: Path, embedder: Any) -> None:
    """Given the file's mtime when first indexed; an emptying save (an editor that truncates,
    then writes), and a rebuild after the file changed since, gave it the file's new mtime:
    `memory recent` and the age note took a lesson of January for one of today."""
    text = "## Learnings\n\n- Verify the otter backups restore before pruning snapshots\n"
    path = memory_file(text, LONG_AGO)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            otter = indexed(client, "otter")
            assert client.get(otter["id"])["created"] == LONG_AGO
            path.write_text("")  # truncated, and written some time later
            wait_until(lambda: found(client, "otter") is None)
            path.write_text(text)
            wait_until(lambda: found(client, "otter") is not None)
            again = client.get(otter["id"])  # the same id, and its date
            assert again["created"] == LONG_AGO
            with path.open("a") as handle:  # a line added: the file's mtime is now
                handle.write("- Rotate the kestrel keys monthly\n")
            indexed(client, "kestrel")
    finally:
        running.stop()
    running = reindexed(embedder)
    try:
        with Client(running.socket) as client:
            wait_until(lambda: status(client, otter["id"]) == "active")
            assert client.get(otter["id"])["created"] == LONG_AGO
    finally:
        running.stop()


class Notebook:
    """A memory file indexed by the indexer on a real store, and a forget's entry change
    (PassRuns, as `memory forget` makes it along with its write of the file)."""

    def __init__(self, path: Path) -> None:
        config = load_config()
        self.path = path
        self.store = Store(config.db_path)
        entries = Entries(config.remember, self.store, Ledger(config.ledger_dir))
        self.indexer = indexing.Indexer(self.store, entries)
        self.runs = PassRuns(self.store, entries, config.state_dir)

    def read(self) -> file_read.MemoryFileRead:
        facts = file_read.stat_facts(self.path, "claude-auto-memory", "memory", "claude-code",
                                    None)
        return file_read.read_memory_file(facts, self.path.name, 1 << 20)

    def apply(self, read: file_read.MemoryFileRead) -> None:
        self.indexer.apply_memory_file(read)

    def uid(self, words: str) -> str:
        [uid] = [e.uid for e in self.store.entries(EntryQuery().source(str(self.path)))
                 if words in e.text]
        return uid

    def status(self, uid: str) -> str | None:
        entry = self.store.entry_by_uid(uid)
        return None if entry is None else entry.status

    def forget(self, uid: str, text: str) -> None:
        """The file written without the line (a new file renamed over it), the entry moved."""
        written = self.path.with_name(".mark.md.new")
        written.write_text(text)
        os.replace(written, self.path)
        self.runs.move_entries({uid: {"status": "forgotten", "by": "claude-code (cli)"}})


def test_a_forgotten_line_put_back_before_the_watcher_read_the_file_is_active(
        memoryd_home: Path) -> None:
    """The watcher had not read the file a forget wrote when the old text was saved again:
    it found the file as indexed before the forget, and left the line forgotten."""
    book = Notebook(memory_file(MARK))
    try:
        book.apply(book.read())
        heron = book.uid("heron")
        book.forget(heron, MARK.replace("- [2026-10-01] Keep the heron service on port 8443\n",
                                        ""))
        book.path.write_text(MARK)  # put back at once
        book.apply(book.read())
        assert book.status(heron) == "active"
    finally:
        book.store.close()


def test_a_text_read_before_a_forget_wrote_the_file_brings_no_line_back(
        memoryd_home: Path) -> None:
    """The watcher reads a file off the database thread: a text it read just before a forget
    rewrote the file still holds the line, and must not make it active (the next read, of
    the file without it, then took its entry out of the index, history and all)."""
    book = Notebook(memory_file(MARK))
    try:
        book.apply(book.read())
        heron = book.uid("heron")
        book.path.write_text(MARK + "- [2026-10-03] The kestrel keys rotate monthly\n")
        stale = book.read()  # an edit the watcher read; then the forget
        book.forget(heron, MARK.replace("- [2026-10-01] Keep the heron service on port 8443\n",
                                        "") + "- [2026-10-03] The kestrel keys rotate monthly\n")
        book.apply(stale)
        assert book.status(heron) == "forgotten"
        book.apply(book.read())
        assert book.status(heron) == "forgotten"  # kept as history
        assert book.status(book.uid("kestrel")) == "active"
    finally:
        book.store.close()
