#!/usr/bin/env python
"""Crash and fault loops against the real daemon: is anything acknowledged ever lost, or stored
twice? (issue 10; the reliability report's §2–§4 loops)

    python bench/bench_faults.py                       # the full run (~15 min on a quiet machine)
    python bench/bench_faults.py --quick               # a short run (~3 min)
    python bench/bench_faults.py --only crash,torn     # some scenarios

Every daemon is a ``python -m memoryd serve`` subprocess on its own state dir under a temp dir
(``MEMORYD_HOME``, and a scratch ``HOME`` so no real ``~/.claude`` is watched).

- **crash**: ``--clients`` clients, each on its own connection, remember distinct corpus texts
  (``force``: every acknowledged reply is a stored entry) and search in a loop; the daemon is
  killed with SIGKILL at a random time in ``--kill-after`` seconds, ``--rounds`` times, and
  restarted. After each restart every acknowledged id must be there with its text. At the end:
  a SIGTERM stop, then ``memoryd reindex`` (the rebuild from the ledgers alone), checked again.
- **ingest**: ``--files`` notebook files (``bench_ingest.write_markdown_tree``); the daemon is
  killed 1–4 s into its initial indexing, ``--rounds`` times, then left to finish; the watched
  entries must be exactly the ones the files hold (none missing, none twice).
- **torn**: acknowledged writes, a kill, half a ledger line appended (what a crash mid-append
  leaves), a restart, more acknowledged writes, a rebuild: all there.
- **full**: the state dir on a 24 MB tmpfs (needs root to mount; skipped otherwise), filled to
  the last byte while clients write big texts, then freed: writes refused during the fault must
  not come back, acknowledged ones must survive a rebuild.

Counts per scenario: acknowledged, lost (acknowledged, missing or with another text),
duplicated (a text stored more than once), resurrected (answered as failed, stored anyway).
All of lost, duplicated and resurrected must be 0. JSON goes to bench/results/faults.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from memoryd_client import Client, MemorydError  # noqa: E402


@dataclass
class Tally:
    scenario: str
    acknowledged: int = 0
    refused: int = 0
    lost: int = 0
    duplicated: int = 0
    resurrected: int = 0
    notes: list[str] = field(default_factory=list)

    def row(self) -> str:
        return (f"| {self.scenario} | {self.acknowledged:,} | {self.refused:,} | {self.lost} | "
                f"{self.duplicated} | {self.resurrected} | {'; '.join(self.notes)} |")


def progress(message: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


class Daemon:
    def __init__(self, state: Path, home: Path, *, model: bool) -> None:
        self.state, self.home, self.model = state, home, model
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.state / "memoryd.sock"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
        env.update(MEMORYD_HOME=str(self.state), HOME=str(self.home))
        if not self.model:
            env["MEMORYD_EMBED_MODEL"] = str(self.state / "no-model")
        return env

    def start(self, *, wait: bool = True) -> None:
        log = (self.state.parent / f"{self.state.name}.log").open("ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=self.env(),
                                     stdout=subprocess.DEVNULL, stderr=log)
        log.close()
        if wait:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, f"daemon exited {self.proc.returncode}"
                try:
                    with Client(self.socket, timeout_s=10) as c:
                        status = c.status()
                    if not self.model or (status["model"] and status["vector_index"]["ready"]):
                        return
                except MemorydError:
                    pass
                time.sleep(0.05)
            raise RuntimeError("daemon did not come up")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def reindex(self) -> None:
        done = subprocess.run([sys.executable, "-m", "memoryd", "reindex", "--no-vectors"],
                              env=self.env(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import apsw
        db = apsw.Connection(str(self.state / "memoryd.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return [tuple(r) for r in db.execute(sql, params)]
        finally:
            db.close()


def check_api(daemon: Daemon, acked: dict[str, tuple[str, str]], failed: set[tuple[str, str]],
              tally: Tally, when: str) -> None:
    """With the daemon stopped: every acknowledged id with its text, no text twice, no refused
    write stored."""
    stored = {uid: (agent, text) for uid, agent, text in daemon.rows(
        "SELECT uid, agent, text FROM entries WHERE via='api'")}
    lost = [uid for uid, pair in acked.items() if stored.get(uid) != pair]
    texts: dict[tuple[str, str], int] = {}
    for pair in stored.values():
        texts[pair] = texts.get(pair, 0) + 1
    duplicated = sum(n - 1 for n in texts.values() if n > 1)
    resurrected = len({p for p in failed if p in texts} - set(acked.values()))
    tally.lost = max(tally.lost, len(lost))
    tally.duplicated = max(tally.duplicated, duplicated)
    tally.resurrected = max(tally.resurrected, resurrected)
    progress(f"{when}: {len(acked):,} acknowledged, {len(lost)} lost, {duplicated} duplicated, "
             f"{resurrected} resurrected ({len(stored):,} API entries)")


class Writers:
    """Clients that remember distinct texts and search until told to stop."""

    def __init__(self, daemon: Daemon, texts: list[str], clients: int, search: bool = True,
                 agent: str = "bench") -> None:
        self.daemon, self.texts, self.clients, self.search = daemon, texts, clients, search
        self.agent = agent
        self.acked: dict[str, tuple[str, str]] = {}
        self.failed: set[tuple[str, str]] = set()  # answered with an error (not a dropped line)
        self.in_flight: set[tuple[str, str]] = set()  # no answer: the daemon died meanwhile
        self.next = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.searches = 0
        self.threads: list[threading.Thread] = []

    def take(self) -> str | None:
        with self.lock:
            if self.next >= len(self.texts):
                return None
            self.next += 1
            return self.texts[self.next - 1]

    def run(self, number: int) -> None:
        agent = f"{self.agent}{number}"
        try:
            client = Client(self.daemon.socket, timeout_s=60)
        except MemorydError:
            return
        with client:
            while not self.stop.is_set():
                text = self.take()
                if text is None:
                    return
                pair = (agent, text)
                try:
                    reply = client.call("remember", {"agent": agent, "category": "bench",
                                                     "text": text, "force": True})
                    with self.lock:
                        self.acked[reply["entry"]["id"]] = pair
                except MemorydError as exc:
                    with self.lock:
                        if exc.code in ("unreachable", "bad_frame", "error"):
                            self.in_flight.add(pair)
                        else:
                            self.failed.add(pair)
                    if exc.code == "unreachable":
                        return
                    continue
                except OSError:
                    self.in_flight.add(pair)
                    return
                if self.search:
                    try:
                        client.search(text.split(".")[0][:80], agent=agent, limit=5)
                        self.searches += 1
                    except (MemorydError, OSError):
                        return

    def round(self, seconds: float) -> None:
        self.stop.clear()
        self.threads = [threading.Thread(target=self.run, args=(n,)) for n in range(self.clients)]
        for t in self.threads:
            t.start()
        time.sleep(seconds)
        self.stop.set()

    def join_after_kill(self, threads_timeout: float = 60) -> None:
        deadline = time.monotonic() + threads_timeout
        for t in self.threads:
            t.join(timeout=max(0.1, deadline - time.monotonic()))


def corpus_texts(n: int, seed: int) -> list[str]:
    from bench_ingest import TextPool
    pool = TextPool(seed)
    return [pool.text() for _ in range(n)]


def scenario_crash(root: Path, args: argparse.Namespace, rng: random.Random) -> Tally:
    tally = Tally("crash (kill -9 under load)")
    daemon = Daemon(root / "crash", root / "home", model=not args.no_model)
    daemon.state.mkdir()
    writers = Writers(daemon, corpus_texts(args.texts, args.seed), args.clients)
    kills = []
    for number in range(args.rounds):
        daemon.start()
        after = rng.uniform(*args.kill_after)
        before = len(writers.acked)
        runner = threading.Thread(target=writers.round, args=(after + 5,))
        runner.start()
        time.sleep(after)
        daemon.kill()
        writers.stop.set()
        runner.join()
        writers.join_after_kill()
        kills.append(after)
        progress(f"round {number + 1}: killed after {after:.1f} s, "
                 f"{len(writers.acked) - before:,} acknowledged this round")
        check_api(daemon, writers.acked, writers.failed, tally,
                  f"after kill {number + 1} (as left)")
        daemon.start()  # replays what the database missed
        daemon.stop()
        check_api(daemon, writers.acked, writers.failed, tally, f"after restart {number + 1}")
    daemon.reindex()
    check_api(daemon, writers.acked, writers.failed, tally, "after reindex")
    tally.acknowledged = len(writers.acked)
    tally.refused = len(writers.failed)
    tally.notes.append(f"{args.clients} clients, {len(kills)} kills at "
                       f"{', '.join(f'{k:.0f}' for k in kills)} s, {writers.searches:,} searches, "
                       f"{len(writers.in_flight)} in flight at a kill")
    return tally


def scenario_ingest(root: Path, args: argparse.Namespace, rng: random.Random) -> Tally:
    from bench_ingest import TextPool, write_markdown_tree
    tally = Tally("ingest (kill -9 mid-scan)")
    home = root / "ingest-home"
    tree = write_markdown_tree(home, args.files, TextPool(args.seed + 1), args.seed)
    daemon = Daemon(root / "ingest", home, model=False)
    daemon.state.mkdir()
    for number in range(args.rounds):
        daemon.start(wait=False)
        after = rng.uniform(1.0, 4.0)
        time.sleep(after)
        daemon.kill()
        progress(f"kill {number + 1} after {after:.1f} s of indexing")
    daemon.start()
    deadline = time.monotonic() + 600
    with Client(daemon.socket, timeout_s=30) as c:
        while time.monotonic() < deadline:
            status = c.status()
            ingest = status.get("ingest") or {}
            if ingest.get("queue") == 0 and not ingest.get("scanning") and \
                    status["entries"].get("active", 0) >= tree.entries:
                break
            time.sleep(0.5)
    time.sleep(1)
    assert daemon.stop() == 0
    rows = daemon.rows("SELECT count(*), count(DISTINCT source || '|' || hash) FROM entries "
                       "WHERE via='watch' AND status='active'")[0]
    tally.acknowledged = tree.entries  # what the files hold
    tally.lost = max(0, tree.entries - rows[1])
    tally.duplicated = rows[0] - rows[1]
    tally.notes.append(f"{args.files:,} files, {tree.entries:,} bullets, {args.rounds} kills, "
                       f"{rows[0]:,} entries")
    progress(f"ingest: {tree.entries:,} expected, {rows[1]:,} distinct, {rows[0]:,} rows")
    return tally


def scenario_torn(root: Path, args: argparse.Namespace, rng: random.Random) -> Tally:
    tally = Tally("torn ledger tail")
    daemon = Daemon(root / "torn", root / "home", model=False)
    daemon.state.mkdir()
    texts = corpus_texts(2 * args.torn_writes, args.seed + 2)
    writers = Writers(daemon, texts[:args.torn_writes], 1, search=False)
    daemon.start()
    writers.run(0)
    daemon.kill()
    ledger = daemon.state / "ledger" / "bench0.jsonl"
    with ledger.open("ab") as handle:
        handle.write(b'{"entry": {"agent": "bench0", "text": "half a li')
    daemon.start()
    writers.texts, writers.next = texts, args.torn_writes
    writers.run(0)
    assert daemon.stop() == 0
    check_api(daemon, writers.acked, writers.failed, tally, "torn: after restart")
    daemon.reindex()
    check_api(daemon, writers.acked, writers.failed, tally, "torn: after reindex")
    tally.acknowledged = len(writers.acked)
    return tally


def scenario_full(root: Path, args: argparse.Namespace, rng: random.Random) -> Tally:
    tally = Tally("full disk (24 MB tmpfs)")
    state = root / "full"
    state.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs",
                              str(state)], capture_output=True, text=True)
    if mounted.returncode != 0:
        tally.notes.append(f"skipped: cannot mount a tmpfs ({mounted.stderr.strip()})")
        return tally
    try:
        daemon = Daemon(state, root / "home", model=False)
        daemon.start()
        pad = (" Padding so that the ledger line is big: " + "lorem ipsum dolor " * 1100).rstrip()
        texts = [t + pad for t in corpus_texts(3 * args.full_writes, args.seed + 3)]
        writers = Writers(daemon, texts[:args.full_writes], 1, search=False)
        writers.run(0)
        filler = state / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        for size in (1 << 16, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
        os.close(fd)
        writers.texts, writers.next = texts[:2 * args.full_writes], args.full_writes
        writers.run(0)
        refused = len(writers.failed)
        filler.unlink()
        writers.texts, writers.next = texts, 2 * args.full_writes
        writers.run(0)
        assert daemon.stop() == 0
        check_api(daemon, writers.acked, writers.failed, tally, "full: after restart")
        daemon.reindex()
        check_api(daemon, writers.acked, writers.failed, tally, "full: after reindex")
        from memoryd.store.ledger import Ledger, LedgerProblem
        ledger = Ledger(state / "ledger")
        problems: list[LedgerProblem] = []
        for agent in ledger.agents():  # every ledger read whole: torn or damaged lines
            for _ in ledger.read(agent, 0, problems):
                pass
        tally.acknowledged, tally.refused = len(writers.acked), refused
        tally.notes.append(f"{refused} refused while full, ledger problems: {len(problems)}")
    finally:
        subprocess.run(["umount", "-l", str(state)], check=False)
    return tally


SCENARIOS = {"crash": scenario_crash, "ingest": scenario_ingest, "torn": scenario_torn,
             "full": scenario_full}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kill-after", type=float, nargs=2, default=(20.0, 45.0))
    parser.add_argument("--texts", type=int, default=20_000, help="distinct texts to write")
    parser.add_argument("--files", type=int, default=2_000, help="notebook files (ingest)")
    parser.add_argument("--torn-writes", type=int, default=40)
    parser.add_argument("--full-writes", type=int, default=30)
    parser.add_argument("--no-model", action="store_true", help="keyword-only daemons")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.rounds, args.kill_after = 4, 3, (4.0, 10.0)
        args.texts, args.files = 6_000, 300
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="mdf-", dir="/tmp"))
    (root / "home").mkdir()
    results: list[Tally] = []
    try:
        for name in args.only.split(","):
            progress(f"scenario {name}")
            started = time.monotonic()
            tally = SCENARIOS[name](root, args, rng)
            tally.notes.append(f"{time.monotonic() - started:.0f} s")
            results.append(tally)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept {root}", file=sys.stderr)
    print("| scenario | acknowledged | refused | lost | duplicated | resurrected | notes |")
    print("|---|---|---|---|---|---|---|")
    for tally in results:
        print(tally.row())
    out = HERE / "results" / "faults.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps([t.__dict__ for t in results], indent=2) + "\n")
    bad = [t for t in results if t.lost or t.duplicated or t.resurrected]
    print("all acknowledged writes kept, none twice" if not bad else
          f"FAILED: {', '.join(t.scenario for t in bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
