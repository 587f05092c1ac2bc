"""A memory file line's date (``- [2026-11-05] …``) is the user's local day, in the daemon's time
zone (memoryd.ingest.line_date), tested west of UTC (Los Angeles), where 00:00 UTC of a date
is the evening before it. An exploratory tester's report (2026-11-30): a correction written in
CLAUDE.md today was the older version of what `memory store` kept this morning, and the block
said it was "said earlier"; ``[2026-11-05]`` listed as 2026-11-04 16:00; a question about
2026-11-24 found the 2026-11-25 line; a line `memory supersede` dated today was created
yesterday; a date to come led `memory list` for months; two lines of one date were no
versions of each other's order."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client

from tests.conftest import RunningDaemon, reindexed, run_cli, run_hook, wait_until
from tests.ingest.test_ingest import assistant, user, write_lines
from tests.passes.test_passes import THREE_SESSIONS_MISTAKE
from tests.sessions.test_usage import iso

ZONE = "America/Los_Angeles"


@contextlib.contextmanager
def time_zone(name: str) -> Iterator[None]:
    """The daemon (in this process) and the commands the test runs, in zone ``name``."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def pacific() -> Iterator[None]:
    with time_zone(ZONE):
        yield


@pytest.fixture
def tokyo() -> Iterator[None]:
    with time_zone("Asia/Tokyo"):
        yield


def rules(memoryd_home: Path) -> Path:
    path = memoryd_home / "user" / ".claude" / "CLAUDE.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


def entries(client: Client, count: int) -> dict[str, dict[str, Any]]:
    """claude-code's entries (text → entry), once it holds ``count``."""
    wait_until(lambda: client.list_entries(agent="claude-code")["total"] == count)
    return {e["text"]: e for e in client.list_entries(agent="claude-code", limit=50)["entries"]}


def search_lines(question: str) -> list[str]:
    shown = run_cli("search", "claude-code", "-", question)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.splitlines()


def listed(entry_id: str) -> str:
    """The entry's line of `memory list`."""
    shown = run_cli("list", "claude-code", "--limit", "50")
    assert shown.returncode == 0, shown.stderr
    [line] = [line for line in shown.stdout.splitlines() if entry_id in line]
    return line


def today() -> str:
    return time.strftime("%Y-%m-%d")


def test_a_correction_written_in_a_notebook_today_is_the_newer_version(
        pacific: None, memoryd_home: Path, daemon: RunningDaemon, client: Client,
        tmp_path: Path) -> None:
    """Read as of 00:00 UTC, a line dated today was written yesterday evening in Los Angeles:
    the 30-day entry stored this morning came first, the correction was "[earlier version
    of …]", and the hook told the agent it was said earlier."""
    stored = run_cli("store", "claude-code", "infra", "The metrics retention period is 30 days.")
    assert stored.returncode == 0, stored.stderr
    old = stored.stdout.split()[1]
    append(rules(memoryd_home), f"- [{today()}] The metrics retention period is 90 days.\n")
    new = entries(client, 2)["The metrics retention period is 90 days."]["id"]
    lines = search_lines("what is the metrics retention period")
    assert new in lines[0] and "[earlier version" not in lines[0], lines
    assert old in lines[1] and f"[earlier version of {new}]" in lines[1], lines
    hook = run_hook("claude-code", "UserPromptSubmit", {
        "session_id": "s-line-date", "transcript_path": str(tmp_path / "s.jsonl"),
        "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
        "prompt": "what is the metrics retention period?"})
    assert hook.returncode == 0, hook.stderr
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    [ninety] = [line for line in context.splitlines() if "90 days" in line]
    [thirty] = [line for line in context.splitlines() if "30 days" in line]
    assert "said earlier" not in ninety and "said earlier" in thirty, context


