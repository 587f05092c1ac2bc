"""The vector index the daemon searches: 1-bit codes in RAM, exact vectors in a file.

sqlite-vec's vec0 table (and ``part_vectors``) stay the durable store, but a brute-force scan
of vec0 takes ~80 ms at 100,000 vectors on 2 cores, and float copies in RAM do not fit a
million entries with their parts (a few million vectors). So:

- every vector (an entry's, and its parts' — its sentences, :func:`memoryd.text.split_parts`) is
  a row: its **sign bits** (48 bytes at 384 dims, word-major so that the Hamming scan runs over
  contiguous memory) stay in RAM;
- its exact values (int8, 384 bytes, with a float32 scale per row in RAM) are appended to a
  **row file** beside the database (:mod:`memoryd.store.row_file`) and read only for the rows
  being re-ranked;
- the filter columns (agent, category, project, kind, status, creation time) are per entry,
  in arrays indexed by rowid; a part is filtered by its entry's.

A search scans the bits (XOR + popcount) of every row whose entry passes the filters, re-ranks
the best ``rerank`` rows exactly, and answers per entry: the cosine of its own vector and of its
best part. RAM per row: 48 bytes of bits and ~10 of bookkeeping; per entry ~30 of columns.
The row file is derived data: it is rebuilt from the database when the daemon starts.
(bench/bench_store.py prints the recall of this index against exact search, and its size.)

The index is written on the database thread and searched on the search thread too (a search's
vector half runs beside its keyword half): each public method holds the index's lock, so a
search never sees a write half done, and never reads a row file being re-mapped.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from memoryd.store.row_file import RowFile, quantize

STATUS_CODES = {"active": 0, "superseded": 1, "forgotten": 2, "removed": 3, "archived": 4}
#: Re-ranked rows per search: more with a bigger index, so that recall holds (bench_store).
MIN_RERANK = 1000
RERANK_SHARE = 1 / 400
#: Rows whose Hamming distances are found together (see VectorIndex._hamming).
HAMMING_BLOCK = 32_768
#: A filter of more codes than this is matched by np.isin (see _among).
AMONG_MAX_CODES = 32
#: A search whose filter allows fewer than one row in SCAN_SHARE scans only those (gathering
#: them costs more a row than scanning all of them in order).
SCAN_SHARE = 3
#: Filters whose allowed rows are kept between searches (until the index changes).
ALLOWED_KEPT = 8

#: agent, category, project, kind, status, created
Meta = tuple[str, str, "str | None", str, str, float]
F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """The method runs holding the index's lock (see the module docstring)."""
    @functools.wraps(method)
    def holding(self: VectorIndex, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)
    return holding  # type: ignore[return-value]


@dataclass(frozen=True)
class VectorFilter:
    agents: Sequence[str] | None = None
    categories: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    projects: Sequence[str | None] | None = None
    statuses: Sequence[str] = ("active",)
    since: float | None = None
    until: float | None = None


class _Codes:
    """Strings of one column ↔ small ints."""

    def __init__(self) -> None:
        self.ids: dict[str | None, int] = {}

    def code(self, value: str | None) -> int:
        return self.ids.setdefault(value, len(self.ids))

    def lookup(self, values: Sequence[str | None]) -> list[int]:
        return [self.ids[v] for v in values if v in self.ids]


def _among(values: np.ndarray, codes: Sequence[int]) -> np.ndarray:
    """``values`` that are one of ``codes``, by a comparison per code: a filter has a few codes,
    and ``np.isin`` on the small integers of a column took 15-20 times as long (it builds a
    lookup table and indexes it with every value: 0.3-0.4 ms of a 4-5 ms index search over
    104k entries)."""
    if len(codes) > AMONG_MAX_CODES:
        return np.isin(values, codes)
    mask = np.zeros(len(values), dtype=bool)
    for code in codes:
        mask |= values == code
    return mask


