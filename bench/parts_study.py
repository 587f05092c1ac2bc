"""Which entries' sentence vectors should come from late chunking: both evaluation sets' tuning
halves, with each entry's part vectors taken from one build or the other (issue 35 §3).

    python bench/eval.py --today 2026-11-28 --dump /tmp/first-s.json           # sentences
    python bench/eval.py --today 2026-11-28 --index embed.parts=late-chunking --dump /tmp/first-l.json
    python bench/eval_conv.py                                                  # sentences
    python bench/eval_conv.py --index embed.parts=late-chunking
    python bench/parts_study.py --attribute /tmp/first-s.json /tmp/first-l.json
    python bench/parts_study.py --tokens 64 96 128 --transcripts

``--attribute``: the first set's queries of one half (``--half``, tuning by default) whose
reciprocal rank moves between the two dumps, with the length (tokens, as the model sees them)
and the kind of their answer entries and of the entries that passed them ("c": a transcript
chunk; -1: an entry of the second dump that the first has under another uid); then the moves
summed by the answer's length and by transcript chunk or not.

The rules (``--tokens T``: late chunking for an entry of T tokens or more; ``--transcripts``:
for transcript chunks) are tried without embedding anything again: the "sentences" build's
database gets, for the entries the rule picks, the part vectors of the late-chunking build
(matched by agent and text), and the daemon answers the tuning half on it; the database is
put back after each run. Each entry's own vector stays the "sentences" build's (late chunking
gives the same one, up to its batch mates), so a rule's figures differ from the two builds'
only by which entries' part vectors are pooled. A rule is judged on the held-out halves of
builds of its own: "late chunking from 120 tokens" was built at commit 05f30e6 (branch
parts-auto, ``[embed] parts = "auto"``), bench/RESULTS.md 2026-11-29.

``--centroid [T …]``: instead, the picked entries' own vectors replaced by the mean of their
part vectors (equal weights, and by tokens): every entry with parts, transcript chunks, other
entries, and from T tokens (what the vector backlog gives a long entry until it is refined,
from 120 tokens: ``memoryd.embedding.model.POOLED_TOKENS``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

import apsw

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import eval_conv  # noqa: E402
from measure import metrics as conv_metrics  # noqa: E402

first = eval_conv.first
TODAY = date(2026, 11, 28)
LATE = {"embed.parts": "late-chunking"}

#: An entry as the rules see it: (rowid, agent, the text the model embeds, tokens, chunk?)
Entry = tuple[int, str, str, int, bool]


def first_dir(settings: dict[str, str]) -> Path:
    return first.RESULTS / "corpus" / first.corpus_key(TODAY, 7, settings)


def conv_dir(settings: dict[str, str]) -> Path:
    return eval_conv.RESULTS / "corpus" / eval_conv.corpus_key(settings, False)


def entries(state: Path, tokenizer: Any) -> list[Entry]:
    """The active entries that have part vectors (the only ones a rule changes)."""
    from memoryd.text import index_text

    db = apsw.Connection(f"file:{state / 'memoryd.db'}?mode=ro",
                         flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY)
    try:
        rows = db.execute("SELECT e.id, e.agent, e.text, e.key, e.uid, e.via FROM entries e "
                          "JOIN part_vectors p ON p.entry = e.id WHERE e.status = 'active'"
                          ).fetchall()
    finally:
        db.close()
    texts = [index_text(text, key) for _, _, text, key, _, _ in rows]
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    return [(rowid, agent, text, length, via == "watch" and str(uid).startswith("t"))
            for (rowid, agent, _, _, uid, via), text, length in zip(rows, texts, lengths)]


def checkpointed(path: Path) -> None:
    db = apsw.Connection(str(path))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


@contextlib.contextmanager
def put_back(base: Path) -> Iterator[Path]:
    """The base build's database (yielded), as it was again afterwards."""
    db_path, backup = base / "memoryd.db", base / "memoryd.db.study"
    checkpointed(db_path)
    shutil.copyfile(db_path, backup)
    try:
        yield db_path
    finally:
        for suffix in ("-wal", "-shm"):
            (base / f"memoryd.db{suffix}").unlink(missing_ok=True)
        shutil.move(backup, db_path)


@contextlib.contextmanager
def hybrid(base: Path, late: Path, picked: list[Entry]) -> Iterator[int]:
    """The base build's database with the late build's part vectors for the picked entries
    (yields how many were replaced); the database as it was afterwards."""
    with put_back(base) as db_path:
        other = apsw.Connection(f"file:{late / 'memoryd.db'}?mode=ro",
                                flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY)
        from memoryd.text import index_text

        pooled = {}
        for agent, text, key, vectors in other.execute(
                "SELECT e.agent, e.text, e.key, p.vectors FROM entries e "
                "JOIN part_vectors p ON p.entry = e.id WHERE e.status = 'active'"):
            pooled[(agent, index_text(text, key))] = vectors
        other.close()
        db = apsw.Connection(str(db_path))
        replaced = 0
        with db:
            for rowid, agent, text, _, _ in picked:
                vectors = pooled.get((agent, text))
                if vectors is not None:
                    db.execute("UPDATE part_vectors SET vectors = ? WHERE entry = ?",
                               (vectors, rowid))
                    replaced += 1
        db.close()
        yield replaced


