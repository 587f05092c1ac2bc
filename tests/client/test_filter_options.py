"""The options of `memory search`, `list`, `recent` and `export` as a user types them, and what
they say back: times, --here and --project, empty lists, --min-score with --all, and the
messages of a mistake (a tester's findings, 2026-12-01)."""

from __future__ import annotations

import time

from memoryd_client import Client

from tests.conftest import RunningDaemon, run_cli


def _remember(daemon: RunningDaemon, *texts: str, **extra: object) -> list[str]:
    with Client(daemon.socket, timeout_s=30) as client:
        return [client.remember("coder", "notes", text, **extra)["entry"]["id"]
                for text in texts]


def test_a_time_in_epoch_seconds_is_taken_from_the_command_line(keyword_daemon) -> None:
    """`--since 1796000000` was "not a time (epoch seconds, …)": the command line sends text,
    and only a JSON number was read as epoch seconds."""
    (uid,) = _remember(keyword_daemon, "the refund service restarts nightly")
    now = int(time.time())
    for command in (("list",), ("recent",), ("export",)):
        before = run_cli(*command, "--since", str(now - 3600))
        assert before.returncode == 0, before.stderr
        assert uid in before.stdout
        after = run_cli(*command, "--since", str(now + 3600))
        assert after.returncode == 0, after.stderr
        assert uid not in after.stdout
        assert uid in run_cli(*command, "--since", "0", "--until", str(now + 60)).stdout
    searched = run_cli("search", "*", "-", "refund", "--since", "0", "--all")
    assert searched.returncode == 0, searched.stderr
    assert uid in searched.stdout
    # eight digits are still a date, as ISO writes one without its dashes
    assert uid not in run_cli("list", "--until", "20000101").stdout
