"""A notebook a merge or a writer is not done with is left as it is (memoryd.passes.unsettled),
and its entries are read as the person will see them once done.

A tester drove git and real writes against a project's CLAUDE.md: ``git merge`` left a conflict
in ``## Learnings``, and the notebook pass sorted the bullets, ``=======`` and ``>>>>>>> b2``
ending up before ``<<<<<<< HEAD``; the markers had been glued to bullets as their text (each
such bullet a new id) and injected at SessionStart. ``cat p1 > CLAUDE.md`` (ending mid-line),
the pass, then ``cat p2 >> CLAUDE.md``: the second half landed at the end of another bullet."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import run_cli, run_hook, start_daemon, wait_until

START = """# Shop

## Learnings
- [2026-05-01] The build uses make, never the IDE's runner.
- [2026-05-20] Deploys go through the staging cluster first.
"""
OURS = "- [2026-06-02] The staging database resets every Sunday night.\n"
THEIRS = "- [2026-06-01] Stashed lesson: the cron runs in UTC.\n"
MARKERS = ("<<<<<<<", "=======", ">>>>>>>")


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                          capture_output=True, text=True, check=check)


def entries(repo: Path) -> dict[str, str]:
    """`memory list --json` of the project: text → id."""
    listed = run_cli("list", "claude-code", "--project", str(repo), "--json", "--limit", "50")
    assert listed.returncode == 0, listed.stderr
    return {e["text"]: e["id"] for e in json.loads(listed.stdout)["entries"]}


def session_start(repo: Path) -> str:
    started = run_hook("claude-code", "SessionStart", {
        "session_id": "0e5b1c1e-4a7e-4d47-9c1f-1f6f2b1c0d11", "cwd": str(repo),
        "hook_event_name": "SessionStart", "source": "startup",
        "transcript_path": str(repo / "t.jsonl")})
    assert started.returncode == 0, started.stderr
    return str(json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"])


def pass_run(repo: Path) -> tuple[str, list[str]]:
    """`memory pass run notebooks --project REPO`: what it prints, and the problems its run
    reports (`memory pass show`)."""
    done = run_cli("pass", "run", "notebooks", "--project", str(repo))
    assert done.returncode == 0, done.stderr
    run = done.stdout.split()[0]
    shown = run_cli("pass", "show", run)
    return done.stdout + done.stderr, [line.strip().removeprefix("why: ")
                                       for line in shown.stdout.splitlines()
                                       if line.strip().startswith("why: left")]


@pytest.fixture
def repo(memoryd_home: Path) -> Path:
    shop = memoryd_home / "user" / "shop"
    shop.mkdir(parents=True)
    git(shop, "init", "-q", "-b", "main")
    (shop / "CLAUDE.md").write_text(START)
    git(shop, "add", "CLAUDE.md")
    git(shop, "commit", "-qm", "start")
    return shop


def test_a_merge_conflict_is_neither_entries_nor_rewritten_until_resolved(
        daemon, client: Client, repo: Path) -> None:
    notebook = repo / "CLAUDE.md"
    assert run_cli("sources", "add", "--project", str(repo)).returncode == 0
    wait_until(lambda: len(entries(repo)) == 2)
    before = entries(repo)
    git(repo, "checkout", "-qb", "b2")
    notebook.write_text(START.replace("- [2026-05-20]", THEIRS + "- [2026-05-20]"))
    git(repo, "commit", "-qam", "b2")
    git(repo, "checkout", "-q", "main")
    notebook.write_text(START.replace("- [2026-05-20]", OURS + "- [2026-05-20]"))
    git(repo, "commit", "-qam", "main")
    assert git(repo, "merge", "b2", check=False).returncode == 1  # the conflict
    conflicted = notebook.read_bytes()
    assert conflicted.count(b"\n<<<<<<< HEAD\n") == 1

    # the bullets on both sides are entries as written; those the merge left keep their ids
    wait_until(lambda: len(entries(repo)) == 4)
    during = entries(repo)
    assert sorted(during) == sorted([*before, OURS[15:-1], THEIRS[15:-1]])
    assert {text: during[text] for text in before} == before
    block = session_start(repo)
    assert "Stashed lesson: the cron runs in UTC. [learnings]" in block
    assert not any(marker in block for marker in MARKERS), block

    # the pass leaves the file as git left it, and says why
    said, problems = pass_run(repo)
    assert "applied" not in said and "see: memory pass show" in said
    assert problems == ["left as it is: it holds merge-conflict markers (a merge not "
                        "finished); the first run after the conflict is resolved checks it"]
    assert notebook.read_bytes() == conflicted

    # resolved in the editor (both kept), not yet added: git still lists it as unmerged
    notebook.write_bytes(b"".join(line for line in conflicted.splitlines(keepends=True)
                                  if not line.startswith(tuple(m.encode() for m in MARKERS))))
    resolved = notebook.read_bytes()
    assert git(repo, "ls-files", "--unmerged").stdout
    wait_until(lambda: entries(repo) == during)  # the same entries, under the same ids
    said, problems = pass_run(repo)
    assert problems == ["left as it is: git lists it as unmerged (a merge not finished); the "
                        "first run after `git add` checks it"]
    assert notebook.read_bytes() == resolved

    git(repo, "add", "CLAUDE.md")
    said, problems = pass_run(repo)
    assert "applied 1" in said and problems == []
    assert notebook.read_text() == (
        "# Shop\n\n## Learnings\n" + OURS + THEIRS +
        "- [2026-05-20] Deploys go through the staging cluster first.\n"
        "- [2026-05-01] The build uses make, never the IDE's runner.\n")
    wait_until(lambda: entries(repo) == during)


def test_a_notebook_being_written_is_left_until_it_is_whole(
        memoryd_home: Path, embedder, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORYD_PASSES_SETTLE_S")  # as a user has it: 2 s
    notebook = repo / "CLAUDE.md"
    lines = ["- [2026-01-03] Backups run nightly at 23:00.",
             "- [2026-01-20] Feature flags are read from Consul, not from env vars.",
             "- [2026-01-11] Logs rotate weekly.",
             "- [2026-01-07] The cache is warmed after each deploy."]
    whole = "# Shop\n\n## Learnings\n" + "\n".join(lines) + "\n"
    first = whole[:whole.index("Featu") + len("Featu")]  # `cat p1 > CLAUDE.md`
    texts = sorted(line[15:] for line in lines)
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            assert run_cli("sources", "add", "--project", str(repo)).returncode == 0
            wait_until(lambda: len(entries(repo)) == 2)
            notebook.write_text(first)
            run = client.pass_run("notebooks", project=str(repo))  # at once
            assert "applied" not in run["counts"]
            [problem] = [c["why"] for c in client.pass_show(run["run"])["changes"]
                         if c["kind"] == "problem"]
            assert problem.startswith("left for a later run: it changed ")
            assert problem.endswith(" s ago, and may still be being written")
            wait_until(lambda: "Backups run nightly at 23:00." in entries(repo))
            backups = entries(repo)["Backups run nightly at 23:00."]
            time.sleep(2.2)
            said, problems = pass_run(repo)  # still for 2 s, but it ends mid-line
            assert len(problems) == 1 and problems[0].startswith(
                "left for a later run: it ends in the middle of a line (no final newline)")
            assert notebook.read_text() == first
            with notebook.open("a") as rest:  # `cat p2 >> CLAUDE.md`
                rest.write(whole[len(first):])
            time.sleep(2.2)
            said, problems = pass_run(repo)
            assert "applied 1" in said and problems == []
            assert notebook.read_text() == "# Shop\n\n## Learnings\n" + "\n".join(
                sorted(lines, reverse=True)) + "\n"
            wait_until(lambda: sorted(entries(repo)) == texts)
            assert entries(repo)["Backups run nightly at 23:00."] == backups

            # a notebook its editor saves without a final newline is checked once still
            notebook.write_text("# Shop\n\n## Learnings\n" + "\n".join(lines))
            wait_until(lambda: sorted(entries(repo)) == texts)
            old = time.time() - 120
            os.utime(notebook, (old, old))
            said, problems = pass_run(repo)
            assert "applied 1" in said and problems == []
            assert notebook.read_text() == "# Shop\n\n## Learnings\n" + "\n".join(
                sorted(lines, reverse=True))
    finally:
        running.stop()
    assert not running.errors, running.errors
