"""Extraction at session end, through the hooks, on a real Claude Code transcript."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryd_client import Client

from tests.conftest import run_cli, run_hook, wait_until

SESSION = "7d1e2f3a-4b5c-4d6e-8f70-9a1b2c3d4e5f"

CORRECTIONS = [
    "Let's fix the flaky checkout test.",
    "Don't use mocks in the integration tests, they hide real failures.",
    "We fixed the login bug yesterday, so skip that.",
    "The config lives in src/app/config.py if you need it.",
    "Never force-push to main.",
    "I prefer tabs over spaces in this repo.",
    "Remember that the staging DB is read-only on Fridays.",
    "Remember that we deployed v2 yesterday.",
]


def transcript(path: Path, messages: list[str]) -> None:
    lines = []
    for i, text in enumerate(messages):
        lines.append({"type": "user", "uuid": f"u{i}", "sessionId": SESSION, "cwd": "/tmp",
                      "timestamp": "2026-06-01T09:58:00.000Z", "isSidechain": False,
                      "message": {"role": "user", "content": text}})
        lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": SESSION, "cwd": "/tmp",
                      "timestamp": "2026-06-01T09:58:05.000Z", "isSidechain": False,
                      "message": {"id": f"msg_{i}", "role": "assistant",
                                  "content": [{"type": "text", "text": "Understood."}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def end_session(cwd: Path, path: Path) -> None:
    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(cwd)}
    assert run_hook("claude-code", "SessionStart", {**payload, "hook_event_name": "SessionStart"}).returncode == 0
    assert run_hook("claude-code", "SessionEnd", {**payload, "hook_event_name": "SessionEnd", "reason": "other"}).returncode == 0


@contextmanager
def extracting(memoryd_home: Path, embedder, tmp_path: Path,  # type: ignore[no-untyped-def]
               extract: str) -> Iterator[tuple[Client, Path]]:
    """A daemon of its own whose config.toml's ``[extract]`` table holds ``extract``, and the
    session's transcript (CORRECTIONS) written: its client and the transcript's path."""
    from tests.conftest import start_daemon

    (memoryd_home / "config.toml").write_text(f"[extract]\n{extract}")
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            yield client, path
    finally:
        running.stop()


def lessons(client: Client) -> list[dict]:
    return client.search("tests mocks push tabs staging", agent="claude-code", limit=50,
                         kind=["lesson", "fact"])["hits"]


def test_corrections_become_lessons_and_noise_does_not(daemon, client, tmp_path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS)
    report = run_cli("extract", SESSION, "--dry-run")
    assert report.returncode == 1  # the session is not registered yet
    end_session(tmp_path, path)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not client.session(SESSION)["session"]["extracted"]:
        time.sleep(0.05)
    found = {h["text"]: h for h in lessons(client)}
    texts = " | ".join(found)
    assert "mocks" in texts and "force-push" in texts and "tabs" in texts and "read-only on Fridays" in texts
    assert "login bug" not in texts and "config.py" not in texts and "deployed v2" not in texts
    [never] = [h for h in found.values() if "force-push" in h["text"]]
    assert never["kind"] == "lesson" and never["polarity"] == "negative" and never["confidence"] == 0.8
    assert never["via"] == "extract" and never["session"] == SESSION and never["message_id"] == "u4"
    assert any(h["kind"] == "fact" and h["key"] == "pref.indentation" for h in found.values())
    # the block of the next session carries them
    context = client.context("claude-code")["text"]
    assert "- Never force-push to main. [git]" in context
    # a second run finds everything already known (the session named by the start of its id)
    dry = run_cli("extract", SESSION[:8], "--dry-run")
    assert dry.returncode == 0
    assert "accepted" not in dry.stdout.replace("rejected", "") and "duplicate" in dry.stdout
    assert "negative-list" in dry.stdout
    # every user message is in the report, the ones nothing came from too (M10)
    assert dry.stdout.count("- message u") == len(CORRECTIONS)
    assert "\"Let's fix the flaky checkout test.\"\n    → nothing to keep" in dry.stdout
    assert "→ nothing to keep" in dry.stdout and "accepted (accepted)" not in dry.stdout


def test_a_lesson_asked_for_in_its_own_words_is_a_match_beside_its_turn(
        daemon, client, tmp_path) -> None:
    """A lesson extracted from a watched session says what the turn it came from said: asked
    for in its own words, it is a match (as the turn may be). The turn was its rival (the
    lesson's lead over it was 0.06), and `memory search` said "no match (best: 0.20 …)"."""
    client.remember_many([  # what else the agent knows: a store, not an empty one
        {"agent": "claude-code", "category": "notes", "text": f"{subject} {what}."}
        for subject in ("The deploy", "Our CI", "The staging box", "Code review", "The backup",
                        "Docker builds", "The cache", "The API gateway")
        for what in ("runs every night at two", "needs a green pipeline first",
                     "uses Postgres 16", "is owned by the platform team", "logs to Loki",
                     "retries three times", "must be signed off by Ana", "breaks on VPN loss")])
    project = Path(os.environ["HOME"]) / ".claude" / "projects" / "-tmp-quokka"
    project.mkdir(parents=True)
    path = project / f"{SESSION}.jsonl"
    transcript(path, ["Let's look at the quokka parser today.",
                      "From now on, never use utf-8 decoding in the quokka parser; always use "
                      "utf-8-sig.",
                      "Then run the parser tests again."])
    wait_until(lambda: any("utf-8-sig" in h["text"] for h in client.search(
        "quokka parser utf-8-sig", agent="claude-code", kind=["turn"])["hits"]))
    end_session(tmp_path, path)
    wait_until(lambda: client.session(SESSION)["session"]["extracted"])
    [lesson] = [h for h in lessons(client) if "quokka" in h["text"]]
    assert lesson["text"] == "Never use utf-8 decoding in the quokka parser."
    asked = client.search(lesson["text"], agent="claude-code", match=True)["hits"]
    assert lesson["id"] in [h["id"] for h in asked], asked  # beside its turn, or before it


def test_a_lesson_the_user_forgot_is_not_taken_again_from_its_message(
        daemon, client, tmp_path) -> None:
    """A session extracted again (`memory extract`, or `memory import-history` after a
    rebuild, which does not know which sessions were extracted) takes nothing twice from one
    message: the lesson the user forgot stayed forgotten only until then."""
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS)
    end_session(tmp_path, path)
    wait_until(lambda: client.session(SESSION)["session"]["extracted"])
    [never] = [h for h in lessons(client) if "force-push" in h["text"]]
    client.forget(never["id"], agent="claude-code")
    again = client.extract(SESSION)
    assert not [h for h in lessons(client) if "force-push" in h["text"]]
    reasons = [entry["reason"] for message in again["report"] for entry in message["entries"]]
    assert f"taken from this message before: {never['id']} (forgotten)" in reasons, reasons


