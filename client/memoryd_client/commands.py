"""Every command of `memory`, in one table: name → its arguments, the client call it makes, how
the reply is printed and what it exits with (the terms are :mod:`memoryd_client.command_spec`'s).
The argparse parser, the fast parser and the MCP tools are generated from it.

Imported on every run of `memory` but not by the hooks. The long commands' functions (passes,
lists, doctor, purge) are named with :func:`later`: a run imports only its own command's.
"""

from __future__ import annotations

import os
import sys

from memoryd_client import views
from memoryd_client.command_spec import FAILED, OK, SOCKET, TIMEOUT, Arg, Command, later, plain
from memoryd_client.errors import UsageError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Args, Request, Show

KINDS = ("fact", "lesson", "feedback", "note", "turn", "summary")
PASS_NAMES = ("notebooks", "consolidate", "promote", "staleness", "retain")
SHELLS = ("bash", "zsh", "fish")
ENTRY_ID = Arg("id", help="entry id or a unique prefix of it")
ACT_AS = Arg("--agent", help="act as this agent (must own the entry; default: the entry's own "
             "agent)")
RUN_OR_CHANGE = Arg("id", help="run (r12) or change (c345)")
TIME = "epoch seconds, ISO date, or an age like 7d"
#: The filters of search, list, recent and export.
TAGS = Arg("--tags", help="comma-separated tags; all must be present")
PROJECT = Arg("--project", metavar="DIR", help="only entries of DIR's project (the git repository "
              "DIR is in, or DIR outside git; DIR may be relative)")
HERE = Arg("--here", kind="flag", help="this repository's entries and the global ones (the "
           "entries its agents' blocks show); outside a git repository an error (exit 2)")
SINCE = Arg("--since", metavar="T", help=TIME)
UNTIL = Arg("--until", metavar="T", help=TIME)
LIST_FILTERS = (
    Arg("--category", help="only this category"),
    Arg("--kind", help="comma-separated kinds (fact, lesson, feedback, note, turn, summary)"),
    TAGS, PROJECT, HERE, SINCE, UNTIL,
    Arg("--status", default="active",
        help="active (default), superseded, forgotten, archived, or any"))


def _cwd_of(args: Args) -> str | None:
    """--here: this directory (its repository's entries and the global ones)."""
    from memoryd_client.project import here_directory

    return here_directory() if args.here else None


def _add_source(args: Args, client: Client) -> Any:
    if args.project and args.notebook_lines is not None:
        raise UsageError("memory sources add: --notebook-lines is a glob source's (NAME PATH), "
                         "not a project's")
    if args.project:
        return client.sources("add", project_root=args.project)
    if args.name and args.path and args.kind:
        fmt = args.format or ("markdown" if args.kind == "memory" else "generic")
        return client.sources("add", name=args.name, path=args.path, kind=args.kind, format=fmt,
                              agent=args.agent, notebook_lines=args.notebook_lines)
    if args.name and not args.path:  # a built-in that `sources remove` disabled
        return client.sources("add", name=args.name, kind=args.kind, format=args.format,
                              agent=args.agent, notebook_lines=args.notebook_lines)
    raise UsageError("memory sources add: give NAME PATH --kind KIND, NAME of a disabled "
                     "built-in, or --project DIR")


def _text(args: Args) -> str:
    return args.text if args.text is not None else sys.stdin.read()


def _store(args: Args, client: Client) -> Any:
    return client.remember(
        args.agent, args.category, args.text, kind=args.kind, key=args.key,
        confidence=args.confidence, force=args.force, polarity=args.polarity,
        tags=[t for t in (args.tags or "").split(",") if t.strip()] or None,
        is_global=args.is_global)  # else the project of this directory (the client's cwd)


def _search(args: Args, client: Client) -> Any:
    return client.search(
        args.query, limit=args.limit, category=None if args.category == "-" else args.category,
        kind=args.kind, tags=args.tags, since=args.since, until=args.until, status=args.status,
        min_score=args.min_score, project=args.project, cwd=_cwd_of(args),
        agents=[a for a in args.agent.split(",") if a])


def _history(args: Args, client: Client) -> Any:
    if not args.id and not (args.agent and args.key):
        raise UsageError("memory history: give an ID, or --agent and --key")
    return client.history(args.id, agent=args.agent, key=args.key)


