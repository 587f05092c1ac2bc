"""The notebook pass rewrites a notebook without running entries together: each entry stays
its own, under its heading, whatever the mix of bullets, paragraphs, fences and sub-headings
(the indexer reads the new text as it read the old, minus what moved to the archive)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.ingest.markdown import parse_memory_file
from memoryd.passes import notebook_text, notebooks

WORDS = st.sampled_from(["cat", "palette", "export", "bleed", "print", "`make`", "--dry-run"])
SENTENCE = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)
DAY = st.tuples(st.integers(2024, 2026), st.integers(1, 12), st.integers(1, 28))
DATE = st.one_of(st.none(), DAY.flatmap(lambda d: st.sampled_from([
    f"[{d[0]}-{d[1]:02d}-{d[2]:02d}] ", f"[{d[0]}-{d[1]}-{d[2]}] ", f"{d[0]}-{d[1]:02d}-{d[2]:02d}: "])))
BLOCK = st.one_of(
    st.builds(lambda d, s, m: [f"{m} {d or ''}{s}"], DATE, SENTENCE, st.sampled_from(["-", "*", "1."])),
    st.builds(lambda d, s: [f"- [ ] {d or ''}{s}"], DATE, SENTENCE),
    st.builds(lambda d, s, c: [f"- {d or ''}{s}", f"  - {c}"], DATE, SENTENCE, SENTENCE),
    st.builds(lambda d, s, c: [f"- {d or ''}{s}", "", f"  {c}"], DATE, SENTENCE, SENTENCE),
    st.builds(lambda s: [s], SENTENCE),  # a paragraph: an entry of its own
    st.builds(lambda s, t: [s, t], SENTENCE, SENTENCE),
    st.builds(lambda s: [f"> {s}"], SENTENCE),
    st.builds(lambda s: ["```", f"- {s}", "```"], SENTENCE),  # a fenced block, bullets inside
    st.builds(lambda s: [f"### {s}"], SENTENCE),
    st.builds(lambda s: [f"<!-- {s} -->"], SENTENCE),  # comments: no entries, kept
    st.builds(lambda s, t: ["<!--", f"## {s}", f"- {t}", "-->"], SENTENCE, SENTENCE),
)
HEADING = st.sampled_from(["## Mistakes", "## Learnings", "## Session Log",
                           "## Shareholder Feedback", "## Notes", "# Title"])
NOTEBOOK = st.lists(st.tuples(HEADING, st.lists(st.tuples(BLOCK, st.booleans()), max_size=6)),
                    min_size=1, max_size=5)


def text_of(sections: list[tuple[str, list[tuple[list[str], bool]]]]) -> str:
    lines: list[str] = []
    for heading, blocks in sections:
        lines.append(heading)
        for block, blank_after in blocks:
            lines += block + ([""] if blank_after else [])
    return "\n".join(lines) + "\n"


def entries_read(text: str) -> list[tuple[str, str | None]]:
    return [(item.text, item.heading) for item in parse_memory_file(text, "n.md").items]


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(NOTEBOOK)
def test_a_normalised_notebook_holds_the_same_entries_under_the_same_headings(sections) -> None:
    text = text_of(sections)
    notebook = notebook_text.parse(text, "n.md")
    notebook_text.normalise(notebook)
    assert entries_read(notebook.render()) == notebook.entries()
    assert sorted(notebook.entries()) == sorted(entries_read(text))  # none lost, none merged
    # each kept whole (with its section, where sections move)
    assert sorted(comments_of(notebook.render())) == sorted(comments_of(text))


def comments_of(text: str) -> list[str]:
    """The HTML comments of a notebook, each as written."""
    lines = text.split("\n")
    return ["\n".join(lines[start - 1:end])
            for start, end in parse_memory_file(text, "n.md").comments]


def test_bullets_under_a_paragraph_of_their_own_stay_under_it() -> None:
    """"Current rules:" and "Obsolete, do NOT follow:" each say something of the bullets below
    them: sorting the section newest first put every rule under "Obsolete". A section with
    text between its bullets is left in its order, and the pass says why."""
    text = ("## Learnings\nCurrent rules:\n- [2026-01-10] Deploy with the blue-green script\n"
            "- [2026-01-12] Tag releases as vX.Y.Z\n\nObsolete, do NOT follow:\n"
            "- [2026-03-01] Deploy by copying files over FTP\n"
            "- [2026-03-02] Tag releases as release-N\n")
    notebook = notebook_text.parse(text, "notebook.md")
    assert notebook_text.normalise(notebook) == []
    assert notebook.render() == text
    assert notebook.problems == ["section '## Learnings' has text between its bullets; left in "
                                 "its order"]
    intro = "## Learnings\nWhat we learned:\n- [2026-01-10] A old one\n- [2026-01-12] A new one\n"
    notebook = notebook_text.parse(intro, "notebook.md")  # text above them all: sorted
    assert notebook_text.normalise(notebook) == ["## Learnings newest first"]


def test_the_users_own_sections_stay_where_they_are() -> None:
    """A CLAUDE.md with a notebook section between the user's own: the notebook's sections
    are put in order among the places they hold, the others not moved ("## Learnings" went
    above "## Coding style", and the pass did not say it had moved it)."""
    text = ("# Me\n\n## Coding style\n- Use tabs.\n\n## Mistakes\n- [2026-01-01] m\n\n"
            "## Tools\n- vim\n\n## Learnings\n- [2026-01-10] a\n- [2026-01-12] b\n")
    notebook = notebook_text.parse(text, "CLAUDE.md")
    assert notebook_text.normalise(notebook) == ["## Learnings newest first"]
    assert notebook.render() == text.replace("- [2026-01-10] a\n- [2026-01-12] b",
                                             "- [2026-01-12] b\n- [2026-01-10] a")


def test_loose_dates_are_written_in_brackets() -> None:
    notebook = notebook_text.parse("## Learnings\n- 2026-03-05: export at 2x\n- [2026-3-4] print\n",
                               "n.md")
    assert notebook_text.normalise(notebook)
    assert notebook.render() == "## Learnings\n- [2026-03-05] export at 2x\n- [2026-03-04] print\n"
    # a date the sentence begins with is what it says, not when: as the indexer reads it
    said = "## Learnings\n- 2026-04-15 is the hard launch date; do not move it\n"
    notebook = notebook_text.parse(said, "n.md")
    assert notebook_text.normalise(notebook) == [] and notebook.render() == said


def test_a_notebook_whose_entries_would_run_together_is_left_as_it_is(tmp_path) -> None:
    path = tmp_path / "n.md"
    # an unclosed fence takes in everything after it: moved up, it would swallow the bullets
    path.write_text("## Session Log\n- [2026-01-01] a\n## Learnings\n- [2026-01-02] b\n```\nc\n")
    steps = notebooks.plan(path, 80, set, lambda items: [None] * len(items), 0.92, "r1", 0.0)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        planned = done.value
    assert not planned.fixed and not planned.removed
    assert "left as it is" in planned.notebook.problems[-1]


def test_the_blank_lines_a_person_leaves_are_kept() -> None:
    """The pass took out the blank line after each `## Section` heading, and the blank lines
    setting bullets apart: no documented normalisation, a rewrite of the person's file beyond
    what memoryd says it does. Sections reordered, bullets newest first: the layout stays."""
    text = ("# Designer\n\n## Learnings\n\n- [2026-01-01] export at 2x\n\n"
            "- [2026-02-01] bubbles on the left\n\n## Mistakes\n\n- [2026-01-03] bleed margin\n"
            "\n## Session Log\n- [2026-01-04] drew a cat\n- [2026-01-05] drew a dog\n")
    notebook = notebook_text.parse(text, "n.md")
    assert notebook_text.normalise(notebook)  # sections in order, Learnings newest first
    assert notebook.render() == (
        "# Designer\n\n## Mistakes\n\n- [2026-01-03] bleed margin\n\n## Learnings\n\n"
        "- [2026-02-01] bubbles on the left\n\n- [2026-01-01] export at 2x\n\n"
        "## Session Log\n- [2026-01-05] drew a dog\n- [2026-01-04] drew a cat\n")
