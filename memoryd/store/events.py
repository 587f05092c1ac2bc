"""The ``events`` table: the history of every entry (``memory history``) and of the memory
tools' files, one event per change with its before and after as JSON (mixed into Store).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import apsw

from memoryd.store.records import StoredEntry


def _snapshot(side: StoredEntry | Mapping[str, Any] | None) -> str | None:
    if side is None:
        return None
    return json.dumps(side.as_dict() if isinstance(side, StoredEntry) else side, sort_keys=True)


class EventRows:
    """The store's events (mixed into Store)."""

    _db: apsw.Connection

    def record_event(
        self,
        uid: str,
        action: str,
        actor: str | None,
        before: StoredEntry | Mapping[str, Any] | None,
        after: StoredEntry | Mapping[str, Any] | None,
        ts: float | None = None,
    ) -> None:
        """One change of an entry (its ``before`` and ``after`` as its history keeps them: an
        entry's :meth:`~memoryd.store.records.StoredEntry.as_dict`, or the fields a change
        set), or of a memory tool's file."""
        self._db.execute(
            "INSERT INTO events(ts, uid, action, actor, before, after) VALUES (?, ?, ?, ?, ?, ?)",
            (
                ts if ts is not None else time.time(),
                uid,
                action,
                actor,
                _snapshot(before),
                _snapshot(after),
            ),
        )

    def events_for(self, uids: Sequence[str]) -> list[dict[str, Any]]:
        if not uids:
            return []
        marks = ", ".join("?" for _ in uids)
        rows = self._db.execute(
            f"SELECT ts, uid, action, actor, before, after FROM events WHERE uid IN ({marks}) "
            "ORDER BY ts, id",
            list(uids),
        )
        return [
            {
                "ts": ts,
                "id": uid,
                "action": action,
                "actor": actor,
                "before": json.loads(before) if before else None,
                "after": json.loads(after) if after else None,
            }
            for ts, uid, action, actor, before, after in rows
        ]

    def status_changed_at(self, uid: str) -> float | None:
        """When an entry's status last changed (not its making, nor a change from another
        machine that a later one overtook: memoryd.maintenance.replay), or None."""
        row = self._db.execute(
            "SELECT max(ts) FROM events WHERE uid=? AND action != 'overtaken' "
            "AND before IS NOT NULL AND json_extract(after, '$.status') IS NOT NULL "
            "AND json_extract(after, '$.status') IS NOT json_extract(before, '$.status')",
            (uid,)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def moved_to(self, source: str) -> str | None:
        """Where the watcher last saw the file ``source`` renamed to (the ``moved`` event of
        one of its entries; memoryd.ingest.indexer), if anywhere."""
        row = self._db.execute(
            "SELECT after FROM events WHERE action = 'moved' AND before = ? "
            "ORDER BY id DESC LIMIT 1", (_snapshot({"source": source}),)).fetchone()
        return None if row is None else str(json.loads(row[0])["source"])

    def created_when_removed(self, uid: str) -> float | None:
        """The date an entry had when it last left the index (a watched line gone from its
        file, its file deleted, its source removed, the index rebuilt), or None: a line that
        comes back keeps its date, as it keeps its id."""
        row = self._db.execute(
            "SELECT json_extract(before, '$.created') FROM events WHERE uid=? "
            "AND action='removed' ORDER BY ts DESC, id DESC LIMIT 1", (uid,)).fetchone()
        return None if row is None or not isinstance(row[0], int | float) else float(row[0])

    def stored_events(self) -> Iterator[tuple[int, str, float, str | None, str | None]]:
        """Every event as stored: (id, uid, ts, before and after as JSON text)."""
        yield from self._db.execute("SELECT id, uid, ts, before, after FROM events")

    def delete_events(self, events: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM events WHERE id=?", ((e,) for e in events))

    def rewrite_events(self, sides: Mapping[int, tuple[str | None, str | None]]) -> None:
        """Events' before and after replaced (id → (before, after), as JSON text)."""
        self._db.executemany("UPDATE events SET before=?, after=? WHERE id=?",
                             ((b, a, n) for n, (b, a) in sides.items()))
