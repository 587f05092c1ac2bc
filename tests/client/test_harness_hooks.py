"""Hooks for Gemini CLI and Cursor (issue 38 §1): real hook processes fed each agent's own payloads
(the shapes of Gemini CLI's docs/hooks/reference.md and packages/core/src/hooks/types.ts, of
Cursor's hooks documentation: docs/harnesses.md), against a real daemon, checking the output the
agent reads; install and uninstall on the agents' settings files; failing open."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client, hook_tables, install, wire

from memoryd.ingest.transcript import make_parser
from tests.conftest import run_cli, run_hook, start_daemon, wait_until

SESSION = "4f1c9a2e-77b0-4d55-9d3e-0c6b1a2f8e99"
CONVERSATION = "c0ffee00-1111-4222-8333-444455556666"


def output(result: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
    """What the agent reads: the JSON on stdout (None: nothing), which is all stdout holds."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout else None


def git_repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


# -- Gemini CLI ----------------------------------------------------------------------------------

def gemini(event: str, cwd: Path, transcript: Path | None = None, **fields: Any) -> dict:
    """A Gemini CLI hook input: the base fields every event gets, and the event's own."""
    return {"session_id": SESSION, "transcript_path": str(transcript or "/nonexistent.jsonl"),
            "cwd": str(cwd), "hook_event_name": event, "timestamp": "2026-11-29T10:00:00.000Z",
            **fields}