@contextlib.contextmanager
def centroids(base: Path, picked: list[Entry], tokenizer: Any, weighted: bool) -> Iterator[int]:
    """The base build's database with the picked entries' own vectors replaced by the mean of
    their part vectors (weighted by each part's tokens, or equal), normalised: what the entry's
    vector would be if only its sentences were run through the model (yields how many)."""
    import numpy as np
    import sqlite_vec

    from memoryd.text import split_parts

    with put_back(base) as db_path:
        db = apsw.Connection(str(db_path))
        db.enable_load_extension(True)
        db.load_extension(sqlite_vec.loadable_path())
        replaced = 0
        with db:
            for rowid, _, text, _, _ in picked:
                (blob,) = db.execute("SELECT vectors FROM part_vectors WHERE entry = ?",
                                     (rowid,)).fetchone()
                parts = np.frombuffer(blob, dtype=np.float32).reshape(-1, 384)
                sentences = split_parts(text)
                if len(sentences) != len(parts):
                    continue
                weights = (np.array([len(e.ids) for e in tokenizer.encode_batch(sentences)],
                                    dtype=np.float32) if weighted
                           else np.ones(len(parts), dtype=np.float32))
                mean = (parts * weights[:, None]).sum(axis=0)
                mean /= np.linalg.norm(mean)
                db.execute("DELETE FROM entries_vec WHERE rowid = ?", (rowid,))
                db.execute("INSERT INTO entries_vec(rowid, embedding) VALUES (?, ?)",
                           (rowid, mean.astype(np.float32).tobytes()))
                replaced += 1
        db.close()
        yield replaced


def ask_first(directory: Path) -> dict[str, Any]:
    queries = json.loads((directory / "corpus.json").read_text())["queries"]
    asked = [q for q in queries if first.half(q) == "tuning"]
    state, home = directory / "state", directory / "home"
    now = datetime.combine(TODAY, datetime.min.time()).timestamp() + 12 * 3600
    daemon = first.Daemon(state, home)
    try:
        daemon.wait_indexed()
        rows = first.run_queries(daemon.client, asked, first.relevance(state, queries), now)
    finally:
        daemon.stop()
    return first.metrics(rows)


def ask_conv(directory: Path) -> dict[str, Any]:
    data = eval_conv.load()
    coverage = eval_conv.Coverage(data, {})
    daemon = first.Daemon(directory / "state", directory / "home")
    try:
        daemon.wait_indexed()
        rows = eval_conv.ask(daemon.client, data, coverage, False, ("tuning",))
    finally:
        daemon.stop()
    return conv_metrics(rows)


def summary(figures: dict[str, Any], conv: bool) -> str:
    """The tuning half's figures as the RESULTS tables give them."""
    tuning, hop = figures["tuning"], figures["tuning/multi-hop"]
    match = figures["match/tuning"] if conv else figures["match_tuning"]
    precision, recall = (("top_precision", "top_recall") if conv
                         else ("precision", "recall"))
    return (f"R@1 {tuning['R@1']:.3f}  R@5 {tuning['R@5']:.3f}  MRR {tuning['MRR']:.3f}  "
            f"multi-hop R@5 {hop['R@5']:.3f}  match {match[precision]:.3f} / "
            f"{match[recall]:.3f}")


