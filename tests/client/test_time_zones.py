"""Days and times as the user's clock reads them (a tester's findings, 2026-12-01): a
transcript turn's date is its local day, the turns shown around a hit each read under their
own day, a date as `--until` takes in that whole day, and a date, a zone-less time or
`today` typed to `memory` is the user's local time, not UTC nor the daemon's time zone.

The daemon runs in this process, in the time zone a test sets (``TZ`` and ``time.tzset()``,
put back after); `memory` runs as a process of its own, in the zone its ``TZ`` says."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.client.test_mcp import mcp_session, text_of
from tests.conftest import RunningDaemon, run_cli, wait_until
from tests.ingest.test_ingest import SESSION, assistant, user, write_lines
from tests.retrieval.test_passages import settled

LOS_ANGELES, KOLKATA = "America/Los_Angeles", "Asia/Kolkata"


@pytest.fixture
def los_angeles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process (and the daemon it runs) in Los Angeles, UTC-8 in November."""
    monkeypatch.setenv("TZ", LOS_ANGELES)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _transcript(memoryd_home: Path, records: list[dict[str, object]]) -> None:
    project = memoryd_home / "user" / ".claude/projects/-tmp-shop"
    project.mkdir(parents=True)
    write_lines(project / f"{SESSION}.jsonl", records)


def _said(uuid: str, text: str, at: str) -> list[dict[str, object]]:
    """A user's message at ``at`` (ISO, UTC) and the answer to it."""
    answer = assistant(f"a-{uuid}", f"msg_{uuid}", [{"type": "text", "text": "Done."}])
    answer["timestamp"] = at
    return [user(uuid, text, timestamp=at), answer]


def test_a_turn_is_dated_by_its_local_day(los_angeles, daemon, client: Client,
                                          memoryd_home: Path) -> None:
    """A turn at 07:30 UTC on Nov 6 is 23:30 on Nov 5 in Los Angeles: it was listed as
    `2026-11-05 23:30 … [2026-11-06] User: …`, the date an agent reads contradicting the time
    beside it."""
    _transcript(memoryd_home, _said("u1", "Roll back the kiwi release tonight.",
                                    "2026-11-06T07:30:00.000Z"))
    wait_until(lambda: client.list_entries(kind="turn")["total"] == 1)

    listed = run_cli("list", "claude-code", "--kind", "turn")

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("2026-11-05 23:30 "), listed.stdout
    assert "turn: [2026-11-05] User: Roll back the kiwi release tonight." in listed.stdout


def test_a_session_of_one_message_is_listed_at_its_local_time(los_angeles, daemon,
                                                              client: Client,
                                                              memoryd_home: Path) -> None:
    """`memory sessions` printed "1 msgs"."""
    _transcript(memoryd_home, _said("u1", "Roll back the kiwi release tonight.",
                                    "2026-11-06T07:30:00.000Z"))
    wait_until(lambda: client.sessions()["total"] == 1)

    listed = run_cli("sessions")

    assert listed.returncode == 0, listed.stderr
    assert f"{SESSION}  claude-code  2026-11-05 23:30     1 msg   /tmp" in listed.stdout, \
        listed.stdout


def test_the_turns_around_a_hit_read_under_their_own_day(los_angeles, daemon, client: Client,
                                                         memoryd_home: Path) -> None:
    """The turns of Nov 5 shown before a hit of Nov 23 were printed after the hit's date,
    `[2026-11-23] (before) User: Let's migrate the orders database …`, as if said that day."""
    _transcript(memoryd_home, [
        *_said("u1", "Let's migrate the orders database to Postgres 16.",
               "2026-11-05T18:00:00.000Z"),
        *_said("u2", "What did we do the week after the launch?", "2026-11-23T18:00:00.000Z"),
        *_said("u3", "Write the launch retrospective next.", "2026-11-23T19:00:00.000Z")])
    wait_until(lambda: client.list_entries(kind="turn")["total"] == 3 and settled(client))

    searched = run_cli("search", "claude-code", "-", "what did we do the week after the launch",
                       "--limit", "1", "--all")

    assert searched.returncode == 0, searched.stderr
    line = searched.stdout
    assert ("turn: [2026-11-05] (before) User: Let's migrate the orders database to Postgres "
            "16. (before) Assistant: Done. [2026-11-23] User: What did we do the week after the "
            "launch? Assistant: Done. (after) User: Write the launch retrospective next.") in line
    hit = client.search("what did we do the week after the launch", agent="claude-code",
                        limit=1)["hits"][0]
    assert hit["text"].startswith("[2026-11-05] (before) User: Let's migrate"), hit["text"]


def _remember_at(daemon: RunningDaemon, *written: tuple[str, str]) -> list[str]:
    """genbot's entries, each with the time (ISO, UTC) it was written."""
    with Client(daemon.socket, timeout_s=30) as client:
        return [client.remember("genbot", "notes", text, created=_utc(at))["entry"]["id"]
                for text, at in written]


