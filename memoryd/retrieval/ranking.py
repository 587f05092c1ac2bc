"""How a candidate is scored: the evidence search has about it, weighed by a fitted model.

Every candidate of a search (the best keyword and vector hits, and those inside a date named in
the question) is described by the evidence below; a logistic model turns it into the probability
that the entry is relevant to the question. Hits are ranked by it, and a hit is a **match** when
it reaches the threshold that gives the configured precision (``search.match_precision``).

The model (``memoryd/data/ranking.json``) is fitted by ``python bench/ranking_fit.py --write``
on the tuning halves of both evaluation sets (bench/eval's coding sessions, notes and facts;
bench/conv's long chats), pulled towards a model of the first set alone, and judged on their
held-out halves (docs/retrieval.md, "Retrieval choices"). Evidence:

    cos        cosine of the question and the entry's vector
    part       the best cosine of the entry's parts (its sentences); ``cos`` when it has none
    mix        (cos + part) / 2
    mix_z      ``mix`` against this search's vector candidates: (mix - their mean) / their spread;
               with few candidates (a new store) the typical candidates' mean and spread of the
               training searches count as ``PRIOR_CANDIDATES`` more
    margin     ``mix`` minus the best other candidate's: the top hit's lead, or how far below it
    kw         bm25 of the keyword match, divided by the search's best (0: no keyword match)
    kw_rr      1 / (1 + rank among keyword matches) (0: none)
    vec_rr     1 / (1 + rank among vector candidates) (0: none)
    coverage   share of the question's informative words in the entry, each weighed by its rarity
    in_window  1 when the question names a time and the entry was written then
    align      a soft ``coverage``: each informative word of the question by its nearest word
               of the entry (cosine of the two words embedded alone, memoryd.store.lexicon; 1
               for the word itself), weighed the same way: "skinny" finds "thin", "decal"
               finds "sticker"
    worst      the least covered informative word's nearest-word cosine (1 when the entry holds
               every word): "how many keycap packs sold" against an entry that never says
               "sold"
    lacks      1 when the question asks for a kind of detail (a number, a time of day, a
               weekday, a version, a year) and the entry holds none
               (memoryd.retrieval.asked_details):
               "how many keycap packs sold" against the keycap pack's description
    ctx_coverage  ``coverage`` of the passage a transcript chunk is shown as: the chunk with the
               chunks just before and after it in its session (memoryd.retrieval.passage);
               another entry's own ``coverage``: "where does Denise take her improv class"
               against "me. Thursday nights at the Lantern", whose previous turn says "improv"
    ctx_align  ``align`` of that passage

Besides each evidence, the model weighs the products of the pairs it lists (``pairs``): a
keyword match counts for more when the vectors agree, a high cosine for less when the question's
words are missing (docs/retrieval.md, "Products of evidence": the pairs are chosen so that a
store of a few entries is still judged sensibly).

Missing evidence. Some evidence comes from derived data that may not be there yet when a
question is asked: ``align`` and ``worst`` need the entry's words in the lexicon (filled in the
background after a reindex, a rebuild or an upgrade), every vector feature needs the entry's
vector (the backlog; none at all without a model). Scoring such a candidate as if the evidence
were 0 made a stored paraphrase 0.23 instead of 0.94, and no match. Such a candidate is scored
instead by a model fitted on the same training candidates without that evidence
(``fallbacks`` of ranking.json: ``no_align``, ``no_vector``), with its own thresholds: its
probability is as calibrated as the full model's, only less sure. The search says so
(``degraded``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

FEATURES = ("cos", "part", "mix", "mix_z", "margin", "kw", "kw_rr", "vec_rr", "coverage",
            "in_window", "align", "worst", "lacks", "ctx_coverage", "ctx_align")
PRIOR_CANDIDATES = 10
#: The evidence a candidate may lack, each with the fallback model that does without it, the
#: weakest last (a candidate without a vector lacks the alignment too).
NO_ALIGN, NO_VECTOR = "no_align", "no_vector"


def expand(evidence: np.ndarray, pairs: tuple[tuple[int, int], ...]) -> np.ndarray:
    """The evidence (columns in FEATURES order) followed by the products of ``pairs``."""
    if not pairs:
        return evidence
    first, second = (np.array(side, dtype=np.intp) for side in zip(*pairs))
    return np.hstack([evidence, evidence[:, first] * evidence[:, second]])


@dataclass(frozen=True)
class Model:
    pairs: tuple[tuple[int, int], ...]  # columns of FEATURES whose products are weighed too
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    thresholds: tuple[tuple[float, float], ...]  # (precision, probability threshold), ascending
    pool_mean: float  # the vector candidates' mean mix and spread, typical of the training searches
    pool_spread: float
    #: models fitted without evidence that may be missing (NO_ALIGN, NO_VECTOR); without
    #: them (an older ranking.json) such a candidate is scored by this model
    fallbacks: Mapping[str, Model] = field(default_factory=dict)

    def background(self, pool: np.ndarray) -> tuple[float, float]:
        """Mean and spread of the candidates' mix, the typical ones counting as
        PRIOR_CANDIDATES more (so that a store of a few entries is judged sensibly)."""
        n, k = len(pool), PRIOR_CANDIDATES
        mean = (pool.sum() + k * self.pool_mean) / (n + k)
        prior = self.pool_spread ** 2 + self.pool_mean ** 2
        square = (np.square(pool).sum() + k * prior) / (n + k)
        return float(mean), float(np.sqrt(max(square - mean ** 2, 1e-12)))

    def probabilities(self, evidence: np.ndarray) -> np.ndarray:
        """P(relevant) for each row of evidence (columns in FEATURES order)."""
        z = ((expand(evidence, self.pairs) - self.mean) / self.scale) @ self.weights + self.bias
        probabilities: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))
        return probabilities

    def decide(self, evidence: np.ndarray, lacking: Sequence[str | None], precision: float
               ) -> tuple[np.ndarray, np.ndarray]:
        """P(relevant) and the match threshold of each candidate: scored by the model fitted
        without the evidence it lacks (``lacking``: None, NO_ALIGN or NO_VECTOR)."""
        probability = self.probabilities(evidence)
        threshold = np.full(len(evidence), self.threshold(precision))
        for name, model in self.fallbacks.items():
            rows = np.array([kind == name for kind in lacking], dtype=bool)
            if rows.any():
                probability[rows] = model.probabilities(evidence[rows])
                threshold[rows] = model.threshold(precision)
        return probability, threshold

    def threshold(self, precision: float) -> float:
        """The probability a hit needs to be a match at this precision (interpolated)."""
        points = self.thresholds
        if precision <= points[0][0]:
            return points[0][1]
        for (p0, t0), (p1, t1) in zip(points, points[1:]):
            if precision <= p1:
                return t0 + (t1 - t0) * (precision - p0) / (p1 - p0)
        return points[-1][1]


def load_model(data: dict | None = None) -> Model:  # type: ignore[type-arg]
    if data is None:
        text = resources.files("memoryd").joinpath("data/ranking.json").read_text("utf-8")
        data = json.loads(text)
    names = tuple(data["features"])
    if names != FEATURES[:len(names)]:
        raise ValueError(f"ranking.json has features {names}, this memoryd computes {FEATURES}")
    if len(names) < len(FEATURES):  # evidence the model was fitted without: weighed 0
        data = _padded(data, len(FEATURES) - len(names))
    unknown = {name for pair in data.get("pairs", ()) for name in pair} - set(FEATURES)
    if unknown:
        raise ValueError(f"ranking.json pairs name {sorted(unknown)}, not among {FEATURES}")
    pairs = tuple((FEATURES.index(a), FEATURES.index(b)) for a, b in data.get("pairs", ()))

    def model(part: dict, fallbacks: Mapping[str, Model]) -> Model:  # type: ignore[type-arg]
        thresholds = tuple(sorted((float(p), float(t)) for p, t in part["thresholds"].items()))
        return Model(pairs, np.array(part["mean"], dtype=np.float64),
                     np.array(part["scale"], dtype=np.float64),
                     np.array(part["weights"], dtype=np.float64), float(part["bias"]),
                     thresholds, float(data["pool_mean"]), float(data["pool_spread"]), fallbacks)

    fallbacks = {name: model(part, {}) for name, part in (data.get("fallbacks") or {}).items()
                 if name in (NO_ALIGN, NO_VECTOR)}
    return model(data, fallbacks)


def _padded(data: dict, more: int) -> dict:  # type: ignore[type-arg]
    """A model's data with ``more`` features after its own (before its products), each with
    mean 0, scale 1 and weight 0."""
    features = len(data["features"])

    def pad(part: dict) -> dict:  # type: ignore[type-arg]
        out = dict(part)
        for key, fill in (("mean", 0.0), ("scale", 1.0), ("weights", 0.0)):
            values = list(part[key])
            out[key] = values[:features] + [fill] * more + values[features:]
        return out

    padded = pad(data)
    padded["features"] = list(FEATURES)
    padded["fallbacks"] = {name: pad(part) for name, part in (data.get("fallbacks") or {}).items()}
    return padded


def idf(rows: int, total: int) -> float:
    """bm25's inverse document frequency of a word in ``rows`` of ``total`` entries."""
    return math.log((total - rows + 0.5) / (rows + 0.5) + 1.0)

#: What a hit scored without some evidence says it lacked (``scored_without``).
LACKING = {NO_ALIGN: ["align", "worst"], NO_VECTOR: ["vector"]}


def degraded_reason(lacking: Sequence[str | None]) -> str:
    """Why a search's hits are less sure than usual: derived data not there yet."""
    parts = []
    for kind, what in ((NO_VECTOR, "without a vector (the vector backlog is being embedded)"),
                       (NO_ALIGN, "without word alignment (the word index is being filled)")):
        n = sum(1 for k in lacking if k == kind)
        if n:
            parts.append(f"{n} hit{'' if n == 1 else 's'} scored {what}")
    return "; ".join(parts) + ": by a model fitted without that evidence, less sure (memory status)"
