"""The `memory` command's surface as a user meets it: --version, global options on either side
of the command, JSON errors, help that never waits, the search legend, exit codes of the
memory tools, and list / recent / export / import through the real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import RunningDaemon, reindexed, run_cli, start_daemon


def test_version_and_memory_alone() -> None:
    version = run_cli("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("memory (memoryd-client) 0.")
    alone = run_cli()
    assert alone.returncode == 2
    assert alone.stdout.startswith("usage: memory") and "store" in alone.stdout
    assert "exit codes:" in alone.stdout


def test_global_options_before_or_after_the_command(daemon) -> None:
    before = json.loads(run_cli("--json", "status").stdout)
    after = json.loads(run_cli("status", "--json").stdout)
    assert before["pid"] == after["pid"]
    socket = str(daemon.socket)
    for args in (("--socket", socket, "--json", "status"), ("status", "--socket", socket, "--json"),
                 ("--timeout", "5", "--socket", socket, "status", "--json")):
        result = run_cli(*args, cwd="/")
        assert result.returncode == 0, (args, result.stderr)
        assert json.loads(result.stdout)["pid"] == before["pid"]
    wrong = run_cli("--socket", "/nonexistent/memoryd.sock", "status")
    assert wrong.returncode == 3 and "/nonexistent/memoryd.sock" in wrong.stderr


def test_an_entry_is_found_by_a_prefix_of_its_id(daemon, client) -> None:
    uid = client.remember("designer", "notes", "prefix lookups work")["entry"]["id"]
    assert uid in run_cli("get", uid[:6]).stdout
    short = run_cli("get", uid[:3])
    assert short.returncode == 1 and "a prefix needs 4 characters or more" in short.stderr


def test_errors_under_json_are_json_with_the_same_exit_codes(daemon) -> None:
    missing = run_cli("--json", "get", "nosuchid")
    assert missing.returncode == 1
    assert json.loads(missing.stdout) == {"error": {"code": "not_found",
                                                    "message": "no entry with id 'nosuchid'"}}
    assert run_cli("get", "nosuchid").stderr.startswith("Error: no entry")  # text without --json
    usage = run_cli("store", "only-agent", "--json")
    assert usage.returncode == 2
    error = json.loads(usage.stdout)["error"]
    assert error["code"] == "usage" and "required" in error["message"]
    bad_agent = run_cli("--json", "store", "../x", "c", "text")
    assert bad_agent.returncode == 2 and json.loads(bad_agent.stdout)["error"]["code"] == "bad_params"
    history = run_cli("history", "--json")  # a usage mistake found by the command itself
    assert history.returncode == 2 and json.loads(history.stdout)["error"]["code"] == "usage"


def test_purge_without_a_filter_is_a_usage_error_as_json_too(memoryd_home) -> None:
    """Under --json it printed its complaint as text on stderr, and nothing on stdout."""
    as_json = run_cli("purge", "--agent", "designer", "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"]["code"] == "usage"
    text = run_cli("purge", "--agent", "designer")
    assert text.returncode == 2 and "give --since T, --match TEXT, or both" in text.stderr


def test_unreachable_daemon_under_json(memoryd_home) -> None:
    result = run_cli("search", "a", "-", "anything", "--json")
    assert result.returncode == 3
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "unreachable" and "memoryd serve" in error["message"]


def test_json_entries_do_not_expose_the_internal_rowid(daemon) -> None:
    stored = json.loads(run_cli("store", "coder", "tools", "We lint with ruff", "--json").stdout)
    entry_id = stored["entry"]["id"]
    assert "rowid" not in stored["entry"]
    history = json.loads(run_cli("history", entry_id, "--json").stdout)
    assert history["entries"] and all("rowid" not in e for e in history["entries"])
    hits = json.loads(run_cli("search", "coder", "-", "ruff linter", "--json").stdout)["hits"]
    assert hits and all("rowid" not in hit for hit in hits)
    assert "rowid" not in json.loads(run_cli("get", entry_id, "--json").stdout)
    listed = json.loads(run_cli("list", "coder", "--json").stdout)["entries"]
    assert [e["id"] for e in listed] == [entry_id] and "rowid" not in listed[0]


def test_search_prints_a_legend_aligned_with_its_lines(daemon) -> None:
    run_cli("store", "designer", "rejected", "floating speech bubble disconnected from the body")
    found = run_cli("search", "designer", "-", "floating speech bubble")
    assert found.returncode == 0
    header = found.stderr.splitlines()[0]
    line = found.stdout.splitlines()[0]
    assert header.startswith("* rel.   age  id") and "probability of relevance" in header
    assert line.startswith("* ")
    # the id column starts where the header says
    assert line.index(line.split()[3]) == header.index("id  ")


def test_memory_tool_refusals_exit_1(daemon) -> None:
    assert run_cli("file", "write", "--agent", "designer", "notes.md",
                   "--text", "- tabs\n- tabs\n- spaces\n").returncode == 0
    none = run_cli("file", "replace", "--agent", "designer", "notes.md", "--old", "kerning",
                   "--new", "x")
    assert none.returncode == 1 and "found 0 matches" in none.stderr
    two = run_cli("file", "replace", "--agent", "designer", "notes.md", "--old", "tabs",
                  "--new", "x", "--json")
    assert two.returncode == 1 and "found 2 matches" in json.loads(two.stdout)["error"]["message"]
    escape = run_cli("file", "read", "--agent", "designer", "../../etc/passwd")
    assert escape.returncode == 1 and "leaves the memory directory" in escape.stderr
    assert run_cli("file", "replace", "--agent", "designer", "notes.md").returncode == 2  # usage
    one = run_cli("file", "replace", "--agent", "designer", "notes.md", "--old", "spaces",
                  "--new", "tabs")
    assert one.returncode == 0


def test_hook_help_never_waits_for_stdin_and_names_the_events() -> None:
    for args in (["hook", "--help"], ["hook", "claude-code", "--help"],
                 ["hook", "codex", "SessionStart", "--help"]):
        with subprocess.Popen([sys.executable, "-m", "memoryd_client", *args],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as process:
            deadline = time.monotonic() + 10
            while process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)  # stdin stays open: a hook reading it would never end
            if process.returncode is None:
                process.kill()
            assert process.wait() == 0, f"{args} waited on stdin"
            out = process.stdout.read()  # type: ignore[union-attr]
        assert "SessionStart" in out and "UserPromptSubmit" in out, args
    uninstall = run_cli("hook", "uninstall", "--help").stdout
    assert "Remove exactly the hooks" in uninstall and "Add memoryd" not in uninstall
    assert "examples:" in uninstall


def test_session_list_and_sessions_are_one_command(daemon) -> None:
    payload = json.dumps({"session_id": "s-one", "cwd": "/tmp", "hook_event_name": "SessionStart",
                          "source": "startup", "transcript_path": None})
    subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "claude-code", "SessionStart"],
                   input=payload, text=True, capture_output=True, check=True)
    grouped = run_cli("session", "list", "--json")
    alias = run_cli("sessions", "--json")
    assert grouped.returncode == alias.returncode == 0, grouped.stderr
    ids = [s["id"] for s in json.loads(grouped.stdout)["sessions"]]
    assert ids == [s["id"] for s in json.loads(alias.stdout)["sessions"]] and "s-one" in ids
    shown = run_cli("session", "show", "s-one")
    assert shown.returncode == 0 and "session s-one" in shown.stdout
    # a command with a list names it by default, options and all
    bare = run_cli("--json", "session", "--agent", "claude-code", "--limit", "5")
    assert bare.returncode == 0, bare.stderr
    assert [s["id"] for s in json.loads(bare.stdout)["sessions"]] == ids
    passes = run_cli("pass")
    assert passes.returncode == 0 and passes.stdout == run_cli("pass", "list").stdout
    assert "consolidate" in passes.stdout
    assert "add" in run_cli("sources", "--help").stdout  # help is the command's, not list's


def test_a_usage_error_is_reported_by_its_command() -> None:
    """`memory store … --here` (store has no --here): the error names `memory store` and shows
    its usage, not the top-level `memory: error` under `memory`'s usage; a missing argument's
    error shows the command's example."""
    result = run_cli("store", "coder", "prefs", "deploy with fly", "--here")
    assert result.returncode == 2
    assert "memory store: error: unrecognized arguments: --here" in result.stderr, result.stderr
    assert "usage: memory store" in result.stderr and "--global" in result.stderr
    # the usual slip: no CATEGORY; the error shows where it goes
    short = run_cli("search", "coder", "how do we deploy")
    assert short.returncode == 2
    assert "required: query\nexample: memory search designer - '" in short.stderr, short.stderr
    action = run_cli("--json", "pass", "run", "consolidate", "--everything")
    assert action.returncode == 2
    assert json.loads(action.stdout)["error"]["message"].startswith("memory pass run: error:")


