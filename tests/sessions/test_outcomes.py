"""The outcome judge on real transcript lines: what an agent did after a memory was injected."""

from __future__ import annotations

import json

from memoryd.ingest.transcript.actions import read_steps
from memoryd.sessions.outcomes import BROKEN, FOLLOWED, NO_OCCASION, judge
from memoryd.sessions.shell import invocations

UV = {"kind": "lesson", "polarity": "positive", "text": "Use uv, not pip, to manage dependencies"}
SESSION = "5b0c9e4e-1f2a-4c55-9d55-6a3cf1f0a001"


def claude(records: list[dict]) -> list[str]:
    """Claude Code lines: each record gets the fields every record has."""
    lines = []
    for n, record in enumerate(records):
        lines.append(json.dumps({"uuid": f"u{n:04d}-0000-0000-0000-000000000000",
                                 "sessionId": SESSION, "cwd": "/home/ana/shop",
                                 "timestamp": f"2026-06-01T10:{n:02d}:00.000Z", **record}))
    return lines


def user(text: str) -> dict:
    return {"type": "user", "message": {"role": "user", "content": text}}


def bash(command: str, call: str = "toolu_1") -> dict:
    return {"type": "assistant", "message": {"id": f"msg_{call}", "role": "assistant", "content": [
        {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}]}}


def test_pip_install_after_use_uv_is_broken_with_the_call_and_the_correction_as_evidence() -> None:
    steps = read_steps(claude([user("add requests"), bash("pip install requests"),
                               user("no, we use uv here"), bash("uv add requests", "toolu_2")]),
                       "claude-code")
    outcome = judge(UV, steps)
    assert outcome.outcome == BROKEN
    broke, corrected = outcome.evidence[:2]
    assert (broke.signal, broke.call_id, broke.record_id) == ("broke", "toolu_1",
                                                              "u0001-0000-0000-0000-000000000000")
    assert "pip install requests" in broke.what and broke.term == "pip"
    assert corrected.signal == "correction" and corrected.what == "no, we use uv here"
    assert "the user corrected it" in outcome.why


def test_uv_add_follows_and_a_command_only_mentioned_does_not_count() -> None:
    followed = read_steps(claude([user("add requests"), bash("uv add requests")]), "claude-code")
    assert judge(UV, followed).outcome == FOLLOWED
    mentioned = read_steps(claude([
        user("does the README still say pip install?"),
        bash("grep -rn 'pip install' README.md && echo 'never pip install here' >> NOTES"),
        {"type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "text", "text": "Yes: it says `pip install requests`."}]}}]), "claude-code")
    assert judge(UV, mentioned).outcome == NO_OCCASION


def test_a_call_before_the_injection_does_not_count() -> None:
    steps = read_steps(claude([bash("pip install rich"), user("now add typer"),
                               bash("uv add typer", "toolu_2")]), "claude-code")
    injected = steps[1].timestamp
    assert judge(UV, steps).outcome == BROKEN
    assert judge(UV, steps, since=injected).outcome == FOLLOWED


def test_codex_rollout_calls_and_patches_are_read() -> None:
    rows = [
        {"type": "session_meta", "payload": {"id": SESSION, "cwd": "/w"}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "add rich"}},
        {"type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "call_7",
            "arguments": json.dumps({"command": ["bash", "-lc", "python -m pip install rich"]})}},
        {"type": "response_item", "payload": {
            "type": "custom_tool_call", "name": "apply_patch", "call_id": "call_8",
            "input": "*** Begin Patch\n*** Update File: src/gen/models.py\n@@\n-a = 1\n+a = 2\n"
                     "*** End Patch"}},
    ]
    steps = read_steps([json.dumps({"timestamp": "2026-06-01T10:00:00Z", **r}) for r in rows],
                       "codex")
    assert judge(UV, steps).evidence[0].call_id == "call_7"
    generated = {"kind": "lesson", "polarity": "negative",
                 "text": "Don't edit generated files in src/gen/; run `make gen`"}
    outcome = judge(generated, steps)
    assert outcome.outcome == BROKEN and outcome.evidence[0].call_id == "call_8"


def test_a_user_request_overrules_and_a_rejected_call_is_a_correction() -> None:
    force = {"kind": "lesson", "polarity": "negative", "text": "Never force-push to main"}
    asked = read_steps(claude([user("I rewrote main on purpose; force push main now"),
                               bash("git push --force origin main")]), "claude-code")
    outcome = judge(force, asked)
    assert outcome.outcome == NO_OCCASION and outcome.evidence[0].signal == "asked"
    near = read_steps(claude([user("sync"), bash("git push -f"), {
        "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
             "content": "The user doesn't want to proceed with this tool use. The tool use was "
                        "rejected."}]}}]), "claude-code")
    assert judge(force, near).outcome == BROKEN  # a push without the branch, refused
    kept = read_steps(claude([user("push"), bash("git push origin main")]), "claude-code")
    assert judge(force, kept).outcome == FOLLOWED


def test_order_rules_facts_and_memories_without_an_occasion() -> None:
    tests_first = {"kind": "lesson", "polarity": "positive",
                   "text": "Always run the tests before committing"}
    skipped = read_steps(claude([bash("git commit -am fix")]), "claude-code")
    chained = read_steps(claude([bash("pytest -q && git commit -am fix")]), "claude-code")
    assert judge(tests_first, skipped).outcome == BROKEN
    assert judge(tests_first, chained).outcome == FOLLOWED
    pnpm = {"kind": "fact", "key": "tool.package_manager", "text": "pnpm"}
    assert judge(pnpm, read_steps(claude([bash("yarn add zod")]), "claude-code")).outcome == BROKEN
    assert judge(pnpm, read_steps(claude([bash("pnpm i")]), "claude-code")).outcome == FOLLOWED
    vague = {"kind": "lesson", "polarity": "positive", "text": "Be concise in answers"}
    assert judge(vague, chained).outcome == NO_OCCASION


def test_shell_lines_are_read_as_the_programs_they_run() -> None:
    def programs(line: str) -> list[str]:
        return [i.command for i in invocations(line)]

    assert programs("cd api && FOO=1 sudo -u me pip3 install x 2>&1 | tail") == \
        ["cd", "sudo", "pip3", "tail"]
    assert programs("bash -lc 'python -m pytest -x'") == ["python", "pytest"]
    assert programs("cat > README.md <<'EOF'\npip install shop\nEOF\nls") == ["cat", "ls"]
    assert programs("echo \"pip install x\"; grep 'uv add' a.md") == ["echo", "grep"]


def test_the_labelled_set_meets_its_targets_on_the_held_out_half() -> None:
    """bench/eval_outcomes.py exits 1 when a target is missed (held-out: precision ≥ 0.90 for
    followed and for broken, recall ≥ 0.70 for broken): a rule change that trades them away
    shows here."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "eval_outcomes.py"
    result = subprocess.run([sys.executable, str(script), "--half", "heldout"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NOT MET" not in result.stdout
