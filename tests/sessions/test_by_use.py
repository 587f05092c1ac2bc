"""Issue 37 §3 through the real daemon, hook processes and transcript files: what memoryd does
with the outcomes of what it injected — selection and retention by use (the memory block, the
retain pass), promotion by evidence and the global tier (the promote pass)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import run_cli, start_daemon, wait_until
from tests.sessions.test_usage import run_session

AGENT = "claude-code"
DAY = 86_400
UV = "Use uv, not pip, to manage dependencies"
FORCE = "Never force-push to main"
RELEASE = "Tag releases from the release branch only"
NOTE = "The staging cluster is rebuilt every Sunday night"
FACT = "The formatter is ruff format, line length 100"
#: ``[outcomes] unused_days`` in these tests: seconds, not months.
UNUSED_S = 3.0


def session_id(n: int) -> str:
    return f"5e55{n:04d}-4a5b-4c6d-8e9f-0a1b2c3d4e5f"


def judged(client: Client, entry: str, sessions: int) -> bool:
    usage = client.get(entry)["usage"]
    return usage["injected"] >= sessions and usage["pending"] == 0


def configure(home: Path, **outcomes: object) -> None:
    """``[outcomes]`` settings in the daemon's config.toml (``memory reload`` applies them)."""
    lines = [f"{key} = {json.dumps(value)}" for key, value in outcomes.items()]
    (home / "config.toml").write_text("[outcomes]\n" + "\n".join(lines) + "\n")


def why_of(explained: list[str], text: str) -> str:
    """The reason `memory explain` gives for the item of ``text``."""
    at = next(n for n, line in enumerate(explained) if text in line)
    return next(line for line in explained[at:] if line.startswith("        why: "))


@pytest.fixture
def unused_soon(memoryd_home: Path, embedder):  # type: ignore[no-untyped-def]
    """A daemon for which an entry goes unused after ``UNUSED_S`` seconds."""
    configure(memoryd_home, unused_days=UNUSED_S / DAY)
    running = start_daemon(embedder)
    yield running
    running.stop()
    assert not running.errors, running.errors


