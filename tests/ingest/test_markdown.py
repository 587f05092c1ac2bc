"""Splitting markdown memory files into entries: memoryd.markdown."""

import random

import pytest

from memoryd.ingest.markdown import MemoryItem, parse_memory_file
from memoryd.text import kebab

NOTEBOOK = """\
# Designer Agent Memory

## Mistakes
- [2026-03-15] Generated sticker with floating speech bubble —
  disconnected from character. Die-cut requires single continuous
  shape. Use ensure_single_shape() after compositing.

## Learnings
- [2026-03-14] OpenAI GPT Image sometimes pre-removes green bg.
  Check if flood fill removes <100px — if so, skip flood fill.

## Shareholder Feedback
- [2026-03-10] "Sticker designs must feature illustration or visual
  humor. Text on colored circle is NOT a sticker anyone would buy."

## Session Log
- [2026-03-15] WQ-3412: Created cyberpunk cat sticker. Passed QA.
"""


def parse_items(text: str, path: str = "notes.md") -> tuple[MemoryItem, ...]:
    return parse_memory_file(text, path).items


def summarise(item: MemoryItem) -> tuple[object, ...]:
    return (item.line_start, item.line_end, item.category, item.kind, item.polarity, item.date)


# The seed notebook


def test_notebook_sections_give_kinds_categories_dates_and_spans() -> None:
    items = parse_items(NOTEBOOK)

    assert [summarise(item) for item in items] == [
        (4, 6, "mistakes", "lesson", "negative", "2026-03-15"),
        (9, 10, "learnings", "lesson", "positive", "2026-03-14"),
        (13, 14, "shareholder-feedback", "feedback", None, "2026-03-10"),
        (17, 17, "session-log", "note", None, "2026-03-15"),
    ]
    assert [item.heading for item in items] == [
        "Mistakes",
        "Learnings",
        "Shareholder Feedback",
        "Session Log",
    ]


def test_entry_text_drops_marker_and_date_and_dedents_wrapped_lines() -> None:
    first = parse_items(NOTEBOOK)[0]

    assert first.text == (
        "Generated sticker with floating speech bubble —\n"
        "disconnected from character. Die-cut requires single continuous\n"
        "shape. Use ensure_single_shape() after compositing."
    )


def test_spans_point_at_the_entry_lines_in_the_file() -> None:
    lines = NOTEBOOK.splitlines()

    for item in parse_items(NOTEBOOK):
        first_line = lines[item.line_start - 1]
        last_line = lines[item.line_end - 1]
        assert item.text.split("\n")[0] in first_line
        assert item.text.split("\n")[-1] in last_line


# Bullets


def test_nested_bullets_and_sub_lines_belong_to_the_parent_entry() -> None:
    text = "- parent\n  - child\n    - grandchild\n  more about parent\n- sibling\n"

    items = parse_items(text)

    assert [(item.text, item.line_start, item.line_end) for item in items] == [
        ("parent\n- child\n  - grandchild\nmore about parent", 1, 4),
        ("sibling", 5, 5),
    ]


def test_bullet_goes_on_after_a_blank_line_only_when_indented() -> None:
    text = "- loose item\n\n  second paragraph\n\nnot indented: a note\n"

    items = parse_items(text)

    assert [(item.text, item.line_start, item.line_end) for item in items] == [
        ("loose item\n\nsecond paragraph", 1, 3),
        ("not indented: a note", 5, 5),
    ]


def test_unindented_wrapped_line_continues_the_bullet() -> None:
    items = parse_items("- a bullet that wraps\nwithout indent\n- next\n")

    assert [item.text for item in items] == ["a bullet that wraps\nwithout indent", "next"]
    assert items[0].line_end == 2


@pytest.mark.parametrize(
    "line",
    ["- x", "* x", "+ x", "1. x", "12) x", "- [ ] x", "- [x] x", "\t- x", "-\tx", "  * [X] x"],
)
def test_bullet_markers_and_checkboxes_are_removed(line: str) -> None:
    assert [item.text for item in parse_items(line + "\n")] == ["x"]


def test_empty_bullets_are_not_entries() -> None:
    assert parse_items("- \n-\n* [ ]\n- [2026-01-02]\n") == ()


def test_dashed_words_and_emphasis_are_not_bullets() -> None:
    items = parse_items("-5 degrees\n*bold* claim\n")

    assert [item.text for item in items] == ["-5 degrees\n*bold* claim"]


