"""A source defined anew (its ``agent`` renamed, ``watch.max_file_bytes`` raised, another source
put before it, its kind changed), then reloaded or restarted: the files that did not change on
disk are read as the configuration has them now, not left as the old one had them until
someone touches them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client

from tests.conftest import RunningDaemon, run_cli, start_daemon, wait_until

CATS = "# Cats\n- The cat is called Whiskers.\n- The cat sleeps on the printer.\n"


@pytest.fixture
def client(keyword_daemon: RunningDaemon) -> Iterator[Client]:
    with Client(keyword_daemon.socket, timeout_s=30) as c:
        yield c


def configure(memoryd_home: Path, *sources: dict[str, str], max_file_bytes: int = 2_000_000
              ) -> None:
    """config.toml with these ``[[sources]]`` (none of the built-in ones)."""
    tables = "".join("\n[[sources]]\n" + "".join(f"{key} = {json.dumps(value)}\n"
                                               for key, value in source.items())
                     for source in sources)
    (memoryd_home / "config.toml").write_text(
        f"[watch]\ndefaults = false\nmax_file_bytes = {max_file_bytes}\n{tables}")


def notes(name: str, path: str, agent: str, kind: str = "memory") -> dict[str, str]:
    return {"name": name, "path": path, "kind": kind,
            "format": "markdown" if kind == "memory" else "generic", "agent": agent}


def listed(agent: str, *options: str) -> list[str]:
    """What `memory list AGENT` shows: its lines, as text."""
    shown = run_cli("list", agent, "--json", *options)
    assert shown.returncode == 0, shown.stderr
    return sorted(entry["text"] for entry in json.loads(shown.stdout)["entries"])


def settled(running: RunningDaemon, scanned: int) -> bool:
    """A full scan begun after ``scanned`` scans finished, and what it queued is indexed."""
    watcher = running.daemon.watcher
    assert watcher is not None
    return watcher.scans[1] > scanned and not watcher.pending and not watcher.busy.locked()


def scans(running: RunningDaemon) -> int:
    assert running.daemon.watcher is not None
    return running.daemon.watcher.scans[1]


def by_source(name: str) -> dict[str, Any]:
    """The source as `memory status --sources --json` shows it."""
    shown = run_cli("status", "--sources", "--json")
    assert shown.returncode == 0, shown.stderr
    [source] = [s for s in json.loads(shown.stdout)["ingest"]["sources"] if s["name"] == name]
    return source


def test_an_agent_renamed_takes_its_files_entries_along(memoryd_home: Path, client: Client
                                                        ) -> None:
    home = Path(os.environ["HOME"])
    (home / "notes").mkdir()
    (home / "notes/cats.md").write_text(CATS)
    configure(memoryd_home, notes("notes", "~/notes/*.md", "designer"))
    client.reload()
    wait_until(lambda: len(listed("designer")) == 2)

    configure(memoryd_home, notes("notes", "~/notes/*.md", "illustrator"))
    client.reload()
    wait_until(lambda: listed("designer") == [])  # `memory list` showed them under designer
    assert listed("illustrator") == ["The cat is called Whiskers.",
                                     "The cat sleeps on the printer."]
    found = run_cli("search", "illustrator", "-", "whiskers")  # it found nothing (exit 1)
    assert found.returncode == 0, found.stdout + found.stderr
    assert "illustrator/cats note: The cat is called Whiskers." in found.stdout
    assert (home / "notes/cats.md").read_text() == CATS


def test_a_forgotten_line_follows_its_file_to_the_agent_named_at_a_restart(
        memoryd_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The configuration edited while the daemon is stopped: the scan at the start reads the
    file again, and its lines kept as history (a forget took one out of the file) are the new
    agent's too, so its forget is still found, and undone, under it."""
    monkeypatch.setenv("MEMORYD_EMBED_MODEL", str(memoryd_home / "no-model"))
    home = Path(os.environ["HOME"])
    (home / "notes").mkdir()
    (home / "notes/cats.md").write_text(CATS)
    configure(memoryd_home, notes("notes", "~/notes/*.md", "designer"))
    running = start_daemon(None)
    try:
        wait_until(lambda: len(listed("designer")) == 2)
        with Client(running.socket, timeout_s=30) as c:
            [printer] = [e for e in c.list_entries(agent="designer")["entries"]
                         if "printer" in e["text"]]
            c.forget(printer["id"], agent="designer")
        wait_until(lambda: listed("designer") == ["The cat is called Whiskers."])
    finally:
        running.stop()
    assert not running.errors, running.errors
    configure(memoryd_home, notes("notes", "~/notes/*.md", "illustrator"))
    running = start_daemon(None)
    try:
        wait_until(lambda: listed("illustrator") == ["The cat is called Whiskers."])
        assert listed("illustrator", "--status", "forgotten") == [
            "The cat sleeps on the printer."]
        assert listed("designer", "--status", "any") == []
    finally:
        running.stop()
    assert not running.errors, running.errors


