"""The vector index's row file: every row's exact values, int8, on disk beside the database.

The index (:mod:`memoryd.store.vectors`) keeps each row's sign bits and a float32 scale in RAM
and scans the bits; the rows it then re-ranks exactly are read from this file (row × scale is
the vector, the cosine to within ~2e-4, like float16, but ~10× faster to read back than
float16, which numpy converts element by element). The file is read through a memory mapping
whose pages are given back after each search, so it sits in the page cache, not in the daemon's
memory. It is derived data: made empty when the daemon starts and filled from the database.

Not thread-safe on its own: the index calls it holding its lock.
"""

from __future__ import annotations

import errno
import mmap
import os
from pathlib import Path

import numpy as np

from memoryd.store.durable import not_stored

#: The row file's name in the state dir; earlier formats' files are removed at start.
ROW_FILE = "vectors.i8"
OLD_ROW_FILES = ("vectors.f16",)
#: Reads of the row file (near-duplicate checks) between two releases of its pages.
RELEASE_EVERY = 256
#: A row file this small stays in memory between searches (giving its pages back made each
#: search fault them in again: a tenth of a search's time in a small store).
KEEP_MAPPED_BYTES = 16 << 20


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a matrix as int8 codes and a float32 scale each (row ≈ codes × scale; for a
    unit vector of 384 dimensions the cosine moves by ~2e-4)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    scales = (np.maximum(np.abs(vectors).max(axis=1, initial=0.0), 1e-12) / 127).astype(np.float32)
    return np.round(vectors / scales[:, None]).astype(np.int8), scales


class RowFile:
    def __init__(self, path: Path, dim: int) -> None:
        """``path``: the file (created empty; it is rebuilt, never reused)."""
        self.path = path
        self.dim = dim
        self.rows = 0  # rows written
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "w+b", buffering=0)
        os.chmod(path, 0o600)
        self._map: mmap.mmap | None = None
        self._mapped_rows = 0
        self._reads = 0

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        self._file.close()

    def write(self, start: int, codes: np.ndarray) -> None:
        """Write rows' int8 values from row ``start``, their space allocated first. The file is
        read through a shared mapping, and reading a page the file system cannot back (a hole
        a short write left on a full tmpfs) kills the daemon with SIGBUS; allocated and written
        whole, or refused here (WriteRefusedError), before the index counts the rows."""
        data = memoryview(codes.tobytes())
        offset, fd = start * self.dim, self._file.fileno()
        try:
            try:
                os.posix_fallocate(fd, offset, len(data))
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS):
                    raise
            while data:
                written = os.pwrite(fd, data, offset)
                data, offset = data[written:], offset + written
        except OSError as exc:
            raise not_stored(f"cannot write the vector index in {self.path.parent}",
                             exc) from exc
        self.rows = max(self.rows, start + len(codes))

    def values(self, rows: np.ndarray) -> np.ndarray:
        """The int8 values of these rows, in their order. Read from the file, not the mapping:
        thousands of rows scattered over the file would map most of it for a moment (the kernel
        maps ~64 KB around each page it faults in: 800 MB of a 976 MB file for 20,000 rows),
        which the daemon's RSS counts."""
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        values = np.empty((len(rows), self.dim), dtype=np.int8)
        breaks = np.flatnonzero(np.diff(ordered) != 1) + 1  # runs of consecutive rows
        for start, end in zip([0, *breaks.tolist()], [*breaks.tolist(), len(rows)]):
            data = os.pread(self._file.fileno(), (end - start) * self.dim,
                            int(ordered[start]) * self.dim)
            values[order[start:end]] = np.frombuffer(data, dtype=np.int8).reshape(-1, self.dim)
        return values

    def dot(self, rows: np.ndarray, query: np.ndarray, capacity: int,
            release: bool = True) -> np.ndarray:
        """The dot products of the given rows' int8 values with the query (× a row's scale:
        its cosine), through the mapping. ``capacity``: the rows the index has room for, mapped
        ahead so that appends rarely need a new mapping. ``release``: give the pages read back
        now (searches); otherwise every RELEASE_EVERY reads. (A file of up to
        KEEP_MAPPED_BYTES keeps its pages.)"""
        if self._map is None or self._mapped_rows < self.rows:
            self._remap(capacity)
        table = np.frombuffer(self._map, dtype=np.int8,  # type: ignore[arg-type]
                              count=self._mapped_rows * self.dim)
        values: np.ndarray = (table.reshape(self._mapped_rows, self.dim)[rows].astype(np.float32)
                              @ query)
        del table
        self._reads += 1
        small = self._mapped_rows * self.dim <= KEEP_MAPPED_BYTES
        if not small and (release or self._reads >= RELEASE_EVERY):
            # the pages were only borrowed: the daemon's memory stays the bits and columns
            self._map.madvise(mmap.MADV_DONTNEED)  # type: ignore[union-attr]
            self._reads = 0
        return values

    def _remap(self, capacity: int) -> None:
        """Map the file, grown (sparse) to ``capacity`` rows."""
        if self._map is not None:
            self._map.close()
        self._file.truncate(max(capacity, 1) * self.dim)
        self._map = mmap.mmap(self._file.fileno(), max(capacity, 1) * self.dim,
                              prot=mmap.PROT_READ)
        self._mapped_rows = capacity
