"""The watchfiles loops, what runs beside them, and their back-off when they keep failing.

Two watchfiles loops run: one over the roots whose sources' files lie below them, watched
recursively, and one over the directories watched alone (a root whose files lie in it, its
notebooks' ``archive/``, and the directories of symlinked files' targets; see
:func:`memoryd.sources.watch_roots`); the targets of the symlinked directories the scan
follows are recursive roots of the first (:mod:`memoryd.ingest.watch_plan`). Their changes go
into the queue (:mod:`memoryd.ingest.file_queue`). Beside them: the roots are re-checked every
``watch.rescan_interval_s``, so a directory created, or deleted and re-created, is picked up
(and an agent's settings that moved its files make the sources anew); every file is looked at
again every ``watch.full_scan_interval_s`` (:mod:`memoryd.ingest.full_scan`), for what the
watcher was never told of (past the system's limit on watched directories, on a network file
system). A watcher that fails is started again after a wait that doubles while it keeps
failing (:class:`WatchTrouble`, which `memory status` shows).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import watchfiles
from memoryd_client.views import shown_text

from memoryd.errors import UnavailableError, what_went_wrong
from memoryd.ingest import watch_plan
from memoryd.ingest.file_projects import configured
from memoryd.ingest.indexer import Indexer
from memoryd.ingest.scan_links import ScanLinks, files_below
from memoryd.ingest.source_stats import SourceStats
from memoryd.progress import InitialIndexing
from memoryd.settings import Config
from memoryd.sources import Source, relevant, watch_roots

log = logging.getLogger(__name__)

#: When the scan that catches up with the watcher's start runs.
CATCH_UP_S = 1.0
#: A file changed this long before a rescan, and not reported, was missed by the watcher.
UNSEEN_AFTER_S = 5.0
#: A watcher that ran this long without failing is well again: its failures count afresh.
STEADY_S = 60.0
T = TypeVar("T")


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


class WatchLoops:
    """Watches the sources' roots, and starts the watching over when they change or it fails
    (mixed into Watcher)."""

    config: Config
    indexer: Indexer
    db: Callable[..., Awaitable[Any]]
    home: Path
    sources: list[Source]
    project_roots: dict[str, str]
    projects: dict[str, str]
    stats: dict[str, SourceStats]
    files: dict[str, set[str]]
    pending: dict[str, None]
    busy: asyncio.Lock
    scanning: bool
    initial: InitialIndexing
    initial_scanned: bool
    restart_watch: asyncio.Event
    watch_stop: asyncio.Event
    unseen: Unseen | None
    symlinks: ScanLinks
    plan: list[tuple[Path, bool]]
    link_watch: list[tuple[Path, bool]]
    alone: set[str]
    trouble: WatchTrouble | None

    if TYPE_CHECKING:
        async def off_loop(self, fn: Callable[..., T], *args: Any) -> T: ...
        def _use(self, sources: list[Source], roots: dict[str, str],
                 projects: dict[str, str]) -> None: ...
        async def full_scan(self, unseen_before: float | None = None
                            ) -> tuple[int, list[str]]: ...
        def enqueue(self, paths: list[str]) -> None: ...
        def _initial_done(self) -> None: ...
        def match(self, path: str) -> tuple[Source, str] | None: ...

    @property
    def roots(self) -> list[Path]:
        """The roots watched now (not the links' targets' directories)."""
        return [root for root, _ in self.plan]

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
            # (memoryd.ingest.file_projects)
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
