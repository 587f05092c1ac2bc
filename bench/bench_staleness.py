#!/usr/bin/env python
"""Benchmark the staleness pass against its budget: ≤ 10 s for a full check, ≤ 1 s when nothing
changed, on a store of ~70k entries with a 5,000-file git project.

    python bench/bench_staleness.py                       # 5,000 files, 70,000 entries
    python bench/bench_staleness.py --files 500 --entries 7000

Builds, under a fresh directory in /tmp:

- a git repository of ``--files`` Python files (``pkg_NN/mod_NNN.py``, ~150 lines each, with
  functions, ``--option`` flags and ``APP_*`` variables of their own, ~30 MB in all), committed;
- a store (the real ``Store``, schema and all) of ``--entries`` entries: a seventh of them
  (10,000 at the default) notes, lessons and facts of that project, each naming one to three
  things of it (a path, a function in backticks, a flag, a ``$VARIABLE``); the rest transcript
  turns of the project and global notes, which the pass does not read.

Then it runs the pass through the real runner (``PassRunner``, in ≤15 ms slices on a database
thread, git and file reading offloaded) — the daemon's socket and model are not needed — and
times, in this order:

1. ``first``: the first run ever: every entry read, every file read; nothing is stale;
2. ``unchanged``: the same tree again;
3. ``new entries``: 20 entries written, tree unchanged (only they are read);
4. ``after a commit``: 1% of the files deleted and committed: a full check, entries naming
   them are marked;
5. ``unchanged`` again;
6. ``restored``: the files brought back (``git revert``): the marks are lifted.

Each run also gives its slices on the database thread, their median, 99th percentile and longest (what
a search or a hook may wait behind the pass; on a busy machine the longest includes the thread
being preempted). Prints one line per run (seconds, the longest slice, the pass's counts) and
the figures as JSON on the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from memoryd.config import load_config  # noqa: E402
from memoryd.passes import runner  # noqa: E402
from memoryd.passes.api import PassParts  # noqa: E402
from memoryd.passes.runner import PassRunner  # noqa: E402
from memoryd.store.database import Store  # noqa: E402
from memoryd.store.entries import Entries  # noqa: E402
from memoryd.store.entry_writes import new_uid  # noqa: E402
from memoryd.store.ledger import Ledger  # noqa: E402
from memoryd.store.thread import DatabaseThread  # noqa: E402
from memoryd.text import content_hash  # noqa: E402

WORDS = ("alpha beta gamma delta table index cache queue buffer stream token parser "
         "render config loader writer reader session request response handler worker "
         "schedule budget result value record column").split()
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost",
       "-c", "commit.gpgsign=false"]


def module_path(number: int) -> str:
    return f"pkg_{number // 100:02d}/mod_{number % 100:03d}.py"


def module_text(number: int, rng: random.Random) -> str:
    lines = [f'"""Module {number}: {" ".join(rng.choices(WORDS, k=12))}."""', "import os", ""]
    for k in range(8):
        lines += [f"def fn_{number}_{k}(value, option=None):",
                  f'    """{" ".join(rng.choices(WORDS, k=10))}"""',
                  f'    flag = "--opt-{number}-{k}"',
                  f'    env = os.environ.get("APP_VAR_{number}_{k}")']
        for _ in range(14):
            a, b, c = rng.choices(WORDS, k=3)
            lines.append(f"    {a}_{b} = {c}_{rng.randrange(100)}(value, {b}={a})")
        lines += ["    return value", ""]
    return "\n".join(lines) + "\n"


def build_repo(root: Path, files: int) -> None:
    rng = random.Random(7)
    for number in range(files):
        path = root / module_path(number)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(module_text(number, rng))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-q", "-m", "start"], check=True)


def entry(agent: str, project: str | None, kind: str, text: str, when: float) -> dict[str, Any]:
    return {"uid": new_uid(), "agent": agent, "project": project, "kind": kind,
            "category": "bench", "key": None, "text": text, "hash": content_hash(text),
            "confidence": 0.95, "tags": [], "status": "active", "created": when,
            "updated": when, "writer": agent, "via": "api"}


def reference_text(rng: random.Random, files: int) -> str:
    number, k = rng.randrange(files), rng.randrange(8)
    forms = [f"the {rng.choice(WORDS)} code lives in {module_path(number)}",
             f"call `fn_{number}_{k}()` before the {rng.choice(WORDS)}",
             f"pass --opt-{number}-{k} when {rng.choice(WORDS)} is slow",
             f"set $APP_VAR_{number}_{k} for the {rng.choice(WORDS)}"]
    chosen = rng.sample(forms, rng.randint(1, 3))
    return "; ".join(chosen) + f" (note {rng.random():.6f})"


def fill_store(store: Store, project: str, files: int, total: int) -> int:
    rng = random.Random(11)
    now = time.time() - 86400
    referencing = total // 7
    with store.transaction():
        for n in range(total):
            if n < referencing:
                kind = ("note", "lesson", "fact")[n % 3]
                store.insert_entry(entry("coder", project, kind, reference_text(rng, files), now))
            elif n % 2:
                text = f"user: what about {' '.join(rng.choices(WORDS, k=20))}? {n}"
                store.insert_entry(entry("claude-code", project, "turn", text, now))
            else:
                text = f"a global note about {' '.join(rng.choices(WORDS, k=15))} {n}"
                store.insert_entry(entry("coder", None, "note", text, now))
    return referencing


async def main_async(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    repo = base / "repo"
    repo.mkdir()
    started = time.perf_counter()
    build_repo(repo, args.files)
    print(f"repo: {args.files} files in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    os.environ["MEMORYD_HOME"] = str(base / "home")
    config = load_config()
    db = DatabaseThread()
    store = await db(Store, config.db_path)
    entries = Entries(config.remember, store, Ledger(config.ledger_dir))
    referencing = await db(fill_store, store, str(repo), args.files, args.entries)
    print(f"store: {args.entries} entries, {referencing} naming the project", file=sys.stderr)
    # keyword-only: no model, no vector index
    passes = PassRunner(PassParts(db, store, entries, lambda: config,
                                  lambda: None), idle_since=lambda: 0.0)
    figures: dict[str, Any] = {"files": args.files, "entries": args.entries,
                               "referencing": referencing, "runs": {}}

    slices: list[float] = []
    plain_slice = runner._slice

    def timed_slice(steps: Any, value: Any, longest: Any) -> Any:
        begun = time.perf_counter()
        try:
            return plain_slice(steps, value, longest)
        finally:
            slices.append(time.perf_counter() - begun)

    runner._slice = timed_slice  # type: ignore[assignment]

    async def timed(label: str) -> None:
        slices.clear()
        begun = time.perf_counter()
        summary = await passes.run("staleness")
        took = time.perf_counter() - begun
        ordered = sorted(slices) or [0.0]
        longest = ordered[-1] * 1000
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
        median = ordered[len(ordered) // 2] * 1000
        figures["runs"][label] = {"s": round(took, 3), "slices": len(slices),
                                  "slice_median_ms": round(median, 1),
                                  "slice_p99_ms": round(p99, 1),
                                  "longest_slice_ms": round(longest, 1),
                                  "counts": summary["counts"]}
        print(f"{label:<16} {took:7.3f} s  {len(slices):4d} slices: median {median:4.1f} ms, "
              f"p99 {p99:4.1f} ms, longest {longest:4.1f} ms  {summary['counts']}")

    await timed("first")
    await timed("unchanged")
    rng = random.Random(5)
    new = [entry("coder", str(repo), "note", reference_text(rng, args.files) + " new", time.time())
           for _ in range(20)]
    await db(lambda: [store.insert_entry(e) for e in new])
    await timed("new entries")
    gone = rng.sample(range(args.files), max(1, args.files // 100))
    for number in gone:
        (repo / module_path(number)).unlink()
    subprocess.run([*GIT, "-C", str(repo), "commit", "-q", "-a", "-m", "delete"], check=True)
    await timed("after a commit")
    await timed("unchanged 2")
    subprocess.run([*GIT, "-C", str(repo), "revert", "--no-edit", "HEAD"], check=True,
                   capture_output=True)
    await timed("restored")
    await db(store.close)
    db.shutdown()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--entries", type=int, default=70000)
    parser.add_argument("--keep", action="store_true", help="keep the directory in /tmp")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="md-stale-", dir="/tmp"))
    try:
        figures = asyncio.run(main_async(args, base))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
