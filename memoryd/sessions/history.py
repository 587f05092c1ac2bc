"""`memory import-history`: the session histories the user already has, indexed and extracted.

**What it reads.** The transcript sources of the configuration (memoryd.sources: every source of
kind ``transcript``, built in or added), so a harness gains import-history by gaining a source.
A harness is named by its source's format (``claude-code``, ``codex``, ``generic``, …) or by the
source's name; none named means all of them. ``since`` leaves out the files last written before
it and the sessions last active before it.

**What it does**, in the background of the daemon (a task of its own; the command follows it):

1. *Indexing.* Each file not indexed as it is now goes through the watcher's own path
   (memoryd.ingest.file_queue, :meth:`Watcher.index_now`): from its tail offset, under the
   worker's lock, its slices applied as background work that gives way to the requests someone
   waits on (memoryd.scheduling). The watcher and the import therefore never read a file twice:
   whichever comes first moves the offset, the other finds nothing new.
2. *Extraction* over the sessions of those files that are finished (ended, or quiet for
   ``outcomes.idle_s``) and not extracted yet, with session end's extractor and filters
   (memoryd.sessions.extractor), one session at a time, each after the interactive requests in
   flight. A session is marked extracted once read, also when it was too short to extract from.

**Resuming.** The import asked for is kept in the index (memoryd.store.past_sessions) until it
is done; the files' offsets and the sessions' extraction marks say how far it got. A daemon
killed mid-import takes it up again when it starts, and running the command again joins it or,
when it is over, finds the rest to do: nothing is indexed or extracted twice.

**Dry run.** Nothing is written: the files that would be indexed, and for each finished session
the entries extraction would keep (those of files not indexed yet are read from the file).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryd.background import Background
from memoryd.errors import BadParamsError, MemorydError, NotFoundError, UnavailableError
from memoryd.ingest.context import cwd_hint
from memoryd.ingest.document import transcript_lines
from memoryd.ingest.transcript import make_parser
from memoryd.ingest.watcher import Watcher
from memoryd.progress import Throughput
from memoryd.scheduling import Traffic
from memoryd.sessions.extractor import SessionExtractor
from memoryd.settings import Settings
from memoryd.sources import Source, scan
from memoryd.store.database import Store
from memoryd.store.past_sessions import PastSession
from memoryd.store.thread import DatabaseThread

log = logging.getLogger(__name__)
#: Files indexed between two looks at the progress (and two chances for the watcher's worker).
FILES_PER_STEP = 8
#: A dry run lists this many candidate entries at most (the counts cover them all).
MAX_LISTED = 2000


@dataclass(frozen=True)
class HistoryRequest:
    """What `memory import-history` asked: the harnesses (none: all), since when, and whether
    it only shows what it would do (``dry_run``) or returns once started (``detach``)."""

    harnesses: tuple[str, ...] = ()
    since: float | None = None
    dry_run: bool = False
    detach: bool = False

    def job(self) -> dict[str, Any]:
        """The checkpoint's record of it (memoryd.store.past_sessions)."""
        return {"harnesses": list(self.harnesses), "since": self.since, "asked": time.time()}

    def same_import(self, job: dict[str, Any]) -> bool:
        return sorted(job.get("harnesses") or []) == sorted(self.harnesses) \
            and job.get("since") == self.since


@dataclass(frozen=True)
class HistoryFile:
    """A transcript file import-history reads."""

    path: str
    source: str
    harness: str
    agent: str
    size: int
    mtime: float
    inode: int


#: Agents whose history memoryd does not read (docs/harnesses.md), by the names a user gives.
UNREAD_HISTORY = {"opencode": "OpenCode", "cursor": "Cursor"}


def harness_names(sources: Sequence[Source]) -> list[str]:
    """What a harness can be called: each transcript source's format, name and agent (``pi``,
    whose sessions are in the ``generic`` format)."""
    transcripts = [s for s in sources if s.kind == "transcript"]
    return sorted({s.format for s in transcripts} | {s.name for s in transcripts}
                  | {s.agent for s in transcripts if s.agent})