# Paragraphs, headings and rules


def test_paragraphs_are_notes_split_by_blank_lines() -> None:
    text = "# Project\n\nFirst paragraph\nstill first.\n\nSecond one.\n"

    items = parse_items(text)

    assert [(item.text, item.line_start, item.line_end) for item in items] == [
        ("First paragraph\nstill first.", 3, 4),
        ("Second one.", 6, 6),
    ]
    assert {(item.kind, item.category, item.heading) for item in items} == {
        ("note", "project", "Project")
    }


def test_headings_and_rules_alone_are_not_entries() -> None:
    assert parse_items("# Title\n\n## Mistakes\n\n---\n### Empty\n#\n") == ()


def test_html_comments_are_not_entries_nor_part_of_one() -> None:
    """Markdown hides them: "<!-- Keep this file short -->" was a note, and a multi-line
    one's heading started a section."""
    text = ("# Notes\n<!-- Keep this file short. -->\n\n## Mistakes\n- [2026-11-08] one\n"
            "<!-- TODO\n## Learnings\n- hidden\n-->\n- [2026-11-09] two\n"
            "  <!-- inside the bullet -->\n  and more\n\nA paragraph\n<!-- x -->\n"
            "<!-- unclosed\n- gone\n")
    parsed = parse_memory_file(text, "notes.md")
    assert [(i.text, i.kind, i.line_start, i.line_end) for i in parsed.items] == [
        ("one", "lesson", 5, 5), ("two\nand more", "lesson", 10, 12),
        ("A paragraph", "lesson", 14, 14)]
    assert parsed.comments == ((2, 2), (6, 9), (11, 11), (15, 15), (16, 18))
    # inside a fence it is code; four spaces in, outside a bullet, it is text
    assert [i.text for i in parse_items("```\n<!-- code -->\n```\n")] == \
        ["```\n<!-- code -->\n```"]
    assert parse_items("<!--x-->\n") == () and parse_items("<!-->\nafter\n")[0].text == "after"


def test_merge_conflict_markers_are_no_entry_text() -> None:
    """`git merge` left a conflict: its markers were glued to the bullets before them
    (``…Sunday night.\n=======``, a new id each), and one right under a heading was an
    entry. Both sides' lines are entries as written; a setext underline is text still."""
    text = ("## Learnings\n<<<<<<< HEAD\n- [2026-06-02] The staging database resets on "
            "Sundays.\n||||||| base\n- [2026-05-01] The base lesson.\n=======\n- Stashed "
            "lesson: the cron runs in UTC.\n  It says so in crontab.\n>>>>>>> feature\n"
            "Paragraph after.\n\nTitle\n=======\n```\n<<<<<<< HEAD\n```\n")

    items = parse_items(text)

    assert [(item.text, item.line_start, item.line_end, item.kind) for item in items] == [
        ("The staging database resets on Sundays.", 3, 3, "lesson"),
        ("The base lesson.", 5, 5, "lesson"),
        ("Stashed lesson: the cron runs in UTC.\nIt says so in crontab.", 7, 8, "lesson"),
        ("Paragraph after.", 10, 10, "lesson"),
        ("Title\n=======\n```\n<<<<<<< HEAD\n```", 12, 16, "lesson"),
    ]
    assert [i.text for i in parse_items("- a\n<<<<<<<\n- b\n>>>>>>>\n- c\n")] == ["a", "b", "c"]


def test_heading_ends_a_bullet_without_a_blank_line() -> None:
    items = parse_items("## Mistakes\n- one\n## Learnings\n- two\n")

    assert [(item.text, item.kind, item.polarity) for item in items] == [
        ("one", "lesson", "negative"),
        ("two", "lesson", "positive"),
    ]


def test_hashtags_and_deeply_indented_hashes_are_not_headings() -> None:
    items = parse_items("## Learnings\n#tag line\n- bullet\n    # indented comment\n")

    assert [item.text for item in items] == ["#tag line", "bullet\n# indented comment"]
    assert {item.kind for item in items} == {"lesson"}


def test_closing_hashes_are_dropped_from_the_heading() -> None:
    items = parse_items("## Tool Quirks & Gotchas ##\n- C# needs care\n")

    assert items[0].heading == "Tool Quirks & Gotchas"
    assert items[0].category == "tool-quirks-gotchas"


