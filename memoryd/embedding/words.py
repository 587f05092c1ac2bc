"""The lexicon's filling: every word of the entries given a vector (``memoryd.store.lexicon``),
for search's word alignment. A bulk write's and a file's words are filled in the background, a
step at a time; a single write's new words are added once it is acknowledged, and a search
right after it waits for them (``learned``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from memoryd.background import Background
from memoryd.embedding.derived import BulkWrites, Derived
from memoryd.embedding.threads import EmbedThreads
from memoryd.embedding.vectors import disk_refused
from memoryd.errors import UnavailableError
from memoryd.store import lexicon
from memoryd.store.database import Store
from memoryd.store.lexicon import Lexicon
from memoryd.store.thread import DatabaseThread

log = logging.getLogger(__name__)

#: The lexicon's filling: entries read and new words embedded per step (~0.15 s of the bulk
#: embedding thread), and the longest pause when it has caught up with the entries.
LEXICON_ENTRIES = 256
LEXICON_WORDS = 128
LEXICON_IDLE_S = 30.0  # woken sooner by new entries
#: How long a search waits, at most, for the new words of single writes acknowledged just before
#: it: a bound for an embedder that is stuck, not for a slow one (each word is a run of the model
#: of its own: a write's took 0.25-0.5 s on a 2-core machine at load 10, and a search that gave
#: up after 0.5 s ranked the write without its words).
LEARNING_WAIT_S = 5.0


class WordWork:
    def __init__(self, store: Store, derived: Derived, db: DatabaseThread,
                 threads: EmbedThreads, bulk: BulkWrites, background: Background,
                 wanted: asyncio.Event, vectors_done: asyncio.Event,
                 idle: asyncio.Event) -> None:
        """``wanted``: set by new entries (their words may be new); ``vectors_done``: the
        vector backlog is embedded (the words wait for the vectors); ``idle``: set here while
        the lexicon has caught up with the entries (refining long entries' vectors waits)."""
        self.store = store
        self.derived = derived
        self.db = db
        self.threads = threads
        self.bulk = bulk
        self.background = background
        self.wanted = wanted
        self.vectors_done = vectors_done
        self.idle = idle
        self.lexicon_at = 0  # the lexicon holds the words of the entries up to this rowid
        self.learning: set[asyncio.Task[None]] = set()  # single writes' new words being added

    def load(self, dim: int) -> None:
        """The stored lexicon, into memory (database thread)."""
        self.lexicon_at = lexicon.cursor(self.store)
        words = Lexicon(dim, self.lexicon_at)
        words.load(self.store)
        self.derived.lexicon = words

    async def fill(self) -> None:
        """Give every word of the entries a vector, a step at a time, after bulk writes and
        the vector backlog; then keep up with new entries. The words wait for the vectors: an
        entry without its words is scored without the alignment, one without its vector by
        its keywords alone; and the words of a backlog, each embedded alone, took ~10 % of the
        embedder's time while files were indexed."""
        words, store = self.derived.lexicon, self.store
        assert words is not None and self.threads.embedder is not None
        while True:
            await self.bulk.done.wait()
            await self.vectors_done.wait()
            self.wanted.clear()  # an entry stored from now on wakes the wait below
            try:
                reached, found = await self.db(self._step, words, self.lexicon_at)
            except UnavailableError as exc:
                await disk_refused("The lexicon", exc, self.db.closing)
                continue
            if reached == self.lexicon_at:
                self.idle.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(LEXICON_IDLE_S):
                        await self.wanted.wait()
                continue
            self.idle.clear()
            if found:
                vectors = await self.threads.alone(list(found.values()), self.threads.bulk_thread)
                try:
                    await self.db(words.add, store, found, vectors, reached)
                except UnavailableError as exc:
                    await disk_refused("The lexicon", exc, self.db.closing)
                    continue
            self.lexicon_at = reached

    def _step(self, words: Lexicon, at: int) -> tuple[int, dict[str, str]]:
        """The filling's next entries and the words they bring (database thread). Entries of
        known words only (most of a store's: every single write's entry is read here again,
        once its new words were added) move the cursor here, in the same call: no call of the
        model, and no second call here."""
        reached, found = lexicon.new_words(self.store, words, at, LEXICON_ENTRIES,
                                           LEXICON_WORDS)
        if reached != at and not found:
            words.advance(self.store, reached)
        return reached, found

    def learn_later(self, text: str) -> None:
        """Give a single write's new words to the lexicon once it is acknowledged (bulk writes
        and files: ``fill``). Before the acknowledgement they cost a write ~2 ms a word; a
        search waits for them instead (``learned``), and finds them there."""
        task = self.background.spawn(self.learn_words(text))
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
            self.wanted.set()

    async def _learn_words(self, text: str) -> None:
        words = self.derived.lexicon
        if self.threads.embedder is None or words is None:
            return
        found = await self.db(lexicon.unknown_words, self.store, words, [text])
        if found:  # on the pair thread: beside the next write's text on the interactive one
            vectors = await self.threads.alone(list(found.values()), self.threads.pair_thread)
            try:
                await self.db(words.add, self.store, found, vectors)
            except UnavailableError as exc:
                if self.db.closing:
                    raise
                log.warning("A write's new words wait for the lexicon's filling: the disk "
                            "refused them (%s).", getattr(exc.__cause__, "strerror", None) or exc)