def _scope(args: Args, client: Client) -> Any:
    """`memory scope ID global|project [DIR]`: DIR (default here) with project only."""
    if args.scope == "global" and args.dir is not None:
        raise UsageError("memory scope: DIR goes with `project` only (memory scope ID global)")
    directory = (args.dir or os.getcwd()) if args.scope == "project" else None
    return client.scope(args.id, args.scope, directory, agent=args.agent)


def _purge(args: Args, client: Client) -> Any:
    if not args.since and not args.match:
        raise UsageError("memory purge: give --since T, --match TEXT, or both")
    return client.purge(args.agent, since=args.since, match=args.match, confirm=args.yes)


def _sync(args: Args, client: Client) -> Any:
    if args.action is None:
        if args.first is not None:
            raise UsageError(f"memory sync: unknown action {args.first!r} (init, add-shared)")
        return client.sync()
    if args.action == "init":
        if args.first is None or args.second is not None:
            raise UsageError("memory sync init: give the remote (memory sync init REMOTE)")
        return client.sync_init(args.first)
    if args.first is None or args.second is None:
        raise UsageError("memory sync add-shared: give a name and the team's remote "
                         "(memory sync add-shared NAME REMOTE)")
    return client.sync_add_shared(args.first, args.second)


def _notebook_check(args: Args, client: Client) -> Any:
    path = os.path.abspath(args.path) if args.path else None
    return client.notebook_check(path, agent=args.agent, fix=args.fix)


def _notebook_exit(result: Any, args: Args) -> int:
    counts = result["counts"]
    if args.fix:
        return FAILED if counts.get("conflict") else OK
    return FAILED if counts.get("preview") or counts.get("problems") else OK


def _give_hook_first(args: Args) -> int:
    raise UsageError("memory hook: give `hook` first (memory hook --help)")


def _file(help: str, args: tuple[Arg, ...], show: Show, request: Request, exits: str,
          example: str) -> Command:
    """An action of `memory file`: the memory tools on an agent's memory directory."""
    return Command(help=help, args=(Arg("--agent", required=True, help="whose memory directory"),
                                    *args), request=request, show=show,
                   examples=(example,), exits=exits)


FILE_PATH = Arg("path", help="relative to the agent's memory directory")
FILE_TEXT = Arg("--text", help="default: read standard input")
SESSION_LIST = Command(
    help="the session registry: id, agent, last seen, user messages, project",
    args=(Arg("--agent", help="only this agent's sessions"),
          Arg("--project", metavar="DIR", help="only sessions in DIR's project (the git "
              "repository DIR is in; DIR may be relative)"),
          Arg("--limit", kind="int", default=50, metavar="N",
              help="at most N sessions (default: %(default)s)")),
    request=lambda a, c: c.sessions(agent=a.agent, project=a.project, limit=a.limit),
    show=plain(views.print_sessions),
    examples=("memory session list --agent codex --limit 10",), exits="0 done")
LISTING = (
    Arg("agent", optional=True, default="*", help="an agent, a comma-separated list, or '*' for "
        "every agent (default: every agent)"),
    *LIST_FILTERS,
    Arg("--limit", kind="int", default=20, metavar="N",
        help="entries per page, 1 to 1000 (default: %(default)s)"),
    Arg("--offset", kind="int", default=0, metavar="N",
        help="skip the first N entries (the next page; default: 0)"),
    Arg("--oldest", kind="flag", help="oldest first"))
LIST_LINES = (" Each line: when it was written, id, agent/category, kind, text; the count and the "
              "option for the next page go to stderr.")
LIST_PAGE = later("list_commands", "list_page")
PRINT_PAGE = later("list_commands", "print_page")
PASS_SUMMARY = plain(later("pass_view", "print_summary"))
PASS_SHOW = plain(later("pass_view", "print_show"))
EXAMINE = later("doctor", "examine")
WATCH = later("status_watch", "watch")

