"""Outcomes (issue 37 §1) in the harnesses of issue 38 §1: a Gemini CLI session judged from the
tool calls in its chat file, through its real hooks and a real daemon; Aider's history read for
what Aider ran and edited; and the Gemini and Codex sources following their home variables."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryd_client import Client

from memoryd.ingest.document import transcript_lines
from memoryd.ingest.transcript.actions import read_steps
from memoryd.sessions.outcomes import BROKEN, FOLLOWED, NO_OCCASION, judge
from memoryd.sessions.usage import judge_transcript
from tests.conftest import run_cli, run_hook, start_daemon, wait_until

UV = "Use uv, not pip, to manage dependencies"
FORCE = "Never force-push to main"


@dataclass(frozen=True)
class Lesson:
    """What the judge reads of an injected entry (memoryd.sessions.outcomes.Worded)."""

    text: str
    kind: str = "lesson"
    polarity: str | None = "positive"
    key: str | None = None


def hook(event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    result = run_hook("gemini", event, {**payload, "hook_event_name": event})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout else None


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def gemini_chat(path: Path, session: str, block: str, prompt: str,
                calls: list[tuple[str, dict[str, Any], str]]) -> None:
    """A Gemini CLI chat as its ChatRecordingService appends it, written after now: the
    metadata line; the first prompt with the SessionStart context Gemini prepended to it
    (``<hook_context>``, its ``<``/``>`` escaped); a ``gemini`` message with a call, written
    again with every call added to it (Gemini re-appends the whole message), each call as
    completed (``status``)."""
    start = time.time() + 1
    escaped = block.replace("<", "&lt;").replace(">", "&gt;")
    lines: list[dict[str, Any]] = [
        {"sessionId": session, "projectHash": "shop", "startTime": iso(start),
         "lastUpdated": iso(start), "kind": "main"},
        {"id": "5f0c1d2e-0000-4000-8000-000000000001", "timestamp": iso(start + 1),
         "type": "user", "content": [{"text": f"<hook_context>{escaped}</hook_context>\n\n"},
                                     {"text": prompt}]},
        {"$set": {"lastUpdated": iso(start + 1)}},
    ]
    message = {"id": "5f0c1d2e-0000-4000-8000-000000000002", "timestamp": iso(start + 2),
               "type": "gemini", "content": "", "thoughts": [], "model": "gemini-2.5-pro"}
    recorded: list[dict[str, Any]] = []
    for n, (name, args, status) in enumerate(calls):
        call_id = f"{name}-{int(start * 1000)}-{n}"
        recorded.append({
            "id": call_id, "name": name, "args": args, "status": status,
            "timestamp": iso(start + 3 + n), "displayName": name, "description": "",
            "result": [{"functionResponse": {"id": call_id, "name": name,
                                             "response": {"output": "ok"}}}],
            "renderOutputAsMarkdown": False})
        lines.append({**message, "toolCalls": list(recorded)})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def outcome_of(shown: str, text: str) -> str:
    lines = shown.splitlines()
    at = next(i for i, line in enumerate(lines) if f"“{text}" in line)
    return next(line for line in lines[at:] if line.startswith("        outcome: ")).strip()


def test_a_gemini_session_is_judged_from_the_tool_calls_in_its_chat(
        daemon, client, tmp_path) -> None:
    """SessionStart injects the lessons; the chat then records run_shell_command calls: `pip
    install` breaks "use uv, not pip" in one session, `uv add` follows it in another, and a
    push without --force keeps "never force-push"; `memory explain` shows each outcome."""
    ids = {text: client.remember("gemini", "workflow", text, kind="lesson",
                                 polarity="negative" if text == FORCE else "positive")
           ["entry"]["id"] for text in (UV, FORCE)}
    home = Path(os.environ["HOME"])
    chats = home / ".gemini" / "tmp" / "shop" / "chats"
    sessions = {"broken": "a1b2c3d4-1111-4222-8333-444455556666",
                "followed": "b2c3d4e5-1111-4222-8333-444455556666"}
    commands = {"broken": "pip install requests", "followed": "uv add requests"}
    for kind, session in sessions.items():
        chat = chats / f"session-2026-11-29T10-00-{session[:8]}.jsonl"
        payload = {"session_id": session, "transcript_path": str(chat), "cwd": str(tmp_path),
                   "timestamp": iso(time.time())}
        started = hook("SessionStart", {**payload, "source": "startup"})
        assert started is not None
        block = started["hookSpecificOutput"]["additionalContext"]
        assert UV in block and FORCE in block
        gemini_chat(chat, session, block, "add requests to the project and push", [
            ("run_shell_command", {"command": commands[kind], "description": "add it"},
             "success"),
            ("replace", {"file_path": str(tmp_path / "README.md"), "old_string": "deps",
                         "new_string": "deps: requests"}, "success"),
            ("run_shell_command", {"command": "git push origin main"}, "success")])
        if kind == "followed":
            assert hook("SessionEnd", {**payload, "reason": "exit"}) is None

    shown = run_cli("explain", sessions["broken"])  # no SessionEnd: explain judges it
    assert shown.returncode == 0, shown.stderr
    assert outcome_of(shown.stdout, UV).startswith(
        "outcome: broken: run_shell_command: pip install requests (against “pip”)")
    assert outcome_of(shown.stdout, FORCE).startswith(
        "outcome: followed: run_shell_command: git push origin main")
    items = [i for inj in json.loads(run_cli("explain", sessions["broken"], "--json").stdout)
             ["injections"] for i in inj["items"]]
    uv = next(i for i in items if i["id"] == ids[UV])
    evidence = uv["outcome_evidence"][0]
    assert evidence["record_id"] == "5f0c1d2e-0000-4000-8000-000000000002"
    assert evidence["call_id"].startswith("run_shell_command-")
    wait_until(lambda: client.get(ids[UV])["usage"]["pending"] == 0
               and client.get(ids[UV])["usage"]["injected"] == 2)
    usage = client.get(ids[UV])["usage"]
    assert (usage["broken"], usage["followed"]) == (1, 1)
    assert client.get(ids[FORCE])["usage"]["followed"] == 2  # each call read once per session
    assert outcome_of(run_cli("explain", sessions["followed"]).stdout, UV).startswith(
        "outcome: followed: run_shell_command: uv add requests")


def gemini_lines(calls: list[dict[str, Any]], after: list[dict[str, Any]] = ()) -> list[str]:
    records = [{"sessionId": "s", "projectHash": "p", "startTime": "2026-11-29T10:00:00.000Z"},
               {"id": "u1", "timestamp": "2026-11-29T10:00:01.000Z", "type": "user",
                "content": "add requests"},
               {"id": "g1", "timestamp": "2026-11-29T10:00:02.000Z", "type": "gemini",
                "content": "", "toolCalls": calls}, *after]
    return [json.dumps(r) for r in records]


def test_a_gemini_call_the_user_cancelled_and_then_corrected_is_broken() -> None:
    """A cancelled call (the user declined it) is a refusal, as Claude Code's rejected calls:
    the attempt against the lesson, corrected, is broken; the other calls' files and texts
    are what `write_file` and `replace` wrote."""
    cancelled = {"id": "c1", "name": "run_shell_command", "status": "cancelled",
                 "args": {"command": "pip install requests"},
                 "timestamp": "2026-11-29T10:00:03.000Z"}
    written = {"id": "c2", "name": "write_file", "status": "success",
               "args": {"file_path": "/w/shop/pyproject.toml", "content": "[tool.uv]\n"},
               "timestamp": "2026-11-29T10:00:04.000Z"}
    steps = read_steps(gemini_lines([cancelled, written]), "gemini")
    assert [(s.role, s.call_id) for s in steps] == [
        ("user", ""), ("tool", "c1"), ("rejected", "c1"), ("tool", "c2")]
    assert steps[1].commands == ("pip install requests",)
    assert (steps[3].writes, steps[3].added) == (("/w/shop/pyproject.toml",), "[tool.uv]\n")
    lesson = {"kind": "lesson", "text": UV, "polarity": "positive"}
    assert judge(lesson, steps).outcome == BROKEN
    assert "the user corrected it" in judge(lesson, steps).why


def test_copilot_calls_are_read_from_its_tool_events() -> None:
    """Copilot CLI logs each call it runs as ``tool.execution_start``: its shell commands and
    the files its edits write are what the judge reads (the fixture session ran grep, then
    edited src/export/client.py)."""
    events = (Path(__file__).parents[1] / "fixtures/harnesses/home/.copilot/session-state"
              / "7d3e2a10-9b4c-4f6e-8a21-5c0d9e3f1b77/events.jsonl")
    steps = read_steps(events.read_text().splitlines(), "copilot")
    assert [(s.role, s.tool) for s in steps] == [
        ("user", ""), ("tool", "bash"), ("assistant", ""), ("user", ""), ("tool", "edit"),
        ("assistant", "")]
    assert steps[1].commands == ("grep -rn timeout src/export",)
    assert steps[1].call_id == "toolu_01"
    assert steps[4].writes == ("src/export/client.py",) and "batch took" in steps[4].added
    assert judge({"kind": "lesson", "text": "Use rg, not grep", "polarity": "positive"},
                 steps).outcome == BROKEN



def test_cline_commands_and_edits_are_read_from_its_task_log() -> None:
    """A Cline task's commands (their text is the command line) and tool uses (a JSON object
    naming the tool and its path) are what the judge reads, from the log read whole as the
    watcher reads it (the fixture task read a file, edited src/mailer/queue.ts and ran
    vitest through npx)."""
    task = (Path(__file__).parents[1] / "fixtures/harnesses/home/.config/Code/User"
            / "globalStorage/saoudrizwan.claude-dev/tasks/1764502861000/ui_messages.json")
    steps = read_steps(list(transcript_lines(str(task), "cline")), "cline")
    assert [(s.role, s.tool) for s in steps if s.role == "tool"] == [
        ("tool", "readFile"), ("tool", "editedExistingFile"), ("tool", "execute_command")]
    read, edit, command = (s for s in steps if s.role == "tool")
    assert read.reads == ("src/mailer/queue.ts",) and not read.writes
    assert edit.writes == ("src/mailer/queue.ts",) and "ledger.add" in edit.added
    assert command.commands == ("npx vitest run src/mailer",)
    assert command.record_id == "1764502861000:1764502925000:command"
    assert [s.role for s in steps if s.role != "tool"] == [
        "user", "assistant", "assistant", "user", "assistant"]
    assert judge({"kind": "lesson", "text": "Use pnpm, not npx", "polarity": "positive"},
                 steps).outcome == BROKEN

AIDER = """
# aider chat started at 2026-11-28 09:00:00

