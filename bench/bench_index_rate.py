#!/usr/bin/env python
"""Indexing rate against the bare embedder, for long texts and short ones, through the daemon.

    python bench/bench_index_rate.py                          # this tree, 2 rounds
    python bench/bench_index_rate.py --against /tmp/old       # and another checkout, interleaved
    python bench/bench_index_rate.py --chunks 300 --notes 2000 --rounds 3
    python bench/bench_index_rate.py --parts late-chunking --against /tmp/old   # [embed] parts

Indexing a text costs more than embedding it: memoryd also gives an entry of several sentences
a vector per sentence (its parts), parses and stores it, and fills the lexicon beside it. The
budget (issue 35 §3): transcript and notebook indexing, part vectors included, at ≥ 0.8 × the
bare embedder's rate on the same texts alone.

Two sets of files, made once under one temp dir with bench_ingest's generators:

- **long**: Claude Code transcripts (``~/.claude/projects``) cut into exchange chunks, ~200
  tokens each (``--chunks`` of them, about);
- **short**: agents' notebook files (``~/.mastersof-ai/agents/*/memory``) of dated bullets,
  ~30 tokens each (``--notes`` of them, about).

Each round, for each set, each daemon (this tree's, and ``--against``'s when given, in an order
that alternates from round to round) starts on a fresh state dir with a home holding only that
set: the rate is entries / (model loaded → vector backlog 0), the file scan running beside it
as it does for a user; right after each daemon run, the bare embedder in this process
(``Embedder.embed``, batches of 32, nothing but each text once) on the very texts that daemon
indexed. So the ratio's two rates come from the same minute of a shared machine. Prints each
run and the median ratio per set and daemon; the CPU other processes took meanwhile. The
lexicon (each new word of the entries embedded alone, for search's word alignment) fills
beside the vectors; "+words" is the ratio with the time until it has caught up too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from bench_ingest import (  # noqa: E402
    TextPool,
    indexed_texts,
    token_lengths,
    write_markdown_tree,
    write_transcripts,
)
from bench_store import CpuMeter, DaemonProcess, machine, progress  # noqa: E402
from memoryd_client import Client  # noqa: E402
from memoryd_client.errors import MemorydError  # noqa: E402

EMBED_BATCH = 32
#: transcript lines per exchange chunk that bench_ingest's generator makes, about
LINES_PER_CHUNK = 9.5
#: notebook bullets per file, about
NOTES_PER_FILE = 5
POLL_S = 0.2


def wait_indexed(daemon: DaemonProcess, t_spawn: float, expected: int, timeout_s: float
                 ) -> tuple[dict[str, Any], dict[str, float]]:
    """Poll status until the expected entries are stored, all have vectors and the lexicon
    has their words: the last status, and when (seconds from the spawn) the model was ready
    ("model"), the vector backlog reached 0 ("done"), the lexicon caught up ("words") and the
    long entries searchable by their sentences' mean were run whole ("refined")."""
    assert daemon.proc is not None
    timeline: dict[str, float] = {}
    with Client(daemon.socket, timeout_s=120) as client:
        while True:
            now = time.perf_counter() - t_spawn
            if now > timeout_s or daemon.proc.poll() is not None:
                raise RuntimeError(f"not indexed within {timeout_s:g} s\n{daemon.log_tail()}")
            try:
                status = client.status()
            except MemorydError:
                time.sleep(0.05)
                continue
            now = time.perf_counter() - t_spawn
            if status.get("model") and status["vector_index"]["ready"]:
                timeline.setdefault("model", now)
            ingest = status.get("ingest") or {}
            if ingest.get("queue") == 0 and not ingest.get("scanning") \
                    and status["entries"].get("active", 0) >= expected \
                    and status.get("model") and status.get("backlog") == 0:
                timeline.setdefault("done", now)
                if status["lexicon"]["entries_behind"] == 0:
                    timeline.setdefault("words", now)
                    if not status.get("refining"):  # a tree before refining has no such count
                        timeline["refined"] = now
                        return status, timeline
            time.sleep(POLL_S)


