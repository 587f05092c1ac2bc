"""Secrets never land (D3): every path that stores or injects text redacts it first, and
`memory purge` removes what got in anyway — from the index, the ledger, the archives and the
journals, for good. Real daemon, real files; the state dir is searched byte by byte."""

from __future__ import annotations

import gzip
import json
import random
import string
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import run_cli, start_daemon, wait_until
from tests.ingest.test_ingest import assistant, user, write_lines

ALNUM = string.ascii_letters + string.digits


def fake(length: int, seed: int) -> str:
    """Assembled at run time, so this file holds no token a secret scanner would flag."""
    rng = random.Random(seed)
    return "".join(rng.choice(ALNUM) for _ in range(length))


GITHUB = "ghp_" + fake(36, 1)
AWS = "AKIA" + "".join(random.Random(2).choice(string.ascii_uppercase + string.digits)
                       for _ in range(16))
MYSQL = "Mq" + fake(12, 3) + "9"
CURL = "Cu" + fake(12, 4) + "7!"
DOCKER = "dckr_pat_" + fake(27, 5)
KEY_BODY = fake(64, 6)


def state_holds(home: Path, needle: str, skip: Path | None = None) -> list[str]:
    """Every file under the state dir whose bytes (gzip members decompressed) hold needle."""
    found = []
    raw = needle.encode()
    for path in home.rglob("*"):
        if not path.is_file() or (skip is not None and path.is_relative_to(skip)):
            continue
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if raw in data:
            found.append(str(path.relative_to(home)))
    return found


@pytest.fixture
def memory_dirs(tmp_path, monkeypatch) -> Path:
    """The agents' memory directories live outside the state dir: their files are the
    agents' own, the state dir is memoryd's."""
    root = tmp_path / "memory"
    monkeypatch.setenv("MEMORYD_TOOLS_MEMORY_DIR", str(root / "{agent}"))
    return root


