"""The `memory` command's argparse parser: every command, its options and help. Built only when
a command line is not one that :func:`memoryd_client.cli.fast_parse` reads by itself (a plain
`memory store` or `memory search`), and then only for the command about to run."""

from __future__ import annotations

from memoryd_client.errors import UsageError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    import argparse
    from typing import Any


#: What `--project` means (search, list, recent, export).
PROJECT_HELP = ("only entries of DIR's project (the git repository DIR is in, or DIR outside "
                "git; DIR may be relative)")
#: What `--here` means (search, list, recent, export).
HERE_HELP = ("this repository's entries and the global ones (the entries its agents' blocks "
             "show); outside a git repository an error (exit 2)")


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
    from memoryd_client.cli import LIST_COMMANDS, PASS_COMMANDS  # loaded: it is calling us
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
    add.add_argument("--notebook-lines", type=int, metavar="N",
                     help="the notebook pass holds this source's notebooks to N lines "
                     "(default: passes.notebook_lines, 80)")
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
        parser_.add_argument("--project", metavar="DIR",
                             help="only sessions in DIR's project (the git repository DIR is "
                             "in; DIR may be relative)")
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
    search.add_argument("--project", metavar="DIR", help=PROJECT_HELP)
    search.add_argument("--here", action="store_true", help=HERE_HELP)
    search.add_argument("--since", metavar="T", help="epoch seconds, ISO date, or an age like 7d")
    search.add_argument("--until", metavar="T", help="epoch seconds, ISO date, or an age like 7d")
    search.add_argument("--status", help="active (default), superseded, forgotten, archived, or any")
    search.add_argument("--min-score", type=float, metavar="P",
                        help="a match needs at least this probability of relevance (0..1; "
                        "default: the one giving search.match_precision)")
    search.add_argument("--all", action="store_true",
                        help="list ranked hits that are not matches too (exit code unchanged)")

    get = add_command("get", parents=[common], help="show one entry")
    get.add_argument("id", help="entry id or a unique prefix of it (4+ characters)")

    forget = add_command("forget", parents=[common],
                         help="forget an entry (soft: journaled, kept in history; the "
                         "command prints the `memory undo RUN` that takes it back)")
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
