"""Filtered reads of entries: an :class:`EntryQuery` says which entries, the store reads them.

Search, ``memory list``/``recent``/``export``, the memory block and the maintenance passes all
read entries by filters (an agent's, a project's, of some kinds, written since a time, with a
tag, …). Each builds an ``EntryQuery`` step by step, with typed steps only, and hands it to a
method of the store (:class:`EntryReads`): no module outside ``memoryd.store`` writes a
``WHERE``. A query is immutable, so narrowing one (a search's time window) leaves it as it was.

The SQL of a step is over ``entries`` aliased ``e``, so that it fits the full-text queries,
which join ``entries_fts`` to ``entries``, as well as the plain reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import apsw

from memoryd.store.fetch import integer
from memoryd.store.records import StoredEntry
from memoryd.store.rows import ENTRY_COLUMNS, encode_tags, row_to_entry
from memoryd.text import keyword_text


def fts_phrase(words: str) -> str:
    """Words as one FTS5 phrase, read as the index reads its texts (memoryd.text.keyword_text:
    a run of Han characters is a phrase of them), quoted: nothing a user types is read as FTS5
    syntax."""
    return '"' + keyword_text(words).replace('"', '""') + '"'


#: The orders a read can ask for (the SQL of each is here, beside the indexes it relies on).
Order = Literal["id", "project", "oldest", "newest", "oldest page", "newest page",
                "day, surest"]
ORDERS: dict[str, str] = {
    "id": "e.id",
    "project": "e.project",
    "oldest": "e.created",
    # entries of one date (a notebook's bullets of a day, a file's lines indexed together) the
    # last stored first, never as the plan happens to read them; the row id is in the
    # ``entries_kind`` index, so the order costs no sort (by uid, 80 lessons of 30,000 took
    # 80 ms instead of 1)
    "newest": "e.created DESC, e.id DESC",
    # pages that neither repeat nor skip an entry: ties on created broken by the row
    "oldest page": "e.created ASC, e.id ASC",
    "newest page": "e.created DESC, e.id DESC",
    # notes in the memory block: newest day first, the more confident ahead within a day
    # (notes only: ORDER_INDEXES)
    "day, surest": "CAST(e.created / 86400 AS INTEGER) DESC, e.confidence DESC, "
                   "e.created DESC, e.id DESC",
}
#: Orders read through indexes of their own, partial ones: for any project, for one project
#: (EntryReads.entries_in_project), and the condition they hold (in the indexes' words, so
#: that SQLite may use them). The planner cannot tell them from ``entries_kind`` (agent,
#: kind, status, created), which serves "newest", and would sort every note by day and
#: confidence: an agent's rows in these indexes come in the order, and a read stops at its
#: limit.
ORDER_INDEXES: dict[str, tuple[str, str, str]] = {
    "day, surest": ("entries_notes_day", "entries_notes_day_project", "e.kind = 'note'"),
}
#: The orders as sort keys of the entries read (EntryReads.entries_in_project merges two reads).
ORDER_KEYS: dict[str, Callable[[StoredEntry], tuple[float, ...]]] = {
    "newest": lambda e: (-e.created, -e.rowid),
    "day, surest": lambda e: (-int(e.created // 86400), -e.confidence, -e.created, -e.rowid),
}
#: The columns a read may ask for by name.
COLUMNS = frozenset(("id", *ENTRY_COLUMNS))
ENTRY_COLUMNS_E = "e.id, " + ", ".join(f"e.{c}" for c in ENTRY_COLUMNS)


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


@dataclass(frozen=True)
class EntryQuery:
    """Which entries: the conjunction of the steps taken (none: every entry)."""

    clauses: tuple[str, ...] = ()
    params: tuple[Any, ...] = ()

    def _and(self, clause: str, *params: Any) -> EntryQuery:
        return EntryQuery((*self.clauses, clause), (*self.params, *params))

    def _among(self, column: str, values: Sequence[Any] | None) -> EntryQuery:
        if values is None:
            return self
        return self._and(f"e.{column} IN ({_marks(values)})", *values)

    @property
    def unfiltered(self) -> bool:
        return not self.clauses

    def also(self, other: EntryQuery) -> EntryQuery:
        """The entries both select."""
        return EntryQuery((*self.clauses, *other.clauses), (*self.params, *other.params))

    # -- whose, what ------------------------------------------------------------------

    def agents(self, names: Sequence[str] | None) -> EntryQuery:
        """Of these agents (None: any)."""
        return self._among("agent", names)

    def agent(self, name: str) -> EntryQuery:
        return self._and("e.agent = ?", name)

    def agent_prefix(self, prefix: str) -> EntryQuery:
        """Of an agent whose name begins with ``prefix`` (a range of the agent index)."""
        return self._and("e.agent >= ? AND e.agent < ?", prefix,
                         prefix[:-1] + chr(ord(prefix[-1]) + 1))

    def categories(self, names: Sequence[str] | None) -> EntryQuery:
        return self._among("category", names)

    def not_transcripts(self) -> EntryQuery:
        """Not a chunk of a transcript (its category: memoryd.ingest.indexer)."""
        return self._and("e.category IS NOT 'session'")

    def kinds(self, names: Sequence[str] | None) -> EntryQuery:
        return self._among("kind", names)

    def kind(self, name: str) -> EntryQuery:
        return self._and("e.kind = ?", name)

    def statuses(self, names: Sequence[str] | None) -> EntryQuery:
        return self._among("status", names)

    def active(self) -> EntryQuery:
        return self._and("e.status = 'active'")

    def superseded(self) -> EntryQuery:
        """Superseded by another entry (merged into it, or replaced)."""
        return self._and("e.status = 'superseded' AND e.superseded_by IS NOT NULL")

    def quarantined(self, flagged: bool = True) -> EntryQuery:
        return self._and("e.quarantined" if flagged else "NOT e.quarantined")

    def tag(self, tag: str) -> EntryQuery:
        """Tagged ``tag`` exactly: tags are stored as ",a,b," (no LIKE, so % and _ are
        plain)."""
        return self._and("instr(e.tags, ?) > 0", encode_tags([tag]))

    def vias(self, names: Sequence[str]) -> EntryQuery:
        """Written through these ways in (api, import, extract, watch)."""
        return self._among("via", names)

    def with_key(self) -> EntryQuery:
        return self._and("e.key IS NOT NULL")

    def key(self, key: str) -> EntryQuery:
        return self._and("e.key = ?", key)

    def key_prefixes(self, prefixes: Sequence[str]) -> EntryQuery:
        """A key that starts with one of ``prefixes`` (LIKE: a prefix holds no % or _)."""
        return self._and("(" + " OR ".join("e.key LIKE ?" for _ in prefixes) + ")",
                         *(p + "%" for p in prefixes))

    def session(self, session: str) -> EntryQuery:
        return self._and("e.session = ?", session)

    # -- where --------------------------------------------------------------------------

    def projects(self, names: Sequence[str] | None) -> EntryQuery:
        return self._among("project", names)

    def project(self, name: str | None) -> EntryQuery:
        """Of this project exactly (None: the global entries)."""
        return self._and("e.project IS ?", name)

    def in_project(self, name: str) -> EntryQuery:
        """What a block in the project shows: its entries and the global ones."""
        return self._and("(e.project = ? OR e.project IS NULL)", name)

    def with_project(self) -> EntryQuery:
        return self._and("e.project IS NOT NULL")

    def source(self, path: str) -> EntryQuery:
        """From this file."""
        return self._and("e.source = ?", path)

    def from_files(self) -> EntryQuery:
        return self._and("e.source IS NOT NULL")

    def not_from(self, paths: Sequence[str]) -> EntryQuery:
        """From none of these files (an entry of no file passes)."""
        if not paths:
            return self
        return self._and(f"(e.source IS NULL OR e.source NOT IN ({_marks(paths)}))", *paths)

    def not_under(self, directory_name: str) -> EntryQuery:
        """Not from a file in a directory of this name (a notebook's archive)."""
        return self._and(f"coalesce(e.source, '') NOT LIKE '%/{directory_name}/%'")

    def with_lines(self) -> EntryQuery:
        """A line range of its file (a memory file's bullet)."""
        return self._and("e.line_start IS NOT NULL")

    # -- which rows, when ---------------------------------------------------------------

    def ids(self, rowids: Sequence[int]) -> EntryQuery:
        return self._and(f"e.id IN ({_marks(rowids)})", *map(int, rowids))

    def uids(self, uids: Sequence[str]) -> EntryQuery:
        return self._and(f"e.uid IN ({_marks(uids)})", *uids)

    def uid_prefix(self, prefix: str) -> EntryQuery:
        """An id that begins with ``prefix`` (the uid index's range, not LIKE)."""
        return self._and("e.uid >= ? AND e.uid < ?", prefix, prefix + "\uffff")

    def ids_after(self, rowid: int) -> EntryQuery:
        return self._and("e.id > ?", rowid)

    def ids_within(self, after: int, last: int) -> EntryQuery:
        """Rowids ``after`` < id <= ``last``: a window of the table, a step of a pass."""
        return self._and("e.id > ? AND e.id <= ?", after, last)

    def added_or_updated_since(self, rowid: int, ts: float) -> EntryQuery:
        """Added after the row ``rowid``, or updated at ``ts`` or later."""
        return self._and("(e.id > ? OR e.updated >= ?)", rowid, ts)

    def updated_since(self, ts: float) -> EntryQuery:
        return self._and("e.updated >= ?", ts)

    def created_since(self, ts: float) -> EntryQuery:
        return self._and("e.created >= ?", ts)

    def created_until(self, ts: float) -> EntryQuery:
        return self._and("e.created <= ?", ts)

    def created_within(self, start: float, end: float) -> EntryQuery:
        """Written in [start, end) (a time a question names)."""
        return self._and("e.created >= ? AND e.created < ?", start, end)

    def after_in_order(self, created: float, rowid: int, order: Order) -> EntryQuery:
        """After the entry (created, rowid) in a page order (the next page of a list)."""
        newer = order == "oldest page"
        sign = ">" if newer else "<"
        return self._and(f"(e.created {sign} ? OR (e.created = ? AND e.id {sign} ?))",
                         created, created, rowid)

    # -- SQL ----------------------------------------------------------------------------

    def where(self, first: str = " WHERE ") -> str:
        """The SQL of the conditions (``first`` before them; "" when there are none)."""
        return first + " AND ".join(self.clauses) if self.clauses else ""


def _tail(order: Order | None, limit: int | None, offset: int) -> tuple[str, list[Any]]:
    sql, params = "", []
    if order is not None:
        sql += " ORDER BY " + ORDERS[order]
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
        if offset:
            sql += " OFFSET ?"
            params.append(offset)
    return sql, params


def _select(columns: str, query: EntryQuery, order: Order | None = None,
            limit: int | None = None, offset: int = 0,
            of_project: bool = False) -> tuple[str, list[Any]]:
    """The SQL and parameters that read ``columns`` (over ``e``) of the query's entries
    (``of_project``: the query names one project, or none: global)."""
    source = "entries e"
    if order in ORDER_INDEXES:
        any_project, one_project, holds = ORDER_INDEXES[order]
        source += f" INDEXED BY {one_project if of_project else any_project}"
        query = EntryQuery((holds,)).also(query)
    tail, params = _tail(order, limit, offset)
    return f"SELECT {columns} FROM {source}" + query.where() + tail, [*query.params, *params]


def _columns(columns: Iterable[str]) -> str:
    names = list(columns)
    unknown = [c for c in names if c not in COLUMNS]
    if unknown:
        raise ValueError(f"no entries column {unknown[0]!r}")
    return ", ".join(f"e.{c}" for c in names)


class EntryReads:
    """The store's reads of entries by :class:`EntryQuery` (mixed into Store)."""

    _db: apsw.Connection
    _fts_rows: tuple[int, float, int] | None
    _term_rows: dict[str, tuple[int, float]]

    def entries(self, query: EntryQuery, order: Order | None = None, limit: int | None = None,
                offset: int = 0) -> list[StoredEntry]:
        """The entries the query selects."""
        return [row_to_entry(row) for row in self._db.execute(
            *_select(ENTRY_COLUMNS_E, query, order, limit, offset))]

    def _of_project(self, query: EntryQuery, project: str | None, order: Order,
                    limit: int) -> list[StoredEntry]:
        return [row_to_entry(row) for row in self._db.execute(*_select(
            ENTRY_COLUMNS_E, query.project(project), order, limit, of_project=True))]

    def entries_in_project(self, query: EntryQuery, project: str | None, order: Order,
                           limit: int) -> list[StoredEntry]:
        """The first ``limit`` in ``order`` of the entries the query selects that belong to
        ``project`` or to none (global): what a memory block in the project shows (None: of
        any project). Read as two reads, the project's and the global ones, each an index
        range in the order that stops at the limit (``entries_project``), merged: one read of
        both (``project = ? OR project IS NULL``) collects every entry of either and sorts
        them (40-50 ms for the block's feedback or facts at 100,000 global entries)."""
        if project is None:
            return self.entries(query, order, limit)
        either = [*self._of_project(query, project, order, limit),
                  *self._of_project(query, None, order, limit)]
        return sorted(either, key=ORDER_KEYS[order])[:limit]

    def entry_fields(self, query: EntryQuery, columns: Sequence[str],
                     order: Order | None = None, limit: int | None = None
                     ) -> list[dict[str, Any]]:
        """Some columns of the entries the query selects, by name (a pass reads a handful of
        columns of many rows)."""
        return [dict(zip(columns, row)) for row in self._db.execute(
            *_select(_columns(columns), query, order, limit))]

    def entry_values(self, query: EntryQuery, column: str, *, distinct: bool = False,
                     order: Order | None = None) -> list[Any]:
        """One column of the entries the query selects (``distinct``: each value once)."""
        return [value for (value,) in self._db.execute(
            *_select(("DISTINCT " if distinct else "") + _columns([column]), query, order))]

    def count_matching(self, query: EntryQuery) -> int:
        return integer(self._db, "SELECT count(*) FROM entries e" + query.where(), query.params)

    def last_rowid(self) -> int:
        """The highest rowid of entries (0 when there are none): where a pass's windows end."""
        return integer(self._db, "SELECT coalesce(max(id), 0) FROM entries")

    def filter_rowids(self, rowids: Sequence[int], query: EntryQuery) -> set[int]:
        """Which of ``rowids`` the query selects."""
        if not rowids:
            return set()
        selected = EntryQuery().ids(rowids).also(query)
        return {r for (r,) in self._db.execute("SELECT e.id FROM entries e" + selected.where(),
                                               selected.params)}

    # -- keyword search -----------------------------------------------------------------

    def fts(self, match: str, query: EntryQuery | None, limit: int) -> list[tuple[int, float]]:
        """(rowid, bm25) best first, of the entries the query selects (None: any)."""
        if query is None or query.unfiltered:
            return cast(list[tuple[int, float]], self._db.execute(
                "SELECT rowid, bm25(entries_fts, 1.0, 0.5, 0.5) AS score FROM entries_fts "
                "WHERE entries_fts MATCH ? ORDER BY score LIMIT ?", (match, limit)).fetchall())
        sql = (
            # CROSS JOIN keeps FTS5 as the outer loop: probing it per entries row would re-run
            # the MATCH for every row
            "SELECT e.id, bm25(entries_fts, 1.0, 0.5, 0.5) AS score FROM entries_fts "
            "CROSS JOIN entries e ON e.id = entries_fts.rowid "
            f"WHERE entries_fts MATCH ? AND {query.where('')} ORDER BY score LIMIT ?"
        )
        return cast(list[tuple[int, float]],
                    self._db.execute(sql, [match, *query.params, limit]).fetchall())

    def newest_matching(self, match: str, query: EntryQuery | None, limit: int) -> list[int]:
        """The newest ``limit`` entries (by rowid) matching, unscored: cheap for a common word."""
        if query is None or query.unfiltered:
            return [r for (r,) in self._db.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rowid DESC "
                "LIMIT ?", (match, limit))]
        return [r for (r,) in self._db.execute(
            "SELECT e.id FROM entries_fts CROSS JOIN entries e ON e.id = entries_fts.rowid "
            f"WHERE entries_fts MATCH ? AND {query.where('')} ORDER BY entries_fts.rowid DESC "
            "LIMIT ?", [match, *query.params, limit])]

    def count_fts_rows(self) -> int:
        """Rows in the full-text index, counted again after a minute, or sooner once the
        rows this connection changed since reach a tenth of the count (a store filling up, a
        purge): a search's word weights rest on it, and a count taken while the store was
        empty weighed every word at nothing for a minute. A recount forgets the counts of
        :meth:`term_rows` too, which the same changes make stale."""
        now, changes = time.monotonic(), self._db.total_changes()
        cached = self._fts_rows
        if cached is None or now - cached[1] > 60 or changes - cached[2] > cached[0] // 10:
            cached = self._fts_rows = (
                integer(self._db, "SELECT count(*) FROM entries"), now, changes)
            self._term_rows.clear()
        return cached[0]

    def term_rows(self, term: str) -> int:
        """How many rows contain ``term`` (cached for a minute per term, or until
        :meth:`count_fts_rows` counts again)."""
        now = time.monotonic()
        cached = self._term_rows.get(term)
        if cached is None or now - cached[1] > 60:
            count = integer(self._db,
                            "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?",
                            (fts_phrase(term),))
            if len(self._term_rows) > 10_000:
                self._term_rows.clear()
            cached = self._term_rows[term] = (count, now)
        return cached[0]

    def word_indexed(self, word: str) -> bool:
        """Whether any entry's text, or the titles it is under, holds ``word`` (as the
        full-text index tokenises it: the titles are where its category was)."""
        return self._db.execute("SELECT 1 FROM entries_fts WHERE entries_fts MATCH ? LIMIT 1",
                                ("{text category} : " + fts_phrase(word),)).fetchone() \
            is not None
