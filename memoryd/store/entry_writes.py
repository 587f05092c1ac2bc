"""What every write of entries goes through: the agent's ledger first (fsynced), then the
index, in one transaction that takes the ledger back when it fails (the ack rule:
:meth:`EntryWrites.transaction`), and the RAM vector index kept in step. New entries
(memoryd.store.remember) and changes of an entry by its id (memoryd.store.entries) are written
through it; so are the passes' changes.

Everything here is synchronous and runs on the daemon's single database thread; vectors are
computed beforehand on the embedding thread and passed in.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np

from memoryd.quarantine import release_target
from memoryd.store.archive import TRANSCRIPT_PREFIX
from memoryd.store.database import Store
from memoryd.store.durable import DISK_ERRORS, not_stored
from memoryd.store.ledger import Ledger
from memoryd.store.records import StoredEntry
from memoryd.store.vectors import VectorIndex

log = logging.getLogger(__name__)

#: An entry's vector and the vectors of its parts (text.split_parts; 0 rows for one sentence).
Vectors = tuple[np.ndarray, np.ndarray]


def mark_target(uid: str, hash_: str | None, via: str | None) -> str:
    """What a forget or supersede of an entry is kept under when the entry is not indexed
    (Store.set_mark): a watched file's entry by its text, since it gets a new uid when it is
    indexed again; a transcript chunk (stable uid "t…") and any other entry by its uid. The
    indexer applies a chunk's mark when it indexes the chunk again; a file's line is active
    while its file holds it, whatever its text's mark says (the file is the truth: a line
    forgotten is taken out of its file, memoryd.passes.entry_files)."""
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
    if entry is not None and entry.agent == agent and entry.quarantined:
        store.update_entry(uid, quarantined=0)
        store.record_event(uid, "released", actor, entry, store.entry_by_uid(uid), ts)


@dataclass(frozen=True)
class Unindexed:
    """A stored entry's vectors, still to be put in the database and the RAM index, and the
    hash of the text they are of."""

    rowid: int
    hash: str
    vectors: Vectors


class EntryWrites:
    """The ledger, the transaction and the RAM vector index of every write of entries
    (:class:`memoryd.store.entries.Entries` is one)."""

    def __init__(self, store: Store, ledger: Ledger) -> None:
        self.store = store
        self.ledger = ledger
        self.index: VectorIndex | None = None
        self.stopping = threading.Event()  # set when memoryd stops: long writes end early
        #: (agent, size before) of each ledger append of the open transaction()
        self._appended: list[tuple[str, int]] | None = None
        #: rows put into the RAM vector index by the open transaction()
        self._indexed: list[int] = []

    def write_ledger(self, agent: str, records: list[dict[str, Any]], *,
                     sync: bool = True) -> None:
        """Append records to the agent's ledger (one fsync) and record the new offset. The
        caller holds the database transaction (:meth:`transaction`), which commits only after
        the fsync; if it fails, the records are taken back. ``sync`` False: the caller fsyncs
        the ledger later, before it tells anyone of the change (a pass's run)."""
        try:
            before, size = self.ledger.append(agent, records, sync=sync)
        except OSError as exc:
            raise not_stored(f"cannot write the ledger of {agent!r}", exc) from None
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
                raise not_stored("the index could not commit", exc,
                                 self.store.system_errno()) from exc
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

    def _set_status(self, entry: StoredEntry, status: str, actor: str | None,
                    superseded_by: str | None, at: float) -> StoredEntry:
        """The entry's row, mark and event for a change of status whose ledger record is
        dated ``at`` (:meth:`_status_record`): the event is dated as the record is, so that
        what this machine compares a later record with (memoryd.maintenance.replay) is the
        number every other machine, and a rebuild, compares it with."""
        now = at
        changes: dict[str, Any] = {"status": status, "updated": now,
                                   "superseded_by": superseded_by}  # none but a supersede's
        self.store.update_entry(entry.uid, **changes)
        if entry.via == "watch":  # indexed again with a new uid, it keeps this status
            self.store.set_mark(entry.agent, mark_target(entry.uid, entry.hash, "watch"),
                                status, superseded_by, actor, now)
        after = self.store.entry_by_uid(entry.uid)
        assert after is not None
        self.store.record_event(entry.uid, status, actor, entry, after, now)
        self.set_index_status(entry.rowid, status)
        return after

    def decided_at(self, entry: StoredEntry) -> float:
        """The time of a change of an entry's status: now, but never before its last one (a
        clock set back must not make a rebuild, or another machine, take the older change
        for the later: memoryd.maintenance.replay)."""
        last = self.store.status_changed_at(entry.uid)
        return time.time() if last is None else max(time.time(), last + 0.001)

    def _status_record(self, entry: StoredEntry, status: str, actor: str | None,
                       reason: str | None = None, superseded_by: str | None = None,
                       ) -> dict[str, Any]:
        record = {"op": "status", "ts": self.decided_at(entry), "id": entry.uid,
                  "status": status, "was": entry.status, "actor": actor, "hash": entry.hash,
                  "via": entry.via}
        if reason:
            record["reason"] = reason
        if superseded_by:
            record["superseded_by"] = superseded_by
        return record

