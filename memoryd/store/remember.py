"""Remember: a new entry stored, unless the same text is there already (an exact or a near
duplicate), superseding the values its key had and what it corrects (memoryd.meaning); and a
lesson seen again in a later session counted on the lesson it repeats, as is an imported line
with the text of an entry here and a date of its own (another sighting, not a duplicate).
A remember of the same text now (`memory store` twice) is an exact duplicate: nothing new was
seen, and nothing is counted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from memoryd.errors import UnavailableError, stopping_error
from memoryd.meaning import LESSON_COSINE, difference
from memoryd.project import repository_of
from memoryd.provenance import agent_wrote, person_only, typed_by_person
from memoryd.quarantine import TRANSCRIPT_KINDS
from memoryd.quarantine import reason as quarantine_reason
from memoryd.store.database import Store
from memoryd.store.durable import DISK_ERRORS
from memoryd.store.entry_writes import EntryWrites, Unindexed, Vectors, new_uid
from memoryd.store.ledger import Ledger
from memoryd.store.records import (
    Correction,
    Draft,
    Entry,
    Remembered,
    RememberRequest,
    StoredEntry,
)
from memoryd.store.vectors import follow_meta
from memoryd.text import content_hash, lower_keeping_marks

#: Near-duplicate cosines this close to the threshold are decided on vectors embedded alone
#: (dynamic int8 moves a vector by up to ~0.02 with its batch mates).
BORDERLINE = 0.03
#: The entries most like a new one that the write path reads: one may say the same thing
#: where the nearest says another ("Always use tabs" next to "Use tabs" and "Never use tabs").
NEARBY = 5
#: The ``duplicate`` of an imported line counted as another sighting of the entry with its
#: text (Remembering._sighting).
SEEN_AGAIN = "seen again"


@dataclass
class StoredSlice:
    """What one call of :meth:`Remembering.remember_many` did: what became of each draft it
    stored or refused, in order, the texts it needs embedded alone to decide the next one,
    and (when asked to) the vectors of the entries it stored that are still to be indexed."""

    written: list[Remembered]
    wanted: list[str]
    unindexed: list[Unindexed] = field(default_factory=list)


class NeedsAlone(Exception):
    """A near-duplicate decision needs these texts embedded alone (on the embedding thread,
    not the database thread)."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__(texts)
        self.texts = texts


class RememberSettings(Protocol):
    """What a write goes by (the configuration's ``[remember]``, handed down by the daemon):
    the cosine from which a new entry is a near duplicate, and the confidence of an entry
    written by hand."""

    @property
    def near_duplicate_cosine(self) -> float: ...

    @property
    def manual_confidence(self) -> float: ...


def said_before(draft: Entry, other: StoredEntry) -> bool:
    """Whether a write dated before it was written (a past session's words, extracted later:
    memoryd.sessions.extractor) was said before ``other``. A write of now is never "before":
    another machine's clock running ahead (sync) must not turn a new value into an old one."""
    return draft.created < draft.updated and draft.created < other.created


