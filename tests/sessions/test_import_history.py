"""`memory import-history` on a home holding Claude Code, Codex and generic JSONL histories
(tests/history_home.py), with a real daemon (a process where it is killed, else in the tests'
process, the model loaded once): the past sessions are indexed and their lessons extracted,
with progress; a kill -9 mid-import loses nothing and doubles nothing; a dry run writes
nothing; --since leaves older sessions out; `memory status` shows it running."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

from memoryd_client import Client

from tests.conftest import run_cli, spawn_daemon, start_daemon, stop_process, wait_until
from tests.history_home import WRITERS, plant

AGENTS = {"claude-code": "claude-code", "codex": "codex", "generic": "chatter"}


def distinct_word(lesson: str) -> str:
    """The word only this lesson holds (its number: "main7.", "service4,")."""
    return next(w for w in lesson.split() if any(c.isdigit() for c in w))


def connect(home: Path, **options) -> Client:  # type: ignore[no-untyped-def]
    return Client(home / "memoryd.sock", timeout_s=30, **options)


def entries(client: Client, agent: str, kinds: list[str]) -> list[dict]:
    found: list[dict] = []
    cursor = None
    while True:
        page = client.call("list", {"agents": [agent], "kind": kinds, "status": "any",
                                    "limit": 500, **({"cursor": cursor} if cursor else {})})
        found += page["entries"]
        cursor = page.get("next")
        if not cursor:
            return found


def extracted(client: Client, agent: str) -> list[dict]:
    return [e for e in entries(client, agent, ["lesson", "fact"]) if e.get("via") == "extract"]


def sessions(client: Client) -> dict[str, dict]:
    return {s["id"]: s for s in client.call("sessions", {"limit": 10_000})["sessions"]}


def test_every_harness_is_imported_and_extracted_with_progress(memoryd_home: Path,
                                                               embedder) -> None:
    """Twelve past sessions of each harness: every exchange is indexed once, every session is
    extracted, the lessons the user said are stored for the harness's agent, and the command
    got progress frames of both phases."""
    planted = plant(Path(os.environ["HOME"]), memoryd_home, sessions=12, exchanges=4)
    running = start_daemon(embedder)
    try:
        frames: list[dict] = []
        with connect(memoryd_home, progress=frames.append) as client:
            result = client.import_history()
        assert result["phase"] == "done"
        assert result["files"] == {"done": 36, "total": 36}
        assert result["sessions"]["done"] == result["sessions"]["total"] == 36
        said = [lesson for lessons in planted.lessons.values() for lesson in lessons]
        assert result["counts"]["entries stored"] >= len(said)
        phases = {frame.get("phase") for frame in frames}
        assert "extracting sessions" in phases
        assert all(frame["what"] == "import-history" for frame in frames)
        with connect(memoryd_home) as client:
            for harness, agent in AGENTS.items():
                turns = entries(client, agent, ["turn"])
                assert len(turns) == 12 * 4, harness  # each exchange once
                kept = " ".join(e["text"] for e in extracted(client, agent))
                for lesson in planted.lessons[harness]:  # its own words: main7, repo19, …
                    assert distinct_word(lesson) in kept.split(), (harness, lesson, kept)
            assert all(s["extracted"] for s in sessions(client).values())
        # run again: nothing more to index or extract
        again = run_cli("--json", "import-history")
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)
        assert summary["sessions"]["total"] == 0
        assert summary["counts"].get("turns indexed", 0) == 0
        assert summary["counts"]["files already indexed"] == 36
    finally:
        running.stop()
        assert not running.errors, running.errors


def test_the_import_and_the_watcher_never_index_a_file_twice(memoryd_home: Path,
                                                             embedder) -> None:
    """Histories written while memoryd runs, imported at once: the watcher and the import
    race for the same files, and each exchange is indexed once; a line appended afterwards is
    the watcher's, indexed once too."""
    running = start_daemon(embedder)
    try:
        with connect(memoryd_home) as client:
            client.call("sources", {"action": "add", "name": "chats", "path": "~/chats/*.jsonl",
                                    "kind": "transcript", "format": "generic",
                                    "agent": "chatter"})
            planted = plant(Path(os.environ["HOME"]), memoryd_home / "unused", sessions=40,
                            exchanges=3)
            result = client.import_history()
            assert result["files"]["total"] == 120
            for agent in AGENTS.values():
                assert len(entries(client, agent, ["turn"])) == 40 * 3, agent
            path = planted.files["claude-code"][0]
            record = json.loads(path.read_text().splitlines()[0])
            with path.open("a") as out:
                for role, text in (("user", "one more question about the cache eviction"),
                                   ("assistant", "The cache evicts the least recently used.")):
                    out.write(json.dumps({
                        **record, "type": role, "uuid": f"00000000-0000-4000-8000-0000000{role}",
                        "message": {"id": "msg_more", "role": role, "content": text}}) + "\n")
            wait_until(lambda: len(entries(client, "claude-code", ["turn"])) == 40 * 3 + 1)
            time.sleep(1)
            assert len(entries(client, "claude-code", ["turn"])) == 40 * 3 + 1
    finally:
        running.stop()
        assert not running.errors, running.errors


