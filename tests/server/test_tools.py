"""The memory tools (seed 000): confined, atomic, journaled; from the CLI and over MCP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from memoryd_client import BadParamsError, Client, ForbiddenError, NotFoundError, UnavailableError

from tests.conftest import run_cli, start_daemon


def test_write_replace_insert_read_list(client: Client, memoryd_home) -> None:
    assert client.file("write", "coder", "CONTEXT.md", text="# Coder\n- uses ruff\n")["created"]
    with pytest.raises(BadParamsError, match="found 0 matches"):
        client.file("replace", "coder", "CONTEXT.md", old="flake8", new="ruff")
    client.file("write", "coder", "notes/deploy.md", text="a\nb\na\n")
    with pytest.raises(BadParamsError, match="found 2 matches"):
        client.file("replace", "coder", "notes/deploy.md", old="a", new="c")
    client.file("replace", "coder", "CONTEXT.md", old="uses ruff", new="uses ruff, not flake8")
    client.file("insert", "coder", "CONTEXT.md", line=2, text="- [2026-11-22] prefers small commits")
    text = client.file("read", "coder", "CONTEXT.md")["text"]
    assert text == "# Coder\n- [2026-11-22] prefers small commits\n- uses ruff, not flake8\n"
    listed = {f["path"] for f in client.file("list", "coder")["files"]}
    assert listed == {"CONTEXT.md", "notes/deploy.md"}
    assert (memoryd_home / "agents" / "coder" / "CONTEXT.md").read_text() == text
    events = client.history("file:coder:CONTEXT.md")["events"]
    assert [e["action"] for e in events] == ["file.write", "file.replace", "file.insert"]
    assert events[1]["before"]["text"] == "# Coder\n- uses ruff\n"  # nothing lost


def test_a_file_named_in_another_encoding_does_not_break_the_listing(client: Client,
                                                                      memoryd_home) -> None:
    """A file whose name is not UTF-8 cannot be named to the tools nor sent: the listing
    leaves it out and lists the others (the daemon failed to send the reply, and the agent
    saw the connection close)."""
    client.file("write", "coder", "CONTEXT.md", text="# Coder\n- uses ruff\n")
    root = os.fsencode(memoryd_home / "agents" / "coder")
    with open(root + b"/caf\xe9.md", "w") as latin1:
        latin1.write("- Latin-1 notes\n")
    assert [f["path"] for f in client.file("list", "coder")["files"]] == ["CONTEXT.md"]


def test_an_edit_keeps_the_bytes_of_a_file_that_are_not_utf8(client: Client,
                                                             memoryd_home) -> None:
    """A memory file saved by a Latin-1 editor: the tools read it with the bytes shown as
    U+FFFD, and an edit elsewhere in it leaves those bytes as they were."""
    root = memoryd_home / "agents" / "coder"
    root.mkdir(parents=True)
    (root / "CONTEXT.md").write_bytes(b"# Coder\n- the caf\xe9 menu is cached\n- uses ruff\n")
    assert client.file("read", "coder", "CONTEXT.md")["text"] == \
        "# Coder\n- the caf\ufffd menu is cached\n- uses ruff\n"
    client.file("replace", "coder", "CONTEXT.md", old="uses ruff", new="uses ruff, not flake8")
    client.file("insert", "coder", "CONTEXT.md", line=2, text="- prefers small commits")
    assert (root / "CONTEXT.md").read_bytes() == (
        b"# Coder\n- prefers small commits\n- the caf\xe9 menu is cached\n"
        b"- uses ruff, not flake8\n")
    events = client.history("file:coder:CONTEXT.md")["events"]
    assert [e["action"] for e in events] == ["file.replace", "file.insert"]


@pytest.mark.parametrize("path", ["../other/x.md", "/etc/passwd", "a/../../x.md", "escape/x.md"])
def test_paths_leaving_the_directory_are_refused(client: Client, memoryd_home, path: str) -> None:
    root = memoryd_home / "agents" / "coder"
    root.mkdir(parents=True)
    (root / "escape").symlink_to("/tmp", target_is_directory=True)
    with pytest.raises(ForbiddenError):
        client.file("write", "coder", path, text="x")
    with pytest.raises(ForbiddenError):
        client.file("read", "coder", path)


def test_written_files_are_indexed(client: Client) -> None:
    client.file("write", "designer", "lessons.md", text="## Mistakes\n- Never ship stickers without a bleed margin.\n")
    import time

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        hits = client.search("bleed margin", agent="designer", match=True)["hits"]
        if hits:
            break
        time.sleep(0.05)
    assert hits[0]["kind"] == "lesson" and hits[0]["polarity"] == "negative"


def test_cli_file_commands(daemon) -> None:
    empty = run_cli("file", "list", "--agent", "ops")  # says where it looked
    assert empty.returncode == 0 and empty.stdout == ""
    assert "no files yet in " in empty.stderr and empty.stderr.rstrip().endswith("ops")
    assert run_cli("file", "write", "--agent", "ops", "runbook.md", "--text", "- restart with care\n").returncode == 0
    assert run_cli("file", "read", "--agent", "ops", "runbook.md").stdout == "- restart with care\n"
    listed = run_cli("file", "list", "--agent", "ops")
    assert listed.stdout.rstrip().endswith("runbook.md") and listed.stderr == ""
    versions = run_cli("history", "file:ops:runbook.md")
    assert versions.returncode == 0 and "file.write file:ops:runbook.md" in versions.stdout
    never = run_cli("history", "file:ops:runbok.md")  # a file the tools never wrote
    assert never.returncode == 1
    assert "no versions of 'file:ops:runbok.md'" in never.stderr, never.stderr
    assert "memory file list --agent ops" in never.stderr
    refused = run_cli("file", "read", "--agent", "ops", "../../etc/passwd")
    assert refused.returncode == 1 and "'..' is not allowed" in refused.stderr


def test_mcp_session_lists_tools_and_round_trips(daemon) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def session() -> dict:
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "memoryd_client", "mcp", "--agent", "coder"],
                                       env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                tools = {t.name: t for t in (await mcp.list_tools()).tools}
                await mcp.call_tool("memory_write", {"path": "CONTEXT.md", "text": "- likes tea\n"})
                await mcp.call_tool("memory_replace", {"path": "CONTEXT.md", "old": "tea", "new": "green tea"})
                read_back = await mcp.call_tool("memory_read", {"path": "CONTEXT.md"})
                twice = await mcp.call_tool("memory_replace", {"path": "CONTEXT.md", "old": "x", "new": "y"})
                escape = await mcp.call_tool("memory_read", {"path": "../../etc/passwd"})
                remembered = await mcp.call_tool("memory_remember", {"text": "The CI runs on two cores", "category": "ci"})
                return {"tools": tools, "read": read_back, "twice": twice, "escape": escape,
                        "remembered": remembered}

    result = asyncio.run(session())
    assert {"memory_list", "memory_read", "memory_write", "memory_replace", "memory_insert",
            "memory_search", "memory_remember", "memory_forget"} <= set(result["tools"])
    assert all(len(t.description or "") > 60 for t in result["tools"].values())
    assert result["read"].content[0].text == "- likes green tea\n"
    assert result["twice"].is_error and "found 0 matches" in result["twice"].content[0].text
    assert result["escape"].is_error and "not allowed" in result["escape"].content[0].text
    assert json.loads(result["remembered"].content[0].text)["stored"] is True


@pytest.mark.parametrize(("path", "why"), [(("x" * 250 + "/") * 16 + "y" * 70 + ".md", "too long once in"),
                                           ("a/" * 2046 + "x.md", "2047 names deep"),
                                           ("a/" * 1000 + "deep.md", "1001 names deep")])
def test_a_path_too_long_for_the_file_system_is_a_clear_error(client: Client, path: str,
                                                              why: str) -> None:
    """Within the request's own limits (4,096 bytes, names of 255) but too long, or too deep,
    once under the memory directory: a bad_params answer, not an internal error."""
    with pytest.raises(BadParamsError, match=why):
        client.file("write", "coder", path, text="- a note\n")
    assert client.file("list", "coder")["files"] == []


@pytest.fixture
def read_only_memory_dir(memoryd_home, monkeypatch: pytest.MonkeyPatch):
    """The agents' memory directories on a tmpfs that is read-only (skipped where this process
    cannot mount one): root writes through file permissions, not through a read-only mount."""
    mount = memoryd_home / "ro"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        (mount / "coder").mkdir()
        (mount / "coder" / "CONTEXT.md").write_text("- uses ruff\n")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        monkeypatch.setenv("MEMORYD_TOOLS_MEMORY_DIR", str(mount / "{agent}"))
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_writing_into_a_read_only_memory_directory_is_unavailable(read_only_memory_dir,
                                                                 embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            for action, fields in (("write", {"text": "- uses ruff, not flake8\n"}),
                                   ("replace", {"old": "ruff", "new": "black"}),
                                   ("insert", {"line": 1, "text": "- small commits"})):
                with pytest.raises(UnavailableError, match="Read-only file system") as failed:
                    c.file(action, "coder", "CONTEXT.md", **fields)
                assert "nothing of this request was kept" in failed.value.message
            with pytest.raises(UnavailableError, match="Read-only file system"):
                c.file("write", "tester", "new.md", text="- a note\n")  # no directory yet
            assert c.file("read", "coder", "CONTEXT.md")["text"] == "- uses ruff\n"
            with pytest.raises(NotFoundError):  # nothing journaled
                c.history("file:coder:CONTEXT.md")
    finally:
        running.stop()
