"""Serving the socket's connections: each frame read within the limits
(:mod:`memoryd.server.limits`), its request checked against the connection's caller
(:mod:`memoryd.server.binding`) and dispatched to its wire method, and the reply written back,
with progress frames while the method works when the client asked for them. Once the daemon is
stopping, a request gets the "stopping" answer instead (:mod:`memoryd.server.stopping`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from memoryd_client import wire
from memoryd_client.views import shown_text

from memoryd.errors import (
    BadFrameError,
    ForbiddenError,
    FrameTooLargeError,
    InternalError,
    MemorydError,
    UnavailableError,
    UnknownMethodError,
    WriteRefusedError,
)
from memoryd.progress import PROGRESS_EVERY_S, Reporter, reporting, stop_reporting
from memoryd.scheduling import Traffic
from memoryd.server.binding import Caller, bind, enforce, peer_pid, peer_uid
from memoryd.server.limits import ConnectionLimits, read_body
from memoryd.server.params import Params, echo
from memoryd.server.refused import RefusedWrites
from memoryd.server.replies import without_rowids
from memoryd.server.stopping import Connections, stopping_error
from memoryd.text import scrub_surrogates

log = logging.getLogger(__name__)
#: A wire method: its params in, its result out.
Handler = Callable[[Params], Awaitable[Any]]


def _request_id(body: bytes) -> Any:
    try:
        request = wire.unpack(body)
    except Exception:
        return None
    value = request.get("id") if isinstance(request, dict) else None
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


class Dispatcher:
    """Serves each connection the acceptor hands it (:meth:`handle`) with the wire methods in
    ``methods``; counts the requests in flight, and says when the last one came and when none
    is left (``idle``: the stop waits for it)."""

    def __init__(self, methods: dict[str, Handler], limits: ConnectionLimits, traffic: Traffic,
                 connections: Connections, stopping: asyncio.Event,
                 refused: RefusedWrites) -> None:
        self.methods = methods
        self.refused = refused  # told of each write the disk refused
        self.limits = limits
        self.traffic = traffic  # the requests background work gives way to
        self.connections = connections
        self.stopping = stopping  # set: nothing new is served
        self.requests_in_flight = 0
        self.last_request = time.time()
        self.idle = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.limits.admit():
            await self._refuse(reader, writer, UnavailableError(
                f"memoryd serves {self.limits.max_connections} connections at most; "
                "try again shortly"))
            return
        self.connections.opened(writer)
        try:
            await self._serve_connection(reader, writer)
        finally:
            self.limits.leave(writer)

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      error: MemorydError) -> None:
        """Send one error frame and close; unread input is drained briefly first (closing
        with unread input would reset the connection before the client reads the refusal)."""
        try:
            await self._send(writer, None, error=error)
            writer.write_eof()
            await asyncio.wait_for(reader.read(wire.MAX_FRAME_BYTES), timeout=1)
        except (TimeoutError, ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _serve_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        idle_s = self.limits.idle_timeout_s
        try:
            sock = writer.get_extra_info("socket")
            uid = peer_uid(sock)
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
            # who this connection is: bound once (memoryd.server.binding)
            caller = Caller(pid=peer_pid(sock))
            while not reader.at_eof():
                self.limits.waiting(writer)  # at the cap, the longest waiting may be closed
                try:
                    header = await asyncio.wait_for(reader.readexactly(wire.HEADER.size), idle_s)
                except asyncio.IncompleteReadError:
                    return
                self.limits.working(writer)
                length = wire.frame_length(header)
                if length > wire.MAX_FRAME_BYTES:
                    if not await self._refuse_frame(reader, writer, length, FrameTooLargeError(
                            f"frame of {length} bytes exceeds the limit of "
                            f"{wire.MAX_FRAME_BYTES} bytes")):
                        return
                    continue
                if not self.limits.reserve(length):
                    if not await self._refuse_frame(reader, writer, length, UnavailableError(
                            "memoryd is receiving too many large requests at once; try again "
                            "shortly")):
                        return
                    continue
                try:
                    body = await asyncio.wait_for(read_body(reader, length),
                                                  self.limits.frame_wait_s(length))
                except TimeoutError:
                    await self._frame_stalled(writer, length)
                    return
                finally:
                    self.limits.release(length)
                if self.stopping.is_set():  # stopping: nothing new is served (stopping.py)
                    await self._send(writer, _request_id(body), error=stopping_error())
                    return
                self.last_request = time.time()
                self.requests_in_flight += 1
                self.connections.busy[writer] = True
                try:
                    await self._answer(writer, body, caller)
                finally:
                    self.connections.busy[writer] = False
                    self.requests_in_flight -= 1
                    if not self.requests_in_flight:
                        self.idle.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except TimeoutError:
            log.debug("Closed a connection idle for %g s.", idle_s)
        finally:
            self.connections.closed(writer)
            writer.close()

    async def _frame_stalled(self, writer: asyncio.StreamWriter, length: int) -> None:
        """A frame whose bytes stopped coming: its budget is given back and its connection
        closed (there is no telling where the next frame would start)."""
        self.limits.stalled += 1
        log.debug("Dropped a frame of %d bytes that stalled, and its connection.", length)
        with contextlib.suppress(ConnectionError, OSError, TimeoutError):
            await asyncio.wait_for(self._send(writer, None, error=UnavailableError(
                f"the request's {length} bytes did not arrive within "
                f"{self.limits.frame_wait_s(length):.0f} s; connection closed")), 1)

    async def _refuse_frame(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            length: int, error: MemorydError) -> bool:
        """Answer a frame that is not read with ``error`` at once, then skip its body; False
        when the body did not come in time (the connection is then closed: there is no telling
        where the next frame would start). The answer went first: a header with no body
        behind it got none before the connection closed."""
        await self._send(writer, None, error=error)
        try:
            await asyncio.wait_for(self._discard(reader, length), self.limits.frame_wait_s(length))
        except TimeoutError:
            log.debug("Closed a connection whose refused frame of %d bytes did not arrive.",
                      length)
            return False
        return True

    async def _discard(self, reader: asyncio.StreamReader, length: int) -> None:
        while length > 0:
            chunk = await reader.read(min(length, 1 << 20))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", length)
            length -= len(chunk)

    async def _answer(self, writer: asyncio.StreamWriter, body: bytes, caller: Caller) -> None:
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
            if handler is None and method != "bind":
                raise UnknownMethodError(
                    f"unknown method {echo(method)}; known: bind, "
                    f"{', '.join(sorted(self.methods))}")
            params = Params(method, request.get("params"))
            if method == "bind":
                result = bind(caller, params)
            else:
                assert handler is not None
                params.check_names()
                enforce(caller, params)
                number = self.traffic.begin(method)
                try:
                    if request.get("progress") is True:
                        result = await self._with_progress(writer, request_id, method,
                                                           handler(params))
                    else:
                        result = await handler(params)
                finally:
                    self.traffic.end(number)
        except MemorydError as exc:
            if isinstance(exc, WriteRefusedError):
                self.refused.note(exc.message)
            await self._send(writer, request_id, error=exc)
        except asyncio.CancelledError:
            if not self.stopping.is_set():
                raise
            await self._send(writer, request_id, error=stopping_error())  # work of a stop
        except Exception as exc:
            log.exception("Internal error answering a request.")
            await self._send(writer, request_id,
                             error=InternalError(f"{type(exc).__name__}: {exc}"))
        else:
            await self._send(writer, request_id, result=result)

    async def _with_progress(self, writer: asyncio.StreamWriter, request_id: Any, method: str,
                             work: Awaitable[Any]) -> Any:
        """The handler's result, with progress frames sent while it works (the client asked:
        wire.py). The state it ended in goes in a last frame before the reply (both written on
        the event loop), so that a request shorter than a tick shows its phases too."""
        reporter = Reporter(method)
        token = reporting(reporter)
        ticker = asyncio.ensure_future(self._tick(writer, request_id, reporter))
        try:
            result = await work
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            stop_reporting(token)
        if reporter.reported:  # a request shorter than a tick still shows where it ended
            with contextlib.suppress(ConnectionError, OSError):
                writer.write(wire.pack({"id": request_id, "progress": reporter.frame()}))
        return result

    async def _tick(self, writer: asyncio.StreamWriter, request_id: Any,
                    reporter: Reporter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                await asyncio.sleep(PROGRESS_EVERY_S)
                writer.write(wire.pack({"id": request_id, "progress": reporter.frame()}))
                await writer.drain()

    async def _send(self, writer: asyncio.StreamWriter, request_id: Any, *,
                    result: Any = None, error: MemorydError | None = None) -> None:
        message: dict[str, Any] = {"id": request_id}
        if error is not None:
            message["error"] = error.to_wire()
        else:
            message["result"] = without_rowids(result)  # the index's own row numbers stay inside
        try:
            try:
                frame = wire.pack(message)
            except UnicodeEncodeError:  # a file's bytes that are not UTF-8 (kept as
                # surrogate escapes, to be written back as they were) are shown as U+FFFD
                frame = wire.pack(cast("dict[str, Any]", scrub_surrogates(message)))
        except FrameTooLargeError as exc:  # the method did its work: a write is stored
            if error is None:
                exc = FrameTooLargeError(f"the request was carried out, but its reply: "
                                         f"{exc.message} (ask for less at once)")
            frame = wire.pack({"id": request_id, "error": exc.to_wire()})
        except Exception as exc:  # a reply msgpack cannot hold: the caller is told, not cut off
            log.exception("A reply could not be encoded.")
            frame = wire.pack({"id": request_id, "error": InternalError(shown_text(
                f"the reply could not be encoded ({type(exc).__name__}: {exc})")).to_wire()})
        writer.write(frame)
        await writer.drain()