def test_entries_without_heading_have_empty_category() -> None:
    item = parse_items("just a note\n")[0]

    assert (item.heading, item.category, item.kind, item.polarity) == (None, "", "note", None)


def test_category_is_the_nearest_heading_of_any_level() -> None:
    text = "# Memory\n- under title\n## Mistakes\n- under section\n### Deploy\n- under sub\n"

    items = parse_items(text)

    assert [item.category for item in items] == ["memory", "mistakes", "deploy"]


def test_subsection_inherits_the_notebook_kind_of_its_parent() -> None:
    text = "## Mistakes\n### Deploy\n- forgot migrations\n## Other\n- plain\n"

    items = parse_items(text)

    assert [(item.category, item.kind, item.polarity) for item in items] == [
        ("deploy", "lesson", "negative"),
        ("other", "note", None),
    ]


def test_session_log_under_learnings_is_a_note() -> None:
    item = parse_items("# Learnings\n## Session Log\n- did things\n")[0]

    assert (item.kind, item.polarity) == ("note", None)


@pytest.mark.parametrize(
    ("heading", "kind", "polarity"),
    [
        ("Mistakes", "lesson", "negative"),
        ("MISTAKES", "lesson", "negative"),
        ("Mistakes (newest first)", "lesson", "negative"),
        ("1. Mistakes", "lesson", "negative"),
        ("🚫 Mistakes:", "lesson", "negative"),
        ("Mistake log", "lesson", "negative"),
        ("learnings", "lesson", "positive"),
        ("Learnings — keep these", "lesson", "positive"),
        ("Shareholder Feedback", "feedback", None),
        ("Feedback", "feedback", None),
        ("User feedback (never prune)", "feedback", None),
        ("Session Log", "note", None),
        ("Recent Mistakes", "note", None),
        ("Mistaken ideas", "note", None),
        ("Tool Quirks & Gotchas", "note", None),
    ],
)
def test_notebook_headings_match_leniently(heading: str, kind: str, polarity: str | None) -> None:
    item = parse_items(f"## {heading}\n- entry\n")[0]

    assert (item.kind, item.polarity) == (kind, polarity)


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Mistakes", "mistakes"),
        ("Shareholder Feedback", "shareholder-feedback"),
        ("Tool Quirks & Gotchas", "tool-quirks-gotchas"),
        ("Mistakes (newest first)", "mistakes-newest-first"),
        ("  Don't Repeat: `snake_case` **names** ", "dont-repeat-snake-case-names"),
        ("🚫 Café notes", "café-notes"),
        ("", ""),
        ("!!!", ""),
        ("Token [REDACTED:slack-token] here", "token-[REDACTED:slack-token]-here"),
        ("[redacted:not-a-mark]", "redacted-not-a-mark"),
    ],
)
def test_kebab(heading: str, expected: str) -> None:
    assert kebab(heading) == expected


def test_a_headings_secret_is_redacted_before_its_kebab_form() -> None:
    """Put in kebab form first, ``AKIA…`` was lower-cased and a token got a "-" before it:
    the redactor knew neither, and the category kept the secret."""
    github = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
    aws = "AKIAZYMLOPIFQY78F5M0"
    text = (f"## Deploy with {github}\n- one\n### AWS {aws}\n- two\n"
            "## password: DbZhrHpe7coruNg4!\n- three\n")

    items = parse_items(text)

    assert [item.category for item in items] == [
        "deploy-with-[REDACTED:github-token]", "aws-[REDACTED:aws-access-key]",
        "password-[REDACTED:password]"]
    assert items[0].heading == f"Deploy with {github}"  # the file's own text
    assert [item.title_path for item in items] == [
        "Deploy with [REDACTED:github-token]",
        "Deploy with [REDACTED:github-token] › AWS [REDACTED:aws-access-key]",
        "password: [REDACTED:password]"]


def test_an_entrys_title_path_is_every_heading_it_is_under_as_written() -> None:
    text = ("# Team rules\n- under the title\n## Kestrelwood   migration\n### Batches\n- a\n"
            "## Reviews\n- b\n#\n- c\n")

    items = parse_items(text)

    assert [item.title_path for item in items] == [
        "Team rules", "Team rules › Kestrelwood migration › Batches", "Team rules › Reviews",
        None]
    assert parse_items("just a note\n")[0].title_path is None