def test_mcp_takes_a_socket() -> None:
    from memoryd_client.parser import build_parser

    args = build_parser().parse_args(["mcp", "--agent", "designer", "--socket", "/tmp/x.sock"])
    assert args.socket == "/tmp/x.sock" and args.agent == "designer"


def _store_history(client: Client) -> dict[str, str]:
    """Entries of several kinds and ages; returns name → id."""
    day = 86_400
    now = time.time()
    ids = {}
    for name, agent, category, text, extra in (
        ("old", "designer", "rejected", "A logo in neon green was rejected", {"created": now - 40 * day}),
        ("lesson", "designer", "process", "Never ship a sticker without a proof print",
         {"kind": "lesson", "polarity": "negative", "tags": ["print", "sticker"], "created": now - 3 * day}),
        ("fact", "coder", "prefs", "Commit messages in the imperative",
         {"key": "pref.commit_style", "confidence": 0.8}),
        ("note", "designer", "rejected", "Floating speech bubble disconnected from the body", {}),
        ("near", "designer", "rejected", "Floating speech bubbles disconnected from the body",
         {"force": True}),
        ("gone", "coder", "tools", "We lint with flake8", {}),
    ):
        result = client.remember(agent, category, text, **extra)
        assert result["stored"], (name, result)
        ids[name] = result["entry"]["id"]
    client.forget(ids["gone"], reason="we use ruff now")
    return ids


