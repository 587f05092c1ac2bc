"""M7 of the newcomer report: `memory sources remove` takes the source's entries out of the
index (the files are not touched; added again, they come back), and a built-in source that
`remove` disabled is enabled again by `memory sources add NAME`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from memoryd_client import Client

from tests.conftest import RunningDaemon, run_cli, wait_until


def texts(client: Client, query: str, status: str | None = None) -> list[str]:
    filters: dict[str, Any] = {"agents": ["*"], "limit": 20}
    if status:
        filters["status"] = status
    return [hit["text"] for hit in client.search(query, **filters)["hits"]]


def test_removed_source_leaves_the_index_and_comes_back_when_added_again(client: Client) -> None:
    notes = Path(os.environ["HOME"]) / "notes"
    notes.mkdir()
    file = notes / "cats.md"
    file.write_text("# Cats\n- The cat is called Whiskers.\n- The cat sleeps on the printer.\n")
    before = file.read_bytes()
    added = run_cli("sources", "add", "notes", "~/notes/**/*.md", "--kind", "memory",
                    "--agent", "designer")
    assert added.returncode == 0, added.stderr
    # what was added, not every source (F-3: 67 lines), its files counted before the reply
    # (it once said 0)
    assert added.stdout == "added source notes: ~/notes/**/*.md [memory, markdown, agent " \
        "designer]: 1 file\n"
    wait_until(lambda: len(texts(client, "whiskers printer cat")) == 2)

    removed = run_cli("sources", "remove", "notes")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == "removed source notes (1 source no longer watched: the entries " \
        "of their files left the index, but of a file another source reads; the files are as " \
        "they were)\n"
    assert texts(client, "whiskers printer cat") == []
    assert texts(client, "whiskers printer cat", status="any") == []
    assert file.read_bytes() == before
    assert "notes" not in run_cli("sources", "list").stdout

    assert run_cli("sources", "add", "notes", "~/notes/**/*.md", "--kind", "memory",
                   "--agent", "designer").returncode == 0
    wait_until(lambda: sorted(texts(client, "whiskers printer cat")) == [
        "The cat is called Whiskers.", "The cat sleeps on the printer."])


def test_a_disabled_built_in_source_is_enabled_again(client: Client) -> None:
    claude = Path(os.environ["HOME"]) / ".claude"
    claude.mkdir()
    (claude / "CLAUDE.md").write_text("- Answer in British English.\n")
    wait_until(lambda: texts(client, "british english") == ["Answer in British English."])

    assert run_cli("sources", "remove", "claude-user-memory").returncode == 0
    assert texts(client, "british english") == []
    listing = json.loads(run_cli("sources", "list", "--json").stdout)
    assert "claude-user-memory" not in {s["name"] for s in listing["sources"]}

    other = run_cli("sources", "add", "claude-user-memory", "~/elsewhere/*.md", "--kind",
                    "memory")
    assert other.returncode == 2
    assert "is a built-in source (~/.claude/CLAUDE.md" in other.stderr
    assert "another path another name" in other.stderr

    again = run_cli("sources", "add", "claude-user-memory")
    assert again.returncode == 0, again.stderr
    wait_until(lambda: texts(client, "british english") == ["Answer in British English."])
    assert "disabled" not in Path(client.sources()["sources_file"]).read_text()
    # the report's way, with the built-in's own glob and settings, works too
    assert run_cli("sources", "remove", "claude-transcripts").returncode == 0
    spelled = run_cli("sources", "add", "claude-transcripts", "~/.claude/projects/**/*.jsonl",
                      "--kind", "transcript", "--format", "claude-code", "--agent",
                      "claude-code")
    assert spelled.returncode == 0, spelled.stderr
    twice = run_cli("sources", "add", "claude-transcripts")
    assert twice.returncode == 2 and "exists already" in twice.stderr


def test_one_of_a_projects_sources_names_the_root_to_remove(client: Client) -> None:
    """A project root's sources (its CLAUDE.md, a subdirectory's) are listed by name, and
    `remove` of one said there was no source of that name: it says whose it is, and how to
    stop watching the project; the project is left as it was. `sources add` shows what it
    added; `sources list` the sources with files, and the project's many others (two lines each, of
    "files 0") on one line."""
    shop = Path(os.environ["HOME"]) / "shop"
    (shop / "packages/api").mkdir(parents=True)
    (shop / "packages/api/CLAUDE.md").write_text("- The API answers JSON.\n")
    added = run_cli("sources", "add", "--project", str(shop))
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines() == [  # what was added, in a few lines
        f"added project root {shop}: 25 sources (its agents' instruction files), 1 file found:",
        f"    {shop}/packages/api/CLAUDE.md: 1 file",
        "    the other 24 have no file yet (watched: a file that appears is indexed)"]
    nested = f"project:{shop}:nested:packages/api/CLAUDE.md"
    wait_until(lambda: texts(client, "api answers json") == ["The API answers JSON."])
    for name in (f"project:{shop}:CLAUDE.md", nested):
        refused = run_cli("sources", "remove", name)
        assert refused.returncode == 2
        assert f"is one of project root {shop}'s: `memory sources remove {shop}` stops " \
            "watching the project (its files stay)" in refused.stderr, refused.stderr
    # the list shows the sources with files; the project's others on one line
    listing = run_cli("sources", "list").stdout.splitlines()
    assert listing[listing.index(f"{nested}: {shop}/packages/api/CLAUDE.md [memory, markdown, "
                                 "agent claude-code]") + 1].startswith("    files 1,")
    [empty] = [line for line in listing if line.startswith("no files yet (")]
    assert f"project:{shop}:CLAUDE.local.md, " in empty
    assert not any(line.startswith(f"project:{shop}:CLAUDE.local.md:") for line in listing)
    removed = run_cli("sources", "remove", str(shop))
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith(f"removed project root {shop} (25 sources no longer "
                                     "watched")  # the daemon's words reach the user
    assert texts(client, "api answers json") == []


def test_a_subdirectory_of_a_watched_repository_added_says_whose_it_is(client: Client,
                                                                       tmp_path: Path) -> None:
    """F-3: adding mono/packages/web (a directory of repository mono, watched) advised `memory
    sources remove project:…:nested:packages/web/CLAUDE.md`, which failed (no source named
    so: it had given way to the new root's). The add says the directory is inside mono, and
    the file is read by the new root's source, its line the same entry under the same id."""
    mono = tmp_path / "mono"
    web = mono / "packages/web"
    web.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(mono)], check=True)
    (web / "CLAUDE.md").write_text("- Web builds with vite.\n")
    assert run_cli("sources", "add", "--project", str(mono)).returncode == 0
    wait_until(lambda: texts(client, "web builds vite") == ["Web builds with vite."])
    [before] = client.search("web builds vite", agents=["*"])["hits"]

    added = run_cli("sources", "add", "--project", str(web))
    assert added.returncode == 0, added.stderr
    assert "memory sources remove project:" not in added.stdout
    assert f"note: {web} is inside repository {mono}, which project root {mono} watches " \
        f"already: its files belong to project {mono}" in added.stdout
    assert f"`memory sources remove {web}` undoes this add" in added.stdout

    def read_by_web() -> bool:
        listed = run_cli("status", "--sources", "--json").stdout
        return any(s["name"] == f"project:{web}:CLAUDE.md" and s.get("indexed") == 1
                   for s in json.loads(listed)["ingest"]["sources"])

    wait_until(read_by_web)
    [after] = client.search("web builds vite", agents=["*"])["hits"]
    assert (after["id"], after["project"]) == (before["id"], str(mono))
    assert run_cli("sources", "remove", str(web)).returncode == 0
    wait_until(lambda: texts(client, "web builds vite") == ["Web builds with vite."])


