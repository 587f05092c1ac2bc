"""Every candidate of every question of both evaluation sets, with its evidence and whether it
is relevant: the data the ranking model is fitted on and the ground for offline comparisons.

    python bench/candidates.py                      # dump both sets (built corpora reused)
    python bench/candidates.py --index watch.transcript_chunks=window
    python bench/candidates.py --compare            # shipped model vs a refit, held-out halves

The dump (bench/results/candidates/<first key>-<conv key>.json) holds, per question: its set,
type, half, and each candidate's evidence (memoryd.retrieval.ranking's FEATURES, as the daemon
computed them) with its relevance: for the first set the answer item it holds (bench/eval.py's
relevance), for the conversational set the evidence turns it covers (bench/eval_conv.py's
coverage). Ranking the candidates by a model's probability is what the daemon does, so a
model's figures here are the figures it would give through the client (the candidates
themselves do not depend on the model).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "candidates"
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import eval_conv  # noqa: E402

first = eval_conv.first
POOL = 1000


def dump_first(index_settings: dict[str, str], today: str) -> tuple[str, list[dict[str, Any]]]:
    args = argparse.Namespace(today=today, seed=7, rebuild=False, filler="as-written")
    directory, queries = first.prepare(args, index_settings)
    state, home = directory / "state", directory / "home"
    built = date.fromisoformat(json.loads((directory / "corpus.json").read_text())["today"])
    now = datetime.combine(built, datetime.min.time()).timestamp() + 12 * 3600
    span_uids = first.relevance(state, queries)
    daemon = first.Daemon(state, home)
    try:
        daemon.wait_indexed()
        rows = first.run_queries(daemon.client, queries, span_uids, now, limit=POOL)
    finally:
        daemon.stop()
    out = []
    for row in rows:
        out.append({"set": "first", "id": row["id"], "type": row["type"], "half": row["half"],
                    "wanted": row["answers"], "labels": row["ranked"],
                    "evidence": row["evidence"], "chars": row["chars"], "kinds": row["kinds"],
                    "ids": row["ids"], "corpus": directory.name})
    return directory.name, out


def dump_conv(index_settings: dict[str, str]) -> tuple[str, list[dict[str, Any]]]:
    data = eval_conv.load()
    directory = eval_conv.prepare(data, index_settings, False, False)
    state, home = directory / "state", directory / "home"
    coverage = eval_conv.Coverage(data, index_settings)
    daemon = first.Daemon(state, home)
    out = []
    try:
        daemon.wait_indexed()
        for conversation in data.conversations:
            now = conversation.asked.replace(tzinfo=UTC).timestamp()
            for question in conversation.questions:
                result = daemon.client.search(question.q, agents=[conversation.id], limit=POOL,
                                              now=now)
                covered = []
                for hit in result["hits"]:
                    owner, turns = coverage.turns(hit)
                    covered.append(sorted(turns) if owner == conversation.id else [])
                out.append({"set": "conv", "id": question.key, "type": question.type,
                            "half": conversation.half, "wanted": list(question.evidence),
                            "labels": covered,
                            "evidence": [h["evidence"] for h in result["hits"]],
                            "chars": [len(h["text"]) for h in result["hits"]],
                            "kinds": [h["kind"] + ("/chunk" if h["via"] == "watch"
                                                   and h["id"].startswith("t") else "")
                                      for h in result["hits"]],
                            "ids": [h["id"] for h in result["hits"]],
                            "corpus": directory.name})
    finally:
        daemon.stop()
    return directory.name, out


def load_or_dump(index_settings: dict[str, str], today: str, refresh: bool, tag: str = ""
                 ) -> list[dict[str, Any]]:
    """``tag`` names a variant of the daemon's settings given by MEMORYD_* variables."""
    key = json.dumps(index_settings, sort_keys=True) + (f" {tag}" if tag else "")
    RESULTS.mkdir(parents=True, exist_ok=True)
    index_file = RESULTS / "index.json"
    known = json.loads(index_file.read_text()) if index_file.exists() else {}
    path = known.get(f"{today} {key}")
    if path and (RESULTS / path).exists() and not refresh:  # relative: a copied tree finds it
        return json.loads((RESULTS / path).read_text())
    first_key, first_rows = dump_first(index_settings, today)
    conv_key, conv_rows = dump_conv(index_settings)
    target = RESULTS / f"{first_key}-{conv_key}{'-' + tag if tag else ''}.json"
    target.write_text(json.dumps(first_rows + conv_rows))
    known[f"{today} {key}"] = target.name
    index_file.write_text(json.dumps(known, indent=1))
    return first_rows + conv_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--today", default="2026-11-28")
    parser.add_argument("--refresh", action="store_true", help="dump again")
    parser.add_argument("--tag", default="", help="a name for MEMORYD_* settings of this run")
    args = parser.parse_args()
    rows = load_or_dump(first.parse_settings(args.index), args.today, args.refresh, args.tag)
    print(f"{len(rows)} questions, {sum(len(r['evidence']) for r in rows)} candidates",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
