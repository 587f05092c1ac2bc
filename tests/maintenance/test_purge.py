"""`memory purge` removes what it selects and nothing else (R1), with the real daemon, the
real `memory` command and a rebuild of the index from the files (`memoryd reindex`): the
reproductions of the 2026-11-28 reliability report, where a purge rewrote every ledger record
that held the string in any field (an agent named "designer" became "[PURGED]er", categories,
tags and kinds were rewritten) and dropped unrelated transcript turns from the archive, and a
rebuild then lost or corrupted those entries. The property behind them is
tests/maintenance/test_purge_property.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryd_client import Client

from memoryd.store.ledger import decode_line
from tests.conftest import reindexed, run_cli, start_daemon, wait_until
from tests.passes.test_retain import exchange
from tests.writes.test_secrets import state_holds


def entries(client: Client) -> dict[str, dict[str, Any]]:
    """Every entry of every agent, by id."""
    return {e["id"]: e for e in client.list_entries(status="any", limit=1000)["entries"]}


def ledger_lines(home: Path, agent: str) -> list[bytes]:
    return (home / "ledger" / f"{agent}.jsonl").read_bytes().splitlines(keepends=True)



def test_a_purge_by_text_leaves_names_categories_tags_and_kinds_alone(
        memoryd_home: Path, embedder: Any) -> None:
    """The report's purge_scrub (designer/sticker/fonts/misc, --match design) and its two
    other collisions (--match billing: a category and a tag; --match note: a kind)."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            for category, text in (("sticker", "teal outline on the cat sticker"),
                                   ("fonts", "lettering uses Inter"),
                                   ("misc", "the client's design token is abc123")):
                assert run_cli("store", "designer", category, text).returncode == 0
            for text in ("invoices go out on the first of the month", "late fees are 2 percent",
                         "the billing portal password is pinned in the vault"):
                c.remember("accounts", "billing", text, tags=["billing", "money"])
            for text in ("water the plants on friday", "the printer is on floor two",
                         "note to self: call the framer"):
                c.remember("scribe", "errands", text)  # kind note
            c.remember("coder", "reviews", "the design review is on monday")  # another agent
            before = entries(c)
            lines = {a: ledger_lines(memoryd_home, a) for a in ("designer", "accounts", "scribe")}
            purged = {}
            for agent, word in (("designer", "design"), ("accounts", "billing"),
                                ("scribe", "note")):
                [target] = [e["id"] for e in before.values()
                            if e["agent"] == agent and word in e["text"]]
                preview = run_cli("purge", "--agent", agent, "--match", word)
                assert preview.returncode == 0, preview.stderr
                assert "would purge 1 entry" in preview.stdout, preview.stdout
                listed = [e for e in before if e in preview.stdout]
                assert listed == [target], preview.stdout  # the one entry it selects, only
                done = run_cli("purge", "--agent", agent, "--match", word, "--yes")
                assert done.returncode == 0 and "purged 1 entry" in done.stdout, done.stdout
                purged[agent] = target
            kept = {i: e for i, e in before.items() if i not in purged.values()}
            assert entries(c) == kept
            for agent, target in purged.items():  # the other records, byte for byte
                after = ledger_lines(memoryd_home, agent)
                assert after[:-1] == [line for line in lines[agent]
                                      if target.encode() not in line]
                record, _ = decode_line(after[-1])
                assert record is not None and record["op"] == "purge"
                assert record["ids"] == [target]
    finally:
        running.stop()
    running = reindexed(embedder)
    try:
        with Client(running.socket) as c:
            assert entries(c) == kept
            listed = run_cli("list", "designer")
            assert listed.returncode == 0 and listed.stdout.count("designer/") == 2
    finally:
        running.stop()


def test_a_purged_transcript_turn_leaves_the_other_turns_in_the_archive(
        memoryd_home: Path, embedder: Any) -> None:
    """The report's n_purge_archive: six turns of a project whose path holds the string,
    archived by the retain pass; the purge of one, the transcript deleted, a reindex."""
    secret = "acme-live-7Hq2"
    project = memoryd_home / "user" / ".claude" / "projects" / "-home-user-acme-shop"
    project.mkdir(parents=True)
    path = project / "4c1f5b6e-2d3a-4e9b-8f7c-1a2b3c4d5e6f.jsonl"
    questions = ["which sticker paper do we stock", "how wide is the bleed margin",
                 f"the live key is {secret}, keep it safe", "who restocks the printer",
                 "what dpi do exports use", "when is the next print run"]
    with path.open("w") as handle:
        for n, question in enumerate(questions):
            for line in exchange("4c1f5b6e-2d3a", n, question, f"Answer {n}: noted."):
                handle.write(json.dumps(line) + "\n")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            wait_until(lambda: len(entries(c)) == 6 and c.status()["ingest"]["queue"] == 0)
            assert c.pass_run("retain")["counts"]["archived"] == 6
            before = entries(c)
            done = run_cli("purge", "--agent", "claude-code", "--match", "acme", "--yes")
            assert done.returncode == 0, done.stderr
            assert "purged 1 entry" in done.stdout and "1 archive record" in done.stdout, \
                done.stdout
            [target] = [i for i, e in before.items() if secret in e["text"]]
            kept = {i: e for i, e in before.items() if i != target}
            assert entries(c) == kept
    finally:
        running.stop()
    path.unlink()  # Claude Code deletes its transcripts after 30 days
    running = reindexed(embedder)
    try:
        with Client(running.socket) as c:
            assert entries(c) == kept
    finally:
        running.stop()
    assert state_holds(memoryd_home, secret) == []


