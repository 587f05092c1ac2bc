"""``memory``: the command line of memoryd.

Exit codes:
    0  OK (store: stored; search: something matched)
    1  the request failed (store: rejected as a duplicate; search: nothing matched; file:
       refused)
    2  usage error (also `memory` alone, which prints the help)
    3  the daemon is unreachable

Global options (--json, --socket, --timeout) go before or after the command. Under --json,
stdout holds one JSON document: the reply, or {"error": {"code", "message"}} with the same
exit code (code "usage" for a usage error).
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # see memoryd_client/__init__.py

from memoryd_client.errors import MemorydError

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from memoryd_client.client import Client

OK, FAILED, USAGE, UNREACHABLE = 0, 1, 2, 3
COMMANDS = ("status", "sources", "reload", "hook", "file", "extract", "mcp", "context", "explain",
            "session", "sessions", "store", "search", "get", "forget", "supersede", "history",
            "list", "recent", "export", "import", "pass", "undo", "promote", "notebook", "doctor",
            "purge", "release")
PASS_COMMANDS = ("pass", "undo", "promote", "notebook")  # memoryd_client.pass_commands
LIST_COMMANDS = ("list", "recent", "export", "import")  # memoryd_client.list_commands
#: Global options that take a value (so that the command can be found after them).
VALUE_OPTIONS = ("--socket", "--timeout")


#: Commands parsed without argparse when their arguments are plain: argparse (with the re,
#: gettext and locale modules it imports) costs a process more than the request. Each is
#: (positionals, options); an option is name → (dest, type, default), type "flag", "str",
#: "int", "float" or a tuple of choices. Anything else (help, an unknown or abbreviated option,
#: a missing argument, a bad value) goes to argparse, which says what is wrong. A test checks
#: that both parsers read every option the same way.
GLOBAL_OPTIONS: dict[str, tuple[str, Any, Any]] = {
    "--json": ("json", "flag", False), "--socket": ("socket", "str", None),
    "--timeout": ("timeout", "float", 30.0)}
FAST_COMMANDS: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, Any, Any]]]] = {
    "store": (("agent", "category", "text"), {
        "--tags": ("tags", "str", None), "--key": ("key", "str", None),
        "--kind": ("kind", ("fact", "lesson", "feedback", "note", "turn", "summary"), None),
        "--confidence": ("confidence", "float", None),
        "--polarity": ("polarity", ("negative", "positive"), None),
        "--force": ("force", "flag", False), "--global": ("is_global", "flag", False)}),
    "search": (("agent", "category", "query"), {
        "--limit": ("limit", "int", 10), "--kind": ("kind", "str", None),
        "--tags": ("tags", "str", None), "--project": ("project", "str", None),
        "--here": ("here", "flag", False), "--since": ("since", "str", None),
        "--until": ("until", "str", None), "--status": ("status", "str", None),
        "--min-score": ("min_score", "float", None), "--all": ("all", "flag", False)}),
}


class _Args:
    """The parsed arguments of a fast command (what argparse.Namespace holds)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def fast_parse(argv: list[str]) -> _Args | None:
    """The arguments of a plain `memory store|search …`, or None: let argparse parse them."""
    command = _command_of(argv)
    if command not in FAST_COMMANDS:
        return None
    names, own = FAST_COMMANDS[command]
    values: dict[str, Any] = {"command": command}
    for dest, _, default in (*GLOBAL_OPTIONS.values(), *own.values()):
        values[dest] = default
    positionals: list[str] = []
    seen_command = False
    args = iter(argv)
    for arg in args:
        if arg.startswith("-") and arg != "-":
            name, equals, inline = arg.partition("=")
            option = GLOBAL_OPTIONS.get(name) or (own.get(name) if seen_command else None)
            if option is None:
                return None
            dest, kind, _ = option
            if kind == "flag":
                if equals:
                    return None
                values[dest] = True
                continue
            value = inline if equals else next(args, None)
            if value is None or (not equals and value.startswith("-")):
                return None
            try:
                values[dest] = int(value) if kind == "int" else float(value) \
                    if kind == "float" else value
            except ValueError:
                return None
            if isinstance(kind, tuple) and value not in kind:
                return None
        elif not seen_command:
            seen_command = True  # _command_of found it: the first word
        else:
            positionals.append(arg)
    if len(positionals) != len(names):
        return None
    values.update(zip(names, positionals))
    return _Args(values)