def test_a_kill_mid_import_resumes_and_nothing_is_done_twice(memoryd_home: Path) -> None:
    """kill -9 while the import extracts (status shows it running); memoryd started again
    takes the import up by itself, `memory import-history` follows it to the end, and every
    exchange and every extracted entry is there once. (40 sessions a harness: the kill comes
    once 10 are extracted, with more than 100 still to go, ~1.5 s of extraction.)"""
    planted = plant(Path(os.environ["HOME"]), memoryd_home, sessions=40, exchanges=3)
    total = sum(len(ids) for ids in planted.sessions.values())
    proc = spawn_daemon(memoryd_home)
    try:
        with connect(memoryd_home) as client:
            started = client.import_history(detach=True)
            assert started["detached"] is True

            def extracting() -> bool:
                running = client.status()["history_import"]
                assert running["finished"] is None, running  # the kill comes mid-import
                return running["phase"] == "extracting" and running["sessions"]["done"] >= 10

            wait_until(extracting, timeout_s=120)
            shown = run_cli("status")
            assert "importing history: extracting sessions" in shown.stdout, shown.stdout
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            stop_process(proc)
    proc = spawn_daemon(memoryd_home)
    try:
        done = run_cli("--json", "import-history", timeout=300)
        assert done.returncode == 0, done.stderr
        with connect(memoryd_home) as client:
            assert client.status()["history_import"]["phase"] == "done"
            registry = sessions(client)
            assert len(registry) == total and all(s["extracted"] for s in registry.values())
            for harness, agent in AGENTS.items():
                turns = entries(client, agent, ["turn"])
                assert len(turns) == 40 * 3, harness
                kept = extracted(client, agent)
                twice = [k for k, n in Counter((e["text"], e["status"], e["session"])
                                               for e in kept).items() if n > 1]
                assert twice == [], harness
                active = Counter(e["text"] for e in kept if e["status"] == "active")
                assert all(n == 1 for n in active.values()), harness
            stored = {e["id"] for agent in AGENTS.values() for e in extracted(client, agent)}
        again = run_cli("--json", "import-history")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["sessions"]["total"] == 0
        with connect(memoryd_home) as client:
            assert {e["id"] for agent in AGENTS.values()
                    for e in extracted(client, agent)} == stored
    finally:
        assert stop_process(proc) == 0


def test_a_dry_run_lists_the_candidates_and_writes_nothing(memoryd_home: Path,
                                                           embedder) -> None:
    planted = plant(Path(os.environ["HOME"]), memoryd_home, sessions=6, exchanges=4)
    running = start_daemon(embedder)
    try:
        shown = run_cli("import-history", "--dry-run")
        assert shown.returncode == 0, shown.stderr
        assert "would extract from 18 finished sessions" in shown.stdout
        lesson = planted.lessons["codex"][0]
        assert distinct_word(lesson) in shown.stdout, shown.stdout
        with connect(memoryd_home) as client:
            assert all(extracted(client, agent) == [] for agent in AGENTS.values())
            assert not any(s["extracted"] for s in sessions(client).values())
            assert client.status()["history_import"] is None
        only = run_cli("--json", "import-history", "codex", "--dry-run")
        assert {s["harness"] for s in json.loads(only.stdout)["sessions"]} == {"codex"}
    finally:
        running.stop()
        assert not running.errors, running.errors


def test_since_leaves_older_sessions_out(memoryd_home: Path, embedder) -> None:
    """Sessions of 40 days ago and of 2 days ago; --since 7d extracts only the recent ones."""
    planted = plant(Path(os.environ["HOME"]), memoryd_home, sessions=8, exchanges=4,
                    days_ago=[40, 2])
    running = start_daemon(embedder)
    try:
        done = run_cli("--json", "import-history", "--since", "7d")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["sessions"]["total"] == 4 * len(WRITERS)
        with connect(memoryd_home) as client:
            registry = sessions(client)
            cutoff = time.time() - 7 * 86400
            for harness, ids in planted.sessions.items():
                for number, session in enumerate(ids):
                    recent = number % 2 == 1
                    assert bool(registry[session]["extracted"]) == recent, (harness, number)
                    assert registry[session]["last_seen"] >= cutoff if recent else True
        # a past session extracted is not "open" (no end was seen; it was read whole)
        session = next(ids[1] for ids in planted.sessions.values())
        shown = run_cli("session", "show", session)
        assert shown.returncode == 0, shown.stderr
        assert "(no end was seen)" in shown.stdout and ", open" not in shown.stdout
    finally:
        running.stop()
        assert not running.errors, running.errors