def selected_sources(sources: Sequence[Source], harnesses: Sequence[str]) -> list[Source]:
    """The transcript sources of these harnesses (all of them for none); an unknown name is
    an error that lists the known ones."""
    transcripts = [s for s in sources if s.kind == "transcript"]
    unknown = [h for h in harnesses if h not in harness_names(transcripts)]
    if unknown and unknown[0] in UNREAD_HISTORY:
        raise BadParamsError(f"import_history: {UNREAD_HISTORY[unknown[0]]}'s history is not "
                             "read: it keeps it in a SQLite database of its own, not in files "
                             "memoryd can follow (docs/harnesses.md); its memory files are "
                             "read, and its hooks and MCP tools work")
    if unknown:
        known = ", ".join(harness_names(transcripts)) or "none: no transcript source is configured"
        raise BadParamsError(f"import_history: no harness or transcript source named "
                             f"{unknown[0]!r} (known: {known})")
    if not harnesses:
        return transcripts
    return [s for s in transcripts
            if s.format in harnesses or s.name in harnesses or s.agent in harnesses]


def history_files(watcher: Watcher, sources: Sequence[Source],
                  since: float | None) -> list[HistoryFile]:
    """The files of ``sources`` the watcher would index (each under the source that owns it),
    last written at or after ``since``, oldest first (runs on a worker thread)."""
    wanted = {s.name for s in sources}
    found = []
    for source, path, agent in scan(sources, watcher.home):
        matched = watcher.match(str(path))
        if matched is None or matched[0].name != source.name or source.name not in wanted:
            continue  # another source's, or a link the watcher refuses
        try:
            stat = path.stat()
        except OSError:
            continue
        if since is not None and stat.st_mtime < since:
            continue
        found.append(HistoryFile(str(path), source.name, source.format, agent, stat.st_size,
                                 stat.st_mtime, stat.st_ino))
    found.sort(key=lambda f: (f.mtime, f.path))
    return found


def session_of_file(file: HistoryFile) -> dict[str, Any] | None:
    """A transcript's session as the watcher would register it, read from the file (a dry
    run's, for files not indexed yet); None when it names none."""
    parser = make_parser(file.harness, cwd=cwd_hint(file.harness, file.path), path=file.path)
    try:
        for line in transcript_lines(file.path, file.harness):
            parser.feed(line)
    except OSError:
        return None
    parser.flush()
    if not parser.session_id:
        return None
    return {"id": parser.session_id, "harness": parser.harness, "agent": file.agent,
            "cwd": parser.cwd, "started": parser.started, "last_seen": parser.last_seen,
            "closed": None, "transcript_path": file.path}


@dataclass
class HistoryProgress:
    """How far an import is (the event loop's): `memory status` and the command show it."""

    harnesses: list[str]
    since: float | None
    started: float = field(default_factory=time.time)
    phase: str = "scanning"  # scanning, indexing, extracting; then done, stopped or failed
    files_total: int = 0
    files_done: int = 0
    bytes_total: int = 0
    indexed: Throughput = field(default_factory=Throughput)  # bytes read this run
    sessions_total: int = 0
    extracted: Throughput = field(default_factory=Throughput)  # sessions read this run
    counts: dict[str, int] = field(default_factory=dict)
    indexing_ended: float | None = None
    finished: float | None = None
    error: str | None = None

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def eta_s(self) -> float | None:
        """The phase's time left at its recent pace (None before there is a pace)."""
        if self.phase == "indexing":
            return self.indexed.eta_s(max(self.bytes_total - self.indexed.done, 0))
        if self.phase == "extracting":
            return self.extracted.eta_s(max(self.sessions_total - self.extracted.done, 0))
        return None

    def frame(self) -> dict[str, Any]:
        """The phase's done/total (files, then sessions) for a progress frame."""
        if self.phase == "extracting" or (self.phase == "done" and self.sessions_total):
            return {"phase": "extracting sessions", "done": self.extracted.done,
                    "total": self.sessions_total}
        return {"phase": "indexing files", "done": self.files_done, "total": self.files_total}

    def snapshot(self) -> dict[str, Any]:
        return {"phase": self.phase, "harnesses": self.harnesses, "since": self.since,
                "started": self.started, "indexing_ended": self.indexing_ended,
                "finished": self.finished, "error": self.error,
                "files": {"done": self.files_done, "total": self.files_total},
                "bytes": {"done": self.indexed.done, "total": self.bytes_total},
                "sessions": {"done": self.extracted.done, "total": self.sessions_total},
                "counts": dict(self.counts), "eta_s": self.eta_s()}


