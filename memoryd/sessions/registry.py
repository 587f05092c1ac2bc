"""Agent sessions as the hooks report them: registration, progress, the injection log.

Runs on the database thread. The transcript watcher fills the same ``sessions`` table from the
files; the hooks add what only they know (the live transcript path, the last answer, the end).
"""

from __future__ import annotations

import json
import time
from typing import Any

from memoryd.project import project_of
from memoryd.sessions.context import Block, one_line
from memoryd.sessions.explain import TEXT_CHARS
from memoryd.store.database import Store
from memoryd.store.usage import Usage

#: The agent whose namespace a harness's sessions read and write.
HARNESS_AGENTS = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini",
                  "cursor": "cursor"}
MAX_LAST_MESSAGE_CHARS = 4000


class Registry:
    def __init__(self, store: Store) -> None:
        self.store = store

    def register(self, session: str, harness: str, agent: str, cwd: str | None,
                 transcript_path: str | None, ts: float) -> None:
        project = project_of(cwd) if cwd else None
        with self.store.db:
            self.store.db.execute(
                "INSERT INTO sessions(id, harness, agent, cwd, project, started, last_seen, "
                "transcript_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "cwd=coalesce(excluded.cwd, cwd), project=coalesce(excluded.project, project), "
                "last_seen=max(coalesce(last_seen, 0), excluded.last_seen), closed=NULL, "
                "transcript_path=coalesce(excluded.transcript_path, transcript_path)",
                (session, harness, agent, cwd, project, ts, ts, transcript_path))

    def touch(self, session: str, ts: float, last_message: str | None = None,
              closed: bool = False) -> None:
        with self.store.db:
            self.store.db.execute(
                "UPDATE sessions SET last_seen=max(coalesce(last_seen, 0), ?), "
                "last_message=coalesce(?, last_message), closed=CASE WHEN ? THEN ? ELSE closed END "
                "WHERE id=?",
                (ts, (last_message or "")[:MAX_LAST_MESSAGE_CHARS] or None, closed, ts, session))

    def session(self, session: str) -> dict[str, Any] | None:
        cursor = self.store.db.execute("SELECT * FROM sessions WHERE id=?", (session,))
        row = cursor.fetchone()
        return dict(zip([d[0] for d in cursor.getdescription()], row)) if row else None

    def sessions(self, agent: str | None, project: str | None, limit: int) -> list[dict[str, Any]]:
        """The newest sessions first, filtered by agent and project; [] when none match."""
        where, args = [], []
        if agent:
            where.append("agent=?")
            args.append(agent)
        if project:
            where.append("project=?")
            args.append(project)
        # the column names from the schema: an apsw cursor with no row has no description
        names = [row[1] for row in self.store.db.execute("PRAGMA table_info(sessions)")]
        rows = self.store.db.execute(
            f"SELECT {', '.join(names)} FROM sessions"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY last_seen DESC LIMIT ?", [*args, limit]).fetchall()
        return [dict(zip(names, row)) for row in rows]

    def log_injection(self, session: str | None, agent: str, event: str, block: Block,
                      budget: int, track: bool = False) -> None:
        """Log what a block held; ``track``: and count each entry the agent got as injected
        into the session, to be judged (memoryd.store.usage: its outcome, its usage record)."""
        now = time.time()
        usage = Usage(self.store)
        with usage.recording():  # the outcomes file's lines go with the commit
            self.store.db.execute(
                "INSERT INTO injections(ts, session, agent, event, chars, budget, items) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (now, session, agent, event, len(block.text), budget,
                 json.dumps([{**explained, "text": one_line(item.text, TEXT_CHARS)}  # as read
                             for explained, item in zip(block.explain(),
                                                        block.items + block.dropped)])))
            if track and session:
                usage.record_injection(
                    session, agent, [i.entry_id for i in block.items if i.entry_id], now)

    def latest_injected(self) -> str | None:
        """The session memoryd injected into last."""
        row = self.store.db.execute(
            "SELECT session FROM injections WHERE session IS NOT NULL ORDER BY ts DESC "
            "LIMIT 1").fetchone()
        return row[0] if row else None

    def injections(self, session: str | None) -> list[dict[str, Any]]:
        if session is None:
            row = self.store.db.execute(
                "SELECT session FROM injections ORDER BY ts DESC LIMIT 1").fetchone()
            if row is None:
                return []
            session = row[0]
        rows = self.store.db.execute(
            "SELECT ts, session, agent, event, chars, budget, items FROM injections "
            "WHERE session IS ? ORDER BY ts", (session,))
        return [{"ts": ts, "session": s, "agent": a, "event": e, "chars": c, "budget": b,
                 "items": json.loads(items)} for ts, s, a, e, c, b, items in rows]
