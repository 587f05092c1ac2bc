"""M2 of the newcomer report: `forget` and `supersede` of an entry that comes from a watched
file edit the file (compare-and-swap, atomic, journaled, undoable), so the index never says one
thing while the file the agent loads says another."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import BadParamsError, Client, UnavailableError

from memoryd.ingest.markdown import parse_memory_file
from memoryd.passes import runner as pass_runner
from memoryd.passes.entry_files import locate, replaced
from memoryd.passes.user_files import read_text
from memoryd.store.records import StoredEntry
from memoryd.text import content_hash
from tests.conftest import RunningDaemon, run_cli, run_memoryd, start_daemon, wait_until

CLAUDE_MD = """\
# Preferences

- Answer in British English.
- Use metric units,
  also in code comments.
- Keep answers short.
"""


def hit(client: Client, words: str, status: str = "active") -> dict[str, Any] | None:
    """The entry whose text holds these words, if search finds one."""
    hits = client.search(words, agents=["*"], status=status, limit=5)["hits"]
    return next((h for h in hits if words.lower() in h["text"].lower()), None)


def watched_claude_md(client: Client) -> Path:
    """~/.claude/CLAUDE.md, a symlink into a dotfiles directory (mode 0600), indexed."""
    home = Path(os.environ["HOME"])
    (home / "dotfiles").mkdir()
    real = home / "dotfiles" / "CLAUDE.md"
    real.write_text(CLAUDE_MD)
    real.chmod(0o600)
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").symlink_to(real)
    wait_until(lambda: hit(client, "British English") is not None
               and hit(client, "answers short") is not None)
    return real


def test_supersede_rewrites_the_line_and_undo_puts_it_back(client: Client) -> None:
    real = watched_claude_md(client)
    link = Path(os.environ["HOME"]) / ".claude" / "CLAUDE.md"
    british = hit(client, "British English")
    assert british is not None and british["source"] == str(link) and british["line_start"] == 3

    done = run_cli("supersede", british["id"][:8], "Answer in American English.")
    assert done.returncode == 0, done.stderr
    reply = json.loads(run_cli("get", british["id"], "--json").stdout)
    assert reply["status"] == "superseded"
    newer = reply["superseded_by"]
    assert done.stdout.startswith(f"stored {newer}, superseding {british['id']} (in {link}, "
                                  "line 3; `memory undo r")
    assert real.read_text() == CLAUDE_MD.replace("British", "American")
    assert link.is_symlink() and real.stat().st_mode & 0o777 == 0o600
    # the watcher finds the new line in place: same id, and the old one stays as history
    wait_until(lambda: (hit(client, "American English") or {}).get("id") == newer)
    assert client.get(newer)["line_start"] == 3 and client.get(newer)["status"] == "active"
    assert hit(client, "British English") is None
    history = client.history(british["id"])
    assert [(e["id"], e["status"]) for e in history["entries"]] == [
        (british["id"], "superseded"), (newer, "active")]

    run = done.stdout.split("`memory undo ")[1].split("`")[0]
    shown = run_cli("pass", "show", run)
    assert shown.returncode == 0 and "American" in shown.stdout
    undone = run_cli("undo", run)
    assert undone.returncode == 0, undone.stderr
    assert real.read_text() == CLAUDE_MD and link.is_symlink()
    wait_until(lambda: client.get(british["id"])["status"] == "active"
               and hit(client, "American English") is None)
    assert (hit(client, "British English") or {}).get("id") == british["id"]


def test_a_line_a_supersede_wrote_keeps_its_id_through_a_rebuild(memoryd_home: Path,
                                                                   embedder) -> None:
    """The new line had a random id; a rebuild from the file gave it another (the one a line
    of that file and text gets), and `memory get` of the id the supersede said failed."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, channel="terminal") as client:
            watched_claude_md(client)
            british = hit(client, "British English")
            assert british is not None
            newer = client.supersede(british["id"], "Answer in US English.")["entry"]["id"]
    finally:
        running.stop()
    (memoryd_home / "memoryd.db").unlink()
    rebuilt = run_memoryd("reindex")
    assert rebuilt.returncode == 0, rebuilt.stderr
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            wait_until(lambda: hit(client, "US English") is not None)
            assert client.get(newer)["text"] == "Answer in US English."
    finally:
        running.stop()


