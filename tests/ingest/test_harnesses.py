"""More agents, in place (issue 38 §1): Gemini CLI, OpenCode, Cursor, Aider, Cline / Roo,
GitHub Copilot and Codex memories, read from fixture files in each harness's real format
(tests/fixtures/harnesses; the formats and their sources are in docs/harnesses.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client

from memoryd.ingest.context import cwd_hint, replay
from memoryd.ingest.tail import TailPosition, read_appended
from memoryd.ingest.transcript import (
    AiderParser,
    GeminiParser,
    Turn,
    chunk_exchanges,
    document_lines,
    line_id,
    make_parser,
)
from memoryd.ingest.transcript.parser_base import parse_timestamp
from memoryd.sessions.extractor import read_user_messages
from tests.conftest import run_cli, start_daemon

FIXTURES = Path(__file__).parents[1] / "fixtures" / "harnesses"
GEMINI_CHATS = FIXTURES / "home/.gemini/tmp/shop/chats"
GEMINI_SESSION = GEMINI_CHATS / "session-2026-03-02T09-14-4f1c9a2e.jsonl"
GEMINI_SUBAGENT = next(GEMINI_CHATS.glob("*/*.jsonl"))
GEMINI_LEGACY = next((FIXTURES / "home/.gemini/tmp").glob("*/chats/session-*.json"))
GEMINI_LEGACY_SESSION = "c31127d4-5e2a-4b8f-a1d3-9f0e7c6b5a42"
AIDER_HISTORY = FIXTURES / "project/.aider.chat.history.md"
COPILOT_ID = "7d3e2a10-9b4c-4f6e-8a21-5c0d9e3f1b77"
COPILOT_EVENTS = FIXTURES / f"home/.copilot/session-state/{COPILOT_ID}/events.jsonl"
CLINE_STORAGE = FIXTURES / "home/.config/Code/User/globalStorage/saoudrizwan.claude-dev"
CLINE_TASK = CLINE_STORAGE / "tasks/1764502861000/ui_messages.json"
ROO_TASK = next((FIXTURES / "home/.config/Cursor/User/globalStorage/rooveterinaryinc.roo-cline"
                 ).glob("tasks/*/ui_messages.json"))


def parse(parser: Any, path: Path) -> list[Turn]:
    turns: list[Turn] = []
    for line in path.read_text().splitlines():
        turns.extend(parser.feed(line))
    return turns + parser.flush()


# -- parsers -------------------------------------------------------------------------------------


def test_gemini_chat_keeps_what_was_said_once() -> None:
    parser = make_parser("gemini", cwd="/home/ana/src/shop")
    turns = parse(parser, GEMINI_SESSION)
    assert [(t.role, t.text[:30]) for t in turns] == [
        ("user", "Why does the invoice worker re"),
        ("assistant", "The retry loop in worker.ts ig"),  # appended twice, kept once
        ("user", "Fix it and run the tests"),
        ("assistant", "Patched the loop; all 48 tests"),  # its thought part left out
    ]
    assert {t.session_id for t in turns} == {"4f1c9a2e-77b0-4d55-9d3e-0c6b1a2f8e11"}
    assert {t.cwd for t in turns} == {"/home/ana/src/shop"}
    assert turns[0].record_id == "0b6f3f64-2b9e-4a57-8a3b-6f1e2d9c7a01"
    assert parser.user_messages == 2
    assert parser.skipped == {"ignored": 4, "tool": 1, "meta": 1}  # $set ×2, repeat, rewind
    assert not any(reason in parser.skipped for reason in ("invalid_json", "bad_field"))


def test_gemini_subagent_chat_is_a_sidechain_in_its_directory() -> None:
    turns = parse(make_parser("gemini"), GEMINI_SUBAGENT)
    assert [t.role for t in turns] == ["user", "assistant"]
    assert {t.sidechain_agent for t in turns} == {"subagent"}
    assert {t.cwd for t in turns} == {"/home/ana/src/shop"}  # from its directories


def test_gemini_malformed_lines_are_counted_not_fatal() -> None:
    parser = GeminiParser()
    lines = ['{"sessionId": "s1", "projectHash": "p"}', "{broken", '"a string"',
             '{"id": "m1", "type": "user", "content": 42}',
             '{"id": "m2", "type": "user", "content": [{"text": "still read"}]}']
    turns = [turn for line in lines for turn in parser.feed(line)]
    assert [t.text for t in turns] == ["still read"]
    assert parser.skipped == {"invalid_json": 1, "not_object": 1, "bad_field": 1}


def test_a_legacy_gemini_chat_is_read_as_the_lines_of_a_jsonl_one() -> None:
    parser = make_parser("gemini")
    turns = [turn for line in document_lines("gemini", GEMINI_LEGACY.read_text(), str(GEMINI_LEGACY))
             for turn in parser.feed(line)]
    assert [(t.role, t.text[:30]) for t in turns] == [
        ("user", "The nightly thumbnail job on t"),
        ("assistant", "The thumbnail worker never del"),  # the tool call's message left out
        ("user", "Add the cleanup and keep a day"),
        ("assistant", "Added a cleanup step that remo"),
    ]
    assert {t.session_id for t in turns} == {GEMINI_LEGACY_SESSION}
    assert parser.user_messages == 2
    assert parser.skipped == {"tool": 1, "meta": 1}
    # what a finished session's readers see (extraction, outcomes): the same records
    assert [m.text[:30] for m in read_user_messages(str(GEMINI_LEGACY), "gemini", "x")] == [
        "The nightly thumbnail job on t", "Add the cleanup and keep a day"]


@pytest.mark.parametrize("text", ["", '{"sessionId": "s", "messages": [', "[]",
                                  '{"sessionId": "s"}', "[" * 100_000])
def test_a_legacy_gemini_chat_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        document_lines("gemini", text, "session-x.json")


def test_copilot_session_keeps_the_prompts_and_the_prose() -> None:
    """Copilot CLI's events: the user's messages and the assistant's prose are the turns; a
    message of tool calls alone, the tools' events, reasoning and the CLI's own are not. This
    version names no directory in its first event: it comes from workspace.yaml."""
    cwd = cwd_hint("copilot", str(COPILOT_EVENTS))
    assert cwd == "/home/ana/src/shop"
    parser = make_parser("copilot", cwd=cwd)
    turns = parse(parser, COPILOT_EVENTS)
    assert [(t.role, t.text[:32]) for t in turns] == [
        ("user", "Why does the nightly export to t"),
        ("assistant", "The export client keeps a 10 s t"),
        ("user", "Also log how long each batch tak"),
        ("assistant", "Each batch now logs how long it "),
    ]
    assert {(t.session_id, t.cwd) for t in turns} == {(COPILOT_ID, "/home/ana/src/shop")}
    assert turns[0].record_id == "e0a1c2d3-0003-4a00-8000-000000000003"
    assert (parser.harness, parser.user_messages) == ("copilot", 2)
    assert parser.started == parse_timestamp("2026-03-04T15:02:11.204Z")
    assert parser.skipped == {"meta": 4, "tool": 6}  # info, turn start and end, abort
    chunks = chunk_exchanges(turns)
    assert len(chunks) == 2 and "60 s" in chunks[0].text


def test_a_newer_copilot_session_names_its_directory_and_odd_lines_are_counted() -> None:
    parser = make_parser("copilot", cwd="/from/workspace.yaml")
    lines = [json.dumps({"type": "session.start", "id": "a", "timestamp": "2026-03-05T10:00:00Z",
                         "data": {"sessionId": "s2", "context": {"cwd": "/home/ana/src/api",
                                                                "gitRoot": "/home/ana/src/api"}}}),
             "not json", json.dumps({"id": "b", "data": {}}),
             json.dumps({"type": "user.message", "id": "c", "data": {"content": 7}}),
             json.dumps({"type": "user.message", "data": {"content": "no id"}}),
             json.dumps({"type": "user.message", "id": "d", "data": "text"}),
             json.dumps({"type": "user.message", "id": "e", "timestamp": "2026-03-05T10:00:05Z",
                         "data": {"content": "Rename the orders table"}}),
             json.dumps({"type": "session.compaction_complete", "id": "f", "data": {}}),
             json.dumps({"type": "future.event", "id": "g", "data": {}})]
    turns = [turn for line in lines for turn in parser.feed(line)]
    assert [(t.text, t.session_id, t.cwd) for t in turns] == [
        ("no id", "s2", "/home/ana/src/api"),  # known by its line (it was left out)
        ("Rename the orders table", "s2", "/home/ana/src/api")]
    assert turns[0].record_id == line_id(lines[4])
    assert parser.skipped == {"invalid_json": 1, "bad_field": 3, "meta": 1, "ignored": 1}


def test_aider_history_splits_sessions_prompts_and_answers() -> None:
    parser = make_parser("aider", cwd="/home/ana/src/shop")
    turns = parse(parser, AIDER_HISTORY)
    assert [(t.role, t.text.splitlines()[0]) for t in turns] == [
        ("user", "why does the cart total drift by a cent on discounts?"),
        ("assistant", ("The discount is computed with floats and rounded per line item, so "
                       "the rounding errors add up.")),
        ("user", "what other places round per line item?"),  # /ask's argument is the prompt
        ("assistant", ("Only the tax calculation in src/tax.py does the same; it should move "
                       "to integer cents too.")),
        ("user", "add a regression test for the coupon rounding"),
        ("assistant", "I added test_percentage_coupon_rounding to tests/test_cart.py."),
    ]
    assert turns[0].text.endswith("it happens only with percentage coupons")  # both lines
    assert "<<<<<<< SEARCH" in turns[1].text  # the answer with its edit block
    first, second = turns[0].session_id, turns[4].session_id
    assert first and second and first != second
    assert [t.record_id for t in turns[:2]] == [f"{first}:1", f"{first}:1a1"]
    assert {t.cwd for t in turns} == {"/home/ana/src/shop"}
    assert turns[0].timestamp is not None and parser.user_messages == 3
    assert parser.skipped["meta"] == 1 and parser.skipped["tool"] >= 5  # /add; > lines


def test_aider_session_ids_do_not_depend_on_how_the_file_was_read() -> None:
    lines = AIDER_HISTORY.read_text().splitlines()
    whole = parse(AiderParser(), AIDER_HISTORY)
    parser, pieces = AiderParser(), []
    for start in range(0, len(lines), 3):  # a tailer that flushes every three lines
        for line in lines[start:start + 3]:
            pieces.extend(parser.feed(line))
        pieces.extend(parser.flush())
    users = [t.record_id for t in whole if t.role == "user"]
    assert users == [t.record_id for t in pieces if t.role == "user"]


def test_replay_puts_a_parser_back_where_the_tailer_left_it(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(GEMINI_SESSION, path)
    data = path.read_bytes()
    cut = data.index(b'{"id":"1f0e9d8c')  # the daemon stopped before the second prompt
    read = read_appended(path, None, 1 << 20, slice_bytes=cut)
    parser = GeminiParser()
    opened = replay(str(path), read.position, parser, 1 << 20)
    assert opened is not None and [t.role for t in opened] == ["user", "assistant"]
    more = read_appended(path, read.position, 1 << 20)
    turns = [t for line in more.lines for t in parser.feed(line)]
    # the session id from the first line, and no repeat of the answer appended twice
    assert [t.session_id for t in turns] == ["4f1c9a2e-77b0-4d55-9d3e-0c6b1a2f8e11"] * 2
    path.write_bytes(b"{}\n")  # replaced by something shorter: start over
    assert replay(str(path), read.position, GeminiParser(), 1 << 20) is None
    assert replay(str(path), TailPosition(0, 0, 10), GeminiParser(), 1 << 20) is None


def test_a_log_written_over_in_place_is_read_again_from_its_start(tmp_path: Path) -> None:
    """A transcript written over in place (same inode) with something longer looked like one
    that grew: its new lines were read from the old offset, mid-line (a mended log's first
    lines were never read, and the bytes there counted as malformed)."""
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    first = read_appended(path, None, 1 << 20)
    path.write_bytes(b'{"a": 1}\n{"bb": 22}\n{"c": 3}\n')  # one line changed, one more after
    again = read_appended(path, first.position, 1 << 20)
    assert again.restarted and again.lines == ['{"a": 1}', '{"bb": 22}', '{"c": 3}']
    with path.open("ab") as log:  # appended to: read on from where it was
        log.write(b'{"d": 4}\n')
    more = read_appended(path, again.position, 1 << 20)
    assert not more.restarted and more.lines == ['{"d": 4}']


def read_task(path: Path, cwd: str | None = None) -> tuple[Any, list[Turn]]:
    """A Cline task log read as the watcher reads it: whole, its messages as lines."""
    parser = make_parser("cline", cwd=cwd)
    return parser, [turn for line in document_lines("cline", path.read_text(), str(path))
                    for turn in parser.feed(line)]


def test_a_cline_task_keeps_the_task_the_replies_and_the_answers() -> None:
    """Cline's task log: the task and the user's reply are the user's; the model's prose, its
    question and its result are the assistant's; its tools, commands, reasoning, requests and
    a message still streaming are not conversation. The task's directory is the session; its
    project comes from the task history beside the tasks."""
    cwd = cwd_hint("cline", str(CLINE_TASK))
    assert cwd == "/home/ana/src/shop"
    parser, turns = read_task(CLINE_TASK, cwd)
    assert [(t.role, t.text[:32]) for t in turns] == [
        ("user", "The order confirmation emails go"),
        ("assistant", "I'll read the queue consumer to "),
        ("assistant", "The consumer acknowledges a job "),  # its question, not the JSON
        ("user", "Keep a ledger keyed by order id,"),
        ("assistant", "Added a sent_emails ledger keyed"),
    ]
    assert {(t.session_id, t.cwd) for t in turns} == {("1764502861000", "/home/ana/src/shop")}
    assert turns[0].record_id == "1764502861000:1764502861000:task"
    assert turns[0].timestamp == 1764502861.0
    assert (parser.harness, parser.user_messages) == ("cline", 2)
    assert parser.skipped == {"meta": 4, "tool": 5, "ignored": 1}
    assert [len(c.text) > 0 for c in chunk_exchanges(turns)] == [True, True]
    # read again after another message: the same record ids, so nothing is indexed twice
    _, again = read_task(CLINE_TASK, cwd)
    assert [t.record_id for t in again] == [t.record_id for t in turns]


def test_a_roo_task_says_its_task_as_text_and_names_its_directory_in_its_request() -> None:
    """Roo Code (and older Cline) say the task as "text" before the first request; without a
    task history the first request's environment details name the directory."""
    assert cwd_hint("cline", str(ROO_TASK)) is None
    parser, turns = read_task(ROO_TASK)
    assert [(t.role, t.text[:30]) for t in turns] == [
        ("user", "Why does the search page show "),
        ("assistant", "The CDN keeps the price fragme"),
    ]
    assert {(t.session_id, t.cwd) for t in turns} == {(ROO_TASK.parent.name, "/home/ana/src/shop")}
    assert parser.skipped == {"meta": 2, "tool": 1}


