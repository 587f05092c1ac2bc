"""A read-only connection of its own beside the daemon's (memory doctor's whole-store checks,
`memory status`'s counts), off the database thread, and what is read through it."""

from __future__ import annotations

from pathlib import Path

import apsw
import sqlite_vec

from memoryd.store.database import apply_bestpractice, count_entries
from memoryd.store.fetch import integer
from memoryd.store.migrations import add_functions
from memoryd.store.vector_rows import ModelInfo, VectorRows, count_vectors


def open_reader(path: Path) -> apsw.Connection:
    """A read-only connection beside the daemon's (WAL: it sees the last committed state and
    blocks no writer), so that a check reading everything does not hold up searches and hooks."""
    apply_bestpractice()
    db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    db.enable_load_extension(False)
    add_functions(db)
    return db


class VectorsReader(VectorRows):
    """The stored vectors read on a read-only connection of their own, as one snapshot of the
    store (the RAM vector index's fill, off the database thread)."""

    def __init__(self, path: Path, model: ModelInfo) -> None:
        self._db = open_reader(path)
        self.model = model
        self._db.execute("BEGIN")  # one snapshot for every read until close

    def close(self) -> None:
        self._db.close()


def store_counts(path: Path, vectors: bool) -> tuple[dict[str, int], int]:
    """`memory status`'s two whole-table counts, on a reader of their own: on the database
    thread they held searches up for 30-50 ms at 72k entries. ``vectors``: a model is bound
    (the vector table exists)."""
    db = open_reader(path)
    try:
        return count_entries(db), count_vectors(db) if vectors else 0
    finally:
        db.close()


def entry_agents(path: Path) -> list[str]:
    """The agents the index holds entries of, read without a daemon (`memoryd check-config`);
    none when there is no index (or it cannot be read)."""
    if not path.exists():
        return []
    try:
        db = open_reader(path)
    except apsw.Error:
        return []
    try:
        return [str(r[0]) for r in db.execute("SELECT DISTINCT agent FROM entries")]
    except apsw.Error:
        return []
    finally:
        db.close()


def quick_check(db: apsw.Connection) -> tuple[list[str], int]:
    """``PRAGMA quick_check``'s rows (["ok"] when sound) and the schema version."""
    rows = [str(r[0]) for r in db.execute("PRAGMA quick_check")]
    return rows, integer(db, "PRAGMA user_version")


def entry_uids(db: apsw.Connection, agent: str) -> set[str]:
    return {r[0] for r in db.execute("SELECT uid FROM entries WHERE agent=?", (agent,))}


def entry_hashes(db: apsw.Connection, agent: str) -> set[str]:
    return {r[0] for r in db.execute("SELECT hash FROM entries WHERE agent=?", (agent,))}


#: The entries a ledger holds the truth of (written through the API: stored, imported,
#: extracted); not a watched file's (``watch``) nor a followed team's (``team``).
LEDGER_ENTRIES = "via NOT IN ('watch', 'team') AND substr(agent, 1, 5) != 'team.'"


def ledger_entry_counts(db: apsw.Connection) -> dict[str, int]:
    """How many entries of each agent the ledgers hold the truth of (one pass over the
    table, as `memory status`'s counts)."""
    return {agent: n for agent, n in db.execute(
        f"SELECT agent, count(*) FROM entries WHERE {LEDGER_ENTRIES} GROUP BY agent")}


def ledger_entry_uids(db: apsw.Connection, agent: str) -> list[str]:
    """The ids of those entries of ``agent``, oldest first."""
    return [r[0] for r in db.execute(
        f"SELECT uid FROM entries WHERE agent=? AND {LEDGER_ENTRIES} ORDER BY created, uid",
        (agent,))]


def ledger_offset(db: apsw.Connection, agent: str) -> int:
    """How far into ``ledger/<agent>.jsonl`` the index has applied (memoryd.maintenance.replay)."""
    row = db.execute("SELECT value FROM meta WHERE key=?", (f"ledger:{agent}",)).fetchone()
    return int(row[0]) if row else 0


def last_purge(db: apsw.Connection) -> float | None:
    """When the last ``memory purge`` ran (its event: memoryd.maintenance.purge)."""
    row = db.execute("SELECT max(ts) FROM events WHERE uid >= 'purge:' AND uid < 'purge;'"
                     ).fetchone()
    return row[0] if row else None
