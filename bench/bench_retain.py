"""The retain pass on a realistic store: how long a first and an incremental run take, how big
the archive is, how long a request waits meanwhile, and how long a rebuild takes to restore it.

    python bench/bench_retain.py                 # ~10,000 transcript chunks
    python bench/bench_retain.py --lines 20000   # ~2,000 chunks (a smoke run)

Claude Code transcripts are generated as bench_ingest.py generates them (``--lines`` lines,
about one chunk per ten lines) under a temp HOME, and ``python -m memoryd serve`` indexes them
as it indexes any user's (keyword-only: ``MEMORYD_EMBED_MODEL`` points nowhere, as the pass
copies rows and needs no vectors; no pass runs on its schedule). Then, through the client:

1. the first run (``memory pass run retain``: everything), its duration and the archive's
   size, against the chunks' text and the database file;
2. while it runs, a probe asks for one entry (``get``, a database-thread request) every 2 ms:
   its slowest round trip is what a search or a hook waits at most behind the pass (the
   runner's slices are 15 ms), beside the longest step the daemon's reply names;
3. a second run (nothing new), and a third after 100 forgets (100 new records);
4. with the daemon stopped, ``memoryd reindex --no-vectors``: the archives restored into an
   empty database (then the ledgers replayed), as a user's rebuild does.

Prints a table; JSON goes to bench/results/retain.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_ingest import TextPool, write_transcripts  # noqa: E402
from bench_store import DaemonProcess, progress  # noqa: E402
from memoryd_client import Client, MemorydError  # noqa: E402

#: No pass on its schedule: the bench runs retain itself.
CONFIG = "[passes]\n" + "".join(f'{name} = "off"\n' for name in
                                 ("notebooks", "consolidate", "promote", "staleness", "retain"))
PROBE_EVERY_S = 0.002
FORGETS = 100
RESTORED = re.compile(r"transcript archives \((\d+) entries")


def start_daemon(state: Path, home: Path) -> DaemonProcess:
    """The daemon on ``state`` with HOME ``home``, keyword-only, answering."""
    (state / "config.toml").write_text(CONFIG)
    daemon = DaemonProcess(state)
    daemon.env["HOME"] = str(home)
    daemon.env["MEMORYD_EMBED_MODEL"] = str(state.parent / "no-model")
    daemon.start()
    deadline = time.monotonic() + 120
    while True:
        try:
            with Client(daemon.socket, timeout_s=60) as client:
                client.status()
            return daemon
        except MemorydError:
            if time.monotonic() > deadline or daemon.proc is None or daemon.proc.poll() is not None:
                daemon.stop()
                raise RuntimeError(f"memoryd did not come up:\n{daemon.log_tail()}") from None
            time.sleep(0.1)


def wait_indexed(client: Client) -> int:
    """Until the watcher has indexed every transcript; the number of transcript entries."""
    last, stable = -1, 0
    while stable < 3:  # three polls in a row with the same count and nothing queued
        status = client.status()
        ingest = status.get("ingest") or {}
        count = client.list_entries(kind="turn", limit=1)["total"]
        idle = not ingest.get("queue") and not ingest.get("scanning")
        stable = stable + 1 if idle and count == last else 0
        last = count
        time.sleep(1)
    return last


def transcript_entries(client: Client) -> list[dict[str, Any]]:
    """Every transcript entry, through ``list`` a page at a time."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = client.list_entries(kind="turn", limit=1000, cursor=cursor)
        out += page["entries"]
        cursor = page["next"]
        if not cursor:
            return out


def timed(client: Client, prober: Client, uid: str) -> dict[str, Any]:
    """One retain run, with the probe's round trips beside it."""
    waits: list[float] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            asked = time.perf_counter()
            prober.get(uid)
            waits.append(time.perf_counter() - asked)
            done.wait(PROBE_EVERY_S)

    thread = threading.Thread(target=probe)
    thread.start()
    started = time.perf_counter()
    try:
        summary = client.pass_run("retain")
    finally:
        took = time.perf_counter() - started
        done.set()
        thread.join()
    waits.sort()
    return {"seconds": took, "counts": summary["counts"], "status": summary["status"],
            "longest_step": summary.get("longest_step"),
            "probe_max_ms": waits[-1] * 1000 if waits else 0.0,
            "probe_p99_ms": waits[int(0.99 * (len(waits) - 1))] * 1000 if waits else 0.0,
            "probes": len(waits)}


