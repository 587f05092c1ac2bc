"""Transcript parsing and exchange chunking, on records shaped as integrations.md §2 to §4 shows."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memoryd.ingest.transcript import (
    INJECTION_MARKER,
    MAX_CHUNK_CHARS,
    ClaudeCodeParser,
    CodexParser,
    GenericParser,
    TranscriptParser,
    Turn,
    chunk_exchanges,
    line_id,
    make_parser,
)

SESSION = "5b0c2e9a-1f3d-4c8e-9a6b-2d7f0e1c3b5a"
CWD = "/home/ana/src/shop"


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def run(parser: TranscriptParser, records: list[Any]) -> list[Turn]:
    """Feed each record as one JSONL line, then flush; the parser must not hit internal errors."""
    turns: list[Turn] = []
    for record in records:
        line = record if isinstance(record, str) else json.dumps(record)
        turns.extend(parser.feed(line))
    turns.extend(parser.flush())
    assert "internal_error" not in parser.skipped
    return turns


# --- Claude Code records ----------------------------------------------------------------------


def cc_record(kind: str, uuid: str, ts: str, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.1.201",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": ts,
        **extra,
    }


def cc_user(
    uuid: str, content: Any, ts: str = "2026-06-01T09:58:00.000Z", **extra: Any
) -> dict[str, Any]:
    return cc_record("user", uuid, ts, message={"role": "user", "content": content}, **extra)


def cc_assistant(
    uuid: str,
    message_id: str,
    blocks: list[dict[str, Any]],
    ts: str = "2026-06-01T09:58:05.000Z",
    **extra: Any,
) -> dict[str, Any]:
    message = {
        "model": "claude-opus-4-5",
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": blocks,
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }
    return cc_record("assistant", uuid, ts, requestId="req_011", message=message, **extra)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


THINKING = {"type": "thinking", "thinking": "Look at the handler first.", "signature": "EqQB"}
TOOL_USE = {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "a.py"}}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "1\timport os"}


def test_claude_code_user_and_merged_assistant() -> None:
    parser = ClaudeCodeParser()
    turns = run(
        parser,
        [
            cc_user("u1", "add an idempotency key to /charge", origin={"kind": "human"}),
            cc_assistant("a1", "msg_01", [THINKING], ts="2026-06-01T09:58:03.000Z"),
            cc_assistant("a2", "msg_01", [text("I'll read the handler.")]),
            cc_assistant("a3", "msg_01", [text("Then add the key.")]),
            cc_assistant("a4", "msg_01", [TOOL_USE]),
        ],
    )
    assert [(t.role, t.record_id, t.text) for t in turns] == [
        ("user", "u1", "add an idempotency key to /charge"),
        ("assistant", "msg_01", "I'll read the handler.\n\nThen add the key."),
    ]
    user, answer = turns
    assert user.timestamp == epoch("2026-06-01T09:58:00+00:00")
    assert (user.session_id, user.cwd, user.sidechain_agent) == (SESSION, CWD, None)
    assert answer.message_id == "msg_01"
    assert answer.timestamp == epoch("2026-06-01T09:58:05+00:00")  # first line with text
    assert parser.skipped == {"tool": 2}  # the thinking line and the tool_use line


def test_claude_code_assistant_is_held_until_another_message_starts() -> None:
    parser = ClaudeCodeParser()
    assert parser.feed(json.dumps(cc_assistant("a1", "msg_01", [text("Part one.")]))) == []
    assert parser.feed(json.dumps(cc_assistant("a2", "msg_01", [text("Part two.")]))) == []
    turns = parser.feed(json.dumps(cc_assistant("a3", "msg_02", [text("Next message.")])))
    assert [(t.record_id, t.text) for t in turns] == [("msg_01", "Part one.\n\nPart two.")]
    turns = parser.feed(json.dumps(cc_user("u2", [TOOL_RESULT], toolUseResult={"stdout": ""})))
    assert [t.record_id for t in turns] == ["msg_02"]  # any user record ends the message
    assert parser.flush() == []


def test_claude_code_more_of_a_message_after_flush_gets_a_part_id() -> None:
    parser = ClaudeCodeParser()
    parser.feed(json.dumps(cc_assistant("a1", "msg_01", [THINKING])))
    assert parser.flush() == []  # nothing with text yet
    parser.feed(json.dumps(cc_assistant("a2", "msg_01", [text("First.")])))
    first = parser.flush()
    parser.feed(json.dumps(cc_assistant("a3", "msg_01", [TOOL_USE])))
    assert parser.flush() == []
    parser.feed(json.dumps(cc_assistant("a4", "msg_01", [text("Second.")])))
    parser.feed(json.dumps(cc_assistant("a5", "msg_01", [text("Third.")])))
    second = parser.flush()
    parser.feed(json.dumps(cc_assistant("a6", "msg_01", [text("Fourth.")])))
    third = parser.flush()
    assert [(t.record_id, t.message_id, t.text) for t in first + second + third] == [
        ("msg_01", "msg_01", "First."),
        ("msg_01#2", "msg_01", "Second.\n\nThird."),
        ("msg_01#3", "msg_01", "Fourth."),
    ]


def test_claude_code_tool_noise_is_dropped() -> None:
    parser = ClaudeCodeParser()
    turns = run(
        parser,
        [
            cc_user("u1", "why does /charge retry twice?"),
            cc_assistant("a1", "msg_01", [TOOL_USE]),
            cc_user(
                "u2",
                [TOOL_RESULT],
                toolUseResult={"stdout": "ok", "stderr": "", "interrupted": False},
                sourceToolAssistantUUID="a1",
            ),
            cc_user("u3", [TOOL_RESULT]),  # a tool result without toolUseResult
            cc_record("progress", "p1", "2026-06-01T09:58:06.000Z", data={"type": "hook_progress"}),
            cc_record("file-history-snapshot", "f1", "2026-06-01T09:58:06.000Z", messageId="a1"),
            cc_record("queue-operation", "q1", "2026-06-01T09:58:06.000Z", operation="dequeue"),
            cc_record("system", "s1", "2026-06-01T09:58:07.000Z", subtype="turn_duration"),
            {"type": "summary", "summary": "Charge retries", "leafUuid": "a2"},
            cc_assistant("a2", "msg_02", [text("The client retries on 502.")]),
        ],
    )
    assert [(t.role, t.text) for t in turns] == [
        ("user", "why does /charge retry twice?"),
        ("assistant", "The client retries on 502."),
    ]
    assert parser.skipped == {"tool": 3, "ignored": 5}
    assert parser.user_messages == 1


@pytest.mark.parametrize(
    "content",
    [
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>",
        "<command-message>review</command-message>\n<command-args></command-args>",
        "<local-command-stdout>Cleared</local-command-stdout>",
        "<local-command-caveat>Caveat: The messages below were generated by the user while "
        "running local commands.</local-command-caveat>",
        "Caveat: The messages below were generated by the user while running local commands.",
        "<bash-input>git status</bash-input>",
        "<bash-stdout>On branch main</bash-stdout><bash-stderr></bash-stderr>",
        "  <system-reminder>The user opened a.py</system-reminder>",
        "<user-prompt-submit-hook>ok</user-prompt-submit-hook>",
        "<task-notification><task-id>t1</task-id></task-notification>",
        [text("[Request interrupted by user for tool use]")],
        [text("[Image #1]")],
    ],
)
def test_claude_code_harness_wrappers_are_dropped(content: Any) -> None:
    parser = ClaudeCodeParser()
    assert run(parser, [cc_user("u1", content)]) == []
    assert parser.skipped == {"wrapper": 1}
    assert parser.user_messages == 0


def test_claude_code_meta_and_non_human_origin_are_dropped() -> None:
    parser = ClaudeCodeParser()
    turns = run(
        parser,
        [
            cc_user("u1", [text("Base directory for this skill: /x")], isMeta=True),
            cc_user("u2", "<peer-message>hi</peer-message>", origin={"kind": "peer"}),
            cc_user("u3", "task done", origin={"kind": "task-notification"}),
            cc_user("u4", "typed by a human", origin={"kind": "human"}, promptId="p1"),
            cc_assistant("a1", "msg_09", [text("No response requested.")]),
            cc_assistant(
                "a2", "msg_10", [text("API Error: 529 overloaded")], isApiErrorMessage=True
            ),
        ],
    )
    assert [t.text for t in turns] == ["typed by a human"]
    assert parser.skipped == {"meta": 5}


def test_claude_code_injected_context_is_dropped() -> None:
    injected = f"{INJECTION_MARKER}\nFacts memoryd remembers: the shop uses Stripe."
    parser = ClaudeCodeParser()
    turns = run(
        parser,
        [
            cc_record(
                "attachment",
                "t1",
                "2026-06-01T09:57:59.000Z",
                attachment={"type": "hook_additional_context", "content": [injected]},
            ),
            cc_user("u1", f"what did we decide?\n\n{injected}"),
            cc_user("u2", [text("what did we decide?"), text(injected)]),
            cc_assistant("a1", "msg_01", [text(f"Context says:\n{injected}")]),
            cc_user("u3", "ok, go ahead"),
        ],
    )
    assert [t.text for t in turns] == ["ok, go ahead"]
    assert parser.skipped == {"ignored": 1, "marker": 3}


def test_claude_code_compaction_becomes_a_summary() -> None:
    parser = ClaudeCodeParser()
    turns = run(
        parser,
        [
            cc_user("u88", "keep going"),
            cc_assistant("a88", "msg_88", [text("Done with step 3.")]),
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "c1",
                "parentUuid": None,
                "logicalParentUuid": "a88",
                "sessionId": SESSION,
                "timestamp": "2026-06-01T10:00:04.120Z",
                "content": "Conversation compacted",
                "compactMetadata": {"trigger": "auto", "preTokens": 155025},
            },
            {
                "type": "user",
                "uuid": "c2",
                "parentUuid": "c1",
                "isCompactSummary": True,
                "isVisibleInTranscriptOnly": True,
                "message": {
                    "role": "user",
                    "content": [text("This session is being continued … summary …")],
                },
            },
        ],
    )
    assert [(t.role, t.record_id) for t in turns] == [
        ("user", "u88"),
        ("assistant", "msg_88"),
        ("summary", "c2"),
    ]
    summary = turns[2]
    assert summary.text == "This session is being continued … summary …"
    assert summary.timestamp == epoch("2026-06-01T10:00:04.120+00:00")  # from the boundary
    assert (summary.session_id, summary.cwd) == (SESSION, CWD)
    assert parser.user_messages == 1
    assert parser.skipped == {}


def test_claude_code_sidechain_turns_are_marked() -> None:
    parser = ClaudeCodeParser()
    sidechain: dict[str, Any] = {"isSidechain": True, "agentId": "a1b2c3d4"}
    turns = run(
        parser,
        [
            cc_user("s1", "Find where /charge is retried.", **sidechain),
            cc_assistant("s2", "msg_s", [text("In client.py, line 40.")], **sidechain),
            cc_user("s3", "old inline sidechain prompt", isSidechain=True),
            cc_user("u1", "thanks, now fix it"),
        ],
    )
    assert [(t.record_id, t.sidechain_agent) for t in turns] == [
        ("s1", "a1b2c3d4"),
        ("msg_s", "a1b2c3d4"),
        ("s3", "subagent"),
        ("u1", None),
    ]
    assert parser.user_messages == 1  # sidechain prompts are written by the main agent


def test_claude_code_malformed_lines_are_counted_not_raised() -> None:
    parser = ClaudeCodeParser(max_line_chars=5_000)
    turns = run(
        parser,
        [
            '{"type":"user","uuid":"u0","message":{"role":"us',  # truncated last line
            "not json at all",
            "[" * 2_000 + "]" * 2_000,  # valid JSON, but nested too deeply to decode
            json.dumps([cc_user("u1", "hi")]),
            "null",
            '"a string"',
            json.dumps(cc_user("u2", "x" * 6_000)),
            cc_record("user", "u3", "2026-06-01T09:58:00Z", message="hello"),
            cc_user("u4", 42),
            cc_user("u5", ["not a block"]),
            cc_user("u6", [{"type": "text", "text": None}]),
            {**cc_user("u7", "hi"), "uuid": 7},
            cc_user("u8", "hi", isMeta="yes"),
            cc_record("assistant", "a1", "2026-06-01T09:58:00Z", message={"role": "user"}),
            {**cc_user("u9", "hi"), "type": ["user"]},
            cc_record("some-future-type", "f1", "2026-06-01T09:58:00Z", payload={"x": 1}),
            "",
            "   ",
            cc_user("u10", "still parsed", someNewField={"nested": [1, 2]}, timestamp="garbage"),
        ],
    )
    assert [(t.record_id, t.timestamp) for t in turns] == [("u10", None)]
    assert parser.skipped == {
        "invalid_json": 3,
        "not_object": 3,
        "too_long": 1,
        "bad_field": 8,
        "ignored": 1,
        "bad_timestamp": 1,  # u10's: read, and dated when read
    }


def test_claude_code_session_registry() -> None:
    parser = make_parser("claude-code")
    run(
        parser,
        [
            cc_record("permission-mode", "m1", "2026-06-01T09:57:00.000Z", permissionMode="plan"),
            cc_user("u1", "first prompt", ts="2026-06-01T09:58:00.000Z"),
            cc_user("u2", "second prompt", ts="2026-06-01T10:30:00.500Z", cwd="/home/ana/src/b"),
            cc_user("u3", [TOOL_RESULT], ts="2026-06-01T10:31:00.000Z"),
        ],
    )
    assert parser.harness == "claude-code"
    assert parser.session_id == SESSION
    assert parser.cwd == CWD  # the latest record's
    assert parser.started == epoch("2026-06-01T09:57:00+00:00")
    assert parser.last_seen == epoch("2026-06-01T10:31:00+00:00")
    assert parser.user_messages == 2


# --- Codex rollouts ---------------------------------------------------------------------------

CODEX_ID = "019c2a7e-3b1d-7c40-9e1a-5d2f8a0b4c11"


def codex(kind: str, payload: Any, ts: str = "2026-03-02T09:14:40.002Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


SESSION_META = codex(
    "session_meta",
    {
        "id": CODEX_ID,
        "timestamp": "2026-03-02T09:14:05.101Z",
        "cwd": "/home/ana/src/shop",
        "originator": "codex_cli_rs",
        "cli_version": "0.98.0",
        "source": "cli",
        "model_provider": "openai",
        "base_instructions": {"text": "You are Codex…"},
    },
    ts="2026-03-02T09:14:05.120Z",
)


def test_codex_rollout() -> None:
    records = [
        SESSION_META,
        codex(
            "response_item",
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions instructions>…"}],
            },
        ),
        codex(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "# AGENTS.md instructions for /home/ana/src"}
                ],
            },
        ),
        codex(
            "turn_context",
            {"cwd": "/home/ana/src/shop/api", "approval_policy": "on-request", "model": "gpt-5"},
        ),
        codex(
            "event_msg",
            {"type": "user_message", "message": "add an idempotency key to /charge", "images": []},
        ),
        codex(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "add an idempotency key to /charge"}],
            },
        ),
        codex("event_msg", {"type": "task_started", "model_context_window": 258400}),
        codex("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}),
        codex(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"rg charge"}',
                "call_id": "call_7",
            },
            ts="2026-03-02T09:15:10.400Z",
        ),
        codex(
            "response_item",
            {"type": "function_call_output", "call_id": "call_7", "output": "api/charge.py:12"},
        ),
        codex(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_0a1",
                "phase": "final_answer",
                "content": [{"type": "output_text", "text": "Added an Idempotency-Key header."}],
            },
            ts="2026-03-02T09:16:00.000Z",
        ),
        codex(
            "event_msg",
            {"type": "agent_message", "message": "Added an Idempotency-Key header."},
        ),
        codex("event_msg", {"type": "token_count", "info": None}),
        codex(
            "compacted",
            {"message": "Summary: added idempotency keys.", "replacement_history": []},
            ts="2026-03-02T09:20:00.000Z",
        ),
        codex("inter_agent_communication", {"from": "x"}),
    ]
    parser = make_parser("codex")
    turns = run(parser, records)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "add an idempotency key to /charge"),
        ("assistant", "Added an Idempotency-Key header."),
        ("summary", "Summary: added idempotency keys."),
    ]
    assert all(t.session_id == CODEX_ID for t in turns)
    assert all(t.cwd == "/home/ana/src/shop/api" for t in turns)  # the last turn_context wins
    assert all(t.sidechain_agent is None for t in turns)
    assert turns[1].message_id == "msg_0a1"
    assert turns[0].timestamp == epoch("2026-03-02T09:14:40.002+00:00")
    # Rollout lines have no ids: the record id is a hash of the line, stable across re-reads.
    assert turns[0].record_id == line_id(json.dumps(records[4]))
    assert [t.record_id for t in run(CodexParser(), records)] == [t.record_id for t in turns]
    assert len({t.record_id for t in turns}) == 3
    assert parser.harness == "codex"
    assert (parser.session_id, parser.cwd) == (CODEX_ID, "/home/ana/src/shop/api")
    assert parser.started == epoch("2026-03-02T09:14:05.101+00:00")
    assert parser.last_seen == epoch("2026-03-02T09:20:00+00:00")
    assert parser.user_messages == 1
    assert parser.skipped == {"meta": 1, "ignored": 6, "tool": 3}


def test_codex_injected_user_messages_and_subagents() -> None:
    meta = json.loads(json.dumps(SESSION_META))
    meta["payload"]["source"] = {"subagent": {"thread_spawn": {"depth": 1}}}
    meta["payload"]["agent_nickname"] = "scout"
    parser = CodexParser()
    turns = run(
        parser,
        [
            meta,
            codex(
                "event_msg",
                {"type": "user_message", "message": "<environment_context>…", "kind": "plain"},
            ),
            codex(
                "event_msg",
                {"type": "user_message", "message": "be terse", "kind": "user_instructions"},
            ),
            codex("event_msg", {"type": "user_message", "message": f"{INJECTION_MARKER}\nfacts"}),
            codex("event_msg", {"type": "user_message", "message": ["not", "text"]}),
            codex("event_msg", "not an object"),
            codex("event_msg", {"type": "user_message", "message": "map the billing module"}),
        ],
    )
    assert [(t.text, t.sidechain_agent) for t in turns] == [("map the billing module", "scout")]
    assert parser.skipped == {"meta": 2, "marker": 1, "bad_field": 2}
    assert parser.user_messages == 1


# --- generic format (and pi) ------------------------------------------------------------------


def test_generic_format() -> None:
    parser = make_parser("generic")
    records = [
        {"role": "system", "content": "You are helpful.", "session_id": "s-1"},
        {
            "role": "user",
            "content": "where are sessions stored?",
            "timestamp": "2026-06-01T10:00:00Z",
            "session_id": "s-1",
            "id": "m-1",
            "cwd": "/srv/app",
        },
        {
            "role": "assistant",
            "content": [text("In ~/.aider."), {"type": "image", "url": "x"}, text("See docs.")],
            "timestamp": 1780308005,
            "session_id": "s-1",
        },
        {"role": "user", "content": "thanks", "timestamp": 1780308010500, "id": 3},
        {"role": "user", "content": "and a UUID", "id": "0194f2a1-7c3e-7b21-9d4e-1a2b3c4d5e6f"},
        {"role": "tool", "content": "ls output"},
        {"role": "user", "content": {"text": "wrong"}},
        {"role": "user", "content": "   "},
    ]
    turns = run(parser, records)
    assert [(t.role, t.record_id, t.text, t.timestamp) for t in turns] == [
        ("user", "s-1:m-1", "where are sessions stored?", epoch("2026-06-01T10:00:00+00:00")),
        ("assistant", line_id(json.dumps(records[2])), "In ~/.aider.\n\nSee docs.", 1780308005.0),
        ("user", "s-1:3", "thanks", 1780308010.5),  # an id need only be unique in its session
        ("user", "0194f2a1-7c3e-7b21-9d4e-1a2b3c4d5e6f", "and a UUID", None),  # as it is
    ]
    assert all((t.session_id, t.cwd) == ("s-1", "/srv/app") for t in turns)
    assert (parser.harness, parser.session_id, parser.user_messages) == ("generic", "s-1", 3)
    assert (parser.started, parser.last_seen) == (epoch("2026-06-01T10:00:00+00:00"), 1780308010.5)
    assert parser.skipped == {"meta": 1, "ignored": 1, "bad_field": 1, "empty": 1}


def test_a_line_said_again_without_an_id_is_a_record_of_its_own() -> None:
    """A chat log with no ids: the user says "go on" twice. Each line is its own record (the
    second exchange was the first one's replacement), a fresh read gives the same ids, and a
    parser going on after a restart (the open exchange and the file's chunks' record ids)
    gives the ids a read of the whole file gives."""
    said = [("user", "Let us plan the heron migration"), ("assistant", "Phase A: freeze"),
            ("user", "go on"), ("assistant", "Phase B: copy the egret indexes"),
            ("user", "go on"), ("assistant", "Phase C: switch"),
            ("user", "go on"), ("user", "go on"), ("assistant", "Phase B: copy the egret indexes")]
    records = [{"role": role, "content": text} for role, text in said]
    whole = run(make_parser("generic"), records)
    ids = [t.record_id for t in whole]
    assert len(set(ids)) == len(ids) == 9
    assert ids[0] == line_id(json.dumps(records[0]))  # a line said once keeps its hash
    assert [t.record_id for t in run(make_parser("generic"), records)] == ids
    chunks = chunk_exchanges(whole)
    assert len({c.chunk_id for c in chunks}) == len(chunks) == 5
    assert any("egret" in c.text and "go on" in c.text for c in chunks)
    for cut in range(1, len(records)):  # a restart after each line
        before = run(make_parser("generic"), records[:cut])
        last_user = max((i for i, t in enumerate(before) if t.role == "user"), default=0)
        after = make_parser("generic")
        after.resume(before[last_user:], {t.record_id for t in before})
        assert [t.record_id for t in before + run(after, records[cut:])] == ids, cut


def test_generic_reads_the_session_under_the_names_exports_give_it() -> None:
    """A file of many chats says on each line which it is of, under the name its exporter
    uses; a file whose lines name none is one session, named by the file."""
    lines = [{"role": "user", "content": "first chat", "conversation_id": "c-1"},
             {"role": "assistant", "content": "yes", "conversation_id": "c-1"},
             {"role": "user", "content": "second chat", "thread_id": "th-2"},
             {"role": "user", "content": "third chat", "sessionId": "s-3"},
             {"role": "user", "content": "fourth chat", "chat_id": 4}]
    assert [t.session_id for t in run(make_parser("generic"), lines)] == \
        ["c-1", "c-1", "th-2", "s-3", "4"]
    # a short id is made unique by session_id alone, as before: a log read again keeps its ids
    numbered = {"role": "user", "content": "fifth", "conversation_id": "c-5", "id": 1}
    [turn] = run(make_parser("generic"), [numbered])
    assert (turn.session_id, turn.record_id) == ("c-5", line_id(json.dumps(numbered)))
    bare = run(make_parser("generic", path="/home/ana/logs/chat.jsonl"),
               [{"role": "user", "content": "no session named"}])
    assert bare[0].session_id == make_parser("generic", path="/home/ana/logs/chat.jsonl") \
        .session_id != make_parser("generic", path="/home/ben/logs/chat.jsonl").session_id
    assert bare[0].session_id.startswith("chat-")


def test_generic_chats_numbered_alike_in_two_files_are_two_chats() -> None:
    line = {"role": "human", "content": ["one part", {"type": "text", "text": "and another"}],
            "session_id": 1, "id": 1}
    [a] = run(make_parser("generic", path="/logs/a.jsonl"), [line])
    [b] = run(make_parser("generic", path="/logs/b.jsonl"), [line])
    assert a.session_id != b.session_id and a.record_id != b.record_id
    assert a.session_id.endswith(":1") and a.text == "one part\n\nand another"
    uuid = "0194f2a1-7c3e-7b21-9d4e-1a2b3c4d5e6f"  # a long id names one chat across files
    [c] = run(make_parser("generic", path="/logs/c.jsonl"), [{**line, "session_id": uuid}])
    assert (c.session_id, c.record_id) == (uuid, f"{uuid}:1")
    [d] = run(make_parser("generic"), [{**line, "content": {"type": "text", "text": "one"}}])
    assert d.text == "one"


def test_generic_reads_the_roles_other_tools_name_otherwise() -> None:
    parser = make_parser("generic")
    turns = run(parser, [{"role": "human", "content": "which port?", "session_id": "s"},
                         {"role": "ai", "content": "8080", "session_id": "s"},
                         {"role": "model", "content": "or 8443 with TLS", "session_id": "s"}])
    assert [t.role for t in turns] == ["user", "assistant", "assistant"]
    [chunk] = chunk_exchanges(turns)
    assert chunk.text == "User: which port?\n\nAssistant: 8080\n\nAssistant: or 8443 with TLS"


def test_generic_names_its_speakers_in_the_chunk() -> None:
    parser = make_parser("generic")
    turns = run(parser, [
        {"role": "user", "name": "Caroline", "content": "the kiln is fixed", "session_id": "s"},
        {"role": "assistant", "name": " Dr. Mel (work):\n ", "content": "good", "session_id": "s"},
        {"role": "user", "name": 7, "content": "a name that is no text", "session_id": "s"},
        {"role": "user", "name": "()", "content": "nothing left of the name", "session_id": "s"},
        {"role": "user", "speaker": "Ana", "content": "a chat log's field", "session_id": "s"},
    ])
    assert [t.speaker for t in turns] == ["Caroline", "Dr. Mel work", None, "Ana"]
    assert parser.skipped == {"bad_field": 1}
    [named, unnamed, _] = chunk_exchanges(turns)
    assert named.text == "User (Caroline): the kiln is fixed\n\nAssistant (Dr. Mel work): good"
    assert unnamed.text == "User: nothing left of the name"


def test_a_chat_log_whose_roles_are_the_speakers_names_is_read_as_their_chat() -> None:
    """A chat between people often names the speaker in ``role``. Those lines were dropped
    without a word (a whole conversation indexed as nothing); now each is its speaker's, the
    first name of a session on the user's side, so that exchanges pair the two sides."""
    parser = make_parser("generic")
    turns = run(parser, [
        {"role": "Caroline", "content": "I went to the support group yesterday", "session_id": "a"},
        {"role": "Melanie", "content": "that's wonderful! I painted a sunrise", "session_id": "a"},
        {"role": "Caroline", "content": "send me a photo", "session_id": "a"},
        {"role": "Melanie", "content": "a new day: she speaks first now", "session_id": "b"},
        {"role": "USER", "content": "the usual roles in capitals", "session_id": "c"},
        {"role": "Assistant", "content": "read as the two sides", "session_id": "c"},
        {"role": "developer", "content": "be brief", "session_id": "c"},
        {"role": "tool_result", "content": "exit 0", "session_id": "c"},
        {"role": "function", "content": "{}", "session_id": "c"},
        {"role": "event", "content": "session resumed", "session_id": "c"},
    ])
    assert [(t.session_id, t.role, t.speaker) for t in turns] == [
        ("a", "user", "Caroline"), ("a", "assistant", "Melanie"), ("a", "user", "Caroline"),
        ("b", "user", "Melanie"), ("c", "user", None), ("c", "assistant", None)]
    assert parser.skipped == {"meta": 1, "ignored": 3}
    first, *_ = chunk_exchanges(turns)
    # a file saved with a byte order mark (a Windows export): its first line is read too
    marked = make_parser("generic")
    assert [t.text for t in marked.feed('\ufeff{"role": "user", "content": "hi from Windows"}')
            + marked.flush()] == ["hi from Windows"]
    assert marked.skipped == {}
    # a session's number is its id, as a message's number is (they ran together before)
    numbered = run(make_parser("generic"), [
        {"role": "user", "content": "a", "session_id": 3},
        {"role": "assistant", "content": "b", "session_id": 3},
        {"role": "user", "content": "c", "session_id": 4}])
    assert [t.session_id for t in numbered] == ["3", "3", "4"]
    # OpenAI's Responses API writes its text blocks as input_text / output_text
    responses = run(make_parser("generic"), [
        {"role": "user", "content": [{"type": "input_text", "text": "which port?"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "8080"}]}])
    assert [(t.role, t.text) for t in responses] == [("user", "which port?"),
                                                     ("assistant", "8080")]
    # a log of another shape (no role at all) is a malformed line, which status reports,
    # not a line left out on purpose
    other = make_parser("generic")
    assert run(other, [{"sender": "Caroline", "text": "hi", "session_id": "a"}]) == []
    assert other.skipped == {"bad_field": 1}
    assert first.text == ("User (Caroline): I went to the support group yesterday\n\n"
                          "Assistant (Melanie): that's wonderful! I painted a sunrise")


def test_a_chat_logs_dates_as_people_write_them_date_its_chunks() -> None:
    """A chat export's dates are often not ISO-8601 ("8 May 2026", "1:56 pm on 8 May, 2023",
    an e-mail's date, epoch seconds as digits). Unread, a whole imported history went undated
    (no day in its chunks, so no question of when found it); a numeric date whose order
    differs by country stays unread rather than read wrong."""
    parser = make_parser("generic")
    written = ["8 May 2026", "May 9, 2026", "1:56 pm on 10 May, 2026",
               "Mon, 11 May 2026 09:30:00 +0200", "1778716800", "2026/05/13 18:00", "05/14/2026"]
    turns = run(parser, [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}",
                          "timestamp": when, "session_id": "s"}
                         for i, when in enumerate(written)])
    assert [datetime.fromtimestamp(t.timestamp, UTC).isoformat() if t.timestamp else None
            for t in turns] == [
        "2026-05-08T00:00:00+00:00", "2026-05-09T00:00:00+00:00", "2026-05-10T13:56:00+00:00",
        "2026-05-11T07:30:00+00:00", "2026-05-14T00:00:00+00:00", "2026-05-13T18:00:00+00:00",
        None]
    assert [c.text.split("]")[0] for c in chunk_exchanges(turns)][:2] == ["[2026-05-08",
                                                                         "[2026-05-10"]
    # the names exports give a message's time, Slack's epoch with its fraction among them
    other = run(make_parser("generic"), [
        {"role": "user", "content": "a", "date": "8 May 2026"},
        {"role": "assistant", "content": "b", "created_at": "2026-05-09T10:00:00Z"},
        {"role": "user", "content": "c", "ts": "1778716800.000216"}])
    assert [datetime.fromtimestamp(t.timestamp, UTC).date().isoformat() for t in other
            if t.timestamp] == ["2026-05-08", "2026-05-09", "2026-05-14"]