class UsageError(Exception):
    """A usage mistake found by the parser or by a command (exit 2)."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # type: ignore[override]
            raise UsageError(f"{self.prog}: error: {message}", self.format_usage())

    return Parser


def _common(top: bool) -> argparse.ArgumentParser:
    """The global options: on the main parser with their defaults, on every command's parser
    with none (argparse.SUPPRESS), so that given on either side of the command they count."""
    import argparse

    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=default(False),
                        help="print the reply (or the error) as JSON on stdout")
    common.add_argument("--socket", metavar="PATH", default=default(None),
                        help="daemon socket (default: $MEMORYD_SOCKET, "
                        "$MEMORYD_HOME/memoryd.sock, or the user runtime dir)")
    common.add_argument("--timeout", type=float, default=default(30.0), metavar="S",
                        help="seconds to wait for the daemon (default: 30)")
    return common


class _Skipped:
    """Stands in for the subparsers of commands not being run: building all of them costs a
    CLI call ~10 ms (argparse looks up translations for every help string)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self

    def __iter__(self) -> Any:
        return iter(())


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or (``only``) just the one command about to run."""
    from memoryd_client import cli_help
    from memoryd_client.cli_help import Formatter, epilog

    parser = _parser_class()(
        prog="memory", formatter_class=Formatter, parents=[_common(top=True)],
        description="Talk to memoryd, the local memory daemon for AI agents.",
        epilog=cli_help.MAIN_EPILOG,
    )
    parser.add_argument("--version", action=cli_help.VersionAction,
                        help="print the client's version and exit")
    common = _common(top=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add_command(name: str, **kwargs: Any) -> Any:
        if only is not None and name != only:
            return _Skipped()
        kwargs.setdefault("formatter_class", Formatter)
        if "epilog" not in kwargs and name in cli_help.COMMANDS:
            kwargs["epilog"] = epilog(name)
        return commands.add_parser(name, **kwargs)

    def add_action(actions: Any, group: str, name: str, **kwargs: Any) -> Any:
        kwargs.setdefault("parents", [common])
        kwargs.setdefault("epilog", epilog(f"{group} {name}"))
        return actions.add_parser(name, formatter_class=Formatter, **kwargs)

    status = add_command("status", parents=[common], help="show the daemon's state")
    status.add_argument("--sources", action="store_true",
                        help="also each watched source: files, errors, skipped lines")

    sources = add_command("sources", parents=[common], help="list, add or remove watched sources")
    sources_commands = sources.add_subparsers(dest="sources_command", metavar="ACTION", required=True)
    add_action(sources_commands, "sources", "list", help="every source and its state")
    add = add_action(
        sources_commands, "sources", "add", help="watch a new glob, or a project root with --project",
        description="Add a source: a glob with an optional {agent} placeholder (or --agent), or "
        "a project root (--project). Saved in sources.toml beside config.toml; applied at once.")
    add.add_argument("name", nargs="?", help="the source's name (not with --project)")
    add.add_argument("path", nargs="?", help="glob (quote it; ~ and {agent} allowed)")
    add.add_argument("--kind", choices=["memory", "transcript"], help="what the files are")
    add.add_argument("--format", choices=["markdown", "claude-code", "codex", "generic"],
                     help="default: markdown for memory, generic for transcripts")
    add.add_argument("--agent", help="the agent, when the glob has no {agent}")
    add.add_argument("--project", metavar="DIR", help="index CLAUDE.md, AGENTS.md, … in this project")
    remove = add_action(
        sources_commands, "sources", "remove",
        help="remove an added source, disable a built-in, or drop a project root")
    remove.add_argument("name", help="source name, or a project root directory")

    add_command("reload", parents=[common], help="re-read the configuration (as SIGHUP does)")
    add_command("hook", help="agent lifecycle hooks: memory hook claude-code|codex EVENT, "
                "memory hook install|uninstall claude-code|codex (see memory hook --help)")

    files = add_command("file", parents=[common],
                        help="the memory tools: list, read, write, replace, insert files "
                        "in an agent's memory directory",
                        description="The memory tools on an agent's memory directory "
                        "(tools.memory_dir). Writes are atomic and journaled; paths leaving the "
                        "directory are refused.")
    file_actions = files.add_subparsers(dest="file_action", metavar="ACTION", required=True)
    for action, help_text in (("list", "the agent's memory files"), ("read", "print a file"),
                              ("write", "write a whole file (text from --text or stdin)"),
                              ("replace", "replace the one match of --old with --new"),
                              ("insert", "insert --text before --line (0: at the top)")):
        sub = add_action(file_actions, "file", action, help=help_text)
        sub.add_argument("--agent", required=True, help="whose memory directory")
        if action != "list":
            sub.add_argument("path", help="relative to the agent's memory directory")
        if action in ("write", "insert"):
            sub.add_argument("--text", help="default: read standard input")
        if action == "replace":
            sub.add_argument("--old", required=True, help="text that must occur exactly once")
            sub.add_argument("--new", required=True, help="its replacement")
        if action == "insert":
            sub.add_argument("--line", type=int, required=True, help="0 inserts at the top")

    extract = add_command(
        "extract", parents=[common], help="extract lessons and facts from a finished session",
        description="Without --dry-run, stores what is accepted. The report maps each user "
        "message to the entries taken from it and says why each was accepted or rejected.")
    extract.add_argument("session", help="session id (memory session list)")
    extract.add_argument("--dry-run", action="store_true", help="report only, store nothing")

    mcp = add_command("mcp", help="run the MCP stdio server with the memory tools "
                      "(needs the MCP SDK: pip install 'mcp==2.3.0')",
                      description="An MCP server on stdin/stdout; register it with your agent "
                      "(example below).")
    mcp.add_argument("--agent", required=True, help="whose memory the tools read and write")
    mcp.add_argument("--socket", metavar="PATH",
                     help="daemon socket (default: $MEMORYD_SOCKET, $MEMORYD_HOME/memoryd.sock, "
                     "or the user runtime dir)")

    context = add_command("context", parents=[common],
                          help="print the memory block an agent would get at session start")
    context.add_argument("--agent", required=True, help="the agent whose block it is")
    context.add_argument("--cwd", default=None, help="working directory (default: this one)")
    context.add_argument("--prompt", help="show what the prompt hook would inject for this prompt")
    context.add_argument("--budget", type=int,
                         help="characters (default: 8000; with --prompt 2000)")

    explain = add_command("explain", parents=[common],
                          help="what was injected into a session, and why")
    explain.add_argument("session", nargs="?", help="session id (default: the latest injection)")

    session = add_command("session", parents=[common], help="agent sessions: list, show ID")
    session_actions = session.add_subparsers(dest="session_action", metavar="ACTION",
                                             required=True)
    listing = add_action(session_actions, "session", "list",
                         help="the session registry: id, agent, last seen, user messages, project")
    show = add_action(session_actions, "session", "show",
                      help="one session: times, counts, entries from it, injections")
    show.add_argument("id", help="session id (memory session list)")

    sessions = add_command("sessions", parents=[common],
                           help="list recorded agent sessions (the same as memory session list)")
    for parser_ in (listing, sessions):
        parser_.add_argument("--agent", help="only this agent's sessions")
        parser_.add_argument("--project", metavar="DIR", help="only sessions in this project")
        parser_.add_argument("--limit", type=int, default=50, metavar="N",
                             help="at most N sessions (default: %(default)s)")

    store = add_command(
        "store", parents=[common], help="remember TEXT in AGENT's CATEGORY",
        description="Store an entry. A duplicate (the same text in the agent's category, or a "
        "near duplicate without --force) is not stored: the existing entry is printed.")
    store.add_argument("agent", help="the agent (namespace) it belongs to, e.g. designer")
    store.add_argument("category", help="its category, e.g. rejected-designs")
    store.add_argument("text", help="what to remember (quote it)")
    store.add_argument("--tags", help="comma-separated tags")
    store.add_argument("--key", help="dotted key (e.g. pref.commit_style); makes a fact")
    store.add_argument("--kind", choices=["fact", "lesson", "feedback", "note", "turn", "summary"],
                       help="default: fact with --key, note without; feedback (the user's own "
                       "words) only when typed at a terminal")
    store.add_argument("--confidence", type=float, help="0..1 (default: 0.95)")
    store.add_argument("--polarity", choices=["negative", "positive"],
                       help="for lessons: a \"don't\" (negative) or a \"do\" (positive)")
    store.add_argument("--force", action="store_true", help="store even if a near duplicate exists")
    store.add_argument("--global", dest="is_global", action="store_true",
                       help="not tied to the project of the current directory")

    search = add_command(
        "search", parents=[common], help="search AGENT's memory",
        description="Hybrid keyword + vector search. A hit is a match when its probability of "
        "being relevant reaches the threshold for search.match_precision (or --min-score). "
        "Prints the matches, one per line, under a header on stderr:\n"
        "  * 0.96    2d  ID  agent/category kind: text\n"
        "(* = a match; 0.96 = probability that it is relevant; 2d = its age). Nothing "
        "matched: `no match (best: …)` on stderr.")
    search.add_argument("agent", help="an agent, a comma-separated list, or '*' for every agent")
    search.add_argument("category", help="a category, or - for any")
    search.add_argument("query", help="the question, in words (quote it)")
    search.add_argument("--limit", type=int, default=10, metavar="N",
                        help="at most N hits (default: %(default)s)")
    search.add_argument("--kind", help="comma-separated kinds")
    search.add_argument("--tags", help="comma-separated tags; all must be present")
    search.add_argument("--project", metavar="DIR", help="only entries of this project directory")
    search.add_argument("--here", action="store_true", help="only entries of the current project")
    search.add_argument("--since", metavar="T", help="epoch seconds, ISO date, or an age like 7d")
    search.add_argument("--until", metavar="T", help="epoch seconds, ISO date, or an age like 7d")
    search.add_argument("--status", help="active (default), superseded, forgotten, or any")
    search.add_argument("--min-score", type=float, metavar="P",
                        help="a match needs at least this probability of relevance (0..1; "
                        "default: the one giving search.match_precision)")
    search.add_argument("--all", action="store_true",
                        help="list ranked hits that are not matches too (exit code unchanged)")

    get = add_command("get", parents=[common], help="show one entry")
    get.add_argument("id", help="entry id or a unique prefix of it (4+ characters)")

    forget = add_command("forget", parents=[common],
                         help="forget an entry (soft: journaled, kept in history)")
    forget.add_argument("id", help="entry id or a unique prefix of it")
    forget.add_argument("--agent", help="act as this agent (must own the entry; default: "
                        "the entry's own agent)")
    forget.add_argument("--reason", help="why (kept in the journal)")

    supersede = add_command("supersede", parents=[common],
                            help="replace an entry's text; the old one is kept as superseded")
    supersede.add_argument("id", help="entry id or a unique prefix of it")
    supersede.add_argument("text", help="the new text (quote it)")
    supersede.add_argument("--agent", help="act as this agent (must own the entry; default: "
                           "the entry's own agent)")

    history = add_command("history", parents=[common],
                          help="an entry's versions and journal (by id, or agent + key)")
    history.add_argument("id", nargs="?", help="entry id or prefix (or give --agent and --key)")
    history.add_argument("--agent", help="with --key: the agent whose key it is")
    history.add_argument("--key", help="with --agent: every version of this dotted key")

    if only is None or only in LIST_COMMANDS:
        from memoryd_client import list_commands

        list_commands.add_parsers(add_command, common)
    if only is None or only in PASS_COMMANDS:
        from memoryd_client import pass_commands

        pass_commands.add_parsers(add_command, common)
    if only in (None, "doctor"):  # a long module: not loaded for the other commands
        from memoryd_client import doctor

        doctor.add_parsers(add_command, common)
    if only in (None, "purge", "release"):
        from memoryd_client import trust_commands

        trust_commands.add_parsers(add_command, common)
    for sub in _subparsers(parser):  # nested actions added elsewhere (pass_commands)
        name = sub.prog.removeprefix("memory ")
        sub.formatter_class = Formatter
        if sub.epilog is None and name in cli_help.COMMANDS:
            sub.epilog = epilog(name)
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser below this one (commands, and their actions)."""
    import argparse

    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += [sub, *_subparsers(sub)]
    return found



