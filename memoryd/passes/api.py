"""The pass API: what a pass is given and what it yields (memoryd.passes.runner runs passes).

A pass is a generator over a :class:`PassContext` (its scope, the store, the runs' apply,
made from the daemon's :class:`PassParts`). Besides a plain slice point it may yield an
:class:`Offload` (work off the database thread) and a :class:`Collect` (the result of one
offloaded earlier). The passes import this module, and the runner imports the passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memoryd.ingest.file_read import memory_key, read_memory_file, stat_facts
from memoryd.ingest.indexer import Indexer
from memoryd.ingest.markdown import MemoryFile, is_pinned
from memoryd.passes.changes import Change, RunSummary, run_name
from memoryd.passes.file_care import NotWritten
from memoryd.passes.file_changes import is_gone, still_holds
from memoryd.passes.runs import UNWRITTEN, PassRuns
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry

if TYPE_CHECKING:
    from memoryd.settings import Config
    from memoryd.store.database import Store
    from memoryd.store.entries import Entries
    from memoryd.store.vectors import VectorIndex

T = TypeVar("T")

#: The count of the entries a run left out as they have no vector yet (being embedded, as
#: after a reindex): consolidation and promotion say so rather than "nothing to do".
NOT_EMBEDDED = "not_embedded"

#: A pass, or a step of one: a generator the runner drives. It yields None (a slice point), an
#: :class:`Offload` or a :class:`Collect` (their results are sent back into it), and returns
#: what it found.
Steps = Generator[Any, Any, T]


@dataclass(frozen=True)
class Offload:
    """Work a pass wants done off the database thread; its result is sent back (``wait``
    False: a handle is, at once, for a later :class:`Collect`)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    wait: bool = True


@dataclass(frozen=True)
class Collect:
    """The result of an ``Offload(wait=False)``, once it is done: sent back into the pass."""

    handle: asyncio.Future[Any]


