"""The memory tools' history archive, ``history/<agent>.jsonl.gz`` under the state dir: the
file every version of the tools' writes is rebuilt from when the index is (the events table
is an index of it, as of the ledgers).

It holds JSON lines of two kinds, in gzip members (memoryd.store.archive.AgentArchive):

    {"op": "delta", "uid": "file:AGENT:PATH", "ts": …, "action": …, "actor": …,
     "before": …, "after": …}
        one write, exactly as its event holds it (memoryd.store.file_versions: a delta from
        the text before, a whole text only for a base), appended and fsynced by every write
        of the memory tools before its event commits (:func:`append_delta`)
    {"op": "version", "uid": …, "ts": …, "action": …, "before": TEXT, "after": TEXT}
        a version the retain pass moved out of the index, with its whole texts

The database records how far into each archive it holds (meta ``history:<agent>``, moved by
every write in its own transaction). A rebuild of the index (``memoryd reindex``, a start on
a new or a damaged database) and every start restore what lies past it
(:func:`restore_history`): each ``delta`` record whose event the index lacks becomes that
event again, in the archive's order — but for those whose version the archive holds (the
retain pass moved them out of the index: they stay out, and are not archived twice). The
first write of a file restored after those becomes a whole-text base again (its text before
is the newest version moved), as the retain pass left it.

A write whose transaction fails takes its record back off the archive
(:meth:`~memoryd.store.archive.AgentArchive.cut`), so a write answered as failed never comes
back. A write killed between its append and its commit was never answered; its record stays,
and the next start restores it as a version (the ack rule: a write without an answer may or
may not be stored). The versions after it are rebuilt all the same: a write's text before is
found by its hash among every earlier version (memoryd.store.file_versions.versions).

A sync brings the other machine's records (its archive merges as the union of both): they are
restored the same way (memoryd.sync.apply).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from memoryd.names import AGENT_NAME
from memoryd.store.archive import AgentArchive, MemberWriter
from memoryd.store.database import Store
from memoryd.store.file_versions import file_uid, history_key, history_line, last_after, text_sha

log = logging.getLogger(__name__)

#: The tools' events in the events table (a range: it reads events_uid's "file:" rows only).
FILE_EVENTS = "uid >= 'file:' AND uid < 'file;'"


def append_delta(store: Store, history: AgentArchive, agent: str,
                 record: dict[str, Any]) -> tuple[int, int]:
    """A write's record, appended to the agent's archive durably, and the archive's new end
    recorded (in the caller's transaction, which records the write's event); returns where
    the record starts and ends, to take it back should that transaction fail."""
    writer = MemberWriter()
    writer.add([history_line(record)])
    known = store.meta(history_key(agent))
    start, end = history.append(agent, writer.data(), int(known) if known else None)
    store.set_meta(history_key(agent), str(end))
    return start, end


class Replay:
    """Restores an archive's ``delta`` records as events: :meth:`note` every record first
    (the versions the retain pass moved out), then :meth:`apply` them in order."""

    def __init__(self) -> None:
        self.moved: set[tuple[str, float]] = set()
        #: uid → (time, text after) of its newest version moved out, and that text's hash
        self.newest: dict[str, tuple[float, str]] = {}
        self._hashes: dict[str, str] = {}

    def note(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            uid, ts = record.get("uid"), _number(record.get("ts"))
            if record.get("op") != "version" or not isinstance(uid, str) or ts is None:
                continue
            self.moved.add((uid, ts))
            after = record.get("after")
            if isinstance(after, str) and (uid not in self.newest or ts >= self.newest[uid][0]):
                self.newest[uid] = (ts, after)
                self._hashes.pop(uid, None)

    def apply(self, store: Store, agent: str, record: dict[str, Any]) -> int:
        """The record's event, if it is a write of the agent's files the index lacks and
        whose version was not moved out (in the caller's transaction); 1 if restored."""
        uid, ts, action = record.get("uid"), _number(record.get("ts")), record.get("action")
        before, after = record.get("before"), record.get("after")
        if record.get("op") != "delta" or ts is None or not isinstance(uid, str) \
                or not uid.startswith(file_uid(agent, "")) or not isinstance(action, str) \
                or not isinstance(after, dict) or not isinstance(before, dict | None):
            return 0
        if (uid, ts) in self.moved or store._db.execute(
                "SELECT 1 FROM events WHERE uid=? AND ts=?", (uid, ts)).fetchone():
            return 0
        if before is not None and "text" not in before and uid in self.newest:
            text = self.newest[uid][1]
            if self._hashes.setdefault(uid, text_sha(text)) == before.get("sha256") \
                    and last_after(store, uid) != before.get("sha256"):
                before = {**before, "text": text}  # a base again, as the retain pass made it
        actor = record.get("actor")
        store.record_event(uid, action, actor if isinstance(actor, str) else None, before,
                           after, ts)
        return 1


def restore_history(store: Store, history: AgentArchive) -> int:
    """Restore the archives' records past where the index holds them (see the module
    docstring); returns how many writes became events again."""
    restored = 0
    for agent in history.agents():
        key = history_key(agent)
        offset = int(store.meta(key) or 0)
        path = history.path(agent)
        size = path.stat().st_size
        if size < offset:
            log.warning("History archive %s is shorter than recorded; restoring it whole.",
                        path)
            offset = 0
        if size == offset:
            continue
        replay = Replay()
        for _, records in history.read(agent, offset):
            replay.note(records)
        for end, records in history.read(agent, offset):
            with store.transaction():
                for record in records:
                    restored += replay.apply(store, agent, record)
                store.set_meta(key, str(end))
    if restored:
        log.info("Restored %d memory-file versions from the history archives.", restored)
    return restored


def export_events(store: Store, history: AgentArchive) -> int:
    """The tools' events of a database that the history archives hold no record of (written
    before every write appended its own), appended to them as ``delta`` records: ``memoryd
    reindex`` does it to the database it sets aside. Returns how many."""
    held: set[tuple[str, float]] = set()
    for agent in history.agents():
        for _, records in history.read(agent):
            held.update((r["uid"], ts) for r in records
                        if isinstance(r.get("uid"), str) and (ts := _number(r.get("ts")))
                        is not None)
    writers: dict[str, MemberWriter] = {}
    for uid, ts, action, actor, before, after in store._db.execute(
            f"SELECT uid, ts, action, actor, before, after FROM events WHERE {FILE_EVENTS} "
            "ORDER BY id"):
        agent = uid.split(":", 2)[1]
        if (uid, ts) in held or not after or not AGENT_NAME.match(agent):
            continue
        writers.setdefault(agent, MemberWriter()).add([history_line({
            "op": "delta", "uid": uid, "ts": ts, "action": action, "actor": actor,
            "before": json_or_none(before), "after": json_or_none(after)})])
    exported = 0
    for agent, writer in sorted(writers.items()):
        exported += writer.records
        known = store.meta(history_key(agent))
        history.append(agent, writer.data(), int(known) if known else None)
    if exported:
        log.info("Archived %d memory-file versions from the old database first.", exported)
    return exported


def json_or_none(raw: str | None) -> Any:
    return json.loads(raw) if raw else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
