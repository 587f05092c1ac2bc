"""The bulk embedding queue: requests that wait while a batch runs share the next batch, each
gets its own results back, and one batch's failure or a caller that gives up touches no other
request. (The daemon's own use, with the real model: tests/test_remember.py.)"""

from __future__ import annotations

import asyncio

import pytest

from memoryd.embed_queue import EmbedQueue


class Recorder:
    """Stands in for the embedding call: records each batch, answers each text with its
    upper-case form, and can be held until released or made to fail."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.release = asyncio.Event()
        self.fail_on: str | None = None

    async def __call__(self, texts: list[str]) -> list[str]:
        self.batches.append(texts)
        await self.release.wait()
        if self.fail_on in texts:
            raise RuntimeError(f"cannot embed {self.fail_on}")
        return [t.upper() for t in texts]


def test_requests_waiting_behind_a_batch_share_the_next_one() -> None:
    async def run() -> tuple[list[list[str]], list[list[str] | None]]:
        embed = Recorder()
        queue = EmbedQueue(embed, limit=5)
        first = asyncio.ensure_future(queue(["a"]))
        await asyncio.sleep(0)
        waiting = [asyncio.ensure_future(queue(texts))
                   for texts in (["b", "c"], ["d"], ["e", "f"], ["g"])]
        await asyncio.sleep(0)
        embed.release.set()
        return embed.batches, await asyncio.gather(first, *waiting)

    batches, results = asyncio.run(run())
    # the first runs alone; the next three fill a batch up to the limit; the last runs after
    assert batches == [["a"], ["b", "c", "d", "e", "f"], ["g"]]
    assert results == [["A"], ["B", "C"], ["D"], ["E", "F"], ["G"]]


def test_a_failed_batch_fails_only_its_requests() -> None:
    async def run() -> list[object]:
        embed = Recorder()
        queue = EmbedQueue(embed, limit=2)
        first = asyncio.ensure_future(queue(["a"]))
        await asyncio.sleep(0)
        embed.fail_on = "b"
        failing = [asyncio.ensure_future(queue(["b"])), asyncio.ensure_future(queue(["c"]))]
        after = asyncio.ensure_future(queue(["d"]))
        await asyncio.sleep(0)
        embed.release.set()
        return await asyncio.gather(first, *failing, after, return_exceptions=True)

    first, b, c, d = asyncio.run(run())
    assert first == ["A"] and d == ["D"]
    assert isinstance(b, RuntimeError) and isinstance(c, RuntimeError)
    assert str(b) == "cannot embed b"


def test_a_caller_that_gives_up_is_skipped() -> None:
    async def run() -> tuple[list[list[str]], list[str] | None]:
        embed = Recorder()
        queue = EmbedQueue(embed, limit=10)
        first = asyncio.ensure_future(queue(["a"]))
        await asyncio.sleep(0)
        gone = asyncio.ensure_future(queue(["b"]))
        kept = asyncio.ensure_future(queue(["c"]))
        await asyncio.sleep(0)
        gone.cancel()
        embed.release.set()
        await first
        with pytest.raises(asyncio.CancelledError):
            await gone
        return embed.batches, await kept

    batches, kept = asyncio.run(run())
    assert batches == [["a"], ["c"]] and kept == ["C"]
