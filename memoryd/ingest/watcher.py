"""Live ingestion: the scans, the watchfiles loops and the queue between them.

Paths that changed go into one de-duplicated queue; a worker takes them in batches, reads and
parses them on the ingest thread (a transcript from where it was last read:
:mod:`memoryd.ingest.transcript_files`) and applies them on the database thread
(:mod:`memoryd.ingest.indexer`), so searches and writes interleave with a big scan. Entries
land without vectors (keyword search sees them at once); the daemon's backfill gives them
vectors in batches.

Two watchfiles loops run: one over the roots whose sources' files lie below them, watched
recursively, and one over the directories watched alone (a root whose files lie in it, its
notebooks' ``archive/``, and the directories of symlinked files' targets; see
:func:`memoryd.sources.watch_roots`); the targets of the symlinked directories the scan
follows are recursive roots of the first (:mod:`memoryd.ingest.watch_plan`). The roots are
re-checked every ``watch.rescan_interval_s``, so a directory created, or deleted and re-created,
is picked up; every file is looked at again every ``watch.full_scan_interval_s``, for what the
watcher was never told of (past the system's limit on watched directories, on a network file
system).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import watchfiles
from memoryd_client.views import shown_text

from memoryd import claude_projects
from memoryd.config import Config, configured_sources
from memoryd.errors import UnavailableError, what_went_wrong
from memoryd.ingest import watch_plan
from memoryd.ingest.indexer import Changes, Indexer, MemoryFileRead, read_memory_file, stat_facts
from memoryd.ingest.scan_links import ScanLinks, files_below, leads_outside, scan_files
from memoryd.ingest.source_stats import SourceStats, account
from memoryd.ingest.transcript_files import TranscriptFiles
from memoryd.progress import InitialIndexing
from memoryd.project import project_of
from memoryd.regular_file import why_unread
from memoryd.sources import Source, relevant, watch_roots
from memoryd.store.durable import refused_by_disk
from memoryd.text import utf8_name

log = logging.getLogger(__name__)


#: How long the database thread parses and applies read files before it lets other work in.
APPLY_SLICE_S = 0.005
#: When the scan that catches up with the watcher's start runs.
CATCH_UP_S = 1.0
T = TypeVar("T")

BATCH_PATHS = 64
#: A file changed this long before a rescan, and not reported, was missed by the watcher.
UNSEEN_AFTER_S = 5.0


#: A watcher that ran this long without failing is well again: its failures count afresh.
STEADY_S = 60.0
#: A file whose indexing failed is tried again after this long at first (then twice as long).
RETRY_FIRST_S = 5.0


@dataclass(frozen=True)
class WatchTrouble:
    """The watcher failing again and again (it is started again after each failure, waiting
    longer each time): since when, how often, the last failure's cause, and when it is tried
    next. Changes wait for the rescan of each start meanwhile."""

    since: float
    count: int
    cause: str
    retry_at: float


@dataclass(frozen=True)
class Unseen:
    """Files a rescan found changed that the watcher had not reported: when, how many, one."""

    at: float
    count: int
    example: str


def projects_of(roots: dict[str, str]) -> dict[str, str]:
    """Each project source's project (its root's: memoryd.project.project_of)."""
    identity = {root: project_of(root) for root in set(roots.values())}
    return {name: identity[root] for name, root in roots.items()}


def configured(config: Config) -> tuple[list[Source], dict[str, str], dict[str, str]]:
    """The sources, each project source's root and its project."""
    sources, roots = configured_sources(config)
    return sources, roots, projects_of(roots)