def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _entry_line(entry: dict[str, Any]) -> str:
    status = "" if entry.get("status") == "active" else f" [{entry.get('status')}]"
    if entry.get("stale"):  # something it names is gone from its project (staleness pass)
        status += f" [stale: {entry['stale']}]"
    if entry.get("quarantined"):  # looks like an instruction to the model: never injected
        status += " [⚠ quarantined: looks like an instruction to the model; never injected " \
                  "until a person runs `memory release` on it]"
    key = f" {entry['key']}" if entry.get("key") else ""
    category = entry.get("category") or "-"
    return f"{entry['id']}  {entry['agent']}/{category} {entry['kind']}{key}{status}: {entry['text']}"


def _print_entry(entry: dict[str, Any]) -> None:
    print(_entry_line(entry))
    tags = ",".join(entry.get("tags") or [])
    source = entry.get("source")
    span = f":{entry['line_start']}-{entry['line_end']}" if entry.get("line_start") else ""
    details = [
        f"created {_when(entry['created'])}"
        + (f" ({entry['age_note']})" if entry.get("age_note") else ""),
        f"confidence {entry['confidence']:.2f}",
        f"via {entry['via']}" + (f" by {entry['writer']}" if entry.get("writer") else ""),
    ]
    if tags:
        details.append(f"tags {tags}")
    if entry.get("project"):
        details.append(f"project {entry['project']}")
    if entry.get("session"):
        details.append(f"session {entry['session']}")
    if source:
        details.append(f"source {source}{span}")
    if entry.get("superseded_by"):
        details.append(f"superseded by {entry['superseded_by']}")
    print("    " + "; ".join(details))


