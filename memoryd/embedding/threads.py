"""Where and when the model runs: the embedder's threads, its caches, and stopping it.

Three threads of its own run the one ONNX session, and search's own thread runs it for
a search's question (onnxruntime releases the GIL and runs a session from several threads at
once):

- **bulk**: ``remember_many``, the vector backfill and the lexicon's filling; the texts of all
  the bulk work waiting are embedded together (``memoryd.embedding.queue``);
- **query**: interactive work (a single write's text, a question's unknown words, the
  memory block's prompt), so that a search or a remember never waits behind a bulk batch (a
  search's question is embedded on search's own thread, right before its vector half:
  ``memoryd.retrieval.service``);
- **pair**: a bulk write's borderline near-duplicates embedded alone beside its next batch (on
  the bulk thread they waited behind that batch, and one onnxruntime thread a run left the
  other core idle); a single write's sentences (``[embed] parts = "sentences"``: with late
  chunking they come from the text's own run) and its new words, once it is acknowledged.

The model loads in the background after the store is open; callers that need a vector wait
for it (``ready``), and get None when it could not load. Closing sets ``stop``: a call of the
embedder ends at its next run of the model, and its waiter gets the "stopping" answer at once.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from memoryd.embedding.model import SENTENCES, Embedder, EmbeddingStopped, no_parts
from memoryd.embedding.queue import EmbedQueue
from memoryd.errors import stopping_error
from memoryd.store.entries import Vectors
from memoryd.text import split_parts

T = TypeVar("T")

QUERY_CACHE_SIZE = 512
WORD_CACHE_SIZE = 4096
#: Texts of the bulk work waiting that are embedded in one call at most.
PIPELINE_SLICE = 256


@dataclass(frozen=True)
class TextVectors:
    """A single write's text as it is embedded before the acknowledgement: its vector, the
    vectors of its parts when they are made already (from the content-hash cache, or from
    the text's own run with late chunking; an empty matrix for a text of one sentence) or None
    when they are to be embedded after it (:meth:`EmbedThreads.parts`), and whether the vector
    is the text's embedded in a run of its own (``Embedder.embed_alone``'s, which a
    near-duplicate decision compares)."""

    vector: np.ndarray
    parts: np.ndarray | None
    alone: bool

    @property
    def now(self) -> Vectors:
        """What the write stores with its entry now: the vector, and its parts' vectors or,
        when they come after the acknowledgement, none yet."""
        return self.vector, self.parts if self.parts is not None else no_parts(len(self.vector))


def abandon(work: asyncio.Future[Any]) -> None:
    """Give up work on a thread: cancelled, and its outcome taken whenever it ends (an
    ``EmbeddingStopped`` nobody took was logged at shutdown as "Future exception was never
    retrieved", with a traceback; a cancelled ``gather`` of a text and its sentences ends
    with a CancelledError as its exception, logged likewise when a write found its vectors
    in the cache, e.g. a text another agent holds)."""
    work.cancel()
    work.add_done_callback(_outcome_taken)


def _outcome_taken(work: asyncio.Future[Any]) -> None:
    if not work.cancelled():
        work.exception()


class EmbedThreads:
    def __init__(self) -> None:
        self.bulk_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-embed")
        self.query_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-query")
        self.pair_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-pairs")
        self.bulk = EmbedQueue(self._bulk, PIPELINE_SLICE)
        self.embedder: Embedder | None = None
        self.ready: asyncio.Future[None] | None = None  # set once the model loaded, or failed to
        self.query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.word_cache: OrderedDict[str, np.ndarray] = OrderedDict()  # question words, by stem
        self.closed = asyncio.Event()
        self.stop = threading.Event()  # the embedder's ``stop``: set on closing

    def start_loading(self) -> None:
        """The model is being loaded: callers that need it wait from now on."""
        self.ready = asyncio.get_running_loop().create_future()

    def loaded(self, embedder: Embedder | None) -> None:
        """The model has loaded (None: it could not load)."""
        self.embedder = embedder
        assert self.ready is not None
        self.ready.set_result(None)

    @property
    def is_loading(self) -> bool:
        return self.ready is not None and not self.ready.done()

    async def model(self) -> Embedder | None:
        """The embedder once the model has loaded (None: it could not load)."""
        if self.ready is not None:
            await asyncio.shield(self.ready)
        return self.embedder

    def start_closing(self) -> None:
        self.closed.set()
        self.stop.set()

    def shutdown(self) -> None:
        """A run of the model being made finishes (onnxruntime cannot be interrupted), then
        its call stops (``stop``); queued ones do not start."""
        for thread in (self.bulk_thread, self.query_thread, self.pair_thread):
            thread.shutdown(wait=True, cancel_futures=True)

    # -- running the model ------------------------------------------------------------

    def _run(self, thread: ThreadPoolExecutor, fn: Callable[..., T], *args: Any
             ) -> asyncio.Future[T]:
        """``fn(*args)`` of the embedder on ``thread``, ended at its next run of the model once
        closing began: closing then waits for one run, not for a whole bulk slice."""
        return asyncio.get_running_loop().run_in_executor(
            thread, functools.partial(fn, *args, stop=self.stop))

    async def unless_closing(self, work: asyncio.Future[T]) -> T:
        """The result of work on a thread, or the "stopping" answer as soon as closing began
        (the thread finishes the batch; nobody waits for it)."""
        if self.closed.is_set():
            abandon(work)
            raise stopping_error()
        closing: asyncio.Future[Any] = asyncio.ensure_future(self.closed.wait())
        try:
            await asyncio.wait([work, closing], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the caller was cancelled (a background task, at closing)
            abandon(work)
            raise
        finally:
            closing.cancel()
        if not work.done():
            abandon(work)
            raise stopping_error()
        try:
            return work.result()
        except EmbeddingStopped:  # the thread saw closing begin first
            raise stopping_error() from None

    async def entries(self, texts: list[str], *, interactive: bool = False
                      ) -> list[Vectors] | None:
        """Entries' vectors and their parts' (sentences): on the interactive thread for a
        client's single write, else on the bulk thread together with the other bulk work
        waiting then. None without a model."""
        embedder = await self.model()
        if embedder is None:
            return None
        if not interactive:
            return await self.bulk(texts)
        if len(texts) == 1 and embedder.parts == SENTENCES:
            return [await self._one(embedder, texts[0])]
        return await self.unless_closing(
            self._run(self.query_thread, embedder.embed_entries, texts))

    async def text(self, text: str) -> TextVectors | None:
        """A single write's text on the interactive thread: with ``parts = "sentences"`` the
        text alone, a run of its own (its sentences wait for the acknowledgement: the write's
        decision needs only the text's vector); with late chunking, its parts too, from the
        same run. None without a model."""
        embedder = await self.model()
        if embedder is None:
            return None
        if embedder.parts == SENTENCES:
            vector = await self.unless_closing(self._run(self.query_thread, embedder.embed, [text]))
            parts = None if split_parts(text) else no_parts(embedder.dim)
            return TextVectors(vector[0], parts, alone=True)
        ((vector, parts),) = await self.unless_closing(
            self._run(self.query_thread, embedder.embed_entries, [text]))
        return TextVectors(vector, parts, alone=False)

    async def parts(self, text: str) -> np.ndarray:
        """The vectors of a text's parts (sentences), embedded together on the pair thread,
        as a single write's always were (beside its text, before it was acknowledged)."""
        assert self.embedder is not None
        parts = split_parts(text)
        if not parts:
            return no_parts(self.embedder.dim)
        return await self.unless_closing(self._run(self.pair_thread, self.embedder.embed, parts))

    async def _one(self, embedder: Embedder, text: str) -> Vectors:
        """A single write's text on the interactive thread and its parts (sentences) on the
        pair thread, at once: in one batch, padded to the text's length, a single write of
        several sentences waited for them one after the other (p90 of `remember` 31 → 21 ms
        on a 2k store)."""
        whole = self._run(self.query_thread, embedder.embed, [text])
        vector, part_vectors = await self.unless_closing(asyncio.gather(whole, self.parts(text)))
        return vector[0], part_vectors

    async def backlog(self, texts: list[str]) -> tuple[list[Vectors], list[bool]] | None:
        """The vector backlog's batch on the bulk thread: an entry long enough gets the mean of
        its parts' vectors for now (``Embedder.embed_backlog``), so that its text runs through
        the model once before it is searchable; with which ones did. None without a model."""
        embedder = await self.model()
        if embedder is None:
            return None
        return await self.unless_closing(
            self._run(self.bulk_thread, embedder.embed_backlog, texts))

    async def refine(self, texts: list[str]) -> np.ndarray | None:
        """The texts whose vectors were their parts' mean, each run through the model whole,
        on the bulk thread. None without a model."""
        embedder = await self.model()
        if embedder is None:
            return None
        return await self.unless_closing(self._run(self.bulk_thread, embedder.embed, texts))

    async def _bulk(self, texts: list[str]) -> list[Vectors]:
        """The bulk queue's batch (``entries`` queues texts only with a model)."""
        assert self.embedder is not None
        return await self.unless_closing(
            self._run(self.bulk_thread, self.embedder.embed_entries, texts))

    async def query(self, text: str) -> np.ndarray | None:
        """A question's vector, from the query cache or embedded."""
        cached = self.cached_query(text)
        if cached is not None:
            return cached
        embedder = await self.model()
        if embedder is None:
            return None
        embedded = await self.unless_closing(self._run(self.query_thread, embedder.embed, [text]))
        self.remember_query(text, embedded[0])
        return embedded[0]

    def cached_query(self, text: str) -> np.ndarray | None:
        """A question's vector from the query cache (None: not there)."""
        vector = self.query_cache.get(text)
        if vector is not None:
            self.query_cache.move_to_end(text)
        return vector

    def remember_query(self, text: str, vector: np.ndarray) -> None:
        self.query_cache[text] = vector
        if len(self.query_cache) > QUERY_CACHE_SIZE:
            self.query_cache.popitem(last=False)

    async def alone(self, words: list[str], thread: ThreadPoolExecutor) -> np.ndarray:
        """Words (or texts) each embedded alone: one vector per word, whatever is embedded
        beside it (the lexicon, a question's words, a near-duplicate decision)."""
        assert self.embedder is not None
        return await self.unless_closing(self._run(thread, self.embedder.embed_alone, words))

    async def words(self, words: dict[str, str]) -> dict[str, np.ndarray]:
        """stem → the vector of its word embedded alone; remembered for the next questions."""
        found = {stem: self.word_cache[stem] for stem in words if stem in self.word_cache}
        missing = [stem for stem in words if stem not in found]
        if missing and self.embedder is not None:
            vectors = await self.alone([words[stem] for stem in missing], self.query_thread)
            for stem, vector in zip(missing, vectors):
                found[stem] = self.word_cache[stem] = vector
            while len(self.word_cache) > WORD_CACHE_SIZE:
                self.word_cache.popitem(last=False)
        return found