def run_passes(daemon: DaemonProcess, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The store's size, and the three runs."""
    with Client(daemon.socket, timeout_s=900) as client, \
            Client(daemon.socket, timeout_s=60) as prober:
        progress("indexing the transcripts")
        started = time.perf_counter()
        wait_indexed(client)
        indexed = time.perf_counter() - started
        entries = transcript_entries(client)
        store = {"chunks": len(entries), "index_s": indexed,
                 "text_mb": sum(len(e["text"].encode()) for e in entries) / 1e6}
        uid = entries[0]["id"]
        runs: dict[str, Any] = {}
        for label in ("first", "second"):
            progress(f"retain, {label} run")
            runs[label] = timed(client, prober, uid)
        for entry in random.Random(seed).sample(entries, min(FORGETS, len(entries))):
            client.forget(entry["id"], agent=entry["agent"])
        progress(f"retain after {FORGETS} forgets")
        runs["after_100_forgets"] = timed(client, prober, uid)
    return store, runs


def restore(daemon: DaemonProcess) -> dict[str, Any]:
    """`memoryd reindex --no-vectors` on the stopped daemon's state: the archives restored."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memoryd", "reindex", "--no-vectors"],
                          env=daemon.env, cwd=daemon.tree, capture_output=True, text=True,
                          check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"memoryd reindex exited with {done.returncode}: {done.stderr}")
    found = RESTORED.search(done.stdout)
    return {"seconds": took, "entries": int(found.group(1)) if found else None,
            "output": done.stdout.strip()}


def longest(run: dict[str, Any]) -> str:
    step = run.get("longest_step") or {}
    return f"{step['ms']:.1f} ms ({step.get('cpu_ms', '?')} ms of CPU)" if "ms" in step else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000, help="transcript lines (default "
                        "100,000: about 10,000 chunks)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mdr-", dir="/tmp"))
    state, home = root / "state", root / "home"
    state.mkdir()
    try:
        started = time.perf_counter()
        tree = write_transcripts(home, args.lines, TextPool(args.seed), args.seed)
        generated = time.perf_counter() - started
        daemon = start_daemon(state, home)
        try:
            store, runs = run_passes(daemon, args.seed)
        finally:
            code = daemon.stop()
        if code != 0:
            raise RuntimeError(f"memoryd exited with {code}:\n{daemon.log_tail()}")
        store.update({"files": len(tree.files), "transcript_lines": tree.lines,
                      "transcript_mb": tree.bytes / 1e6, "generate_s": generated,
                      "db_mb": sum(p.stat().st_size for p in state.glob("memoryd.db*")) / 1e6})
        archive = state / "transcripts" / "claude-code.jsonl.gz"
        sizes = {"archive_mb": archive.stat().st_size / 1e6}
        rebuilt = restore(daemon)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    first = runs["first"]
    archived = first["counts"].get("archived", 0)
    forgets = runs["after_100_forgets"]
    rows = [
        ("transcript chunks in the store", f"{store['chunks']:,}"),
        ("their text / the database file", f"{store['text_mb']:.1f} MB / {store['db_mb']:.1f} MB"),
        ("first run", (f"{first['seconds']:.2f} s ({archived:,} entries, "
                       f"{archived / first['seconds']:,.0f}/s)")),
        ("archive size", (f"{sizes['archive_mb']:.2f} MB "
                          f"({sizes['archive_mb'] / store['text_mb']:.2f} × the text)")),
        ("second run (nothing new)", (f"{runs['second']['seconds'] * 1000:.1f} ms, counts "
                                      f"{runs['second']['counts']}")),
        ("run after 100 forgets", (f"{forgets['seconds'] * 1000:.1f} ms, "
                                   f"{forgets['counts'].get('archived', 0)} entries")),
        ("longest wait of a request (first run)", (f"{first['probe_max_ms']:.1f} ms "
                                                   f"(p99 {first['probe_p99_ms']:.1f} ms)")),
        ("longest step on the database thread (first run)", longest(first)),
        ("`memoryd reindex --no-vectors` (the archives restored)",
         f"{rebuilt['seconds']:.2f} s ({rebuilt['entries'] or 0:,} entries)"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "retain.json").write_text(json.dumps(
        {"store": store, "runs": runs, "archive": sizes, "restore": rebuilt,
         "load": os.getloadavg()}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