def _print_status(status: dict[str, Any]) -> None:
    from memoryd_client.status_view import print_status  # health line first, then details

    print_status(status)


def _print_sources(status: dict[str, Any]) -> None:
    ingest = status.get("ingest", status)
    print(f"queue: {ingest['queue']}" + (" (scanning)" if ingest.get("scanning") else ""))
    for source in ingest["sources"]:
        state = "" if source["root_exists"] else " (not present)"
        agent = source["agent"] or "{agent}"
        print(f"{source['name']}: {source['path']} [{source['kind']}, {source['format']}, "
              f"agent {agent}]{state}")
        indexed = f"{source['indexed']} entries indexed, " if "indexed" in source else ""
        print(f"    files {source['files']}, {indexed}since start +{source['entries_added']} "
              f"-{source['entries_removed']}")
        if source["skipped"]:
            print("    skipped: " + ", ".join(f"{n} {r}" for r, n in sorted(source["skipped"].items())))
        if source["last_error"]:
            print(f"    last problem: {source['last_error_path']}: {source['last_error']}")


def _edited(reply: dict[str, Any], how: str) -> str:
    """What a forget or supersede of a file's entry did to the file."""
    edited = reply.get("edited")
    if not edited:
        return ""
    first, last = edited["lines"]
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    return f" ({how} {edited['file']}, {lines}; `memory undo {edited['run']}` takes it back)"


