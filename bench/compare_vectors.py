#!/usr/bin/env python
"""Whether two trees give single writes the same vectors: the same new texts remembered one by
one through the client, to a fresh daemon of each tree, then each entry's stored vector and
sentence vectors read back from its database by text and compared.

    python bench/compare_vectors.py --against /tmp/old          # 400 texts of the bench corpus
    python bench/compare_vectors.py --against /tmp/old --n 1000

A change to the write path or the embedder's threads must leave these identical (the model's
work may move, e.g. after the acknowledgement, not change); a change to the model itself shows
here how far the vectors moved. Exit status 1 when any differs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from bench_store import DaemonProcess, settle  # noqa: E402
from corpus import Corpus  # noqa: E402
from memoryd_client import Client  # noqa: E402

from memoryd.store.database import Store  # noqa: E402

Stored = dict[str, tuple[np.ndarray, np.ndarray]]


def written(tree: Path | None, entries: list[dict[str, object]]) -> Stored:
    """text → (vector, sentence vectors) of each entry a fresh daemon of ``tree`` stored."""
    home = Path(tempfile.mkdtemp(prefix="mdv-", dir="/tmp"))  # a short socket path
    daemon = DaemonProcess(home, tree)
    try:
        daemon.start()
        daemon.wait_ready()
        with Client(daemon.socket, timeout_s=60, channel="terminal") as client:
            for entry in entries:
                client.remember(**entry)
            settle(client)  # the vectors made after the answers are stored
        if daemon.stop() != 0:
            raise SystemExit(f"the daemon of {tree or HERE.parent} did not stop cleanly")
        store = Store(home / "memoryd.db")
        try:
            rowids = {text: rowid for rowid, text in store._db.execute(
                "SELECT id, text FROM entries")}
            vectors = store.vectors_by_rowids(list(rowids.values()))
            parts = store.part_vectors_by_rowids(list(rowids.values()))
            empty = np.zeros((0, store.model.dim if store.model else 0), dtype=np.float32)
            return {text: (vectors[rowid], parts.get(rowid, empty))
                    for text, rowid in rowids.items() if rowid in vectors}
        finally:
            store.close()
    finally:
        daemon.stop()
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="TREE", required=True,
                        help="the other checkout (e.g. `git worktree add --detach /tmp/old main`)")
    parser.add_argument("--n", type=int, default=400, help="texts to remember (default 400)")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    args = parser.parse_args()
    entries = Corpus(args.seed).entries(args.n, salt=99)
    ours, theirs = written(None, entries), written(Path(args.against).resolve(), entries)
    common = sorted(set(ours) & set(theirs))
    same = [t for t in common if np.array_equal(ours[t][0], theirs[t][0])
            and np.array_equal(ours[t][1], theirs[t][1])]
    with_parts = sum(1 for t in common if len(ours[t][1]))
    largest = max((float(np.abs(ours[t][0] - theirs[t][0]).max()) for t in common), default=0.0)
    print(f"entries with vectors: this tree {len(ours)}, against {len(theirs)}; compared "
          f"{len(common)} ({with_parts} with sentence vectors): identical {len(same)}, largest "
          f"difference of an entry's vector {largest:g}")
    return 0 if len(same) == len(common) == len(ours) == len(theirs) else 1


if __name__ == "__main__":
    sys.exit(main())
