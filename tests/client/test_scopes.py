"""Every write path keeps a project's lessons in its project (N1 of the 2026-11-28 report): the
MCP server, the hooks (compact summaries, extraction at session end), the library and the CLI
take the project from the directory they work in, and a lesson written in one repository is
absent from an unrelated repository's block. Relative paths mean the caller's directory (N5),
and `--here` is this repository's entries and the global ones (N9)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from memoryd_client import AsyncClient, BadParamsError, Client

from tests.client.test_mcp import mcp_session, text_of
from tests.conftest import run_cli, run_hook
from tests.sessions.test_extractor import CORRECTIONS, SESSION, end_session, transcript

LESSON = "In this repo, run tests with make test"


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path]:
    shop, other = tmp_path / "shop", tmp_path / "other"
    for repo in (shop, other):
        (repo / ".git").mkdir(parents=True)
        (repo / "tests").mkdir()
    return shop, other


def block(client: Client, cwd: Path, agent: str = "claude-code") -> str:
    return client.context(agent, cwd=str(cwd))["text"]


def test_mcp_remember_stays_in_the_repository_the_server_runs_in(daemon, client, repos) -> None:
    shop, other = repos
    session = mcp_session([
        ("memory_remember", {"text": LESSON, "kind": "lesson", "category": "testing"}),
        ("memory_remember", {"text": "Answer in British English", "kind": "lesson",
                             "category": "style", "scope": "global"}),
        ("memory_context", {}),
    ], agent="claude-code", cwd=shop / "tests")
    project, everywhere, context = session["results"]
    stored, global_ = json.loads(text_of(project)), json.loads(text_of(everywhere))
    assert stored["project"] == str(shop) and client.get(stored["id"])["project"] == str(shop)
    assert global_["project"].startswith("global") and client.get(global_["id"])["project"] is None
    assert LESSON in block(client, shop) and LESSON in text_of(context)  # its own block
    assert LESSON not in block(client, other)
    assert "British English" in block(client, other)
    scope = session["tools"]["memory_remember"].input_schema["properties"]["scope"]
    assert scope["enum"] == ["project", "global"] and scope["default"] == "project"
    assert str(shop) in scope["description"] and "every project" in scope["description"]


def test_mcp_outside_a_repository_says_its_memories_are_global(daemon, client, tmp_path) -> None:
    session = mcp_session([("memory_remember", {"text": LESSON, "kind": "lesson"})],
                          agent="claude-code", cwd=tmp_path)
    [stored] = session["results"]
    assert client.get(json.loads(text_of(stored))["id"])["project"] is None
    scope = session["tools"]["memory_remember"].input_schema["properties"]["scope"]
    assert "outside a git repository" in scope["description"]


def test_a_compact_summary_from_the_hooks_stays_in_its_project(daemon, client, repos) -> None:
    shop, other = repos
    payload = {"session_id": SESSION, "transcript_path": "/tmp/none.jsonl",
               "cwd": str(shop / "tests"), "hook_event_name": "PostCompact", "trigger": "manual",
               "compact_summary": "Refunds are computed in payments/refunds.py; tests use "
                                  "make test."}
    assert run_hook("claude-code", "PostCompact", payload).returncode == 0
    [summary] = client.list_entries(agent="claude-code", kind="summary")["entries"]
    assert summary["project"] == str(shop)
    hits = client.search("where are refunds computed", agent="claude-code", cwd=str(other))
    assert hits["hits"] == []  # the other repository's entries and the global ones: not it


def test_lessons_extracted_at_session_end_stay_in_their_project(daemon, client, repos) -> None:
    shop, other = repos
    path = shop / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS)
    end_session(shop / "tests", path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not client.session(SESSION)["session"]["extracted"]:
        time.sleep(0.05)
    mocks = [e for e in client.list_entries(agent="claude-code", kind="lesson")["entries"]
             if "mocks" in e["text"]]
    assert mocks and all(e["project"] == str(shop) for e in mocks)
    assert "mocks in the integration tests" in block(client, shop)
    assert "mocks in the integration tests" not in block(client, other)


def test_the_library_writes_for_the_project_it_was_started_in(daemon, repos, monkeypatch) -> None:
    shop, other = repos
    monkeypatch.chdir(shop / "tests")
    with Client(daemon.socket) as memory:  # the default: this directory's project
        stored = memory.remember("claude-code", "testing", LESSON, kind="lesson")["entry"]
        everywhere = memory.remember("claude-code", "style", "Answer in British English",
                                     kind="lesson", is_global=True)["entry"]
        elsewhere = memory.remember("claude-code", "deploy", "Deploys go through fly.io",
                                    kind="lesson", cwd=str(other))["entry"]
        assert stored["project"] == str(shop) and everywhere["project"] is None
        assert elsewhere["project"] == str(other)
        assert LESSON not in block(memory, other) and "British English" in block(memory, other)
    with Client(daemon.socket, cwd=None) as memory:  # a harness that decides per call
        assert memory.remember("claude-code", "notes", "Global by default here",
                               kind="lesson")["entry"]["project"] is None

    async def asynchronous() -> dict:
        async with AsyncClient(daemon.socket) as memory:
            return (await memory.remember("claude-code", "notes", "Async too, in the shop",
                                          kind="lesson"))["entry"]

    assert asyncio.run(asynchronous())["project"] == str(shop)


def test_the_cli_stores_for_the_repository_it_runs_in(daemon, client, repos) -> None:
    shop, other = repos
    stored = run_cli("--json", "store", "claude-code", "testing", LESSON, "--kind", "lesson",
                     cwd=str(shop / "tests"))
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["entry"]["project"] == str(shop)
    assert LESSON not in block(client, other)
    # a person is told where it went, and how to store it for every project
    said = run_cli("store", "claude-code", "testing", "Run the linter before pushing.",
                   cwd=str(shop / "tests"))
    assert said.stdout.strip().endswith(f"(project {shop}; --global stores it for every project)")
    everywhere = run_cli("store", "claude-code", "testing", "Push small commits.", "--global",
                         cwd=str(shop))
    assert "project" not in everywhere.stdout, everywhere.stdout


def test_relative_project_and_cwd_are_the_callers_directory(daemon, client, repos) -> None:
    """N5: `--project .` and `--cwd .` were sent as "." and read in the daemon's directory."""
    shop, _ = repos
    client.remember("claude-code", "logging", "Always use the structlog logger", kind="lesson",
                    cwd=str(shop))
    client.remember("claude-code", "git", "Never commit .env files", kind="lesson")
    found = run_cli("search", "claude-code", "-", "structlog logger", "--project", ".",
                    cwd=str(shop))
    assert found.returncode == 0 and "structlog" in found.stdout, found.stderr
    relative = run_cli("context", "--agent", "claude-code", "--cwd", ".", cwd=str(shop))
    absolute = run_cli("context", "--agent", "claude-code", "--cwd", str(shop))
    assert "structlog" in relative.stdout and relative.stdout == absolute.stdout
    up = run_cli("list", "claude-code", "--project", "..", cwd=str(shop / "tests"))
    assert "structlog" in up.stdout and ".env" not in up.stdout
    inside = run_cli("search", "claude-code", "-", "structlog logger", "--project", ".",
                     cwd=str(shop / "tests"))  # a directory of the repository: its project
    assert inside.returncode == 0 and "structlog" in inside.stdout