def test_two_user_messages_yield_nothing(daemon, client, tmp_path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS[1:3])
    end_session(tmp_path, path)
    result = client.extract(SESSION, dry_run=True)
    assert result["messages"] == 2 and result["report"] == [] and "at least 3" in result["reason"]
    said = run_cli("extract", SESSION, "--dry-run")
    assert said.stdout.splitlines()[0] == (f"session {SESSION} (claude-code): 2 user messages; "
                                           "extraction needs at least 3"), said.stdout
    time.sleep(0.3)
    assert lessons(client) == []


def test_llm_extractor_output_passes_the_same_filters(memoryd_home, embedder, tmp_path, monkeypatch) -> None:
    import sys

    from tests.conftest import start_daemon

    # a stand-in "model runner": a real program that reads the prompt and prints JSON
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import json, sys\n"
        "prompt = sys.stdin.read()\n"
        "assert 'message_id=u1' in prompt\n"
        "print('```json')\n"
        "print(json.dumps({'entries': [\n"
        "  {'kind': 'lesson', 'text': 'Integration tests run against a real database', 'polarity': 'positive', 'message_id': 'u1'},\n"
        "  {'kind': 'lesson', 'text': 'We fixed the login bug', 'polarity': 'positive', 'message_id': 'u2'},\n"
        "  {'kind': 'nonsense'}]}))\n"
        "print('```')\n")
    monkeypatch.setenv("MEMORYD_EXTRACT_COMMAND", f"{sys.executable} {runner}")
    monkeypatch.setenv("MEMORYD_EXTRACT_DAILY_CALLS", "1")
    path = tmp_path / f"{SESSION}.jsonl"
    transcript(path, CORRECTIONS)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            end_session(tmp_path, path)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not client.session(SESSION)["session"]["extracted"]:
                time.sleep(0.05)
            entries = {e["text"]: e for e in client.session(SESSION)["entries"]}
            assert "Integration tests run against a real database" in " ".join(entries)
            assert not any("login bug" in text for text in entries)
            # the daily budget (1 call) is used: a dry run now reports only the rule-based part
            report = client.extract(SESSION, dry_run=True)["report"]
            assert not any(e["rule"] == "llm" for m in report for e in m["entries"])
    finally:
        running.stop()


RUNNER = (
    "import json, sys\n"
    "sys.stdin.read()\n"
    "print(json.dumps({'entries': [{'kind': 'lesson', 'text': 'Integration tests run against "
    "a real database', 'polarity': 'positive', 'message_id': 'u1'}]}))\n")