def test_a_transcript_source_removed_and_added_again_counts_its_sessions_once(
        client: Client) -> None:
    """`memory sources remove` then `add` read the files again from their start, and every
    session's user messages were added to those counted before (3 became 6, past extraction's
    cut-off of 3); and after `remove` the sessions stayed listed, their exchanges gone. Now
    they leave `memory sessions` with their entries and come back counted once."""
    home = Path(os.environ["HOME"])
    day = home / ".codex/sessions/2025/09/01"
    day.mkdir(parents=True)
    codex = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    lines = [{"timestamp": "2025-09-01T10:00:00Z", "type": "session_meta",
              "payload": {"id": codex, "cwd": "/tmp", "source": "cli"}}]
    for n in range(3):
        lines += [{"timestamp": f"2025-09-01T10:0{n}:30Z", "type": "event_msg",
                   "payload": {"type": "user_message", "message": f"codex question {n}"}},
                  {"timestamp": f"2025-09-01T10:0{n}:40Z", "type": "response_item",
                   "payload": {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": f"answer {n}"}]}}]
    (day / f"rollout-2025-09-01T10-00-00-{codex}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines))
    chats = home / "chats"
    chats.mkdir()
    (chats / "log.jsonl").write_text("".join(
        json.dumps({"session_id": "chat-7", "role": role, "content": f"chat {role} {n}"}) + "\n"
        for n in range(3) for role in ("user", "assistant")))
    assert run_cli("sources", "add", "chats", "~/chats/*.jsonl", "--kind", "transcript",
                   "--format", "generic", "--agent", "chatter").returncode == 0

    def counts() -> dict[str, int]:  # "chat-7", a short id, is the file's: log-…:chat-7
        listed = json.loads(run_cli("sessions", "--json").stdout)["sessions"]
        return {s["id"].rpartition(":")[2]: s["user_messages"] for s in listed}

    def turns() -> int:
        return len(client.list_entries(agents=["*"], kind=["turn"], limit=50)["entries"])

    wait_until(lambda: counts() == {codex: 3, "chat-7": 3} and turns() == 6)
    for name in ("codex-transcripts", "chats"):
        assert run_cli("sources", "remove", name).returncode == 0
    assert (counts(), turns()) == ({}, 0)
    assert run_cli("sources", "add", "codex-transcripts").returncode == 0
    assert run_cli("sources", "add", "chats", "~/chats/*.jsonl", "--kind", "transcript",
                   "--format", "generic", "--agent", "chatter").returncode == 0
    wait_until(lambda: turns() == 6)
    assert counts() == {codex: 3, "chat-7": 3}


def test_clines_hook_scripts_are_not_its_rules_and_leave_the_index(
        daemon: RunningDaemon, client: Client) -> None:
    """`memory hook install cline --project DIR` writes its scripts into DIR/.clinerules/hooks/,
    where Cline runs hooks and reads no rule: the project's `.clinerules/**` took them (and the
    user's own hooks) for Cline's memory, `#!/bin/sh` and `exec …` lines that every agent's
    search then found. They are no entries now, and those an older memoryd indexed leave the
    index once the source no longer matches them; the rules beside them stay."""
    shop = Path(os.environ["HOME"]) / "shop"
    rules = shop / ".clinerules"
    (rules / "hooks").mkdir(parents=True)
    (rules / "pricing.md").write_text("- Prices are whole cents, never floats.\n")
    (rules / "hooks/PreToolUse").write_text("#!/bin/sh\necho checking the jackal tool\n")
    name = f"project:{shop}:.clinerules/**"

    def cline() -> list[str]:
        return sorted(e["text"] for e in client.list_entries(agent="cline", limit=50)["entries"])

    # the project's source as an older memoryd had it: `.clinerules/**`, hooks and all
    sources_file = Path(client.sources()["sources_file"])
    sources_file.write_text(f"[[sources]]\nname = {json.dumps(name)}\n"
                            f"path = {json.dumps(f'{rules}/**')}\nkind = \"memory\"\n"
                            "format = \"markdown\"\nagent = \"cline\"\n")
    client.reload()
    wait_until(lambda: "#!/bin/sh\necho checking the jackal tool" in cline())
    sources_file.write_text(f"project_roots = [{json.dumps(str(shop))}]\n")
    client.reload()
    wait_until(lambda: cline() == ["Prices are whole cents, never floats."])
    assert client.search("jackal", agents=["*"], match=True)["hits"] == []

    installed = run_cli("hook", "install", "cline", "--project", str(shop))
    assert installed.returncode == 0, installed.stderr
    watcher = daemon.daemon.watcher
    assert watcher is not None
    scanned = watcher.scans[1]
    client.reload()  # the watcher starts again with a whole scan
    wait_until(lambda: watcher.scans[1] > scanned and not watcher.pending)
    assert cline() == ["Prices are whole cents, never floats."]
    assert (rules / "pricing.md").read_text() == "- Prices are whole cents, never floats.\n"