def test_here_is_this_repository_and_the_global_entries(daemon, client, repos, tmp_path) -> None:
    """N9: `--here` left out the global entries, and outside a repository it said nothing."""
    shop, other = repos
    client.remember("coder", "payments", "Refund logic lives in payments/refunds.py",
                    cwd=str(shop))
    client.remember("coder", "payments", "Refunds are approved by the finance team")  # global
    client.remember("coder", "payments", "Refunds in the other shop are manual", cwd=str(other))
    here = run_cli("search", "coder", "-", "refunds", "--here", "--all", cwd=str(shop / "tests"))
    assert "payments/refunds.py" in here.stdout and "finance team" in here.stdout
    assert "manual" not in here.stdout
    listed = run_cli("list", "coder", "--here", cwd=str(shop))
    assert "payments/refunds.py" in listed.stdout and "finance team" in listed.stdout
    assert "manual" not in listed.stdout
    (tmp_path / "plain").mkdir()
    for command in (["search", "coder", "-", "refunds", "--here"], ["list", "--here"]):
        outside = run_cli(*command, cwd=str(tmp_path / "plain"))
        assert outside.returncode == 2 and outside.stdout == ""
        assert f"not in a git repository ({tmp_path / 'plain'})" in outside.stderr
    helped = run_cli("search", "--help")
    assert "this repository's entries and the global ones" in " ".join(helped.stdout.split())


def test_a_client_in_a_removed_directory_writes_global_entries(daemon, tmp_path,
                                                               monkeypatch) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with Client(daemon.socket) as memory:
        assert memory.remember("coder", "notes", "Written from nowhere")["entry"]["project"] is None
        with pytest.raises(BadParamsError, match="relative"):
            memory.search("nowhere", agent="coder", project=".")