def test_odd_cline_messages_are_counted_and_a_task_log_that_is_not_one_is_refused() -> None:
    parser = make_parser("cline")
    lines = [json.dumps({"memoryd_task": "t1"}), "[1]",
             json.dumps({"ts": 1, "type": "shout", "say": "text", "text": "x"}),
             json.dumps({"ts": 2, "type": "say", "say": ["text"], "text": "x"}),
             json.dumps({"type": "say", "say": "task", "text": "no ts"}),
             json.dumps({"ts": 3, "type": "say", "say": "task", "text": 5}),
             json.dumps({"ts": 4, "type": "ask", "ask": "followup", "text": '{"question": 7}'}),
             json.dumps({"ts": 5, "type": "say", "say": "task", "text": "  "}),
             json.dumps({"ts": 6, "type": "say", "say": "brand_new_kind", "text": "x"}),
             json.dumps({"ts": 7, "type": "ask", "ask": "followup", "text": "Which branch?"}),
             json.dumps({"ts": 1764502861000, "type": "say", "say": "task",
                         "text": "Rename the orders table"})]
    turns = [turn for line in lines for turn in parser.feed(line)]
    assert [(t.role, t.text, t.session_id) for t in turns] == [
        ("assistant", "Which branch?", "t1"), ("user", "Rename the orders table", "t1")]
    assert parser.skipped == {"not_object": 1, "bad_field": 5, "empty": 1, "meta": 1}
    for text in ("", "{}", '{"messages": []}', "[" * 100_000):
        with pytest.raises(ValueError):
            document_lines("cline", text, "/x/tasks/t1/ui_messages.json")