def _print_sessions(result: dict[str, Any]) -> None:
    if not result["sessions"]:
        print("no sessions")
    for s in result["sessions"]:
        seen = _when(s["last_seen"]) if s.get("last_seen") else "-"
        print(f"{s['id']}  {s['agent']:<12} {seen}  {s['user_messages']:>4} msgs  "
              f"{s.get('project') or s.get('cwd') or '-'}")


def _print_injections(result: dict[str, Any]) -> None:
    for injection in result["injections"]:
        print(f"{_when(injection['ts'])}  {injection['event']} for {injection['agent']} "
              f"(session {injection['session'] or '-'}): {injection['chars']} of "
              f"{injection['budget']} characters")
        for item in injection["items"]:
            what = item["id"] or item["path"] or "-"
            score = f" relevance {item['score']:.2f}" if item.get("score") is not None else ""
            if item.get("evidence"):
                score += " (" + ", ".join(f"{k} {v:.2f}" for k, v in item["evidence"].items()
                                          if v) + ")"
            state = "" if item["included"] else " (dropped: over budget)"
            print(f"    {item['section']:<9} {what}{score}, {item['chars']} chars{state}")


def _print_hits(result: dict[str, Any], show_all: bool = True) -> None:
    """One line per hit: * for a match, the probability that it is relevant, its age."""
    hits = [h for h in result["hits"] if show_all or h.get("match")]
    if hits:  # the legend, aligned with the columns (on stderr: stdout stays one hit a line)
        print(f"* rel.   age  {'id':<{len(hits[0]['id'])}}  agent/category kind: text"
              "   (* match, rel. = probability of relevance, age since written)", file=sys.stderr)
    for hit in hits:
        marker = "*" if hit.get("match") else " "
        print(f"{marker} {hit['score']['relevance']:.2f} {hit['age']:>5}  {_entry_line(hit)}")
    if not any(h.get("match") for h in result["hits"]):
        best = result["hits"][0] if result["hits"] else None
        hint = (f"best: {best['score']['relevance']:.2f} {best['text'][:60]!r}; --all lists "
                "the ranked hits" if best else "nothing ranked")
        print(f"no match ({hint})", file=sys.stderr)
    if result.get("degraded"):
        print("(keyword-only: the embedding model is not loaded)", file=sys.stderr)


