"""The ranking model fitted on both evaluation sets' tuning halves, and judged on their held-out
halves, offline over a dump of every candidate (bench/candidates.py).

    python bench/ranking_fit.py                 # the shipped model and refits, both sets
    python bench/ranking_fit.py --write         # fit as shipped: memoryd/data/ranking.json
    python bench/ranking_fit.py --index embed.max_tokens=128  # another build's candidates

A question's candidates ranked by a model's probability are the hits the daemon would return
(search ranks every candidate by the model), so the figures are those of the client, for the
candidates of the dump. The first set's relevance is an answer item, the conversational set's
the evidence turns a candidate covers (R@k: the share of the wanted items or turns in the top
k; MRR: the first relevant hit). The match figures are the top hit's, at the threshold the fit
sets for the precision asked (on the tuning halves).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from memoryd.retrieval.ranking import FEATURES, expand, load_model  # noqa: E402

#: Pairs of evidence whose products the model weighs too (memoryd.retrieval.ranking): chosen
#: over random halvings of the first set (docs/retrieval.md, "Products of evidence"), among those that
#: keep docs/retrieval.md's and the newcomer report's cases matched in a store of a few entries.
PAIRS = (("kw", "cos"), ("coverage", "cos"), ("kw", "mix_z"), ("coverage", "mix_z"))
PRECISIONS = (0.8, 0.85, 0.9, 0.95)
SETS = ("first", "conv")
#: Recall within a text budget: the hits' texts, best first, up to this many characters (what
#: the prompt hook injects at most): it does not grow with the size of a chunk.
BUDGET = 2000


@dataclass
class Question:
    id: str
    set: str
    type: str
    half: str
    wanted: set[str]
    found: list[set[str]]  # per candidate, the wanted items/turns it holds
    x: np.ndarray  # per candidate, FEATURES in order
    chars: np.ndarray  # per candidate, its text's length

    @property
    def labels(self) -> np.ndarray:
        return np.array([1.0 if f else 0.0 for f in self.found])


def questions(rows: list[dict[str, Any]]) -> list[Question]:
    out = []
    for row in rows:
        if not row["wanted"]:
            continue  # no-answer queries: the match figures only
        wanted = set(row["wanted"])
        if row["set"] == "first":
            found = [{label} & wanted if label else set() for label in row["labels"]]
        else:
            found = [set(turns) & wanted for turns in row["labels"]]
        x = np.array([[e[name] for name in FEATURES] for e in row["evidence"]],
                     dtype=np.float64).reshape(-1, len(FEATURES))
        chars = np.array(row.get("chars") or [0] * len(found), dtype=np.float64)
        out.append(Question(row["id"], row["set"], row["type"], row["half"], wanted, found, x,
                            chars))
    return out


# -- a model ----------------------------------------------------------------------------------


@dataclass
class Model:
    pairs: tuple[tuple[int, int], ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    thresholds: dict[str, float]

    def scores(self, x: np.ndarray) -> np.ndarray:
        z = ((expand(x, self.pairs) - self.mean) / self.scale) @ self.weights + self.bias
        return 1 / (1 + np.exp(-np.clip(z, -50, 50)))


def shipped() -> Model:
    m = load_model()
    return Model(m.pairs, m.mean, m.scale, m.weights, m.bias,
                 {f"{p:.2f}": t for p, t in m.thresholds})


def fit(train: Sequence[Question], pairs: Sequence[tuple[str, str]] = PAIRS, l2: float = 3.0,
        weigh: Callable[[Question], float] | None = None, prior: Model | None = None,
        without: Sequence[str] = ()) -> Model:
    """Logistic regression (Newton's method, halving a step that does not lower the loss),
    each question's candidates weighed by ``weigh`` (default: each set counts as much as the
    other, whatever its size). The ridge penalty ``l2`` pulls the weights towards ``prior``'s
    (its standardisation kept) or, without one, towards 0. ``without``: evidence left out
    (its columns and the products using them weigh 0)."""
    columns = tuple((FEATURES.index(a), FEATURES.index(b)) for a, b in pairs)
    if weigh is None:
        sizes = {s: sum(1 for q in train if q.set == s) for s in SETS}
        weigh = lambda q: 1.0 / max(sizes[q.set], 1)  # noqa: E731
    features = expand(np.vstack([q.x for q in train]), columns)
    labels = np.concatenate([q.labels for q in train])
    sample = np.concatenate([np.full(len(q.x), weigh(q)) for q in train])
    sample *= len(sample) / sample.sum()
    if prior is not None:
        assert prior.pairs == columns, "the prior weighs other products"
        mean, scale = prior.mean.copy(), prior.scale.copy()
        start = np.r_[prior.weights, prior.bias]
    else:
        mean = features.mean(axis=0)
        scale = features.std(axis=0) + 1e-9
        start = np.zeros(features.shape[1] + 1)
    names = list(FEATURES) + [f"{FEATURES[a]}*{FEATURES[b]}" for a, b in columns]
    unused = np.array([any(part in without for part in name.split("*")) for name in names])
    mean, scale = np.where(unused, 0.0, mean), np.where(unused, 1.0, scale)
    start[:-1][unused] = 0.0
    x = np.hstack([np.where(unused, 0.0, (features - mean) / scale),
                   np.ones((len(features), 1))])
    ridge = l2 * np.eye(len(start))
    ridge[-1, -1] = 1e-6

    def loss(w: np.ndarray) -> float:
        z = np.clip(x @ w, -50, 50)
        nll = sample * (np.logaddexp(0, z) - labels * z)
        return float(nll.sum() + 0.5 * (w - start) @ ridge @ (w - start))

    w = start.copy()
    current = loss(w)
    for _ in range(200):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -50, 50)))
        gradient = x.T @ (sample * (p - labels)) + ridge @ (w - start)
        hessian = (x * (sample * p * (1 - p))[:, None]).T @ x + ridge
        step = np.linalg.solve(hessian, gradient)
        for _ in range(30):
            trial = w - step
            value = loss(trial)
            if value <= current:
                break
            step = step / 2
        w, improved, current = trial, current - value, value
        if np.abs(step).max() < 1e-8 or improved < 1e-10:
            break
    model = Model(columns, mean, scale, w[:-1], float(w[-1]), {})
    model.thresholds = thresholds(model, train)
    return model


def thresholds(model: Model, train: Sequence[Question]) -> dict[str, float]:
    """The top hit's probability that gives each precision on these questions (a higher
    precision never has a lower threshold)."""
    tops = []
    for q in train:
        if len(q.x):
            p = model.scores(q.x)
            best = int(np.argmax(p))
            tops.append((float(p[best]), bool(q.found[best])))
    tops.sort(reverse=True)
    out, previous = {}, 0.0
    for target in PRECISIONS:
        right, chosen = 0, 1.0
        for number, (p, ok) in enumerate(tops, 1):
            right += ok
            if right / number >= target:
                chosen = p
        out[f"{target:.2f}"] = previous = max(round(chosen, 4), previous)
    return out


# -- figures ----------------------------------------------------------------------------------


def figures(model: Model, qs: Sequence[Question], precision: str = "0.90") -> dict[str, float]:
    if not qs:
        return {}
    r1, r5, r10, mrr, budget = [], [], [], [], []
    flagged = right = both = 0
    threshold = model.thresholds.get(precision, 1.0)
    for q in qs:
        if not len(q.x):
            r1.append(0.0), r5.append(0.0), r10.append(0.0), mrr.append(0.0), budget.append(0.0)
            continue
        p = model.scores(q.x)
        order = np.argsort(-p, kind="stable")[:10]
        for k, out in ((1, r1), (5, r5), (10, r10)):
            got = set().union(*(q.found[i] for i in order[:k]))
            out.append(len(got) / len(q.wanted))
        spent, got = 0.0, set()
        for rank, i in enumerate(np.argsort(-p, kind="stable")):
            spent += q.chars[i]
            if spent > BUDGET and rank:  # the first hit counts whatever its length
                break
            got |= q.found[i]
        budget.append(len(got) / len(q.wanted))
        first = next((rank for rank, i in enumerate(order) if q.found[i]), None)
        mrr.append(1 / (first + 1) if first is not None else 0.0)
        top = int(order[0])
        flag, ok = p[top] >= threshold, bool(q.found[top])
        flagged += flag
        right += ok
        both += flag and ok
    return {"n": len(qs), "R@1": statistics.fmean(r1), "R@5": statistics.fmean(r5),
            "R@10": statistics.fmean(r10), "MRR": statistics.fmean(mrr),
            "R@2k": statistics.fmean(budget),
            "precision": both / flagged if flagged else 0.0,
            "recall": both / right if right else 0.0}


#: The pull towards the first set's model tried, and the one chosen by cross-validation on the
#: tuning halves (:func:`choose_l2`).
L2_GRID = (10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0)
#: Cross-validated scores this close count as a tie (two folds of ~265 questions each).
TIED = 0.002


def fold(q: Question) -> int:
    """One of two folds of the tuning questions, fixed by a hash of the question's id."""
    return int(hashlib.sha256(q.id.encode()).hexdigest(), 16) % 2