def test_a_notebook_date_is_the_local_day_where_it_is_listed_and_asked_about(
        pacific: None, memoryd_home: Path, daemon: RunningDaemon, client: Client) -> None:
    """`[2026-11-05]` listed as 2026-11-04 16:00; a `--since`/`--until` of the local
    2026-11-20 missed its line; "what did we change on 2026-11-24" found the 2026-11-25 line
    first."""
    append(rules(memoryd_home), "- [2026-11-05] The deploy window is Tuesday.\n"
                                "- [2026-11-20] The release freeze starts.\n"
                                "- [2026-11-24] We changed the deploy cron to run at 03:00.\n"
                                "- [2026-11-25] We changed the backup cron to run at 04:00.\n")
    held = entries(client, 4)
    window = held["The deploy window is Tuesday."]
    assert listed(window["id"]).startswith("2026-11-05 00:00  ")
    shown = run_cli("get", window["id"])
    assert "created 2026-11-05 00:00;" in shown.stdout, shown.stdout
    freeze = run_cli("list", "claude-code", "--since", "2026-11-20T00:00-08:00",
                     "--until", "2026-11-20T23:59-08:00")
    [line] = freeze.stdout.splitlines()
    assert line.endswith("The release freeze starts."), freeze.stdout
    lines = search_lines("what did we change on 2026-11-24")
    assert "deploy cron" in lines[0], lines


def test_a_line_memoryd_dates_today_stays_of_today(
        pacific: None, memoryd_home: Path, daemon: RunningDaemon, client: Client) -> None:
    """`memory supersede` writes the local date, and its entry was created then; read
    again, the line was dated 00:00 UTC of that date: yesterday afternoon in Los Angeles, so
    that `memory list` put it on the day before and `--since today` missed it."""
    path = rules(memoryd_home)
    append(path, "- [2026-11-05] The deploy window is Tuesday.\n")
    old = entries(client, 1)["The deploy window is Tuesday."]["id"]
    before = time.time()
    done = run_cli("supersede", old, "The deploy window is Wednesday.")
    assert done.returncode == 0, done.stderr
    new = client.get(old)["superseded_by"]
    assert path.read_text() == f"- [{today()}] The deploy window is Wednesday.\n"
    append(path, "- Another line, so that the file is read again.\n")
    entries(client, 2)
    created = client.get(new)["created"]
    assert before <= created <= time.time()
    assert listed(new).startswith(f"{today()} ")
    since = run_cli("list", "claude-code", "--since", "today")
    assert "The deploy window is Wednesday." in since.stdout, since.stdout


def test_a_date_or_a_time_to_come_is_dated_when_read_and_said(
        pacific: None, memoryd_home: Path, daemon: RunningDaemon, client: Client) -> None:
    """A line dated in months, a file whose mtime is ahead of the clock, a transcript's turn
    timed tomorrow: each led `memory list` and `--since 90m` until then, aged "0s"."""
    ahead = (date.today() + timedelta(days=200)).isoformat()
    path = rules(memoryd_home)
    append(path, f"- [{ahead}] The staging cluster runs Postgres 17.\n"
                 "- The search cluster has three nodes.\n")
    later = time.time() + 30 * 86400
    os.utime(path, (later, later))
    transcript = memoryd_home / "user" / ".claude" / "projects" / "-tmp-shop" / "s-ahead.jsonl"
    transcript.parent.mkdir(parents=True)
    tomorrow = time.time() + 86400
    write_lines(transcript, [
        {**user("u1", "which queue prints the stickers?"), "sessionId": "s-ahead",
         "timestamp": iso(tomorrow)},
        {**assistant("a1", "msg_a1", [{"type": "text", "text": "The eu-west-1 print queue."}]),
         "sessionId": "s-ahead", "timestamp": iso(tomorrow + 5)}])
    wait_until(lambda: client.list_entries(agent="claude-code")["total"] == 3)
    read = time.time()
    held = {e["text"]: e for e in client.list_entries(agent="claude-code")["entries"]}
    assert all(e["created"] <= read for e in held.values()), held
    for entry in held.values():
        assert listed(entry["id"]).startswith(f"{today()} ")
    sources = run_cli("status", "--sources")
    assert f"dated after today (line 1 [{ahead}]): dated when read" in sources.stdout
    assert "its modification time is in the future" in sources.stdout
    assert "1 exchange timed in the future: dated when read" in sources.stdout


