"""The reading of the queued files: which source each is of, read and applied, or gone.

:class:`FileReads` (mixed into :class:`~memoryd.ingest.watcher.Watcher`) takes a batch of
paths from the queue (:mod:`memoryd.ingest.file_queue`): a memory file is read and parsed on the
ingest thread and applied on the database thread in slices (:mod:`memoryd.ingest.indexer`), a
transcript is read from where it was last read (:mod:`memoryd.ingest.transcript_files`), a file
gone takes its entries with it. A file there that cannot be read, a name that is not UTF-8 or a
symlink leading outside its source's directory is its source's problem (its
:class:`~memoryd.ingest.source_stats.SourceStats`), and keeps what the index holds of it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memoryd_client.views import shown_text

from memoryd import claude_projects
from memoryd.ingest import watch_plan
from memoryd.ingest.file_read import MemoryFileRead, read_memory_file, stat_facts
from memoryd.ingest.indexer import Changes, Indexer
from memoryd.ingest.scan_links import ScanLinks, leads_outside
from memoryd.ingest.source_stats import SourceStats, account
from memoryd.ingest.transcript_files import TranscriptFiles
from memoryd.regular_file import why_unread
from memoryd.settings import Config
from memoryd.sources import Source
from memoryd.text import utf8_name

log = logging.getLogger(__name__)

#: How long the database thread parses and applies read files before it lets other work in.
APPLY_SLICE_S = 0.005
T = TypeVar("T")


class FileReads:
    """Reads the queued files into the index, and keeps their sources' counts and problems
    (mixed into Watcher)."""

    config: Config
    indexer: Indexer
    db: Callable[..., Awaitable[Any]]
    background: Callable[..., Awaitable[Any]]
    home: Path
    sources: list[Source]
    projects: dict[str, str]
    stats: dict[str, SourceStats]
    files: dict[str, set[str]]
    transcripts: TranscriptFiles
    refused_names: set[str]
    symlinks: ScanLinks

    if TYPE_CHECKING:
        async def off_loop(self, fn: Callable[..., T], *args: Any) -> T: ...
        def file_project(self, source: Source, path: str) -> str | None: ...

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
                        result.error or "; ".join(result.notes + change.notes) or None)
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


def _there(path: str) -> bool:
    """Whether something is at ``path`` (one memoryd may not look at counts: it is there)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return True