def gemini_chat(home: Path, repo: Path, block: str) -> Path:
    """A Gemini CLI chat as it records one (~/.gemini/tmp/<project>/chats/session-….jsonl):
    four prompts, two with the user's preferences, the second with the context memoryd's
    BeforeAgent hook added, as Gemini appends it to the prompt (its < and > escaped)."""
    chats = home / ".gemini" / "tmp" / "shop" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(str(repo))
    escaped = block.replace("<", "&lt;").replace(">", "&gt;")
    records = [
        {"sessionId": SESSION, "projectHash": "shop", "startTime": "2026-11-29T10:00:00.000Z",
         "lastUpdated": "2026-11-29T10:00:00.000Z"},
        {"id": "m1", "timestamp": "2026-11-29T10:00:05.000Z", "type": "user",
         "content": [{"text": "We use pnpm, not npm, in this repository."}]},
        {"id": "m2", "timestamp": "2026-11-29T10:00:09.000Z", "type": "gemini",
         "content": "Noted.", "model": "gemini-2.5-pro"},
        {"id": "m3", "timestamp": "2026-11-29T10:01:00.000Z", "type": "user",
         "content": [{"text": "Why does checkout double-charge on retry?"},
                     {"text": f"<hook_context>{escaped}</hook_context>"}]},
        {"id": "m4", "timestamp": "2026-11-29T10:01:30.000Z", "type": "gemini",
         "content": "The retry does not reuse the idempotency key.", "model": "gemini-2.5-pro"},
        {"id": "m5", "timestamp": "2026-11-29T10:02:00.000Z", "type": "user",
         "content": "Always run the tests before you commit."},
        {"id": "m6", "timestamp": "2026-11-29T10:03:00.000Z", "type": "user",
         "content": "Thanks, that fixed it."},
    ]
    path = chats / f"session-2026-11-29T10-00-{SESSION[:8]}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_gemini_session_gets_the_block_the_prompts_matches_and_its_end_extracts(
        daemon, client, tmp_path) -> None:
    home = Path(os.environ["HOME"])
    repo = git_repository(tmp_path / "shop")
    client.remember("gemini", "git", "Never force-push to main", kind="lesson",
                    polarity="negative", cwd=str(repo))
    # Claude Code's lesson of this project reaches Gemini CLI: the harnesses share
    client.remember("claude-code", "payments", "Checkout retries must reuse the idempotency key",
                    kind="lesson", cwd=str(repo))
    block = client.context("gemini", cwd=str(repo))["text"]
    chat = gemini_chat(home, repo, block)

    started = output(run_hook("gemini", "SessionStart", gemini("SessionStart", repo, chat,
                                                            source="startup")))
    assert started is not None and set(started) == {"hookSpecificOutput"}
    assert started["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = started["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(wire.INJECTION_MARKER)
    assert "Never force-push to main" in context and "idempotency key" in context
    session = client.session(SESSION)["session"]
    assert (session["harness"], session["agent"], session["cwd"], session["transcript_path"]) \
        == ("gemini", "gemini", str(repo), str(chat))

    # BeforeAgent is UserPromptSubmit, answered under its own name; context an earlier hook
    # wrapped into the prompt is not searched for
    asked = output(run_hook("gemini", "BeforeAgent", gemini(
        "BeforeAgent", repo, chat, prompt="<hook_context>what is the capital of Mongolia"
        "</hook_context>\n\nwhy does checkout double-charge on retry? idempotency key")))
    assert asked is not None and asked["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "idempotency key" in asked["hookSpecificOutput"]["additionalContext"]
    assert output(run_hook("gemini", "BeforeAgent", gemini(
        "BeforeAgent", repo, chat, prompt="what is the capital of Mongolia"))) is None

    # AfterAgent is Stop: the last answer is noted, nothing is printed
    assert output(run_hook("gemini", "AfterAgent", gemini(
        "AfterAgent", repo, chat, prompt="fix it", prompt_response="Reused the key on retry.",
        stop_hook_active=False))) is None
    assert client.session(SESSION)["session"]["last_message"] == "Reused the key on retry."

    # SessionEnd closes the session and extracts from the chat: the user's four prompts, not
    # the block memoryd added to the second one
    assert output(run_hook("gemini", "SessionEnd", gemini("SessionEnd", repo, chat,
                                                      reason="exit"))) is None
    assert client.session(SESSION)["session"]["closed"] is not None
    wait_until(lambda: any("pnpm" in e["text"] for e in client.session(SESSION)["entries"]))
    report = client.extract(SESSION, dry_run=True)
    assert report["messages"] == 4
    said = json.dumps(report["report"])
    assert "pnpm" in said and "force-push" not in said and "memoryd" not in said


def test_the_gemini_chat_reader_leaves_out_what_hooks_added_to_a_prompt(tmp_path) -> None:
    repo = tmp_path / "shop"
    chat = gemini_chat(tmp_path, repo, f"{wire.INJECTION_MARKER}\n- “Never force-push to main”")
    parser = make_parser("gemini", cwd=str(repo))
    turns = [t for line in chat.read_text().splitlines() for t in parser.feed(line)]
    prompts = [t.text for t in turns if t.role == "user"]
    assert prompts == ["We use pnpm, not npm, in this repository.",
                       "Why does checkout double-charge on retry?",
                       "Always run the tests before you commit.", "Thanks, that fixed it."]


def test_gemini_tool_hooks_show_a_lesson_after_the_call_and_deny_only_a_hard_rule(
        memoryd_home, embedder, monkeypatch, tmp_path) -> None:
    """Gemini's BeforeTool cannot add context (only deny, or rewrite the call): a lesson
    comes with AfterTool, appended to the tool's result; a person's hard rule, when the user
    turned them on, denies the call at BeforeTool."""
    repo = git_repository(tmp_path / "shop")
    pip = {"tool_name": "run_shell_command",
           "tool_input": {"command": "pip install requests", "description": "Install requests"}}
    push = {"tool_name": "run_shell_command",
            "tool_input": {"command": "git push --force origin main"}}
    migration = {"tool_name": "write_file", "tool_input": {
        "file_path": str(repo / "app" / "migrations" / "0007_refunds.py"), "content": "x = 1\n"}}
    done = {"tool_response": {"llmContent": "Successfully installed requests",
                              "returnDisplay": "Successfully installed requests"}}

    def run_with(hard_rules: bool) -> dict[str, dict | None]:
        monkeypatch.setenv("MEMORYD_CONTEXT_HARD_RULES", "1" if hard_rules else "0")
        running = start_daemon(embedder)
        try:
            return {
                "before pip": output(run_hook("gemini", "BeforeTool", gemini("BeforeTool", repo, **pip))),
                "after pip": output(run_hook("gemini", "AfterTool",
                                         gemini("AfterTool", repo, **pip, **done))),
                "before push": output(run_hook("gemini", "BeforeTool",
                                           gemini("BeforeTool", repo, **push))),
                "after migration": output(run_hook("gemini", "AfterTool",
                                               gemini("AfterTool", repo, **migration, **done))),
                "after ls": output(run_hook("gemini", "AfterTool", gemini(
                    "AfterTool", repo, tool_name="run_shell_command",
                    tool_input={"command": "ls"}, **done))),
            }
        finally:
            running.stop()

    running = start_daemon(embedder)
    try:
        with Client(running.socket) as agent:
            agent.remember("gemini", "tooling", "Use uv, not pip", kind="lesson", cwd=str(repo))
            agent.remember("gemini", "db", "Never edit files under migrations/ by hand",
                           kind="lesson", cwd=str(repo))
        with Client(running.socket, channel="terminal") as person:
            person.remember("gemini", "git", "Never run `git push --force` on main",
                            kind="lesson", tags=["hard-rule"])
    finally:
        running.stop()

    off = run_with(hard_rules=False)
    assert off["before pip"] is None and off["before push"] is None  # no context there
    after = off["after pip"]["hookSpecificOutput"]  # type: ignore[index]
    assert after["hookEventName"] == "AfterTool"
    assert "the run_shell_command call just made went against (it ran `pip`)" in \
        after["additionalContext"] and "“Use uv, not pip”" in after["additionalContext"]
    assert "migrations/" in off["after migration"]["hookSpecificOutput"]["additionalContext"]  # type: ignore[index]
    assert off["after ls"] is None

    on = run_with(hard_rules=True)
    assert on["before push"] == {"decision": "deny", "reason": on["before push"]["reason"]}  # type: ignore[index]
    assert "against a hard rule the user set (tagged hard-rule): Never run `git push --force` " \
        "on main" in on["before push"]["reason"]  # type: ignore[index]
    assert on["before pip"] is None  # an agent's lesson denies nothing
    assert "decision" not in on["after pip"]  # type: ignore[operator]

    running = start_daemon(embedder)
    try:
        shown = run_cli("explain", SESSION)
    finally:
        running.stop()
    assert shown.returncode == 0, shown.stderr
    assert "PostToolUse for gemini" in shown.stdout
    assert "the tool call just made went against (it forbids `pip`)" in shown.stdout


# -- Cursor --------------------------------------------------------------------------------------

def cursor(event: str, repo: Path, **fields: Any) -> dict:
    """A Cursor hook input: the fields every event gets, and the event's own."""
    return {"conversation_id": CONVERSATION, "generation_id": "gen-0001",
            "hook_event_name": event, "workspace_roots": [str(repo)], "model": "claude-4-sonnet",
            "cursor_version": "2.1.0", "user_email": "ana@example.com", **fields}


def test_cursor_gets_the_block_at_session_start_and_only_a_deny_before_a_command(
        memoryd_home, embedder, monkeypatch, tmp_path) -> None:
    repo = git_repository(tmp_path / "shop")
    push = cursor("beforeShellExecution", repo, command="git push --force origin main",
                  cwd=str(repo))
    npm = cursor("beforeShellExecution", repo, command="npm install left-pad", cwd=str(repo))
    monkeypatch.setenv("MEMORYD_CONTEXT_HARD_RULES", "1")
    running = start_daemon(embedder)
    try:
        with Client(running.socket, channel="terminal") as person:
            person.remember("cursor", "git", "Never run `git push --force` on main",
                            kind="lesson", tags=["hard-rule"])
        with Client(running.socket) as agent:
            agent.remember("claude-code", "tooling", "We use pnpm, not npm", kind="lesson",
                           cwd=str(repo))
        started = output(run_hook("cursor", "sessionStart", cursor(
            "sessionStart", repo, session_id=CONVERSATION, is_background_agent=False,
            composer_mode="agent")))
        assert started is not None and set(started) == {"additional_context"}
        assert started["additional_context"].startswith(wire.INJECTION_MARKER)
        assert "We use pnpm, not npm" in started["additional_context"]
        with Client(running.socket) as reader:
            session = reader.session(CONVERSATION)["session"]
            assert (session["harness"], session["agent"], session["cwd"],
                    session["transcript_path"]) == ("cursor", "cursor", str(repo), None)

        denied = output(run_hook("cursor", "beforeShellExecution", push))
        assert denied is not None and denied["permission"] == "deny"
        assert "Never run `git push --force` on main" in denied["agent_message"]
        assert denied["user_message"] == denied["agent_message"]
        # a lesson that is not a hard rule: Cursor cannot take it here, so nothing (and never
        # "allow", which would skip the user's own approval)
        assert output(run_hook("cursor", "beforeShellExecution", npm)) is None

        assert output(run_hook("cursor", "stop", cursor("stop", repo, status="completed",
                                                    loop_count=0))) is None
        assert output(run_hook("cursor", "sessionEnd", cursor("sessionEnd", repo,
                                                          reason="user_close"))) is None
        with Client(running.socket) as reader:
            assert reader.session(CONVERSATION)["session"]["closed"] is not None
            events = [i["event"] for i in reader.explain(CONVERSATION)["injections"]]
        assert events == ["SessionStart", "PreToolUse"]  # the deny, not the unseen lesson
    finally:
        running.stop()


# -- GitHub Copilot CLI --------------------------------------------------------------------------

COPILOT_SESSION = "7d3e2a10-9b4c-4f6e-8a21-5c0d9e3f1b00"


def copilot_events(path: Path, prompts: list[str]) -> None:
    """A Copilot CLI session's events.jsonl: its start, each prompt with an answer."""
    events: list[dict[str, Any]] = [{"type": "session.start", "id": "e0", "parentId": None,
                                     "timestamp": "2026-11-29T10:00:00.000Z",
                                     "data": {"sessionId": COPILOT_SESSION}}]
    for n, prompt in enumerate(prompts, start=1):
        events += [{"type": "user.message", "id": f"u{n}", "timestamp": f"2026-11-29T10:0{n}:00Z",
                    "data": {"content": prompt}},
                   {"type": "assistant.message", "id": f"a{n}",
                    "timestamp": f"2026-11-29T10:0{n}:30Z", "data": {"content": "Done."}}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(event) + "\n" for event in events))


def copilot(repo: Path, **fields: Any) -> dict:
    """A Copilot CLI hook input (camelCase events): the fields every event gets, and its own."""
    return {"sessionId": COPILOT_SESSION, "timestamp": 1796000000123, "cwd": str(repo), **fields}


def test_copilot_gets_the_block_a_hard_rules_deny_and_a_lesson_after_a_call(
        memoryd_home, embedder, monkeypatch, tmp_path) -> None:
    """Copilot CLI: the block at sessionStart (``additionalContext``), a person's hard rule
    denies a call before it runs (``permissionDecision``; the arguments as the JSON string the
    model wrote), an agent's lesson comes after the call it went against, appended to the
    tool's result; the session is Copilot's, its events file found by its id, and its end
    extracts what the user said from that file."""
    repo = git_repository(tmp_path / "shop")
    events = Path(os.environ["HOME"]) / ".copilot/session-state" / COPILOT_SESSION / "events.jsonl"
    copilot_events(events, ["We use pnpm, not npm, in this repository.",
                            "Why does checkout double-charge on retry?",
                            "Always run the tests before you commit.", "Thanks, that fixed it."])
    monkeypatch.setenv("MEMORYD_CONTEXT_HARD_RULES", "1")
    running = start_daemon(embedder)
    try:
        with Client(running.socket, channel="terminal") as person:
            person.remember("copilot", "git", "Never run `git push --force` on main",
                            kind="lesson", tags=["hard-rule"])
        with Client(running.socket) as agent:
            agent.remember("copilot", "tooling", "Use pnpm, not npm", kind="lesson",
                           cwd=str(repo))
        started = output(run_hook("copilot", "sessionStart", copilot(repo, source="new")))
        assert started is not None and set(started) == {"additionalContext"}
        assert started["additionalContext"].startswith(wire.INJECTION_MARKER)
        assert "Use pnpm, not npm" in started["additionalContext"]
        with Client(running.socket) as reader:
            session = reader.session(COPILOT_SESSION)["session"]
            assert (session["harness"], session["agent"], session["cwd"],
                    session["transcript_path"]) == ("copilot", "copilot", str(repo), str(events))

        push = json.dumps({"command": "git push --force origin main"})
        denied = output(run_hook("copilot", "preToolUse", copilot(repo, toolName="bash",
                                                              toolArgs=push)))
        assert denied is not None and denied["permissionDecision"] == "deny"
        assert "Never run `git push --force` on main" in denied["permissionDecisionReason"]
        npm = {"command": "npm install left-pad"}
        assert output(run_hook("copilot", "preToolUse", copilot(repo, toolName="bash",
                                                            toolArgs=npm))) is None
        after = output(run_hook("copilot", "postToolUse", copilot(
            repo, toolName="bash", toolArgs=npm,
            toolResult={"resultType": "success", "textResultForLlm": "added 1 package"})))
        assert after is not None and set(after) == {"additionalContext"}
        assert "“Use pnpm, not npm”" in after["additionalContext"]

        assert output(run_hook("copilot", "agentStop", copilot(
            repo, transcriptPath=str(events), stopReason="end_turn"))) is None
        assert output(run_hook("copilot", "sessionEnd", copilot(repo, reason="user_exit"))) is None
        with Client(running.socket) as reader:
            assert reader.session(COPILOT_SESSION)["session"]["closed"] is not None
            shown = [i["event"] for i in reader.explain(COPILOT_SESSION)["injections"]]
            wait_until(lambda: any("run the tests" in e["text"]
                                   for e in reader.session(COPILOT_SESSION)["entries"]))
            assert reader.extract(COPILOT_SESSION, dry_run=True)["messages"] == 4
        assert shown == ["SessionStart", "PreToolUse", "PostToolUse"]
    finally:
        running.stop()


# -- Cline ---------------------------------------------------------------------------------------

CLINE_TASK = "1796000000123"


def cline(event: str, repo: Path, **fields: Any) -> dict:
    """A Cline hook input: the fields every hook gets, and the event's own object."""
    return {"clineVersion": "3.40.0", "hookName": event, "timestamp": "1796000000123",
            "taskId": CLINE_TASK, "workspaceRoots": [str(repo)], "userId": "u-1", **fields}


def run_cline_hook(path: Path, payload: dict) -> dict[str, Any] | None:
    """An installed hook file as Cline runs it (/bin/sh -c PATH, the payload on stdin)."""
    ran = subprocess.run(["/bin/sh", "-c", str(path)], input=json.dumps(payload),
                         capture_output=True, text=True, timeout=30, check=False)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout) if ran.stdout else None


