"""The commands about agents' sessions: extract lessons from one, import the sessions before
memoryd, the memory block a session gets (context) and what it got (explain), the registry
(session list, session show)."""

from __future__ import annotations

import os

from memoryd_client import views
from memoryd_client.command_spec import Arg, Command, later, plain
from memoryd_client.commands.args import TIME

SESSION_LIST = Command(
    help="the session registry: id, agent, last seen, user messages, project",
    args=(Arg("--agent", help="only this agent's sessions"),
          Arg("--project", metavar="DIR", help="only sessions in DIR's project (the git "
              "repository DIR is in; DIR may be relative)"),
          Arg("--limit", kind="int", default=50, metavar="N",
              help="sessions per page (default: %(default)s)"),
          Arg("--offset", kind="int", default=0, metavar="N",
              help="skip the N newest sessions (the next page; default: 0)")),
    description="The newest sessions first. Each line: id, agent, last seen, user messages, "
    "project; how many there are, and the option for the next page, go to stderr.",
    request=lambda a, c: c.sessions(agent=a.agent, project=a.project, limit=a.limit,
                                    offset=a.offset or None),
    show=views.print_sessions,
    examples=("memory session list --agent codex --limit 10",
              "memory session list --offset 50"), exits="0 done")

COMMANDS: dict[str, Command] = {
    "extract": Command(
        help="extract lessons and facts from a finished session", progress=True,
        description="Without --dry-run, stores what is accepted. The report maps each user "
        "message to the entries taken from it and says why each was accepted or rejected.",
        args=(Arg("session", help="session id, or its first 4+ characters (memory session "
                  "list)"),
              Arg("--dry-run", kind="flag", help="report only, store nothing")),
        request=lambda a, c: c.extract(a.session, dry_run=a.dry_run), show=views.show_extract,
        examples=("memory extract 5f2c1d --dry-run",), exits="0 done; 1 failed"),
    "import-history": Command(
        help="index the session histories already on disk, and extract from past sessions",
        description="Indexes the transcripts every harness memoryd watches has kept (Claude "
        "Code, Codex, generic JSONL and any transcript source configured), then runs session "
        "end's extraction over their finished sessions not extracted yet. It runs in the "
        "daemon's background, giving way to searches and writes; a terminal shows how far it "
        "is and the time left. Stopped (Ctrl-C leaves it running; memoryd stopping or killed "
        "stops it), it goes on where it was when memoryd starts again, and running it again "
        "indexes and extracts nothing twice. `memory status` shows it while it runs.",
        args=(Arg("harnesses", metavar="HARNESS", many=True, default=[],
                  help="a harness (claude-code, codex, generic, …: a transcript source's format), "
                  "a source's name or its agent (pi); default: every one"),
              Arg("--since", metavar="T", help="only files and sessions active since T: " + TIME),
              Arg("--dry-run", kind="flag", help="write nothing: list the files it would index "
                  "and the entries extraction would keep, session by session"),
              Arg("--detach", kind="flag", help="return once started (memory status follows it)")),
        progress=True,
        request=lambda a, c: c.import_history(a.harnesses, since=a.since, dry_run=a.dry_run,
                                              detach=a.detach),
        show=later("history_view", "show"),
        examples=("memory import-history", "memory import-history claude-code --since 30d",
                  "memory import-history --dry-run"),
        exits="0 done (or started, with --detach); 1 failed, or another import running",
        usage_exit="usage error (an unknown harness, a bad time)",
        unreachable_exit="daemon unreachable (running it again goes on where it stopped)"),
    "context": Command(
        help="print the memory block an agent would get at session start",
        args=(Arg("--agent", required=True, help="the agent whose block it is"),
              Arg("--cwd", help="working directory (default: this one)"),
              Arg("--prompt", help="show what the prompt hook would inject for this prompt"),
              Arg("--budget", kind="int", help="characters (default: 8000; with --prompt 2000)")),
        request=lambda a, c: c.context(a.agent, cwd=a.cwd or os.getcwd(), prompt=a.prompt,
                                       budget=a.budget),
        show=views.show_context,
        examples=("memory context --agent claude-code --cwd ~/src/shop",
                  "memory context --agent claude-code --prompt 'write a test for refunds'"),
        exits="0 done (nothing to inject: stdout stays empty and stderr says `(nothing for "
        "AGENT in DIR)`)"),
    "explain": Command(
        help="what was injected into a session, and why",
        description="What memoryd put into a session's context (the block at its start, the "
        "entries a prompt brought): each item's text as injected and why it was there, in "
        "words; --json keeps the search evidence.",
        args=(Arg("session", optional=True,
                  help="session id, or its first 4+ characters (default: the latest "
                  "injection)"),),
        request=lambda a, c: c.explain(a.session), show=plain(views.print_injections),
        examples=("memory explain", "memory explain 5f2c1d --json"),
        exits="0 done; 1 no such session"),
    "session": Command(
        help="agent sessions: list (the default), show ID",
        examples=("memory session --agent claude-code", "memory session show 5f2c1d"),
        exits="0 done; 1 no such session", default_action="list", actions={
            "list": SESSION_LIST,
            "show": Command(
                help="one session: times, counts, entries from it, injections",
                args=(Arg("id", help="session id, or its first 4+ characters (memory session "
                          "list)"),),
                request=lambda a, c: c.session(a.id), show=plain(views.print_session),
                examples=("memory session show 5f2c1d",), exits="0 done; 1 no such session")}),
    "sessions": SESSION_LIST.but(
        help="list recorded agent sessions (the same as memory session list)",
        examples=("memory sessions --agent claude-code",)),
}
