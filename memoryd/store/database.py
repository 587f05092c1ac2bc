"""The SQLite index: one apsw connection with sqlite-vec loaded, its migrations, and the store
through which everything else reads and writes it. No module outside ``memoryd.store`` runs
SQL (tests/test_layout.py checks it); each family of tables has its module here:

    meta          key/value: schema facts, the embedding model (id, sha256, dim), ledger
                  offsets (this module)
    entries       one row per memory entry (this module; the columns and their codecs:
                  store/rows.py; filtered reads by an EntryQuery: store/query.py)
    entries_fts   FTS5 over text, category and tags (external content, porter stemming;
                  store/query.py)
    entries_vec   vec0 vectors, rowid = entries.id, created once the model's dimension is
                  known; part_vectors, the vectors of an entry's parts (its sentences:
                  text.split_parts); vector_queue, the entries awaiting one (vector_rows.py)
    lexicon       every word of the entries, embedded alone (lexicon.py)
    events        the history: every change with its before/after as JSON (events.py)
    marks         a forget or supersede kept for an entry that is not (yet) indexed (here)
    files         the watched files (files.py: ``Store.files``)
    sessions, injections  the agents' sessions and the blocks they were given (sessions.py:
                  ``Store.sessions``)
    runs, changes the maintenance passes' runs and their changes (runs.py: ``Store.runs``)
    entry_refs, stale_projects  what each entry names in its project, and each project's
                  working tree as the staleness pass last checked it (references.py:
                  ``Store.references``)

The database is an index: the ledgers, the transcript archives and the watched files rebuild
it (memoryd.maintenance.rebuild).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import apsw
import apsw.bestpractice
import sqlite_vec

from memoryd.errors import StartupError
from memoryd.quarantine import (
    RULES_VERSION,
    TRANSCRIPT_KINDS,
    reason_for_entry,
    release_target,
)
from memoryd.store.checkpoint import Checkpointer
from memoryd.store.chunk_rows import ChunkRows
from memoryd.store.events import EventRows
from memoryd.store.fetch import integer
from memoryd.store.files import Files
from memoryd.store.migrations import (
    KEYWORD_TOKENIZER,
    MIGRATIONS,
    QUARANTINE_VERSIONS,
    UNREADABLE_LINES_VERSION,
    add_functions,
    only_unreadable_lines,
)
from memoryd.store.query import EntryReads
from memoryd.store.records import IndexedText, StoredEntry
from memoryd.store.references import References
from memoryd.store.rows import (
    ENTRY_COLUMNS,
    SELECT_ENTRY,
    decode_records,
    decode_tags,
    encode_records,
    encode_tags,
    row_to_entry,
)
from memoryd.store.runs import Runs
from memoryd.store.sessions import Sessions
from memoryd.store.vector_rows import OLD_PARTS, ModelInfo, VectorRows
from memoryd.text import fold_category, index_text, keyword_text

__all__ = ["ENTRY_COLUMNS", "SELECT_ENTRY", "ModelInfo", "Store", "decode_records",
           "decode_tags", "encode_records", "encode_tags", "row_to_entry"]
from memoryd.store.past_sessions import PastSessions

log = logging.getLogger(__name__)

#: How far the lexicon has read the entries (meta; memoryd.store.lexicon).
LEXICON_CURSOR = "lexicon_rowid"
#: What SQLite raises (a damaged file, a full disk, …), for the code above the store.
DatabaseError = apsw.Error

_bestpractice_applied = False


def apply_bestpractice() -> None:
    """apsw's recommended settings for every connection, but ``PRAGMA optimize``: it writes,
    and a database that cannot be written (a full disk) must still open to be read
    (:func:`optimize` runs it where a failure is harmless)."""
    global _bestpractice_applied
    if not _bestpractice_applied:
        apsw.bestpractice.apply(tuple(hook for hook in apsw.bestpractice.recommended
                                      if hook is not apsw.bestpractice.connection_optimize))
        apsw.config(apsw.SQLITE_CONFIG_LOG, _sqlite_log)  # in place of apsw's forwarding
        _bestpractice_applied = True


def optimize(db: apsw.Connection, when: str = "at opening") -> None:
    """What apsw.bestpractice.connection_optimize does at opening, if the disk lets it: the
    query planner's statistics (``sqlite_stat1``) for the tables that have none or have grown
    tenfold since they were taken."""
    try:
        if not db.readonly("main"):
            db.pragma("optimize", 0x10002)
    except (apsw.ReadOnlyError, apsw.FullError, apsw.IOError, apsw.BusyError) as exc:
        log.info("Skipped PRAGMA optimize %s: %s.", when, exc)



_sqlite_log_target = logging.getLogger("memoryd.sqlite")
#: What apsw's transaction block gets when it rolls back after a commit that failed (a full
#: disk, a file-size limit): SQLite had rolled the transaction back already. The commit's own
#: error is what matters (answered, and logged: memoryd.server.refused); this one was noise.
NO_TRANSACTION = "cannot rollback - no transaction is active"


def _sqlite_log(code: int, message: str) -> None:
    """SQLite's own log, as apsw's best practice forwards it but under memoryd's name, and
    with a statement prepared again after a schema change (SQLITE_SCHEMA) at debug level:
    SQLite retries it by itself. It came once at every start (a connection's ``PRAGMA
    optimize`` analyses the new tables) and read as a fault ("statement aborts at 16:
    database schema has changed"). The rollback after a failed commit (:data:`NO_TRANSACTION`)
    is at debug level too."""
    if code == apsw.SQLITE_SCHEMA or NO_TRANSACTION in message:
        level = logging.DEBUG
    elif code & 0xFF in (apsw.SQLITE_WARNING, apsw.SQLITE_NOTICE):
        level = logging.WARNING
    else:
        level = logging.ERROR
    name = (apsw.mapping_extended_result_codes.get(code)
            or apsw.mapping_result_codes.get(code & 0xFF, str(code)))
    _sqlite_log_target.log(level, "SQLite: %s (%s)", message, name)


#: The columns the RAM vector index filters on (VECTOR_META's).
META_COLUMNS = frozenset({"agent", "category", "project", "kind", "status", "created"})


class Store(EntryReads, VectorRows, EventRows, ChunkRows):
    """The index and its SQL. Not thread-safe: the daemon uses it from one thread."""

    def __init__(self, path: Path) -> None:
        apply_bestpractice()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._agents: set[str] | None = None
        #: every category an entry has (or had), by its folded form (Store.categories_named)
        self._categories: dict[str, set[str]] | None = None
        try:
            self._db = apsw.Connection(str(path))
            self._db.enable_load_extension(True)
            self._db.load_extension(sqlite_vec.loadable_path())
            self._db.enable_load_extension(False)
            add_functions(self._db)
        except apsw.Error as exc:
            raise StartupError(f"cannot open database {path}: {exc}") from None
        optimize(self._db)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA cache_size=-16000")
        self._migrate()
        #: the watched files (memoryd.store.files)
        self.files = Files(self._db)
        #: the agents' sessions and the blocks they were given (memoryd.store.sessions)
        self.sessions = Sessions(self._db)
        #: the maintenance passes' runs and changes (memoryd.store.runs)
        self.runs = Runs(self._db)
        #: what entries name, for the staleness pass (memoryd.store.references)
        self.references = References(self._db)
        #: what import-history reads and marks (memoryd.store.past_sessions)
        self.past_sessions = PastSessions(self._db)
        self.model: ModelInfo | None = self._stored_model()
        self._fts_rows: tuple[int, float, int] | None = None
        self._term_rows: dict[str, tuple[int, float]] = {}
        #: entries whose filter columns changed since the RAM vector index last followed them
        #: (memoryd.store.vectors.follow_meta): a bullet moved to another section changes its
        #: category and kind, a rewritten date its created, without a new vector
        self.meta_changed: set[str] = set()
        #: the same since the RAM vector index began to fill from a snapshot, while it does
        #: (memoryd.embedding.vectors): applied once it is full
        self.fill_changes: set[str] | None = None
        #: watched files a pass is writing, which it indexes itself once written (reading them
        #: then): the watcher leaves them alone meanwhile (memoryd.passes.runner, hold)
        self.writing: set[str] = set()
        self._checkpointer: Checkpointer | None = None
        self._tokenizer: apsw.FTS5Tokenizer | None = None

    def transaction(self) -> AbstractContextManager[Any]:
        """A transaction: committed when the block ends, rolled back when it raises; one
        inside another is a savepoint."""
        return self._db

    def system_errno(self) -> int:
        """The errno of the last system call of SQLite's that failed (its "disk I/O error"
        does not say which): EFBIG for a file-size limit, ENOSPC for a full disk."""
        return int(self._db.system_errno)

    def checkpoint_in_background(self) -> None:
        """WAL checkpoints on a thread of their own from now on (the daemon's store): see
        memoryd.store.checkpoint."""
        if self._checkpointer is None:
            self._checkpointer = Checkpointer(self.path)
            self._checkpointer.watch(self._db)

    def refresh_statistics(self) -> None:
        """The query planner's statistics for the tables grown since they were taken (or
        never taken: a store opened empty). Taken at opening only, they left a daemon that
        filled its store running without any: the memory block's reads took 27 ms instead of
        14 at 10,000 entries until a restart. ~1 ms when none is due; a tenfold growth
        analyses the table again (100,000 entries: ~0.5 s)."""
        optimize(self._db, "for the planner's statistics")

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._db.close()

    # -- schema -----------------------------------------------------------------------

    def _migrate(self) -> None:
        version = integer(self._db, "PRAGMA user_version")
        if version > len(MIGRATIONS):
            raise StartupError(
                f"database {self.path} has schema version {version}, newer than this memoryd "
                f"({len(MIGRATIONS)}); upgrade memoryd or run `memoryd reindex`"
            )
        for number in range(version, len(MIGRATIONS)):
            with self._db:
                self._db.execute(MIGRATIONS[number])
                if number + 1 in QUARANTINE_VERSIONS:
                    self._flag_quarantine(QUARANTINE_VERSIONS[number + 1])
                if number + 1 == UNREADABLE_LINES_VERSION:
                    only_unreadable_lines(self._db)
                self._db.execute(f"PRAGMA user_version={number + 1}")
        if version == 0:
            log.info("Database created at schema version %d.", len(MIGRATIONS))
        elif version < len(MIGRATIONS):
            log.info("Database migrated from schema version %d to %d.", version, len(MIGRATIONS))
        self._judge_again()

    def _judge_again(self) -> None:
        """Judge every entry by the quarantine's rules again when they changed since the
        database was last judged (meta ``quarantine_rules``): no schema change, a version of
        the rules (memoryd.quarantine.RULES_VERSION)."""
        if self.meta("quarantine_rules") == str(RULES_VERSION):
            return
        with self._db:
            self._flag_quarantine(None)
            self.set_meta("quarantine_rules", str(RULES_VERSION))

    def _flag_quarantine(self, kinds: tuple[str, ...] | None) -> None:
        """Judge the existing entries (of ``kinds``; None: all) by the quarantine's rules as
        they are now: flag those that look like instructions, and let go of those flagged
        before that no longer do (a transcript chunk's own speaker labels flagged every
        exchange before schema 13)."""
        flagged, cleared = [], []
        where = f"WHERE kind IN ({', '.join('?' * len(kinds))})" if kinds else ""
        for rowid, kind, agent, text, hash_, category, key, was in self._db.execute(
                f"SELECT id, kind, agent, text, hash, category, key, quarantined FROM entries "
                f"{where}", kinds or ()):
            now = self._quarantined({"kind": kind, "agent": agent, "text": text, "hash": hash_,
                                     "category": category, "key": key})
            if now and not was:
                flagged.append((rowid,))
            elif was and not now:
                cleared.append((rowid,))
        self._db.executemany("UPDATE entries SET quarantined=1 WHERE id=?", flagged)
        self._db.executemany("UPDATE entries SET quarantined=0 WHERE id=?", cleared)
        if flagged:
            log.warning("Quarantined %d existing entries that look like instructions to the "
                        "model (memory search shows them; memory release ID).", len(flagged))
        if cleared:
            log.info("Released %d entries the quarantine's rules no longer flag.", len(cleared))

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    def delete_meta(self, key: str) -> None:
        self._db.execute("DELETE FROM meta WHERE key=?", (key,))

    def replace_meta(self, values: Mapping[str, str]) -> None:
        """Values of existing keys replaced (key → value; a key not there stays absent)."""
        self._db.executemany("UPDATE meta SET value=? WHERE key=?",
                             ((v, k) for k, v in values.items()))

    def meta_with_prefix(self, prefix: str) -> dict[str, str]:
        """The meta values whose key starts with ``prefix`` (a range: no LIKE escapes)."""
        return dict(cast(list[tuple[str, str]], self._db.execute(
            "SELECT key, value FROM meta WHERE key >= ? AND key < ?",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))).fetchall()))

    def _stored_model(self) -> ModelInfo | None:
        raw = self.meta("embedding_model")
        if raw is None:
            return None
        data = json.loads(raw)
        return ModelInfo(data["model_id"], data["sha256"], int(data["dim"]),
                         data.get("parts", OLD_PARTS))

    def bind_model(self, model: ModelInfo) -> bool:
        """Record the model whose vectors the table holds. When another model was recorded,
        its vectors are dropped (never mixed); when only the parts' scheme changed, the part
        vectors are, and their entries queued to be embedded again (their own vectors stay,
        and search by them). Returns True when vectors must be rebuilt."""
        if self.model == model:
            return False
        if self.model is not None and (self.model.model_id, self.model.sha256, self.model.dim) \
                == (model.model_id, model.sha256, model.dim):
            with self._db:
                self._db.execute("INSERT OR IGNORE INTO vector_queue(rowid) SELECT p.entry "
                                 "FROM part_vectors p JOIN entries e ON e.id = p.entry")
                queued = self._db.changes()
                self._db.execute("DELETE FROM part_vectors")
                self._db.execute("DELETE FROM vector_refine")  # queued: embedded anew
                self.set_meta("embedding_model", json.dumps(asdict(model)))
            log.warning("Sentence vectors are now made as %r (they were %r): embedding the %d "
                        "entries that have them again, in the background.", model.parts,
                        self.model.parts, queued)
            self.model = model
            return True
        with self._db:
            if self.model is not None:
                log.warning(
                    "Embedding model changed from %s to %s: dropping stored vectors.",
                    self.model.model_id,
                    model.model_id,
                )
            self._db.execute("DROP TABLE IF EXISTS entries_vec")
            self._db.execute("DELETE FROM part_vectors")
            self._db.execute("DELETE FROM vector_refine")
            self._db.execute(
                f"CREATE VIRTUAL TABLE entries_vec USING vec0("
                f"embedding float[{model.dim}] distance_metric=cosine)"
            )
            self._db.execute("INSERT OR IGNORE INTO vector_queue(rowid) SELECT id FROM entries")
            self._db.execute("DELETE FROM lexicon")  # its words are the old model's
            self.delete_meta(LEXICON_CURSOR)
            self.set_meta("embedding_model", json.dumps(asdict(model)))
        self.model = model
        return True

    # -- entries ----------------------------------------------------------------------

    def insert_entry(self, entry: dict[str, Any]) -> int:
        values = [entry.get(c) for c in ENTRY_COLUMNS]
        values[ENTRY_COLUMNS.index("tags")] = encode_tags(entry.get("tags") or ())
        values[ENTRY_COLUMNS.index("occurrences")] = entry.get("occurrences") or 1
        values[ENTRY_COLUMNS.index("quarantined")] = int(self._quarantined(entry))
        records = entry.get("records")
        values[ENTRY_COLUMNS.index("records")] = records if isinstance(records, str) or \
            records is None else encode_records(records)
        placeholders = ", ".join("?" for _ in ENTRY_COLUMNS)
        self._db.execute(
            f"INSERT INTO entries({', '.join(ENTRY_COLUMNS)}) VALUES ({placeholders})", values
        )
        if self._agents is not None:
            self._agents.add(entry["agent"])
        self._know_category(entry.get("category") or "")
        return self._db.last_insert_rowid()

    def entry_by_uid(self, uid: str) -> StoredEntry | None:
        row = self._db.execute(SELECT_ENTRY + " WHERE uid=?", (uid,)).fetchone()
        return row_to_entry(row) if row else None

    def uids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        upper = prefix + "\uffff"
        rows = self._db.execute(
            "SELECT uid FROM entries WHERE uid >= ? AND uid < ? LIMIT ?", (prefix, upper, limit)
        )
        return [r[0] for r in rows]

    def entries_by_rowids(self, rowids: Sequence[int]) -> dict[int, StoredEntry]:
        if not rowids:
            return {}
        marks = ", ".join("?" for _ in rowids)
        rows = self._db.execute(SELECT_ENTRY + f" WHERE id IN ({marks})", list(rowids))
        return {row[0]: row_to_entry(row) for row in rows}

    def texts_by_rowids(self, rowids: Sequence[int]) -> dict[int, IndexedText]:
        """What search reads of each of its ~130 candidates (the whole row, a third of a
        search's reading, only for the hits)."""
        if not rowids:
            return {}
        marks = ", ".join("?" for _ in rowids)
        records = ", ".join("?" for _ in TRANSCRIPT_KINDS)  # what was said, not statements
        return {row[0]: IndexedText(row[1], row[2], bool(row[3]),
                                    (row[4], row[5]) if row[4] and row[5] else None, row[6],
                                    index_text(row[7]) if row[7] else None,
                                    row[8] if row[9] is not None else None, row[9])
                for row in self._db.execute(
                    f"SELECT id, index_text(text, key), created, kind NOT IN ({records}), "
                    f"session, message_id, project, heading, source, line_start FROM entries "
                    f"WHERE id IN ({marks})", [*TRANSCRIPT_KINDS, *rowids])}

    def find_exact(self, agent: str, category: str, hash_: str, project: str | None,
                   key: str | None) -> StoredEntry | None:
        """An active entry of the same text and key that covers ``project``: written in it,
        or global (a global entry is shown in every project; the same text in another project
        is not the same memory, nor under another key: "emacs" is the editor's value and the
        mail client's)."""
        row = self._db.execute(
            # by the hash's index: the planner took (agent, category, status), which scans
            # every entry of a category (a replay of 20,000 notes of one category: O(n²))
            SELECT_ENTRY + " WHERE +agent=? AND +category=? AND hash=? AND +status='active' "
            "AND +key IS ? AND (project IS ? OR project IS NULL) ORDER BY project IS NULL "
            "LIMIT 1",
            (agent, category, hash_, key, project),
        ).fetchone()
        return row_to_entry(row) if row else None

    def same_entry(self, agent: str, hash_: str, created: float) -> StoredEntry | None:
        """The entry an imported line is, whatever became of it here: the agent's of the
        same text written at the same moment (an import keeps an entry's ``created``: the
        exported entry itself, or its copy imported before), the active one first."""
        row = self._db.execute(
            SELECT_ENTRY + " WHERE hash=? AND +agent=? AND +created=? "
            "ORDER BY status='active' DESC LIMIT 1",
            (hash_, agent, created),
        ).fetchone()
        return row_to_entry(row) if row else None

    def active_with_key(self, agent: str, key: str, project: str | None) -> list[StoredEntry]:
        """The active values of a key in one project (or the global ones): each project keeps
        its own value of a key, beside the global one."""
        rows = self._db.execute(
            SELECT_ENTRY + " WHERE agent=? AND key=? AND project IS ? AND status='active' "
            "ORDER BY created",
            (agent, key, project),
        )
        return [row_to_entry(r) for r in rows]

    def entries_with_key(self, agent: str, key: str) -> list[StoredEntry]:
        rows = self._db.execute(
            SELECT_ENTRY + " WHERE agent=? AND key=? ORDER BY created", (agent, key)
        )
        return [row_to_entry(r) for r in rows]

    def _quarantined(self, entry: dict[str, Any]) -> bool:
        """Whether an entry looks like an instruction to the model — its text, or its
        category or key, which the block shows beside it — and no person released that text
        (memoryd.quarantine)."""
        return (reason_for_entry(entry["text"], entry["kind"], entry.get("category"),
                                 entry.get("key")) is not None
                and self.mark(entry["agent"], release_target(entry["hash"])) is None)

    def update_entry(self, uid: str, **changes: Any) -> None:
        if not {"text", "category", "key"}.isdisjoint(changes):
            # a chunk whose answer arrived, a date a pass rewrote, a bullet moved under
            # another heading: judged anew
            row = self._db.execute("SELECT kind, agent, hash, text, category, key FROM entries "
                                  "WHERE uid=?", (uid,)).fetchone()
            if row is not None:
                kind, agent, hash_, text, category, key = row
                changes["quarantined"] = int(self._quarantined(
                    {"kind": kind, "agent": agent, "text": changes.get("text", text),
                     "hash": changes.get("hash", hash_),
                     "category": changes.get("category", category),
                     "key": changes.get("key", key)}))
        if "tags" in changes:
            changes["tags"] = encode_tags(changes["tags"])
        if "agent" in changes and self._agents is not None:
            self._agents.add(changes["agent"])
        if "category" in changes:
            self._know_category(changes["category"] or "")
        if not META_COLUMNS.isdisjoint(changes):
            self.meta_changed.add(uid)
            if self.fill_changes is not None:
                self.fill_changes.add(uid)
        assignments = ", ".join(f"{column}=?" for column in changes)
        self._db.execute(f"UPDATE entries SET {assignments} WHERE uid=?", [*changes.values(), uid])

    def set_lines(self, lines: Sequence[tuple[int, int | None, int | None]], now: float) -> None:
        """Entries' new line ranges in their file: (rowid, first line, last line); only those
        that moved are updated (at ``now``)."""
        self._db.executemany(
            "UPDATE entries SET line_start=?1, line_end=?2, updated=?3 WHERE id=?4 "
            "AND (line_start IS NOT ?1 OR line_end IS NOT ?2)",
            [(start, end, now, rowid) for rowid, start, end in lines])

    def move_source(self, old: str, new: str) -> None:
        """The entries of the file ``old`` are now of ``new`` (a renamed file)."""
        self._db.execute("UPDATE entries SET source=? WHERE source=?", (new, old))

    def hashes_kept_elsewhere(self, source: str, agent: str) -> set[str]:
        """Hashes of the file's entries whose text another active entry of the agent has (of
        no file, or of another file)."""
        return {h for (h,) in self._db.execute(
            "SELECT DISTINCT e.hash FROM entries e JOIN entries o ON o.hash = e.hash "
            "AND o.agent = e.agent AND o.id <> e.id AND coalesce(o.source, '') <> e.source "
            "AND o.status = 'active' WHERE e.source = ? AND e.agent = ?", (source, agent))}

    def delete_entry(self, rowid: int) -> None:
        """An entry's row and its vectors gone (the caller records the event)."""
        self.delete_entries([rowid])

    def delete_entries(self, rowids: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM entries WHERE id=?", ((r,) for r in rowids))
        self.delete_vectors(rowids)

    def owners(self) -> dict[str, str]:
        """uid → agent of every entry."""
        return dict(cast(list[tuple[str, str]],
                         self._db.execute("SELECT uid, agent FROM entries").fetchall()))

    def disputed_ids(self) -> set[str]:
        """Entries in an open contradiction (memoryd.passes.consolidate): never shown as
        certain until a person settles it."""
        return self.runs.disputed_ids()

    def count_entries(self) -> dict[str, int]:
        return count_entries(self._db)

    def agents(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT DISTINCT agent FROM entries ORDER BY agent")]

    def count_indexed_by_source(self) -> dict[str, int]:
        """Active entries from watched files, per source name (what is in the index now, not
        what was added since the daemon started)."""
        rows = self._db.execute("SELECT f.source, count(*) FROM files f JOIN entries e "
                               "ON e.source = f.path WHERE e.status = 'active' GROUP BY f.source")
        return {source: n for source, n in rows}

    def categories_named(self, name: str) -> list[str]:
        """The categories of entries (any agent's, any status) that ``name`` names: itself, and
        those of the same folded form (memoryd.text.fold_category: lower case, words joined by
        "-", as a heading's category is made), so that "Mistakes" finds the section's
        "mistakes"; [] when no entry has one. Read once, then kept up to date by the writes
        (a category no longer held stays, as an agent does)."""
        if self._categories is None:
            self._categories = {}
            for (category,) in self._db.execute("SELECT DISTINCT category FROM entries"):
                self._know_category(category)
        folded = fold_category(name)
        same = self._categories.get(folded, set())
        if not folded:  # no word in it ("", "✅"): only itself
            return [name] if name in same else []
        return sorted(same)

    def _know_category(self, category: str) -> None:
        if self._categories is not None:
            self._categories.setdefault(fold_category(category), set()).add(category)

    def known_agents(self) -> set[str]:
        """Every agent that has (or had, since the daemon started) an entry; read once, then
        kept up to date by the writes (a search expands subagent namespaces from it)."""
        if self._agents is None:
            self._agents = set(self.agents())
        return self._agents

    # -- marks ------------------------------------------------------------------------

    def set_mark(self, agent: str, target: str, status: str, superseded_by: str | None,
                 actor: str | None, ts: float) -> None:
        """Keep a status for an entry by what identifies it (see migration 7); the newest
        status wins."""
        self._db.execute(
            "INSERT INTO marks(agent, target, status, superseded_by, actor, ts) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(agent, target) DO UPDATE SET "
            "status=excluded.status, superseded_by=excluded.superseded_by, "
            "actor=excluded.actor, ts=excluded.ts WHERE excluded.ts >= marks.ts",
            (agent, target, status, superseded_by, actor, ts))

    def delete_marks(self, agent: str, targets: Sequence[str]) -> None:
        self._db.executemany("DELETE FROM marks WHERE agent=? AND target=?",
                             ((agent, target) for target in targets))

    def mark(self, agent: str, target: str) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT status, superseded_by, actor, ts FROM marks WHERE agent=? AND target=?",
            (agent, target)).fetchone()
        if row is None:
            return None
        return dict(zip(("status", "superseded_by", "actor", "ts"), row))

    # -- keyword search ---------------------------------------------------------------

    def tokens(self, text: str) -> list[str]:
        """The words of a text as the full-text index has them, in order: porter-stemmed, each
        Han, Kana and Hangul character and each symbol a word (memoryd.text.keyword_text)."""
        if self._tokenizer is None:
            self._tokenizer = self._db.fts5_tokenizer(*KEYWORD_TOKENIZER)
        return cast(list[str], self._tokenizer(
            keyword_text(text).encode("utf-8", "replace"), apsw.FTS5_TOKENIZE_DOCUMENT, None,
            include_offsets=False, include_colocated=False))

    def stems(self, text: str) -> set[str]:
        """The words of a text as the full-text index has them (:meth:`tokens`)."""
        return set(self.tokens(text))

    def optimize_keyword_index(self) -> None:
        """Merge the full-text index into one segment: no old segment keeps a deleted term."""
        self._db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")

    @contextmanager
    def secure_delete(self) -> Iterator[None]:
        """Freed pages zeroed while the block runs (what it deletes is gone from the file)."""
        self._db.execute("PRAGMA secure_delete=ON")
        try:
            yield
        finally:
            self._db.execute("PRAGMA secure_delete=OFF")

    def checkpoint_truncate(self) -> None:
        """Checkpoint the WAL into the database and truncate it (nothing deleted stays in
        it)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def merge_keyword_index(self, pages: int) -> bool:
        """Merge up to ``pages`` leaf pages of the full-text index's segments into bigger ones
        (FTS5's incremental 'merge' with a negative count: as if optimising, a step at a
        time). An index filled entry by entry keeps many segments, which every query reads:
        merged into one, bm25 over the bench store's 72k entries took 4.0 instead of 5.5 ms
        at p50, 35 instead of 42 at most. Returns whether there is more to merge."""
        before = self._db.total_changes()
        with self._db:
            self._db.execute("INSERT INTO entries_fts(entries_fts, rank) VALUES('merge', ?)",
                            (-pages,))
        return self._db.total_changes() - before >= 2


def count_entries(db: apsw.Connection) -> dict[str, int]:
    """Entries per status (a scan of the table: ~20 ms at 72k entries)."""
    return {status: n for status, n in db.execute(
        "SELECT status, count(*) FROM entries GROUP BY status")}
