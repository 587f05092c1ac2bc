"""The memory block is byte-stable while memory has not changed (issue 37, §4): a provider
caches the prompt prefix, and a block that changes from one session to the next defeats that.

Against the real daemon and the real hook processes. "A day later" is the stored memory made
exactly a day older (every entry's date moved back a day), which is all a day does to it."""

from __future__ import annotations

import difflib
import json
import time
from pathlib import Path

import apsw
import pytest
from memoryd_client import Client

from memoryd.sessions.context import DRIFT_CAVEAT
from tests.client.test_hooks import start_payload
from tests.conftest import run_hook, start_daemon, wait_until

DAY = 86_400
AGENT = "claude-code"
#: Ages in days, away from the thresholds the block words an age by (30, 90, 365 days): a
#: day later none has crossed one.
LESSONS = ((2.3, "Never force-push to main", "git", "negative"),
           (12.6, "Run the migrations through the release job, not by hand", "deploy", None),
           (45.2, "Don't mock the database in integration tests", "testing", "negative"),
           (61.8, "Keep the payment webhooks idempotent", "payments", "positive"),
           (120.4, "Do not bump the ORM without the load-test numbers", "deps", "negative"),
           (150.5, ("Before a release, run the full integration suite against a fresh copy of "
                    "the production schema, check the migration plan for locks on the orders "
                    "table, and post both in the release channel"), "release", "positive"),
           (400.9, "Tag releases from the release branch only", "release", None))
FEEDBACK = ((5.5, "The user wants short answers without preamble"),
            (52.1, "The user prefers tables over bullet lists for comparisons"),
            (200.7, "The user reads diffs before the explanation"))
FACTS = ((3.2, "project.deploy_target", "Deploys go to the eu-west cluster"),
         (70.3, "tool.formatter", "The formatter is ruff format, line length 100"),
         (150.6, "project.db", "The database is Postgres 15 on RDS"))
NOTES = ((1.4, "The reconciler's nightly run takes 40 minutes since the index change"),
         (33.3, "Checkout retries reuse the idempotency key"),
         (95.2, "The staging cluster is rebuilt every Sunday night"))
