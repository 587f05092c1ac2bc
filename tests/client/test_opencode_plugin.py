"""memoryd's OpenCode plugin (issue 38 §1): the plugin file `memory hook install opencode` writes,
loaded by node (tests/opencode_driver.mjs) and called with inputs in OpenCode's shapes (the
Hooks interface of packages/plugin/src/index.ts of anomalyco/opencode, the events of its SDK),
running the real `memory` command against a real daemon; failing open with the daemon down or
`memory` missing; install and uninstall. OpenCode itself is not installed where these run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client, wire

from tests.conftest import run_cli, start_daemon, wait_until

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None,
    reason="node is not installed: the OpenCode plugin cannot be run (.ci/run installs nodejs)")

DRIVER = Path(__file__).resolve().parents[1] / "opencode_driver.mjs"
SESSION = "ses_3f1c9a2e77b0ffe1Q2w3E4r5T6"


def installed_plugin() -> Path:
    done = run_cli("hook", "install", "opencode")
    assert done.returncode == 0, done.stderr
    path = Path(os.environ["HOME"]) / ".config" / "opencode" / "plugins" / "memoryd.js"
    assert str(path) in done.stdout and path.is_file()
    return path


def drive(plugin: Path, directory: Path, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The plugin run by node through ``steps``; what each hook left in its output, threw,
    and took."""
    result = subprocess.run(["node", str(DRIVER), str(plugin), str(directory)],
                            input=json.dumps(steps), capture_output=True, text=True,
                            timeout=120, env=os.environ.copy(), check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def git_repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def session_created(repo: Path) -> dict[str, Any]:
    return {"hook": "event", "input": {"event": {"type": "session.created", "properties": {
        "info": {"id": SESSION, "projectID": "p1", "directory": str(repo), "title": "New session",
                 "version": "1.0.0", "time": {"created": 1796000000000,
                                              "updated": 1796000000000}}}}}}


def system() -> dict[str, Any]:
    return {"hook": "experimental.chat.system.transform",
            "input": {"sessionID": SESSION, "model": {"id": "claude-sonnet-4", "providerID":
                                                      "anthropic"}},
            "output": {"system": ["You are opencode, an interactive CLI tool."]}}


def bash(when: str, call: str, command: str, with_args: bool = True) -> dict[str, Any]:
    """tool.execute.before (``output.args``: the call's arguments, which a plugin may change)
    or tool.execute.after (``output``: the tool's title, output and metadata; newer OpenCode
    also gives the arguments in the input)."""
    args = {"command": command, "description": "Runs the command"}
    if when == "before":
        return {"hook": "tool.execute.before",
                "input": {"tool": "bash", "sessionID": SESSION, "callID": call},
                "output": {"args": args}}
    return {"hook": "tool.execute.after",
            "input": {"tool": "bash", "sessionID": SESSION, "callID": call,
                      **({"args": args} if with_args else {})},
            "output": {"title": command, "output": "Successfully installed requests\n",
                       "metadata": {"exit": 0}}}


def test_an_opencode_session_gets_the_block_a_lesson_after_the_call_and_a_hard_rule_deny(
        memoryd_home, embedder, monkeypatch, tmp_path) -> None:
    repo = git_repository(tmp_path / "shop")
    monkeypatch.setenv("MEMORYD_CONTEXT_HARD_RULES", "1")
    plugin = installed_plugin()
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as agent:
            agent.remember("opencode", "tooling", "Use uv, not pip", kind="lesson", cwd=str(repo))
            agent.remember("opencode", "db", "Never edit files under migrations/ by hand",
                           kind="lesson", cwd=str(repo))
            # Claude Code's lesson of this project reaches OpenCode: the harnesses share
            agent.remember("claude-code", "payments", "Checkout retries must reuse the "
                           "idempotency key", kind="lesson", cwd=str(repo))
        with Client(running.socket, channel="terminal") as person:
            person.remember("opencode", "git", "Never run `git push --force` on main",
                            kind="lesson", tags=["hard-rule"])
        ran = drive(plugin, repo, [
            session_created(repo),
            system(),
            bash("before", "call_1", "pip install requests"),
            bash("after", "call_1", "pip install requests", with_args=False),
            bash("before", "call_2", "git push --force origin main"),
            bash("after", "call_3", "ls -la"),
            {"hook": "tool.execute.before", "input": {"tool": "read", "sessionID": SESSION,
                                                      "callID": "call_4"},
             "output": {"args": {"filePath": str(repo / "README.md")}}},
            {"hook": "tool.execute.after",  # OpenCode's own argument names
             "input": {"tool": "edit", "sessionID": SESSION, "callID": "call_5", "args": {
                 "filePath": str(repo / "app" / "migrations" / "0007_refunds.py"),
                 "oldString": "x = 1", "newString": "x = 2"}},
             "output": {"title": "app/migrations/0007_refunds.py",
                        "output": "Edit applied successfully.", "metadata": {}}},
            {"hook": "event", "input": {"event": {"type": "session.idle",
                                                  "properties": {"sessionID": SESSION}}}},
            # a newer event's shape: `data` where the bus has `properties`
            {"hook": "event", "input": {"event": {"id": "e1", "created": 1,
                                                  "type": "session.deleted", "data": {
                "info": {"id": SESSION, "directory": str(repo)}}}}},
        ])
        with Client(running.socket) as reader:
            session = reader.session(SESSION)["session"]
            events = [i["event"] for i in reader.explain(SESSION)["injections"]]
    finally:
        running.stop()

    assert ran["exported"] == ["default"] and ran["id"] == "memoryd"
    _, shown, before_pip, after_pip, push, after_ls, read, edited, _, _ = ran["results"]
    assert all("threw" not in r for r in ran["results"] if r is not push)
    prompt = shown["output"]["system"]
    assert prompt[0] == "You are opencode, an interactive CLI tool." and len(prompt) == 2
    assert prompt[1].startswith(wire.INJECTION_MARKER)
    assert "Use uv, not pip" in prompt[1] and "idempotency key" in prompt[1]
    assert before_pip["output"] == {"args": {"command": "pip install requests",
                                             "description": "Runs the command"}}
    said = after_pip["output"]["output"]
    assert said.startswith("Successfully installed requests\n\n")
    assert "the bash call just made went against (it ran `pip`)" in said
    assert "“Use uv, not pip”" in said
    assert "Never run `git push --force` on main" in push["threw"]
    assert "against a hard rule the user set" in push["threw"]
    assert after_ls["output"]["output"] == "Successfully installed requests\n"  # no lesson
    assert read["output"] == {"args": {"filePath": str(repo / "README.md")}}
    assert "migrations/" in edited["output"]["output"].split("Edit applied successfully.\n\n")[1]
    assert (session["harness"], session["agent"], session["cwd"], session["transcript_path"]) \
        == ("opencode", "opencode", str(repo), None)
    assert session["closed"] is not None  # session.deleted (in `data`) ended it
    assert events == ["SessionStart", "PostToolUse", "PreToolUse", "PostToolUse"]


def test_without_hard_rules_a_lesson_blocks_nothing(memoryd_home, embedder, tmp_path) -> None:
    repo = git_repository(tmp_path / "shop")
    plugin = installed_plugin()
    running = start_daemon(embedder)
    try:
        with Client(running.socket, channel="terminal") as person:
            person.remember("opencode", "git", "Never run `git push --force` on main",
                            kind="lesson", tags=["hard-rule"])
        ran = drive(plugin, repo, [bash("before", "call_1", "git push --force origin main"),
                                   bash("after", "call_1", "git push --force origin main")])
    finally:
        running.stop()
    before, after = ran["results"]
    assert "threw" not in before and "threw" not in after
    assert "Never run `git push --force` on main" in after["output"]["output"]


def with_command(plugin: Path, command: list[str], to: Path) -> Path:
    """The installed plugin with another command for `memory`."""
    text = plugin.read_text()
    line = next(x for x in text.splitlines() if x.endswith("// memoryd:command"))
    to.write_text(text.replace(line, f"const COMMAND = {json.dumps(command)} // memoryd:command"))
    return to


@pytest.mark.parametrize("memory", [
    "daemon down", "missing",
    pytest.param("hangs", marks=pytest.mark.slow)])  # ~9 s: waits out the plugin's deadline
def test_with_the_daemon_down_or_memory_missing_or_hung_the_plugin_does_nothing_in_time(
        memoryd_home, tmp_path, memory) -> None:
    repo = git_repository(tmp_path / "shop")
    plugin = installed_plugin()
    if memory == "missing":
        plugin = with_command(plugin, [str(tmp_path / "no-such-memory")], tmp_path / "p.js")
    elif memory == "hangs":  # a `memory` that never answers: killed at the deadline
        hung = tmp_path / "memory"
        hung.write_text("#!/bin/sh\nexec sleep 60\n")
        hung.chmod(0o755)
        plugin = with_command(plugin, [str(hung)], tmp_path / "p.js")
    steps = [session_created(repo), system(), bash("before", "call_1", "git push --force"),
             bash("after", "call_1", "pip install requests")]
    ran = drive(plugin, repo, steps)
    created, shown, before, after = ran["results"]
    assert all("threw" not in r for r in ran["results"]), ran
    assert shown["output"]["system"] == ["You are opencode, an interactive CLI tool."]
    assert before["output"] == steps[2]["output"]
    assert after["output"]["output"] == "Successfully installed requests\n"
    # within the plugin's deadlines (5 s at session start, 2 s per tool call; the block asked
    # for at session.created is not asked for again by the system prompt); the hook itself
    # gives up on an unreachable daemon at once (bench/bench_hooks.py measures it)
    assert created["ms"] < 5500 and shown["ms"] < 500
    assert before["ms"] < 2500 and after["ms"] < 2500


def test_install_writes_the_plugin_and_uninstall_removes_exactly_it(memoryd_home, tmp_path
                                                                    ) -> None:
    home = Path(os.environ["HOME"])
    plugins = home / ".config" / "opencode" / "plugins"
    plugin = installed_plugin()
    text = plugin.read_text()
    assert "memoryd-opencode-plugin:" in text
    assert f'"MEMORYD_HOME": "{memoryd_home}"' in text  # the daemon the install was made for
    command = json.loads(text.split("const COMMAND = ", 1)[1].split(" // memoryd:command")[0])
    assert Path(command[0]).is_absolute()
    again = run_cli("hook", "install", "opencode")
    assert again.returncode == 0 and "already installed" in again.stdout
    gone = run_cli("hook", "uninstall", "opencode")
    assert gone.returncode == 0 and "removed the memoryd plugin" in gone.stdout
    assert not (home / ".config").exists()  # what install created, and nothing else, is gone

    # the user's own plugins stay; a file of memoryd's name that is not memoryd's is refused
    plugins.mkdir(parents=True)
    (plugins / "notify.js").write_text("export default { id: 'notify', server: async () => ({}) }\n")
    installed_plugin()
    assert run_cli("hook", "uninstall", "opencode").returncode == 0
    assert sorted(p.name for p in plugins.iterdir()) == ["notify.js"]
    mine = "// my own memoryd plugin\nexport default { id: 'mine', server: async () => ({}) }\n"
    (plugins / "memoryd.js").write_text(mine)
    refused = run_cli("hook", "install", "opencode")
    assert refused.returncode == 1 and "is not memoryd's plugin" in refused.stderr
    kept = run_cli("hook", "uninstall", "opencode")
    assert kept.returncode == 0 and "left as it is" in kept.stdout
    assert (plugins / "memoryd.js").read_text() == mine


def test_a_project_plugin_stays_out_of_git(memoryd_home, tmp_path) -> None:
    repo = git_repository(tmp_path / "shop")
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_text() if exclude.exists() else None
    done = run_cli("hook", "install", "opencode", "--project", str(repo))
    assert done.returncode == 0, done.stderr
    assert (repo / ".opencode" / "plugins" / "memoryd.js").is_file()
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"],
                            capture_output=True, text=True, check=True).stdout
    assert status == ""
    assert run_cli("hook", "uninstall", "opencode", "--project", str(repo)).returncode == 0
    assert not (repo / ".opencode").exists()
    assert (exclude.read_text() if exclude.exists() else None) == before
    missing = run_cli("hook", "install", "opencode", "--project", str(tmp_path / "nope"))
    assert missing.returncode == 2 and not (tmp_path / "nope").exists()


