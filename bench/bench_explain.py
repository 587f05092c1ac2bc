"""What `explain` costs a search: p50 with and without it, interleaved.

    python bench/bench_explain.py [--entries 3000] [--rounds 200] [--baseline DIR]

Starts a real daemon (MEMORYD_HOME in a temporary directory), stores N generated entries
(bench/corpus.py) through ``remember_many`` and waits for their vectors, then asks the same
questions (the viewer's 20 hits each) with and without ``explain: true``, one after the other
in alternating order, so that both see the same machine load. Every question is asked once
before the timing: its vector comes from the query cache, so the figures are the search's own
work, where explain's reading of the hits' words and sentences would show.

``--baseline DIR``: a checkout of memoryd to compare plain search with (``main`` before the
change): its daemon serves a copy of the same store, and its plain searches join the
interleaving. Prints p50 / p90 per mode and the ratios of the p50s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memoryd_client import Client, DaemonUnreachableError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from corpus import Corpus  # noqa: E402  (bench/ is not a package: found through sys.path)

HITS = 20  # the viewer's Search page (memoryd_client.ui.pages.HITS)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


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


def stop(daemon: subprocess.Popen[bytes]) -> None:
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=60)


def environment(home: Path, tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(home), HOME=str(home / "user"))
    if tree is not None:
        env["PYTHONPATH"] = f"{tree}{os.pathsep}{tree / 'client'}"
    return env


def fill(socket: Path, entries: int) -> None:
    drafts = Corpus(seed=7).entries(entries)
    for draft in drafts:
        if draft["kind"] == "feedback":  # a person's words: not through the API
            draft["kind"] = "note"
    with Client(socket, timeout_s=600) as client:
        for start in range(0, len(drafts), 500):
            client.remember_many(drafts[start:start + 500])
        while client.status().get("backlog"):
            time.sleep(0.5)


def timed(client: Client, question: str, explain: bool) -> float:
    started = time.perf_counter()
    client.search(question, agents=["*"], limit=HITS, explain=explain or None)
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--baseline", type=Path, help="a checkout to compare plain search with")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="md-bench-explain-", dir="/tmp"))
    (home / "user").mkdir()
    (home / "config.toml").write_text("[passes]\n" + "".join(
        f'{name} = "off"\n' for name in ("notebooks", "consolidate", "promote", "staleness",
                                         "retain")))
    daemons: list[subprocess.Popen[bytes]] = []
    clients: list[Client] = []
    try:
        daemons.append(start_daemon(home, environment(home, None)))
        fill(home / "memoryd.sock", args.entries)
        print(f"stored {args.entries:,} entries", flush=True)
        modes: dict[str, Callable[[str], float]] = {}
        client = Client(home / "memoryd.sock", timeout_s=60)
        clients.append(client)
        modes["plain"] = lambda q: timed(client, q, False)
        modes["explain"] = lambda q: timed(client, q, True)
        if args.baseline is not None:  # a copy of the store, served by the other code
            stop(daemons.pop())
            other = home.with_name(home.name + "-baseline")
            shutil.copytree(home, other, ignore=shutil.ignore_patterns("memoryd.sock", "*.pid"))
            daemons.append(start_daemon(home, environment(home, None)))
            daemons.append(start_daemon(other, environment(other, args.baseline)))
            client = Client(home / "memoryd.sock", timeout_s=60)
            baseline = Client(other / "memoryd.sock", timeout_s=60)
            clients[:] = [client, baseline]
            modes = {"plain": lambda q: timed(client, q, False),
                     "explain": lambda q: timed(client, q, True),
                     "baseline plain": lambda q: timed(baseline, q, False)}
        questions = Corpus(seed=7).queries(args.rounds)
        for question in questions:  # warm: each question's vector in the query cache
            for ask in modes.values():
                ask(question)
        times: dict[str, list[float]] = {name: [] for name in modes}
        names = list(modes)
        for n, question in enumerate(questions):
            for name in names[n % len(names):] + names[:n % len(names)]:  # rotating order
                times[name].append(modes[name](question))
    finally:
        for each in clients:
            each.close()
        for daemon in daemons:
            stop(daemon)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(home.with_name(home.name + "-baseline"), ignore_errors=True)
    print(f"\n{args.entries:,} entries, {args.rounds} questions, {HITS} hits each\n")
    print(f"{'search':<16} {'p50 ms':>8} {'p90 ms':>8}")
    for name, values in times.items():
        print(f"{name:<16} {percentile(values, 50):>8.2f} {percentile(values, 90):>8.2f}")
    p50 = {name: percentile(values, 50) for name, values in times.items()}
    print(f"\nexplain / plain p50: {p50['explain'] / p50['plain']:.3f}")
    if "baseline plain" in p50:
        print(f"plain / baseline plain p50: {p50['plain'] / p50['baseline plain']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
