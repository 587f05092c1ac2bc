#!/usr/bin/env python
"""How soon a line appended to a watched transcript is keyword-searchable, through the daemon.

    python bench/bench_tail.py                         # this tree, 20 appends of each kind
    python bench/bench_tail.py --against /tmp/old      # and another checkout, interleaved
    python bench/bench_tail.py --appends 40

A daemon (``python -m memoryd serve``) runs on a fresh state dir with a fake home holding Claude
Code transcripts (``~/.claude/projects``, the built-in source; bench_ingest's generator, 2,000
lines by default), indexed and settled before the first append. Then, in rounds, two kinds of
append, each a plain ``open(path, "a").write`` of one exchange (a prompt holding a new word, a
nonce, and its answer), as Claude Code writes them, stamped with the time of the write (the
session's newest exchange: a search shows an older one as the context of a newer one):

- **existing**: to one of the session files the daemon has read (its tail: the offset stored,
  the open exchange kept);
- **new file**: a session file that did not exist (the watcher's "added", the first read).

The latency is from just before the write to the first search (``agents=["*"]``, limit 5; the
nonce's own vector is cached by one search before the write, so query embedding is not
counted) whose hits hold the nonce, searching every ``--poll-ms``: the watcher's debounce
(``watch.debounce_ms``) included. Before each append the daemon
is settled (no file queued, no vector or lexicon backlog), so the previous append's embedding
does not run beside it. With ``--against``, the other checkout's daemon runs beside this one's on
a home of its own, and each round measures both, in an order that alternates from round to
round, so the ratio's two sides come from the same minutes of a shared machine. Prints p50/p90
per daemon and kind, and the ratio of the medians (this tree / the other).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from bench_ingest import TextPool, TranscriptWriter, write_transcripts  # noqa: E402
from bench_store import DaemonProcess, machine, percentile, progress  # noqa: E402
from memoryd_client import Client  # noqa: E402

KINDS = ("existing", "new file")
TIMEOUT_S = 30.0


@dataclass
class Subject:
    """One daemon under test, on a home of its own."""

    name: str
    daemon: DaemonProcess
    home: Path
    existing: Path
    rng: random.Random
    pool: TextPool
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})

    @property
    def project(self) -> Path:
        return self.existing.parent


def exchange(subject: Subject, session: str, nonce: str) -> str:
    """One exchange of Claude Code records as lines: a prompt that holds ``nonce``, an answer."""
    now = datetime.now(UTC)
    writer = TranscriptWriter(subject.rng, subject.pool, session, "/home/ana/proj-0", now)
    writer.user(f"{subject.pool.text()} what about the {nonce} rollout?")
    writer.assistant_message([{"type": "text", "text": subject.pool.text()}])
    for i, record in enumerate(writer.records):  # written now: the session's newest exchange
        record["timestamp"] = (now + timedelta(milliseconds=i)).isoformat(
            timespec="milliseconds").replace("+00:00", "Z")
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in writer.records)


def quiet(client: Client) -> None:
    """Until the daemon has nothing queued or behind (files, vectors, the lexicon's words)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = client.status()
        ingest = status.get("ingest") or {}
        if not (status["backlog"] or status["lexicon"]["entries_behind"]
                or ingest.get("queue") or ingest.get("scanning")):
            return
        time.sleep(0.05)
    raise RuntimeError("the daemon did not settle within 120 s")


def found(client: Client, nonce: str) -> bool:
    hits = client.search(nonce, agents=["*"], limit=5)["hits"]
    return any(nonce in hit["text"] for hit in hits)


def diagnosis(client: Client, nonce: str, path: Path) -> str:
    """Why a nonce is not found: whether an entry holds it, what the watcher says."""
    entries = client.list_entries(agents=["*"], status="any", limit=1000)["entries"]
    holding = [e["id"] for e in entries if nonce in e["text"]]
    ingest = client.status().get("ingest") or {}
    return (f"entries holding it: {holding or 'none'}; {path.name} is {path.stat().st_size} "
            f"bytes; ingest queue {ingest.get('queue')}, scanning {ingest.get('scanning')}")


def measure(subject: Subject, kind: str, poll_s: float) -> float:
    nonce = "nonce" + "".join(subject.rng.choices("bcdfghjkmnpqrstvwxz", k=10))
    if kind == "existing":
        path, session = subject.existing, subject.existing.stem
    else:
        session = str(uuid.UUID(int=subject.rng.getrandbits(128), version=4))
        path = subject.project / f"{session}.jsonl"
    data = exchange(subject, session, nonce)
    with Client(subject.daemon.socket, timeout_s=60) as client:
        quiet(client)
        if found(client, nonce):  # caches the query's vector; and it must not be there yet
            raise RuntimeError(f"{nonce} found before it was written")
        started = time.perf_counter()
        with path.open("a", encoding="utf-8") as handle:
            handle.write(data)
        while not found(client, nonce):
            if time.perf_counter() - started > TIMEOUT_S:
                raise RuntimeError(f"{subject.name}, {kind}: {nonce} not searchable within "
                                   f"{TIMEOUT_S:g} s; {diagnosis(client, nonce, path)}"
                                   f"\n{subject.daemon.log_tail()}")
            time.sleep(poll_s)
        return time.perf_counter() - started


def start(name: str, base: Path, tree: Path | None, lines: int, seed: int) -> Subject:
    root = Path(tempfile.mkdtemp(prefix="t-", dir=base))
    home, state = root / "home", root / "state"
    state.mkdir()
    made = write_transcripts(home, lines, TextPool(seed), seed)
    existing = next(p for p in made.files if "subagents" not in p.parts)
    daemon = DaemonProcess(state, tree)
    daemon.env["HOME"] = str(home)
    daemon.start()
    daemon.wait_ready()
    with Client(daemon.socket, timeout_s=60) as client:
        quiet(client)
        time.sleep(1.5)  # the watcher's catch-up scan (memoryd.ingest.watch_loops.CATCH_UP_S)
        quiet(client)
    progress(f"{name}: {made.lines:,} lines in {len(made.files)} transcripts indexed")
    return Subject(name, daemon, home, existing, random.Random(f"{seed}/{name}"), TextPool(seed + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=20,
                        help="appends of each kind per daemon (default 20)")
    parser.add_argument("--lines", type=int, default=2000,
                        help="transcript lines indexed before the appends (default 2000)")
    parser.add_argument("--poll-ms", type=float, default=10.0,
                        help="pause between searches while waiting (default 10)")
    parser.add_argument("--against", metavar="TREE", type=Path,
                        help="another checkout of memoryd to run interleaved with this one")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.against and not (args.against / "memoryd" / "__main__.py").exists():
        parser.error(f"--against {args.against}: not a memoryd checkout")

    base = Path(tempfile.mkdtemp(prefix="mdt-", dir="/tmp"))
    subjects: list[Subject] = []
    load = os.getloadavg()[0]
    try:
        subjects.append(start("this tree", base, None, args.lines, args.seed))
        if args.against:
            subjects.append(start(f"against {args.against.name}", base, args.against.resolve(),
                                  args.lines, args.seed))
        for number in range(args.appends):
            order = subjects if number % 2 == 0 else subjects[::-1]
            for kind in KINDS:
                for subject in order:
                    subject.latencies[kind].append(measure(subject, kind, args.poll_ms / 1000))
            if (number + 1) % 5 == 0:
                progress(f"{number + 1}/{args.appends} rounds")
    finally:
        for subject in subjects:
            subject.daemon.stop()
        shutil.rmtree(base, ignore_errors=True)

    info = machine()
    print(f"\nappend → keyword-searchable ({info['cores']} cores, {info['cpu']}, commit "
          f"{info['commit']}; load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} "
          f"at the end; {args.appends} appends of each kind, polled every {args.poll_ms:g} ms)")
    print(f"{'daemon':<28} | {'kind':<8} | {'p50 ms':>7} | {'p90 ms':>7} | {'max ms':>7}")
    for subject in subjects:
        for kind in KINDS:
            values = subject.latencies[kind]
            print(f"{subject.name:<28} | {kind:<8} | {1000 * statistics.median(values):>7.0f} | "
                  f"{1000 * percentile(values, 90):>7.0f} | {1000 * max(values):>7.0f}")
    if len(subjects) == 2:
        mine, other = subjects
        for kind in KINDS:
            ratio = statistics.median(mine.latencies[kind]) / statistics.median(
                other.latencies[kind])
            paired = statistics.median(a / b for a, b in zip(mine.latencies[kind],
                                                             other.latencies[kind]))
            print(f"{kind}: p50 ratio this tree / {other.name.split()[-1]} {ratio:.2f} "
                  f"(median of the round-by-round ratios {paired:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