def attribute(sentences: Path, late: Path, tokenizer: Any, half: str = "tuning") -> None:
    """The queries of the first set that move between two ``eval.py --dump`` files."""
    base_dir = first_dir({})
    queries = {q["id"]: q for q in json.loads((base_dir / "corpus.json").read_text())["queries"]}
    state = base_dir / "state"
    spans = first.relevance(state, list(queries.values()))
    db = apsw.Connection(f"file:{state / 'memoryd.db'}?mode=ro",
                         flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY)
    info = {uid: (text, via == "watch" and uid.startswith("t")) for uid, text, via in
            db.execute("SELECT uid, text, via FROM entries WHERE status = 'active'")}
    db.close()

    def tokens(uid: str) -> int:
        return len(tokenizer.encode(info[uid][0]).ids) if uid in info else -1

    def rank(row: dict[str, Any]) -> float:
        found = next((i for i, a in enumerate(row["ranked"]) if a), None)
        return 0.0 if found is None else 1 / (found + 1)

    rows = [{r["id"]: r for r in json.loads(path.read_text())["default"]
             if r["half"] == half and r["answers"]} for path in (sentences, late)]
    moves: dict[str, list[float]] = defaultdict(list)
    print(f"{'query':<34} {'type':<10} RR s → l  answer entries (tokens, chunk?); passed by")
    for key, before in sorted(rows[0].items()):
        after = rows[1][key]
        answers = {uid for a in queries[key]["answers"] for uid in spans[a["span"]]}
        length = max((tokens(u) for u in answers), default=-1)
        chunk = any(info.get(u, ("", False))[1] for u in answers)
        bucket = ("chunk" if chunk else "other") + (" ≥120" if length >= 120 else " <120")
        delta = rank(after) - rank(before)
        moves[bucket].append(delta)
        moves[f"tokens {min(length // 32 * 32, 192):>3}+"].append(delta)
        if delta:
            ahead = after["ids"][:max(0, next((i for i, a in enumerate(after["ranked"]) if a),
                                              len(after["ids"])))]
            print(f"{key[:34]:<34} {before['type']:<10} {rank(before):.2f} → {rank(after):.2f}  "
                  + ", ".join(f"{tokens(u)}{'c' if info.get(u, ('', 0))[1] else ''}"
                              for u in sorted(answers))
                  + "; " + ", ".join(f"{tokens(u)}{'c' if info.get(u, ('', 0))[1] else ''}"
                                     for u in ahead[:3]))
    print(f"\n{'answer entry':<16} {'queries':>7} {'MRR Δ (sum)':>12} {'lost':>5} {'gained':>6}")
    for bucket, deltas in sorted(moves.items()):
        print(f"{bucket:<16} {len(deltas):>7} {sum(deltas):>+12.2f} "
              f"{sum(d < 0 for d in deltas):>5} {sum(d > 0 for d in deltas):>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attribute", nargs=2, type=Path, metavar=("SENTENCES", "LATE"),
                        help="two eval.py --dump files of the first set")
    parser.add_argument("--half", choices=("tuning", "held-out"), default="tuning",
                        help="the half --attribute looks at (choose on the tuning half)")
    parser.add_argument("--tokens", nargs="*", type=int, default=[],
                        help="try late chunking from T tokens")
    parser.add_argument("--transcripts", action="store_true",
                        help="try late chunking for transcript chunks")
    parser.add_argument("--centroid", nargs="*", type=int, default=None, metavar="T",
                        help="instead: the entry's own vector the mean of its part vectors, for "
                             "every entry with parts, transcript chunks, and from T tokens")
    parser.add_argument("--set", choices=("first", "conv", "both"), default="both")
    args = parser.parse_args()

    from memoryd.config import load_config
    from memoryd.embedding.model import Embedder

    tokenizer = Embedder(load_config().embed).tokenizer
    if args.attribute:
        sentences_dump, late_dump = args.attribute
        attribute(sentences_dump, late_dump, tokenizer, args.half)
    rules: list[tuple[str, Callable[[Entry], bool]]] = [
        ("sentences (the build)", lambda e: False), ("late chunking (every entry)", lambda e: True)]
    rules += [(f"late from {t} tokens", lambda e, t=t: e[3] >= t) for t in args.tokens]
    if args.transcripts:
        rules.append(("late for transcript chunks", lambda e: e[4]))
    if args.centroid is not None:
        rules = [("own vectors (the build)", lambda e: False),
                 ("centroid, every entry", lambda e: True),
                 ("centroid, transcript chunks", lambda e: e[4]),
                 ("centroid, other entries", lambda e: not e[4])]
        rules += [(f"centroid from {t} tokens", lambda e, t=t: e[3] >= t)
                  for t in args.centroid]
    elif not (args.tokens or args.transcripts):
        return 0
    sets = [("first", first_dir, ask_first), ("conv", conv_dir, ask_conv)]
    for name, where, ask in sets:
        if args.set not in (name, "both"):
            continue
        base = where({})
        late = base if args.centroid is not None else where(LATE)  # no late build to average
        known = entries(base / "state", tokenizer)
        lengths = [e[3] for e in known]
        print(f"\n== {name} set, tuning half: {len(known)} entries with parts, tokens median "
              f"{statistics.median(lengths):.0f}, {sum(e[4] for e in known)} transcript chunks",
              flush=True)
        for label, rule in rules:
            picked = [e for e in known if rule(e)]
            for weighted in ((False, True) if args.centroid is not None else (None,)):
                if weighted is None:
                    swap = hybrid(base / "state", late / "state", picked)
                else:
                    swap = centroids(base / "state", picked, tokenizer, weighted)
                    label = label.replace(" (tokens)", "") + (" (tokens)" if weighted else "")
                with swap as replaced:
                    figures = ask(base)
                print(f"{label:<36} ({replaced:>4} changed)  {summary(figures, name == 'conv')}",
                      flush=True)
                if not picked:
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
