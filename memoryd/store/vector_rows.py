"""The vectors' tables: ``entries_vec`` (each entry's vector, sqlite-vec), ``part_vectors``
(the vectors of its parts), ``vector_queue`` (the entries awaiting one) and ``vector_refine``
(those whose vector is their parts' mean for now), with the columns the RAM vector index keeps
of each entry (mixed into Store).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import apsw
import numpy as np

from memoryd.store.fetch import integer
from memoryd.text import content_hash, index_text

VECTOR_META = "SELECT id, agent, category, project, kind, status, created FROM entries"


#: How the sentence vectors of a store made before the scheme was recorded were made: each
#: sentence embedded on its own (``memoryd.embedding.model.SENTENCES``).
OLD_PARTS = "sentences"


@dataclass(frozen=True)
class ModelInfo:
    """What the stored vectors are: the model's id, its file's sha256, the vectors' size, and
    how the vectors of an entry's parts are made (``memoryd.embedding.model.PART_SCHEMES``)."""

    model_id: str
    sha256: str
    dim: int
    parts: str = OLD_PARTS


#: The entries whose vector is their parts' mean and that wait for no vector of a new text:
#: ``FROM`` and ``WHERE`` of a query that reads ``r.rowid`` and the entry ``e``.
_REFINING = ("FROM vector_refine r CROSS JOIN entries e ON e.id = r.rowid WHERE NOT EXISTS "
             "(SELECT 1 FROM vector_queue q WHERE q.rowid = r.rowid)")


