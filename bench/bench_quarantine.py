#!/usr/bin/env python
"""How many innocent memories the quarantine flags, and what judging costs.

    python bench/bench_quarantine.py                  # every text, a summary and the flagged
    python bench/bench_quarantine.py --entries 5000   # fewer generated entries

The texts are memories nobody planted anything in: the evaluation set's items and its filler
(``bench/eval``: transcript exchanges, chats, notebook bullets and notes, every template
filled once with a seeded draw of its slots), and ``--entries`` entries of the generator
(``bench/corpus.py``, seed 7). Exchanges are judged as transcript chunks (``User: … /
Assistant: …``, kind ``turn``), the rest as notes, with their category where they have one,
as :func:`memoryd.quarantine.reason_for_entry` does for an entry.

Prints, per source, how many texts were judged and flagged (each flagged text with its rule),
then the time per text (median and 99th percentile over the whole set, each text's fastest
of five rounds) and the figures as JSON on the last line. Run it on two trees to compare them: it
judges with whatever ``memoryd`` is on the path.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "eval"))

from corpus import Corpus  # noqa: E402
from dataset import load  # noqa: E402

from memoryd import quarantine  # noqa: E402

#: (source, text, kind, category)
Text = tuple[str, str, str | None, str]


def judge(text: str, kind: str | None, category: str) -> str | None:
    """The verdict for one text, by the entry-level judge when this tree has one."""
    whole = getattr(quarantine, "reason_for_entry", None)
    if whole is not None:
        return whole(text, kind, category)
    return quarantine.reason(text, kind)


def texts(entries: int) -> list[Text]:
    data = load()
    rng = random.Random(7)
    slots = data.filler["slots"]

    def fill(template: str) -> str:
        out = template
        for name, values in slots.items():
            while "{" + name + "}" in out:
                out = out.replace("{" + name + "}", rng.choice(values), 1)
        return out

    found: list[Text] = []
    for item in data.items.values():
        if item.user is not None:
            exchange = f"[2026-11-01] User: {item.user}\n\nAssistant: {item.assistant or ''}"
            found.append(("eval items", exchange, "turn", ""))
        else:
            found.append(("eval items", item.text, "note", item.section or ""))
    for exchange in data.filler["exchange"] + data.filler["chat"]:
        chunk = (f"[2026-11-01] User: {fill(exchange['user'])}\n\n"
                 f"Assistant: {fill(exchange['assistant'])}")
        found.append(("eval filler", chunk, "turn", ""))
    for kind in ("bullet", "note"):
        for raw in data.filler[kind]:
            found.append(("eval filler", fill(raw["text"]), "note", raw.get("section", "")))
    for entry in Corpus(seed=7).entries(entries):
        found.append(("corpus.py", entry["text"], entry["kind"], entry["category"]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=20_000,
                        help="generated entries (bench/corpus.py) besides the eval set")
    args = parser.parse_args(argv)
    judged = texts(args.entries)
    counts: dict[str, list[int]] = {}
    flagged: list[dict[str, Any]] = []
    for source, text, kind, category in judged:
        seen = counts.setdefault(source, [0, 0])
        seen[0] += 1
        rule = judge(text, kind, category)
        if rule is not None:
            seen[1] += 1
            flagged.append({"source": source, "rule": rule, "text": " ".join(text.split())[:160]})
    for source, (total, bad) in counts.items():
        print(f"{source:12} {total:6} texts, {bad} flagged")
    for hit in flagged:
        print(f"  [{hit['rule']}] {hit['source']}: {hit['text']}")
    best = [float("inf")] * len(judged)
    for _ in range(5):  # each text's fastest of five: the machine may be busy meanwhile
        for number, (_source, text, kind, category) in enumerate(judged):
            start = time.perf_counter_ns()
            judge(text, kind, category)
            best[number] = min(best[number], time.perf_counter_ns() - start)
    ordered = sorted(best)
    median_us = statistics.median(ordered) / 1000
    p99_us = ordered[int(len(ordered) * 0.99)] / 1000
    print(f"judging: median {median_us:.1f} µs, p99 {p99_us:.1f} µs a text "
          f"({len(judged)} texts, {sum(best) / 1e6:.0f} ms in all)")
    print(json.dumps({"texts": len(judged), "flagged": len(flagged),
                      "by_source": {s: {"texts": t, "flagged": b} for s, (t, b) in counts.items()},
                      "median_us": round(median_us, 1), "p99_us": round(p99_us, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