def run(args: argparse.Namespace, client: Client) -> int:
    command = args.command
    if command == "status":
        result = client.status(sources=args.sources)

        def show_status(r: dict[str, Any]) -> None:
            _print_status(r)
            if args.sources:
                _print_sources(r)

        _emit(args, result, show_status)
        return OK
    if command == "sources":
        if args.sources_command == "add":
            if args.project:
                result = client.sources("add", project_root=os.path.abspath(args.project))
            elif args.name and args.path and args.kind:
                fmt = args.format or ("markdown" if args.kind == "memory" else "generic")
                result = client.sources("add", name=args.name, path=args.path, kind=args.kind,
                                        format=fmt, agent=args.agent)
            elif args.name and not args.path:  # a built-in that `sources remove` disabled
                result = client.sources("add", name=args.name, kind=args.kind,
                                        format=args.format, agent=args.agent)
            else:
                raise UsageError("memory sources add: give NAME PATH --kind KIND, NAME of a "
                                 "disabled built-in, or --project DIR")
        elif args.sources_command == "remove":
            result = client.sources("remove", name=args.name)
        else:
            result = client.sources("list")
        _emit(args, result, _print_sources)
        return OK
    if command == "reload":
        _emit(args, client.reload(), lambda r: print(f"reloaded: {r['sources']} sources"))
        return OK
    if command == "file":
        fields: dict[str, Any] = {}
        if args.file_action in ("write", "insert"):
            fields["text"] = args.text if args.text is not None else sys.stdin.read()
        if args.file_action == "replace":
            fields.update(old=args.old, new=args.new)
        if args.file_action == "insert":
            fields["line"] = args.line
        result = client.file(args.file_action, args.agent, getattr(args, "path", None), **fields)

        def show_file(r: dict[str, Any]) -> None:
            if args.file_action == "list":
                for f in r["files"]:
                    print(f"{f['bytes']:>8}  {_when(f['modified'])}  {f['path']}")
            elif args.file_action == "read":
                sys.stdout.write(r["text"])
            else:
                print(f"{args.file_action}: {r['path']}")

        _emit(args, result, show_file)
        return OK
    if command == "extract":
        result = client.extract(args.session, dry_run=args.dry_run)

        def show_extract(r: dict[str, Any]) -> None:
            print(f"session {r['session']} ({r['agent']}): {r['messages']} user messages"
                  + (f"; {r['reason']}" if r.get("reason") else ""))
            for message in r["report"]:
                print(f"- message {message['message_id'] or '(unknown)'}: "
                      f"{(message['text'] or '')[:100]!r}")
                if not message["entries"]:
                    print("    → nothing to keep")
                for entry in message["entries"]:
                    key = f" {entry['key']}" if entry.get("key") else ""
                    verdict = "accepted" if entry["accepted"] else f"rejected: {entry['reason']}"
                    print(f"    → {entry['kind']}{key} [{entry['category']}] {entry['text']!r}: "
                          f"{verdict}")
            if not args.dry_run:
                print(f"stored {len(r['stored'])} entries")

        _emit(args, result, show_extract)
        return OK
    if command == "context":
        result = client.context(args.agent, cwd=args.cwd or os.getcwd(), prompt=args.prompt,
                                budget=args.budget)
        _emit(args, result, lambda r: print(r["text"]))
        return OK
    if command == "explain":
        result = client.explain(args.session)
        _emit(args, result, _print_injections)
        return OK
    if command == "session" and args.session_action == "show":
        result = client.session(args.id)

        def show_session(r: dict[str, Any]) -> None:
            s = r["session"]
            print(f"session {s['id']} ({s['harness']}, agent {s['agent']})")
            for name in ("cwd", "project", "transcript_path"):
                if s.get(name):
                    print(f"  {name}: {s[name]}")
            print(f"  started {_when(s['started']) if s.get('started') else '-'}, last seen "
                  f"{_when(s['last_seen']) if s.get('last_seen') else '-'}"
                  + (f", closed {_when(s['closed'])}" if s.get("closed") else ", open"))
            print(f"  user messages: {s['user_messages']}")
            print(f"  entries from this session: {len(r['entries'])}")
            for entry in r["entries"]:
                print("    " + _entry_line(entry))
            _print_injections({"injections": r["injections"]})

        _emit(args, result, show_session)
        return OK
    if command in ("sessions", "session"):  # `memory sessions` is `memory session list`
        result = client.sessions(agent=args.agent, project=args.project, limit=args.limit)
        _emit(args, result, _print_sessions)
        return OK
    if command == "store":
        result = client.remember(
            args.agent, args.category, args.text,
            kind=args.kind, key=args.key, confidence=args.confidence, force=args.force,
            polarity=args.polarity,
            tags=[t for t in (args.tags or "").split(",") if t.strip()] or None,
            cwd=None if args.is_global else os.getcwd(),
        )

        def show(r: dict[str, Any]) -> None:
            if r["stored"]:
                print(f"stored {r['entry']['id']}")
                if r["entry"].get("quarantined"):
                    print("quarantined: it looks like an instruction to the model and is not "
                          f"injected until a person runs `memory release {r['entry']['id']}`",
                          file=sys.stderr)
                for old in r.get("superseded") or []:
                    print(f"superseded {old['id']}: {old['text']}")
                if r["entry"]["status"] == "superseded":
                    print(f"kept as superseded: an entry with key {r['entry']['key']} has higher confidence")
            else:
                kind = "exact duplicate" if r["duplicate"] == "exact" else \
                    f"near duplicate (cosine {r['cosine']:.2f}; --force stores it anyway)"
                print(f"not stored: {kind} of", file=sys.stderr)
                _print_entry(r["entry"])

        _emit(args, result, show)
        return OK if result["stored"] else FAILED
    if command == "search":
        filters: dict[str, Any] = {
            "limit": args.limit,
            "category": None if args.category == "-" else args.category,
            "kind": args.kind, "tags": args.tags, "since": args.since, "until": args.until,
            "status": args.status, "min_score": args.min_score,
            "project": args.project, "cwd": os.getcwd() if args.here else None,
        }
        agents = [a for a in args.agent.split(",") if a]
        filters["agents"] = agents
        result = client.search(args.query, **filters)
        if not args.all and not args.json:
            _print_hits(result, show_all=False)
        else:
            _emit(args, result, _print_hits)
        return OK if any(hit["match"] for hit in result["hits"]) else FAILED
    if command == "get":
        _emit(args, client.get(args.id), _print_entry)
        return OK
    if command == "forget":
        _emit(args, client.forget(args.id, agent=args.agent, reason=args.reason),
              lambda e: print(f"forgotten {e['id']}" + _edited(e, "removed from")))
        return OK
    if command == "supersede":
        result = client.supersede(args.id, args.text, agent=args.agent)
        _emit(args, result, lambda r: print(f"stored {r['entry']['id']}, superseding "
                                            f"{r['superseded']['id']}" + _edited(r, "in")))
        return OK
    if command == "history":
        if not args.id and not (args.agent and args.key):
            raise UsageError("memory history: give an ID, or --agent and --key")
        result = client.history(args.id, agent=args.agent, key=args.key)

        def show_history(r: dict[str, Any]) -> None:
            for entry in r["entries"]:
                _print_entry(entry)
            for event in r["events"]:
                print(f"{_when(event['ts'])}  {event['action']:<10} {event['id']}  by {event['actor'] or '-'}")

        _emit(args, result, show_history)
        return OK
    if command in ("pass", "undo", "promote", "notebook"):
        from memoryd_client import pass_commands

        return pass_commands.run(args, client, _emit)
    if command in LIST_COMMANDS:
        from memoryd_client import list_commands

        return list_commands.run(args, client, _emit, _entry_line)
    if command == "doctor":  # runs its client-side checks with the daemon down too
        from memoryd_client import doctor

        return doctor.run(args, client, _emit)
    if command in ("purge", "release"):
        from memoryd_client import trust_commands

        return trust_commands.run(args, client, _emit)
    raise AssertionError(command)  # argparse guarantees a known command