def test_cline_hook_files_give_the_block_and_a_prompts_matches(daemon, client, memoryd_home,
                                                               tmp_path) -> None:
    """`memory hook install cline` writes an executable file per event into Cline's hooks
    directory; run as Cline runs them, TaskStart registers the task as a session and answers
    the block as Cline's contextModification, UserPromptSubmit the memory matching the
    message (nothing when nothing matches), TaskComplete nothing; uninstall removes them."""
    from memoryd_client import cline_hooks

    repo = git_repository(tmp_path / "shop")
    result = run_cli("hook", "install", "cline")
    assert result.returncode == 0, result.stderr
    directory = cline_hooks.hooks_dir(None)
    files = {event: directory / event for event in ("TaskStart", "TaskResume",
                                                    "UserPromptSubmit", "TaskComplete")}
    assert all(os.access(path, os.X_OK) for path in files.values())
    client.remember("cline", "tooling", "Use pnpm, not npm", kind="lesson", cwd=str(repo))
    client.remember("cline", "deploy", "The deploy script lives in ops/release.sh",
                    cwd=str(repo))

    started = run_cline_hook(files["TaskStart"], cline("TaskStart", repo, taskStart={
        "taskMetadata": {"taskId": CLINE_TASK, "ulid": "01J", "initialTask": "fix login"}}))
    assert started is not None and started["cancel"] is False
    assert started["contextModification"].startswith(wire.INJECTION_MARKER)
    assert "Use pnpm, not npm" in started["contextModification"]
    session = client.session(CLINE_TASK)["session"]
    assert (session["harness"], session["agent"], session["cwd"]) == ("cline", "cline",
                                                                      str(repo))
    prompt = run_cline_hook(files["UserPromptSubmit"], cline("UserPromptSubmit", repo,
                            userPromptSubmit={"prompt": "where is the deploy script?",
                                              "attachments": []}))
    assert prompt is not None and "ops/release.sh" in prompt["contextModification"]
    assert run_cline_hook(files["UserPromptSubmit"], cline("UserPromptSubmit", repo,
                          userPromptSubmit={"prompt": "what is the capital of Peru?"})) is None
    assert run_cline_hook(files["TaskComplete"], cline("TaskComplete", repo, taskComplete={
        "taskMetadata": {"taskId": CLINE_TASK, "result": "Fixed the login redirect."}})) is None
    assert client.session(CLINE_TASK)["session"]["last_message"] == "Fixed the login redirect."
    assert [i["event"] for i in client.explain(CLINE_TASK)["injections"]] == \
        ["SessionStart", "UserPromptSubmit"]
    assert run_cli("hook", "uninstall", "cline").returncode == 0
    assert not any(path.exists() for path in files.values())


