"""The copies editors, merge tools and memoryd keep beside a memory file are never read.

A source whose glob ends in ``**`` (a Claude Code subagent's memory, Cline's and Roo's rules)
matched every file in its directory: an emacs or vim backup ``MEMORY.md~`` (stale text) was a
second notebook, indexed, listed in the memory block and injected; vim's swap file and emacs'
lock turned `memory status` into a warning while the file was edited; `git mergetool` on a
rule (``*.md``) left four more rules. A project root's ``CLAUDE.md~`` never was: its glob names
the file. One rule for every glob now (memoryd.sources.is_scratch_name)."""

from __future__ import annotations

import os
from pathlib import Path

from memoryd_client import Client

from tests.conftest import run_cli, start_daemon, wait_until

CURRENT = "- Deploys go out on Tuesdays after the standup.\n"
STALE = "- Deploys go out on Mondays before the standup.\n"
RULE = "- Rotate the signing keys every ninety days.\n"


def _texts(client: Client, agent: str, project: str | None = None) -> list[str]:
    filters = {"project": project} if project else {}
    return sorted(e["text"] for e in client.list_entries(agents=[agent], limit=100,
                                                         **filters)["entries"])


def _index_as_an_older_memoryd_did(path: Path, agent: str) -> None:
    """What an older memoryd left in the index: the backup indexed as a notebook of its own."""
    from memoryd.config import load_config
    from memoryd.ingest import file_read
    from memoryd.ingest import indexer as indexing
    from memoryd.store.database import Store
    from memoryd.store.entries import Entries
    from memoryd.store.ledger import Ledger

    config = load_config()
    store = Store(config.db_path)
    try:
        index = indexing.Indexer(store, Entries(config.remember, store,
                                                Ledger(config.ledger_dir)))
        facts = file_read.stat_facts(path, "claude-agent-memory", "memory", agent, None)
        assert index.apply_memory_file(file_read.read_memory_file(facts, path.name,
                                                                 1 << 20)).added == 1
    finally:
        store.close()


def test_backups_swap_files_and_merge_copies_are_never_indexed(memoryd_home: Path,
                                                               embedder) -> None:
    home = memoryd_home / "user"
    memory = home / ".claude/agent-memory/designer"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(CURRENT)
    (memory / "MEMORY.md~").write_text(STALE)  # emacs' and vim's backup
    (memory / "OLD.md.orig").write_text("- The staging database is called kestrel-old.\n")
    _index_as_an_older_memoryd_did(memory / "OLD.md.orig", "designer")
    shop = home / "shop"
    rules = shop / ".claude/rules"
    rules.mkdir(parents=True)
    (shop / ".git").mkdir()
    (rules / "sec.md").write_text(RULE)
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            assert run_cli("sources", "add", "--project", str(shop)).returncode == 0
            # a file indexed under such a name leaves the index at the first scan
            wait_until(lambda: _texts(client, "designer") == [CURRENT[2:-1]])
            # being edited: emacs' autosave and lock (a dangling symlink), vim's swap file
            (memory / "#MEMORY.md#").write_text("- Deploys go out on Wednes")
            os.symlink("ana@laptop.4242:1780000000", memory / ".#MEMORY.md")
            (memory / ".MEMORY.md.swp").write_bytes(b"b0VIM 9.1\0\0\0" + STALE.encode())
            (memory / "MEMORY.md.memoryd-conflict-20261128-120000").write_text(STALE)
            # `git mergetool` on the rule: its four copies beside it while it runs
            for side in ("BACKUP", "BASE", "LOCAL", "REMOTE"):
                (rules / f"sec_{side}_5084.md").write_text(
                    "- Rotate the signing keys every thirty days.\n")
            (rules / "sec.md.orig").write_text(RULE)
            (memory / "notes.md").write_text("- The palette is teal and sand.\n")  # a real one
            wait_until(lambda: "The palette is teal and sand." in _texts(client, "designer"))
            client.reload()  # a whole scan, as at every rescan
            wait_until(lambda: not running.daemon.watcher.pending)  # type: ignore[union-attr]
            assert _texts(client, "designer") == [CURRENT[2:-1], "The palette is teal and sand."]
            assert _texts(client, "claude-code", str(shop)) == [RULE[2:-1]]
            block = client.context("designer", cwd=str(shop))["text"]
            assert "Mondays" not in block and "MEMORY.md~" not in block, block
            assert "thirty days" not in client.context("claude-code", cwd=str(shop))["text"]
            sources = {s["name"]: s for s in client.status()["ingest"]["sources"]}
            problems = {name: s["last_error"] for name, s in sources.items() if s["last_error"]}
            assert problems == {}
            status = run_cli("status")
            assert status.returncode == 0 and "warning" not in status.stdout.lower(), \
                status.stdout
    finally:
        running.stop()
    assert not running.errors, running.errors
    assert (memory / "MEMORY.md~").read_text() == STALE  # the files are as they were