def test_doctor_checks_the_installed_plugin(daemon, memoryd_home) -> None:
    plugin = installed_plugin()
    shown = run_cli("doctor")
    line = next(x for x in shown.stdout.splitlines() if "hooks opencode" in x)
    assert "5 hooks, running" in line and str(plugin).replace(os.environ["HOME"], "~") in line
    text = plugin.read_text()
    old = next(x for x in text.splitlines() if x.endswith("// memoryd:command"))
    plugin.write_text(text.replace(old, 'const COMMAND = ["/nonexistent/memory"] '
                                        "// memoryd:command"))
    shown = run_cli("doctor")
    line = next(x for x in shown.stdout.splitlines() if "hooks opencode" in x)
    assert "runs /nonexistent/memory, which does not exist" in line
    assert "memory hook install opencode" in shown.stdout


def test_one_memory_process_answers_a_whole_session(memoryd_home, embedder, tmp_path) -> None:
    """The plugin lives as long as OpenCode: one `memory hook opencode --serve` answers every
    event of the session (a process started per event cost each tool call two process starts),
    with the same answers, and it ends when OpenCode does."""
    repo = git_repository(tmp_path / "shop")
    plugin = installed_plugin()
    command = json.loads(plugin.read_text().split("const COMMAND = ", 1)[1]
                         .split(" // memoryd:command")[0])
    started = tmp_path / "started.log"
    counting = tmp_path / "memory"
    counting.write_text(f'#!/bin/sh\necho "$$ $*" >> {started}\nexec {" ".join(command)} "$@"\n')
    counting.chmod(0o755)
    plugin = with_command(plugin, [str(counting)], tmp_path / "p.js")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as agent:
            agent.remember("opencode", "tooling", "Use uv, not pip", kind="lesson", cwd=str(repo))
        ran = drive(plugin, repo, [
            session_created(repo), system(),
            bash("before", "call_1", "pip install requests"),
            bash("after", "call_1", "pip install requests"),
            bash("before", "call_2", "ls -la"), bash("after", "call_2", "ls -la"),
            bash("before", "call_3", "pip install rich"),
            bash("after", "call_3", "pip install rich"),
            {"hook": "event", "input": {"event": {"type": "session.idle",
                                                  "properties": {"sessionID": SESSION}}}}])
        with Client(running.socket) as reader:
            events = [i["event"] for i in reader.explain(SESSION)["injections"]]
    finally:
        running.stop()
    results = ran["results"]
    assert all("threw" not in r for r in results), results
    assert "Use uv, not pip" in results[1]["output"]["system"][1]
    assert "Use uv, not pip" in results[3]["output"]["output"]
    assert results[5]["output"]["output"] == "Successfully installed requests\n"
    assert "Use uv, not pip" in results[7]["output"]["output"]
    assert events == ["SessionStart", "PostToolUse", "PostToolUse"]
    [line] = started.read_text().splitlines()
    pid, _, args = line.partition(" ")
    assert args == "hook opencode --serve"

    def ended() -> bool:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(ended, timeout_s=10)  # its stdin closed as node (OpenCode) quit


