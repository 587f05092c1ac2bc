"""The daemon: startup, serving the Unix socket, shutdown.

Phases (as uvicorn's ``Server``): ``startup`` takes the single-instance lock, binds the socket
and opens the store; ``serve`` accepts connections until SIGTERM/SIGINT; ``shutdown`` stops
accepting, lets in-flight requests finish, then closes the store. The embedding model loads in
the background after the socket is up; requests that need a vector wait for it.

Threads: the event loop; one database thread (every SQLite call, so no locking is needed);
one embedding thread (onnxruntime releases the GIL).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from memoryd_client import wire
from memoryd_client.paths import MAX_SOCKET_PATH_BYTES

from memoryd import __version__
from memoryd.config import Config, add_source, load_config, remove_source
from memoryd.embed import Embedder, load_embedder
from memoryd.files import MemoryFiles
from memoryd.errors import (
    AlreadyRunningError,
    BadFrameError,
    BadParamsError,
    ForbiddenError,
    FrameTooLargeError,
    InternalError,
    MemorydError,
    StartupError,
    UnknownMethodError,
)
from memoryd.index import Indexer
from memoryd.ingest import Ingest
from memoryd.ledger import Ledger
from memoryd.memory import Memory
from memoryd.notify import sd_notify
from memoryd.params import Params
from memoryd.sessions import SessionMethods
from memoryd.store import ModelInfo, Store
from memoryd.text import content_hash
from memoryd.vectors import VectorIndex

log = logging.getLogger(__name__)
T = TypeVar("T")

BACKFILL_BATCH = 128
QUERY_CACHE_SIZE = 512
MAX_BATCH = 1000


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED / LOCAL_PEERCRED)."""
    if hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1]
    if sys.platform == "darwin":  # struct xucred { u_int version; uid_t uid; ... }
        local_peercred, sol_local = 0x001, 0
        creds = sock.getsockopt(sol_local, local_peercred, struct.calcsize("2I"))
        return struct.unpack("2I", creds[: struct.calcsize("2I")])[1]
    return None


