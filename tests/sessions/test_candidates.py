"""Extraction at session end (seed 003): patterns, the negative list, dedup, the LLM format."""

from __future__ import annotations

import json

import pytest

from memoryd.lessons import text_jaccard
from memoryd.meaning import same_thing
from memoryd.sessions.candidates import (
    EXTRACTED_CONFIDENCE,
    Candidate,
    Message,
    category_of,
    find_candidates,
)
from memoryd.sessions.decisions import (
    COSINE_DUPLICATE,
    MIN_USER_MESSAGES,
    decide,
    dry_run_report,
    extract,
    negative_reason,
)
from memoryd.sessions.llm_extractor import llm_prompt, parse_llm_output
from memoryd.sessions.prose import prose_lines

SESSION = "sess-42"


def messages(*texts: str) -> list[Message]:
    return [Message(f"msg-{i}", SESSION, text, 1_700_000_000.0 + i)
            for i, text in enumerate(texts, 1)]


# User messages as they come out of a real coding session: questions, pasted output,
# corrections, and the ephemeral chatter seed 003 says not to keep.
TRANSCRIPT = messages(
    "Can you add a retry to the S3 uploader? It times out on big files.",
    "Please don't use mocks in the integration tests.\n\n"
    "Here's what I get:\n"
    "```\n$ pytest tests/integration -x\nE   AssertionError: never reached\n```\n"
    "Traceback (most recent call last):\n"
    '  File "uploader.py", line 12, in upload\n'
    "ValueError: always fails",
    "Ok that works. Never force-push to main! Also I prefer tabs over spaces btw.",
    "> you should never use ruff\nNo, we use ruff, not flake8.",
    "Remember that the staging DB is read-only on Fridays. "
    "And always run the linter before committing.",
    "Great. We fixed the login bug. We deployed v2 yesterday. "
    "The config lives in src/app/config.py. "
    "git log shows the regression came from abc123. "
    "To debug, run pytest -k foo -x and set a breakpoint. "
    "Today I worked on the billing page. The current task is TASK-123.",
)


Row = tuple[str, str, str | None, str, str | None, str, str]


def summary(candidates: list[Candidate]) -> list[Row]:
    """(kind, text, polarity, category, key, message_id, rule) of each candidate."""
    return [(c.kind, c.text, c.polarity, c.category, c.key, c.message_id, c.rule)
            for c in candidates]


def test_corrections_become_lessons_and_facts_with_provenance() -> None:
    candidates = find_candidates(TRANSCRIPT)
    assert summary(candidates) == [
        ("lesson", "Don't use mocks in the integration tests.", "negative", "testing", None,
         "msg-2", "dont"),
        ("lesson", "Never force-push to main.", "negative", "git", None, "msg-3", "never"),
        ("lesson", "Prefer tabs over spaces.", "positive", "style", None, "msg-3", "prefer"),
        ("fact", "tabs", None, "style", "pref.indentation", "msg-3", "prefer"),
        ("lesson", "Use ruff, not flake8.", "positive", "tooling", None, "msg-4", "use-not"),
        ("fact", "ruff", None, "tooling", "tool.linter", "msg-4", "use-not"),
        ("fact", "The staging DB is read-only on Fridays.", None, "database", None,
         "msg-5", "remember"),
        ("lesson", "Always run the linter before committing.", "positive", "git", None,
         "msg-5", "always"),
    ]
    assert {c.session_id for c in candidates} == {SESSION}

    decisions = extract(TRANSCRIPT, existing=[])
    assert [d.candidate for d in decisions] == candidates
    assert all(d.accepted and d.reason == "accepted" for d in decisions)
    assert EXTRACTED_CONFIDENCE == 0.8


def test_negative_list_items_in_messages_give_nothing() -> None:
    chatter = TRANSCRIPT[-1]
    assert find_candidates([chatter]) == []
    # Said as "remember that …", they become candidates and the negative list rejects them.
    reminded = messages(*(f"Remember that {s}" for s in (
        "we fixed the login bug", "we deployed v2 yesterday",
        "the config lives in src/app/config.py",
        "git log shows the regression came from abc123",
        "to debug, run pytest -k foo -x and set a breakpoint",
        "today I worked on the billing page", "the current task is TASK-123",
    )))
    decisions = extract(reminded, existing=[])
    assert [d.reason for d in decisions] == [
        "negative-list: activity summary",
        "negative-list: activity summary",
        "negative-list: file path",
        "negative-list: git history",
        "negative-list: debugging recipe",
        "negative-list: activity summary",
        "negative-list: current task",
    ]
    assert not any(d.accepted for d in decisions)