def test_a_memory_process_that_ends_is_started_again_at_the_next_event(
        memoryd_home, embedder, tmp_path) -> None:
    """The process answering the plugin may end (killed, upgraded, out of memory): the next
    event starts another, and nothing of the session is lost. Here each one answers one event
    and ends."""
    repo = git_repository(tmp_path / "shop")
    plugin = installed_plugin()
    command = json.loads(plugin.read_text().split("const COMMAND = ", 1)[1]
                         .split(" // memoryd:command")[0])
    started = tmp_path / "started.log"
    once = tmp_path / "memory"
    once.write_text(f'#!/bin/sh\necho "$*" >> {started}\n'
                    f'head -n 1 | {" ".join(command)} "$@"\n')
    once.chmod(0o755)
    plugin = with_command(plugin, [str(once)], tmp_path / "p.js")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as agent:
            agent.remember("opencode", "tooling", "Use uv, not pip", kind="lesson", cwd=str(repo))
        ran = drive(plugin, repo, [session_created(repo), system(),
                                   bash("after", "call_1", "pip install requests"),
                                   bash("after", "call_2", "pip install rich")])
    finally:
        running.stop()
    _, shown, first, second = ran["results"]
    assert "Use uv, not pip" in shown["output"]["system"][1]
    assert "Use uv, not pip" in first["output"]["output"]
    assert "Use uv, not pip" in second["output"]["output"]
    assert started.read_text().splitlines() == ["hook opencode --serve"] * 3
