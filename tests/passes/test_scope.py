"""`memory scope ID global|project [DIR]` (issue 37, §3 "scope tiers the user controls"): an
entry moves between the user's global tier and a project, journaled and undoable, kept by a
rebuild; what cannot move is refused with the reason."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memoryd_client import Client

from tests.conftest import (
    reindexed,
    run_cli,
    run_cli_at_terminal,
    start_daemon,
    wait_until,
)


def git_repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def in_block(client: Client, cwd: Path, words: str) -> bool:
    return words in client.context("claude-code", cwd=str(cwd))["text"]


def test_an_entry_moves_to_the_global_tier_and_undo_moves_it_back(daemon, client,
                                                                   tmp_path) -> None:
    shop, blog = git_repository(tmp_path / "shop"), git_repository(tmp_path / "blog")
    stored = run_cli("store", "claude-code", "tooling", "Use uv, not pip", "--kind", "lesson",
                     cwd=str(shop))
    assert stored.returncode == 0, stored.stderr
    [entry] = client.list_entries(agents=["claude-code"])["entries"]
    assert entry["project"] == str(shop)
    assert in_block(client, shop, "Use uv, not pip") and not in_block(client, blog, "Use uv")

    moved = run_cli("scope", entry["id"][:8], "global")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith(f"moved {entry['id']} to the global tier (from project "
                                   f"{shop}); `memory undo r")
    run = moved.stdout.split("`memory undo ")[1].split("`")[0]
    assert client.get(entry["id"])["project"] is None
    assert in_block(client, blog, "Use uv, not pip")  # every project has it now
    again = run_cli("scope", entry["id"], "global")
    assert (again.returncode, again.stdout) == (
        0, f"{entry['id']} is in the global tier already; nothing was changed\n")
    shown = run_cli("pass", "show", run)
    assert f"why: memory scope {entry['id']} global by claude-code (cli): from project " \
        f"{shop}" in shown.stdout

    undone = run_cli("undo", run)
    assert undone.returncode == 0, undone.stderr
    assert client.get(entry["id"])["project"] == str(shop)
    assert not in_block(client, blog, "Use uv")
    actions = [e["action"] for e in client.history(entry["id"])["events"]]
    assert actions == ["remember", "pass scope", "pass undo scope"]


def test_an_entry_moves_into_the_project_of_a_directory_or_of_here(daemon, client,
                                                                    tmp_path) -> None:
    shop = git_repository(tmp_path / "shop")
    (shop / "web").mkdir()
    entry = client.remember("claude-code", "style", "Prefer small commits", kind="lesson",
                            is_global=True)["entry"]
    to_dir = run_cli("scope", entry["id"], "project", str(shop / "web"))
    assert to_dir.returncode == 0, to_dir.stderr
    assert client.get(entry["id"])["project"] == str(shop)  # the repository of the directory
    assert run_cli("scope", entry["id"], "global").returncode == 0
    here = run_cli("scope", entry["id"], "project", cwd=str(shop / "web"))
    assert here.returncode == 0 and client.get(entry["id"])["project"] == str(shop)
    outside = run_cli("scope", entry["id"], "project", str(tmp_path))
    assert outside.returncode == 2
    assert f"{tmp_path} is in no git repository" in outside.stderr
    both = run_cli("scope", entry["id"], "global", str(shop))
    assert both.returncode == 2 and "DIR goes with `project` only" in both.stderr
    assert run_cli("scope", "nosuchentry", "global").returncode == 1
    as_json = json.loads(run_cli("scope", entry["id"], "global", "--json").stdout)
    assert as_json["moved"] is True and as_json["before"] == str(shop) and \
        as_json["undo"].startswith("r")


def test_what_cannot_move_is_refused_with_the_reason_and_left_as_it_was(daemon, client,
                                                                         tmp_path) -> None:
    shop = git_repository(tmp_path / "shop")
    # a line of a memory file belongs where its file is (~/.claude/CLAUDE.md: global)
    claude = Path(os.environ["HOME"]) / ".claude"
    claude.mkdir()
    (claude / "CLAUDE.md").write_text("# Preferences\n\n- Answer in British English.\n")

    def line_entry() -> dict | None:
        hits = client.search("British English", agents=["*"])["hits"]
        return next((h for h in hits if "British English" in h["text"]), None)

    wait_until(lambda: line_entry() is not None)
    line = line_entry()
    assert line is not None
    refused = run_cli("scope", line["id"], "project", str(shop))
    assert refused.returncode == 1
    assert f"is a line of {claude / 'CLAUDE.md'}, which belongs where its file is (the global " \
        "tier); nothing was changed" in refused.stderr
    assert client.get(line["id"])["project"] is None
    # F-9 (2026-11-30): to the tier it is in already: left alone, exit 0 (commands.md), not
    # refused as a move
    already = run_cli("scope", line["id"][:6], "global")
    assert already.returncode == 0, already.stderr
    assert already.stdout.strip() == f"{line['id']} is in the global tier already; nothing " \
        "was changed"

    # the same memory in the tier it would go to
    here = client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson",
                           cwd=str(shop))["entry"]
    there = client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson",
                            is_global=True)["entry"]
    duplicate = run_cli("scope", here["id"], "global")
    assert duplicate.returncode == 1
    assert f"the global tier already holds this memory: entry {there['id']}" in duplicate.stderr
    assert client.get(here["id"])["project"] == str(shop)

    # another value of its key
    local = client.remember("claude-code", "prefs", "tabs", key="pref.indent",
                            cwd=str(shop))["entry"]
    client.remember("claude-code", "prefs", "four spaces", key="pref.indent", is_global=True)
    rival = run_cli("scope", local["id"], "global")
    assert rival.returncode == 1 and "already has a value of pref.indent" in rival.stderr

    # a superseded entry: its current version moves
    newer = client.supersede(here["id"], "Use uv, never pip", agent="claude-code")["entry"]
    old = run_cli("scope", here["id"], "global")
    assert old.returncode == 1 and f"move its current version ({newer['id']})" in old.stderr

    # the user's feedback moves only when a person asks
    with Client(daemon.socket, channel="terminal") as person:
        feedback = person.remember("claude-code", "feedback", "Stop adding emojis",
                                   kind="feedback", cwd=str(shop))["entry"]
    by_script = run_cli("scope", feedback["id"], "global")
    assert by_script.returncode == 1 and "only a person" in by_script.stderr
    typed = run_cli_at_terminal("scope", feedback["id"], "global")
    assert typed.returncode == 0, typed.stderr


def test_a_move_is_kept_by_a_rebuild_and_can_still_be_undone(memoryd_home, embedder,
                                                             tmp_path) -> None:
    shop = git_repository(tmp_path / "shop")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            entry = client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson",
                                    cwd=str(shop))["entry"]
            moved = client.scope(entry["id"], "global")
    finally:
        running.stop()
    running = reindexed(embedder)
    try:
        with Client(running.socket) as client:
            assert client.get(entry["id"])["project"] is None  # the ledger has the move
            assert run_cli("undo", moved["undo"]).returncode == 0
            assert client.get(entry["id"])["project"] == str(shop)
    finally:
        running.stop()


def test_a_moved_repositorys_entries_follow_it_with_move_project(memoryd_home, embedder,
                                                                 tmp_path) -> None:
    """A repository renamed strands the entries stored in it under the old directory: doctor
    counts them, `memory move-project OLD NEW` moves every agent's in one run (a watched
    file's entries follow their file, not the command), undone as one, kept by a rebuild."""
    alpha = git_repository(tmp_path / "code" / "alpha")
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            uv = client.remember("claude-code", "tooling", "Use uv, not pip", kind="lesson",
                                 cwd=str(alpha))["entry"]
            port = client.remember("codex", "infra", "The dev server listens on 8642",
                                   cwd=str(alpha))["entry"]
            old = client.remember("codex", "infra", "Deploys go through staging first",
                                  cwd=str(alpha))["entry"]
            newer = client.supersede(old["id"], "Deploys go through canary first",
                                     agent="codex")["entry"]
            alpha2 = tmp_path / "code" / "alpha2"
            alpha.rename(alpha2)
            assert not in_block(client, alpha2, "Use uv, not pip")  # stranded

            doctor = run_cli("doctor")
            assert f"entries filed under a project directory that no longer exists: {alpha} " \
                "(3 entries)" in doctor.stdout
            assert "memory move-project OLD NEW" in doctor.stdout

            moved = run_cli("move-project", str(alpha), str(alpha2))
            assert moved.returncode == 0, moved.stderr
            assert moved.stdout.startswith(f"moved 4 entries from project {alpha} to project "
                                           f"{alpha2}; `memory undo r")
            run = moved.stdout.split("`memory undo ")[1].split("`")[0]
            for entry in (uv, port, old, newer):
                assert client.get(entry["id"])["project"] == str(alpha2)
            assert in_block(client, alpha2, "Use uv, not pip")
            assert in_block(client, alpha2, "canary")  # codex's own block
            assert "no longer exists" not in run_cli("doctor").stdout
            again = run_cli("move-project", str(alpha), str(alpha2))
            assert again.returncode == 1
            assert f"no entries are filed under project {alpha}" in again.stderr
    finally:
        running.stop()
    running = reindexed(embedder)
    try:
        with Client(running.socket) as client:
            assert client.get(port["id"])["project"] == str(alpha2)  # the ledgers have it
            undone = run_cli("undo", run)
            assert undone.returncode == 0, undone.stderr
            assert {client.get(e["id"])["project"] for e in (uv, port, old, newer)} == {
                str(alpha)}
    finally:
        running.stop()


def test_move_project_leaves_what_the_new_tier_refuses_and_says_why(daemon, client,
                                                                    tmp_path) -> None:
    shop = git_repository(tmp_path / "shop")
    one = client.remember("claude-code", "tooling", "Use uv, not pip", cwd=str(shop))["entry"]
    two = client.remember("claude-code", "style", "Prefer small commits", cwd=str(shop))["entry"]
    there = client.remember("claude-code", "tooling", "Use uv, not pip",
                            is_global=True)["entry"]
    moved = run_cli("move-project", str(shop), "--global", "--agent", "claude-code")
    assert moved.returncode == 0, moved.stderr
    assert f"moved 1 entry from project {shop} to the global tier" in moved.stdout
    assert f"left {one['id']} in project {shop}: the global tier already holds this memory: " \
        f"entry {there['id']}" in moved.stdout
    assert client.get(two["id"])["project"] is None
    assert client.get(one["id"])["project"] == str(shop)
    neither = run_cli("move-project", str(shop))
    assert neither.returncode == 2 and "give NEW" in neither.stderr
    outside = run_cli("move-project", str(shop), str(tmp_path))
    assert outside.returncode == 2 and "is in no git repository" in outside.stderr