def test_cline_install_leaves_the_users_own_hook_alone(memoryd_home, tmp_path) -> None:
    """Cline runs one file per event in a directory: a hook of the user's by one of those names
    is neither replaced nor removed, and install changes nothing else; --project writes
    .clinerules/hooks/, kept out of git status."""
    from memoryd_client import cline_hooks

    directory = cline_hooks.hooks_dir(None)
    directory.mkdir(parents=True)
    theirs = "#!/bin/sh\necho '{}'\n"
    (directory / "UserPromptSubmit").write_text(theirs)
    refused = run_cli("hook", "install", "cline")
    assert refused.returncode == 1 and "UserPromptSubmit" in refused.stderr
    assert sorted(p.name for p in directory.iterdir()) == ["UserPromptSubmit"]
    assert "left as it is" in run_cli("hook", "uninstall", "cline").stdout
    assert (directory / "UserPromptSubmit").read_text() == theirs

    repo = git_repository(tmp_path / "shop")
    assert run_cli("hook", "install", "cline", "--project", str(repo)).returncode == 0
    assert (repo / ".clinerules/hooks/TaskStart").read_text().rstrip().endswith(
        "hook cline TaskStart")
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                          text=True, check=True).stdout == ""
    assert run_cli("hook", "uninstall", "cline", "--project", str(repo)).returncode == 0
    assert not (repo / ".clinerules").exists()