def in_thread(fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """``fn(*args)`` on a thread of its own, as a future of the running loop. Not the loop's
    default executor: its threads are joined when the daemon exits, so a worker stuck in a
    system call (an open() of a FIFO kept it forever once) kept the daemon from stopping at
    all. This thread is a daemon thread: the process exits without it, and what it did not
    finish is settled at the next start like after a kill."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        try:
            result, error = fn(*args), None
        except Exception as exc:
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=contextvars.copy_context().run, args=(work,),
                     name="memoryd-pass-worker", daemon=True).start()
    return future


@dataclass(frozen=True)
class PassParts:
    """What the passes work with, and nothing more of the daemon: the database thread (every
    SQLite call runs there), the store and the write path over it (entries, ledgers), the
    settings (a reload replaces them) and the vector index (None until the model has loaded
    and the index is built)."""

    db: Callable[..., Awaitable[Any]]
    store: Store
    entries: Entries
    config: Callable[[], Config]
    index: Callable[[], VectorIndex | None]


class PassContext:
    """What a pass may see and do: its scope, the store, and its run's changes applied."""

    def __init__(self, parts: PassParts, runs: PassRuns, run: RunSummary, agent: str | None,
                 project: str | None, paths: set[str] | None,
                 extra: dict[str, Any] | None = None) -> None:
        self.parts = parts
        self.extra = extra or {}
        self.run = run
        self.agent = agent
        self.project = project
        self.paths = paths
        self.runs = runs
        self.store = parts.store
        self.entries = parts.entries
        self.config = parts.config()
        self.touched: list[Path] = []
        self.problems: list[dict[str, str]] = []
        #: how far the pass is, for the client that asked (``progress``)
        self.stage: dict[str, Any] = {}

    @property
    def run_name(self) -> str:
        return run_name(self.run.run)

    @property
    def dry_run(self) -> bool:
        return self.run.dry_run

    @property
    def index(self) -> VectorIndex | None:
        """The vector index, once the model has loaded and it is built."""
        return self.parts.index()

    def index_vectors(self, rowids: list[int], page: int = 100
                      ) -> Generator[None, None, dict[int, Any]]:
        """The vector index's vectors of those of ``rowids`` it holds, a page at a time with
        a slice point after each (rows scattered over the row file: 250 took ~10 ms)."""
        index = self.index
        found: dict[int, Any] = {}
        if index is None:
            return found
        for start in range(0, len(rowids), page):
            found.update(index.vectors_of(rowids[start:start + page]))
            yield
        return found

    def scope(self) -> EntryQuery:
        """The entries of the pass's agent and project (any, when not given)."""
        query = EntryQuery()
        if self.agent:
            query = query.agent(self.agent)
        if self.project:
            query = query.projects([self.project])
        return query

    def progress(self, phase: str, done: int, total: int) -> None:
        """Say how far the pass is (``done`` of ``total`` units of ``phase``): the client that
        ran it sees it while it runs, beside the run's counts so far."""
        self.stage = {"phase": phase, "done": done, "total": total}

    def count(self, key: str, n: int = 1) -> None:
        self.run.counts[key] = self.run.counts.get(key, 0) + n

    def report(self, target: str, problem: str, action: str = "report") -> None:
        """Something the pass cannot fix: listed by `memory pass show` (``unwritten``: a file
        it may not or cannot rewrite, also named by `memory status`)."""
        self.count("problems")
        self.runs.note(self.run, Change("problem", target, action, problem), "reported")

    def files_skipped(self, changes: list[Change], numbers: list[int], why: NotWritten) -> str:
        """A group of file changes not written, as a file of it may not or cannot be
        rewritten: settled (nothing written, the entries back), counted and reported; the pass
        goes on with the other files."""
        self.runs.settle(group=numbers[0], state="skipped")
        self.report(why.path, f"not written: {why.why}", action=UNWRITTEN)
        return self.files_done(changes, "skipped")

    def note(self, change: Change, state: str) -> None:
        self.count(state)
        self.runs.note(self.run, change, state)

    def apply(self, change: Change) -> str:
        state = self.runs.apply(self.run, change)
        self.count(state)
        return state

    def apply_entries(self, changes: list[Change]) -> int:
        """Entry changes that belong together, in one transaction (see PassRuns.apply_entries);
        how many were applied (0: an entry changed meanwhile, none was)."""
        if not changes:
            return 0
        done = self.runs.apply_entries(self.run, changes)
        if done:
            self.count("preview" if self.dry_run else "applied", done)
        else:
            self.count("conflict", len(changes))
        return done

    def apply_all(self, changes: list[Change]) -> str:
        """File changes that belong together: all applied or none (see PassRuns.apply_files)."""
        if not changes:
            return "skipped"
        return self.files_done(changes, self.runs.apply_files(self.run, changes))

    def hold(self, changes: list[Change]) -> None:
        """Before writing them: the watched files among ``changes`` are this pass's to index
        (:meth:`index_written`) until then (``Store.writing``: one pass runs at a time); the
        watcher leaves them alone (it would parse each again, and before the pass could index
        it)."""
        for change in changes:
            if change.kind == "file" and change.before is not None \
                    and self.store.files.is_memory(change.target):
                self.store.writing.add(change.target)

    @functools.cached_property
    def indexer(self) -> Indexer:
        return Indexer(self.store, self.entries)

    def index_written(self, change: Change, parsed: MemoryFile | None = None,
                      rowids: list[int] | None = None) -> None:
        """Index a held file as it is on disk now (written, or left as it was: a conflict),
        and hand it back to the watcher. ``parsed``: the pass's new text parsed, used when the
        file holds that text and the index held it as the pass read it; ``rowids``: the entries
        of its items as well, when only their lines moved. Otherwise the file is read and
        parsed in full, as the watcher would have."""
        if change.target not in self.store.writing:
            return
        self.store.writing.discard(change.target)
        path = Path(change.target)
        origin = self.store.files.origin(str(path))
        if origin is None:
            return  # no longer watched (its source removed)
        try:
            facts = stat_facts(path, origin.source, origin.kind, origin.agent, origin.project)
        except OSError:
            self.indexer.remove_file(str(path))
            return
        read = read_memory_file(facts, path.name, self.config.watch.max_file_bytes)
        pinned = is_pinned(read.relative)
        if parsed is None or read.text is None or read.notes or change.after is None \
                or change.before is None or read.text != change.after["text"] \
                or not self.indexer.indexed_as(facts, memory_key(change.before["text"], pinned)):
            self.indexer.apply_memory_file(read)
        elif rowids is not None:
            self.indexer.apply_known(facts, parsed, memory_key(read.text, pinned), rowids)
        else:
            self.indexer.apply_parsed(facts, parsed, memory_key(read.text, pinned))

    def release(self) -> None:
        """Index what a pass that ended early still held, as the watcher would have."""
        for path in list(self.store.writing):
            self.index_written(Change("file", path, "release", ""))

    def files_done(self, changes: list[Change], state: str) -> str:
        """Count a group of file changes that ended in ``state`` (and the files it wrote); of
        a group in conflict, note which files changed since and which were only held back
        with them (the count alone said "2 files changed" of a notebook edited and its
        archive left as it was)."""
        self.count(state, len(changes))
        if state == "applied":
            self.touched += [Path(c.target) for c in changes]
        if state == "conflict":
            for change in changes:
                (self.run.held if still_holds(change) else self.run.changed).append(
                    change.target)
                if is_gone(change):
                    self.run.gone.append(change.target)
        return state

    def entry_updates(self, path: str, updates: dict[tuple[str, int], dict[str, Any]],
                      rows: list[StoredEntry] | None = None
                      ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """The entries of ``path`` whose text changes with a file change — moved to an
        archive, a date rewritten — as (their fields after, their fields before), by id.
        ``updates``: by the item's (content hash, first line in the file as read); an entry is
        matched by both (two bullets of one text stay apart: each keeps its id), else by its
        hash alone (the index read the file before its lines moved). ``rows``: the file's
        entries, read beforehand (a big notebook's, a page a step: memoryd.passes.notebooks)."""
        after: dict[str, dict[str, Any]] = {}
        before: dict[str, dict[str, Any]] = {}
        if not updates:  # sections reordered, nothing moved or rewritten
            return after, before
        wanted = dict(updates)
        entries = rows if rows is not None else self.store.entries(EntryQuery().source(path),
                                                                   "id")
        matched: list[tuple[StoredEntry, dict[str, Any]]] = []
        for entry in entries:  # by text and line first
            fields = wanted.pop((entry.hash, entry.line_start), None)
            if fields is not None:
                matched.append((entry, fields))
        taken = {entry.uid for entry, _ in matched}
        for entry in entries:  # then by text alone
            if entry.uid in taken:
                continue
            key = next((k for k in wanted if k[0] == entry.hash), None)
            if key is not None:
                matched.append((entry, wanted.pop(key)))
        for entry, fields in matched:
            after[entry.uid] = fields
            before[entry.uid] = {k: getattr(entry, k) for k in fields}
        return after, before