class VectorRows:
    """The store's reads and writes of vectors (mixed into Store)."""

    _db: apsw.Connection
    model: ModelInfo | None

    def put_vectors(self, rowids: Sequence[int], vectors: np.ndarray,
                    parts: Sequence[np.ndarray] | None = None, pooled: Sequence[int] = ()
                    ) -> None:
        """Store vectors and the vectors of each entry's parts (replacing any), and take the
        rows off the vector queue; those of ``pooled`` (their vector the mean of their parts')
        wait for a run over their text (``rows_to_refine``)."""
        ids = [int(r) for r in rowids]
        marks = ", ".join("?" for _ in ids)
        self.delete_vectors(ids)
        self._db.executemany("INSERT INTO vector_refine(rowid) VALUES (?)",
                             [(int(r),) for r in pooled])
        self._db.executemany(
            "INSERT INTO entries_vec(rowid, embedding) VALUES (?, ?)",
            ((r, v.astype(np.float32).tobytes()) for r, v in zip(ids, vectors)),
        )
        if parts is not None:
            self._db.executemany(
                "INSERT INTO part_vectors(entry, vectors) VALUES (?, ?)",
                ((r, p.astype(np.float32).tobytes()) for r, p in zip(ids, parts) if len(p)))
        self._db.execute(f"DELETE FROM vector_queue WHERE rowid IN ({marks})", ids)

    def delete_vectors(self, rowids: Sequence[int]) -> None:
        rows = [(int(r),) for r in rowids]
        if self.model is not None:
            self._db.executemany("DELETE FROM entries_vec WHERE rowid = ?", rows)
        self._db.executemany("DELETE FROM part_vectors WHERE entry = ?", rows)
        self._db.executemany("DELETE FROM vector_refine WHERE rowid = ?", rows)

    def rows_to_refine(self, limit: int) -> list[tuple[int, str]]:
        """(rowid, index text) of the entries whose vector is their parts' mean, oldest first
        (none that waits for vectors of a new text)."""
        if self.model is None:
            return []
        rows = cast(list[tuple[int, str, str | None]], self._db.execute(
            f"SELECT e.id, e.text, e.key {_REFINING} ORDER BY r.rowid LIMIT ?",
            (limit,)).fetchall())
        return [(rowid, index_text(text, key)) for rowid, text, key in rows]

    def put_refined(self, rows: Sequence[tuple[int, str]], vectors: np.ndarray
                    ) -> dict[int, np.ndarray]:
        """Replace the vectors of ``rows_to_refine``'s (rowid, index text) with the runs over
        their texts, for those still waiting with that text; their part vectors stay. Returns
        the part vectors of those replaced, by rowid (for the RAM index)."""
        if not rows:
            return {}
        marks = ", ".join("?" for _ in rows)
        waiting = {rowid: index_text(text, key) for rowid, text, key in self._db.execute(
            f"SELECT e.id, e.text, e.key {_REFINING} AND r.rowid IN ({marks})",
            [rowid for rowid, _ in rows])}
        kept = [(rowid, vector) for (rowid, text), vector in zip(rows, vectors)
                if waiting.get(rowid) == text]
        ids = [(rowid,) for rowid, _ in kept]
        self._db.executemany("DELETE FROM entries_vec WHERE rowid = ?", ids)
        self._db.executemany("INSERT INTO entries_vec(rowid, embedding) VALUES (?, ?)",
                             ((r, v.astype(np.float32).tobytes()) for r, v in kept))
        self._db.executemany("DELETE FROM vector_refine WHERE rowid = ?", ids)
        parts = self.part_vectors_by_rowids([rowid for rowid, _ in kept])
        return {rowid: parts.get(rowid, np.zeros((0, len(vector)), dtype=np.float32))
                for rowid, vector in kept}

    def count_refining(self) -> int:
        return integer(self._db, "SELECT count(*) FROM vector_refine")

    def cached_vectors(self, hash_: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The vector and part vectors of an entry with this content hash that has them (the
        embedding cache: the same text is never embedded twice), of an entry whose index text
        is its text (the vector of a fact with a key is that of its key and text).

        Two steps on purpose: joined, SQLite scans the vec0 table for every candidate row."""
        if self.model is None:
            return None
        rowids = [r for (r,) in self._db.execute(
            "SELECT e.id FROM entries e WHERE e.hash=? AND index_text(e.text, e.key) = e.text "
            "AND NOT EXISTS (SELECT 1 FROM vector_queue q WHERE q.rowid = e.id) "
            "AND NOT EXISTS (SELECT 1 FROM vector_refine r WHERE r.rowid = e.id) LIMIT 4",
            (hash_,))]
        vectors = self.vectors_by_rowids(rowids)
        if not vectors:
            return None
        rowid, vector = next(iter(vectors.items()))
        return vector, self.part_vectors_by_rowids([rowid]).get(
            rowid, np.zeros((0, self.model.dim), dtype=np.float32))

    def part_vectors_by_rowids(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        if not rowids:
            return {}
        return self._part_vectors(f"entry IN ({', '.join('?' for _ in rowids)})",
                                  [int(r) for r in rowids])

    def _part_vectors(self, where: str, params: list[int]) -> dict[int, np.ndarray]:
        if self.model is None:
            return {}
        dim = self.model.dim
        return {entry: np.frombuffer(blob, dtype=np.float32).reshape(-1, dim) for entry, blob in
                self._db.execute(f"SELECT entry, vectors FROM part_vectors WHERE {where}", params)}

    def vectors_by_rowids(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors by rowid, one lookup each: vec0 answers ``rowid IN (…)`` with a full
        scan (23 ms at 100k rows for 5 ids), ``rowid = ?`` with a point lookup."""
        if not rowids or self.model is None:
            return {}
        found = {}
        for rowid in rowids:
            row = self._db.execute(
                "SELECT embedding FROM entries_vec WHERE rowid = ?", (int(rowid),)).fetchone()
            if row is not None:
                found[int(rowid)] = np.frombuffer(row[0], dtype=np.float32)
        return found

    def iter_vectors(self, batch: int = 4096) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rowids, matrix) batches of all stored vectors, in one pass over the vector table
        (in its order, not necessarily the rowids'). vec0 answers ``rowid > ? ORDER BY rowid
        LIMIT n`` by reading and sorting the whole table: a batch at a time that way read the
        table once a batch, 11-16 s at 100k entries, quadratic in the store's size."""
        if self.model is None:
            return
        dim = self.model.dim
        rows = iter(cast(Iterator[tuple[int, bytes]],
                         self._db.execute("SELECT rowid, embedding FROM entries_vec")))
        while chunk := list(itertools.islice(rows, batch)):
            ids = np.fromiter((r[0] for r in chunk), dtype=np.int64, count=len(chunk))
            yield ids, np.frombuffer(b"".join(r[1] for r in chunk),
                                     dtype=np.float32).reshape(-1, dim)

    def rows_missing_vectors(self, limit: int) -> list[tuple[int, str, str]]:
        """(rowid, hash, text) of queued entries that await a vector, oldest first: the text
        embedded is the index text (``memoryd.text.index_text``), the hash that text's. (CROSS
        JOIN keeps the queue the outer loop: with the statistics of a store that once had a
        long queue, the planner scanned all entries instead, 22 ms at 72k for an empty queue,
        on every write's wake of the backfill.)"""
        if self.model is None:
            return []
        rows = cast(list[tuple[int, str, str, str | None]], self._db.execute(
            "SELECT e.id, e.hash, e.text, e.key FROM vector_queue q CROSS JOIN entries e "
            "ON e.id = q.rowid ORDER BY q.rowid LIMIT ?",
            (limit,),
        ).fetchall())
        out = []
        for rowid, hash_, text, key in rows:
            indexed = index_text(text, key)
            out.append((rowid, hash_ if indexed == text else content_hash(indexed), indexed))
        return out

    def queued_for_vectors(self, entries: Sequence[tuple[int, str]]) -> set[int]:
        """Those of the (rowid, hash) entries that wait for a vector and still have that text
        (one changed meanwhile waits for the vectors of its new text)."""
        if not entries:
            return set()
        marks = ", ".join("(?, ?)" for _ in entries)
        return {r for (r,) in self._db.execute(
            f"WITH wanted(rowid, hash) AS (VALUES {marks}) SELECT q.rowid FROM wanted w "
            "JOIN vector_queue q ON q.rowid = w.rowid JOIN entries e ON e.id = w.rowid "
            "AND e.hash = w.hash", [v for r, h in entries for v in (int(r), h)])}

    def count_backlog(self) -> int:
        return integer(self._db, "SELECT count(*) FROM vector_queue")

    def count_vectors(self) -> int:
        return count_vectors(self._db) if self.model is not None else 0

    def knn(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """sqlite-vec's exact brute-force KNN: (rowid, cosine similarity)."""
        rows = self._db.execute(
            "SELECT rowid, distance FROM entries_vec WHERE embedding MATCH ? AND k = ?",
            (query.astype(np.float32).tobytes(), k),
        )
        return [(rowid, 1.0 - distance) for rowid, distance in rows]

    def vector_meta(self, rowids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        """What the in-memory vector index keeps per entry, by rowid: (agent, category,
        project, kind, status, created)."""
        return self._vector_meta(f"id IN ({', '.join('?' for _ in rowids)})",
                                 [int(r) for r in rowids])

    def vector_meta_of(self, uids: Sequence[str]) -> dict[int, tuple[Any, ...]]:
        """:meth:`vector_meta` of the entries with these uids."""
        return self._vector_meta(f"uid IN ({', '.join('?' for _ in uids)})", list(uids))

    def _vector_meta(self, where: str, params: Sequence[int | str]
                     ) -> dict[int, tuple[Any, ...]]:
        return {row[0]: tuple(row[1:])
                for row in self._db.execute(f"{VECTOR_META} WHERE {where}", params)}


def count_vectors(db: apsw.Connection) -> int:
    """Stored vectors (sqlite-vec reads its chunks: ~30 ms at 72k)."""
    return integer(db, "SELECT count(*) FROM entries_vec")
