"""`memory status` counts what is (N10): files written after start count for their source,
a restart says how many files are watched (not "0 files"), the embedding share never counts the
whole store, files written while memoryd runs show "indexing files x/y", and removing and adding
a source again does not double its counters. Malformed transcript lines warn briefly (L-j)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from memoryd_client.status_view import health_line
from memoryd_client.wire import REVISION

from memoryd.server.health_words import skipped_lines
from tests.conftest import run_cli, start_daemon, wait_until
from tests.ingest.test_ingest import _one, eventually, user, write_lines


def _source(client: Any, name: str) -> dict[str, Any]:
    [source] = [s for s in client.status()["ingest"]["sources"] if s["name"] == name]
    return source


def test_a_file_written_after_start_counts_for_its_source(memoryd_home: Path, daemon,
                                                          client) -> None:
    transcripts = memoryd_home / "user/.claude/projects/-late"
    transcripts.mkdir(parents=True)  # the source's directory appears after the start
    write_lines(transcripts / "a.jsonl", [user("m1", "a question about brass door hinges")])
    eventually(lambda: _one(client, "brass door hinges"))
    assert _source(client, "claude-transcripts")["files"] == 1  # was: files 0, 1 entry
    write_lines(transcripts / "b.jsonl", [user("m2", "a question about slate roof tiles")])
    eventually(lambda: _one(client, "slate roof tiles"))
    assert _source(client, "claude-transcripts")["files"] == 2  # was: files 1
    (transcripts / "a.jsonl").unlink()

    def one_left() -> None:
        assert _source(client, "claude-transcripts")["files"] == 1

    eventually(one_left)


def test_a_restart_says_how_many_files_are_watched(memoryd_home: Path, embedder,
                                                   caplog: Any) -> None:
    notes = memoryd_home / "user/.mastersof-ai/agents/bob/memory"
    notes.mkdir(parents=True)
    for i in range(6):
        (notes / f"n{i}.md").write_text(f"## Learnings\n- [2026-01-02] lesson {i} on kerning\n")

    def finished() -> bool:
        return json.loads(run_cli("status", "--json").stdout)["ingest"]["initial"]["finished"] \
            is not None

    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            running = start_daemon(embedder)
            try:
                wait_until(finished, timeout_s=60)
                lines = run_cli("status").stdout.splitlines()
            finally:
                running.stop()
    # the second start: nothing changed since the first, and it says so
    assert any(line.startswith("initial indexing: done, 6 files watched, 0 of them new or "
                               "changed since the last run, 0 entries indexed, in ")
               for line in lines), lines
    [logged] = [r.getMessage() for r in caplog.records
                if r.getMessage().startswith("Initial indexing finished")]
    assert logged.startswith("Initial indexing finished: 6 files watched, 0 of them new or "
                             "changed since the last run, 0 entries, in ")


def test_the_embedding_share_counts_this_backlog_and_is_not_shown_while_files_add_to_it() -> None:
    """The report's 96% → 65%: the share was vectors over the whole store, which files being
    parsed made grow. Now it counts the entries embedded since this backlog began; while files
    are still being indexed (adding to it) it gives counts, not a share."""
    base: dict[str, Any] = {"health": {"state": "ok", "checks": []}, "revision": REVISION,
                            "vectors": 10_196, "backlog": 1_200,
                            "embedding": {"done": 400, "eta_s": 30.0}}
    indexing = {"ingest": {"initial": {"started": time.time() - 10, "finished": None,
                                       "done": 448, "total": 1_500, "eta_s": 16.0}}}
    assert health_line({**base, **indexing}) == (
        "healthy · indexing files 448/1,500 (29%, ~16 s left) · embedding 400 done, "
        "1,200 waiting")
    done = {"ingest": {"initial": {"started": time.time() - 60, "finished": time.time()}}}
    assert health_line({**base, **done}) == "healthy · embedding 400/1,600 (25%, ~30 s left)"


def test_files_written_while_memoryd_runs_show_indexing_progress(memoryd_home: Path, daemon,
                                                                 client) -> None:
    """Files queued after the initial indexing: `status` said only "embedding …"."""
    watcher = daemon.daemon.watcher
    wait_until(lambda: watcher.initial.finished is not None)
    later = memoryd_home / "user/.mastersof-ai/agents/bob/memory"
    later.mkdir(parents=True)
    paths = []
    for i in range(3):
        path = later / f"late{i}.md"
        path.write_text(f"## Learnings\n- [2026-01-02] late lesson {i} on ligatures\n")
        paths.append(str(path))

    async def queue_and_look() -> dict[str, Any]:  # on the daemon's loop: nothing runs between
        watcher.enqueue(paths)
        return watcher.status()

    status = asyncio.run_coroutine_threadsafe(queue_and_look(), daemon.loop).result(10)
    assert status["indexing"] == {"done": 0, "total": 3}
    line = health_line({"health": {"state": "ok", "checks": []}, "revision": REVISION,
                        "ingest": status})
    assert line == "healthy · indexing files 0/3 (0%)"

    def indexed() -> None:
        assert client.status()["ingest"]["indexing"] is None

    eventually(indexed)


def test_removing_and_adding_a_source_again_does_not_double_its_counters(
        memoryd_home: Path, daemon, client) -> None:
    transcripts = memoryd_home / "user/.claude/projects/-q"
    transcripts.mkdir(parents=True)
    write_lines(transcripts / "t.jsonl", ["{not json at all", "[1, 2]",
                                          user("m1", "a question about copper pans")])
    eventually(lambda: _one(client, "copper pans"))
    assert _source(client, "claude-transcripts")["skipped"] == {"invalid_json": 1,
                                                                "not_object": 1}
    assert run_cli("sources", "remove", "claude-transcripts").returncode == 0
    assert run_cli("sources", "add", "claude-transcripts").returncode == 0
    eventually(lambda: _one(client, "copper pans"))
    source = _source(client, "claude-transcripts")
    assert source["skipped"] == {"invalid_json": 1, "not_object": 1}  # was 2 and 2
    assert source["files"] == 1


def test_a_transcript_none_of_which_could_be_read_says_so_not_that_all_is_well(
        memoryd_home: Path, daemon, client) -> None:
    """Malformed lines among good ones are harmless and doctor says so. A file none of whose
    lines could be read (another shape of log, the wrong format for its source) is not: it
    was reported as "nothing needs doing", and the whole file was left out."""
    transcripts = memoryd_home / "user/.claude/projects/-q"
    transcripts.mkdir(parents=True)
    path = transcripts / "chat.jsonl"
    write_lines(path, ["{not json at all", "[1, 2]"])

    def warned() -> None:
        assert health_line(client.status()).startswith(
            "warning: skipped: nothing of chat.jsonl could be read; memory doctor says how "
            "to fix it")

    eventually(warned)
    report = json.loads(run_cli("doctor", "--json").stdout)
    [skipped] = [c for c in report["checks"] if c["check"] == "skipped"]
    assert skipped["status"] == "warning"
    assert skipped["fix"].startswith(f"{path}: no line is in the format of its source")
    assert "nothing needs doing" not in skipped["fix"]
    # mended in place (an editor saving over it): read again from its start
    path.write_text("{not json at all\n" + json.dumps(user("m1", "a question about tin cans"))
                    + "\n")
    eventually(lambda: _one(client, "tin cans"))

    def mended() -> None:
        assert health_line(client.status()).startswith(
            "warning: skipped: 1 malformed line skipped in chat.jsonl (the rest of it is "
            "indexed)")

    eventually(mended)


def test_another_agents_transcript_under_a_generic_source_is_said_unread(
        memoryd_home: Path, daemon, client) -> None:
    """A Claude Code transcript put under a `generic` source: its lines have a `type`, no
    `role`; they were left out as records of pi's, and nothing said the file was unread."""
    logs = memoryd_home / "user" / "logs"
    logs.mkdir(parents=True)
    client.sources("add", name="mylogs", path=str(logs / "*.jsonl"), kind="transcript",
                   format="generic", agent="zed")
    write_lines(logs / "cc.jsonl", [user("m1", "a question about brass hinges")])

    def warned() -> None:
        assert health_line(client.status()).startswith(
            "warning: skipped: nothing of cc.jsonl could be read")

    eventually(warned)
    assert _source(client, "mylogs")["skipped"] == {"bad_field": 1}


