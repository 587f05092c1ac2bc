"""``memory``: the command line of memoryd.

Exit codes:
    0  OK (store: stored; search: something matched)
    1  the request failed (store: rejected as a duplicate; search: nothing matched)
    2  usage error
    3  the daemon is unreachable
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
            "pass", "undo", "promote", "notebook", "doctor", "purge", "release")


def _common() -> argparse.ArgumentParser:
    import argparse

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the daemon's reply as JSON")
    common.add_argument("--socket", help="daemon socket (default: $MEMORYD_SOCKET, "
                        "$MEMORYD_HOME/memoryd.sock, or the user runtime dir)")
    common.add_argument("--timeout", type=float, default=30.0, metavar="S",
                        help="seconds to wait for the daemon (default 30)")
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
    import argparse

    common = _common()
    parser = argparse.ArgumentParser(
        prog="memory",
        description="Talk to memoryd, the local memory daemon for AI agents.",
        epilog="Exit codes: 0 OK / stored / matched; 1 failed / duplicate / no match; "
        "2 usage error; 3 daemon unreachable.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add_command(name: str, **kwargs: Any) -> Any:
        if only is not None and name != only:
            return _Skipped()
        return commands.add_parser(name, **kwargs)

    status = add_command("status", parents=[common], help="show the daemon's state")
    status.add_argument("--sources", action="store_true",
                        help="also each watched source: files, errors, skipped lines")

    sources = add_command("sources", parents=[common], help="list, add or remove watched sources")
    sources_commands = sources.add_subparsers(dest="sources_command", metavar="ACTION", required=True)
    sources_commands.add_parser("list", parents=[common], help="every source and its state")
    add = sources_commands.add_parser(
        "add", parents=[common], help="watch a new glob, or a project root with --project",
        description="Add a source: a glob with an optional {agent} placeholder (or --agent), "
        "e.g. memory sources add notes '~/notes/{agent}/**/*.md' --kind memory. "
        "Saved in sources.toml beside config.toml; applied at once.")
    add.add_argument("name", nargs="?")
    add.add_argument("path", nargs="?", help="glob (quote it)")
    add.add_argument("--kind", choices=["memory", "transcript"])
    add.add_argument("--format", choices=["markdown", "claude-code", "codex", "generic"],
                     help="default: markdown for memory, generic for transcripts")
    add.add_argument("--agent", help="the agent, when the glob has no {agent}")
    add.add_argument("--project", metavar="DIR", help="index CLAUDE.md, AGENTS.md, … in this project")
    remove = sources_commands.add_parser(
        "remove", parents=[common], help="remove an added source, disable a built-in, or drop a project root")
    remove.add_argument("name", help="source name, or a project root directory")

    add_command("reload", parents=[common], help="re-read the configuration (as SIGHUP does)")
    add_command("hook", help="agent lifecycle hooks: memory hook claude-code|codex EVENT, "
                        "memory hook install|uninstall claude-code|codex (see memory hook --help)")

    files = add_command("file", parents=[common],
                                help="the memory tools: list, read, write, replace, insert files "
                                "in an agent's memory directory")
    file_actions = files.add_subparsers(dest="file_action", metavar="ACTION", required=True)
    for action, help_text in (("list", "the agent's memory files"), ("read", "print a file"),
                              ("write", "write a whole file (text from --text or stdin)"),
                              ("replace", "replace a unique match of --old with --new"),
                              ("insert", "insert --text before --line (0: at the top)")):
        sub = file_actions.add_parser(action, parents=[common], help=help_text)
        sub.add_argument("--agent", required=True)
        if action != "list":
            sub.add_argument("path", help="relative to the agent's memory directory")
        if action in ("write", "insert"):
            sub.add_argument("--text", help="default: read standard input")
        if action == "replace":
            sub.add_argument("--old", required=True)
            sub.add_argument("--new", required=True)
        if action == "insert":
            sub.add_argument("--line", type=int, required=True)

    extract = add_command(
        "extract", parents=[common], help="extract lessons and facts from a finished session",
        description="Without --dry-run, stores what is accepted. The report maps each user "
        "message to the entries taken from it and says why each was accepted or rejected.")
    extract.add_argument("session")
    extract.add_argument("--dry-run", action="store_true", help="report only, store nothing")

    mcp = add_command("mcp", help="run the MCP stdio server with the memory tools "
                              "(needs the MCP SDK: pip install 'mcp==2.3.0')")
    mcp.add_argument("--agent", required=True, help="whose memory the tools read and write")

    context = add_command("context", parents=[common],
                                  help="print the memory block an agent would get at session start")
    context.add_argument("--agent", required=True)
    context.add_argument("--cwd", default=None, help="working directory (default: this one)")
    context.add_argument("--prompt", help="show what the prompt hook would inject for this prompt")
    context.add_argument("--budget", type=int,
                         help="characters (default 8000; with --prompt 2000)")

    explain = add_command("explain", parents=[common],
                                  help="what was injected into a session, and why")
    explain.add_argument("session", nargs="?", help="session id (default: the latest injection)")

    session = add_command("session", parents=[common], help="one session: memory session show ID")
    session.add_argument("action", choices=["show"])
    session.add_argument("id")

    sessions = add_command("sessions", parents=[common], help="list recorded agent sessions")
    sessions.add_argument("--agent")
    sessions.add_argument("--project")
    sessions.add_argument("--limit", type=int, default=50)

    store = add_command(
        "store", parents=[common], help="remember TEXT in AGENT's CATEGORY",
        description="Store an entry. Exits 0 when stored, 1 when rejected as a duplicate "
        "(the existing entry is printed).")
    store.add_argument("agent")
    store.add_argument("category")
    store.add_argument("text")
    store.add_argument("--tags", help="comma-separated tags")
    store.add_argument("--key", help="dotted key (e.g. pref.commit_style); makes a fact")
    store.add_argument("--kind", choices=["fact", "lesson", "feedback", "note", "turn", "summary"],
                       help="feedback (the user's own words) only from a terminal")
    store.add_argument("--confidence", type=float, help="0..1 (default 0.95)")
    store.add_argument("--polarity", choices=["negative", "positive"],
                       help="for lessons: a \"don't\" (negative) or a \"do\" (positive)")
    store.add_argument("--force", action="store_true", help="store even if a near duplicate exists")
    store.add_argument("--global", dest="is_global", action="store_true",
                       help="not tied to the project of the current directory")

    search = add_command(
        "search", parents=[common], help="search AGENT's memory",
        description="Hybrid keyword + vector search. AGENT may be a comma-separated list or "
        "'*' for every agent; CATEGORY '-' means any category. Exits 0 when something matched "
        "(a hit whose probability of being relevant reaches the threshold for "
        "search.match_precision), 1 when nothing did.")
    search.add_argument("agent")
    search.add_argument("category")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--kind", help="comma-separated kinds")
    search.add_argument("--tags", help="comma-separated tags; all must be present")
    search.add_argument("--project", help="only entries of this project directory")
    search.add_argument("--here", action="store_true", help="only entries of the current project")
    search.add_argument("--since", help="epoch seconds, ISO date, or an age like 7d")
    search.add_argument("--until", help="epoch seconds, ISO date, or an age like 7d")
    search.add_argument("--status", help="active (default), superseded, forgotten, or any")
    search.add_argument("--min-score", type=float, metavar="P",
                        help="a match needs at least this probability of relevance (0..1; "
                        "default: the one giving search.match_precision)")
    search.add_argument("--all", action="store_true",
                        help="list ranked hits that are not matches too (exit code unchanged)")

    get = add_command("get", parents=[common], help="show one entry")
    get.add_argument("id", help="entry id or a unique prefix of it")

    forget = add_command("forget", parents=[common],
                                 help="forget an entry (soft: journaled, kept in history)")
    forget.add_argument("id")
    forget.add_argument("--agent", help="act as this agent (must own the entry; default: "
                        "the entry's own agent)")
    forget.add_argument("--reason")

    supersede = add_command("supersede", parents=[common],
                                     help="replace an entry's text; the old one is kept as superseded")
    supersede.add_argument("id")
    supersede.add_argument("text")
    supersede.add_argument("--agent", help="act as this agent (must own the entry; default: "
                           "the entry's own agent)")

    history = add_command("history", parents=[common],
                                  help="an entry's versions and journal (by id, or agent + key)")
    history.add_argument("id", nargs="?")
    history.add_argument("--agent")
    history.add_argument("--key")

    from memoryd_client import pass_commands

    pass_commands.add_parsers(add_command, common)
    if only in (None, "doctor"):  # a long module: not loaded for the other commands
        from memoryd_client import doctor

        doctor.add_parsers(add_command, common)
    if only in (None, "purge", "release"):
        from memoryd_client import trust_commands

        trust_commands.add_parsers(add_command, common)
    return parser


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
    if hits:
        print("  relevance  age  id  agent/category kind: text   (* = match)", file=sys.stderr)
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
                print("Error: give NAME PATH --kind KIND, NAME of a disabled built-in, or "
                      "--project DIR", file=sys.stderr)
                return USAGE
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
    if command == "session":
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
    if command == "sessions":
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
            print("Error: give an ID, or --agent and --key", file=sys.stderr)
            return USAGE
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
        parser = argparse.ArgumentParser(
            prog=f"memory hook {argv[0]}", description=descriptions[argv[0]],
            epilog="The previous contents are backed up in memoryd's state dir (hook-backups/, "
                   "named after the file's real path); per file the first backup (before memoryd "
                   "first changed it) and the latest are kept. Exit codes: 0 done, 1 the file "
                   "could not be changed (not JSON, not writable), 2 usage error.")
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
    if argv[:1] == ["hook"]:
        if argv[1:2] in (["-h"], ["--help"]):
            from memoryd_client.hooks import help_text

            print(help_text())
            return OK
        return run_hook_command(argv[1:])
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(only=first if first in COMMANDS else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and USAGE
    if args.command == "mcp":
        from memoryd_client.mcp_server import run_mcp

        return run_mcp(args.agent)
    from memoryd_client.client import Client

    try:
        # a person typing is the "terminal" channel (feedback, release); a script or an
        # agent's shell is "cli" (memoryd.server.binding)
        channel = "terminal" if sys.stdin is not None and sys.stdin.isatty() else "cli"
        with Client(args.socket, timeout_s=args.timeout, channel=channel) as client:
            return run(args, client)
    except MemorydError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        if exc.code in ("bad_params", "unknown_method", "config"):  # the caller's mistake
            return USAGE
        return exc.exit_code
    except KeyboardInterrupt:
        return FAILED
    except BrokenPipeError:
        return OK