def procedure(train: Sequence[Question], l2: float, without: Sequence[str] = ()) -> Model:
    """The shipped fit: a model of the first set's tuning half alone (the evidence of coding
    sessions, notes and facts), then both sets' tuning halves pulled towards it by ``l2``, so
    that what the conversations teach is kept where it does not cost the first set."""
    first = fit([q for q in train if q.set == "first"], without=without)
    return fit(train, l2=l2, prior=first, without=without)


def choose_l2(train: Sequence[Question]) -> tuple[float, dict[float, float]]:
    """The pull that ranks best on held-back tuning questions: two folds of the tuning halves
    (each fitted on one, scored on the other), the mean of both sets' MRR and R@5."""
    scores: dict[float, float] = {}
    folds = [fold(q) for q in train]
    for l2 in L2_GRID:
        values = []
        for held in (0, 1):
            model = procedure([q for q, f in zip(train, folds) if f != held], l2)
            for s in SETS:
                f = figures(model, [q for q, k in zip(train, folds) if k == held and q.set == s])
                values += [f["MRR"], f["R@5"]]
        scores[l2] = statistics.fmean(values)
    best = max(scores.values())
    # the strongest pull within TIED of the best: as good on held-back questions, and the
    # nearest to the first set's model (which keeps small stores' matches, README)
    return max(l2 for l2, score in scores.items() if score >= best - TIED), scores


