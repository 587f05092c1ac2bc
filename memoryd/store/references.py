"""The staleness pass's tables: ``entry_refs`` (what each entry names in its project — a file, a
command, a flag — and when it was first seen there) and ``stale_projects`` (each project's
working tree as the pass last checked it), with the pass's reads of the entries to check
(memoryd.passes.staleness; ``Store.references``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import apsw

#: An entry to check: (rowid, uid, text, updated, stale).
EntryToCheck = tuple[int, str, str, float, str | None]


class References:
    """``entry_refs`` and ``stale_projects`` (the database thread)."""

    def __init__(self, db: apsw.Connection) -> None:
        self._db = db

    def to_check(self, project: str, kind: str, agent: str | None,
                 after: tuple[float, int], since: float | None, limit: int) -> list[EntryToCheck]:
        """The project's active entries of ``kind`` (and ``agent``, if given), a page of
        ``limit`` after ``after``: every entry by rowid (``since`` None: ``after``'s rowid),
        or those written or changed since ``since`` by (updated, rowid)."""
        if since is None:  # every entry: the project's, by id
            sql = ("SELECT id, uid, text, updated, stale FROM entries WHERE project=? "
                   "AND status='active' AND kind=? AND id>?")
            params: list[Any] = [project, kind, after[1]]
            order = " ORDER BY id"
        else:  # what changed since: by when (through the project's every entry, an
            # unchanged project's run read ~17k rows a query: 36 ms on the database thread)
            sql = ("SELECT id, uid, text, updated, stale FROM entries INDEXED BY "
                   "entries_updated WHERE (updated, id) > (?, ?) AND updated >= ? "
                   "AND project=? AND status='active' AND kind=?")
            params = [after[0], after[1], since, project, kind]
            order = " ORDER BY updated, id"
        if agent is not None:
            sql += " AND agent=?"
            params.append(agent)
        return cast(list[tuple[int, str, str, float, str | None]], self._db.execute(
            sql + order + " LIMIT ?", [*params, limit]).fetchall())

    def of(self, rowids: Sequence[int]) -> dict[int, dict[str, float | None]]:
        """The references stored for these entries: rowid → (reference → when first seen)."""
        stored: dict[int, dict[str, float | None]] = {}
        for entry, ref, seen in self._db.execute(
                f"SELECT entry, ref, seen FROM entry_refs WHERE entry IN "
                f"({', '.join('?' for _ in rowids)})", list(rowids)):
            stored.setdefault(entry, {})[ref] = seen
        return stored

    def replace(self, gone: Sequence[tuple[int, str]],
                added: Sequence[tuple[int, str, float | None]]) -> None:
        """References an entry no longer names (rowid, ref) dropped, new ones (rowid, ref,
        seen) added (one already there is kept)."""
        self._db.executemany("DELETE FROM entry_refs WHERE entry=? AND ref=?", gone)
        self._db.executemany("INSERT OR IGNORE INTO entry_refs(entry, ref, seen) "
                             "VALUES (?, ?, ?)", added)

    def seen(self, seen: Sequence[tuple[float, int, str]]) -> None:
        """(when, rowid, ref): first seen in the project then (if never before)."""
        self._db.executemany(
            "UPDATE entry_refs SET seen=? WHERE entry=? AND ref=? AND seen IS NULL", seen)

    def project_state(self, project: str) -> tuple[str, float] | None:
        """The project's working tree as last checked: (fingerprint, when)."""
        row = self._db.execute(
            "SELECT fingerprint, checked FROM stale_projects WHERE project=?",
            (project,)).fetchone()
        return (row[0], row[1]) if row else None

    def set_project_state(self, project: str, fingerprint: str, checked: float) -> None:
        self._db.execute(
            "INSERT INTO stale_projects(project, fingerprint, checked) VALUES (?, ?, ?) "
            "ON CONFLICT(project) DO UPDATE SET fingerprint=excluded.fingerprint, "
            "checked=excluded.checked", (project, fingerprint, checked))
