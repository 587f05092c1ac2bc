"""The ``sessions`` table (an agent's sessions, as its transcript and its hooks tell them) and
the ``injections`` log (every memory block given to a session, with what it held).

Three writers share a session's row: the transcript watcher (memoryd.ingest.indexer: its
harness, directory, time span, user messages), the hooks (memoryd.sessions.registry: the live
transcript path, the last answer, the end) and the extractor (when it last read the session).
Each writes only what it knows, so none overwrites the others'.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import apsw

from memoryd.store.fetch import integer

SESSION_COLUMNS = ("id", "harness", "agent", "cwd", "project", "started", "last_seen",
                   "user_messages", "source", "closed", "transcript_path", "last_message",
                   "extracted", "judged")


@dataclass(frozen=True)
class Session:
    id: str
    harness: str
    agent: str
    cwd: str | None
    project: str | None
    started: float | None
    last_seen: float | None
    user_messages: int
    source: str | None  # the transcript it was read from
    closed: float | None
    transcript_path: str | None  # the transcript a hook named
    last_message: str | None
    extracted: float | None
    judged: float | None  # when its outcomes were last judged (memoryd.store.usage)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Injection:
    ts: float
    session: str | None
    agent: str
    event: str
    chars: int
    budget: int
    items: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_SELECT = f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions"
#: A session a hook reported (it named its transcript, ended, answered, or was given a memory
#: block), not one only a transcript told of: what stays when its transcript's source goes.
HOOK_REPORTED = ("(transcript_path IS NOT NULL OR closed IS NOT NULL OR last_message IS NOT "
                 "NULL OR EXISTS (SELECT 1 FROM injections WHERE injections.session = "
                 "sessions.id))")


def _where(agent: str | None, project: str | None) -> tuple[str, list[str]]:
    """The WHERE clause (with its arguments) of the sessions of ``agent`` and ``project``."""
    where, args = [], []
    if agent:
        where.append("agent=?")
        args.append(agent)
    if project:
        where.append("project=?")
        args.append(project)
    return (" WHERE " + " AND ".join(where) if where else ""), args


class Sessions:
    """The ``sessions`` and ``injections`` tables (the database thread)."""

    def __init__(self, db: apsw.Connection) -> None:
        self._db = db

    # -- sessions -----------------------------------------------------------------------

    def projects_since(self, since: float) -> dict[str, int]:
        """The projects sessions ran in (seen since ``since``), and how many sessions each."""
        rows = self._db.execute(
            "SELECT project, count(*) FROM sessions WHERE project IS NOT NULL AND "
            "coalesce(last_seen, started) >= ? GROUP BY project", (since,)).fetchall()
        return {str(project): count for project, count in rows if isinstance(count, int)}

    def register(self, session: str, harness: str, agent: str, cwd: str | None,
                 project: str | None, transcript_path: str | None, ts: float) -> bool:
        """A session a hook reports starting (again: it reopens); returns whether it is new
        to the index."""
        new = self._db.execute("SELECT 1 FROM sessions WHERE id=?", (session,)).fetchone() \
            is None
        self._db.execute(
            "INSERT INTO sessions(id, harness, agent, cwd, project, started, last_seen, "
            "transcript_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "cwd=coalesce(excluded.cwd, cwd), project=coalesce(excluded.project, project), "
            "last_seen=max(coalesce(last_seen, 0), excluded.last_seen), closed=NULL, "
            "transcript_path=coalesce(excluded.transcript_path, transcript_path)",
            (session, harness, agent, cwd, project, ts, ts, transcript_path))
        return new

    def touch(self, session: str, ts: float, last_message: str | None, closed: bool) -> None:
        """A session seen at ``ts``, with its last answer, or ended (``closed``)."""
        self._db.execute(
            "UPDATE sessions SET last_seen=max(coalesce(last_seen, 0), ?), "
            "last_message=coalesce(?, last_message), closed=CASE WHEN ? THEN ? ELSE closed END "
            "WHERE id=?", (ts, last_message, closed, ts, session))

    def read_from_transcript(self, session: Mapping[str, Any], agent: str,
                             project: str | None, source: str) -> None:
        """What a transcript tells of its session (``session``: id, harness, cwd, started,
        last_seen, and the user messages read this time, added to those counted before, or,
        with ``whole_file``, all of them: the file was read whole, and the session holds at
        least as many)."""
        self._db.execute(
            "INSERT INTO sessions(id, harness, agent, cwd, project, started, last_seen, "
            "user_messages, source) VALUES (:id, :harness, :agent, :cwd, :project, :started, "
            ":last_seen, :user_messages, :source) ON CONFLICT(id) DO UPDATE SET "
            "cwd=coalesce(excluded.cwd, cwd), project=coalesce(excluded.project, project), "
            "source=coalesce(source, excluded.source), "
            "started=min(coalesce(started, excluded.started), "
            "coalesce(excluded.started, started)), "
            "last_seen=max(coalesce(last_seen, 0), coalesce(excluded.last_seen, 0)), "
            "user_messages=CASE WHEN :whole_file "
            "THEN max(user_messages, excluded.user_messages) "
            "ELSE user_messages + excluded.user_messages END",
            {"whole_file": False, **session, "agent": agent, "project": project,
             "source": source})

    def forget_read_from(self, paths: list[str]) -> int:
        """The transcripts ``paths`` leave the index (their source was removed): the sessions
        only they told of leave the registry (read again, they are counted anew, once); a
        session a hook reported too (it named its transcript, ended, answered, or was given a
        memory block) stays, as the hook told it, without the user messages the files
        counted. Returns how many left."""
        if not paths:
            return 0
        # a session a hook registered first has no source of its own (older rows): the
        # transcript its hook named is the file read
        where = "coalesce(source, transcript_path) IN (SELECT value FROM json_each(?))"
        listed = json.dumps(paths)
        gone = self._db.execute(
            f"DELETE FROM sessions WHERE {where} AND NOT {HOOK_REPORTED} RETURNING id",
            (listed,)).fetchall()
        self._db.execute(f"UPDATE sessions SET user_messages=0, source=NULL WHERE {where}",
                         (listed,))
        return len(gone)

    def mark_extracted(self, session: str, ts: float) -> None:
        self._db.execute("UPDATE sessions SET extracted=? WHERE id=?", (ts, session))

    def get(self, session: str) -> Session | None:
        row = self._db.execute(_SELECT + " WHERE id=?", (session,)).fetchone()
        return Session(*row) if row else None

    def injected(self, session: str) -> bool:
        """Whether memoryd logged an injection into ``session`` (one it may never have
        registered: `memory context --session`)."""
        return self._db.execute("SELECT 1 FROM injections WHERE session = ? LIMIT 1",
                                (session,)).fetchone() is not None

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` session ids that start with ``prefix``."""
        return [row[0] for row in self._db.execute(
            "SELECT id FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\uffff", limit))]

    def newest(self, agent: str | None, project: str | None, limit: int,
               offset: int = 0) -> list[Session]:
        """The newest sessions first, of ``agent`` and ``project`` (None: any), the first
        ``offset`` left out."""
        where, args = _where(agent, project)
        return [Session(*row) for row in self._db.execute(
            _SELECT + where + " ORDER BY last_seen DESC, id LIMIT ? OFFSET ?",
            [*args, limit, offset])]

    def count(self, agent: str | None, project: str | None) -> int:
        """How many sessions :meth:`newest` pages through."""
        where, args = _where(agent, project)
        return integer(self._db, "SELECT count(*) FROM sessions" + where, args)

    def last_messages(self, agent: str) -> list[tuple[str, str]]:
        """(session, its last message) of the agent's sessions that have one."""
        return [(s, m) for s, m in self._db.execute(
            "SELECT id, last_message FROM sessions WHERE agent=? AND last_message IS NOT NULL",
            (agent,))]

    def set_last_messages(self, messages: Mapping[str, str]) -> None:
        """Sessions' last messages replaced (session → message)."""
        self._db.executemany("UPDATE sessions SET last_message=? WHERE id=?",
                             ((m, s) for s, m in messages.items()))

    # -- injections ---------------------------------------------------------------------

    def log_injection(self, ts: float, session: str | None, agent: str, event: str,
                      chars: int, budget: int, items: list[dict[str, Any]]) -> None:
        self._db.execute(
            "INSERT INTO injections(ts, session, agent, event, chars, budget, items) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (ts, session, agent, event, chars, budget, json.dumps(items)))

    def logged_items(self) -> list[tuple[int, str, str | None, str]]:
        """(id, agent, session, items as stored) of every logged block (`memory purge`)."""
        return [(number, agent, session, items) for number, agent, session, items in
                self._db.execute("SELECT id, agent, session, items FROM injections")]

    def set_logged_items(self, items: Mapping[int, str]) -> None:
        """Logged blocks' items replaced (id → items as stored)."""
        self._db.executemany("UPDATE injections SET items=? WHERE id=?",
                             ((i, number) for number, i in items.items()))

    def latest_injected(self) -> str | None:
        """The session memoryd injected into last."""
        row = self._db.execute(
            "SELECT session FROM injections WHERE session IS NOT NULL ORDER BY ts DESC "
            "LIMIT 1").fetchone()
        return row[0] if row else None

    def injections(self, session: str | None) -> list[Injection]:
        """A session's injections, oldest first (None: the session of the newest one)."""
        if session is None:
            row = self._db.execute(
                "SELECT session FROM injections ORDER BY ts DESC LIMIT 1").fetchone()
            if row is None:
                return []
            session = row[0]
        rows = self._db.execute(
            "SELECT ts, session, agent, event, chars, budget, items FROM injections "
            "WHERE session IS ? ORDER BY ts", (session,))
        return [Injection(ts, s, a, e, c, b, json.loads(items))
                for ts, s, a, e, c, b, items in rows]
