"""The newcomer report's first-day defects (reports/newcomer-2026-11-23.md), each re-run as the
report wrote it, against the real daemon: H2, M1, M7, M9, L12."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from memoryd_client import BadParamsError, Client


def test_sessions_with_nothing_to_list_is_an_empty_answer_not_a_crash(client: Client) -> None:
    """H2: `memory sessions` on a fresh daemon, and a filter that matches nothing."""
    fresh = run_cli("sessions")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == "no sessions"
    assert json.loads(run_cli("sessions", "--json").stdout) == {"sessions": []}
    client.call("hook", {"harness": "claude-code", "event": "SessionStart",
                         "payload": {"session_id": "s-1", "cwd": "/tmp"}})
    assert [s["id"] for s in client.sessions()["sessions"]] == ["s-1"]
    nobody = run_cli("sessions", "--agent", "nobody")
    assert nobody.returncode == 0, nobody.stderr
    assert nobody.stdout.strip() == "no sessions"
