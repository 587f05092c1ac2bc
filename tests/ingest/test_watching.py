"""The system's watches on directories: memoryd takes few, and copes when there are none left.

Past the system's limit on watched directories (Linux: fs.inotify.max_user_watches, shared
by every program of the user), the watcher leaves the other directories unwatched without a
word: their files changed and memoryd never saw it until a restart. A rescan every
``watch.full_scan_interval_s`` finds them, and `memory doctor` says what to raise.

The limit is made small for the daemon alone: in a user namespace of its own, whose
``/proc/sys/user/max_inotify_watches`` its root may set (Linux 5.11 and later)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.ingest.watch_loops import CATCH_UP_S
from tests.client.test_doctor import by_name, doctor
from tests.conftest import run_cli, spawn_daemon, start_daemon, stop_process
from tests.ingest.test_ingest import eventually, search

WATCHES = 8
LIMITED = ["unshare", "--user", "--map-root-user", "sh", "-c",
           f'echo {WATCHES} > /proc/sys/user/max_inotify_watches && exec "$@"', "limited"]


def _can_limit() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run([*LIMITED, "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_limit(), reason="no user namespace with its own inotify limit")
def test_files_in_directories_past_the_watch_limit_are_indexed_and_the_limit_named(
        memoryd_home: Path) -> None:
    (memoryd_home / "config.toml").write_text("[watch]\nfull_scan_interval_s = 2\n")
    memory = memoryd_home / "user/.mastersof-ai/agents/gardener/memory"
    topics = [memory / f"topic{number:02d}" for number in range(3 * WATCHES)]
    for topic in topics:
        topic.mkdir(parents=True)
    proc = spawn_daemon(memoryd_home, wrapper=LIMITED)
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=30) as client:
            time.sleep(CATCH_UP_S + 0.5)  # written while it watches, not while it starts
            for number, topic in enumerate(topics):
                (topic / "notes.md").write_text(f"- Bed {number} grows parsnips.\n")
            future = time.time() + 3600  # another machine's clock: still found
            os.utime(topics[-1] / "notes.md", (future, future))

            def all_indexed() -> None:
                hits = search(client, "which bed grows parsnips", agent="gardener", limit=50)
                assert len(hits) == len(topics), len(hits)

            eventually(all_indexed, timeout_s=30)  # most were never indexed
            sources = by_name(doctor()[1])["sources"]
            assert sources["status"] == "warning", sources
            assert "changed that the watcher had not reported" in sources["detail"]
            assert "fs.inotify.max_user_watches" in sources["fix"]
    finally:
        stop_process(proc)


INSTANCES = ["unshare", "--user", "--map-root-user", "sh", "-c",
             'echo 1 > /proc/sys/user/max_inotify_instances && exec "$@"', "limited"]


@pytest.mark.skipif(not _can_limit(), reason="no user namespace with its own inotify limit")
def test_a_watcher_that_cannot_start_backs_off_and_status_names_the_limit(
        memoryd_home: Path) -> None:
    """One inotify instance for the daemon (it takes two): the watcher failed to start and was
    started again every second, forever, with a full rescan each time, while status said all
    was well. It waits longer after each failure, `memory status` names the limit to raise,
    and files are still indexed by each start's scan."""
    memory = memoryd_home / "user/.mastersof-ai/agents/gardener/memory"
    memory.mkdir(parents=True)
    (memoryd_home / "user/.claude").mkdir()
    (memoryd_home / "user/.claude/CLAUDE.md").write_text("- Water the beds at dawn.\n")
    proc = spawn_daemon(memoryd_home, model=False, wrapper=INSTANCES)
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=30) as client:
            def named() -> dict[str, str]:
                [sources] = [c for c in client.status()["health"]["checks"]
                             if c["check"] == "sources"]
                assert "fs.inotify.max_user_instances" in sources["fix"], sources
                return sources

            sources = eventually(named, timeout_s=30)
            assert "the watcher failed" in sources["detail"]
            assert "Too many open files" in sources["detail"]
            time.sleep(6)
            (memory / "notes.md").write_text("- Bed 4 grows parsnips.\n")
            eventually(lambda: _hits(client, "parsnips", 1), timeout_s=30)
    finally:
        stop_process(proc)
    stops = (memoryd_home / "daemon.log").read_text().count("Watcher stopped")
    assert 3 <= stops <= 6, stops  # 1, 2, 4, 8, 16 s apart: not one a second (~12)


