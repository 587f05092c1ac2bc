"""The retain pass on a realistic store: how long a first and an incremental run take, how big
the archive is, how long a request waits meanwhile, and how long a rebuild takes to restore it.

    python bench/bench_retain.py                 # ~10,000 transcript chunks
    python bench/bench_retain.py --lines 20000   # ~2,000 chunks (a smoke run)

Claude Code transcripts are generated as bench_ingest.py generates them (``--lines`` lines,
about one chunk per ten lines) under a temp dir, parsed and chunked with memoryd's own parser
and applied with its indexer (no embedding: the pass copies rows, it needs no vectors). Then a
the daemon's real parts (keyword-only: the model is not needed) and the real pass runner:

1. the first run (everything), its duration and the archive's size, against the chunks' text
   and the database file;
2. while it runs, a probe asks the database thread for nothing every 2 ms: the longest wait is
   what a search or a hook waits at most behind the pass (the runner's slices are 15 ms);
3. a second run (nothing new), and a third after 100 forgets (100 new records);
4. ``restore_archives`` into an empty database, as ``memoryd reindex`` does.

Prints a table; JSON goes to bench/results/retain.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def build_store(home: Path, state: Path, lines: int, seed: int) -> dict[str, Any]:
    from bench_ingest import TextPool, write_transcripts

    from memoryd.config import load_config
    from memoryd.ingest.indexer import Indexer, stat_facts
    from memoryd.ingest.tail import TailPosition
    from memoryd.ingest.transcript import chunk_exchanges, make_parser
    from memoryd.store.database import Store
    from memoryd.store.entries import Entries
    from memoryd.store.ledger import Ledger

    started = time.perf_counter()
    tree = write_transcripts(home, lines, TextPool(seed), seed)
    generated = time.perf_counter() - started
    config = load_config()
    store = Store(config.db_path)
    indexer = Indexer(store, Entries(config.remember, store, Ledger(config.ledger_dir)))
    chunks = 0
    for path in tree.files:
        parser = make_parser("claude-code")
        turns = [t for line in path.read_text().splitlines() for t in parser.feed(line)]
        found = chunk_exchanges(turns + parser.flush())
        facts = stat_facts(path, "claude-transcripts", "transcript", "claude-code", None)
        indexer.apply_transcript(facts, TailPosition(facts.device, facts.inode, facts.size),
                                 found, None, None)
        chunks += len(found)
    text_bytes = store._db.execute(
        "SELECT sum(length(CAST(text AS BLOB))) FROM entries").fetchone()[0]
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return {"chunks": chunks, "files": len(tree.files), "transcript_lines": tree.lines,
            "transcript_mb": tree.bytes / 1e6, "text_mb": text_bytes / 1e6,
            "db_mb": config.db_path.stat().st_size / 1e6, "generate_s": generated,
            "index_s": time.perf_counter() - started - generated}


async def run_passes() -> dict[str, Any]:
    from memoryd.config import Settings, load_config
    from memoryd.passes.api import PassParts
    from memoryd.passes.runner import PassRunner
    from memoryd.server.params import Params
    from memoryd.server.parts import Parts

    parts = await Parts.standalone(Settings(load_config()))
    passes = PassRunner(PassParts(parts.db, parts.store, parts.entries, parts.settings.current,
                                  parts.derived.vector_index), time.time)
    out: dict[str, Any] = {}
    try:
        for label in ("first", "second"):
            out[label] = await timed(parts, passes)
        uids = await parts.db(lambda: [u for (u,) in parts.store._db.execute(  # type: ignore[union-attr]
            "SELECT uid FROM entries ORDER BY random() LIMIT 100")])
        for uid in uids:
            await parts.db(parts.entries.forget, Params("forget", {"id": uid}))
        out["after_100_forgets"] = await timed(parts, passes)
    finally:
        await parts.stop()
    return out


async def timed(parts: Any, passes: Any) -> dict[str, Any]:
    waits: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            asked = time.perf_counter()
            await parts.db(lambda: None)
            waits.append(time.perf_counter() - asked)
            await asyncio.sleep(0.002)

    prober = asyncio.create_task(probe())
    started = time.perf_counter()
    summary = await passes.run("retain")
    took = time.perf_counter() - started
    done.set()
    await prober
    waits.sort()
    return {"seconds": took, "counts": summary["counts"], "status": summary["status"],
            "probe_max_ms": waits[-1] * 1000 if waits else 0.0,
            "probe_p99_ms": waits[int(0.99 * (len(waits) - 1))] * 1000 if waits else 0.0}


def restore(state: Path) -> dict[str, Any]:
    from memoryd.config import load_config
    from memoryd.store.archive import AgentArchive, restore_archives
    from memoryd.store.database import Store

    config = load_config()
    store = Store(state / "fresh.db")
    started = time.perf_counter()
    restored = restore_archives(store, AgentArchive(config.archive_dir))
    took = time.perf_counter() - started
    store.close()
    return {"seconds": took, "entries": restored}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000, help="transcript lines (default "
                        "100,000: about 10,000 chunks)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args()
    sys.setswitchinterval(0.001)  # as `memoryd serve` sets it
    root = Path(tempfile.mkdtemp(prefix="mdr-", dir="/tmp"))
    state, home = root / "state", root / "home"
    os.environ["MEMORYD_HOME"] = str(state)
    os.environ["MEMORYD_EMBED_MODEL"] = str(root / "no-model")  # keyword-only: not needed here
    try:
        store = build_store(home, state, args.lines, args.seed)
        runs = asyncio.run(run_passes())
        archive = state / "transcripts" / "claude-code.jsonl.gz"
        sizes = {"archive_mb": archive.stat().st_size / 1e6}
        rebuilt = restore(state)
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
        ("restore into an empty database", (f"{rebuilt['seconds']:.2f} s "
                                            f"({rebuilt['entries']:,} entries)")),
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
