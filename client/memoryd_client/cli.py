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

TYPE_CHECKING = False  # see memoryd_client/__init__.py

from memoryd_client import views
from memoryd_client.errors import MemorydError, UsageError

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
#: Commands whose requests can take long: on a terminal they show the daemon's progress on
#: one line of stderr (memoryd_client.progress_view).
PROGRESS_COMMANDS = ("import", "pass", "undo", "promote", "notebook", "purge", "sources",
                     "reload", "extract")
#: The progress line being shown (taken away before anything else is printed).
_progress: Any = None


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


def here_directory() -> str:
    """`--here`: this directory, for its repository's entries and the global ones; outside a
    git repository there is no such project, and saying so beats an empty answer."""
    from memoryd_client.project import repository_of

    cwd = os.getcwd()
    if repository_of(cwd) is None:
        raise UsageError(f"--here: not in a git repository ({cwd}); --here means this "
                         "repository's entries and the global ones. Run it inside a "
                         "repository, or name one with --project DIR")
    return cwd


def _print_status(status: dict[str, Any]) -> None:
    from memoryd_client.status_view import print_status  # health line first, then details

    print_status(status)


def run(args: argparse.Namespace, client: Client) -> int:
    command = args.command
    if command == "status":
        result = client.status(sources=args.sources)

        def show_status(r: dict[str, Any]) -> None:
            _print_status(r)
            if args.sources:
                views.print_sources(r)

        _emit(args, result, show_status)
        return OK
    if command == "sources":
        if args.sources_command == "add":
            if args.project and args.notebook_lines is not None:
                raise UsageError("memory sources add: --notebook-lines is a glob source's "
                                 "(NAME PATH), not a project's")
            if args.project:
                result = client.sources("add", project_root=args.project)
            elif args.name and args.path and args.kind:
                fmt = args.format or ("markdown" if args.kind == "memory" else "generic")
                result = client.sources("add", name=args.name, path=args.path, kind=args.kind,
                                        format=fmt, agent=args.agent,
                                        notebook_lines=args.notebook_lines)
            elif args.name and not args.path:  # a built-in that `sources remove` disabled
                result = client.sources("add", name=args.name, kind=args.kind,
                                        format=args.format, agent=args.agent,
                                        notebook_lines=args.notebook_lines)
            else:
                raise UsageError("memory sources add: give NAME PATH --kind KIND, NAME of a "
                                 "disabled built-in, or --project DIR")
        elif args.sources_command == "remove":
            result = client.sources("remove", name=args.name)
        else:
            result = client.sources("list")
        _emit(args, result, views.print_sources)
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
                    print(f"{f['bytes']:>8}  {views.when(f['modified'])}  {f['path']}")
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
        cwd = args.cwd or os.getcwd()
        result = client.context(args.agent, cwd=cwd, prompt=args.prompt, budget=args.budget)

        def show_context(r: dict[str, Any]) -> None:
            if r["text"]:
                print(r["text"])
            else:  # stdout stays empty for scripts; a person learns why there is nothing
                what = "for this prompt " if args.prompt else ""
                print(f"(nothing {what}for {args.agent} in {os.path.abspath(cwd)})",
                      file=sys.stderr)

        _emit(args, result, show_context)
        return OK
    if command == "explain":
        result = client.explain(args.session)
        _emit(args, result, views.print_injections)
        return OK
    if command == "session" and args.session_action == "show":
        result = client.session(args.id)

        def show_session(r: dict[str, Any]) -> None:
            s = r["session"]
            print(f"session {s['id']} ({s['harness']}, agent {s['agent']})")
            for name in ("cwd", "project", "transcript_path"):
                if s.get(name):
                    print(f"  {name}: {s[name]}")
            print(f"  started {views.when(s.get('started'))}, last seen "
                  f"{views.when(s.get('last_seen'))}"
                  + (f", closed {views.when(s['closed'])}" if s.get("closed") else ", open"))
            print(f"  user messages: {s['user_messages']}")
            print(f"  entries from this session: {len(r['entries'])}")
            for entry in r["entries"]:
                print("    " + views.entry_line(entry))
            views.print_injections({"injections": r["injections"]})

        _emit(args, result, show_session)
        return OK
    if command in ("sessions", "session"):  # `memory sessions` is `memory session list`
        result = client.sessions(agent=args.agent, project=args.project, limit=args.limit)
        _emit(args, result, views.print_sessions)
        return OK
    if command == "store":
        result = client.remember(
            args.agent, args.category, args.text,
            kind=args.kind, key=args.key, confidence=args.confidence, force=args.force,
            polarity=args.polarity,
            tags=[t for t in (args.tags or "").split(",") if t.strip()] or None,
            is_global=args.is_global,  # else the project of this directory (the client's cwd)
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
                for c in r.get("corrects") or []:  # memoryd.passes.corrections
                    if c["action"] == "dispute":
                        print(f"disputes {c['entry']['id']}: {c['entry']['text']} ({c['why']}; "
                              "both kept until you forget or supersede one)")
                if r.get("run") and any(c["action"] == "supersede" for c in r["corrects"]):
                    print(f"recorded as {r['run']}: `memory undo {r['run']}` takes it back")
                elif r.get("run"):
                    print(f"recorded as {r['run']} (memory pass show {r['run']})")
                if r["entry"]["status"] == "superseded":
                    print(f"kept as superseded: an entry with key {r['entry']['key']} has higher confidence")
            else:
                kind = "exact duplicate" if r["duplicate"] == "exact" else \
                    f"near duplicate (cosine {r['cosine']:.2f}; --force stores it anyway)"
                print(f"not stored: {kind} of", file=sys.stderr)
                views.print_entry(r["entry"])

        _emit(args, result, show)
        return OK if result["stored"] else FAILED
    if command == "search":
        filters: dict[str, Any] = {
            "limit": args.limit,
            "category": None if args.category == "-" else args.category,
            "kind": args.kind, "tags": args.tags, "since": args.since, "until": args.until,
            "status": args.status, "min_score": args.min_score,
            "project": args.project, "cwd": here_directory() if args.here else None,
        }
        agents = [a for a in args.agent.split(",") if a]
        filters["agents"] = agents
        result = client.search(args.query, **filters)
        if not args.all and not args.json:
            views.print_hits(result, show_all=False)
        else:
            _emit(args, result, views.print_hits)
        return OK if any(hit["match"] for hit in result["hits"]) else FAILED
    if command == "get":
        _emit(args, client.get(args.id), views.print_entry)
        return OK
    if command == "forget":
        _emit(args, client.forget(args.id, agent=args.agent, reason=args.reason),
              lambda e: print(f"forgotten {e['id']}" + views.edited(e, "removed from")))
        return OK
    if command == "supersede":
        result = client.supersede(args.id, args.text, agent=args.agent)
        _emit(args, result, lambda r: print(f"stored {r['entry']['id']}, superseding "
                                            f"{r['superseded']['id']}" + views.edited(r, "in")))
        return OK
    if command == "history":
        if not args.id and not (args.agent and args.key):
            raise UsageError("memory history: give an ID, or --agent and --key")
        result = client.history(args.id, agent=args.agent, key=args.key)

        def show_history(r: dict[str, Any]) -> None:
            for entry in r["entries"]:
                views.print_entry(entry)
            for event in r["events"]:
                print(f"{views.when(event['ts'])}  {event['action']:<10} {event['id']}  by {event['actor'] or '-'}")

        _emit(args, result, show_history)
        return OK
    if command in ("pass", "undo", "promote", "notebook"):
        from memoryd_client import pass_commands

        return pass_commands.run(args, client, _emit)
    if command in LIST_COMMANDS:
        from memoryd_client import list_commands

        return list_commands.run(args, client, _emit, views.entry_line)
    if command == "doctor":  # runs its client-side checks with the daemon down too
        from memoryd_client import doctor

        return doctor.run(args, client, _emit)
    if command in ("purge", "release"):
        from memoryd_client import trust_commands

        return trust_commands.run(args, client, _emit)
    raise AssertionError(command)  # argparse guarantees a known command


def _clear_progress() -> None:
    if _progress is not None:
        _progress.clear()


def _emit(args: argparse.Namespace, result: Any, show: Any) -> None:
    _clear_progress()
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
    _clear_progress()
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
                       "edited as text, through symlinks, atomically: memoryd's handlers are "
                       "inserted in the layout around them and every other byte stays as it "
                       "was. When MEMORYD_HOME or MEMORYD_SOCKET is set, the hook commands carry "
                       "it, so the hooks reach the same daemon. With --project in a git "
                       "repository, the file is listed in .git/info/exclude (local): it stays "
                       "out of git status.",
            "uninstall": "Remove exactly the hooks memoryd added (recognised by their command), "
                         "with the text they brought: install then uninstall gives back the "
                         "same bytes. A file that install created is deleted when nothing else "
                         "is left in it; the line install added to .git/info/exclude goes too.",
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


def finish(code: int | None) -> None:
    """Exit with ``code``. A command that started no thread and left nothing to run at exit
    ends at once, its output flushed (os._exit): tearing the interpreter's modules down costs
    ~3 ms, a tenth of a `memory search`. Anything else exits as usual."""
    import atexit  # built in: free

    threading = sys.modules.get("threading")
    pending = getattr(atexit, "_ncallbacks", lambda: 1)()
    if not pending and (threading is None or threading.active_count() == 1):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(code)  # a closed pipe: reported as Python always does
        os._exit(code or 0)
    sys.exit(code)


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
        from memoryd_client.parser import build_parser

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

    global _progress
    if args.command in PROGRESS_COMMANDS and not args.json and sys.stderr.isatty():
        from memoryd_client.progress_view import ProgressLine

        _progress = ProgressLine()
    try:
        # a person typing is the "terminal" channel (feedback, release); a script or an
        # agent's shell is "cli" (memoryd.server.binding)
        channel = "terminal" if sys.stdin is not None and sys.stdin.isatty() else "cli"
        with Client(args.socket, timeout_s=args.timeout, channel=channel,
                    progress=_progress) as client:
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