def test_times_logs_print_are_read_and_one_that_is_not_is_counted() -> None:
    """A time as a log or a database prints it ("2024-02-03 04:05:06 UTC") or in epoch
    microseconds dated the line now, and nothing said so. Those are read, with nanoseconds;
    a time still in no form memoryd reads is counted as ``bad_timestamp``, once a line, in
    every format (the line itself is kept)."""
    written = ["2024-02-03 04:05:06 UTC", "2024-02-03T04:05:06.5 GMT", 1706933106123456,
               "1706933106123456789", "2024-02-03 04:05:06 CET", "soon", "", None]
    parser = make_parser("generic")
    turns = run(parser, [{"role": "user", "content": f"turn {i}", "timestamp": when,
                          "session_id": "s"} for i, when in enumerate(written)])
    assert [t.timestamp for t in turns] == [1706933106.0, 1706933106.5, 1706933106.123456,
                                            pytest.approx(1706933106.123457), None, None,
                                            None, None]
    assert parser.skipped == {"bad_timestamp": 2}  # CET (which?) and "soon"; none is no time
    assert (parser.started, parser.last_seen) == (1706933106.0, pytest.approx(1706933106.5))
    codex = CodexParser()
    run(codex, [{"timestamp": "2024-02-03 04:05:06 UTC", "type": "session_meta",
                 "payload": {"id": "c1", "timestamp": "yesterday"}},  # one time read: dated
                {"timestamp": "04:05", "type": "event_msg",
                 "payload": {"type": "user_message", "message": "hello"}},
                {"timestamp": 1.5e25, "type": "turn_context", "payload": {}}])
    assert codex.skipped == {"bad_timestamp": 2}
    assert codex.last_seen == 1706933106.0