# Dates


def test_date_prefix_forms() -> None:
    text = (
        "- [2026-03-15]: colon\n"
        "- [2026-03-15] — dash\n"
        "- [ ] [2026-03-15] after checkbox\n"
        "- [2026-02-30] not a real date\n"
        "- see [2026-03-15] in the middle\n"
        "- [2026-3-5] unpadded\n"
        "- (2026-03-05) in parentheses\n"
        "- 2026-03-05: bare, with a colon\n"
        "- 2026-03-05 was the launch day\n"
        "\n"
        "[2026-01-01] a dated paragraph\n"
    )

    items = parse_items(text)

    # the notebook pass writes the looser forms as "[2026-03-05]": read as dates already, the
    # entries keep their text (and vector) when it does
    assert [(item.date, item.text) for item in items] == [
        ("2026-03-15", "colon"),
        ("2026-03-15", "dash"),
        ("2026-03-15", "after checkbox"),
        (None, "[2026-02-30] not a real date"),
        (None, "see [2026-03-15] in the middle"),
        ("2026-03-05", "unpadded"),
        ("2026-03-05", "in parentheses"),
        ("2026-03-05", "bare, with a colon"),
        (None, "2026-03-05 was the launch day"),
        ("2026-01-01", "a dated paragraph"),
    ]


# Code fences


def test_code_fence_belongs_to_its_bullet_and_hides_headings() -> None:
    text = (
        "## Learnings\n"
        "- [2026-03-14] restart the worker:\n"
        "```bash\n"
        "# not a heading\n"
        "\n"
        "- not a bullet\n"
        "systemctl restart worker\n"
        "```\n"
        "- next\n"
    )

    items = parse_items(text)

    assert [(item.line_start, item.line_end, item.kind) for item in items] == [
        (2, 8, "lesson"),
        (9, 9, "lesson"),
    ]
    assert items[0].text == (
        "restart the worker:\n```bash\n# not a heading\n\n- not a bullet\n"
        "systemctl restart worker\n```"
    )
    assert {item.heading for item in items} == {"Learnings"}


def test_indented_fence_after_a_blank_line_stays_in_the_bullet() -> None:
    text = "- run:\n\n  ~~~\n  make test\n  ~~~\n"

    items = parse_items(text)

    assert [(item.text, item.line_start, item.line_end) for item in items] == [
        ("run:\n\n~~~\nmake test\n~~~", 1, 5)
    ]


def test_fence_in_a_paragraph_keeps_blank_lines() -> None:
    text = "Example:\n```\na\n\nb\n```\n\nafter\n"

    items = parse_items(text)

    assert [(item.line_start, item.line_end) for item in items] == [(1, 6), (8, 8)]


def test_unclosed_fence_runs_to_the_end_of_the_file() -> None:
    text = "- snippet\n  ```\n  # code\n\n## still code\n\n"

    items = parse_items(text)

    assert [(item.line_start, item.line_end) for item in items] == [(1, 5)]


def test_inline_triple_backticks_do_not_open_a_fence() -> None:
    items = parse_items("```inline``` text\n## Mistakes\n- x\n")

    assert [item.kind for item in items] == ["note", "lesson"]


# Frontmatter


def test_frontmatter_is_parsed_and_line_numbers_still_match_the_file() -> None:
    text = (
        "---\n"
        "name: deploy notes\n"
        'description: "How we deploy, and what broke"\n'
        "type: 'project'\n"
        "tags:\n"
        "  - ops\n"
        "---\n"
        "## Mistakes\n"
        "- [2026-03-01] skipped the migration\n"
    )

    memory = parse_memory_file(text, "deploy.md")

    assert memory.frontmatter == {
        "name": "deploy notes",
        "description": "How we deploy, and what broke",
        "type": "project",
        "tags": "",
    }
    assert (memory.description, memory.type) == ("How we deploy, and what broke", "project")
    assert [summarise(item) for item in memory.items] == [
        (9, 9, "mistakes", "lesson", "negative", "2026-03-01")
    ]


def test_frontmatter_block_scalars_are_joined() -> None:
    text = "---\ndescription: >\n  folded\n  text\nnote: |\n  kept\n  lines\n---\n"

    memory = parse_memory_file(text, "a.md")

    assert memory.frontmatter == {"description": "folded text", "note": "kept\nlines"}
    assert memory.items == ()


