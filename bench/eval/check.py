"""Validate the evaluation set: `python bench/eval/check.py` (exit 1 on problems)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import load


def main() -> int:
    data = load()
    for problem in data.problems:
        print(problem)
    by_type = Counter(q.type for q in data.queries)
    by_where = Counter(i.where for i in data.items.values())
    by_file = Counter(q.origin.split(":")[0] for q in data.queries)
    print(f"{len(data.items)} items, {len(data.queries)} queries")
    print("queries by type: " + ", ".join(f"{t} {n}" for t, n in sorted(by_type.items())))
    print("items by where: " + ", ".join(f"{w} {n}" for w, n in sorted(by_where.items())))
    print("queries by file: " + ", ".join(f"{f} {n}" for f, n in sorted(by_file.items())))
    filler = data.filler
    print("filler: " + ", ".join(f"{k} {len(v)}" for k, v in filler.items() if k != "slots")
          + f"; slots {sorted(filler['slots'])}")
    print(f"{len(data.problems)} problems")
    return 1 if data.problems else 0


if __name__ == "__main__":
    sys.exit(main())
