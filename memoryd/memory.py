"""The memory operations: remember, search, get, forget, supersede, history.

Everything here is synchronous and runs on the daemon's single database thread; vectors are
computed beforehand on the embedding thread and passed in. Each write goes to the agent's
ledger (fsynced) before the database, so what is acknowledged survives a crash.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memoryd.config import Config
from memoryd.errors import BadParamsError, ForbiddenError, NotFoundError
from memoryd.ledger import Ledger
from memoryd.params import Params
from memoryd.project import project_of
from memoryd.store import Store, encode_tags
from memoryd.text import content_hash
from memoryd.vectors import VectorFilter, VectorIndex

log = logging.getLogger(__name__)

KINDS = ("fact", "lesson", "feedback", "note", "turn", "summary")
STATUSES = ("active", "superseded", "forgotten")
RRF_K = 60
COMMON_TERM_SHARE = 0.02
COMMON_TERM_MIN_ROWS = 5000
CANDIDATES = 50
MAX_TEXT_CHARS = 32_000

_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a about also an and any are as at be but by can could did do does for from has have how i "
    "in is it its just me my not of on or our should so that the their them then there these "
    "they this to was we were what when where which who why will with would you your".split()
)


def new_uid() -> str:
    """Time-ordered, unique, short enough to type a prefix of."""
    return f"{int(time.time() * 1000):011x}{uuid.uuid4().hex[:8]}"


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


class Memory:
    def __init__(self, config: Config, store: Store, ledger: Ledger) -> None:
        self.config = config
        self.store = store
        self.ledger = ledger
        self.index: VectorIndex | None = None

    # -- startup ----------------------------------------------------------------------

    def replay_ledgers(self) -> int:
        """Apply ledger records the database has not seen yet; returns how many."""
        applied = 0
        for agent in self.ledger.agents():
            key = f"ledger:{agent}"
            offset = int(self.store.meta(key) or 0)
            path = self.ledger.path(agent)
            if path.stat().st_size < offset:
                log.warning("Ledger %s is shorter than recorded; replaying it whole.", path)
                offset = 0
            with self.store.db:
                for position, record in self.ledger.read(agent, offset):
                    applied += self._apply_record(agent, record)
                    offset = position
                self.store.set_meta(key, str(offset))
        return applied

    def _apply_record(self, agent: str, record: dict[str, Any]) -> int:
        op = record.get("op")
        if op == "remember" and isinstance(record.get("entry"), dict):
            entry = dict(record["entry"])
            if entry.get("agent") != agent or self.store.entry_by_uid(entry.get("uid", "")):
                return 0
            self.store.insert_entry(entry)
            self.store.journal(entry["uid"], "remember", entry.get("writer"), None, entry, entry.get("updated", entry["created"]))
            return 1
        if op == "status":
            before = self.store.entry_by_uid(str(record.get("id")))
            if before is None or before["agent"] != agent:
                return 0
            changes = {"status": record["status"], "updated": record["ts"]}
            if record.get("superseded_by"):
                changes["superseded_by"] = record["superseded_by"]
            self.store.update_entry(before["id"], **changes)
            self.store.journal(
                before["id"], record["status"], record.get("actor"), before,
                self.store.entry_by_uid(before["id"]), record["ts"],
            )
            return 1
        log.warning("Skipping unknown ledger record in %s: %r", agent, op)
        return 0

    # -- helpers ----------------------------------------------------------------------

    def resolve(self, entry_id: str) -> dict[str, Any]:
        """The entry with this id, or with this unique id prefix (4+ characters)."""
        entry = self.store.entry_by_uid(entry_id)
        if entry is not None:
            return entry
        if len(entry_id) >= 4:
            matches = self.store.uids_with_prefix(entry_id)
            if len(matches) == 1:
                found = self.store.entry_by_uid(matches[0])
                assert found is not None
                return found
            if len(matches) > 1:
                raise BadParamsError(f"id prefix {entry_id!r} is ambiguous; give more characters")
        raise NotFoundError(f"no entry with id {entry_id!r}")

    def _write(self, agent: str, records: list[dict[str, Any]]) -> None:
        """Append records to the agent's ledger (one fsync) and record the new offset. The
        caller holds the database transaction, which commits only after the fsync."""
        size = self.ledger.append(agent, records)
        self.store.set_meta(f"ledger:{agent}", str(size))

    def _index_entry(self, rowid: int, entry: dict[str, Any], vector: np.ndarray | None) -> None:
        if vector is None:
            return
        self.store.put_vectors([rowid], vector[None, :])
        if self.index is not None:
            self.index.add(
                [rowid],
                vector[None, :],
                [(entry["agent"], entry["category"], entry.get("project"), entry["kind"],
                  entry["status"], entry["created"])],
            )

    def _set_status(self, entry: dict[str, Any], status: str, actor: str | None,
                    superseded_by: str | None = None) -> dict[str, Any]:
        now = time.time()
        changes: dict[str, Any] = {"status": status, "updated": now}
        if superseded_by:
            changes["superseded_by"] = superseded_by
        self.store.update_entry(entry["id"], **changes)
        after = self.store.entry_by_uid(entry["id"])
        assert after is not None
        self.store.journal(entry["id"], status, actor, entry, after, now)
        if self.index is not None:
            self.index.set_status(entry["rowid"], status)
        return after

    @staticmethod
    def _status_record(entry: dict[str, Any], status: str, actor: str | None,
                       reason: str | None = None, superseded_by: str | None = None) -> dict[str, Any]:
        record = {"op": "status", "ts": time.time(), "id": entry["id"], "status": status,
                  "actor": actor}
        if reason:
            record["reason"] = reason
        if superseded_by:
            record["superseded_by"] = superseded_by
        return record

    def nearest(self, vector: np.ndarray, agent: str, category: str) -> tuple[dict[str, Any], float] | None:
        """The most similar active entry of the same agent and category, exact cosine."""
        if self.index is not None:
            candidates = [r for r, _ in self.index.search(
                vector, 5, VectorFilter(agents=[agent], categories=[category]))]
        else:
            ids = [r for r, _ in self.store.knn(vector, 200)]
            rows = self.store.entries_by_rowids(ids)
            candidates = [r for r in ids if r in rows and rows[r]["agent"] == agent
                          and rows[r]["category"] == category and rows[r]["status"] == "active"][:5]
        vectors = self.store.vectors_by_rowids(candidates)
        if not vectors:
            return None
        best = max(vectors, key=lambda r: float(vectors[r] @ vector))
        entry = self.store.entries_by_rowids([best])[best]
        return entry, float(vectors[best] @ vector)

    # -- methods ----------------------------------------------------------------------

    def remember(self, params: Params, vector: np.ndarray | None) -> dict[str, Any]:
        return self.remember_many([params], [vector])[0]

    def remember_many(self, requests: Sequence[Params],
                      vectors: Sequence[np.ndarray | None]) -> list[dict[str, Any]]:
        """Remember each request in order, in one transaction with one fsync per ledger."""
        drafts = [self.draft_entry(params) for params in requests]
        records: dict[str, list[dict[str, Any]]] = {}
        with self.store.db:
            replies = [
                self._remember_one(draft, vector, params.flag("force"), records)
                for draft, vector, params in zip(drafts, vectors, requests)
            ]
            for agent, agent_records in records.items():
                self._write(agent, agent_records)
        return replies

    def _remember_one(self, draft: dict[str, Any], vector: np.ndarray | None, force: bool,
                      records: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        agent, category = draft["agent"], draft["category"]
        existing = self.store.find_exact(agent, category, draft["hash"])
        if existing is not None:
            return {"stored": False, "duplicate": "exact", "entry": existing}
        rivals = self.store.active_with_key(agent, draft["key"]) if draft["key"] else []
        similar = None
        if not rivals and vector is not None:
            near = self.nearest(vector, agent, category)
            if near is not None and near[1] >= self.config.remember.near_duplicate_cosine:
                similar = {"entry": near[0], "cosine": round(near[1], 4)}
                if not force:
                    return {"stored": False, "duplicate": "near", **similar}
        losers = []
        for rival in rivals:
            if draft["confidence"] >= rival["confidence"]:
                losers.append(rival)
            elif draft["status"] == "active":
                draft["status"], draft["superseded_by"] = "superseded", rival["id"]
        agent_records = records.setdefault(agent, [])
        agent_records.append({"op": "remember", "ts": draft["updated"], "entry": draft})
        agent_records.extend(
            self._status_record(loser, "superseded", agent, "key conflict", draft["uid"])
            for loser in losers
        )
        rowid = self.store.insert_entry(draft)
        stored = self.store.entry_by_uid(draft["uid"])
        assert stored is not None
        self.store.journal(draft["uid"], "remember", draft["writer"], None, stored, draft["updated"])
        self._index_entry(rowid, stored, vector)
        superseded = [self._set_status(loser, "superseded", agent, draft["uid"]) for loser in losers]
        reply: dict[str, Any] = {"stored": True, "entry": stored, "superseded": superseded}
        if similar:
            reply["similar"] = similar
        return reply

    def draft_entry(self, params: Params) -> dict[str, Any]:
        """The entry a remember request describes, validated, not yet stored."""
        agent = params.agent()
        text = params.text("text", required=True, max_len=MAX_TEXT_CHARS)
        assert agent is not None and text is not None
        key = params.key()
        kind = params.choice("kind", KINDS, default="fact" if key else "note")
        confidence = params.number("confidence", default=self.config.remember.manual_confidence,
                                   low=0.0, high=1.0)
        project = params.text("project", max_len=4096)
        cwd = params.text("cwd", max_len=4096)
        if project is None and cwd:
            project = project_of(cwd)
        now = time.time()
        created = params.time("created")
        via = params.choice("via", ("api", "extract"), default="api")
        if created is not None:  # imported history keeps its own date; provenance says so
            if not 0 < created <= now + 86_400:
                raise BadParamsError(f"{params.method}: created must be a past time; got {created!r}")
            via = "import" if via == "api" else via
        return {
            "uid": new_uid(),
            "agent": agent,
            "project": project,
            "kind": kind,
            "category": (params.text("category", default="", max_len=200) or "").strip(),
            "key": key,
            "text": text.strip(),
            "hash": content_hash(text),
            "confidence": confidence,
            "tags": sorted({t.lower() for t in params.strings("tags") or []}),
            "status": "active",
            "created": created if created is not None else now,
            "updated": now,
            "writer": params.text("writer", max_len=200) or agent,
            "via": via,
            "session": params.text("session", max_len=200),
            "source": None,
            "line_start": None,
            "line_end": None,
            "message_id": params.text("message_id", max_len=200),
            "superseded_by": None,
            "polarity": params.choice("polarity", ("negative", "positive")),
        }

    def get(self, params: Params) -> dict[str, Any]:
        entry_id = params.text("id", required=True, max_len=200)
        assert entry_id is not None
        return self.resolve(entry_id)

    def _owned(self, params: Params) -> tuple[dict[str, Any], str]:
        entry_id = params.text("id", required=True, max_len=200)
        assert entry_id is not None
        entry = self.resolve(entry_id)
        actor = params.agent(required=False)
        if actor is not None and actor != entry["agent"]:
            raise ForbiddenError(
                f"entry {entry['id']} belongs to agent {entry['agent']!r}; "
                f"agent {actor!r} may read it but not change it"
            )
        return entry, actor or "user"

    def forget(self, params: Params) -> dict[str, Any]:
        entry, actor = self._owned(params)
        if entry["status"] == "forgotten":
            return entry
        reason = params.text("reason", max_len=2000)
        with self.store.db:
            self._write(entry["agent"], [self._status_record(entry, "forgotten", actor, reason)])
            return self._set_status(entry, "forgotten", actor)

    def supersede(self, params: Params, vector: np.ndarray | None) -> dict[str, Any]:
        old, actor = self._owned(params)
        text = params.text("text", required=True, max_len=MAX_TEXT_CHARS)
        assert text is not None
        now = time.time()
        new = {
            **{k: old[k] for k in ("agent", "project", "kind", "category", "key", "tags", "session")},
            "uid": new_uid(),
            "text": text.strip(),
            "hash": content_hash(text),
            "confidence": params.number("confidence", default=old["confidence"], low=0.0, high=1.0),
            "status": "active",
            "created": now,
            "updated": now,
            "writer": actor,
            "via": "api",
            "source": None,
            "line_start": None,
            "line_end": None,
            "message_id": None,
            "superseded_by": None,
            "polarity": old.get("polarity"),
        }
        records = [
            {"op": "remember", "ts": now, "entry": new},
            self._status_record(old, "superseded", actor, "superseded", new["uid"]),
        ]
        with self.store.db:
            self._write(old["agent"], records)
            rowid = self.store.insert_entry(new)
            stored = self.store.entry_by_uid(new["uid"])
            assert stored is not None
            self.store.journal(new["uid"], "remember", actor, None, stored, now)
            self._index_entry(rowid, stored, vector)
            previous = self._set_status(old, "superseded", actor, new["uid"])
        return {"entry": stored, "superseded": previous}

    def history(self, params: Params) -> dict[str, Any]:
        entry_id = params.text("id", max_len=200)
        key = params.key()
        if entry_id is not None:
            try:
                entry = self.resolve(entry_id)
            except NotFoundError:
                return self._history_of_removed(entry_id)
            agent, key = entry["agent"], key or entry["key"]
            related = {entry["id"]: entry}
        else:
            agent = params.agent(required=False)
            if key is None or agent is None:
                raise BadParamsError("history: give an id, or an agent and a key")
            related = {}
        if key:
            related.update({e["id"]: e for e in self.store.entries_with_key(agent, key)})
        # follow supersede links both ways
        frontier = list(related.values())
        while frontier:
            entry = frontier.pop()
            successor = entry.get("superseded_by")
            if successor and successor not in related:
                found = self.store.entry_by_uid(successor)
                if found:
                    related[successor] = found
                    frontier.append(found)
            for predecessor in self.store.db.execute(
                "SELECT uid FROM entries WHERE superseded_by=?", (entry["id"],)
            ):
                if predecessor[0] not in related:
                    found = self.store.entry_by_uid(predecessor[0])
                    if found:
                        related[predecessor[0]] = found
                        frontier.append(found)
        if not related:
            raise NotFoundError(f"no entries for key {key!r} of agent {agent!r}")
        entries = sorted(related.values(), key=lambda e: e["created"])
        return {"entries": entries, "events": self.store.events_for([e["id"] for e in entries])}

    def _history_of_removed(self, entry_id: str) -> dict[str, Any]:
        """A file entry whose bullet was deleted lives on in the journal."""
        events = self.store.events_for([entry_id])
        if not events:
            raise NotFoundError(f"no entry with id {entry_id!r}")
        last = next((e["before"] for e in reversed(events) if e["before"]), None)
        entries = [{**last, "status": "removed"}] if last else []
        return {"entries": entries, "events": events}

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

    # -- status -----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        model = self.store.model
        return {
            "entries": self.store.count_entries(),
            "vectors": self.store.count_vectors(),
            "backlog": self.store.count_backlog() if model else None,
            "agents": self.store.agents(),
            "model": {"id": model.model_id, "sha256": model.sha256, "dim": model.dim} if model else None,
            "vector_index": {
                "ready": self.index is not None,
                "entries": len(self.index) if self.index is not None else 0,
                "bytes": self.index.nbytes if self.index is not None else 0,
            },
        }