def test_unused_entries_sink_in_the_block_and_retain_archives_them_undoably(
        unused_soon, memoryd_home: Path, tmp_path: Path) -> None:
    with Client(unused_soon.socket, timeout_s=60) as client:
        now = time.time()
        ids = {}
        for days, text, kind in ((400, UV, "lesson"), (100, FORCE, "lesson"),
                                 (300, RELEASE, "lesson"), (200, NOTE, "note")):
            ids[text] = client.remember(AGENT, "workflow", text, kind=kind,
                                        created=now - days * DAY)["entry"]["id"]
        ids[FACT] = client.remember(AGENT, "tools", FACT, key="tool.formatter",
                                    created=now - 500 * DAY)["entry"]["id"]
        # the first session: from now on memoryd knows what became of what it injected
        run_session(client, tmp_path, session_id(0), [("user", "look around"), ("bash", "ls")])
        wait_until(lambda: judged(client, ids[UV], 1))
        # ten sessions later (and over UNUSED_S after the first), uv was used in the last one
        started = time.monotonic()
        for n in range(1, 11):
            steps = [("user", "add requests"), ("bash", "uv add requests")] if n == 10 else \
                [("user", "what is in the readme?"), ("bash", "cat README.md")]
            run_session(client, tmp_path, session_id(n), steps)
        wait_until(lambda: judged(client, ids[UV], 11) and judged(client, ids[FORCE], 11))
        time.sleep(max(0.0, UNUSED_S + 0.5 - (time.monotonic() - started)))
        assert client.get(ids[UV])["usage"]["followed"] == 1
        assert client.get(ids[FORCE])["usage"]["no_occasion"] == 11

        # selection: the lesson in use first (newest first would put it last), the unused
        # ones last in their section, and the first dropped when the budget is short
        block = client.context(AGENT, cwd=str(tmp_path))
        lessons = [line for line in block["text"].split("\n")
                   if any(t in line for t in (UV, FORCE, RELEASE))]
        assert [next(t for t in (UV, FORCE, RELEASE) if t in line) for line in lessons] == \
            [UV, FORCE, RELEASE]
        uses = {item["id"]: item.get("use") for item in block["items"]}
        assert uses[ids[UV]] == "in use" and uses[ids[FORCE]] == "unused"
        assert uses[ids[NOTE]] == "unused" and uses[ids[FACT]] is None
        # said long ago but given to memoryd only now (a past session's lesson extracted
        # today, an old export imported): it could not be used before, so it is not unused
        late = client.remember(AGENT, "workflow", "Pin the CI images by their digest",
                               kind="lesson", created=now - 400 * DAY)["entry"]["id"]
        given = {item["id"]: item.get("use")
                 for item in client.context(AGENT, cwd=str(tmp_path))["items"]}
        assert late in given and given[late] != "unused", given
        client.forget(late)
        run_session(client, tmp_path, session_id(11), [("user", "hi"), ("bash", "ls")])
        explained = run_cli("explain", session_id(11)).stdout.split("\n")  # and why, in words
        assert why_of(explained, UV).endswith("followed or broken lately: ahead of the others")
        assert why_of(explained, FORCE).endswith("unused for long: last, and the first dropped")
        wait_until(lambda: judged(client, ids[FORCE], 12))
        for prompt, entry, use in (("can I force-push to main?", ids[FORCE], "unused"),
                                   ("should I manage dependencies with pip or uv?", ids[UV],
                                    "in use")):  # the prompt hook's block likewise
            asked = client.context(AGENT, cwd=str(tmp_path), prompt=prompt)["items"]
            assert {item["id"]: item.get("use") for item in asked}.get(entry) == use, asked
        lines = block["text"].split("\n")
        short = len(block["text"]) - sum(len(line) + 1 for line in lines
                                         if NOTE in line or RELEASE in line)
        text = client.context(AGENT, cwd=str(tmp_path), budget=short)["text"]
        assert FACT in text and UV in text and FORCE in text  # ranked ahead of the unused
        assert NOTE not in text and RELEASE not in text

        # off: with unused_days = 0, or outcomes off, nothing moves and nothing is archived
        for off in ({"unused_days": 0}, {"enabled": False, "unused_days": UNUSED_S / DAY}):
            configure(memoryd_home, **off)
            client.reload()
            block = client.context(AGENT, cwd=str(tmp_path))
            assert not any(item.get("use") for item in block["items"])
            assert block["text"].index(FORCE) < block["text"].index(UV)  # newest first
            assert not client.pass_run("retain", dry_run=True)["counts"].get("unused_preview")
        configure(memoryd_home, unused_days=-1)
        refused = run_cli("reload")
        assert refused.returncode != 0
        assert "outcomes.unused_days must be between 0 and 36500" in refused.stderr
        configure(memoryd_home, unused_days=UNUSED_S / DAY)
        client.reload()

        # retention: the unused lessons and the note archived, never deleted; facts stay
        record_before = client.get(ids[FORCE])["usage"]
        ran = client.pass_run("retain")
        assert ran["counts"].get("unused_archived") == 3, ran
        for text in (FORCE, RELEASE, NOTE):
            assert client.get(ids[text])["status"] == "archived"
        assert client.get(ids[UV])["status"] == "active"
        assert client.get(ids[FACT])["status"] == "active"
        assert client.get(ids[FORCE])["usage"] == record_before  # its history kept
        block = client.context(AGENT, cwd=str(tmp_path))["text"]
        assert UV in block and FORCE not in block and NOTE not in block
        listed = client.list_entries(agent=AGENT, status="archived")["entries"]
        assert {e["id"] for e in listed} == {ids[FORCE], ids[RELEASE], ids[NOTE]}
        shown = run_cli("pass", "show", ran["run"])
        assert shown.returncode == 0, shown.stderr
        assert "entry archive unused [applied]: " + ids[FORCE] in shown.stdout
        assert "unused for over" in shown.stdout and "injected into 12 sessions" in shown.stdout

        # undo brings them back as they were, and the next run leaves them be
        undone = run_cli("undo", ran["run"])
        assert undone.returncode == 0, undone.stderr
        assert client.get(ids[FORCE])["status"] == "active"
        assert client.get(ids[FORCE])["usage"] == record_before
        assert FORCE in client.context(AGENT, cwd=str(tmp_path))["text"]
        again = client.pass_run("retain")
        assert not again["counts"].get("unused_archived"), again
        assert client.get(ids[NOTE])["status"] == "active"


CONCISE = "Keep answers short"


