"""Bulk embedding shared by concurrent writes: the texts that arrive while a batch is being
embedded go together into the next one.

A ``remember_many`` whose entries belong to several agents reaches the daemon as one request
per agent (a connection writes as one agent), often of a few dozen entries each. Embedded
request by request, every request ended in a short batch of its longest texts, and the
embedder waited between requests for each one's database turn: bulk ingest of a corpus of
many agents ran at 0.73–0.79 of the bare embedder's rate on the same texts. Together they
fill the embedder's batches as one request would (docs/performance.md).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class EmbedQueue(Generic[T]):
    """``await queue(texts)``: one result per text, from ``embed`` run on the texts of every
    request waiting when a batch starts (at least one request; more while the batch stays
    within ``limit`` texts). One batch at a time, in the order requests came."""

    def __init__(self, embed: Callable[[list[str]], Awaitable[list[T] | None]], limit: int) -> None:
        self.embed = embed
        self.limit = limit
        self.waiting: deque[tuple[list[str], asyncio.Future[list[T] | None]]] = deque()
        self.running: asyncio.Task[None] | None = None

    async def __call__(self, texts: list[str]) -> list[T] | None:
        """None when ``embed`` gives None (no model)."""
        future: asyncio.Future[list[T] | None] = asyncio.get_running_loop().create_future()
        self.waiting.append((texts, future))
        if self.running is None or self.running.done():
            self.running = asyncio.ensure_future(self._drain())
        return await future

    def _take(self) -> list[tuple[list[str], asyncio.Future[list[T] | None]]]:
        batch: list[tuple[list[str], asyncio.Future[list[T] | None]]] = []
        size = 0
        while self.waiting:
            texts, future = self.waiting[0]
            if future.done():  # its caller gave up (cancelled)
                self.waiting.popleft()
                continue
            if batch and size + len(texts) > self.limit:
                break
            batch.append(self.waiting.popleft())
            size += len(texts)
        return batch

    async def _drain(self) -> None:
        while batch := self._take():
            try:
                results = await self.embed([text for texts, _ in batch for text in texts])
            except asyncio.CancelledError:
                for _, future in batch + list(self.waiting):
                    future.cancel()
                self.waiting.clear()
                raise
            except Exception as exc:  # the batch's error is each of its requests' error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for texts, future in batch:
                if not future.done():
                    future.set_result(None if results is None
                                      else results[start:start + len(texts)])
                start += len(texts)