def test_cwd_hints(tmp_path: Path) -> None:
    slug = tmp_path / ".gemini/tmp/shop"
    (slug / "chats").mkdir(parents=True)
    chat = str(slug / "chats/session-x.jsonl")
    assert cwd_hint("gemini", chat) is None  # an old hash directory: no marker
    (slug / ".project_root").write_text("/home/ana/src/shop")
    assert cwd_hint("gemini", chat) == "/home/ana/src/shop"
    assert cwd_hint("gemini", str(slug / "chats/parent/sub.jsonl")) == "/home/ana/src/shop"
    (slug / ".project_root").write_text("not a path")
    assert cwd_hint("gemini", chat) is None
    assert cwd_hint("aider", "/src/shop/.aider.chat.history.md") == "/src/shop"
    session = tmp_path / ".copilot/session-state/s1"
    session.mkdir(parents=True)
    events = str(session / "events.jsonl")
    assert cwd_hint("copilot", events) is None  # no workspace.yaml (yet)
    for written, cwd in (("id: s1\ncwd: /home/ana/src/shop\nbranch: main\n", "/home/ana/src/shop"),
                         ("cwd: '/home/ana/my shop'  \n", "/home/ana/my shop"),
                         ('summary: "x"\ncwd: "/srv/a b"\n', "/srv/a b"),
                         ("cwd: relative/dir\n", None), ("summary: no cwd\n", None)):
        (session / "workspace.yaml").write_text(written)
        assert cwd_hint("copilot", events) == cwd, written
    (tmp_path / ".copilot/session-state/workspace.yaml").write_text("cwd: /not/its/own\n")
    assert cwd_hint("copilot", str(tmp_path / ".copilot/session-state/s0.jsonl")) is None
    assert cwd_hint("codex", "/x/rollout.jsonl") is None
    storage = tmp_path / "globalStorage/saoudrizwan.claude-dev"
    task = str(storage / "tasks/17/ui_messages.json")
    assert cwd_hint("cline", task) is None  # no task history
    (storage / "state").mkdir(parents=True)
    for written, cwd in (('[{"id": "17", "cwdOnTaskInitialization": "/home/ana/src/shop"}]',
                          "/home/ana/src/shop"),
                         ('[{"id": "16", "cwdOnTaskInitialization": "/srv/a"}, {"id": "17"}]',
                          None),
                         ('[{"id": "17", "cwdOnTaskInitialization": "relative"}]', None),
                         ('{"id": "17"}', None), ("[", None),
                         ('[3, {"id": 17}, {"id": "17", "cwdOnTaskInitialization": "/b"}]', "/b")):
        (storage / "state/taskHistory.json").write_text(written)
        assert cwd_hint("cline", task) == cwd, written


