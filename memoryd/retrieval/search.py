"""Search: keyword (FTS5 bm25) and vector (the RAM index) candidates, fused, with match flags.

Runs on the daemon's database thread; the query vector is computed on the embedding thread
meanwhile (``keyword_search`` needs none, ``finish_search`` takes it).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memoryd.config import Config
from memoryd.errors import BadParamsError
from memoryd.params import Params
from memoryd.project import project_of
from memoryd.store.database import Store, encode_tags
from memoryd.store.entries import KINDS, STATUSES
from memoryd.store.vectors import VectorFilter, VectorIndex

RRF_K = 60
COMMON_TERM_SHARE = 0.02
COMMON_TERM_MIN_ROWS = 5000
CANDIDATES = 50

_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a about also an and any are as at be but by can could did do does for from has have how i "
    "in is it its just me my not of on or our should so that the their them then there these "
    "they this to was we were what when where which who why will with would you your".split()
)


def query_terms(query: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(query)]
    meaningful = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(meaningful or words))


def fts_expression(terms: Sequence[str], operator: str) -> str:
    """Each term quoted, so nothing a user types is read as FTS5 syntax."""
    return f" {operator} ".join('"' + t.replace('"', '""') + '"' for t in terms)


def format_age(seconds: float) -> str:
    for unit, size in (("y", 31_536_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(max(seconds, 0))}s"


@dataclass
class SearchPlan:
    terms: list[str]
    limit: int
    only_matches: bool
    threshold: float
    vector_filter: VectorFilter
    where: str
    sql_params: list[Any]
    tags: list[str]
    pool: int
    keyword: dict[int, tuple[int, float]] = field(default_factory=dict)


class Search:
    def __init__(self, config: Config, store: Store) -> None:
        self.config = config
        self.store = store
        self.index: VectorIndex | None = None

    # -- search -----------------------------------------------------------------------

    def search_filter(self, params: Params) -> tuple[VectorFilter, str, list[Any], list[str]]:
        """The filters as a VectorFilter and as SQL over ``entries e``; plus the tags."""
        agents = params.strings("agents")
        if agents is None:
            agent = params.agent(required=False)
            if agent is None:
                raise BadParamsError(
                    "search: give agent (your own namespace) or agents (a list, or ['*'] for all)")
            agents = [agent]
        if agents == ["*"]:
            agents = None
        elif agents is not None:
            for name in agents:
                Params(params.method, {"agent": name}).agent()
        category = params.text("category", max_len=200)
        categories = [category.strip()] if category not in (None, "", "-") else None
        kinds = params.strings("kind")
        for kind in kinds or ():
            if kind not in KINDS:
                raise BadParamsError(f"search: kind must be among {', '.join(KINDS)}; got {kind!r}")
        project = params.text("project", max_len=4096)
        cwd = params.text("cwd", max_len=4096)
        if project is None and cwd is not None:
            project = project_of(cwd)
        statuses = params.strings("status") or ["active"]
        if statuses == ["any"]:
            statuses = list(STATUSES)
        for status in statuses:
            if status not in STATUSES:
                raise BadParamsError(f"search: status must be among {', '.join(STATUSES)} or any")
        since, until = params.time("since"), params.time("until")
        tags = [t.lower() for t in params.strings("tags") or []]

        where: list[str] = []
        sql_params: list[Any] = []

        def among(column: str, values: Sequence[Any] | None) -> None:
            if values is not None:
                where.append(f"e.{column} IN ({', '.join('?' for _ in values)})")
                sql_params.extend(values)

        among("agent", agents)
        among("category", categories)
        among("kind", kinds)
        among("project", [project] if project else None)
        among("status", statuses)
        if since is not None:
            where.append("e.created >= ?")
            sql_params.append(since)
        if until is not None:
            where.append("e.created <= ?")
            sql_params.append(until)
        for tag in tags:
            where.append("e.tags LIKE ?")
            sql_params.append("%" + encode_tags([tag]) + "%")
        vector_filter = VectorFilter(agents, categories, kinds, [project] if project else None,
                                     tuple(statuses), since, until)
        return vector_filter, " AND ".join(where), sql_params, tags

    def search(self, params: Params, query_vector: np.ndarray | None) -> dict[str, Any]:
        return self.finish_search(self.keyword_search(params), query_vector)

    def keyword_search(self, params: Params) -> SearchPlan:
        """The first half of a search: validated filters and the keyword ranking. It needs no
        vector, so the daemon runs it while the query is being embedded."""
        query = params.text("query", required=True, max_len=10_000)
        assert query is not None
        limit = params.integer("limit", default=self.config.search.limit, low=1, high=1000)
        min_score = params.number("min_score", low=-1.0, high=1.0)
        vector_filter, where, sql_params, tags = self.search_filter(params)
        plan = SearchPlan(
            terms=query_terms(query), limit=limit,
            only_matches=params.flag("match") or min_score is not None,
            threshold=min_score if min_score is not None else self.config.search.match_cosine,
            vector_filter=vector_filter, where=where, sql_params=sql_params, tags=tags,
            pool=max(CANDIDATES, limit * 3))
        if plan.terms:
            rows = self._keyword_candidates(self._keyword_expression(plan.terms), where,
                                            sql_params, plan.pool)
            plan.keyword = {rowid: (rank, -bm25) for rank, (rowid, bm25) in enumerate(rows)}
        return plan

    def finish_search(self, plan: SearchPlan, query_vector: np.ndarray | None) -> dict[str, Any]:
        """The second half: vector candidates, fusion, match flags, the hits."""
        keyword, terms, limit = plan.keyword, plan.terms, plan.limit
        only_matches, threshold = plan.only_matches, plan.threshold
        vector_filter, where, sql_params, tags = plan.vector_filter, plan.where, plan.sql_params, plan.tags
        pool = plan.pool
        semantic: dict[int, tuple[int, float]] = {}
        if query_vector is not None:
            for rank, (rowid, cosine) in enumerate(self._vector_candidates(
                    query_vector, pool, vector_filter, where, sql_params, tags)):
                semantic[rowid] = (rank, cosine)

        weights = self.config.search
        fused: dict[int, float] = {}
        for rowid, (rank, _) in keyword.items():
            fused[rowid] = weights.keyword_weight / (RRF_K + rank + 1)
        for rowid, (rank, _) in semantic.items():
            fused[rowid] = fused.get(rowid, 0.0) + weights.vector_weight / (RRF_K + rank + 1)
        ranked = sorted(fused, key=fused.__getitem__, reverse=True)

        cosines = self._cosines(ranked, query_vector, semantic)
        all_terms = self._rowids_with_all_terms(ranked, terms)
        now = time.time()
        hits = []
        for rowid in ranked:
            cosine = cosines.get(rowid)
            is_match = rowid in all_terms or (cosine is not None and cosine >= threshold)
            if only_matches and not is_match:
                continue
            hits.append((rowid, cosine, is_match))
            if len(hits) >= limit:
                break
        entries = self.store.entries_by_rowids([h[0] for h in hits])
        hits = [h for h in hits if h[0] in entries]
        return {
            "hits": [
                {
                    **entries[rowid],
                    "score": {
                        "keyword": round(keyword[rowid][1], 4) if rowid in keyword else None,
                        "vector": round(cosine, 4) if cosine is not None else None,
                        "fused": round(fused[rowid], 6),
                    },
                    "match": is_match,
                    "age_s": round(now - entries[rowid]["created"], 1),
                    "age": format_age(now - entries[rowid]["created"]),
                }
                for rowid, cosine, is_match in hits
            ],
            "degraded": query_vector is None,
            "threshold": threshold,
        }

    def _keyword_expression(self, terms: list[str]) -> str:
        """OR over the query's terms, leaving out those in more than COMMON_TERM_SHARE of all
        entries when rarer ones remain: they add little to bm25 (low IDF) but make FTS5 score
        a large part of the index (26 ms at 100k entries for a query touching 13 % of rows)."""
        total = self.store.count_fts_rows()
        if total < COMMON_TERM_MIN_ROWS or len(terms) < 2:
            return fts_expression(terms, "OR")
        limit = total * COMMON_TERM_SHARE
        rare = [t for t in terms if self.store.term_rows(t) <= limit]
        if not rare or len(rare) == len(terms):
            return fts_expression(terms, "OR")
        # entries with every term still match; bm25 weighs all terms for whatever matched
        return fts_expression(rare, "OR") + " OR (" + fts_expression(terms, "AND") + ")"

    def _keyword_candidates(self, expression: str, where: str, sql_params: list[Any],
                            pool: int) -> list[tuple[int, float]]:
        """The best ``pool`` keyword hits that pass the filters. FTS5 ranks alone first (joining
        every match to ``entries`` doubles the cost at 100k entries), then the filters apply
        to that short list; only when they leave too few does the joined query run."""
        wide = pool * 4
        ranked = self.store.fts(expression, "", [], wide)
        if not where:
            return ranked[:pool]
        allowed = self.store.filter_rowids([r for r, _ in ranked], where, sql_params)
        kept = [(r, score) for r, score in ranked if r in allowed]
        if len(kept) >= pool or len(ranked) < wide:
            return kept[:pool]
        return self.store.fts(expression, where, sql_params, pool)

    def _vector_candidates(self, query_vector: np.ndarray, pool: int, vector_filter: VectorFilter,
                           where: str, sql_params: list[Any], tags: list[str]) -> list[tuple[int, float]]:
        if self.index is not None:
            found = self.index.search(query_vector, pool * (4 if tags else 1), vector_filter)
            if tags:
                allowed = self.store.filter_rowids([r for r, _ in found], where, sql_params)
                found = [(r, c) for r, c in found if r in allowed]
            return found[:pool]
        if self.store.model is None:
            return []
        found = self.store.knn(query_vector, min(4096, pool * 20))
        allowed = self.store.filter_rowids([r for r, _ in found], where, sql_params)
        return [(r, c) for r, c in found if r in allowed][:pool]

    def _cosines(self, rowids: list[int], query_vector: np.ndarray | None,
                 semantic: dict[int, tuple[int, float]]) -> dict[int, float]:
        if query_vector is None:
            return {}
        cosines = {r: c for r, (_, c) in semantic.items()}
        missing = [r for r in rowids if r not in cosines]
        if self.index is not None:
            cosines.update(self.index.scores(missing, query_vector))
        else:
            for rowid, vector in self.store.vectors_by_rowids(missing).items():
                cosines[rowid] = float(vector @ query_vector)
        return cosines

    def _rowids_with_all_terms(self, rowids: list[int], terms: list[str]) -> set[int]:
        if not rowids or not terms:
            return set()
        # FTS5 would re-run the MATCH for every rowid of an IN list: intersect here instead
        wanted = set(rowids)
        rows = self.store.db.execute(
            "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? LIMIT 100000",
            (fts_expression(terms, "AND"),),
        )
        return {r[0] for r in rows if r[0] in wanted}

