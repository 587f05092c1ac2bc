"""The entries' vectors: a write's texts embedded (from the content-hash cache where known),
the RAM vector index built from the stored vectors once the model is loaded, a single write's
vectors indexed after it is acknowledged, and the vector backlog (new file entries, a reindex,
a model change) embedded in the background.

The backlog yields to bulk writes: it embeds small batches, and only while no
``remember_many`` waits (``BulkWrites``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from memoryd.background import Background
from memoryd.embedding.derived import BulkWrites, Derived
from memoryd.embedding.threads import EmbedThreads, TextVectors, abandon
from memoryd.errors import UnavailableError, stopping_error
from memoryd.progress import Throughput
from memoryd.store.database import Store
from memoryd.store.durable import DISK_ERRORS
from memoryd.store.entries import Entries, Unindexed, Vectors
from memoryd.store.reader import VectorsReader
from memoryd.store.row_file import ROW_FILE
from memoryd.store.thread import DatabaseThread
from memoryd.store.vector_rows import VectorRows
from memoryd.store.vectors import Meta, VectorIndex, set_meta_of
from memoryd.text import content_hash

log = logging.getLogger(__name__)

#: A backfill batch, at most: what a bulk write waits for the embedder (a single write does
#: not: it is embedded on a thread of its own). Rows of short notes take ~0.1 s for 32,
#: transcript chunks (~200 tokens) ~2.5 s with late chunking. Fewer texts a batch cost more per
#: text (padding: the embedder sorts a batch's texts by length): 5 chunks a batch, as
#: BACKFILL_CHARS of 4,000 made them, embedded ~0.8 × as many a CPU-second as 32.
#: BACKFILL_CHARS bounds a batch of very long texts (each is truncated, but its parts past the
#: truncation are embedded too).
BACKFILL_BATCH = 32
BACKFILL_CHARS = 32_000
#: A backlog at least this big gets a log line when it has been embedded.
LOGGED_BACKLOG = 1000
#: Background writes (the vector backlog, the lexicon) the disk refused wait this long to retry.
DISK_RETRY_S = 60.0


async def disk_refused(what: str, exc: UnavailableError, closing: bool) -> None:
    """A background write the disk refused (full, read-only): logged, tried again later;
    the entries it is for are stored (only derived data waits)."""
    if closing:
        raise exc
    log.warning("%s waits: the disk refused a write (%s); trying again in %.0f s.", what,
                getattr(exc.__cause__, "strerror", None) or exc.__cause__ or exc.message,
                DISK_RETRY_S)
    await asyncio.sleep(DISK_RETRY_S)


class VectorWork:
    def __init__(self, store: Store, entries: Entries, derived: Derived, db: DatabaseThread,
                 threads: EmbedThreads, bulk: BulkWrites, background: Background,
                 lexicon_wanted: asyncio.Event) -> None:
        """``lexicon_wanted``: set when entries get their vectors (the lexicon's filling waits
        for them)."""
        self.store = store
        self.entries = entries
        self.derived = derived
        self.db = db
        self.threads = threads
        self.bulk = bulk
        self.background = background
        self.lexicon_wanted = lexicon_wanted
        self.wanted = asyncio.Event()  # entries wait for a vector: the backfill wakes
        self.done = asyncio.Event()  # cleared while the backfill has entries to embed
        self.done.set()
        #: set while the lexicon has every entry's words (``WordWork.fill``): refining waits
        #: for it, as search scores an entry without its words less well than by a mean
        self.words_idle = asyncio.Event()
        self.embedded = Throughput()  # backlog entries given a vector: the rate for an ETA
        self.backlog_since: float | None = None  # when the backfill found work to do
        self.stretch_start = 0  # ``embedded.done`` then: the backlog's progress counts from it

    # -- a write's vectors ------------------------------------------------------------

    async def vectors_for(self, texts: list[str]) -> list[Vectors | None]:
        """Vectors (and part vectors) of a single write's texts, interactively: from the
        content-hash cache where known, the rest embedded in one batch. A single text is
        embedded while the cache is looked up (a write waited for both, one after the other)."""
        if len(texts) != 1:
            vectors = await self.db(self.cached_vectors, texts)
            return await self.fill_vectors(texts, vectors, interactive=True)
        embedding = asyncio.ensure_future(self.threads.entries(texts, interactive=True))
        try:
            cached = await self.db(self.cached_vectors, texts)
        except BaseException:
            abandon(embedding)
            raise
        if cached[0] is not None:
            abandon(embedding)
            return cached
        embedded = await embedding
        return [embedded[0] if embedded is not None else None]

    async def text_vectors(self, text: str) -> TextVectors | None:
        """A single write's text's vector, from the content-hash cache (with its parts) or
        embedded (``EmbedThreads.text``: its parts may wait for the acknowledgement): the text
        is embedded while the cache is looked up. None without a model."""
        embedding = asyncio.ensure_future(self.threads.text(text))
        try:
            (cached,) = await self.db(self.cached_vectors, [text])
        except BaseException:
            abandon(embedding)
            raise
        if cached is not None:
            abandon(embedding)
            return TextVectors(*cached, alone=False)
        return await embedding

    def cached_vectors(self, texts: list[str]) -> list[Vectors | None]:
        """The content-hash cache (database thread)."""
        return [self.store.cached_vectors(content_hash(t)) for t in texts]

    async def fill_vectors(self, texts: list[str], vectors: list[Vectors | None], *,
                           interactive: bool = False) -> list[Vectors | None]:
        """Embed the texts whose vectors are None."""
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            embedded = await self.threads.entries([texts[i] for i in missing],
                                                   interactive=interactive)
            if embedded is not None:
                for row, i in enumerate(missing):
                    vectors[i] = embedded[row]
        return vectors

    def index_later(self, unindexed: list[Unindexed], parts_of: str | None = None) -> None:
        """A single write's vectors into the database and the RAM index, after it is answered:
        queued on the database thread now, so that whatever comes after it there (a search, the
        next write's near-duplicate check) finds them. ``parts_of``: the text whose parts
        (sentences) are still to be embedded. Then the entry's own vector goes into the RAM
        index now (what a near-duplicate check compares), the parts are embedded on the pair
        thread, and both are stored; a search waits for that (``DatabaseThread.settled``). If
        the disk refuses them, or the daemon stops first, the entry stays in the vector
        backlog, which embeds it again."""
        indexing: asyncio.Future[None]
        if parts_of is None:
            indexing = self.db.submit(self.entries.index_stored, unindexed)
        else:
            self.db.submit(self.entries.index_in_memory, unindexed)
            indexing = asyncio.ensure_future(self._index_with_parts(unindexed, parts_of))
            self.db.ahead(indexing)

        async def indexed() -> None:
            try:
                await indexing
            except UnavailableError as exc:
                if self.db.closing:
                    raise
                log.warning("A write's vector waits for the vector backlog: %s", exc.message)
                self.wanted.set()

        self.background.spawn(indexed())

    async def _index_with_parts(self, unindexed: list[Unindexed], text: str) -> None:
        parts = await self.threads.parts(text)
        await self.db.submit(self.entries.index_stored, [
            dataclasses.replace(u, vectors=(u.vectors[0], parts)) for u in unindexed])

    # -- the RAM index ----------------------------------------------------------------

    async def build_index(self, dim: int, state_dir: Path) -> None:
        """The RAM index and its row file, from the stored vectors. It is filled from one
        snapshot of the store, on a reader of its own, off the database thread: filled there,
        it held up every search, hook and write for 16 s after a start at 100k entries. The
        writes meanwhile go to it too, and win over the snapshot (``VectorIndex.fill``); the
        filter columns changed meanwhile are read again once it is full. Searches read the
        stored vectors until then. UnavailableError when the disk cannot hold the row file
        (the daemon serves on without it)."""
        index = await self.db(self._open_index, dim, state_dir)
        try:
            if not await asyncio.to_thread(self._fill_index, index, dim):
                raise stopping_error()  # a part-filled index never answers
            await self.db(self._index_ready, index)
        except asyncio.CancelledError:
            raise  # memoryd stops: it closes the index (Parts.close)
        except BaseException:
            await self.db(self._drop_index, index)
            raise

    def _open_index(self, dim: int, state_dir: Path) -> VectorIndex:
        """An empty index the writes go to from now on (database thread)."""
        index = VectorIndex(dim, state_dir / ROW_FILE)
        index.start_fill()
        self.store.fill_changes = set()
        self.entries.index = index
        return index

    def _fill_index(self, index: VectorIndex, dim: int) -> bool:
        """The stored vectors into the index, as a snapshot taken after :meth:`_open_index`
        has them (a thread of its own); False when memoryd stopped it."""
        assert self.store.model is not None
        reader = VectorsReader(self.store.path, self.store.model)
        try:
            for rowids, matrix, parts, meta in stored_vectors(reader, dim):
                if self.entries.stopping.is_set():
                    return False
                index.fill(rowids, matrix, parts, meta)
            return True
        finally:
            reader.close()

    def _index_ready(self, index: VectorIndex) -> None:
        """The filter columns changed during the fill, then the index answers searches
        (database thread)."""
        changed, self.store.fill_changes = list(self.store.fill_changes or ()), None
        index.end_fill()
        set_meta_of(self.store, index, changed)
        self.derived.index = index
        self.store.meta_changed.clear()  # the index has every entry's columns as they are now
        log.info("Vector index ready: %d entries, %d part vectors, %.1f MB in memory.",
                 len(index), index.parts, index.nbytes / 1e6)
        # the index's per-entry metadata lives as long as the daemon: a full collection need
        # not walk it again and again (12-23 ms a time at 22k entries; <1 ms frozen)
        gc.collect()
        gc.freeze()

    def _drop_index(self, index: VectorIndex) -> None:
        self.store.fill_changes = None
        self.entries.index = None
        index.close()

    # -- the vector backlog -----------------------------------------------------------

    async def backfill(self) -> None:
        """Give a vector to every queued entry (new file entries, a reindex, a model change),
        in batches, reusing the vector of any entry with the same content hash."""
        while True:
            await self.wanted.wait()
            self.wanted.clear()
            stretch, began = self.embedded.done, time.monotonic()
            self.backlog_since, self.stretch_start = time.time(), stretch
            while True:
                await self.bulk.done.wait()  # a client's bulk write goes first
                try:
                    rows = await self.db(self._next_backfill)
                except UnavailableError as exc:  # storing cached vectors
                    await disk_refused("The vector backlog", exc, self.db.closing)
                    continue
                if not rows:
                    break
                self.done.clear()
                embedded = await self.threads.backlog([text for _, text in rows])
                if embedded is None:
                    self.done.set()
                    return
                vectors, pooled = embedded
                try:
                    await self.db(self._store_backfill, [rowid for rowid, _ in rows], vectors,
                                  [rowid for (rowid, _), mean in zip(rows, pooled) if mean])
                except UnavailableError as exc:
                    await disk_refused("The vector backlog", exc, self.db.closing)
            self.backlog_since = None
            self.done.set()
            if self.embedded.done - stretch >= LOGGED_BACKLOG:
                log.info("Vector backlog embedded: %d entries in %.1f s.",
                         self.embedded.done - stretch, time.monotonic() - began)
            await self._refine()

    async def _refine(self) -> None:
        """Run the text of each entry whose vector is its parts' mean (the backlog's long
        entries) through the model, once nothing else waits for a vector and the lexicon has
        caught up: until a new backlog or a bulk write comes, which go first."""
        while not self.wanted.is_set():
            await self.bulk.done.wait()
            await self.words_idle.wait()
            if self.wanted.is_set():
                return
            rows = await self.db(self.store.rows_to_refine, BACKFILL_BATCH)
            if not rows:
                return
            batch = _within(rows, BACKFILL_CHARS)
            vectors = await self.threads.refine([text for _, text in batch])
            if vectors is None:
                return
            try:
                await self.db(self._store_refined, batch, vectors)
            except UnavailableError as exc:
                await disk_refused("Refining vectors", exc, self.db.closing)

    def _store_refined(self, rows: list[tuple[int, str]], vectors: np.ndarray) -> None:
        try:
            with self.store.transaction():
                parts = self.store.put_refined(rows, vectors)
                by_rowid = dict(zip((rowid for rowid, _ in rows), vectors))
                self.entries.index_vectors(list(parts),
                                           [(by_rowid[r], parts[r]) for r in parts])
        except DISK_ERRORS as exc:
            raise UnavailableError(f"cannot store vectors ({exc})") from exc

    def _next_backfill(self) -> list[tuple[int, str]]:
        """The next rows that need embedding; rows whose text has a cached vector get it here."""
        while queued := self.store.rows_missing_vectors(BACKFILL_BATCH):
            cached: dict[int, Vectors] = {}
            todo: list[tuple[int, str]] = []
            for rowid, hash_, text in queued:
                vectors = self.store.cached_vectors(hash_)
                if vectors is None:
                    todo.append((rowid, text))
                else:
                    cached[rowid] = vectors
            if cached:
                self._store_backfill(list(cached), list(cached.values()))
            if todo:
                return _within(todo, BACKFILL_CHARS)
        return []

    def _store_backfill(self, rowids: list[int], vectors: list[Vectors],
                        pooled: list[int] | None = None) -> None:
        """In the database and the RAM index, or (a full disk) in neither: still queued.
        ``pooled``: those whose vector is their parts' mean, to be refined."""
        try:
            with self.store.transaction():
                self.store.put_vectors(rowids, np.stack([v for v, _ in vectors]),
                                       [p for _, p in vectors], pooled or ())
                self.entries.index_vectors(rowids, vectors)
        except DISK_ERRORS as exc:
            raise UnavailableError(f"cannot store vectors ({exc})") from exc
        self.embedded.advance(len(rowids))
        self.lexicon_wanted.set()


def _within(rows: list[tuple[int, str]], chars: int) -> list[tuple[int, str]]:
    """The first rows whose texts fit ``chars`` (at least one); the rest wait for the next call."""
    total = 0
    for count, (_, text) in enumerate(rows):
        total += len(text)
        if total > chars and count:
            return rows[:count]
    return rows


def stored_vectors(store: VectorRows, dim: int
                   ) -> Iterator[tuple[list[int], np.ndarray, list[np.ndarray], list[Meta]]]:
    """The stored vectors as the RAM index takes them (rowids, their vectors, each one's part
    vectors and filter columns), a batch at a time: read all at once, they took ~600 MB at
    550k entries, and the freed memory stayed with the daemon. A vector whose entry is gone
    is left out."""
    empty = np.zeros((0, dim), dtype=np.float32)
    for rowids, matrix in store.iter_vectors():
        ids = rowids.tolist()
        meta = store.vector_meta(ids)
        parts = store.part_vectors_by_rowids(ids)
        present = [i for i, r in enumerate(ids) if r in meta]
        if present:
            yield ([ids[i] for i in present], matrix[present],
                   [parts.get(ids[i], empty) for i in present], [meta[ids[i]] for i in present])
