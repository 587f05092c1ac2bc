#!/usr/bin/env python
"""The notebook pass on one big notebook, while a second client searches.

    python bench/bench_big_notebook.py                      # 1,000, 2,000 and 9,500 bullets
    python bench/bench_big_notebook.py --bullets 2000

A notebook the user never capped (or a large ``notebook_lines``) is what the notebook pass
exists for; its check for repeated lessons compared every pair of a section's bullets in one
step on the database thread (R5 of the reliability report of 2026-11-28: 1,000 bullets held
the searches for 3 s, 2,000 for 15 s, 9,500 never finished). For each size: one notebook of
that many dated Learnings bullets (distinct corpus sentences, one in twenty a rewording of an
earlier one: "Always …", "…, please"), indexed and embedded; then ``memory pass run
notebooks`` while another client searches every ``--interval`` seconds. Printed: the file's
size, the pass's wall time, its longest step on the database thread (what a search that came
then waited for; the daemon's reply names it) with its CPU time, the repeats it archived, and
the searches' p50, p99 and longest round trip during the pass.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from bench_ingest import TextPool, random_date  # noqa: E402
from bench_passes import start_daemon  # noqa: E402
from bench_store import percentile, progress, settle  # noqa: E402
from memoryd_client import Client  # noqa: E402

SIZES = (1_000, 2_000, 9_500)
REWORDED_EVERY = 20
QUERIES = ("how do we export stickers", "what did the customer say about colours",
           "which paper stock for the print run", "speech bubble placement")


def write_notebook(home: Path, bullets: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    pool = TextPool(seed)
    lines: list[str] = []
    texts: list[str] = []
    for number in range(bullets):
        if number and number % REWORDED_EVERY == 0:
            text = rng.choice([f"Always {texts[-5][:1].lower()}{texts[-5][1:]}",
                               f"{texts[-7].rstrip('.')}, please."])
        else:
            text = pool.text().replace("\n", " ")
        texts.append(text)
        lines.append(f"- [{random_date(rng)}] {text}")
    path = home / ".mastersof-ai" / "agents" / "designer" / "memory" / "notebook.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Designer notebook\n\n## Learnings\n" + "\n".join(lines) + "\n")
    return path


def measure(bullets: int, interval: float) -> dict[str, float | str]:
    with tempfile.TemporaryDirectory(prefix="mdbig") as scratch:
        state, home = Path(scratch) / "s", Path(scratch) / "h"
        state.mkdir()
        home.mkdir()
        path = write_notebook(home, bullets)
        daemon = start_daemon(state, home)
        try:
            with Client(daemon.socket, timeout_s=600) as client, \
                    Client(daemon.socket, timeout_s=600) as searcher:
                started = time.monotonic()
                while client.status()["entries"].get("active", 0) < bullets:
                    time.sleep(0.5)
                settle(client)
                progress(f"{bullets:,} bullets indexed and embedded in "
                         f"{time.monotonic() - started:.0f} s")
                done = threading.Event()
                box: dict[str, object] = {}

                def run() -> None:
                    began = time.perf_counter()
                    box["reply"] = client.pass_run("notebooks")
                    box["wall"] = time.perf_counter() - began
                    done.set()

                thread = threading.Thread(target=run)
                thread.start()
                waits: list[float] = []
                number = 0
                while not done.wait(interval):
                    began = time.perf_counter()
                    searcher.search(f"{QUERIES[number % len(QUERIES)]} {number}", agents=["*"])
                    waits.append(time.perf_counter() - began)
                    number += 1
                thread.join()
        finally:
            daemon.stop()
        reply = box["reply"]
        assert isinstance(reply, dict)
        step = reply.get("longest_step") or {}
        return {"bullets": bullets, "kb": path.stat().st_size / 1024,
                "wall_s": float(box["wall"]),  # type: ignore[arg-type]
                "step_ms": step.get("ms", 0.0), "step_cpu_ms": step.get("cpu_ms", 0.0),
                "step": f"{step.get('from', '')}→{step.get('to', '')}",
                "repeats": reply["counts"].get("repeats", 0),
                "searches": len(waits),
                "p50_ms": percentile(waits, 50) * 1000 if waits else 0.0,
                "p99_ms": percentile(waits, 99) * 1000 if waits else 0.0,
                "max_ms": max(waits) * 1000 if waits else 0.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bullets", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--interval", type=float, default=0.1,
                        help="seconds between two searches during the pass")
    args = parser.parse_args()
    rows = [measure(bullets, args.interval) for bullets in args.bullets]
    print(f"{'bullets':>8} {'KB':>7} {'pass s':>7} {'longest step ms (CPU)':>22} "
          f"{'repeats':>8} {'searches':>9} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}  step")
    for row in rows:
        print(f"{row['bullets']:>8,} {row['kb']:>7.0f} {row['wall_s']:>7.1f} "
              f"{row['step_ms']:>12.1f} ({row['step_cpu_ms']:>6.1f}) {row['repeats']:>9} "
              f"{row['searches']:>9} {row['p50_ms']:>7.1f} {row['p99_ms']:>7.1f} "
              f"{row['max_ms']:>7.1f}  {row['step']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
