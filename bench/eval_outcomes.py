"""The outcome judge on its labelled set: `python bench/eval_outcomes.py` (bench/eval/outcomes).

Every case (a memory, a session in one harness's format, the outcome a person gives it) is
rendered as a real transcript, read by memoryd's own reader (memoryd.ingest.transcript.actions)
and judged (memoryd.sessions.outcomes). Prints, per half (tuning, held-out), the confusion
table (rows: the label, columns: the judge), precision and recall per outcome, and the targets
(held-out: precision ≥ 0.90 for followed and for broken, recall ≥ 0.70 for broken).

    python bench/eval_outcomes.py                 # both halves
    python bench/eval_outcomes.py --errors        # and every case judged wrong, with why
    python bench/eval_outcomes.py --half tuning --errors
    python bench/eval_outcomes.py --dump          # the cases as JSONL (to read them)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "client"), str(ROOT / "bench" / "eval" / "outcomes")]

from generate import generated  # noqa: E402
from render import render  # noqa: E402

from memoryd.ingest.transcript.actions import read_steps  # noqa: E402
from memoryd.sessions.outcomes import BROKEN, FOLLOWED, OUTCOMES, judge  # noqa: E402

CASES = ROOT / "bench" / "eval" / "outcomes" / "cases"
TARGETS = {("precision", FOLLOWED): 0.90, ("precision", BROKEN): 0.90, ("recall", BROKEN): 0.70}


def load() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(CASES.glob("*.toml")):
        for case in tomllib.loads(path.read_text("utf-8"))["case"]:
            cases.append({**case, "source": path.name})
    cases.extend(generated())
    ids = [c["id"] for c in cases]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise SystemExit(f"case ids used twice: {twice}")
    for case in cases:
        if case["label"] not in OUTCOMES or case["half"] not in ("tuning", "heldout"):
            raise SystemExit(f"{case['id']}: bad label or half")
    return cases


def run(case: dict[str, Any]) -> tuple[str, str, float]:
    lines, injected = render(case)
    harness = "generic" if case["harness"] == "pi" else case["harness"]
    started = time.perf_counter()
    steps = read_steps(lines, harness)
    outcome = judge(case["entry"], steps, injected)
    return outcome.outcome, outcome.why, time.perf_counter() - started


def table(results: list[tuple[dict[str, Any], str, str]]) -> dict[tuple[str, str], float]:
    counts = {(label, got): 0 for label in OUTCOMES for got in OUTCOMES}
    for case, got, _ in results:
        counts[(case["label"], got)] += 1
    width = max(len(o) for o in OUTCOMES) + 2
    corner = "label \\ judge"
    print(f"    {corner:<{width + 2}}" + "".join(f"{o:>{width}}" for o in OUTCOMES)
          + f"{'total':>8}")
    for label in OUTCOMES:
        row = [counts[(label, got)] for got in OUTCOMES]
        print(f"    {label:<{width + 2}}" + "".join(f"{n:>{width}}" for n in row)
              + f"{sum(row):>8}")
    figures: dict[tuple[str, str], float] = {}
    for outcome in OUTCOMES:
        judged = sum(counts[(label, outcome)] for label in OUTCOMES)
        labelled = sum(counts[(outcome, got)] for got in OUTCOMES)
        right = counts[(outcome, outcome)]
        precision = right / judged if judged else float("nan")
        recall = right / labelled if labelled else float("nan")
        figures[("precision", outcome)] = precision
        figures[("recall", outcome)] = recall
        print(f"    {outcome:<12} precision {precision:.3f} ({right}/{judged})   "
              f"recall {recall:.3f} ({right}/{labelled})")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tuning", "heldout"))
    parser.add_argument("--errors", action="store_true", help="list the cases judged wrong")
    parser.add_argument("--dump", action="store_true", help="print the cases as JSONL")
    args = parser.parse_args()
    cases = load()
    if args.dump:
        for case in cases:
            print(json.dumps(case, ensure_ascii=False))
        return 0
    met = True
    for half in (args.half,) if args.half else ("tuning", "heldout"):
        chosen = [c for c in cases if c["half"] == half]
        results = []
        elapsed = 0.0
        for case in chosen:
            got, why, seconds = run(case)
            elapsed += seconds
            results.append((case, got, why))
        kinds = {}
        for case in chosen:
            kinds[case["entry"]["kind"]] = kinds.get(case["entry"]["kind"], 0) + 1
        harnesses = {}
        for case in chosen:
            harnesses[case["harness"]] = harnesses.get(case["harness"], 0) + 1
        by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        print(f"{half}: {len(chosen)} cases ({by_kind}; "
              f"{', '.join(f'{n} {h}' for h, n in sorted(harnesses.items()))}); "
              f"{elapsed / max(len(chosen), 1) * 1000:.2f} ms a case to read and judge")
        figures = table(results)
        if half == "heldout":
            for (measure, outcome), target in TARGETS.items():
                value = figures[(measure, outcome)]
                ok = value >= target
                met &= ok
                print(f"    target {measure} {outcome} ≥ {target:.2f}: {value:.3f} "
                      f"{'met' if ok else 'NOT MET'}")
        if args.errors:
            for case, got, why in results:
                if got != case["label"]:
                    print(f"  ✗ {case['id']} [{case['harness']}] label {case['label']}, judged "
                          f"{got}: {why}\n      memory: {case['entry']['text']}")
        print()
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