def test_file_without_frontmatter_has_none() -> None:
    memory = parse_memory_file(NOTEBOOK, "designer.md")

    assert (memory.frontmatter, memory.description, memory.type) == ({}, None, None)


def test_only_frontmatter_gives_no_items() -> None:
    memory = parse_memory_file("---\ntype: user\n---\n", "a.md")

    assert (memory.type, memory.items) == ("user", ())


def test_unterminated_frontmatter_is_treated_as_body() -> None:
    memory = parse_memory_file("---\ndescription: oops\n\n- a bullet\n", "a.md")

    assert memory.frontmatter == {}
    assert [(item.text, item.line_start) for item in memory.items] == [
        ("description: oops", 2),
        ("a bullet", 4),
    ]


# Line endings and odd input


def test_crlf_and_cr_line_endings_give_the_same_entries_as_lf() -> None:
    expected = [summarise(item) for item in parse_items(NOTEBOOK)]

    for newline in ("\r\n", "\r"):
        items = parse_items(NOTEBOOK.replace("\n", newline))
        assert [summarise(item) for item in items] == expected
        assert "\r" not in "".join(item.text for item in items)


def test_frontmatter_with_crlf_and_byte_order_mark() -> None:
    memory = parse_memory_file("\ufeff---\r\ntype: feedback\r\n---\r\n- x\r\n", "a.md")

    assert memory.type == "feedback"
    assert [(item.text, item.line_start) for item in memory.items] == [("x", 4)]


@pytest.mark.parametrize("text", ["", "\n", "   \n\t\n", "---", "---\n---\n", "#", "-"])
def test_empty_or_structural_only_input_has_no_items(text: str) -> None:
    assert parse_items(text) == ()


# Pinning


@pytest.mark.parametrize(
    ("path", "pinned"),
    [
        ("CONTEXT.md", True),
        ("context.md", True),
        ("agents/designer/memory/CONTEXT.md", True),
        ("knowledge/system/rules.md", True),
        ("knowledge\\System\\rules.md", True),
        ("notes.md", False),
        ("system.md", False),
        ("knowledge/systems/rules.md", False),
        ("CONTEXT.md/notes.md", False),
        ("", False),
    ],
)
def test_context_md_and_system_folders_are_pinned(path: str, pinned: bool) -> None:
    assert parse_memory_file("- x\n", path).pinned is pinned


# Never raises


NASTY = [
    "\x00\x01\x02",
    "\ud800 lone surrogate\n- \udcff",
    "---\n: no key\n  :\n---",
    "---\nkey: '\n---\n",
    "```",
    "~~~~\n~~~\n",
    "- ```\n",
    "#" * 10_000,
    "- " * 10_000,
    "  " * 10_000 + "x",
    "# a" + " " * 100_000 + "b",
    "- [2026-01-01]" + " " * 100_000 + "x",
    "[" * 50_000,
    "\t" * 1_000 + "- x\n" + "\t" * 999 + "- y",
    "1." * 10_000,
    "\r\r\n\n\r",
    "\u2028\u2029\x0b\x0c\x1c\x85",
    "* * *\n_ _ _\n- - -\n",
    "- a\n" * 5_000,
]


def check_invariants(text: str) -> None:
    line_count = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    memory = parse_memory_file(text, text[:50])
    previous_end = 0
    for item in memory.items:
        assert previous_end < item.line_start <= item.line_end <= line_count
        assert item.text and item.text == item.text.strip()
        previous_end = item.line_end


@pytest.mark.parametrize("text", NASTY, ids=range(len(NASTY)))
def test_nasty_input_never_raises(text: str) -> None:
    check_invariants(text)


def test_random_markdown_never_raises() -> None:
    pieces = [
        "#", "## ", "- ", "* ", "+ ", "1. ", "[ ] ", "[2026-03-15] ", "```", "~~~", "---", "\n",
        "\r\n", "\r", "\t", "  ", "    ", "word ", "Mistakes", "Feedback", ": ", "'", '"', "\ufeff",
        "é", "\ud83d", "\x00",
    ]  # fmt: skip
    rng = random.Random(20260315)
    for _ in range(500):
        check_invariants("".join(rng.choice(pieces) for _ in range(rng.randrange(60))))