def test_malformed_lines_are_said_beside_a_file_with_a_problem(
        memoryd_home: Path, daemon, client) -> None:
    """A notebook memoryd cannot read and a transcript with a malformed line: doctor's
    "skipped" check names both (the file's problem hid the lines until it was mended)."""
    memory = memoryd_home / "user/.mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "binary.md").write_bytes(b"\x00\x01 binary junk")
    transcripts = memoryd_home / "user/.claude/projects/-q"
    transcripts.mkdir(parents=True)
    write_lines(transcripts / "t.jsonl", ["{not json at all", user("m1", "a question about tin cans")])
    eventually(lambda: _one(client, "tin cans"))

    def both() -> None:
        report = json.loads(run_cli("doctor", "--json").stdout)
        [skipped] = [c for c in report["checks"] if c["check"] == "skipped"]
        assert "binary.md: binary file" in skipped["detail"], skipped
        assert "1 malformed line skipped in t.jsonl" in skipped["detail"], skipped

    eventually(both, timeout_s=30)


def test_a_malformed_transcript_line_warns_shortly_and_says_what_to_do(
        memoryd_home: Path, daemon, client) -> None:
    """L-j: two bad lines made status start with a 250-character warning, kept across
    restarts, and doctor's fix sent the user to `memory status --sources`, which only counts
    them again. Now the warning is short, doctor names the file and the lines' kinds and says
    that nothing needs doing, and a day after the file last changed it is a note, not a
    warning."""
    transcripts = memoryd_home / "user/.claude/projects/-q"
    transcripts.mkdir(parents=True)
    path = transcripts / "t.jsonl"
    write_lines(path, ["{not json at all", "[1, 2]", user("m1", "a question about tin cans")])
    eventually(lambda: _one(client, "tin cans"))

    def warned() -> None:  # once the turn's vector is made too (late on a loaded machine)
        assert health_line(client.status()) == (
            "warning: skipped: 2 malformed lines skipped in t.jsonl (the rest of it is "
            "indexed); memory doctor says how to fix it · up to date")

    eventually(warned)
    report = json.loads(run_cli("doctor", "--json").stdout)
    [skipped] = [c for c in report["checks"] if c["check"] == "skipped"]
    assert skipped["fix"].startswith(f"nothing needs doing: {path}: 1 invalid_json, "
                                     "1 not_object. ")
    assert "skipped and the rest of the file is indexed: invalid_json: not JSON (a line cut " \
        "short, or text between the records); not_object: JSON, but not the object" \
        in skipped["fix"], skipped["fix"]
    assert "memory status --sources" not in skipped["fix"]
    store = daemon.daemon.parts.store  # the file last changed two days ago

    def age() -> None:
        store._db.execute("UPDATE files SET indexed = indexed - 2 * 86400 WHERE path = ?",
                         (str(path),))

    asyncio.run_coroutine_threadsafe(daemon.daemon.db(age), daemon.loop).result(10)
    status = client.status()
    assert health_line(status).startswith("healthy")
    report = json.loads(run_cli("doctor", "--json").stdout)
    [skipped] = [c for c in report["checks"] if c["check"] == "skipped"]
    assert skipped["status"] == "ok"
    assert skipped["detail"].startswith("2 malformed lines skipped in t.jsonl, more than a day "
                                        "ago: left as they are")