def test_a_category_is_named_in_any_case_and_a_misspelt_one_is_said(daemon, client) -> None:
    """A heading's category is made in lower case ("## Mistakes": mistakes): named as the
    heading reads, it found nothing, "no match (nothing ranked)" and no word why."""
    lesson = client.remember("claude-code", "mistakes", "Ran the orders migration without a "
                             "backup first")["entry"]["id"]
    quirk = client.remember("claude-code", "Tool Quirks", "The orders exporter drops the "
                            "header row")["entry"]["id"]
    found = run_cli("search", "claude-code", "Mistakes", "orders migration backup")
    assert found.returncode == 0 and lesson in found.stdout, found.stderr
    assert quirk in run_cli("search", "claude-code", "tool-quirks", "exporter header").stdout
    assert lesson in run_cli("list", "--category", "MISTAKES").stdout
    missed = run_cli("search", "claude-code", "mistaeks", "orders migration backup")
    assert missed.returncode == 1 and "no match (nothing ranked)" in missed.stderr
    assert "no entries in category 'mistaeks' at all" in missed.stderr
    assert "no entries in category 'mistaeks' at all" in run_cli(
        "list", "--category", "mistaeks").stderr
    assert "unknown_category" not in client.search("backup", agent="claude-code",
                                                   category="Mistakes")


