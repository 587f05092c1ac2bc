"""How the maintenance commands of ``memory`` print their replies: pass list|run|show, undo,
promote accept, notebook check (their arguments and exit rules are in the table,
memoryd_client.commands)."""

from __future__ import annotations

import re
import sys
import time

from memoryd_client import views
from memoryd_client.status_view import next_run

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from typing import Any

#: Unchanged lines shown around each change of a file (as ``diff -u``).
DIFF_CONTEXT = 3
#: One reason of a change about one line: "date prefix of '- 2026-3-5 speech bubbles …'".
_ABOUT_ONE = re.compile(r"^(?P<what>[a-z][\w ]*?) of (?P<line>'.*'|\".*\")$", re.DOTALL)


def _reasons(why: str) -> list[str]:
    """A change's reasons, joined by "; " (not inside a quoted line)."""
    parts, start, quote, i = [], 0, "", 0
    while i < len(why):
        char = why[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"" and (i == 0 or why[i - 1] == " "):
            quote = char
        elif why.startswith("; ", i):
            parts.append(why[start:i])
            start = i + 2
            i += 1
        i += 1
    return parts + [why[start:]]


def grouped_why(why: str) -> str:
    """The reasons of a change with those repeated for many lines counted, in order:
    "date prefix: 24 bullets (the first '- 2026-3-5 …')" for 24 "date prefix of '…'"."""
    groups: dict[str, list[str]] = {}  # a reason → the lines it is about ("" for none)
    for reason in _reasons(why):
        about = _ABOUT_ONE.match(reason)
        what, line = (about["what"], about["line"]) if about else (reason, "")
        groups.setdefault(what, []).append(line)
    shown = []
    for what, lines in groups.items():
        if not lines[0]:
            shown.append(what + (f" ({len(lines)} times)" if len(lines) > 1 else ""))
        elif len(lines) > 1:
            shown.append(f"{what}: {len(lines)} bullets (the first {lines[0]})")
        else:
            shown.append(f"{what} of {lines[0]}")
    return "; ".join(shown)


def _counts(counts: dict[str, int], status: str = "done") -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or (
        "nothing done before it stopped" if status == "interrupted" else "nothing to do")


def conflicts_said(result: dict[str, Any]) -> str | None:
    """What a run left alone as changed since memoryd read it, in words: the files changed
    and, apart, the files held back with them (a notebook's archive goes with it), e.g.
    "notebook.md changed since and was left alone, with archive/notebook.md held back (the
    files of a change go back together)"; None without a conflict."""
    conflicts = result["counts"].get("conflict")
    if not conflicts:
        return None
    changed, held = result.get("changed") or [], result.get("held") or []
    if result.get("gone") or result.get("later"):  # why, file by file, as the CLI says it
        return "; ".join(_conflict_lines(result, conflicts))
    if not changed:  # entries changed meanwhile
        return f"{conflicts} change(s) left alone: what they change was changed since"
    said = (f"{', '.join(changed)} changed since and "
            f"{'was' if len(changed) == 1 else 'were'} left alone")
    if held:
        said += (f", with {', '.join(held)} held back (the files of a change go back "
                 "together)")
    return said


def print_list(result: dict[str, Any]) -> None:
    for entry in result["passes"]:
        last = entry["last"]
        done = (f"last {last['run']} {views.when(last['started'])} {last['status']}: "
                f"{_counts(last['counts'], last['status'])}" if last else "never run")
        # a time gone by: "due" (it waits for a quiet moment or its turn), as `memory status`
        upcoming = f"next {next_run(entry['next'], time.time())}" if entry["next"] else "off"
        running = " (running)" if result.get("running") == entry["pass"] else ""
        print(f"{entry['pass']:<12} {entry['schedule']:<7} {upcoming:<22} {done}{running}")


def print_summary(result: dict[str, Any]) -> None:
    dry = " (dry run: nothing changed)" if result.get("dry_run") else ""
    print(f"{result['run']} {result['pass']} {result['status']}{dry}: {_counts(result['counts'])}")
    if result.get("error"):  # a failed run: why (a file it could not write names the file)
        print(f"error: {result['error']}", file=sys.stderr)
    for kept in result.get("kept") or []:  # an undo's change left as the user's act left it
        print(kept, file=sys.stderr)
    if result.get("with"):  # undo of one change of a group: its group went back with it
        print(f"taken back with {', '.join(result['with'])}: the files a change writes "
              "together go back together", file=sys.stderr)
    waiting = result["counts"].get("not_embedded")
    if waiting:  # left out, not "nothing to do": they have no vector yet
        nouns = ("lesson", "lessons") if result["pass"] == "promote" else ("entry", "entries")
        print(f"{waiting} {nouns[waiting != 1]} skipped: still being embedded (run it again "
              "once `memory status` shows embedding done)", file=sys.stderr)
    if result["counts"].get("preview") or result["counts"].get("proposed") or \
            result["counts"].get("open") or result["counts"].get("problems"):
        print(f"see: memory pass show {result['run']}", file=sys.stderr)
    conflicts = result["counts"].get("conflict")
    if conflicts:
        for line in _conflict_lines(result, conflicts):
            print(line, file=sys.stderr)


def _conflict_lines(result: dict[str, Any], conflicts: int) -> list[str]:
    """What a run left alone, file by file as to why: gone since, changed since by a later
    run (an undo: undo that one first), or edited since where the run's lines are."""
    changed, held = result.get("changed") or [], result.get("held") or []
    gone, later = result.get("gone") or [], result.get("later") or {}
    undo = result["pass"] == "undo"
    show = f"memory pass show {result['run']}"
    lines = []
    for path in changed:
        if path in gone:
            then = ("memoryd follows a rename once its watcher has seen it: undo again in a "
                    "moment; deleted, or moved out of the watched files: put it back as the "
                    f"run left it ({show} has its text) and undo again" if undo
                    else "the next run reads it where it is now")
            lines.append(f"{path} is gone since memoryd read it (renamed or deleted): left "
                         f"alone ({then})")
        elif undo and path in later:
            runs = later[path]
            lines.append(f"{path} was changed since by {', '.join(runs)}: left alone (undo "
                         f"{' then '.join(reversed(runs))} first, then this again)")
    edited = [path for path in changed if path not in gone and not (undo and path in later)]
    if lines and not edited:
        if held:
            lines.append(f"{', '.join(held)} held back with {'it' if len(changed) == 1 else 'them'}"
                         f" (the files a change writes together go back together); {show}")
        return lines
    one = len(edited) == 1 if edited else conflicts == 1
    then = ("its edit meets the run's lines: undo it by hand, or put the file back as that run "
            "left it and undo again" if undo else "a run after the edit tries again")
    what = ", ".join(edited) if edited else f"{conflicts} file{'' if one else 's'}"
    with_it = (f"; {', '.join(held)} held back with {'it' if one else 'them'} (the files a "
               "change writes together go back together)" if held else "")
    return lines + [f"{what} changed since memoryd read {'it' if one else 'them'}: left alone "
                    f"({then}){with_it}; {show}"]


def print_show(result: dict[str, Any]) -> None:
    if "changes" not in result:  # one change
        _print_change(result)
        return
    took = (f", {result['finished'] - result['started']:.1f} s"
            if result.get("finished") else "")
    dry = " dry run" if result.get("dry_run") else ""
    print(f"{result['run']} {result['pass']}{dry} ({result['status']}, "
          f"{views.when(result['started'])}{took}): "
          f"{_counts(result['counts'], result['status'])}")
    if result.get("error"):
        print(f"    error: {result['error']}")
    # of every page of the run (a long run's reply holds one page of its changes)
    applied = result.get("undoable",
                         sum(1 for change in result["changes"] if change["state"] == "applied"))
    if result["status"] == "interrupted" and applied:
        print(f"    stopped midway (the daemon was stopped or killed): its {applied} applied "
              f"change{' stays' if applied == 1 else 's stay'}; memory undo {result['run']} takes "
              "them back, or run it again to finish the work")
    for change in result["changes"]:
        _print_change(change)
    _print_page(result)


def changes_span(result: dict[str, Any]) -> tuple[int, int, int] | None:
    """Of `memory pass show`'s reply (the CLI's and the viewer's): where its changes start,
    end, and how many the run has; None when it holds them all (a reply holds what fits in
    one frame)."""
    total = result.get("changes_total", len(result["changes"]))
    offset = result.get("offset") or 0
    last = offset + len(result["changes"])
    return None if not offset and last >= total else (offset, last, total)


def _print_page(result: dict[str, Any]) -> None:
    """Which of the run's changes the reply held, and the next page's command, on stderr,
    when it did not hold them all."""
    span = changes_span(result)
    if span is None:
        return
    offset, last, total = span
    if not result["changes"]:
        print(f"no changes from --offset {offset}: {total} in all", file=sys.stderr)
        return
    more = (f"; next page: memory pass show {result['run']} --offset {result['next']}"
            if result.get("next") is not None else "")
    print(f"changes {offset + 1}-{last} of {total}{more}", file=sys.stderr)


def state_said(change: dict[str, Any]) -> str:
    """A change's state; of one undone, what became of it since: "undone by r4, applied
    again by r5" (an undo of its undo), and so on; of an accepted proposal, the run that
    wrote it and what became of that: "accepted by r3, undone by r4"."""
    undos = change.get("undos") or []
    since = [f"{'undone' if n % 2 == 0 else 'applied again'} by {run}"
             for n, (run, _) in enumerate(undos)]
    if change["state"] == "accepted" and change.get("accepted_by"):
        return ", ".join([f"accepted by {change['accepted_by']}", *since])
    if change["state"] != "undone" or not undos:
        return change["state"]
    return ", ".join(since)


def _print_change(change: dict[str, Any]) -> None:
    undoes = f" (undoes {change['undoes']})" if change.get("undoes") else ""
    print(f"{change['change']} {change['kind']} {change['action']} [{state_said(change)}]"
          f"{undoes}: {change['target']}")
    if change.get("why"):
        print(f"    why: {grouped_why(change['why'])}")
    before, after = change.get("before"), change.get("after")
    if change["kind"] == "file":
        import difflib

        old = (before or {}).get("text", "").splitlines()
        new = (after or {}).get("text", "").splitlines()
        # with context and hunk headers: an unchanged heading shows where lines moved to
        for line in list(difflib.unified_diff(old, new, lineterm="", n=DIFF_CONTEXT))[2:]:
            print(f"    {line}")
    elif change["kind"] == "entry":
        for name in sorted(set(before or {}) | set(after or {})):
            old_value, new_value = (before or {}).get(name), (after or {}).get(name)
            if old_value != new_value:  # what the change changed, and only that
                print(f"    {name}: {old_value!r} → {new_value!r}")
    elif after:
        for name, value in after.items():
            if name not in ("text",):
                print(f"    {name}: {value}")
        if after.get("text"):
            print(f"    text: {after['text']}")