def lesson(text: str, key: str | None = None) -> Candidate:
    return Candidate("fact" if key else "lesson", text, None if key else "negative", "general",
                     key, "msg-1", SESSION, "llm")


@pytest.mark.parametrize(("text", "reason"), [
    ("We fixed the login bug.", "negative-list: activity summary"),
    ("we deployed v2 yesterday", "negative-list: activity summary"),
    ("The config lives in src/app/config.py.", "negative-list: file path"),
    ("Edit ~/.bashrc to add the alias.", "negative-list: file path"),
    ("The handlers are defined in the api package.", "negative-list: project structure"),
    ("git log shows the regression came from abc123", "negative-list: git history"),
    ("Commit 9f3e2ab broke the parser.", "negative-list: git history"),
    ("To debug, run pytest -k foo -x and set a breakpoint.", "negative-list: debugging recipe"),
    ("When the build fails with ImportError, run pip install -e .",
     "negative-list: debugging recipe"),
    ("Today I worked on the billing page.", "negative-list: activity summary"),
    ("The current task is TASK-123.", "negative-list: current task"),
    ("We're working on the export feature.", "negative-list: current task"),
    ("Don't merge the branch yet.", "negative-list: one-off instruction"),
    ("Skip the slow tests for now.", "negative-list: one-off instruction"),
    # Lasting rules that look a little like the list, and are kept:
    ("Never commit .env files.", None),
    ("Always use UTF-8 encoding.", None),
    ("Prefer ISO-8601 dates in logs.", None),
    ("Never use /compact in long sessions.", None),
    ("Check https://pypi.org/project/ruff/ for the changelog.", None),
    ("Keep CI/CD configs and/or secrets out of the repo.", None),
])
def test_negative_reason(text: str, reason: str | None) -> None:
    assert negative_reason(lesson(text)) == reason


@pytest.mark.parametrize(("key", "reason"), [
    ("project.config_filepath", "negative-list: file path (key project.config_filepath)"),
    ("project.src_dir", "negative-list: file path (key project.src_dir)"),
    ("git.history.auth", "negative-list: git history (key git.history.auth)"),
    ("project.current_task", "negative-list: current task (key project.current_task)"),
    ("tool.linter", None),
    ("pref.task_runner", None),
])
def test_negative_reason_for_fact_keys(key: str, reason: str | None) -> None:
    assert negative_reason(lesson("ruff", key=key)) == reason


def test_two_user_messages_yield_nothing() -> None:
    two = messages("Never force-push to main.", "We use ruff, not flake8.")
    assert MIN_USER_MESSAGES == 3
    assert find_candidates(two)  # there is something to find …
    assert extract(two, existing=[]) == []  # … but the session is too short
    blank = messages("Never force-push to main.", "We use ruff, not flake8.", "   ")
    assert extract(blank, existing=[]) == []


