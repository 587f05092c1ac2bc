"""How long `memory doctor` takes on a big store, and its two whole-store checks in it:
``PRAGMA quick_check`` of the database, and the ledgers against the index (reading every
ledger, then one query per agent).

The store is filled through the real daemon and client (``remember_many``: ledger + database)
with the model off (``MEMORYD_EMBED_MODEL`` pointing nowhere: keyword-only), so no vectors are
made; then ``doctor`` is asked through the client ``--runs`` times, as `memory doctor` asks it.
The daemon runs the two checks on a read-only connection of their own in a worker thread (its
database thread does not wait for them); the database check names its own time, the rest of
the request is mostly the ledger check.

    .venv/bin/python bench/bench_doctor.py --n 100000
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_store import DaemonProcess, progress  # noqa: E402
from memoryd_client import Client, MemorydError  # noqa: E402

BATCH = 1_000  # remember_many's most per call
QUICK_CHECK_TIME = re.compile(r"quick_check ok in ([0-9.]+) s")


def fill(client: Client, n: int, agents: int) -> None:
    for start in range(0, n, BATCH):
        client.remember_many([{
            "agent": f"agent{i % agents}", "category": f"topic{i % 50}",
            "text": f"Entry {i}: the build for service {i % 97} needs flag --opt-{i % 13} "
                    f"and a cache warmed with dataset {i}."}
            for i in range(start, min(start + BATCH, n))])
        if start % (BATCH * 20) == 0:
            progress(f"  remembered {start:,}/{n:,}")


def wait_up(client: Client, timeout_s: float = 120.0) -> None:
    """Until the daemon answers (there is no model to wait for)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.status()
            return
        except MemorydError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def check(reply: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in reply["checks"] if c["check"] == name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="entries (default 100,000)")
    parser.add_argument("--agents", type=int, default=8, help="ledgers (default 8)")
    parser.add_argument("--runs", type=int, default=3, help="doctor requests (default 3)")
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="mdd-", dir="/tmp"))
    daemon = DaemonProcess(state)
    daemon.env["HOME"] = str(state / "home")
    daemon.env["MEMORYD_EMBED_MODEL"] = str(state / "no-model")  # keyword-only: no vectors
    (state / "home").mkdir()
    daemon.start()
    try:
        with Client(daemon.socket, timeout_s=900) as client:
            wait_up(client)
            started = time.perf_counter()
            fill(client, args.n, args.agents)
            filled = time.perf_counter() - started
            runs = []
            for _ in range(args.runs):
                started = time.perf_counter()
                reply = client.call("doctor")
                runs.append((time.perf_counter() - started, reply))
    finally:
        code = daemon.stop()
    size = sum(p.stat().st_size for p in [state / "memoryd.db", *(state / "ledger").iterdir()])
    shutil.rmtree(state, ignore_errors=True)
    print(f"{args.n:,} entries in {args.agents} ledgers (filled through the daemon in "
          f"{filled:.0f} s; database and ledgers {size / 1e6:.0f} MB); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| run | doctor, round trip | of it the database's quick_check | the rest (mostly the ledger check) |")
    print("|---|---:|---:|---:|")
    for number, (took, reply) in enumerate(runs, 1):
        found = QUICK_CHECK_TIME.search(check(reply, "database")["detail"])
        quick = float(found.group(1)) if found else None
        print(f"| {number} | {took:.2f} s | "
              + (f"{quick:.1f} s | {took - quick:.2f} s |" if quick is not None else "? | ? |"))
    last = runs[-1][1]
    for name in ("database", "ledger"):
        print(f"{name}: {check(last, name)['status']}: {check(last, name)['detail'][:100]}")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
