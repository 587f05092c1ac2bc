"""Undoing a run after what came since it: a line appended to the file it wrote, a later
run's change of the same file or entries, the file deleted, an undo undone. What the undo
does, and what it says when it cannot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import run_cli, run_cli_at_terminal, wait_until
from tests.passes.test_passes import active_count, memory_dir, propose_a_recurring_rule

__all__ = ["memory_dir"]  # a fixture of the tests here


def session_log(bullets: int) -> str:
    """A notebook in the pass's order (one section, dates padded, newest first): over the cap
    of 80 lines, a run prunes its oldest bullets, at the bottom, and changes nothing else."""
    lines = ["# Notebook", "", "## Session Log"]
    lines += [f"- [2026-{1 + (bullets - i) // 28:02d}-{1 + (bullets - i) % 28:02d}] "
              f"session {bullets - i}: drew sticker {bullets - i}" for i in range(bullets)]
    return "\n".join(lines) + "\n"


def test_a_line_appended_after_a_run_stays_at_the_end_when_it_is_undone(
        memory_dir: Path, daemon, client: Client) -> None:
    """The pass prunes the oldest bullets at the bottom: a line appended after the run
    (`echo … >>`) sits below the run's last line, and the undo put it back as a conflict. It
    is apart from the run's lines: the undo puts the pruned bullets back above it. An edit of
    the run's own last line is still a conflict."""
    notebook = memory_dir / "notebook.md"
    notebook.write_text(session_log(90))
    original = notebook.read_bytes()
    wait_until(lambda: active_count(client) >= 90)
    fixed = run_cli("notebook", "check", str(notebook), "--fix", "--json")
    assert fixed.returncode == 0, fixed.stderr
    run = json.loads(fixed.stdout)["run"]
    pruned = notebook.read_bytes()
    assert original.startswith(pruned) and len(pruned) < len(original)  # only the bottom went
    appended = b"- [2026-12-01] Agent appended at the bottom.\n"
    with notebook.open("ab") as file:
        file.write(appended)

    undo = run_cli("undo", run)
    assert undo.returncode == 0, undo.stderr
    assert notebook.read_bytes() == original + appended
    assert not (memory_dir / "archive" / "notebook.md").exists()  # the run made it

    fixed = run_cli("notebook", "check", str(notebook), "--fix", "--json")
    run = json.loads(fixed.stdout)["run"]
    last = notebook.read_bytes().splitlines(keepends=True)[-1]
    edited = notebook.read_bytes()[:-len(last)] + last.replace(b"drew", b"inked")
    notebook.write_bytes(edited)
    undo = run_cli("undo", run)
    assert undo.returncode == 1 and "conflict" in undo.stdout, (undo.stdout, undo.stderr)
    assert notebook.read_bytes() == edited


def test_a_line_appended_after_an_accepted_rule_stays_when_it_is_undone(
        memoryd_home: Path, daemon, client: Client) -> None:
    """An accepted rule's section goes at the end of the governance file: a line a person
    appended after it stays, and the undo takes the section back."""
    project = memoryd_home / "repo"
    (project / ".git").mkdir(parents=True)
    claude = project / "CLAUDE.md"
    claude.write_text("# Repo\n\nBuild with make.\n")
    original = claude.read_bytes()
    _, proposal = propose_a_recurring_rule(client, project)
    accepted = run_cli_at_terminal("promote", "accept", proposal["change"], "--json")
    assert accepted.returncode == 0, accepted.stderr
    with claude.open("ab") as file:
        file.write(b"User added line at end.\n")
    undo = run_cli("undo", json.loads(accepted.stdout)["run"])
    assert undo.returncode == 0, undo.stderr
    assert claude.read_bytes() == original + b"User added line at end.\n"


def test_an_older_merge_undone_takes_what_it_brought_from_the_entry_merged_into_since(
        daemon, client: Client) -> None:
    """A into B (r1), then B into C (r2): C counts three occurrences, and B's raised
    confidence raised C's. Undoing r1 put A back and B back to one, and left C at three for
    good (the next run keeps A apart). C is recounted with the undo; undoing the undo puts
    it back as it was."""
    def lesson(text: str, session: str, confidence: float) -> str:
        return client.remember("coder", "git", text, kind="lesson", session=session,
                               confidence=confidence, force=True)["entry"]["id"]

    a = lesson("Use conventional commits.", "s1", 0.8)
    b = lesson("Always use conventional commits.", "s2", 0.85)
    first = client.pass_run("consolidate")
    assert client.get(a)["superseded_by"] == b and client.get(b)["occurrences"] == 2
    c = lesson("Use conventional commits, always.", "s3", 0.95)  # over B's, raised: 0.91
    client.pass_run("consolidate")
    merged = client.get(c)
    assert client.get(b)["superseded_by"] == c and merged["occurrences"] == 3
    alone = 1 - (1 - 0.95) * (1 - 0.85 / 2)  # C's, had it absorbed B as B was before r1
    assert merged["confidence"] > alone + 1e-3  # B's confidence, raised by A, raised C's

    undo = client.undo(first["run"])
    assert client.get(a)["status"] == "active" and client.get(b)["occurrences"] == 1
    recounted = client.get(c)
    assert recounted["occurrences"] == 2
    # as if C had absorbed B alone
    assert recounted["confidence"] == pytest.approx(alone, abs=2e-4)
    shown = client.pass_show(undo["run"])["changes"]
    assert [ch["action"] for ch in shown if ch["target"] == c] == ["recount"]
    assert not client.pass_run("consolidate")["counts"].get("merged")  # A stays apart
    assert client.get(c)["occurrences"] == 2

    client.undo(undo["run"])
    again = client.get(c)
    assert (again["occurrences"], again["confidence"]) == (3, merged["confidence"])


