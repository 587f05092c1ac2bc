"""The PreToolUse hook (issue 37, §3 "at the decision point"): a stored "don't"/"instead" lesson
in front of the agent when the tool call it is about to make goes against it. Real
transcripts, the real daemon and the real hook process. (What a lesson forbids and what a call
does are the outcome judge's: tests/sessions/test_outcomes.py tests them as functions.)"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client, wire

from memoryd.sessions.guard_cache import TERMS_FILE, load_terms
from tests.conftest import run_cli, run_hook, start_daemon

SESSION = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"


def git_repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def cc(kind: str, uuid: str, cwd: Path, **extra: Any) -> dict[str, Any]:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": str(cwd),
            "sessionId": SESSION, "version": "2.1.201", "gitBranch": "main", "type": kind,
            "uuid": uuid, "timestamp": "2026-11-28T09:58:00.000Z", **extra}


def tool_use(uuid: str, cwd: Path, number: int, name: str, tool_input: dict[str, Any]) -> dict:
    return cc("assistant", uuid, cwd, requestId=f"req_{number}", message={
        "model": "claude-opus-4-5", "id": f"msg_{number}", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": f"toolu_{number:02d}", "name": name,
                     "input": tool_input}], "stop_reason": "tool_use"})


def write_transcript(home: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> Path:
    """A Claude Code transcript where the user asks and the agent makes ``calls``, where
    Claude Code keeps it (~/.claude/projects/<encoded cwd>/<session>.jsonl)."""
    folder = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(cwd))
    folder.mkdir(parents=True)
    path = folder / f"{SESSION}.jsonl"
    records = [cc("user", "u1", cwd, message={"role": "user", "content":
                                              "add requests to the client and list the files"},
                  origin={"kind": "human"})]
    for number, (name, tool_input) in enumerate(calls, 1):
        records.append(tool_use(f"a{number}", cwd, number, name, tool_input))
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def pending_calls(transcript: Path) -> list[dict[str, Any]]:
    """The PreToolUse payloads Claude Code sends for the transcript's tool calls."""
    payloads = []
    for line in transcript.read_text().splitlines():
        record = json.loads(line)
        for block in record.get("message", {}).get("content", []):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                payloads.append({
                    "session_id": record["sessionId"], "transcript_path": str(transcript),
                    "cwd": record["cwd"], "permission_mode": "default",
                    "hook_event_name": "PreToolUse", "tool_name": block["name"],
                    "tool_input": block["input"], "tool_use_id": block["id"]})
    return payloads


def added_context(result: subprocess.CompletedProcess[str]) -> str | None:
    """The context the hook adds next to the call (None: it printed nothing)."""
    assert result.returncode == 0, result.stderr
    if not result.stdout:
        return None
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert output.get("permissionDecision") in (None, "deny")  # never "allow"
    return output["additionalContext"]


def test_a_bash_call_that_goes_against_a_lesson_gets_the_lesson_and_others_nothing(
        daemon, client, tmp_path) -> None:
    home = Path(os.environ["HOME"])
    repo = git_repository(tmp_path / "shop")
    client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson",
                    polarity="positive", cwd=str(repo))
    client.remember("claude-code", "style", "Commit messages use the imperative mood",
                    kind="lesson", cwd=str(repo))
    transcript = write_transcript(home, repo, [
        ("Bash", {"command": "pip install requests", "description": "Install requests"}),
        ("Bash", {"command": "uv add requests", "description": "Add requests"}),
        ("Bash", {"command": "ls", "description": "List files"}),
        ("Bash", {"command": "cd client && pip3 install -e .", "description": "Install"}),
        ("Bash", {"command": "echo 'pip install is not how we do it'"}),
        ("Read", {"file_path": str(repo / "requirements.txt")}),
    ])
    start = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(repo),
             "hook_event_name": "SessionStart", "source": "startup"}
    assert run_hook("claude-code", "SessionStart", start).returncode == 0
    pip, uv, ls, cd_pip, echo, read = pending_calls(transcript)

    context = added_context(run_hook("claude-code", "PreToolUse", pip))
    assert context is not None and context.startswith(wire.INJECTION_MARKER + "\n")
    assert "this Bash call goes against (it runs `pip`)" in context
    assert "- “Use uv, not pip” [tooling] (this project)" in context
    assert "imperative" not in context  # a lesson that forbids nothing of the call stays out
    assert added_context(run_hook("claude-code", "PreToolUse", uv)) is None
    assert added_context(run_hook("claude-code", "PreToolUse", ls)) is None
    assert "Use uv, not pip" in (added_context(run_hook("claude-code", "PreToolUse", cd_pip)) or "")
    assert added_context(run_hook("claude-code", "PreToolUse", echo)) is None  # an argument
    assert added_context(run_hook("claude-code", "PreToolUse", read)) is None

    # what was put next to the call is in the session's injections, in words
    shown = run_cli("explain", SESSION)
    assert shown.returncode == 0, shown.stderr
    assert "PreToolUse for claude-code" in shown.stdout
    assert "        - “Use uv, not pip” [tooling]" in shown.stdout.splitlines()
    assert "why: a lesson of this project that the tool call about to be made went against " \
        "(it forbids `pip`)" in shown.stdout


