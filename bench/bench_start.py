"""A daemon's start on a filled store: when it answers, when its vector index is ready, and how
long searches and writes wait meanwhile.

    python bench/bench_start.py --keep /tmp/c100                          # this tree, 3 starts
    python bench/bench_start.py --keep /tmp/c100 --against /work/main     # and another, in turn

Each start copies the kept store (``bench_store.py --keep DIR --fill-only`` fills one) to a
scratch state dir and starts ``python -m memoryd serve`` on it. From the moment the socket
answers, one client asks a search over all agents every 0.25 s and remembers a new note every
fourth time, one request at a time, until 3 s after the vector index is ready. Printed per tree
(with ``--against``, the two trees' starts alternate): the seconds from the start to the first
request answered (sent then), to the model loaded and to the index ready (the daemon's log
lines), and the round trips of the requests sent before the index was ready and after it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "client"))

from bench_store import DaemonProcess  # noqa: E402
from corpus import Corpus  # noqa: E402
from memoryd_client import Client  # noqa: E402
from memoryd_client.errors import MemorydError  # noqa: E402

AFTER_READY_S = 3.0
GAP_S = 0.25
START_TIMEOUT_S = 900.0
MARKS = {"model": "Embedding model", "index": "Vector index ready"}


@dataclass
class Start:
    tree: str
    socket_s: float = float("nan")
    model_s: float = float("nan")
    index_s: float = float("nan")
    started: float = 0.0  # epoch seconds
    #: (sent at, epoch seconds; round trip, ms; "search" or "remember")
    requests: list[tuple[float, float, str]] = field(default_factory=list)

    def waits(self, kind: str, before: bool) -> list[float]:
        ready = self.started + self.index_s
        return [ms for at, ms, what in self.requests
                if what == kind and (at < ready) == before]


def logged_at(log: Path, mark: str) -> float | None:
    """The epoch time of the daemon log's first line holding ``mark``."""
    for line in log.read_text(errors="replace").splitlines():
        if mark in line:
            return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return None


def start_once(kept: Path, tree: Path | None, label: str, queries: list[str]) -> Start:
    scratch = Path(tempfile.mkdtemp(prefix="start-", dir="/tmp"))
    home = scratch / "s"
    shutil.copytree(kept, home, symlinks=True, ignore=shutil.ignore_patterns(
        "memoryd.sock", "*.lock", "daemon.log"))
    daemon = DaemonProcess(home, tree)
    run = Start(label)
    try:
        run.started = time.time()
        daemon.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        ready_at: float | None = None
        number = 0
        while time.monotonic() < deadline:
            if ready_at is None and (index := logged_at(daemon.log_path, MARKS["index"])):
                ready_at = index
            if ready_at is not None and time.time() > ready_at + AFTER_READY_S:
                break
            try:
                with Client(daemon.socket, timeout_s=600) as client:
                    sent = time.time()
                    if number % 4 == 3:
                        client.remember("bench-start", "notes",
                                        f"start {label} note {number}: {queries[number]}")
                        kind = "remember"
                    else:
                        client.search(queries[number], agents=["*"], limit=10)
                        kind = "search"
                    run.requests.append((sent, (time.time() - sent) * 1000, kind))
                    if number == 0:  # the first answer
                        run.socket_s = sent - run.started
                    number += 1
            except MemorydError:
                pass  # not listening yet
            time.sleep(GAP_S)
        model = logged_at(daemon.log_path, MARKS["model"])
        run.model_s = model - run.started if model else float("nan")
        run.index_s = ready_at - run.started if ready_at else float("nan")
    finally:
        daemon.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return run


def show(runs: list[Start]) -> None:
    def figure(values: list[float], how: str) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values) if how == 'p50' else max(values):.0f}"

    print(f"{'tree':12s} {'first s':>8s} {'model s':>7s} {'index s':>7s} "
          f"{'search before: n p50 max ms':>28s} {'remember before: n max':>23s} "
          f"{'search after p50':>16s}")
    for run in runs:
        before, after = run.waits("search", True), run.waits("search", False)
        writes = run.waits("remember", True)
        print(f"{run.tree:12s} {run.socket_s:8.1f} {run.model_s:7.1f} {run.index_s:7.1f} "
              f"{len(before):10d} {figure(before, 'p50'):>8s} {figure(before, 'max'):>8s} "
              f"{len(writes):15d} {figure(writes, 'max'):>7s} {figure(after, 'p50'):>16s}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", required=True, type=Path,
                        help="a filled store (bench_store.py --keep DIR); copied, not changed")
    parser.add_argument("--against", metavar="TREE", type=Path,
                        help="another memoryd checkout, started in turn with this one")
    parser.add_argument("--runs", type=int, default=3, help="starts per tree (default: 3)")
    parser.add_argument("--seed", type=int, default=7, help="the corpus seed of the fill")
    args = parser.parse_args()
    kept = args.keep.expanduser().resolve()
    if not (kept / "memoryd.db").exists():
        parser.error(f"{kept} holds no store (fill one with bench_store.py --keep)")
    if args.against and not (args.against / "memoryd" / "__main__.py").exists():
        parser.error(f"--against {args.against}: not a memoryd checkout")
    queries = Corpus(args.seed).queries(4000, salt=313)
    trees: list[tuple[Path | None, str]] = [(None, "this tree")]
    if args.against:
        trees.append((args.against.resolve(), args.against.name or str(args.against)))
    runs = []
    for number in range(args.runs):
        for tree, label in trees:
            print(f"[{time.strftime('%H:%M:%S')}] start {number + 1} of {label}", flush=True)
            runs.append(start_once(kept, tree, label, queries))
    show(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