def test_cline_install_in_a_project_whose_clinerules_is_a_file_says_so(memoryd_home,
                                                                      tmp_path) -> None:
    """A project's .clinerules may be one file of rules: there is no .clinerules/hooks/ for
    Cline to run then, and install failed with `[Errno 20] Not a directory: …/TaskStart`.
    It says why, and what to do instead, changing nothing (exit 1, as for another file it
    cannot change); uninstall finds nothing to remove."""
    repo = git_repository(tmp_path / "shop")
    rules = repo / ".clinerules"
    rules.write_text("- Prices are whole cents.\n")
    refused = run_cli("hook", "install", "cline", "--project", str(repo))
    assert refused.returncode == 1, refused
    assert "Errno" not in refused.stderr
    assert f"{rules} is a file, the project's rules in one file: Cline runs a project's hooks " \
        "from the folder .clinerules/hooks/" in refused.stderr, refused.stderr
    assert "`memory hook install cline`" in refused.stderr
    assert rules.read_text() == "- Prices are whole cents.\n"
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                          text=True, check=True).stdout == "?? .clinerules\n"
    removed = run_cli("hook", "uninstall", "cline", "--project", str(repo))
    assert removed.returncode == 0 and "nothing to remove" in removed.stdout, removed


@pytest.mark.skipif(shutil.which("xdg-user-dir") is None, reason="xdg-user-dir is not here")
def test_cline_hooks_go_where_xdg_user_dir_says_the_documents_folder_is(
        memoryd_home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cline asks `xdg-user-dir DOCUMENTS` for its hooks directory's folder; memoryd reads the
    same user-dirs.dirs, and must agree with the program: a localised folder, and the home
    when none is named."""
    home = Path(os.environ["HOME"])
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    dirs = home / ".config/user-dirs.dirs"
    dirs.parent.mkdir(parents=True, exist_ok=True)
    for named in ('XDG_DESKTOP_DIR="$HOME/Schreibtisch"\nXDG_DOCUMENTS_DIR="$HOME/Dokumente"\n',
                  'XDG_DESKTOP_DIR="$HOME/Desktop"\n'):
        dirs.write_text(named)
        printed = subprocess.run(["xdg-user-dir", "DOCUMENTS"], capture_output=True, text=True,
                                 check=True, env=os.environ.copy()).stdout.strip()
        assert run_cli("hook", "install", "cline").returncode == 0
        assert (Path(printed) / "Cline/Hooks/TaskStart").is_file()
        assert run_cli("hook", "uninstall", "cline").returncode == 0
    assert printed == str(home)


# -- failing open --------------------------------------------------------------------------------

@pytest.mark.parametrize("harness, event, payload", [
    ("gemini", "SessionStart", {"source": "startup"}),
    ("gemini", "BeforeAgent", {"prompt": "why does checkout double-charge?"}),
    ("gemini", "BeforeTool", {"tool_name": "run_shell_command",
                              "tool_input": {"command": "pip install x"}}),
    ("gemini", "AfterTool", {"tool_name": "run_shell_command",
                             "tool_input": {"command": "pip install x"}, "tool_response": {}}),
    ("cursor", "sessionStart", {"session_id": CONVERSATION}),
    ("cursor", "beforeShellExecution", {"command": "pip install x"}),
    ("copilot", "sessionStart", {"source": "new"}),
    ("copilot", "preToolUse", {"toolName": "bash", "toolArgs": {"command": "pip install x"}}),
    ("cline", "UserPromptSubmit", {"userPromptSubmit": {"prompt": "why is login slow?"}}),
])
def test_with_the_daemon_down_a_hook_exits_at_once_with_nothing_for_the_agent(
        memoryd_home, tmp_path, harness, event, payload) -> None:
    base = gemini(event, tmp_path) if harness == "gemini" else \
        copilot(tmp_path) if harness == "copilot" else \
        cline(event, tmp_path) if harness == "cline" else cursor(event, tmp_path)
    started = time.monotonic()
    result = run_hook(harness, event, {**base, **payload})
    assert time.monotonic() - started < 5  # generously; bench/bench_hooks.py measures it
    assert (result.returncode, result.stdout) == (0, "")
    assert "daemon unreachable" in result.stderr
    spooled = (memoryd_home / "spool.msgpack").exists()
    assert spooled == (event in ("SessionStart", "BeforeAgent", "sessionStart",
                                 "UserPromptSubmit"))  # not a call's


def test_a_spooled_gemini_session_start_is_replayed(memoryd_home, embedder, tmp_path) -> None:
    assert run_hook("gemini", "SessionStart", gemini("SessionStart", tmp_path,
                                                 source="startup")).returncode == 0
    assert run_hook("gemini", "SessionEnd", gemini("SessionEnd", tmp_path,
                                               reason="exit")).returncode == 0
    running = start_daemon(embedder)
    try:
        wait_until(lambda: not (memoryd_home / "spool.msgpack").exists()
                   and not (memoryd_home / "spool.msgpack.replaying").exists())
        with Client(running.socket) as client:
            session = client.session(SESSION)["session"]
        assert (session["harness"], session["cwd"]) == ("gemini", str(tmp_path))
        assert session["closed"] is not None
    finally:
        running.stop()


@pytest.mark.parametrize("harness, stdin", [
    ("gemini", "not json"), ("gemini", "[1, 2]"), ("cursor", "{}"), ("cursor", "\x00\xff"),
    ("gemini", json.dumps({"hook_event_name": "BeforeTool", "tool_name": 7})),
    ("cursor", json.dumps({"hook_event_name": "beforeShellExecution", "command": ["x"],
                           "workspace_roots": "not a list"})),
])
def test_bad_payloads_exit_0_with_nothing_for_the_agent(daemon, harness, stdin) -> None:
    result = run_hook(harness, "SessionStart" if harness == "gemini" else "sessionStart", stdin)
    assert (result.returncode, result.stdout) == (0, "")


# -- install -------------------------------------------------------------------------------------

GEMINI_SETTINGS = """{
  "general": { "vimMode": true },
  "tools": { "enableHooks": true },
  "mcpServers": {
    "github": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"] }
  },
  "hooks": {
    "enabled": true,
    "disabled": ["secret-scanner"],
    "BeforeTool": [
      {
        "matcher": "write_file|replace",
        "hooks": [{ "name": "secret-scanner", "type": "command", "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/scan.sh", "timeout": 5000 }]
      }
    ]
  }
}
"""


def test_gemini_install_registers_runnable_hooks_and_uninstall_gives_the_file_back(
        daemon, client, memoryd_home, tmp_path) -> None:
    path = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(GEMINI_SETTINGS)
    result = run_cli("hook", "install", "gemini")
    assert result.returncode == 0, result.stderr
    assert f"{path}: installed 6 memoryd hooks" in result.stdout
    settings = json.loads(path.read_text())
    theirs = json.loads(GEMINI_SETTINGS)
    assert {k: v for k, v in settings.items() if k != "hooks"} == \
        {k: v for k, v in theirs.items() if k != "hooks"}
    hooks = settings["hooks"]
    assert (hooks["enabled"], hooks["disabled"]) == (True, ["secret-scanner"])
    assert hooks["BeforeTool"][0] == theirs["hooks"]["BeforeTool"][0]
    assert set(hooks) - {"enabled", "disabled"} == set(hook_tables.GEMINI_EVENTS)
    start = hooks["SessionStart"][-1]
    assert "matcher" not in start  # Gemini matches a lifecycle event's source exactly
    [handler] = start["hooks"]
    assert (handler["name"], handler["type"], handler["timeout"]) == ("memoryd", "command", 10_000)
    assert hooks["BeforeTool"][-1]["matcher"] == "^(run_shell_command|write_file|replace)$"

    # the command as Gemini runs it: through a shell, the payload on stdin
    client.remember("gemini", "style", "Prefer small pull requests", kind="lesson")
    ran = subprocess.run(["bash", "-c", handler["command"]], cwd=tmp_path, capture_output=True,
                         text=True, timeout=30, check=False,
                         input=json.dumps(gemini("SessionStart", tmp_path, source="startup")))
    assert ran.returncode == 0, ran.stderr
    assert "Prefer small pull requests" in \
        json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]

    assert "already installed" in run_cli("hook", "install", "gemini").stdout
    assert run_cli("hook", "uninstall", "gemini").returncode == 0
    assert path.read_text() == GEMINI_SETTINGS


def test_gemini_install_names_the_switch_each_gemini_version_reads(memoryd_home, tmp_path,
                                                                   monkeypatch) -> None:
    """The hint after install said older Gemini CLIs need `"enableHooks": true` under
    `"tools"`; Gemini's settings schema has `"hooksConfig": {"enabled": true}` (its switches
    left the `hooks` object), and `tools.enableHooks` (with `hooks.enabled`) was the first
    releases'. The hint names both, with the versions, in the file Gemini reads."""
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "profile"))
    result = run_cli("hook", "install", "gemini")
    assert result.returncode == 0, result.stderr
    [hint] = [line for line in result.stdout.splitlines() if "before hooks were on" in line]
    assert f"in {tmp_path / 'profile' / '.gemini' / 'settings.json'}:" in hint
    assert '"hooksConfig": {"enabled": true} (versions with hooksConfig, 0.26 on)' in hint
    assert '"tools": {"enableHooks": true} and "hooks": {"enabled": true}' in hint
    assert hint.index("hooksConfig") < hint.index("enableHooks")