def test_a_symlink_to_a_directory_above_the_state_dir_leaves_the_watcher_hearing(
        memoryd_home: Path, monkeypatch) -> None:
    """`ln -s /tmp/x $MEMORYD_HOME/agents/a1/up`, /tmp/x holding the state dir: the watcher
    (notify) followed the link while it walked agents/, reached agents/a1 again under
    agents/a1/up/…/agents/a1, and reported every later change there under that name, which no
    source matches: a note written to agents/a1 was indexed only by the rescan 300 s later
    (removing the link did not help). A recursive watch never crosses a symlink now."""
    monkeypatch.setenv("MEMORYD_EMBED_MODEL", str(memoryd_home / "no-model"))
    (memoryd_home / "config.toml").write_text("[watch]\nfull_scan_interval_s = 3600\n")
    agent = memoryd_home / "agents" / "a1"
    agent.mkdir(parents=True)
    (agent / "one.md").write_text("- The kiln fires stoneware.\n")
    (agent / "up").symlink_to(memoryd_home, target_is_directory=True)
    running = start_daemon(None)
    try:
        with Client(running.config.socket_path, timeout_s=30) as client:
            eventually(lambda: _hits(client, "kiln stoneware", 1))
            time.sleep(CATCH_UP_S + 0.5)  # written while it watches
            (agent / "three.md").write_text("- The glaze needs a reduction firing.\n")
            eventually(lambda: _hits(client, "glaze reduction firing", 1),
                       timeout_s=10)
            (agent / "up").unlink()
            (agent / "four.md").write_text("- Celadon wants iron in the glaze.\n")
            eventually(lambda: _hits(client, "celadon iron", 1), timeout_s=10)
            (agent / "sub").mkdir()  # made where directories are watched alone
            time.sleep(1)
            (agent / "sub" / "five.md").write_text("- Bisque at 1000 degrees.\n")
            eventually(lambda: _hits(client, "bisque degrees", 1), timeout_s=10)
    finally:
        running.stop()
    assert not running.errors, running.errors


