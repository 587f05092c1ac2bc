"""The RAM vector index agrees with exact search and applies filters."""

from __future__ import annotations

import numpy as np

from memoryd.embed import Embedder
from memoryd.store.vectors import VectorFilter, VectorIndex

SUBJECTS = ["ruff", "pytest", "postgres", "deploys", "stickers", "the cat", "commit messages",
            "docker images", "the release train", "code review", "invoices", "the API gateway"]
VERBS = ["must never", "should always", "tends to", "is not allowed to", "was seen to"]
OBJECTS = ["break on Mondays", "use tabs", "run before merging", "be signed", "need a changelog",
           "fail under load", "log secrets", "retry three times"]


def corpus() -> list[str]:
    return [f"{s} {v} {o}" for s in SUBJECTS for v in VERBS for o in OBJECTS]


def test_index_top_hits_match_exact_search(embedder: Embedder) -> None:
    texts = corpus()
    vectors = embedder.embed(texts)
    index = VectorIndex(384, rerank=64)  # small rerank: the coarse bit scan really filters
    rowids = list(range(1, len(texts) + 1))
    index.add(rowids, vectors, [("a", "c", None, "note", "active", 0.0)] * len(texts))
    queries = embedder.embed(["which tools break at the start of the week",
                              "signing requirements for releases", "leaking credentials in logs"])
    recall = []
    for q in queries:
        exact = set((np.argsort(-(vectors @ q))[:10] + 1).tolist())
        found = index.search(q, 10, VectorFilter())
        recall.append(len(exact & {r for r, _ in found}) / 10)
        for rowid, score in found:  # int8 scores are close to the exact cosine
            assert abs(score - float(vectors[rowid - 1] @ q)) < 0.02
    assert np.mean(recall) >= 0.8


def test_filters_and_status(embedder: Embedder) -> None:
    vectors = embedder.embed(["alpha note", "beta note", "gamma note", "delta note"])
    index = VectorIndex(384)
    index.add([1, 2, 3, 4], vectors, [
        ("a", "x", None, "note", "active", 100.0),
        ("b", "x", "/p", "fact", "active", 200.0),
        ("a", "y", "/p", "lesson", "active", 300.0),
        ("a", "x", None, "note", "forgotten", 400.0),
    ])
    q = vectors[0]
    assert {r for r, _ in index.search(q, 10, VectorFilter(agents=["a"]))} == {1, 3}
    assert {r for r, _ in index.search(q, 10, VectorFilter(categories=["x"]))} == {1, 2}
    assert {r for r, _ in index.search(q, 10, VectorFilter(projects=["/p"]))} == {2, 3}
    assert {r for r, _ in index.search(q, 10, VectorFilter(kinds=["fact", "lesson"]))} == {2, 3}
    assert {r for r, _ in index.search(q, 10, VectorFilter(since=150, until=250))} == {2}
    assert {r for r, _ in index.search(q, 10, VectorFilter(statuses=("forgotten",)))} == {4}
    assert index.search(q, 10, VectorFilter(agents=["nobody"])) == []
    index.set_status(1, "superseded")
    assert 1 not in {r for r, _ in index.search(q, 10, VectorFilter())}


def test_grows_past_its_capacity(embedder: Embedder) -> None:
    texts = corpus()
    vectors = embedder.embed(texts)
    index = VectorIndex(384, capacity=4)
    for i, v in enumerate(vectors):
        index.add([i + 1], v[None, :], [("a", "c", None, "note", "active", 0.0)])
    assert len(index) == len(texts)
    best = index.search(vectors[17], 1, VectorFilter())
    assert best[0][0] == 18
