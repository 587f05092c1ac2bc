"""Wire method ``list``: entries without a query (``memory list``, ``recent`` and ``export``).

The filters are search's (agents, category, kind, tags, project, here, status, since, until:
:mod:`memoryd.retrieval.filters`); the order is by creation time, newest
first (``order: "newest"``) or oldest first (``"oldest"``, what an export wants). A page holds
``limit`` entries (1 to 1,000), and no more than ``PAGE_BYTES`` of them packed (a thousand long
entries are past the frame limit: the page ends before the entry that would cross it, never
before its first); the reply's ``next`` is an opaque cursor for the page after it (``None`` on
the last page), so that an export reads a store of any size in bounded pages and entries
written meanwhile neither repeat nor push others out. ``offset`` skips entries instead
(``memory list --offset``). The reply also counts every entry the filters select (``total``).
``prefix`` keeps the entries whose id begins with it (what shell completion offers).

Entries are returned as ``get`` returns them (with ``age_note``), without the database's
internal ``rowid``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from memoryd_client import wire

from memoryd.errors import BadParamsError
from memoryd.retrieval.filters import request_filter
from memoryd.retrieval.records import FilterRequest
from memoryd.server.params import Params
from memoryd.server.replies import public_entry
from memoryd.server.requests import filter_request
from memoryd.settings import Config
from memoryd.store.database import Store
from memoryd.store.query import Order
from memoryd.store.thread import DatabaseThread
from memoryd.store.timeline import growth
from memoryd.text import scrub_surrogates

MAX_PAGE = 1000
DEFAULT_PAGE = 20
#: The most a page's entries take packed: half a frame, the rest left to the reply's others.
PAGE_BYTES = wire.MAX_FRAME_BYTES // 2
DAY_S = 86_400


def packed_bytes(entry: dict[str, Any]) -> int:
    """What ``entry`` takes in a reply (a file's bytes that are not UTF-8 are sent as U+FFFD,
    as the dispatcher sends them)."""
    try:
        return len(wire.pack(entry))
    except UnicodeEncodeError:
        return len(wire.pack(cast("dict[str, Any]", scrub_surrogates(entry))))


def _cursor(created: float, rowid: int) -> str:
    return f"{created!r}:{rowid}"


def _parse_cursor(value: str) -> tuple[float, int]:
    try:
        created, rowid = value.rsplit(":", 1)
        return float(created), int(rowid)
    except ValueError:
        raise BadParamsError(f"list: cursor {value!r} is not one a list reply gave") from None


@dataclass(frozen=True)
class ListRequest:
    """A page of a list: its size, where it starts (a cursor a reply gave, or an offset),
    its order, the id prefix its entries begin with, and its filters (search's; every agent
    unless told)."""

    limit: int
    offset: int
    order: Order
    prefix: str | None
    cursor: tuple[float, int] | None
    filter: FilterRequest

    @staticmethod
    def parse(params: Params, shared_agents: tuple[str, ...]) -> ListRequest:
        limit = params.integer("limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
        offset = params.integer("offset", default=0, low=0, high=10_000_000)
        order = params.choice("order", ("newest", "oldest"), default="newest")
        prefix = params.text("prefix", max_len=64)
        cursor = params.text("cursor", max_len=100)
        return ListRequest(limit, offset, "oldest page" if order == "oldest" else "newest page",
                           prefix or None, _parse_cursor(cursor) if cursor is not None else None,
                           filter_request(params, shared_agents, every_agent=True))


class ListMethods:
    def __init__(self, db: DatabaseThread, store: Store,
                 config: Callable[[], Config]) -> None:
        """``config``: the configuration as it is now (``context.shared_agents``)."""
        self.db = db
        self.store = store
        self.config = config

    def methods(self) -> dict[str, Any]:
        return {"list": self.m_list, "timeline": self.m_timeline}

    async def m_list(self, params: Params) -> dict[str, Any]:
        return await self.db(self.page, ListRequest.parse(
            params, self.config().context.shared_agents))

    async def m_timeline(self, params: Params) -> dict[str, Any]:
        """Entries written per ``bucket`` seconds (default a day), by agent and kind; the
        filters are list's, and every status counts unless ``status`` says (what was written,
        not what is still active)."""
        bucket = params.integer("bucket", default=DAY_S, low=60, high=366 * DAY_S)
        return await self.db(self.timeline, bucket,
                             filter_request(params, self.config().context.shared_agents,
                                            every_agent=True, any_status=True))

    def timeline(self, bucket: int, request: FilterRequest) -> dict[str, Any]:
        """The counts (database thread)."""
        store = self.store
        assert store is not None
        counts = growth(store, request_filter(store, request).query, bucket)
        return {"bucket": bucket, "counts": [
            {"start": c.start, "agent": c.agent, "kind": c.kind, "count": c.count}
            for c in counts]}

    def page(self, request: ListRequest) -> dict[str, Any]:
        """One page of entries (database thread)."""
        store = self.store
        assert store is not None
        where = request_filter(store, request.filter)
        query = where.query
        if request.prefix:  # ids beginning so (shell completion): the uid index's range
            query = query.uid_prefix(request.prefix)
        total = store.count_matching(query)
        if request.cursor is not None:
            query = query.after_in_order(*request.cursor, request.order)
        rows = store.entries(query, request.order, request.limit + 1, request.offset)
        more = len(rows) > request.limit
        rows = rows[:request.limit]
        now = time.time()
        entries: list[dict[str, Any]] = []
        size = 0
        for row in rows:
            shown = public_entry(row, now)
            size += packed_bytes(shown)
            if entries and size > PAGE_BYTES:  # the rest is the next page's
                rows, more = rows[:len(entries)], True
                break
            entries.append(shown)
        page = {
            "entries": entries,
            "total": total,
            "next": _cursor(rows[-1].created, rows[-1].rowid) if more and rows else None,
        }
        if where.unknown_agents:
            page["unknown_agents"] = list(where.unknown_agents)
        if where.unknown_category is not None:
            page["unknown_category"] = where.unknown_category
        return page