def test_undoing_a_merge_keeps_what_the_user_replaced_its_survivor_with_since(
        daemon, client: Client) -> None:
    """A tester's report: consolidation (r13) merged three linter lessons into one; the user
    then superseded that one with their own rule; `memory undo r13` said "applied 3", exit 0,
    and the two old copies were active again beside the user's rule. The undo leaves the
    merge as it is and says why: the user's later act stands."""
    ids = [client.remember("coder", "git", text, kind="lesson", session=f"s{n}",
                           confidence=0.8, force=True)["entry"]["id"]
           for n, text in enumerate(("Run linter before commit",
                                     "Always run the linter before you commit",
                                     "Run the linter before committing"))]
    merged = client.pass_run("consolidate")
    assert merged["counts"].get("merged") == 2
    [survivor] = [i for i in ids if client.get(i)["status"] == "active"]
    mine = "Always run the linter and the type checker before committing"
    superseded = run_cli("--json", "supersede", survivor, mine)
    assert superseded.returncode == 0, superseded.stderr
    new = json.loads(superseded.stdout)["entry"]["id"]

    undo = run_cli("undo", merged["run"])
    assert undo.returncode == 0, undo.stderr
    assert "kept 3" in undo.stdout and "applied" not in undo.stdout, undo.stdout
    losers = [i for i in ids if i != survivor]
    for loser in losers:
        assert f"{loser} stays superseded: {survivor}, which it was merged into, was " \
            f"replaced since by {new}" in undo.stderr, undo.stderr
    assert [e["text"] for e in client.list_entries(agent="coder", kind="lesson")["entries"]] \
        == [mine]
    assert {client.get(i)["superseded_by"] for i in losers} == {survivor}  # as they were

    # merged on by a pass (not replaced by a person): the undo takes the merge back
    client.remember("coder", "style", "Wrap lines at 100.", kind="lesson", session="s7",
                    confidence=0.8, force=True)
    client.remember("coder", "style", "Always wrap lines at 100.", kind="lesson",
                    session="s8", confidence=0.9, force=True)
    second = client.pass_run("consolidate", agent="coder")
    assert second["counts"].get("merged") == 1
    assert client.undo(second["run"])["counts"] == {"applied": 2}


def test_undoing_a_merge_keeps_its_copies_gone_when_the_user_forgot_its_survivor(
        daemon, client: Client) -> None:
    """The same for a forget: the copies of a lesson the user forgot after the merge stay
    superseded (they are that lesson), and the undo says so."""
    ids = [client.remember("coder", "git", text, kind="lesson", session=f"s{n}",
                           confidence=0.8, force=True)["entry"]["id"]
           for n, text in enumerate(("Use conventional commits.",
                                     "Always use conventional commits."))]
    merged = client.pass_run("consolidate")
    [survivor] = [i for i in ids if client.get(i)["status"] == "active"]
    client.forget(survivor)
    undo = run_cli("undo", merged["run"])
    assert undo.returncode == 0 and "kept 2" in undo.stdout, undo.stdout
    assert f"{survivor}, which it was merged into, was forgotten since" in undo.stderr
    assert client.list_entries(agent="coder", kind="lesson")["entries"] == []


def pruned_notebook(memory_dir: Path, client: Client) -> tuple[Path, bytes, str]:
    """A notebook over its cap, pruned by a run: the notebook, its text before, the run."""
    notebook = memory_dir / "notebook.md"
    notebook.write_text(session_log(90))
    original = notebook.read_bytes()
    wait_until(lambda: active_count(client) >= 90)
    done = client.pass_run("notebooks")
    assert done["counts"]["applied"] == 2  # the notebook and its archive
    return notebook, original, done["run"]


def test_an_undo_says_the_file_is_gone_when_it_was_deleted(
        memory_dir: Path, daemon, client: Client) -> None:
    notebook, _, run = pruned_notebook(memory_dir, client)
    notebook.unlink()
    undo = run_cli("undo", run)
    assert undo.returncode == 1
    assert f"{notebook} is gone since memoryd read it (renamed or deleted): left alone" \
        in undo.stderr, undo.stderr
    assert "meets the run's lines" not in undo.stderr
    assert "held back with it" in undo.stderr  # the archive, left as it was
    assert not notebook.exists()