# -- the daemon ----------------------------------------------------------------------------------


def search(client: Client, query: str, match: bool = True) -> list[dict[str, Any]]:
    """The matches (``match`` False: every ranked hit: until its vector is made, late on a
    loaded machine, an entry may rank without being a match)."""
    return client.search(query, agents=["*"], match=match)["hits"]


def eventually(fn, timeout_s: float = 60.0):  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return fn()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def found(client: Client, query: str, text: str, match: bool = True,
          agent: str | None = None) -> dict[str, Any]:
    """The first hit holding ``text`` (of ``agent``, when given)."""
    hits = [h for h in search(client, query, match)
            if text in h["text"] and agent in (None, h["agent"])]
    assert hits, query
    return hits[0]


@pytest.fixture
def harness_home(memoryd_home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The fixture home copied in as the user's home, and the fixture project as a project
    root (with Gemini CLI's marker naming it)."""
    home = memoryd_home / "user"
    shutil.copytree(FIXTURES / "home", home, dirs_exist_ok=True)
    project = tmp_path / "shop"
    shutil.copytree(FIXTURES / "project", project)
    (project / ".git").mkdir()
    (home / ".gemini/tmp/shop/.project_root").write_text(str(project))
    workspace = home / f".copilot/session-state/{COPILOT_ID}/workspace.yaml"
    workspace.write_text(workspace.read_text().replace("/home/ana/src/shop", str(project)))
    roo = home / ROO_TASK.relative_to(FIXTURES / "home")
    for named in (home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/state"
                  / "taskHistory.json", roo):  # the task's directory, as Cline and Roo name it
        named.write_text(named.read_text().replace("/home/ana/src/shop", str(project)))
    (memoryd_home / "sources.toml").write_text(f"project_roots = [{json.dumps(str(project))}]\n")
    return home, project


NOTEBOOKS = [  # (query, text in the entry, agent, from the project)
    ("staging database refreshed", "refreshed from production every Sunday", "gemini", False),
    ("test names describe behaviour", "describe behaviour, not implementation", "codex", False),
    ("commit directly to main", "open a pull request", "opencode", False),
    ("money amounts integer cents", "integer cents, never floats", "gemini", True),
    ("vitest fake timers", "fake timers instead of sleeping", "cursor", True),
    ("React components 200 lines", "under 200 lines", "cursor", True),
    ("httpx over requests", "httpx over requests", "aider", True),
    ("feature flags LaunchDarkly", "LaunchDarkly", "cline", True),
    ("pnpm workspaces npm install", "never suggest npm install", "copilot", True),
    ("ruff format python lines", "ruff format", "copilot", True),
    ("receipts local time zone", "local time zone", "pi", False),
    ("migrations reviewed by two people", "reviewed by two people", "windsurf", True),
    ("shell scripts strict mode pipefail", "set -euo pipefail", "copilot", False),
    ("migration down step previous schema", "down step", "copilot", False),
]


def test_every_harness_is_indexed_in_place(harness_home: tuple[Path, Path], daemon,
                                           client: Client) -> None:
    home, project = harness_home
    kilo = home / ".config/Windsurf/User/globalStorage/kilocode.kilo-code/tasks/k1/ui_messages.json"
    kilo.parent.mkdir(parents=True)  # Kilo Code keeps its tasks as Roo Code does
    roo = home / ROO_TASK.relative_to(FIXTURES / "home")  # naming the project's directory
    kilo.write_text(roo.read_text().replace("yesterday's prices", "last week's prices"))
    for query, text, agent, in_project in NOTEBOOKS:
        hit = eventually(lambda q=query, t=text: found(client, q, t))
        assert hit["agent"] == agent, (query, hit)
        assert hit["project"] == (str(project) if in_project else None), (query, hit)
        assert hit["kind"] != "turn" and hit["via"] == "watch"
    # transcripts: the turns are searchable, with their session, agent and project
    # (the subagent's chat says isPaused too: a loaded machine may rank it first for a while)
    gemini = eventually(lambda: found(client, "invoice worker retry paused queue",
                                      "isPaused", False, agent="gemini"))
    assert (gemini["agent"], gemini["kind"], gemini["project"]) == \
        ("gemini", "turn", str(project))
    assert gemini["session"] == "4f1c9a2e-77b0-4d55-9d3e-0c6b1a2f8e11"
    assert "Patched the loop" in eventually(
        lambda: found(client, "vitest tests pass", "Patched the loop", False))["text"]
    sub = eventually(lambda: found(client, "callers of isPaused", "Two callers", False))
    assert sub["agent"] == "gemini.subagent"
    # it rolls up under gemini, as Claude Code's subagents under claude-code: a search of
    # gemini (the CLI's, Gemini's MCP tools') finds it, and status counts it under gemini
    assert any("Two callers" in hit["text"] for hit in client.search(
        "callers of isPaused", agent="gemini", limit=20)["hits"])
    assert client.status()["subagents"].get("gemini") == 1
    pi = eventually(lambda: found(client, "receipt printer last line", "flush after the footer",
                                  False))
    assert (pi["agent"], pi["kind"], pi["session"]) == \
        ("pi", "turn", "5c0f7e21-3d4b-4a9e-8f10-2b7c9d1e4a66")
    assert "grep -n flush" not in pi["text"] and "footer code path" not in pi["text"]
    aider = eventually(lambda: found(client, "cart total drift cent discounts", "drift", False))
    assert (aider["agent"], aider["kind"], aider["project"]) == ("aider", "turn", str(project))
    assert "integer cents" in aider["text"]
    assert all("Applied edit" not in h["text"]  # Aider's own output is not conversation
               for h in search(client, "Applied edit to src/cart.py"))
    copilot = eventually(lambda: found(client, "nightly export warehouse API time out",
                                       "raised the timeout", False, agent="copilot"))
    assert (copilot["kind"], copilot["project"], copilot["session"]) == \
        ("turn", str(project), COPILOT_ID)
    assert "grep -rn timeout" not in copilot["text"]  # its tool call is not conversation
    legacy = eventually(lambda: found(client, "staging proxy port", "8443", False,
                                      agent="copilot"))  # an older version's session file
    assert (legacy["kind"], legacy["session"]) == ("turn", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
    cline = eventually(lambda: found(client, "order confirmation emails sent twice mailer restart",
                                     "sent_emails ledger", False, agent="cline"))
    assert (cline["kind"], cline["project"], cline["session"]) == \
        ("turn", str(project), "1764502861000")
    assert "npx vitest" not in cline["text"]  # its command is not conversation
    roo = eventually(lambda: found(client, "search page yesterday's prices after deploy",
                                   "surrogate key", False, agent="roo"))
    assert (roo["kind"], roo["project"], roo["session"]) == \
        ("turn", str(project), ROO_TASK.parent.name)
    kilo_hit = eventually(lambda: found(client, "search page last week's prices after deploy",
                                        "surrogate key", False, agent="kilo"))
    assert (kilo_hit["kind"], kilo_hit["project"], kilo_hit["session"]) == \
        ("turn", str(project), "k1")
    sessions = {s["id"]: s for s in client.call("sessions", {})["sessions"]}
    assert (sessions["1764502861000"]["harness"], sessions["1764502861000"]["agent"],
            sessions["1764502861000"]["user_messages"]) == ("cline", "cline", 2)
    assert sessions["4f1c9a2e-77b0-4d55-9d3e-0c6b1a2f8e11"]["harness"] == "gemini"
    assert (sessions[COPILOT_ID]["harness"], sessions[COPILOT_ID]["agent"]) == \
        ("copilot", "copilot")
    assert sum(s["harness"] == "aider" for s in sessions.values()) == 2
    # `memory sources` (and `memory status --sources`) list them, with their files
    listing = run_cli("status", "--sources")
    assert listing.returncode == 0, listing.stderr
    for name in ("gemini-user-memory", "gemini-transcripts", "codex-memories",
                 "opencode-user-rules", ".cursor/rules/**/*.mdc", ".aider.chat.history.md",
                 "memory-bank/**/*.md", ".github/instructions/**/*.instructions.md",
                 "copilot-transcripts", "copilot-user-instructions", "cline-tasks-code",
                 "roo-tasks-cursor", "kilo-tasks-windsurf"):
        assert name in listing.stdout, name
    status = {s["name"]: s for s in client.sources()["sources"]}
    assert status["gemini-transcripts"]["files"] == 2
    assert status["gemini-transcripts"]["last_error"] is None  # nothing malformed in them


def test_absent_harness_directories_are_skipped_quietly(daemon, client: Client) -> None:
    sources = {s["name"]: s for s in client.sources()["sources"]}
    for name in ("gemini-user-memory", "gemini-transcripts", "codex-memories",
                 "opencode-user-rules"):
        assert sources[name]["root_exists"] is False
        assert sources[name]["last_error"] is None and sources[name]["files"] == 0
    checks = client.call("status", {})["health"]["checks"]
    assert not [c for c in checks if "gemini" in json.dumps(c) or "opencode" in json.dumps(c)]
    # `memory status --sources` names them on one line, after the sources that are there
    listing = run_cli("status", "--sources").stdout.splitlines()
    assert listing[-1].startswith("not present (") and "gemini-transcripts" in listing[-1]
    # a family of sources, one for each editor, is named once
    assert "roo-tasks-{code, code-insiders, vscodium, cursor, windsurf, vscode-server}" \
        in listing[-1] and "roo-tasks-cursor" not in listing[-1]
    assert not any(line.startswith("gemini-transcripts:") for line in listing)


def test_malformed_harness_files_warn_and_the_rest_is_indexed(
        harness_home: tuple[Path, Path], daemon, client: Client) -> None:
    home, project = harness_home
    chat = home / ".gemini/tmp/shop/chats/session-2026-03-05T08-00-0a1b2c3d.jsonl"
    chat.write_text('{"sessionId":"0a1b2c3d-aaaa-4bbb-8ccc-123456789abc","projectHash":"shop"}\n'
                    '{"id":"e1","timestamp":"2026-03-05T08:00:01Z","type":"user","content":\n'
                    '{"id":"e2e2e2e2-0000-4000-8000-000000000002","timestamp":'
                    '"2026-03-05T08:00:02Z","type":"user",'
                    '"content":"is the nightly backup job still on the old cron host?"}\n')
    (project / ".cursor/rules/broken.mdc").write_bytes(b"\x00\x01binary, not a rule")
    with (project / ".aider.chat.history.md").open("ab") as handle:
        handle.write(b"#### caf\xe9 menu prices are cached by the \xff\xfe edge\n"
                     b"#### and the espresso grinder settings?\n\nGrind finer by two steps.\n")
    eventually(lambda: found(client, "nightly backup cron host", "cron host"))
    eventually(lambda: found(client, "espresso grinder settings", "Grind finer"))

    def warned() -> dict[str, Any]:
        sources = {s["name"]: s for s in client.sources()["sources"]}
        assert sources["gemini-transcripts"]["last_error"] == "skipped lines: 1 invalid_json"
        rules = sources[f"project:{project}:.cursor/rules/**/*.mdc"]
        assert "binary" in (rules["last_error"] or "")
        history = sources[f"project:{project}:.aider.chat.history.md"]
        assert "invalid-utf8" not in history["skipped"]  # markdown: replaced, the line kept
        return sources

    eventually(warned)
    eventually(lambda: found(client, "menu prices cached edge", "caf\ufffd menu prices"))
    assert client.status()["version"]  # still serving
    # the good rule is still there (its vector may still be being made: more files to embed)
    eventually(lambda: found(client, "vitest fake timers", "fake timers"))


def write_over_legacy_chat(home: Path, question: str, answer: str) -> Path:
    """The legacy chat in the home with one more exchange, written over in place as Gemini CLI
    writes it (the same file, truncated and written whole)."""
    chat = next((home / ".gemini/tmp").glob("*/chats/session-*.json"))
    document = json.loads(chat.read_text())
    count = len(document["messages"])
    document["messages"] += [
        {"id": f"0000000{count}-aaaa-4bbb-8ccc-000000000001", "timestamp": "2025-11-28T08:00:00Z",
         "type": "user", "content": question},
        {"id": f"0000000{count}-aaaa-4bbb-8ccc-000000000002", "timestamp": "2025-11-28T08:00:09Z",
         "type": "gemini", "content": [{"text": answer}], "model": "gemini-2.5-pro"}]
    with chat.open("r+") as handle:
        handle.truncate(0)
        handle.write(json.dumps(document, indent=2))
    return chat


def turn_texts(client: Client) -> list[str]:
    entries = client.list_entries(status="any", limit=1000)["entries"]
    return [e["text"] for e in entries if e["kind"] in ("turn", "summary")]


def test_a_legacy_gemini_chat_is_indexed_and_read_again_when_written_over(
        harness_home: tuple[Path, Path], daemon, client: Client) -> None:
    home, _ = harness_home
    hit = eventually(lambda: found(client, "thumbnail job disk full scratch files",
                                   "never deletes its scratch", False))
    assert (hit["agent"], hit["kind"], hit["session"]) == ("gemini", "turn",
                                                           GEMINI_LEGACY_SESSION)
    assert hit["project"] is None  # a hash-named project directory names no project
    assert hit["text"].startswith("[2025-11-27] User: The nightly thumbnail job")

    def sessions() -> dict[str, Any]:
        return {s["id"]: s for s in client.call("sessions", {})["sessions"]}

    assert sessions()[GEMINI_LEGACY_SESSION]["user_messages"] == 2
    chat = write_over_legacy_chat(home, "Which host runs the thumbnail job?",
                                  "The render-02 box runs it at 02:30 every night.")
    eventually(lambda: found(client, "which host runs the thumbnail job", "render-02", False))

    def counted() -> None:
        assert sessions()[GEMINI_LEGACY_SESSION]["user_messages"] == 3

    eventually(counted)
    texts = turn_texts(client)
    assert len(texts) == len(set(texts)), texts  # what was read before is not read twice
    assert sum("never deletes its scratch" in t for t in texts) == 1
    # written over again (a document that keeps changing: only what differs is indexed)
    write_over_legacy_chat(home, "Does the thumbnail job retry on failure?",
                           "Twice, ten minutes apart, then it pages the on-call.")
    eventually(lambda: found(client, "thumbnail job retry on failure", "pages the on-call",
                             False))
    texts = turn_texts(client)
    assert len(texts) == len(set(texts)), texts
    assert sum("render-02" in t for t in texts) == 1
    status = {s["name"]: s for s in client.sources()["sources"]}["gemini-legacy-chats"]
    assert (status["files"], status["last_error"]) == (1, None)
    # a document that stays broken is named, and what it held stays found
    chat.write_text(chat.read_text()[:200])

    def warned() -> None:
        status = {s["name"]: s for s in client.sources()["sources"]}["gemini-legacy-chats"]
        assert status["last_error"] == "skipped lines: 1 invalid_json", status

    eventually(warned)
    assert found(client, "thumbnail job disk full scratch files", "never deletes its scratch",
                 False)


def test_a_document_caught_half_written_is_no_problem_once_read_whole(
        daemon, client: Client, memoryd_home: Path) -> None:
    """Cline writes a task's ui_messages.json over whole on every message: a read between two
    of its writes (1.2 s apart here) finds half a document, counted `invalid_json` as a
    document that stays broken is. Read whole once it is complete, its turns were indexed,
    but `memory status --sources` went on saying `skipped: 1 invalid_json` and the last
    problem, and the headline warned of malformed lines. What a document's read whole
    says of it replaces what its earlier reads said."""
    import time

    task = memoryd_home / "user/.cline/data/tasks/1764600000000/ui_messages.json"
    task.parent.mkdir(parents=True)
    text = CLINE_TASK.read_text()
    with task.open("w") as handle:
        handle.write(text[:len(text) // 2])
        handle.flush()
        time.sleep(1.2)
        handle.write(text[len(text) // 2:])
    eventually(lambda: found(client, "order confirmation emails sent twice mailer restart",
                             "sent_emails ledger", False, agent="cline"))

    def clear() -> None:
        status = {s["name"]: s for s in client.sources()["sources"]}["cline-tasks"]
        assert (status["skipped"], status["last_error"]) == ({}, None), status
        assert not client.status()["health"]["state"].startswith("warning"), \
            client.status()["health"]

    eventually(clear)
    assert "skipped" not in run_cli("status", "--sources").stdout


def test_a_task_too_large_to_read_says_its_size_not_that_its_lines_are_wrong(
        daemon, client: Client, memoryd_home: Path) -> None:
    """A Cline task over the 64 MiB memoryd reads of a document (a big command's output in it)
    was `skipped: 1 too_long`, and doctor said no line of it was in its source's format and
    that a generic transcript needs `role` and `content`. It says the file's size and the
    limit (docs/sources.md), and the file is named as a file with a problem."""
    task = memoryd_home / "user/.cline/data/tasks/1764700000000/ui_messages.json"
    task.parent.mkdir(parents=True)
    messages = json.loads(CLINE_TASK.read_text())
    messages.append({"ts": 1764700000999, "type": "say", "say": "command_output",
                     "text": "x" * (65 << 20)})
    task.write_text(json.dumps(messages))
    size = task.stat().st_size

    def named() -> dict[str, Any]:
        report = json.loads(run_cli("doctor", "--json").stdout)
        [skipped] = [c for c in report["checks"] if c["check"] == "skipped"]
        mib = f"{size / (1 << 20):.1f}".removesuffix(".0")
        assert f"{task}: not read: {mib} MiB, over the 64 MiB memoryd " \
            "reads of a transcript read whole" in skipped["detail"], skipped
        return skipped

    skipped = eventually(named)
    assert "no line is in the format" not in skipped["detail"] + (skipped["fix"] or "")
    assert "role" not in skipped["detail"] + (skipped["fix"] or "")
    status = {s["name"]: s for s in client.sources()["sources"]}["cline-tasks"]
    assert status["last_error"].startswith("not read: ") and status["skipped"] == {}


def test_a_legacy_chat_resumed_into_jsonl_is_one_session_counted_once(
        harness_home: tuple[Path, Path], daemon, client: Client) -> None:
    """A newer Gemini CLI resuming a legacy chat copies its messages, ids and all, into a
    .jsonl beside the .json (which stays) and goes on there: its turns are found once, and its
    user messages counted once (2 + the new one, not 2 + 3)."""
    home, _ = harness_home
    eventually(lambda: found(client, "thumbnail job disk full scratch files",
                             "never deletes its scratch", False))
    legacy = next((home / ".gemini/tmp").glob("*/chats/session-*.json"))
    document = json.loads(legacy.read_text())
    metadata = {k: v for k, v in document.items() if k != "messages"}
    extra = {"id": "0000000x-aaaa-4bbb-8ccc-000000000003", "timestamp": "2025-11-28T09:00:00Z",
             "type": "user", "content": "and where do the render logs go?"}
    legacy.with_suffix(".jsonl").write_text("".join(
        json.dumps(record) + "\n" for record in [metadata, *document["messages"], extra]))
    eventually(lambda: found(client, "where do the render logs go", "render logs", False))

    def counted() -> None:
        sessions = {s["id"]: s for s in client.call("sessions", {})["sessions"]}
        assert sessions[GEMINI_LEGACY_SESSION]["user_messages"] == 3

    eventually(counted)
    texts = turn_texts(client)
    assert sum("never deletes its scratch" in t for t in texts) == 1, texts


def test_an_aider_history_in_another_encoding_keeps_its_exchanges(daemon, client: Client,
                                                                    memoryd_home: Path) -> None:
    """Aider writes its chat history in the encoding it is told (``--encoding cp1252``): an
    ``é`` or a no-break space is a byte that is not UTF-8, and the line holding it was left
    out, a whole exchange with it, `skipped: 2 invalid-utf8`. The history is markdown: those
    bytes are replaced, as in a memory file, and what was said is found. A JSONL line that is
    not UTF-8 is still no record."""
    project = memoryd_home / "shop"
    project.mkdir()
    (project / ".aider.chat.history.md").write_bytes(
        b"\n# aider chat started at 2026-03-04 10:00:00\n\n"
        b"#### Caf\xe9 menu parser: why does the jackal price show NaN?\n\n"
        b"The price column holds\xa0a comma decimal; parse it with the locale first.\n")
    client.sources("add", project_root=str(project))
    hit = eventually(lambda: found(client, "jackal", "jackal price"))
    assert hit["agent"] == "aider" and "Caf\ufffd menu parser" in hit["text"]
    assert "comma decimal" in hit["text"]
    [source] = [s for s in client.sources()["sources"]
                if s["name"] == f"project:{project}:.aider.chat.history.md"]
    assert (source["skipped"], source["last_error"]) == ({}, None)

    chats = memoryd_home / "user/chats"
    chats.mkdir()
    (chats / "log.jsonl").write_bytes(
        b'{"role": "user", "content": "the gazelle caf\xe9 question"}\n'
        b'{"role": "user", "content": "the gazelle tea question"}\n')
    client.sources("add", name="chats", path="~/chats/*.jsonl", kind="transcript",
                   format="generic", agent="chatter")
    eventually(lambda: found(client, "gazelle tea", "gazelle tea"))
    [chats_source] = [s for s in client.sources()["sources"] if s["name"] == "chats"]
    assert chats_source["skipped"] == {"invalid-utf8": 1}
    assert [h["text"] for h in search(client, "gazelle") if "caf" in h["text"]] == []


def test_a_restart_resumes_gemini_and_aider_without_duplicates(
        harness_home: tuple[Path, Path], embedder) -> None:
    home, project = harness_home
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            eventually(lambda: found(client, "cart total drift cent discounts", "drift", False))
            eventually(lambda: found(client, "invoice worker retry paused queue", "isPaused",
                                     False))
        running.stop()
        chat = home / ".gemini/tmp/shop/chats/session-2026-03-02T09-14-4f1c9a2e.jsonl"
        with chat.open("a") as handle:
            handle.write(json.dumps({"id": "8d7e6f5a-4b3c-4d2e-9f1a-0b1c2d3e4f07",
                                     "timestamp": "2026-03-02T09:20:00Z", "type": "user",
                                     "content": "and the dead letter queue?"}) + "\n")
        with (project / ".aider.chat.history.md").open("a") as handle:
            handle.write("\n#### does the tax module need the same fix?\n\n"
                         "Yes: tax.py rounds per line item as well.\n")
        write_over_legacy_chat(home, "Which host runs the thumbnail job?",
                               "The render-02 box runs it at 02:30 every night.")
        running = start_daemon(embedder)
        with Client(running.socket) as client:
            letter = eventually(lambda: found(client, "dead letter queue", "dead letter", False))
            assert letter["session"] == "4f1c9a2e-77b0-4d55-9d3e-0c6b1a2f8e11"
            tax = eventually(lambda: found(client, "tax module same fix", "tax.py rounds", False))
            first = found(client, "cart total drift cent discounts", "drift", False)
            assert tax["session"] != first["session"]  # the second session of the file
            eventually(lambda: found(client, "which host runs the thumbnail job", "render-02",
                                     False))
            texts = turn_texts(client)
            assert len(texts) == len(set(texts)), texts
            sessions = {s["id"]: s for s in client.call("sessions", {})["sessions"]}
            assert sessions["4f1c9a2e-77b0-4d55-9d3e-0c6b1a2f8e11"]["user_messages"] == 3
            # a document read whole again counts its messages once: 3, not 2 + 3
            assert sessions[GEMINI_LEGACY_SESSION]["user_messages"] == 3
            assert sorted(s["user_messages"] for s in sessions.values()
                          if s["harness"] == "aider") == [2, 2]
    finally:
        running.stop()


def test_copilots_sources_follow_copilot_home(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """Copilot CLI keeps its whole directory in $COPILOT_HOME when that is set."""
    from memoryd.agent_sources import default_sources

    def copilot_paths() -> dict[str, str]:
        return {s.name: s.path for s in default_sources() if s.agent == "copilot"}

    assert copilot_paths() == {
        "copilot-user-instructions": "~/.copilot/copilot-instructions.md",
        "copilot-user-instruction-files": "~/.copilot/instructions/**/*.instructions.md",
        "copilot-transcripts": "~/.copilot/session-state/*/events.jsonl",
        "copilot-legacy-transcripts": "~/.copilot/session-state/*.jsonl"}
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot"))
    assert copilot_paths()["copilot-transcripts"] == \
        f"{tmp_path}/copilot/session-state/*/events.jsonl"


def test_a_fork_of_cline_is_added_by_hand_in_every_format_the_daemon_reads(
        daemon, client: Client, memoryd_home: Path) -> None:
    """A fork of Cline memoryd does not know keeps Cline's task logs under a name of its
    own: `memory sources add` names it with format ``cline`` (the command offered only the
    formats it was written with: ``copilot`` and ``cline`` were usage errors)."""
    storage = memoryd_home / "user/.config/Code/User/globalStorage/acme.cline-fork"
    task = storage / "tasks/2f9c/ui_messages.json"
    task.parent.mkdir(parents=True)
    task.write_text(CLINE_TASK.read_text())
    added = run_cli("sources", "add", "fork-tasks",
                    "~/.config/Code/User/globalStorage/acme.cline-fork/tasks/*/ui_messages.json",
                    "--kind", "transcript", "--format", "cline", "--agent", "fork")
    assert added.returncode == 0, added.stderr
    hit = eventually(lambda: found(client, "order confirmation emails sent twice",
                                   "go out twice", False, agent="fork"))
    assert (hit["kind"], hit["session"]) == ("turn", "2f9c")
    from memoryd_client.wire import SOURCE_FORMATS
    for fmt in SOURCE_FORMATS[1:]:  # every transcript format: not refused by the command
        kind = run_cli("sources", "add", f"x-{fmt}", f"~/x-{fmt}/*.jsonl", "--kind",
                       "transcript", "--format", fmt, "--agent", "x")
        assert kind.returncode == 0, (fmt, kind.stderr)
