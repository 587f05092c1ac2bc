"""What `memory import-history` reads and keeps in the index: the sessions not yet extracted
and the import's own checkpoint (memoryd.sessions.history). A session's extraction mark is
set through memoryd.store.usage.Usage.mark_extracted, which also writes it to the outcomes
file, so that a rebuilt index keeps it.

The checkpoint is one row of ``meta`` (a JSON object: the harnesses and the date it was asked
for, when it began). How far it got needs no record of its own: the files' tail offsets (the
``files`` table, written in the same transaction as the turns they stand for) say what is
indexed, and a session's ``extracted`` time what is extracted. Both outlive a kill (and the
mark a rebuild), so an import stopped at any point goes on where it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import apsw

#: The ``meta`` key of the import running (absent when none is).
JOB_KEY = "import_history"
#: The ``meta`` key of when memoryd began extracting the sessions that go quiet without an end
#: (memoryd.sessions.quiet): those quiet before it are history, import-history's to extract.
QUIET_SINCE_KEY = "extract_quiet_since"


@dataclass(frozen=True)
class PastSession:
    """A session of the registry as extraction needs it."""

    id: str
    harness: str
    agent: str
    cwd: str | None
    started: float | None
    last_seen: float | None
    closed: float | None
    path: str | None  # its transcript: the one a hook named, else the one it was read from
    extracted: float | None = None  # when extraction last read it (quiet_to_extract's rows)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "harness": self.harness, "agent": self.agent, "cwd": self.cwd,
                "started": self.started, "last_seen": self.last_seen, "closed": self.closed,
                "transcript_path": self.path}


class PastSessions:
    """The rows import-history reads and writes (the database thread)."""

    def __init__(self, db: apsw.Connection) -> None:
        self._db = db

    def not_extracted(self) -> list[PastSession]:
        """Every session extraction has not read yet, oldest first."""
        return [PastSession(*row) for row in self._db.execute(
            "SELECT id, harness, agent, cwd, started, last_seen, closed, "
            "coalesce(transcript_path, source) FROM sessions WHERE extracted IS NULL "
            "ORDER BY coalesce(last_seen, started, 0), id")]

    def quiet_to_extract(self, after: float, quiet_before: float, min_messages: int,
                         limit: int) -> list[PastSession]:
        """The sessions no end was heard of, with at least ``min_messages`` user messages,
        whose last turn was said between ``after`` and ``quiet_before``, and that extraction
        has not read since ``quiet_before``: the latest first, at most ``limit``, with when
        extraction read them (the caller tells which went on after)."""
        return [PastSession(*row) for row in self._db.execute(
            "SELECT id, harness, agent, cwd, started, last_seen, closed, "
            "coalesce(transcript_path, source), extracted FROM sessions "
            "WHERE closed IS NULL AND user_messages >= ? "
            "AND coalesce(last_seen, started) BETWEEN ? AND ? "
            "AND (extracted IS NULL OR extracted < ?) "
            "ORDER BY coalesce(last_seen, started) DESC, id LIMIT ?",
            (min_messages, after, quiet_before, quiet_before, limit))]

    def quiet_since(self, now: float) -> float:
        """When extraction of quiet sessions began (``now``, the first time it is asked, or
        when what was kept is no time)."""
        try:
            return float(self._meta(QUIET_SINCE_KEY) or "")
        except ValueError:
            pass
        # (written outside the handler: a write the disk refuses is that, not a ValueError)
        self._set_meta(QUIET_SINCE_KEY, repr(now))
        return now

    def job(self) -> dict[str, Any] | None:
        """The import that is running (or was, when memoryd stopped), as it was asked."""
        try:
            job = json.loads(self._meta(JOB_KEY) or "")
        except ValueError:
            return None
        return job if isinstance(job, dict) else None

    def begin_job(self, job: dict[str, Any]) -> None:
        self._set_meta(JOB_KEY, json.dumps(job))

    def end_job(self) -> None:
        with self._db:
            self._db.execute("DELETE FROM meta WHERE key=?", (JOB_KEY,))

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        with self._db:
            self._db.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                             "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))