def test_a_notebook_date_to_come_is_named_by_the_notebook_pass(
        pacific: None, memoryd_home: Path, daemon: RunningDaemon, client: Client) -> None:
    ahead = (date.today() + timedelta(days=45)).isoformat()
    path = rules(memoryd_home)
    append(path, f"## Learnings\n- [{ahead}] Pin the base image by digest.\n"
                 "- [2026-11-05] Run the migrations before the deploy.\n")
    entries(client, 2)
    check = run_cli("notebook", "check", str(path))
    assert f"dated after today ({today()}): '- [{ahead}] Pin the base image" in check.stdout, \
        check.stdout
    done = client.pass_run("notebooks")
    problems = [c["why"] for c in client.pass_show(done["run"])["changes"]
                if c["kind"] == "problem"]
    assert problems == [f"dated after today ({today()}): '- [{ahead}] Pin the base image by "
                        "digest.'"]


def test_of_two_lines_of_one_date_the_upper_is_the_newer_and_stays_so_when_rebuilt(
        pacific: None, memoryd_home: Path, embedder: Any, daemon: RunningDaemon,
        client: Client) -> None:
    """A notebook is written newest first: of two versions dated the same day, the upper is
    the newer (neither was, both dated its midnight). Two lines written today, one after the
    other, are as written: the later is the newer, wherever it stands. `memoryd reindex`
    gives the same order."""
    path = rules(memoryd_home)
    append(path, "## Learnings\n"
                 "- [2026-11-05] The nightly backup job runs at 02:00.\n"
                 "- [2026-11-05] The nightly backup job runs at 01:00.\n"
                 f"- [{today()}] The backup bucket is in eu-west-1.\n")
    held = entries(client, 3)
    append(path, f"- [{today()}] The backup bucket is in eu-central-1.\n")
    held = entries(client, 4)
    upper, lower = (held[f"The nightly backup job runs at {t}."]["id"] for t in ("02:00", "01:00"))
    west, central = (held[f"The backup bucket is in {r}."]["id"] for r in ("eu-west-1",
                                                                            "eu-central-1"))

    def ordered() -> None:
        lines = search_lines("when does the nightly backup job run")
        assert upper in lines[0] and f"[earlier version of {upper}]" in lines[1] \
            and lower in lines[1], lines
        lines = search_lines("which region is the backup bucket in")
        assert central in lines[0] and f"[earlier version of {central}]" in lines[1] \
            and west in lines[1], lines

    ordered()
    daemon.stop()
    running = reindexed(embedder)
    try:
        wait_until(lambda: client_total(running) == 4)
        ordered()
    finally:
        running.stop()


def client_total(running: RunningDaemon) -> int:
    with Client(running.socket) as client:
        return int(client.list_entries(agent="claude-code")["total"])



def test_a_rules_incident_dates_are_those_of_its_notebook_lines_east_of_utc(
        tokyo: None, memoryd_home: Path, daemon: RunningDaemon, client: Client) -> None:
    """A promoted rule names the days its mistake was made: its bullets' dates, as written
    (their local midnight, in Tokyo, is the day before in UTC)."""
    notebook = memoryd_home / "user" / ".mastersof-ai" / "agents" / "designer" / "memory" \
        / "designer.md"
    notebook.parent.mkdir(parents=True)
    notebook.write_text(THREE_SESSIONS_MISTAKE)
    wait_until(lambda: client.list_entries(agent="designer")["total"] == 3)
    wait_until(lambda: not client.status().get("backlog"))
    proposed = client.pass_run("promote")
    [proposal] = [c for c in client.pass_show(proposed["run"])["changes"]
                  if c["kind"] == "proposal"]
    assert proposal["after"]["text"].endswith("(incidents: 2026-02-05, 2026-03-03, 2026-03-15)")
