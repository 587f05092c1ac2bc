"""The transcript chunks' reads (mixed into Store): the chunks around a chunk in its session
(a hit's passage), the record ids a transcript's chunks hold, and the chunks read before a
generic log was a session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import apsw

from memoryd.store.rows import decode_records

#: SQL (on ``entries``) for a transcript chunk: memoryd.store.archive's TRANSCRIPT_ROWS.
TRANSCRIPT_CHUNK = "via = 'watch' AND uid >= 't' AND uid < 'u'"


class ChunkRows:
    """Reads of the transcript chunks (mixed into Store)."""

    _db: apsw.Connection

    def chunks_around(self, rowids: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        """For each transcript chunk among ``rowids``: the rowids of the chunks just before
        and just after it in its session (the same agent and file; active, not quarantined)."""
        if not rowids:
            return {}
        near = ("SELECT n.id FROM entries n WHERE n.session = c.session AND n.source IS c.source "
                "AND n.agent = c.agent AND (n.created, n.id) {} (c.created, c.id) "
                "AND n.status = 'active' AND NOT n.quarantined AND n.via = 'watch' "
                "AND n.uid >= 't' AND n.uid < 'u' ORDER BY n.created {}, n.id {} LIMIT 1")
        marks = ", ".join("?" for _ in rowids)
        rows = cast(list[tuple[int, int | None, int | None]], self._db.execute(
            f"SELECT c.id, ({near.format('<', 'DESC', 'DESC')}), "
            f"({near.format('>', 'ASC', 'ASC')}) FROM entries c WHERE c.id IN ({marks}) "
            f"AND c.session IS NOT NULL AND c.via = 'watch' AND c.uid >= 't' AND c.uid < 'u'",
            list(rowids)).fetchall())
        return {rowid: (before, after) for rowid, before, after in rows}

    def chunk_neighbours(self, rowid: int, count: int = 1
                         ) -> tuple[list[tuple[str, list[str] | None]],
                                    list[tuple[str, list[str] | None]]]:
        """The ``count`` transcript chunks before (nearest first) and after a chunk in its
        session (the same agent and file), active and not quarantined: (text, record ids)."""
        row = self._db.execute("SELECT session, source, agent, created FROM entries WHERE id=?",
                              (rowid,)).fetchone()
        if row is None or row[0] is None:
            return [], []
        session, source, agent, created = row
        found: list[list[tuple[str, list[str] | None]]] = []
        for comparison, order in (("<", "DESC"), (">", "ASC")):
            near = cast(list[tuple[str, str | None]], self._db.execute(
                "SELECT text, records FROM entries WHERE session=? AND source IS ? AND agent=? "
                f"AND (created, id) {comparison} (?, ?) AND status='active' AND NOT quarantined "
                f"AND {TRANSCRIPT_CHUNK} ORDER BY created {order}, id {order} LIMIT ?",
                (session, source, agent, created, rowid, count)).fetchall())
            found.append([(text, decode_records(records)) for text, records in near])
        return found[0], found[1]

    def hash_and_records(self, uid: str
                         ) -> tuple[str, str | None, str | None, str | None] | None:
        """An entry's content hash, its ``records`` column as stored, its session and its
        source file (None: no entry)."""
        row = self._db.execute("SELECT hash, records, session, source FROM entries WHERE uid=?",
                               (uid,)).fetchone()
        return (row[0], row[1], row[2], row[3]) if row else None

    def chunk_records(self, source: str) -> set[str]:
        """The record ids the transcript ``source``'s chunks hold (the turns indexed of it)."""
        return {record for (raw,) in self._db.execute(
            "SELECT records FROM entries WHERE source=? AND records IS NOT NULL", (source,))
            for record in decode_records(raw) or ()}

    def sessionless_chunks(self, sources: Sequence[str]) -> tuple[int, int]:
        """Active transcript chunks with no session, of the files of ``sources``, and how many
        files hold them: (chunks, files)."""
        if not sources:
            return 0, 0
        marks = ", ".join("?" for _ in sources)
        row = self._db.execute(
            "SELECT count(*), count(DISTINCT e.source) FROM entries e JOIN files f "
            f"ON e.source = f.path WHERE f.source IN ({marks}) AND e.session IS NULL "
            f"AND e.status = 'active' AND {TRANSCRIPT_CHUNK}",  # (files has no via nor uid)
            list(sources)).fetchone()
        assert row is not None  # an aggregate has its row
        return int(row[0]), int(row[1])
