"""Claude Code's auto memory (``~/.claude/projects/<the project's path, encoded>/memory/``)
belongs to the project whose directory Claude Code encoded: found from the transcripts beside
it or the one directory on disk that encodes to the name, never by decoding the lossy name;
indexed as that project's, it stays out of the other projects' blocks and guard, and what an
older memoryd filed global moves there with its history."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memoryd_client import Client

from memoryd.claude_projects import encoded, project_named
from memoryd.embedding.model import Embedder
from tests.conftest import run_cli, run_hook, start_daemon
from tests.ingest.test_ingest import eventually
from tests.sessions.test_pretool import added_context

NOTES = ("## Learnings\n- Alpha feature flags live in LaunchDarkly\n"
         "## Mistakes\n- Never run docker compose down -v here, it wipes the alpha dev database\n")


def git_repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def project_dir(project: Path) -> Path:
    """Where Claude Code keeps the project's transcripts and auto memory."""
    return Path(os.environ["HOME"]) / ".claude/projects" / encoded(str(project))


def transcript(folder: Path, cwd: str, session: str = "s1") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"type": "user", "uuid": "u1", "sessionId": session, "cwd": cwd,
              "message": {"role": "user", "content": "hello"}}
    (folder / f"{session}.jsonl").write_text(json.dumps(record) + "\n")


def auto_memory(client: Client) -> list[dict]:  # type: ignore[type-arg]
    return [e for e in client.list_entries(agent="claude-code", status="any",
                                           limit=100)["entries"]
            if "/.claude/projects/" in (e["source"] or "")]


def indexed(client: Client) -> list[dict]:  # type: ignore[type-arg]
    """The two entries of NOTES, once both are indexed."""
    found = auto_memory(client)
    assert len(found) == 2
    return found


# -- which project a directory's name encodes ----------------------------------------------------

def test_the_name_is_resolved_by_what_is_on_disk_not_by_decoding_it(tmp_path: Path) -> None:
    """``my-app`` and ``my/app`` encode alike: the repository's root is the one Claude Code
    names its auto memory after; two that are not repositories are not guessed between."""
    real = Path(os.path.realpath(tmp_path))
    dashed = git_repository(real / "code/my-app")
    (real / "code/my/app").mkdir(parents=True)
    name = encoded(str(dashed))
    assert name == encoded(str(real / "code/my/app"))
    assert project_named(str(real / "projects" / name), name) == str(dashed)
    assert project_named(str(real / "projects/-x"), encoded(str(real / "code/my/app/src"))) \
        is None  # no such directory: global
    (real / "code/my/app/src").mkdir()
    (real / "code/my-app/src").mkdir()
    subprocess.run(["rm", "-rf", str(dashed / ".git")], check=True)
    assert project_named(str(real / "projects/-x"), encoded(str(real / "code/my-app"))) is None


def test_the_transcripts_beside_it_say_which_directory_it_was(tmp_path: Path) -> None:
    """The ``cwd`` its sessions recorded names it, even once the directory is deleted (or
    another encodes alike); a name over 200 characters, cut and hashed, by them alone."""
    real = Path(os.path.realpath(tmp_path))
    git_repository(real / "code/my-app")
    gone = real / "code/my/app"
    folder = real / "projects" / encoded(str(gone))
    transcript(folder, str(gone))
    assert project_named(str(folder), folder.name) == str(gone)
    long = real / ("deep-" * 45) / "shop"
    cut = encoded(str(long))[:200] + "-1a2b3c"
    assert project_named(str(real / "projects" / cut), cut) is None
    transcript(real / "projects" / cut, str(long / "src"))  # a session that went below
    git_repository(long)
    assert project_named(str(real / "projects" / cut), cut) == str(long)


def test_a_name_claude_code_was_told_to_use_is_global(tmp_path: Path) -> None:
    """``CLAUDE_CODE_PROJECT_DIR_NAME`` names it freely: nothing to find, and a transcript's
    directory that does not encode to it is not taken for it."""
    folder = tmp_path / "projects/team-shared"
    transcript(folder, str(git_repository(tmp_path / "shop")))
    assert project_named(str(folder), "team-shared") is None


# -- through the daemon: the hooks, the listing, an upgrade ---------------------------------------

def test_auto_memory_is_its_projects_alone(daemon, client: Client, tmp_path: Path) -> None:
    real = Path(os.path.realpath(tmp_path))
    alpha, beta = git_repository(real / "code/alpha2"), git_repository(real / "code/beta")
    memory = project_dir(alpha) / "memory/MEMORY.md"
    memory.parent.mkdir(parents=True)
    memory.write_text(NOTES)

    assert [e["project"] for e in eventually(lambda: indexed(client))] == [str(alpha)] * 2
    listed = run_cli("list", "claude-code", "--json")
    assert {e["project"] for e in json.loads(listed.stdout)["entries"]} == {str(alpha)}

    def started(cwd: Path) -> str:
        done = run_hook("claude-code", "SessionStart", {
            "session_id": f"s-{cwd.name}", "cwd": str(cwd), "hook_event_name": "SessionStart",
            "source": "startup"})
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "LaunchDarkly" not in started(beta) and "docker compose" not in started(beta)
    assert "LaunchDarkly" in started(alpha) and "docker compose down -v" in started(alpha)

    def about_to(cwd: Path) -> str | None:
        return added_context(run_hook("claude-code", "PreToolUse", {
            "session_id": f"s-{cwd.name}", "cwd": str(cwd), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "docker compose down -v"}}))

    assert about_to(beta) is None
    warned = about_to(alpha)
    assert warned is not None and "wipes the alpha dev database" in warned
    assert "(this project)" in warned and "(global)" not in warned


def test_auto_memory_filed_global_moves_to_its_project_with_its_history(
        memoryd_home: Path, embedder: Embedder, tmp_path: Path) -> None:
    """What a memoryd that filed it global left (the project was not found then: a memoryd
    before this one, or its directory was not there yet) moves at the next start, without a
    word from the user: each entry under its id, a forgotten one too, whose undo brings its
    line back into the project."""
    alpha = Path(os.path.realpath(tmp_path)) / "code/alpha2"
    memory = project_dir(alpha) / "memory/MEMORY.md"
    memory.parent.mkdir(parents=True)
    memory.write_text(NOTES)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            entries = eventually(lambda: indexed(client))
            assert [e["project"] for e in entries] == [None, None]
            lesson = next(e for e in entries if "docker" in e["text"])
            undo = client.forget(lesson["id"])["edited"]["run"]
            assert "docker" not in memory.read_text()
        running.stop()
        git_repository(alpha)
        running = start_daemon(embedder)
        with Client(running.socket) as client:
            def moved() -> list[dict]:  # type: ignore[type-arg]
                found = indexed(client)
                assert {e["project"] for e in found} == {str(alpha)}
                return found

            after = eventually(moved)
            assert sorted(e["id"] for e in after) == sorted(e["id"] for e in entries)
            assert [e["status"] for e in after if e["id"] == lesson["id"]] == ["forgotten"]
            events = client.history(lesson["id"])["events"]
            assert [e["action"] for e in events][-3:] == ["indexed", "forgotten", "scope"]
            assert client.undo(undo)["counts"]["applied"] == 1
            assert "- Never run docker compose down -v here" in memory.read_text()
            back = client.get(lesson["id"])
            assert (back["status"], back["project"]) == ("active", str(alpha))
    finally:
        running.stop()