def write(path: Path, model: Model, fallbacks: dict[str, Model], provenance: dict[str, Any]
          ) -> None:
    """ranking.json: the model, its fallbacks for missing evidence, where it came from; the
    typical vector candidates' mix (``pool_mean``/``pool_spread``) kept from the file."""
    old = json.loads(path.read_text())

    def part(m: Model) -> dict[str, Any]:
        return {"mean": m.mean.round(6).tolist(), "scale": m.scale.round(6).tolist(),
                "weights": m.weights.round(6).tolist(), "bias": round(m.bias, 6),
                "thresholds": m.thresholds}

    data = {"features": list(FEATURES), "pairs": [list(p) for p in PAIRS],
            "pool_mean": old["pool_mean"], "pool_spread": old["pool_spread"], **part(model),
            "fitted": provenance,
            "fallbacks": {name: {"without": list(FALLBACKS[name]), **part(m)}
                          for name, m in fallbacks.items()}}
    path.write_text(json.dumps(data, indent=1) + "\n")


#: The models for evidence a candidate may lack (memoryd.retrieval.ranking), by what they go
#: without.
FALLBACKS = {"no_align": ("align", "worst", "ctx_align"),
             "no_vector": ("cos", "part", "mix", "mix_z", "margin", "vec_rr", "align", "worst",
                           "ctx_align")}


def table(name: str, model: Model, qs: Sequence[Question], by_type: bool = False) -> None:
    print(f"\n== {name}")
    print(f"{'':<26} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'R@2k':>6} "
          f"{'prec':>6} {'rec':>6}")
    for s in SETS:
        for h in ("tuning", "held-out"):
            rows = [q for q in qs if q.set == s and q.half == h]
            f = figures(model, rows)
            if f:
                print(f"{s + ' ' + h:<26} {f['n']:>4} {f['R@1']:>6.3f} {f['R@5']:>6.3f} "
                      f"{f['R@10']:>6.3f} {f['MRR']:>6.3f} {f['R@2k']:>6.3f} {f['precision']:>6.3f} "
                      f"{f['recall']:>6.3f}")
            if by_type and h == "held-out":
                for t in sorted({q.type for q in rows}):
                    f = figures(model, [q for q in rows if q.type == t])
                    print(f"  {t:<24} {f['n']:>4} {f['R@1']:>6.3f} {f['R@5']:>6.3f} "
                          f"{f['R@10']:>6.3f} {f['MRR']:>6.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--today", default="2026-11-28")
    parser.add_argument("--types", action="store_true", help="held-out figures per type")
    parser.add_argument("--tag", default="", help="the dump's variant (bench/candidates.py)")
    parser.add_argument("--write", action="store_true",
                        help="fit as shipped and write memoryd/data/ranking.json")
    args = parser.parse_args()
    import candidates

    rows = candidates.load_or_dump(candidates.first.parse_settings(args.index), args.today,
                                   False, args.tag)
    qs = questions(rows)
    train = [q for q in qs if q.half == "tuning"]
    table("shipped model", shipped(), qs, args.types)
    table("refit on the first set's tuning half", fit([q for q in train if q.set == "first"]),
          qs, args.types)
    table("refit on both tuning halves (each set weighed alike)", fit(train), qs, args.types)
    l2, scores = choose_l2(train)
    print("\npull towards the first set's model, cross-validated on the tuning halves: " +
          ", ".join(f"{k:g}: {v:.4f}" for k, v in scores.items()) + f"; chosen {l2:g}")
    model = procedure(train, l2)
    table(f"as shipped: the first set's model, both tuning halves pulled to it (l2 {l2:g})",
          model, qs, args.types)
    if args.write:
        fallbacks = {name: procedure(train, l2, without) for name, without in FALLBACKS.items()}
        for name, m in fallbacks.items():
            table(f"fallback {name} (without {', '.join(FALLBACKS[name])})", m, qs)
        sizes = {s: sum(1 for q in train if q.set == s) for s in SETS}
        path = ROOT / "memoryd" / "data" / "ranking.json"
        write(path, model, fallbacks, {
            "by": "python bench/ranking_fit.py --write", "on": time.strftime("%Y-%m-%d"),
            "corpora": sorted({r["corpus"] for r in rows if r.get("corpus")}), "l2": l2,
            "tuning_questions": sizes,
            "candidates": sum(len(q.x) for q in train)})
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
