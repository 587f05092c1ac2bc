#!/usr/bin/env python
"""Benchmark memoryd against its performance budget, through the real daemon and client.

    python bench/bench_store.py                 # N = 10,000
    python bench/bench_store.py --n 100000
    python bench/bench_store.py --keep /tmp/mdb10k   # keep (and later reuse) the state dir
    nice python bench/bench_store.py --n 1000000 --keep /tmp/m1 --fill-only   # fill now, measure later
    python bench/bench_store.py --keep /tmp/mdb10k --against /tmp/old   # this tree vs another

Starts ``python -m memoryd serve`` as a subprocess on a fresh, short MEMORYD_HOME under /tmp
(AF_UNIX socket paths are limited to ~104 bytes), waits until the model is loaded and the
vector index is built, then measures, in this order:

1. the bare embedder's throughput in this process (2,000 corpus texts, batches of 32);
2. bulk ingest of N generated memories with ``remember_many`` (batches of 256, twelve at a
   time, the bare embedder measured on 768 of the same texts before each twelve and after the
   last): entries/s over the wall clock of the ingest, as a share of the bare rate measured
   between, and how many were rejected as duplicates;
3. ``remember`` round trips (200 new texts): p50/p99;
4. ``search`` round trips, 300 distinct queries over all agents (``agents=["*"]``, limit 10),
   and 100 filtered to one agent: p50/p99 (every query is new, so each is embedded: the
   daemon's query cache never answers); then search round trips while 2,048 new entries are
   stored by ``remember_many``, 5 searches a second at random moments;
5. the ``memory search AGENT - QUERY`` console script as a whole process (30 runs): p50;
6. the daemon's VmRSS and VmHWM from /proc/<pid>/status;
7. after SIGTERM (the daemon must exit 0): recall@10 of the RAM vector index
   (``memoryd.vectors.VectorIndex``, rebuilt here from the store as the daemon builds it)
   against exact search (numpy dot over all vectors), and the index's search time.

The box is small and may be shared: the last rows are the CPU other processes used during the
measurements (from /proc/stat, minus the daemon's and this process's own) and the CPU time the
hypervisor stole, so that noisy numbers show as such.

Budgets are the 100k ones (search p50 ≤ 20 ms, p99 ≤ 50 ms, RSS ≤ 300 MB), and from
``--n 1000000`` the million ones (search p50 ≤ 150 ms, p99 ≤ 300 ms, RSS ≤ 500 MB, recall@10
≥ 0.97). Prints a table (metric | value | budget | status) and writes the same as JSON to
``bench/results/store-N.json``. Exit status 0 unless the run fails (or, with --check, a budget
is over).

``--against TREE`` (with ``--keep DIR``, a filled store) measures only ``remember`` and
``search`` round trips, this tree's daemon against TREE's (another checkout, e.g. ``git
worktree add --detach /tmp/old main``), each on its own copy of DIR, both running: the same new
texts (then the same new questions) go to both in blocks of COMPARE_BLOCK, the order of the two
alternating from block to block, so that the machine's slow and fast minutes weigh on both
alike. Prints p50/p90/p99 of each and their ratios.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from corpus import Corpus  # noqa: E402
from memoryd_client import Client  # noqa: E402
from memoryd_client.errors import MemorydError  # noqa: E402
from memoryd_client.paths import MAX_SOCKET_PATH_BYTES  # noqa: E402

INGEST_BATCH = 256
SHORT_ENTRIES = 3_000
INGEST_CONNECTIONS = 2
#: Batches sent between two measurements of the bare embedder, and the texts it embeds then.
SEGMENT_BATCHES = 12
BARE_PER_SEGMENT = 768
EMBED_SAMPLE = 2_000
EMBED_BATCH = 32
REMEMBERS = 200
SEARCHES = 300
FILTERED_SEARCHES = 100
WARMUP_SEARCHES = 5
CLI_RUNS = 30
RECALL_QUERIES = 100
#: New entries written while searches probe how long a search waits behind a bulk write.
PROBE_ENTRIES = 2_048
PROBE_RATE = 5  # searches a second meanwhile
RECALL_K = 10
READY_TIMEOUT_S = 900.0


# -- the report -------------------------------------------------------------------------------


@dataclass
class Row:
    metric: str
    value: float | None
    unit: str
    budget: str = ""  # as printed, e.g. "≥ 200"; empty: informational
    ok: bool | None = None  # None: no budget
    note: str = ""


class Report:
    def __init__(self, n: int) -> None:
        self.n = n
        self.rows: list[Row] = []
        self.info: dict[str, Any] = {}

    def add(self, metric: str, value: float | None, unit: str, *, le: float | None = None,
            ge: float | None = None, note: str = "") -> None:
        """A row; ``le``/``ge``: the budget (value must be ≤ le, or ≥ ge)."""
        budget, ok = "", None
        if le is not None:
            budget = f"≤ {le:g} {unit}"
            ok = None if value is None else value <= le  # None: not measured
        elif ge is not None:
            budget = f"≥ {ge:g} {unit}"
            ok = None if value is None else value >= ge
        self.rows.append(Row(metric, value, unit, budget, ok, note))

    def table(self) -> str:
        def value(row: Row) -> str:
            if row.value is None:
                return "n/a"
            v = row.value
            if abs(v) >= 100 or v == int(v):
                text = f"{v:,.0f}"
            else:
                text = f"{v:.3g}" if abs(v) < 1 else f"{v:.1f}"
            if row.unit == "×":  # a ratio of two trees' figures: a few percent matter
                text = f"{v:.3f}"
            return f"{text} {row.unit}".strip()

        def status(row: Row) -> str:
            if row.ok is None:
                return "n/a" if row.budget else "-"
            return "ok" if row.ok else "OVER"

        header = ("metric", "value", "budget", "status")
        cells = [(r.metric + (f" ({r.note})" if r.note else ""), value(r), r.budget or "-",
                  status(r)) for r in self.rows]
        widths = [max(len(c[i]) for c in [header, *cells]) for i in range(4)]
        line = "-+-".join("-" * w for w in widths)
        out = [" | ".join(h.ljust(w) for h, w in zip(header, widths)), line]
        out += [" | ".join([c[0].ljust(widths[0]), c[1].rjust(widths[1]),
                            c[2].ljust(widths[2]), c[3]]) for c in cells]
        return "\n".join(out)

    @property
    def over(self) -> list[Row]:
        return [r for r in self.rows if r.ok is False]

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, **self.info, "metrics": [asdict(r) for r in self.rows],
                "budgets_ok": not self.over}


def percentile(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q))


def ms(seconds: Sequence[float]) -> list[float]:
    return [s * 1000.0 for s in seconds]


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class CpuMeter:
    """CPU time over a phase: the daemon's, this process's (and its children's), everyone
    else's on the machine, and the time the hypervisor stole (both from /proc/stat), so that a
    noisy neighbour shows in the results."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self) -> None:
        self.phases: dict[str, dict[str, float]] = {}
        self.daemon_pid: int | None = None
        self.more_daemons: list[int] = []  # --against: the other daemon is ours too

    def _daemon_s(self) -> float:
        total = 0.0
        for pid in [self.daemon_pid, *self.more_daemons]:
            if pid is None:
                continue
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / self.TICK  # utime, stime
        return total

    @classmethod
    def _machine_s(cls) -> tuple[float, float]:
        """(busy, stolen) seconds of all CPUs since boot."""
        user, nice, system, _idle, _iowait, irq, softirq, steal = (
            int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9])
        return (user + nice + system + irq + softirq) / cls.TICK, steal / cls.TICK

    def snapshot(self) -> tuple[float, ...]:
        own = os.times()
        return (time.monotonic(), self._daemon_s(),
                own.user + own.system + own.children_user + own.children_system,
                *self._machine_s())

    def phase(self, name: str) -> Any:
        meter = self

        class _Phase:
            def __enter__(self) -> None:
                self.start = meter.snapshot()

            def __exit__(self, *exc: object) -> None:
                end = meter.snapshot()
                wall, daemon, own, busy, steal = (e - s for e, s in zip(end, self.start))
                meter.phases[name] = {
                    "wall_s": round(wall, 2),
                    "daemon_cpu_s": round(daemon, 2),
                    "bench_cpu_s": round(own, 2),
                    "other_cpu_s": round(max(busy - daemon - own, 0.0), 2),
                    "steal_s": round(steal, 2),
                }

        return _Phase()

    def mean_cores(self, key: str) -> float:
        """Mean cores over all phases: other processes' ("other_cpu_s") or stolen ("steal_s")."""
        wall = sum(p["wall_s"] for p in self.phases.values())
        return sum(p[key] for p in self.phases.values()) / wall if wall else 0.0

    def report(self, report: Report) -> None:
        """The last rows: what other processes and the hypervisor took meanwhile."""
        others, stolen = self.mean_cores("other_cpu_s"), self.mean_cores("steal_s")
        noisy = " (noisy run)" if others + stolen > 0.2 else ""
        report.add("other processes' CPU during the measurements" + noisy, others, "cores")
        report.add("CPU stolen by the hypervisor during the measurements" + noisy, stolen, "cores")
        report.info["cpu_phases"] = self.phases
        report.info["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]


# -- the daemon -------------------------------------------------------------------------------


class DaemonProcess:
    """``python -m memoryd serve`` on its own MEMORYD_HOME, logging to daemon.log there; the
    memoryd of ``tree`` (another checkout) instead of this one's when given."""

    def __init__(self, home: Path, tree: Path | None = None) -> None:
        self.home = home
        self.tree = tree or HERE.parent
        self.socket = home / "memoryd.sock"
        self.log_path = home / "daemon.log"
        self.env = {k: v for k, v in os.environ.items() if k != "MEMORYD_SOCKET"}
        self.env["MEMORYD_HOME"] = str(home)
        if tree is not None:
            self.env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "client")])
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        if len(os.fsencode(self.socket)) > MAX_SOCKET_PATH_BYTES:
            raise SystemExit(f"socket path {self.socket} is too long for AF_UNIX; "
                             "use a shorter --keep")
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "serve"], env=self.env, stdin=subprocess.DEVNULL,
            cwd=self.tree,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,  # Ctrl-C is ours to relay
        )
        log.close()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> dict[str, Any]:
        """Poll status until the model is loaded and the vector index is built (a word index
        still filling is waited for by the bench that needs it; keyword-only is an error)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"memoryd exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with Client(self.socket, timeout_s=60) as client:
                    status = client.status()
                if status.get("degraded") == "keyword-only":
                    raise RuntimeError(f"memoryd is degraded: {status.get('degraded_reason')}")
                if status.get("model") and status.get("vector_index", {}).get("ready"):
                    return status
            except MemorydError:
                pass  # not listening yet
            time.sleep(0.1)
        raise RuntimeError(f"memoryd not ready within {timeout_s:g} s:\n{self.log_tail()}")

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM and wait; the exit code (None if it had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def first_search(daemon: DaemonProcess, timeout_s: float = READY_TIMEOUT_S
                 ) -> tuple[float, float]:
    """A search sent the moment the daemon first accepts one (its vector index may still be
    filling): (seconds from now until it was sent, its round trip in seconds)."""
    started = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with Client(daemon.socket, timeout_s=timeout_s) as client:
                sent = time.perf_counter()
                client.search("what did we decide about the deploy schedule", agents=["*"])
                return sent - started, time.perf_counter() - sent
        except MemorydError:
            time.sleep(0.05)  # not listening yet
    raise RuntimeError(f"memoryd answered no search within {timeout_s:g} s:\n{daemon.log_tail()}")


def settle(client: Client) -> None:
    """Until the daemon's background work is done (files to index, vectors, the lexicon's
    words), so that it does not run beside the measurements."""
    started, quiet = time.monotonic(), 0
    while quiet < 3:  # three polls in a row with nothing to do (a file event may be pending)
        status = client.status()
        ingest = status.get("ingest") or {}
        behind = (status["backlog"] or 0) + (status["lexicon"]["entries_behind"] or 0) \
            + (ingest.get("queue") or 0) + bool(ingest.get("scanning"))
        quiet = 0 if behind else quiet + 1
        time.sleep(0.5)
    if time.monotonic() - started > 1:
        progress(f"background work settled in {time.monotonic() - started:.0f} s "
                 f"(lexicon: {status['lexicon']['words']:,} words)")


def planner_statistics(client: Client, timeout_s: float = 180.0) -> None:
    """Until the daemon has taken the query planner's statistics of the entries it was filled
    with, as a daemon running for a while has them: at its first quiet moment after the fill
    (memoryd.collector: no request for 5 s, a minute after the last), not at once. Read from
    the database file, so that no request delays that moment."""
    import apsw

    path = Path(client.status()["state_dir"]) / "memoryd.db"
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchall() \
                    and db.execute("SELECT 1 FROM sqlite_stat1 WHERE tbl = 'entries' "
                                   "AND stat NOT LIKE '0 %'").fetchall():
                progress(f"planner statistics taken after {time.monotonic() - started:.0f} s")
                return
        finally:
            db.close()
        time.sleep(1.0)
    raise SystemExit(f"the daemon took no planner statistics within {timeout_s:.0f} s")


# -- measurements -----------------------------------------------------------------------------


def load_bare_embedder() -> Any:
    """The shipped embedder, loaded in this process as the daemon loads it."""
    from memoryd.config import load_config
    from memoryd.embedding.model import Embedder

    return Embedder(load_config().embed)


def measure_embedder(report: Report, embedder: Any, texts: list[str], label: str) -> None:
    """The bare embedder in this process on the texts the daemon embeds for these entries
    (each text and its parts, ``Embedder.embed_entries``), in the batches remember_many gets."""
    embedder.embed_entries(texts[:EMBED_BATCH])  # warm-up
    sample = texts[:EMBED_SAMPLE]
    started = time.perf_counter()
    for i in range(0, len(sample), INGEST_BATCH):
        embedder.embed_entries(sample[i:i + INGEST_BATCH])
    rate = len(sample) / (time.perf_counter() - started)
    tokens = sum(len(e.ids) for e in embedder.tokenizer.encode_batch(sample)) / len(sample)
    report.add(f"bare embedder, {label} (~{tokens:.0f} tokens), {len(sample):,} texts", rate,
               "texts/s", note="this process, the same texts and batches")


#: The machine's own tail: a fixed piece of pure-Python work, timed this many times.
JITTER_RUNS = 200
JITTER_LOOP = 150_000  # ~12 ms on the 2-core development machine


def measure_jitter(report: Report, label: str) -> None:
    """How the machine stretches a fixed piece of work (~12 ms of Python, about a search's),
    run now and then with nothing else of ours running: its p99 against its p50 is the tail
    no code of ours causes (on the development VM on 2026-11-27, p50 12-13 ms and p99 41-50
    ms, with other processes at 0.01 cores and nothing stolen)."""
    def work() -> int:
        total = 0
        for number in range(JITTER_LOOP):
            total += number * number
        return total

    times = []
    for _ in range(JITTER_RUNS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
        time.sleep(0.01)
    report.add(f"machine tail, {label}: a fixed Python job, p50", percentile(ms(times), 50), "ms")
    report.add(f"machine tail, {label}: a fixed Python job, p99", percentile(ms(times), 99), "ms",
               note=f"{JITTER_RUNS} runs; a search is about this much work")


def short_notes(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SHORT_ENTRIES ~15-token notes: the first words of corpus texts whose openings differ (a
    shared opening would make near duplicates, which cost a second look)."""
    notes, seen = [], set()
    for entry in entries:
        opening = " ".join(entry["text"].split()[:8])
        if opening.lower() not in seen:
            seen.add(opening.lower())
            notes.append({**entry, "agent": "bulk-short", "text": opening})
        if len(notes) == SHORT_ENTRIES:
            break
    return notes


def outcomes(results: list[dict[str, Any]]) -> Counter[str]:
    """What remember_many did with each entry, counted."""
    counted: Counter[str] = Counter()
    for result in results:
        if not result["stored"]:
            counted[f"duplicate_{result['duplicate']}"] += 1
            continue
        counted["stored"] += 1
        counted["superseded_others"] += len(result.get("superseded") or [])
        counted["stored_as_superseded"] += result["status"] == "superseded"
    return counted


def ingest(report: Report, socket: Path, entries: list[dict[str, Any]], label: str,
           embedder: Any, ge: float | None = None,
           sent: Callable[[int], None] | None = None) -> dict[str, int]:
    """remember_many in batches over INGEST_CONNECTIONS connections (one batch is stored while
    the next is embedded, as `memory import` does), a segment of SEGMENT_BATCHES batches at a
    time; before each segment, the bare embedder in this process on BARE_PER_SEGMENT of its
    texts. Entries/s over the segments' wall clock, and as a share of the bare rate measured
    between them: interleaved, so that the machine's slow and fast minutes weigh on both
    alike (measured once before a two-minute ingest, the share moved by ±0.15 with them)."""
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()
    clients: list[Client] = []

    def send(batch: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
        if not hasattr(local, "client"):
            # the terminal channel: the corpus's feedback entries stand in for what a person typed
            local.client = Client(socket, timeout_s=300, channel="terminal")
            clients.append(local.client)
        t0 = time.perf_counter()
        return local.client.remember_many(batch)["results"], time.perf_counter() - t0

    outcome: Counter[str] = Counter()
    batch_times: list[float] = []
    elapsed = bare_s = 0.0
    bare_texts = 0
    last_note = time.perf_counter()
    batches = [entries[i:i + INGEST_BATCH] for i in range(0, len(entries), INGEST_BATCH)]

    def bare(segment: list[list[dict[str, Any]]]) -> None:
        nonlocal bare_s, bare_texts
        texts = [e["text"] for batch in segment for e in batch][:BARE_PER_SEGMENT]
        started = time.perf_counter()
        for i in range(0, len(texts), INGEST_BATCH):
            embedder.embed_entries(texts[i:i + INGEST_BATCH])
        bare_s += time.perf_counter() - started
        bare_texts += len(texts)

    pool = ThreadPoolExecutor(INGEST_CONNECTIONS)
    try:
        for first in range(0, len(batches), SEGMENT_BATCHES):
            segment = batches[first:first + SEGMENT_BATCHES]
            bare(segment)
            started = time.perf_counter()
            for number, future in enumerate([pool.submit(send, b) for b in segment], first):
                results, took = future.result()
                batch_times.append(took)
                if sent is not None:  # batches are answered in order: all before this one are in
                    sent(min(len(entries), (number + 1) * INGEST_BATCH))
                outcome.update(outcomes(results))
            elapsed += time.perf_counter() - started
            if time.perf_counter() - last_note > 15:
                last_note = time.perf_counter()
                done = min(len(entries), (first + len(segment)) * INGEST_BATCH)
                progress(f"ingest {done:,}/{len(entries):,} ({done / elapsed:.0f} entries/s, "
                         f"bare {bare_texts / bare_s:.0f} texts/s)")
        bare(segment)  # and after the last, on its texts: a short ingest is bracketed
    finally:  # on Ctrl-C the batches not yet sent are dropped (a kept store resumes later)
        pool.shutdown(cancel_futures=True)
    for client in clients:
        client.close()
    rate, bare_rate = len(entries) / elapsed, bare_texts / bare_s
    report.add(f"bulk ingest, {label}, remember_many × {INGEST_BATCH}", rate, "entries/s", ge=ge)
    report.add(f"  bare embedder on {bare_texts:,} of the same texts, between the segments",
               bare_rate, "texts/s",
               note=f"before each {SEGMENT_BATCHES * INGEST_BATCH:,} entries sent, and after")
    report.add("  as a share of the bare embedder on the same texts", rate / bare_rate, "",
               ge=0.9)
    report.add(f"  remember_many batch of {INGEST_BATCH}, p50", percentile(ms(batch_times), 50),
               "ms")
    rejected = outcome["duplicate_exact"] + outcome["duplicate_near"]
    report.add("ingest rejected as duplicates", rejected, "entries",
               note=f"{outcome['duplicate_near']} near, {outcome['duplicate_exact']} exact; "
               f"{100 * rejected / len(entries):.2f}%")
    report.info["ingest"] = {"entries": len(entries), "seconds": round(elapsed, 2), **outcome}
    progress(f"ingested {len(entries):,} in {elapsed:.1f} s: {dict(outcome)}")
    return dict(outcome)


def measure_remember(report: Report, client: Client, entries: list[dict[str, Any]]) -> None:
    times, stored = [], 0
    for entry in entries:
        t0 = time.perf_counter()
        result = client.remember(**entry)
        times.append(time.perf_counter() - t0)
        stored += bool(result["stored"])
    samples = ms(times)
    report.add("remember round trip, p50", percentile(samples, 50), "ms", le=15)
    report.add("remember round trip, p99", percentile(samples, 99), "ms",
               note=f"{len(entries)} new texts, {stored} stored")


#: Remembers sent to one daemon before the other gets the same texts (--against).
COMPARE_BLOCK = 20
COMPARE_REMEMBERS = 400
COMPARE_SEARCHES = 400


def against_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The kept store (``--keep``) and the other checkout (``--against``), checked."""
    kept = Path(args.keep).expanduser().resolve()
    tree = Path(args.against).expanduser().resolve()
    if not (kept / "memoryd.db").exists():
        raise SystemExit(f"--against needs a filled store in --keep ({kept} has none)")
    if not (tree / "memoryd" / "__main__.py").exists():
        raise SystemExit(f"--against {tree}: not a memoryd checkout")
    return kept, tree


def compare_remember(args: argparse.Namespace) -> Report:
    """``remember`` round trips of this tree's daemon and TREE's (``--against``), interleaved
    in blocks on two copies of the kept store (module docstring)."""
    report = Report(args.n)
    report.info["machine"] = machine()
    report.info["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    report.info["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]
    kept, tree = against_paths(args)
    corpus = Corpus(args.seed)
    seen = {" ".join(e["text"].lower().split()) for e in corpus.entries(args.n)}
    fresh = corpus.entries(args.remembers, salt=99, avoid=seen)
    questions = corpus.queries(COMPARE_SEARCHES, salt=99)
    cpu = CpuMeter()
    names = ("this tree", f"against ({tree.name})")
    daemons: list[DaemonProcess] = []
    clients: list[Client] = []
    times: dict[tuple[str, str], list[float]] = {(op, name): [] for op in ("remember", "search")
                                                 for name in names}
    cpu_s = dict.fromkeys(times, 0.0)  # the daemon's CPU for each block, its work after replies too
    try:
        for name, code in zip(names, (None, tree)):
            home = Path(tempfile.mkdtemp(prefix="mdc-", dir="/tmp"))
            shutil.copytree(kept, home, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.sock", "*.lock", "daemon.log"))
            daemon = DaemonProcess(home, code)
            daemon.start()
            daemons.append(daemon)
            cpu.more_daemons.append(daemon.pid)
            daemon.wait_ready()
            clients.append(Client(daemon.socket, timeout_s=300, channel="terminal"))
            settle(clients[-1])
            progress(f"{name}: daemon pid {daemon.pid} ready on {home}")
        for op, items in [(op, items) for op, items in (("remember", fresh),
                                                         ("search", questions))
                          if op in args.ops]:
            with cpu.phase(op):
                for number, first in enumerate(range(0, len(items), COMPARE_BLOCK)):
                    block = items[first:first + COMPARE_BLOCK]
                    for which in [0, 1] if number % 2 == 0 else [1, 0]:
                        cpu_before = proc_cpu_s(daemons[which].pid)
                        for item in block:
                            t0 = time.perf_counter()
                            if op == "remember":
                                clients[which].remember(**item)
                            else:
                                clients[which].search(item, agents=["*"], limit=10)
                            times[op, names[which]].append(time.perf_counter() - t0)
                        time.sleep(0.2)  # the work after a reply ends before the other's
                        cpu_s[op, names[which]] += proc_cpu_s(daemons[which].pid) - cpu_before
            for name in names:
                samples = ms(times[op, name])
                for q in (50, 90, 99):
                    report.add(f"{op} round trip, {name}, p{q}", percentile(samples, q), "ms",
                               le=15 if (op, q, name) == ("remember", 50, names[0]) else None)
            for q in (50, 90, 99):
                report.add(f"  this tree ÷ against, p{q}", percentile(ms(times[op, names[0]]), q)
                           / percentile(ms(times[op, names[1]]), q), "×")
            for name in names:
                report.add(f"  daemon CPU per {op}, {name}",
                           1000 * cpu_s[op, name] / len(times[op, name]), "ms",
                           note="its work after the reply included")
            report.add("  this tree ÷ against, daemon CPU", cpu_s[op, names[0]]
                       / cpu_s[op, names[1]], "×")
        cpu.report(report)
    finally:
        for client in clients:
            client.close()
        for daemon in daemons:
            daemon.stop()
            shutil.rmtree(daemon.home, ignore_errors=True)
    return report


def proc_cpu_s(pid: int) -> float:
    """A process's user + system CPU seconds, its threads' included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def budgets(n: int) -> dict[str, float]:
    """The budgets the issues set: at 100k (search p50/p99, RSS), and at a million (issue 7)."""
    if n >= 1_000_000:
        return {"search_p50": 150, "search_p99": 300, "rss": 500, "recall": 0.97,
                "scale": 1_000_000}
    return {"search_p50": 20, "search_p99": 50, "rss": 300, "scale": 100_000}


def measure_search(report: Report, client: Client, queries: list[str], label: str,
                   budget: dict[str, float] | None, **filters: Any) -> None:
    times, hits, matches = [], 0, 0
    for query in queries:
        t0 = time.perf_counter()
        result = client.search(query, limit=10, **filters)
        times.append(time.perf_counter() - t0)
        hits += len(result["hits"])
        matches += sum(1 for h in result["hits"] if h["match"])
        if result.get("degraded"):
            raise RuntimeError("search answered keyword-only: the model is not loaded")
    samples = ms(times)
    note = f"{len(queries)} distinct queries, {hits / len(queries):.1f} hits each"
    if budget:
        report.add(f"search round trip {label}, p50", percentile(samples, 50), "ms",
                   le=budget["search_p50"], note=f"budget at {budget['scale']:,}")
        report.add(f"search round trip {label}, p99", percentile(samples, 99), "ms",
                   le=budget["search_p99"], note=note)
    else:
        report.add(f"search round trip {label}, p50", percentile(samples, 50), "ms")
        report.add(f"search round trip {label}, p99", percentile(samples, 99), "ms", note=note)


#: Numbers every search_loop question in this process: a question asked in an earlier loop
#: (numbered from 0 again) came from the daemon's query cache, not the embedder (in
#: bench_passes.py, 64 % of the searches during the passes did until 2026-11-28).
_ASKED = itertools.count()


def search_loop(client: Client, queries: list[str], stop: threading.Event,
                rate: float) -> list[float]:
    """Searches until ``stop``: ``rate`` a second at random moments (Poisson arrivals, a fixed
    seed), or back to back with ``rate`` 0. No question is asked twice."""
    times = []
    number = 0
    arrivals = random.Random(11)
    due = time.perf_counter()
    while not stop.is_set():
        if rate:
            due += arrivals.expovariate(rate)
            if stop.wait(max(0.0, due - time.perf_counter())):
                break
        query = queries[number % len(queries)] + f" {next(_ASKED)}"  # never the query cache
        started = time.perf_counter()
        client.search(query, agents=["*"], limit=10)
        times.append(time.perf_counter() - started)
        number += 1
    return times


def measure_search_during_ingest(report: Report, socket: Path, entries: list[dict[str, Any]],
                                 queries: list[str]) -> None:
    """Searches at PROBE_RATE a second (random moments) while remember_many batches of new
    entries are stored: a bulk import must not hold a search up for longer than a slice."""
    done = threading.Event()
    box: dict[str, float] = {}

    def write() -> None:
        started = time.perf_counter()
        with Client(socket, timeout_s=300, channel="terminal") as writer:
            for start in range(0, len(entries), INGEST_BATCH):
                writer.remember_many(entries[start:start + INGEST_BATCH])
        box["rate"] = len(entries) / (time.perf_counter() - started)
        done.set()

    thread = threading.Thread(target=write)
    with Client(socket, timeout_s=60) as client:
        thread.start()
        times = search_loop(client, queries, done, PROBE_RATE)
    thread.join()
    note = f"{len(times)} searches while {len(entries):,} new entries were stored " \
           f"({box.get('rate', 0):.0f} entries/s)"
    report.add("search round trip during a bulk import, p50", percentile(ms(times), 50), "ms")
    report.add("search round trip during a bulk import, p99", percentile(ms(times), 99), "ms",
               note=note)


def timed_runs(argv: list[str], env: dict[str, str], runs: int,
               ok_codes: tuple[int, ...] = (0,)) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t0)
        if done.returncode not in ok_codes:
            raise RuntimeError(
                f"{argv[:3]} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return times


def measure_cli(report: Report, daemon: DaemonProcess, queries: list[str], agent: str) -> None:
    """The console script as a whole process, and plain interpreter start-ups to compare with."""
    memory = Path(sys.executable).parent / "memory"
    command = [str(memory)] if memory.exists() else [sys.executable, "-m", "memoryd_client"]
    times = []
    for query in queries:
        # exit 1 means "nothing matched": still a complete search
        times += timed_runs([*command, "search", agent, "-", query], daemon.env, 1, ok_codes=(0, 1))
    report.add(f"`memory search {agent} - QUERY` whole process, p50", percentile(ms(times), 50),
               "ms", le=80, note=f"{len(queries)} runs; budget at 10k")
    report.add("  same, p99", percentile(ms(times), 99), "ms")
    bare = timed_runs([sys.executable, "-c", "pass"], daemon.env, 10)
    imports = timed_runs([sys.executable, "-c", "import memoryd_client.cli"], daemon.env, 10)
    report.add("  of which: python -c pass, p50", percentile(ms(bare), 50), "ms")
    report.add("  of which: python -c 'import memoryd_client.cli', p50",
               percentile(ms(imports), 50), "ms")


def measure_rss(report: Report, pid: int, budget: float) -> None:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024  # kB → MiB
    report.add("daemon RSS (VmRSS)", fields.get("VmRSS"), "MB", le=budget)
    report.add("daemon peak RSS (VmHWM)", fields.get("VmHWM"), "MB")


def measure_recall(report: Report, db_path: Path, embedder: Any, queries: list[str],
                   agent: str, budget: float | None) -> None:
    """The daemon's vector index (built as Engine._build_index builds it: each entry's vector
    and its parts') against the exact top-k by numpy over the same vectors: an entry scores the
    best of its own and its parts' cosines."""
    import tempfile

    from memoryd.embedding.vectors import stored_vectors
    from memoryd.retrieval.candidates import CANDIDATES
    from memoryd.store.database import Store
    from memoryd.store.vectors import VectorFilter, VectorIndex

    store = Store(db_path)
    work = tempfile.TemporaryDirectory()
    index = None
    try:
        assert store.model is not None, "no embedding model recorded in the store"
        dim = store.model.dim
        t0 = time.perf_counter()
        index = VectorIndex(dim, Path(work.name) / "rows")
        meta: dict[int, tuple[Any, ...]] = {}  # rowid → what the daemon's index keeps
        owners, matrices = [], []
        for rowids, vectors, parts, columns in stored_vectors(store, dim):  # as the daemon
            index.add_many(rowids, vectors, parts, columns)
            meta.update(zip(rowids, columns))
            for rowid, vector, extra in zip(rowids, vectors, parts):
                owners += [rowid] * (1 + len(extra))
                matrices += [vector[None, :], extra]
        build_s = time.perf_counter() - t0
        owner = np.array(owners)
        vectors = np.vstack(matrices)
        entry_ids = np.unique(owner)
        active = np.array([meta[int(r)][4] == "active" for r in entry_ids])
        of_agent = np.array([meta[int(r)][0] == agent for r in entry_ids])
        where = np.searchsorted(entry_ids, owner)

        query_vectors = embedder.embed(queries)
        index_times, exact_times, recalls, agent_recalls = [], [], [], []
        for q in query_vectors:
            t0 = time.perf_counter()
            found = index.search(q, CANDIDATES, VectorFilter())  # what search asks the index for
            index_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            best = np.full(len(entry_ids), -np.inf)
            np.maximum.at(best, where, vectors @ q)
            exact = entry_ids[top_k(np.where(active, best, -np.inf), RECALL_K)]
            exact_times.append(time.perf_counter() - t0)
            recalls.append(overlap(sorted(found, key=lambda r: -max(found[r]))[:RECALL_K], exact))
            found = index.search(q, CANDIDATES, VectorFilter(agents=[agent]))
            exact = entry_ids[top_k(np.where(active & of_agent, best, -np.inf), RECALL_K)]
            agent_recalls.append(overlap(sorted(found, key=lambda r: -max(found[r]))[:RECALL_K],
                                         exact))
        knn_times = []
        for q in query_vectors[:20]:
            t0 = time.perf_counter()
            store.knn(q, RECALL_K)
            knn_times.append(time.perf_counter() - t0)
    finally:
        store.close()
        if index is not None:
            index.close()
        work.cleanup()
    report.add(f"vector index recall@{RECALL_K}, all agents", float(np.mean(recalls)), "",
               ge=budget, note=f"{len(queries)} queries vs exact numpy (entries and their parts)")
    report.add(f"vector index recall@{RECALL_K}, agent {agent}", float(np.mean(agent_recalls)), "")
    report.add(f"vector index search (k={CANDIDATES}), p50", percentile(ms(index_times), 50), "ms",
               note=f"{len(index):,} entries + {index.parts:,} part vectors, "
               f"{index.nbytes / 1e6:.1f} MB in memory, built in {build_s:.1f} s")
    report.add(f"vector index search (k={CANDIDATES}), p99", percentile(ms(index_times), 99), "ms")
    report.add("exact numpy float32 scan, p50", percentile(ms(exact_times), 50), "ms")
    report.add("exact sqlite-vec Store.knn, p50", percentile(ms(knn_times), 50), "ms",
               note="20 queries")


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    k = min(k, int(np.isfinite(scores).sum()))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    best = np.argpartition(-scores, k - 1)[:k]
    return best[np.argsort(-scores[best])]


def overlap(found: Sequence[int], exact: np.ndarray) -> float:
    if len(exact) == 0:
        return 1.0
    return len(set(map(int, found)) & set(map(int, exact))) / len(exact)


def disk_usage(home: Path) -> dict[str, float]:
    def size(paths: Callable[[], Any]) -> float:
        return sum(p.stat().st_size for p in paths() if p.is_file()) / 1e6

    return {
        "db_mb": round(size(lambda: home.glob("memoryd.db*")), 1),
        "ledgers_mb": round(size(lambda: (home / "ledger").glob("*.jsonl")), 1),
    }


# -- the run ----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--short", "HEAD") or None
    if commit and git("status", "--porcelain", "--", "memoryd", "client"):
        commit += "+dirty"  # uncommitted changes to the code under test
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "commit": commit}


def corpus_info(corpus: Corpus, entries: list[dict[str, Any]]) -> dict[str, Any]:
    agents = Counter(e["agent"] for e in entries)
    return {
        "seed": corpus.seed,
        "unique_ratio_of_draws": round(corpus.unique_ratio, 5),
        "agents": dict(agents.most_common()),
        "categories": len({e["category"] for e in entries}),
        "with_key": sum("key" in e for e in entries),
        "with_tags": sum("tags" in e for e in entries),
        "mean_chars": round(float(np.mean([len(e["text"]) for e in entries])), 1),
    }


def split_queries(queries: list[str], *sizes: int) -> list[list[str]]:
    out, start = [], 0
    for size in sizes:
        out.append(queries[start:start + size])
        start += size
    return out


def run(args: argparse.Namespace) -> Report:
    report = Report(args.n)
    report.info["machine"] = machine()
    report.info["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    report.info["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]

    if args.keep:
        home = Path(args.keep).expanduser().resolve()
        home.mkdir(parents=True, exist_ok=True)
    else:
        home = Path(tempfile.mkdtemp(prefix="mdb-", dir="/tmp"))
    os.environ["MEMORYD_HOME"] = str(home)  # the bench's own load_config() reads the same config
    os.environ.pop("MEMORYD_SOCKET", None)
    report.info["home"] = str(home)

    corpus = Corpus(args.seed)
    entries = corpus.entries(args.n)
    # the texts are distinct either way; at a million draws the templates repeat more often
    if corpus.unique_ratio < (0.99 if args.n <= 200_000 else 0.9):
        raise RuntimeError(f"the corpus generator drew only {corpus.unique_ratio:.2%} unique texts")
    report.info["corpus"] = corpus_info(corpus, entries)
    top_agent = next(iter(report.info["corpus"]["agents"]))  # the agent with the most entries
    progress(f"corpus: {args.n:,} entries, {corpus.unique_ratio:.2%} of draws unique; home {home}")

    cpu = CpuMeter()
    daemon = DaemonProcess(home)
    exit_code: int | None = None
    ok = False
    try:
        t0 = time.perf_counter()
        daemon.start()
        cpu.daemon_pid = daemon.pid
        answered, waited = first_search(daemon)
        status = daemon.wait_ready()
        report.add("daemon start → model loaded and index built", time.perf_counter() - t0, "s",
                   note=f"{status['vector_index']['entries']:,} vectors at start")
        report.add("a search sent as soon as the daemon answers: its round trip", waited * 1000,
                   "ms", note=f"sent {answered:.1f} s after the start")
        existing = sum(status["entries"].values())
        progress(f"daemon pid {daemon.pid} ready; {existing:,} entries already stored")

        short = short_notes(entries)
        with cpu.phase("embedder"):
            embedder = load_bare_embedder()
            measure_embedder(report, embedder, [e["text"] for e in short], "short notes")
            measure_embedder(report, embedder, [e["text"] for e in entries], "corpus")
        with Client(daemon.socket, timeout_s=300, channel="terminal") as client:
            # how far the corpus was sent (duplicates the daemon refused count as sent): kept
            # with the store; a store from before this record counts its entries instead
            record = home / "bench-sent.json"
            stored_corpus = json.loads(record.read_text())["corpus_sent"] if record.exists() \
                else existing - len(short)

            def sent_up_to(start: int) -> Callable[[int], None]:
                return lambda done: record.write_text(json.dumps({"corpus_sent": start + done}))

            if existing and stored_corpus < len(entries):
                # a kept store that an earlier run did not finish: ingest the rest (batches go
                # in corpus order, so the first entries are the stored ones)
                start = max(0, stored_corpus)
                progress(f"resuming the ingest after {stored_corpus:,} corpus entries")
                ingest(report, daemon.socket, entries[start:], "corpus (resumed)", embedder,
                       sent=sent_up_to(start))
            elif existing:
                report.add("bulk ingest", None, "entries/s", ge=200,
                           note=f"skipped: reusing {existing:,} stored entries")
            else:
                ingest(report, daemon.socket, short, "short notes", embedder, ge=200)
                with cpu.phase("ingest"):
                    ingest(report, daemon.socket, entries, "corpus", embedder, sent=sent_up_to(0))
                phase = cpu.phases["ingest"]
                others = phase["other_cpu_s"] / phase["wall_s"]
                stolen = phase["steal_s"] / phase["wall_s"]
                report.add("  daemon CPU per ingested entry",
                           1000 * phase["daemon_cpu_s"] / len(entries), "ms",
                           note=f"meanwhile other processes {others:.2f} cores, "
                           f"stolen {stolen:.2f} cores")
            if args.fill_only:
                progress("filled; --fill-only: stopping without measuring")
                exit_code = daemon.stop()
                ok = exit_code == 0
                return report
            settle(client)
            planner_statistics(client)
            seen = {" ".join(e["text"].lower().split()) for e in entries}
            fresh = corpus.entries(REMEMBERS, salt=1 + existing, avoid=seen)
            progress("remember round trips")
            with cpu.phase("remember"):
                measure_remember(report, client, fresh)

            queries = corpus.queries(WARMUP_SEARCHES + SEARCHES + FILTERED_SEARCHES + CLI_RUNS
                                     + RECALL_QUERIES, salt=existing)
            warmup, all_agents, one_agent, cli_queries, recall_queries = split_queries(
                queries, WARMUP_SEARCHES, SEARCHES, FILTERED_SEARCHES, CLI_RUNS, RECALL_QUERIES)
            for query in warmup:
                client.search(query, agents=["*"], limit=10)
            progress("search round trips")
            with cpu.phase("search"):
                measure_search(report, client, all_agents, "all agents", budgets(args.n),
                               agents=["*"])
                measure_search(report, client, one_agent, f"agent {top_agent}", None,
                               agent=top_agent)
            progress("searches during a bulk import")
            with cpu.phase("search during import"):
                measure_search_during_ingest(
                    report, daemon.socket,
                    corpus.entries(PROBE_ENTRIES, salt=2 + existing, avoid=seen), all_agents)
            status = client.status()
        progress("memory search CLI")
        with cpu.phase("cli"):
            measure_cli(report, daemon, cli_queries, top_agent)
        measure_rss(report, daemon.pid, budgets(args.n)["rss"])
        report.info["status_after"] = {k: status.get(k) for k in ("entries", "vectors", "backlog",
                                                                    "vector_index", "rss_bytes")}
        exit_code = daemon.stop()
        report.add("daemon exit code after SIGTERM", exit_code, "", note="must be 0")
        report.info["disk"] = disk_usage(home)
        if exit_code != 0:
            raise RuntimeError(f"memoryd exited {exit_code} on SIGTERM:\n{daemon.log_tail()}")
        progress("vector index recall")
        measure_recall(report, home / "memoryd.db", embedder, recall_queries, top_agent,
                       budgets(args.n).get("recall"))
        cpu.report(report)
        ok = True
    finally:
        if exit_code is None:
            daemon.stop()
        if not args.keep:
            if ok:
                shutil.rmtree(home, ignore_errors=True)
            else:
                progress(f"kept {home} for inspection (daemon.log)")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fill a memoryd store with N realistic memories through the client and "
        "measure ingest, remember and search round trips, the CLI, RSS and vector-index recall.")
    parser.add_argument("--n", type=int, default=10_000, help="entries to ingest (default 10000)")
    parser.add_argument("--keep", metavar="DIR",
                        help="use DIR as MEMORYD_HOME and keep it; if it already holds entries, "
                        "finish an unfinished ingest (or skip a finished one) and measure against "
                        "them (keep the path short)")
    parser.add_argument("--fill-only", action="store_true",
                        help="with --keep: fill (or finish filling) the store, then stop; a later "
                        "run with the same --keep measures, e.g. when the machine is quiet")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    parser.add_argument("--out", type=Path, help="JSON output (default bench/results/store-N.json)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is over")
    parser.add_argument("--remembers", type=int, default=COMPARE_REMEMBERS,
                        help=f"with --against: new texts sent to each daemon (default "
                        f"{COMPARE_REMEMBERS}; the p50 of 400 moves by ~7 %% at load 7)")
    parser.add_argument("--ops", default="remember,search", type=lambda v: v.split(","),
                        help="with --against: which round trips to compare (default "
                        "remember,search)")
    parser.add_argument("--against", metavar="TREE",
                        help="with --keep DIR (a filled store): only remember and search "
                        "round trips, this tree's daemon against TREE's (another checkout), "
                        "interleaved")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be positive")
    if args.fill_only and not args.keep:
        parser.error("--fill-only needs --keep DIR (the filled store is what it is for)")

    if args.against:
        if not args.keep:
            parser.error("--against needs --keep DIR (a filled store)")
        report = compare_remember(args)
        print(report.table())
        return 0
    report = run(args)
    if args.fill_only:
        print(report.table())
        return 0
    out = args.out or HERE / "results" / f"store-{args.n}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    info = report.info
    print(f"\nmemoryd store benchmark, N = {args.n:,} ({info['machine']['cores']} cores, "
          f"{info['machine']['cpu']}, Python {info['machine']['python']}, commit "
          f"{info['machine']['commit']})")
    print(report.table())
    print(f"\nbudgets: {sum(r.ok is True for r in report.rows)} ok, {len(report.over)} over; "
          f"JSON: {out}")
    return 1 if args.check and report.over else 0


if __name__ == "__main__":
    sys.exit(main())