def test_gemini_follows_its_home_override_and_a_project_file(memoryd_home, tmp_path,
                                                             monkeypatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "profile"))
    assert install.settings_path("gemini", None) == tmp_path / "profile" / ".gemini" / \
        "settings.json"
    repo = tmp_path / "shop"
    repo.mkdir()
    assert run_cli("hook", "install", "gemini", "--project", str(repo)).returncode == 0
    assert (repo / ".gemini" / "settings.json").exists()
    assert run_cli("hook", "uninstall", "gemini", "--project", str(repo)).returncode == 0
    assert not (repo / ".gemini").exists()  # install made the file and its directory


CURSOR_HOOKS = """{
  "version": 1,
  "hooks": {
    "beforeShellExecution": [{ "command": "./hooks/audit.sh" }, { "command": "./hooks/block-git.sh" }],
    "afterFileEdit": [{ "command": "./hooks/format.sh" }]
  }
}
"""


def test_cursor_install_appends_handlers_to_its_flat_lists_and_uninstall_gives_it_back(
        memoryd_home) -> None:
    path = Path(os.environ["HOME"]) / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True)
    path.write_text(CURSOR_HOOKS)
    assert run_cli("hook", "install", "cursor").returncode == 0
    hooks = json.loads(path.read_text())["hooks"]
    assert set(hooks) == {"beforeShellExecution", "afterFileEdit", *hook_tables.CURSOR_EVENTS}
    audit, block, mine = hooks["beforeShellExecution"]
    assert (audit, block) == ({"command": "./hooks/audit.sh"}, {"command": "./hooks/block-git.sh"})
    assert set(mine) == {"command"} and mine["command"].endswith("hook cursor beforeShellExecution")
    assert hooks["sessionStart"] == [{"command": install.hook_command("cursor", "sessionStart")}]
    assert run_cli("hook", "uninstall", "cursor").returncode == 0
    assert path.read_text() == CURSOR_HOOKS