def _inotify_watches(pid: int) -> int:
    """The inotify watches a process holds (each an ``inotify wd:`` line of its fdinfo)."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                    total += sum(line.startswith("inotify wd:") for line in info)
        except OSError:
            continue
    return total


@pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="reads /proc/PID/fdinfo")
def test_a_project_costs_a_few_watches_not_one_per_directory(memoryd_home: Path) -> None:
    """A project with a node_modules of 600 directories: its CLAUDE.md needs the project's
    directory watched, not every directory in it (it took 601 watches, out of what every
    program of the user shares); its rules, made later, are still seen as they change."""
    project = memoryd_home / "app"
    for package in range(30):
        for folder in range(20):
            (project / f"node_modules/pkg{package}/lib{folder}").mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# App\n\n- Use pnpm, never npm.\n")
    (memoryd_home / "config.toml").write_text(f'[watch]\nproject_roots = ["{project}"]\n')
    proc = spawn_daemon(memoryd_home)
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=30) as client:
            eventually(lambda: _hits(client, "pnpm never npm", 1))
            assert _inotify_watches(proc.pid) <= 4
            rules = project / ".claude/rules"
            rules.mkdir(parents=True)
            (rules / "style.md").write_text("- Tabs in makefiles only.\n")
            eventually(lambda: _hits(client, "tabs in makefiles", 1))
            (rules / "style.md").write_text("- Tabs in makefiles and go files.\n")
            eventually(lambda: _hits(client, "tabs in makefiles and go files", 1)
                       and _texts_are(_said(client, "claude-code"),
                                      ["Tabs in makefiles and go files.", "Use pnpm, never npm."]))
            assert _inotify_watches(proc.pid) <= 4
    finally:
        stop_process(proc)


def _hits(client: Client, query: str, count: int) -> bool:
    hits = search(client, query, match=True)
    assert len(hits) == count, hits
    return True


def test_an_edit_of_a_symlinked_notebooks_target_is_indexed_as_it_is_made(
        memoryd_home: Path, embedder) -> None:
    """~/.claude/CLAUDE.md as a link into a dotfiles repository: the edit happens in the
    repository's directory, which no watch covered, so it was indexed at the next restart
    only. The targets' directories are watched too, a link made later included."""
    home = memoryd_home / "user"
    dotfiles = home / "dotfiles"
    dotfiles.mkdir(parents=True)
    (home / ".claude").mkdir()
    (dotfiles / "CLAUDE.md").write_text("# Prefs\n\n- Answer in British English.\n")
    (home / ".claude/CLAUDE.md").symlink_to(dotfiles / "CLAUDE.md")
    running = start_daemon(embedder)
    try:
        with Client(running.config.socket_path, timeout_s=30) as client:
            eventually(lambda: _hits(client, "answer in british english", 1))
            time.sleep(CATCH_UP_S + 0.5)  # edited while it watches, not while it starts
            (dotfiles / "CLAUDE.md").write_text(
                "# Prefs\n\n- Answer in British English.\n- Indent with tabs.\n")
            eventually(lambda: _hits(client, "indent with tabs", 1), timeout_s=5)
            saved = dotfiles / ".CLAUDE.md.swp"  # an editor's save: a new file renamed over
            saved.write_text("# Prefs\n\n- Answer in British English.\n- Indent with spaces.\n")
            saved.replace(dotfiles / "CLAUDE.md")
            eventually(lambda: _hits(client, "indent with spaces", 1) and _texts_are(
                _said(client, "claude-code"), ["Answer in British English.",
                                               "Indent with spaces."]),
                timeout_s=5)  # a match alone: the old "Indent with tabs." could be one
            (home / ".gemini").mkdir()  # a link made while memoryd runs
            (dotfiles / "GEMINI.md").write_text("- Run the linter before each commit.\n")
            (home / ".gemini/GEMINI.md").symlink_to(dotfiles / "GEMINI.md")
            eventually(lambda: _hits(client, "run the linter before each commit", 1))
            time.sleep(CATCH_UP_S + 2.5)  # the watcher restarted, with the new target's
            # directory, and caught up
            (dotfiles / "GEMINI.md").write_text("- Run the linter and the type checker.\n")
            eventually(lambda: _hits(client, "linter and the type checker", 1) and _texts_are(
                _said(client, "gemini"), ["Run the linter and the type checker."]), timeout_s=5)
    finally:
        running.stop()
    assert not running.errors, running.errors


def test_a_watched_file_that_is_also_a_links_target_is_read_for_both(
        memoryd_home: Path, embedder) -> None:
    """An agent's notebook that ~/.claude/CLAUDE.md links to: an edit reaches both agents'
    entries (the link's were updated, the notebook's own left as they were)."""
    home = memoryd_home / "user"
    notebook = home / ".mastersof-ai/agents/writer/memory/style.md"
    notebook.parent.mkdir(parents=True)
    notebook.write_text("# Style\n\n- Sentences stay short.\n")
    (home / ".claude").mkdir()
    (home / ".claude/CLAUDE.md").symlink_to(notebook)
    running = start_daemon(embedder)
    try:
        with Client(running.config.socket_path, timeout_s=30) as client:
            def both_say(text: str) -> None:
                entries = client.list_entries(agents=["*"], limit=50)["entries"]
                said = sorted((entry["agent"], entry["text"]) for entry in entries)
                assert said == [("claude-code", text), ("writer", text)], said

            eventually(lambda: both_say("Sentences stay short."))
            time.sleep(CATCH_UP_S + 0.5)
            notebook.write_text("# Style\n\n- Lists take the Oxford comma.\n")
            eventually(lambda: both_say("Lists take the Oxford comma."), timeout_s=5)
    finally:
        running.stop()
    assert not running.errors, running.errors


