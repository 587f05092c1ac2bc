"""The commands of memory itself: store, search, get, forget, supersede, scope, history and
release an entry; move a project's entries (move-project); list, recent, export and import
entries without a query; purge an agent's entries for good."""

from __future__ import annotations

import os

from memoryd_client import views
from memoryd_client.command_spec import FAILED, OK, Arg, Command, later, plain
from memoryd_client.commands.args import (
    ACT_AS,
    ENTRY_ID,
    HERE,
    LIST_FILTERS,
    PROJECT,
    SINCE,
    TAGS,
    TIME,
    UNTIL,
)
from memoryd_client.errors import UsageError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Args

KINDS = ("fact", "lesson", "feedback", "note", "turn", "summary")


def _cwd_of(args: Args) -> str | None:
    """--here: this directory (its repository's entries and the global ones); never with
    --project."""
    from memoryd_client.project import here_directory

    return here_directory(args.project) if args.here else None


def _store(args: Args, client: Client) -> Any:
    return client.remember(
        args.agent, args.category, args.text, kind=args.kind, key=args.key,
        confidence=args.confidence, force=args.force, polarity=args.polarity,
        tags=[t for t in (args.tags or "").split(",") if t.strip()] or None,
        is_global=args.is_global)  # else the project of this directory (the client's cwd)


def _search(args: Args, client: Client) -> Any:
    from memoryd_client.list_commands import named_agents

    return client.search(
        args.query, limit=args.limit, category=None if args.category == "-" else args.category,
        kind=args.kind, tags=args.tags, since=args.since, until=args.until, status=args.status,
        min_score=args.min_score, project=args.project, cwd=_cwd_of(args),
        agents=named_agents(args.agent, "search"),
        # every ranked hit, the min score marking the matches: --all lists them, and a search
        # with none says the best (the daemon keeps to the matches of a min_score unasked)
        match=False if args.min_score is not None else None)


def _history(args: Args, client: Client) -> Any:
    if not args.id and not (args.agent and args.key):
        raise UsageError("memory history: give an ID, or --agent and --key")
    return client.history(args.id, agent=args.agent, key=args.key)


def _move_project(args: Args, client: Client) -> Any:
    """`memory move-project OLD NEW|--global`: paths taken from here, as the shell gave them."""
    if (args.new is None) == (not args.to_global):
        raise UsageError("memory move-project: give NEW (a directory of the project they go "
                         "to) or --global, one of them")
    new = os.path.abspath(os.path.expanduser(args.new)) if args.new is not None else None
    return client.move_project(os.path.abspath(os.path.expanduser(args.old)), new,
                               is_global=args.to_global, agent=args.agent)


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