def test_the_lessons_in_scope_follow_the_project_and_every_change(daemon, client,
                                                                  tmp_path) -> None:
    """A lesson of another project stays out; one stored, forgotten or moved to the global
    tier counts from the next call on (the daemon's cache follows the lessons)."""
    shop, blog = git_repository(tmp_path / "shop"), git_repository(tmp_path / "blog")
    call = {"session_id": SESSION, "transcript_path": "/nonexistent.jsonl", "cwd": str(blog),
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "npm install left-pad"}, "tool_use_id": "toolu_01"}
    lesson = client.remember("claude-code", "tooling", "We use pnpm, not npm", kind="lesson",
                             cwd=str(shop))["entry"]
    assert added_context(run_hook("claude-code", "PreToolUse", call)) is None  # shop's, not blog's
    in_shop = added_context(run_hook("claude-code", "PreToolUse", {**call, "cwd": str(shop / "web")}))
    assert in_shop is not None and "We use pnpm, not npm" in in_shop  # a subdirectory of shop

    moved = run_cli("scope", lesson["id"], "global")
    assert moved.returncode == 0, moved.stderr
    everywhere = added_context(run_hook("claude-code", "PreToolUse", call))
    assert everywhere is not None and "“We use pnpm, not npm” [tooling] (global)" in everywhere
    # Codex is one of the shared agents: Claude Code's global lesson reaches it too
    assert "We use pnpm, not npm" in (added_context(run_hook("codex", "PreToolUse", call)) or "")

    later = client.remember("claude-code", "tooling", "Never run npm install in CI",
                            kind="lesson", polarity="negative")["entry"]
    both = added_context(run_hook("claude-code", "PreToolUse", call)) or ""
    assert "2 lessons" in both and "Never run npm install in CI" in both
    client.forget(lesson["id"], agent="claude-code")
    client.forget(later["id"], agent="claude-code")
    assert added_context(run_hook("claude-code", "PreToolUse", call)) is None


def test_an_edit_of_a_path_a_lesson_forbids(daemon, client, tmp_path) -> None:
    repo = git_repository(tmp_path / "shop")
    client.remember("claude-code", "db", "Never edit files under migrations/ by hand; "
                    "generate them with `alembic revision`", kind="lesson", cwd=str(repo))
    call = {"session_id": SESSION, "transcript_path": "/nonexistent.jsonl", "cwd": str(repo),
            "hook_event_name": "PreToolUse", "tool_use_id": "toolu_01"}
    edit = {**call, "tool_name": "Edit", "tool_input": {
        "file_path": str(repo / "app" / "migrations" / "0007_add_refunds.py"),
        "old_string": "a", "new_string": "b"}}
    context = added_context(run_hook("claude-code", "PreToolUse", edit))
    assert context is not None and "this Edit call goes against (it writes `migrations/`)" \
        in context and "Never edit files under migrations/ by hand" in context
    write = {**call, "tool_name": "Write", "tool_input": {
        "file_path": str(repo / "app" / "models.py"), "content": "x = 1\n"}}
    assert added_context(run_hook("claude-code", "PreToolUse", write)) is None
    alembic = {**call, "tool_name": "Bash", "tool_input": {"command": "alembic revision -m x"}}
    assert added_context(run_hook("claude-code", "PreToolUse", alembic)) is None  # prescribed
    patch = {**call, "tool_name": "apply_patch", "tool_input": {"command": (
        "*** Begin Patch\n*** Update File: app/migrations/0007_add_refunds.py\n@@\n-a\n+b\n"
        "*** End Patch\n")}}
    assert "migrations/" in (added_context(run_hook("codex", "PreToolUse", patch)) or "")


