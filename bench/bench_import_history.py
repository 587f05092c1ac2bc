#!/usr/bin/env python
"""`memory import-history`'s rate, through the real daemon and client.

    python bench/bench_import_history.py                  # 200 sessions a harness, 5 exchanges
    python bench/bench_import_history.py --sessions 50    # a smaller fixture, to try it

The fixture is tests/history_home.py's: Claude Code, Codex and generic JSONL sessions in their
real formats (every other one with a lesson in the user's words), dated 10 days back. The
daemon (``python -m memoryd serve``, HOME and MEMORYD_HOME in a temporary directory) starts on
an empty home; the fixture is written beside it and moved in (one rename a harness), and
`import-history` is asked for at once: the watcher and the import index the files together,
as they do when the import is run while memoryd starts up. Measured:

- indexing: from the move to the end of the import's indexing phase (every file indexed, by
  either), in exchanges and messages a second;
- extraction: the import's extraction phase, in sessions a second;
- vectors: from the move until the embedding backlog is empty (the turns searchable by
  meaning, not only by keyword), in entries a second.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "client"))

from history_home import GENERIC_SOURCE, WRITERS, plant  # noqa: E402
from memoryd_client import Client, DaemonUnreachableError  # noqa: E402


def wait(condition, timeout_s: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the daemon did not get there in time")
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200, help="sessions per harness")
    parser.add_argument("--exchanges", type=int, default=5, help="exchanges per session")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mdih-", dir="/tmp"))
    home, state, staging = base / "user", base / "state", base / "staging"
    for directory in (home, state, staging):
        directory.mkdir()
    (state / "config.toml").write_text(GENERIC_SOURCE)
    env = {**os.environ, "HOME": str(home), "MEMORYD_HOME": str(state),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "client")])}
    planted = plant(staging, base / "none", sessions=args.sessions, exchanges=args.exchanges)
    sessions = sum(len(ids) for ids in planted.sessions.values())
    exchanges = sessions * args.exchanges
    size = sum(p.stat().st_size for paths in planted.files.values() for p in paths)
    with (base / "daemon.log").open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env,
                                stdout=subprocess.DEVNULL, stderr=log)
    try:
        def ready() -> bool:
            try:
                with Client(state / "memoryd.sock", timeout_s=5) as client:
                    return bool(client.status()["vector_index"]["ready"])
            except DaemonUnreachableError:
                return False

        wait(ready, 60)
        began = time.time()
        for top in (".claude", ".codex", "chats"):  # one rename each: the watcher sees a
            os.rename(staging / top, home / top)     # directory moved in
        with Client(state / "memoryd.sock", timeout_s=60) as client:
            result = client.import_history()
            wait(lambda: client.status()["backlog"] == 0, 1800)
            embedded = time.time()
            status = client.status()
        indexing_s = result["indexing_ended"] - began
        extracting_s = result["finished"] - result["indexing_ended"]
        entries = sum(status["entries"].values())
        report = {
            "harnesses": sorted(WRITERS), "sessions": sessions, "exchanges": exchanges,
            "messages": planted.turns, "bytes": size,
            "indexing_s": round(indexing_s, 2),
            "exchanges_per_s": round(exchanges / indexing_s, 1),
            "messages_per_s": round(planted.turns / indexing_s, 1),
            "mb_per_s": round(size / 1e6 / indexing_s, 2),
            "extracting_s": round(extracting_s, 2),
            "sessions_per_s": round(sessions / extracting_s, 1),
            "vectors_s": round(embedded - began, 1),
            "entries": entries,
            "entries_embedded_per_s": round(entries / (embedded - began), 1),
            "counts": result["counts"],
        }
        print(json.dumps(report, indent=2))
        return 0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