def test_a_notebook_refused_over_the_cap_is_read_once_the_cap_lets_it_in(
        memoryd_home: Path, keyword_daemon: RunningDaemon, client: Client) -> None:
    home = Path(os.environ["HOME"])
    (home / "notes").mkdir()
    big = home / "notes/big.md"
    big.write_text("# Zebras\n" + "".join(f"- Zebra fact number {i}: stripes.\n"
                                         for i in range(200)))
    size = big.stat().st_size
    configure(memoryd_home, notes("notes", "~/notes/*.md", "designer"), max_file_bytes=2048)
    client.reload()
    problem = f"file is {size} bytes, over the 2048-byte cap (watch.max_file_bytes)"
    wait_until(lambda: by_source("notes").get("last_error") == problem)
    assert problem in run_cli("status", "--sources").stdout

    scanned = scans(keyword_daemon)
    configure(memoryd_home, notes("notes", "~/notes/*.md", "designer"), max_file_bytes=size)
    client.reload()
    wait_until(lambda: settled(keyword_daemon, scanned))
    assert len(listed("designer", "--limit", "500")) == 200  # it stayed refused, unindexed
    assert by_source("notes").get("last_error") is None
    shown = run_cli("status", "--sources", "--json").stdout
    assert "big.md" not in shown  # nor does any health check name it


def test_a_file_another_source_reads_now_is_that_sources(
        memoryd_home: Path, keyword_daemon: RunningDaemon, client: Client) -> None:
    """A source put before the one that read a file (a file is read by the first source that
    matches it): the file's entries are counted under it, and go when it is removed (the
    source that reads it then takes them back)."""
    home = Path(os.environ["HOME"])
    (home / "notes").mkdir()
    (home / "notes/cats.md").write_text(CATS)
    configure(memoryd_home, notes("notes", "~/notes/*.md", "designer"))
    client.reload()
    wait_until(lambda: by_source("notes").get("indexed") == 2)

    scanned = scans(keyword_daemon)
    configure(memoryd_home, notes("cats", "~/notes/cats.md", "designer"),
              notes("notes", "~/notes/*.md", "designer"))
    client.reload()
    wait_until(lambda: settled(keyword_daemon, scanned))
    # it said: cats 0 entries indexed, notes 2
    assert (by_source("cats")["indexed"], by_source("notes")["indexed"]) == (2, 0)
    assert (by_source("cats")["files"], by_source("notes")["files"]) == (1, 0)


def test_a_transcript_another_source_reads_now_is_its_and_no_turn_is_read_twice(
        memoryd_home: Path, keyword_daemon: RunningDaemon, client: Client) -> None:
    """A transcript source put before the one that read a chat log, with another agent: the
    file is the new source's (its counts; its new turns are its agent's) as soon as the
    scan sees it, unchanged; its past turns stay the agent they were indexed under (as their
    session and its archive have them), each turn once."""
    home = Path(os.environ["HOME"])
    (home / "chats").mkdir()
    chat = home / "chats/a.jsonl"
    session = "s-penguins-000000001"

    def say(role: str, text: str) -> None:
        with chat.open("a") as handle:
            handle.write(json.dumps({"role": role, "content": text, "session_id": session})
                         + "\n")

    say("user", "What do penguins eat?")
    say("assistant", "Penguins eat krill and fish.")
    configure(memoryd_home, notes("chats", "~/chats/*.jsonl", "chatter", kind="transcript"))
    client.reload()
    wait_until(lambda: len(listed("chatter")) == 1)

    scanned = scans(keyword_daemon)
    configure(memoryd_home, notes("penguins", "~/chats/a.jsonl", "talker", kind="transcript"),
              notes("chats", "~/chats/*.jsonl", "chatter", kind="transcript"))
    client.reload()
    wait_until(lambda: settled(keyword_daemon, scanned))
    # it said: penguins 0 entries indexed, chats 1, until the file changed
    assert (by_source("penguins")["indexed"], by_source("chats")["indexed"]) == (1, 0)
    say("user", "And what do seals eat?")
    say("assistant", "Seals eat fish and squid.")
    wait_until(lambda: len(listed("talker")) == 1)
    assert "Seals eat fish and squid." in listed("talker")[0]
    [past] = listed("chatter")
    assert "Penguins eat krill and fish." in past
    assert (by_source("penguins")["indexed"], by_source("chats")["indexed"]) == (2, 0)
    [registered] = client.sessions()["sessions"]
    assert registered["user_messages"] == 2  # each counted once


def test_a_file_read_as_the_other_kind_now_is_indexed_anew(
        memoryd_home: Path, keyword_daemon: RunningDaemon, client: Client) -> None:
    """A memory source's glob took a chat log as a notebook; a transcript source put before it
    reads it as a transcript: the notebook's entries leave the index, the turns come in (and
    the other way round when it is taken out again)."""
    home = Path(os.environ["HOME"])
    (home / "chats").mkdir()
    chat = home / "chats/a.jsonl"
    chat.write_text(json.dumps({"role": "user", "content": "What do penguins eat?"}) + "\n"
                    + json.dumps({"role": "assistant", "content": "Krill and fish."}) + "\n")
    configure(memoryd_home, notes("all", "~/chats/*", "noter"))
    client.reload()
    wait_until(lambda: len(listed("noter")) == 1)

    configure(memoryd_home, notes("chats", "~/chats/*.jsonl", "chatter", kind="transcript"),
              notes("all", "~/chats/*", "noter"))
    client.reload()
    wait_until(lambda: len(listed("chatter")) == 1)  # it stayed a notebook line of noter's
    assert listed("noter") == []
    assert "User: What do penguins eat?" in listed("chatter")[0]

    configure(memoryd_home, notes("all", "~/chats/*", "noter"))
    client.reload()
    wait_until(lambda: len(listed("noter")) == 1)
    assert listed("chatter") == []
