"""Does a transcript chunk's session help rank it? Studied offline over the dump of every
candidate (bench/candidates.py), with the ranking model refitted as shipped
(bench/ranking_fit.py's procedure, its pull cross-validated on the tuning halves).

    python bench/session_study.py                  # every variant below
    python bench/session_study.py max_other top3   # some of them

A question about one part of a conversation often has its answer in a session whose other
chunks are close to it too (multi-hop and open-domain questions: the gist of several turns).
Each variant is one more evidence of a candidate, from the other candidates of the same
session (the same agent and transcript file; a note or a fact has none): ``max_other`` their
best cosine to the question, ``mean_other`` their mean cosine, ``top3`` the mean of the
session's three best cosines (the candidate's own among them), ``count`` how many there are
(log). A variant ships only if it holds on both sets' held-out halves.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import candidates  # noqa: E402
import ranking_fit as rf  # noqa: E402

CORPORA = (ROOT / "bench" / "results" / "eval" / "corpus",
           ROOT / "bench" / "results" / "conv" / "corpus")


def sessions_of_chunks(corpora: list[str]) -> dict[str, str]:
    """Each transcript chunk's session (agent and file), from the built corpora's indexes."""
    where: dict[str, str] = {}
    for name in corpora:
        for base in CORPORA:
            db = base / name / "state" / "memoryd.db"
            if not db.exists():
                continue
            connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
            try:
                for uid, agent, source in connection.execute(
                        "SELECT uid, agent, source FROM entries WHERE kind = 'turn' "
                        "AND source IS NOT NULL"):
                    where[uid] = f"{agent}|{source}"
            finally:
                connection.close()
    return where


def _max_other(own: float, others: list[float], members: list[float]) -> float:
    return max(others) if others else 0.0


def _mean_other(own: float, others: list[float], members: list[float]) -> float:
    return float(np.mean(others)) if others else 0.0


def _top3(own: float, others: list[float], members: list[float]) -> float:
    return float(np.mean(sorted(members, reverse=True)[:3]))


def _count(own: float, others: list[float], members: list[float]) -> float:
    return float(np.log1p(len(others)))


VARIANTS: dict[str, Callable[[float, list[float], list[float]], float]] = {
    "max_other": _max_other, "mean_other": _mean_other, "top3": _top3, "count": _count}


def evidence(row: dict[str, Any], where: dict[str, str], variant: str) -> np.ndarray:
    """The variant's evidence of each candidate of one question."""
    cosines = [float(e["cos"]) for e in row["evidence"]]
    groups: dict[str, list[int]] = {}
    for i, uid in enumerate(row["ids"]):
        if uid in where:
            groups.setdefault(where[uid], []).append(i)
    out = np.zeros(len(cosines))
    for members in groups.values():
        for i in members:
            others = [cosines[j] for j in members if j != i]
            out[i] = VARIANTS[variant](cosines[i], others, [cosines[j] for j in members])
    return out


def summary(name: str, model: rf.Model, qs: list[rf.Question]) -> None:
    cells = [name]
    for s in rf.SETS:
        for half in ("tuning", "held-out"):
            f = rf.figures(model, [q for q in qs if q.set == s and q.half == half])
            cells.append(f"{s} {half}: R@5 {f['R@5']:.3f} MRR {f['MRR']:.3f} "
                         f"P/R {f['precision']:.3f}/{f['recall']:.3f}")
        multi = [q for q in qs if q.set == s and q.half == "held-out" and q.type == "multi-hop"]
        if multi:
            cells.append(f"{s} multi-hop held-out R@5 {rf.figures(model, multi)['R@5']:.3f}")
    print("\n    ".join(cells), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="*", metavar="VARIANT",
                        help=f"among {', '.join(VARIANTS)} (default: all)")
    parser.add_argument("--today", default="2026-11-28")
    args = parser.parse_args()
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        parser.error(f"no variant {', '.join(sorted(unknown))} (variants: {', '.join(VARIANTS)})")
    rows = candidates.load_or_dump({}, args.today, False)
    answered = [r for r in rows if r["wanted"]]  # rf.questions keeps these, in order
    where = sessions_of_chunks(sorted({r["corpus"] for r in rows if r.get("corpus")}))
    print(f"{len(answered)} questions; {len(where)} transcript chunks with their session")
    qs = rf.questions(rows)
    train = [q for q in qs if q.half == "tuning"]
    l2, _ = rf.choose_l2(train)
    summary(f"refit as shipped (l2 {l2:g})", rf.procedure(train, l2), qs)
    shipped_features = rf.FEATURES
    for variant in args.variants or list(VARIANTS):
        qs = rf.questions(rows)
        for q, row in zip(qs, answered, strict=True):
            q.x = np.hstack([q.x, evidence(row, where, variant).reshape(-1, 1)])
        rf.FEATURES = (*shipped_features, "session")
        try:
            train = [q for q in qs if q.half == "tuning"]
            l2, _ = rf.choose_l2(train)
            model = rf.procedure(train, l2)
            summary(f"+ {variant} (l2 {l2:g}, weight {model.weights[len(shipped_features)]:+.3f})",
                    model, qs)
        finally:
            rf.FEATURES = shipped_features
    return 0


if __name__ == "__main__":
    sys.exit(main())