def test_a_chats_times_are_read_as_logs_print_them_and_an_unreadable_one_is_counted(
        memoryd_home: Path, daemon, client) -> None:
    """An old chat whose times were "2024-02-03 04:05:06 UTC" or epoch microseconds was dated
    now, its session last seen "-", and nothing said why. Those are read; a time still in no
    form memoryd reads is counted for its source and named by status and doctor."""
    chats = memoryd_home / "user/chats"
    chats.mkdir()
    assert run_cli("sources", "add", "chats", "~/chats/*.jsonl", "--kind", "transcript",
                   "--format", "generic", "--agent", "chatter").returncode == 0
    write_lines(chats / "old.jsonl", [
        {"role": "user", "content": "when is the kiln fired", "timestamp": "2024-02-03 04:05:06 UTC"},
        {"role": "assistant", "content": "On Fridays.", "timestamp": "2024-02-03 04:05:09 UTC"},
        {"role": "user", "content": "and the glaze batch", "timestamp": 1706933206123456},
        {"role": "assistant", "content": "Mondays.", "timestamp": 1706933209000000},
        {"role": "user", "content": "who cleans the wheel", "timestamp": "3rd of Feb, tea time"},
        {"role": "assistant", "content": "Ana does.", "timestamp": "2024-02-03 04:08:00 UTC"}])

    def days() -> dict[str, str]:
        entries = client.list_entries(agents=["chatter"], kind=["turn"])["entries"]
        return {e["text"].split("User: ")[-1].split("\n")[0]: time.strftime(
            "%Y-%m-%d", time.gmtime(e["created"])) for e in entries}

    wait_until(lambda: len(days()) == 3)
    # the exchange whose question's time could not be read is dated by its answer's
    assert set(days().values()) == {"2024-02-03"}
    [session] = client.call("sessions", {})["sessions"]
    assert session["last_seen"] == 1706933280.0  # 04:08, the last time read
    assert _source(client, "chats")["skipped"] == {"bad_timestamp": 1}
    assert "skipped: 1 bad_timestamp" in run_cli("status", "--sources").stdout

    def named() -> None:
        assert health_line(client.status()).startswith(
            "warning: skipped: 1 line with a time memoryd cannot read in old.jsonl (its "
            "text is indexed)")

    eventually(named)