class Watcher:
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

    @property
    def roots(self) -> list[Path]:
        """The roots watched now (not the links' targets' directories)."""
        return [root for root, _ in self.plan]

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

    async def _follow_settings(self) -> bool:
        """Whether an agent's settings moved its files since the sources were made (Claude
        Code's ``autoMemoryDirectory``), a CLAUDE.md's imports (``@path``) changed, or an
        instruction file came or went in a project's subdirectory: the sources are made again,
        to be watched anew, and a moved or gone source's entries leave the index as
        ``memory sources remove`` takes them (the files are not touched); the rescan indexes
        the new place. Made off the event loop: it reads the agents' settings and walks the
        project roots (memoryd.nested_files)."""
        config = self.config
        sources, roots, projects = await asyncio.to_thread(configured, config)
        if config is not self.config:  # (reloaded meanwhile)
            return False
        if sources == self.sources:
            # a root's project may change under it (a repository made around it, a symlink
            # pointed elsewhere): the next full scan moves its files' entries
            # (:meth:`_moved_projects`)
            self.project_roots, self.projects = roots, projects
            return False
        old = [source for source in self.sources if source not in sources]  # moved or gone
        log.info("An agent's settings or imports moved its files: watched now %s; no longer "
                 "%s.",
                 ", ".join(s.path for s in sources if s not in self.sources) or "nothing new",
                 ", ".join(source.path for source in old) or "nothing")
        for source in old:  # counted anew where it is now
            self.stats.pop(source.name, None)
            self.files.pop(source.name, None)
        self._use(sources, roots, projects)
        for source in old:
            await self.db(self.indexer.drop_source, source.name)
        return True

    # -- queue ------------------------------------------------------------------------

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

    def match(self, path: str) -> tuple[Source, str] | None:
        candidate = Path(path)
        for source in self.sources:
            agent = source.match(candidate, self.home)
            if agent is not None:
                if watch_plan.through_symlink(candidate, source.root(self.home),
                                              self.symlinks.followed):
                    return None  # a symlinked directory the scan does not follow
                if leads_outside(self.config.memory_dir, candidate, agent):
                    return None
                return source, agent
        return None

    def _refuse_outside_link(self, path: str) -> None:
        """A symlinked file that leads outside its source's directory: not indexed (as the
        memory tools refuse to read it), and dropped from the index if it was."""
        for source in self.sources:
            agent = source.match(Path(path), self.home)
            if agent is not None and leads_outside(self.config.memory_dir, Path(path), agent):
                root = watch_plan.tools_root(self.config.memory_dir, agent)
                self.stats[source.name].skip("symlink leading outside the directory")
                self.stats[source.name].error(path, "not indexed: a symlink leading outside the "
                                              f"memory directory {root} (the memory tools do "
                                              "not read it either)")
                return

    async def process(self, paths: list[str]) -> None:
        """Read the files, and apply what they hold; a file that is gone takes its entries
        with it. One that is there but cannot be read (:func:`why_unread`: a directory on
        its way made unreadable, a FIFO or a symlink loop in its place) keeps them and is
        its source's problem: nothing the user wrote leaves the index for it."""
        existing, gone, unmatched = await self._sort(paths)
        memory_results: list[MemoryFileRead] = []
        for path in existing:  # before the gone ones, so that a rename is seen as one
            matched = self.match(path)
            if matched is None:
                unmatched += self._not_read(path)
                continue
            source, agent = matched
            self._count_file(source.name, path)
            project = self.projects.get(source.name)
            if source.name == claude_projects.AUTO_MEMORY_SOURCE:
                project = await self.off_loop(self.file_project, source, path)
            try:
                facts = stat_facts(Path(path), source.name, source.kind, agent, project)
            except OSError:
                gone.append(path)
                continue
            if source.kind == "memory":
                old = await self.db(self.indexer.follow_rename, facts)
                if old is not None:
                    self.transcripts.forget(old)
                relative = os.path.relpath(path, source.root(self.home))
                memory_results.append(await self.off_loop(
                    read_memory_file, facts, relative, self.config.watch.max_file_bytes))
            else:
                await self.transcripts.ingest(source, facts)
        done = 0
        while done < len(memory_results):  # in slices: searches wait for one slice at most
            changes = await self.background(self._apply_memory, memory_results[done:])
            for result, change in zip(memory_results[done:], changes):
                account(self.stats, result.facts, change,
                        result.error or "; ".join(result.notes) or None)
            done += len(changes)
        await self._drop_unmatched(unmatched)
        for path in gone:
            self._count_file(None, path)
            self.transcripts.forget(path)
            for stats in self.stats.values():
                stats.gone(path)
            changes = await self.db(self.indexer.remove_file, path)
            if changes.removed:
                log.info("%s is gone: removed %d entries.", path, changes.removed)

    def file_project(self, source: Source, path: str) -> str | None:
        """The project a file of ``source`` belongs to: its project root's, for Claude Code's
        auto memory the project its directory's name encodes (memoryd.claude_projects; it may
        read transcripts and list directories: off the event loop), else none (global)."""
        if source.name == claude_projects.AUTO_MEMORY_SOURCE:
            return self.claude_projects.project_of_file(path, str(source.root(self.home)))
        return self.projects.get(source.name)

    def _moved_projects(self, files: list[tuple[Source, str]],
                        indexed: dict[str, str | None]) -> list[str]:
        """The indexed memory files among ``files`` that belong to another project than the
        one their entries were filed under: Claude Code's auto memory a memoryd before this
        one filed global, a project root given through a symlink or as a worktree (filed under
        the path given), a root whose project changed. Read again, their entries move, each
        keeping its id and history (memoryd.ingest.indexer)."""
        return [path for source, path in files
                if path in indexed and indexed[path] != self.file_project(source, path)]

    async def _sort(self, paths: list[str]) -> tuple[list[str], list[str], list[str]]:
        """The files there to read, those gone, and those no source reads; a name that is
        not UTF-8 and a file there that cannot be read are told of (and kept) here."""
        existing: list[str] = []
        gone: list[str] = []
        unmatched: list[str] = []
        for path in paths:
            if not utf8_name(path):
                if _there(path):
                    self._refuse_name(path)
                else:
                    self._name_gone(path)
                continue
            try:
                why = why_unread(path)
            except OSError:
                gone.append(path)
                continue
            if why is None:
                existing.append(path)
            elif (matched := self.match(path)) is None:
                unmatched += self._not_read(path)
            else:
                await self._keep_unread(matched[0], path, why)
        return existing, gone, unmatched

    async def _keep_unread(self, source: Source, path: str, why: str) -> None:
        """A file of ``source`` that is there but cannot be read: its entries stay, its row
        and its source say why (in the log once, not at each rescan)."""
        self._count_file(source.name, path)
        message = f"not read: {why}; its entries are kept until it can be read or is removed"
        news = await self.db(self.indexer.keep_unread, path, message)
        self.stats[source.name].error(shown_text(path), message)
        if news is not False:
            log.warning("%s: %s", shown_text(path), message)

    def _not_read(self, path: str) -> list[str]:
        """A file there that is not read: ``[path]`` when no source's glob matches it (the
        scan queues it because it is indexed: a source's older glob took it), else none (a
        symlink that is not followed; :meth:`_refuse_outside_link` says so)."""
        if not any(source.match(Path(path), self.home) for source in self.sources):
            return [path]
        self._refuse_outside_link(path)
        return []

    async def _drop_unmatched(self, paths: list[str]) -> None:
        """Files indexed once that no source matches now: they leave the index."""
        for path in paths:
            self.transcripts.forget(path)
            await self.db(self.indexer.drop_unmatched, path)

    def _refuse_name(self, path: str) -> None:
        """A file whose name is not UTF-8 (an old archive's, another system's encoding): the
        index, the replies and the memory tools hold names as text, so it is not indexed, and
        its source says so (once in the log)."""
        matched = self.match(path)
        if matched is None:
            return
        stats = self.stats[matched[0].name]
        message = "not indexed: the file's name is not valid UTF-8 (rename the file)"
        if path not in self.refused_names:
            self.refused_names.add(path)
            log.warning("%s: %s", shown_text(path), message)
        stats.error(shown_text(path), message)

    def _name_gone(self, path: str) -> None:
        """A file whose name is not UTF-8 is gone: its problem is none any more."""
        self.refused_names.discard(path)
        for stats in self.stats.values():
            stats.gone(path)

    def _forget_problems_gone(self) -> None:
        """After a scan: the sources' last problems of files that are not there any more (a
        name that is not UTF-8, a FIFO, a file that failed), which no event may tell of."""
        for path in [p for p in self.refused_names if not _there(p)]:
            self._name_gone(path)
        for stats in self.stats.values():
            shown = stats.last_error_path
            # (a name shown with escapes is no path to look at)
            if shown is not None and "\\" not in shown and not _there(shown):
                stats.gone(shown)

    def _count_file(self, source: str | None, path: str) -> None:
        """A file of ``source`` is there (None: it is gone): its source's file count."""
        for name, paths in self.files.items():
            if name != source and path in paths:
                paths.discard(path)
                self.stats[name].files = len(paths)
        if source is not None and source in self.stats:
            paths = self.files.setdefault(source, set())
            paths.add(path)
            self.stats[source].files = len(paths)

    def _apply_memory(self, results: list[MemoryFileRead]) -> list[Changes]:
        """Apply parsed files until APPLY_SLICE_S has passed (at least one)."""
        deadline = time.perf_counter() + APPLY_SLICE_S
        applied = []
        for result in results:
            applied.append(self.indexer.apply_memory_file(result))
            if time.perf_counter() >= deadline:
                break
        return applied

    # -- scanning and watching --------------------------------------------------------

    async def full_scan(self, unseen_before: float | None = None) -> tuple[int, list[str]]:
        """Queue every matching file that is new or changed, every indexed file that is gone,
        and every memory file whose project is not the one it was indexed under. Returns how
        many were queued, and, with ``unseen_before`` (a rescan while the watcher runs), those
        last changed before then, which the watcher should have reported: a file changed since
        is left to it (one dated in the future, by another machine's clock, is not). A link
        (its target's edit is no event beside it), a name that is not UTF-8, a file whose
        indexing failed and one whose project changed are no miss of the watcher's."""
        self.scanning = True
        self.scans[0] += 1
        try:
            known = await self.db(self.indexer.known_paths)
            indexed = await self.db(self.indexer.memory_projects)
            found = await self.off_loop(self._scan_files)
            now = time.time()
            queued = [path for path, facts in found.items()
                      if known.get(path) != facts and path not in self.pending
                      and (unseen_before is None or not unseen_before <= facts[1] <= now + 1)]
            linked = self.symlinks.linked()
            unseen = [path for path in queued if unseen_before is not None and utf8_name(path)
                      and path not in self.failed and path not in linked]
            queued += [path for path in known if path not in found and path not in self.pending]
            files: dict[str, set[str]] = {name: set() for name in self.stats}
            memory: list[tuple[Source, str]] = []
            waiting = set(queued)
            for path in found:
                matched = self.match(path)
                if matched:
                    files.setdefault(matched[0].name, set()).add(path)
                    if matched[0].kind == "memory" and path in indexed and path not in waiting:
                        memory.append((matched[0], path))
            queued += [path for path in await self.off_loop(self._moved_projects, memory, indexed)
                       if path not in self.pending]
            self.files = files
            for name, paths in files.items():
                if name in self.stats:
                    self.stats[name].files = len(paths)
            if self.initial.finished is None:
                self.initial.watched = len(found)
            self.enqueue(queued)
            return len(queued), unseen
        finally:
            self.scanning = False
            self.scans[1] += 1

    async def scanned(self, started: int, timeout_s: float) -> None:
        """Wait (up to ``timeout_s``) until a full scan begun after the first ``started`` has
        finished: the sources as they are now have their files counted (`memory sources
        add` says how many files a new source has, not 0 before it was looked at)."""
        deadline = time.monotonic() + timeout_s
        while self.scans[1] <= started and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    def _scan_files(self) -> dict[str, tuple[int, float, int]]:
        said, self.scan_said = self.scan_said, set()
        found, self.symlinks = scan_files(self.sources, self.home, self.config.memory_dir,
                                          self._refuse_outside_link, self._scan_unread)
        for name, path in said - self.scan_said:  # readable again, or gone
            if name in self.stats:
                self.stats[name].gone(path)
        self._forget_problems_gone()
        return found

    def _scan_unread(self, source: Source, path: str, why: str) -> None:
        """What a scan could not read (an unreadable directory, a FIFO): its source's problem
        (the files of it the index holds are queued, and keep their entries: :meth:`process`)."""
        stats = self.stats.get(source.name)
        if stats is not None:
            stats.error(path, why)
            self.scan_said.add((source.name, shown_text(path)))

    async def watch(self) -> None:
        while True:
            self.restart_watch.clear()
            self.plan = watch_roots(self.sources, self.home)
            identity = watch_plan.roots_identity(self.plan)
            self.initial.begin()
            queued, _ = await self.full_scan()
            log.info("Watching %d roots; %d files queued for indexing.", len(self.roots), queued)
            self.link_watch = self.symlinks.watched(self.plan)
            watched, self.alone = watch_plan.around_links(
                [*self.plan, *self.link_watch], (link.path for link in self.symlinks.dirs))
            self.initial_scanned = True
            self._initial_done()
            stop = self.watch_stop = asyncio.Event()
            checker = self._beside(self._check_roots(stop, identity), stop)
            catch_up = self._beside(self._catch_up(stop), stop)
            rescans = self._beside(self._rescan_now_and_then(stop), stop)
            steady = self._beside(self._steady(stop), stop)
            try:
                watchers = [self._changes(roots, recursive, stop) for recursive in (True, False)
                            if (roots := [root for root, deep in watched if deep == recursive])]
                if watchers:
                    # the first to fail stops the other (``stop``, in finally)
                    await asyncio.gather(*watchers)
                else:
                    await stop.wait()
            except Exception as exc:  # whatever it is, it must not stop the watching for good
                # watchfiles fails on any event for a name that is not UTF-8 (in a group of
                # exceptions, from its task group), and cannot start past the system's limit
                # on inotify instances; the rescan on restart catches up
                await self._back_off(what_went_wrong(exc))
            finally:
                stop.set()
                checker.cancel()
                catch_up.cancel()
                rescans.cancel()
                steady.cancel()

    async def _back_off(self, cause: str) -> None:
        """The watcher failed: it starts again (with a full scan) after a wait that doubles
        with each failure in a row, from 1 s to ``watch.full_scan_interval_s`` (it restarted
        every second, with a full rescan each time, forever: ~18% of a core with 2,121 files),
        and `memory status` says so while it fails (``trouble``). A reload does not wait."""
        now = time.time()
        trouble = self.trouble
        count = 1 if trouble is None else trouble.count + 1
        delay = min(2.0 ** (count - 1), self.config.watch.full_scan_interval_s)
        self.trouble = WatchTrouble(now if trouble is None else trouble.since, count, cause,
                                    now + delay)
        log.warning("Watcher stopped (%s); restarting in %g s.", cause, delay)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.restart_watch.wait(), timeout=delay)

    async def _steady(self, stop: asyncio.Event) -> None:
        """A watcher running STEADY_S without failing: its earlier failures are over."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=STEADY_S)
            return
        if self.trouble is not None:
            log.info("Watcher running again since %d failures.", self.trouble.count)
            self.trouble = None

    def _beside(self, work: Coroutine[Any, Any, None], stop: asyncio.Event) -> asyncio.Task[None]:
        """A task beside the watchfiles loops, until ``stop``. If it fails, the log says so
        and the watching starts over: a root checker that died unobserved left the watcher
        on its roots for good (a directory created later was never watched)."""
        task = asyncio.create_task(work)

        def ended(task: asyncio.Task[None]) -> None:
            error = None if task.cancelled() else task.exception()
            if error is None:
                return
            if not isinstance(error, UnavailableError):  # else the daemon is stopping
                log.error("Watching: %s failed; watching again.",
                          getattr(work, "__qualname__", work), exc_info=error)
            stop.set()

        task.add_done_callback(ended)
        return task

    async def _changes(self, roots: list[Path], recursive: bool, stop: asyncio.Event) -> None:
        """The changes below ``roots`` (or in them alone), into the queue, until ``stop``."""
        async for changes in watchfiles.awatch(
                *roots, stop_event=stop, debounce=self.config.watch.debounce_ms,
                step=min(50, self.config.watch.debounce_ms), recursive=recursive,
                ignore_permission_denied=True, watch_filter=self.wanted):
            await self.on_changes({path for _, path in changes})

    async def _catch_up(self, stop: asyncio.Event) -> None:
        """Scan once more when the watcher is surely running: a file written between the
        first scan and the watcher's start is in neither (watchfiles says nothing when it is
        ready). Files queued already are not queued twice."""
        try:
            await asyncio.wait_for(stop.wait(), timeout=CATCH_UP_S)
        except TimeoutError:
            queued, _ = await self.full_scan()
            if queued:
                log.info("Caught up with %d files written while the watcher started.", queued)

    async def _rescan_now_and_then(self, stop: asyncio.Event) -> None:
        """Scan every ``watch.full_scan_interval_s`` for what the watcher did not report, while
        nothing is queued (a file waiting in the queue is reported). The OS gives the watcher a
        limited number of directories (Linux: fs.inotify.max_user_watches, shared with every
        other program of the user); past it the directories left over are not watched, and
        watchfiles says nothing. Their files changed, unseen until a restart."""
        interval = self.config.watch.full_scan_interval_s
        while await self._quiet_moment(stop, interval):
            _, unseen = await self.full_scan(unseen_before=time.time() - UNSEEN_AFTER_S)
            if self.symlinks.watched(self.plan) != self.link_watch:
                stop.set()  # symlinks made or changed: watch their targets' directories
                return
            if unseen:
                self.unseen = Unseen(time.time(), len(unseen), unseen[0])
                log.warning(
                    "The rescan found %d files changed that the watcher had not reported "
                    "(%s%s); they are indexed now. The system's limit on watched directories "
                    "may be reached (Linux: fs.inotify.max_user_watches), they are on a "
                    "network file system, or more changed at once than the system queues for "
                    "a watcher; until then, changes there wait for the next rescan (every "
                    "%g s).", len(unseen),
                    shown_text(unseen[0]), " and others" if len(unseen) > 1 else "", interval)
                stop.set()  # a new watcher asks again for every directory (the limit may be
                return      # raised, or other programs have given some back)

    async def _quiet_moment(self, stop: asyncio.Event, after: float) -> bool:
        """Wait ``after`` seconds, then for the first moment nothing is queued or being read (a
        busy session's appends leave gaps between their bursts); False once ``stop`` is set."""
        wait = after
        while True:
            try:
                await asyncio.wait_for(stop.wait(), timeout=wait)
                return False
            except TimeoutError:
                pass
            if not (self.pending or self.busy.locked() or self.scanning):
                return True
            wait = 1.0

    async def _check_roots(self, stop: asyncio.Event,
                           identity: list[tuple[str, bool, int, int]]) -> None:
        """Every ``watch.rescan_interval_s``: watch again when asked to, when the sources were
        made anew, or when a root came or went. A look that fails is logged (once until one
        succeeds again) and the next is made all the same."""
        failed = None
        while not stop.is_set():
            try:
                await asyncio.wait_for(self.restart_watch.wait(),
                                       timeout=self.config.watch.rescan_interval_s)
            except TimeoutError:
                pass
            try:
                again = self.restart_watch.is_set() or await self._follow_settings() or \
                    watch_plan.roots_identity(watch_roots(self.sources, self.home)) != identity
            except Exception as exc:
                if failed != str(exc):
                    log.exception("Checking the watched roots failed; trying again in %g s.",
                                  self.config.watch.rescan_interval_s)
                failed = str(exc)
                continue
            failed = None
            if again:
                stop.set()

    def wanted(self, change: watchfiles.Change, path: str) -> bool:
        return path in self.symlinks.files or relevant(self.sources, path, self.home) \
            or self.symlinks.below_target(path)

    async def on_changes(self, paths: set[str]) -> None:
        vanished: list[Path] = []
        # by the scan's names; a symlinked file whose target changed is queued too
        paths, queued = self.symlinks.as_scanned(paths)
        for path in paths:  # a target may be a watched file itself
            if self.match(path) is not None:
                queued.append(path)
            elif os.path.isdir(path):  # a directory moved in: its files raise no events
                files, links = await self.off_loop(files_below, path, self.match,
                                                   self.symlinks.followed)
                queued.extend(files)
                if links or os.path.dirname(path) in self.alone:  # a symlinked directory:
                    # the scan says whether it is followed; one made where directories are
                    # watched alone: its own watch
                    self.restart_watch.set()
            elif not os.path.exists(path):
                vanished.append(Path(path))
        if any(os.path.realpath(path) not in self.symlinks.files for path in queued
               if os.path.islink(path)):
            self.restart_watch.set()  # a new symlinked file: its target's directory watched
        if vanished:
            # a directory moved or deleted away, or (most often) a temporary renamed over its
            # file, an editor's or a pass's: one look-up for all (one each was a database
            # round trip per notebook a pass wrote)
            queued.extend(await self.db(self.indexer.paths_below, [str(p) for p in vanished]))
            if any(root == gone or gone in root.parents
                   for gone in vanished for root in self.roots) or \
                    self.symlinks.any_gone(vanished):
                self.restart_watch.set()  # a watched root or a symlinked directory went:
                # watch again when it is back
        self.enqueue(queued)

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


def _there(path: str) -> bool:
    """Whether something is at ``path`` (one memoryd may not look at counts: it is there)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return True
