"""The memory tools (seed 000): confined, atomic, journaled; from the CLI and over MCP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from memoryd_client import (
    BadParamsError,
    Client,
    ForbiddenError,
    MemorydError,
    NotFoundError,
    UnavailableError,
)

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
                with pytest.raises(UnavailableError, match="(?i)read-only file system") as failed:
                    c.file(action, "coder", "CONTEXT.md", **fields)
                assert "nothing of this request was kept" in failed.value.message
            with pytest.raises(UnavailableError, match="Read-only file system"):
                c.file("write", "tester", "new.md", text="- a note\n")  # no directory yet
            assert c.file("read", "coder", "CONTEXT.md")["text"] == "- uses ruff\n"
            with pytest.raises(NotFoundError):  # nothing journaled
                c.history("file:coder:CONTEXT.md")
    finally:
        running.stop()


# -- writing a file someone else is writing (the passes' safe write: memoryd.passes.user_files) --

BOB = "# Bob\n\n## Learnings\n\n- [2026-04-01] seed line alpha\n"


def bob_file(memoryd_home, name: str, data: bytes, mode: int = 0o644):  # type: ignore[no-untyped-def]
    root = memoryd_home / "agents" / "bob"
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_bytes(data)
    path.chmod(mode)
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="leases are Linux's")
def test_a_file_held_open_for_writing_is_left_as_it_is(client: Client, memoryd_home) -> None:
    """A logger or `tee -a` holds the file open to append: an insert renamed a new file over
    it, and the writer's next line went into the replaced one (lost); the file's 0644 became
    0600. The tool now refuses, like forget and the passes, and the writer's lines stay."""
    path = bob_file(memoryd_home, "t1.md", BOB.encode())
    with open(path, "a", buffering=1) as appender:
        appender.write("- user line BEFORE tool\n")
        with pytest.raises(UnavailableError, match="holds it open for writing") as refused:
            client.file("insert", "bob", "t1.md", line=0, text="<!-- tool -->")
        assert "nothing of this request was kept" in refused.value.message
        appender.write("- user line AFTER tool (same open handle)\n")
    assert path.read_text() == BOB + "- user line BEFORE tool\n" \
        "- user line AFTER tool (same open handle)\n"
    assert os.stat(path).st_mode & 0o777 == 0o644
    with pytest.raises(NotFoundError):  # no version of a write that was not made
        client.history("file:bob:t1.md")
    client.file("insert", "bob", "t1.md", line=0, text="<!-- tool -->")  # once it is closed
    assert path.read_text().startswith("<!-- tool -->\n# Bob\n")