def test_generic_parser_reads_pi_sessions() -> None:
    pi_id = "0194f2a1-7c3e-7b21-9d4e-1a2b3c4d5e6f"
    parser = GenericParser(harness="pi")
    turns = run(
        parser,
        [
            {
                "type": "session",
                "version": 3,
                "id": pi_id,
                "timestamp": "2026-03-02T09:14:05.101Z",
                "cwd": "/home/ana/src/shop",
            },
            {
                "type": "model_change",
                "id": "a0000001",
                "parentId": None,
                "timestamp": "2026-03-02T09:14:05.200Z",
                "provider": "anthropic",
                "modelId": "claude-sonnet-4-5",
            },
            {
                "type": "message",
                "id": "a0000002",
                "parentId": "a0000001",
                "message": {
                    "role": "user",
                    "content": "list the routes",
                    "timestamp": 1772442880000,
                },
            },
            {
                "type": "message",
                "id": "a0000003",
                "parentId": "a0000002",
                "timestamp": "2026-03-02T09:14:45.000Z",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "grep first"},
                        text("Checking."),
                        {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {}},
                    ],
                    "provider": "anthropic",
                    "stopReason": "toolUse",
                },
            },
            {
                "type": "message",
                "id": "a0000004",
                "parentId": "a0000003",
                "timestamp": "2026-03-02T09:14:46.000Z",
                "message": {"role": "toolResult", "toolCallId": "c1", "content": [text("/a")]},
            },
            {
                "type": "custom_message",
                "id": "a0000005",
                "customType": "memoryd",
                "content": INJECTION_MARKER,
            },
            {
                "type": "compaction",
                "id": "a0000006",
                "parentId": "a0000004",
                "timestamp": "2026-03-02T10:00:00.000Z",
                "summary": "Listed the routes of the shop API.",
                "firstKeptEntryId": "a0000004",
                "tokensBefore": 120000,
            },
        ],
    )
    assert [(t.role, t.record_id, t.text) for t in turns] == [
        ("user", f"{pi_id}:a0000002", "list the routes"),
        ("assistant", f"{pi_id}:a0000003", "Checking."),
        ("summary", f"{pi_id}:a0000006", "Listed the routes of the shop API."),
    ]
    assert turns[0].timestamp == 1772442880.0  # no entry timestamp: the message's, in ms
    assert turns[1].timestamp == epoch("2026-03-02T09:14:45+00:00")
    assert all((t.session_id, t.cwd) == (pi_id, "/home/ana/src/shop") for t in turns)
    assert (parser.harness, parser.user_messages) == ("pi", 1)
    assert parser.started == epoch("2026-03-02T09:14:05.101+00:00")
    assert parser.skipped == {"ignored": 3}


