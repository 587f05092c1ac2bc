"""``memoryd``: run the daemon and maintain its index.

Exit codes: 0 clean stop, 1 crash, 2 usage error, 3 startup failure (bad config, socket
already in use, database schema newer than the code).
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
    return parser


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
        f"{counts['vectors']} vectors, "
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