def test_patterns_and_normalisation() -> None:
    found = summary(find_candidates(messages(
        "FYI: the prod replica lags by a few minutes.",
        "btw, NEVER commit with --no-verify, thanks!!",
        "always use conventional commits and never squash release branches.",
        "When deploying, you should always run the smoke tests first.",
        "I don't want you to add emojis to commit messages.",
        "Stop using print for logging. Avoid global state, please.",
        "My name is Ada. I use neovim. Our backend is written in Go.",
        "Use spaces instead of tabs; I'd prefer pytest over unittest.",
    )))
    assert found == [
        ("lesson", "The prod replica lags by a few minutes.", "positive", "deploy", None,
         "msg-1", "remember"),
        ("lesson", "Never commit with --no-verify.", "negative", "git", None, "msg-2", "never"),
        ("lesson", "Always use conventional commits.", "positive", "git", None, "msg-3", "always"),
        ("fact", "conventional commits", None, "git", "pref.commit_style", "msg-3", "always"),
        ("lesson", "Never squash release branches.", "negative", "git", None, "msg-3", "never"),
        ("lesson", "When deploying, always run the smoke tests first.", "positive", "testing",
         None, "msg-4", "always"),
        ("lesson", "Don't add emojis to commit messages.", "negative", "git", None, "msg-5",
         "dont"),
        ("lesson", "Stop using print for logging.", "negative", "general", None, "msg-6", "stop"),
        ("lesson", "Avoid global state.", "negative", "general", None, "msg-6", "avoid"),
        ("fact", "Ada", None, "user", "user.name", "msg-7", "my-x-is"),
        ("fact", "neovim", None, "tooling", "pref.editor", "msg-7", "we-use"),
        ("fact", "Go", None, "project", "project.language", "msg-7", "written-in"),
        ("lesson", "Use spaces, not tabs.", "positive", "style", None, "msg-8", "use-not"),
        ("fact", "spaces", None, "style", "pref.indentation", "msg-8", "use-not"),
        ("lesson", "Prefer pytest over unittest.", "positive", "testing", None, "msg-8", "prefer"),
        ("fact", "pytest", None, "testing", "tool.test_runner", "msg-8", "prefer"),
    ]


@pytest.mark.parametrize("text", [
    "Should we never use print?",  # a question
    "Don't do that.",  # a reaction to the moment, no rule
    "Never touch it again.",
    "You never run the tests!",  # a complaint, not an instruction
    "We never got it working.",  # past tense
    "Don't worry about the flaky test.",
    "Don't forget to update the changelog.",
    "I don't know why the build is slow.",
    "We use the new pipeline for most things.",  # no known name: not a fact
    "Stop the dev server.",  # a one-off command
    "```\nnever do this\n```",
    "> always quoted, never mine",
    "    always indented code",
    "2024-05-01 12:00:01 ERROR never retried",
])
def test_not_rules(text: str) -> None:
    assert find_candidates(messages(text)) == []


def test_prose_lines_drop_code_and_logs() -> None:
    text = (
        "First line.\n```python\nnever = 1\n```\n- a bullet: always X\n"
        "  at com.acme.Foo.bar(Foo.java:12)\n[INFO] started\n~~~\nunclosed fence\nnever seen"
    )
    assert prose_lines(text) == ["First line.", "a bullet: always X"]


def test_categories() -> None:
    assert category_of("Never force-push to main.") == "git"
    assert category_of("Don't use mocks in the integration tests.") == "testing"
    assert category_of("Keep answers short and concise.") == "communication"
    assert category_of("Be kind.") == "general"
    assert category_of("Ada", "user.name") == "user"


def test_jaccard() -> None:
    assert text_jaccard("Use conventional commits.", "Always use conventional commits.") == 0.75
    assert text_jaccard("Don't force-push to main", "Do not force push to main!") == 1.0
    # Negations are not stop words: opposite rules stay apart.
    assert text_jaccard("Never use mocks in integration tests",
                   "Always use mocks in integration tests") < 0.7
    assert text_jaccard("", "anything") == 0.0


@pytest.mark.parametrize("a, b, cosine, same", [
    ("Use conventional commits.", "Always use conventional commits.", 0.5, True),  # words
    ("Run the linter before committing", "Lint your changes before a commit", 0.95, True),
    ("Never force-push to main", "Force-push to main", 0.95, False),  # a do and a don't
    ("Export stickers at 2x", "Export stickers at 3x", 0.97, False),  # other numbers
    ("Export stickers at 2x", "Always export stickers at 2x", 0.97, True),
    ("Prefer tabs over spaces", "Prefer spaces over tabs", 0.98, False),  # another order
])
def test_one_lesson_or_two(a: str, b: str, cosine: float, same: bool) -> None:
    assert same_thing(a, b, cosine, 0.92, lesson=True) is same


def fake_cosine_from_table(table: dict[tuple[str, str], float]):  # type: ignore[no-untyped-def]
    """A stand-in for the embedder's cosine: the scores listed, 0.0 for any other pair."""
    def cosine(a: str, b: str) -> float:
        return table.get((a, b), table.get((b, a), 0.0))
    return cosine


