"""Writing the user's files by compare-and-swap: an edit made while memoryd writes is never lost,
even one written into the very file memoryd's rename replaced."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.passes import user_files
from memoryd.passes.carry_edit import carry_edit
from memoryd.passes.user_files import (
    read_text,
    remove_if_unchanged,
    replace_if_unchanged,
    settle_removal,
)

NOTEBOOK = (b"# Notebook\n\n## Session Log\n- [2026-11-02] drew the cat\n- [2026-11-01] drew the dog\n"
            b"\n## Learnings\n- [2026-10-01] export at 2x\n")
OURS = NOTEBOOK.replace(b"export at 2x", b"export PNGs at 2x")  # what memoryd writes
THEIRS = NOTEBOOK.replace(b"export at 2x", b"export at 3x")  # an agent's edit of the same line


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    path = tmp_path / "notebook.md"
    path.write_bytes(NOTEBOOK)
    return path


def test_compare_and_swap_refuses_a_file_that_changed(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("mine\n")
    seen = read_text(path)
    path.write_text("mine\ntheirs\n")
    assert not replace_if_unchanged(path, seen.data, b"rewritten\n")
    assert path.read_text() == "mine\ntheirs\n"
    assert replace_if_unchanged(path, b"mine\ntheirs\n", b"rewritten\n")


def racing_agent(monkeypatch: pytest.MonkeyPatch, path: Path, first: bytes,
                 second: tuple[bytes, bytes] | None, late_s: float = 0.0) -> None:
    """An agent that opened the file (truncating) just before memoryd's rename — after
    memoryd looked whether someone holds it open for writing (it leaves such a file alone):
    its write lands in the file the rename replaces (``late_s`` after its truncation: it was
    descheduled in between). Then it reads memoryd's text and, with ``second``, edits that
    in place too — all before memoryd looks again."""
    rename = os.replace
    raced = []
    agent: list[int] = []

    def write_first() -> None:
        os.pwrite(agent[0], first, 0)
        os.close(agent[0])

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        if not raced and Path(target) == path:
            agent.append(os.open(path, os.O_WRONLY))
        rename(source, target)
        if not raced and Path(target) == path:
            raced.append(True)
            os.ftruncate(agent[0], 0)
            if late_s:
                threading.Timer(late_s, write_first).start()
                return
            write_first()
            if second is not None:
                path.write_bytes(path.read_bytes().replace(*second, 1))

    monkeypatch.setattr(user_files.os, "replace", replace)


def test_an_edit_written_into_the_replaced_file_is_carried_onto_the_new_text(
        notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = notebook
    first = NOTEBOOK.replace(b"## Session Log\n", b"## Session Log\n- [2026-11-03] first note\n")
    racing_agent(monkeypatch, path, first,
                 (b"## Learnings\n", b"## Learnings\n- [2026-11-03] second note\n"))
    assert replace_if_unchanged(path, NOTEBOOK, OURS)
    assert path.read_bytes() == (
        b"# Notebook\n\n## Session Log\n- [2026-11-03] first note\n- [2026-11-02] drew the cat\n"
        b"- [2026-11-01] drew the dog\n\n## Learnings\n- [2026-11-03] second note\n"
        b"- [2026-10-01] export PNGs at 2x\n")
    assert [p.name for p in path.parent.iterdir()] == ["notebook.md"]


def test_a_write_that_comes_late_after_its_truncation_is_waited_for(
        notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = NOTEBOOK.replace(b"## Session Log\n", b"## Session Log\n- [2026-11-03] late note\n")
    racing_agent(monkeypatch, notebook, first, None, late_s=0.2)
    assert replace_if_unchanged(notebook, NOTEBOOK, OURS)
    assert notebook.read_bytes() == OURS.replace(b"## Session Log\n",
                                                 b"## Session Log\n- [2026-11-03] late note\n")


def test_an_edit_of_the_lines_memoryd_changed_wins_over_memoryds_change(
        notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    racing_agent(monkeypatch, notebook, THEIRS, None)
    assert not replace_if_unchanged(notebook, NOTEBOOK, OURS)
    assert notebook.read_bytes() == THEIRS
    # and what the agent then wrote over memoryd's text is carried onto theirs
    notebook.write_bytes(NOTEBOOK)
    racing_agent(monkeypatch, notebook, THEIRS, (b"## Session Log\n", b"## Session Log\n- later\n"))
    assert not replace_if_unchanged(notebook, NOTEBOOK, OURS)
    assert notebook.read_bytes() == THEIRS.replace(b"## Session Log\n", b"## Session Log\n- later\n")


def test_two_edits_that_cannot_both_be_made_keep_the_lost_one_beside_the_file(
        notebook: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    racing_agent(monkeypatch, notebook, THEIRS, (b"export PNGs at 2x", b"export PNGs at 4x"))
    assert replace_if_unchanged(notebook, NOTEBOOK, OURS)
    assert notebook.read_bytes() == OURS.replace(b"export PNGs at 2x", b"export PNGs at 4x")
    [kept] = notebook.parent.glob("notebook.md.memoryd-conflict-*")
    assert kept.read_bytes() == THEIRS
    # a second such race, in the same second: its copy is kept beside the first
    notebook.write_bytes(NOTEBOOK)
    again = NOTEBOOK.replace(b"export at 2x", b"export at 5x")
    racing_agent(monkeypatch, notebook, again, (b"export PNGs at 2x", b"export PNGs at 4x"))
    assert replace_if_unchanged(notebook, NOTEBOOK, OURS)
    kept_now = sorted(p.read_bytes() for p in notebook.parent.glob("notebook.md.memoryd-conflict-*"))
    assert kept_now == sorted([THEIRS, again])
    assert "could not be merged" in caplog.text


def racing_removal(monkeypatch: pytest.MonkeyPatch, before: Callable[[], None] = lambda: None,
                   after: Callable[[], None] = lambda: None) -> None:
    """An agent that acts in the instant memoryd removes a file: ``before`` its rename aside
    (after memoryd read it), ``after`` it."""
    rename = os.rename

    def racing(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        before()
        rename(source, target)
        after()

    monkeypatch.setattr(user_files.os, "rename", racing)


def test_a_file_is_removed_only_while_it_holds_what_memoryd_read(notebook: Path) -> None:
    assert not remove_if_unchanged(notebook, OURS)
    assert notebook.read_bytes() == NOTEBOOK
    assert remove_if_unchanged(notebook, NOTEBOOK)
    assert list(notebook.parent.iterdir()) == []


def test_an_edit_written_as_the_file_is_removed_keeps_the_file(
        notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = os.open(notebook, os.O_WRONLY)  # opened before the removal, written after
    racing_removal(monkeypatch, after=lambda: (os.ftruncate(agent, 0), os.pwrite(agent, THEIRS, 0)))
    assert not remove_if_unchanged(notebook, NOTEBOOK)
    os.pwrite(agent, THEIRS + b"- and more\n", 0)  # still writing into the file at its name
    os.close(agent)
    assert notebook.read_bytes() == THEIRS + b"- and more\n"
    assert [p.name for p in notebook.parent.iterdir()] == ["notebook.md"]


def test_a_file_an_agent_renamed_into_place_is_not_removed(
        notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def replace_it() -> None:
        (notebook.parent / "tmp").write_bytes(THEIRS)
        os.replace(notebook.parent / "tmp", notebook)

    racing_removal(monkeypatch, before=replace_it)
    assert not remove_if_unchanged(notebook, NOTEBOOK)
    assert notebook.read_bytes() == THEIRS
    assert [p.name for p in notebook.parent.iterdir()] == ["notebook.md"]


def test_an_edit_of_a_removed_file_whose_name_was_taken_again_is_kept_beside(
        notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = os.open(notebook, os.O_WRONLY)

    def write_both() -> None:
        os.pwrite(agent, THEIRS, 0)
        notebook.write_bytes(b"# A new notebook\n")

    racing_removal(monkeypatch, after=write_both)
    assert not remove_if_unchanged(notebook, NOTEBOOK)
    os.close(agent)
    assert notebook.read_bytes() == b"# A new notebook\n"
    [kept] = notebook.parent.glob("notebook.md.memoryd-conflict-*")
    assert kept.read_bytes() == THEIRS
    assert len(list(notebook.parent.iterdir())) == 2


def test_a_file_goes_back_on_a_file_system_without_hard_links(
        notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        raise PermissionError(1, "Operation not permitted")  # as FAT or some network mounts

    monkeypatch.setattr(user_files.os, "link", no_links)
    agent = os.open(notebook, os.O_WRONLY)
    racing_removal(monkeypatch, after=lambda: (os.ftruncate(agent, 0), os.pwrite(agent, THEIRS, 0)))
    assert not remove_if_unchanged(notebook, NOTEBOOK)
    os.close(agent)
    assert notebook.read_bytes() == THEIRS
    assert [p.name for p in notebook.parent.iterdir()] == ["notebook.md"]


def test_a_removal_stopped_midway_is_settled_without_losing_a_write(notebook: Path) -> None:
    """A daemon killed between renaming a file aside and removing it: at the next start the
    file aside goes if it holds what was to be removed (the journal keeps that), and goes back
    to its name if someone wrote into it."""
    aside = notebook.with_name(".notebook.md.memoryd-removing")
    notebook.rename(aside)
    settle_removal(notebook, NOTEBOOK)
    assert list(notebook.parent.iterdir()) == []
    aside.write_bytes(THEIRS)
    settle_removal(notebook, NOTEBOOK)
    assert notebook.read_bytes() == THEIRS
    assert [p.name for p in notebook.parent.iterdir()] == ["notebook.md"]


def test_carrying_keeps_crlf_line_endings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "notebook.md"
    crlf = NOTEBOOK.replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    ours = crlf.replace(b"export at 2x", b"export PNGs at 2x")
    first = crlf.replace(b"## Learnings\r\n", b"## Learnings\r\n- new\r\n")
    racing_agent(monkeypatch, path, first, None)
    assert replace_if_unchanged(path, crlf, ours)
    assert path.read_bytes() == ours.replace(b"## Learnings\r\n", b"## Learnings\r\n- new\r\n")


def test_an_edit_is_carried_past_a_section_that_moved() -> None:
    base = b"## A\n- a1\n- a2\n## B\n- b1\n"
    moved = b"## B\n- b1\n## A\n- a1\n- a2\n"
    assert carry_edit(base, base.replace(b"## B\n", b"## B\n- b0\n"), moved) == \
        b"## B\n- b0\n- b1\n## A\n- a1\n- a2\n"
    assert carry_edit(base, base.replace(b"- a2\n", b"- a2, changed\n"), b"## A\n- a1\n") is None


def test_a_change_both_texts_made_is_made_once() -> None:
    """An undo of a forget, carried onto a file whose forgotten line was put back by hand,
    wrote it a second time; a line that only moved is not taken for one added."""
    forgotten = b"## Learnings\n\n- puffin at 02:00\n"
    back = b"## Learnings\n\n- heron on 8443\n- puffin at 02:00\n"
    assert carry_edit(forgotten, back, back) == back
    assert carry_edit(forgotten, back, back + b"- kestrel\n") == back + b"- kestrel\n"
    superseded = back.replace(b"02:00", b"03:00")
    assert carry_edit(superseded, back, back) == back  # a line replaced, both alike
    assert carry_edit(superseded, back, back.replace(b"02:00", b"04:00")) is None
    assert carry_edit(b"## S\n- a\n", b"- a\n## S\n", b"- a\n## S\n") == b"- a\n## S\n"


lines = st.lists(st.sampled_from([b"- a\n", b"- b\n", b"\n", b"## S\n", b"text\n", b"- c"]),
                 max_size=12)


@given(lines, lines)
def test_an_edit_carried_onto_its_own_base_is_the_edit(base: list[bytes], edited: list[bytes]
                                                       ) -> None:
    base_text, edited_text = b"".join(base), b"".join(edited)
    assert carry_edit(base_text, edited_text, base_text) == edited_text
    assert carry_edit(base_text, base_text, edited_text) == edited_text


def inserted(text: bytes, at: int, line: bytes) -> bytes:
    """``text`` with ``line`` put before its line number ``at`` (modulo its lines, and after
    the last)."""
    lines = text.splitlines(keepends=True)
    at %= len(lines) + 1
    return b"".join([*lines[:at], line, *lines[at:]])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.booleans(), st.booleans())
def test_an_agents_racing_lines_are_never_lost(first_at: int, second_at: int, writes_again: bool,
                                               ours_removes: bool) -> None:
    """Whatever the lines an agent adds in the race, and wherever: each ends in the file or, at
    worst, in the conflict copy beside it."""
    ours = (NOTEBOOK.replace(b"- [2026-11-01] drew the dog\n", b"") if ours_removes
            else OURS)
    first = inserted(NOTEBOOK, first_at, b"- first line of the agent\n")
    with tempfile.TemporaryDirectory() as directory, pytest.MonkeyPatch.context() as patch:
        path = Path(directory) / "notebook.md"
        path.write_bytes(NOTEBOOK)
        second = None
        if writes_again:  # its second edit, made to what it then read: memoryd's text
            anchor = ours.splitlines(keepends=True)[second_at % len(ours.splitlines())]
            second = (anchor, anchor + b"- second line of the agent\n")
        racing_agent(patch, path, first, second)
        replace_if_unchanged(path, NOTEBOOK, ours)
        kept = b"".join(p.read_bytes() for p in Path(directory).iterdir())
    assert b"first line of the agent" in kept
    assert not writes_again or b"second line of the agent" in kept