def test_a_harness_is_named_by_its_format_its_source_or_its_agent() -> None:
    """pi's sessions are in the generic format: `memory import-history pi` means them."""
    from memoryd.agent_sources import default_sources
    from memoryd.sessions.history import selected_sources

    def names(*harnesses: str) -> list[str]:
        return sorted(s.name for s in selected_sources(default_sources(), harnesses))

    assert names("pi") == ["pi-transcripts"]
    assert names("codex") == ["codex-archived", "codex-segmented", "codex-transcripts"]
    assert names("gemini-legacy-chats") == ["gemini-legacy-chats"]
    assert names("gemini") == ["gemini-legacy-chats", "gemini-transcripts"]


def test_an_unknown_harness_is_refused_and_names_the_known_ones(memoryd_home: Path,
                                                                embedder) -> None:
    running = start_daemon(embedder)
    try:
        refused = run_cli("import-history", "claude")
        assert refused.returncode == 2  # a usage error, as a misspelt option
        assert "no harness or transcript source named 'claude'" in refused.stderr
        assert "claude-code" in refused.stderr and "codex" in refused.stderr
        unread = run_cli("import-history", "opencode")  # an agent whose history is a database
        assert unread.returncode == 2
        assert "OpenCode's history is not read: it keeps it in a SQLite database" in \
            unread.stderr and "claude-code" not in unread.stderr
    finally:
        running.stop()
        assert not running.errors, running.errors


def _claude_session(home: Path, cwd: Path, session: str, day: str, said: list[str]) -> None:
    """A past Claude Code session of ``day`` in which the user said ``said`` (each answered)."""
    lines, parent = [], None
    for number, text in enumerate(said):
        at = f"{day}T10:00:{2 * number:02d}.000Z"
        user = {"type": "user", "sessionId": session, "uuid": f"{session[:8]}-u{number}",
                "parentUuid": parent, "cwd": str(cwd), "timestamp": at,
                "message": {"role": "user", "content": text}}
        parent = f"{session[:8]}-a{number}"
        answer = {"type": "assistant", "sessionId": session, "uuid": parent,
                  "parentUuid": user["uuid"], "cwd": str(cwd), "timestamp": at,
                  "message": {"id": f"msg-{parent}", "role": "assistant",
                              "content": [{"type": "text", "text": "Understood."}]}}
        lines += [json.dumps(user), json.dumps(answer)]
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session}.jsonl").write_text("\n".join(lines) + "\n")


def test_a_past_sessions_value_imported_later_does_not_overrule_a_newer_one(
        memoryd_home: Path, embedder, tmp_path: Path) -> None:
    """The user said "pnpm" on the 20th (extracted first: its session end, or an earlier
    import) and "yarn" on the 10th, a session imported afterwards. The value said last stays
    the key's value; the earlier one is kept in its history, dated when it was said. (It
    replaced "pnpm": an extracted entry was dated when it was extracted.)"""
    import subprocess

    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    home = Path(os.environ["HOME"])
    filler = ["Let's look at the shop's checkout page", "Add a lint step to CI",
              "Good, that's all for now."]
    _claude_session(home, repo, "4c1f2a9e-0b7d-4e55-9a6b-1d2e3f4a5b6c", "2026-11-20",
                    [filler[0], "We always use pnpm, not npm, in this repo.", *filler[1:]])
    running = start_daemon(embedder)
    try:
        with connect(memoryd_home) as client:
            client.import_history()
            _claude_session(home, repo, "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d", "2026-11-10",
                            [filler[0], "We always use yarn, not npm, in this repo.",
                             *filler[1:]])
            client.import_history()
            versions = client.history(agent="claude-code", key="tool.package_manager")["entries"]
            by_value = {e["text"]: e for e in versions}
            assert set(by_value) == {"pnpm", "yarn"}, versions
            assert by_value["pnpm"]["status"] == "active"
            assert by_value["yarn"]["status"] == "superseded"
            assert by_value["yarn"]["superseded_by"] == by_value["pnpm"]["id"]
            assert time.strftime("%Y-%m-%d", time.gmtime(by_value["yarn"]["created"])) \
                == "2026-11-10"
    finally:
        running.stop()
        assert not running.errors, running.errors
