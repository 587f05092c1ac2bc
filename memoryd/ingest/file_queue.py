"""The queue of files to index, and its worker.

Paths that changed (from the scans: :mod:`memoryd.ingest.full_scan`; from the watchfiles loops:
:mod:`memoryd.ingest.watch_loops`) go into one de-duplicated queue; :class:`FileQueue` (mixed
into :class:`~memoryd.ingest.watcher.Watcher`) has a worker take them in batches and read them
(:mod:`memoryd.ingest.file_reads`), one batch at a time. A batch that fails is read file by
file, and a file that fails is queued again after a wait that doubles while it keeps failing.
It counts the files done for `memory status` ("indexing files x/y") and the first scan's
(:class:`~memoryd.progress.InitialIndexing`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd_client.views import shown_text

from memoryd.ingest.source_stats import SourceStats
from memoryd.progress import InitialIndexing
from memoryd.settings import Config
from memoryd.sources import Source
from memoryd.store.durable import refused_by_disk

log = logging.getLogger(__name__)

BATCH_PATHS = 64
#: A file whose indexing failed is tried again after this long at first (then twice as long).
RETRY_FIRST_S = 5.0


class FileQueue:
    """The files waiting to be indexed, and the worker that indexes them (mixed into
    Watcher)."""

    config: Config
    on_indexed: Callable[[], None]
    stats: dict[str, SourceStats]
    #: the files queued since the queue was last empty, and how many of them are done
    indexing: list[int]
    pending: dict[str, None]
    wakeup: asyncio.Event
    tasks: list[asyncio.Task[Any]]
    initial: InitialIndexing
    initial_scanned: bool
    busy: asyncio.Lock
    failed: set[str]
    retry_s: float
    retry_at: float | None

    if TYPE_CHECKING:
        async def process(self, paths: list[str]) -> None: ...
        def match(self, path: str) -> tuple[Source, str] | None: ...

    def enqueue(self, paths: list[str]) -> None:
        # once each: a folder that arrives with its file names the file twice (the file's
        # own event, and the folder's files), and a path counted twice is indexed once:
        # "indexing files 3/4" stayed on for good
        new = [path for path in dict.fromkeys(paths) if path not in self.pending]
        if not self.pending and self.indexing[0] >= self.indexing[1]:
            self.indexing = [0, 0]  # a new stretch of work
        self.indexing[1] += len(new)
        self.initial.queued(new)
        for path in new:
            self.pending[path] = None
        if paths:
            self.wakeup.set()

    async def worker(self) -> None:
        while True:
            await self.wakeup.wait()
            self.wakeup.clear()
            while self.pending:
                batch = list(self.pending)[:BATCH_PATHS]
                for path in batch:
                    del self.pending[path]
                added = self._entries_added()
                await self._ingest(batch)
                self.initial.processed(len(batch), self._entries_added() - added)
                self.indexing[0] = min(self.indexing[0] + len(batch), self.indexing[1])
                self.on_indexed()
            self._initial_done()

    async def index_now(self, paths: list[str]) -> int:
        """Index these files now, as the worker does (import-history: memoryd.sessions.history);
        those in the queue are taken out of it and counted as its own. Returns the entries
        added. From each file's tail offset, so what the watcher indexed is not read again."""
        async with self.busy:
            queued = [path for path in paths if path in self.pending]
            for path in queued:
                del self.pending[path]
            added = self._entries_added()
            await self.process(paths)
            gained = self._entries_added() - added
            if queued:
                self.initial.processed(len(queued), gained)
                self.indexing[0] = min(self.indexing[0] + len(queued), self.indexing[1])
            self.on_indexed()
            if not self.pending:
                self._initial_done()
        return gained

    async def _ingest(self, batch: list[str], told: set[str] | None = None) -> None:
        """Index a batch of files; when it fails, each file alone, so that one file's failure
        is not the others' (they were left unindexed until they changed again). A file that
        fails alone is its source's problem (`memory status --sources`, doctor); the log has
        the traceback of each kind of failure once a batch (``told``: a full disk fails every
        file alike). Indexing a file again is harmless: unchanged entries stay, a transcript
        goes on from its offset."""
        try:
            async with self.busy:
                await self.process(batch)
        except Exception as exc:
            if len(batch) > 1:
                told = set()
                for path in batch:
                    await self._ingest([path], told)
                return
            path = batch[0]
            kind = type(exc).__name__
            self.failed.add(path)
            again = self._retry_later()
            if refused_by_disk(exc):  # a full or read-only disk: no traceback helps
                log.warning("Indexing %s failed (%s); it is tried again in %.0f s.",
                            shown_text(path), exc, again)
            elif told is None or kind not in told:
                log.exception("Indexing %s failed; it is tried again in %.0f s.",
                              shown_text(path), again)
            else:
                log.warning("Indexing %s failed too (%s: %s).", shown_text(path), kind, exc)
            if told is not None:
                told.add(kind)
            matched = self.match(path)
            if matched is not None:
                self.stats[matched[0].name].error(path, f"not indexed: {exc}")
        else:
            for path in self.failed.intersection(batch):  # indexed now: its failure is over
                self.failed.discard(path)
                for stats in self.stats.values():
                    if stats.last_error is not None and stats.last_error.startswith(
                            "not indexed: ") and stats.last_error_path == shown_text(path):
                        stats.gone(path)
            if not self.failed:
                self.retry_s = 0.0

    def _retry_later(self) -> float:
        """The files whose indexing failed are queued again after a wait (RETRY_FIRST_S,
        doubling while they keep failing, up to ``watch.full_scan_interval_s``): a full disk
        given space again, they are indexed without waiting for the next rescan or a change.
        Returns how long until then."""
        now = time.monotonic()
        if self.retry_at is None or self.retry_at <= now:
            self.retry_s = min(max(self.retry_s * 2, RETRY_FIRST_S),
                               self.config.watch.full_scan_interval_s)
            self.retry_at = now + self.retry_s
            self.tasks = [task for task in self.tasks if not task.done()]
            self.tasks.append(asyncio.create_task(self._retry(self.retry_s),
                                                  name="ingest-retry"))
        return self.retry_at - now

    async def _retry(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self.retry_at = None
        self.enqueue(sorted(self.failed))

    def _entries_added(self) -> int:
        return sum(stats.entries_added for stats in self.stats.values())

    def _initial_done(self) -> None:
        """Log once when the files of the first scan are indexed."""
        if self.initial_scanned and self.initial.active and not self.pending:
            took = self.initial.finish()
            log.info("Initial indexing finished: %d files watched, %d of them new or changed "
                     "since the last run, %d entries, in %.1f s.", self.initial.watched,
                     self.initial.total, self.initial.entries, took)
