"""Where a search's time goes: when each stage of its critical path starts and ends, in the daemon.

    python bench/search_stages.py --keep /tmp/c100     # a store filled by bench_store.py --keep
    python bench/search_stages.py --keep /tmp/c100 --searches 500 --gap-ms 20

The store is copied to a temporary state dir (the kept one is not touched). The daemon runs in
this process, with `memoryd serve`'s 1 ms GIL switch interval; a thread asks bench_store's
questions through the client, one at a time, ``--gap-ms`` apart, over all agents. Printed, p50
over the searches: when each stage starts and ends, in ms from the moment the search service
took the request (the keyword half and the question's embedding start together; the vector
half follows the embedding, on the search thread), each stage's own span, and the round trip.
Not a budget figure: the budget is bench_store.py's round trip to a daemon process; the timers
here add ~0.1 ms to a search.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "client"))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import Corpus  # noqa: E402
from memoryd_client import Client  # noqa: E402

WARMUP = 20
#: One search's moments: stage + ">" (start) or "<" (end) → perf_counter seconds.
Moments = dict[str, float]


class Timeline:
    """The moments of the search being served (searches come one at a time)."""

    def __init__(self) -> None:
        self.now: Moments = {}
        self.done: list[Moments] = []

    def mark(self, name: str) -> None:
        self.now.setdefault(name, time.perf_counter())  # a stage's first run in the search

    def timed(self, function: Callable[..., Any], stage: str) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            self.mark(stage + ">")
            try:
                return function(*args, **kwargs)
            finally:
                self.mark(stage + "<")
        return run


def instrument(timeline: Timeline) -> None:
    from memoryd.embedding.model import Embedder
    from memoryd.retrieval.candidates import Candidates
    from memoryd.retrieval.search import Searcher
    from memoryd.retrieval.service import SearchService

    for part, stage in ((Searcher, "plan"), (Searcher, "keyword_half"),
                        (Candidates, "vector_half"), (Searcher, "finish_search")):
        setattr(part, stage, timeline.timed(getattr(part, stage), stage))
    embed = Embedder.embed

    def embed_timed(self: Embedder, *args: Any, **kwargs: Any) -> Any:
        if not threading.current_thread().name.startswith("memoryd-search"):
            return embed(self, *args, **kwargs)  # not the question's
        return timeline.timed(embed, "embed")(self, *args, **kwargs)
    Embedder.embed = embed_timed  # type: ignore[method-assign]
    search = SearchService.search

    async def search_timed(self: SearchService, request: Any) -> Any:
        timeline.now = {}
        timeline.mark("start")
        try:
            return await search(self, request)
        finally:
            timeline.mark("end")
            timeline.done.append(timeline.now)
    SearchService.search = search_timed  # type: ignore[method-assign]


def ask(socket: Path, questions: list[str], gap: float, round_trips: list[float],
        timeline: Timeline) -> None:
    with Client(socket) as client:
        for number, question in enumerate(questions):
            if number == WARMUP:
                timeline.done.clear()
            started = time.perf_counter()
            client.search(question, agents=["*"], limit=10)
            if number >= WARMUP:
                round_trips.append((time.perf_counter() - started) * 1000)
            time.sleep(gap)


def report(timeline: Timeline, round_trips: list[float]) -> None:
    moments: dict[str, list[float]] = defaultdict(list)
    spans: dict[str, list[float]] = defaultdict(list)
    for search in timeline.done:
        for name, at in search.items():
            moments[name].append((at - search["start"]) * 1000)
            if name.endswith(">") and name[:-1] + "<" in search:
                spans[name[:-1]].append((search[name[:-1] + "<"] - at) * 1000)
    print(f"{len(timeline.done)} searches; p50, ms from the request reaching the search service")
    print(f"{'moment':20s} {'at':>7s}")
    for name in sorted(moments, key=lambda n: statistics.median(moments[n])):
        print(f"{name:20s} {statistics.median(moments[name]):7.2f}")
    print(f"{'stage':20s} {'span':>7s}")
    for stage, values in spans.items():
        print(f"{stage:20s} {statistics.median(values):7.2f}")
    print(f"{'round trip':20s} {statistics.median(round_trips):7.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", required=True, type=Path,
                        help="a filled store (bench_store.py --keep DIR); copied, not changed")
    parser.add_argument("--searches", type=int, default=300, help="default: 300")
    parser.add_argument("--gap-ms", type=float, default=10.0,
                        help="pause between searches (default: 10)")
    parser.add_argument("--seed", type=int, default=7, help="the corpus seed of the fill")
    args = parser.parse_args()
    if not (args.keep / "memoryd.db").exists():
        parser.error(f"{args.keep} holds no store (fill one with bench_store.py --keep)")
    with tempfile.TemporaryDirectory(prefix="stages-") as scratch:
        home = Path(scratch) / "state"
        shutil.copytree(args.keep, home, symlinks=True,
                        ignore=shutil.ignore_patterns("memoryd.sock", "*.lock"))
        os.environ["MEMORYD_HOME"] = str(home)
        os.environ["HOME"] = str(Path(scratch) / "home")
        from memoryd.config import load_config
        from memoryd.server.daemon import Daemon, run_daemon

        timeline = Timeline()
        instrument(timeline)
        config = load_config()
        questions = Corpus(args.seed).queries(WARMUP + args.searches, salt=991)
        round_trips: list[float] = []
        box: dict[str, Any] = {}
        ready = threading.Event()

        def started(daemon: Daemon) -> None:
            box["daemon"], box["loop"] = daemon, asyncio.get_running_loop()
            ready.set()

        def client_side() -> None:
            ready.wait()
            daemon: Daemon = box["daemon"]
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and (
                    daemon.parts is None or daemon.parts.derived.index is None
                    or daemon.parts.derived.lexicon is None):
                time.sleep(0.2)  # the vector index and the words, as a search wants them
            try:
                ask(config.socket_path, questions, args.gap_ms / 1000, round_trips, timeline)
            finally:
                box["loop"].call_soon_threadsafe(daemon.should_exit.set)

        sys.setswitchinterval(0.001)  # as `memoryd serve` runs
        asker = threading.Thread(target=client_side, name="asker")
        asker.start()
        asyncio.run(run_daemon(config, ready=started))
        asker.join()
    if not round_trips:
        print("no search was answered", file=sys.stderr)
        return 1
    report(timeline, round_trips)
    return 0


if __name__ == "__main__":
    sys.exit(main())