def test_an_edit_made_between_the_tools_read_and_its_write_is_kept(
        client: Client, memoryd_home, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user saves the file after the tool read it and before it wrote: the tool wrote its
    text over theirs. It now writes only if the file still holds what it read, and otherwise
    fails saying so (the caller reads again and retries); nothing of it is recorded."""
    from memoryd.server import memory_files

    path = bob_file(memoryd_home, "t1.md", BOB.encode())
    append_delta = memory_files.append_delta

    def user_saves_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        with open(path, "a") as editor:
            editor.write("- user line saved meanwhile\n")
        return append_delta(*args, **kwargs)

    monkeypatch.setattr(memory_files, "append_delta", user_saves_meanwhile)
    for action, fields in (("insert", {"line": 0, "text": "<!-- tool -->"}),
                           ("replace", {"old": "seed line alpha", "new": "seed line beta"}),
                           ("write", {"text": "# Bob\n"})):
        with pytest.raises(MemorydError, match="changed while memoryd wrote it") as changed:
            client.file(action, "bob", "t1.md", **fields)
        assert "read it again and retry" in changed.value.message
    assert path.read_text() == BOB + "- user line saved meanwhile\n" * 3
    with pytest.raises(NotFoundError):
        client.history("file:bob:t1.md")
    monkeypatch.setattr(memory_files, "append_delta", append_delta)
    client.file("replace", "bob", "t1.md", old="seed line alpha", new="seed line beta")
    assert path.read_text() == (BOB + "- user line saved meanwhile\n" * 3).replace("alpha", "beta")


def test_an_edit_written_into_the_file_the_tools_rename_replaced_is_carried_over(
        client: Client, memoryd_home, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor that rewrites the file in place at the instant of the tool's rename writes
    into the replaced file: its edit is carried onto the tool's text, and the version
    recorded is the text the tool wrote."""
    from memoryd.passes import user_files

    path = bob_file(memoryd_home, "t1.md", BOB.encode())
    theirs = (BOB + "- user line saved at the rename\n").encode()
    rename = os.replace
    raced: list[bool] = []

    def editor_at_the_rename(source, target) -> None:  # type: ignore[no-untyped-def]
        racing = not raced and os.fspath(target) == str(path)  # the tool's own rename
        editor = os.open(path, os.O_WRONLY) if racing else None
        rename(source, target)
        if editor is not None:
            raced.append(True)
            os.ftruncate(editor, 0)
            os.pwrite(editor, theirs, 0)
            os.close(editor)

    monkeypatch.setattr(user_files.os, "replace", editor_at_the_rename)
    client.file("insert", "bob", "t1.md", line=0, text="<!-- tool -->")
    monkeypatch.setattr(user_files.os, "replace", rename)
    assert path.read_text() == "<!-- tool -->\n" + theirs.decode()
    [version] = client.history("file:bob:t1.md")["events"]
    assert version["after"]["text"] == "<!-- tool -->\n" + BOB


@pytest.mark.parametrize("action", ["write", "replace", "insert"])
def test_an_edit_keeps_the_files_mode(client: Client, memoryd_home, action: str) -> None:
    """A 0644 file became 0600 once a tool wrote it."""
    path = bob_file(memoryd_home, "t1.md", BOB.encode(), mode=0o644)
    fields = {"write": {"text": BOB + "- more\n"}, "insert": {"line": 0, "text": "# Top"},
              "replace": {"old": "alpha", "new": "beta"}}[action]
    client.file(action, "bob", "t1.md", **fields)
    assert path.read_text() != BOB and os.stat(path).st_mode & 0o777 == 0o644


def test_an_edit_keeps_the_files_line_endings(client: Client, memoryd_home) -> None:
    """An insert or a replace in a CRLF file added LF lines: mixed endings."""
    crlf = BOB.replace("\n", "\r\n").encode()
    path = bob_file(memoryd_home, "crlf.md", crlf)
    client.file("insert", "bob", "crlf.md", line=4, text="- [2026-04-02] one\n- [2026-04-02] two")
    client.file("replace", "bob", "crlf.md", old="seed line alpha\n",  # as `read` shows it
                new="seed line alpha,\n  continued\n")
    assert path.read_bytes() == crlf.replace(
        b"## Learnings\r\n", b"## Learnings\r\n- [2026-04-02] one\r\n- [2026-04-02] two\r\n"
    ).replace(b"seed line alpha\r\n", b"seed line alpha,\r\n  continued\r\n")
    before = path.read_bytes()
    client.file("write", "bob", "crlf.md", text=client.file("read", "bob", "crlf.md")["text"])
    assert path.read_bytes() == before  # a text read and written back is as it was
    versions = client.history("file:bob:crlf.md")["events"]
    assert versions[-1]["after"]["text"].encode() == before  # the bytes written


def test_an_insert_at_the_top_goes_after_the_byte_order_mark(client: Client,
                                                             memoryd_home) -> None:
    """It went before the mark, which then read as part of the heading (a paragraph
    ``\\ufeff# BOMtool`` in the index)."""
    path = bob_file(memoryd_home, "bom.md", b"\xef\xbb\xbf" + BOB.encode())
    client.file("insert", "bob", "bom.md", line=0, text="# BOMtool")
    assert path.read_bytes() == b"\xef\xbb\xbf# BOMtool\n" + BOB.encode()
    [version] = client.history("file:bob:bom.md")["events"]
    assert version["after"]["text"] == "\ufeff# BOMtool\n" + BOB  # the bytes written


def test_a_hard_linked_file_is_left_as_it_is(client: Client, memoryd_home) -> None:
    """A rename broke the link: the other name kept the old text. Refused, as forget does."""
    path = bob_file(memoryd_home, "linked.md", BOB.encode())
    os.link(path, memoryd_home / "other-name.md")
    with pytest.raises(UnavailableError, match="2 hard links"):
        client.file("insert", "bob", "linked.md", line=0, text="<!-- tool -->")
    assert path.read_text() == BOB and os.stat(path).st_nlink == 2