def test_make_parser() -> None:
    assert isinstance(make_parser("claude-code"), ClaudeCodeParser)
    assert isinstance(make_parser("codex"), CodexParser)
    assert isinstance(make_parser("generic"), GenericParser)
    assert make_parser("codex") is not make_parser("codex")
    with pytest.raises(ValueError, match="unknown transcript format 'cursor'"):
        make_parser("cursor")


# --- chunking ---------------------------------------------------------------------------------

T0 = epoch("2026-06-01T09:58:00+00:00")


def turn(record_id: str, role: str, text: str, offset_s: float = 0, **extra: Any) -> Turn:
    fields: dict[str, Any] = {
        "session_id": SESSION,
        "timestamp": T0 + offset_s,
        "cwd": CWD,
        "sidechain_agent": None,
        "message_id": None,
        **extra,
    }
    return Turn(record_id=record_id, role=role, text=text, **fields)


def test_chunk_exchanges_groups_exchanges() -> None:
    chunks = chunk_exchanges(
        [
            turn("a0", "assistant", "Resuming where we left off.", -60, timestamp=None),
            turn("a0b", "assistant", "Ready."),
            turn("u1", "user", "add an idempotency key", 1),
            turn("m1", "assistant", "I'll read the handler.", 2),
            turn("m2", "assistant", "Done.", 3),
            turn("c2", "summary", "This session is being continued…", 4),
            turn("m3", "assistant", "Continuing.", 5),
            turn("u2", "user", "and add a test", 6),
        ]
    )
    assert [(c.kind, c.record_ids) for c in chunks] == [
        ("turn", ("a0", "a0b")),
        ("turn", ("u1", "m1", "m2")),
        ("summary", ("c2",)),
        ("turn", ("m3",)),
        ("turn", ("u2",)),
    ]
    exchange = chunks[1]
    assert exchange.text == (
        "[2026-06-01] User: add an idempotency key\n\n"
        "Assistant: I'll read the handler.\n\n"
        "Assistant: Done."
    )
    assert (exchange.session_id, exchange.cwd, exchange.sidechain_agent) == (SESSION, CWD, None)
    assert exchange.timestamp == T0 + 1
    assert chunks[0].timestamp == T0  # the first turn had none: the first one known
    assert chunks[2].text == "[2026-06-01] Summary: This session is being continued…"
    assert len({c.chunk_id for c in chunks}) == 5
    # The id depends only on the first record: an exchange that grew keeps its chunk id.
    regrouped = chunk_exchanges([turn("u1", "user", "add an idempotency key", 1)])
    assert regrouped[0].chunk_id == exchange.chunk_id
    assert len(exchange.chunk_id) == 32