class HistoryImport:
    """The one import of history the daemon runs at a time."""

    def __init__(self, db: DatabaseThread, store: Store, background: Background,
                 settings: Settings, watcher: Watcher, extractor: SessionExtractor,
                 traffic: Traffic) -> None:
        self.db = db
        self.background = background
        self.settings = settings
        self.watcher = watcher
        self.extractor = extractor
        self.traffic = traffic
        self.past = store.past_sessions
        self.task: asyncio.Task[None] | None = None
        self.job: dict[str, Any] | None = None
        self.progress: HistoryProgress | None = None  # the running import's, or the last one's

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    # -- lifecycle --------------------------------------------------------------------

    async def resume(self) -> None:
        """At startup: take up the import memoryd was running when it stopped."""
        job = await self.db(self.past.job)
        if job is None:
            return
        try:
            request = HistoryRequest(tuple(job.get("harnesses") or ()), job.get("since"))
            selected_sources(self.watcher.sources, request.harnesses)
        except (BadParamsError, TypeError) as exc:  # its sources are gone from the config
            log.warning("Not resuming the import of history: %s", exc)
            await self.db(self.past.end_job)
            return
        log.info("Resuming the import of history memoryd was running when it stopped.")
        self._launch(request, job)

    async def start(self, request: HistoryRequest) -> None:
        """Start the import asked for, or join the same one running; another one running is
        refused (one at a time)."""
        selected_sources(self.watcher.sources, request.harnesses)  # an unknown harness: refused
        if self.running:
            assert self.job is not None
            if request.same_import(self.job):
                return
            raise UnavailableError(
                "import_history: an import of history is running already (harnesses "
                f"{', '.join(self.job.get('harnesses') or []) or 'all'}); `memory status` shows "
                "it. Run this one once it is done")
        job = request.job()
        await self.db(self.past.begin_job, job)
        self._launch(request, job)

    def _launch(self, request: HistoryRequest, job: dict[str, Any]) -> None:
        self.job = job
        self.progress = HistoryProgress(list(request.harnesses), request.since)
        self.task = self.background.spawn(self._run(request, self.progress))

    async def stop(self) -> None:
        """memoryd stops: the import stops where it is (and resumes at the next start)."""
        if self.running:
            assert self.task is not None
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def follow(self, report: Callable[[HistoryProgress], None]) -> dict[str, Any]:
        """Wait for the running import, ``report``-ing its progress; its summary."""
        task, progress = self.task, self.progress
        assert task is not None and progress is not None
        while not task.done():
            report(progress)
            await asyncio.wait({task}, timeout=0.25)
        report(progress)
        if progress.phase == "stopped":
            raise UnavailableError("memoryd is stopping: the import of history stopped where "
                                   "it was; it goes on when memoryd starts again")
        if progress.phase == "failed":
            raise MemorydError(f"import_history failed: {progress.error}")
        return progress.snapshot()

    def status(self) -> dict[str, Any] | None:
        return self.progress.snapshot() if self.progress is not None else None

    # -- the import -------------------------------------------------------------------

    async def _run(self, request: HistoryRequest, progress: HistoryProgress) -> None:
        try:
            files = await self._plan(request)
            progress.files_total = len(files)
            await self._index(files, progress)
            sessions = await self._finished_sessions(files, request.since)
            progress.sessions_total = len(sessions)
            progress.indexing_ended = time.time()
            progress.phase = "extracting"
            for session in sessions:
                await self._extract(session, progress)
            await self.db(self.past.end_job)
            progress.phase = "done"
            log.info("Imported history: %d files, %d sessions extracted (%s).", len(files),
                     len(sessions), ", ".join(f"{k} {v}" for k, v in
                                              sorted(progress.counts.items())) or "nothing new")
        except asyncio.CancelledError:
            progress.phase = "stopped"
            raise
        except MemorydError as exc:
            stopped = self.db.closing  # the daemon's "stopping": not a failure
            progress.phase, progress.error = "stopped" if stopped else "failed", exc.message
        except Exception as exc:
            log.exception("The import of history failed.")
            progress.phase, progress.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            progress.finished = time.time()

    async def _plan(self, request: HistoryRequest) -> list[HistoryFile]:
        sources = selected_sources(self.watcher.sources, request.harnesses)
        return await asyncio.to_thread(history_files, self.watcher, sources, request.since)

    async def _index(self, files: list[HistoryFile], progress: HistoryProgress) -> None:
        """Every file not indexed as it is now, through the watcher's path."""
        known = await self.db(self.watcher.indexer.known_paths)
        todo = [f for f in files if known.get(f.path) != (f.size, f.mtime, f.inode)]
        progress.files_done = len(files) - len(todo)
        progress.count("files already indexed", progress.files_done)
        progress.bytes_total = sum(f.size for f in todo)
        progress.phase = "indexing"
        for start in range(0, len(todo), FILES_PER_STEP):
            step = todo[start:start + FILES_PER_STEP]
            added = await self.watcher.index_now([f.path for f in step])
            progress.files_done += len(step)
            progress.indexed.advance(sum(f.size for f in step))
            progress.count("turns indexed", added)

    async def _finished_sessions(self, files: list[HistoryFile],
                                 since: float | None) -> list[PastSession]:
        """The sessions of ``files`` not extracted yet that are over, active since ``since``."""
        mtimes = {f.path: f.mtime for f in files}
        quiet = time.time() - self.settings.config.outcomes.idle_s
        return [s for s in await self.db(self.past.not_extracted)
                if s.path in mtimes and _finished(s, mtimes[s.path], quiet)
                and (since is None or _active(s, mtimes[s.path]) >= since)]

    async def _extract(self, session: PastSession, progress: HistoryProgress) -> None:
        await self.traffic.give_way()
        try:
            result = await self.extractor.extract(session.as_dict(), dry_run=False)
        except NotFoundError:  # its transcript went meanwhile
            progress.count("sessions unreadable")
        except MemorydError as exc:
            if self.db.closing:
                raise
            log.warning("Extraction of session %s failed: %s", session.id, exc.message)
            progress.count("sessions failed")  # not marked: the next import tries it again
            progress.extracted.advance(1)
            return
        else:
            if result.get("reason"):
                progress.count("sessions too short")
            progress.count("entries stored", len(result.get("stored") or []))
            progress.count("lessons seen again", len(result.get("seen_again") or []))
        await self.db(self.extractor.mark_extracted, session.id, time.time())
        progress.extracted.advance(1)

    # -- dry run ----------------------------------------------------------------------

    async def preview(self, request: HistoryRequest,
                      report: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """What the import would do, writing nothing: the files to index and the entries
        extraction would keep from each finished session."""
        files = await self._plan(request)
        known = await self.db(self.watcher.indexer.known_paths)
        todo = [f for f in files if known.get(f.path) != (f.size, f.mtime, f.inode)]
        by_harness: dict[str, dict[str, int]] = {}
        for file in files:
            row = by_harness.setdefault(file.harness, {"files": 0, "to_index": 0, "bytes": 0})
            row["files"] += 1
        for file in todo:
            by_harness[file.harness]["to_index"] += 1
            by_harness[file.harness]["bytes"] += file.size
        sessions: list[dict[str, Any]] = [
            s.as_dict() for s in await self._finished_sessions(files, request.since)]
        unindexed = {f.path for f in todo}
        quiet = time.time() - self.settings.config.outcomes.idle_s
        known_ids = {s["id"] for s in sessions}
        for file in todo:  # not in the registry as it is now: read from the file
            found = await asyncio.to_thread(session_of_file, file)
            if found is None or found["id"] in known_ids:
                continue
            found_session = PastSession(found["id"], found["harness"], found["agent"],
                                        found["cwd"], found["started"], found["last_seen"],
                                        None, file.path)
            if _finished(found_session, file.mtime, quiet) and (
                    request.since is None or _active(found_session, file.mtime) >= request.since):
                sessions.append(found)
                known_ids.add(found["id"])
        listed: list[dict[str, Any]] = []
        counts = {"sessions": len(sessions), "candidates": 0, "too short": 0, "unreadable": 0}
        for number, session in enumerate(sessions):
            report({"phase": "reading sessions", "done": number, "total": len(sessions)})
            await self.traffic.give_way()
            try:
                result = await self.extractor.extract(session, dry_run=True)
            except NotFoundError:
                counts["unreadable"] += 1
                continue
            if result.get("reason"):
                counts["too short"] += 1
                continue
            kept = [{k: entry.get(k) for k in ("kind", "category", "key", "polarity", "text")}
                    for message in result["report"] for entry in message["entries"]
                    if entry["accepted"]]
            counts["candidates"] += len(kept)
            if kept and sum(len(s["candidates"]) for s in listed) < MAX_LISTED:
                listed.append({"id": session["id"], "agent": session["agent"],
                               "harness": session["harness"],
                               "path": session["transcript_path"],
                               "last_seen": session.get("last_seen"),
                               "messages": result["messages"], "candidates": kept,
                               "indexed": session["transcript_path"] not in unindexed})
        return {"dry_run": True, "harnesses": list(request.harnesses), "since": request.since,
                "files": {"total": len(files), "to_index": len(todo),
                          "bytes_to_index": sum(f.size for f in todo)},
                "by_harness": by_harness, "sessions": listed, "counts": counts}


def _active(session: PastSession, mtime: float) -> float:
    """When a session was last active: its last turn's time, else its file's."""
    return session.last_seen if session.last_seen is not None else mtime


def _finished(session: PastSession, mtime: float, quiet_since: float) -> bool:
    return session.closed is not None or _active(session, mtime) < quiet_since
