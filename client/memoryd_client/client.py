"""``Client`` (blocking) and ``AsyncClient`` (asyncio): one method per daemon method.

    with Client() as memory:
        memory.remember("designer", "rejected-designs", "floating speech bubble", tags=["sticker"])
        hits = memory.search("speech bubble on a cat sticker", agent="designer")

Every call raises a :class:`memoryd_client.errors.MemorydError` subclass on failure;
``DaemonUnreachableError`` when nothing answers on the socket.
"""

from __future__ import annotations

import _socket  # socket.py builds four IntEnums and imports selectors: ~3 ms a `memory` run
import itertools
import os
TYPE_CHECKING = False  # typing and pathlib cost a `memory` process a few ms; it needs neither

from memoryd_client import wire
from memoryd_client.connect import connect, connect_async
from memoryd_client.errors import (
    BadFrameError,
    DaemonUnreachableError,
    MemorydError,
    error_from_wire,
)
from memoryd_client.paths import socket_origin, socket_text

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from typing import Any

DEFAULT_TIMEOUT_S = 30.0


def _drop_none(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _result(reply: dict[str, Any], request_id: int) -> Any:
    if reply.get("id") is None and isinstance(reply.get("error"), dict):
        raise error_from_wire(reply["error"])  # about the connection (refused), not a request
    if reply.get("id") != request_id:
        raise BadFrameError(f"reply id {reply.get('id')!r} does not match request {request_id}")
    if "error" in reply:
        raise error_from_wire(reply["error"])
    return reply.get("result")


def _unreachable(path: str, exc: OSError) -> DaemonUnreachableError:
    from memoryd_client.service_probe import start_hint  # names commands that work from here

    return DaemonUnreachableError(f"memoryd is not running on {path} ({exc.strerror or exc}; "
                                  f"{socket_origin(path)}); {start_hint()}")


class _Methods:
    """The daemon's methods, written once for both clients; ``call`` does the transport
    (in ``AsyncClient`` it is a coroutine function, so each method returns an awaitable)."""

    call: Callable[[str, dict[str, Any] | None], Any]

    def status(self, *, sources: bool = False) -> Any:
        """The daemon's state, including ingestion (queue, sources, errors); ``sources`` adds
        each source's entries in the index now (``indexed``)."""
        return self.call("status", {"sources": True} if sources else {})

    def remember(
        self,
        agent: str,
        category: str,
        text: str,
        *,
        kind: str | None = None,
        key: str | None = None,
        tags: list[str] | None = None,
        confidence: float | None = None,
        force: bool = False,
        cwd: str | None = None,
        project: str | None = None,
        session: str | None = None,
        writer: str | None = None,
        polarity: str | None = None,
        created: float | str | None = None,
    ) -> Any:
        """Store an entry in the agent's namespace (see the README for the dedupe rules).
        ``polarity`` ("negative" or "positive") makes a lesson a "don't" or a "do".
        ``created`` (epoch seconds or ISO date) dates imported history; the entry then says
        ``via: import``."""
        return self.call(
            "remember",
            _drop_none(
                {
                    "agent": agent,
                    "category": category,
                    "text": text,
                    "kind": kind,
                    "key": key,
                    "tags": tags,
                    "confidence": confidence,
                    "force": force,
                    "cwd": cwd,
                    "project": project,
                    "session": session,
                    "writer": writer,
                    "polarity": polarity,
                    "created": created,
                }
            ),
        )

    def remember_many(self, entries: list[dict[str, Any]]) -> Any:
        """Each entry is a map of remember's params; up to 1,000 per call, embedded in
        batches and made durable with one fsync per agent. Returns {"results": [...]}."""
        return self.call("remember_many", {"entries": entries})

    def search(self, query: str, **filters: Any) -> Any:
        """Filters: agent, agents, category, kind, tags, project, since, until, status,
        limit, min_score, match."""
        return self.call("search", _drop_none({"query": query, **filters}))

    def list_entries(self, **filters: Any) -> Any:
        """Entries without a query (wire method ``list``), newest first (``order="oldest"``
        for the other way). Filters as search's: agent, agents (default every agent), category,
        kind, tags, project, cwd, status, since, until; paging: limit (1-1,000, default 20),
        offset, cursor (the reply's ``next``). Returns {"entries", "total", "next"}."""
        return self.call("list", _drop_none(filters))

    def get(self, entry_id: str) -> Any:
        return self.call("get", {"id": entry_id})

    def forget(self, entry_id: str, *, agent: str | None = None, reason: str | None = None) -> Any:
        return self.call("forget", _drop_none({"id": entry_id, "agent": agent, "reason": reason}))

    def supersede(
        self, entry_id: str, text: str, *, agent: str | None = None, confidence: float | None = None
    ) -> Any:
        return self.call(
            "supersede",
            _drop_none({"id": entry_id, "text": text, "agent": agent, "confidence": confidence}),
        )

    def reload(self) -> Any:
        """Re-read the configuration (like SIGHUP)."""
        return self.call("reload", {})

    def sources(self, action: str = "list", **fields: Any) -> Any:
        """action "list"; "add" with name, path, kind, format, agent (or project_root);
        "remove" with name (a source, a built-in to disable, or a project root)."""
        return self.call("sources", _drop_none({"action": action, **fields}))

    def sessions(self, *, agent: str | None = None, project: str | None = None,
                 limit: int | None = None) -> Any:
        return self.call("sessions", _drop_none({"agent": agent, "project": project, "limit": limit}))

    def context(self, agent: str, *, cwd: str | None = None, prompt: str | None = None,
                budget: int | None = None, session: str | None = None) -> Any:
        """The memory block for an agent: {text, chars, budget, items}."""
        return self.call("context", _drop_none({"agent": agent, "cwd": cwd, "prompt": prompt,
                                                "budget": budget, "session": session}))

    def explain(self, session: str | None = None) -> Any:
        """What was injected into a session (the latest one by default), item by item."""
        return self.call("explain", _drop_none({"session": session}))

    def session(self, session_id: str) -> Any:
        return self.call("session", {"id": session_id})

    def file(self, action: str, agent: str, path: str | None = None, **fields: Any) -> Any:
        """The memory tools: action list, read, write (text), replace (old, new) or insert
        (line, text), confined to the agent's memory directory."""
        return self.call(f"file_{action}", _drop_none({"agent": agent, "path": path, **fields}))

    def extract(self, session: str, *, dry_run: bool = False) -> Any:
        """Extract lessons and facts from a finished session (dry_run: only report)."""
        return self.call("extract", {"session": session, "dry_run": dry_run})

    def history(
        self, entry_id: str | None = None, *, agent: str | None = None, key: str | None = None
    ) -> Any:
        return self.call("history", _drop_none({"id": entry_id, "agent": agent, "key": key}))

    def pass_list(self) -> Any:
        """Each maintenance pass: its schedule, last run and next run."""
        return self.call("pass_list")

    def pass_run(self, name: str, *, agent: str | None = None, project: str | None = None,
                 dry_run: bool = False) -> Any:
        """Run a pass now (notebooks, consolidate, promote, staleness, retain); the reply
        names the run: {"run": "r12", "counts": {…}, …}."""
        return self.call("pass_run", _drop_none({"name": name, "agent": agent,
                                                 "project": project, "dry_run": dry_run}))

    def pass_show(self, run_or_change: str | None = None) -> Any:
        """A run (r12) with every change, or one change (c345); default the newest run."""
        return self.call("pass_show", _drop_none({"id": run_or_change}))

    def undo(self, run_or_change: str) -> Any:
        """Take back a whole run (r12) or one change (c345), as a new run."""
        return self.call("undo", {"id": run_or_change})

    def promote_accept(self, change: str) -> Any:
        """Apply a promotion the promote pass proposed (c345)."""
        return self.call("promote_accept", {"id": change})

    def notebook_check(self, path: str | None = None, *, agent: str | None = None,
                       fix: bool = False) -> Any:
        """The notebook pass over one file (or every notebook): a preview, or with fix applied."""
        return self.call("notebook_check", _drop_none({"path": path, "agent": agent, "fix": fix}))


def _closed_by_peer(sock: _socket.socket) -> bool:
    """Whether a reused connection was closed by the daemon (its idle timeout) while unused:
    then nothing was sent on it, and a new connection is safe."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return sock.recv(1, _socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False  # open, nothing to read
    except OSError:
        return True
    finally:
        sock.settimeout(timeout)


class Client(_Methods):
    """Blocking client; one connection, reused across calls."""

    def __init__(self, path: str | os.PathLike[str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.path = os.fspath(path) if path is not None else socket_text()
        self.timeout_s = timeout_s
        self._sock: _socket.socket | None = None
        self._ids = itertools.count(1)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _connect(self) -> _socket.socket:
        if self._sock is not None and _closed_by_peer(self._sock):
            self.close()  # the daemon closed an idle connection: open a new one
        if self._sock is None:
            try:
                self._sock = connect(str(self.path), self.timeout_s)
            except OSError as exc:
                raise _unreachable(self.path, exc) from None
        return self._sock

    def _read_exact(self, sock: _socket.socket, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = sock.recv(n - len(chunks))
            if not chunk:
                raise DaemonUnreachableError(f"memoryd closed the connection on {self.path}")
            chunks += chunk
        return bytes(chunks)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        request_id = next(self._ids)
        frame = wire.pack({"id": request_id, "method": method, "params": params or {}})
        sock = self._connect()
        try:
            sock.sendall(frame)
            length = wire.frame_length(self._read_exact(sock, wire.HEADER.size))
            if length > wire.MAX_FRAME_BYTES:
                raise BadFrameError(f"reply of {length} bytes exceeds the frame limit")
            reply = wire.unpack(self._read_exact(sock, length))
        except TimeoutError:
            self.close()
            raise DaemonUnreachableError(
                f"memoryd did not answer {method!r} within {self.timeout_s:g} s on {self.path}"
            ) from None
        except MemorydError:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise _unreachable(self.path, exc) from None
        return _result(reply, request_id)


class AsyncClient(_Methods):
    """asyncio client; calls are serialised over one connection."""

    def __init__(self, path: str | os.PathLike[str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        import asyncio

        self.path = os.fspath(path) if path is not None else socket_text()
        self.timeout_s = timeout_s
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count(1)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        import asyncio

        async with self._lock:
            try:
                return await asyncio.wait_for(self._call(method, params), self.timeout_s)
            except TimeoutError:
                await self.close()
                raise DaemonUnreachableError(
                    f"memoryd did not answer {method!r} within {self.timeout_s:g} s on {self.path}"
                ) from None

    async def _call(self, method: str, params: dict[str, Any] | None) -> Any:
        import asyncio

        if self._streams is not None and (self._streams[0].at_eof()
                                          or self._streams[1].is_closing()):
            await self.close()  # the daemon closed an idle connection: open a new one
        if self._streams is None:
            try:
                self._streams = await connect_async(str(self.path))
            except OSError as exc:
                raise _unreachable(self.path, exc) from None
        reader, writer = self._streams
        request_id = next(self._ids)
        try:
            writer.write(wire.pack({"id": request_id, "method": method, "params": params or {}}))
            await writer.drain()
            length = wire.frame_length(await reader.readexactly(wire.HEADER.size))
            if length > wire.MAX_FRAME_BYTES:
                raise BadFrameError(f"reply of {length} bytes exceeds the frame limit")
            reply = wire.unpack(await reader.readexactly(length))
        except asyncio.IncompleteReadError:
            await self.close()
            raise DaemonUnreachableError(f"memoryd closed the connection on {self.path}") from None
        except OSError as exc:
            await self.close()
            raise _unreachable(self.path, exc) from None
        return _result(reply, request_id)
