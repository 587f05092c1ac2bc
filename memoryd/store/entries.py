"""The memory operations that write and read entries by id: remember, get, forget, supersede,
history (the replay of the ledgers at start: :mod:`memoryd.maintenance.replay`).

Everything here is synchronous and runs on the daemon's single database thread; vectors are
computed beforehand on the embedding thread and passed in. Each write goes to the agent's
ledger (fsynced) before the database, so what is acknowledged survives a crash.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import apsw
import numpy as np

from memoryd.errors import (
    BadParamsError,
    ForbiddenError,
    NotFoundError,
    UnavailableError,
    stopping_error,
)
from memoryd.meaning import LESSON_COSINE, difference
from memoryd.project import repository_of
from memoryd.provenance import agent_wrote, person_only, person_only_refusal, typed_by_person
from memoryd.quarantine import reason as quarantine_reason
from memoryd.quarantine import release_target
from memoryd.store.archive import TRANSCRIPT_PREFIX
from memoryd.store.database import Store
from memoryd.store.durable import DISK_ERRORS
from memoryd.store.file_journal import versions as file_versions
from memoryd.store.ledger import Ledger
from memoryd.store.records import Asker, Draft, Entry, EntryRequest, RememberRequest
from memoryd.store.usage import Usage
from memoryd.store.vectors import VectorIndex, follow_meta
from memoryd.text import content_hash

log = logging.getLogger(__name__)

KINDS = ("fact", "lesson", "feedback", "note", "turn", "summary")
#: ``archived``: unused for long, set aside by the retain pass (memoryd.store.usage.Disuse):
#: never injected, found with ``--status archived``, back with ``memory undo``.
STATUSES = ("active", "superseded", "forgotten", "archived")
MAX_TEXT_CHARS = 32_000
#: Near-duplicate cosines this close to the threshold are decided on vectors embedded alone
#: (dynamic int8 moves a vector by up to ~0.02 with its batch mates).
BORDERLINE = 0.03
#: The entries most like a new one that the write path reads: one may say the same thing
#: where the nearest says another ("Always use tabs" next to "Use tabs" and "Never use tabs").
NEARBY = 5

#: An entry's vector and the vectors of its parts (text.split_parts; 0 rows for one sentence).
Vectors = tuple[np.ndarray, np.ndarray]


def mark_target(uid: str, hash_: str | None, via: str | None) -> str:
    """What a forget or supersede of an entry is kept under when the entry is not indexed
    (Store.set_mark): a watched file's entry by its text, since it gets a new uid when it is
    indexed again; a transcript chunk (stable uid "t…") and any other entry by its uid."""
    if via == "watch" and hash_ and not uid.startswith(TRANSCRIPT_PREFIX):
        return "hash:" + hash_
    return "uid:" + uid


def new_uid() -> str:
    """19 random hex digits: random from the first one, so a prefix of 6 is unique in
    practice (ids once began with the time, so all of a minute's shared 7 characters; those
    stay valid). Never starts with "t", the transcript chunks' prefix."""
    return secrets.token_hex(10)[:19]


def apply_release(store: Store, agent: str, uid: str, hash_: str | None, actor: str | None,
                  ts: float) -> None:
    """A quarantined text released by a person (a request, or its ledger record replayed): the
    mark outlives the row (a watched entry is indexed again with a new uid, a reindex inserts
    the row again)."""
    if hash_:
        store.set_mark(agent, release_target(hash_), "released", None, actor, ts)
    entry = store.entry_by_uid(uid)
    if entry is not None and entry["agent"] == agent and entry["quarantined"]:
        store.update_entry(uid, quarantined=0)
        store.journal(uid, "released", actor, entry, store.entry_by_uid(uid), ts)


@dataclass
class Remembered:
    """What one call of :meth:`Entries.remember_many` did: a reply for each draft it stored
    or refused, in order, the texts it needs embedded alone to decide the next one, and (when
    asked to) the vectors of the entries it stored that are still to be indexed."""

    replies: list[dict[str, Any]]
    wanted: list[str]
    unindexed: list[Unindexed] = field(default_factory=list)


@dataclass(frozen=True)
class Unindexed:
    """A stored entry's vectors, still to be put in the database and the RAM index, and the
    hash of the text they are of."""

    rowid: int
    hash: str
    vectors: Vectors


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


