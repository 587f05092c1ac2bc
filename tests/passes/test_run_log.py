"""The run log (the passes' runs and changes) outlives a rebuild of the index (R9): files are the source of truth and
the database is rebuilt from them, so the runs, their changes and what was undone are also
kept in ``passes.jsonl``. After `memoryd reindex`, or the rebuild of a damaged index at
start, `memory pass list`/`show` still show the runs, `memory undo RUN` still takes one back,
and a merge that was undone stays undone. Real daemon, real model, real `memory` command."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from memoryd_client import Client

from memoryd.config import load_config
from memoryd.passes.changes import Change, RunSummary
from memoryd.passes.file_changes import file_change
from memoryd.passes.runs import PassRuns
from memoryd.passes.user_files import read_text
from memoryd.store.database import Store
from memoryd.store.entries import Entries
from memoryd.store.ledger import Ledger
from memoryd.store.run_log import RunLog
from memoryd.store.usage_log import UsageLog, inject_record
from tests.conftest import run_cli, run_memoryd, start_daemon
from tests.passes.test_passes import rebuilt_from_files

LESSONS = ("Use conventional commits.", "Always use conventional commits.")


def two_lessons(c: Client) -> list[str]:
    return [c.remember("coder", "git", text, kind="lesson", session=f"s{n}", confidence=0.8,
                       force=True)["entry"]["id"] for n, text in enumerate(LESSONS)]


def merged_by_a_daemon(embedder: Any) -> tuple[list[str], dict[str, Any]]:
    """A daemon of its own stores the two lessons and merges them (a consolidate run), then
    stops: the lessons' ids and the run's reply."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            ids = two_lessons(c)
            merged = c.pass_run("consolidate")
            assert merged["counts"]["merged"] == 1
    finally:
        running.stop()
    return ids, merged


def statuses(c: Client, ids: list[str]) -> list[str]:
    return [c.get(i)["status"] for i in ids]