def test_the_dry_run_lists_what_it_removes_and_where_it_only_replaces_the_text(
        memoryd_home: Path, embedder: Any) -> None:
    """A forget's reason that mentions the string keeps its place with the string replaced;
    the dry run says so, naming the entry, and the entry itself is left as it was."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            secret = c.remember("ops", "vault", "the vault word is sesame42")["entry"]["id"]
            other = c.remember("ops", "vault", "rotate the vault word monthly")["entry"]["id"]
            c.forget(other, reason="it named sesame42 once")
            before = c.get(other)
            preview = run_cli("purge", "--agent", "ops", "--match", "SESAME42")
            assert preview.returncode == 0, preview.stderr
            assert secret in preview.stdout and "would purge 1 entry" in preview.stdout
            assert f"{other}: the reason of a forget" in preview.stdout, preview.stdout
            assert "sesame42" in (memoryd_home / "ledger" / "ops.jsonl").read_text()  # a preview
            done = run_cli("purge", "--agent", "ops", "--match", "sesame42", "--yes")
            assert done.returncode == 0, done.stderr
            assert c.get(other) == before
            assert state_holds(memoryd_home, "sesame42") == []
            assert "it named [PURGED] once" in (memoryd_home / "ledger" / "ops.jsonl").read_text()
    finally:
        running.stop()


def test_a_purged_entrys_pass_changes_leave_the_journal_file_too(
        memoryd_home: Path, embedder: Any) -> None:
    """A contradiction holds both texts (recorded when the second was written, as a run of
    its own: memoryd.store.entries). Purged, they leave the database and passes.jsonl, and a
    rebuild of the index (which replays passes.jsonl) does not bring them back."""
    secret = "zqv7k2m9p4wx"
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            for text in (f"Use conventional commits (ticket {secret}).",
                         f"Don't use conventional commits (ticket {secret})."):
                c.remember("coder", "git", text, kind="lesson", force=True)
            kept = c.remember("coder", "ops", "The staging database resets nightly.")["entry"]
            assert len(c.status()["contradictions"]) == 1
            done = c.pass_show()  # the newest run: the correction that disputes the two
            assert done["pass"] == "correct", done
            assert secret in (memoryd_home / "passes.jsonl").read_text()
            purged = run_cli("purge", "--agent", "coder", "--match", secret, "--yes")
            assert purged.returncode == 0 and "1 pass change" in purged.stdout, purged.stdout
            assert c.status()["contradictions"] == []
            assert c.pass_show(done["run"])["changes"] == []
    finally:
        running.stop()
    assert state_holds(memoryd_home, secret) == []
    running = reindexed(embedder)
    try:
        with Client(running.socket) as c:
            assert c.status()["contradictions"] == []
            assert c.pass_show(done["run"])["counts"] == done["counts"]  # the run stays
            assert c.get(kept["id"])["text"] == kept["text"]
    finally:
        running.stop()
    assert state_holds(memoryd_home, secret) == []


def test_a_purged_word_leaves_the_lexicon(memoryd_home: Path, embedder: Any) -> None:
    """Search's lexicon keeps every word of the entries as written, embedded alone: a
    password made of letters is such a word, and must go with the entry that had it."""
    import apsw

    secret = "quokkaberrytangle"
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.remember("ops", "vault", f"the vault word is {secret}")
            c.remember("ops", "vault", "the vault opens on mondays")

            def learned(word: str) -> bool:
                db = apsw.Connection(str(memoryd_home / "memoryd.db"),
                                     flags=apsw.SQLITE_OPEN_READONLY)
                try:
                    return db.execute("SELECT 1 FROM lexicon WHERE word=?",
                                      (word,)).fetchone() is not None
                finally:
                    db.close()

            wait_until(lambda: learned(secret) and learned("mondays"))
            done = run_cli("purge", "--agent", "ops", "--match", secret, "--yes")
            assert done.returncode == 0, done.stderr
            assert learned("mondays") and learned("vault")  # the other entry's words stay
            assert not learned(secret)
    finally:
        running.stop()
    assert state_holds(memoryd_home, secret) == []
