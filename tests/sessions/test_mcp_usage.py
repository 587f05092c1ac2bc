"""Issue 37 §1: what an agent reads through its MCP tools counts as injected into its session,
and is judged from the session's transcript like the block's and the prompt hook's. Through
the real daemon, the real hook processes and the real MCP server process, started by an
"agent" process as Claude Code starts it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.client.test_mcp import text_of
from tests.conftest import run_cli, wait_until
from tests.sessions.test_usage import SESSION, claude_transcript, hook

OTHER = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
PNPM = "Use pnpm, not npm, to install packages"
#: An agent process: it runs its SessionStart hook, then its MCP server on its own stdin and
#: stdout, as Claude Code does (both are its children).
AGENT = r"""
import os, subprocess, sys
subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "claude-code", "SessionStart"],
               input=os.environ["AGENT_HOOK_PAYLOAD"], text=True, check=True,
               stdout=subprocess.DEVNULL)
sys.exit(subprocess.run([sys.executable, "-m", "memoryd_client", "mcp", "--agent",
                         "claude-code"]).returncode)
"""


def payload(shop: Path, session: str) -> dict:
    return {"session_id": session, "transcript_path": str(shop / f"{session}.jsonl"),
            "cwd": str(shop), "source": "startup"}


def agent_reads(shop: Path, calls: list[tuple[str, dict]]) -> list:
    """The agent of session SESSION starts (its hook, its MCP server); meanwhile another
    session of the same agent starts in the same project, from another process, and is the
    one seen last; then the agent makes ``calls``."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "AGENT_HOOK_PAYLOAD": json.dumps(
        {**payload(shop, SESSION), "hook_event_name": "SessionStart"})}
    for name in ("CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID"):
        env.pop(name, None)

    async def run() -> list:
        params = StdioServerParameters(command=sys.executable, args=["-c", AGENT], env=env,
                                       cwd=shop)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            hook("claude-code", "SessionStart", payload(shop, OTHER))
            return [await mcp.call_tool(name, args) for name, args in calls]

    return asyncio.run(run())


def test_an_mcp_read_is_injected_into_its_session_and_judged(daemon, client, tmp_path) -> None:
    shop, api = tmp_path / "shop", tmp_path / "api"
    for repo in (shop, api):
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    pnpm = client.remember("claude-code", "tooling", PNPM, kind="lesson", polarity="positive",
                           cwd=str(api))["entry"]["id"]  # another project's: not in shop's block
    force = client.remember("claude-code", "git", "Never force-push to main", kind="lesson",
                            polarity="negative")["entry"]["id"]  # global: in every block
    searched, got, block = agent_reads(shop, [
        ("memory_search", {"query": "how to install packages", "projects": "all"}),
        ("memory_get", {"entry_id": pnpm}), ("memory_context", {})])
    assert "Never force-push to main" in text_of(block)
    assert pnpm in text_of(searched) and PNPM in text_of(got)
    claude_transcript(shop / f"{SESSION}.jsonl", SESSION, [
        ("user", "add left-pad"), ("bash", "npm install left-pad"),
        ("user", "no, we use pnpm here")])
    hook("claude-code", "SessionEnd", {**payload(shop, SESSION), "reason": "other"})
    wait_until(lambda: client.get(pnpm)["usage"]["pending"] == 0
               and client.get(pnpm)["usage"]["injected"] == 1)
    assert client.get(pnpm)["usage"]["broken"] == 1

    shown = run_cli("explain", SESSION)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = next(i for i, line in enumerate(lines)
              if f"MCP memory_search for claude-code (session {SESSION})" in line)
    read = lines[at:at + 5]
    assert f"    lessons   {pnpm}, " in read[1] and read[2] == f"        - {PNPM} [tooling]"
    assert read[3] == "        why: the agent read it through its MCP tool memory_search"
    assert read[4].startswith("        outcome: broken: Bash: npm install left-pad")
    assert any(f"MCP memory_get for claude-code (session {SESSION})" in line for line in lines)
    at = next(i for i, line in enumerate(lines)
              if f"MCP memory_context for claude-code (session {SESSION})" in line)
    assert f"    lessons   {force}, " in lines[at + 1]
    # in two sessions: this one (its block and the read count once) and the other's block
    assert client.get(force)["usage"]["injected"] == 2
    items = [i for inj in json.loads(run_cli("explain", SESSION, "--json").stdout)["injections"]
             for i in inj["items"] if i["id"] == pnpm]
    assert [i["outcome"] for i in items] == ["broken", "broken"]
    other = run_cli("explain", OTHER)  # the session seen last, of another agent process
    assert other.returncode == 0 and "MCP" not in other.stdout


def test_which_session_an_mcp_read_belongs_to() -> None:
    """The session id the server's environment names while it is live; else the session whose
    hooks share the nearest ancestor with the server; else the latest in its project."""
    from memoryd.sessions.mcp_reads import Reader, session_of
    from memoryd.store.usage import LiveSession

    live = [LiveSession("b", "/src/shop", 200.0), LiveSession("a", "/src/shop", 100.0),
            LiveSession("c", "/src/api", 50.0)]
    hooks = {"a": (4001, 4000, 1000), "b": (5001, 5000, 1000), "c": (6000, 1000)}
    server = Reader("claude-code", "/src/shop", (4000, 1000, 900), 90.0, None)
    assert session_of(server, None, live, hooks) == "a"  # its agent process: 4000
    assert session_of(server, None, live, {}) == "b"  # no hooks: the latest in its project
    hinted = Reader("claude-code", "/src/shop", (4000, 1000), 90.0, "z")
    assert session_of(hinted, None, live, hooks) == "z"  # named, not known yet: the watcher's
    assert session_of(hinted, True, live, hooks) == "a"  # named, ended (after /clear)
    elsewhere = Reader("claude-code", "/src/web", (7000,), 90.0, None)
    assert session_of(elsewhere, None, live, hooks) is None
