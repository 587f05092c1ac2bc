"""Sync through git at size: `python bench/bench_sync.py [--base 100000] [--n 10000]`.

Two machines (two MEMORYD_HOMEs, each with a `memoryd serve` process) and a bare remote under
a temporary directory. Machine A starts with a store of --base entries: its ledger is written
before its daemon starts, in the ledger's format by the store's own encoder
(memoryd.store.ledger.encode_record), so the daemon's replay at start indexes them (100,000
remember calls would take most of an hour here); their vectors are made by the backfill, in
the background, as on any machine that pulls a big store. A pushes it, and B pulls it. Then
each writes --n new entries through the API (remember_many), and they sync both ways: A
pushes, B merges A's n, applies them and pushes its own, A merges B's. The syncs themselves
go through the real daemons and real git.

Prints, for each sync: its time in all; the merge's time (off the database thread with git
≥ 2.38); the apply's time, the part of it the database thread was held, in how many slices,
and the longest; the records applied and the replay rate (records applied per second of the
apply). While each sync that pulls runs, a client searches the pulling machine every
--every seconds, and in a quiet block before and after it the same: p50 / p90 / max of each,
the user-visible point. Then the remote's size, and one JSON line of everything.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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

    def sync(self, label: str, probe: bool = False, every: float = 0.1,
             quiet: int = 30) -> dict:
        """One sync; with ``probe``, searches this machine during it and in quiet blocks of
        ``quiet`` searches before and after it."""
        idle: list[float] = self.searches(quiet, every) if probe else []
        during: list[float] = []
        stop = threading.Event()
        prober = threading.Thread(target=self._search_until, args=(stop, every, during))
        if probe:
            prober.start()
        began = time.perf_counter()
        try:
            with self.client() as c:
                reply = c.sync()
        finally:
            stop.set()
            if probe:
                prober.join()
        took = time.perf_counter() - began
        if probe:
            idle += self.searches(quiet, every)
        applied = reply["applied"]
        rate = applied["records"] / applied["apply_s"] if applied["apply_s"] else 0.0
        longest = max(reply["commit_s"], applied["longest_advance_s"], applied["longest_hold_s"])
        print(f"{label}: {took:.1f} s in all; merge {applied['merge_s']:.2f} s; on the database "
              f"thread: the commit {reply['commit_s']:.2f} s, moving the worktree "
              f"{applied['advance_s']:.2f} s; apply {applied['apply_s']:.2f} s, of it the "
              f"database thread {applied['held_s']:.2f} s in {applied['slices']:,} slices, the "
              f"longest {applied['longest_hold_s'] * 1000:.0f} ms; {applied['records']:,} "
              f"records applied ({rate:,.0f} a second); the longest hold of the database thread "
              f"{longest * 1000:.0f} ms; pushed {reply['pushed']}")
        result = {"label": label, "seconds": round(took, 2), **applied, "rate": round(rate),
                  "commit_s": reply["commit_s"], "longest_db_hold_s": round(longest, 4)}
        if probe:
            result["search_idle"] = summary(idle)
            result["search_during"] = summary(during)
            print(f"  search, quiet before and after: {fmt(result['search_idle'])}; during the "
                  f"sync: {fmt(result['search_during'])}")
        return result

    def searches(self, count: int, every: float) -> list[float]:
        took: list[float] = []
        with self.client() as c:
            for n in range(count):
                took.append(self._search(c, n))
                time.sleep(every)
        return took

    def _search_until(self, stop: threading.Event, every: float, took: list[float]) -> None:
        with self.client() as c:
            n = 0
            while not stop.is_set():
                took.append(self._search(c, n))
                n += 1
                stop.wait(every)

    @staticmethod
    def _search(c: Client, n: int) -> float:
        words = " ".join(random.Random(n).sample(WORDS, 3))
        began = time.perf_counter()
        c.search(words, agents=["bench"], limit=10)
        return (time.perf_counter() - began) * 1000


def summary(took: list[float]) -> dict:
    if not took:
        return {"n": 0}
    ordered = sorted(took)
    return {"n": len(took), "p50_ms": round(statistics.median(ordered), 1),
            "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
            "max_ms": round(ordered[-1], 1)}


def fmt(s: dict) -> str:
    if not s.get("n"):
        return "no searches"
    return f"p50 {s['p50_ms']} ms, p90 {s['p90_ms']} ms, max {s['max_ms']} ms ({s['n']})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=100_000, help="entries in the store")
    parser.add_argument("--n", type=int, default=10_000, help="new entries on each machine")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--every", type=float, default=0.1,
                        help="seconds between two searches of the probe")
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="bsync-", dir="/tmp"))
    remote = top / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    a, b = Machine(top / "a"), Machine(top / "b")
    began = time.perf_counter()
    steps: list[dict] = []
    try:
        base_ledger(a.home / "ledger" / "bench.jsonl", args.base, "bench")
        git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
        print(f"store of {args.base:,} entries; {args.n:,} new on each machine; "
              f"{git.stdout.strip()}")
        print(f"A starts (replays its {args.base:,} records): {a.start():.1f} s")
        b.start()
        for m in (a, b):
            with m.client() as c:
                c.sync_init(str(remote))
        steps.append(a.sync("A pushes the store"))
        steps.append(b.sync(f"B pulls the store ({args.base:,})", probe=True,
                            every=args.every))
        rng = random.Random(11)
        for m, name in ((a, "A"), (b, "B")):
            start = time.perf_counter()
            with m.client() as c:
                for first in range(0, args.n, 1000):
                    c.remember_many([{"agent": "bench", "category": "notes",
                                      "text": f"{name} {sentence(rng, first + i)}"}
                                     for i in range(min(1000, args.n - first))])
            print(f"{name} writes {args.n:,} entries: {time.perf_counter() - start:.1f} s")
        steps.append(a.sync(f"A pushes its {args.n:,}"))
        steps.append(b.sync(f"B merges A's {args.n:,}, pushes its own", probe=True,
                            every=args.every))
        steps.append(a.sync(f"A merges B's {args.n:,}", probe=True, every=args.every))
        counts = []
        for m in (a, b):
            with m.client() as c:
                counts.append(c.list_entries(agents=["bench"], limit=1)["total"])
        size = sum(f.stat().st_size for f in remote.rglob("*") if f.is_file())
        print(f"entries: A {counts[0]:,}, B {counts[1]:,} (expected "
              f"{args.base + 2 * args.n:,}); remote {size / 1e6:.1f} MB; the bench took "
              f"{time.perf_counter() - began:.0f} s; load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(json.dumps({"base": args.base, "n": args.n, "entries": counts, "steps": steps}))
        return 0 if counts[0] == counts[1] == args.base + 2 * args.n else 1
    finally:
        a.stop()
        b.stop()
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
