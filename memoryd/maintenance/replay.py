"""The replay of the ledgers at start (and by ``memoryd reindex``): the records the database
has not seen yet are applied to it, agent by agent, from where it stopped.

A ledger is the source of truth for what was written through the API (memoryd.store.ledger);
the database records how far into each one it has applied (``meta`` ``ledger:<agent>``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memoryd.store.database import Store
from memoryd.store.entry_writes import apply_release, mark_target
from memoryd.store.ledger import LEDGER_FIELDS, Ledger, LedgerProblem
from memoryd.store.records import StoredEntry

log = logging.getLogger(__name__)


def replay_ledgers(store: Store, ledger: Ledger,
                   progress: Callable[[int, int], None] | None = None,
                   problems: list[LedgerProblem] | None = None) -> int:
    """Apply ledger records the database has not seen yet; returns how many. A last line
    without its newline is mended first (memoryd.store.ledger); the torn lines set aside and
    the damaged lines read past are added to ``problems``.

    A maintenance pass's change to an entry is written to the ledger inside the transaction
    that records it (memoryd.passes.runs), and its record names the change. A record the
    database has not seen whose change it does not hold either is a change whose transaction
    never committed (the daemon was killed, or the power lost, between the two): it is not
    applied, and a record putting the entry back as the database has it is appended, so that
    a rebuild from the ledgers later ends the same. A database that has not read this ledger
    before (a rebuild) holds no changes to check against, and applies every record.

    ``progress`` is told the bytes read of the bytes to read (`memoryd reindex` shows it)."""
    torn = ledger.repair_tails()
    if problems is not None:
        problems.extend(torn)
    applied = 0
    total = sum(ledger.path(agent).stat().st_size for agent in ledger.agents()) \
        if progress else 0
    read = 0  # the bytes of the ledgers before this one
    skipped: set[str] = set()  # remember records skipped as duplicates: their status records too
    for agent in ledger.agents():
        key = f"ledger:{agent}"
        offset = int(store.meta(key) or 0)
        path = ledger.path(agent)
        if path.stat().st_size < offset:
            log.warning("Ledger %s is shorter than recorded; replaying it whole.", path)
            offset = 0
        covered = offset > 0  # this database's changes cover this ledger's pass records
        undone: list[dict[str, Any]] = []
        with store.transaction():
            for position, record in ledger.read(agent, offset, problems):
                if covered and _uncommitted(store, record):
                    undone.append(_as_stored(store, record))
                else:
                    applied += _apply_record(store, agent, record, skipped)
                offset = position
                if progress:
                    progress(read + position, total)
            if any(undone):
                log.info("Replay: %d changes of a pass to %s's entries never committed; "
                         "left undone.", len(undone), agent)
                offset = ledger.append(agent, [r for r in undone if r])[1]
            store.set_meta(key, str(offset))
        read += path.stat().st_size
    return applied


def apply_records(store: Store, agent: str, records: list[dict[str, Any]],
                  skipped: set[str] | None = None,
                  decided: list[dict[str, Any]] | None = None) -> int:
    """Apply records that came from another machine (memoryd.sync.apply), in the caller's
    transaction; returns how many changed the index. Unlike the replay at start, a pass's
    change is never taken for one that did not commit: its change number is the other
    machine's. A ``purge`` record is left to the caller (memoryd.maintenance.purge, by ids).
    ``skipped``: the ids of remember records skipped as duplicates, kept by a caller that
    applies a file's records in several calls (their status records are skipped too).
    ``decided``: told of each entry whose status both machines changed before they met (see
    :func:`_holds`)."""
    skipped = set() if skipped is None else skipped
    return sum(_apply_record(store, agent, record, skipped, decided) for record in records)


def _uncommitted(store: Store, record: dict[str, Any]) -> bool:
    """A pass's change whose transaction never committed (see :func:`replay_ledgers`)."""
    change = record.get("change")
    return record.get("op") == "update" and isinstance(change, int) and \
        not store.runs.has_change(change)


def _as_stored(store: Store, record: dict[str, Any]) -> dict[str, Any]:
    """A record that puts the entry's fields back as the database holds them ({} when the
    entry is not there)."""
    entry = store.entry_by_uid(str(record.get("id")))
    if entry is None:
        return {}
    stored = entry.as_dict()
    fields = {k: stored.get(k) for k in record["fields"] if k in LEDGER_FIELDS}
    return {"op": "update", "ts": record["ts"], "id": entry.uid, "fields": fields,
            "actor": "memoryd (a pass's change that never committed)"}