def test_a_hard_rule_denies_only_when_the_user_opted_in_and_only_a_persons(
        memoryd_home, embedder, monkeypatch, tmp_path) -> None:
    call = {"session_id": SESSION, "transcript_path": "/nonexistent.jsonl", "cwd": str(tmp_path),
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_01"}
    force = {**call, "tool_input": {"command": "git push --force origin main"}}
    sudo = {**call, "tool_input": {"command": "sudo rm -rf /var/cache/shop"}}

    def run_with(hard_rules: bool) -> tuple[dict, dict]:
        monkeypatch.setenv("MEMORYD_CONTEXT_HARD_RULES", "1" if hard_rules else "0")
        running = start_daemon(embedder)
        try:
            outputs = [json.loads(run_hook("claude-code", "PreToolUse", p).stdout)
                       ["hookSpecificOutput"] for p in (force, sudo)]
        finally:
            running.stop()
        return outputs[0], outputs[1]

    with_daemon = start_daemon(embedder)
    try:
        with Client(with_daemon.socket, channel="terminal") as person:  # typed by the user
            person.remember("claude-code", "git", "Never run `git push --force` on main",
                            kind="lesson", tags=["hard-rule"])
        with Client(with_daemon.socket) as agent:  # an agent's own tag denies nothing
            agent.remember("claude-code", "ops", "Don't use sudo", kind="lesson",
                           tags=["hard-rule"])
    finally:
        with_daemon.stop()

    force_off, sudo_off = run_with(hard_rules=False)
    assert "permissionDecision" not in force_off and "Never run" in force_off["additionalContext"]
    assert "permissionDecision" not in sudo_off
    force_on, sudo_on = run_with(hard_rules=True)
    assert force_on["permissionDecision"] == "deny"
    assert "against a hard rule the user set (tagged hard-rule): Never run `git push --force` " \
        "on main" in force_on["permissionDecisionReason"]
    assert "permissionDecision" not in sudo_on and "Don't use sudo" in \
        sudo_on["additionalContext"]


def test_a_hard_rule_denies_what_it_names_not_every_call_of_its_program(
        memoryd_home, embedder, monkeypatch, tmp_path) -> None:
    call = {"session_id": SESSION, "transcript_path": "/nonexistent.jsonl", "cwd": str(tmp_path),
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_01"}
    monkeypatch.setenv("MEMORYD_CONTEXT_HARD_RULES", "1")
    running = start_daemon(embedder)
    try:
        with Client(running.socket, channel="terminal") as person:
            for rule in ("Never run kubectl delete namespace prod", "Never run chmod 777 on /etc",
                         "Never run rm -rf /"):
                person.remember("claude-code", "ops", rule, kind="lesson", polarity="negative",
                                tags=["hard-rule"])

        def denied(command: str) -> str | None:
            result = run_hook("claude-code", "PreToolUse", {**call, "tool_input": {"command": command}})
            assert result.returncode == 0, result.stderr
            if not result.stdout:
                return None
            output = json.loads(result.stdout)["hookSpecificOutput"]
            return output.get("permissionDecisionReason")

        for everyday in ("kubectl delete pod web-1", "kubectl delete namespace staging",
                         "chmod 777 ./build/out.sh", "chmod 644 /etc/hosts", "rm -rf node_modules",
                         "rm -rf build"):
            assert denied(everyday) is None, everyday
        assert "Never run kubectl delete namespace prod" in (
            denied("kubectl delete namespace prod --wait=false") or "")
        assert "Never run chmod 777 on /etc" in (denied("sudo chmod -R 777 /etc/ssl") or "")
        assert "Never run rm -rf /" in (denied("rm -rf /") or "")
    finally:
        running.stop()


@pytest.mark.parametrize("stdin, shown", [
    ("not json", False), ("[1]", False), ("{}", False),
    (json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash"}), False),
    (json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "pip"}),
     False),
    (json.dumps({"hook_event_name": "PreToolUse", "tool_name": 7,
                 "tool_input": {"command": "pip install x"}}), False),
    # odd but readable: an argv with a number, a NUL in cwd, an unbalanced quote
    (json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                 "tool_input": {"command": ["pip", "install", 3]}}), True),
    (json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "rel\x00dir",
                 "tool_input": {"command": "pip install 'unbalanced"}}), True),
])
def test_bad_payloads_exit_0(daemon, client, stdin, shown) -> None:
    client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson")
    result = run_hook("claude-code", "PreToolUse", stdin)
    assert result.returncode == 0
    if shown:
        assert "Use uv, not pip" in (added_context(result) or "")
    else:
        assert result.stdout == ""