def test_an_llm_command_that_does_not_start_loses_nothing(memoryd_home, embedder,
                                                         tmp_path) -> None:
    """A command that did not start still used a call of the day's budget (counted before
    it was run), and one that could not be split into words (`cat 'oops`, refused by the
    configuration now) took the rule-based entries down with it. Neither: the session's
    lessons are stored, and the budget is there for the command once it is right."""
    config = memoryd_home / "config.toml"
    with extracting(memoryd_home, embedder, tmp_path,
                    f'command = "{tmp_path / "no-such-runner"}"\ndaily_calls = 1\n') \
            as (client, path):
        end_session(tmp_path, path)
        wait_until(lambda: client.session(SESSION)["session"]["extracted"], timeout_s=20)
        texts = " ".join(e["text"] for e in client.session(SESSION)["entries"])
        assert "force-push" in texts  # the rule-based part, stored
        runner = tmp_path / "runner.py"
        runner.write_text(RUNNER)
        config.write_text(f'[extract]\ncommand = "{sys.executable} {runner}"\n'
                          "daily_calls = 1\n")
        assert client.reload()["warnings"] == []
        report = client.extract(SESSION, dry_run=True)["report"]
        assert any(e["rule"] == "llm" for m in report for e in m["entries"])


#: An API key on an `[extract] command`, and a token a model's answer holds.
API_KEY = "sk-proj-" + "EXTkey01abcdefghijklmnopqrstuvwxyz0"
LLM_TOKEN = "ghp_" + "LLMoutSecret01abcdefghijklmnopqrstuvwxy"


def test_an_llm_command_that_does_not_start_is_logged_without_its_arguments(
        memoryd_home, embedder, tmp_path, caplog) -> None:
    """The log named the whole command line, API key included: `LLM extractor
    '/nonexistent/llm-cli --api-key sk-proj-… -m small' did not start`."""
    import logging

    with extracting(memoryd_home, embedder, tmp_path,
                    f'command = "/nonexistent/llm-cli --api-key {API_KEY} -m small"\n') \
            as (client, path):
        end_session(tmp_path, path)
        wait_until(lambda: client.session(SESSION)["session"]["extracted"], timeout_s=20)
        with caplog.at_level(logging.ERROR):
            done = run_cli("extract", SESSION, "--dry-run")
        assert done.returncode == 0, done.stderr
    said = [m for m in caplog.messages if "did not start" in m]
    assert said and said[0].startswith("LLM extractor '/nonexistent/llm-cli' did not start")
    assert not any(API_KEY in m or "--api-key" in m for m in caplog.messages)


def test_an_llm_candidates_secret_is_redacted_in_the_report_and_the_store(
        memoryd_home, embedder, tmp_path) -> None:
    """`memory extract` showed a model's candidate with its text raw (its category
    redacted), and the duplicate filters compared the raw text: redacted at the candidate."""

    runner = tmp_path / "runner.py"
    runner.write_text(
        "import json, sys\n"
        "sys.stdin.read()\n"
        "print(json.dumps({'entries': [{'kind': 'lesson', 'text': 'Always rotate the token "
        f"{LLM_TOKEN} after a leak', 'polarity': 'positive', 'category': 'security-{LLM_TOKEN}',"
        " 'message_id': 'u1'}]}))\n")
    with extracting(memoryd_home, embedder, tmp_path,
                    f'command = "{sys.executable} {runner}"\ndaily_calls = 10\n') \
            as (client, path):
        payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(tmp_path),
                   "hook_event_name": "SessionStart"}
        assert run_hook("claude-code", "SessionStart", payload).returncode == 0
        shown = run_cli("extract", SESSION, "--dry-run")
        as_json = run_cli("extract", SESSION, "--dry-run", "--json")
        stored = run_cli("extract", SESSION)
        for done in (shown, as_json, stored):
            assert done.returncode == 0, done.stderr
            assert LLM_TOKEN not in done.stdout, done.stdout
        assert ("'Always rotate the token [REDACTED:github-token] after a leak.': accepted"
                in shown.stdout), shown.stdout
        [llm] = [e for m in json.loads(as_json.stdout)["report"] for e in m["entries"]
                 if e["rule"] == "llm"]
        assert llm["text"] == "Always rotate the token [REDACTED:github-token] after a leak."
        texts = [e["text"] for e in client.session(SESSION)["entries"]]
        assert "Always rotate the token [REDACTED:github-token] after a leak." in texts