def test_no_channel_lands_a_secret(memory_dirs, memoryd_home, embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            c.remember("a", "ops", f"deploy token is {GITHUB}")
            c.remember_many([{"agent": "a", "category": "ops", "text": f"aws id {AWS} for prod"},
                             {"agent": "a", "category": "ops", "text": f"run mysql -u root -p{MYSQL} app"}])
            old = c.remember("a", "ops", "the api lives on port 8080")["entry"]
            c.supersede(old["id"], f"curl -u admin:{CURL} https://api.example.com")
            c.remember("a", "ops", f"docker login -p {DOCKER}", created="2026-01-05")
            c.call("hook", {"harness": "claude-code", "event": "PostCompact", "payload": {
                "session_id": "s1", "hook_event_name": "PostCompact",
                "compact_summary": f"We set GITHUB_TOKEN={GITHUB} and key -----BEGIN OPENSSH "
                                   f"PRIVATE KEY----- {KEY_BODY} -----END OPENSSH PRIVATE KEY-----"}})
            c.call("hook", {"harness": "claude-code", "event": "Stop", "payload": {
                "session_id": "s1", "hook_event_name": "Stop",
                "last_assistant_message": f"Done: exported {AWS} and {DOCKER}"}})
            c.file("write", "a", "notes.md", text=f"# Notes\n\n- token {GITHUB}\n")
            c.file("replace", "a", "notes.md", old="token", new=f"the mysql -p{MYSQL} token")
            c.file("write", "a", "CONTEXT.md", text=f"Always use {DOCKER} to log in.\n")
            # a category, a key, tags, a forget's reason, a file's description and heading
            named = c.remember("a", f"ci {AWS}", "the build cache key", key=f"pref.{GITHUB}",
                               tags=[DOCKER])["entry"]
            assert named["category"] == "ci [REDACTED:aws-access-key]"
            c.forget(named["id"], agent="a", reason=f"it named {GITHUB}")
            c.file("write", "a", "ci.md", text=f"---\ndescription: CI notes, uses {AWS}\n---\n"
                                               f"# CI\n\n## Creds {GITHUB}\n\n- runs on push\n")
            wait_until(lambda: "Always use" in c.context("a")["text"]
                       and "ci.md" in c.context("a")["text"])
            block = c.context("a")["text"]
            assert "ci.md: CI notes, uses [REDACTED:aws-access-key]" in block
            assert "Always use [REDACTED:docker-token] to log in." in block
            hits = c.search("token", agent="a", limit=50)["hits"]
            assert hits and all(GITHUB not in h["text"] for h in hits)
            assert c.session("s1")["session"]["last_message"] == (
                "Done: exported [REDACTED:aws-access-key] and [REDACTED:docker-token]")
    finally:
        running.stop()
    for secret in (GITHUB, AWS, MYSQL, CURL, DOCKER, KEY_BODY):
        assert state_holds(memoryd_home, secret) == [], secret
    # the memory files themselves are the agent's and keep what it wrote
    assert GITHUB in (memory_dirs / "a" / "notes.md").read_text()


def holding(c: Client, text: str) -> list[str]:
    """Ids of entries of any agent and status whose text holds ``text``."""
    return [h["id"] for h in c.search(text, agents=["*"], status="any", limit=50)["hits"]
            if text in h["text"]]


def secret_everywhere(c: Client, home: Path, memory_dirs: Path) -> str:
    """A secret the redactor cannot know (a bare word), spread over every store: entries and
    ledger (remember, supersede), events, a memory-tool journal, the transcript archive, a
    session's last message."""
    secret = "zq" + fake(10, 9).lower() + "wx"
    kept = c.remember("a", "ops", "the staging database is db2.internal")["entry"]
    first = c.remember("a", "ops", f"the vault word is {secret}")["entry"]
    c.supersede(first["id"], f"the vault word is still {secret}, rotate it")
    c.forget(kept["id"], agent="a", reason="moved")
    c.file("write", "a", "notes.md", text=f"- vault word {secret}\n")
    # indexed before it is written over: its entry left its file, and is in its history
    wait_until(lambda: any(h["text"].startswith("vault word") for h in
                           c.search(secret, agent="a")["hits"]))
    c.file("write", "a", "notes.md", text="- nothing secret here\n")
    project = home / "user" / ".claude" / "projects" / "-tmp-x"
    project.mkdir(parents=True)
    write_lines(project / "s9.jsonl", [
        {**user("s9u1", f"the vault word is {secret}, keep it"), "sessionId": "s9"},
        {**assistant("s9a1", "msg_s9", [{"type": "text", "text": "Noted."}]), "sessionId": "s9"}])
    wait_until(lambda: c.search(secret, agent="claude-code")["hits"] != [])
    c.pass_run("retain")
    c.call("hook", {"harness": "claude-code", "event": "Stop", "payload": {
        "session_id": "s9", "hook_event_name": "Stop", "last_assistant_message": f"ok {secret}"}})
    return secret


def test_purge_removes_a_secret_for_good(memory_dirs, memoryd_home, embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            secret = secret_everywhere(c, memoryd_home, memory_dirs)
            assert state_holds(memoryd_home, secret)  # it is there before the purge
            preview = run_cli("purge", "--agent", "a", "--match", secret.upper())
            assert preview.returncode == 0, preview.stderr
            # the two remembered, and the memory file's line written over (in its history)
            assert "would purge 3 entries" in preview.stdout and "--yes" in preview.stdout
            assert len(holding(c, secret)) == 3  # a dry run changes nothing
            done = run_cli("purge", "--agent", "a", "--match", secret, "--yes")
            assert done.returncode == 0, done.stderr
            assert "purged 3 entries" in done.stdout
            done = run_cli("purge", "--agent", "claude-code", "--match", secret, "--yes")
            assert done.returncode == 0 and "purged 1 entry" in done.stdout, done.stdout
            assert not holding(c, secret)
            # what did not match is untouched, and the purge is journaled without the text
            kept = c.search("staging database", agent="a", status="forgotten")["hits"]
            assert kept and kept[0]["text"] == "the staging database is db2.internal"
            history = c.history(kept[0]["id"])
            assert [e["action"] for e in history["events"]] == ["remember", "forgotten"]
            [purge] = c.history("purge:a")["events"]
            assert purge["action"] == "purge" and len(purge["after"]["ids"]) == 3
            assert secret not in str(purge)
    finally:
        running.stop()
    # the agent's own transcript (under the fake home) is its file, not memoryd's state
    assert state_holds(memoryd_home, secret, skip=memoryd_home / "user") == []
    # the ledger is still a valid source of truth: a restart replays it, nothing comes back
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            assert not holding(c, secret)
            assert c.search("staging database", agent="a", status="forgotten")["hits"]
            assert c.remember("a", "ops", "a new fact after the purge")["stored"]
    finally:
        running.stop()
    # the agent's own transcript (under the fake home) is its file, not memoryd's state
    assert state_holds(memoryd_home, secret, skip=memoryd_home / "user") == []


def test_purge_needs_an_agent_and_a_filter_or_says_why(daemon, client) -> None:
    client.remember("a", "ops", "one")
    missing = run_cli("purge", "--match", "one")
    assert missing.returncode == 2 and "--agent" in missing.stderr
    since = run_cli("purge", "--agent", "a", "--since", "1h")
    assert since.returncode == 0 and "would purge 1 entry" in since.stdout
    none = run_cli("purge", "--agent", "a", "--match", "nothing like it", "--yes")
    assert none.returncode == 1 and "nothing to purge" in none.stdout + none.stderr


def test_the_store_command_says_what_it_redacted(daemon, client) -> None:
    """`memory store` never said that it rewrote the text; a second token redacted to the same
    text was refused as an exact duplicate without a word of why."""
    first = run_cli("store", "ops", "deploy", f"the deploy token is {GITHUB}")
    assert first.returncode == 0, first.stderr
    assert "redacted before it was stored: github-token" in first.stderr
    other = "ghp_" + fake(36, 11)
    second = run_cli("store", "ops", "deploy", f"the deploy token is {other}")
    assert second.returncode == 1
    assert "not stored: exact duplicate (with its secrets redacted: github-token) of" in \
        second.stderr
    plain = run_cli("store", "ops", "deploy", "the deploy runs at noon")
    assert plain.returncode == 0 and "redacted" not in plain.stderr


def test_supersede_says_what_it_redacted(daemon, client, memoryd_home) -> None:
    """`memory store` says what it redacted; `memory supersede` said nothing (no `redacted`
    in --json either). An entry of the API's: kept nowhere; a memory file's line: the file
    holds what was typed, the index's entry is redacted."""
    old = client.remember("ops", "deploy", "the deploy runs at noon")["entry"]["id"]
    done = run_cli("supersede", old, f"the deploy token is {GITHUB}")
    assert done.returncode == 0, done.stderr
    assert "redacted before it was stored: github-token (the secret is kept nowhere)" in \
        done.stderr
    newer = json.loads(run_cli("get", old, "--json").stdout)["superseded_by"]
    as_json = run_cli("supersede", newer, f"the deploy token is {GITHUB}, rotated", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["redacted"] == ["github-token"]
    plain = run_cli("supersede", json.loads(as_json.stdout)["entry"]["id"], "no token now")
    assert plain.returncode == 0 and "redacted" not in plain.stderr

    notes = memoryd_home / "user/.claude/CLAUDE.md"
    notes.parent.mkdir()
    notes.write_text("- The release job signs with the old key.\n")

    def line() -> list[str]:
        return [h["id"] for h in client.search("release job signs", agents=["*"])["hits"]
                if "old key" in h["text"]]

    wait_until(line)
    in_file = run_cli("supersede", line()[0], f"The release job signs with {GITHUB}.")
    assert in_file.returncode == 0, in_file.stderr
    assert ("redacted in the index: github-token (the file holds the text as you typed it)"
            in in_file.stderr), in_file.stderr
    assert GITHUB in notes.read_text()


def test_import_says_which_lines_it_redacted(daemon, client, tmp_path) -> None:
    """`memory import` (remember_many) stored a line's secret redacted without a word."""
    lines = [{"agent": "ops", "category": "deploy", "text": "the deploy runs at noon"},
             {"agent": "ops", "category": "deploy", "text": f"the deploy token is {GITHUB}"},
             {"agent": "ops", "category": "cloud", "text": f"the CI signs in as {AWS}"}]
    export = tmp_path / "export.jsonl"
    export.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_cli("import", str(export))
    assert done.returncode == 0, done.stderr
    assert (f"redacted before it was stored: aws-access-key, github-token, in 2 entries "
            f"(lines 2, 3 of {export}, which still holds them)") in done.stderr, done.stderr
    again = run_cli("import", str(export), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["redacted"] == [
        {"line": 2, "kinds": ["github-token"]}, {"line": 3, "kinds": ["aws-access-key"]}]
    assert GITHUB not in json.dumps(client.list_entries(agent="ops")) and AWS not in again.stdout


def test_purge_deletes_a_torn_line_that_holds_the_secret(memoryd_home, embedder) -> None:
    """A write cut short (a crash mid-append) leaves its bytes in ``torn/``, kept for the user;
    a purge of the text it holds deletes it too, and leaves another agent's alone."""
    secret = "zq" + fake(10, 9).lower() + "wx"
    running = start_daemon(embedder)
    with Client(running.socket, timeout_s=30) as c:
        c.remember("a", "ops", f"the vault word is {secret}")
        c.remember("b", "ops", "the build runs on friday")
    running.stop()
    for agent in ("a", "b"):  # each ledger cut mid-append, the secret in both fragments
        with (memoryd_home / "ledger" / f"{agent}.jsonl").open("ab") as handle:
            handle.write(f'{{"entry": {{"agent": "{agent}", "text": "{secret} and'.encode())
    running = start_daemon(embedder)
    try:
        torn = sorted(p.name for p in (memoryd_home / "torn").iterdir())
        assert [name.split(".")[0] for name in torn] == ["ledger-a", "ledger-b"]
        preview = run_cli("purge", "--agent", "a", "--match", secret)
        assert preview.returncode == 0, preview.stderr
        assert "would delete" in preview.stdout and "ledger-a.jsonl." in preview.stdout
        done = run_cli("purge", "--agent", "a", "--match", secret, "--yes")
        assert done.returncode == 0, done.stderr
        assert "deleted" in done.stdout
    finally:
        running.stop()
    left = [p.name for p in (memoryd_home / "torn").iterdir()]
    assert len(left) == 1 and left[0].startswith("ledger-b.jsonl.")  # not agent a's to purge
    assert state_holds(memoryd_home, secret, skip=memoryd_home / "torn" / left[0]) == []


def state_holds_any_case(home: Path, needle: str) -> list[str]:
    """:func:`state_holds`, case-insensitively: a heading's category is its kebab form, a
    tag is lower-cased; a secret lower-cased is still the secret."""
    found = []
    raw = needle.lower().encode()
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if raw in (gzip.decompress(data) if path.suffix == ".gz" else data).lower():
                found.append(str(path.relative_to(home)))
    return found


XOXB = "xoxb-124906528630-3748625702929-" + fake(24, 20).lower()
AWS_HEADING = "AKIA" + fake(16, 21).upper()
PROJ = "sk-proj-" + fake(48, 22)
STRIPE = "sk_live_" + fake(24, 23)


def test_headings_categories_and_imports_keep_no_secret(memory_dirs, memoryd_home, embedder,
                                                        tmp_path) -> None:
    """A heading was put in kebab form (lower case, "_" and spaces to "-") before it was
    redacted: ``AKIA…`` lower-cased and a token after a "-" were no longer secrets, and the
    category kept them (entries, search, events, export). An import kept the session and
    message id it was given, and lower-cased a tag's mark."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            c.file("write", "bob", "deploy.md", text=(
                f"# Deploy\n\n## Deploy with {GITHUB}\n\n- push the tag\n\n"
                f"## Token {XOXB}\n\n- the bot posts the release\n\n"
                f"### AWS {AWS_HEADING}\n\n- the bucket is eu-west-1\n\n"
                "## password: DbZhrHpe7coruNg4!\n\n- the replica lags a minute\n"))
            c.file("write", "bob", "context.md", text="# Context\n\n- use the staging key\n")
            c.file("replace", "bob", "context.md", old="# Context",
                   new=f"# Context OpenAI key: {PROJ}")
            c.remember("alice", f"cat-{XOXB}", "the channel for releases is #ship")
            exported = tmp_path / "crafted.jsonl"
            exported.write_text(json.dumps({
                "agent": "carol", "category": "ops", "text": "the cache warms at six",
                "session": f"sess-{XOXB}", "message_id": PROJ, "project": f"proj-{GITHUB}",
                "tags": ["billing", STRIPE], "created": 1767225600.0}) + "\n")
            imported = run_cli("import", str(exported))
            assert imported.returncode == 0 and "stored 1" in imported.stdout, imported.stderr

            def categories() -> set[str]:
                listed = c.call("list", {"agents": ["bob"], "limit": 50})["entries"]
                return {e["category"] for e in listed}

            wait_until(lambda: len(categories()) == 5)
            assert categories() == {
                "deploy-with-[REDACTED:github-token]", "token-[REDACTED:slack-token]",
                "aws-[REDACTED:aws-access-key]", "password-[REDACTED:password]",
                "context-openai-key-[REDACTED:openai-api-key]"}
            listed = run_cli("list", "bob")
            assert listed.returncode == 0 and "bob/aws-[REDACTED:aws-access-key]" in \
                listed.stdout, listed.stdout
            [alice] = c.call("list", {"agents": ["alice"]})["entries"]
            assert alice["category"] == "cat-[REDACTED:slack-token]"
            out = run_cli("export", "--agent", "carol").stdout
            [carol] = [json.loads(line) for line in out.splitlines()]
            assert carol["session"] == "sess-[REDACTED:slack-token]"
            assert carol["message_id"] == "[REDACTED:openai-api-key]"
            assert carol["project"].endswith("/proj-[REDACTED:github-token]")
            assert carol["tags"] == ["[REDACTED:stripe-key]", "billing"]
            # a tag filter is case-insensitive, the mark's too
            found = c.call("list", {"agents": ["carol"], "tags": ["[redacted:Stripe-Key]"]})
            assert [e["text"] for e in found["entries"]] == ["the cache warms at six"]
    finally:
        running.stop()
    for secret in (GITHUB, XOXB, AWS_HEADING, "DbZhrHpe7coruNg4!", PROJ, STRIPE):
        assert state_holds_any_case(memoryd_home, secret) == [], secret