def test_dedup_against_existing_records_the_measure() -> None:
    candidates = find_candidates(messages(
        "Always use conventional commits.",
        "Never force-push to main.",
        "Don't use mocks in the integration tests.",
        "We use ruff, not flake8.",
    ))
    existing = [
        ("L1", "Use conventional commits."),
        ("L2", "Force pushing files to the main branch is forbidden."),
        ("F1", "Ruff", "tool.linter"),
    ]
    cosine = fake_cosine_from_table({
        ("Never force-push to main.", "Force pushing files to the main branch is forbidden."): 0.95,
        ("Don't use mocks in the integration tests.", "Use conventional commits."): 0.5,
    })
    decisions = {(d.candidate.kind, d.candidate.text): d
                 for d in decide(candidates, existing, cosine)}

    by_jaccard = decisions["lesson", "Always use conventional commits."]
    assert (by_jaccard.accepted, by_jaccard.measure) == (False, "jaccard")
    assert by_jaccard.duplicate_of == "L1"
    assert by_jaccard.similarity == 1.0  # "always" is a word a wording varies in
    assert by_jaccard.reason == "duplicate: jaccard 1.00 with L1"

    by_cosine = decisions["lesson", "Never force-push to main."]
    assert (by_cosine.accepted, by_cosine.measure) == (False, "cosine")
    assert by_cosine.duplicate_of == "L2"
    assert by_cosine.similarity == 0.95 >= COSINE_DUPLICATE
    assert by_cosine.reason == "duplicate: cosine 0.95 with L2"

    assert decisions["lesson", "Don't use mocks in the integration tests."].accepted
    assert decisions["lesson", "Use ruff, not flake8."].accepted

    same_fact = decisions["fact", "ruff"]
    assert (same_fact.accepted, same_fact.measure, same_fact.duplicate_of) == (False, "key", "F1")

    # Without a cosine function only Jaccard applies.
    plain = {d.candidate.text: d for d in decide(candidates, existing, None)}
    assert plain["Never force-push to main."].accepted
    assert not plain["Always use conventional commits."].accepted


def test_fact_with_a_new_value_is_accepted() -> None:
    candidates = find_candidates(messages("We use ruff, not flake8."))
    decisions = decide(candidates, [("F1", "flake8", "tool.linter")], None)
    assert [d.accepted for d in decisions] == [True, True]


def test_dedup_within_the_session() -> None:
    decisions = extract(messages(
        "Never force-push to main.",
        "I said it before: never force-push to main!",
        "Again, never force-push to main. We use ruff, not flake8.",
        "We use ruff, not flake8 (I told you).",
    ), existing=[])
    kept = [(d.candidate.message_id, d.candidate.text) for d in decisions if d.accepted]
    assert kept == [("msg-1", "Never force-push to main."), ("msg-3", "Use ruff, not flake8."),
                    ("msg-3", "ruff")]
    rejected = [d for d in decisions if not d.accepted]
    assert all(d.reason.startswith("duplicate within session") for d in rejected)
    assert rejected[0].reason == "duplicate within session: jaccard 1.00 with message msg-1"
    assert {d.measure for d in rejected} == {"jaccard", "key"}
    assert all(d.duplicate_of is None for d in rejected)


def test_dry_run_report_maps_messages_to_entries() -> None:
    decisions = extract(TRANSCRIPT, existing=[("L1", "Never force-push to the main branch.")])
    report = dry_run_report(TRANSCRIPT, decisions)
    assert [r["message_id"] for r in report] == [m.message_id for m in TRANSCRIPT]
    assert report[0]["entries"] == []
    force_push = report[2]["entries"][0]
    assert force_push["text"] == "Never force-push to main."
    assert (force_push["accepted"], force_push["measure"], force_push["duplicate_of"]) == (
        False, "jaccard", "L1")
    json.dumps(report)  # plain data, ready for the wire


def test_llm_prompt_carries_rules_schema_and_numbered_messages() -> None:
    prompt = llm_prompt(TRANSCRIPT)
    for needle in ("file paths", "git history", "debugging recipes", "we fixed", "current task",
                   '"entries"', '"message_id"', "[1] message_id=msg-1", "[6] message_id=msg-6"):
        assert needle in prompt
    assert "Traceback" not in prompt and "$ pytest" not in prompt  # pasted output left out


