"""The newcomer report's first-day defects (reports/newcomer-2026-11-23.md), each re-run as the
report wrote it, against the real daemon: H2, M1, M8, M9, M12, L10, L12 (M2: test_file_entries,
M5 and M15: test_mcp, M7: test_source_removal)."""

from __future__ import annotations

import json
import logging

import pytest
from memoryd_client import BadParamsError, Client

from memoryd.config import load_config
from memoryd.errors import ConfigError
from tests.conftest import run_cli, start_daemon


def test_sessions_with_nothing_to_list_is_an_empty_answer_not_a_crash(client: Client) -> None:
    """H2: `memory sessions` on a fresh daemon, and a filter that matches nothing."""
    fresh = run_cli("sessions")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == "no sessions"
    assert json.loads(run_cli("sessions", "--json").stdout) == {"sessions": [], "total": 0}
    client.call("hook", {"harness": "claude-code", "event": "SessionStart",
                         "payload": {"session_id": "s-1", "cwd": "/tmp"}})
    assert [s["id"] for s in client.sessions()["sessions"]] == ["s-1"]
    nobody = run_cli("sessions", "--agent", "nobody")
    assert nobody.returncode == 0, nobody.stderr
    assert nobody.stdout.strip() == "no sessions"


def test_supersede_of_a_superseded_entry_is_refused_naming_the_current_head(daemon) -> None:
    """M1: a second supersede of the same old version would fork the chain."""
    first = run_cli("store", "coder", "tools", "We lint with ruff, not flake8").stdout.split()[-1]
    second = run_cli("supersede", first, "We lint and format with ruff, not flake8/black")
    assert second.returncode == 0, second.stderr
    head = second.stdout.split()[1].rstrip(",")
    again = run_cli("supersede", first, "again")
    assert again.returncode == 2
    assert f"already superseded by {head}" in again.stderr
    assert f"its current version is {head} (active)" in again.stderr
    assert json.loads(run_cli("get", head, "--json").stdout)["status"] == "active"
    history = json.loads(run_cli("history", first, "--json").stdout)
    assert [(e["id"], e["status"]) for e in history["entries"]] == [
        (first, "superseded"), (head, "active")]
    third = run_cli("supersede", head, "We lint and format with ruff")
    assert third.returncode == 0, third.stderr
    newest = third.stdout.split()[1].rstrip(",")
    assert f"its current version is {newest} (active)" in run_cli("supersede", first, "x").stderr
    run_cli("forget", newest)
    forgotten = run_cli("supersede", newest, "y")
    assert forgotten.returncode == 2 and "is forgotten" in forgotten.stderr


def test_ids_made_in_the_same_second_differ_in_their_first_characters(client: Client) -> None:
    """M9: ids no longer start with the time, so a 6-character prefix finds one entry."""
    results = client.remember_many([
        {"agent": "coder", "category": "tools", "text": f"Tool number {i} is called tool{i}x", "force": True}
        for i in range(40)])["results"]
    ids = [r["id"] for r in results]
    assert len({i[:6] for i in ids}) == 40
    assert len({i[:3] for i in ids}) > 20  # random from the first character
    for entry_id in ids[:5]:
        got = run_cli("get", entry_id[:6], "--json")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["id"] == entry_id
    assert client.get(ids[7])["id"] == ids[7]  # the whole id still works


def test_polarity_is_for_lessons_and_a_lesson_without_one_is_shown_as_written(
        client: Client) -> None:
    """L12: --polarity on a note is refused, not ignored; without --kind it makes a lesson;
    a lesson without polarity is not turned into a 'Do:'."""
    note = run_cli("store", "coder", "git", "Force-pushing rewrites history", "--kind", "note",
                   "--polarity", "negative")
    assert note.returncode == 2
    assert "polarity is for lessons (kind lesson); got kind 'note'" in note.stderr
    with pytest.raises(BadParamsError):
        client.remember("coder", "git", "Force-pushing rewrites history", kind="fact",
                        polarity="negative")
    lesson = json.loads(run_cli("store", "coder", "git", "Force-push to main", "--polarity",
                                "negative", "--json").stdout)["entry"]
    assert (lesson["kind"], lesson["polarity"]) == ("lesson", "negative")
    client.remember("coder", "style", "Tabs in Makefiles are required by make", kind="lesson")
    text = client.call("context", {"agent": "coder"})["text"]
    assert "- Don't: “Force-push to main” [git]" in text  # from a script: an agent's words
    assert "- “Tabs in Makefiles are required by make” [style]" in text


def test_subagent_namespaces_roll_up_under_their_harness_agent(client: Client) -> None:
    """L10: claude-code.<agentId> namespaces (one per subagent run) are searched with
    claude-code and listed under it, so the agent list stays as long as the harnesses."""
    client.remember("claude-code", "billing", "Refunds go through payments/refunds.py")
    client.remember("designer", "billing", "Refund banners are red")
    assert [h["agent"] for h in client.search("refunds", agent="claude-code")["hits"]] == [
        "claude-code"]  # the known agents are read here; later writes keep them current
    for agent_id in ("a1b2c3d4", "e5f6a7b8", "c9d0e1f2"):
        client.remember(f"claude-code.{agent_id}", "session",
                        f"Subagent {agent_id} found the refund retry loop in client.py")
    hits = client.search("refund retry loop", agent="claude-code", limit=10)["hits"]
    assert {h["agent"] for h in hits} == {"claude-code", "claude-code.a1b2c3d4",
                                          "claude-code.e5f6a7b8", "claude-code.c9d0e1f2"}
    one = client.search("refund retry loop", agent="claude-code.a1b2c3d4", limit=10)["hits"]
    assert {h["agent"] for h in one} == {"claude-code.a1b2c3d4"}
    assert "designer" not in {h["agent"] for h in hits}
    status = client.status()
    assert status["agents"] == ["claude-code", "designer"]
    assert status["subagents"] == {"claude-code": 3}
    assert "agents: claude-code, designer" in run_cli("status").stdout


