"""`memory ui` on a store of 10,000 entries: how long each page takes to be served.

    python bench/bench_viewer.py [--entries 10000] [--rounds 20]

Starts a real daemon (MEMORYD_HOME in a temporary directory), stores N generated entries
(bench/corpus.py) through ``remember_many``, dated over the past year (the Timeline has a
year to draw), runs the consolidate and staleness passes (the Passes page has runs), then
starts `memory ui --no-open` as a process of its own and asks it, round after round, for each
page over HTTP — each page asking the daemon over its socket, as in use:

  - Search with a query (a new question each round: its vector is not cached), and its
    results alone (what the page fetches as one types), Search without a query (the newest);
  - an entry (a different one each round), Timeline, Sessions, Passes, a run, Health;
  - the doctor's checks, which the Health page fetches after it is shown (no budget: they
    read the whole store).

Prints p50 / p90 / max per page against the budget (p50 <= 200 ms, issue 39) and the machine's
load (uptime) before and after; JSON to bench/results/viewer.json. Exits 1 when a page misses
the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from memoryd_client import Client, DaemonUnreachableError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from corpus import Corpus  # bench/ is not a package: found through sys.path  # noqa: E402

BUDGET_MS = 200.0
#: Parts a page fetches after it is shown, outside the budget: the doctor's checks read the
#: whole store (quick_check, every ledger entry against the index).
NO_BUDGET = frozenset({"health: doctor's checks"})
YEAR_S = 365 * 86_400


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def start_daemon(home: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = (home / "daemon.log").open("w")
    daemon = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env, stderr=log,
                              stdout=subprocess.DEVNULL)
    log.close()
    deadline = time.monotonic() + 120
    while True:
        try:
            with Client(home / "memoryd.sock", timeout_s=10) as client:
                if client.status()["vector_index"]["ready"]:
                    return daemon
        except DaemonUnreachableError:
            pass
        if time.monotonic() > deadline or daemon.poll() is not None:
            raise SystemExit((home / "daemon.log").read_text())
        time.sleep(0.2)


def fill(socket: Path, entries: int) -> list[str]:
    """N entries, dated over the past year; returns their ids."""
    now = time.time()
    rng = random.Random(11)
    drafts = Corpus(seed=7).entries(entries)
    for draft in drafts:
        draft["created"] = now - YEAR_S * rng.random() ** 2  # more of them lately
        if draft["kind"] == "feedback":  # a person's words: not through the API
            draft["kind"] = "note"
    ids = []
    started = time.perf_counter()
    with Client(socket, timeout_s=600) as client:
        for start in range(0, len(drafts), 500):
            for result in client.remember_many(drafts[start:start + 500])["results"]:
                ids.append(result["id"])
        print(f"stored {len(ids):,} entries in {time.perf_counter() - started:.0f} s",
              flush=True)
        for name in ("consolidate", "staleness"):
            ran = client.pass_run(name)
            print(f"pass {name}: {ran['run']} {ran['status']} {ran['counts']}", flush=True)
    return ids


def start_viewer(socket: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    viewer = subprocess.Popen([sys.executable, "-m", "memoryd_client", "ui", "--no-open",
                               "--socket", str(socket)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                              env=env)
    assert viewer.stdout is not None
    found = re.match(r"memory ui: (\S+)", viewer.stdout.readline())
    if not found:
        raise SystemExit("memory ui printed no address")
    return viewer, found.group(1)


def fetch(url: str) -> float:
    """One page, read whole; milliseconds."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as reply:
        reply.read()
        if reply.status != 200:
            raise SystemExit(f"{url}: HTTP {reply.status}")
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="md-bench-viewer-", dir="/tmp"))
    (home / "user").mkdir()
    (home / "config.toml").write_text("[passes]\n" + "".join(
        f'{name} = "off"\n' for name in ("notebooks", "consolidate", "promote", "staleness",
                                         "retain")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(home), HOME=str(home / "user"))
    socket = home / "memoryd.sock"
    daemon = start_daemon(home, env)
    viewer = None
    try:
        ids = fill(socket, args.entries)
        with Client(socket) as client:
            run = client.pass_runs("consolidate", limit=1)["runs"][0]["run"]
        viewer, url = start_viewer(socket, env)
        questions = Corpus(seed=7).queries(args.rounds + 1)
        rng = random.Random(3)
        pages = {
            "search (query)": lambda n: "search?" + urllib.parse.urlencode({"q": questions[n]}),
            "search results (as you type)": lambda n: "search?" + urllib.parse.urlencode(
                {"q": questions[n][:-3], "fragment": "results"}),
            "search (no query: newest)": lambda n: "search",
            "entry": lambda n: f"entry/{rng.choice(ids)}",
            "timeline": lambda n: "timeline",
            "sessions": lambda n: "sessions",
            "passes": lambda n: "passes",
            "run": lambda n: f"passes/{run}",
            "health": lambda n: "health",
            "health: doctor's checks": lambda n: "health?fragment=checks",
        }
        for path in pages.values():  # warm: the first request of each opens connections
            fetch(url + path(args.rounds))
        before = load()
        times: dict[str, list[float]] = {name: [] for name in pages}
        for n in range(args.rounds):
            for name, path in pages.items():
                times[name].append(fetch(url + path(n)))
        after = load()
    finally:
        if viewer is not None:
            viewer.send_signal(signal.SIGTERM)
            viewer.wait(timeout=30)
            if viewer.stdout is not None:
                viewer.stdout.close()
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        shutil.rmtree(home, ignore_errors=True)
    print(f"\n{args.entries:,} entries, {args.rounds} rounds; budget p50 <= {BUDGET_MS:.0f} ms")
    print(f"load before: {before}\nload after:  {after}\n")
    print(f"{'page':<30} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8}")
    results, missed = {}, []
    for name, values in times.items():
        p50, p90 = percentile(values, 50), percentile(values, 90)
        results[name] = {"p50_ms": round(p50, 1), "p90_ms": round(p90, 1),
                         "max_ms": round(max(values), 1)}
        flag = "  (no budget)" if name in NO_BUDGET else "" if p50 <= BUDGET_MS \
            else "  over budget"
        if flag == "  over budget":
            missed.append(name)
        print(f"{name:<30} {p50:>8.1f} {p90:>8.1f} {max(values):>8.1f}{flag}")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "viewer.json").write_text(json.dumps(
        {"entries": args.entries, "rounds": args.rounds, "budget_p50_ms": BUDGET_MS,
         "load_before": before, "load_after": after, "pages": results}, indent=2) + "\n")
    print("\nwithin budget" if not missed else f"\nover budget: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