def test_an_undone_merge_stays_undone_and_its_runs_stay_listed_after_a_rebuild(
        memoryd_home: Path, embedder: Any) -> None:
    """The report's n_undo_rebuild."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            ids = two_lessons(c)
            merged = c.pass_run("consolidate")
            assert merged["counts"]["merged"] == 1 and "superseded" in statuses(c, ids)
            undone = run_cli("undo", merged["run"], "--json")
            assert undone.returncode == 0, undone.stderr
            undo_run = json.loads(undone.stdout)["run"]
            assert statuses(c, ids) == ["active", "active"]
            assert not c.pass_run("consolidate")["counts"].get("merged")  # kept apart
    finally:
        running.stop()
    running = rebuilt_from_files(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            assert statuses(c, ids) == ["active", "active"]
            listing = run_cli("pass", "list")
            assert listing.returncode == 0 and "never run" not in \
                next(line for line in listing.stdout.splitlines()
                     if line.startswith("consolidate")), listing.stdout
            shown = c.pass_show(merged["run"])
            assert shown["pass"] == "consolidate" and shown["changes"]
            assert {ch["state"] for ch in shown["changes"]} == {"undone"}
            again = c.pass_run("consolidate")
            assert not again["counts"].get("merged"), again  # an undone merge stays undone
            assert statuses(c, ids) == ["active", "active"]
            nothing = run_cli("undo", merged["run"])
            assert nothing.returncode == 1 and "nothing to undo" in nothing.stderr
            redo = run_cli("undo", undo_run)  # the undo itself can still be undone
            assert redo.returncode == 0, redo.stderr
            assert sorted(statuses(c, ids)) == ["active", "superseded"]
    finally:
        running.stop()


def test_a_run_can_be_undone_after_the_damaged_index_was_rebuilt_at_start(
        memoryd_home: Path, embedder: Any) -> None:
    """The report's n_consolidate_kill ending (`no run r1` after the rebuild), through the
    rebuild of a damaged index at start, then `memoryd reindex`."""
    ids, merged = merged_by_a_daemon(embedder)
    with (memoryd_home / "memoryd.db").open("r+b") as handle:
        handle.write(b"this is not a database header")
    running = start_daemon(embedder)
    try:
        assert list(memoryd_home.glob("memoryd.db.corrupt-*"))
        with Client(running.socket) as c:
            assert "superseded" in statuses(c, ids)
            undone = run_cli("undo", merged["run"])
            assert undone.returncode == 0, undone.stderr
            assert statuses(c, ids) == ["active", "active"]
    finally:
        running.stop()
    running = rebuilt_from_files(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            assert statuses(c, ids) == ["active", "active"]
            assert not c.pass_run("consolidate")["counts"].get("merged")
    finally:
        running.stop()


def test_a_change_pending_when_the_daemon_died_is_settled_after_a_rebuild(
        memoryd_home: Path, embedder: Any) -> None:
    """Crash safety across a rebuild: a group of file changes is journaled pending before
    any file is written. Killed after the first file of the group was written, and the index
    rebuilt before the next start, the group is still known pending: the start puts the file
    back (all or none), as it does on the database that saw it."""
    notebook = memoryd_home / "user" / "notebook.md"
    archive = memoryd_home / "user" / "archive.md"
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_text("# Notes\n\n- one\n- two\n- three\n")
    original = notebook.read_bytes()
    config = load_config()
    store = Store(config.db_path)
    try:
        runs = PassRuns(store, Entries(config.remember, store, Ledger(config.ledger_dir)),
                        config.state_dir)
        run = runs.begin("notebooks", {}, False)
        changes = [file_change(notebook, read_text(notebook), "# Notes\n\n- one\n", "prune",
                               "over the cap"),
                   file_change(archive, None, "- two\n- three\n", "prune", "over the cap")]
        assert all(isinstance(change, Change) for change in changes)
        assert isinstance(run, RunSummary)
        runs.begin_files(run, [c for c in changes if c is not None])
        notebook.write_text("# Notes\n\n- one\n")  # the first file written, then the kill
    finally:
        store.close()
    (memoryd_home / "memoryd.db").unlink()
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            shown = c.pass_show(f"r{run.run}")
            assert shown["status"] == "interrupted"
            assert {ch["state"] for ch in shown["changes"]} == {"aborted"}
    finally:
        running.stop()
    assert notebook.read_bytes() == original and not archive.exists()


def test_the_run_log_keeps_a_files_bytes_compressed(memoryd_home: Path) -> None:
    """A file change holds a file's text before and after; the journal file keeps the text
    before compressed and the text after as a delta from it, and gives both back whole."""
    big = "".join(f"- [2026-01-{1 + i % 28:02d}] session {i}: drew sticker {i}\n"
                  for i in range(400))
    log = RunLog(memoryd_home / "passes.jsonl")
    row = (7, 3, "file", "/tmp/n.md", "prune", "cap", json.dumps({"text": big}),
           json.dumps({"text": big[:-40], "entries": {}, "entries_before": {}}), "applied",
           time.time(), None, 7)
    from memoryd.store.run_log import change_record, unpack

    log.append([change_record(row)])
    assert log.size() < len(big) // 3
    [(_, record)] = list(log.read())
    before, after = unpack(record["before"], record["after"])
    assert before == {"text": big} and after["text"] == big[:-40]


def test_a_database_made_before_the_run_log_writes_it_once(
        memoryd_home: Path, embedder: Any) -> None:
    """An index made by a version without passes.jsonl: its first start writes the journal
    it holds to the file, so a later rebuild keeps those runs too."""
    import apsw

    ids, merged = merged_by_a_daemon(embedder)
    (memoryd_home / "passes.jsonl").unlink()  # as an older version left the state dir
    db = apsw.Connection(str(memoryd_home / "memoryd.db"))
    with db:
        db.execute("DELETE FROM meta WHERE key='pass_log'")
    db.close()
    start_daemon(embedder).stop()
    assert (memoryd_home / "passes.jsonl").stat().st_size > 0
    running = rebuilt_from_files(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            assert c.pass_show(merged["run"])["changes"]
            assert run_cli("undo", merged["run"]).returncode == 0
            assert statuses(c, ids) == ["active", "active"]
    finally:
        running.stop()


def test_a_torn_last_line_of_the_run_log_is_set_aside(memoryd_home: Path) -> None:
    """A crash in the middle of an append leaves part of a line, never part of a commit: it
    is moved to a side file in torn/ before anything is read or appended (never destroyed),
    and the lines before it are kept."""
    log = RunLog(memoryd_home / "passes.jsonl")
    log.append([{"op": "state", "ids": [1], "state": "applied"}])
    whole = log.size()
    with log.path.open("ab") as handle:
        handle.write(b'{"op": "state", "ids": [2')
    mended = log.repair_tail()
    assert log.size() == whole
    assert [record["ids"] for _, record in log.read()] == [[1]]
    assert mended is not None and mended.aside is not None
    assert mended.aside.parent == memoryd_home / "torn"
    assert mended.aside.read_bytes() == b'{"op": "state", "ids": [2'


def test_a_finished_run_whose_last_line_lost_its_newline_stays_finished(
        memoryd_home: Path, embedder: Any) -> None:
    """The run log rewritten without its final newline (an editor, a tool): its last line, the
    run's "finish", is whole and was kept; cutting it turned the run into an interrupted one."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            two_lessons(c)
            run = c.pass_run("consolidate")["run"]
            assert c.pass_show(run)["status"] == "done"
    finally:
        running.stop()
    log = memoryd_home / "passes.jsonl"
    data = log.read_bytes()
    assert b'"op": "finish"' in data.splitlines()[-1]
    log.write_bytes(data[:-1])  # only the final newline dropped
    running = rebuilt_from_files(memoryd_home, embedder)
    try:
        with Client(running.socket) as c:
            assert c.pass_show(run)["status"] == "done"
    finally:
        running.stop()
    assert log.read_bytes() == data
    assert not (memoryd_home / "torn").exists()