def test_not_running_says_which_setting_chose_the_socket(memoryd_home, monkeypatch,
                                                         tmp_path) -> None:
    """M8: a daemon on another MEMORYD_HOME looks 'not running'; the message says why."""
    relocated = run_cli("status")
    assert relocated.returncode == 3
    assert f"MEMORYD_HOME={memoryd_home} of this shell" in relocated.stderr
    monkeypatch.delenv("MEMORYD_HOME")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    default = run_cli("status")
    assert default.returncode == 3
    assert "neither MEMORYD_HOME nor MEMORYD_SOCKET is set in this shell" in default.stderr


@pytest.mark.parametrize(("setting", "message"), [
    ("match_cosine = 2.5", "match_cosine"),  # the report's setting: gone, and named as unknown
    ("match_precision = 2.5", "search.match_precision must be between 0.5 and 0.99; got 2.5"),
    ("match_precision = -3", "search.match_precision must be between 0.5 and 0.99; got -3"),
])
def test_reload_refuses_nonsense_values_and_keeps_running(client: Client, memoryd_home,
                                                         setting: str, message: str) -> None:
    """M12: a cosine of 2.5 (or its successor, a precision of 2.5) is refused."""
    (memoryd_home / "config.toml").write_text(f"[search]\n{setting}\n")
    refused = run_cli("reload")
    assert refused.returncode == 2
    assert message in refused.stderr
    assert f"{memoryd_home / 'config.toml'}: " in refused.stderr  # the file at fault (F-10)
    assert client.search("anything", agent="coder")["threshold"] > 0  # the old settings serve


def test_a_value_out_of_range_names_the_variable_it_came_from(monkeypatch) -> None:
    """F-10 (2026-11-30): configuration.md says a bad value is refused "with the file and
    the setting at fault"; a range error named neither file nor variable. And F-7: a number
    that is none said "is not a int"."""
    monkeypatch.setenv("MEMORYD_SEARCH_MATCH_PRECISION", "2.5")
    with pytest.raises(ConfigError) as refused:
        load_config()
    assert str(refused.value) == ("MEMORYD_SEARCH_MATCH_PRECISION='2.5': search.match_precision "
                                  "must be between 0.5 and 0.99; got 2.5")
    monkeypatch.delenv("MEMORYD_SEARCH_MATCH_PRECISION")
    monkeypatch.setenv("MEMORYD_EMBED_THREADS", "abc")
    with pytest.raises(ConfigError, match="MEMORYD_EMBED_THREADS='abc' is not an integer$"):
        load_config()
    monkeypatch.setenv("MEMORYD_EMBED_THREADS", "2")
    monkeypatch.setenv("MEMORYD_SEARCH_MATCH_PRECISION", "high")
    with pytest.raises(ConfigError, match="MEMORYD_SEARCH_MATCH_PRECISION='high' is not a "
                       "number$"):
        load_config()


def test_an_unknown_memoryd_variable_is_named_where_the_user_looks(
        embedder, memoryd_home, monkeypatch, caplog) -> None:
    """F-7 (2026-11-30): MEMORYD_SERCH_LIMIT=3 and MEMORYD_SEARCH_LIMT=3 started memoryd
    without a word (the same typos in config.toml are refused). They still start it (other
    tools may set MEMORYD_* variables), and the log, `memory status` and `memory doctor` name
    them, with the setting meant."""
    monkeypatch.setenv("MEMORYD_SERCH_LIMIT", "3")
    monkeypatch.setenv("MEMORYD_SEARCH_LIMT", "3")
    monkeypatch.setenv("MEMORYD_LOG_LEVEL", "info")  # one memoryd reads: not named
    with caplog.at_level(logging.WARNING):
        running = start_daemon(embedder)
    try:
        meant = ("MEMORYD_SEARCH_LIMT is not a memoryd setting, so it is ignored (did you mean "
                 "MEMORYD_SEARCH_LIMIT?)")
        assert meant + "." in caplog.messages
        assert any(m.startswith("MEMORYD_SERCH_LIMIT is not a memoryd setting")
                   for m in caplog.messages)
        assert not any("MEMORYD_LOG_LEVEL" in m or "MEMORYD_HOME" in m for m in caplog.messages)
        status = run_cli("status")
        assert status.returncode == 0 and "warning: environment: MEMORYD_SEARCH_LIMT" in \
            status.stdout, status.stdout
        report = json.loads(run_cli("doctor", "--json").stdout)
        [found] = [c for c in report["checks"] if c["check"] == "environment"]
        assert found["status"] == "warning" and meant in found["detail"]
    finally:
        running.stop()


def test_reload_refuses_an_agent_to_share_that_no_agent_can_be_named(
        client: Client, memoryd_home) -> None:
    """`shared_agents = ["claude code"]` was taken: it shared nothing, and nothing said so."""
    (memoryd_home / "config.toml").write_text('[context]\nshared_agents = ["claude code"]\n')
    refused = run_cli("reload")
    assert refused.returncode == 2
    assert "context.shared_agents: 'claude code' is not a valid agent name" in refused.stderr
    (memoryd_home / "config.toml").write_text("")  # the shared daemon's settings as they were
    assert run_cli("reload").returncode == 0
