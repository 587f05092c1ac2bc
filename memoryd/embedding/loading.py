"""Loading the model in the background once the store is open, then what it derives: the
model bound to the store, the RAM vector index built, the vector backlog and the lexicon's
filling started. Calls that need a vector wait for it; when it cannot load, search is
keyword-only (``reason`` says why)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from memoryd.background import Background
from memoryd.embedding.model import Embedder, load_embedder
from memoryd.embedding.threads import EmbedThreads
from memoryd.embedding.vectors import VectorWork
from memoryd.embedding.words import WordWork
from memoryd.errors import UnavailableError
from memoryd.settings import EmbedConfig
from memoryd.store.database import ModelInfo, Store
from memoryd.store.thread import DatabaseThread

log = logging.getLogger(__name__)


class ModelLoading:
    def __init__(self, settings: EmbedConfig, state_dir: Path, store: Store, db: DatabaseThread,
                 threads: EmbedThreads, vectors: VectorWork, words: WordWork,
                 background: Background, preloaded: Embedder | None = None) -> None:
        """``preloaded``: an already loaded model to use instead of loading one (tests share
        one across daemons)."""
        self.settings = settings
        self.state_dir = state_dir
        self.store = store
        self.db = db
        self.threads = threads
        self.vectors = vectors
        self.words = words
        self.background = background
        self.preloaded = preloaded
        self.reason: str | None = None  # why the model could not load
        #: set once the vector index is built, or will not be (no model, no disk space): start-up
        #: work that can wait (the PreToolUse guard's first read) waits for it, because any
        #: Python work beside the index's fill slowed it five-fold (the fill's reader gives up
        #: the GIL at every row)
        self.settled = asyncio.Event()

    def start(self) -> None:
        self.threads.start_loading()
        self.background.spawn(self.load())

    async def load(self) -> None:
        try:
            await self._load()
        finally:
            self.settled.set()

    async def _load(self) -> None:
        loop = asyncio.get_running_loop()
        embedder: Embedder | None
        if self.preloaded is not None:
            embedder, reason = self.preloaded, None
        else:
            embedder, reason = await loop.run_in_executor(
                self.threads.bulk_thread, load_embedder, self.settings)
        self.reason = reason
        self.threads.loaded(embedder)
        if embedder is None:
            return
        log.info("Embedding model %s loaded (%d dims).", embedder.model_id, embedder.dim)
        await self.db(self.store.bind_model,
                      ModelInfo(embedder.model_id, embedder.sha256, embedder.dim, embedder.parts))
        # the words before the index: a search that finds the index ready finds them too
        # (loaded after it, the first search after a start could be ranked without them)
        await self.db(self.words.load, embedder.dim)
        try:
            await self.vectors.build_index(embedder.dim, self.state_dir)
        except UnavailableError as exc:
            if self.db.closing:
                raise
            log.error("The vector index could not be built in %s (%s): searches read the "
                      "stored vectors instead (slower) until memoryd restarts with disk space.",
                      self.state_dir, getattr(exc.__cause__, "strerror", None) or exc)
        self.background.spawn(self.vectors.backfill())
        self.vectors.wanted.set()
        self.background.spawn(self.words.fill())