def test_the_outcomes_file_keeps_a_whole_last_line_without_its_newline(
        memoryd_home: Path) -> None:
    """outcomes.jsonl is mended as the run log is: a last line that lost only its newline is
    read and gets it back, never cut."""
    outcomes = UsageLog(memoryd_home / "outcomes.jsonl")
    outcomes.append([inject_record("s1", "coder", ["e1"], 1.0),
                     inject_record("s2", "coder", ["e2"], 2.0)])
    data = outcomes.path.read_bytes()
    outcomes.path.write_bytes(data[:-1])
    assert [record["session"] for _, record in outcomes.read()] == ["s1", "s2"]
    assert outcomes.path.read_bytes() == data


DOWNGRADED = ("Run the linter before each commit.", "Always run the linter before each commit.")


def downgraded_and_back(memoryd_home: Path, embedder: Any) -> tuple[str, list[str], list[str]]:
    """A memoryd with the run log merges two lessons (r1), then is downgraded to one from
    before the file (2026-11-28): its `memoryd reindex` rebuilds the index without the file,
    and it merges two other lessons, which it numbers r1 too; upgraded again, its index holds
    no offset into the file. Returns the first run and both merges' entries."""
    import apsw

    first, merged = merged_by_a_daemon(embedder)
    kept = memoryd_home / "passes.jsonl.kept"
    (memoryd_home / "passes.jsonl").rename(kept)  # the older memoryd knows no such file
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            second = [c.remember("coder", "lint", text, kind="lesson", session=f"t{n}",
                                 confidence=0.8, force=True)["entry"]["id"]
                      for n, text in enumerate(DOWNGRADED)]
            again = c.pass_run("consolidate")
            assert again["run"] == merged["run"] and again["counts"]["merged"] == 1
    finally:
        running.stop()
    kept.replace(memoryd_home / "passes.jsonl")  # what the older memoryd left: the file as it was
    db = apsw.Connection(str(memoryd_home / "memoryd.db"))
    with db:  # an index of the older memoryd's has never read the file
        db.execute("DELETE FROM meta WHERE key='pass_log'")
    db.close()
    return merged["run"], first, second


def both_merges_kept(c: Client, first_run: str, first: list[str], second: list[str]) -> None:
    runs = {run["run"]: run for run in c.pass_runs("consolidate")["runs"]}
    assert len(runs) == 2, runs
    [renumbered] = set(runs) - {first_run}
    assert {ch["target"] for ch in c.pass_show(first_run)["changes"]} & set(first)
    assert {ch["target"] for ch in c.pass_show(renumbered)["changes"]} & set(second)
    undone = run_cli("undo", renumbered)  # the older memoryd's merge can still be undone
    assert undone.returncode == 0, undone.stderr
    assert statuses(c, second) == ["active", "active"]
    assert "superseded" in statuses(c, first)


def test_a_run_of_an_older_memoryd_after_a_downgrade_is_kept_at_the_next_start(
        memoryd_home: Path, embedder: Any, caplog: Any) -> None:
    """The file's r1 was applied over the index's r1 by id: the older memoryd's merge was
    gone from `memory pass runs` and could never be undone."""
    first_run, first, second = downgraded_and_back(memoryd_home, embedder)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            both_merges_kept(c, first_run, first, second)
    finally:
        running.stop()
    assert any("renumbered after the file's: r1 is r" in r.getMessage() for r in caplog.records)
    running = rebuilt_from_files(memoryd_home, embedder)  # in the file now: a rebuild keeps it
    try:
        with Client(running.socket) as c:
            assert len(c.pass_runs("consolidate")["runs"]) == 2
    finally:
        running.stop()


def test_a_run_of_an_older_memoryd_after_a_downgrade_is_kept_by_a_reindex(
        memoryd_home: Path, embedder: Any) -> None:
    first_run, first, second = downgraded_and_back(memoryd_home, embedder)
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            both_merges_kept(c, first_run, first, second)
    finally:
        running.stop()
