"""How long `memory doctor`'s two whole-store checks take: ``PRAGMA quick_check`` of the database
and the ledgers against the index (reading every ledger, then one query per agent).

The store is filled through the real write path (``Entries.remember_many``: ledger + database)
without vectors, so no model is needed; the checks are those of :mod:`memoryd.server.health`,
run the way the daemon runs them (on a read-only connection of their own, in a worker
thread: the daemon's database thread does not wait for them).

    .venv/bin/python bench/bench_doctor.py --n 100000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="entries (default 100,000)")
    parser.add_argument("--agents", type=int, default=8, help="ledgers (default 8)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-doctor-"))
    os.environ["MEMORYD_HOME"] = str(home)

    from memoryd.config import Settings, load_config
    from memoryd.server.health import Health
    from memoryd.server.params import Params
    from memoryd.store.database import Store
    from memoryd.store.entries import Entries
    from memoryd.store.ledger import Ledger

    config = load_config()
    store = Store(config.db_path)
    entries = Entries(config.remember, store, Ledger(config.ledger_dir))
    started = time.perf_counter()
    for start in range(0, args.n, 1000):
        batch = [Params("remember_many", {
            "agent": f"agent{i % args.agents}", "category": f"topic{i % 50}",
            "text": f"Entry {i}: the build for service {i % 97} needs flag --opt-{i % 13} "
                    f"and a cache warmed with dataset {i}."})
            for i in range(start, min(start + 1000, args.n))]
        entries.remember_many(batch, [None] * len(batch))
    filled = time.perf_counter() - started
    health = Health(Settings(config), time.time(), SimpleNamespace(store=store),  # type: ignore[arg-type]
                    None, None, None)

    from memoryd.store.reader import open_reader

    reader = open_reader(config.db_path)
    started = time.perf_counter()
    database = health.quick_check(reader)
    quick = time.perf_counter() - started
    started = time.perf_counter()
    ledgers = health.read_ledgers()
    read = time.perf_counter() - started
    started = time.perf_counter()
    ledger = health.ledger_index(reader, ledgers)
    compare = time.perf_counter() - started
    reader.close()
    size = config.db_path.stat().st_size + sum(p.stat().st_size for p in config.ledger_dir.iterdir())
    print(f"{args.n:,} entries in {args.agents} ledgers (filled in {filled:.0f} s; database and "
          f"ledgers {size / 1e6:.0f} MB)")
    print(f"| check | time |\n|---|---|\n| database: PRAGMA quick_check | {quick:.2f} s |")
    print(f"| ledger: read every ledger | {read:.2f} s |\n| ledger: compare with the index | "
          f"{compare:.2f} s |")
    print(f"database: {database['status']}; ledger: {ledger['status']}: {ledger['detail'][:80]}")
    store.close()
    import shutil

    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