def session_of(client: Client, cwd: Path, session: str, messages: list[str]) -> None:
    """One Claude Code session in ``cwd`` saying ``messages``, ended and extracted."""
    path = cwd / f"{session}.jsonl"
    lines = []
    for i, text in enumerate(messages):
        lines.append({"type": "user", "uuid": f"{session[:4]}-u{i}", "sessionId": session,
                      "cwd": str(cwd), "timestamp": "2026-06-01T09:58:00.000Z",
                      "isSidechain": False, "message": {"role": "user", "content": text}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    payload = {"session_id": session, "transcript_path": str(path), "cwd": str(cwd)}
    started = run_hook("claude-code", "SessionStart", {**payload, "hook_event_name": "SessionStart"})
    assert started.returncode == 0
    assert run_hook("claude-code", "SessionEnd", {**payload, "hook_event_name": "SessionEnd",
                                              "reason": "other"}).returncode == 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not client.session(session)["session"]["extracted"]:
        time.sleep(0.05)
    assert client.session(session)["session"]["extracted"]


LOGGING = "Never use print for logging in this repo; always use the structlog logger."


def test_a_lesson_said_in_three_sessions_counts_and_is_proposed_as_a_rule(
        memoryd_home: Path, embedder, tmp_path) -> None:
    """N4: a repeat found at extraction was dropped as a duplicate and counted nothing, so
    promotion by repetition never fired for extracted lessons."""
    from tests.conftest import run_memoryd, start_daemon

    shop = tmp_path / "shop"
    (shop / ".git").mkdir(parents=True)
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            for number in range(3):
                session_of(client, shop, f"{number}aaaaaaa-2222-3333-4444-555555555555",
                           ["Let's look at the payment handler.", LOGGING, "Thanks, go on."])
            [lesson] = [h for h in client.search("print logging", agent="claude-code",
                                                 kind="lesson")["hits"]
                        if h["text"] == "Never use print for logging in this repo."]
            assert client.get(lesson["id"])["occurrences"] == 3
            extracted_again = client.extract("0aaaaaaa-2222-3333-4444-555555555555")
            assert extracted_again["seen_again"] == []  # a session counts once
            proposed = client.pass_run("promote")  # both rules of the message, each once
            assert proposed["counts"].get("proposed") == 2
            [proposal] = [c for c in client.pass_show(proposed["run"])["changes"]
                          if c["kind"] == "proposal" and c["after"]["entry"] == lesson["id"]]
            assert "seen in 3 sessions" in proposal["why"]
    finally:
        running.stop()
    (memoryd_home / "memoryd.db").unlink()  # the count is in the ledger: a rebuild keeps it
    assert run_memoryd("reindex").returncode == 0
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            assert client.get(lesson["id"])["occurrences"] == 3
            # the sessions promotion counts: the lesson's and those of its copies
            copies = client.history(lesson["id"])["entries"]
            assert len({e["session"] for e in copies}) == 3
            assert all(e["superseded_by"] == lesson["id"] for e in copies
                       if e["id"] != lesson["id"])
    finally:
        running.stop()


def test_a_preference_the_user_states_is_theirs_in_every_project(daemon, client, tmp_path) -> None:
    """L-o: "I prefer …" was extracted as a lesson of the project it was said in."""
    shop, other = tmp_path / "shop", tmp_path / "other"
    for repo in (shop, other):
        (repo / ".git").mkdir(parents=True)
    session_of(client, shop, "bbbbbbbb-2222-3333-4444-555555555555",
               ["Let's tidy the history.", "I prefer small commits with imperative messages.",
                "We prefer squash merges in this repo.", "Thanks."])
    found = {h["text"]: h for h in client.search("commits messages squash merges",
                                                 agent="claude-code", kind="lesson")["hits"]}
    mine = found["Prefer small commits with imperative messages."]
    assert mine["project"] is None  # the user's own: global
    assert found["Prefer squash merges in this repo."]["project"] is not None  # the team's
    assert "Prefer small commits with imperative messages." in \
        client.context("claude-code", cwd=str(other))["text"]


def test_what_the_user_says_they_do_themselves_is_theirs_in_every_project(
        daemon, client, tmp_path) -> None:
    """L-o, checked again: "I <do> X, never Y" is the user's own way, as "I prefer" is; its
    fact (``pref.editor``) went global while the lesson stayed in the project it was said in."""
    shop, other = tmp_path / "shop", tmp_path / "other"
    for repo in (shop, other):
        (repo / ".git").mkdir(parents=True)
    session_of(client, shop, "cccccccc-2222-3333-4444-555555555555",
               ["Let's set up the editor config.", "I use vim, never emacs.",
                "We deploy with fly.io, never with Heroku.", "Thanks."])
    found = {h["text"]: h for h in client.search("vim emacs deploy fly.io heroku",
                                                 agent="claude-code", kind="lesson")["hits"]}
    assert found["Use vim, never emacs."]["project"] is None  # the user's own: global
    assert found["Deploy with fly.io, never with Heroku."]["project"] is not None  # the team's
    block = client.context("claude-code", cwd=str(other))["text"]
    assert "Use vim, never emacs." in block and "fly.io" not in block
