"""The match decision and the conversational ranking, studied offline over a dump of every
candidate (bench/candidates.py): what the top hit's match flag can reach with the evidence
search has, and whether evidence a dump holds beyond the shipped model's helps (issue 35).

    python bench/match_study.py                 # the shipped dump's evidence
    python bench/match_study.py --tag exp1      # a dump with more evidence (below)

Every choice is made on the tuning halves (six random halvings of them, both sets; a model
fitted on one half of each, measured on the other) and then shown on the held-out halves. The
match figures are the top hit's: precision and recall at the threshold fitted for 0.90, and,
free of any threshold, **P@R.80** (the precision at the strictest threshold that still flags
80 % of the questions whose top hit is right: the target of issue 35 is P@R.80 ≥ 0.90).

The dump ``exp1`` was made at commit bed6590 (branch convmatch), whose search also computed
``local_cov``, ``ctx_local_cov`` and ``held_cov`` (the coverage of the question's words weighed
by how few of the search's candidates hold them: the entry's own words, its passage's, and the
same without the words no candidate holds) and ``nb_mix`` (the best mix of the transcript
chunks just before and after a chunk). Evidence the dump holds beyond the shipped model's
FEATURES is read from it and tried one by one.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import candidates  # noqa: E402
import ranking_fit as rf  # noqa: E402

HALVINGS = 6
L2 = 30.0  # bench/ranking_fit.py's cross-validated choice on this build's tuning halves


def tops(model: rf.Model, qs: Sequence[rf.Question]) -> list[tuple[float, bool]]:
    """Each question's top hit: its probability, whether it is right."""
    out = []
    for q in qs:
        if len(q.x):
            p = model.scores(q.x)
            best = int(np.argmax(p))
            out.append((float(p[best]), bool(q.found[best])))
    return out


def precision_at_recall(top: list[tuple[float, bool]], recall: float = 0.8) -> float:
    ranked = sorted(top, key=lambda t: -t[0])
    right = sum(ok for _, ok in ranked)
    got = 0
    for number, (_, ok) in enumerate(ranked, 1):
        got += ok
        if got >= recall * right:
            return got / number
    return 0.0