class Entries:
    def __init__(self, remember: RememberSettings, store: Store, ledger: Ledger) -> None:
        self.remember = remember
        self.store = store
        self.ledger = ledger
        self.index: VectorIndex | None = None
        self.stopping = threading.Event()  # set when memoryd stops: long writes end early
        #: (agent, size before) of each ledger append of the open transaction()
        self._appended: list[tuple[str, int]] | None = None
        #: rows put into the RAM vector index by the open transaction()
        self._indexed: list[int] = []

    # -- helpers ----------------------------------------------------------------------

    def resolve(self, entry_id: str) -> dict[str, Any]:
        """The entry with this id, or with this unique id prefix (4+ characters)."""
        entry = self.store.entry_by_uid(entry_id)
        if entry is not None:
            return entry
        if len(entry_id) >= 4:
            matches = self.store.uids_with_prefix(entry_id, limit=4)
            if len(matches) == 1:
                found = self.store.entry_by_uid(matches[0])
                assert found is not None
                return found
            if len(matches) > 1:
                listed = ", ".join(matches[:3]) + (", …" if len(matches) > 3 else "")
                raise BadParamsError(f"id prefix {entry_id!r} is ambiguous ({listed}); give "
                                     "more characters")
        short = " (a prefix needs 4 characters or more)" if len(entry_id) < 4 else ""
        raise NotFoundError(f"no entry with id {entry_id!r}{short}")

    def write_ledger(self, agent: str, records: list[dict[str, Any]], *,
                     sync: bool = True) -> None:
        """Append records to the agent's ledger (one fsync) and record the new offset. The
        caller holds the database transaction (:meth:`transaction`), which commits only after
        the fsync; if it fails, the records are taken back. ``sync`` False: the caller fsyncs
        the ledger later, before it tells anyone of the change (a pass's run)."""
        try:
            before, size = self.ledger.append(agent, records, sync=sync)
        except OSError as exc:
            raise UnavailableError(
                f"not stored: cannot write the ledger of {agent!r} "
                f"({exc.strerror or exc}); nothing of this request was kept") from None
        if self._appended is not None:
            self._appended.append((agent, before))
        self.store.set_meta(f"ledger:{agent}", str(size))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A database transaction around writes that append to ledgers. The ack rule: a write
        is acknowledged only once its ledger lines are fsynced *and* the transaction committed;
        when anything fails after the append (the commit on a full disk, an I/O error), the
        ledger is cut back to its size before the append, so a write answered as failed is
        never resurrected by replay."""
        outer = self._appended is None
        if outer:
            self._appended = []
        appended = self._appended
        assert appended is not None
        try:
            with self.store.transaction():
                yield
        except BaseException as exc:
            if outer:
                for rowid in self._indexed:  # rolled back: the row is not there
                    self.unindex(rowid)
                for agent, size in reversed(appended):
                    if not self.ledger.undo(agent, size):
                        log.critical("A failed write stays in the ledger of %r: it will come "
                                     "back at the next replay.", agent)
            if outer and isinstance(exc, (*DISK_ERRORS, apsw.BusyError)):
                raise UnavailableError(
                    f"not stored: the index could not commit ({exc}); nothing of this request "
                    "was kept") from exc
            raise
        finally:
            if outer:
                self._appended = None
                self._indexed = []

    def _index_entry(self, rowid: int, vectors: Vectors | None) -> None:
        if vectors is None:
            return
        self.store.put_vectors([rowid], vectors[0][None, :], [vectors[1]])
        self.index_vectors([rowid], [vectors])
        if self._appended is not None:  # taken out of the RAM index if the transaction fails
            self._indexed.append(rowid)

    def index_vectors(self, rowids: list[int], vectors: list[Vectors]) -> None:
        """Put stored vectors into the RAM index (when it is built)."""
        if self.index is None:
            return
        meta = self.store.vector_meta(rowids)
        present = [i for i, r in enumerate(rowids) if r in meta]
        if present:
            self.index.add_many([rowids[i] for i in present],
                                np.stack([vectors[i][0] for i in present]),
                                [vectors[i][1] for i in present],
                                [meta[rowids[i]] for i in present])

    def set_index_status(self, rowid: int, status: str) -> None:
        if self.index is not None:
            self.index.set_status(rowid, status)

    def unindex(self, rowid: int) -> None:
        """The entry's row was deleted (or its insert rolled back): out of the RAM index."""
        if self.index is not None:
            self.index.remove(rowid)

    def _set_status(self, entry: dict[str, Any], status: str, actor: str | None,
                    superseded_by: str | None = None) -> dict[str, Any]:
        now = time.time()
        changes: dict[str, Any] = {"status": status, "updated": now}
        if superseded_by:
            changes["superseded_by"] = superseded_by
        self.store.update_entry(entry["id"], **changes)
        if entry["via"] == "watch":  # indexed again with a new uid, it keeps this status
            self.store.set_mark(entry["agent"], mark_target(entry["id"], entry["hash"], "watch"),
                                status, superseded_by, actor, now)
        after = self.store.entry_by_uid(entry["id"])
        assert after is not None
        self.store.journal(entry["id"], status, actor, entry, after, now)
        self.set_index_status(entry["rowid"], status)
        return after

    @staticmethod
    def _status_record(entry: dict[str, Any], status: str, actor: str | None,
                       reason: str | None = None, superseded_by: str | None = None,
                       ) -> dict[str, Any]:
        record = {"op": "status", "ts": time.time(), "id": entry["id"], "status": status,
                  "actor": actor, "hash": entry["hash"], "via": entry["via"]}
        if reason:
            record["reason"] = reason
        if superseded_by:
            record["superseded_by"] = superseded_by
        return record

    def nearby(self, vector: np.ndarray, agent: str, category: str, project: str | None,
               limit: int = NEARBY) -> list[tuple[dict[str, Any], float]]:
        """The active entries of the same agent and category that cover ``project`` (written
        in it, or global: ``Store.find_exact``) most like the vector, best first."""
        if self.index is not None:
            follow_meta(self.store, self.index)
            found = self.index.nearest(vector, agent, category, limit, projects=(project, None))
        else:
            ids = [r for r, _ in self.store.knn(vector, 200)]
            rows = self.store.entries_by_rowids(ids)
            candidates = [r for r in ids if r in rows and rows[r]["agent"] == agent
                          and rows[r]["category"] == category and rows[r]["status"] == "active"
                          and rows[r]["project"] in (project, None)][:limit]
            vectors = self.store.vectors_by_rowids(candidates)
            found = sorted(((r, float(v @ vector)) for r, v in vectors.items()),
                           key=lambda item: -item[1])[:limit]
        if not found:
            return []
        rows = self.store.entries_by_rowids([rowid for rowid, _ in found])
        return [(rows[rowid], cosine) for rowid, cosine in found if rowid in rows]

    # -- methods ----------------------------------------------------------------------

    def drafts(self, requests: Sequence[RememberRequest]) -> list[Draft]:
        """The entries the requests describe, with their ``force`` flags."""
        return [Draft(self.draft_entry(request), request.force) for request in requests]

    def remember_many(self, drafts: Sequence[Draft], vectors: Sequence[Vectors | None],
                      alone: Mapping[str, np.ndarray], slice_s: float, *,
                      index_later: bool = False) -> Remembered:
        """Remember drafts in order, in one transaction with one fsync per ledger, until
        ``slice_s`` has passed (at least one) or a near-duplicate decision needs texts that
        ``alone`` lacks: the caller embeds those off this thread and calls again with the
        drafts left. ``index_later``: the stored entries' vectors are left to the caller
        (``unindexed``), who hands them to :meth:`index_stored` once it has answered; the
        entries stay queued for a vector meanwhile."""
        records: dict[str, list[dict[str, Any]]] = {}
        deadline = time.perf_counter() + slice_s
        done = Remembered([], [])
        with self.transaction():
            for draft, pair in zip(drafts, vectors):
                # this call is rolled back: none of it reached the ledger
                if self.stopping.is_set():
                    raise stopping_error()
                try:
                    done.replies.append(self._remember_one(
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
                      unindexed: list[Unindexed] | None = None) -> dict[str, Any]:
        agent, category = draft.agent, draft.category
        project = draft.project
        existing = self.store.find_exact(agent, category, draft.hash, project)
        if existing is not None:
            return {"stored": False, "duplicate": "exact", "entry": existing}
        rivals = self.store.active_with_key(agent, draft.key, project) if draft.key else []
        similar = None
        corrects: list[tuple[dict[str, Any], str]] = []
        if not rivals and vectors is not None:
            similar, corrects = self._near(draft, vectors[0], alone)
            if similar is not None and not force:
                return {"stored": False, "duplicate": "near", **similar}
        losers = []
        for rival in rivals:
            if person_only(rival) and not typed_by_person(draft.writer):
                # the user's feedback under this key: only a person replaces it
                draft = replace(draft, status="superseded", superseded_by=rival["id"])
            elif draft.confidence >= rival["confidence"]:
                losers.append(rival)
            elif draft.status == "active":
                draft = replace(draft, status="superseded", superseded_by=rival["id"])
        corrected = [(old, why) for old, why in corrects if self._corrects(draft, old)]
        agent_records = records.setdefault(agent, [])
        agent_records.append({"op": "remember", "ts": draft.updated, "entry": draft.as_dict()})
        agent_records.extend(
            self._status_record(loser, "superseded", agent, "key conflict", draft.uid)
            for loser in losers
        )
        agent_records.extend(
            self._status_record(old, "superseded", draft.writer, f"corrected: {why}",
                                draft.uid) for old, why in corrected)
        rowid = self.store.insert_entry(draft.as_dict())
        stored = self.store.entry_by_uid(draft.uid)
        assert stored is not None
        self.store.journal(draft.uid, "remember", draft.writer, None, stored, draft.updated)
        if unindexed is not None and vectors is not None:
            unindexed.append(Unindexed(rowid, draft.hash, vectors))
        else:
            self._index_entry(rowid, vectors)
        superseded = [self._set_status(loser, "superseded", agent, draft.uid) for loser in losers]
        reply: dict[str, Any] = {"stored": True, "entry": stored, "superseded": superseded}
        if similar:
            reply["similar"] = similar
        if corrects:
            replaced = {old["id"] for old, _ in corrected}
            reply["corrects"] = [
                {"entry": self._set_status(old, "superseded", draft.writer, draft.uid)
                 if old["id"] in replaced else old, "why": why,
                 "action": "supersede" if old["id"] in replaced else "dispute"}
                for old, why in corrects]
            reply["superseded"] += [c["entry"] for c in reply["corrects"]
                                    if c["action"] == "supersede"]
        return reply

    def _near(self, draft: Entry, vector: np.ndarray, alone: Mapping[str, np.ndarray]
              ) -> tuple[dict[str, Any] | None, list[tuple[dict[str, Any], str]]]:
        """What the entries most like a new one are to it (memoryd.meaning): a near duplicate
        — says the same thing, at cosine ≥ the threshold — and the entries it contradicts (a
        "don't" of a "do", another number, an antonym, another order), from cosine 0.75 for a
        lesson. A text that says another thing is never a duplicate, however alike."""
        threshold = self.remember.near_duplicate_cosine
        low = min(threshold, LESSON_COSINE) if draft.kind == "lesson" else threshold
        nearby = [(entry, cosine) for entry, cosine in self.nearby(
            vector, draft.agent, draft.category, draft.project)
            if cosine >= low - BORDERLINE]
        similar = None
        corrects: list[tuple[dict[str, Any], str]] = []
        for entry, cosine in nearby:
            differs = difference(draft.text, entry["text"])
            if differs is not None:
                if differs.contradiction and cosine >= low and entry["kind"] == draft.kind \
                        and draft.kind not in ("summary", "turn"):  # what was, not rules
                    corrects.append((entry, differs.why()))
                continue
            if similar is not None or abs(cosine - threshold) > BORDERLINE and cosine < threshold:
                continue
            if abs(cosine - threshold) <= BORDERLINE:
                # a vector moves a little with its batch mates: decide on both texts alone
                pair = (draft.text, entry["text"])
                missing = [text for text in pair if text not in alone]
                if missing:
                    raise NeedsAlone(missing)
                cosine = float(alone[pair[0]] @ alone[pair[1]])
            if cosine >= threshold:
                similar = {"entry": entry, "cosine": round(cosine, 4)}
        return similar, corrects

    @staticmethod
    def _corrects(draft: Entry, old: dict[str, Any]) -> bool:
        """Whether a new entry that contradicts an old one supersedes it (else both stay,
        disputed, until a person forgets or supersedes one): a person's words (typed at a
        terminal, or extracted from their own messages: memoryd.provenance; an agent's
        write, through the library, MCP, a hook or a script, overrules nothing), at least as
        confident (a person's write corrects an extracted lesson and another write of
        theirs; an extracted one does not correct what they wrote), not imported history,
        and not looking like a planted instruction (memoryd.quarantine); and the old one is
        not the user's feedback, nor a line of a memory file (its file is the truth: only a
        person or the notebook pass edits it)."""
        return (not agent_wrote(draft.as_dict()) and draft.confidence >= old["confidence"]
                and draft.via != "import"
                and quarantine_reason(draft.text, draft.kind) is None
                and old["kind"] != "feedback" and old["via"] != "watch")

    def seen_again(self, request: RememberRequest, uid: str) -> dict[str, Any] | None:
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
            if entry is None or entry["status"] != "active" or entry["agent"] != draft.agent \
                    or session is None or entry["session"] == session:
                return None
            if self.store._db.execute(
                    "SELECT 1 FROM entries WHERE agent=? AND kind=? AND status='superseded' "
                    "AND superseded_by=? AND session=? LIMIT 1",
                    (entry["agent"], entry["kind"], uid, session)).fetchone():
                return None
            draft = replace(draft, status="superseded", superseded_by=uid, kind=entry["kind"],
                            category=entry["category"], project=entry["project"])
            now = draft.updated
            occurrences = (entry["occurrences"] or 1) + 1
            self.write_ledger(entry["agent"], [
                {"op": "remember", "ts": now, "entry": draft.as_dict()},
                {"op": "update", "ts": now, "id": uid, "fields": {"occurrences": occurrences},
                 "actor": "extract (seen again)"}])
            self.store.insert_entry(draft.as_dict())
            stored = self.store.entry_by_uid(draft.uid)
            self.store.journal(draft.uid, "remember", draft.writer, None, stored, now)
            self.store.update_entry(uid, occurrences=occurrences, updated=now)
            after = self.store.entry_by_uid(uid)
            assert after is not None
            self.store.journal(uid, "seen again", draft.writer, entry, after, now)
            return after

    def draft_entry(self, request: RememberRequest) -> Entry:
        """The entry a remember request describes (validated: memoryd.server.requests), not
        yet stored: what it leaves out filled in, its text redacted already (Engine.remember)."""
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
            tags=sorted({t.lower() for t in request.tags}),
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

    def get(self, request: EntryRequest) -> dict[str, Any]:
        """The entry with its ``usage`` record (memoryd.store.usage: the sessions it was
        injected into, followed, broken, …); ``stale`` says what it names that its project no
        longer has (the staleness pass)."""
        entry = self.resolve(request.id)
        return {**entry, "usage": Usage(self.store).record(entry["id"]).as_dict()}

    def owned(self, request: EntryRequest) -> tuple[dict[str, Any], str]:
        """The entry a forget or supersede names, and who asks (refused for another agent)."""
        return self._owned(request)

    def _owned(self, request: EntryRequest) -> tuple[dict[str, Any], str]:
        entry = self.resolve(request.id)
        actor = request.asker.agent
        if actor is not None and actor != entry["agent"]:
            raise ForbiddenError(
                f"entry {entry['id']} belongs to agent {entry['agent']!r}; "
                f"agent {actor!r} may read it but not change it"
            )
        return entry, request.asker.acts_as()  # a connection acts as its bound agent

    def forget_entry(self, entry: dict[str, Any], actor: str, reason: str | None,
                     change: int | None = None) -> dict[str, Any]:
        """Forget an entry: its ledger's status record (naming the journal's ``change`` that
        makes it undoable: memoryd.passes.journal.Journal.forget), then the row."""
        record = self._status_record(entry, "forgotten", actor, reason)
        if change is not None:
            record["change"] = change
        with self.transaction():
            self.write_ledger(entry["agent"], [record])
            return self._set_status(entry, "forgotten", actor)

    def head_of(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The newest version of an entry: its ``superseded_by`` links followed to the end."""
        seen = {entry["id"]}
        while entry.get("superseded_by"):
            successor = self.store.entry_by_uid(entry["superseded_by"])
            if successor is None or successor["id"] in seen:
                break
            seen.add(successor["id"])
            entry = successor
        return entry

    @staticmethod
    def check_person_kept(entry: dict[str, Any], asker: Asker, action: str) -> None:
        """What only a person writes (the user's feedback) only a person supersedes or
        forgets: memoryd.provenance's rule, for every path that does either (this one, and
        memoryd.passes.entry_files for a file's lines). A request with no connection behind
        it is memoryd's own."""
        refusal = person_only_refusal(entry, action, asker.human)
        if refusal is not None:
            raise ForbiddenError(refusal)

    def check_supersedable(self, old: dict[str, Any]) -> None:
        """A version chain has one head: superseding an old version would fork it (two
        active successors, and the first one lost from the history)."""
        if old["status"] == "superseded":
            head = self.head_of(old)
            current = (f"its current version is {head['id']} ({head['status']}): supersede "
                       f"that one" if head["id"] != old["id"] else "its successor is gone")
            raise BadParamsError(
                f"entry {old['id']} was already superseded by {old['superseded_by']}; {current}")
        if old["status"] == "forgotten":
            raise BadParamsError(f"entry {old['id']} is forgotten; store the new text as a new "
                                 "entry instead (memory store)")

    def supersede(self, request: EntryRequest, vectors: Vectors | None) -> dict[str, Any]:
        old, actor = self._owned(request)
        self.check_person_kept(old, request.asker, "supersede")
        self.check_supersedable(old)
        text = request.text
        assert text is not None  # redacted already (Engine.supersede)
        now = time.time()
        confidence = request.confidence
        entry = Entry(
            agent=old["agent"], project=old["project"], kind=old["kind"],
            category=old["category"], key=old["key"], tags=old["tags"], session=old["session"],
            uid=new_uid(),
            text=text.strip(),
            hash=content_hash(text),
            confidence=confidence if confidence is not None else old["confidence"],
            status="active",
            created=now,
            updated=now,
            writer=actor,
            via="api",
            source=None,
            line_start=None,
            line_end=None,
            message_id=None,
            superseded_by=None,
            polarity=old.get("polarity"),
        )
        new = entry.as_dict()
        records = [
            {"op": "remember", "ts": now, "entry": new},
            self._status_record(old, "superseded", actor, "superseded", new["uid"]),
        ]
        if old["key"]:  # embedded without its key: the vector backlog embeds its index text
            vectors = None
        with self.transaction():
            self.write_ledger(old["agent"], records)
            rowid = self.store.insert_entry(new)
            stored = self.store.entry_by_uid(new["uid"])
            assert stored is not None
            self.store.journal(new["uid"], "remember", actor, None, stored, now)
            self._index_entry(rowid, vectors)
            previous = self._set_status(old, "superseded", actor, new["uid"])
        return {"entry": stored, "superseded": previous}

    def release(self, request: EntryRequest) -> dict[str, Any]:
        """Let a quarantined entry be injected: a person's decision (``memory release``)."""
        entry, actor = self._owned(request)
        if not entry["quarantined"]:
            raise BadParamsError(f"release: entry {entry['id']} is not quarantined")
        now = time.time()
        with self.store.transaction():
            self.write_ledger(entry["agent"], [{
                "op": "release", "ts": now, "id": entry["id"], "hash": entry["hash"],
                "via": entry["via"], "actor": actor}])
            apply_release(self.store, entry["agent"], entry["id"], entry["hash"], actor, now)
        after = self.store.entry_by_uid(entry["id"])
        assert after is not None
        return after

    def history(self, entry_id: str | None, key: str | None, agent: str | None
                ) -> dict[str, Any]:
        """An entry's versions and events: by id (or prefix), or an agent's key's."""
        if entry_id is not None:
            try:
                entry = self.resolve(entry_id)
            except NotFoundError:
                return self._history_of_removed(entry_id)
            agent, key = entry["agent"], key or entry["key"]
            related = {entry["id"]: entry}
        else:
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
            for predecessor in self.store._db.execute(
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
        if entry_id.startswith("file:") and events:  # the memory tools' deltas, as whole texts
            for event, version in zip(events, file_versions(self.store, entry_id)):
                event["before"] = {"text": version.before} if version.before is not None else None
                event["after"] = {"text": version.after}
            return {"entries": [], "events": events}
        if not events:
            raise NotFoundError(f"no entry with id {entry_id!r}")
        last = next((e["before"] for e in reversed(events) if e["before"]), None)
        entries = [{**last, "status": "removed"}] if last else []
        return {"entries": entries, "events": events}
