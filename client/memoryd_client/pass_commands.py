"""The maintenance commands of ``memory``: pass list|run|show, undo, promote accept, notebook
check. Exit codes as for every command (memoryd_client.cli); ``notebook check`` without
``--fix`` exits 1 when a notebook needs fixing, so it works as a check in scripts."""

from __future__ import annotations

import re
import sys

from memoryd_client import views

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from memoryd_client.client import Client

COMMANDS = ("pass", "undo", "promote", "notebook")
PASS_NAMES = ("notebooks", "consolidate", "promote", "staleness", "retain")


def add_parsers(add_command: Callable[..., Any], common: argparse.ArgumentParser) -> None:
    passes = add_command(
        "pass", parents=[common], help="the maintenance passes: list, run, show",
        description="memoryd keeps memory in order with scheduled passes (README: Maintenance "
        "passes). Every change a pass makes is journaled: `memory pass show` lists it, "
        "`memory undo` takes it back.")
    actions = passes.add_subparsers(dest="pass_action", metavar="ACTION", required=True)
    actions.add_parser("list", parents=[common], help="each pass: schedule, last run, next run")
    run = actions.add_parser(
        "run", parents=[common], help="run a pass now",
        description="Run a pass now. With --dry-run nothing changes: the run lists what it "
        "would do (memory pass show RUN).")
    run.add_argument("name", choices=PASS_NAMES, help="the pass: " + ", ".join(PASS_NAMES))
    run.add_argument("--agent", help="only this agent's memory")
    run.add_argument("--project", metavar="DIR", help="only this project's entries (notebooks: "
                     "the notebooks under its directory)")
    run.add_argument("--dry-run", action="store_true", help="preview: change nothing")
    run.add_argument("--full", action="store_true",
                     help="consolidate and staleness only: every entry, as a first run "
                     "(consolidate: not only those added or changed since its last run; "
                     "staleness: every project checked, every entry's references read again)")
    show = actions.add_parser("show", parents=[common],
                              help="a run's changes (before → after, and why), or one change")
    show.add_argument("id", nargs="?", help="run (r12) or change (c345); default the newest run")

    undo = add_command(
        "undo", parents=[common], help="take back a pass's run (r12) or one change (c345)",
        description="Undo restores files byte for byte and the index, as a new run that can "
        "itself be undone. A file edited since keeps the edit where it is apart from the "
        "run's lines; where they meet, the file is left alone (reported as a conflict). A "
        "change whose files were written together with others (a notebook and its archive) "
        "goes back with them.")
    undo.add_argument("id", help="run (r12) or change (c345)")

    promote = add_command("promote", parents=[common],
                          help="accept a lesson the promote pass proposed for a governance file "
                               "or for the global tier")
    promote_actions = promote.add_subparsers(dest="promote_action", metavar="ACTION",
                                             required=True)
    accept = promote_actions.add_parser(
        "accept", parents=[common],
        help="write a proposed rule into its governance file, or make a proposed lesson global")
    accept.add_argument("id", help="the proposal's change id (c345, from memory pass show)")

    notebook = add_command("notebook", parents=[common], help="check (and fix) notebooks")
    notebook_actions = notebook.add_subparsers(dest="notebook_action", metavar="ACTION",
                                               required=True)
    check = notebook_actions.add_parser(
        "check", parents=[common], help="section order, date prefixes, the line cap",
        description="Check notebooks (Mistakes / Learnings / Shareholder Feedback / Session "
        "Log) as the notebook pass does: without --fix only report (exit 1 when something "
        "needs fixing); with --fix apply it (undoable: memory undo RUN).")
    check.add_argument("path", nargs="?", help="a notebook, or a directory of them (default: "
                       "every notebook)")
    check.add_argument("--agent", help="only this agent's notebooks")
    check.add_argument("--fix", action="store_true", help="apply the fixes")