def test_list_and_recent_filter_page_and_order(daemon, client) -> None:
    ids = _store_history(client)
    listed = run_cli("list", "designer")
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert [line.split()[2] for line in lines] == [ids["near"], ids["note"], ids["lesson"], ids["old"]]
    assert "entries 1-4 of 4" in listed.stderr
    recent = run_cli("recent", "designer").stdout  # the last 7 days: not the 40-day-old entry
    assert ids["lesson"] in recent and ids["old"] not in recent
    # a day as a person names it: since the start of yesterday (local), not the 3-day-old one
    lately = run_cli("recent", "designer", "--since", "Yesterday")
    assert lately.returncode == 0, lately.stderr
    assert ids["note"] in lately.stdout and ids["lesson"] not in lately.stdout
    lessons = json.loads(run_cli("list", "*", "--kind", "lesson", "--json").stdout)
    assert [e["id"] for e in lessons["entries"]] == [ids["lesson"]] and lessons["total"] == 1
    page = run_cli("list", "designer", "--limit", "2", "--offset", "1")
    assert [line.split()[2] for line in page.stdout.splitlines()] == [ids["note"], ids["lesson"]]
    assert "entries 2-3 of 4; next page: --offset 3" in page.stderr
    past = run_cli("list", "designer", "--offset", "10")  # not "entries 10-10 of 4"
    assert past.stdout == "" and "no entries from --offset 10: 4 in all" in past.stderr
    nobody = run_cli("list", "nobody").stderr  # a misspelt agent is not an empty one
    assert "no entries" in nobody and "no entries of agent 'nobody' at all" in nobody
    assert "at all" not in past.stderr and "at all" not in run_cli("list", "designer").stderr
    missed = run_cli("search", "designer,desginer", "-", "sticker")
    assert "no entries of agent 'desginer' at all" in missed.stderr
    assert "unknown_agents" not in client.search("sticker", agent="designer")
    forgotten = run_cli("list", "coder", "--status", "forgotten").stdout
    assert ids["gone"] in forgotten and ids["fact"] not in forgotten
    oldest = run_cli("list", "--oldest", "--limit", "1").stdout
    assert ids["old"] in oldest
    # the cursor pages through everything once, also with entries written meanwhile
    seen, cursor = [], None
    while True:
        reply = client.list_entries(order="oldest", limit=2, cursor=cursor)
        seen += [e["id"] for e in reply["entries"]]
        if cursor is None:
            client.remember("coder", "tools", "We lint with ruff")  # newest: comes last
        cursor = reply["next"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 6  # 5 active + the one written meanwhile
    bad = run_cli("list", "--status", "bogus")
    assert bad.returncode == 2 and "list: --status must be among" in bad.stderr
    # the daemon's method and parameter, said in the command's words (`recent` asks `list`)
    bogus = run_cli("recent", "--since", "bogus")
    assert bogus.returncode == 2, bogus.stderr
    assert bogus.stderr.startswith("Error: recent: --since 'bogus' is not a time"), bogus.stderr


def test_export_then_import_into_a_fresh_home_reproduces_the_entries(
        daemon, client, embedder, monkeypatch, tmp_path: Path) -> None:
    ids = _store_history(client)
    exported = tmp_path / "memory.jsonl"
    result = run_cli("export", "-o", str(exported))
    assert result.returncode == 0 and "exported 5 entries" in result.stderr
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [line["id"] for line in lines] == [ids[n] for n in ("old", "lesson", "fact", "note", "near")]
    assert all(line["via"] in ("api", "import") and line["writer"] for line in lines)  # provenance
    every = run_cli("export", "--status", "any", "--agent", "coder").stdout.splitlines()
    assert {json.loads(line)["status"] for line in every} == {"active", "forgotten"}
    since = run_cli("export", "--since", "7d").stdout.splitlines()
    assert ids["old"] not in "".join(since) and len(since) == 4
    daemon.stop()

    fresh = Path(os.environ["MEMORYD_HOME"]) / "fresh"  # removed with the first
    monkeypatch.setenv("MEMORYD_HOME", str(fresh))
    second = start_daemon(embedder)
    try:
        (exported.parent / "with-extras.jsonl").write_text(
            exported.read_text()
            + json.dumps({**lines[0], "status": "forgotten", "text": "an old forgotten thing"}) + "\n"
            + json.dumps({**lines[0], "via": "watch", "text": "from a watched file"}) + "\n"
            + json.dumps({**lines[0], "agent": "team.acme", "text": "a team's lesson"}) + "\n")
        imported = run_cli("import", str(exported.parent / "with-extras.jsonl"))
        assert imported.returncode == 0, imported.stderr  # a team's entries come by its sync
        assert "stored 5, already there 0, skipped 1 not active, 1 from watched files and 1 of " \
            "a team" in imported.stdout
        with Client(second.socket) as fresh_client:
            copies = fresh_client.list_entries(order="oldest", limit=100)["entries"]
            kept = ("agent", "category", "kind", "key", "text", "tags", "confidence", "project",
                    "polarity", "status", "created", "session")
            assert [{k: c[k] for k in kept} for c in copies] == \
                [{k: line[k] for k in kept} for line in lines]
            assert {c["via"] for c in copies} == {"import"}
            # writer and via are the daemon's (D4): who imported them, through which channel
            assert {c["writer"] for c in copies} == {f"{c['agent']} (cli)" for c in copies}
            history = fresh_client.history(copies[0]["id"])
            assert [e["action"] for e in history["events"]] == ["remember"]
        ledgers = {p.name: len(p.read_text().splitlines()) for p in (fresh / "ledger").iterdir()}
        assert ledgers == {"designer.jsonl": 4, "coder.jsonl": 1}
        again = run_cli("import", str(exported))  # importing twice changes nothing
        assert again.returncode == 0 and "stored 0, already there 5" in again.stdout
        # a refused line (feedback, not typed at a terminal) among two agents' lines: the other
        # lines are stored and counted as stored (they once counted as "already there")
        piped = subprocess.run([sys.executable, "-m", "memoryd_client", "import", "-", "--json"],
                               input='{"agent": "x", "text": "ok"}\nnot json\n'
                               '{"agent": "y", "text": "y says the kiln fires at dawn"}\n'
                               '{"agent": "x", "kind": "feedback", "text": "the user said"}\n',
                               text=True, capture_output=True, check=False)
        assert piped.returncode == 1
        report = json.loads(piped.stdout)
        assert [r["line"] for r in report["refused"]] == [2, 4]
        assert (report["counts"]["stored"], report["counts"]["duplicate"]) == (2, 0)
    finally:
        second.stop()


def _export_then_import_elsewhere(daemon, client, embedder, monkeypatch, tmp_path: Path
                                  ) -> tuple[Path, RunningDaemon]:
    """Two entries of `coder`, exported (`--status any`) and imported into a fresh home, as
    from another machine: the export and the fresh daemon (the caller stops it)."""
    client.remember("coder", "ci", "tests take 6 minutes on CI")
    client.remember("coder", "deploys", "Deploys go out on Tuesdays")
    exported = tmp_path / "x.jsonl"
    assert run_cli("export", "--status", "any", "-o", str(exported)).returncode == 0
    daemon.stop()
    monkeypatch.setenv("MEMORYD_HOME", str(Path(os.environ["MEMORYD_HOME"]) / "elsewhere"))
    second = start_daemon(embedder)
    first = run_cli("import", str(exported))
    assert first.returncode == 0 and "stored 2, already there 0" in first.stdout, first.stdout
    return exported, second


def _active_texts(running: RunningDaemon) -> list[str]:
    with Client(running.socket) as c:
        return sorted(e["text"] for e in c.list_entries(agent="coder", limit=100)["entries"])


def _imported_id(running: RunningDaemon, text: str) -> str:
    with Client(running.socket) as c:
        (entry,) = [e for e in c.list_entries(agent="coder", limit=100)["entries"]
                    if e["text"] == text]
    assert entry["via"] == "import"
    return str(entry["id"])


def test_an_imported_entry_superseded_since_is_not_imported_again(
        daemon, client, embedder, monkeypatch, tmp_path: Path) -> None:
    """The tester's repro: an export imported, an imported entry superseded, the same export
    imported again. The old text came back as a new active entry beside its new version
    ("stored 1"): a supersede is the user's decision, which importing twice must not undo."""
    exported, second = _export_then_import_elsewhere(daemon, client, embedder, monkeypatch,
                                                     tmp_path)
    try:
        old = _imported_id(second, "tests take 6 minutes on CI")
        superseded = run_cli("supersede", old, "tests take 8 minutes on CI")
        assert superseded.returncode == 0, superseded.stderr
        again = run_cli("import", str(exported))
        assert again.returncode == 0, again.stderr
        assert "stored 0, already there 1, skipped 0 not active, 0 from watched files and 1 " \
            "already imported (since forgotten, superseded or archived), refused 0" \
            in again.stdout, again.stdout
        assert _active_texts(second) == ["Deploys go out on Tuesdays",
                                         "tests take 8 minutes on CI"]
        counted = json.loads(run_cli("--json", "import", str(exported)).stdout)["counts"]
        assert (counted["stored"], counted["duplicate"], counted["skipped_decided"]) == (0, 1, 1)
    finally:
        second.stop()


def test_an_entry_forgotten_since_its_import_or_its_export_is_not_imported_again(
        daemon, client, embedder, monkeypatch, tmp_path: Path) -> None:
    """A forget is a decision: the forgotten entry came back active at the next import of the
    same export, into another store or into the one it was exported from."""
    exported, second = _export_then_import_elsewhere(daemon, client, embedder, monkeypatch,
                                                     tmp_path)
    try:
        forgotten = run_cli("forget", _imported_id(second, "Deploys go out on Tuesdays"))
        assert forgotten.returncode == 0, forgotten.stderr
        again = run_cli("import", str(exported))
        assert again.returncode == 0, again.stderr
        assert "stored 0, already there 1" in again.stdout, again.stdout
        assert "and 1 already imported (since forgotten, superseded or archived)" in again.stdout
        assert _active_texts(second) == ["tests take 6 minutes on CI"]
        # the store the export came from: its own entry, forgotten since the export
        with Client(second.socket) as c:
            own = c.remember("coder", "ci", "The flaky test is test_sync_merge")["entry"]
        home = tmp_path / "own.jsonl"
        assert run_cli("export", "--agent", "coder", "-o", str(home)).returncode == 0
        assert run_cli("forget", own["id"]).returncode == 0
        back = run_cli("import", str(home))
        assert back.returncode == 0 and "stored 0, already there 1" in back.stdout, back.stdout
        assert "and 1 already imported" in back.stdout, back.stdout
        assert "The flaky test is test_sync_merge" not in _active_texts(second)
    finally:
        second.stop()


def test_a_new_line_in_an_export_imported_before_is_still_imported(
        daemon, client, embedder, monkeypatch, tmp_path: Path) -> None:
    """What identifies a line imported before is its entry's agent, text and date: a line
    added to the file since is stored, and so are the same words dated otherwise (said again
    later: another entry), beside the line skipped because its entry was superseded."""
    exported, second = _export_then_import_elsewhere(daemon, client, embedder, monkeypatch,
                                                     tmp_path)
    try:
        old = _imported_id(second, "tests take 6 minutes on CI")
        assert run_cli("supersede", old, "tests take 8 minutes on CI").returncode == 0
        line = json.loads(exported.read_text().splitlines()[0])
        assert line["text"] == "tests take 6 minutes on CI"
        with exported.open("a") as more:
            more.write(json.dumps({**line, "id": "0new", "category": "lint",
                                   "text": "We lint with ruff"}) + "\n")
            more.write(json.dumps({**line, "id": "1new", "created": line["created"] - 3600})
                       + "\n")
        again = run_cli("import", str(exported))
        assert again.returncode == 0, again.stderr
        assert "stored 2, already there 1" in again.stdout, again.stdout
        assert "and 1 already imported (since forgotten, superseded or archived)" in again.stdout
        assert _active_texts(second) == ["Deploys go out on Tuesdays", "We lint with ruff",
                                         "tests take 6 minutes on CI",
                                         "tests take 8 minutes on CI"]
    finally:
        second.stop()


def test_an_imported_line_dated_otherwise_is_another_sighting_of_its_entry(
        daemon, client, embedder, tmp_path: Path) -> None:
    """A tester's report: an import line with the text of an entry and another `created`
    was dropped as "already there 1": the second sighting was lost, and promotion counts
    sightings. It is counted on the entry (its occurrences, a superseded sighting with its
    date and session, as a lesson said again in a later session is), and said; importing
    the file again changes nothing, and a rebuild of the index keeps the count."""
    said = "Used threshold-based black removal; it ate the dark hair."
    line = {"agent": "designer", "category": "mistakes", "kind": "lesson", "text": said,
            "polarity": "negative", "confidence": 0.8}
    days = ("2026-11-08", "2026-11-25", "2026-11-29")
    exported = tmp_path / "lessons.jsonl"
    exported.write_text("".join(
        json.dumps({**line, "session": f"s{n}", "created": time.mktime(time.strptime(
            day, "%Y-%m-%d"))}) + "\n" for n, day in enumerate(days)))
    imported = run_cli("import", str(exported))
    assert imported.returncode == 0, imported.stderr
    assert "stored 1, already there 0, counted again 2 (the text of an entry here, dated " \
        "otherwise: another sighting of it)" in imported.stdout, imported.stdout
    [entry] = client.list_entries(agent="designer")["entries"]
    assert entry["occurrences"] == 3
    # the sightings count for promotion: three sessions
    assert client.pass_run("promote")["counts"] == {"proposed": 1}

    again = run_cli("import", str(exported))
    assert "stored 0, already there 3, skipped" in again.stdout, again.stdout
    assert client.get(entry["id"])["occurrences"] == 3
    daemon.stop()
    rebuilt = reindexed(embedder)
    try:
        with Client(rebuilt.socket) as after:
            assert after.get(entry["id"])["occurrences"] == 3
    finally:
        rebuilt.stop()


def test_an_import_refuses_a_line_that_is_not_utf8_and_goes_on(daemon, memoryd_home) -> None:
    """A line in another encoding, or with a lone surrogate escaped in its JSON: that line is
    refused and named, and the lines after it are imported, from a file and from stdin. The
    first stopped the import with a traceback, the second failed its whole batch."""
    lines = [b'{"agent": "grocer", "text": "Quinces ripen in October."}',
             b'{"agent": "grocer", "text": "Caf\xe9 beans come on Tuesdays."}',
             b'{"agent": "grocer", "text": "lone \\udcff escape"}',
             b'{"agent": "grocer", "text": "Limes keep for a month in the cold room."}']
    export = memoryd_home / "latin1.jsonl"
    export.write_bytes(b"\n".join(lines) + b"\n")
    result = run_cli("import", str(export))
    assert result.returncode == 1, result.stderr
    assert "stored 2" in result.stdout and "refused 2" in result.stdout
    assert "line 2: refused: not UTF-8 text (byte 0xe9 at character 33)" in result.stderr
    assert "line 3: refused: holds a lone surrogate" in result.stderr
    piped = subprocess.run([sys.executable, "-m", "memoryd_client", "import", "-", "--json"],
                           input=export.read_bytes(), capture_output=True, check=False)
    assert piped.returncode == 1, piped.stderr
    report = json.loads(piped.stdout)
    assert report["counts"]["duplicate"] == 2 and [r["line"] for r in report["refused"]] == [2, 3]


def test_an_export_saved_by_a_windows_editor_imports_whole(daemon, memoryd_home) -> None:
    """A byte-order mark and CRLF line endings, as an editor on Windows saves the export: every
    line is an entry (the first was refused as "not JSON")."""
    lines = ['{"agent": "grocer", "text": "Quinces ripen in October."}',
             '{"agent": "grocer", "text": "Limes keep for a month in the cold room."}']
    export = memoryd_home / "windows.jsonl"
    export.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    result = run_cli("import", str(export))
    assert result.returncode == 0, result.stderr
    assert "stored 2" in result.stdout and "refused 0" in result.stdout, result.stdout


def test_an_export_kept_compressed_imports_as_it_is(daemon, memoryd_home) -> None:
    """`memory import x.jsonl.gz` refused every line as "not UTF-8 text" (22 lines of it)."""
    import gzip

    export = memoryd_home / "kept.jsonl.gz"
    export.write_bytes(gzip.compress(b'{"agent": "grocer", "text": "Figs split after rain."}\n'))
    result = run_cli("import", str(export))
    assert result.returncode == 0, result.stderr
    assert "stored 1" in result.stdout and "refused 0" in result.stdout, result.stdout


def test_the_fast_parser_reads_every_plain_command_as_argparse_does() -> None:
    """A command whose arguments are all plain (`memory store`, `search`, `get` …) skips
    argparse. Both parsers are made from the table of commands, so they know the same options;
    they must also read every option the same way, and leave anything unusual to argparse."""
    from memoryd_client.cli import fast_parse
    from memoryd_client.commands import every_command
    from memoryd_client.parser import build_parser

    parser = build_parser()
    commands = every_command()
    fast = [name for name, command in commands.items() if command.fast]
    assert {"store", "search", "get", "forget", "status"} <= set(fast)
    assert not {"file", "pass", "mcp", "hook", "context", "list"} & set(fast)  # not plain
    samples = {"str": "a,b", "int": "7", "float": "0.5", "seconds": "2.5", "port": "8765",
               "flag": None}
    for name in fast:
        args = commands[name].args
        positionals = ["agent-1", "-", "some words"][:sum(arg.positional for arg in args)]
        variants = [[name, *positionals], ["--json", "--socket", "/s", name, *positionals],
                    [name, *positionals, "--timeout", "3"]]
        for arg in (arg for arg in args if not arg.positional):
            value = arg.kind[-1] if isinstance(arg.kind, tuple) else samples[arg.kind]
            for flag in arg.flags:
                option = [flag] if value is None else [flag, value]
                variants += [[name, *option, *positionals], [name, *positionals, *option]]
                if value is not None:
                    variants.append([name, *positionals, f"{flag}={value}"])
        for argv in variants:
            fast_args = fast_parse(argv)
            assert fast_args is not None, argv
            assert vars(fast_args) == vars(parser.parse_args(argv)), argv
    for argv in (["search", "a", "-", "q", "-h"], ["search", "a", "-", "q", "--lim", "3"],
                 ["search", "a", "-"], ["store", "a", "c", "t", "--kind", "bogus"],
                 ["store", "a", "c", "t", "--confidence", "high"], ["--force", "store", "a", "c", "t"],
                 ["search", "a", "-", "q", "--limit"], ["store", "a", "c", "t", "extra"],
                 ["store", "a", "c", "t", "--force=yes"], ["get", "--", "id"], ["get"]):
        assert fast_parse(argv) is None, argv


def test_every_function_the_table_names_exists() -> None:
    """The table names the long commands' functions by module (imported when they run)."""
    import importlib

    from memoryd_client.command_spec import LATER
    from memoryd_client.commands import every_command

    every_command()  # naming them is what fills LATER

    assert len(LATER) > 10
    for module, name in LATER:
        assert callable(getattr(importlib.import_module(f"memoryd_client.{module}"), name)), \
            (module, name)


def test_the_socket_path_without_platformdirs_is_the_one_platformdirs_gives(
        monkeypatch, tmp_path: Path) -> None:
    """Without MEMORYD_HOME the client finds the daemon's socket under $XDG_RUNTIME_DIR without
    importing platformdirs when the socket is there; it must be the daemon's path."""
    import socket as socket_module

    from memoryd_client.paths import socket_path, socket_text

    monkeypatch.delenv("MEMORYD_HOME")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert socket_text() == str(socket_path())  # no socket yet: platformdirs decides
    (runtime / "memoryd").mkdir(mode=0o700, exist_ok=True)
    with socket_module.socket(socket_module.AF_UNIX) as listener:
        listener.bind(str(runtime / "memoryd" / "memoryd.sock"))
        assert socket_text() == str(socket_path()) == str(runtime / "memoryd" / "memoryd.sock")


@pytest.mark.slow
def test_export_and_import_of_a_store_bigger_than_a_page(daemon, client, embedder, monkeypatch,
                                                         tmp_path: Path) -> None:
    """1,200 entries of three agents: the export reads them in pages (cursor), the import
    writes them in batches; the fresh store holds the same entries, and importing again
    stores nothing."""
    from memoryd_client.list_commands import BATCH, PAGE

    count = 1200
    assert count > PAGE and count > 2 * BATCH
    entries = [{"agent": ("designer", "coder", "writer")[i % 3], "category": f"topic-{i % 7}",
                "text": f"Observation {i}: the {('red', 'blue', 'green')[i % 3]} build step "
                        f"number {i} takes {i % 13} seconds", "force": True,
                "created": time.time() - (count - i) * 60} for i in range(count)]
    for start in range(0, count, 400):
        client.remember_many(entries[start:start + 400])
    exported = tmp_path / "all.jsonl"
    assert run_cli("export", "-o", str(exported), timeout=300).returncode == 0
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(lines) == count == len({line["id"] for line in lines})
    assert [line["created"] for line in lines] == sorted(line["created"] for line in lines)
    daemon.stop()

    fresh = Path(os.environ["MEMORYD_HOME"]) / "fresh"  # removed with the first
    monkeypatch.setenv("MEMORYD_HOME", str(fresh))
    second = start_daemon(embedder)
    try:
        imported = run_cli("import", str(exported), timeout=600)
        assert imported.returncode == 0 and f"stored {count}, already there 0" in imported.stdout
        with Client(second.socket) as fresh_client:
            listed = fresh_client.list_entries(limit=1)
            assert listed["total"] == count
            copies = [e for start in range(0, count, 1000) for e in fresh_client.list_entries(
                order="oldest", limit=1000, offset=start)["entries"]]
        kept = ("agent", "category", "text", "created", "confidence")
        assert [{k: c[k] for k in kept} for c in copies] == [{k: e[k] for k in kept} for e in lines]
        again = run_cli("import", str(exported), timeout=600)
        assert again.returncode == 0 and f"stored 0, already there {count}" in again.stdout
    finally:
        second.stop()


def test_the_memory_script_imports_only_the_cli() -> None:
    """`memory` is a plain script (client/scripts/memory), not a console_scripts launcher, which
    would import re before the CLI starts; the installed one runs the CLI."""
    import ast

    script = Path(__file__).resolve().parents[2] / "client" / "scripts" / "memory"
    tree = ast.parse(script.read_text())
    imported = {alias.name if isinstance(node, ast.Import) else node.module
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert imported == {"memoryd_client.cli"}
    installed = Path(sys.executable).parent / "memory"
    result = subprocess.run([str(installed), "--version"], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0 and result.stdout.startswith("memory (memoryd-client)")


def test_import_list_and_export_of_entries_past_the_frame_limit(keyword_daemon,
                                                                 tmp_path: Path) -> None:
    """520 legal entries of 16,500 characters: 8.6 MB, past a frame (8 MiB). `import` sent
    500 of them in one request and was refused whole; `list --limit 1000` and `export` failed
    ("frame of 8440481 bytes exceeds the limit"). The import batches by bytes, and the daemon
    ends a page by bytes (the rest is the next page's)."""
    from tests.writes.test_remember import long_text

    count = 520
    entries = [{"agent": "imp", "category": "notes", "text": long_text(i, 16_500),
                "created": time.time() - (count - i) * 60} for i in range(count)]
    source = tmp_path / "big.jsonl"
    source.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    imported = run_cli("import", str(source), timeout=600)
    assert imported.returncode == 0, imported.stderr
    assert f"stored {count}, already there 0" in imported.stdout
    listed = run_cli("list", "imp", "--limit", "1000")
    assert listed.returncode == 0, listed.stderr
    shown = len(listed.stdout.splitlines())
    assert 0 < shown < count
    assert f"entries 1-{shown} of {count}; next page: --offset {shown}" in listed.stderr
    exported = tmp_path / "imp.jsonl"
    done = run_cli("export", "--agent", "imp", "-o", str(exported), timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [line["text"] for line in lines] == [e["text"] for e in entries]


def fake_daemon_failing_on_the_second_page(path: Path, entry: dict[str, object]) -> None:
    """A socket standing in for memoryd: it binds, answers one page of ``list`` (with a
    cursor for more), then closes the connection on the next request."""
    import socket as socket_module
    import struct
    import threading

    import msgpack

    listener = socket_module.socket(socket_module.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            stream = conn.makefile("rb")
            pages = 0
            while header := stream.read(4):
                request = msgpack.unpackb(stream.read(struct.unpack(">I", header)[0]))
                if request["method"] == "list":
                    pages += 1
                    if pages > 1:
                        return
                    result: dict[str, object] = {"entries": [entry], "total": 2, "next": "1.0:1"}
                else:
                    result = {}
                body = msgpack.packb({"id": request["id"], "result": result})
                conn.sendall(struct.pack(">I", len(body)) + body)

    threading.Thread(target=serve, daemon=True).start()


def test_an_export_that_fails_midway_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """An export that failed after its first pages left them in the file, which looked like a
    whole (smaller) backup. Now the file is written whole or not at all, and stderr says how
    far it got; into a pipe, the output is said to be incomplete."""
    socket_path = tmp_path / "s.sock"
    backup = tmp_path / "backup.jsonl"
    backup.write_text('{"the": "backup of last week"}\n')
    entry = {"id": "abc123", "agent": "a", "text": "the first page's entry", "created": 1.0}
    fake_daemon_failing_on_the_second_page(socket_path, entry)
    failed = run_cli("--socket", str(socket_path), "export", "-o", str(backup))
    assert failed.returncode != 0
    assert f"stopped after 1 entry; nothing was written to {backup}" in failed.stderr
    assert backup.read_text() == '{"the": "backup of last week"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [backup.name, socket_path.name]
    socket_path.unlink()  # (no temporary file left beside the backup)
    fake_daemon_failing_on_the_second_page(socket_path, entry)
    piped = run_cli("--socket", str(socket_path), "export")
    assert piped.returncode != 0 and "the first page's entry" in piped.stdout
    assert "stopped after 1 entry; the output is incomplete" in piped.stderr


def test_an_interrupted_runs_count_of_applied_changes_is_of_every_page(capsys) -> None:
    """A long run's reply holds one page of its changes: `memory pass show` said "its 1
    applied change stays" of a run stopped midway with eight applied, as the viewer's undo
    button did (the reply's ``undoable`` counts every page)."""
    from memoryd_client.pass_view import print_show

    change = {"change": "c9", "kind": "file", "action": "prune", "state": "applied",
              "target": "/notes/nb.md", "why": None, "before": None, "after": None}
    print_show({"run": "r4", "pass": "notebooks", "status": "interrupted", "started": 0.0,
                "finished": 1.0, "counts": {"applied": 8}, "changes": [change],
                "changes_total": 8, "offset": 0, "next": 1, "undoable": 8})
    assert "its 8 applied changes stay; memory undo r4" in capsys.readouterr().out