def test_a_refused_file_deleted_since_is_no_problem_any_more(memoryd_home: Path, embedder,
                                                           monkeypatch) -> None:
    """A notebook over the size cap is refused and said; deleted, the warning stayed until
    the daemon restarted (status --sources already said "files 0")."""
    monkeypatch.setenv("MEMORYD_WATCH_MAX_FILE_BYTES", "1024")
    claude = memoryd_home / "user" / ".claude"
    claude.mkdir(parents=True, exist_ok=True)
    running = start_daemon(embedder)
    try:
        from memoryd_client import Client

        with Client(running.socket) as client:
            big = claude / "CLAUDE.md"
            big.write_text("- a rule about nothing in particular\n" * 100)
            wait_until(lambda: "CLAUDE.md" in health_line(client.status()))
            big.unlink()
            wait_until(lambda: health_line(client.status()).startswith("healthy"))
    finally:
        running.stop()


def test_doctor_says_what_the_skipped_lines_are_in_the_files_own_format() -> None:
    """Doctor called every skipped line "not JSON records the agent's format knows", an Aider
    chat history's (markdown) and a line memoryd found too long alike: it says what each kind
    of line is now."""
    now = time.time()
    aider = ("/src/shop/.aider.chat.history.md", "skipped lines: 1 too_long", now, True)
    fix = skipped_lines([aider], now)["fix"]
    assert "not JSON" not in fix and "format knows" not in fix
    assert "skipped and the rest of the file is indexed: too_long: lines of more than " \
        "10,000,000 characters." in fix, fix
    jsonl = ("/t/a.jsonl", "skipped lines: 2 invalid-utf8, 1 bad_field", now, True)
    fix = skipped_lines([jsonl], now)["fix"]
    assert "invalid-utf8: bytes that are not UTF-8 text, so no JSON record (in a markdown " \
        "transcript, Aider's, such bytes are replaced and the line kept); bad_field: " in fix


def test_a_transcript_whose_every_line_is_too_long_is_not_said_to_be_in_another_format() -> None:
    """Nothing of a file read because each of its lines is over watch.max_line_bytes: doctor
    said no line was in its source's format and that a generic transcript needs `role`."""
    now = time.time()
    row = ("/t/huge.jsonl", "skipped lines: 3 line-too-long", now, False)
    said = skipped_lines([row], now)
    assert said["detail"] == "nothing of huge.jsonl could be read"
    assert said["fix"].startswith("/t/huge.jsonl: every line is longer than memoryd reads "
                                  "(line-too-long: lines longer than watch.max_line_bytes); "
                                  "raise watch.max_line_bytes"), said["fix"]
    assert "role" not in said["fix"] and "format" not in said["fix"]