def _apply_record(store: Store, agent: str, record: dict[str, Any], skipped: set[str],
                  decided: list[dict[str, Any]] | None = None) -> int:
    op = record.get("op")
    if op == "remember" and isinstance(record.get("entry"), dict):
        return _apply_remember(store, agent, dict(record["entry"]), skipped)
    if str(record.get("id")) in skipped:
        return 0
    if op == "status":
        before = store.entry_by_uid(str(record.get("id")))
        if before is None:  # a watched entry the indexer has not (re)inserted yet
            store.set_mark(
                agent, mark_target(str(record.get("id")), record.get("hash"), record.get("via")),
                record["status"], record.get("superseded_by"), record.get("actor"), record["ts"])
            return 1
        if before.agent.casefold() != agent.casefold() or \
                not _holds(store, before, record, record["status"], decided):
            return 0
        # a status other than superseded points to no successor, wherever it is applied
        changes = {"status": record["status"],
                   "superseded_by": record.get("superseded_by")
                   if record["status"] == "superseded" else None}
        return _change(store, agent, before, record["status"], record, changes)
    if op == "update" and isinstance(record.get("fields"), dict):
        before = store.entry_by_uid(str(record.get("id")))
        fields = {k: v for k, v in record["fields"].items() if k in LEDGER_FIELDS}
        if before is None or before.agent.casefold() != agent.casefold():
            return 0
        if "status" in fields and not _holds(store, before, record, fields["status"], decided):
            fields = {k: v for k, v in fields.items() if k not in ("status", "superseded_by")}
        if not fields:
            return 0
        return _change(store, agent, before, "update", record, fields)
    if op == "release":
        apply_release(store, agent, str(record.get("id")), record.get("hash"),
                      record.get("actor"), record["ts"])
        return 1
    if op == "purge":  # the records it removed are gone from this ledger
        return 0
    log.warning("Skipping unknown ledger record in %s: %r", agent, op)
    return 0


def _holds(store: Store, entry: StoredEntry, record: dict[str, Any], status: str,
           decided: list[dict[str, Any]] | None) -> bool:
    """Whether a record's change of an entry's status holds: the later of two decisions
    about an entry holds, whichever a machine applies first (two machines that changed it
    before they met end the same, and a rebuild from the merged ledgers too). One made
    before the entry's status last changed here is kept in its history (``overtaken``), not
    applied. Both times are ledger records' times: a change of status made here is dated as
    its record is (memoryd.store.entry_writes.EntryWrites._set_status), one applied from a
    record as that record, so every machine and every rebuild compare the same numbers (a
    forget stamped just after a supersede it had seen, on a machine whose clock is behind,
    was once taken for the older: the supersede's event here was a millisecond later than
    its record). ``decided`` is told when the two machines decided differently: the record's
    ``was`` (the status it changed) is not the status here, or the record is overtaken."""
    last = store.status_changed_at(entry.uid)
    overtaken = last is not None and last > float(record["ts"])
    theirs = {"status": status, "superseded_by": record.get("superseded_by")}
    ours = {"status": entry.status, "superseded_by": entry.superseded_by}
    if overtaken:
        store.record_event(entry.uid, "overtaken", record.get("actor"), entry.as_dict(),
                           theirs, record["ts"])
    was = record.get("was")
    if decided is not None and theirs != ours and (overtaken or was not in (None, entry.status)):
        decided.append({"id": entry.uid, "holds": ours if overtaken else theirs,
                        "over": theirs if overtaken else ours})
    return not overtaken


def _change(store: Store, agent: str, before: StoredEntry, event: str,
            record: dict[str, Any], changes: dict[str, Any]) -> int:
    """A status or update record applied to its entry (of this agent's ledger), and its
    event."""
    if before.agent.casefold() != agent.casefold():
        return 0
    store.update_entry(before.uid, **changes, updated=record["ts"])
    store.record_event(before.uid, event, record.get("actor"), before,
                       store.entry_by_uid(before.uid), record["ts"])
    return 1


def _apply_remember(store: Store, agent: str, entry: dict[str, Any], skipped: set[str]) -> int:
    owner = entry.get("agent")
    if not isinstance(owner, str) or owner.casefold() != agent.casefold():
        log.warning("Skipping a record of agent %r in the ledger of %r.", owner, agent)
        return 0
    if owner != agent:  # an older version let Bob and bob share one file (macOS)
        log.warning("Ledger of %r holds a record of %r (names differing only in case); "
                    "replayed under its own name.", agent, owner)
    if store.entry_by_uid(entry.get("uid", "")):
        return 0
    # by content too: the live write path never stores an exact duplicate (of the same
    # project, or a global one), so one in the ledger is a write that was answered as failed
    # (before writes were taken back)
    # (a lesson said again in a later session is stored superseded by the lesson it repeats,
    # often with the same text: Entries.seen_again)
    seen_again = entry.get("status") == "superseded" and bool(entry.get("superseded_by"))
    if not seen_again and store.find_exact(owner, entry.get("category", ""),
                                           entry.get("hash", ""), entry.get("project"),
                                           entry.get("key")):
        skipped.add(str(entry.get("uid")))
        log.info("Replay: skipped a duplicate of an entry already stored (%s).", entry.get("uid"))
        return 0
    store.insert_entry(entry)
    store.record_event(entry["uid"], "remember", entry.get("writer"), None, entry,
                       entry.get("updated", entry["created"]))
    return 1

