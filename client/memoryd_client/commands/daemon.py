"""The commands about the daemon and this installation: its state (status), its sources and
configuration (sources, reload), a check of everything (doctor); and the commands that run
without a request of their own: the agents' hooks (hook), the MCP server (mcp), the viewer
(ui), the shell completion (completion)."""

from __future__ import annotations

from memoryd_client import hooks, views, wire
from memoryd_client.command_spec import FAILED, OK, SOCKET, TIMEOUT, Arg, Command, later, plain
from memoryd_client.errors import UsageError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Args

SHELLS = ("bash", "zsh", "fish")
EXAMINE = later("doctor", "examine")
WATCH = later("status_watch", "watch")


def _add_source(args: Args, client: Client) -> Any:
    if args.project:
        given = [what for what, value in (
            ("NAME", args.name), ("PATH", args.path), ("--kind", args.kind),
            ("--format", args.format), ("--agent", args.agent),
            ("--notebook-lines", args.notebook_lines)) if value is not None]
        if given:  # they would be dropped without a word
            raise UsageError(f"memory sources add: {', '.join(given)} "
                             f"{'is' if len(given) == 1 else 'are'} a glob source's, not a "
                             "project root's (--project DIR): add each on its own")
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


def _give_hook_first(args: Args) -> int:
    raise UsageError("memory hook: give `hook` first (memory hook --help)")


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
              Arg("--contradictions", kind="flag",
                  help="every open contradiction (without it: the first 3 and how many)"),
              Arg("--watch", kind="flag", help="show it again every --interval seconds, "
                  "until Ctrl-C"),
              Arg("--interval", kind="float", default=2.0, metavar="S",
                  help="with --watch: seconds between two looks (default: 2)")),
        request=lambda a, c: c.status(sources=a.sources), show=views.show_status, watch=WATCH,
        examples=("memory status", "memory status --sources --json",
                  "memory status --contradictions", "memory status --watch",
                  "memory status --watch --interval 10 >> memoryd-status.log"),
        exits="0 the daemon answered (--watch: ended with Ctrl-C)",
        unreachable_exit="daemon unreachable (not with --watch: it waits)"),
    "sources": Command(
        help="list (the default), add or remove watched sources", progress=True,
        examples=("memory sources", "memory sources add --project ~/src/shop"), exits="0 done",
        default_action="list", actions={
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
                      Arg("--kind", kind=wire.SOURCE_KINDS, help="what the files are"),
                      Arg("--format", kind=wire.SOURCE_FORMATS,
                          help="default: markdown for memory, generic for transcripts"),
                      Arg("--agent", help="the agent, when the glob has no {agent}"),
                      Arg("--notebook-lines", kind="int", metavar="N",
                          help="the notebook pass holds this source's notebooks to N lines "
                          "(default: passes.notebook_lines, 80)"),
                      Arg("--project", metavar="DIR",
                          help="index CLAUDE.md, AGENTS.md, … in this project")),
                request=_add_source, show=plain(views.print_sources_added),
                examples=("memory sources add notes '~/notes/{agent}/**/*.md' --kind memory",
                          "memory sources add --project ~/src/shop"), exits="0 added"),
            "remove": Command(
                help="remove an added source, disable a built-in, or drop a project root",
                args=(Arg("name", help="source name, or a project root directory"),),
                request=lambda a, c: c.sources("remove", name=a.name),
                show=plain(views.print_sources_removed), examples=("memory sources remove notes",),
                exits="0 removed")}),
    "reload": Command(
        help="re-read the configuration (as SIGHUP does)", progress=True,
        request=lambda a, c: c.reload(), show=plain(views.print_reloaded),
        examples=("memory reload",),
        exits="0 reloaded", usage_exit="usage error, or a bad configuration (refused)"),
    "hook": Command(
        help=f"agent lifecycle hooks: memory hook {hooks.CHOICE} EVENT, memory hook "
        f"install|uninstall {hooks.CHOICE} (see memory hook --help)",
        globals=(), alone=_give_hook_first),
    "mcp": Command(
        help="run the MCP stdio server with the memory tools (needs the MCP SDK: pip install "
        "'mcp==2.3.0')",
        description="An MCP server on stdin/stdout; register it with your agent (example "
        "below).",
        args=(Arg("--agent", required=True, help="whose memory the tools read and write"),
              SOCKET, TIMEOUT.but(help="seconds a tool waits for the daemon (default: 30; "
                                  "above 0, at most a week)")),
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
        "loads nothing from the network. Prints the address and opens the browser at a page "
        "only you can read that leads there (the browser's command line, which other users "
        "see, holds no token). Undo, "
        "forget, release and promote accept ask for a confirmation and go through the daemon "
        "as `memory` does from this terminal. Ctrl-C stops it (docs/viewer.md).",
        args=(Arg("--no-open", kind="flag", help="print the address only; open no browser"),
              Arg("--port", kind="port", default=0, metavar="N",
                  help="listen on port N of 127.0.0.1 (default: a free one)"),
              SOCKET, TIMEOUT),
        globals=(), alone=later("ui.server", "run_command"),
        examples=("memory ui", "memory ui --no-open --port 8765"),
        exits="0 stopped (Ctrl-C)", usage_exit="usage error, or the port cannot be used"),
    "doctor": Command(
        help="check the installation: daemon, versions, MEMORYD_HOME, hooks, service, model, "
        "database, sources (exit 1 on a problem)",
        description="Check everything a working memoryd needs and say how to fix what is not "
        "right: the daemon answers; client and daemon versions agree; MEMORYD_HOME of this "
        "shell, the daemon, the service and each installed hook agree; the hooks and the "
        "service run a program that exists; the service is installed, enabled and running; "
        "the model loaded with the shipped hash; onnxruntime's telemetry is off; the database "
        "passes quick_check; every ledger entry is in the index; disk space; sources that do "
        "not exist; generic logs read without their session; skipped files and lines; "
        "backlogs. Run it when something seems wrong, and paste its --json output into a bug "
        "report. With the daemon down, the checks that need it are left out and the report "
        "says how to start it.",
        # runs its client-side checks with the daemon down too
        request=lambda a, c: EXAMINE(c), show=plain(later("doctor", "print_report")),
        exit=lambda r, a: OK if r["healthy"] else FAILED,
        examples=("memory doctor", "memory doctor --json"), unreachable_exit=None,
        exits="0 healthy (warnings allowed); 1 at least one problem (the daemon down is one)"),
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
        exits="0 printed", usage_exit="usage error (an unknown shell)", unreachable_exit=None),
}
