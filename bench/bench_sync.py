"""Sync through git at size: `python bench/bench_sync.py [--base 100000] [--n 10000]`.

Two machines (two MEMORYD_HOMEs, each with a `memoryd serve` process) and a bare remote under
a temporary directory. Machine A starts with a store of --base entries (its ledger written
before its daemon starts, so the daemon's replay at start indexes them; their vectors are made
by the backfill, in the background, as on any machine that pulls a big store), pushes it, and
B pulls it. Then each writes --n new entries through the API (remember_many), and they sync
both ways: A pushes, B merges A's n, applies them and pushes its own, A merges B's.

Prints, for each sync: its time in all, the merge's time and the apply's on the database
thread (what a search could wait for), the records applied and the replay rate (records
applied per second of the apply), and the remote's size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "client")]

from memoryd_client import Client, DaemonUnreachableError  # noqa: E402

from memoryd.store.ledger import encode_record  # noqa: E402
from memoryd.text import content_hash  # noqa: E402

WORDS = ["deploy", "build", "cache", "token", "queue", "index", "shard", "replica", "schema", "migration", "branch", "review", "release", "rollback", "config", "secret", "metric", "alert", "trace", "span", "budget", "latency", "throughput", "vector", "ledger", "archive", "notebook", "lesson", "fact", "session", "transcript", "agent", "harness"]


def sentence(rng: random.Random, n: int) -> str:
    return f"note {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18)))


def base_ledger(path: Path, count: int, agent: str) -> None:
    rng = random.Random(7)
    now = time.time() - 86400
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for n in range(count):
            text = sentence(rng, n)
            ts = now + n * 0.001
            entry = {"agent": agent, "category": "notes", "confidence": 0.95, "created": ts,
                     "hash": content_hash(text), "key": None, "kind": "note", "line_end": None,
                     "line_start": None, "message_id": None, "polarity": None, "project": None,
                     "session": None, "source": None, "status": "active",
                     "superseded_by": None, "tags": [], "text": text,
                     "uid": f"{rng.getrandbits(76):019x}", "updated": ts, "via": "api",
                     "writer": agent}
            out.write(encode_record({"op": "remember", "ts": ts, "entry": entry}))


class Machine:
    def __init__(self, home: Path) -> None:
        self.home = home
        (home / "user").mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "MEMORYD_HOME": str(home), "HOME": str(home / "user")}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        began = time.perf_counter()
        with (self.home / "daemon.log").open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"],
                                         env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        while True:
            assert self.proc.poll() is None, (self.home / "daemon.log").read_text()
            try:
                with self.client() as c:
                    c.status()
                return time.perf_counter() - began
            except DaemonUnreachableError:
                time.sleep(0.2)

    def client(self) -> Client:
        return Client(self.home / "memoryd.sock", timeout_s=3600)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)

    def sync(self, label: str) -> dict:
        began = time.perf_counter()
        with self.client() as c:
            reply = c.sync()
        took = time.perf_counter() - began
        applied = reply["applied"]
        rate = applied["records"] / applied["apply_s"] if applied["apply_s"] else 0.0
        print(f"{label}: {took:.1f} s in all; merge {applied['merge_s']:.2f} s, apply "
              f"{applied['apply_s']:.2f} s on the database thread; {applied['records']:,} "
              f"records applied ({rate:,.0f} a second); pushed {reply['pushed']}")
        return reply


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=100_000, help="entries in the store")
    parser.add_argument("--n", type=int, default=10_000, help="new entries on each machine")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="bsync-", dir="/tmp"))
    remote = top / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    a, b = Machine(top / "a"), Machine(top / "b")
    try:
        base_ledger(a.home / "ledger" / "bench.jsonl", args.base, "bench")
        print(f"store of {args.base:,} entries; {args.n:,} new on each machine")
        print(f"A starts (replays its {args.base:,} records): {a.start():.1f} s")
        b.start()
        for m in (a, b):
            with m.client() as c:
                c.sync_init(str(remote))
        a.sync("A pushes the store")
        b.sync(f"B pulls the store ({args.base:,})")
        rng = random.Random(11)
        for m, name in ((a, "A"), (b, "B")):
            began = time.perf_counter()
            with m.client() as c:
                for start in range(0, args.n, 1000):
                    c.remember_many([{"agent": "bench", "category": "notes",
                                      "text": f"{name} {sentence(rng, start + i)}"}
                                     for i in range(min(1000, args.n - start))])
            print(f"{name} writes {args.n:,} entries: {time.perf_counter() - began:.1f} s")
        a.sync(f"A pushes its {args.n:,}")
        b.sync(f"B merges A's {args.n:,}, pushes its own")
        a.sync(f"A merges B's {args.n:,}")
        counts = []
        for m in (a, b):
            with m.client() as c:
                counts.append(c.list_entries(agents=["bench"], limit=1)["total"])
        size = sum(f.stat().st_size for f in remote.rglob("*") if f.is_file())
        print(f"entries: A {counts[0]:,}, B {counts[1]:,} (expected "
              f"{args.base + 2 * args.n:,}); remote {size / 1e6:.1f} MB")
        print(json.dumps({"base": args.base, "n": args.n, "entries": counts}))
        return 0 if counts[0] == counts[1] == args.base + 2 * args.n else 1
    finally:
        a.stop()
        b.stop()
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
