"""Search: keyword and vector candidates, scored together by the ranking model, with match flags.

A search runs in four steps, so that the daemon can run two of them at once:

- ``plan``: the question's words, its filters, a time it names (database thread);
- ``keyword_half``: the keyword candidates, and what can be read ahead of the vector: their
  entries, words and the lexicon rows of those, the transcript chunks around them (their
  passages), the question's word weights (database thread);
- ``vector_half``: the vector index's candidates (no database: :mod:`memoryd.retrieval.service`
  runs it on a thread of its own, beside the keyword half, once the question is embedded), handed
  to ``finish_search``;
- ``finish_search``: every candidate's evidence (:mod:`memoryd.retrieval.ranking`), the model's
  ranking, the hits (database thread).

``search`` runs them one after the other (the memory block does, on the database thread). A
search takes a :class:`~memoryd.retrieval.records.SearchRequest` and gives a
:class:`~memoryd.retrieval.records.SearchResult`: hits, with their scores and evidence.

Candidates:

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

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date

import numpy as np

from memoryd.config import Config
from memoryd.embedding.derived import Derived
from memoryd.retrieval import ranking
from memoryd.retrieval.asked_details import asked_details, lacks
from memoryd.retrieval.dates import Window, window, without_time
from memoryd.retrieval.explain import explanations
from memoryd.retrieval.filters import Filter, request_filter
from memoryd.retrieval.known import (
    Known,
    distinct_members,
    distinct_ranks,
    holds,
    says,
    taken_from,
)
from memoryd.retrieval.passage import turns_around
from memoryd.retrieval.ranking import FEATURES, NO_ALIGN, NO_VECTOR, Model, idf, load_model
from memoryd.retrieval.records import Background, Hit, Score, SearchRequest, SearchResult
from memoryd.retrieval.terms import STOPWORDS, fts_expression, query_terms
from memoryd.retrieval.versions import (
    NEAR_TOP,
    RESTATING,
    latest_first,
    newest_versions,
    version_groups,
    version_links,
)
from memoryd.store.database import Store
from memoryd.store.lexicon import Lexicon, is_word, unknown_words
from memoryd.store.records import IndexedText, StoredEntry
from memoryd.store.vectors import VectorIndex, follow_meta
from memoryd.text import (
    has_segmented,
    is_segmented,
    is_symbol,
    normalise_text,
    segmented_run,
)

CANDIDATES = 50
#: Hits shown with the turns around them (memoryd.retrieval.passage), and read beyond the
#: limit in place of hits whose turns an earlier passage shows.
CONTEXT_HITS = 20
#: Rows of the hits read beyond those wanted, for the hits left out (a whole row is read only
#: for a hit: reading all of CONTEXT_HITS more was ~4 % of a search's finishing).
READ_SPARE = 2
#: Entries whose words (and their lexicon rows) are kept between searches: ~1.1 KB an entry
#: measured over the 73k bench store (its words' tuple, rows and the rest), ~23 MB in all.
ENTRIES_KNOWN = 20_000
#: Above this many rows matching the question's words, bm25 ranks only the rarest words' rows.
FULL_OR_ROWS = 6_000
COMMON_WORD_ROWS = 20
#: Keyword hits ranked without filters, which the filters then cut down (4 × CANDIDATES).
RANKED_ALONE = 4 * CANDIDATES

@dataclass
class SearchPlan:
    query: str
    terms: list[str]
    limit: int
    only_matches: bool
    threshold: float
    min_score: float | None
    filter: Filter
    window: Window | None
    #: each hit says which of the question's words it holds and its closest sentence
    #: (memoryd.retrieval.explain): the viewer's reasons, only when asked
    explain: bool = False
    #: its words are symbols alone (✅), which the embedding model does not read
    #: (:meth:`Searcher.finish_search`)
    symbols_only: bool = False
    keyword: dict[int, tuple[int, float]] = field(default_factory=dict)  # rowid → (rank, bm25)
    window_keyword: list[int] = field(default_factory=list)
    #: the vector candidates' mix
    background: Background | None = None
    # read while the question is embedded: the keyword candidates' texts and words, the
    # query words' weights (the vector half then reads only what the vectors add)
    texts: dict[int, IndexedText] = field(default_factory=dict)
    known: dict[int, Known] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)  # question words not in the lexicon
    # the chunks just before and after each candidate in its session (a passage's,
    # Searcher._passages), the keyword candidates' read ahead too: rowid → (before, after) of
    # the rowids asked about (``around_of``), and those chunks' texts
    around: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    around_of: set[int] = field(default_factory=set)
    chunks: dict[int, IndexedText] = field(default_factory=dict)
    #: the best candidates' versions of one statement (memoryd.retrieval.versions): rowid →
    #: its own versions among them (not a version's version)
    versions: dict[int, set[int]] = field(default_factory=dict)


#: The vector index's candidates for each of a plan's filters: rowid → (cosine, best part's).
VectorFound = list[dict[int, tuple[float, float]]]


class Searcher:
    """Search over the store and the model's derived data, in the four steps of the module
    docstring. The daemon's parts hold it as ``searcher`` beside ``search``, the
    :class:`~memoryd.retrieval.service.SearchService` that runs its halves at once."""

    def __init__(self, config: Config, store: Store, derived: Derived | None = None,
                 model: Model | None = None) -> None:
        """``derived``: the model's vector index and lexicon, once built (by
        :mod:`memoryd.embedding`)."""
        self.config = config
        self.store = store
        self.derived = derived or Derived()
        self.model = model or load_model()
        self._stop_stems: set[str] | None = None
        #: the stop words and the words that say a statement is said again (versions)
        self._restating: set[str] | None = None
        #: (rowid, hash of its text) → what search knows of the entry: an entry's text can
        #: change, and SQLite gives a deleted last rowid to the next entry
        self._known: dict[tuple[int, int], Known] = {}

    @property
    def index(self) -> VectorIndex | None:
        return self.derived.index

    @property
    def lexicon(self) -> Lexicon | None:
        return self.derived.lexicon

    def search(self, request: SearchRequest, query_vector: np.ndarray | None,
               words: dict[str, np.ndarray] | None = None) -> SearchResult:
        """All of it on one thread (the daemon runs the halves apart, see the module
        docstring)."""
        return self.finish_search(self.keyword_half(self.plan(request)), query_vector, words)

    # -- the keyword half -------------------------------------------------------------

    def plan(self, request: SearchRequest) -> SearchPlan:
        """The question's words, its filters and the time it names; the vector index's filter
        columns brought up to date (database thread)."""
        query, min_score, now = request.query, request.min_score, request.now
        named = window(query, date.fromtimestamp(now) if now else None)
        plan = SearchPlan(
            query=query, terms=query_terms(without_time(query, named) if named else query)
            or query_terms(query), limit=request.limit,
            only_matches=request.match if request.match is not None
            else min_score is not None,
            threshold=min_score if min_score is not None else
            self.model.threshold(self.config.search.match_precision), min_score=min_score,
            filter=request_filter(self.store, request.filter), window=named,
            explain=request.explain)
        plan.symbols_only = bool(plan.terms) and all(
            len(term) == 1 and is_symbol(term) for term in plan.terms)
        follow_meta(self.store, self.index)  # the filter columns of entries changed meanwhile
        return plan

    def keyword_half(self, plan: SearchPlan) -> SearchPlan:
        """The keyword candidates, and what can be read ahead of the vector (see the module
        docstring); database thread."""
        if plan.terms:
            rare, common = self._split_terms(plan.terms)
            expression = fts_expression(rare, "OR")
            alone = self.store.fts(expression, None, RANKED_ALONE)  # read once, filtered twice
            ranked = self._keyword_candidates(expression, alone, common, plan.filter, CANDIDATES)
            plan.keyword = {rowid: (rank, -bm25) for rank, (rowid, bm25) in enumerate(ranked)}
            if plan.window is not None:  # the rare words only: a common word's newest rows
                # written then were found by reading all its rows (~10 ms a word at 70k)
                inside = plan.filter.within(*plan.window.bounds())
                plan.window_keyword = [r for r, _ in self._keyword_candidates(
                    expression, alone, [], inside, CANDIDATES // 2)]
        plan.texts = self.store.texts_by_rowids(
            list(dict.fromkeys([*plan.keyword, *plan.window_keyword])))
        plan.known = {rowid: self._entry(rowid, text.text, text.heading)
                      for rowid, text in plan.texts.items()}
        for rowid, known in plan.known.items():
            says(known, plan.texts[rowid].text)
        self._read_around(plan, list(plan.texts))
        if self.lexicon is not None:  # for the alignment, while the question is embedded
            for known in [*plan.known.values(),
                          *(self._entry(r, text.text, text.heading)
                            for r, text in plan.chunks.items())]:
                self._lexicon_rows(known, self.lexicon)
        plan.weights = self._term_weights(plan.terms)
        plan.unknown = self.unknown_words(" ".join(plan.terms))
        return plan

    def _split_terms(self, terms: list[str]) -> tuple[list[str], list[str]]:
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

    def _keyword_candidates(self, expression: str, alone: list[tuple[int, float]],
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

    # -- the vector half and the ranking ----------------------------------------------

    def finish_search(self, plan: SearchPlan, query_vector: np.ndarray | None,
                      words: dict[str, np.ndarray] | None = None,
                      found: VectorFound | None = None) -> SearchResult:
        """Vector candidates (``found`` by :meth:`vector_half` beside the keyword half, or
        here), the evidence of every candidate, the model's ranking, the hits. A question of
        symbols alone (✅) is scored by its words alone, as without a model: the model reads
        each symbol as its one unknown token, and its vector was as close to any text of
        other unknown tokens (a Korean note) as to the note that holds the symbol."""
        degraded = query_vector is None
        if plan.symbols_only:
            query_vector, words, found = None, None, None
        vector_rank, mixes = self._vector_candidates(plan, query_vector, found)
        candidates = list(dict.fromkeys([*vector_rank, *plan.keyword, *plan.window_keyword]))
        texts = {**plan.texts, **self.store.texts_by_rowids(
            [r for r in candidates if r not in plan.texts])}
        candidates = [r for r in candidates if r in texts]
        if not candidates:
            return self._result(plan, [], degraded)
        evidence, lacking, holds, group_of = self._evidence(
            plan, candidates, texts, vector_rank, mixes, query_vector, words or {})
        probability, thresholds = self.model.decide(
            evidence, lacking, self.config.search.match_precision)
        if plan.min_score is not None:
            thresholds[:] = plan.min_score  # the caller's own
        created = np.array([texts[rowid].created for rowid in candidates], dtype=np.float64)
        ranked = [int(i) for i in latest_first(probability, created, holds, group_of)
                  if not plan.only_matches or probability[i] >= thresholds[i]]
        # the newest of each one's versions, ranked before it or after (a question naming an
        # older one's detail ranks that first): what a hit says is newer
        newer = newest_versions(plan.versions, {r: texts[r].created for r in plan.versions},
                                {r: normalise_text(texts[r].text) for r in plan.versions})
        # read ahead: a hit whose turns an earlier hit's passage shows already is left out
        ahead = ranked[:plan.limit + CONTEXT_HITS]
        # the hits' rows, read as the hits need them; and the newer versions' (their ids)
        entries = self.store.entries_by_rowids(sorted(set(newer.values())))
        read = 0
        hits: list[Hit] = []
        order: list[int] = []
        shown: set[str] = set()
        for number, i in enumerate(ahead):
            if len(hits) == plan.limit:
                break
            if number == read:  # as many as the hits still wanted, and a few more
                more = ahead[read:read + plan.limit - len(hits) + READ_SPARE]
                entries.update(self.store.entries_by_rowids(
                    [candidates[j] for j in more if candidates[j] not in entries]))
                read += len(more)
            entry = entries.get(candidates[i])
            if entry is None:  # gone since the plan read it (its file rewritten meanwhile)
                continue
            own = set(entry.records or ())
            if own and own <= shown:
                continue  # its turns are in an earlier passage
            hit = self._hit(entry, float(probability[i]), float(thresholds[i]), evidence[i],
                            lacking[i], plan.keyword.get(candidates[i]),
                            query_vector is not None)
            if number < CONTEXT_HITS:
                hit = replace(hit, passage=turns_around(self.store, entry, candidates[i],
                                                        self.config.search.passage_chars))
            if (latest := entries.get(newer.get(candidates[i], -1))) is not None:
                hit = replace(hit, newer=latest.uid)
            shown.update(hit.records)
            hits.append(hit)
            order.append(i)
        if plan.explain:
            hits = [replace(hit, explanation=explanation) for hit, explanation in zip(
                hits, explanations(self.store, [candidates[i] for i in order], texts,
                                   plan.terms,
                                   lambda r, t: plan.known.get(r)
                                   or self._entry(r, t, texts[r].heading),
                                   self._keys, query_vector))]
        return self._result(plan, hits, degraded, [] if plan.symbols_only else
                            [lacking[i] for i in order if lacking[i]])

    @staticmethod
    def _hit(entry: StoredEntry, probability: float, threshold: float, evidence: np.ndarray,
             lacking: str | None, bm25: tuple[int, float] | None, vectors: bool) -> Hit:
        """A hit with its score and evidence (``bm25``: its rank and score as a keyword
        candidate; ``vectors``: the question has a vector)."""
        row = dict(zip(FEATURES, evidence.tolist()))
        return Hit(
            entry=entry,
            score=Score(relevance=round(probability, 4),
                        keyword=round(bm25[1], 4) if bm25 and bm25[1] else None,
                        vector=round(row["cos"], 4) if vectors else None,
                        part=round(row["part"], 4) if vectors else None,
                        coverage=round(row["coverage"], 4)),
            evidence={name: round(value, 4) for name, value in row.items()},
            match=bool(probability >= threshold),
            scored_without=tuple(ranking.LACKING[lacking]) if lacking else None)

    def _result(self, plan: SearchPlan, hits: list[Hit], degraded: bool,
                lacking: Sequence[str | None] = ()) -> SearchResult:
        reason = "keyword-only: the embedding model is not loaded" if degraded else \
            ranking.degraded_reason(lacking) if lacking else None
        return SearchResult(tuple(hits), plan.threshold, reason, plan.filter.unknown_agents,
                            plan.background, plan.window, plan.filter.unknown_category)

    def vector_half(self, plan: SearchPlan, query: np.ndarray | None) -> VectorFound | None:
        """The vector index's candidates for each of the plan's filters (the index's own
        columns only: tags are SQL, applied by :meth:`finish_search`). Reads no database, so
        it may run on a thread of its own beside :meth:`keyword_half` (the index locks
        itself)."""
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

    def _vector_candidates(self, plan: SearchPlan, query: np.ndarray | None,
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

    def _evidence(self, plan: SearchPlan, candidates: list[int],
                  texts: dict[int, IndexedText],
                  vector_rank: dict[int, int], mixes: dict[int, tuple[float, float]],
                  query: np.ndarray | None, words: dict[str, np.ndarray]
                  ) -> tuple[np.ndarray, list[str | None], np.ndarray, list[int | None]]:
        """One row of FEATURES per candidate, a column at a time; the evidence each lacks
        (ranking.py, "Missing evidence"): None, NO_ALIGN or NO_VECTOR; the question's words
        each holds (a row of booleans); and the group of versions each is in
        (memoryd.retrieval.versions), None for most."""
        missing = [r for r in candidates if r not in mixes]
        if query is not None and missing:
            if self.index is not None:
                mixes.update(self.index.scores(missing, query))
            else:
                for rowid, vector in self.store.vectors_by_rowids(missing).items():
                    similarity = float(vector @ query)
                    mixes[rowid] = (similarity, similarity)
        pool = np.array([sum(mixes[r]) / 2 for r in vector_rank], dtype=np.float64)
        plan.background = Background(float(pool.mean()), float(pool.std()), len(pool)) \
            if len(pool) else None
        mean, spread = self.model.background(pool)
        known = [plan.known.get(rowid)
                 or self._entry(rowid, texts[rowid].text, texts[rowid].heading)
                 for rowid in candidates]
        # the lead is over the best candidate that says something else: a copy of the same
        # text (another agent's, a file's and an import's) is not a rival, nor a version of it
        said = {rowid: says(entry, texts[rowid].text) for rowid, entry in zip(candidates, known)}
        groups = self._versions(plan, texts, vector_rank, dict(zip(candidates, known)))
        for rowid, lead in groups.items():
            said[rowid] = said[lead]
        for chunk, statement in taken_from(candidates, texts,
                                           lambda r: sum(mixes.get(r, (0.0, 0.0)))).items():
            said[chunk] = said[statement]
        by_mix = sorted(vector_rank, key=lambda r: -sum(mixes[r]))
        top = sum(mixes[by_mix[0]]) / 2 if by_mix else 0.0
        # (a vector candidate whose entry is gone since has no text, and says nothing)
        leader = said.get(by_mix[0]) if by_mix else None
        second = next((sum(mixes[r]) / 2 for r in by_mix[1:] if said.get(r) != leader),
                      mean - spread)
        leads = np.array([said[rowid] == leader for rowid in candidates], dtype=bool)
        keyword_rank = distinct_ranks(sorted(plan.keyword, key=lambda r: plan.keyword[r][0]),
                                      said)
        vector_ranks = distinct_ranks(sorted(vector_rank, key=vector_rank.__getitem__), said)
        best_bm25 = max((score for _, score in plan.keyword.values()), default=0.0) or 1.0
        weights = np.array(list(plan.weights.values()), dtype=np.float64)
        # a passage holds its own entry's words and its neighbours': each distinct chunk is
        # read against the question once, and a passage takes the best of its chunks
        passages = self._passages(plan, candidates, known)
        chunks, members = distinct_members(passages)
        chunk_holds = self._holds(plan, chunks)
        chunk_best = self._alignment(plan, chunks, chunk_holds, words)
        own = np.array([group[0] for group in members], dtype=np.int64)
        flat = np.concatenate(members)
        starts = np.cumsum([0] + [len(group) for group in members[:-1]])
        holds = chunk_holds[own]
        passage_holds = np.maximum.reduceat(chunk_holds[flat], starts, axis=0)
        alignment, worst = self._weighed(plan, chunk_best[own])
        passage_align, _ = self._weighed(plan, np.maximum.reduceat(chunk_best[flat], starts,
                                                                   axis=0))
        pairs = np.array([mixes.get(rowid, (0.0, 0.0)) for rowid in candidates],
                         dtype=np.float64).reshape(-1, 2)
        cosine, part = pairs[:, 0], pairs[:, 1]
        mix = (cosine + part) / 2
        keyword = [plan.keyword.get(rowid) for rowid in candidates]
        bm25 = np.array([k[1] if k else 0.0 for k in keyword], dtype=np.float64)
        created = np.array([texts[rowid].created for rowid in candidates], dtype=np.float64)
        details = asked_details(plan.query)
        in_window = np.zeros(len(candidates))
        if plan.window is not None:
            start, end = plan.window.bounds()
            in_window = ((created >= start) & (created < end)).astype(np.float64)
        columns: list[np.ndarray] = [
            cosine, part, mix, (mix - mean) / spread,
            mix - np.where((mix >= top) | leads, second, top),
            np.where(bm25 > 0, bm25 / best_bm25, 0.0),
            np.array([1 / (1 + keyword_rank[r]) if r in keyword_rank else 0.0
                      for r in candidates]),
            np.array([1 / (1 + vector_ranks[r]) if r in vector_ranks else 0.0
                      for r in candidates]),
            holds @ weights / (weights.sum() or 1.0),
            in_window,
            alignment,
            worst,
            np.array([lacks(details, texts[rowid].text) for rowid in candidates]),
        ]
        columns += [passage_holds @ weights / (weights.sum() or 1.0), passage_align]
        lexicon = self.lexicon
        lacking = [NO_VECTOR if query is None or rowid not in mixes
                   else NO_ALIGN if lexicon is None or (entry.unaligned
                                                       and rowid > lexicon.filled_to)
                   else None for rowid, entry in zip(candidates, known)]
        return np.column_stack(columns), lacking, holds, [groups.get(r) for r in candidates]

    def _versions(self, plan: SearchPlan, texts: dict[int, IndexedText],
                  vector_rank: dict[int, int], known: dict[int, Known]) -> dict[int, int]:
        """The best candidates' groups of versions (memoryd.retrieval.versions): rowid → the
        group's first; and each one's own versions, into the plan."""
        near = [rowid for rowid in dict.fromkeys([
            *sorted(vector_rank, key=vector_rank.__getitem__)[:NEAR_TOP],
            *sorted(plan.keyword, key=lambda r: plan.keyword[r][0])[:NEAR_TOP]])
            if rowid in known and texts[rowid].statement]
        plan.versions = version_links(
            near, {rowid: self._informative(known[rowid]) for rowid in near},
            {rowid: frozenset((texts[rowid].project,)) for rowid in near}) if len(near) > 1 else {}
        return version_groups(near, plan.versions)

    def _passages(self, plan: SearchPlan, candidates: list[int], known: list[Known]
                  ) -> list[tuple[Known, ...]]:
        """Each candidate with the transcript chunks just before and after it in its session
        (memoryd.retrieval.passage: a hit is shown with them), each chunk's words as known
        already (their lexicon rows looked up once, not again for every passage holding
        them); another entry alone."""
        self._read_around(plan, candidates)
        around, texts = plan.around, plan.chunks
        return [(own, *(self._entry(r, texts[r].text, texts[r].heading)
                        for r in around.get(rowid, ()) if r in texts))
                for rowid, own in zip(candidates, known)]

    def _read_around(self, plan: SearchPlan, rowids: list[int]) -> None:
        """The chunks around those of these entries not asked about yet, and their texts, into
        the plan (the keyword half reads the keyword candidates' while the question is
        embedded: the passages took ~2 ms of a search's finishing at 73k entries)."""
        asked = [r for r in rowids if r not in plan.around_of]
        plan.around_of.update(asked)
        around = self.store.chunks_around(asked)
        plan.around.update(around)
        plan.chunks.update(self.store.texts_by_rowids(sorted(
            {r for pair in around.values() for r in pair
             if r is not None and r not in plan.chunks})))

    def _holds(self, plan: SearchPlan, entries: list[Known]) -> np.ndarray:
        """Per entry, per informative word of the question (``plan.weights``' order): 1.0 where
        the entry holds the word itself (:func:`~memoryd.retrieval.known.holds`)."""
        asked = list(enumerate(plan.weights))
        held = np.zeros((len(entries), len(asked)))
        for number, entry in enumerate(entries):
            for column, key in asked:
                if holds(entry, key):
                    held[number, column] = 1.0
        return held

    def _alignment(self, plan: SearchPlan, entries: list[Known], holds: np.ndarray,
                   words: dict[str, np.ndarray]) -> np.ndarray:
        """Per entry, per informative question word: its best cosine with a word of the entry,
        1 for the word itself (``holds``). A question word's vector comes from the lexicon or
        ``words``; one with neither (a number, a word of two letters) counts only where it
        occurs as such, and so does an entry's word the lexicon has not reached yet (a new
        entry's, for a second or two)."""
        lexicon = self.lexicon
        asked = list(plan.weights)
        best = np.zeros((len(entries), len(asked)))
        if lexicon is not None and asked:
            parts, starts, nonempty, total = [], [], [], 0
            for number, entry in enumerate(entries):
                rows = self._lexicon_rows(entry, lexicon)
                if len(rows):
                    parts.append(rows)
                    starts.append(total)
                    nonempty.append(number)
                    total += len(rows)
            embedded = [c for c, t in enumerate(asked) if t in words or t in lexicon.rows]
            if parts and embedded:
                question = np.stack([words[asked[c]] if asked[c] in words
                                     else lexicon.vectors([lexicon.rows[asked[c]]])[0]
                                     for c in embedded])
                unique, inverse = np.unique(np.concatenate(parts), return_inverse=True)
                similarity = lexicon.vectors(unique) @ question.T
                best[np.ix_(nonempty, embedded)] = np.maximum.reduceat(
                    similarity[inverse], starts, axis=0)
        best[holds > 0] = 1.0  # the word itself
        return best

    def _weighed(self, plan: SearchPlan, best: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``align`` and ``worst`` of each candidate from its best cosine for each question word
        (:meth:`_alignment`): the cosines weighed as ``coverage`` weighs the words, and the
        least."""
        if self.lexicon is None or not plan.weights:
            return np.zeros(len(best)), np.zeros(len(best))
        weight = np.array([max(w, 0.0) for w in plan.weights.values()])
        mean = best @ weight / weight.sum() if weight.sum() > 0 else best.mean(axis=1)
        return mean, best.min(axis=1)

    def _lexicon_rows(self, entry: Known, lexicon: Lexicon) -> np.ndarray:
        """The lexicon's rows of an entry's informative words, looked up once (again when the
        lexicon has grown: a new word of the entry may be in it now)."""
        if entry.rows is None or entry.rows_of != len(lexicon):
            stops = self._stops()
            entry.rows = np.array([lexicon.rows[w] for w in entry.words
                                   if w in lexicon.rows and w not in stops],
                                  dtype=np.int64)
            entry.rows_of = len(lexicon)
            # words the lexicon's filling has not reached (it has every word of the entries
            # up to its cursor that it keeps at all; a word of a newer entry may be missing)
            entry.unaligned = any(w not in lexicon.rows and w not in stops
                                  and is_word(w) for w in entry.words)
        return entry.rows

    # -- words ------------------------------------------------------------------------

    def _stops(self) -> set[str]:
        """The stop words, stemmed as the full-text index stems them."""
        if self._stop_stems is None:
            self._stop_stems = self._tokens(" ".join(STOPWORDS))
        return self._stop_stems

    def _entry(self, rowid: int, text: str, heading: str | None = None) -> Known:
        """What search knows of an entry: the words of its (index) text and of the titles it
        is under (``heading``: a memory file's entry), as the keyword index reads them."""
        key = (rowid, hash((text, heading)))
        found = self._known.get(key)
        if found is None:
            tokens = self.store.tokens(text)
            words = set(tokens)
            titled = self.store.tokens(heading) if heading else []
            titles_only = frozenset(map(sys.intern, set(titled) - words))
            found = self._known[key] = Known(
                tuple(sorted(map(sys.intern, words | titles_only))),
                segmented_run([*titled, "\0", *tokens] if titled else tokens)
                if has_segmented(text) or has_segmented(heading or "") else None,
                titles_only=titles_only)
            if len(self._known) > ENTRIES_KNOWN:
                self._known.pop(next(iter(self._known)))
        return found

    def _tokens(self, text: str) -> set[str]:
        """The words of a text as the full-text index has them (porter-stemmed)."""
        return self.store.stems(text)

    def informative(self, rowid: int, text: str) -> frozenset[str]:
        """An entry's words as versions are told by (memoryd.retrieval.versions): its stems as
        the full-text index has them, the stop words left out; kept with what search knows of
        the entry."""
        return self._informative(self._entry(rowid, text))

    def _informative(self, entry: Known) -> frozenset[str]:
        if entry.informative is None:
            if self._restating is None:
                self._restating = self._stops() | self._tokens(" ".join(RESTATING))
            stops = self._restating
            entry.informative = frozenset(word for word in entry.words if word not in stops
                                          and word not in entry.titles_only)
        return entry.informative

    def stems(self, text: str) -> set[str]:
        """The informative words of a text, as search weighs a question's (:meth:`_keys`)."""
        return {key for term in query_terms(text) for key in self._keys(term)}

    def _keys(self, term: str) -> list[str]:
        """What a question's word is looked for as in an entry's words (``holds``): its stems
        as the full-text index stems them; a run of Han, Kana or Hangul characters as that
        run (held where they stand together, as the keyword index matches their phrase), not
        each character alone (a word of three characters weighed three times, and held by an
        entry with the three anywhere)."""
        tokens = self.store.tokens(term)
        run = segmented_run(tokens) if has_segmented(term) else None
        if run is None:
            return list(dict.fromkeys(tokens))
        return list(dict.fromkeys([*(part for part in run.split("\0") if part),
                                   *(token for token in tokens
                                     if not (len(token) == 1 and is_segmented(token)))]))

    def _term_weights(self, terms: list[str]) -> dict[str, float]:
        """Each informative word's keys (:meth:`_keys`) → its inverse document frequency."""
        total = self.store.count_fts_rows()
        weights: dict[str, float] = {}
        for term in terms:
            for key in self._keys(term):
                weights[key] = max(weights.get(key, 0.0),
                                   idf(self.store.term_rows(term), total))
        return weights

    def unknown_words(self, query: str) -> dict[str, str]:
        """The question's informative words the lexicon lacks (stem → word): the caller embeds
        them for ``align`` (``words`` of :meth:`search`)."""
        if self.lexicon is None:
            return {}
        return unknown_words(self.store, self.lexicon, [" ".join(query_terms(query))])