NOTEBOOK = """---
description: what this project taught us
---
# Notebook

## Mistakes
- [{d40}] Ran the whole test suite on every save; it took minutes
- [{d40}] Edited generated code by hand; the next build overwrote it

## Learnings
- [{d100}] The search index rebuild needs the model loaded first
- [{d100}] Staging mirrors production every Monday
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "billing"
    (root / ".git").mkdir(parents=True)
    return root


def write_memory(daemon, client: Client, repo: Path, memoryd_home: Path) -> None:
    """Lessons, feedback (a person's), keyed facts and notes of the project, dated, and a
    notebook whose bullets share their dates."""
    now = time.time()
    for days, text, category, polarity in LESSONS:
        client.remember(AGENT, category, text, kind="lesson", polarity=polarity,
                        created=now - days * DAY, cwd=str(repo))
    with Client(daemon.socket, channel="terminal") as person:
        for days, text in FEEDBACK:
            person.remember(AGENT, "feedback", text, kind="feedback", created=now - days * DAY,
                            cwd=str(repo))
    for days, key, text in FACTS:
        client.remember(AGENT, "project", text, key=key, created=now - days * DAY,
                        cwd=str(repo))
    for days, text in NOTES:
        client.remember(AGENT, "notes", text, created=now - days * DAY, cwd=str(repo))
    dated = {name: time.strftime("%Y-%m-%d", time.gmtime(now - days * DAY))
             for name, days in (("d40", 40.5), ("d100", 100.5))}
    notebook = memoryd_home / "agents" / AGENT / "notebook.md"
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_text(NOTEBOOK.format(**dated))
    wait_until(lambda: "Staging mirrors production" in session_block(repo, "probe"))


def days_pass(memoryd_home: Path, days: float = 1) -> None:
    """Every stored date moved back by ``days``: the memory as it is that much later."""
    db = apsw.Connection(str(memoryd_home / "memoryd.db"))
    db.execute("UPDATE entries SET created = created - ?", (days * DAY,))
    db.close()


def session_block(repo: Path, session: str, prompt: str | None = None) -> str:
    """What the hook process injects: at session start, or for a prompt."""
    event = "SessionStart" if prompt is None else "UserPromptSubmit"
    payload = start_payload(str(repo), event, session_id=session,
                            **({"prompt": prompt} if prompt else {}))
    result = run_hook("claude-code", event, payload)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_two_sessions_a_day_apart_get_the_same_block(daemon, client: Client, repo: Path,
                                                    memoryd_home: Path) -> None:
    write_memory(daemon, client, repo, memoryd_home)
    first = session_block(repo, "session-1")
    asked = "can I bump the ORM version without the load-test numbers?"
    first_prompt = session_block(repo, "session-1", asked)
    assert "Don't mock the database" in first and "Tag releases" in first
    assert "Do not bump the ORM" in first_prompt, first_prompt
    assert "verify before acting" in first  # old entries still carry their warning
    days_pass(memoryd_home)
    assert session_block(repo, "session-2") == first
    assert session_block(repo, "session-2", asked) == first_prompt


def test_an_age_changes_its_line_only_when_it_crosses_a_threshold(
        daemon, client: Client, repo: Path, memoryd_home: Path) -> None:
    write_memory(daemon, client, repo, memoryd_home)
    client.remember(AGENT, "ops", "The on-call rota lives in docs/oncall.md",
                    created=time.time() - 89.5 * DAY, cwd=str(repo))
    before = session_block(repo, "session-1")
    days_pass(memoryd_home)
    after = session_block(repo, "session-2")
    went, came = changed_lines(before, after)
    assert len(went) == len(came) == 1  # the one entry that is now over 90 days old
    assert "on-call rota" in went[0] and "verify before acting" not in went[0]
    assert "on-call rota" in came[0] and "verify before acting" in came[0]


def test_adding_an_entry_changes_only_its_line_and_the_trim(
        daemon, client: Client, repo: Path, memoryd_home: Path) -> None:
    """Learned at the end of one session, there at the start of the next (a day later): the
    new line comes, the lowest-ranked item the budget no longer holds goes, nothing else moves;
    not even a shorter item further down that would fit in the room the trim left."""
    write_memory(daemon, client, repo, memoryd_home)
    whole = client.context(AGENT, cwd=str(repo), budget=100_000)["text"]
    last = next(line for line in whole.split("\n") if "full integration suite" in line)
    # the budget ends just after that long lesson: the (shorter) lines below it do not fit
    budget = whole.index(last) + len(last) + len(DRIFT_CAVEAT) + 3 + 10
    before = client.context(AGENT, cwd=str(repo), budget=budget)
    assert before["text"].split("\n")[-3] == last
    client.remember(AGENT, "git", "Rebase feature branches onto main before review",
                    kind="lesson", polarity="positive", cwd=str(repo))
    days_pass(memoryd_home)
    after = client.context(AGENT, cwd=str(repo), budget=budget)
    went, came = changed_lines(before["text"], after["text"])
    assert came == ["- Do: “Rebase feature branches onto main before review” [git]"]
    assert went == [last]
    kept_before = {i["id"] for i in before["items"] if i["included"]}
    kept_after = {i["id"] for i in after["items"] if i["included"]}
    assert len(kept_before - kept_after) == 1 and len(kept_after - kept_before) == 1
    rest = [line for line in after["text"].split("\n") if line not in came]
    assert rest == [line for line in before["text"].split("\n") if line not in went]


def test_a_restart_leaves_the_block_as_it_was(embedder, repo: Path, memoryd_home: Path) -> None:
    """Entries of one date (a notebook's bullets of a day) tie on their date. Their order is
    the block's own, the last stored first as newest first goes, not the order the query plan
    happens to read them in: at its start the daemon refreshes the database's statistics, and
    with them the plan can change (it did, with a few hundred entries). These bullets say one
    thing with its number changed (versions of one: memoryd.retrieval.versions), and of lines
    of one date the upper is the newer: the others go after it, said earlier."""
    bullets = {"Feedback": "Feedback number {n}: shorter step {n} updates please",
               "Mistakes": "Mistake number {n}: skipped the step {n} checklist"}
    notebook = memoryd_home / "agents" / AGENT / "more.md"
    notebook.parent.mkdir(parents=True, exist_ok=True)
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=60) as client:
            write_memory(running, client, repo, memoryd_home)
            client.remember_many([{"agent": AGENT, "category": f"area-{i % 7}", "force": True,
                                   "text": f"Module {i * 7} runs {i % 5 + 2} workers in {i}",
                                   **({"cwd": str(repo)} if i % 2 else {})}
                                  for i in range(300)])
            notebook.write_text("# More\n" + "".join(
                f"\n## {section}\n" + "".join(f"- [2026-01-15] {text.format(n=n)}\n"
                                               for n in range(1, 6))
                for section, text in bullets.items()))
            wait_until(lambda: "Mistake number 5" in client.context(AGENT, cwd=str(repo))["text"])
            first = client.context(AGENT, cwd=str(repo))["text"]
    finally:
        running.stop()
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=60) as client:
            assert client.context(AGENT, cwd=str(repo))["text"] == first
    finally:
        running.stop()
    lines = [line for line in first.split("\n") if "number " in line]
    numbers = [line.split("number ")[1][0] for line in lines]
    assert numbers == ["1", "5", "4", "3", "2"] * 2  # the newest, then the last stored first
    assert [n for n, line in zip(numbers, lines) if "said earlier" not in line] == ["1", "1"]


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    """(lines that went, lines that came)."""
    a, b = old.split("\n"), new.split("\n")
    went: list[str] = []
    came: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            went += a[i1:i2]
        if tag in ("insert", "replace"):
            came += b[j1:j2]
    return went, came



def test_a_block_ranked_by_use_stays_the_same_until_a_use_changes(
        daemon, client: Client, repo: Path, memoryd_home: Path) -> None:
    """Selection by use (issue 37 §3): a lesson the agent followed goes first among the
    lessons, and stays there from one session to the next while nothing else happened; the
    block does not churn."""
    from tests.sessions.test_usage import run_session

    write_memory(daemon, client, repo, memoryd_home)
    uv = client.remember(AGENT, "deps", "Use uv, not pip, to manage dependencies",
                         kind="lesson", created=time.time() - 200.3 * DAY,
                         cwd=str(repo))["entry"]["id"]
    before = session_block(repo, "session-0")
    lessons = section_lines(before, "## Lessons")
    assert "Use uv" not in lessons[0]  # newest first: one of 200 days is not first
    run_session(client, repo, "5e550001-4a5b-4c6d-8e9f-0a1b2c3d4e5f",
                [("user", "add requests"), ("bash", "uv add requests")])
    wait_until(lambda: client.get(uv)["usage"]["followed"] == 1)
    first = session_block(repo, "session-1")
    assert "Use uv" in section_lines(first, "## Lessons")[0]
    went, came = changed_lines(before, first)
    assert went == came and len(went) == 1 and "Use uv" in went[0]  # it moved, alone
    days_pass(memoryd_home)
    assert session_block(repo, "session-2") == first


def section_lines(block: str, heading: str) -> list[str]:
    lines = block.split("\n")
    start = lines.index(heading) + 1
    return lines[start:lines.index("", start)]
