"""The write path: a request's text redacted, embedded, then stored by the entries
(``memoryd.store.entries``), its vectors indexed and its new words learned after it is
acknowledged.

It sits above the store and the embedding, below the stages that write (the passes' file
entry edits, the sessions' extraction, the server): the store is handed vectors and never
imports the model or the configuration, so the part of a write that embeds lives here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from memoryd.embedding.derived import BulkWrites
from memoryd.embedding.threads import PIPELINE_SLICE, EmbedThreads, abandon
from memoryd.embedding.vectors import VectorWork
from memoryd.embedding.words import WordWork
from memoryd.errors import PartlyStoredError, WriteRefusedError
from memoryd.progress import report
from memoryd.redact import redact
from memoryd.store.entries import Entries, Vectors
from memoryd.store.records import Draft, EntryRequest, Remembered, RememberRequest, Superseded
from memoryd.store.thread import DatabaseThread
from memoryd.text import index_text

T = TypeVar("T")

MAX_BATCH = 1000
#: How long one call stores a write's entries on the database thread before searches get it
#: back (a slice of 256 took ~0.5 s at 700k entries: near-duplicate checks).
REMEMBER_SLICE_S = 0.01


class Writes:
    def __init__(self, entries: Entries, db: DatabaseThread, threads: EmbedThreads,
                 vectors: VectorWork, words: WordWork, bulk: BulkWrites) -> None:
        self.entries = entries
        self.db = db
        self.threads = threads
        self.vectors = vectors
        self.words = words
        self.bulk = bulk

    async def remember(self, request: RememberRequest) -> Remembered:
        """A single write: its index text embedded, once, in a run of its own (what the
        near-duplicate decision needs), the entry stored and acknowledged; then its sentences
        are embedded, its vectors indexed and its new words given to the lexicon
        (``index_later``, ``learn_later``). A write right after it compares with its vector,
        and a search right after it waits for its sentences' vectors (``VectorWork.index_later``):
        both find what they found when all of it was made before the acknowledgement."""
        request = redacted(request)
        text = index_text(request.text, request.key)
        embedded = await self.vectors.text_vectors(text)
        drafts = self.entries.drafts([request])
        vectors: list[Vectors | None] = [None]
        alone: dict[str, np.ndarray] = {}
        parts_of = None
        if embedded is not None:
            vectors = [embedded.now]
            if embedded.parts is None:
                parts_of = text
            if embedded.alone and drafts[0].entry.text == text:
                alone[text] = embedded.vector  # a borderline decision embeds it no more
        (result,) = await self._remember(drafts, vectors, bulk=False, alone=alone,
                                         parts_of=parts_of)
        if result.stored:
            self.words.learn_later(text)  # then the lexicon's filling moves past the entry
        return result

    async def bulk_db(self, fn: Callable[..., T], *args: Any) -> T:
        """A bulk write's call on the database thread, once no other bulk write's call is
        queued there."""
        async with self.bulk.turn:
            return await self.db(fn, *args)

    async def _remember(self, drafts: list[Draft], vectors: list[Vectors | None], *,
                        bulk: bool, alone: dict[str, np.ndarray] | None = None,
                        parts_of: str | None = None,
                        replies: list[Remembered] | None = None) -> list[Remembered]:
        """Store drafts on the database thread in slices of REMEMBER_SLICE_S, so that a
        search waits for one slice at most; the texts a near-duplicate decision needs
        embedded alone (``alone``: those known already) are embedded between two slices (a
        bulk write's on the pair thread, a single write's on the interactive one). A single
        write's vectors are indexed once it is answered (``VectorWork.index_later``, with
        ``parts_of``: the text whose sentences are still to be embedded). Each slice is
        committed on its own: its results are added to ``replies`` (if given) as it is, so
        that a caller whose later slice fails knows what is stored."""
        start = 0 if replies is None else len(replies)
        replies = [] if replies is None else replies
        alone = {} if alone is None else alone
        db, thread = ((self.bulk_db, self.threads.pair_thread) if bulk
                      else (self.db, self.threads.query_thread))
        later = functools.partial(self.entries.remember_many, index_later=not bulk)
        while len(replies) - start < len(drafts):
            done = await db(later, drafts[len(replies) - start:], vectors[len(replies) - start:],
                            alone, REMEMBER_SLICE_S)
            replies += done.written
            if done.unindexed:
                self.vectors.index_later(done.unindexed, parts_of)
            if done.wanted:
                alone.update(zip(done.wanted, await self.threads.alone(done.wanted, thread)))
        return replies[start:]

    async def remember_many(self, requests: list[RememberRequest]) -> list[Remembered]:
        """Embedded in slices of PIPELINE_SLICE: the database stores one slice (in calls of
        REMEMBER_SLICE_S, one transaction and one fsync per ledger each) while the next is
        embedded. A slice is big because the embedder batches a bigger pool better (slices of
        64: ingest at 0.84 of the bare embedder's rate, 256: 0.95); a client keeps the
        embedder busy with two connections.

        Each slice is committed on its own (a request of 1,000 is not one transaction): the
        disk refusing a later slice leaves the earlier ones stored, and the answer is a
        :class:`PartlyStoredError` that says how many and holds their results."""
        report(phase="embedding and storing entries", done=0, total=len(requests))
        requests = [redacted(r) for r in requests]
        texts = [index_text(r.text, r.key) for r in requests]  # what is embedded
        cached = await self.bulk_db(self.vectors.cached_vectors, texts)
        slices = [range(i, min(i + PIPELINE_SLICE, len(texts)))
                  for i in range(0, len(texts), PIPELINE_SLICE)]

        def embedding(part: range) -> asyncio.Future[list[Vectors | None]]:
            return asyncio.ensure_future(self.vectors.fill_vectors(
                [texts[i] for i in part], [cached[i] for i in part]))

        results: list[Remembered] = []
        async with self.bulk.writing():
            upcoming = embedding(slices[0])
            try:
                # drafted while the first slice is embedded, a slice a call
                drafts: list[Draft] = []
                for part in slices:
                    drafts += await self.bulk_db(self.entries.drafts, [requests[i] for i in part])
                for number, part in enumerate(slices):
                    vectors = await upcoming
                    if number + 1 < len(slices):
                        upcoming = embedding(slices[number + 1])
                    await self._remember([drafts[i] for i in part], vectors, bulk=True,
                                         replies=results)
                    report(done=len(results))
            except WriteRefusedError as exc:
                if not results:
                    raise  # nothing of it was kept: the refusal says so
                raise PartlyStoredError(exc, results, len(requests)) from exc
            finally:
                abandon(upcoming)
                self.words.wanted.set()
        return results

    async def supersede(self, request: EntryRequest) -> Superseded:
        assert request.text is not None
        text = redact(request.text)
        request = dataclasses.replace(request, text=text)
        (vectors,) = await self.vectors.vectors_for([text])
        result = await self.db(self.entries.supersede, request, vectors)
        self.words.learn_later(text)
        return result


def redacted(request: RememberRequest) -> RememberRequest:
    """The request with the secrets of every text it carries redacted: its text, category,
    key and tags, and its project, writer, session and message id (an import gives them all,
    from a file that may hold anything): whatever stores it (entry, ledger, events, vectors,
    the memory block) never sees the raw secret. The request itself when there was none."""
    after = dataclasses.replace(
        request, text=redact(request.text), category=redact(request.category),
        tags=tuple(redact(tag) for tag in request.tags), key=_redacted(request.key),
        project=_redacted(request.project), writer=_redacted(request.writer),
        session=_redacted(request.session), message_id=_redacted(request.message_id))
    return request if after == request else after


def _redacted(value: str | None) -> str | None:
    return redact(value) if value else value