def test_a_lesson_broken_twice_or_followed_three_times_is_proposed_with_its_outcomes(
        daemon, memoryd_home: Path, tmp_path: Path) -> None:
    with Client(daemon.socket, channel="terminal") as person:  # the user's own lessons
        ids = {text: person.remember(AGENT, "workflow", text, kind="lesson",
                                     polarity="negative" if text == FORCE else "positive",
                                     cwd=str(tmp_path))["entry"]["id"]
               for text in (UV, FORCE, CONCISE)}
    with Client(daemon.socket, timeout_s=60) as client:
        assert client.pass_run("promote")["counts"] == {}  # seen once, never judged: not yet
        for n in range(3):
            steps = [("user", "ship the change"), ("bash", "git push origin main")]
            if n < 2:  # pip twice, against "use uv", the second time corrected
                steps += [("bash", "pip install rich")] + \
                    ([("user", "no, we use uv here")] if n else [])
            run_session(client, tmp_path, session_id(n), steps)
        wait_until(lambda: judged(client, ids[UV], 3) and judged(client, ids[FORCE], 3))
        assert client.get(ids[UV])["usage"]["broken"] == 2
        assert client.get(ids[FORCE])["usage"]["followed"] == 3
        ran = client.pass_run("promote")
        assert ran["counts"] == {"proposed": 2}, ran
        proposals = {c["after"]["entry"]: c for c in client.pass_show(ran["run"])["changes"]
                     if c["kind"] == "proposal"}
        assert set(proposals) == {ids[UV], ids[FORCE]}  # not the one never at stake
        uv, force = proposals[ids[UV]], proposals[ids[FORCE]]
        rules = memoryd_home / "user" / ".claude" / "CLAUDE.md"  # a global lesson's file
        assert uv["target"] == force["target"] == str(rules)
        day = time.strftime("%Y-%m-%d", time.gmtime())
        assert uv["after"]["text"] == f"{UV} (broken in 2 sessions: {day})"  # its dates
        assert uv["why"].startswith("outcomes: broken in 2 sessions (last broken ")
        assert "pip install rich" in uv["why"]
        assert uv["after"]["outcomes"] == {"followed": 0, "broken": 2}
        assert force["after"]["text"] == f"{FORCE} (followed in 3 sessions)"
        assert force["why"] == "outcomes: followed in 3 sessions"
        shown = run_cli("pass", "show", ran["run"])  # the reason, as a person reads it
        assert shown.returncode == 0, shown.stderr
        assert "why: outcomes: broken in 2 sessions (last broken" in shown.stdout
        assert "outcomes: {'broken': 0, 'followed': 3}" in shown.stdout
        assert client.pass_run("promote")["counts"] == {}  # proposed once
        accepted = run_cli("promote", "accept", uv["change"])
        assert accepted.returncode == 0, accepted.stderr
        assert f"- {uv['after']['text']}" in rules.read_text()


def test_a_lesson_followed_in_two_projects_is_proposed_for_the_global_tier(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    from tests.conftest import run_memoryd

    shop, api, web = (tmp_path / name for name in ("shop", "api", "web"))
    for repo in (shop, api, web):
        (repo / ".git").mkdir(parents=True)
    running = start_daemon(embedder)
    try:
        with Client(running.socket, channel="terminal") as person:  # said in each project
            mine = {repo: person.remember(AGENT, "workflow", UV, kind="lesson",
                                          cwd=str(repo))["entry"]["id"] for repo in (shop, api)}
            only_here = person.remember(AGENT, "deps", "Use pnpm, not npm, for the frontend",
                                        kind="lesson", cwd=str(shop))["entry"]["id"]
        with Client(running.socket, timeout_s=60) as client:
            assert mine[shop] != mine[api]  # one entry a project
            run_session(client, shop, session_id(0),
                        [("user", "add requests"), ("bash", "uv add requests"),
                         ("bash", "pnpm install")])
            assert client.pass_run("promote")["counts"] == {}  # one project so far
            run_session(client, api, session_id(1), [("user", "sync"), ("bash", "uv sync")])
            wait_until(lambda: judged(client, mine[shop], 1) and judged(client, mine[api], 1))
            assert client.get(only_here)["usage"]["followed"] == 1
            ran = client.pass_run("promote")
            assert ran["counts"] == {"proposed": 1}, ran
            [proposal] = [c for c in client.pass_show(ran["run"])["changes"]
                          if c["kind"] == "proposal"]
            assert proposal["action"] == "global"
            assert proposal["why"].startswith("followed in sessions of 2 projects (api, shop)")
            assert set(proposal["after"]["lessons"]) == set(mine.values())
            assert UV not in client.context(AGENT, cwd=str(web))["text"]
            accepted = run_cli("promote", "accept", proposal["change"])
            assert accepted.returncode == 0, accepted.stderr
            best = proposal["after"]["entry"]
            [other] = [uid for uid in mine.values() if uid != best]
            assert client.get(best)["project"] is None  # global: in every project now
            assert client.get(other)["status"] == "superseded"
            assert client.get(other)["superseded_by"] == best
            assert UV in client.context(AGENT, cwd=str(web))["text"]
            assert client.get(only_here)["project"] == str(shop)
            run = accepted.stdout.split()[0]  # "r7 promote done: applied 2"
    finally:
        running.stop()
    (memoryd_home / "memoryd.db").unlink()  # the move is in the ledger: a rebuild keeps it
    assert run_memoryd("reindex").returncode == 0
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=60) as client:
            assert client.get(best)["project"] is None
            assert client.get(other)["superseded_by"] == best
            undone = run_cli("undo", run)  # a person takes it back: both as they were
            assert undone.returncode == 0, undone.stderr
            assert {client.get(uid)["project"] for uid in mine.values()} == {str(shop), str(api)}
            assert client.get(other)["status"] == "active"
            assert UV not in client.context(AGENT, cwd=str(web))["text"]
            assert client.pass_run("promote")["counts"] == {}  # and it is not proposed again
    finally:
        running.stop()
