"""``Client`` (blocking) and ``AsyncClient`` (asyncio): one method per daemon method (written
once for both in :mod:`memoryd_client.methods`); here, how each sends a request and reads its
reply: connections, frames, timeouts, progress.

    with Client() as memory:
        memory.remember("designer", "rejected-designs", "floating speech bubble", tags=["sticker"])
        hits = memory.search("speech bubble on a cat sticker", agent="designer")

Every call raises a :class:`memoryd_client.errors.MemorydError` subclass on failure;
``DaemonUnreachableError`` when nothing answers on the socket ("not running" only when nothing
listens there; a connection that broke during a call says so, and that the request may have
been carried out).

Threads may share a ``Client``: its calls are serialised, each request and its reply exchanged
whole before the next call's (the MCP server gives each tool call a client of its own, which
``interrupt`` stops when the call is cancelled). An ``AsyncClient``'s calls are serialised
too, within its event loop.

The daemon binds each connection to one agent (see :mod:`memoryd_client.wire`). A client made
with ``agent=`` has one connection, bound to that agent: a write naming another agent is
refused. A client made without one is a person's or a program's own: it opens one connection
per agent it writes as, each bound to its agent, and splits a ``remember_many`` that spans
several agents: one request each, so one agent's part refused (raised) leaves the others'
stored (`memory import` sends one agent's entries per call). ``channel`` says who is calling
(``api`` by default).

Projects: ``remember`` stores an entry for the project (git repository) of the directory the
client was made in, as ``memory store`` does, so that "in this repo, run tests with make test"
is not injected in every other repository. ``Client(cwd=DIR)`` names another directory;
``Client(cwd=None)`` makes writes global unless a call says otherwise; per call, ``cwd=``,
``project=`` or ``is_global=True`` decide. ``remember_many`` takes each entry's own ``cwd`` or
``project`` (an import carries them) and adds none. Relative paths (``cwd``, ``project``) are
taken from the client's working directory, not the daemon's.

Requests that can take long (an import, a pass, a purge: ``wire.PROGRESS_METHODS``) ask the
daemon for progress frames: ``timeout_s`` is then how long the client waits for the next frame,
not for the whole call, so a long import goes on as long as the daemon works on it, and a
daemon that stops answering still times out. ``progress``, a callable, is given each frame
({"method", "what", "phase", "done", "total", "counts"}; all but the first two optional).
"""

from __future__ import annotations

import _socket  # socket.py builds four IntEnums and imports selectors: ~3 ms a `memory` run
import _thread  # threading.py is not needed for a lock
import errno
import os

from memoryd_client import wire
from memoryd_client.connect import connect, connect_async, holder
from memoryd_client.errors import (
    BadFrameError,
    BadParamsError,
    DaemonUnreachableError,
    MemorydError,
    error_from_wire,
)
from memoryd_client.methods import DaemonMethods, drop_none
from memoryd_client.paths import GIVEN, socket_origin

TYPE_CHECKING = False  # typing and pathlib cost a `memory` process a few ms; it needs neither
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable
    from typing import Any, Self, TypeVar

    T = TypeVar("T")

#: Params that name a directory of the caller's: a relative one is resolved here, where it
#: was meant (the daemon's working directory is not the caller's).
PATH_PARAMS = ("cwd", "project", "project_root")


def absolute(path: str) -> str:
    try:
        return os.path.abspath(os.path.expanduser(path))
    except FileNotFoundError:  # os.getcwd(): the working directory was removed
        raise BadParamsError(f"{path!r} is relative, and this process's working directory "
                             "no longer exists; give an absolute path") from None


def absolute_paths(method: str, params: dict[str, Any] | None) -> dict[str, Any] | None:
    """``params`` with each of PATH_PARAMS (and in ``remember_many``'s entries) absolute."""
    if not isinstance(params, dict):
        return params
    if method == "remember_many" and isinstance(params.get("entries"), list):
        return {**params, "entries": [absolute_paths("remember", entry)
                                      for entry in params["entries"]]}
    relative = [name for name in PATH_PARAMS if isinstance(params.get(name), str)
                and params[name] and not os.path.isabs(params[name])]
    return {**params, **{name: absolute(params[name]) for name in relative}} if relative \
        else params


