"""The bulk embedding queue: requests that wait while a batch runs share the next batch, each
gets the vectors of its own texts back, and one batch's failure or a caller that gives up
touches no other request. (The daemon's own use: tests/writes/test_remember.py.)"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from memoryd.embedding.model import Embedder
from memoryd.embedding.queue import EmbedQueue

TEXTS = {
    "a": "Run the migrations before the API tests",
    "b": "Speech bubbles never float over the cat's face",
    "c": "Rotate the deploy keys every quarter",
    "d": "The staging cluster sleeps at night",
    "e": "Postgres runs on port 5433 in the dev stack",
    "f": "Backups are checked on Mondays",
    "g": "Grafana alerts go to the on-call channel",
}


class Gated:
    """The real model's ``embed_entries``, run once the test lets it (so that requests can
    pile up behind a batch), recording each batch; a batch holding ``fail_on`` fails."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.batches: list[list[str]] = []
        self.release = asyncio.Event()
        self.fail_on: str | None = None

    async def __call__(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        self.batches.append(texts)
        await self.release.wait()
        if self.fail_on in texts:
            raise RuntimeError("the batch failed")
        return self.embedder.embed_entries(texts)


def request(queue: EmbedQueue, *names: str) -> asyncio.Future:
    return asyncio.ensure_future(queue([TEXTS[n] for n in names]))


def assert_own_vectors(embedder: Embedder, names: tuple[str, ...], result: list) -> None:
    """Each text's vector, whatever it was batched with (int8: cosine ≥ 0.98)."""
    alone = embedder.embed([TEXTS[n] for n in names])
    assert len(result) == len(names)
    for (vector, _), own in zip(result, alone):
        assert float(vector @ own) >= 0.98


def test_requests_waiting_behind_a_batch_share_the_next_one(embedder: Embedder) -> None:
    asked = [("b", "c"), ("d",), ("e", "f"), ("g",)]

    async def run() -> tuple[list[list[str]], list[list]]:
        embed = Gated(embedder)
        queue = EmbedQueue(embed, limit=5)
        first = request(queue, "a")
        await asyncio.sleep(0)
        waiting = [request(queue, *names) for names in asked]
        await asyncio.sleep(0)
        embed.release.set()
        return embed.batches, await asyncio.gather(first, *waiting)

    batches, results = asyncio.run(run())
    # the first runs alone; the next three fill a batch up to the limit; the last runs after
    assert batches == [[TEXTS[n] for n in names] for names in ("a", "bcdef", "g")]
    for names, result in zip([("a",), *asked], results):
        assert_own_vectors(embedder, names, result)


def test_a_failed_batch_fails_only_its_requests(embedder: Embedder) -> None:
    async def run() -> list[object]:
        embed = Gated(embedder)
        queue = EmbedQueue(embed, limit=2)
        first = request(queue, "a")
        await asyncio.sleep(0)
        embed.fail_on = TEXTS["b"]
        failing = [request(queue, "b"), request(queue, "c")]
        after = request(queue, "d")
        await asyncio.sleep(0)
        embed.release.set()
        return await asyncio.gather(first, *failing, after, return_exceptions=True)

    first, b, c, d = asyncio.run(run())
    assert_own_vectors(embedder, ("a",), first)
    assert_own_vectors(embedder, ("d",), d)
    assert isinstance(b, RuntimeError) and isinstance(c, RuntimeError)


def test_a_caller_that_gives_up_is_skipped(embedder: Embedder) -> None:
    async def run() -> tuple[list[list[str]], list]:
        embed = Gated(embedder)
        queue = EmbedQueue(embed, limit=10)
        first = request(queue, "a")
        await asyncio.sleep(0)
        gone = request(queue, "b")
        kept = request(queue, "c")
        await asyncio.sleep(0)
        gone.cancel()
        embed.release.set()
        await first
        with pytest.raises(asyncio.CancelledError):
            await gone
        return embed.batches, await kept

    batches, kept = asyncio.run(run())
    assert batches == [[TEXTS["a"]], [TEXTS["c"]]]
    assert_own_vectors(embedder, ("c",), kept)