def test_a_symlinked_memory_directory_is_indexed_once_and_said(memoryd_home: Path,
                                                                embedder) -> None:
    """~/.claude/projects/<p>/memory kept in a dotfiles repository, as Claude Code follows it:
    it held 0 entries however often memoryd rescanned, and nothing said why. Its files are
    indexed under the link, an edit of them as it is made; a second link to the same folder
    is not indexed again; a link out of an agent's memory directory (the memory tools') is
    not indexed. `memory status --sources` and `memory doctor` say which is which."""
    home = memoryd_home / "user"
    dotfiles = home / "dotfiles/claude-memory"
    dotfiles.mkdir(parents=True)
    (dotfiles / "a.md").write_text("## Learnings\n\n- [2026-07-05] symdir bullet about glacier\n")
    projects = home / ".claude/projects"
    for project in ("p4", "p5"):
        (projects / project).mkdir(parents=True)
        (projects / project / "memory").symlink_to(dotfiles)
    elsewhere = memoryd_home / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "n.md").write_text("- notes about basalt kept outside\n")
    (memoryd_home / "agents/bob").mkdir(parents=True)
    (memoryd_home / "agents/bob/out").symlink_to(elsewhere)
    running = start_daemon(embedder)
    try:
        with Client(running.config.socket_path, timeout_s=30) as client:
            eventually(lambda: _hits(client, "glacier", 1))
            assert search(client, "glacier", match=True)[0]["agent"] == "claude-code"
            time.sleep(CATCH_UP_S + 0.5)  # edited while it watches, not while it starts
            with (dotfiles / "a.md").open("a") as notebook:
                notebook.write("- [2026-07-06] a second bullet about moraines\n")
            eventually(lambda: _hits(client, "moraines", 1), timeout_s=5)
            (dotfiles / "b.md").write_text("- a new file about crevasses\n")
            eventually(lambda: _hits(client, "crevasses", 1), timeout_s=5)
            assert _hits(client, "glacier", 1)  # once, not once for each link
            assert not search(client, "basalt", match=True)
            paths = {entry["source"] for entry in
                     client.list_entries(agents=["*"], limit=50)["entries"]}
            assert paths == {str(projects / "p4/memory/a.md"), str(projects / "p4/memory/b.md")}

            listed = run_cli("status", "--sources")
            assert listed.returncode == 0, listed.stderr
            assert (f"symlinked directory {projects / 'p4/memory'} -> {dotfiles}: followed"
                    in listed.stdout), listed.stdout
            assert (f"symlinked directory {projects / 'p5/memory'} -> {dotfiles}: not followed:"
                    f" its target {dotfiles} is read already as {projects / 'p4/memory'}"
                    in listed.stdout), listed.stdout
            assert (f"{memoryd_home / 'agents/bob/out'} -> {elsewhere}: not followed: it leads "
                    f"outside the memory directory {memoryd_home / 'agents/bob'}"
                    in listed.stdout), listed.stdout
            _, report = doctor()
            sources = by_name(report)["sources"]
            assert f"followed, their files indexed under the link: {projects / 'p4/memory'}" \
                in sources["detail"], sources
            assert sources["status"] == "warning" and "memory tools do not read it" in \
                sources["detail"], sources  # bob's files are indexed nowhere: said
    finally:
        running.stop()
    assert not running.errors, running.errors


def _said(client: Client, agent: str) -> list[str]:
    """The texts of an agent's active entries, sorted."""
    return sorted(entry["text"] for entry in
                  client.list_entries(agents=[agent], limit=50)["entries"])


def _texts_are(texts: list[str], expected: list[str]) -> bool:
    """An assertion that `eventually` retries (a False it would take as done)."""
    assert texts == expected, texts
    return True


def test_a_file_name_with_a_line_break_is_logged_on_one_line(memoryd_home: Path) -> None:
    """A notebook named "bad<newline>name.md": the daemon's log line about it was split in
    two, the second half a line that looks like a record of its own."""
    memory = memoryd_home / "user/.mastersof-ai/agents/gardener/memory"
    memory.mkdir(parents=True)
    (memory / "bad\nname.md").write_bytes(b"\x00\x01 binary junk")
    proc = spawn_daemon(memoryd_home, model=False)
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=30) as client:
            eventually(lambda: any(c["check"] == "skipped"
                                   for c in client.status()["health"]["checks"]) or _no())
    finally:
        stop_process(proc)
    lines = (memoryd_home / "daemon.log").read_text().splitlines()
    assert any(line.endswith("memory/bad\\nname.md: binary file (NUL bytes), skipped")
               for line in lines), lines
    assert not any(line.startswith("name.md") for line in lines)


def _no() -> bool:
    raise AssertionError("not yet")