def test_chunk_exchanges_keeps_sidechains_and_sessions_apart() -> None:
    chunks = chunk_exchanges(
        [
            turn("u1", "user", "fix the retry bug"),
            turn("m1", "assistant", "Asking a subagent.", 1),
            turn("s1", "user", "Find the retry loop.", 2, sidechain_agent="a1b2"),
            turn("s2", "assistant", "client.py:40", 3, sidechain_agent="a1b2"),
            turn("m2", "assistant", "Fixed it.", 4),
            turn("x1", "assistant", "other session", 5, session_id="other", timestamp=None),
        ]
    )
    assert [(c.record_ids, c.sidechain_agent, c.session_id) for c in chunks] == [
        (("u1", "m1", "m2"), None, SESSION),
        (("s1", "s2"), "a1b2", SESSION),
        (("x1",), None, "other"),
    ]
    assert chunks[2].text == "Assistant: other session"  # no timestamp, no date prefix


def test_chunk_text_is_capped_keeping_the_user_part() -> None:
    question = "Why does this fail? " + "q" * 2_000
    answer = "Because " + "a" * 10_000
    (chunk,) = chunk_exchanges([turn("u1", "user", question), turn("m1", "assistant", answer)])
    assert len(chunk.text) <= MAX_CHUNK_CHARS
    assert chunk.text.startswith(f"[2026-06-01] User: {question}\n\nAssistant: Because aaa")
    assert chunk.text.endswith("a…")

    (chunk,) = chunk_exchanges(
        [turn("u1", "user", "x" * 10_000), turn("m1", "assistant", "short answer")]
    )
    assert len(chunk.text) <= MAX_CHUNK_CHARS
    assert chunk.text.endswith("x…\n\nAssistant: short answer")

    (chunk,) = chunk_exchanges([turn("c1", "summary", "s" * 10_000)], max_chars=500)
    assert len(chunk.text) == 500 and chunk.text.startswith("[2026-06-01] Summary: sss")


def test_parse_then_chunk_end_to_end() -> None:
    parser = make_parser("claude-code")
    turns = run(
        parser,
        [
            cc_user("u1", "rename charge() to create_charge()"),
            cc_assistant("a1", "msg_01", [text("Renaming."), TOOL_USE]),
            cc_user("u2", [TOOL_RESULT], toolUseResult={"stdout": ""}),
            cc_assistant("a2", "msg_02", [text("Renamed in 3 files.")]),
        ],
    )
    (chunk,) = chunk_exchanges(turns)
    assert chunk.record_ids == ("u1", "msg_01", "msg_02")
    assert chunk.text == (
        "[2026-06-01] User: rename charge() to create_charge()\n\n"
        "Assistant: Renaming.\n\nAssistant: Renamed in 3 files."
    )