def _result(reply: dict[str, Any], request_id: int) -> Any:
    if reply.get("id") is None and isinstance(reply.get("error"), dict):
        raise error_from_wire(reply["error"])  # about the connection (refused), not a request
    if reply.get("id") != request_id:
        raise BadFrameError(f"reply id {reply.get('id')!r} does not match request {request_id}")
    if "error" in reply:
        raise error_from_wire(reply["error"])
    return reply.get("result")


def _bind_refused(error: MemorydError, method: str) -> MemorydError:
    """The refusal of the bind the client sent for ``method`` (an agent's name that is not
    one), as ``method``'s: the caller asked for ``method``, not for a bind."""
    if not method or method == "bind" or not error.message.startswith("bind: "):
        return error
    return error_from_wire({"code": error.code,
                            "message": f"{method}: {error.message.removeprefix('bind: ')}",
                            "method": method, "param": getattr(error, "param", None),
                            "detail": getattr(error, "detail", None)})


def _silent(method: str, timeout_s: float, path: str) -> DaemonUnreachableError:
    """A request that timed out: one that changes something may still be carried out (the
    daemon works through what it was sent once it runs again), and the message says so:
    sent again without a look, an insert is made twice."""
    if method in wire.PROGRESS_METHODS:
        said = (f"memoryd sent nothing for {timeout_s:g} s while answering {method!r} (no "
                f"progress, no reply) on {path}: it is stopped, hung or overloaded")
    else:
        said = f"memoryd did not answer {method!r} within {timeout_s:g} s on {path}"
    if method in wire.READ_METHODS:
        return DaemonUnreachableError(said, sent=True)
    return DaemonUnreachableError(
        f"{said}; the request was sent and may still be carried out when memoryd gets to "
        "it: look whether it was before sending it again", sent=True)