#: A GitHub token, which the redactor takes out of what the index holds.
TOKEN = "ghp_" + "R0tat3dT0ken01abcdefghijklmnopqrstuv"


def test_a_supersede_writes_the_users_text_into_the_file_as_typed(client: Client) -> None:
    """The new text went into the user's memory file redacted (`[REDACTED:github-token]` in
    place of the token typed): the value was gone from the file too, without a word. The
    file holds what was typed; the index holds it redacted, as any watched line."""
    memory = Path(os.environ["HOME"]) / ".claude/projects/-tmp-x-proj/memory"
    memory.mkdir(parents=True)
    models = memory / "models.md"
    models.write_text("# Models\n\n- The eval job reads the judge's model from judge.toml.\n")
    wait_until(lambda: hit(client, "judge's model") is not None)
    old = hit(client, "judge's model")
    assert old is not None

    typed = f"The eval job reads the judge's model with the token {TOKEN} (since December)."
    done = run_cli("supersede", old["id"], typed)
    assert done.returncode == 0, done.stderr
    assert models.read_bytes() == f"# Models\n\n- {typed}\n".encode()
    newer = client.get(json.loads(run_cli("get", old["id"], "--json").stdout)["superseded_by"])
    assert newer["text"] == typed.replace(TOKEN, "[REDACTED:github-token]")
    # the watcher reads the line as written and finds the entry the supersede stored
    time.sleep(0.5)
    assert client.get(newer["id"])["status"] == "active"
    assert [h["id"] for h in client.search("judge's model token", agents=["*"])["hits"]
            if "December" in h["text"]] == [newer["id"]]


def test_a_new_text_that_would_be_markdown_of_its_own_is_refused(client: Client) -> None:
    """Superseding a bullet with a line that reads as a heading would make another entry of
    the lines after it, and move the bullets below it to another section ("Keep answers
    short" became a note of "install the toolchain first"): refused, the file untouched.
    Continuation lines that are plain text stay the bullet's."""
    real = watched_claude_md(client)
    metric = hit(client, "metric units")
    assert metric is not None
    refused = run_cli("supersede", metric["id"],
                      "To set up the build:\n# install the toolchain first\nmake deps")
    assert refused.returncode == 2, refused.stderr
    assert "would not stay one entry" in refused.stderr
    assert real.read_text() == CLAUDE_MD
    kept = run_cli("supersede", metric["id"], "Use metric units,\nalso in the API's docs.")
    assert kept.returncode == 0, kept.stderr
    assert real.read_text() == CLAUDE_MD.replace("code comments", "the API's docs")


def test_forget_removes_the_bullet_with_its_lines_and_undo_brings_it_back(client: Client) -> None:
    real = watched_claude_md(client)
    metric = hit(client, "metric units")
    assert metric is not None and (metric["line_start"], metric["line_end"]) == (4, 5)

    done = run_cli("forget", metric["id"], "--reason", "we use imperial now")
    assert done.returncode == 0, done.stderr
    assert "(removed from" in done.stdout and "lines 4-5;" in done.stdout
    assert real.read_text() == ("# Preferences\n\n- Answer in British English.\n"
                                "- Keep answers short.\n")
    assert client.get(metric["id"])["status"] == "forgotten"
    assert hit(client, "metric units") is None
    forgotten = [e for e in client.history(metric["id"])["events"] if e["action"] == "forgotten"]
    assert [e["actor"] for e in forgotten] == ["claude-code (cli)"]  # who asked, not memoryd
    wait_until(lambda: client.get(metric["id"])["line_start"] is not None
               and hit(client, "answers short")["line_start"] == 4)  # re-indexed
    assert client.get(metric["id"])["status"] == "forgotten"  # kept as history

    again = run_cli("forget", metric["id"])
    assert again.returncode == 0 and "removed from" not in again.stdout  # already forgotten
    run = done.stdout.split("`memory undo ")[1].split("`")[0]
    assert run_cli("undo", run).returncode == 0
    assert real.read_text() == CLAUDE_MD
    wait_until(lambda: (hit(client, "metric units") or {}).get("id")
               == metric["id"])