def index_once(base: Path, files: Path, tree: Path | None, expected: int, kinds: tuple[str, ...],
               embedder: Any, cpu: CpuMeter, label: str, timeout_s: float,
               parts: str | None = None) -> dict[str, Any]:
    """One daemon indexing one set from scratch, then the bare embedder on what it indexed.
    ``parts``: this tree's ``[embed] parts`` (another tree's daemon runs its own default)."""
    state = Path(tempfile.mkdtemp(prefix="st-", dir=base))
    daemon = DaemonProcess(state, tree)
    daemon.env["HOME"] = str(files)
    daemon.env.pop("MEMORYD_EMBED_PARTS", None)
    if parts and tree is None:
        daemon.env["MEMORYD_EMBED_PARTS"] = parts
    t_spawn = time.perf_counter()
    daemon.start()
    cpu.daemon_pid = daemon.pid
    try:
        with cpu.phase(f"{label} daemon"):
            status, timeline = wait_indexed(daemon, t_spawn, expected, timeout_s)
        code = daemon.stop()
        if code != 0:
            raise RuntimeError(f"memoryd exited {code} on SIGTERM:\n{daemon.log_tail()}")
        entries = status["entries"].get("active", 0)
        texts = indexed_texts(state / "memoryd.db", kinds, entries, 0)
        with cpu.phase(f"{label} bare"):
            embedder.embed(texts[:EMBED_BATCH])  # warm-up
            started = time.perf_counter()
            for i in range(0, len(texts), EMBED_BATCH):
                embedder.embed(texts[i:i + EMBED_BATCH])
            bare_s = time.perf_counter() - started
    finally:
        daemon.stop()
    rate = entries / (timeline["done"] - timeline["model"])
    words = entries / (timeline["words"] - timeline["model"])
    refined = entries / (timeline["refined"] - timeline["model"])
    bare = len(texts) / bare_s
    lengths = token_lengths(embedder, texts)
    result = {"label": label, "entries": entries, "rate": rate, "bare": bare,
              "ratio": rate / bare, "words_ratio": words / bare,
              "refined_ratio": refined / bare, "tokens_mean": lengths["mean"],
              "truncated_share": lengths["truncated_share"],
              "others_cores": (cpu.phases[f"{label} daemon"]["other_cpu_s"]
                               / cpu.phases[f"{label} daemon"]["wall_s"]),
              "timeline": {k: round(v, 1) for k, v in timeline.items()}}
    progress(f"{label}: {entries:,} entries ({lengths['mean']:.0f} tokens) at {rate:.1f}/s, "
             f"bare {bare:.1f}/s: {rate / bare:.3f}, words too {words / bare:.3f}, refined "
             f"{refined / bare:.3f} (other processes "
             f"{result['others_cores']:.2f} cores)")
    shutil.rmtree(state, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=400,
                        help="transcript exchange chunks, about (default 400)")
    parser.add_argument("--notes", type=int, default=2000,
                        help="notebook bullets, about (default 2000)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds (default 2)")
    parser.add_argument("--against", metavar="TREE", type=Path,
                        help="another checkout of memoryd to run interleaved with this one")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--parts", metavar="SCHEME",
                        help="this tree's [embed] parts (default: its default); --against's "
                             "daemon runs its own default")
    parser.add_argument("--timeout-s", type=float, default=1800)
    args = parser.parse_args(argv)
    if args.against and not (args.against / "memoryd" / "__main__.py").exists():
        parser.error(f"--against {args.against}: not a memoryd checkout")

    base = Path(tempfile.mkdtemp(prefix="mir-", dir="/tmp"))
    long_home, short_home = base / "long", base / "short"
    os.environ["MEMORYD_HOME"] = str(base / "bench-state")  # this process's load_config()
    os.environ.pop("MEMORYD_SOCKET", None)
    try:
        pool = TextPool(args.seed)
        tx = write_transcripts(long_home, max(120, int(args.chunks * LINES_PER_CHUNK)), pool,
                               args.seed)
        md = write_markdown_tree(short_home, max(10, args.notes // NOTES_PER_FILE), pool, args.seed)
        progress(f"{tx.chunks:,} chunks in {len(tx.files)} transcripts, {md.entries:,} notes in "
                 f"{len(md.files):,} files, under {base}")
        from memoryd.config import load_config
        from memoryd.embedding.model import Embedder

        embedder = Embedder(load_config().embed)
        cpu = CpuMeter()
        trees: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.against:
            trees.append((f"against {args.against.name}", args.against.resolve()))
        runs: list[dict[str, Any]] = []
        for number in range(args.rounds):
            order = trees if number % 2 == 0 else trees[::-1]
            for name, tree in order:
                runs.append({"tree": name, **index_once(
                    base, long_home, tree, tx.chunks, ("turn", "summary"), embedder, cpu,
                    f"round {number + 1}, long, {name}", args.timeout_s, args.parts)})
                runs.append({"tree": name, **index_once(
                    base, short_home, tree, md.entries, ("lesson", "feedback", "note"), embedder,
                    cpu, f"round {number + 1}, short, {name}", args.timeout_s, args.parts)})
    finally:
        shutil.rmtree(base, ignore_errors=True)

    info = machine()
    print(f"\nindexing rate against the bare embedder ({info['cores']} cores, {info['cpu']}, "
          f"commit {info['commit']}; load average now {os.getloadavg()[0]:.1f})")
    print(f"{'run':<44} | {'entries':>7} | {'tokens':>6} | {'indexed/s':>9} | {'bare/s':>7} | "
          f"{'ratio':>5} | {'+words':>6} | {'refined':>7} | others")
    for run in runs:
        print(f"{run['label']:<44} | {run['entries']:>7,} | {run['tokens_mean']:>6.0f} | "
              f"{run['rate']:>9.1f} | {run['bare']:>7.1f} | {run['ratio']:>5.3f} | "
              f"{run['words_ratio']:>6.3f} | {run['refined_ratio']:>7.3f} | "
              f"{run['others_cores']:.2f} cores")
    print()
    for name, _ in trees:
        for kind in ("long", "short"):
            mine = [r for r in runs if r["tree"] == name and f", {kind}," in r["label"]]
            ratios = [r["ratio"] for r in mine]
            print(f"{name}, {kind}: ratio median {statistics.median(ratios):.3f} "
                  f"(runs {', '.join(f'{x:.3f}' for x in ratios)}; budget ≥ 0.8); with the "
                  f"lexicon's words {statistics.median(r['words_ratio'] for r in mine):.3f}; "
                  f"refined {statistics.median(r['refined_ratio'] for r in mine):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