def combined(parts: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """One view of the progress of a call sent as several requests (a remember_many of several
    agents, one request per agent's connection): their done and total added up."""
    frames = list(parts.values())
    view = dict(frames[-1])
    for field in ("done", "total"):
        values = [f.get(field) for f in frames]
        view[field] = sum(values) if all(isinstance(v, int) for v in values) else None
    return {k: v for k, v in view.items() if v is not None}


#: What a connect fails with when no daemon listens: no socket file, or nobody behind it.
NOT_LISTENING = (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTDIR)


#: Whose environment chose the socket, as a message says it, by the client's channel: an MCP
#: server has no shell, its environment is what the agent's registration gives it.
ENVIRONMENTS = {"mcp": "this MCP server"}
MCP_ENVIRONMENT = ("; an MCP server's environment is the one its agent gives it (`claude mcp "
                   "add -e MEMORYD_HOME=DIR …`, `codex mcp add --env MEMORYD_HOME=DIR …`)")


def _unreachable(path: str, exc: OSError, channel: str = "api") -> DaemonUnreachableError:
    """A connect that failed: "not running" only when nothing listens on the socket and no
    memoryd holds it (one that holds it and refuses is stopping). ``channel``: the client's,
    which says whose environment chose the socket (a shell's, an MCP server's)."""
    whose = ENVIRONMENTS.get(channel, "this shell")
    if exc.errno not in NOT_LISTENING:
        return DaemonUnreachableError(f"could not connect to memoryd on {path} "
                                      f"({exc.strerror or exc}; {socket_origin(path, whose)})")
    pid = holder(path) if exc.errno == errno.ECONNREFUSED else None
    if pid is not None:
        return DaemonUnreachableError(
            f"memoryd (pid {pid}) holds {path} but accepts no connections: it is stopping "
            "(finishing the requests in flight), or just starting; try again in a few seconds")
    from memoryd_client.service_probe import start_hint  # names commands that work from here

    origin = socket_origin(path, whose)
    hint = start_hint(whose=whose, given=path if origin == GIVEN else None)
    return DaemonUnreachableError(f"memoryd is not running on {path} ({exc.strerror or exc}; "
                                  f"{origin}); {hint}"
                                  + (MCP_ENVIRONMENT if channel == "mcp" else ""))


def _broken(path: str, method: str, exc: OSError) -> DaemonUnreachableError:
    """A connection that failed after it was made: the daemon may well be running, and may
    have carried out the request."""
    return DaemonUnreachableError(
        f"the connection to memoryd on {path} failed during {method!r} "
        f"({exc.strerror or exc}); the request may have been carried out", sent=True)


def write_agent(method: str, params: dict[str, Any] | None) -> str | None:
    """The agent a request writes as (None for reads): its connection is bound to it."""
    if method not in wire.WRITE_METHODS or not params:
        return None
    if method == "remember_many":
        entries = params.get("entries")
        first = entries[0] if isinstance(entries, list) and entries else None
        agent = first.get("agent") if isinstance(first, dict) else None
    else:
        agent = params.get("agent")
    return agent if isinstance(agent, str) else None


def _place(results: list[Any], positions: list[int], reply: Any) -> None:
    """Put one agent's remember_many results where its entries were in the whole list."""
    for i, result in zip(positions, reply["results"]):
        results[i] = result


#: Writes that name an entry, not an agent: an unbound client acts as the entry's agent.
BY_ENTRY = ("forget", "supersede", "release", "scope")


def _needs_owner(agent: str | None, method: str, params: dict[str, Any] | None) -> bool:
    return (agent is None and method in BY_ENTRY and isinstance(params, dict)
            and params.get("agent") is None and isinstance(params.get("id"), str))


#: The integers msgpack carries; the daemon takes none outside them (every number it takes
#: has a range of its own, far within).
INT_RANGE = range(-(1 << 63), 1 << 64)


def _too_large(name: str, value: Any) -> str | None:
    """The name of the field (``name`` or one within it) holding an integer msgpack cannot
    carry, or None."""
    stack = [(name, value)]
    while stack:
        field, item = stack.pop()
        if isinstance(item, int) and item not in INT_RANGE:
            return field
        if isinstance(item, dict):
            stack.extend((str(key), inner) for key, inner in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((field, inner) for inner in item)
    return None


def _request(request_id: int, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """The request's map; a parameter holding an integer too large to send is refused here,
    as the daemon refuses a number out of its range."""
    for name, value in (params or {}).items():
        field = _too_large(name, value)
        if field is not None:
            detail = "is too large a number"
            raise BadParamsError(f"{method}: {field} {detail}", method, name, detail)
    request = {"id": request_id, "method": method, "params": params or {}}
    if method in wire.PROGRESS_METHODS:
        request["progress"] = True
    return request


def _is_progress(message: dict[str, Any], request_id: int) -> bool:
    return (message.get("id") == request_id and isinstance(message.get("progress"), dict)
            and "result" not in message and "error" not in message)


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


class Client(DaemonMethods):
    """Blocking client; its connections are reused across calls (one per agent written as,
    see the module docstring). Threads may share one: its calls are serialised (each request
    and its reply are exchanged whole, one call at a time)."""

    _connections: dict[str | None, _socket.socket]
    _serial: _thread.RLock | None = None
    _making = _thread.allocate_lock()  # makes each client's lock once
    _interrupted = False  # interrupt(): no request is sent any more

    @property
    def _lock(self) -> _thread.RLock:
        """Held for each exchange and for closing (made on first use)."""
        if self._serial is None:
            with Client._making:
                if self._serial is None:
                    self._serial = _thread.RLock()
        return self._serial

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            for sock in self._connections.values():
                sock.close()
            self._connections.clear()

    def interrupt(self) -> None:
        """End the call another thread is in, now, for a caller that stopped waiting for it
        (an MCP call cancelled): its connections are shut down, so its wait for a reply ends
        (the call fails as a broken connection), and no request is sent after this. Without
        it the thread waited on, up to the timeout, and held the client. A request sent
        already may still be carried out. Takes no lock: the call holds it."""
        self._interrupted = True
        for sock in list(self._connections.values()):
            try:
                sock.shutdown(_socket.SHUT_RDWR)
            except OSError:  # closed already
                pass

    def _connect(self, agent: str | None) -> tuple[_socket.socket, tuple[int, bytes] | None]:
        """The connection for ``agent``, and the bind request (id, frame) to send ahead of the
        first request on a new one. The bind is not waited for: the daemon answers a
        connection's frames in order and serves nothing after a refused bind, so sending both
        at once saves a round trip (a tenth of a `memory` command)."""
        sock = self._connections.get(agent)
        if sock is not None and _closed_by_peer(sock):
            sock.close()  # the daemon closed an idle connection: open (and bind) a new one
            del self._connections[agent]
            sock = None
        bind = None
        if sock is None:
            try:
                sock = connect(str(self.path), self.timeout_s)
            except OSError as exc:
                raise _unreachable(self.path, exc, self.channel) from None
            self._connections[agent] = sock
            if agent is not None or self.channel != "api":
                bind_id = next(self._ids)
                bind = bind_id, wire.pack({"id": bind_id, "method": "bind", "params": drop_none(
                    {"agent": agent, "channel": self.channel})})
        return sock, bind

    def _reply(self, sock: _socket.socket, request_id: int, method: str = "") -> Any:
        """The reply to a request, past its progress frames (each recv waits ``timeout_s``
        at most: a frame resets the wait)."""
        while True:
            length = wire.frame_length(self._read_exact(sock, wire.HEADER.size))
            if length > wire.MAX_FRAME_BYTES:
                raise BadFrameError(f"reply of {length} bytes exceeds the frame limit")
            message = wire.unpack(self._read_exact(sock, length))
            if not _is_progress(message, request_id):
                return _result(message, request_id)
            if self.progress is not None:
                self._parts[request_id] = message["progress"]
                self.progress({"method": method, **combined(self._parts)})

    def _read_exact(self, sock: _socket.socket, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = sock.recv(n - len(chunks))
            if not chunk:
                raise DaemonUnreachableError(f"memoryd closed the connection on {self.path}")
            chunks += chunk
        return bytes(chunks)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        params = absolute_paths(method, params)
        if method == "bind" and params and params.get("agent") is not None:
            self.agent = params["agent"]
        if _needs_owner(self.agent, method, params):
            assert params is not None
            params = {**params, "agent": self._exchange(None, "get", {"id": params["id"]})["agent"]}
        return self._exchange(self.agent or write_agent(method, params), method, params)

    def _exchange(self, agent: str | None, method: str, params: dict[str, Any] | None) -> Any:
        return self._guarded(method, lambda: self._answer(*self._send(agent, method, params),
                                                          method))

    def _remember_groups(self, entries: list[dict[str, Any]], groups: dict[Any, list[int]]) -> Any:
        """Each agent's entries over its connection, all sent before any answer is read: the
        daemon embeds them together (one request at a time left its embedder idle between
        them, and in short batches)."""
        results: list[Any] = [None] * len(entries)

        def exchange() -> None:
            sent = []
            for positions in groups.values():
                params = {"entries": [entries[i] for i in positions]}
                sent.append((positions, self._send(write_agent("remember_many", params),
                                                   "remember_many", params)))
            for positions, request in sent:
                _place(results, positions, self._answer(*request, "remember_many"))

        self._guarded("remember_many", exchange)
        return {"results": results}

    def _send(self, agent: str | None, method: str, params: dict[str, Any] | None
              ) -> tuple[_socket.socket, int, tuple[int, bytes] | None]:
        request_id = next(self._ids)
        frame = wire.pack(_request(request_id, method, params))
        sock, bind = self._connect(agent)
        if self._interrupted:  # after the connection is held: interrupt() shuts it or this
            raise DaemonUnreachableError(f"the call of {method!r} was interrupted before it "
                                         "was sent")
        sock.sendall(bind[1] + frame if bind else frame)
        return sock, request_id, bind

    def _answer(self, sock: _socket.socket, request_id: int, bind: tuple[int, bytes] | None,
                method: str = "") -> Any:
        if bind:
            try:
                self._reply(sock, bind[0])  # raises the bind's refusal
            except MemorydError as exc:
                raise _bind_refused(exc, method) from None
        return self._reply(sock, request_id, method)

    def _guarded(self, method: str, exchange: Callable[[], T]) -> T:
        """The exchange, alone on the client's connections (threads sharing the client wait
        their turn); what it raises, as the client's errors, the connections closed after any
        (a reply left unread would answer the next request)."""
        with self._lock:
            self._parts.clear()
            try:
                return exchange()
            except TimeoutError:
                self.close()
                raise _silent(method, self.timeout_s, self.path) from None
            except MemorydError:
                self.close()
                raise
            except OSError as exc:  # the connection was made: the daemon is there
                self.close()
                raise _broken(self.path, method, exc) from None


class AsyncClient(DaemonMethods):
    """asyncio client; calls are serialised, over one connection per agent written as (see
    the module docstring)."""

    _connections: dict[str | None, tuple[asyncio.StreamReader, asyncio.StreamWriter]]
    _serial: asyncio.Lock | None = None

    @property
    def _lock(self) -> asyncio.Lock:
        """Calls are serialised (the lock is made on first use, in the loop that uses it)."""
        if self._serial is None:
            import asyncio

            self._serial = asyncio.Lock()
        return self._serial

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for _, writer in self._connections.values():
            writer.close()
        self._connections.clear()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        import asyncio

        params = absolute_paths(method, params)
        if method == "bind" and params and params.get("agent") is not None:
            self.agent = params["agent"]
        async with self._lock:
            try:
                if _needs_owner(self.agent, method, params):
                    assert params is not None
                    owner = await asyncio.wait_for(
                        self._call(None, "get", {"id": params["id"]}), self.timeout_s)
                    params = {**params, "agent": owner["agent"]}
                agent = self.agent or write_agent(method, params)
                self._parts.clear()
                return await self._within(self._call(agent, method, params), method)
            except TimeoutError:
                raise await self._timed_out(method) from None

    async def _within(self, call: Awaitable[T], method: str) -> T:
        """A call within the timeout; one with progress frames waits ``timeout_s`` for each
        frame instead (``_call`` times each read)."""
        import asyncio

        if method in wire.PROGRESS_METHODS:
            return await call
        return await asyncio.wait_for(call, self.timeout_s)

    async def _timed_out(self, method: str) -> DaemonUnreachableError:
        await self.close()
        return _silent(method, self.timeout_s, self.path)

    async def _remember_groups(self, entries: list[dict[str, Any]],
                               groups: dict[Any, list[int]]) -> Any:
        """Each agent's entries over its connection, all at once (see ``Client``)."""
        import asyncio

        requests = [(positions, {"entries": [entries[i] for i in positions]})
                    for positions in groups.values()]
        async with self._lock:
            self._parts.clear()
            try:
                replies = await self._within(asyncio.gather(*(
                    self._call(write_agent("remember_many", params), "remember_many", params)
                    for _, params in requests)), "remember_many")
            except TimeoutError:
                raise await self._timed_out("remember_many") from None
            except MemorydError:
                await self.close()  # the other agents' replies may be left unread
                raise
        results: list[Any] = [None] * len(entries)
        for (positions, _), reply in zip(requests, replies):
            _place(results, positions, reply)
        return {"results": results}

    async def _call(self, agent: str | None, method: str, params: dict[str, Any] | None) -> Any:
        import asyncio

        streams = self._connections.get(agent)
        if streams is not None and (streams[0].at_eof() or streams[1].is_closing()):
            streams[1].close()  # the daemon closed an idle connection: open (and bind) a new one
            del self._connections[agent]
        if agent not in self._connections:
            try:
                self._connections[agent] = await connect_async(str(self.path))
            except OSError as exc:
                raise _unreachable(self.path, exc, self.channel) from None
            if agent is not None or self.channel != "api":
                try:
                    await self._call(agent, "bind",
                                     drop_none({"agent": agent, "channel": self.channel}))
                except MemorydError as exc:
                    raise _bind_refused(exc, method) from None
        reader, writer = self._connections[agent]
        request_id = next(self._ids)
        timeout = self.timeout_s
        try:
            writer.write(wire.pack(_request(request_id, method, params)))
            await writer.drain()
            while True:
                header = await asyncio.wait_for(reader.readexactly(wire.HEADER.size), timeout)
                length = wire.frame_length(header)
                if length > wire.MAX_FRAME_BYTES:
                    raise BadFrameError(f"reply of {length} bytes exceeds the frame limit")
                reply = wire.unpack(await asyncio.wait_for(reader.readexactly(length), timeout))
                if not _is_progress(reply, request_id):
                    break
                if self.progress is not None:
                    self._parts[request_id] = reply["progress"]
                    self.progress({"method": method, **combined(self._parts)})
        except asyncio.IncompleteReadError:
            await self.close()
            raise DaemonUnreachableError(f"memoryd closed the connection on {self.path}") from None
        except OSError as exc:  # the connection was made: the daemon is there
            await self.close()
            raise _broken(self.path, method, exc) from None
        return _result(reply, request_id)
