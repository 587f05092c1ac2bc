#!/usr/bin/env python
"""Search and remember latency under abuse, through the real daemon and client.

    python bench/bench_abuse.py               # 3,000 entries, 3 rounds
    python bench/bench_abuse.py --n 5000 --rounds 5

Starts ``python -m memoryd serve`` on a fresh MEMORYD_HOME under /tmp, stores N generated
memories with ``remember_many``, then measures in rounds, each loaded block beside a quiet one
taken right before it (the machine is shared, so a ratio within a round says more than two
absolute figures taken minutes apart):

1. **idle connections**: search round trips while 500 connections are held open and idle,
   versus the same searches with them closed;
2. **vector backfill**: the daemon is stopped, ``memoryd reindex --no-vectors`` drops every
   vector, the daemon is started again and embeds the whole store in the background; search and
   remember round trips while that backfill runs, versus quiet ones once it has finished.

Every search query is new (so each is embedded, the query cache never answers). Prints one
table of p50/p99 per block and the loaded/quiet ratios of p99, per round and their median.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from bench_store import DaemonProcess, percentile  # noqa: E402
from corpus import Corpus  # noqa: E402
from memoryd_client import Client  # noqa: E402

IDLE_CONNECTIONS = 500
SEARCHES = 60
REMEMBERS = 30
BATCH = 256


def timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def searches(client: Client, queries: list[str]) -> list[float]:
    return [timed(lambda q=q: client.search(q, agents=["*"], limit=10)) for q in queries]


def remembers(client: Client, texts: list[str]) -> list[float]:
    return [timed(lambda t=t: client.remember("bench", "notes", t, force=True)) for t in texts]


def summary(samples: list[float]) -> tuple[float, float]:
    return percentile(samples, 50) * 1000, percentile(samples, 99) * 1000


def fill(socket: Path, entries: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    # the terminal channel: the corpus's feedback entries stand in for what a person typed
    with Client(socket, timeout_s=600, channel="terminal") as client:
        for i in range(0, len(entries), BATCH):
            client.remember_many(entries[i:i + BATCH])
    return time.perf_counter() - started


def hold_idle(socket: Path, n: int) -> list[Client]:
    held = [Client(socket, timeout_s=30) for _ in range(n)]
    for c in held:
        c.status()  # connected and served once, then idle
    return held


def run(args: argparse.Namespace) -> int:
    home = Path(tempfile.mkdtemp(prefix="mdab-", dir="/tmp"))
    corpus = Corpus(seed=11)
    entries = corpus.entries(args.n)
    queries = corpus.queries(args.rounds * 6 * SEARCHES + 10, salt=3)
    notes = [f"bench remember {i}: {q}" for i, q in enumerate(corpus.queries(
        args.rounds * 2 * REMEMBERS, salt=5))]
    env = {**os.environ, "MEMORYD_HOME": str(home)}
    env.pop("MEMORYD_SOCKET", None)
    daemon = DaemonProcess(home)
    rows: list[tuple[str, int, str, float, float]] = []
    ratios: dict[str, list[float]] = {"search, 500 idle connections": [],
                                      "search, backfill running": [],
                                      "remember, backfill running": []}

    def take(n: int) -> list[str]:
        taken, queries[:] = queries[:n], queries[n:]
        return taken

    def take_notes(n: int) -> list[str]:
        taken, notes[:] = notes[:n], notes[n:]
        return taken

    try:
        daemon.start()
        daemon.wait_ready()
        print(f"storing {args.n} entries ...", flush=True)
        print(f"  {args.n / fill(daemon.socket, entries):.0f} entries/s", flush=True)
        for round_ in range(1, args.rounds + 1):
            with Client(daemon.socket, timeout_s=120) as client:
                searches(client, take(5))  # warm
                quiet = searches(client, take(SEARCHES))
                held = hold_idle(daemon.socket, IDLE_CONNECTIONS)
                try:
                    loaded = searches(client, take(SEARCHES))
                    connections = client.status().get("server", {}).get("connections")
                finally:
                    for c in held:
                        c.close()
            rows.append(("search, quiet", round_, "", *summary(quiet)))
            rows.append(("search, 500 idle connections", round_, f"{connections} conns",
                         *summary(loaded)))
            ratios["search, 500 idle connections"].append(summary(loaded)[1] / summary(quiet)[1])

            daemon.stop()
            subprocess.run([sys.executable, "-m", "memoryd", "reindex", "--no-vectors"],
                           env=env, cwd=HERE.parent, check=True, capture_output=True)
            daemon.start()
            daemon.wait_ready()
            with Client(daemon.socket, timeout_s=120) as client:
                backlog = client.status()["backlog"]
                started = time.perf_counter()
                during_search = searches(client, take(SEARCHES))
                during_remember = remembers(client, take_notes(REMEMBERS))
                left = client.status()["backlog"]
                while client.status()["backlog"]:
                    time.sleep(0.2)
                drained = time.perf_counter() - started
                after_search = searches(client, take(SEARCHES))
                after_remember = remembers(client, take_notes(REMEMBERS))
            note = f"backlog {backlog} -> {left}, drained in {drained:.0f} s"
            rows.append(("search, backfill running", round_, note, *summary(during_search)))
            rows.append(("search, after the backfill", round_, "", *summary(after_search)))
            rows.append(("remember, backfill running", round_, "", *summary(during_remember)))
            rows.append(("remember, after the backfill", round_, "", *summary(after_remember)))
            ratios["search, backfill running"].append(
                summary(during_search)[1] / summary(after_search)[1])
            ratios["remember, backfill running"].append(
                summary(during_remember)[1] / summary(after_remember)[1])
            print(f"round {round_} done", flush=True)
    finally:
        code = daemon.stop()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    print()
    print(f"{'block':<32} {'round':>5} {'p50 ms':>8} {'p99 ms':>8}  note")
    for name, round_, note, p50, p99 in rows:
        print(f"{name:<32} {round_:>5} {p50:>8.1f} {p99:>8.1f}  {note}")
    print()
    print(f"{'p99 loaded / quiet':<32} {'median':>8}  per round")
    for name, values in ratios.items():
        print(f"{name:<32} {statistics.median(values):>8.2f}  "
              + ", ".join(f"{v:.2f}" for v in values))
    print(f"\ndaemon exit code: {code}")
    return 0 if code == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="entries stored (default 3000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--keep", action="store_true", help="keep the state dir")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