def _in(zone: str, *args: str) -> tuple[str, str]:
    """`memory ARGS` run in ``zone``: its output, and its errors."""
    done = subprocess.run([sys.executable, "-m", "memoryd_client", *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "TZ": zone}, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_a_date_as_until_takes_in_that_whole_day_and_a_time_is_local(los_angeles,
                                                                     daemon) -> None:
    """`--since 2026-11-05 --until 2026-11-05` was refused ("is not before"), `--until
    2026-11-06` missed the 5th's evening, and `--since "2026-11-05 23:00"` was UTC's 23:00
    while the listing beside it prints local time."""
    (evening,) = _remember_at(daemon, ("rolled back the kiwi release", "2026-11-06T07:30:00"))

    day, _ = _in(LOS_ANGELES, "list", "genbot", "--since", "2026-11-05", "--until", "2026-11-05")
    assert day.startswith(f"2026-11-05 23:30  {evening}"), day
    for span in (("--until", "2026-11-05"), ("--since", "2026-11-05 23:00", "--until",
                                             "2026-11-05 23:59")):
        listed, _ = _in(LOS_ANGELES, "list", "genbot", *span)
        assert evening in listed, span
    before, _ = _in(LOS_ANGELES, "list", "genbot", "--until", "2026-11-05 23:00")
    assert evening not in before


def test_dates_and_times_typed_are_the_users_local_time(los_angeles, daemon) -> None:
    """The daemon in Los Angeles, the user in Kolkata: a date typed to `memory` is the user's
    day (it was the daemon's), `--until DATE` takes in that whole day (`--since 2026-11-05
    --until 2026-11-05` was refused: "is not before"), and a time without a zone is the
    user's local time, as every listing prints it (it was UTC)."""
    early, late = _remember_at(daemon,
                               ("early on the 5th in Kolkata", "2026-11-04T20:00:00"),
                               ("early on the 6th in Kolkata", "2026-11-05T20:00:00"))

    listed, _ = _in(KOLKATA, "list", "genbot", "--since", "2026-11-05", "--until", "2026-11-05")
    assert early in listed and late not in listed
    assert "2026-11-05 01:30" in listed  # as a listing in Kolkata shows it
    # that time pasted back from the listing means what the listing meant
    window, _ = _in(KOLKATA, "list", "genbot", "--since", "2026-11-05 01:00",
                    "--until", "2026-11-05 02:00")
    assert early in window and late not in window
    # in Los Angeles the same dates are another span: the 5th there holds the later entry
    there, _ = _in(LOS_ANGELES, "list", "genbot", "--since", "2026-11-05", "--until",
                   "2026-11-05")
    assert late in there and early not in there
    # the dates of export and search are the user's as well
    exported, _ = _in(KOLKATA, "export", "--agent", "genbot", "--until", "2026-11-05")
    assert early in exported and late not in exported
    found, _ = _in(KOLKATA, "search", "genbot", "-", "early in Kolkata", "--all",
                   "--since", "2026-11-06")
    assert late in found and early not in found


def test_a_purge_since_a_date_takes_the_users_day(los_angeles, daemon) -> None:
    """`memory purge --since DATE` (and today: `--yes` deletes for good) from the day's start
    where the user is, not where the daemon runs: a Kolkata user's Nov 5 began on Nov 4 in
    Los Angeles."""
    early, late = _remember_at(daemon,
                               ("early on the 5th in Kolkata", "2026-11-04T20:00:00"),
                               ("late on the 4th in Kolkata", "2026-11-04T18:00:00"))

    listed, _ = _in(KOLKATA, "purge", "--agent", "genbot", "--since", "2026-11-05")

    assert early in listed and late not in listed


def test_a_span_holding_no_time_says_the_times_as_typed(los_angeles, daemon) -> None:
    """The client reads the dates: its refusal repeats them as typed, not as it sends them."""
    refused = run_cli("list", "--since", "2026-11-06", "--until", "2026-11-05")
    assert refused.returncode == 2
    assert refused.stderr.startswith("Error: list: --since (2026-11-06) is not before --until "
                                     "(2026-11-05): nothing could match"), refused.stderr


def test_ages_in_capitals_and_years_and_milliseconds(los_angeles, daemon) -> None:
    """`--since 3D` and `1y` were refused while `Today` was taken; an epoch in milliseconds
    was "not a time between the years 1 and 9999", not said to be milliseconds."""
    (uid,) = _remember_at(daemon, ("the kiwi release shipped", "2026-11-04T20:00:00"))
    for since in ("3D", "1y", "400d", "1Y"):
        listed = run_cli("list", "genbot", "--since", since)
        assert listed.returncode == 0, listed.stderr
    assert uid in run_cli("list", "genbot", "--since", "1y").stdout
    millis = str(int(_utc("2026-11-01T00:00:00") * 1000))
    refused = run_cli("list", "genbot", "--since", millis)
    assert refused.returncode == 2
    assert f"give seconds: {int(millis) // 1000}" in refused.stderr, refused.stderr
    with Client(daemon.socket, timeout_s=30) as client, pytest.raises(
            Exception, match="epoch milliseconds"):
        client.list_entries(agents=["genbot"], since=float(millis))


def test_an_agents_since_is_read_in_the_agents_time_zone(los_angeles, daemon) -> None:
    """memory_recent's `since` (a date) is the day where the agent runs, which its MCP server
    shares, not the daemon's."""
    early, late = _remember_at(daemon,
                               ("early on the 5th in Kolkata", "2026-11-04T20:00:00"),
                               ("late on the 4th in Kolkata", "2026-11-04T18:00:00"))

    session = mcp_session([("memory_recent", {"since": "2026-11-05"})], agent="genbot",
                          env={"TZ": KOLKATA})

    said = text_of(session["results"][0])
    assert "early on the 5th in Kolkata" in said and "late on the 4th" not in said
