"""A RAM-resident, quantised copy of the vectors for fast filtered KNN.

sqlite-vec's vec0 table stays the durable index, but its brute-force scan takes ~46 ms over
100,000 384-dim vectors on a 2-core machine, and a float32 copy in RAM costs 150 MB. This
index keeps, per entry, a 1-bit sign code (48 bytes at 384 dims) and an int8 code with a
per-row scale (384 bytes): ~43 MB at 100,000 entries. A query scans the bit codes by Hamming
distance (XOR + popcount), keeps the best ``rerank`` candidates and re-ranks them by the int8
dot product, which is within ~0.01 of the exact cosine. Filters on agent, category, project,
kind, status and creation time are vectorised masks over small per-row arrays.
(bench/bench_store.py prints the recall of this index against exact search.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STATUS_CODES = {"active": 0, "superseded": 1, "forgotten": 2, "removed": 3}


@dataclass(frozen=True)
class VectorFilter:
    agents: Sequence[str] | None = None
    categories: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    projects: Sequence[str] | None = None
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


class VectorIndex:
    def __init__(self, dim: int, rerank: int = 2000, capacity: int = 1024) -> None:
        self.dim = dim
        self.rerank = rerank
        self.words = (dim + 63) // 64
        self.n = 0
        self.position: dict[int, int] = {}
        self._codes = {name: _Codes() for name in ("agent", "category", "project", "kind")}
        self._allocate(capacity)

    def _allocate(self, capacity: int) -> None:
        def grow(old: np.ndarray | None, shape: tuple[int, ...], dtype: type) -> np.ndarray:
            new = np.zeros(shape, dtype=dtype)
            if old is not None:
                new[: self.n] = old[: self.n]
            return new

        old = self.__dict__
        self.capacity = capacity
        self.rowids = grow(old.get("rowids"), (capacity,), np.int64)
        # word-major (words × rows): the Hamming scan then runs over contiguous rows
        bits = np.zeros((self.words, capacity), dtype=np.uint64)
        if old.get("bits") is not None:
            bits[:, : self.n] = old["bits"][:, : self.n]
        self.bits = bits
        self.int8 = grow(old.get("int8"), (capacity, self.dim), np.int8)
        self.scale = grow(old.get("scale"), (capacity,), np.float32)
        self.created = grow(old.get("created"), (capacity,), np.float64)
        self.status = grow(old.get("status"), (capacity,), np.int8)
        self.columns = {
            name: grow(old.get("columns", {}).get(name), (capacity,), np.int32)
            for name in ("agent", "category", "project", "kind")
        }

    def __len__(self) -> int:
        return len(self.position)

    @property
    def nbytes(self) -> int:
        arrays = [self.rowids, self.bits, self.int8, self.scale, self.created, self.status]
        return sum(a.nbytes for a in arrays) + sum(c.nbytes for c in self.columns.values())

    def _sign_bits(self, vectors: np.ndarray) -> np.ndarray:
        packed = np.packbits(vectors > 0, axis=1)
        padded = np.zeros((len(vectors), self.words * 8), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        return padded.view(np.uint64)

    def add(
        self,
        rowids: Sequence[int],
        vectors: np.ndarray,
        meta: Sequence[tuple[str, str, str | None, str, str, float]],
    ) -> None:
        """Add or replace rows; ``meta`` is (agent, category, project, kind, status, created)."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        fresh = [i for i, r in enumerate(rowids) if int(r) not in self.position]
        if self.n + len(fresh) > self.capacity:
            self._allocate(max(self.capacity * 2, self.n + len(fresh)))
        slots = np.empty(len(rowids), dtype=np.int64)
        for i, rowid in enumerate(rowids):
            slot = self.position.get(int(rowid))
            if slot is None:
                slot = self.position[int(rowid)] = self.n
                self.n += 1
            slots[i] = slot
        scale = np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0
        self.rowids[slots] = rowids
        self.bits[:, slots] = self._sign_bits(vectors).T
        self.int8[slots] = np.clip(np.rint(vectors / scale[:, None]), -127, 127).astype(np.int8)
        self.scale[slots] = scale
        for i, (agent, category, project, kind, status, created) in enumerate(meta):
            slot = slots[i]
            self.columns["agent"][slot] = self._codes["agent"].code(agent)
            self.columns["category"][slot] = self._codes["category"].code(category)
            self.columns["project"][slot] = self._codes["project"].code(project)
            self.columns["kind"][slot] = self._codes["kind"].code(kind)
            self.status[slot] = STATUS_CODES.get(status, STATUS_CODES["removed"])
            self.created[slot] = created

    def set_status(self, rowid: int, status: str) -> None:
        slot = self.position.get(int(rowid))
        if slot is not None:
            self.status[slot] = STATUS_CODES.get(status, STATUS_CODES["removed"])

    def _mask(self, where: VectorFilter) -> np.ndarray:
        n = self.n
        mask = np.isin(self.status[:n], [STATUS_CODES[s] for s in where.statuses if s in STATUS_CODES])
        for name, values in (
            ("agent", where.agents),
            ("category", where.categories),
            ("project", where.projects),
            ("kind", where.kinds),
        ):
            if values is not None:
                mask &= np.isin(self.columns[name][:n], self._codes[name].lookup(values))
        if where.since is not None:
            mask &= self.created[:n] >= where.since
        if where.until is not None:
            mask &= self.created[:n] <= where.until
        return mask

    def scores(self, rowids: Sequence[int], query: np.ndarray) -> dict[int, float]:
        """Approximate cosines of the given rows (those in the index) to the query."""
        slots = [(r, self.position[r]) for r in rowids if r in self.position]
        if not slots:
            return {}
        index = np.fromiter((s for _, s in slots), dtype=np.int64, count=len(slots))
        values = (self.int8[index].astype(np.float32) @ np.asarray(query, np.float32)) * self.scale[index]
        return {r: float(v) for (r, _), v in zip(slots, values)}

    def search(self, query: np.ndarray, k: int, where: VectorFilter) -> list[tuple[int, float]]:
        """(rowid, approximate cosine) best first."""
        if self.n == 0 or k <= 0:
            return []
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        mask = self._mask(where)
        allowed = int(np.count_nonzero(mask))
        if allowed > self.rerank:
            code = self._sign_bits(query[None, :])[0]
            hamming = np.bitwise_count(self.bits[0, : self.n] ^ code[0]).astype(np.int16)
            for word in range(1, self.words):
                hamming += np.bitwise_count(self.bits[word, : self.n] ^ code[word])
            if allowed < self.n:  # filtered out rows sort last
                hamming[~mask] = np.iinfo(np.int16).max
            candidates = np.argpartition(hamming, self.rerank)[: self.rerank]
        else:
            candidates = np.flatnonzero(mask)
        scores = (self.int8[candidates].astype(np.float32) @ query) * self.scale[candidates]
        top = min(k, len(candidates))
        best = np.argpartition(-scores, top - 1)[:top] if top < len(candidates) else np.arange(len(candidates))
        best = best[np.argsort(-scores[best])]
        return [(int(self.rowids[candidates[i]]), float(scores[i])) for i in best]


