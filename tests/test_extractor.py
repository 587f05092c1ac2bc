"""Extraction at session end, through the hooks, on a real Claude Code transcript."""

from __future__ import annotations

import json
import time
from pathlib import Path

from memoryd_client import Client

from conftest import run_cli
from test_hooks import hook

SESSION = "7d1e2f3a-4b5c-4d6e-8f70-9a1b2c3d4e5f"

CORRECTIONS = [
    "Let's fix the flaky checkout test.",
    "Don't use mocks in the integration tests, they hide real failures.",
    "We fixed the login bug yesterday, so skip that.",
    "The config lives in src/app/config.py if you need it.",
    "Never force-push to main.",
    "I prefer tabs over spaces in this repo.",
    "Remember that the staging DB is read-only on Fridays.",
    "Remember that we deployed v2 yesterday.",
]


def transcript(path: Path, messages: list[str]) -> None:
    lines = []
    for i, text in enumerate(messages):
        lines.append({"type": "user", "uuid": f"u{i}", "sessionId": SESSION, "cwd": "/tmp",
                      "timestamp": "2026-06-01T09:58:00.000Z", "isSidechain": False,
                      "message": {"role": "user", "content": text}})
        lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": SESSION, "cwd": "/tmp",
                      "timestamp": "2026-06-01T09:58:05.000Z", "isSidechain": False,
                      "message": {"id": f"msg_{i}", "role": "assistant",
                                  "content": [{"type": "text", "text": "Understood."}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def end_session(cwd: Path, path: Path) -> None:
    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(cwd)}
    assert hook("claude-code", "SessionStart", {**payload, "hook_event_name": "SessionStart"}).returncode == 0
    assert hook("claude-code", "SessionEnd", {**payload, "hook_event_name": "SessionEnd", "reason": "other"}).returncode == 0


def lessons(client: Client) -> list[dict]:
    return client.search("tests mocks push tabs staging", agent="claude-code", limit=50,
                         kind=["lesson", "fact"])["hits"]


def test_corrections_become_lessons_and_noise_does_not(daemon, client, tmp_path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS)
    report = run_cli("extract", SESSION, "--dry-run")
    assert report.returncode == 1  # the session is not registered yet
    end_session(tmp_path, path)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not client.session(SESSION)["session"]["extracted"]:
        time.sleep(0.05)
    found = {h["text"]: h for h in lessons(client)}
    texts = " | ".join(found)
    assert "mocks" in texts and "force-push" in texts and "tabs" in texts and "read-only on Fridays" in texts
    assert "login bug" not in texts and "config.py" not in texts and "deployed v2" not in texts
    [never] = [h for h in found.values() if "force-push" in h["text"]]
    assert never["kind"] == "lesson" and never["polarity"] == "negative" and never["confidence"] == 0.8
    assert never["via"] == "extract" and never["session"] == SESSION and never["message_id"] == "u4"
    assert any(h["kind"] == "fact" and h["key"] == "pref.indentation" for h in found.values())
    # the block of the next session carries them
    context = client.context("claude-code")["text"]
    assert "- Never force-push to main. [git]" in context
    # a second run finds everything already known
    dry = run_cli("extract", SESSION, "--dry-run")
    assert dry.returncode == 0
    assert "accepted" not in dry.stdout.replace("rejected", "") and "duplicate" in dry.stdout
    assert "negative-list" in dry.stdout
    # every user message is in the report, the ones nothing came from too (M10)
    assert dry.stdout.count("- message u") == len(CORRECTIONS)
    assert "\"Let's fix the flaky checkout test.\"\n    → nothing to keep" in dry.stdout
    assert "→ nothing to keep" in dry.stdout and "accepted (accepted)" not in dry.stdout


def test_two_user_messages_yield_nothing(daemon, client, tmp_path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS[1:3])
    end_session(tmp_path, path)
    result = client.extract(SESSION, dry_run=True)
    assert result["messages"] == 2 and result["report"] == [] and "at least 3" in result["reason"]
    time.sleep(0.3)
    assert lessons(client) == []


def test_llm_extractor_output_passes_the_same_filters(memoryd_home, embedder, tmp_path, monkeypatch) -> None:
    import sys

    from conftest import start_daemon

    # a stand-in "model runner": a real program that reads the prompt and prints JSON
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import json, sys\n"
        "prompt = sys.stdin.read()\n"
        "assert 'message_id=u1' in prompt\n"
        "print('```json')\n"
        "print(json.dumps({'entries': [\n"
        "  {'kind': 'lesson', 'text': 'Integration tests run against a real database', 'polarity': 'positive', 'message_id': 'u1'},\n"
        "  {'kind': 'lesson', 'text': 'We fixed the login bug', 'polarity': 'positive', 'message_id': 'u2'},\n"
        "  {'kind': 'nonsense'}]}))\n"
        "print('```')\n")
    monkeypatch.setenv("MEMORYD_EXTRACT_COMMAND", f"{sys.executable} {runner}")
    monkeypatch.setenv("MEMORYD_EXTRACT_DAILY_CALLS", "1")
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            end_session(tmp_path, path)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not client.session(SESSION)["session"]["extracted"]:
                time.sleep(0.05)
            entries = {e["text"]: e for e in client.session(SESSION)["entries"]}
            assert "Integration tests run against a real database" in " ".join(entries)
            assert not any("login bug" in text for text in entries)
            # the daily budget (1 call) is used: a dry run now reports only the rule-based part
            report = client.extract(SESSION, dry_run=True)["report"]
            assert not any(e["rule"] == "llm" for m in report for e in m["entries"])
    finally:
        running.stop()
