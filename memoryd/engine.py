"""The daemon's working parts, without the socket: the store and its database thread, the
write path (ledger, database, vectors), search, and the background work around the embedder
(the vector backfill, the lexicon's filling).

Every SQLite call runs on the one database thread, so no locking is needed; a search's vector
half reads the RAM vector index on a search thread of its own (the index locks itself). The
embedder runs on threads of its own (``memoryd.embed_threads``): bulk work never holds up a
search or a single write. The backfill yields to bulk writes: it embeds small batches, and only
while no ``remember_many`` waits. The model loads in the background after the store is open;
calls that need a vector wait for it, and when it cannot load, search is keyword-only.
The server (``memoryd.server``) dispatches wire methods here; the session methods, ingestion and
extraction use it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gc
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from memoryd.agents import rolled_up
from memoryd.config import Config
from memoryd.embed import Embedder, load_embedder
from memoryd.embed_threads import PIPELINE_SLICE, EmbedThreads, abandon
from memoryd.errors import UnavailableError, stopping_error
from memoryd.maintenance.replay import replay_ledgers
from memoryd.params import Params
from memoryd.progress import Throughput, report
from memoryd.redact import redact
from memoryd.retrieval.search import Search, SearchPlan
from memoryd.store import lexicon
from memoryd.store.archive import AgentArchive, restore_archives
from memoryd.store.database import ModelInfo, Store
from memoryd.store.durable import DISK_ERRORS
from memoryd.store.entries import Entries, Unindexed, Vectors
from memoryd.store.integrity import set_aside_damaged
from memoryd.store.ledger import Ledger
from memoryd.store.lexicon import Lexicon
from memoryd.store.pass_log import PassLog, replay_pass_log
from memoryd.store.reader import store_counts
from memoryd.store.records import Draft, EntryRequest, RememberRequest
from memoryd.store.usage_log import UsageLog, replay_usage_log
from memoryd.store.vectors import OLD_ROW_FILES, ROW_FILE, VectorIndex
from memoryd.sync.apply import finish_pending
from memoryd.text import content_hash, index_text

log = logging.getLogger(__name__)
T = TypeVar("T")

#: A backfill batch, at most: what a bulk write waits for the embedder (a single write does
#: not: it is embedded on a thread of its own). Rows of short notes take ~0.1 s for 32,
#: transcript chunks (~200 tokens) ~2.5 s with late chunking. Fewer texts a batch cost more per
#: text (padding: the embedder sorts a batch's texts by length): 5 chunks a batch, as
#: BACKFILL_CHARS of 4,000 made them, embedded ~0.8 × as many a CPU-second as 32.
#: BACKFILL_CHARS bounds a batch of very long texts (each is truncated, but its parts past the
#: truncation are embedded too).
BACKFILL_BATCH = 32
BACKFILL_CHARS = 32_000
MAX_BATCH = 1000
#: How long one call stores a write's entries on the database thread before searches get it
#: back (a slice of 256 took ~0.5 s at 700k entries: near-duplicate checks).
REMEMBER_SLICE_S = 0.01
#: A backlog at least this big gets a log line when it has been embedded.
LOGGED_BACKLOG = 1000
#: The lexicon's filling: entries read and new words embedded per step (~0.15 s of the bulk
#: embedding thread), and the longest pause when it has caught up with the entries.
LEXICON_ENTRIES = 256
LEXICON_WORDS = 128
LEXICON_IDLE_S = 30.0  # woken sooner by new entries
#: Background writes (the vector backlog, the lexicon) the disk refused wait this long to retry.
DISK_RETRY_S = 60.0
#: How long a search waits, at most, for the new words of single writes acknowledged just before
#: it: a bound for an embedder that is stuck, not for a slow one (each word is a run of the model
#: of its own: a write's took 0.25-0.5 s on a 2-core machine at load 10, and a search that gave
#: up after 0.5 s ranked the write without its words).
LEARNING_WAIT_S = 5.0


class Engine:
    def __init__(self, config: Config, embedder: Embedder | None = None) -> None:
        """``embedder``: an already loaded model to use instead of loading one (tests share
        one across daemons)."""
        self.config = config
        self.preloaded = embedder
        self.db_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-db")
        # a search's question embedded and its vector half, beside its keyword half on the
        # database thread
        self.search_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-search")
        self.embedding = EmbedThreads()
        # bulk writes queue one database call at a time between them: the agents of a mixed
        # import arrive together, and a search queued behind all their slices waited ~150 ms
        self.bulk_turn = asyncio.Lock()
        self.bulk_writes = 0  # remember_many calls embedding: the backfill waits for them
        self.bulk_done = asyncio.Event()
        self.bulk_done.set()
        self.vectors_done = asyncio.Event()  # cleared while the backfill has entries to embed
        self.vectors_done.set()
        self.store: Store | None = None
        self._entries: Entries | None = None
        self._search: Search | None = None
        self.degraded_reason: str | None = None
        self.backfill_wanted = asyncio.Event()
        self.lexicon_wanted = asyncio.Event()  # new entries (their words may be new)
        self.background: list[asyncio.Task[Any]] = []
        self.embedded = Throughput()  # backlog entries given a vector: the rate for an ETA
        self.backlog_since: float | None = None  # when the backfill found work to do
        self.stretch_start = 0  # ``embedded.done`` then: the backlog's progress counts from it
        self.lexicon_at = 0  # the lexicon holds the words of the entries up to this rowid
        self.learning: set[asyncio.Task[None]] = set()  # single writes' new words being added
        self.closing = False

    @property
    def entries(self) -> Entries:
        assert self._entries is not None, "the engine is not open"
        return self._entries

    @property
    def searcher_or_none(self) -> Search | None:
        return self._search

    @property
    def searcher(self) -> Search:
        assert self._search is not None, "the engine is not open"
        return self._search

    # -- lifecycle --------------------------------------------------------------------

    async def open(self) -> int:
        """Open the store, restore what the transcript archives and then the ledgers hold
        beyond it (the ledgers' status records may name restored transcript entries), start
        loading the model. Returns how many ledger records were replayed."""
        # the row file is derived and rebuilt once the model is loaded: removed first, so
        # that on a full disk its space lets the database open (it writes its WAL index)
        for name in (ROW_FILE, *OLD_ROW_FILES):
            (self.config.state_dir / name).unlink(missing_ok=True)
        rebuilding = await self.db(set_aside_damaged, self.config.db_path)
        self.store = await self.db(Store, self.config.db_path)
        await self.db(self.store.checkpoint_in_background)
        self._entries = Entries(self.config.remember, self.store, Ledger(self.config.ledger_dir))
        self._search = Search(self.config, self.store)
        # a sync killed mid-merge: its files put back or completed, what it brought applied
        await self.db(finish_pending, self.store, self.config.state_dir)
        restored = await self.db(restore_archives, self.store,
                                 AgentArchive(self.config.archive_dir))
        # the passes' journal before the ledgers: their records of a pass's changes name them
        await self.db(replay_pass_log, self.store, PassLog.in_state(self.config.state_dir))
        replayed = await self.db(replay_ledgers, self.store, self._entries.ledger)
        await self.db(replay_usage_log, self.store, UsageLog.beside(self.store))
        if rebuilding:
            log.info("Rebuilt the index: %d archived transcript entries, %d ledger records; "
                     "the watched files are being indexed.", restored, replayed)
        self.embedding.start_loading()
        self.spawn(self.load_model())
        return replayed

    async def close(self) -> None:
        self.start_closing()  # a request still running gets "stopping", never a closed store
        for task in self.background:
            task.cancel()
        await asyncio.gather(*self.background, return_exceptions=True)
        await asyncio.to_thread(self.search_thread.shutdown, True)  # a vector half reading the index ends
        if self.searcher_or_none is not None and self.searcher_or_none.index is not None:
            await self._closing_db(self.searcher_or_none.index.close)
        if self.store is not None:
            await self._closing_db(self.store.close)
        self.db_thread.shutdown(wait=True)
        self.embedding.shutdown()

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run in the background; cancelled when the engine closes."""
        task = asyncio.create_task(coroutine)
        self.background.append(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        """A background task's end: a failure is logged once; the "stopping" answer its next
        database call got while the engine closes is how it ends then, not a failure (it was
        left unretrieved, and asyncio printed its traceback when the task was collected)."""
        if task in self.background:
            self.background.remove(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is None or (self.closing and isinstance(error, UnavailableError)):
            return
        log.error("Background work %s failed.", task.get_coro().__qualname__,  # type: ignore[union-attr]
                  exc_info=error)

    def reconfigure(self, config: Config) -> None:
        self.config = config
        if self._entries is not None and self._search is not None:
            self._entries.remember = config.remember
            self._search.config = config

    @property
    def embedder(self) -> Embedder | None:
        return self.embedding.embedder

    @property
    def model_loading(self) -> bool:
        return self.embedding.is_loading

    # -- threads ----------------------------------------------------------------------

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        if self.closing and self.store is not None:
            raise stopping_error()
        return await asyncio.get_running_loop().run_in_executor(self.db_thread, fn, *args)

    def start_closing(self) -> None:
        """From now on requests get the "stopping" answer instead of new work."""
        self.closing = True
        self.embedding.start_closing()
        if self._entries is not None:
            self._entries.stopping.set()  # a bulk write in a database step stops at its next entry

    async def _closing_db(self, fn: Callable[..., T], *args: Any) -> T:
        """The database thread for the engine's own closing steps."""
        return await asyncio.get_running_loop().run_in_executor(self.db_thread, fn, *args)

    async def vectors_for(self, texts: list[str]) -> list[Vectors | None]:
        """Vectors (and part vectors) of a single write's texts, interactively: from the
        content-hash cache where known, the rest embedded in one batch. A single text is
        embedded while the cache is looked up (a write waited for both, one after the other)."""
        if len(texts) != 1:
            vectors = await self.db(self.cached_vectors, texts)
            return await self.fill_vectors(texts, vectors, interactive=True)
        embedding = asyncio.ensure_future(self.embedding.entries(texts, interactive=True))
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

    def cached_vectors(self, texts: list[str]) -> list[Vectors | None]:
        """The content-hash cache (database thread)."""
        assert self.store is not None
        return [self.store.cached_vectors(content_hash(t)) for t in texts]

    async def fill_vectors(self, texts: list[str], vectors: list[Vectors | None], *,
                           interactive: bool = False) -> list[Vectors | None]:
        """Embed the texts whose vectors are None."""
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            embedded = await self.embedding.entries([texts[i] for i in missing],
                                                    interactive=interactive)
            if embedded is not None:
                for row, i in enumerate(missing):
                    vectors[i] = embedded[row]
        return vectors

    async def question_words(self, text: str) -> dict[str, np.ndarray]:
        """Vectors of the question's informative words that no entry has given the lexicon
        (search's ``align``)."""
        if self.embedder is None or self.searcher.lexicon is None:
            return {}
        return await self.embedding.words(await self.db(self.searcher.unknown_words, text))

    # -- the model and the vectors ----------------------------------------------------

    async def load_model(self) -> None:
        assert self.store is not None
        loop = asyncio.get_running_loop()
        if self.preloaded is not None:
            embedder, reason = self.preloaded, None
        else:
            embedder, reason = await loop.run_in_executor(
                self.embedding.bulk_thread, load_embedder, self.config.embed)
        self.degraded_reason = reason
        self.embedding.loaded(embedder)
        if embedder is None:
            return
        log.info("Embedding model %s loaded (%d dims).", embedder.model_id, embedder.dim)
        await self.db(self.store.bind_model,
                      ModelInfo(embedder.model_id, embedder.sha256, embedder.dim, embedder.parts))
        try:
            await self.db(self._build_index, embedder.dim)
        except UnavailableError as exc:
            if self.closing:
                raise
            log.error("The vector index could not be built in %s (%s): searches read the "
                      "stored vectors instead (slower) until memoryd restarts with disk space.",
                      self.config.state_dir, getattr(exc.__cause__, "strerror", None) or exc)
        self.spawn(self.backfill())
        self.backfill_wanted.set()
        await self.db(self._load_lexicon, embedder.dim)
        self.spawn(self.fill_lexicon())

    def _build_index(self, dim: int) -> None:
        """The RAM index and its row file, from the stored vectors; UnavailableError when the
        disk cannot hold the row file (the daemon serves on without it)."""
        assert self.store is not None
        index = VectorIndex(dim, self.config.state_dir / ROW_FILE)
        try:
            self._fill_index(index, dim)
        except BaseException:
            index.close()
            raise
        self.entries.index = self.searcher.index = index
        self.store.meta_changed.clear()  # it read every entry's columns as they are now
        log.info("Vector index ready: %d entries, %d part vectors, %.1f MB in memory.",
                 len(index), index.parts, index.nbytes / 1e6)
        # the index's per-entry metadata lives as long as the daemon: a full collection need
        # not walk it again and again (12-23 ms a time at 22k entries; <1 ms frozen)
        gc.collect()
        gc.freeze()

    def _fill_index(self, index: VectorIndex, dim: int) -> None:
        assert self.store is not None
        empty = np.zeros((0, dim), dtype=np.float32)
        # a batch of vectors at a time with its entries' metadata and parts: read all at once,
        # these took ~600 MB at 550k entries, and the freed memory stayed with the daemon
        for rowids, matrix in self.store.iter_vectors():
            first, last = int(rowids[0]), int(rowids[-1])
            meta = self.store.vector_meta_between(first, last)
            parts = self.store.part_vectors_between(first, last)
            present = [i for i, r in enumerate(rowids.tolist()) if r in meta]
            if present:
                index.add_many([int(rowids[i]) for i in present], matrix[present],
                               [parts.get(int(rowids[i]), empty) for i in present],
                               [meta[int(rowids[i])] for i in present])

    def _load_lexicon(self, dim: int) -> None:
        assert self.store is not None
        self.lexicon_at = lexicon.cursor(self.store)
        words = Lexicon(dim, self.lexicon_at)
        words.load(self.store)
        self.searcher.lexicon = words

    async def fill_lexicon(self) -> None:
        """Give every word of the entries a vector (memoryd.store.lexicon), a step at a time,
        after bulk writes and the vector backlog; then keep up with new entries. The words
        wait for the vectors: an entry without its words is scored without the alignment, one
        without its vector by its keywords alone; and the words of a backlog, each embedded
        alone, took ~10 % of the embedder's time while files were indexed."""
        assert self.store is not None and self.embedder is not None
        words, store = self.searcher.lexicon, self.store
        assert words is not None
        while True:
            await self.bulk_done.wait()
            await self.vectors_done.wait()
            self.lexicon_wanted.clear()  # an entry stored from now on wakes the wait below
            reached, found = await self.db(lexicon.new_words, store, words, self.lexicon_at,
                                           LEXICON_ENTRIES, LEXICON_WORDS)
            if reached == self.lexicon_at:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(LEXICON_IDLE_S):
                        await self.lexicon_wanted.wait()
                continue
            vectors = await self.embedding.alone(list(found.values()), self.embedding.bulk_thread)
            try:
                await self.db(words.add, store, found, vectors, reached)
            except UnavailableError as exc:
                await self._disk_refused("The lexicon", exc)
                continue
            self.lexicon_at = reached

    async def _disk_refused(self, what: str, exc: UnavailableError) -> None:
        """A background write the disk refused (full, read-only): logged, tried again later;
        the entries it is for are stored (only derived data waits)."""
        if self.closing:
            raise exc
        log.warning("%s waits: the disk refused a write (%s); trying again in %.0f s.", what,
                    getattr(exc.__cause__, "strerror", None) or exc.__cause__ or exc.message,
                    DISK_RETRY_S)
        await asyncio.sleep(DISK_RETRY_S)

    async def backfill(self) -> None:
        """Give a vector to every queued entry (new file entries, a reindex, a model change),
        in batches, reusing the vector of any entry with the same content hash."""
        while True:
            await self.backfill_wanted.wait()
            self.backfill_wanted.clear()
            stretch, began = self.embedded.done, time.monotonic()
            self.backlog_since, self.stretch_start = time.time(), stretch
            while True:
                await self.bulk_done.wait()  # a client's bulk write goes first
                try:
                    rows = await self.db(self._next_backfill)
                except UnavailableError as exc:  # storing cached vectors
                    await self._disk_refused("The vector backlog", exc)
                    continue
                if not rows:
                    break
                self.vectors_done.clear()
                vectors = await self.embedding.entries([text for _, text in rows])
                if vectors is None:
                    self.vectors_done.set()
                    return
                try:
                    await self.db(self._store_backfill, [rowid for rowid, _ in rows], vectors)
                except UnavailableError as exc:
                    await self._disk_refused("The vector backlog", exc)
            self.backlog_since = None
            self.vectors_done.set()
            if self.embedded.done - stretch >= LOGGED_BACKLOG:
                log.info("Vector backlog embedded: %d entries in %.1f s.",
                         self.embedded.done - stretch, time.monotonic() - began)

    def _next_backfill(self) -> list[tuple[int, str]]:
        """The next rows that need embedding; rows whose text has a cached vector get it here."""
        assert self.store is not None
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

    def _store_backfill(self, rowids: list[int], vectors: list[Vectors]) -> None:
        """In the database and the RAM index, or (a full disk) in neither: still queued."""
        assert self.store is not None
        try:
            with self.store.transaction():
                self.store.put_vectors(rowids, np.stack([v for v, _ in vectors]),
                                       [p for _, p in vectors])
                self.entries.index_vectors(rowids, vectors)
        except DISK_ERRORS as exc:
            raise UnavailableError(f"cannot store vectors ({exc})") from exc
        self.embedded.advance(len(rowids))
        self.lexicon_wanted.set()

    # -- the write path and search ----------------------------------------------------

    async def remember(self, request: RememberRequest) -> dict[str, Any]:
        """A single write: its index text (and its sentences) embedded, the entry stored and
        acknowledged; its vectors are indexed and its new words go to the lexicon after that
        (``index_later``, ``learn_later``)."""
        request = redacted(request)
        text = index_text(request.text, request.key)
        (vectors,) = await self.vectors_for([text])
        (result,) = await self._remember(self.entries.drafts([request]), [vectors], bulk=False)
        if result["stored"]:
            self.learn_later(text)  # then the lexicon's filling moves past the entry
        return result

    async def bulk_db(self, fn: Callable[..., T], *args: Any) -> T:
        """A bulk write's call on the database thread, once no other bulk write's call is
        queued there."""
        async with self.bulk_turn:
            return await self.db(fn, *args)

    async def _remember(self, drafts: list[Draft], vectors: list[Vectors | None], *,
                        bulk: bool) -> list[dict[str, Any]]:
        """Store drafts on the database thread in slices of REMEMBER_SLICE_S, so that a
        search waits for one slice at most; the texts a near-duplicate decision needs
        embedded alone are embedded between two slices (a bulk write's on the pair thread,
        a single write's on the interactive one)."""
        replies: list[dict[str, Any]] = []
        alone: dict[str, np.ndarray] = {}
        db, thread = ((self.bulk_db, self.embedding.pair_thread) if bulk
                      else (self.db, self.embedding.query_thread))
        later = functools.partial(self.entries.remember_many, index_later=not bulk)
        while len(replies) < len(drafts):
            done = await db(later, drafts[len(replies):], vectors[len(replies):], alone,
                            REMEMBER_SLICE_S)
            replies += done.replies
            if done.unindexed:
                self.index_later(done.unindexed)
            if done.wanted:
                alone.update(zip(done.wanted, await self.embedding.alone(done.wanted, thread)))
        return replies

    def index_later(self, unindexed: list[Unindexed]) -> None:
        """A single write's vectors into the database and the RAM index, after it is answered:
        queued on the database thread now, so that whatever comes after it there (a search, the
        next write's near-duplicate check) finds them. If the disk refuses them, the entry stays
        in the vector backlog, which embeds it again."""
        indexing = asyncio.get_running_loop().run_in_executor(
            self.db_thread, self.entries.index_stored, unindexed)

        async def indexed() -> None:
            try:
                await indexing
            except UnavailableError as exc:
                if self.closing:
                    raise
                log.warning("A write's vector waits for the vector backlog: %s", exc.message)
                self.backfill_wanted.set()

        self.spawn(indexed())

    def learn_later(self, text: str) -> None:
        """Give a single write's new words to the lexicon once it is acknowledged (bulk writes
        and files: ``fill_lexicon``). Before the acknowledgement they cost a write ~2 ms a
        word; a search waits for them instead (``learned``), and finds them there."""
        task = self.spawn(self.learn_words(text))
        self.learning.add(task)
        task.add_done_callback(self.learning.discard)

    async def learned(self) -> None:
        """The new words of the single writes acknowledged just before, in the lexicon (a few
        ms quiet), so that a search right after a write aligns with them; after LEARNING_WAIT_S a
        search goes on, and scores such an entry without the alignment (``scored_without``)."""
        if self.learning:
            await asyncio.wait(set(self.learning), timeout=LEARNING_WAIT_S)

    async def learn_words(self, text: str) -> None:
        """Give a text's new words to the lexicon, then wake its filling (woken first, it took
        the same words as new). A disk that refuses them loses nothing: the filling reads
        every entry after its cursor, this one's words too."""
        try:
            await self._learn_words(text)
        finally:
            self.lexicon_wanted.set()

    async def _learn_words(self, text: str) -> None:
        words = self.searcher.lexicon
        if self.embedder is None or words is None:
            return
        assert self.store is not None
        found = await self.db(lexicon.unknown_words, self.store, words, [text])
        if found:  # on the pair thread: beside the next write's text on the interactive one
            vectors = await self.embedding.alone(list(found.values()), self.embedding.pair_thread)
            try:
                await self.db(words.add, self.store, found, vectors)
            except UnavailableError as exc:
                if self.closing:
                    raise
                log.warning("A write's new words wait for the lexicon's filling: the disk "
                            "refused them (%s).", getattr(exc.__cause__, "strerror", None) or exc)

    async def remember_many(self, requests: list[RememberRequest]) -> dict[str, Any]:
        """Embedded in slices of PIPELINE_SLICE: the database stores one slice (in calls of
        REMEMBER_SLICE_S, one transaction and one fsync per ledger each) while the next is
        embedded. A slice is big because the embedder batches a bigger pool better (slices of
        64: ingest at 0.84 of the bare embedder's rate, 256: 0.95); a client keeps the
        embedder busy with two connections."""
        report(phase="embedding and storing entries", done=0, total=len(requests))
        requests = [redacted(r) for r in requests]
        texts = [index_text(r.text, r.key) for r in requests]  # what is embedded
        cached = await self.bulk_db(self.cached_vectors, texts)
        slices = [range(i, min(i + PIPELINE_SLICE, len(texts)))
                  for i in range(0, len(texts), PIPELINE_SLICE)]

        def embedding(part: range) -> asyncio.Future[list[Vectors | None]]:
            return asyncio.ensure_future(self.fill_vectors([texts[i] for i in part],
                                                           [cached[i] for i in part]))

        results: list[dict[str, Any]] = []
        self.bulk_writes += 1
        self.bulk_done.clear()
        upcoming = embedding(slices[0])
        try:
            # drafted while the first slice is embedded, a slice a call
            drafts: list[Draft] = []
            for part in slices:
                drafts += await self.bulk_db(self.entries.drafts, [requests[i] for i in part])
            for number, part in enumerate(slices):
                vectors = await upcoming
                if number + 1 < len(slices):
                    upcoming = embedding(slices[number + 1])
                results += await self._remember([drafts[i] for i in part], vectors, bulk=True)
                report(done=len(results))
        finally:
            abandon(upcoming)
            self.bulk_writes -= 1
            if not self.bulk_writes:
                self.bulk_done.set()
            self.lexicon_wanted.set()
        return {"results": results}

    async def supersede(self, request: EntryRequest) -> dict[str, Any]:
        assert request.text is not None
        text = redact(request.text)
        request = dataclasses.replace(request, text=text)
        (vectors,) = await self.vectors_for([text])
        result = await self.db(self.entries.supersede, request, vectors)
        self.learn_later(text)
        return result

    async def search(self, params: Params) -> dict[str, Any]:
        """The halves of a search at once (memoryd.retrieval.search): the keyword half on the
        database thread; beside it, on the search thread, the question's embedding and then
        the vector half, in one go (handing the vector back to the event loop and on to the
        search thread took 2.5-4 ms, p50, while a pass ran: the threads waited for the GIL)."""
        query = params.text("query", required=True, max_len=10_000)
        assert query is not None
        embedder = await self.embedding.model()
        if self.closing:  # the search thread stops before the index closes
            raise stopping_error()
        cached = self.embedding.cached_query(query)
        planned: Future[SearchPlan] = Future()
        vectors = asyncio.get_running_loop().run_in_executor(
            self.search_thread, self._vector_half, query, embedder, cached, planned)
        try:
            plan = await self.db(self._plan, params, planned)
            await self.db(self.searcher.keyword_half, plan)
        except BaseException:
            planned.cancel()  # the vector half waits for no plan (none came, or too late)
            abandon(vectors)
            raise
        vector = await self.embedding.unless_closing(vectors)
        if cached is None and vector is not None:
            self.embedding.remember_query(query, vector)
        words = await self.embedding.words(plan.unknown)
        await self.learned()
        return await self.db(self.searcher.finish_search, plan, vector, words)

    def _plan(self, params: Params, planned: Future[SearchPlan]) -> SearchPlan:
        """A search's plan (database thread), handed at once to its vector half (a plan that
        fails is handed nothing: :meth:`search` cancels ``planned``)."""
        plan = self.searcher.plan(params)
        with contextlib.suppress(InvalidStateError):  # the search was given up meanwhile
            planned.set_result(plan)
        return plan

    def _vector_half(self, query: str, embedder: Embedder | None, cached: np.ndarray | None,
                     planned: Future[SearchPlan]) -> np.ndarray | None:
        """The question's vector (embedded here, unless the query cache had it) and, once the
        plan is made, the vector index's candidates for it (search thread)."""
        vector = cached
        if vector is None and embedder is not None:
            vector = embedder.embed([query], stop=self.embedding.stop)[0]
        plan = planned.result()
        if vector is not None:
            self.searcher.vector_half(plan, vector)
        return vector

    async def status(self) -> dict[str, Any]:
        """Counts for `memory status`: the whole-table ones on a reader of their own, the
        rest on the database thread."""
        assert self.store is not None
        (entries, vectors), status = await asyncio.gather(
            asyncio.to_thread(store_counts, self.config.db_path, self.store.model is not None),
            self.db(self._status))
        return {"entries": entries, "vectors": vectors, **status}

    def _status(self) -> dict[str, Any]:
        assert self.store is not None
        model = self.store.model
        index, words = self.searcher.index, self.searcher.lexicon
        return {
            "backlog": self.store.count_backlog() if model else None,
            **dict(zip(("agents", "subagents"), rolled_up(self.store.agents()))),
            "model": {"id": model.model_id, "sha256": model.sha256, "dim": model.dim} if model else None,
            "vector_index": {
                "ready": index is not None,
                "entries": len(index) if index is not None else 0,
                "bytes": index.nbytes if index is not None else 0,
            },
            "lexicon": {
                "words": len(words) if words is not None else 0,
                "bytes": words.nbytes if words is not None else 0,
                "entries_behind": lexicon.entries_after(self.store, self.lexicon_at)
                if words is not None else None,
                # a fill of this many entries or more is shown (`memory status`: "filling the
                # word index"): search scores their hits without word alignment meanwhile
                "shown_from": LEXICON_ENTRIES,
            },
        }


def redacted(request: RememberRequest) -> RememberRequest:
    """The request with its text's secrets redacted: whatever stores it (entry, ledger,
    journal, vectors) never sees the raw secret."""
    return dataclasses.replace(request, text=redact(request.text))


def _within(rows: list[tuple[int, str]], chars: int) -> list[tuple[int, str]]:
    """The first rows whose texts fit ``chars`` (at least one); the rest wait for the next call."""
    total = 0
    for count, (_, text) in enumerate(rows):
        total += len(text)
        if total > chars and count:
            return rows[:count]
    return rows