COMMANDS: dict[str, Command] = {
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
              Arg("--confidence", kind="float",
                  help="0..1 (default: remember.manual_confidence, 0.95 as shipped)"),
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
              Arg("--limit", kind="int", metavar="N",
                  help="at most N hits (default: search.limit of the daemon's configuration, "
                  "10 as shipped)"),
              Arg("--kind", help="comma-separated kinds"),
              TAGS, PROJECT, HERE, SINCE, UNTIL,
              Arg("--status", help="active (default), superseded, forgotten, archived, or any"),
              Arg("--min-score", kind="float", metavar="P",
                  help="a match needs at least this probability of relevance (0..1; default: "
                  "the one giving search.match_precision)"),
              Arg("--all", kind="flag",
                  help="list ranked hits that are not matches too (exit code unchanged)")),
        request=_search, show=lambda r, a: views.print_hits(r, show_all=a.all,
                                                            project=a.project,
                                                            min_score=a.min_score),
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
        help="forget an entry (soft: kept in its history; the command prints the "
        "`memory undo RUN` that takes it back)",
        args=(ENTRY_ID, ACT_AS, Arg("--reason", help="why (kept in its history)")),
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
        "The move is recorded as a run of its own, which `memory undo RUN` takes back. An "
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
        "found)", usage_exit="usage error (also DIR in no git repository)"),
    "move-project": Command(
        help="move the entries filed under a project (renamed, moved, deleted) to another "
        "project or to the global tier",
        description="Entries stored through the API are filed under the project (the git "
        "repository) they were written in; a repository renamed, moved or deleted leaves them "
        "under a directory no session starts in (`memory doctor` names such projects). This "
        "moves them, every agent's (--agent: one agent's), superseded versions with them, to "
        "the project of NEW or, with --global, to the global tier: one run, which `memory "
        "undo RUN` takes back; kept by a rebuild. A watched file's entries are not moved: "
        "they follow their file. An entry the new tier refuses (as `memory scope` would: the "
        "same memory or another value of its key there) is left where it is and named.",
        args=(Arg("old", metavar="OLD", help="the project's directory as it was (it need "
                  "not exist any more; a relative path is taken from here)"),
              Arg("new", optional=True, metavar="NEW",
                  help="a directory in the repository they go to (not with --global)"),
              Arg("--global", kind="flag", dest="to_global",
                  help="move them to the global tier (every project)"),
              Arg("--agent", help="only this agent's entries (default: every agent's)")),
        request=_move_project, show=plain(views.print_project_moved),
        examples=("memory move-project ~/code/alpha ~/code/alpha2",
                  "memory move-project ~/code/old-shop --global", "memory undo r12"),
        exits="0 moved (the entries the new tier refused named); 1 no entries filed under "
        "OLD", usage_exit="usage error (also NEW in no git repository)"),
    "history": Command(
        help="an entry's history: its versions and events (by id, or agent + key)",
        args=(Arg("id", optional=True, help="entry id or prefix (or give --agent and --key)"),
              Arg("--agent", help="with --key: the agent whose key it is"),
              Arg("--key", help="with --agent: every version of this dotted key")),
        request=_history, show=plain(views.print_history),
        examples=("memory history 1a20b902eb96",
                  "memory history --agent coder --key pref.commit_style"),
        exits="0 found; 1 not found"),
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
        "back. A FILE is written whole or not at all: an export that fails midway leaves it "
        "as it was.",
        args=(Arg("--agent",
                  help="an agent or a comma-separated list (default: every agent)"),
              *LIST_FILTERS,
              Arg("-o", "--output", metavar="FILE",
                  help="write here (default, or -: stdout)")),
        run=later("list_commands", "export"),
        examples=("memory export > memory.jsonl",
                  "memory export --agent designer --since 30d -o designer.jsonl"),
        exits="0 exported; 1 the file cannot be written, or the export failed midway (the "
        "file is left as it was)"),
    "import": Command(
        help="store the entries of a JSONL export through the daemon's write path",
        description="Each line a JSON object with agent, category and text (an export's "
        "lines); stored as the agent's entries with their date (created), kind, key, tags, "
        "confidence, project and polarity, in batches, through the write path: exact "
        "duplicates are not stored again (importing twice changes nothing), near duplicates "
        "are kept (they were kept where they came from), and every entry goes to the agent's "
        "ledger and history (via: import). Entries that are not active, entries indexed from "
        "watched files (watch their files instead) and a team's (`memory sync add-shared` "
        "brings them) are skipped and counted. Secrets are redacted before an entry is "
        "stored, and the command names the lines that held some. A terminal "
        "shows how far it is; the command waits as long as the daemon reports progress, and "
        "if the daemon stops answering (exit 3), running it again is safe.",
        args=(Arg("file", metavar="FILE", help="a JSONL file, or - for standard input"),),
        progress=True, request=later("list_commands", "import_file"),
        show=plain(later("list_commands", "print_import")),
        exit=lambda r, a: FAILED if r["counts"]["refused"] else OK,
        examples=("memory import memory.jsonl",
                  "memory export | MEMORYD_HOME=/new memory import -"),
        exits="0 every line stored or already there; 1 some lines refused (each is named), "
        "or the file cannot be read",
        unreachable_exit="daemon unreachable (running it again is safe)"),
    "purge": Command(
        help="delete an agent's entries for good (a leaked secret)", progress=True,
        description="The one operation that really deletes: the agent's entries created since "
        "T and/or whose text holds TEXT (case-insensitive; of a memory file's entries, the "
        "heading they are filed under too; names, other categories, tags and kinds are not "
        "searched) go from the index, the agent's ledger, its transcript archive and "
        "the histories, with every record of theirs; free text that only mentions TEXT (a "
        "forget's reason, an older version, a session's last message) gets it replaced by "
        "[PURGED]; nothing else is touched. The purge is recorded without the text (memory "
        "history purge:AGENT). Without --yes it is a dry run that lists the entries it would "
        "remove and where it would replace TEXT. memoryd.db.bak, the index a reindex replaced "
        "(a copy from before the purge), is deleted too. A watched file still holding the "
        "text brings it back when it is indexed again: edit the file (the output names it).",
        args=(Arg("--agent", required=True, help="whose entries (one agent)"),
              Arg("--since", metavar="T", help=f"entries created since T ({TIME})"),
              Arg("--match", metavar="TEXT", help="entries whose text (or memory file "
                  "heading) holds TEXT"),
              Arg("--yes", kind="flag", help="do it (default: a dry run)")),
        request=_purge, show=plain(later("purge_view", "print_purge")),
        exit=later("purge_view", "purge_exit"),
        examples=("memory purge --agent designer --match 'hunter2'",
                  "memory purge --agent designer --match 'hunter2' --yes",
                  "memory purge --agent designer --since 2h --yes"),
        exits="0 purged (or, without --yes, listed); 1 nothing to purge"),
}