def test_an_undo_of_a_run_a_later_run_changed_the_file_after_says_undo_that_first(
        memory_dir: Path, daemon, client: Client) -> None:
    notebook, original, first = pruned_notebook(memory_dir, client)
    pruned = notebook.read_bytes()
    top = b"".join(f"- [2026-12-{day:02d}] session {day}: new sticker\n".encode()
                   for day in range(1, 4))
    notebook.write_bytes(pruned.replace(b"## Session Log\n", b"## Session Log\n" + top))
    wait_until(lambda: active_count(client) >= 93)
    second = client.pass_run("notebooks")["run"]
    undo = run_cli("undo", first)
    assert undo.returncode == 1
    assert f"{notebook} was changed since by {second}: left alone (undo {second} first, " \
        "then this again)" in undo.stderr, undo.stderr
    assert "meets the run's lines" not in undo.stderr
    # as it says: the newer run first, then the older one
    assert run_cli("undo", second).returncode == 0
    assert run_cli("undo", first).returncode == 0
    assert notebook.read_bytes() == original.replace(b"## Session Log\n",
                                                     b"## Session Log\n" + top)


def test_a_change_undone_and_applied_again_says_so_and_where_to_undo_it(
        memory_dir: Path, daemon, client: Client) -> None:
    """undo r1 (r2), then undo r2 (r3): r3 applies r1's changes again. `pass show r1` marked
    them undone for good and `undo r1` found nothing to undo, without a word of r3."""
    notebook, original, first = pruned_notebook(memory_dir, client)
    pruned = notebook.read_bytes()
    undo = client.undo(first)["run"]
    redo = client.undo(undo)["run"]
    assert notebook.read_bytes() == pruned
    shown = run_cli("pass", "show", first)
    assert shown.returncode == 0
    marks = re.findall(r"^c\d+ file \S+ \[([^]]*)\]", shown.stdout, re.MULTILINE)
    assert marks == [f"undone by {undo}, applied again by {redo}"] * 2, shown.stdout[:400]
    again = run_cli("undo", first)
    assert again.returncode == 1
    assert f"its changes were undone by {undo}, applied again by {redo}; memory undo {redo} " \
        "takes them back" in again.stderr, again.stderr
    [change] = [c for c in client.pass_show(first)["changes"] if c["target"] == str(notebook)]
    [redone] = [c for c in client.pass_show(redo)["changes"] if c["target"] == str(notebook)]
    one = run_cli("undo", change["change"])
    assert one.returncode == 1
    assert f"{change['change']} was undone by {undo}, applied again by {redo}: memory undo " \
        f"{redone['change']} takes it back" in one.stderr, one.stderr
    assert run_cli("undo", redo).returncode == 0  # as it says
    assert notebook.read_bytes() == original


def test_an_accepted_rule_undone_says_so_and_how_to_write_it_again(
        memoryd_home: Path, daemon, client: Client) -> None:
    """A tester's report: `promote accept c42` (r22), `undo r22` (r23): the rule left the
    file, but `promote accept c42` still said "it was accepted already" and `pass show c42`
    [accepted], through rounds of undo and redo, with no rule in the file. The proposal
    stays accepted (an undone promotion stays undone: not proposed again), and says what
    became of what its acceptance wrote, and the undo that writes it again."""
    project = memoryd_home / "repo"
    (project / ".git").mkdir(parents=True)
    claude = project / "CLAUDE.md"
    claude.write_text("# Repo\n")
    _, proposal = propose_a_recurring_rule(client, project)
    change = proposal["change"]
    accepted = run_cli_at_terminal("promote", "accept", change, "--json")
    assert accepted.returncode == 0, accepted.stderr
    accept_run = json.loads(accepted.stdout)["run"]
    again = run_cli_at_terminal("promote", "accept", change)
    assert again.returncode == 1
    assert f"it was accepted already, by {accept_run}" in again.stderr, again.stderr

    undo = client.undo(accept_run)["run"]
    assert claude.read_text() == "# Repo\n"
    again = run_cli_at_terminal("promote", "accept", change)
    assert again.returncode == 1
    assert f"{change} is not an open proposal: it was accepted by {accept_run}, undone by " \
        f"{undo}; memory undo {undo} writes it again" in again.stderr, again.stderr
    shown = run_cli("pass", "show", change)
    assert f"[accepted by {accept_run}, undone by {undo}]" in shown.stdout, shown.stdout
    assert client.pass_run("promote")["counts"] == {}  # not proposed again
    undone = run_cli("undo", change)  # the proposal wrote nothing itself: the runs did
    assert undone.returncode == 1 and f"memory undo {undo} writes it again" in undone.stderr

    redo = client.undo(undo)["run"]  # as it says
    assert "pytest -x" in claude.read_text()
    shown = run_cli("pass", "show", change)
    assert f"[accepted by {accept_run}, undone by {undo}, applied again by {redo}]" in \
        shown.stdout, shown.stdout
    again = run_cli_at_terminal("promote", "accept", change)
    assert f"applied again by {redo}; memory undo {redo} takes it back" in again.stderr
