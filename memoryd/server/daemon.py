"""The daemon: startup, serving the Unix socket, shutdown.

Phases (as uvicorn's ``Server``): ``startup`` takes the single-instance lock, binds the socket
and builds the daemon's parts, the one place they are wired together (store, ledgers, model
loading, write path, search: :mod:`memoryd.server.parts`; then the session methods, the passes,
ingestion, sync); ``serve`` accepts connections until SIGTERM/SIGINT; ``shutdown`` stops
accepting, lets in-flight requests finish, then closes the parts. Each connection is served by
the :class:`~memoryd.server.dispatch.Dispatcher`, which hands each request to its wire method:
the daemon's own (status, reload, sources, below) and those of the groups startup registers.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd_client.wire import REVISION

from memoryd import __version__
from memoryd.background import Background
from memoryd.collector import collect_when_quiet, defer_full_collections, resume_full_collections
from memoryd.config import load_config, setting_warnings
from memoryd.embedding.model import Embedder
from memoryd.embedding.threads import EmbedThreads
from memoryd.errors import ConfigError, MemorydError, StartupError
from memoryd.ingest.file_projects import configured
from memoryd.ingest.indexer import Indexer
from memoryd.ingest.watcher import Watcher
from memoryd.passes.api import PassParts
from memoryd.passes.entry_files import FileEntryEdits
from memoryd.passes.runner import PassRunner
from memoryd.passes.scope import ScopeMoves
from memoryd.project import project_of
from memoryd.scheduling import Traffic
from memoryd.server.dispatch import Dispatcher, Handler
from memoryd.server.entry_methods import EntryMethods
from memoryd.server.health import Health
from memoryd.server.history_methods import HistoryMethods
from memoryd.server.installed import InstalledCode
from memoryd.server.limits import (
    LISTEN_BACKLOG,
    Acceptor,
    ConnectionLimits,
    raise_open_file_limit,
)
from memoryd.server.list_methods import ListMethods
from memoryd.server.memory_files import FileMethods
from memoryd.server.memory_methods import MemoryMethods
from memoryd.server.notify import monotonic_usec, ping_watchdog, sd_notify, watchdog_interval_s
from memoryd.server.ownership import CHECK_INTERVAL_S, Ownership, file_identity
from memoryd.server.params import Params
from memoryd.server.parts import Parts
from memoryd.server.pass_methods import PassMethods
from memoryd.server.refused import RefusedWrites
from memoryd.server.session_methods import SessionMethods
from memoryd.server.stopping import Connections
from memoryd.server.sync_methods import Sync
from memoryd.server.trust_methods import TrustMethods
from memoryd.sessions.history import HistoryImport
from memoryd.sessions.quiet import QuietExtraction
from memoryd.sessions.tool_guard import ToolGuard
from memoryd.settings import Config, Settings
from memoryd.sources import broad_watch
from memoryd.sources_file import add_source, remove_source
from memoryd.store.integrity import discard_unfinished
from memoryd.store.permissions import restrict_umask, tighten_state
from memoryd.store.thread import DatabaseThread

log = logging.getLogger(__name__)
#: How long a stop waits for requests in flight (a bulk write can take seconds); under the
#: service manager's stop timeout (TimeoutStopSec=30 in memoryd.service).
SHUTDOWN_WAIT_S = 15.0
#: Then a request still running gets the "stopping" answer at its next step; its current
#: database step (a slice of a bulk write takes seconds on a busy machine) may finish first.
CLOSING_WAIT_S = 6.0
#: How long `memory sources add` waits for the scan that counts the new source's files (a
#: home with many sources takes a moment; after it, the reply shows the files as they are).
ADDED_SCAN_S = 5.0


class Daemon:
    def __init__(self, config: Config, embedder: Embedder | None = None) -> None:
        """``embedder``: an already loaded model to use instead of loading one (tests share
        one across daemons)."""
        self.settings = Settings(config)
        #: the configuration it started with: what a reload cannot change is read from it
        self.started_with = config
        self.reloading = asyncio.Lock()
        self.embedder = embedder
        self.db = DatabaseThread()  # every SQLite call runs on it
        self.background = Background()  # cancelled when the daemon closes
        self.threads = EmbedThreads()  # where the model runs
        self.parts: Parts | None = None  # built by startup
        self.health: Health | None = None
        self.started = time.time()
        self.code = InstalledCode.of_packages()  # the code on disk now, the code it runs
        self.should_exit = asyncio.Event()
        self.ready = asyncio.Event()  # set once READY=1 is sent: startup done, handlers in place
        self.watcher: Watcher | None = None
        self.history: HistoryImport | None = None  # memory import-history
        self.sessions: SessionMethods | None = None
        self.server: Acceptor | None = None
        self.ownership = Ownership(config.lock_path, config.socket_path)
        self.limits = ConnectionLimits(config.server, raise_open_file_limit())
        self.passes: PassRunner | None = None
        self.sync: Sync | None = None
        self.traffic = Traffic(self.db)  # the requests background work gives way to
        self.locked = False  # both locks taken: this daemon serves (and must clean up)
        self.umask: int | None = None  # the umask before startup, given back at shutdown
        self.collecting = False  # full garbage collections deferred to quiet moments
        self.store_identity: tuple[int, int] | None = None  # the database file it opened
        self.lost_store: str | None = None  # why it stopped: its database file went away
        self.connections = Connections()
        self.methods: dict[str, Handler] = {
            "status": self.m_status,
            "reload": self.m_reload,
            "sources": self.m_sources,
        }
        #: serves the connections with these methods (the wire methods are added at startup)
        self.refused = RefusedWrites()  # the writes the disk refused lately
        self.dispatcher = Dispatcher(self.methods, self.limits, self.traffic, self.connections,
                                     self.should_exit, self.refused)

    @property
    def config(self) -> Config:
        return self.settings.config

    # -- lifecycle --------------------------------------------------------------------

    async def watch_files(self) -> None:
        """Every CHECK_INTERVAL_S: stop when the database file went away (``_store_gone``);
        re-create the socket (and the lock files) when they are deleted under us."""
        while True:
            await asyncio.sleep(CHECK_INTERVAL_S)
            if self.should_exit.is_set():
                return  # stopping: nothing to keep
            if self._store_gone():  # first: a deleted state dir is not re-created for its locks
                return
            listener = self.ownership.check(LISTEN_BACKLOG)
            if listener is not None:
                old, self.server = self.server, Acceptor(listener, self.dispatcher.handle)
                if old is not None:
                    old.close()

    def _store_gone(self) -> bool:
        """Stop when the database file was removed or replaced under the daemon (its state dir
        deleted to start afresh): what it acknowledged from then on would go with the
        deleted file."""
        if self.store_identity is None or file_identity(self.config.db_path) == self.store_identity:
            return False
        self.lost_store = (f"{self.config.db_path} was removed or replaced while memoryd ran; "
                           "stopped, so that nothing more is written to a file that is gone. "
                           "Start memoryd again for a new store, or put the directory back first")
        log.error("%s.", self.lost_store)
        self.should_exit.set()
        return True

    async def startup(self) -> None:
        self.umask = restrict_umask()  # files 0600, directories 0700, whatever the umask
        self.ownership.take_locks()
        self.locked = True
        # a reindex holds the state dir's lock too: its index being built is no reindex's now
        discard_unfinished(self.config.db_path)
        tighten_state(self.config.state_dir, self.config.private_files,
                      self.config.private_trees)
        listener = self.ownership.bind(LISTEN_BACKLOG)
        parts = self.parts = await Parts.open(self.settings, self.db, self.background,
                                              self.threads, self.embedder)
        self.store_identity = file_identity(self.config.db_path)
        if parts.replayed:
            log.info("Replayed %d ledger records the database had missed.", parts.replayed)
        spawn = self.background.spawn
        self.watcher = Watcher(self.config, Indexer(parts.store, parts.entries),
                             parts.db, parts.vectors.wanted.set, self.traffic.background)
        self.passes = PassRunner(PassParts(parts.db, parts.store, parts.entries,
                                           self.settings.current, parts.derived.vector_index),
                                 self.idle_since, self.traffic.background, self.traffic.pause,
                                 on_written=self.watcher.enqueue)
        settled = await self.passes.recover()
        if settled:
            log.info("Settled %d changes of a pass that was stopped mid-run.", settled)
        self.sessions = SessionMethods(parts, self.passes.runs)
        self.methods.update(self.sessions.methods())
        self.methods.update(ListMethods(parts.db, parts.store, self.settings.current).methods())
        self.methods.update(FileMethods(parts.db, parts.store, self.settings).methods())
        self.methods.update(MemoryMethods(parts, self.passes).methods())
        self.methods.update(PassMethods(self.passes).methods())
        self.methods.update(TrustMethods(parts).methods())
        self.sync = Sync(parts, self.traffic.background)
        self.methods.update(self.sync.methods())
        # forget and supersede: a file entry's edits its file, any other is the entries'
        edits = FileEntryEdits(self.passes, parts.writes.supersede, parts.vectors.wanted.set)
        self.methods.update(EntryMethods(edits, ScopeMoves(self.passes)).methods())
        self.history = HistoryImport(parts.db, parts.store, parts.background, self.settings,
                                     self.watcher, self.sessions.extractor, self.traffic)
        self.methods.update(HistoryMethods(self.history).methods())
        self.health = Health(self.settings, self.started, parts, self.watcher, self.passes,
                             self.sync, self.refused, self.code)
        self.methods.update(self.health.methods())
        self.server = Acceptor(listener, self.dispatcher.handle)
        self.watcher.start()
        spawn(self.history.resume())  # an import stopped mid-way goes on
        spawn(self.sessions.replay_spool())
        spawn(read_guard_ahead(self.sessions.guard, parts.loading.settled))
        spawn(self.sessions.usage.judge_quiet_sessions())
        spawn(QuietExtraction(self.sessions.extractor, parts.store.past_sessions, parts.db,
                              self.settings, self.traffic).run())
        spawn(self.passes.scheduler())
        spawn(self.sync.scheduler())
        spawn(self.watch_files())
        defer_full_collections()
        self.collecting = True
        spawn(collect_when_quiet(self.idle_since, self.in_flight,
                                 also=[lambda: parts.db(parts.store.refresh_statistics)]))
        log.info("memoryd %s serving on %s (pid %d).", __version__, self.config.socket_path,
                 os.getpid())
        for warning in [*self.config.unknown_environment, *setting_warnings(
                self.config, self.watcher.sources, await parts.db(parts.store.agents))]:
            log.warning("%s.", warning)

    def idle_since(self) -> float:
        """When the last request came (the passes and the collector wait for quiet); now,
        while one is being answered: a request slower than the quiet it waits for (a loaded
        machine, a big list) is not a quiet second, and a scheduled pass started under it."""
        dispatcher = self.dispatcher
        return time.time() if dispatcher.requests_in_flight else dispatcher.last_request

    def in_flight(self) -> int:
        return self.dispatcher.requests_in_flight

    def start_closing(self) -> None:
        """From now on requests get the "stopping" answer instead of new work."""
        self.db.closing = self.background.closing = True
        self.threads.start_closing()
        if self.parts is not None:  # a bulk write in a database step stops at its next entry
            self.parts.entries.stopping.set()

    async def close_parts(self) -> None:
        self.start_closing()  # a request still running gets "stopping", never a closed store
        await self.background.cancel_all()
        if self.parts is not None:
            await self.parts.close()
        self.db.shutdown()
        self.threads.shutdown()

    def notify_ready(self) -> None:
        """READY=1, sent by ``run_daemon`` only once the signal handlers are installed: from then
        on systemd may send SIGHUP (ExecReload) or SIGTERM at any moment."""
        sd_notify("READY=1", f"STATUS=serving on {self.config.socket_path}")
        self.ready.set()

    def reload_soon(self) -> None:
        """SIGHUP: reload the configuration; a bad one is logged and the old one kept. A SIGHUP
        during startup reloads once startup is done."""

        async def reload() -> None:
            await self.ready.wait()
            sd_notify("RELOADING=1", monotonic_usec())
            try:
                await self.m_reload(Params("reload", {}))
            except ConfigError:
                pass  # logged by m_reload
            except MemorydError as exc:
                log.error("Reload failed, keeping the running configuration: %s", exc.message)
            finally:
                if not self.should_exit.is_set():  # no READY=1 after STOPPING=1
                    self.notify_ready()

        self.background.spawn(reload())

    async def serve(self) -> None:
        await self.should_exit.wait()

    async def shutdown(self) -> None:
        if not self.locked:  # refused at startup (another daemon serves): nothing ran
            await self.close_parts()
            return
        sd_notify("STOPPING=1")
        if self.history is not None:  # it resumes at the next start; its followers are told
            await self.history.stop()
        dispatcher = self.dispatcher
        log.info("Shutting down: finishing %d in-flight requests.", dispatcher.requests_in_flight)
        if self.server is not None:
            self.server.close()
        self.connections.close_idle()
        if dispatcher.requests_in_flight:
            dispatcher.idle.clear()
            try:
                await asyncio.wait_for(dispatcher.idle.wait(), timeout=SHUTDOWN_WAIT_S)
            except TimeoutError:
                log.warning("Gave up waiting for %d requests.", dispatcher.requests_in_flight)
        if self.watcher is not None:
            await self.watcher.stop()
        if dispatcher.requests_in_flight:  # past the wait: they are answered "stopping" now
            self.start_closing()
            dispatcher.idle.clear()
            try:
                await asyncio.wait_for(dispatcher.idle.wait(), timeout=CLOSING_WAIT_S)
            except TimeoutError:
                pass
        await self.connections.close_all()
        await self.close_parts()
        self.ownership.release()
        if self.umask is not None:
            os.umask(self.umask)
        if self.collecting:
            resume_full_collections()
        log.info("memoryd stopped.")

    # -- methods ----------------------------------------------------------------------

    async def m_status(self, params: Params) -> dict[str, Any]:
        parts = self.parts
        assert parts is not None and self.health is not None
        status = await parts.status()
        threads, reason = parts.threads, parts.loading.reason
        rss = None
        try:
            rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
        behind = (status.get("lexicon") or {}).get("entries_behind") or 0
        filling = behind >= status["lexicon"]["shown_from"]
        status = {
            "version": __version__,
            "revision": REVISION,  # which code it runs (the version says nothing of that)
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started, 1),
            "socket": str(self.config.socket_path),
            "state_dir": str(self.config.state_dir),
            "degraded": None if threads.is_loading else "keyword-only" if not threads.embedder
            else "word index filling" if filling else None,
            "degraded_reason": reason if not threads.embedder else
            (f"the word index is being filled ({behind:,} entries to go): their hits are "
             "scored without word alignment meanwhile, by a model fitted for that (less sure)"
             if filling else None),
            "model_loading": threads.is_loading,
            "rss_bytes": rss,
            **status,
            **(await self.passes.status() if self.passes is not None else {}),
            "ingest": self.watcher.status() if self.watcher is not None else None,
            "history_import": self.history.status() if self.history is not None else None,
            **(await self.health.status_fields()),
            "sync": await asyncio.to_thread(self.sync.status) if self.sync is not None else None,
            "server": self.limits.status(),
        }
        if params.flag("sources") and status["ingest"] is not None:  # memory status --sources
            indexed = await parts.db(parts.store.count_indexed_by_source)
            for source in status["ingest"]["sources"]:
                source["indexed"] = indexed.get(source["name"], 0)
        return status

    async def m_reload(self, params: Params) -> dict[str, Any]:
        """Re-read the configuration: sources and settings (a new model, and the [server]
        limits, need a restart). All or nothing: everything is read and built (the sources
        too) before any part takes it; one refused is logged and changes nothing."""
        assert self.watcher is not None and self.sessions is not None and self.parts is not None
        async with self.reloading:  # one at a time: an older one never lands after a newer
            return await self._reload()

    async def _reload(self) -> dict[str, Any]:
        assert self.watcher is not None and self.sessions is not None and self.parts is not None
        agents = await self.db(self.parts.store.agents)
        try:
            config = load_config(self.config.config_file)
            sources, roots, projects = await asyncio.to_thread(configured, config)
        except ConfigError as exc:
            log.error("Reload refused, keeping the running configuration: %s", exc.message)
            raise ConfigError(f"{exc.message} (reload refused: the running configuration is "
                              "kept)") from None
        warnings = [f"the [{section}] settings changed; they are read at start: restart "
                    "memoryd for them" for section in ("embed", "server")
                    if getattr(config, section) != getattr(self.started_with, section)]
        warnings += setting_warnings(config, sources, agents)
        self.settings.config = config
        self.parts.reconfigure()
        self.sessions.contexts.shared_agents = config.context.shared_agents
        self.watcher.reload(config, sources, roots, projects)
        for warning in warnings:
            log.warning("Reload: %s.", warning)
        log.info("Configuration reloaded: %d sources.", len(self.watcher.sources))
        return {"sources": len(self.watcher.sources), "warnings": warnings}

    async def m_sources(self, params: Params) -> dict[str, Any]:
        action = params.choice("action", ("list", "add", "remove"), default="list")
        added: list[str] = []
        warnings: list[str] = []
        if action == "add":
            data = {k: v for k, v in params.raw.items() if k != "action"}
            assert self.watcher is not None
            before = {s.name for s in self.watcher.sources}
            add_source(self.config, data)
            started = self.watcher.scans[0]
            await self.m_reload(params)
            added = [s.name for s in self.watcher.sources if s.name not in before]
            warnings = [warning for source in self.watcher.sources if source.name in added
                        if (warning := broad_watch(source, self.watcher.home))]
            for warning in warnings:
                log.warning("%s.", warning)
            # a source that gave way to the new one (the nested CLAUDE.md of a repository's
            # root, when its subdirectory becomes a root): its files are read by the new one
            await self._hand_over(before - {s.name for s in self.watcher.sources})
            await self.watcher.scanned(started, ADDED_SCAN_S)
            read_by = await self.db(self._read_by_others, added)
            root = str(Path(str(data["project_root"])).expanduser().resolve()) \
                if "project_root" in data else None
            inside = await asyncio.to_thread(self._inside_repository, root) if root else None
        elif action == "remove":
            name = params.text("name", required=True, max_len=4096)
            assert name is not None and self.watcher is not None
            before = {s.name for s in self.watcher.sources}
            done = remove_source(self.config, name)
            log.info("Sources: %s.", done)
            await self.m_reload(params)
            stopped = sorted(before - {s.name for s in self.watcher.sources})
            await self._hand_over(set(stopped))  # a file another source matches stays
        assert self.watcher is not None
        reply = {**self.watcher.status(), "sources_file": str(self.config.sources_file)}
        if action == "add":
            reply |= {"added": added, "read_by": read_by, "warnings": warnings}
            if root is not None:
                reply["project_root"] = root
            if inside is not None:
                reply["inside"] = inside
        elif action == "remove":
            reply |= {"removed": done, "stopped": stopped}
        return reply

    async def _hand_over(self, gone: set[str]) -> None:
        """Sources removed, or replaced by a new one: their files leave the index under them,
        and those another source matches now are read again by it (their lines keep their ids
        and dates)."""
        assert self.watcher is not None
        for name in sorted(gone):
            paths = await self.db(self.watcher.indexer.paths_of_source, name)
            await self.db(self.watcher.indexer.drop_source, name)
            self.watcher.enqueue(paths)

    def _inside_repository(self, root: str) -> dict[str, Any] | None:
        """A project root added inside another project's repository (a subdirectory of a
        monorepo): its files belong to that project, and which watched root covers it."""
        assert self.watcher is not None
        project = project_of(root)
        if project is None or project == root:
            return None
        covering = sorted({r for name, r in self.watcher.project_roots.items()
                           if self.watcher.projects.get(name) == project and r != root})
        return {"root": root, "project": project, "watched_by": covering}

    def _read_by_others(self, names: list[str]) -> dict[str, dict[str, int]]:
        """(database thread) For each source just added: the files its pattern matches that
        another source reads already (a file is read by the first source that matches it),
        counted by that source."""
        assert self.watcher is not None
        home = self.watcher.home
        found: dict[str, dict[str, int]] = {}
        current = {s.name for s in self.watcher.sources}  # not one that gave way to it
        for source in (s for s in self.watcher.sources if s.name in names):
            files = self.watcher.indexer.store.files
            for path, owner in files.sources_below(str(source.root(home))):
                if owner != source.name and owner in current \
                        and source.match(Path(path), home) is not None:
                    counts = found.setdefault(source.name, {})
                    counts[owner] = counts.get(owner, 0) + 1
        return found


async def run_daemon(config: Config, ready: Callable[[Daemon], None] | None = None,
                     embedder: Embedder | None = None) -> None:
    """Run until SIGTERM/SIGINT (or ``daemon.should_exit`` is set)."""
    daemon = Daemon(config, embedder)
    loop = asyncio.get_running_loop()
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:  # SIGHUP's default action kills: handle it from the start
        loop.add_signal_handler(signal.SIGHUP, daemon.reload_soon)
    try:
        await daemon.startup()
    except OSError as exc:  # a read-only or full state dir: a startup failure, not a crash
        if in_main_thread:
            loop.remove_signal_handler(signal.SIGHUP)
        await daemon.shutdown()
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT):
            raise StartupError(f"cannot start: {exc.strerror}: {exc.filename or ''} (memoryd "
                               "needs its state directory writable)") from None
        raise
    except BaseException:
        if in_main_thread:
            loop.remove_signal_handler(signal.SIGHUP)
        await daemon.shutdown()
        raise
    if in_main_thread:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.should_exit.set)
    daemon.notify_ready()
    interval_s = watchdog_interval_s()
    watchdog = asyncio.create_task(ping_watchdog(interval_s)) if interval_s else None
    if ready is not None:
        ready(daemon)
    try:
        await daemon.serve()
    finally:
        if in_main_thread:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)
        await daemon.shutdown()
        if watchdog is not None:
            watchdog.cancel()
    if daemon.lost_store is not None:
        raise MemorydError(daemon.lost_store)


async def read_guard_ahead(guard: ToolGuard, index_settled: asyncio.Event) -> None:
    """The PreToolUse hook's lessons, read ahead once the vector index is built (a hook that
    comes first reads them itself)."""
    await index_settled.wait()
    await guard.refresh()