class Remembering(EntryWrites):
    """The write of new entries (:class:`memoryd.store.entries.Entries` is one)."""

    def __init__(self, remember: RememberSettings, store: Store, ledger: Ledger) -> None:
        super().__init__(store, ledger)
        self.remember = remember

    def nearby(self, vector: np.ndarray, agent: str, category: str, project: str | None,
               limit: int = NEARBY) -> list[tuple[StoredEntry, float]]:
        """The active entries of the same agent and category that cover ``project`` (written
        in it, or global: ``Store.find_exact``) most like the vector, best first."""
        if self.index is not None and not self.index.filling:
            follow_meta(self.store, self.index)
            found = self.index.nearest(vector, agent, category, limit, projects=(project, None))
        else:
            ids = [r for r, _ in self.store.knn(vector, 200)]
            rows = self.store.entries_by_rowids(ids)
            candidates = [r for r in ids if r in rows and rows[r].agent == agent
                          and rows[r].category == category and rows[r].status == "active"
                          and rows[r].project in (project, None)][:limit]
            vectors = self.store.vectors_by_rowids(candidates)
            found = sorted(((r, float(v @ vector)) for r, v in vectors.items()),
                           key=lambda item: -item[1])[:limit]
        if not found:
            return []
        rows = self.store.entries_by_rowids([rowid for rowid, _ in found])
        return [(rows[rowid], cosine) for rowid, cosine in found if rowid in rows]

    def drafts(self, requests: Sequence[RememberRequest]) -> list[Draft]:
        """The entries the requests describe, with their ``force`` flags."""
        return [Draft(self.draft_entry(request), request.force) for request in requests]

    def remember_many(self, drafts: Sequence[Draft], vectors: Sequence[Vectors | None],
                      alone: Mapping[str, np.ndarray], slice_s: float, *,
                      index_later: bool = False) -> StoredSlice:
        """Remember drafts in order, in one transaction with one fsync per ledger, until
        ``slice_s`` has passed (at least one) or a near-duplicate decision needs texts that
        ``alone`` lacks: the caller embeds those off this thread and calls again with the
        drafts left. ``index_later``: the stored entries' vectors are left to the caller
        (``unindexed``), who hands them to :meth:`index_stored` once it has answered; the
        entries stay queued for a vector meanwhile."""
        records: dict[str, list[dict[str, Any]]] = {}
        deadline = time.perf_counter() + slice_s
        done = StoredSlice([], [])
        with self.transaction():
            for draft, pair in zip(drafts, vectors):
                # this call is rolled back: none of it reached the ledger
                if self.stopping.is_set():
                    raise stopping_error()
                try:
                    done.written.append(self._remember_one(
                        draft.entry, pair, draft.force, records, alone,
                        done.unindexed if index_later else None))
                except NeedsAlone as needs:
                    done.wanted = needs.texts
                    break
                if time.perf_counter() >= deadline:
                    break
            for agent, agent_records in records.items():
                self.write_ledger(agent, agent_records)
        return done

    def index_in_memory(self, unindexed: Sequence[Unindexed]) -> None:
        """Stored entries' own vectors into the RAM index alone, while the vectors of their
        parts are being made (:meth:`index_stored` then stores both): a near-duplicate check
        compares entries' own vectors only. They stay queued for their vectors meanwhile."""
        self.index_vectors([u.rowid for u in unindexed], [u.vectors for u in unindexed])

    def index_stored(self, unindexed: Sequence[Unindexed]) -> None:
        """Vectors that :meth:`remember_many` left to be indexed: in the database and the RAM
        index, for the entries still waiting for them with the same text (one deleted meanwhile
        has none to get; one the vector backlog embedded meanwhile has its own; one whose text
        changed meanwhile waits for the backlog to embed the new text)."""
        waiting = self.store.queued_for_vectors([(u.rowid, u.hash) for u in unindexed])
        pending = [(u.rowid, u.vectors) for u in unindexed if u.rowid in waiting]
        if not pending:
            return
        try:
            with self.store.transaction():
                self.store.put_vectors([r for r, _ in pending],
                                       np.stack([p[0] for _, p in pending]),
                                       [p[1] for _, p in pending])
                self.index_vectors([r for r, _ in pending], [p for _, p in pending])
        except DISK_ERRORS as exc:
            raise UnavailableError(f"cannot store vectors ({exc})") from exc

    def _remember_one(self, draft: Entry, vectors: Vectors | None, force: bool,
                      records: dict[str, list[dict[str, Any]]],
                      alone: Mapping[str, np.ndarray],
                      unindexed: list[Unindexed] | None = None) -> Remembered:
        agent, category = draft.agent, draft.category
        project = draft.project
        existing = self.store.find_exact(agent, category, draft.hash, project, draft.key)
        if existing is not None:
            if draft.via == "import" and draft.created != existing.created \
                    and draft.kind not in TRANSCRIPT_KINDS \
                    and self.store.same_entry(agent, draft.hash, draft.created) is None:
                # the same words said at another time: a sighting of the entry, not nothing
                return self._sighting(draft, existing, records)
            return Remembered(False, existing, duplicate="exact")
        if draft.via == "import":  # a line imported before (or the exported entry itself):
            # not stored again, whatever became of it here (moved: `memory scope`; forgotten,
            # superseded or archived: a decision, which a second import must not overrule)
            same = self.store.same_entry(agent, draft.hash, draft.created)
            if same is not None:
                return Remembered(False, same,
                                  duplicate="exact" if same.status == "active" else "inactive")
        rivals = self.store.active_with_key(agent, draft.key, project) if draft.key else []
        similar: tuple[StoredEntry, float] | None = None
        corrects: list[tuple[StoredEntry, str]] = []
        resembles: list[StoredEntry] = []
        if not rivals and vectors is not None:
            similar, corrects, resembles = self._near(draft, vectors[0], alone)
            if similar is not None and not force:
                return Remembered(False, similar[0], duplicate="near", cosine=similar[1])
        losers = []
        for rival in rivals:
            if person_only(rival.kind) and not typed_by_person(draft.writer):
                # the user's feedback under this key: only a person replaces it
                draft = replace(draft, status="superseded", superseded_by=rival.uid)
            elif draft.confidence > rival.confidence or (
                    draft.confidence == rival.confidence and not said_before(draft, rival)):
                losers.append(rival)
            elif draft.status == "active":  # surer, or as sure and said later (a past
                # session's value extracted now is an earlier value, not a new one)
                draft = replace(draft, status="superseded", superseded_by=rival.uid)
        corrected = [(old, why) for old, why in corrects if self._corrects(draft, old)]
        agent_records = records.setdefault(agent, [])
        fields = draft.as_dict()  # the ledger's record and the row (neither changes it)
        agent_records.append({"op": "remember", "ts": draft.updated, "entry": fields})
        lost = [self._status_record(loser, "superseded", agent, "key conflict", draft.uid)
                for loser in losers]
        replaced = {old.uid: self._status_record(old, "superseded", draft.writer,
                                                 f"corrected: {why}", draft.uid)
                    for old, why in corrected}
        agent_records.extend(lost)
        agent_records.extend(replaced.values())
        rowid = self.store.insert_entry(fields)
        stored = self.store.entry_by_uid(draft.uid)
        assert stored is not None
        self.store.record_event(draft.uid, "remember", draft.writer, None, stored, draft.updated)
        if unindexed is not None and vectors is not None:
            unindexed.append(Unindexed(rowid, draft.hash, vectors))
        else:
            self._index_entry(rowid, vectors)
        superseded = [self._set_status(loser, "superseded", agent, draft.uid, record["ts"])
                      for loser, record in zip(losers, lost, strict=True)]
        corrections = tuple(
            Correction(self._set_status(old, "superseded", draft.writer, draft.uid,
                                        replaced[old.uid]["ts"]), why, "supersede")
            if old.uid in replaced else Correction(old, why, "dispute")
            for old, why in corrects)
        superseded += [c.entry for c in corrections if c.action == "supersede"]
        return Remembered(True, stored, superseded=tuple(superseded),
                          similar=similar[0] if similar else None,
                          cosine=similar[1] if similar else None, corrects=corrections,
                          resembles=tuple(resembles))

    def _near(self, draft: Entry, vector: np.ndarray, alone: Mapping[str, np.ndarray]
              ) -> tuple[tuple[StoredEntry, float] | None, list[tuple[StoredEntry, str]],
                         list[StoredEntry]]:
        """What the entries most like a new one are to it (memoryd.meaning): a near duplicate
        — says the same thing, at cosine ≥ the threshold — the entries it contradicts (a
        "don't" of a "do", another number, an antonym, another order), from cosine 0.75 for a
        lesson, and those it says otherwise at that cosine without contradicting them. A text
        that says another thing is never a duplicate, however alike."""
        threshold = self.remember.near_duplicate_cosine
        low = min(threshold, LESSON_COSINE) if draft.kind == "lesson" else threshold
        nearby = [(entry, cosine) for entry, cosine in self.nearby(
            vector, draft.agent, draft.category, draft.project)
            if cosine >= low - BORDERLINE]
        similar: tuple[StoredEntry, float] | None = None
        corrects: list[tuple[StoredEntry, str]] = []
        resembles: list[StoredEntry] = []
        for entry, cosine in nearby:
            differs = difference(draft.text, entry.text)
            if differs is not None:
                if cosine >= low and draft.kind not in TRANSCRIPT_KINDS \
                        and entry.kind not in TRANSCRIPT_KINDS:  # what was, not rules
                    if differs.contradiction and entry.kind == draft.kind:
                        corrects.append((entry, differs.why()))
                    else:
                        resembles.append(entry)
                continue
            if similar is not None or abs(cosine - threshold) > BORDERLINE and cosine < threshold:
                continue
            if abs(cosine - threshold) <= BORDERLINE:
                # a vector moves a little with its batch mates: decide on both texts alone
                pair = (draft.text, entry.text)
                missing = [text for text in pair if text not in alone]
                if missing:
                    raise NeedsAlone(missing)
                cosine = float(alone[pair[0]] @ alone[pair[1]])
            if cosine >= threshold:
                similar = (entry, round(cosine, 4))
        return similar, corrects, resembles

    @staticmethod
    def _corrects(draft: Entry, old: StoredEntry) -> bool:
        """Whether a new entry that contradicts an old one supersedes it (else both stay,
        disputed, until a person forgets or supersedes one): a person's words (typed at a
        terminal, or extracted from their own messages: memoryd.provenance; an agent's
        write, through the library, MCP, a hook or a script, overrules nothing), at least as
        confident (a person's write corrects an extracted lesson and another write of
        theirs; an extracted one does not correct what they wrote), not imported history,
        and not looking like a planted instruction (memoryd.quarantine), nor said before the
        old one (a past session's words, extracted later); and the old one is not the user's
        feedback, nor a line of a memory file (its file is the truth: only a person or the
        notebook pass edits it)."""
        return (not agent_wrote(draft) and draft.confidence >= old.confidence
                and draft.via != "import" and not said_before(draft, old)
                and quarantine_reason(draft.text, draft.kind) is None
                and old.kind != "feedback" and old.via != "watch")

    def _sighting(self, draft: Entry, entry: StoredEntry,
                  records: dict[str, list[dict[str, Any]]]) -> Remembered:
        """An imported line with the text of an active entry and a date of its own (the same
        lesson written down on another day, in another session): kept as a sighting of the
        entry — an entry of its own with its date and session, superseded by it — and the
        entry's occurrences up by one, as :meth:`seen_again` counts a lesson said again in a
        later session (promotion counts the sightings). In the caller's transaction; both
        records go to the ledger with the rest (``records``), so a rebuild counts it again.
        A second import of the line finds the sighting by its date (``Store.same_entry``)."""
        sighting = replace(draft, status="superseded", superseded_by=entry.uid, kind=entry.kind,
                           category=entry.category, project=entry.project)
        now = sighting.updated
        occurrences = (entry.occurrences or 1) + 1
        records.setdefault(entry.agent, []).extend([
            {"op": "remember", "ts": now, "entry": sighting.as_dict()},
            {"op": "update", "ts": now, "id": entry.uid, "fields": {"occurrences": occurrences},
             "actor": "import (seen again)"}])
        self.store.insert_entry(sighting.as_dict())
        stored = self.store.entry_by_uid(sighting.uid)
        self.store.record_event(sighting.uid, "remember", sighting.writer, None, stored, now)
        self.store.update_entry(entry.uid, occurrences=occurrences, updated=now)
        after = self.store.entry_by_uid(entry.uid)
        assert after is not None
        self.store.record_event(entry.uid, "seen again", sighting.writer, entry, after, now)
        return Remembered(False, after, duplicate=SEEN_AGAIN)

    def seen_again(self, request: RememberRequest, uid: str) -> StoredEntry | None:
        """A lesson session-end extraction found said again in a later session: the sighting
        is kept as an entry of its own (its session and message: provenance), superseded by
        the lesson it repeats, and the lesson's occurrences rise by one — what a merge by
        consolidation would do, at once; promotion counts the sessions of the copies merged
        into a lesson (memoryd.passes.promote). Both go to the ledger, so a rebuild counts
        them again. Returns the lesson as it is now, or None when nothing was counted: the
        lesson is gone, or this session was counted already (a session extracted twice)."""
        draft = self.draft_entry(request)
        with self.transaction():
            entry = self.store.entry_by_uid(uid)
            session = draft.session
            if entry is None or entry.status != "active" or entry.agent != draft.agent \
                    or session is None or entry.session == session:
                return None
            if self.store._db.execute(
                    "SELECT 1 FROM entries WHERE agent=? AND kind=? AND status='superseded' "
                    "AND superseded_by=? AND session=? LIMIT 1",
                    (entry.agent, entry.kind, uid, session)).fetchone():
                return None
            draft = replace(draft, status="superseded", superseded_by=uid, kind=entry.kind,
                            category=entry.category, project=entry.project)
            now = draft.updated
            occurrences = (entry.occurrences or 1) + 1
            self.write_ledger(entry.agent, [
                {"op": "remember", "ts": now, "entry": draft.as_dict()},
                {"op": "update", "ts": now, "id": uid, "fields": {"occurrences": occurrences},
                 "actor": "extract (seen again)"}])
            self.store.insert_entry(draft.as_dict())
            stored = self.store.entry_by_uid(draft.uid)
            self.store.record_event(draft.uid, "remember", draft.writer, None, stored, now)
            self.store.update_entry(uid, occurrences=occurrences, updated=now)
            after = self.store.entry_by_uid(uid)
            assert after is not None
            self.store.record_event(uid, "seen again", draft.writer, entry, after, now)
            return after

    def draft_entry(self, request: RememberRequest) -> Entry:
        """The entry a remember request describes (validated: memoryd.server.requests), not
        yet stored: what it leaves out filled in, its text redacted already (memoryd.writes)."""
        project = request.project
        if project is None and request.cwd:
            project = repository_of(request.cwd)
        now = time.time()
        created = request.created
        via = request.via
        if created is not None:  # imported history keeps its own date; provenance says so
            via = "import" if via == "api" else via
        kind = request.kind or ("lesson" if request.polarity else "fact" if request.key
                                else "note")
        confidence = request.confidence
        return Entry(
            uid=new_uid(),
            agent=request.agent,
            project=project,
            kind=kind,
            category=request.category.strip(),
            key=request.key,
            text=request.text.strip(),
            hash=content_hash(request.text),
            confidence=confidence if confidence is not None else self.remember.manual_confidence,
            tags=sorted({lower_keeping_marks(t) for t in request.tags}),
            status="active",
            created=created if created is not None else now,
            updated=now,
            writer=request.writer or request.agent,
            via=via,
            session=request.session,
            source=None,
            line_start=None,
            line_end=None,
            message_id=request.message_id,
            superseded_by=None,
            polarity=request.polarity,
        )