def test_forgetting_a_notebooks_last_bullet_keeps_the_blank_line_after_it(
        client: Client) -> None:
    """The last bullet of a notebook that ends with a blank line: forget removed the blank
    line too, an edit of the user's file nobody asked for."""
    notebook = Path(os.environ["HOME"]) / ".mastersof-ai" / "agents" / "designer" / "memory" \
        / "notebook.md"
    notebook.parent.mkdir(parents=True)
    text = ("# Designer notebook\n\n## Learnings\n- [2026-01-02] export PNGs at 2x\n"
            "- [2026-01-05] speech bubbles go on the left of the cat\n\n")
    notebook.write_text(text)
    wait_until(lambda: hit(client, "speech bubbles") is not None)
    last = hit(client, "speech bubbles")
    assert last is not None
    done = run_cli("forget", last["id"])
    assert done.returncode == 0, done.stderr
    assert notebook.read_text() == text.replace(
        "- [2026-01-05] speech bubbles go on the left of the cat\n", "")


def test_a_file_not_all_utf8_keeps_every_other_byte_through_forget_supersede_and_undo(
        client: Client) -> None:
    """A notebook saved by a Windows editor: a byte-order mark, CRLF line endings and a byte
    that is not UTF-8 (Latin-1's é). Forgetting one bullet and superseding another change
    those lines alone; `memory pass show` shows the change; undo gives the bytes back."""
    home = Path(os.environ["HOME"])
    (home / ".claude").mkdir()
    notebook = home / ".claude" / "CLAUDE.md"
    original = (b"\xef\xbb\xbf- Ship on Tuesdays only.\r\n- Never push on Fridays.\r\n\r\n"
                b"The staging box is called \xe9t\xe9-01.\r\n- Keep answers short.\r\n")
    notebook.write_bytes(original)
    wait_until(lambda: hit(client, "push on Fridays") is not None
               and hit(client, "Ship on Tuesdays") is not None)
    fridays, tuesdays = hit(client, "push on Fridays"), hit(client, "Ship on Tuesdays")
    assert fridays is not None and tuesdays is not None
    forgot = run_cli("forget", fridays["id"])
    assert forgot.returncode == 0, forgot.stderr
    assert notebook.read_bytes() == original.replace(b"- Never push on Fridays.\r\n", b"")
    superseded = run_cli("supersede", tuesdays["id"], "Ship on Tuesdays and Thursdays.")
    assert superseded.returncode == 0, superseded.stderr
    assert notebook.read_bytes() == original.replace(b"- Never push on Fridays.\r\n", b"") \
        .replace(b"Tuesdays only.", b"Tuesdays and Thursdays.")
    run = superseded.stdout.split("`memory undo ")[1].split("`")[0]
    shown = run_cli("pass", "show", run)
    assert shown.returncode == 0, shown.stderr
    assert any(line.strip().startswith("+") and "- Ship on Tuesdays and Thursdays." in line
               for line in shown.stdout.splitlines()), shown.stdout
    assert "\ufffdt\ufffd-01" in shown.stdout  # the bytes that are not text, shown as such
    for done in (superseded, forgot):
        run = done.stdout.split("`memory undo ")[1].split("`")[0]
        undone = run_cli("undo", run)
        assert undone.returncode == 0, undone.stderr
    assert notebook.read_bytes() == original


