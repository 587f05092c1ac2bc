"""Extraction of the sessions that end without saying so (docs/agents.md, "Extraction at
session end").

A hook's SessionEnd starts extraction (memoryd.server.session_methods). Aider, Cline, Roo Code
and Kilo Code run no hook of memoryd's, an agent may run without its hooks installed, and a
session may crash: their sessions never end as far as memoryd hears. Such a session is over
once it has been quiet for ``outcomes.idle_s``: its last turn said that long ago, and its
transcript not written since (Aider dates every turn of a session by the session's start: its
file tells that it goes on). It is extracted then, as at its end, with the same extractor and
filters, and marked extracted. A session that goes on after that (a pause longer than
``idle_s``, a resumed task) is read again once it is quiet again: what it said before is not
stored or counted twice (a lesson already stored is a duplicate, and a session's sighting of a
lesson counts once: memoryd.store.remember).

History is left to `memory import-history`: only the sessions active since the start of the
memoryd that first looked for quiet ones (``meta`` ``extract_quiet_since``) are read, so the
years of transcripts found on a first start are not extracted behind the user's back. The
check runs every :data:`CHECK_EVERY_S` (sooner with a short ``idle_s``), the first one after
that long (not among a start's own work), a few sessions at a time, each after the requests
someone waits on. ``[extract] when_quiet = false`` turns it off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

from memoryd.errors import MemorydError, NotFoundError, what_went_wrong
from memoryd.scheduling import Traffic
from memoryd.sessions.decisions import MIN_USER_MESSAGES
from memoryd.sessions.extractor import SessionExtractor
from memoryd.settings import Settings
from memoryd.store.durable import refused_by_disk
from memoryd.store.past_sessions import PastSession, PastSessions
from memoryd.store.thread import DatabaseThread

log = logging.getLogger(__name__)

#: How often quiet sessions are looked for (at most; a fifth of ``outcomes.idle_s`` when less),
#: and how many are extracted at a time.
CHECK_EVERY_S = 60.0
BATCH = 5
#: How many of the latest sessions quiet by their turns' times are looked at, and how long
#: before memoryd first looked a session's last turn may be (an Aider session that began
#: before and went on after: its turns carry its start).
LOOKED_AT = 200
LOOKBACK_S = 86400.0


class QuietExtraction:
    def __init__(self, extractor: SessionExtractor, past: PastSessions, db: DatabaseThread,
                 settings: Settings, traffic: Traffic) -> None:
        """``past``: the sessions' rows extraction reads and marks (on the database thread,
        ``db``)."""
        self.extractor = extractor
        self.past = past
        self.db = db
        self.settings = settings
        self.traffic = traffic
        #: sessions whose extraction failed since memoryd started: not tried every minute
        #: (nor marked: `memory import-history` and the next start try them again)
        self.failed: set[str] = set()
        #: when memoryd started: the first look for quiet sessions counts from it
        self.started = time.time()

    async def run(self) -> None:
        """Forever, after the start's own work: the sessions gone quiet without an end."""
        while True:
            await asyncio.sleep(min(CHECK_EVERY_S, self.settings.config.outcomes.idle_s / 5))
            if not self.settings.config.extract.when_quiet:
                continue
            try:
                await self.extract_quiet()
            except Exception as exc:  # a bad session must not end the loop
                if self.db.closing:
                    return
                if refused_by_disk(exc):  # a full or read-only disk: said, not a bug
                    log.warning("Extracting quiet sessions failed (%s); tried again later.",
                                what_went_wrong(exc))
                else:
                    log.exception("Extracting quiet sessions failed.")

    async def extract_quiet(self) -> int:
        """Extract the sessions quiet for ``outcomes.idle_s`` now; how many were read."""
        now = time.time()
        since = await self.db(self.past.quiet_since, self.started)
        quiet = now - self.settings.config.outcomes.idle_s
        found = await self.db(self.past.quiet_to_extract, since - LOOKBACK_S, quiet,
                              MIN_USER_MESSAGES, LOOKED_AT + len(self.failed))
        active = await asyncio.to_thread(lambda: [_active(s) for s in found])  # stat: off
        sessions = [s for s, at in zip(found, active)  # the loop
                    if s.id not in self.failed and since <= at < quiet
                    and (s.extracted is None or at > s.extracted)][:BATCH]
        for session in sessions:
            await self.traffic.give_way()
            read_at = time.time()  # what is said after it is read the next time
            try:
                result = await self.extractor.extract(session.as_dict(), dry_run=False)
            except NotFoundError:  # no transcript to read (Cursor's), or it went
                log.info("Session %s went quiet; no transcript to extract from.", session.id)
            except MemorydError as exc:
                if self.db.closing:
                    raise
                log.warning("Extraction of quiet session %s failed: %s", session.id,
                            exc.message)
                self.failed.add(session.id)
                continue
            else:
                log.info("Session %s went quiet: extracted, %d entries stored.", session.id,
                         len(result.get("stored") or []))
            await self.db(self.extractor.mark_extracted, session.id, read_at)
        return len(sessions)


def _active(session: PastSession) -> float:
    """When a session was last active: its last turn, or its transcript's last write when
    later (0 when neither is known)."""
    turn = session.last_seen if session.last_seen is not None else session.started or 0.0
    try:
        return max(turn, os.stat(session.path).st_mtime) if session.path else turn
    except OSError:
        return turn
