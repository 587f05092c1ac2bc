"""``memoryd``: run the daemon, maintain its index, run it at login (``memoryd service``).

Exit codes: 0 clean stop, 1 crash, 2 usage error, 3 startup failure (bad config, socket
already in use, database schema newer than the code). ``memoryd service``: 0 done, 1 not done
(one line says why), 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time

from memoryd import __version__
from memoryd.config import load_config
from memoryd.errors import STARTUP_FAILURE, MemorydError, StartupError

log = logging.getLogger("memoryd")


def setup_logging(level: str) -> None:
    under_journal = bool(os.environ.get("JOURNAL_STREAM"))
    fmt = "%(levelname)s %(name)s: %(message)s" if under_journal else \
        "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=level.upper(), format=fmt, stream=sys.stderr)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # it logs every batch at INFO


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memoryd",
        description="memoryd: local memory for AI agents. State lives in $MEMORYD_HOME "
        "(default: the platform's user data dir).",
    )
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    parser.add_argument("--log-level", default=os.environ.get("MEMORYD_LOG_LEVEL", "info"),
                        choices=["debug", "info", "warning", "error"], help="default: info")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands.add_parser("serve", help="run the daemon in the foreground (SIGTERM stops it)")
    reindex = commands.add_parser(
        "reindex", help="rebuild the database from the ledgers and the transcript archives "
        "(the daemon must be stopped)")
    reindex.add_argument("--no-vectors", action="store_true",
                         help="skip embedding; the daemon embeds the backlog when it starts")
    add_service_parser(commands)
    return parser


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def add_service_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    service = commands.add_parser(
        "service",
        help="run memoryd at login: a systemd user unit (Linux), a launchd agent (macOS)",
        description="Run this installation's memoryd at login under the user's service manager: "
        "~/.config/systemd/user/memoryd.service (systemd) or "
        "~/Library/LaunchAgents/dev.memoryd.agent.plist (launchd). Exit codes: 0 done, 1 not "
        "done (one line says why), 2 usage error.")
    service.add_argument("--manager", choices=["systemd", "launchd"],
                         help="default: launchd on macOS, systemd elsewhere")
    actions = service.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("install", help="write the unit for this installation, enable and start "
                       "it; run again, it changes nothing and says so")
    actions.add_parser("uninstall", help="stop and disable memoryd, remove what install wrote")
    actions.add_parser("status", help="installed, enabled, running (exit 0 only when it runs)")
    actions.add_parser("start", help="start memoryd through the service manager")
    actions.add_parser("stop", help="stop memoryd through the service manager")
    logs = actions.add_parser("logs", help="the daemon's log: the journal (systemd) or "
                              "~/Library/Logs/memoryd/memoryd.log (launchd)")
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


def run_reindex(no_vectors: bool) -> int:
    from memoryd.store.rebuild import reindex

    config = load_config()
    started = time.monotonic()
    counts = reindex(config, embed=not no_vectors)
    print(
        f"reindexed {counts['entries']} entries from {counts['ledgers']} ledgers "
        f"({counts['records']} records) and {counts['archives']} transcript archives "
        f"({counts['restored']} entries, {counts['archived']} archived first), "
        f"{counts['vectors']} vectors, the journal of {counts['runs']} pass runs, "
        f"in {time.monotonic() - started:.1f} s into {config.db_path}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    setup_logging(args.log_level)
    try:
        if args.command == "serve":
            return run_serve()
        if args.command == "service":
            from memoryd.service import run_service

            return run_service(args.action, args.manager, getattr(args, "lines", 50),
                               getattr(args, "follow", False))
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