def top_hits(model: rf.Model, qs: Sequence[rf.Question]) -> tuple[np.ndarray, list[bool]]:
    """Each question's top hit described for a second model: its log-odds, its lead over the
    next candidate's, the entropy of the top ten, and its evidence."""
    rows, right = [], []
    for q in qs:
        p = np.clip(model.scores(q.x), 1e-6, 1 - 1e-6)
        odds = np.log(p / (1 - p))
        order = np.argsort(-odds)
        share = np.exp(odds[order[:10]] - odds[order[0]])
        share /= share.sum()
        lead = odds[order[0]] - (odds[order[1]] if len(order) > 1 else -14.0)
        rows.append([odds[order[0]], lead, float(-(share * np.log(share)).sum()),
                     *q.x[order[0]]])
        right.append(bool(q.found[order[0]]))
    return np.array(rows), right


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> Callable[[np.ndarray], np.ndarray]:
    """A ridge logistic regression of y on the standardised columns of x (Newton's method)."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9

    def design(rows: np.ndarray) -> np.ndarray:
        return np.hstack([(rows - mean) / scale, np.ones((len(rows), 1))])

    z, w = design(x), np.zeros(x.shape[1] + 1)
    ridge = l2 * np.eye(len(w))
    ridge[-1, -1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(z @ w, -50, 50)))
        hessian = (z * (p * (1 - p))[:, None]).T @ z + ridge
        w = w - np.linalg.solve(hessian, z.T @ (p - y) + ridge @ w)
    return lambda rows: 1 / (1 + np.exp(-np.clip(design(rows) @ w, -50, 50)))


def halving(q: rf.Question, seed: int) -> int:
    return int(hashlib.sha256(f"{seed}:{q.id}".encode()).hexdigest(), 16) % 2


def procedure(train: Sequence[rf.Question], without: Sequence[str], l2: float = L2) -> rf.Model:
    first = rf.fit([q for q in train if q.set == "first"], without=without)
    return rf.fit(train, l2=l2, prior=first, without=without)


def halvings(train: Sequence[rf.Question], without: Sequence[str]) -> dict[str, dict[str, float]]:
    """Means over HALVINGS random halvings of the tuning questions (both folds of each)."""
    got: dict[str, dict[str, list[float]]] = {s: {"R@5": [], "MRR": [], "P@R.80": []}
                                              for s in rf.SETS}
    for seed in range(HALVINGS):
        folds = [halving(q, seed) for q in train]
        for held in (0, 1):
            model = procedure([q for q, f in zip(train, folds) if f != held], without)
            for s in rf.SETS:
                test = [q for q, f in zip(train, folds) if f == held and q.set == s]
                figures = rf.figures(model, test)
                got[s]["R@5"].append(figures["R@5"])
                got[s]["MRR"].append(figures["MRR"])
                got[s]["P@R.80"].append(precision_at_recall(tops(model, test)))
    return {s: {k: statistics.fmean(v) for k, v in got[s].items()} for s in rf.SETS}


def line(name: str, figures: dict[str, dict[str, float]]) -> None:
    print(f"{name:<34} " + "   ".join(
        f"{s}: R@5 {figures[s]['R@5']:.3f} MRR {figures[s]['MRR']:.3f} "
        f"P@R.80 {figures[s]['P@R.80']:.3f}" for s in rf.SETS))


def held_out(name: str, model: rf.Model, qs: Sequence[rf.Question]) -> None:
    print(f"\n== {name}")
    print(f"{'':<18} {'n':>4} {'R@5':>6} {'MRR':>6} {'prec':>6} {'rec':>6} {'P@R.80':>7}")
    for s in rf.SETS:
        for h in ("tuning", "held-out"):
            sel = [q for q in qs if q.set == s and q.half == h]
            f = rf.figures(model, sel)
            print(f"{s + ' ' + h:<18} {f['n']:>4} {f['R@5']:>6.3f} {f['MRR']:>6.3f} "
                  f"{f['precision']:>6.3f} {f['recall']:>6.3f} "
                  f"{precision_at_recall(tops(model, sel)):>7.3f}")


def bootstrap(model: rf.Model, qs: Sequence[rf.Question], rounds: int = 1000
              ) -> dict[str, float]:
    """Standard errors of MRR and of the top hit's precision and recall over questions."""
    rng = np.random.default_rng(7)
    threshold = model.thresholds["0.90"]
    rr, top = [], []
    for q in qs:
        p = model.scores(q.x)
        order = np.argsort(-p, kind="stable")[:10]
        first = next((rank for rank, i in enumerate(order) if q.found[i]), None)
        rr.append(1 / (first + 1) if first is not None else 0.0)
        top.append((p[order[0]] >= threshold, bool(q.found[order[0]])))
    rr_a, flags, right = np.array(rr), np.array([f for f, _ in top]), np.array([r for _, r in top])
    mrr, precision, recall = [], [], []
    for _ in range(rounds):
        pick = rng.integers(0, len(qs), len(qs))
        mrr.append(rr_a[pick].mean())
        f, r = flags[pick], right[pick]
        precision.append((f & r).sum() / max(f.sum(), 1))
        recall.append((f & r).sum() / max(r.sum(), 1))
    return {"MRR": float(np.std(mrr)), "precision": float(np.std(precision)),
            "recall": float(np.std(recall))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default="", help="the dump's variant (bench/candidates.py)")
    parser.add_argument("--today", default="2026-11-28")
    args = parser.parse_args()
    rows = candidates.load_or_dump({}, args.today, False, args.tag)
    extra = [k for k in rows[0]["evidence"][0] if k not in rf.FEATURES] if rows else []
    shipped_features = rf.FEATURES
    # the extra evidence after the shipped FEATURES: ranking_fit reads the module's names
    rf.FEATURES = tuple(shipped_features) + tuple(extra)
    qs = rf.questions(rows)
    train = [q for q in qs if q.half == "tuning"]

    shipped = rf.shipped()
    pad = len(extra)
    shipped.mean = np.r_[shipped.mean[:len(shipped_features)], np.zeros(pad),
                         shipped.mean[len(shipped_features):]]
    shipped.scale = np.r_[shipped.scale[:len(shipped_features)], np.ones(pad),
                          shipped.scale[len(shipped_features):]]
    shipped.weights = np.r_[shipped.weights[:len(shipped_features)], np.zeros(pad),
                            shipped.weights[len(shipped_features):]]
    held_out("the shipped model (memoryd/data/ranking.json)", shipped, qs)
    for s in rf.SETS:
        e = bootstrap(shipped, [q for q in qs if q.set == s and q.half == "held-out"])
        print(f"  {s} held-out, standard errors (bootstrap over questions): MRR "
              f"{e['MRR']:.3f}, precision {e['precision']:.3f}, recall {e['recall']:.3f}")

    print(f"\n== tuning halves, {HALVINGS} random halvings (means), refitted as shipped "
          f"(l2 {L2:g})")
    line("the shipped evidence", halvings(train, extra))
    for name in extra:
        line(f"+ {name}", halvings(train, [e for e in extra if e != name]))
    if extra:
        line("+ all of them", halvings(train, []))

    print("\n== the ceiling on conversations: a model of the conversational tuning half alone "
          "(two folds)")
    folds = [rf.fold(q) for q in train]
    conv_top: list[tuple[float, bool]] = []
    for held in (0, 1):
        model = rf.fit([q for q, f in zip(train, folds) if f != held and q.set == "conv"],
                       l2=1.0)
        conv_top += tops(model, [q for q, f in zip(train, folds) if f == held and q.set == "conv"])
    right = statistics.fmean(ok for _, ok in conv_top)
    print(f"top hit right {right:.3f}; P@R.80 {precision_at_recall(conv_top):.3f}, "
          f"P@R.60 {precision_at_recall(conv_top, 0.6):.3f}")

    print("\n== a second model deciding the match from the ranking's top hit (its log-odds, its "
          "lead over the next, the spread of the top ten, its evidence; two folds)")
    second: dict[str, list[tuple[float, bool]]] = {s: [] for s in rf.SETS}
    plain: dict[str, list[tuple[float, bool]]] = {s: [] for s in rf.SETS}
    for held in (0, 1):
        fitted = [q for q, f in zip(train, folds) if f != held and len(q.x)]
        model = procedure(fitted, extra)
        x, y = top_hits(model, fitted)
        decide = logistic(x, np.array(y, dtype=np.float64))
        for s in rf.SETS:
            test = [q for q, f in zip(train, folds) if f == held and q.set == s and len(q.x)]
            xt, yt = top_hits(model, test)
            second[s] += list(zip(decide(xt).tolist(), yt))
            plain[s] += tops(model, test)
    for s in rf.SETS:
        print(f"{s}: P@R.80 by the ranking's probability {precision_at_recall(plain[s]):.3f}, "
              f"by the second model {precision_at_recall(second[s]):.3f}")

    for name in ["", *extra]:
        model = procedure(train, [e for e in extra if e != name])
        held_out(f"refitted on both tuning halves{' + ' + name if name else ''} (l2 {L2:g})",
                 model, qs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