class Daemon:
    def __init__(self, config: Config, embedder: Embedder | None = None) -> None:
        """``embedder``: an already loaded model to use instead of loading one (tests share
        one across daemons)."""
        self.config = config
        self.preloaded = embedder
        self.started = time.time()
        self.should_exit = asyncio.Event()
        self.db_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-db")
        self.embed_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-embed")
        self.store: Store | None = None
        self.memory: Memory | None = None
        self.ingest: Ingest | None = None
        self.sessions: SessionMethods | None = None
        self.embedder: Embedder | None = None
        self.model_ready: asyncio.Future[None] | None = None
        self.degraded_reason: str | None = None
        self.backfill_wanted = asyncio.Event()
        self.server: asyncio.base_events.Server | None = None
        self.lock_fd: int | None = None
        self.requests_in_flight = 0
        self.idle = asyncio.Event()
        self.bound = False
        self.background: list[asyncio.Task[Any]] = []
        self.query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.methods: dict[str, Callable[[Params], Awaitable[Any]]] = {
            "status": self.m_status,
            "remember": self.m_remember,
            "remember_many": self.m_remember_many,
            "search": self.m_search,
            "get": self.m_get,
            "forget": self.m_forget,
            "supersede": self.m_supersede,
            "history": self.m_history,
            "reload": self.m_reload,
            "sources": self.m_sources,
            "file_list": self.m_file,
            "file_read": self.m_file,
            "file_write": self.m_file,
            "file_replace": self.m_file,
            "file_insert": self.m_file,
        }

    # -- threads ----------------------------------------------------------------------

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.db_thread, fn, *args)

    async def embed(self, texts: list[str]) -> np.ndarray | None:
        if self.model_ready is not None:
            await asyncio.shield(self.model_ready)
        if self.embedder is None:
            return None
        return await asyncio.get_running_loop().run_in_executor(
            self.embed_thread, self.embedder.embed, texts
        )

    async def vectors_for(self, texts: list[str]) -> list[np.ndarray | None]:
        """Vectors of entry texts: cached by content hash where known, the rest embedded in
        one batch."""
        assert self.store is not None
        store = self.store

        def cached() -> list[np.ndarray | None]:
            return [store.vector_for_hash(content_hash(t)) for t in texts]

        vectors = await self.db(cached)
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            embedded = await self.embed([texts[i] for i in missing])
            if embedded is not None:
                for row, i in enumerate(missing):
                    vectors[i] = embedded[row]
        return vectors

    async def vector_for(self, text: str, *, query: bool = False) -> np.ndarray | None:
        """The text's vector: from the query cache or the content-hash cache, else embedded."""
        if query and text in self.query_cache:
            self.query_cache.move_to_end(text)
            return self.query_cache[text]
        vector = None
        if not query:
            assert self.store is not None
            vector = await self.db(self.store.vector_for_hash, content_hash(text))
        if vector is None:
            embedded = await self.embed([text])
            vector = embedded[0] if embedded is not None else None
        if query and vector is not None:
            self.query_cache[text] = vector
            if len(self.query_cache) > QUERY_CACHE_SIZE:
                self.query_cache.popitem(last=False)
        return vector

    # -- lifecycle --------------------------------------------------------------------

    def _take_lock(self) -> None:
        self.config.state_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
        fd = os.open(self.config.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise AlreadyRunningError(
                f"another memoryd (pid {holder}) is already serving {self.config.socket_path}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.lock_fd = fd

    def _bind(self) -> socket.socket:
        path = self.config.socket_path
        if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
            raise StartupError(
                f"socket path {path} is longer than {MAX_SOCKET_PATH_BYTES} bytes; "
                "set MEMORYD_SOCKET to a shorter path"
            )
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        os.chmod(path.parent, 0o700)
        if path.exists() or path.is_symlink():
            log.info("Replacing stale socket %s.", path)
            path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        sock.listen(128)
        sock.setblocking(False)
        self.bound = True
        return sock

    async def startup(self) -> None:
        self._take_lock()
        listener = self._bind()
        self.store = await self.db(Store, self.config.db_path)
        self.memory = Memory(self.config, self.store, Ledger(self.config.ledger_dir))
        replayed = await self.db(self.memory.replay_ledgers)
        if replayed:
            log.info("Replayed %d ledger records the database had missed.", replayed)
        self.model_ready = asyncio.get_running_loop().create_future()
        self.sessions = SessionMethods(self)
        self.methods.update(self.sessions.methods())
        self.server = await asyncio.start_unix_server(self.handle, sock=listener)
        self.background.append(asyncio.create_task(self.load_model()))
        self.ingest = Ingest(self.config, Indexer(self.store, self.memory), self.db,
                             self.backfill_wanted.set)
        self.ingest.start()
        self.background.append(asyncio.create_task(self.sessions.replay_spool()))
        log.info("memoryd %s serving on %s (pid %d).", __version__, self.config.socket_path, os.getpid())
        sd_notify("READY=1", f"STATUS=serving on {self.config.socket_path}")

    async def load_model(self) -> None:
        assert self.store is not None and self.memory is not None and self.model_ready is not None
        loop = asyncio.get_running_loop()
        if self.preloaded is not None:
            embedder, reason = self.preloaded, None
        else:
            embedder, reason = await loop.run_in_executor(
                self.embed_thread, load_embedder, self.config.embed)
        self.embedder, self.degraded_reason = embedder, reason
        self.model_ready.set_result(None)
        if embedder is None:
            return
        log.info("Embedding model %s loaded (%d dims).", embedder.model_id, embedder.dim)
        await self.db(self.store.bind_model, ModelInfo(embedder.model_id, embedder.sha256, embedder.dim))
        await self.db(self._build_index, embedder.dim)
        self.background.append(asyncio.create_task(self.backfill()))
        self.backfill_wanted.set()

    def _build_index(self, dim: int) -> None:
        assert self.store is not None and self.memory is not None
        index = VectorIndex(dim)
        meta = self.store.vector_meta(None)
        for rowids, matrix in self.store.iter_vectors():
            index.add(rowids, matrix, [meta[int(r)] for r in rowids])
        self.memory.index = index
        log.info("Vector index ready: %d vectors, %.1f MB.", len(index), index.nbytes / 1e6)

    async def backfill(self) -> None:
        """Give a vector to every queued entry (new file entries, a reindex, a model change),
        in batches, reusing the vector of any entry with the same content hash."""
        while True:
            await self.backfill_wanted.wait()
            self.backfill_wanted.clear()
            while rows := await self.db(self._next_backfill):
                vectors = await self.embed([text for _, text in rows])
                if vectors is None:
                    return
                await self.db(self._store_backfill, [rowid for rowid, _ in rows], vectors)

    def _next_backfill(self) -> list[tuple[int, str]]:
        """The next rows that need embedding; rows whose text has a cached vector get it here."""
        assert self.store is not None
        while queued := self.store.rows_missing_vectors(BACKFILL_BATCH):
            cached: dict[int, np.ndarray] = {}
            todo: list[tuple[int, str]] = []
            for rowid, hash_, text in queued:
                vector = self.store.vector_for_hash(hash_)
                if vector is None:
                    todo.append((rowid, text))
                else:
                    cached[rowid] = vector
            if cached:
                self._store_backfill(list(cached), np.stack(list(cached.values())))
            if todo:
                return todo
        return []

    def _store_backfill(self, rowids: list[int], vectors: np.ndarray) -> None:
        assert self.store is not None and self.memory is not None
        with self.store.db:
            self.store.put_vectors(rowids, vectors)
        if self.memory.index is not None:
            meta = self.store.vector_meta(rowids)
            present = [i for i, r in enumerate(rowids) if r in meta]
            self.memory.index.add([rowids[i] for i in present], vectors[present],
                                  [meta[rowids[i]] for i in present])

    def reload_soon(self) -> None:
        """SIGHUP: reload the configuration; a bad one is logged and the old one kept."""

        async def reload() -> None:
            try:
                await self.m_reload(Params("reload", {}))
            except MemorydError as exc:
                log.error("Reload failed, keeping the running configuration: %s", exc.message)

        self.background.append(asyncio.create_task(reload()))

    async def serve(self) -> None:
        await self.should_exit.wait()

    async def shutdown(self) -> None:
        sd_notify("STOPPING=1")
        log.info("Shutting down: finishing %d in-flight requests.", self.requests_in_flight)
        if self.server is not None:
            self.server.close()
        if self.requests_in_flight:
            self.idle.clear()
            try:
                await asyncio.wait_for(self.idle.wait(), timeout=10)
            except TimeoutError:
                log.warning("Gave up waiting for %d requests.", self.requests_in_flight)
        if self.ingest is not None:
            await self.ingest.stop()
        for task in self.background:
            task.cancel()
        await asyncio.gather(*self.background, return_exceptions=True)
        if self.store is not None:
            await self.db(self.store.close)
        self.db_thread.shutdown(wait=True)
        self.embed_thread.shutdown(wait=True)
        if self.bound:
            try:
                self.config.socket_path.unlink()
            except FileNotFoundError:
                pass
        if self.lock_fd is not None:
            os.close(self.lock_fd)
        log.info("memoryd stopped.")

    # -- connections ------------------------------------------------------------------

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            uid = peer_uid(writer.get_extra_info("socket"))
            if uid is not None and uid != os.getuid():
                log.warning("Refused a connection from uid %d.", uid)
                await self._send(writer, None, error=ForbiddenError(
                    f"memoryd serves uid {os.getuid()} only; connection from uid {uid} refused"))
                # let the refusal arrive: closing with unread input would reset the connection
                writer.write_eof()
                try:
                    await asyncio.wait_for(reader.read(wire.MAX_FRAME_BYTES), timeout=1)
                except (TimeoutError, ConnectionError):
                    pass
                return
            while not reader.at_eof():
                try:
                    header = await reader.readexactly(wire.HEADER.size)
                except asyncio.IncompleteReadError:
                    return
                length = wire.frame_length(header)
                if length > wire.MAX_FRAME_BYTES:
                    await self._discard(reader, length)
                    await self._send(writer, None, error=FrameTooLargeError(
                        f"frame of {length} bytes exceeds the limit of {wire.MAX_FRAME_BYTES} bytes"))
                    continue
                body = await reader.readexactly(length)
                self.requests_in_flight += 1
                try:
                    await self._answer(writer, body)
                finally:
                    self.requests_in_flight -= 1
                    if not self.requests_in_flight:
                        self.idle.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _discard(self, reader: asyncio.StreamReader, length: int) -> None:
        while length > 0:
            chunk = await reader.read(min(length, 1 << 20))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", length)
            length -= len(chunk)

    async def _answer(self, writer: asyncio.StreamWriter, body: bytes) -> None:
        request_id = None
        try:
            request = wire.unpack(body)
            request_id = request.get("id")
            if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
                request_id = None
                raise BadFrameError("request needs an integer or string id")
            method = request.get("method")
            if not isinstance(method, str):
                raise BadFrameError("request needs a method name (a string)")
            handler = self.methods.get(method)
            if handler is None:
                raise UnknownMethodError(
                    f"unknown method {method!r}; known: {', '.join(sorted(self.methods))}")
            result = await handler(Params(method, request.get("params")))
        except MemorydError as exc:
            await self._send(writer, request_id, error=exc)
        except Exception as exc:
            log.exception("Internal error answering a request.")
            await self._send(writer, request_id, error=InternalError(f"{type(exc).__name__}: {exc}"))
        else:
            await self._send(writer, request_id, result=result)

    async def _send(self, writer: asyncio.StreamWriter, request_id: Any, *,
                    result: Any = None, error: MemorydError | None = None) -> None:
        message: dict[str, Any] = {"id": request_id}
        if error is not None:
            message["error"] = error.to_wire()
        else:
            message["result"] = result
        try:
            frame = wire.pack(message)
        except FrameTooLargeError as exc:
            frame = wire.pack({"id": request_id, "error": exc.to_wire()})
        writer.write(frame)
        await writer.drain()

    # -- methods ----------------------------------------------------------------------

    async def m_status(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        status = await self.db(self.memory.status)
        loading = self.model_ready is not None and not self.model_ready.done()
        rss = None
        try:
            rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started, 1),
            "socket": str(self.config.socket_path),
            "state_dir": str(self.config.state_dir),
            "degraded": None if self.embedder or loading else "keyword-only",
            "degraded_reason": self.degraded_reason,
            "model_loading": loading,
            "rss_bytes": rss,
            **status,
            "ingest": self.ingest.status() if self.ingest is not None else None,
        }

    async def m_remember(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        text = params.text("text", required=True, max_len=32_000)
        assert text is not None
        vector = await self.vector_for(text)
        return await self.db(self.memory.remember, params, vector)

    async def m_remember_many(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        items = params.raw.get("entries")
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
            raise BadParamsError(f"remember_many: entries must be a list of 1 to {MAX_BATCH} maps")
        requests = [Params("remember_many", item) for item in items]
        texts = [r.text("text", required=True, max_len=32_000) or "" for r in requests]
        vectors = await self.vectors_for(texts)
        return {"results": await self.db(self.memory.remember_many, requests, vectors)}

    async def m_search(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        query = params.text("query", required=True, max_len=10_000)
        assert query is not None
        embedding = asyncio.ensure_future(self.vector_for(query, query=True))
        try:
            plan = await self.db(self.memory.keyword_search, params)  # meanwhile: the embedding
        except BaseException:
            embedding.cancel()
            raise
        return await self.db(self.memory.finish_search, plan, await embedding)

    async def m_get(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        return await self.db(self.memory.get, params)

    async def m_forget(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        return await self.db(self.memory.forget, params)

    async def m_supersede(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        text = params.text("text", required=True, max_len=32_000)
        assert text is not None
        vector = await self.vector_for(text)
        return await self.db(self.memory.supersede, params, vector)

    async def m_history(self, params: Params) -> dict[str, Any]:
        assert self.memory is not None
        return await self.db(self.memory.history, params)

    async def m_reload(self, params: Params) -> dict[str, Any]:
        """Re-read the configuration: sources and settings (a new model needs a restart)."""
        config = load_config(self.config.config_file)
        if config.embed != self.config.embed:
            log.warning("The [embed] settings changed; they apply after a restart.")
        self.config = config
        assert self.memory is not None and self.ingest is not None
        self.memory.config = config
        await self.ingest.reload(config)
        log.info("Configuration reloaded: %d sources.", len(self.ingest.sources))
        return {"sources": len(self.ingest.sources)}

    async def m_sources(self, params: Params) -> dict[str, Any]:
        action = params.choice("action", ("list", "add", "remove"), default="list")
        if action == "add":
            data = {k: v for k, v in params.raw.items() if k != "action"}
            add_source(self.config, data)
            await self.m_reload(params)
        elif action == "remove":
            name = params.text("name", required=True, max_len=4096)
            assert name is not None
            done = remove_source(self.config, name)
            log.info("Sources: %s.", done)
            await self.m_reload(params)
        assert self.ingest is not None
        return {**self.ingest.status(), "sources_file": str(self.config.sources_file)}

    async def m_file(self, params: Params) -> dict[str, Any]:
        """The memory tools, confined to the agent's memory directory."""
        assert self.store is not None
        files = MemoryFiles(self.store, self.config.memory_dir)
        agent = params.agent()
        assert agent is not None
        if params.method == "file_list":
            return await self.db(files.list, agent)
        path = params.text("path", required=True, max_len=4096)
        assert path is not None
        if params.method == "file_read":
            return await self.db(files.read, agent, path)
        if params.method == "file_write":
            if "text" not in params.raw:
                raise BadParamsError("file_write: text is required (it may be empty)")
            text = params.text("text", default="", max_len=1_000_000) or ""
            result = await self.db(files.write, agent, path, text)
        elif params.method == "file_replace":
            old = params.text("old", required=True, max_len=1_000_000) or ""
            new = params.text("new", default="", max_len=1_000_000) or ""
            result = await self.db(files.replace, agent, path, old, new)
        else:
            line = params.integer("line", default=0, low=0, high=10_000_000)
            text = params.text("text", required=True, max_len=1_000_000) or ""
            result = await self.db(files.insert, agent, path, line, text)
        return result

async def run_daemon(config: Config, ready: Callable[[Daemon], None] | None = None,
                     embedder: Embedder | None = None) -> None:
    """Run until SIGTERM/SIGINT (or ``daemon.should_exit`` is set)."""
    daemon = Daemon(config, embedder)
    loop = asyncio.get_running_loop()
    in_main_thread = threading.current_thread() is threading.main_thread()
    try:
        await daemon.startup()
    except BaseException:
        await daemon.shutdown()
        raise
    if in_main_thread:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.should_exit.set)
        loop.add_signal_handler(signal.SIGHUP, daemon.reload_soon)
    if ready is not None:
        ready(daemon)
    try:
        await daemon.serve()
    finally:
        if in_main_thread:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)
        await daemon.shutdown()
