"""``Client`` (blocking) and ``AsyncClient`` (asyncio): one method per daemon method.

    with Client() as memory:
        memory.remember("designer", "rejected-designs", "floating speech bubble", tags=["sticker"])
        hits = memory.search("speech bubble on a cat sticker", agent="designer")

Every call raises a :class:`memoryd_client.errors.MemorydError` subclass on failure;
``DaemonUnreachableError`` when nothing answers on the socket.

The daemon binds each connection to one agent (see :mod:`memoryd_client.wire`). A client made
with ``agent=`` has one connection, bound to that agent: a write naming another agent is
refused. A client made without one is a person's or a program's own: it opens one connection
per agent it writes as, each bound to its agent, and splits a ``remember_many`` that spans
several agents. ``channel`` says who is calling (``api`` by default).

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
import abc
import itertools
import os

from memoryd_client import wire
from memoryd_client.connect import connect, connect_async
from memoryd_client.errors import (
    BadFrameError,
    BadParamsError,
    DaemonUnreachableError,
    MemorydError,
    error_from_wire,
)
from memoryd_client.paths import socket_origin, socket_text

TYPE_CHECKING = False  # typing and pathlib cost a `memory` process a few ms; it needs neither
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable
    from typing import Any, Self, TypeVar

    T = TypeVar("T")

DEFAULT_TIMEOUT_S = 30.0


def _drop_none(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


#: Params that name a directory of the caller's: a relative one is resolved here, where it
#: was meant (the daemon's working directory is not the caller's).
PATH_PARAMS = ("cwd", "project", "project_root")


def absolute(path: str) -> str:
    try:
        return os.path.abspath(os.path.expanduser(path))
    except FileNotFoundError:  # os.getcwd(): the working directory was removed
        raise BadParamsError(f"{path!r} is relative, and this process's working directory "
                             "no longer exists; give an absolute path") from None


def _client_cwd(cwd: str | os.PathLike[str] | None) -> str | None:
    """The directory whose project ``remember`` writes for; None when the working directory
    was removed (no project can be said: the writes are global)."""
    if cwd is None:
        return None
    try:
        return os.path.abspath(os.path.expanduser(os.fspath(cwd)))
    except FileNotFoundError:
        return None


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


def _silent(method: str, timeout_s: float, path: str) -> DaemonUnreachableError:
    if method in wire.PROGRESS_METHODS:
        return DaemonUnreachableError(
            f"memoryd sent nothing for {timeout_s:g} s while answering {method!r} (no progress, "
            f"no reply) on {path}: it is stopped, hung or overloaded")
    return DaemonUnreachableError(
        f"memoryd did not answer {method!r} within {timeout_s:g} s on {path}")


def combined(parts: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """One view of the progress of a call sent as several requests (a remember_many of several
    agents, one request per agent's connection): their done and total added up."""
    frames = list(parts.values())
    view = dict(frames[-1])
    for field in ("done", "total"):
        values = [f.get(field) for f in frames]
        view[field] = sum(values) if all(isinstance(v, int) for v in values) else None
    return {k: v for k, v in view.items() if v is not None}


def _unreachable(path: str, exc: OSError) -> DaemonUnreachableError:
    from memoryd_client.service_probe import start_hint  # names commands that work from here

    return DaemonUnreachableError(f"memoryd is not running on {path} ({exc.strerror or exc}; "
                                  f"{socket_origin(path)}); {start_hint()}")


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


def agent_groups(entries: list[dict[str, Any]]) -> dict[str | None, list[int]]:
    """The positions of a remember_many's entries, by agent (None: entries naming none, or
    not as a string: the daemon says what is wrong with them)."""
    groups: dict[str | None, list[int]] = {}
    for i, entry in enumerate(entries):
        agent = entry.get("agent") if isinstance(entry, dict) else None
        groups.setdefault(agent if isinstance(agent, str) else None, []).append(i)
    return groups


def _request(request_id: int, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    request = {"id": request_id, "method": method, "params": params or {}}
    if method in wire.PROGRESS_METHODS:
        request["progress"] = True
    return request


def _is_progress(message: dict[str, Any], request_id: int) -> bool:
    return (message.get("id") == request_id and isinstance(message.get("progress"), dict)
            and "result" not in message and "error" not in message)


class _Methods(abc.ABC):
    """The daemon's methods, written once for both clients; ``call`` does the transport
    (in ``AsyncClient`` it is a coroutine function, so each method returns an awaitable)."""

    agent: str | None = None
    #: the directory whose project ``remember`` writes for when a call names none
    cwd: str | None = None
    #: the connection for each agent written as (None: unbound)
    _connections: dict[str | None, Any]

    def __init__(self, path: str | os.PathLike[str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, *, agent: str | None = None,
                 channel: str = "api", cwd: str | os.PathLike[str] | None = ".",
                 progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else socket_text()
        self.timeout_s = timeout_s
        self.agent = agent
        self.channel = channel
        self.cwd = _client_cwd(cwd)
        self.progress = progress
        self._connections = {}
        self._ids = itertools.count(1)
        self._parts: dict[int, dict[str, Any]] = {}  # the progress of the call's requests

    @abc.abstractmethod
    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and return its result (each client does the transport)."""

    def bind(self, agent: str | None = None, channel: str | None = None) -> Any:
        """Bind this connection to an agent (and say its channel): every write on it goes
        to that agent's namespace. Clients made with ``agent=`` bind by themselves."""
        return self.call("bind", _drop_none({"agent": agent, "channel": channel}))

    def release(self, entry_id: str, *, agent: str | None = None) -> Any:
        """Release a quarantined entry (a person's decision: the terminal channel)."""
        return self.call("release", _drop_none({"id": entry_id, "agent": agent}))

    def purge(self, agent: str, *, since: float | str | None = None, match: str | None = None,
              confirm: bool = False) -> Any:
        """Delete an agent's entries for good (since a time, holding a string, or both) from
        the index, the ledger, the archives and the journals. Without ``confirm`` a dry run:
        the reply lists what would go."""
        return self.call("purge", _drop_none({"agent": agent, "since": since, "match": match,
                                              "confirm": confirm}))

    def sync_init(self, remote: str) -> Any:
        """Make memoryd's durable files a git repository synced with ``remote`` (any git
        remote: a path, ssh, https)."""
        return self.call("sync_init", {"remote": remote})

    def sync(self) -> Any:
        """Commit, fetch, merge, push, and apply what the merge brought to the index."""
        return self.call("sync")

    def sync_add_shared(self, name: str, remote: str) -> Any:
        """Follow a team's shared repository, read-only: its entries are the ``team`` namespace
        ``NAME``."""
        return self.call("sync_add_shared", {"name": name, "remote": remote})

    def share(self, entry_id: str, name: str) -> Any:
        """Copy an entry into the team repository ``name``, commit and push it."""
        return self.call("share", {"id": entry_id, "name": name})

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
        polarity: str | None = None,
        created: float | str | None = None,
        is_global: bool = False,
    ) -> Any:
        """Store an entry in the agent's namespace (docs/concepts.md, "remember rules").
        ``polarity`` ("negative" or "positive") makes a lesson a "don't" or a "do".
        ``created`` (epoch seconds or ISO date) dates imported history; the entry then says
        ``via: import``. The entry belongs to the project of ``cwd`` (default: the client's
        ``cwd``, the directory it was made in), or to ``project``; ``is_global`` makes it
        global (shown in every project), as does a directory outside git."""
        if is_global:
            if cwd is not None or project is not None:
                raise BadParamsError("remember: is_global contradicts cwd and project; give "
                                     "one or the other")
        elif cwd is None and project is None:
            cwd = self.cwd
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
                    "polarity": polarity,
                    "created": created,
                }
            ),
        )

    def remember_many(self, entries: list[dict[str, Any]]) -> Any:
        """Each entry is a map of remember's params; up to 1,000 per call, embedded in
        batches and stored in short slices (one fsync per agent each) that searches can come
        between. Returns {"results": [...]}.
        Entries of several agents go over each agent's connection, all at once (results in
        order); when one agent's entries are refused, the error is raised and the other
        agents' entries may be stored."""
        if self.agent is None and isinstance(entries, list):
            groups = agent_groups(entries)
            if len(groups) > 1:
                return self._remember_groups(entries, groups)
        return self.call("remember_many", {"entries": entries})

    _remember_groups: Callable[[list[dict[str, Any]], dict[Any, list[int]]], Any]

    def search(self, query: str, **filters: Any) -> Any:
        """Filters: agent, agents, category, kind, tags, project (that project's entries), cwd
        (the entries of that directory's project and the global ones: what its blocks show),
        since, until, status, limit, min_score, match, now (when the question is asked: "last
        week" counts back from it), explain (each hit's ``explain``: the query's words it
        holds and its closest sentence, and ``why``: its evidence in words). A name the daemon
        does not take is refused (``BadParamsError``); the reply lists ``unknown_agents``,
        agents named that have no entry at all."""
        return self.call("search", _drop_none({"query": query, **filters}))

    def list_entries(self, **filters: Any) -> Any:
        """Entries without a query (wire method ``list``), newest first (``order="oldest"``
        for the other way). Filters as search's: agent, agents (default every agent), category,
        kind, tags, project, cwd, status, since, until; paging: limit (1-1,000, default 20),
        offset, cursor (the reply's ``next``). Returns {"entries", "total", "next"}."""
        return self.call("list", _drop_none(filters))

    def timeline(self, *, bucket: int | None = None, **filters: Any) -> Any:
        """How many entries were written in each ``bucket`` seconds (default a day), by agent
        and kind: {"bucket", "counts": [{"start", "agent", "kind", "count"}]}. Filters as
        list's; every status unless ``status`` says."""
        return self.call("timeline", _drop_none({"bucket": bucket, **filters}))

    def get(self, entry_id: str) -> Any:
        return self.call("get", {"id": entry_id})

    def forget(self, entry_id: str, *, agent: str | None = None, reason: str | None = None) -> Any:
        return self.call("forget", _drop_none({"id": entry_id, "agent": agent, "reason": reason}))

    def scope(self, entry_id: str, scope: str, project: str | None = None, *,
              agent: str | None = None) -> Any:
        """Move an entry to the user's global tier (``scope="global"``) or to the project of
        the directory ``project`` (``scope="project"``); journaled, and ``memory undo`` of
        the reply's ``undo`` run moves it back."""
        return self.call("scope", _drop_none({"id": entry_id, "scope": scope,
                                              "project": project, "agent": agent}))

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
        return self.call("sessions",
                         _drop_none({"agent": agent, "project": project, "limit": limit}))

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

    def import_history(self, harnesses: list[str] | None = None, *,
                       since: float | str | None = None, dry_run: bool = False,
                       detach: bool = False) -> Any:
        """Index the session histories already on disk (of these harnesses; all by default)
        and extract from their finished sessions, in the daemon's background; the reply comes
        when it is done (``detach``: at once). ``dry_run``: what it would do, writing nothing."""
        return self.call("import_history", _drop_none({
            "harnesses": harnesses or None, "since": since, "dry_run": dry_run or None,
            "detach": detach or None}))

    def history(
        self, entry_id: str | None = None, *, agent: str | None = None, key: str | None = None
    ) -> Any:
        return self.call("history", _drop_none({"id": entry_id, "agent": agent, "key": key}))

    def pass_list(self) -> Any:
        """Each maintenance pass: its schedule, last run and next run."""
        return self.call("pass_list")

    def pass_run(self, name: str, *, agent: str | None = None, project: str | None = None,
                 dry_run: bool = False, full: bool = False) -> Any:
        """Run a pass now (notebooks, consolidate, promote, staleness, retain); the reply
        names the run: {"run": "r12", "counts": {…}, …}. ``full``: as a first run —
        consolidate compares every entry, not only those added or changed since its last run;
        staleness checks every project and reads every entry's references again."""
        return self.call("pass_run", _drop_none({"name": name, "agent": agent, "project": project,
                                                 "dry_run": dry_run, "full": full or None}))

    def pass_runs(self, name: str | None = None, *, limit: int | None = None) -> Any:
        """The newest runs (of one pass, or of all), newest first: {"runs": [...]}."""
        return self.call("pass_runs", _drop_none({"name": name, "limit": limit}))

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
    """Blocking client; its connections are reused across calls (one per agent written as,
    see the module docstring)."""

    _connections: dict[str | None, _socket.socket]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for sock in self._connections.values():
            sock.close()
        self._connections.clear()

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
                raise _unreachable(self.path, exc) from None
            self._connections[agent] = sock
            if agent is not None or self.channel != "api":
                bind_id = next(self._ids)
                bind = bind_id, wire.pack({"id": bind_id, "method": "bind", "params": _drop_none(
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
        sock.sendall(bind[1] + frame if bind else frame)
        return sock, request_id, bind

    def _answer(self, sock: _socket.socket, request_id: int, bind: tuple[int, bytes] | None,
                method: str = "") -> Any:
        if bind:
            self._reply(sock, bind[0])  # raises the bind's refusal
        return self._reply(sock, request_id, method)

    def _guarded(self, method: str, exchange: Callable[[], T]) -> T:
        """What an exchange raises, as the client's errors; the connections closed after any
        (a reply left unread would answer the next request)."""
        self._parts.clear()
        try:
            return exchange()
        except TimeoutError:
            self.close()
            raise _silent(method, self.timeout_s, self.path) from None
        except MemorydError:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise _unreachable(self.path, exc) from None


class AsyncClient(_Methods):
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
                raise _unreachable(self.path, exc) from None
            if agent is not None or self.channel != "api":
                await self._call(agent, "bind",
                                 _drop_none({"agent": agent, "channel": self.channel}))
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
        except OSError as exc:
            await self.close()
            raise _unreachable(self.path, exc) from None
        return _result(reply, request_id)
