"""A search from request to hits, with its concurrency: the halves of
:mod:`memoryd.retrieval.search` at once. The keyword half runs on the database thread; beside
it, on a search thread of its own, the question's embedding and then the vector half, in one go
(handing the vector back to the event loop and on to the search thread took 2.5-4 ms, p50,
while a pass ran: the threads waited for the GIL). The plan, made on the database thread, is
handed to the search thread the moment it is made, and the keyword half follows it in the
same call (handing the plan back to the event loop in between cost a wake-up of each thread,
~1 ms while the question was embedded). The question's words that the lexicon lacks are
embedded while the vector half runs; its candidates come back with the question's vector,
and the database thread finishes the search with them.
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor

import numpy as np

from memoryd.embedding.model import Embedder
from memoryd.embedding.threads import EmbedThreads, abandon
from memoryd.embedding.words import WordWork
from memoryd.errors import stopping_error
from memoryd.retrieval.plan import SearchPlan, VectorFound
from memoryd.retrieval.records import SearchRequest, SearchResult
from memoryd.retrieval.search import Searcher
from memoryd.store.thread import DatabaseThread


class SearchService:
    def __init__(self, searcher: Searcher, db: DatabaseThread, threads: EmbedThreads,
                 words: WordWork) -> None:
        """``words``: a search waits for the new words of the writes just before it."""
        self.searcher = searcher
        self.db = db
        self.threads = threads
        self.words = words
        # a search's question embedded and its vector half, beside its keyword half on the
        # database thread
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-search")

    async def search(self, request: SearchRequest) -> SearchResult:
        """The hits for a search."""
        query = request.query
        embedder = await self.threads.model()
        if self.db.closing:  # the search thread stops before the index closes
            raise stopping_error()
        cached = self.threads.cached_query(query)
        planned: Future[SearchPlan] = Future()
        vectors = asyncio.get_running_loop().run_in_executor(
            self.thread, self._vector_half, query, embedder, cached, planned)
        try:
            await self.db.settled()  # the vectors of the writes answered before it are stored
            plan = await self.db(self._keyword_half, request, planned)
            # beside the vector half: the question's words the lexicon lacks, and those of
            # the writes just before it
            words = await self.threads.words(plan.unknown)
            await self.words.learned()
        except BaseException:
            planned.cancel()  # the vector half waits for no plan (none came, or too late)
            abandon(vectors)
            raise
        vector, found = await self.threads.unless_closing(vectors)
        if cached is None and vector is not None:
            self.threads.remember_query(query, vector)
        return await self.db(self.searcher.finish_search, plan, vector, words, found)

    def _keyword_half(self, request: SearchRequest, planned: Future[SearchPlan]) -> SearchPlan:
        """A search's plan, handed at once to its vector half (a plan that fails is handed
        nothing: :meth:`search` cancels ``planned``), then its keyword half (database
        thread)."""
        plan = self.searcher.plan(request)
        with contextlib.suppress(InvalidStateError):  # the search was given up meanwhile
            planned.set_result(plan)
        return self.searcher.keyword_half(plan)

    def _vector_half(self, query: str, embedder: Embedder | None, cached: np.ndarray | None,
                     planned: Future[SearchPlan]
                     ) -> tuple[np.ndarray | None, VectorFound | None]:
        """The question's vector (embedded here, unless the query cache had it) and, once the
        plan is made, the vector index's candidates for it (search thread)."""
        vector = cached
        if vector is None and embedder is not None:
            vector = embedder.embed([query], stop=self.threads.stop)[0]
        plan = planned.result()
        found = self.searcher.candidates.vector_half(plan, vector) if vector is not None else None
        return vector, found

    async def question_words(self, text: str) -> dict[str, np.ndarray]:
        """Vectors of the question's informative words that no entry has given the lexicon
        (search's ``align``)."""
        if self.threads.embedder is None or self.searcher.lexicon is None:
            return {}
        return await self.threads.words(await self.db(self.searcher.unknown_words, text))

    async def close(self) -> None:
        """A vector half reading the index ends."""
        await asyncio.to_thread(self.thread.shutdown, True)