def test_parse_llm_output_tolerates_junk() -> None:
    stdout = (
        "Sure! Here is the JSON:\n```json\n" + json.dumps({"entries": [
            {"kind": "lesson", "text": "never force-push to main", "category": "Git Workflow",
             "message_id": "msg-3"},
            {"kind": "fact", "text": "ruff", "key": "tool.linter", "polarity": "positive",
             "message_id": "no-such-message"},
            {"kind": "lesson", "text": "Use uv for installs", "polarity": "sideways"},
            {"kind": "fact", "text": "vim", "key": "Editor"},  # not a dotted key
            {"kind": "fact", "text": "vim"},  # no key
            {"kind": "note", "text": "x"},
            {"kind": "lesson", "text": "   "},
            {"kind": "lesson", "text": 42},
            {"kind": "lesson", "text": "x" * 600},
            "junk", None, [1, 2],
        ]}) + "\n```\nHope that helps!"
    )
    assert summary(parse_llm_output(stdout, TRANSCRIPT)) == [
        ("lesson", "Never force-push to main.", "negative", "git-workflow", None, "msg-3", "llm"),
        ("fact", "ruff", None, "tooling", "tool.linter", "", "llm"),
        ("lesson", "Use uv for installs.", "positive", "tooling", None, "", "llm"),
    ]
    assert all(c.session_id == SESSION for c in parse_llm_output(stdout, TRANSCRIPT))
    for junk in ("", "no json here", "{", '{"entries": 5}', "null", '"entries"', "[1, 2]"):
        assert parse_llm_output(junk, TRANSCRIPT) == []
    bare_list = '[{"kind": "lesson", "text": "Avoid global state"}]'
    assert summary(parse_llm_output(bare_list, [])) == [
        ("lesson", "Avoid global state.", "negative", "general", None, "", "llm")]


def test_llm_entries_pass_the_same_filters() -> None:
    stdout = json.dumps({"entries": [
        {"kind": "lesson", "text": "We fixed the login bug", "message_id": "msg-6"},
        {"kind": "fact", "text": "src/app/config.py", "key": "project.config_path",
         "message_id": "msg-6"},
        {"kind": "lesson", "text": "Never force-push to main.", "polarity": "negative",
         "message_id": "msg-3"},
    ]})
    decisions = decide(parse_llm_output(stdout, TRANSCRIPT),
                       [("L1", "Never force-push to main.")], None)
    assert [d.reason for d in decisions] == [
        "negative-list: activity summary",
        "negative-list: file path (key project.config_path)",
        "duplicate: jaccard 1.00 with L1",
    ]


@pytest.mark.parametrize(("message", "expected"), [
    # the newcomer report's misses and mislabels (M10)
    ("Remember that the staging database is Postgres 16, not MySQL. "
     "We deploy with fly.io, never with Heroku.",
     [("fact", "The staging database is Postgres 16, not MySQL.", None),
      ("lesson", "Deploy with fly.io, never with Heroku.", "positive")]),
    ("Use uv instead of pip in the README instructions, we don't use pip directly anymore.",
     [("lesson", "Use uv, not pip in the README instructions.", "positive"),
      ("fact", "uv", None)]),
    ("I prefer small commits with imperative messages like 'Add X'.",
     [("lesson", "Prefer small commits with imperative messages like 'Add X'.", "positive")]),
    ("Prefer 4-space indentation in YAML files too.",
     [("lesson", "Prefer 4-space indentation in YAML files.", "positive")]),
    ("We lint with ruff, not flake8.",
     [("lesson", "Lint with ruff, not flake8.", "positive"), ("fact", "ruff", None)]),
    ("I said it before: never force-push to main!",
     [("lesson", "Never force-push to main.", "negative")]),
    ("We tried Heroku, not fly.io, back then.", []),  # a past event is no rule
])
def test_every_sentence_is_read_and_labelled(message: str, expected: list) -> None:
    found = find_candidates([Message("m1", "s1", message)])
    assert [(c.kind, c.text, c.polarity) for c in found] == expected