def _grown(array: np.ndarray, size: int, fill: float = 0) -> np.ndarray:
    """The array with room for ``size`` items along its last axis (doubling)."""
    if array.shape[-1] >= size:
        return array
    new = np.full((*array.shape[:-1], max(size, array.shape[-1] * 2)), fill, dtype=array.dtype)
    new[..., : array.shape[-1]] = array
    return new


class _Rows:
    """Row numbers, appended to (a list turned into an array at each near-duplicate look-up
    cost 2.2 ms for 100,000 rows)."""

    def __init__(self) -> None:
        self.array = np.empty(16, dtype=np.int64)
        self.size = 0

    def append(self, row: int) -> None:
        self.array = _grown(self.array, self.size + 1)
        self.array[self.size] = row
        self.size += 1

    def view(self) -> np.ndarray:
        return self.array[:self.size]


class VectorIndex:
    def __init__(self, dim: int, path: Path, capacity: int = 1024,
                 min_rerank: int = MIN_RERANK) -> None:
        """``path``: the row file (created empty; it is rebuilt, never reused)."""
        self.dim = dim
        self.min_rerank = min_rerank
        self.words = (dim + 63) // 64
        self.path = path
        self.rows = 0
        self.bits = np.zeros((self.words, capacity), dtype=np.uint64)
        self.owner = np.zeros(capacity, dtype=np.int64)
        self.scale = np.zeros(capacity, dtype=np.float32)  # a row's int8 values × scale
        self.live = np.zeros(capacity, dtype=bool)  # False: replaced by a newer vector
        # per entry, indexed by rowid
        self.status = np.full(capacity, STATUS_CODES["removed"], dtype=np.int8)
        self.columns = {name: np.zeros(capacity, dtype=np.int32)
                        for name in ("agent", "category", "project", "kind")}
        self.created = np.zeros(capacity, dtype=np.float64)
        self.whole = np.full(capacity, -1, dtype=np.int64)  # the entry's row
        self.first_part = np.full(capacity, -1, dtype=np.int64)  # its parts' rows are contiguous
        self.part_count = np.zeros(capacity, dtype=np.int16)
        self._codes = {name: _Codes() for name in ("agent", "category", "project", "kind")}
        # (agent, category) → its entries' rows, and rows of entries that have moved to
        # another since (the look-up checks the columns)
        self.groups: dict[tuple[int, int], _Rows] = {}
        self.entries = 0
        self.file = RowFile(path, dim)
        self.lock = threading.RLock()
        self._changes = 0  # any write: the rows a filter allows may differ
        self._allowed: dict[tuple[object, ...], tuple[int, np.ndarray]] = {}
        #: while the index is filled from a snapshot of the store (:meth:`fill`), the rowids
        #: whose vectors writes have put in or taken out since the fill began
        self._written: set[int] | None = None
        self.closed = False

    @_locked
    def close(self) -> None:
        self.closed = True
        self.file.close()

    # -- filling ----------------------------------------------------------------------

    @property
    def filling(self) -> bool:
        """Filled from a snapshot of the store still: it answers for part of the entries."""
        return self._written is not None

    @_locked
    def start_fill(self) -> None:
        """From now on, :meth:`fill` leaves alone what a write does (:meth:`add_many`,
        :meth:`remove`): the write is newer than the snapshot the fill reads."""
        self._written = set()

    @_locked
    def fill(self, rowids: Sequence[int], vectors: np.ndarray, parts: Sequence[np.ndarray],
             meta: Sequence[Meta]) -> None:
        """Stored vectors read from the snapshot, but those of entries written since the fill
        began; nothing once the index is closed (memoryd stops). Raises UnavailableError as
        :meth:`add_many`."""
        if self.closed:
            return
        written = self._written or set()
        keep = [i for i, rowid in enumerate(rowids) if rowid not in written]
        if keep:
            self._add_many([rowids[i] for i in keep], np.asarray(vectors)[keep],
                           [parts[i] for i in keep], [meta[i] for i in keep])

    @_locked
    def end_fill(self) -> None:
        self._written = None

    def __len__(self) -> int:
        return self.entries

    @property
    def nbytes(self) -> int:
        arrays: list[np.ndarray] = [
                  self.bits, self.owner, self.scale, self.live, self.status, self.created,
                  self.whole, self.first_part, self.part_count, *self.columns.values()]
        return sum(a.nbytes for a in arrays) + sum(m.nbytes for _, m in self._allowed.values())

    @property
    def parts(self) -> int:
        return int(self.part_count.sum())

    # -- writing ----------------------------------------------------------------------

    def add(self, rowid: int, vector: np.ndarray, parts: np.ndarray, meta: Meta) -> None:
        """An entry's vector and its parts' (replacing any it had), with its filter columns."""
        self.add_many([rowid], np.asarray(vector, np.float32).reshape(1, self.dim), [parts], [meta])

    @_locked
    def add_many(self, rowids: Sequence[int], vectors: np.ndarray, parts: Sequence[np.ndarray],
                 meta: Sequence[Meta]) -> None:
        """Raises UnavailableError, the index unchanged, when the row file cannot take the rows
        (a full disk)."""
        if self.closed:
            return
        self._add_many(rowids, vectors, parts, meta)
        if self._written is not None:
            self._written.update(int(rowid) for rowid in rowids)

    def _add_many(self, rowids: Sequence[int], vectors: np.ndarray, parts: Sequence[np.ndarray],
                  meta: Sequence[Meta]) -> None:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        parts = [np.asarray(p, dtype=np.float32).reshape(-1, self.dim) for p in parts]
        matrix = np.concatenate([block for vector, entry_parts in zip(vectors, parts)
                                 for block in (vector[None, :], entry_parts)])
        codes, scales = quantize(matrix)
        self.file.write(self.rows, codes)  # first: nothing has changed if it fails
        top = max(int(r) for r in rowids) + 1
        self._grow_entries(top)
        owners: list[int] = []
        for rowid, entry_parts, columns in zip(rowids, parts, meta):
            rowid = int(rowid)
            self._retire(rowid)
            start = self.rows + len(owners)
            self.whole[rowid] = start
            self.first_part[rowid] = start + 1 if len(entry_parts) else -1
            self.part_count[rowid] = len(entry_parts)
            owners += [rowid] * (1 + len(entry_parts))
            self._set_meta(rowid, columns)
            self._group(rowid).append(start)
            self.entries += 1
        self._append(matrix, scales, np.array(owners, dtype=np.int64))

    @_locked
    def set_meta(self, rowid: int, meta: Meta) -> None:
        """An indexed entry's filter columns changed (its vectors did not)."""
        if not 0 <= rowid < len(self.whole) or self.whole[rowid] < 0:
            return
        old = (int(self.columns["agent"][rowid]), int(self.columns["category"][rowid]))
        self._set_meta(rowid, meta)
        if (int(self.columns["agent"][rowid]), int(self.columns["category"][rowid])) != old:
            self._group(rowid).append(int(self.whole[rowid]))  # near-duplicates: within one

    def _group(self, rowid: int) -> _Rows:
        """The rows of the entry's (agent, category)."""
        key = (int(self.columns["agent"][rowid]), int(self.columns["category"][rowid]))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Rows()
        return group

    @_locked
    def remove(self, rowid: int) -> None:
        """An entry deleted: its rows leave the index. (SQLite gives a deleted last rowid to
        the next entry; until that entry has its vector, the index must not answer for it.)"""
        if self._written is not None:
            self._written.add(rowid)
        if not 0 <= rowid < len(self.whole) or self.whole[rowid] < 0:
            return
        self._retire(rowid)
        self.whole[rowid] = self.first_part[rowid] = -1
        self.part_count[rowid] = 0
        self.status[rowid] = STATUS_CODES["removed"]
        self._changes += 1

    @_locked
    def set_status(self, rowid: int, status: str) -> None:
        if 0 <= rowid < len(self.status):
            self.status[rowid] = STATUS_CODES.get(status, STATUS_CODES["removed"])
            self._changes += 1

    def _retire(self, rowid: int) -> None:
        old = int(self.whole[rowid])
        if old < 0:
            return
        self._changes += 1
        self.live[old] = False
        first, count = int(self.first_part[rowid]), int(self.part_count[rowid])
        if count:
            self.live[first:first + count] = False
        self.entries -= 1

    def _set_meta(self, rowid: int, meta: Meta) -> None:
        agent, category, project, kind, status, created = meta
        self.columns["agent"][rowid] = self._codes["agent"].code(agent)
        self.columns["category"][rowid] = self._codes["category"].code(category)
        self.columns["project"][rowid] = self._codes["project"].code(project)
        self.columns["kind"][rowid] = self._codes["kind"].code(kind)
        self.status[rowid] = STATUS_CODES.get(status, STATUS_CODES["removed"])
        self.created[rowid] = created
        self._changes += 1

    def _grow_entries(self, size: int) -> None:
        self.status = _grown(self.status, size, STATUS_CODES["removed"])
        self.created = _grown(self.created, size)
        self.whole = _grown(self.whole, size, -1)
        self.first_part = _grown(self.first_part, size, -1)
        self.part_count = _grown(self.part_count, size)
        for name in self.columns:
            self.columns[name] = _grown(self.columns[name], size)

    def _append(self, matrix: np.ndarray, scales: np.ndarray, owners: np.ndarray) -> None:
        """The rows' bits and bookkeeping in RAM (their values are in the row file already)."""
        n = len(matrix)
        start, self.rows = self.rows, self.rows + n
        self.bits = _grown(self.bits, self.rows)
        self.owner = _grown(self.owner, self.rows)
        self.scale = _grown(self.scale, self.rows)
        self.live = _grown(self.live, self.rows)
        self.bits[:, start:self.rows] = self._sign_bits(matrix).T
        self.owner[start:self.rows] = owners
        self.live[start:self.rows] = True
        self.scale[start:self.rows] = scales
        self._changes += 1

    def _sign_bits(self, vectors: np.ndarray) -> np.ndarray:
        packed = np.packbits(vectors > 0, axis=1)
        padded = np.zeros((len(vectors), self.words * 8), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        return padded.view(np.uint64)

    # -- reading ----------------------------------------------------------------------

    def _hamming(self, code: np.ndarray, rows: slice | np.ndarray) -> np.ndarray:
        """The Hamming distance of the given rows' sign bits to ``code``, a word at a time into
        buffers made once (a temporary per operation cost a third more), HAMMING_BLOCK rows at
        a time (so that the buffers stay in the core's cache: 1.1 against 1.4 ms over the
        bench store's 178k rows)."""
        count = rows.stop - rows.start if isinstance(rows, slice) else len(rows)
        distance = np.empty(count, dtype=np.uint16)
        scratch = np.empty(min(count, HAMMING_BLOCK), dtype=np.uint64)
        counted = np.empty(min(count, HAMMING_BLOCK), dtype=np.uint8)
        for start in range(0, count, HAMMING_BLOCK):
            end = min(count, start + HAMMING_BLOCK)
            block = (slice(rows.start + start, rows.start + end) if isinstance(rows, slice)
                     else rows[start:end])
            into, xor, bits = distance[start:end], scratch[:end - start], counted[:end - start]
            for word in range(self.words):
                np.bitwise_xor(self.bits[word, block], code[word], out=xor)
                np.bitwise_count(xor, out=bits)
                if word:
                    into += bits
                else:
                    into[:] = bits
        return distance

    @_locked
    def whole_vectors(self, rowids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The int8 values and scales of these entries' own vectors (held by the index):
        value × scale is the vector, to within ~2e-4 of each cosine."""
        rows = self.whole[rowids]
        if not len(rows):
            return np.zeros((0, self.dim), dtype=np.int8), np.zeros(0, dtype=np.float32)
        return self.file.values(rows), self.scale[rows].copy()

    @_locked
    def vectors_of(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        """The vectors (float32, to within ~2e-4 of each cosine) of those of these entries the
        index holds."""
        held = [int(r) for r in rowids if 0 <= r < len(self.whole) and self.whole[r] >= 0]
        values, scales = self.whole_vectors(np.array(held, dtype=np.int64))
        matrix = values.astype(np.float32) * scales[:, None]
        return dict(zip(held, matrix))

    @_locked
    def codes(self, column: str, rowids: np.ndarray) -> tuple[np.ndarray, dict[str | None, int]]:
        """The entries' codes in a filter column (agent, category, project, kind), and the
        code of each value."""
        return self.columns[column][rowids].copy(), dict(self._codes[column].ids)

    @_locked
    def rowids(self, where: VectorFilter, skip_categories: Sequence[str] = ()) -> np.ndarray:
        """The rowids, ascending, of the entries with a vector here that pass the filter and
        are in none of ``skip_categories``."""
        mask = self._entry_mask(where) & (self.whole >= 0)
        for category in self._codes["category"].lookup(skip_categories):
            mask &= self.columns["category"] != category
        return np.flatnonzero(mask)

    def _exact(self, rows: np.ndarray, query: np.ndarray, release: bool = True) -> np.ndarray:
        """Cosines of the given rows to the query, from the row file (``release``: see
        :meth:`RowFile.dot`)."""
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        values: np.ndarray = self.file.dot(rows, query, self.bits.shape[1], release) \
            * self.scale[rows]
        return values

    def _entry_mask(self, where: VectorFilter, rowids: np.ndarray | None = None) -> np.ndarray:
        """Which entries (every rowid, or the given ones) pass the filter."""
        pick = slice(None) if rowids is None else rowids
        statuses = [STATUS_CODES[s] for s in where.statuses if s in STATUS_CODES]
        mask = _among(self.status[pick], statuses)
        for name, values in (("agent", where.agents), ("category", where.categories),
                             ("project", where.projects), ("kind", where.kinds)):
            if values is not None:
                mask &= _among(self.columns[name][pick], self._codes[name].lookup(values))
        if where.since is not None:
            mask &= self.created[pick] >= where.since
        if where.until is not None:
            mask &= self.created[pick] <= where.until
        return mask

    def passing(self, rowids: Sequence[int], where: VectorFilter) -> tuple[set[int], list[int]]:
        """Of these entries, the ones the index holds that pass the filter, and the ones it
        does not hold (no vector yet: the caller asks the database). Without the lock: it
        reads a few hundred values of the per-entry columns, which only the database thread,
        its caller, writes (holding the lock would wait for a search's vector half)."""
        ids = np.asarray(rowids, dtype=np.int64)
        known = ids < len(self.whole)
        known[known] = self.whole[ids[known]] >= 0
        held = ids[known]
        return set(held[self._entry_mask(where, held)].tolist()), ids[~known].tolist()

    @_locked
    def search(self, query: np.ndarray, k: int, where: VectorFilter
               ) -> dict[int, tuple[float, float]]:
        """Up to ``k`` entries by the best of their rows: rowid → (cosine of the entry's
        vector, cosine of its best part; the entry's own when it has no parts)."""
        if self.rows == 0 or k <= 0:
            return {}
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        allowed = self._rows_allowed(where)
        count = int(np.count_nonzero(allowed))
        rerank = max(self.min_rerank, int(self.rows * RERANK_SHARE))
        if count <= rerank:
            candidates = np.flatnonzero(allowed)
        else:
            code = self._sign_bits(query[None, :])[0]
            if count * SCAN_SHARE < self.rows:  # a few rows: only those
                rows = np.flatnonzero(allowed)
                candidates = rows[_smallest(self._hamming(code, rows), rerank)]
            else:  # most rows: all of them, the others out of reach
                distance = self._hamming(code, slice(0, self.rows))
                distance[~allowed] = self.words * 64 + 1  # beyond any real distance
                candidates = _smallest(distance, rerank)
        if not len(candidates):
            return {}
        candidates = np.sort(candidates)  # the row file is read in order
        scores = self._exact(candidates, query)
        owners = self.owner[candidates]
        order = np.lexsort((-scores, owners))  # by entry, its best row first
        firsts = order[np.flatnonzero(np.r_[True, owners[order][1:] != owners[order][:-1]])]
        top = firsts[np.argsort(-scores[firsts], kind="stable")[:k]]
        found = owners[top]
        # each entry's own cosine and its best part's: from the rows just read where possible
        counts = self.part_count[found].astype(np.int64)
        whole_at, whole_read = _read_at(candidates, self.whole[found], np.ones_like(counts))
        parts_at, parts_read = _read_at(candidates, self.first_part[found], counts)
        complete = whole_read & (parts_read | (counts == 0))
        result: dict[int, tuple[float, float]] = {}
        for number in np.flatnonzero(complete).tolist():
            whole = float(scores[whole_at[number]])
            start, count = int(parts_at[number]), int(counts[number])
            result[int(found[number])] = (whole, float(scores[start:start + count].max())
                                          if count else whole)
        result.update(self.scores(found[~complete].tolist(), query))
        return {int(rowid): result[int(rowid)] for rowid in found}

    def _rows_allowed(self, where: VectorFilter) -> np.ndarray:
        """Which rows are live and of an entry that passes the filter (a mask over the rows);
        kept until the index changes, since most searches ask the same filter (a byte a row:
        1.4 MB for each filter kept at a million entries and their parts)."""
        key = (tuple(where.agents) if where.agents is not None else None,
               tuple(where.categories) if where.categories is not None else None,
               tuple(where.kinds) if where.kinds is not None else None,
               tuple(where.projects) if where.projects is not None else None,
               tuple(where.statuses), where.since, where.until)
        cached = self._allowed.get(key)
        if cached is not None and cached[0] == self._changes:
            return cached[1]
        allowed: np.ndarray = (self.live[:self.rows]
                               & self._entry_mask(where)[self.owner[:self.rows]])
        self._allowed.pop(key, None)
        if len(self._allowed) >= ALLOWED_KEPT:
            self._allowed.pop(next(iter(self._allowed)))
        self._allowed[key] = (self._changes, allowed)
        return allowed

    @_locked
    def scores(self, rowids: Sequence[int], query: np.ndarray) -> dict[int, tuple[float, float]]:
        """(cosine of the entry's vector, of its best part) for each given entry in the index."""
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        ids = np.asarray(rowids, dtype=np.int64).reshape(-1)
        ids = ids[(ids >= 0) & (ids < len(self.whole))]
        present = ids[self.whole[ids] >= 0]
        if not len(present):
            return {}
        counts = self.part_count[present].astype(np.int64)
        sizes = counts + 1  # each entry's rows: its own, then its parts (contiguous)
        starts = np.cumsum(sizes) - sizes
        offsets = np.arange(int(sizes.sum())) - np.repeat(starts, sizes)
        rows = np.repeat(self.first_part[present] - 1, sizes) + offsets
        rows[starts] = self.whole[present]
        order = np.argsort(rows)
        values = np.empty(len(rows), dtype=np.float32)
        values[order] = self._exact(rows[order], query)
        whole = values[starts]
        parts = values.copy()
        parts[starts] = -np.inf
        best = np.where(counts > 0, np.maximum.reduceat(parts, starts), whole)
        return dict(zip(present.tolist(), zip(whole.tolist(), best.tolist())))

    @_locked
    def nearest(self, vector: np.ndarray, agent: str, category: str, k: int = 5,
                projects: Sequence[str | None] | None = None) -> list[tuple[int, float]]:
        """The ``k`` active entries of this agent and category (and of one of ``projects``,
        when given) most like the vector (by their own vectors, not their parts): (rowid,
        cosine), best first."""
        codes = self._codes
        if agent not in codes["agent"].ids or category not in codes["category"].ids:
            return []
        key = (codes["agent"].ids[agent], codes["category"].ids[category])
        group = self.groups.get(key)
        if group is None or not group.size:
            return []
        rows = group.view()
        owners = self.owner[rows]
        keep = (self.live[rows] & (self.status[owners] == STATUS_CODES["active"])
                & (self.columns["agent"][owners] == key[0])
                & (self.columns["category"][owners] == key[1]))
        if projects is not None:
            keep &= _among(self.columns["project"][owners], codes["project"].lookup(projects))
        rows = rows[keep]
        if not len(rows):
            return []
        if len(rows) > 4 * self.min_rerank:  # a big group: narrow it by the bits first
            code = self._sign_bits(np.asarray(vector, np.float32)[None, :])[0]
            rows = rows[_smallest(self._hamming(code, rows), self.min_rerank)]
        rows.sort()
        rows = rows[np.r_[True, rows[1:] != rows[:-1]]]  # once: an entry that moved and came back
        scores = self._exact(rows, np.asarray(vector, np.float32), release=False)
        best = np.argsort(-scores)[:k]
        return [(int(self.owner[rows[i]]), float(scores[i])) for i in best]


def _read_at(rows: np.ndarray, first: np.ndarray, count: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Where runs of ``count`` rows from ``first`` start in ``rows`` (ascending, distinct),
    and whether each run is there whole: its last row sits ``count - 1`` places after where
    its first would go (distinct ascending rows leave no room for a gap)."""
    at = np.searchsorted(rows, first)
    last = at + count - 1
    whole = (count > 0) & (last < len(rows))
    whole[whole] = rows[last[whole]] == first[whole] + count[whole] - 1
    return at, whole


def _smallest(distance: np.ndarray, keep: int) -> np.ndarray:
    """Positions of ``keep`` of the smallest distances (which of those tied at the cut is
    arbitrary). Distances are small integers: counting them finds the cut in one pass, where
    argpartition sorted partly."""
    cumulative = np.cumsum(np.bincount(distance))
    cut = int(np.searchsorted(cumulative, keep))  # the smallest d with keep rows at or below
    below = np.flatnonzero(distance < cut)
    return np.concatenate([below, np.flatnonzero(distance == cut)[:keep - len(below)]])


class MetaChanges(Protocol):
    """What :func:`follow_meta` reads of the store (:class:`memoryd.store.database.Store`):
    the uids of the entries whose filter columns changed, and those columns by row."""

    meta_changed: set[str]

    def vector_meta_of(self, uids: Sequence[str]) -> dict[int, tuple[Any, ...]]: ...


def follow_meta(store: MetaChanges, index: VectorIndex | None) -> None:
    """Bring the index's filter columns up to date with the entries whose columns changed
    since the last call (``Store.meta_changed``); before a search or a near-duplicate look-up
    reads them."""
    if index is None:  # the index, once built, reads them as they are then
        store.meta_changed.clear()
        return
    if not store.meta_changed:
        return
    uids, store.meta_changed = list(store.meta_changed), set()
    set_meta_of(store, index, uids)


def set_meta_of(store: MetaChanges, index: VectorIndex, uids: Sequence[str]) -> None:
    """The filter columns of these entries into the index, as they are now."""
    for start in range(0, len(uids), 10_000):
        for rowid, meta in store.vector_meta_of(uids[start:start + 10_000]).items():
            index.set_meta(rowid, meta)
