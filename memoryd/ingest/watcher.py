"""Live ingestion: the watcher that keeps the index in step with the watched sources' files.

Paths that changed go into one de-duplicated queue; a worker takes them in batches
(:mod:`memoryd.ingest.file_queue`), reads and parses them on the ingest thread (a transcript
from where it was last read: :mod:`memoryd.ingest.transcript_files`) and applies them on the
database thread (:mod:`memoryd.ingest.file_reads`, :mod:`memoryd.ingest.indexer`), so searches
and writes interleave with a big scan. Entries land without vectors (keyword search sees them at
once); the daemon's backfill gives them vectors in batches.

The changed paths come from two watchfiles loops (:mod:`memoryd.ingest.watch_loops`: the
roots, re-checked every ``watch.rescan_interval_s``, and their back-off when they keep failing)
and from the full scans (:mod:`memoryd.ingest.full_scan`: at the start, and every
``watch.full_scan_interval_s`` for what the watcher was never told of). A file belongs to its
project root's project (:mod:`memoryd.ingest.file_projects`).

:class:`Watcher` is those parts mixed into one object with the state they share: this module
builds it, starts and stops its tasks, takes a new configuration, and says its status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from memoryd import claude_projects
from memoryd.ingest.file_projects import FileProjects, configured
from memoryd.ingest.file_queue import FileQueue
from memoryd.ingest.file_reads import FileReads
from memoryd.ingest.full_scan import FullScan
from memoryd.ingest.indexer import Indexer
from memoryd.ingest.scan_links import ScanLinks
from memoryd.ingest.source_stats import SourceStats
from memoryd.ingest.transcript_files import TranscriptFiles
from memoryd.ingest.watch_loops import Unseen, WatchLoops, WatchTrouble
from memoryd.progress import InitialIndexing
from memoryd.settings import Config
from memoryd.sources import Source

T = TypeVar("T")


class Watcher(WatchLoops, FullScan, FileQueue, FileReads, FileProjects):
    """Keeps the index in step with the watched sources' files: finds those that changed (the
    scans, the watchfiles loop), queues them, and has a worker read each and hand it to the
    :class:`~memoryd.ingest.indexer.Indexer`, which writes its entries."""

    def __init__(self, config: Config, indexer: Indexer,
                 db: Callable[..., Awaitable[Any]], on_indexed: Callable[[], None],
                 background: Callable[..., Awaitable[Any]] | None = None) -> None:
        self.config = config
        self.indexer = indexer
        self.db = db
        #: the database thread for slices of indexing, once the requests someone waits on are
        #: done (memoryd.scheduling)
        self.background = background or db
        self.on_indexed = on_indexed
        self.home = Path.home()
        #: each project source's project root, as configured, and the project its files
        #: belong to (memoryd.project.project_of of the root: a symlink or a worktree given as
        #: a root names the project the hooks and ``--here`` name)
        self.sources, self.project_roots, self.projects = configured(config)
        #: the projects of Claude Code's project directories (its auto memory's)
        self.claude_projects = claude_projects.ProjectDirs()
        self.stats = {s.name: SourceStats() for s in self.sources}
        #: each source's files, as the last scan found them and the watcher since (``files``
        #: of its stats): a file written after the scan counts at once
        self.files: dict[str, set[str]] = {}
        #: the files queued since the queue was last empty, and how many of them are done:
        #: `memory status` says "indexing files x/y" for files written while memoryd runs too
        self.indexing = [0, 0]
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-ingest")
        self.pending: dict[str, None] = {}
        self.wakeup = asyncio.Event()
        #: the transcript files being read, each with its parser's state
        self.transcripts = TranscriptFiles(config, indexer, self.stats, db, self.background,
                                           self.thread)
        self.scanning = False
        #: full scans started and finished (:meth:`scanned`)
        self.scans = [0, 0]
        self.tasks: list[asyncio.Task[Any]] = []
        self.restart_watch = asyncio.Event()
        self.watch_stop = asyncio.Event()
        self.initial = InitialIndexing()
        self.initial_scanned = False
        #: held while files are processed: by the worker, or by import-history indexing files
        #: itself (:meth:`index_now`); one at a time, so a file is never read twice at once
        self.busy = asyncio.Lock()
        #: files whose names are not UTF-8, told of in the log once each
        self.refused_names: set[str] = set()
        #: files whose indexing failed (queued again after a wait, :meth:`_retry_later`; a
        #: rescan queues them too: not the watcher's miss)
        self.failed: set[str] = set()
        self.retry_s = 0.0
        self.retry_at: float | None = None
        #: the problems the last scan told of (source, path as shown): one the next scan does
        #: not find again is over
        self.scan_said: set[tuple[str, str]] = set()
        #: the last rescan that found files changed without the watcher reporting them
        self.unseen: Unseen | None = None
        #: the symlinked files and directories of the last scan
        self.symlinks = ScanLinks()
        #: the roots watched (recursively or not), and beside them what the symlinks lead to
        self.plan: list[tuple[Path, bool]] = []
        self.link_watch: list[tuple[Path, bool]] = []
        #: directories watched alone in place of a recursive watch over a symlinked directory
        #: (watch_plan.around_links)
        self.alone: set[str] = set()
        #: the watcher failing again and again (None: it runs)
        self.trouble: WatchTrouble | None = None

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.thread, fn, *args)

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self.worker(), name="ingest-worker"),
                      asyncio.create_task(self.watch(), name="ingest-watch")]

    async def stop(self) -> None:
        self.watch_stop.set()  # the watcher thread returns within a step, so cancelling is quick
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.thread.shutdown(wait=True)

    def reload(self, config: Config, sources: list[Source], roots: dict[str, str],
               projects: dict[str, str]) -> None:
        """New configuration, with its sources, project roots and projects as the caller built
        them (:func:`configured`; nothing here may fail half way: a reload is all or nothing):
        a new watcher, a rescan."""
        self.config = config
        self._use(sources, roots, projects)
        self.transcripts.reload(config)
        self.restart_watch.set()

    def _use(self, sources: list[Source], roots: dict[str, str],
             projects: dict[str, str]) -> None:
        self.sources, self.project_roots, self.projects = sources, roots, projects
        names = {source.name for source in self.sources}
        for gone in set(self.stats) - names:  # removed: added again, it counts from nothing
            del self.stats[gone]
            self.files.pop(gone, None)
        for source in self.sources:
            self.stats.setdefault(source.name, SourceStats())

    # -- status -----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "queue": len(self.pending),
            "scanning": self.scanning,
            "initial": self.initial.snapshot(),
            "indexing": {"done": self.indexing[0], "total": self.indexing[1]}
            if self.indexing[0] < self.indexing[1] else None,
            "roots": [str(r) for r in self.roots],
            "dir_links": [asdict(link) for link in self.symlinks.dirs],
            "sources": [
                {"name": s.name, "path": s.path, "kind": s.kind, "format": s.format,
                 "agent": s.agent, "notebook_lines": s.notebook_lines,
                 "root_exists": self.present(s),
                 **self.stats.get(s.name, SourceStats()).__dict__}
                for s in self.sources
            ],
        }

    def present(self, source: Source) -> bool:
        """Whether the source's directory is there; for one of a project's files, the
        project's (its `.claude/rules/` or `AGENTS.md` need not exist, as `memory doctor` says)."""
        root = self.project_roots.get(source.name)
        return Path(root).is_dir() if root is not None else source.root(self.home).is_dir()
