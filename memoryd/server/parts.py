"""The daemon's working parts, built and wired once (``Parts.open``, called by the daemon's
startup): the database thread and the store, the model and its background work
(:mod:`memoryd.embedding`), the write path (:mod:`memoryd.writes`) and search
(:mod:`memoryd.retrieval.service`). Each part is handed the others it uses; none holds the
daemon.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from memoryd.agents import rolled_up
from memoryd.background import Background
from memoryd.embedding.derived import BulkWrites, Derived
from memoryd.embedding.loading import ModelLoading
from memoryd.embedding.model import Embedder
from memoryd.embedding.threads import EmbedThreads
from memoryd.embedding.vectors import VectorWork
from memoryd.embedding.words import LEXICON_ENTRIES, WordWork
from memoryd.maintenance.replay import replay_ledgers
from memoryd.retrieval.search import Searcher
from memoryd.retrieval.service import SearchService
from memoryd.settings import Settings
from memoryd.store import lexicon
from memoryd.store.archive import AgentArchive, restore_archives
from memoryd.store.database import Store
from memoryd.store.entries import Entries
from memoryd.store.file_history import restore_history
from memoryd.store.integrity import set_aside_damaged
from memoryd.store.ledger import Ledger, LedgerProblem
from memoryd.store.reader import store_counts
from memoryd.store.row_file import OLD_ROW_FILES, ROW_FILE
from memoryd.store.run_log import RunLog, replay_run_log
from memoryd.store.thread import DatabaseThread
from memoryd.store.usage_log import UsageLog, replay_usage_log
from memoryd.sync.apply import finish_pending
from memoryd.sync.shared import apply_followed
from memoryd.watched_sources import transcript_formats
from memoryd.writes import Writes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Parts:
    settings: Settings
    db: DatabaseThread
    background: Background
    threads: EmbedThreads
    store: Store
    entries: Entries
    derived: Derived
    vectors: VectorWork
    words: WordWork
    loading: ModelLoading
    writes: Writes
    searcher: Searcher
    search: SearchService
    replayed: int  # ledger records the database had missed, replayed at opening
    rebuilding: bool
    #: what opening found wrong in the ledgers it read: torn last lines set aside, damaged
    #: lines skipped (`memory status` tells of them; `memory doctor` reads every line)
    ledger_problems: list[LedgerProblem]
    #: held while a sync applies what it pulled, in slices (memoryd.server.sync_methods): a
    #: purge waits, else it could miss records of its entries that are not applied yet
    sync_applying: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    async def open(cls, settings: Settings, db: DatabaseThread, background: Background,
                   threads: EmbedThreads, embedder: Embedder | None = None) -> Parts:
        """Open the store, restore what the transcript archives and then the ledgers hold
        beyond it (the ledgers' status records may name restored transcript entries), wire
        the parts over it and start loading the model. ``embedder``: an already loaded model
        to use instead of loading one (tests share one across daemons)."""
        config = settings.config
        # the row file is derived and rebuilt once the model is loaded: removed first, so
        # that on a full disk its space lets the database open (it writes its WAL index)
        for name in (ROW_FILE, *OLD_ROW_FILES):
            (config.state_dir / name).unlink(missing_ok=True)
        rebuilding = await db(set_aside_damaged, config.db_path)
        store = await db(Store, config.db_path)
        db.opened = True
        entries = Entries(config.remember, store, Ledger(config.ledger_dir))
        try:
            await db(store.checkpoint_in_background)
            # a sync killed mid-merge: its files put back or completed, what it brought applied
            await db(finish_pending, store, config.state_dir)
            restored = await db(restore_archives, store, AgentArchive(config.archive_dir),
                                transcript_formats(config))
            # the memory tools' versions the index lacks (a new or damaged database)
            await db(restore_history, store, AgentArchive(config.history_dir))
            # the passes' run log before the ledgers: their records of a pass's changes
            # name them
            await db(replay_run_log, store, RunLog.in_state(config.state_dir))
            problems: list[LedgerProblem] = []
            replayed = await db(replay_ledgers, store, entries.ledger, None, problems)
            await db(replay_usage_log, store, UsageLog.beside(store))
            await db(apply_followed, store, config.state_dir)  # teams' clones, as fetched
        except BaseException:  # the daemon has no parts to close: the store is closed here
            await db.closing_call(store.close)
            raise
        derived, bulk = Derived(), BulkWrites()
        lexicon_wanted = asyncio.Event()  # new entries (their words may be new)
        vectors = VectorWork(store, entries, derived, db, threads, bulk, background,
                             lexicon_wanted)
        words = WordWork(store, derived, db, threads, bulk, background, lexicon_wanted,
                         vectors.done, vectors.words_idle)
        loading = ModelLoading(config.embed, config.state_dir, store, db, threads, vectors,
                               words, background, embedder)
        searcher = Searcher(config, store, derived)
        parts = cls(settings, db, background, threads, store, entries, derived, vectors, words,
                    loading, Writes(entries, db, threads, vectors, words, bulk), searcher,
                    SearchService(searcher, db, threads, words), replayed, rebuilding,
                    problems)
        if rebuilding:
            log.info("Rebuilt the index: %d archived transcript entries, %d ledger records; "
                     "the watched files are being indexed.", restored, replayed)
        loading.start()
        return parts

    @classmethod
    async def standalone(cls, settings: Settings, embedder: Embedder | None = None) -> Parts:
        """The parts without a daemon around them, with threads of their own (the benches
        that drive the real store, model and search in-process); ``stop`` ends them."""
        return await cls.open(settings, DatabaseThread(), Background(), EmbedThreads(), embedder)

    async def stop(self) -> None:
        """Close, as the daemon's shutdown does: refuse new work, end the background tasks,
        close the index and the store, then the threads."""
        self.db.closing = self.background.closing = True
        self.threads.start_closing()
        self.entries.stopping.set()
        await self.background.cancel_all()
        await self.close()
        self.db.shutdown()
        self.threads.shutdown()

    def reconfigure(self) -> None:
        """The settings were reloaded: the parts that keep a section of them take it."""
        self.entries.remember = self.settings.config.remember
        self.searcher.config = self.settings.config

    async def close(self) -> None:
        await self.search.close()
        index = self.derived.index or self.entries.index  # the latter while it fills
        if index is not None:
            await self.db.closing_call(index.close)
        await self.db.closing_call(self.store.close)

    async def status(self) -> dict[str, Any]:
        """Counts for `memory status`: the whole-table ones on a reader of their own, the
        rest on the database thread."""
        (entries, vectors), status = await asyncio.gather(
            asyncio.to_thread(store_counts, self.settings.config.db_path,
                              self.store.model is not None),
            self.db(self._status))
        return {"entries": entries, "vectors": vectors, **status}

    def _status(self) -> dict[str, Any]:
        model = self.store.model
        index, words = self.derived.index, self.derived.lexicon
        return {
            "backlog": self.store.count_backlog() if model else None,
            # long entries searchable by their sentences' mean, to be run whole (no budget)
            "refining": self.store.count_refining() if model else None,
            **dict(zip(("agents", "subagents"), rolled_up(self.store.agents()))),
            "model": {"id": model.model_id, "sha256": model.sha256, "dim": model.dim}
            if model else None,
            "vector_index": {
                "ready": index is not None,
                # filled from the stored vectors after a start: searches read those meanwhile
                "filling": self.entries.index is not None and self.entries.index.filling,
                "entries": len(index) if index is not None else 0,
                "bytes": index.nbytes if index is not None else 0,
            },
            "lexicon": {
                "words": len(words) if words is not None else 0,
                "bytes": words.nbytes if words is not None else 0,
                "entries_behind": lexicon.entries_after(self.store, self.words.lexicon_at)
                if words is not None else None,
                # a fill of this many entries or more is shown (`memory status`: "filling the
                # word index"): search scores their hits without word alignment meanwhile
                "shown_from": LEXICON_ENTRIES,
            },
        }