def _emit(args: argparse.Namespace, result: Any, show: Any) -> None:
    if args.json:
        import json  # not at the top: a hook process goes through this module and needs no json

        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        show(result)


def _wants_json(argv: list[str]) -> bool:
    """--json among the arguments (before a `--`), for errors found before parsing is done."""
    return "--json" in (argv[:argv.index("--")] if "--" in argv else argv)


def _fail(as_json: bool, code: str, message: str, exit_code: int) -> int:
    """Report a failure: JSON on stdout under --json, else text on stderr."""
    if as_json:
        import json

        print(json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False))
    else:
        print(message if code == "usage" else f"Error: {message}", file=sys.stderr)
    return exit_code


def _command_of(argv: list[str]) -> str | None:
    """The command word, skipping global options and their values."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in VALUE_OPTIONS:
            skip = True
        elif arg == "--":
            return None
        elif not arg.startswith("-"):
            return arg
    return None


def run_hook_command(argv: list[str]) -> int:
    """`memory hook …`: the hooks themselves (always exit 0), or install/uninstall."""
    if argv[:1] in (["install"], ["uninstall"]):
        import argparse

        descriptions = {
            "install": "Add memoryd's hooks to an agent's settings file (idempotent). The file is "
                       "rewritten through symlinks, atomically, with its permissions and "
                       "indentation kept. When MEMORYD_HOME or MEMORYD_SOCKET is set, the hook "
                       "commands carry it, so the hooks reach the same daemon.",
            "uninstall": "Remove exactly the hooks memoryd added (recognised by their command). A "
                         "file that install created is deleted when nothing else is left in it.",
        }
        from memoryd_client.cli_help import Formatter

        parser = argparse.ArgumentParser(
            prog=f"memory hook {argv[0]}", description=descriptions[argv[0]],
            formatter_class=Formatter,
            epilog=f"examples:\n  memory hook {argv[0]} claude-code\n"
                   f"  memory hook {argv[0]} codex --project ~/src/shop\n\n"
                   "The previous contents are backed up in memoryd's state dir (hook-backups/, "
                   "named after the file's real path); per file the first backup (before memoryd "
                   "first changed it) and the latest are kept.\n\n"
                   "exit codes: 0 done; 1 the file could not be changed (not JSON, not "
                   "writable); 2 usage error (DIR does not exist).")
        parser.add_argument("harness", choices=["claude-code", "codex"],
                            help="claude-code: ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR); "
                                 "codex: ~/.codex/hooks.json (or $CODEX_HOME)")
        parser.add_argument("--project", metavar="DIR",
                            help="a project's settings instead of the user's: "
                                 "DIR/.claude/settings.local.json (personal, not committed) or "
                                 "DIR/.codex/hooks.json; DIR must exist")
        try:
            args = parser.parse_args(argv[1:])
        except SystemExit as exc:
            return int(exc.code or 0) and USAGE
        from memoryd_client import install

        try:
            action = install.install if argv[0] == "install" else install.uninstall
            print(action(args.harness, args.project))
        except MemorydError as exc:  # a --project that does not exist
            print(f"Error: {exc.message}", file=sys.stderr)
            return USAGE if exc.code == "bad_params" else exc.exit_code
        except (OSError, ValueError) as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return FAILED
        return OK
    from memoryd_client.hooks import run_hook

    return run_hook(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hook"]:  # the hook path stays lean: no argparse, no json
        if argv[1:2] in (["-h"], ["--help"]):
            from memoryd_client.hooks import help_text

            print(help_text())
            return OK
        return run_hook_command(argv[1:])
    args: Any = fast_parse(argv)
    if args is None:
        as_json = _wants_json(argv)
        first = _command_of(argv)
        parser = build_parser(only=first if first in COMMANDS else None)
        if not argv:  # `memory` alone: the help, as a usage error
            parser.print_help()
            return USAGE
        try:
            args = parser.parse_args(argv)
        except UsageError as exc:
            if not as_json:
                sys.stderr.write(exc.usage)
            return _fail(as_json, "usage", exc.message, USAGE)
        except SystemExit as exc:  # --help, --version
            return int(exc.code or 0) and USAGE
    if args.command == "hook":  # global options before `hook`: hooks take none
        return _fail(args.json, "usage", "memory hook: give `hook` first (memory hook --help)",
                     USAGE)
    if args.command == "mcp":
        from memoryd_client.mcp_server import run_mcp

        if args.socket:  # the MCP server's client finds the socket as every client does
            os.environ["MEMORYD_SOCKET"] = args.socket
        return run_mcp(args.agent)
    from memoryd_client.client import Client

    try:
        # a person typing is the "terminal" channel (feedback, release); a script or an
        # agent's shell is "cli" (memoryd.server.binding)
        channel = "terminal" if sys.stdin is not None and sys.stdin.isatty() else "cli"
        with Client(args.socket, timeout_s=args.timeout, channel=channel) as client:
            return run(args, client)
    except UsageError as exc:
        return _fail(args.json, "usage", exc.message, USAGE)
    except MemorydError as exc:
        if args.command == "file" and exc.code != "unreachable":  # the memory tool refused
            return _fail(args.json, exc.code, exc.message, FAILED)
        if exc.code in ("bad_params", "unknown_method", "config"):  # the caller's mistake
            return _fail(args.json, exc.code, exc.message, USAGE)
        return _fail(args.json, exc.code, exc.message, exc.exit_code)
    except OSError as exc:  # a file of export/import
        if isinstance(exc, BrokenPipeError):
            return OK
        return _fail(args.json, "io", f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "),
                     FAILED)
    except KeyboardInterrupt:
        return FAILED