def run(args: argparse.Namespace, client: Client, emit: Callable[..., None]) -> int:
    import os

    command = args.command
    if command == "pass":
        if args.pass_action == "list":
            emit(args, client.pass_list(), _print_list)
            return 0
        if args.pass_action == "run":
            result = client.pass_run(args.name, agent=args.agent, project=args.project,
                                     dry_run=args.dry_run, full=args.full)
            emit(args, result, _print_summary)
            return 0 if result["status"] == "done" else 1
        emit(args, client.pass_show(args.id), _print_show)
        return 0
    if command == "undo":
        result = client.undo(args.id)
        emit(args, result, _print_summary)
        return 0 if result["status"] == "done" and not result["counts"].get("conflict") else 1
    if command == "promote":
        result = client.promote_accept(args.id)
        emit(args, result, _print_summary)
        return 0 if result["counts"].get("applied") else 1
    path = os.path.abspath(args.path) if args.path else None
    result = client.notebook_check(path, agent=args.agent, fix=args.fix)
    emit(args, result, _print_show)
    if args.fix:
        return 0 if not result["counts"].get("conflict") else 1
    return 1 if result["counts"].get("preview") or result["counts"].get("problems") else 0




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


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "nothing to do"


def _print_list(result: dict[str, Any]) -> None:
    for entry in result["passes"]:
        last = entry["last"]
        done = (f"last {last['run']} {views.when(last['started'])} {last['status']}: "
                f"{_counts(last['counts'])}" if last else "never run")
        upcoming = f"next {views.when(entry['next'])}" if entry["next"] else "off"
        running = " (running)" if result.get("running") == entry["pass"] else ""
        print(f"{entry['pass']:<12} {entry['schedule']:<7} {upcoming:<22} {done}{running}")


def _print_summary(result: dict[str, Any]) -> None:
    dry = " (dry run: nothing changed)" if result.get("dry_run") else ""
    print(f"{result['run']} {result['pass']} {result['status']}{dry}: {_counts(result['counts'])}")
    if result.get("error"):  # a failed run: why (a file it could not write names the file)
        print(f"error: {result['error']}", file=sys.stderr)
    if result.get("with"):  # undo of one change of a group: its group went back with it
        print(f"taken back with {', '.join(result['with'])}: the files a change writes "
              "together go back together", file=sys.stderr)
    if result["counts"].get("preview") or result["counts"].get("proposed") or \
            result["counts"].get("open") or result["counts"].get("problems"):
        print(f"see: memory pass show {result['run']}", file=sys.stderr)
    conflicts = result["counts"].get("conflict")
    if conflicts:
        one = conflicts == 1
        then = ("its edit meets the run's lines: undo it by hand, or put the file back as "
                "that run left it and undo again"
                if result["pass"] == "undo" else "a run after the edit tries again")
        print(f"{conflicts} file{'' if one else 's'} changed since memoryd read "
              f"{'it' if one else 'them'}: left alone ({then}); memory pass show "
              f"{result['run']}", file=sys.stderr)


def _print_show(result: dict[str, Any]) -> None:
    if "changes" not in result:  # one change
        _print_change(result)
        return
    took = (f", {result['finished'] - result['started']:.1f} s"
            if result.get("finished") else "")
    dry = " dry run" if result.get("dry_run") else ""
    print(f"{result['run']} {result['pass']}{dry} ({result['status']}, "
          f"{views.when(result['started'])}{took}): {_counts(result['counts'])}")
    if result.get("error"):
        print(f"    error: {result['error']}")
    for change in result["changes"]:
        _print_change(change)


def _print_change(change: dict[str, Any]) -> None:
    undoes = f" (undoes {change['undoes']})" if change.get("undoes") else ""
    print(f"{change['change']} {change['kind']} {change['action']} [{change['state']}]"
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
            print(f"    {name}: {(before or {}).get(name)!r} → {(after or {}).get(name)!r}")
    elif after:
        for name, value in after.items():
            if name not in ("text",):
                print(f"    {name}: {value}")
        if after.get("text"):
            print(f"    text: {after['text']}")
