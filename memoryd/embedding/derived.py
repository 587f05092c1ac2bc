"""What the model derives from the entries, shared with its readers, and the gate by which
background embedding gives way to bulk writes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from memoryd.store.lexicon import Lexicon
from memoryd.store.vectors import VectorIndex


class Derived:
    """The RAM vector index and the lexicon: None until the model is loaded and they are
    built (search is keyword-only, or scores without word alignment, meanwhile). Search, the
    passes and the trust and sync methods read them here; ``memoryd.embedding.vectors`` and
    ``memoryd.embedding.words`` build them."""

    def __init__(self) -> None:
        self.index: VectorIndex | None = None
        self.lexicon: Lexicon | None = None

    def vector_index(self) -> VectorIndex | None:
        return self.index


class BulkWrites:
    """Bulk writes in flight. They queue one database call at a time between them (the
    agents of a mixed import arrive together, and a search queued behind all their slices
    waited ~150 ms); the vector backlog and the lexicon's filling wait for them (``done``)."""

    def __init__(self) -> None:
        self.turn = asyncio.Lock()
        self.running = 0
        self.done = asyncio.Event()
        self.done.set()

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        self.running += 1
        self.done.clear()
        try:
            yield
        finally:
            self.running -= 1
            if not self.running:
                self.done.set()