#: A part's key in a PartIndex: its entry's rowid × PART_SLOTS + its number (text.MAX_PARTS < 16).
PART_SLOTS = 16


class PartIndex(VectorIndex):
    """The vectors of entries' parts (their sentences, ``text.split_parts``), each filed under
    its entry: searches answer per entry with the best part's cosine."""

    def __init__(self, dim: int, rerank: int = 2000, capacity: int = 1024) -> None:
        super().__init__(dim, rerank, capacity)
        self.parts: dict[int, int] = {}  # entry rowid → number of parts

    def set_parts(self, rowid: int, vectors: np.ndarray,
                  meta: tuple[str, str, str | None, str, str, float]) -> None:
        """The entry's parts, replacing any it had (fewer parts: the extra ones are removed)."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        old = self.parts.get(rowid, 0)
        for number in range(len(vectors), old):
            super().set_status(rowid * PART_SLOTS + number, "removed")
        if len(vectors):
            self.add([rowid * PART_SLOTS + i for i in range(len(vectors))], vectors,
                     [meta] * len(vectors))
            self.parts[rowid] = len(vectors)
        else:
            self.parts.pop(rowid, None)

    def set_status(self, rowid: int, status: str) -> None:
        for number in range(self.parts.get(rowid, 0)):
            super().set_status(rowid * PART_SLOTS + number, status)

    def best_parts(self, query: np.ndarray, k: int, where: VectorFilter) -> dict[int, float]:
        """Up to ``k`` entries by their best part: rowid → that part's cosine."""
        best: dict[int, float] = {}
        for key, score in self.search(query, k * 3, where):
            rowid = key // PART_SLOTS
            if score > best.get(rowid, -2.0):
                best[rowid] = score
        return dict(sorted(best.items(), key=lambda item: -item[1])[:k])

    def best_of(self, rowids: Sequence[int], query: np.ndarray) -> dict[int, float]:
        """The best part's cosine of each given entry that has parts."""
        keys = [r * PART_SLOTS + i for r in rowids for i in range(self.parts.get(r, 0))]
        best: dict[int, float] = {}
        for key, score in self.scores(keys, query).items():
            rowid = key // PART_SLOTS
            best[rowid] = max(score, best.get(rowid, -2.0))
        return best
