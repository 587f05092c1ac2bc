"""A search's candidates: the entries its evidence is read for and the model ranks, found by
keyword and by vector (:class:`Candidates`; the steps that ask are
:mod:`memoryd.retrieval.search`'s).

- keyword: FTS5 bm25 over the question's informative words (porter stemming, stop words
  removed), OR-ed, the best ``CANDIDATES``. When the words together occur in more than
  ``FULL_OR_ROWS`` entries, bm25 would score that many rows: the rarest words (up to that bound)
  are then ranked by bm25 and each commoner word adds its newest ``COMMON_WORD_ROWS`` entries;
  every candidate still gets its coverage of all the words. No word is dropped.
- vector: the best ``CANDIDATES`` by the mean of the whole entry's cosine and its best part's
  (the RAM indexes of :mod:`memoryd.store.vectors`).
- a time named in the question (:mod:`memoryd.retrieval.dates`): the best keyword (by the rare
  words) and vector candidates written then, too; ``in_window`` is part of the evidence (a
  hint, never a filter). The words that named the time are not words of the question.
"""

from __future__ import annotations

import numpy as np

from memoryd.embedding.derived import Derived
from memoryd.retrieval.filters import Filter
from memoryd.retrieval.plan import SearchPlan, VectorFound
from memoryd.retrieval.terms import fts_expression
from memoryd.store.database import Store
from memoryd.store.vectors import VectorIndex, follow_meta

CANDIDATES = 50
#: Above this many rows matching the question's words, bm25 ranks only the rarest words' rows.
FULL_OR_ROWS = 6_000
COMMON_WORD_ROWS = 20
#: Keyword hits ranked without filters, which the filters then cut down (4 × CANDIDATES).
RANKED_ALONE = 4 * CANDIDATES


class Candidates:
    """The keyword and vector candidates of a search, from the store and the model's vector
    index (``derived``: once built, by :mod:`memoryd.embedding`)."""

    def __init__(self, store: Store, derived: Derived) -> None:
        self.store = store
        self.derived = derived

    @property
    def index(self) -> VectorIndex | None:
        return self.derived.index

    # -- keyword ----------------------------------------------------------------------

    def split_terms(self, terms: list[str]) -> tuple[list[str], list[str]]:
        """The rarest terms whose rows together stay within FULL_OR_ROWS (at least one), and
        the commoner rest, commonest last."""
        counts = sorted((self.store.term_rows(t), t) for t in terms)
        rare: list[str] = []
        total = 0
        for count, term in counts:
            if rare and total + count > FULL_OR_ROWS:
                break
            rare.append(term)
            total += count
        return rare, [term for _, term in counts[len(rare):]]

    def keyword_candidates(self, expression: str, alone: list[tuple[int, float]],
                           common: list[str], where: Filter, pool: int) -> list[tuple[int, float]]:
        """(rowid, bm25) best first, bounded in cost (see the module docstring): the rare
        words' ``expression`` and its ranking without filters, ``alone``."""
        ranked = self._fts(expression, alone, where, pool)
        for term in common:
            seen = {r for r, _ in ranked}
            ranked += [(r, 0.0) for r in self._newest_with(term, where, COMMON_WORD_ROWS)
                       if r not in seen]
        return ranked

    def _fts(self, expression: str, alone: list[tuple[int, float]], where: Filter,
             pool: int) -> list[tuple[int, float]]:
        """The best ``pool`` keyword hits that pass the filters. FTS5 ranks alone first
        (``alone``: joining every match to ``entries`` doubles the cost at 100k entries), then
        the filters apply to that short list; only when they leave too few does the joined
        query run."""
        if where.query.unfiltered:
            return alone[:pool]
        allowed = self._passing([r for r, _ in alone], where)
        kept = [(r, score) for r, score in alone if r in allowed]
        if len(kept) >= pool or len(alone) < RANKED_ALONE:
            return kept[:pool]
        return self.store.fts(expression, where.query, pool)

    def _passing(self, rowids: list[int], where: Filter) -> set[int]:
        """Which of these entries pass the filters: by the RAM index's columns where it holds
        the entry and no tag is asked (0.05 ms for 200 entries, against 0.7-1.1 ms in SQL),
        by the database for the rest."""
        if self.index is None or where.tags:
            return self.store.filter_rowids(rowids, where.query)
        follow_meta(self.store, self.index)
        held, others = self.index.passing(rowids, where.vectors)
        return held | self.store.filter_rowids(others, where.query) if others \
            else held

    def _newest_with(self, term: str, where: Filter, limit: int) -> list[int]:
        return self.store.newest_matching(fts_expression([term], "OR"), where.query, limit)

    # -- vector -----------------------------------------------------------------------

    def vector_half(self, plan: SearchPlan, query: np.ndarray | None) -> VectorFound | None:
        """The vector index's candidates for each of the plan's filters (the index's own
        columns only: tags are SQL, applied by :meth:`vector_candidates` as the search
        finishes). Reads no database, so it may run on a thread of its own beside
        :meth:`~memoryd.retrieval.search.Searcher.keyword_half` (the index locks itself)."""
        index = self.index
        if query is None or index is None:
            return None
        return [
            index.search(query, pool * (4 if where.tags else 1), where.vectors)
            for where, pool in self._vector_filters(plan)]

    def _vector_filters(self, plan: SearchPlan) -> list[tuple[Filter, int]]:
        """The filters vector candidates are found for, each with its number of candidates:
        the question's, and a time it names."""
        filters = [(plan.filter, CANDIDATES)]
        if plan.window is not None:
            filters.append((plan.filter.within(*plan.window.bounds()), CANDIDATES // 2))
        return filters

    def vector_candidates(self, plan: SearchPlan, query: np.ndarray | None,
                          found_by: VectorFound | None = None,
                          ) -> tuple[dict[int, int], dict[int, tuple[float, float]]]:
        """rowid → rank among vector candidates; rowid → (cosine, best part's cosine) of them."""
        if query is None:
            return {}, {}
        if self.index is None:
            return self._vector_fallback(plan, query)
        if found_by is None:
            found_by = self.vector_half(plan, query)
        assert found_by is not None
        mixes: dict[int, tuple[float, float]] = {}
        ranked: list[int] = []
        for (where, pool), found in zip(self._vector_filters(plan), found_by):
            if where.tags:
                allowed = self.store.filter_rowids(list(found), where.query)
                found = {r: pair for r, pair in found.items() if r in allowed}
            mixes.update(found)
            by_mix = sorted(found, key=lambda r: -sum(found[r]))[:pool]
            ranked += [r for r in by_mix if r not in ranked]
        return {rowid: rank for rank, rowid in enumerate(ranked)}, mixes

    def _vector_fallback(self, plan: SearchPlan, query: np.ndarray
                         ) -> tuple[dict[int, int], dict[int, tuple[float, float]]]:
        """Before the RAM index is built: sqlite-vec's exact KNN, whole vectors only."""
        if self.store.model is None:
            return {}, {}
        found = self.store.knn(query, min(4096, CANDIDATES * 20))
        allowed = self.store.filter_rowids([r for r, _ in found], plan.filter.query)
        kept = [(r, c) for r, c in found if r in allowed][:CANDIDATES]
        return {r: rank for rank, (r, _) in enumerate(kept)}, {r: (c, c) for r, c in kept}