def test_a_forget_that_comes_while_a_pass_runs_waits_for_it_or_is_refused_in_time(
        daemon: RunningDaemon, client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forget of a file's entry is a run of its own, and runs go one at a time. While a pass
    runs, it waits for it a while, then edits the file; a pass that runs longer than that
    gets the forget refused in time (not past the client's timeout), naming the pass, and
    nothing is changed."""
    real = watched_claude_md(client)
    short = hit(client, "answers short")
    assert short is not None
    runner = daemon.daemon.passes
    assert runner is not None
    release = threading.Event()
    holding = threading.Event()

    async def a_long_pass() -> None:
        async with runner.lock:
            runner.current = "consolidate"
            holding.set()
            while not release.is_set():
                await asyncio.sleep(0.01)
            runner.current = None

    running = asyncio.run_coroutine_threadsafe(a_long_pass(), daemon.loop)
    assert holding.wait(10)
    monkeypatch.setattr(pass_runner, "PASS_WAIT_S", 0.5)
    started = time.monotonic()
    with pytest.raises(UnavailableError, match="the consolidate pass is running"):
        client.forget(short["id"])
    assert time.monotonic() - started < 5
    assert real.read_text() == CLAUDE_MD and client.get(short["id"])["status"] == "active"

    monkeypatch.setattr(pass_runner, "PASS_WAIT_S", 30.0)
    answered: list[dict[str, Any]] = []
    forget = threading.Thread(target=lambda: answered.append(client.forget(short["id"])))
    forget.start()
    time.sleep(0.5)
    assert not answered and real.read_text() == CLAUDE_MD  # waiting for the pass
    release.set()
    running.result(10)
    forget.join(30)
    assert answered and client.get(short["id"])["status"] == "forgotten"
    assert "Keep answers short" not in real.read_text()


def test_an_entry_no_longer_in_its_file_as_indexed_is_refused(tmp_path: Path) -> None:
    """The file changed after it was indexed (the watcher has not caught up): the edit is
    refused rather than aimed at the wrong lines."""
    path = tmp_path / "CLAUDE.md"
    path.write_text(CLAUDE_MD)
    text = "Keep answers short."
    entry = StoredEntry(
        rowid=1, uid="abc123", agent="claude-code", project=None, kind="note", category="",
        key=None, text=text, hash=content_hash(text), confidence=1.0, tags=(),
        status="active", created=0.0, updated=0.0, writer=None, via="watch", session=None,
        source=str(path), line_start=6, line_end=6, message_id=None, superseded_by=None,
        polarity=None, occurrences=1, stale=None, quarantined=False, records=None,
        heading=None)
    item, lines = locate(entry, read_text(path))
    assert (item.line_start, item.line_end) == (6, 6)
    assert replaced(lines, item, None) == CLAUDE_MD.replace("- Keep answers short.\n", "")
    path.write_text(CLAUDE_MD.replace("short", "very short"))
    with pytest.raises(BadParamsError, match="is no longer in .* as indexed"):
        locate(entry, read_text(path))


def test_a_dated_bullet_is_rewritten_with_todays_date_and_a_paragraph_as_a_paragraph() -> None:
    text = "# Learnings\n\n- [2026-03-14] Old lesson\n  over two lines.\n\nA paragraph.\n"
    items = parse_memory_file(text, "notes.md").items
    lines = text.splitlines()
    today = time.strftime("%Y-%m-%d")
    assert replaced(lines, items[0], "New lesson,\nwith a second line.") == (
        f"# Learnings\n\n- [{today}] New lesson,\n  with a second line.\n\nA paragraph.\n")
    assert replaced(lines, items[1], "Another paragraph.") == (
        "# Learnings\n\n- [2026-03-14] Old lesson\n  over two lines.\n\nAnother paragraph.\n")
    assert replaced(lines, items[1], None) == (
        "# Learnings\n\n- [2026-03-14] Old lesson\n  over two lines.\n")
    ended = text + "\n"  # a blank line at the end: it stays, as what the edit is not about
    lines = ended.split("\n")
    assert replaced(lines, items[1], None) == (
        "# Learnings\n\n- [2026-03-14] Old lesson\n  over two lines.\n\n")
    assert replaced(lines, items[1], "Another paragraph.") == (
        "# Learnings\n\n- [2026-03-14] Old lesson\n  over two lines.\n\nAnother paragraph.\n\n")
