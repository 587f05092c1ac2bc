"""Search: a question's hits, in the steps below, so that the daemon can run two of them at once.

- ``plan``: the question's words, its filters, a time it names (database thread);
- ``keyword_half``: the keyword candidates (:mod:`memoryd.retrieval.candidates`), and what can
  be read ahead of the vector: their entries, words and the lexicon rows of those
  (:mod:`memoryd.retrieval.known`), the transcript chunks around them (their passages), the
  question's word weights (:mod:`memoryd.retrieval.terms`) (database thread);
- ``vector_half``: the vector index's candidates (:meth:`Candidates.vector_half
  <memoryd.retrieval.candidates.Candidates.vector_half>`; no database:
  :mod:`memoryd.retrieval.service` runs it on a thread of its own, beside the keyword half,
  once the question is embedded), handed to ``finish_search``;
- ``finish_search``: every candidate's evidence (:mod:`memoryd.retrieval.evidence`, the features
  of :mod:`memoryd.retrieval.ranking`), the model's ranking, the hits: the newest of each one's
  versions named, the turns around a transcript hit, a hit whose turns an earlier one shows
  left out (database thread).

``search`` runs them one after the other (the memory block does, on the database thread). A
search takes a :class:`~memoryd.retrieval.records.SearchRequest` and gives a
:class:`~memoryd.retrieval.records.SearchResult`: hits, with their scores and evidence. The
steps hand each other a :class:`~memoryd.retrieval.plan.SearchPlan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from functools import partial

import numpy as np

from memoryd.embedding.derived import Derived
from memoryd.retrieval import ranking
from memoryd.retrieval.candidates import CANDIDATES, RANKED_ALONE, Candidates
from memoryd.retrieval.dates import window, without_time
from memoryd.retrieval.evidence import Evidence
from memoryd.retrieval.explain import explanations
from memoryd.retrieval.filters import request_filter
from memoryd.retrieval.known import KnownEntries, says
from memoryd.retrieval.passage import turns_around
from memoryd.retrieval.plan import SearchPlan, VectorFound
from memoryd.retrieval.ranking import FEATURES, Model, load_model
from memoryd.retrieval.records import Hit, Score, SearchRequest, SearchResult
from memoryd.retrieval.terms import fts_expression, query_terms, term_keys, term_weights
from memoryd.retrieval.versions import Written, latest_first, newest_versions
from memoryd.settings import Config
from memoryd.store.database import Store
from memoryd.store.lexicon import Lexicon, unknown_words
from memoryd.store.records import StoredEntry
from memoryd.store.vectors import VectorIndex, follow_meta
from memoryd.text import is_symbol, normalise_text

#: Hits shown with the turns around them (memoryd.retrieval.passage), and read beyond the
#: limit in place of hits whose turns an earlier passage shows.
CONTEXT_HITS = 20
#: Rows of the hits read beyond those wanted, for the hits left out (a whole row is read only
#: for a hit: reading all of CONTEXT_HITS more was ~4 % of a search's finishing).
READ_SPARE = 2


class Searcher:
    """Search over the store and the model's derived data, in the four steps of the module
    docstring (the vector half is its ``candidates``'). The daemon's parts hold it as
    ``searcher`` beside ``search``, the :class:`~memoryd.retrieval.service.SearchService` that
    runs its halves at once."""

    def __init__(self, config: Config, store: Store, derived: Derived | None = None,
                 model: Model | None = None) -> None:
        """``derived``: the model's vector index and lexicon, once built (by
        :mod:`memoryd.embedding`)."""
        self.config = config
        self.store = store
        self.derived = derived or Derived()
        self.model = model or load_model()
        #: what search knows of the entries, kept between searches
        self.known = KnownEntries(store)
        self.candidates = Candidates(store, self.derived)
        self.evidence = Evidence(store, self.derived, self.model, self.known)

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
            rare, common = self.candidates.split_terms(plan.terms)
            expression = fts_expression(rare, "OR")
            alone = self.store.fts(expression, None, RANKED_ALONE)  # read once, filtered twice
            ranked = self.candidates.keyword_candidates(expression, alone, common, plan.filter,
                                                        CANDIDATES)
            plan.keyword = {rowid: (rank, -bm25) for rank, (rowid, bm25) in enumerate(ranked)}
            if plan.window is not None:  # the rare words only: a common word's newest rows
                # written then were found by reading all its rows (~10 ms a word at 70k)
                inside = plan.filter.within(*plan.window.bounds())
                plan.window_keyword = [r for r, _ in self.candidates.keyword_candidates(
                    expression, alone, [], inside, CANDIDATES // 2)]
        plan.texts = self.store.texts_by_rowids(
            list(dict.fromkeys([*plan.keyword, *plan.window_keyword])))
        plan.known = {rowid: self.known.entry(rowid, text.text, text.heading)
                      for rowid, text in plan.texts.items()}
        for rowid, known in plan.known.items():
            says(known, plan.texts[rowid].text)
        self.evidence.read_around(plan, list(plan.texts))
        if self.lexicon is not None:  # for the alignment, while the question is embedded
            for known in [*plan.known.values(),
                          *(self.known.entry(r, text.text, text.heading)
                            for r, text in plan.chunks.items())]:
                self.known.lexicon_rows(known, self.lexicon)
        plan.weights = term_weights(self.store, plan.terms)
        plan.unknown = self.unknown_words(" ".join(plan.terms))
        return plan

    # -- the ranking and the hits -----------------------------------------------------

    def finish_search(self, plan: SearchPlan, query_vector: np.ndarray | None,
                      words: dict[str, np.ndarray] | None = None,
                      found: VectorFound | None = None) -> SearchResult:
        """Vector candidates (``found`` by the vector half,
        :meth:`~memoryd.retrieval.candidates.Candidates.vector_half`, beside the keyword half,
        or here), the evidence of every candidate, the model's ranking, the hits. A question of
        symbols alone (✅) is scored by its words alone, as without a model: the model reads
        each symbol as its one unknown token, and its vector was as close to any text of
        other unknown tokens (a Korean note) as to the note that holds the symbol."""
        degraded = query_vector is None
        if plan.symbols_only:
            query_vector, words, found = None, None, None
        vector_rank, mixes = self.candidates.vector_candidates(plan, query_vector, found)
        candidates = list(dict.fromkeys([*vector_rank, *plan.keyword, *plan.window_keyword]))
        texts = {**plan.texts, **self.store.texts_by_rowids(
            [r for r in candidates if r not in plan.texts])}
        candidates = [r for r in candidates if r in texts]
        if not candidates:
            return self._result(plan, [], degraded)
        evidence, lacking, holds, group_of = self.evidence.gather(
            plan, candidates, texts, vector_rank, mixes, query_vector, words or {})
        probability, thresholds = self.model.decide(
            evidence, lacking, self.config.search.match_precision)
        if plan.min_score is not None:
            thresholds[:] = plan.min_score  # the caller's own
        written = {rowid: Written(texts[rowid].created, texts[rowid].source, texts[rowid].line)
                   for rowid in {*candidates, *plan.versions}}
        ranked = [int(i) for i in latest_first(probability, [written[r] for r in candidates],
                                               holds, group_of)
                  if not plan.only_matches or probability[i] >= thresholds[i]]
        # the newest of each one's versions, ranked before it or after (a question naming an
        # older one's detail ranks that first): what a hit says is newer
        newer = newest_versions(plan.versions, {r: written[r] for r in plan.versions},
                                {r: normalise_text(texts[r].text) for r in plan.versions},
                                plan.version_words,
                                {r: texts[r].text for r in plan.versions})
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
                                   or self.known.entry(r, t, texts[r].heading),
                                   partial(term_keys, self.store), query_vector))]
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

    # -- words ------------------------------------------------------------------------

    def informative(self, rowid: int, text: str) -> frozenset[str]:
        """An entry's words as versions are told by (memoryd.retrieval.versions): its stems as
        the full-text index has them, the stop words left out; kept with what search knows of
        the entry."""
        return self.known.informative(self.known.entry(rowid, text))

    def unknown_words(self, query: str) -> dict[str, str]:
        """The question's informative words the lexicon lacks (stem → word): the caller embeds
        them for ``align`` (``words`` of :meth:`search`)."""
        if self.lexicon is None:
            return {}
        return unknown_words(self.store, self.lexicon, [" ".join(query_terms(query))])
