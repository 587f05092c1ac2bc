"""Whether two memories say the same thing, measured on a labelled set of near pairs.

    python bench/bench_meaning.py [--pairs bench/near_pairs/pairs.jsonl] [--wrong]

``bench/near_pairs/pairs.jsonl`` holds pairs of memories a small model finds alike, each
labelled ``same`` (one memory said twice: filler, a paraphrase) or not (a negation, a number,
a name, an environment, a quantity, an antonym, another order, other wording), in several
domains and kinds (lessons, notes, facts; the notebook pass reads them all as lessons). The
first 142 were written before the rule (the reliability report's 18 pairs of 2026-11-28 among
them); the 45 marked ``"set": "held-out"`` were written after it was fixed, and are reported
apart. (On them the rule as first fixed merged 1 distinct pair of 30 — "merge the data branch
into the model branch" and its reverse — and recalled 11 of 15; what they showed, the
passive, a few function words as markers of roles, units and "ever", was added after, so
they are held out no longer.)

For each pair the real embedder's cosine (both texts embedded alone) and the decision
"these two are one memory" of:

- ``cosine ≥ 0.92``: the write path's near-duplicate rule before memoryd.meaning;
- ``before``: consolidation's and the notebook pass's rule before it (cosine ≥ 0.92, or two
  lessons with a content-word Jaccard ≥ 0.7; both "do" or both "don't"; the same digits);
- ``memoryd``: :func:`memoryd.meaning.same_thing`, what every merge decides by now.

Printed: precision and recall of "same" (precision: of the pairs merged, how many are one
memory; recall: of the pairs that are one memory, how many are merged), the distinct pairs
merged, and (``--wrong``) every pair decided wrongly. tests/passes/test_meaning.py runs the real
passes on the same set.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAIRS = ROOT / "bench" / "near_pairs" / "pairs.jsonl"
THRESHOLD = 0.92


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def before_rule(a: str, b: str, cosine: float, lesson: bool) -> bool:
    """The rule of memoryd.text.same_lesson before memoryd.meaning (for comparison)."""
    from memoryd.lessons import content_words, jaccard

    negation = {"not", "never", "avoid", "stop", "no", "without", "cannot", "nor"}
    words_a, words_b = content_words(a), content_words(b)
    digits = re.compile(r"\d")
    if not lesson:
        return cosine >= THRESHOLD
    return (bool(words_a & negation) == bool(words_b & negation)
            and {w for w in words_a if digits.search(w)} == {w for w in words_b if digits.search(w)}
            and (cosine >= THRESHOLD or jaccard(words_a, words_b) >= 0.7))


def scores(pairs: list[dict], decided: list[bool]) -> tuple[float, float, int, int]:
    merged = sum(decided)
    right = sum(1 for p, d in zip(pairs, decided) if d and p["same"])
    same = sum(1 for p in pairs if p["same"])
    wrong = sum(1 for p, d in zip(pairs, decided) if d and not p["same"])
    return (right / merged if merged else 1.0), (right / same if same else 1.0), wrong, same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--wrong", action="store_true", help="list every pair decided wrongly")
    args = parser.parse_args()

    from memoryd.config import load_config
    from memoryd.embedding.model import Embedder
    from memoryd.meaning import difference, same_thing

    pairs = load(args.pairs)
    embedder = Embedder(load_config().embed)
    first = embedder.embed_alone([p["a"] for p in pairs])
    second = embedder.embed_alone([p["b"] for p in pairs])
    for pair, a, b in zip(pairs, first, second):
        pair["cosine"] = float(a @ b)
    rules = {
        "cosine >= 0.92": lambda p: p["cosine"] >= THRESHOLD,
        "before": lambda p: before_rule(p["a"], p["b"], p["cosine"], p["kind"] == "lesson"),
        "memoryd": lambda p: same_thing(p["a"], p["b"], p["cosine"], THRESHOLD,
                                        p["kind"] == "lesson"),
    }
    sets = {"all": pairs,
            "written with the rule": [p for p in pairs if p.get("set") != "held-out"],
            "held out": [p for p in pairs if p.get("set") == "held-out"],
            "the report's 18 (R3)": [p for p in pairs if p.get("source") == "R3"]}
    print(f"{len(pairs)} pairs: {sum(p['same'] for p in pairs)} the same memory, "
          f"{sum(not p['same'] for p in pairs)} distinct")
    print(f"{'set':24} {'rule':16} {'precision':>9} {'recall':>7} {'distinct merged':>16}")
    for name, chosen in sets.items():
        for rule, decide in rules.items():
            precision, recall, wrong, same = scores(chosen, [decide(p) for p in chosen])
            distinct = len(chosen) - same
            print(f"{name:24} {rule:16} {precision:9.3f} {recall if same else float('nan'):7.3f}"
                  f" {wrong:>9} of {distinct:<4}")
    if args.wrong:
        for pair in pairs:
            decided = rules["memoryd"](pair)
            if decided != pair["same"]:
                found = difference(pair["a"], pair["b"])
                print(f"wrong #{pair['id']} ({'same' if pair['same'] else pair['class']}, "
                      f"cosine {pair['cosine']:.3f}, {found.why() if found else 'no difference'}):"
                      f" {pair['a']!r} / {pair['b']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
