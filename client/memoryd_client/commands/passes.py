"""The commands of the maintenance passes: list, run and show them (pass), take a run or a change
back (undo), accept a promotion (promote), check the notebooks (notebook)."""

from __future__ import annotations

import os

from memoryd_client.command_spec import FAILED, OK, Arg, Command, later, plain

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Args

PASS_NAMES = ("notebooks", "consolidate", "promote", "staleness", "retain")
RUN_OR_CHANGE = Arg("id", help="run (r12) or change (c345)")
PASS_SUMMARY = plain(later("pass_view", "print_summary"))
PASS_SHOW = plain(later("pass_view", "print_show"))


def _notebook_check(args: Args, client: Client) -> Any:
    path = os.path.abspath(args.path) if args.path else None
    return client.notebook_check(path, agent=args.agent, fix=args.fix)


def _notebook_exit(result: Any, args: Args) -> int:
    counts = result["counts"]
    if args.fix:
        return FAILED if counts.get("conflict") else OK
    return FAILED if counts.get("preview") or counts.get("problems") else OK


COMMANDS: dict[str, Command] = {
    "pass": Command(
        help="the maintenance passes: list (the default), run, show", progress=True,
        description="memoryd keeps memory in order with scheduled passes (README: Maintenance "
        "passes). Every change a pass makes is recorded: `memory pass show` lists it, "
        "`memory undo` takes it back.",
        examples=("memory pass", "memory pass run consolidate --dry-run",
                  "memory pass show"),
        exits="0 done; 1 failed", default_action="list", actions={
            "list": Command(
                help="each pass: schedule, last run, next run", request=lambda a, c:
                c.pass_list(), show=plain(later("pass_view", "print_list")),
                examples=("memory pass list",), exits="0 done"),
            "run": Command(
                help="run a pass now",
                description="Run a pass now. With --dry-run nothing changes: the run lists "
                "what it would do (memory pass show RUN).",
                args=(Arg("name", kind=PASS_NAMES, help="the pass: " + ", ".join(PASS_NAMES)),
                      Arg("--agent", help="only this agent's memory"),
                      Arg("--project", metavar="DIR", help="only this project's entries "
                          "(notebooks: the notebooks under its directory)"),
                      Arg("--dry-run", kind="flag", help="preview: change nothing"),
                      Arg("--full", kind="flag",
                          help="consolidate and staleness only: every entry, as a first run "
                          "(consolidate: not only those added or changed since its last run; "
                          "staleness: every project checked, every entry's references read "
                          "again)")),
                request=lambda a, c: c.pass_run(a.name, agent=a.agent, project=a.project,
                                                dry_run=a.dry_run, full=a.full),
                show=PASS_SUMMARY, exit=lambda r, a: OK if r["status"] == "done" else FAILED,
                examples=("memory pass run consolidate --dry-run",), exits="0 done; 1 failed"),
            "show": Command(
                help="a run's changes (before → after, and why), or one change",
                description="A run's changes, a page at a time when they are many or big "
                "(a page is what fits in one reply): the next page's command goes to "
                "stderr.",
                args=(Arg("id", optional=True,
                          help="run (r12) or change (c345); default the newest run"),
                      Arg("--offset", kind="int", default=0, metavar="N",
                          help="skip the run's first N changes (the next page; default: 0)")),
                request=lambda a, c: c.pass_show(a.id, offset=a.offset or None),
                show=PASS_SHOW,
                examples=("memory pass show r12", "memory pass show r12 --offset 180",
                          "memory pass show c345"),
                exits="0 done; 1 not found")}),
    "undo": Command(
        help="take back a pass's run (r12) or one change (c345)", progress=True,
        description="Undo restores files byte for byte and the index, as a new run that can "
        "itself be undone. A file edited since keeps the edit where it is apart from the run's "
        "lines; where they meet, the file is left alone (reported as a conflict). A change "
        "whose files were written together with others (a notebook and its archive) goes back "
        "with them.",
        args=(RUN_OR_CHANGE,), request=lambda a, c: c.undo(a.id), show=PASS_SUMMARY,
        exit=lambda r, a: OK if r["status"] == "done" and not r["counts"].get("conflict")
        else FAILED,
        examples=("memory undo r12", "memory undo c345"),
        exits="0 undone; 1 a file changed since (conflict: left alone), nothing to undo (no "
        "applied change) or not found"),
    "promote": Command(
        help="accept a lesson the promote pass proposed for a governance file or for the global "
        "tier", progress=True,
        examples=("memory promote accept c345",), exits="0 written; 1 not applied", actions={
            "accept": Command(
                help="write a proposed rule into its governance file, or make a proposed lesson "
                "global",
                args=(Arg("id", help="the proposal's change id (c345, from memory pass show)"),),
                request=lambda a, c: c.promote_accept(a.id), show=PASS_SUMMARY,
                exit=lambda r, a: OK if r["counts"].get("applied") else FAILED,
                examples=("memory promote accept c345",), exits="0 written; 1 not applied")}),
    "notebook": Command(
        help="check (the default; --fix fixes) notebooks", progress=True,
        examples=("memory notebook", "memory notebook check ~/notes/me.md --fix"),
        exits="0 nothing to fix / fixed; 1 something to fix", default_action="check", actions={
            "check": Command(
                help="section order, date prefixes, the line cap",
                description="Check notebooks (Mistakes / Learnings / Shareholder Feedback / "
                "Session Log) as the notebook pass does: without --fix only report (exit 1 "
                "when something needs fixing); with --fix apply it (undoable: memory undo RUN).",
                args=(Arg("path", optional=True, help="a notebook, or a directory of them "
                          "(default: every notebook)"),
                      Arg("--agent", help="only this agent's notebooks"),
                      Arg("--fix", kind="flag", help="apply the fixes")),
                request=_notebook_check, show=PASS_SHOW, exit=_notebook_exit,
                examples=("memory notebook check --agent designer",
                          "memory notebook check ~/.claude/agent-memory/designer --fix"),
                exits="0 nothing to fix / fixed; 1 something to fix")}),
}