def test_cursor_install_creates_a_versioned_file_that_uninstall_removes(memoryd_home) -> None:
    home = Path(os.environ["HOME"])
    assert run_cli("hook", "install", "cursor").returncode == 0
    data = json.loads((home / ".cursor" / "hooks.json").read_text())
    assert data["version"] == 1 and set(data["hooks"]) == set(hook_tables.CURSOR_EVENTS)
    assert run_cli("hook", "uninstall", "cursor").returncode == 0
    assert not (home / ".cursor").exists()
    for empty in ("{}", "", "\n"):  # a file with nothing in it comes back as it was
        (home / ".cursor").mkdir(exist_ok=True)
        (home / ".cursor" / "hooks.json").write_text(empty)
        assert run_cli("hook", "install", "cursor").returncode == 0
        assert json.loads((home / ".cursor" / "hooks.json").read_text())["version"] == 1
        assert run_cli("hook", "uninstall", "cursor").returncode == 0
        assert (home / ".cursor" / "hooks.json").read_text() == empty


def test_copilot_install_writes_a_hooks_file_of_its_own_that_uninstall_removes(
        memoryd_home, monkeypatch, tmp_path) -> None:
    """Copilot CLI reads every *.json in its hooks directory: memoryd's is its own file,
    versioned, a handler per event (its command under ``bash``, a matcher on the tools memoryd
    reads, ``timeoutSec``), each command one the hook runs; uninstall takes the file and the
    directories install made. $COPILOT_HOME moves it; --project writes .github/hooks/, kept
    out of git status."""
    home = Path(os.environ["HOME"])
    assert run_cli("hook", "install", "copilot").returncode == 0
    path = home / ".copilot/hooks/memoryd.json"
    data = json.loads(path.read_text())
    assert data["version"] == 1 and set(data["hooks"]) == set(hook_tables.COPILOT_EVENTS)
    [before] = data["hooks"]["preToolUse"]
    assert before == {"type": "command", "bash": install.hook_command("copilot", "preToolUse"),
                      "matcher": "bash|edit|create", "timeoutSec": 5}
    assert before["bash"].endswith("hook copilot preToolUse")
    assert "matcher" not in data["hooks"]["sessionStart"][0]
    assert run_cli("hook", "install", "copilot").stdout.strip().endswith("already installed")
    assert run_cli("hook", "uninstall", "copilot").returncode == 0
    assert not (home / ".copilot").exists()

    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))
    assert run_cli("hook", "install", "copilot").returncode == 0
    assert (tmp_path / "copilot-home/hooks/memoryd.json").is_file()
    repo = git_repository(tmp_path / "shop")
    assert run_cli("hook", "install", "copilot", "--project", str(repo)).returncode == 0
    assert json.loads((repo / ".github/hooks/memoryd.json").read_text())["version"] == 1
    assert ".github/hooks/memoryd.json" in (repo / ".git/info/exclude").read_text()
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                          text=True, check=True).stdout == ""


def test_doctor_finds_the_gemini_cursor_and_copilot_hooks(daemon, memoryd_home) -> None:
    assert run_cli("hook", "install", "gemini").returncode == 0
    assert run_cli("hook", "install", "cursor").returncode == 0
    assert run_cli("hook", "install", "copilot").returncode == 0
    from memoryd_client.doctor import installed_hooks

    found = {h["harness"]: len(h["commands"]) for h in installed_hooks()}
    assert found == {"gemini": len(hook_tables.GEMINI_EVENTS), "cursor": len(hook_tables.CURSOR_EVENTS),
                     "copilot": len(hook_tables.COPILOT_EVENTS)}
