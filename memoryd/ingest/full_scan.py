"""The full scan: every file of the sources looked at, for what no event told of.

:class:`FullScan` (mixed into :class:`~memoryd.ingest.watcher.Watcher`) walks the sources
(:func:`memoryd.ingest.scan_links.scan_files`) and compares what it finds with what the index
holds: a file new or changed, an indexed file gone, and a file the sources as they are now read
otherwise than they did when it was indexed (:meth:`FullScan._read_otherwise`: another source,
kind or agent, a memory file's project, a cap that refused it changed) are queued
(:mod:`memoryd.ingest.file_queue`).
It runs when the watching starts, once more when the watcher is surely running, and every
``watch.full_scan_interval_s`` (:mod:`memoryd.ingest.watch_loops`); a rescan while the watcher
runs also says which files the watcher should have reported. What it could not read is its
source's problem until a scan no longer finds it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memoryd_client.views import shown_text

from memoryd.ingest.file_read import indexed_stat, over_cap, refused_over_cap
from memoryd.ingest.indexer import Indexer
from memoryd.ingest.scan_links import ScanLinks, scan_files
from memoryd.ingest.source_stats import SourceStats
from memoryd.progress import InitialIndexing
from memoryd.settings import Config
from memoryd.sources import Source
from memoryd.store.files import KnownFile
from memoryd.text import utf8_name

T = TypeVar("T")


class FullScan:
    """The scans of every file of the sources (mixed into Watcher)."""

    config: Config
    indexer: Indexer
    db: Callable[..., Awaitable[Any]]
    home: Path
    sources: list[Source]
    stats: dict[str, SourceStats]
    files: dict[str, set[str]]
    pending: dict[str, None]
    failed: set[str]
    initial: InitialIndexing
    scanning: bool
    #: full scans started and finished (:meth:`scanned`)
    scans: list[int]
    scan_said: set[tuple[str, str]]
    symlinks: ScanLinks

    if TYPE_CHECKING:
        async def off_loop(self, fn: Callable[..., T], *args: Any) -> T: ...
        def enqueue(self, paths: list[str]) -> None: ...
        def match(self, path: str) -> tuple[Source, str] | None: ...
        def file_project(self, source: Source, path: str) -> str | None: ...
        def _refuse_outside_link(self, path: str) -> None: ...
        def _forget_problems_gone(self) -> None: ...

    async def full_scan(self, unseen_before: float | None = None) -> tuple[int, list[str]]:
        """Queue every matching file that is new or changed, every indexed file that is gone,
        and every file the sources read otherwise now than when it was indexed
        (:meth:`_read_otherwise`). Returns how many were queued, and, with ``unseen_before`` (a
        rescan while the watcher runs), those last changed before then, which the watcher
        should have reported: a file changed since is left to it (one dated in the future, by
        another machine's clock, is not). A link (its target's edit is no event beside it), a
        name that is not UTF-8, a file whose indexing failed and one read otherwise are no
        miss of the watcher's."""
        self.scanning = True
        self.scans[0] += 1
        try:
            rows = await self.db(self.indexer.known_files)
            known = {path: indexed_stat(row) for path, row in rows.items()}
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
            indexed: list[tuple[Source, str, KnownFile]] = []
            waiting = set(queued)
            for path in found:
                matched = self.match(path)
                if matched:
                    files.setdefault(matched[0].name, set()).add(path)
                    if path in rows and path not in waiting:
                        indexed.append((matched[0], matched[1], rows[path]))
            queued += [path for path in await self.off_loop(self._read_otherwise, indexed)
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

    def _read_otherwise(self, files: list[tuple[Source, str, KnownFile]]) -> list[str]:
        """The indexed files among ``files`` (each with the source that matches it now, the
        agent it gives, and the file's row) that the configuration as it is now reads otherwise
        than when they were indexed, though they did not change on disk:

        - another source, kind or agent: a source's ``agent`` renamed, a source added before
          the one that read it, a glob or kind changed (read again, a memory file's entries
          take their new agent, each keeping its id and history; a transcript is read on from
          where it was, its past turns keeping the agent they were indexed under, and one read
          as the other kind now is indexed anew: memoryd.ingest.indexer);
        - a memory file under another project than its entries were filed under: Claude Code's
          auto memory a memoryd before this one filed global, a project root given through a
          symlink or as a worktree (filed under the path given), a root whose project changed
          (:meth:`~memoryd.ingest.file_projects.FileProjects.file_project`; it may read
          transcripts: off the event loop);
        - a memory file refused over ``watch.max_file_bytes`` that the cap now lets in, or the
          other way round (a transcript's row keeps no project, nor a cap of its own).

        A comparison of what the scan has in hand: no file is read for it."""
        cap = self.config.watch.max_file_bytes
        changed = []
        for source, agent, row in files:
            origin = row.origin
            if (origin.source, origin.kind, origin.agent) != (source.name, source.kind, agent) \
                    or source.kind == "memory" and (
                        (row.error if refused_over_cap(row.error) else None)
                        != over_cap(int(row.size or 0), cap)
                        or origin.project != self.file_project(source, row.path)):
                changed.append(row.path)
        return changed

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
        (the files of it the index holds are queued, and keep their entries:
        memoryd.ingest.file_reads)."""
        stats = self.stats.get(source.name)
        if stats is not None:
            stats.error(path, why)
            self.scan_said.add((source.name, shown_text(path)))