def test_a_call_carrying_a_pasted_blob_is_read_in_time_and_holds_up_no_one(daemon,
                                                                          client) -> None:
    """An agent pastes a blob into a command (``echo '<base64>' | base64 -d``, a long
    ``python -c``): the call is read as quickly as any other (a long word is read as its
    beginning), so its lesson is still shown within the hook's deadline, and the daemon's
    other clients are not held up while it is read."""
    client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson")
    blob = "QUJD" * 60_000  # 240 kB, no space: one word (split by shlex, 3 s at least)
    for command in (f"pip install requests && echo {blob} | base64 -d > /tmp/x",
                    f"echo '{blob}' | base64 -d > /tmp/x; pip install requests",
                    f'python -c "{"print(1); " * 24_000}" && pip install requests'):
        call = {"session_id": SESSION, "cwd": "/tmp", "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": command}}
        context = added_context(run_hook("claude-code", "PreToolUse", call))
        assert "Use uv, not pip" in (context or ""), command[:40]
        assert client.status()["entries"].get("active", 0) >= 1  # answered at once after it


def test_with_the_daemon_down_the_call_goes_ahead_at_once_and_nothing_is_spooled(
        memoryd_home, tmp_path) -> None:
    call = {"session_id": SESSION, "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "pip install requests"}}
    started = time.monotonic()
    result = run_hook("claude-code", "PreToolUse", call)
    assert time.monotonic() - started < 5  # generously; bench/bench_hooks.py measures it
    assert (result.returncode, result.stdout) == (0, "")
    assert "daemon unreachable" in result.stderr
    assert not (memoryd_home / "spool.msgpack").exists()  # of no use after the call


def test_install_registers_pre_tool_use_for_the_tools_it_reads(memoryd_home) -> None:
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    assert run_cli("hook", "install", "claude-code").returncode == 0
    [group] = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert group["matcher"] == "Bash|Edit|Write|MultiEdit|NotebookEdit"
    [handler] = group["hooks"]
    assert handler["command"].endswith("hook claude-code PreToolUse")
    assert run_cli("hook", "uninstall", "claude-code").returncode == 0
    assert not settings.exists()


def test_the_lessons_are_read_again_after_most_of_them_were_deleted(
        keyword_daemon, tmp_path, monkeypatch) -> None:
    """The guard keeps each lesson text's terms between reads, and drops those of texts no
    lesson has any more when they outnumber the lessons: after 1,200 lessons were purged, the
    next full read (every 5 minutes; here at once) still brings in a new lesson. (The guard
    reads no vector: the daemon embeds nothing.)"""
    monkeypatch.setattr("memoryd.sessions.tool_guard.REREAD_S", 0.0)
    with Client(keyword_daemon.socket, timeout_s=30) as client:
        home = Path(os.environ["HOME"])
        repo = git_repository(tmp_path / "shop")
        for first in (0, 600):
            client.remember_many([{"agent": "old-bot", "category": "ci", "kind": "lesson",
                                   "text": f"Never run the tool number {i} on build farm {i * 7}"}
                                  for i in range(first, first + 600)])
        transcript = write_transcript(home, repo, [
            ("Bash", {"command": "pip install requests", "description": "Install requests"})])
        [pip] = pending_calls(transcript)
        assert added_context(run_hook("claude-code", "PreToolUse", pip)) is None  # all 1,200 read
        purged = client.purge("old-bot", match="build farm", confirm=True)
        assert len(purged["entries"]) == 1200
        client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson",
                        polarity="positive", cwd=str(repo))
        context = added_context(run_hook("claude-code", "PreToolUse", pip))
        assert context is not None and "Use uv, not pip" in context


def test_the_lessons_terms_are_kept_for_the_next_start(
        memoryd_home, embedder, tmp_path, monkeypatch) -> None:
    """The guard keeps what it read of every lesson in the state directory (at 100k entries,
    reading 47k lessons again took 11 s of CPU at every start); a daemon started again uses
    it, and one started on a damaged file reads the lessons again: the calls are guarded
    alike."""
    monkeypatch.setattr("memoryd.sessions.tool_guard.REREAD_S", 0.0)  # every read a full one
    home = Path(os.environ["HOME"])
    repo = git_repository(tmp_path / "shop")
    [pip] = pending_calls(write_transcript(home, repo, [
        ("Bash", {"command": "pip install requests", "description": "Install requests"})]))
    kept = memoryd_home / TERMS_FILE
    for damaged in (None, False, True):
        running = start_daemon(embedder)
        try:
            with Client(running.socket, timeout_s=30) as client:
                if damaged is None:
                    client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson",
                                    polarity="positive", cwd=str(repo))
                context = added_context(run_hook("claude-code", "PreToolUse", pip))
                assert context is not None and "Use uv, not pip" in context
        finally:
            running.stop()
        assert not running.errors, running.errors
        terms = load_terms(kept)
        assert any(term.said == "pip" for found in terms.values() for term in found), terms
        if damaged is False:
            kept.write_bytes(kept.read_bytes()[:40])  # the next start finds it cut short
