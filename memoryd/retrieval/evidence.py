"""A search's evidence: one row of the ranking model's features
(:data:`~memoryd.retrieval.ranking.FEATURES`) for each candidate, read a column at a time, and
what goes into them: the vector mix of every candidate and its lead over its rivals, its ranks,
the question's words it holds (``coverage``), their alignment with its words and with its
passage's (the transcript chunks around it, :mod:`memoryd.retrieval.passage`), a time the
question names, the details it asks for (:mod:`memoryd.retrieval.asked_details`), and the best
candidates' versions of one statement (:mod:`memoryd.retrieval.versions`).
"""

from __future__ import annotations

import numpy as np

from memoryd.embedding.derived import Derived
from memoryd.retrieval.asked_details import asked_details, lacks
from memoryd.retrieval.known import (
    Known,
    KnownEntries,
    distinct_members,
    distinct_ranks,
    holds,
    says,
    taken_from,
)
from memoryd.retrieval.plan import SearchPlan
from memoryd.retrieval.ranking import NO_ALIGN, NO_VECTOR, Model
from memoryd.retrieval.records import Background
from memoryd.retrieval.versions import NEAR_TOP, told_apart, version_groups, version_links
from memoryd.store.database import Store
from memoryd.store.records import IndexedText


class Evidence:
    """The evidence of a search's candidates, from the store, the model's vector index and
    lexicon (``derived``), the ranking model's background and what search knows of the
    entries (``known``)."""

    def __init__(self, store: Store, derived: Derived, model: Model,
                 known: KnownEntries) -> None:
        self.store = store
        self.derived = derived
        self.model = model
        self.known = known

    def gather(self, plan: SearchPlan, candidates: list[int],
               texts: dict[int, IndexedText],
               vector_rank: dict[int, int], mixes: dict[int, tuple[float, float]],
               query: np.ndarray | None, words: dict[str, np.ndarray]
               ) -> tuple[np.ndarray, list[str | None], np.ndarray, list[int | None]]:
        """One row of FEATURES per candidate, a column at a time; the evidence each lacks
        (ranking.py, "Missing evidence"): None, NO_ALIGN or NO_VECTOR; the question's words
        each holds (a row of booleans); and the group of versions each is in
        (memoryd.retrieval.versions), None for most; the words as versions are told apart
        by (:func:`~memoryd.retrieval.versions.told_apart`)."""
        missing = [r for r in candidates if r not in mixes]
        if query is not None and missing:
            if self.derived.index is not None:
                mixes.update(self.derived.index.scores(missing, query))
            else:
                for rowid, vector in self.store.vectors_by_rowids(missing).items():
                    similarity = float(vector @ query)
                    mixes[rowid] = (similarity, similarity)
        pool = np.array([sum(mixes[r]) / 2 for r in vector_rank], dtype=np.float64)
        plan.background = Background(float(pool.mean()), float(pool.std()), len(pool)) \
            if len(pool) else None
        mean, spread = self.model.background(pool)
        known = [plan.known.get(rowid)
                 or self.known.entry(rowid, texts[rowid].text, texts[rowid].heading)
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
        lexicon = self.derived.lexicon
        lacking = [NO_VECTOR if query is None or rowid not in mixes
                   else NO_ALIGN if lexicon is None or (entry.unaligned
                                                       and rowid > lexicon.filled_to)
                   else None for rowid, entry in zip(candidates, known)]
        return np.column_stack(columns), lacking, \
            told_apart(holds, candidates, list(plan.weights), plan.versions, plan.version_words), \
            [groups.get(r) for r in candidates]

    def _versions(self, plan: SearchPlan, texts: dict[int, IndexedText],
                  vector_rank: dict[int, int], known: dict[int, Known]) -> dict[int, int]:
        """The best candidates' groups of versions (memoryd.retrieval.versions): rowid → the
        group's first; and each one's own versions, into the plan."""
        near = [rowid for rowid in dict.fromkeys([
            *sorted(vector_rank, key=vector_rank.__getitem__)[:NEAR_TOP],
            *sorted(plan.keyword, key=lambda r: plan.keyword[r][0])[:NEAR_TOP]])
            if rowid in known and texts[rowid].statement]
        plan.version_words = {rowid: self.known.informative(known[rowid]) for rowid in near}
        plan.versions = version_links(
            near, plan.version_words,
            {rowid: frozenset((texts[rowid].project,)) for rowid in near}) if len(near) > 1 else {}
        return version_groups(near, plan.versions)

    def _passages(self, plan: SearchPlan, candidates: list[int], known: list[Known]
                  ) -> list[tuple[Known, ...]]:
        """Each candidate with the transcript chunks just before and after it in its session
        (memoryd.retrieval.passage: a hit is shown with them), each chunk's words as known
        already (their lexicon rows looked up once, not again for every passage holding
        them); another entry alone."""
        self.read_around(plan, candidates)
        around, texts = plan.around, plan.chunks
        return [(own, *(self.known.entry(r, texts[r].text, texts[r].heading)
                        for r in around.get(rowid, ()) if r in texts))
                for rowid, own in zip(candidates, known)]

    def read_around(self, plan: SearchPlan, rowids: list[int]) -> None:
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
        lexicon = self.derived.lexicon
        asked = list(plan.weights)
        best = np.zeros((len(entries), len(asked)))
        if lexicon is not None and asked:
            parts, starts, nonempty, total = [], [], [], 0
            for number, entry in enumerate(entries):
                rows = self.known.lexicon_rows(entry, lexicon)
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
        if self.derived.lexicon is None or not plan.weights:
            return np.zeros(len(best)), np.zeros(len(best))
        weight = np.array([max(w, 0.0) for w in plan.weights.values()])
        mean = best @ weight / weight.sum() if weight.sum() > 0 else best.mean(axis=1)
        return mean, best.min(axis=1)