> Aider v0.86.1

#### add httpx for the client

I'll add it:

```bash
pip install httpx
```

> pip install httpx
> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y
> Running pip install httpx

# aider chat started at 2026-11-29 14:02:11

> Aider v0.86.1

#### add requests, and never put secrets in config.py

src/shop/config.py
```python
<<<<<<< SEARCH
TIMEOUT = 5
=======
TIMEOUT = 5
API_KEY = os.environ["SHOP_API_KEY"]
>>>>>>> REPLACE
```

```bash
grep -rn API_KEY src
```

> grep -rn API_KEY src
> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: n
> Applied edit to src/shop/config.py

#### /run pip install requests

> Added 40 lines of output to the chat.
"""


def test_aider_history_gives_what_aider_ran_and_edited_per_session(tmp_path) -> None:
    """Aider records the commands it ran (`> Running …`) and the files it edited (`> Applied
    edit to …`, the text from the answer's block); a command it offered and the user declined
    is a refused call; what the user ran with /run is not the agent's. A file of two sessions
    is judged per session."""
    project = tmp_path / "shop"
    project.mkdir()
    path = project / ".aider.chat.history.md"
    path.write_text(AIDER)
    steps = read_steps(AIDER.splitlines(), "aider", str(project))
    tools = [s for s in steps if s.role == "tool"]
    assert [(t.tool, t.commands, t.writes) for t in tools] == [
        ("run", ("pip install httpx",), ()), ("run", ("grep -rn API_KEY src",), ()),
        ("edit", (), ("src/shop/config.py",))]
    refused = next(s for s in steps if s.role == "rejected")
    assert refused.call_id == tools[1].call_id
    assert "API_KEY = os.environ" in tools[2].added and "TIMEOUT" in tools[2].added
    sessions = list(dict.fromkeys(s.record_id.split(":")[0] for s in steps))
    assert len(sessions) == 2
    assert all(s.timestamp is None for s in steps)

    lessons = {"uv": Lesson(UV), "rg": Lesson("Use rg, not grep"),
               "env": Lesson("Read API keys with os.environ in src/shop/config.py")}
    rows = [{"entry": name, "injected": None} for name in lessons]
    by_session = {}
    for session in sessions:
        verdicts = judge_transcript(str(path), "aider", rows, lessons, session)
        by_session[session] = {entry: outcome for entry, outcome, *_ in verdicts}
    assert [by_session[s] for s in sessions] == [
        {"uv": BROKEN, "rg": NO_OCCASION, "env": NO_OCCASION},  # Aider ran pip
        {"uv": NO_OCCASION, "rg": BROKEN, "env": FOLLOWED}]  # the user ran pip; grep refused


def test_the_claude_gemini_and_codex_sources_follow_their_home_variables(
        embedder, memoryd_home, monkeypatch, tmp_path) -> None:
    """Gemini CLI keeps its files in $GEMINI_CLI_HOME/.gemini when that is set, Codex in
    $CODEX_HOME, Claude Code its whole ~/.claude tree in $CLAUDE_CONFIG_DIR: the daemon's
    built-in sources watch there, not in ~."""
    profile, codex = tmp_path / "profile", tmp_path / "codex-home"
    claude = tmp_path / "claude-config"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(profile))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    (claude / "projects" / "-srv-shop").mkdir(parents=True)
    (claude / "CLAUDE.md").write_text("# Me\n\n- Invoices are signed by the finance lead\n")
    (claude / "projects" / "-srv-shop" / "s1.jsonl").write_text(json.dumps(
        {"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": "/srv/shop",
         "timestamp": "2026-11-02T10:00:00Z",
         "message": {"role": "user", "content": "the label printer jams on glossy stock"}})
        + "\n")
    (profile / ".gemini").mkdir(parents=True)
    (profile / ".gemini" / "GEMINI.md").write_text(
        "## Gemini Added Memories\n- The staging cluster is called heron-west\n")
    default = memoryd_home / "user" / ".gemini"
    default.mkdir()
    (default / "GEMINI.md").write_text("## Gemini Added Memories\n- The staging cluster is "
                                       "called osprey-east\n")
    (codex / "memories").mkdir(parents=True)
    (codex / "memories" / "MEMORY.md").write_text("# Memory\n\n- Release trains leave on "
                                                  "Thursdays at noon\n")
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            def texts() -> str:
                return json.dumps(client.list_entries(limit=100)["entries"])
            wait_until(lambda: "heron-west" in texts() and "Thursdays" in texts()
                       and "finance lead" in texts() and "glossy stock" in texts())
            assert "osprey-east" not in texts()
        listing = run_cli("sources", "list", "--json")  # every source, there or not
        assert listing.returncode == 0, listing.stderr
        globs = {s["path"] for s in json.loads(listing.stdout)["sources"]}
        assert {f"{profile}/.gemini/tmp/*/chats/**/*.jsonl", f"{codex}/sessions/**/rollout-*.jsonl",
                f"{claude}/projects/**/*.jsonl"} <= globs, globs
        shown = run_cli("status", "--sources").stdout  # those there, with their globs
        assert f"{claude}/projects/**/*.jsonl" in shown and f"{codex}/memories/**/*.md" in shown
    finally:
        running.stop()
    assert not running.errors, running.errors
