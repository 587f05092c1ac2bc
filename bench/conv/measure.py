"""R@k, MRR and the match flag's precision and recall over a conversational run's rows, and
the table bench/eval_conv.py and bench/conv/baseline.py print (README.md, "Measures").

A row is one question: its ``evidence`` turn ids, ``covered`` (for each hit in rank order, the
turn ids its entry covers), its ``type`` and ``half``, ``ms``, and, for memoryd, ``match`` (each
hit's match flag).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from conversations import HALVES, TYPES

TOP = 10
KS = (1, 5, 10)


def recall_figures(rows: list[dict[str, Any]]) -> dict[str, float]:
    """R@k: the share of a question's evidence turns covered by the top k; MRR: the first
    hit covering any evidence turn."""
    if not rows:
        return {}
    figures: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        wanted = set(row["evidence"])
        for k in KS:
            found = set().union(*map(set, row["covered"][:k])) if row["covered"] else set()
            figures[f"R@{k}"].append(len(found & wanted) / len(wanted))
        first_hit = next((i for i, turns in enumerate(row["covered"][:TOP])
                          if wanted & set(turns)), None)
        figures["MRR"].append(1 / (first_hit + 1) if first_hit is not None else 0.0)
    return {name: statistics.fmean(values) for name, values in figures.items()} | \
        {"n": len(rows)}


def match_figures(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The match flag against relevance, per hit in the top 10 and for the top hit; and the
    exit-code view (a question whose hits include a match exits 0)."""
    flagged = relevant = both = top_flagged = top_relevant = top_both = 0
    for row in rows:
        wanted = set(row["evidence"])
        for rank, (turns, flag) in enumerate(zip(row["covered"][:TOP], row["match"][:TOP])):
            right = bool(wanted & set(turns))
            flagged += flag
            relevant += right
            both += flag and right
            if rank == 0:
                top_flagged += flag
                top_relevant += right
                top_both += flag and right
    return {"precision": both / flagged if flagged else 0.0,
            "recall": both / relevant if relevant else 0.0,
            "top_precision": top_both / top_flagged if top_flagged else 0.0,
            "top_recall": top_both / top_relevant if top_relevant else 0.0,
            "exit0": sum(1 for r in rows if any(r["match"][:TOP])) / len(rows) if rows else 0.0}


def metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {"overall": recall_figures(rows)}
    for kind in TYPES:
        result[kind] = recall_figures([r for r in rows if r["type"] == kind])
    for half in HALVES:
        result[half] = recall_figures([r for r in rows if r["half"] == half])
        for kind in TYPES:
            result[f"{half}/{kind}"] = recall_figures([r for r in rows if r["half"] == half
                                                       and r["type"] == kind])
    if rows and "match" in rows[0]:
        result["match"] = match_figures(rows)
        for half in HALVES:
            result[f"match/{half}"] = match_figures([r for r in rows if r["half"] == half])
    latencies = sorted(r["ms"] for r in rows)
    if latencies:
        result["latency_ms"] = {
            "p50": latencies[len(latencies) // 2],
            "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]}
    return result


def show(name: str, figures: dict[str, Any], previous: dict[str, Any] | None,
         by_half_types: bool = True, latency: str = "search through the client") -> None:
    def delta(key: str, metric: str, value: float) -> str:
        old = (previous or {}).get(key, {}).get(metric)
        if not isinstance(old, (int, float)) or abs(old - value) < 5e-4:
            return ""
        return f" ({value - old:+.3f})"

    print(f"\n== {name}")
    print(f"{'':<22} {'n':>4} " + " ".join(f"{m:>14}" for m in ("R@1", "R@5", "R@10", "MRR")))
    keys = ["overall", *TYPES, *HALVES]
    if by_half_types:
        keys += [f"{h}/{t}" for h in HALVES for t in TYPES]
    for key in keys:
        row = figures.get(key) or {}
        if not row:
            continue
        cells = " ".join(f"{row[m]:>6.3f}{delta(key, m, row[m]):>8}"
                         for m in ("R@1", "R@5", "R@10", "MRR"))
        print(f"{key:<22} {row['n']:>4} {cells}")
    for key in ("match", *(f"match/{h}" for h in HALVES)):
        m = figures.get(key)
        if not m or key not in figures:
            continue
        print(f"{key:<14} per hit: flagged → relevant (precision) {m['precision']:.3f}, "
              f"relevant → flagged (recall) {m['recall']:.3f}; top hit: precision "
              f"{m['top_precision']:.3f}, recall {m['top_recall']:.3f}; "
              f"questions with a match (exit 0) {m['exit0']:.3f}")
    times = figures.get("latency_ms")
    if times:
        print(f"{latency}: p50 {times['p50']:.1f} ms, p99 {times['p99']:.1f} ms")
