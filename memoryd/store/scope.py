"""What stands in the way of moving an entry to another tier (``memory scope``): the same
memory there already, or another value of its key (memoryd.passes.scope); and the entries
filed under a project, which ``memory move-project`` moves together."""

from __future__ import annotations

from memoryd.store.database import SELECT_ENTRY, Store, row_to_entry
from memoryd.store.records import StoredEntry


def same_in_tier(store: Store, entry: StoredEntry,
                 project: str | None) -> StoredEntry | None:
    """Another active entry of ``entry``'s agent and category with its text, in exactly that
    tier (``project``; None: the global one)."""
    row = store._db.execute(
        SELECT_ENTRY + " WHERE agent=? AND category=? AND hash=? AND status='active' "
        "AND project IS ? AND uid<>? LIMIT 1",
        (entry.agent, entry.category, entry.hash, project, entry.uid)).fetchone()
    return row_to_entry(row) if row else None


def key_in_tier(store: Store, entry: StoredEntry,
                project: str | None) -> StoredEntry | None:
    """Another active value of ``entry``'s key, of its agent, in exactly that tier."""
    if not entry.key:
        return None
    row = store._db.execute(
        SELECT_ENTRY + " WHERE agent=? AND key=? AND status='active' AND project IS ? "
        "AND uid<>? ORDER BY created DESC LIMIT 1",
        (entry.agent, entry.key, project, entry.uid)).fetchone()
    return row_to_entry(row) if row else None


def entries_of_project(store: Store, project: str, agent: str | None) -> list[StoredEntry]:
    """The entries filed under ``project`` that a move takes along: every status (a superseded
    version and a forgotten one stay with the project their head is in), of ``agent`` or of
    every agent, but those of watched files (they follow their files)."""
    rows = store._db.execute(
        SELECT_ENTRY + " WHERE project=? AND via<>'watch' AND (? IS NULL OR agent=?) "
        "ORDER BY created, id", (project, agent, agent)).fetchall()
    return [row_to_entry(row) for row in rows]


def projects_of_entries(store: Store) -> dict[str, int]:
    """Each project active entries not of a watched file are filed under, and how many."""
    rows = store._db.execute(
        "SELECT project, count(*) FROM entries WHERE project IS NOT NULL AND status='active' "
        "AND via<>'watch' GROUP BY project").fetchall()
    return {str(project): count for project, count in rows if isinstance(count, int)}