COMMANDS: dict[str, Command] = {
    "status": Command(
        help="show the daemon's state (--watch: live, until Ctrl-C)",
        description="The daemon's state: a health line, then the details. With --watch, "
        "again every --interval seconds until Ctrl-C: on a terminal a view drawn over in "
        "place (indexing and embedding with the time left, the queue, the passes, the last "
        "errors); into a pipe one plain line a snapshot; under --json one JSON document a "
        "line. A daemon that stops answering does not end a watch: it says since when, and "
        "asks again until the daemon answers.",
        args=(Arg("--sources", kind="flag",
                  help="also each watched source: files, errors, skipped lines"),
              Arg("--watch", kind="flag", help="show it again every --interval seconds, "
                  "until Ctrl-C"),
              Arg("--interval", kind="float", default=2.0, metavar="S",
                  help="with --watch: seconds between two looks (default: 2)")),
        request=lambda a, c: c.status(sources=a.sources), show=views.show_status, watch=WATCH,
        examples=("memory status", "memory status --sources --json", "memory status --watch",
                  "memory status --watch --interval 10 >> memoryd-status.log"),
        exits="0 the daemon answered (--watch: ended with Ctrl-C); 3 daemon unreachable "
        "(not with --watch: it waits)"),
    "sources": Command(
        help="list, add or remove watched sources", progress=True,
        examples=("memory sources list",), exits="0 done", actions={
            "list": Command(
                help="every source and its state", request=lambda a, c: c.sources("list"),
                show=plain(views.print_sources), examples=("memory sources list --json",),
                exits="0 done"),
            "add": Command(
                help="watch a new glob, or a project root with --project",
                description="Add a source: a glob with an optional {agent} placeholder (or "
                "--agent), or a project root (--project). Saved in sources.toml beside "
                "config.toml; applied at once.",
                args=(Arg("name", optional=True, help="the source's name (not with --project)"),
                      Arg("path", optional=True,
                          help="glob (quote it; ~ and {agent} allowed)"),
                      Arg("--kind", kind=("memory", "transcript"), help="what the files are"),
                      Arg("--format", kind=("markdown", "claude-code", "codex", "gemini",
                                            "aider", "generic"),
                          help="default: markdown for memory, generic for transcripts"),
                      Arg("--agent", help="the agent, when the glob has no {agent}"),
                      Arg("--notebook-lines", kind="int", metavar="N",
                          help="the notebook pass holds this source's notebooks to N lines "
                          "(default: passes.notebook_lines, 80)"),
                      Arg("--project", metavar="DIR",
                          help="index CLAUDE.md, AGENTS.md, … in this project")),
                request=_add_source, show=plain(views.print_sources),
                examples=("memory sources add notes '~/notes/{agent}/**/*.md' --kind memory",
                          "memory sources add --project ~/src/shop"), exits="0 added"),
            "remove": Command(
                help="remove an added source, disable a built-in, or drop a project root",
                args=(Arg("name", help="source name, or a project root directory"),),
                request=lambda a, c: c.sources("remove", name=a.name),
                show=plain(views.print_sources), examples=("memory sources remove notes",),
                exits="0 removed")}),
    "reload": Command(
        help="re-read the configuration (as SIGHUP does)", progress=True,
        request=lambda a, c: c.reload(), show=plain(views.print_reloaded),
        examples=("memory reload",),
        exits="0 reloaded (a bad configuration is refused: exit 2)"),
    "hook": Command(
        help="agent lifecycle hooks: memory hook claude-code|codex|gemini|cursor|opencode EVENT, "
        "memory hook install|uninstall claude-code|codex|gemini|cursor|opencode (see memory "
        "hook --help)",
        globals=(), alone=_give_hook_first),
    "file": Command(
        help="the memory tools: list, read, write, replace, insert files in an agent's memory "
        "directory",
        description="The memory tools on an agent's memory directory (tools.memory_dir). Writes "
        "are atomic and journaled; paths leaving the directory are refused.",
        refusal_exit=FAILED, examples=("memory file list --agent designer",),
        exits="0 done; 1 refused", actions={
            "list": _file(
                "the agent's memory files", (), plain(views.print_files),
                lambda a, c: c.file("list", a.agent), "0 done; 1 refused",
                "memory file list --agent designer"),
            "read": _file(
                "print a file", (FILE_PATH,), plain(views.print_file_text),
                lambda a, c: c.file("read", a.agent, a.path),
                "0 done; 1 refused (no such file, a path outside the directory)",
                "memory file read --agent designer notes.md"),
            "write": _file(
                "write a whole file (text from --text or stdin)",
                (FILE_PATH, FILE_TEXT), views.show_file_written,
                lambda a, c: c.file("write", a.agent, a.path, text=_text(a)),
                "0 written; 1 refused (a path outside the directory, too long)",
                "echo '# Notes' | memory file write --agent designer notes.md"),
            "replace": _file(
                "replace the one match of --old with --new",
                (FILE_PATH,
                 Arg("--old", required=True, help="text that must occur exactly once"),
                 Arg("--new", required=True, help="its replacement")),
                views.show_file_written,
                lambda a, c: c.file("replace", a.agent, a.path, old=a.old, new=a.new),
                "0 replaced; 1 refused (the old text matched 0 or 2+ times, no such file, a "
                "path outside the directory)",
                "memory file replace --agent designer notes.md --old 'tabs' --new 'spaces'"),
            "insert": _file(
                "insert --text before --line (0: at the top)",
                (FILE_PATH, FILE_TEXT,
                 Arg("--line", kind="int", required=True, help="0 inserts at the top")),
                views.show_file_written,
                lambda a, c: c.file("insert", a.agent, a.path, text=_text(a), line=a.line),
                "0 inserted; 1 refused (line out of range, no such file)",
                "memory file insert --agent designer notes.md --line 0 --text '- new'")}),
    "extract": Command(
        help="extract lessons and facts from a finished session", progress=True,
        description="Without --dry-run, stores what is accepted. The report maps each user "
        "message to the entries taken from it and says why each was accepted or rejected.",
        args=(Arg("session", help="session id (memory session list)"),
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
                  help="a harness (claude-code, codex, generic, …: a transcript source's format) "
                  "or a source's name; default: every one"),
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
        exits="0 done (or started, with --detach); 1 failed, or another import running; 2 "
        "an unknown harness or a bad time; after a 3 running it again goes on where it "
        "stopped"),
    "mcp": Command(
        help="run the MCP stdio server with the memory tools (needs the MCP SDK: pip install "
        "'mcp==2.3.0')",
        description="An MCP server on stdin/stdout; register it with your agent (example "
        "below).",
        args=(Arg("--agent", required=True, help="whose memory the tools read and write"),
              SOCKET),
        globals=(), alone=later("mcp_server", "run_command"),
        examples=(('claude mcp add --scope user memoryd -- "$PWD/.venv/bin/memory" mcp --agent '
                   'claude-code'),
                  "memory mcp --agent codex --socket /run/user/1000/memoryd/memoryd.sock"),
        exits="0 the client closed the server"),
    "ui": Command(
        help="look at memory in the browser: search, entries, timeline, sessions, passes, "
        "health",
        description="A viewer served by this process on 127.0.0.1 (a free port), at an address "
        "holding a random token; it asks the daemon over its socket, as every client does, and "
        "loads nothing from the network. Prints the address and opens the browser. Undo, "
        "forget, release and promote accept ask for a confirmation and go through the daemon "
        "as `memory` does from this terminal. Ctrl-C stops it (docs/viewer.md).",
        args=(Arg("--no-open", kind="flag", help="print the address only; open no browser"),
              Arg("--port", kind="int", default=0, metavar="N",
                  help="listen on port N of 127.0.0.1 (default: a free one)"),
              SOCKET, TIMEOUT),
        globals=(), alone=later("ui.server", "run_command"),
        examples=("memory ui", "memory ui --no-open --port 8765"),
        exits="0 stopped (Ctrl-C); 2 the port cannot be used"),
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
        args=(Arg("session", optional=True,
                  help="session id (default: the latest injection)"),),
        request=lambda a, c: c.explain(a.session), show=plain(views.print_injections),
        examples=("memory explain", "memory explain 5f2c1d --json"),
        exits="0 done; 1 no such session. Each item shows its text as injected and why it was "
        "there, in words; --json keeps the search evidence"),
    "session": Command(
        help="agent sessions: list, show ID",
        examples=("memory session list --agent claude-code", "memory session show 5f2c1d"),
        exits="0 done; 1 no such session", actions={
            "list": SESSION_LIST,
            "show": Command(
                help="one session: times, counts, entries from it, injections",
                args=(Arg("id", help="session id (memory session list)"),),
                request=lambda a, c: c.session(a.id), show=plain(views.print_session),
                examples=("memory session show 5f2c1d",), exits="0 done; 1 no such session")}),
    "sessions": SESSION_LIST.but(
        help="list recorded agent sessions (the same as memory session list)",
        examples=("memory sessions --agent claude-code",)),
    "store": Command(
        help="remember TEXT in AGENT's CATEGORY",
        description="Store an entry. A duplicate (the same text in the agent's category, or a "
        "near duplicate without --force) is not stored: the existing entry is printed.",
        args=(Arg("agent", help="the agent (namespace) it belongs to, e.g. designer"),
              Arg("category", help="its category, e.g. rejected-designs"),
              Arg("text", help="what to remember (quote it)"),
              Arg("--tags", help="comma-separated tags"),
              Arg("--key", help="dotted key (e.g. pref.commit_style); makes a fact"),
              Arg("--kind", kind=KINDS, help="default: fact with --key, note without; feedback "
                  "(the user's own words) only when typed at a terminal"),
              Arg("--confidence", kind="float", help="0..1 (default: 0.95)"),
              Arg("--polarity", kind=("negative", "positive"),
                  help="for lessons: a \"don't\" (negative) or a \"do\" (positive)"),
              Arg("--force", kind="flag", help="store even if a near duplicate exists"),
              Arg("--global", kind="flag", dest="is_global",
                  help="not tied to the project of the current directory")),
        request=_store, show=plain(views.print_stored),
        exit=lambda r, a: OK if r["stored"] else FAILED,
        examples=(("memory store designer rejected-designs 'floating speech bubble' --tags "
                   "sticker"),
                  ("memory store coder prefs 'Commits in the imperative' --key "
                   "pref.commit_style")),
        exits="0 stored; 1 not stored: a duplicate (the existing entry is printed), or feedback "
        "not typed at a terminal"),
    "search": Command(
        help="search AGENT's memory",
        description="Hybrid keyword + vector search. A hit is a match when its probability of "
        "being relevant reaches the threshold for search.match_precision (or --min-score). "
        "Prints the matches, one per line, under a header on stderr:\n"
        "  * 0.96    2d  ID  agent/category kind: text\n"
        "(* = a match; 0.96 = probability that it is relevant; 2d = its age). Nothing "
        "matched: `no match (best: …)` on stderr.",
        args=(Arg("agent", help="an agent, a comma-separated list, or '*' for every agent"),
              Arg("category", help="a category, or - for any"),
              Arg("query", help="the question, in words (quote it)"),
              Arg("--limit", kind="int", default=10, metavar="N",
                  help="at most N hits (default: %(default)s)"),
              Arg("--kind", help="comma-separated kinds"),
              TAGS, PROJECT, HERE, SINCE, UNTIL,
              Arg("--status", help="active (default), superseded, forgotten, archived, or any"),
              Arg("--min-score", kind="float", metavar="P",
                  help="a match needs at least this probability of relevance (0..1; default: "
                  "the one giving search.match_precision)"),
              Arg("--all", kind="flag",
                  help="list ranked hits that are not matches too (exit code unchanged)")),
        request=_search, show=lambda r, a: views.print_hits(r, show_all=a.all),
        exit=lambda r, a: OK if any(hit["match"] for hit in r["hits"]) else FAILED,
        examples=("memory search designer - 'speech bubble on a cat sticker'",
                  "memory search 'claude-code,codex' testing 'which test runner' --all",
                  "memory search '*' - 'staging database' --since 30d --json"),
        exits="0 something matched; 1 nothing did"),
    "get": Command(
        help="show one entry",
        args=(Arg("id", help="entry id or a unique prefix of it (4+ characters)"),),
        request=lambda a, c: c.get(a.id), show=plain(views.print_entry),
        examples=("memory get 1a20b902eb96",), exits="0 found; 1 not found"),
    "forget": Command(
        help="forget an entry (soft: journaled, kept in history; the command prints the "
        "`memory undo RUN` that takes it back)",
        args=(ENTRY_ID, ACT_AS, Arg("--reason", help="why (kept in the journal)")),
        request=lambda a, c: c.forget(a.id, agent=a.agent, reason=a.reason),
        show=plain(views.print_forgotten),
        examples=("memory forget 1a20b902eb96 --reason 'no longer true'",),
        exits="0 forgotten; 1 not found or not the agent's"),
    "supersede": Command(
        help="replace an entry's text; the old one is kept as superseded",
        args=(ENTRY_ID, Arg("text", help="the new text (quote it)"), ACT_AS),
        request=lambda a, c: c.supersede(a.id, a.text, agent=a.agent),
        show=plain(views.print_superseded),
        examples=("memory supersede 1a20b902eb96 'We lint and format with ruff'",),
        exits="0 stored; 1 not found or not the agent's"),
    "scope": Command(
        help="move an entry to the global tier or to a project",
        description="A global entry reaches every project (the memory block, the prompt hook, "
        "the lessons shown before a tool call); a project's entry reaches that project only. "
        "The move is journaled as a run of its own, which `memory undo RUN` takes back. An "
        "entry of a watched file (a memory file's line, a transcript turn) belongs where its "
        "file is: scope refuses it, and says why.",
        args=(ENTRY_ID, Arg("scope", kind=("global", "project"),
                            help="global: every project; project: the project of DIR"),
              Arg("dir", optional=True, metavar="DIR",
                  help="with project: a directory in the repository (default: here)"),
              ACT_AS),
        request=_scope, show=plain(views.print_scope),
        examples=("memory scope 1a20b902eb96 global",
                  "memory scope 1a20b902eb96 project ~/src/shop",
                  "memory undo r12"),
        exits="0 moved (or already there); 1 refused (an entry of a watched file, not active, "
        "the same memory or another value of its key already there, not the agent's, not "
        "found); 2 also DIR in no git repository"),
    "history": Command(
        help="an entry's versions and journal (by id, or agent + key)",
        args=(Arg("id", optional=True, help="entry id or prefix (or give --agent and --key)"),
              Arg("--agent", help="with --key: the agent whose key it is"),
              Arg("--key", help="with --agent: every version of this dotted key")),
        request=_history, show=plain(views.print_history),
        examples=("memory history 1a20b902eb96",
                  "memory history --agent coder --key pref.commit_style"),
        exits="0 found; 1 not found"),
    "list": Command(
        help="an agent's entries without a query, newest first",
        description="Entries of AGENT (every agent by default) without a query, newest first, "
        "with the filters of search." + LIST_LINES,
        args=(*LISTING, Arg(
            "--usage", kind=("broken", "followed", "unused", "all"), optional=True, const="all",
            metavar="VIEW",
            help="rank entries by what became of them in sessions (docs/outcomes.md): broken "
            "(most broken first), followed (most followed first), unused (injected, never "
            "followed nor broken), or all three (the default); each line: the count, the "
            "sessions it was injected into, the entry; with AGENT, --kind (lesson, fact, note, "
            "feedback) and --limit (per view, default 10)")),
        request=later("list_commands", "list_or_usage"),
        show=later("list_commands", "print_list_or_usage"),
        examples=("memory list designer", "memory list '*' --kind lesson --since 7d --limit 50",
                  "memory list claude-code --offset 20", "memory list --usage broken"),
        exits="0 listed (also when nothing is)"),
    "recent": Command(
        help="entries written in the last days, newest first",
        description="What was written lately: entries of every agent (or AGENT), newest first, "
        "by default of the last 7 days." + LIST_LINES,
        args=tuple(arg.but(default="7d", help=f"{TIME} (default: 7d)") if arg is SINCE else arg
                   for arg in LISTING),
        request=LIST_PAGE, show=PRINT_PAGE,
        examples=("memory recent", "memory recent claude-code --since 1d"),
        exits="0 listed (also when nothing is)"),
    "export": Command(
        help="write entries as JSONL (with their provenance), to stdout or a file",
        description="One JSON object per line, oldest first: id, agent, project, kind, "
        "category, key, text, confidence, tags, status, created, updated and provenance "
        "(writer, via, session, source file and lines, message id). `memory import` reads it "
        "back.",
        args=(Arg("--agent",
                  help="an agent or a comma-separated list (default: every agent)"),
              *LIST_FILTERS,
              Arg("-o", "--output", metavar="FILE", help="write here (default: stdout)")),
        run=later("list_commands", "export"),
        examples=("memory export > memory.jsonl",
                  "memory export --agent designer --since 30d -o designer.jsonl"),
        exits="0 exported"),
    "import": Command(
        help="store the entries of a JSONL export through the daemon's write path",
        description="Each line a JSON object with agent, category and text (an export's "
        "lines); stored as the agent's entries with their date (created), kind, key, tags, "
        "confidence, project and polarity, in batches, through the write path: exact "
        "duplicates are not stored again (importing twice changes nothing), near duplicates "
        "are kept (they were kept where they came from), and every entry goes to the agent's "
        "ledger and journal (via: import). Entries that are not active, and entries indexed "
        "from watched files (watch their files instead), are skipped and counted. A terminal "
        "shows how far it is; the command waits as long as the daemon reports progress, and "
        "if the daemon stops answering (exit 3), running it again is safe.",
        args=(Arg("file", metavar="FILE", help="a JSONL file, or - for standard input"),),
        progress=True, request=later("list_commands", "import_file"),
        show=plain(later("list_commands", "print_import")),
        exit=lambda r, a: FAILED if r["counts"]["refused"] else OK,
        examples=("memory import memory.jsonl",
                  "memory export | MEMORYD_HOME=/new memory import -"),
        exits="0 every line stored or already there; 1 some lines refused (each is named); "
        "after a 3 running it again is safe"),
    "pass": Command(
        help="the maintenance passes: list, run, show", progress=True,
        description="memoryd keeps memory in order with scheduled passes (README: Maintenance "
        "passes). Every change a pass makes is journaled: `memory pass show` lists it, "
        "`memory undo` takes it back.",
        examples=("memory pass list", "memory pass run consolidate --dry-run",
                  "memory pass show"),
        exits="0 done; 1 failed", actions={
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
                args=(Arg("id", optional=True,
                          help="run (r12) or change (c345); default the newest run"),),
                request=lambda a, c: c.pass_show(a.id), show=PASS_SHOW,
                examples=("memory pass show r12", "memory pass show c345"),
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
        help="check (and fix) notebooks", progress=True,
        examples=("memory notebook check", "memory notebook check ~/notes/me.md --fix"),
        exits="0 nothing to fix / fixed; 1 something to fix", actions={
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
    "doctor": Command(
        help="check the installation: daemon, versions, MEMORYD_HOME, hooks, service, model, "
        "database, sources (exit 1 on a problem)",
        description="Check everything a working memoryd needs and say how to fix what is not "
        "right: the daemon answers; client and daemon versions agree; MEMORYD_HOME of this "
        "shell, the daemon, the service and each installed hook agree; the hooks and the "
        "service run a program that exists; the service is installed, enabled and running; "
        "the model loaded with the shipped hash; onnxruntime's telemetry is off; the database "
        "passes quick_check; every ledger entry is in the index; disk space; sources that do "
        "not exist; skipped files and lines; backlogs. Run it when something seems wrong, and "
        "paste its --json output into a bug report. With the daemon down, the checks that "
        "need it are left out and the report says how to start it.",
        # runs its client-side checks with the daemon down too
        request=lambda a, c: EXAMINE(c), show=plain(later("doctor", "print_report")),
        exit=lambda r, a: OK if r["healthy"] else FAILED,
        epilog="Exit codes: 0 healthy (warnings allowed), 1 at least one problem, 2 usage "
        "error. Example: memory doctor --json"),
    "purge": Command(
        help="delete an agent's entries for good (a leaked secret)", progress=True,
        description="The one operation that really deletes: the agent's entries created since "
        "T and/or whose text holds TEXT (case-insensitive; names, categories, tags and kinds "
        "are not searched) go from the index, the agent's ledger, its transcript archive and "
        "the journals, with every record of theirs; free text that only mentions TEXT (a "
        "forget's reason, an older version, a session's last message) gets it replaced by "
        "[PURGED]; nothing else is touched. The purge is journaled without the text (memory "
        "history purge:AGENT). Without --yes it is a dry run that lists the entries it would "
        "remove and where it would replace TEXT. A watched file still holding the text brings "
        "it back when it is indexed again: edit the file (the output names it).",
        args=(Arg("--agent", required=True, help="whose entries (one agent)"),
              Arg("--since", metavar="T", help="entries created since T (epoch seconds, ISO "
                  "date, or an age like 2h)"),
              Arg("--match", metavar="TEXT", help="entries whose text holds TEXT"),
              Arg("--yes", kind="flag", help="do it (default: a dry run)")),
        request=_purge, show=plain(later("purge_view", "print_purge")),
        exit=later("purge_view", "purge_exit"),
        examples=("memory purge --agent designer --match 'hunter2'",
                  "memory purge --agent designer --match 'hunter2' --yes",
                  "memory purge --agent designer --since 2h --yes"),
        exits="0 purged (or, without --yes, listed); 1 nothing to purge"),
    "sync": Command(
        help="sync memory with a git remote: every machine holds the union", progress=True,
        description="memoryd's durable files (ledgers, the memory tools' directory, the "
        "transcript archives; never the database, the configuration or secrets) are a git "
        "repository. `memory sync init REMOTE` sets it up (any git remote: a bare repository on "
        "a disk or a NAS, ssh, https); `memory sync` commits what changed, fetches, merges and "
        "pushes, never with force, and applies what the merge brought to this machine's index. "
        "Ledgers merge as the union of their records; a markdown file changed on both machines "
        "keeps both versions (a conflict copy beside it). `memory sync add-shared NAME REMOTE` "
        "follows a team's repository read-only (its entries: the namespace team.NAME, in the "
        "memory block under a Team heading). Needs git (docs/sync.md).",
        args=(Arg("action", optional=True, kind=("init", "add-shared"),
                  help="init REMOTE, add-shared NAME REMOTE; none: sync now"),
              Arg("first", optional=True, metavar="REMOTE|NAME", help="init: the remote; "
                  "add-shared: the team's name"),
              Arg("second", optional=True, metavar="REMOTE", help="add-shared: the team's "
                  "remote")),
        request=_sync, show=plain(later("sync_view", "print_sync")),
        examples=("memory sync init git@github.com:me/memory.git", "memory sync",
                  "memory sync add-shared acme git@github.com:acme/lessons.git"),
        exits="0 synced (a conflict copy is reported, not a failure); 1 failed (git's error: "
        "the remote unreachable, not set up); 2 usage"),
    "share": Command(
        help="copy an entry into a team's shared repository (commit and push)", progress=True,
        description="The one way to write a team namespace: the entry is copied (the original "
        "stays yours) into the team's repository followed with `memory sync add-shared`, "
        "committed and pushed; every member's next sync brings it.",
        args=(ENTRY_ID, Arg("name", help="the team (as added with memory sync add-shared)")),
        request=lambda a, c: c.share(a.id, a.name), show=plain(later("sync_view", "print_share")),
        examples=("memory share 3f2a9c acme",),
        exits="0 shared; 1 not found, no such team, or the push failed"),
    "completion": Command(
        help="print the shell completion script for bash, zsh or fish",
        description="The completion script for SHELL, made from this client's table of "
        "commands: commands, actions, options and their choices, files where a file is "
        "wanted, and from the daemon when it is up agent names, entry ids (type a few "
        "characters, then TAB) and session ids. Load it in the shell's start-up file "
        "(docs/commands.md, Shell completion, says where for each shell).",
        args=(Arg("shell", kind=SHELLS, help="bash, zsh or fish"),),
        globals=(), alone=later("completion", "print_script"),
        examples=("echo 'eval \"$(memory completion bash)\"' >> ~/.bashrc",
                  "memory completion zsh > ~/.zfunc/_memory",
                  "memory completion fish > ~/.config/fish/completions/memory.fish"),
        exits="0 printed; 2 an unknown shell"),
    "release": Command(
        help="let a quarantined entry into the memory block",
        description="An entry whose text looks like an instruction to the model (ignore "
        "previous instructions, role tags, tool-call syntax, memoryd's own markers) is stored "
        "but quarantined: never injected, flagged in search. Read it (memory get ID), then "
        "release it if it is yours. Only a person at a terminal can release.",
        args=(ENTRY_ID,), request=lambda a, c: c.release(a.id),
        show=plain(views.print_released),
        examples=("memory get 3f2a9c", "memory release 3f2a9c"),
        exits="0 released; 1 refused (not at a terminal, not quarantined, not found)"),
}


def resolve(args: Args) -> Command:
    """The command the parsed arguments name (for a command with actions, the action)."""
    command = COMMANDS[args.command]
    return command.actions[args.action] if command.actions else command


def command_at(path: str) -> Command:
    """A command by its words: "get", "file read"."""
    name, _, action = path.partition(" ")
    return COMMANDS[name].actions[action] if action else COMMANDS[name]
