"""Agent sessions as the hooks report them: registration, progress, the injection log.

Runs on the database thread. The transcript watcher fills the same ``sessions`` table from the
files; the hooks add what only they know (the live transcript path, the last answer, the end).
"""

from __future__ import annotations

import time
from typing import Any

from memoryd.errors import NotFoundError
from memoryd.prefixes import MIN_CHARS, by_prefix
from memoryd.project import project_of
from memoryd.sessions.context import Block, one_line
from memoryd.sessions.explain import TEXT_CHARS
from memoryd.store.database import Store
from memoryd.store.usage import Usage

#: The agent whose namespace a harness's sessions read and write.
HARNESS_AGENTS = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini",
                  "cursor": "cursor", "copilot": "copilot", "cline": "cline",
                  "opencode": "opencode"}
MAX_LAST_MESSAGE_CHARS = 4000


class Registry:
    def __init__(self, store: Store) -> None:
        self.store = store

    def register(self, session: str, harness: str, agent: str, cwd: str | None,
                 transcript_path: str | None, ts: float) -> None:
        project = project_of(cwd) if cwd else None
        Usage(self.store).register_session(session, harness, agent, cwd, project,
                                           transcript_path, ts)

    def touch(self, session: str, ts: float, last_message: str | None = None,
              closed: bool = False) -> None:
        with self.store.transaction():
            self.store.sessions.touch(session, ts,
                                      (last_message or "")[:MAX_LAST_MESSAGE_CHARS] or None,
                                      closed)

    def session(self, session: str) -> dict[str, Any] | None:
        found = self.store.sessions.get(session)
        return found.as_dict() if found is not None else None

    def resolve(self, session: str, *, injected: bool = False) -> str:
        """The id of the session ``session`` names: itself (a registered session, or with
        ``injected`` one memoryd logged an injection into), or the one session whose id it
        begins (4+ characters: a harness's ids are UUIDs). An entry's id is not taken for a
        session's unsaid (`memory explain ID` of an entry's id): the error says whose it is."""
        sessions = self.store.sessions
        if sessions.get(session) is not None or (injected and sessions.injected(session)):
            return session
        try:
            return by_prefix(session, sessions.ids_with_prefix, "session",
                             " (memory sessions lists them)")
        except NotFoundError:
            if len(session) >= MIN_CHARS and (self.store.uids_with_prefix(session, 1)
                                               or self.store.uids_with_prefix(session.lower(), 1)):
                raise NotFoundError(
                    f"no session with id {session!r}: it is an entry's id (`memory get "
                    f"{session}` shows the entry, `memory history {session}` its versions; "
                    "memory sessions lists the sessions)") from None
            raise

    def named(self, session: str) -> dict[str, Any]:
        """The registered session ``session`` names (its id, or the start of it)."""
        found = self.session(self.resolve(session))
        assert found is not None
        return found

    def sessions(self, agent: str | None, project: str | None, limit: int,
                 offset: int = 0) -> dict[str, Any]:
        """A page of the sessions, newest first, filtered by agent and project, and how many
        there are in all: {"sessions", "total"}."""
        sessions = self.store.sessions
        return {"sessions": [s.as_dict() for s in sessions.newest(agent, project, limit, offset)],
                "total": sessions.count(agent, project)}

    def log_injection(self, session: str | None, agent: str, event: str, block: Block,
                      budget: int, track: bool = False) -> None:
        """Log what a block held; ``track``: and count each entry the agent got as injected
        into the session, to be judged (memoryd.store.usage: its outcome, its usage record)."""
        now = time.time()
        usage = Usage(self.store)
        with usage.recording():  # the outcomes file's lines go with the commit
            usage.log_injection(
                now, session, agent, event, len(block.text), budget,
                [{**explained, "text": one_line(item.text, TEXT_CHARS)}  # as read
                 for explained, item in zip(block.explain(), block.items + block.dropped)])
            if track and session:
                usage.record_injection(
                    session, agent, [i.entry_id for i in block.items if i.entry_id], now)

    def latest_injected(self) -> str | None:
        """The session memoryd injected into last."""
        return self.store.sessions.latest_injected()

    def injections(self, session: str | None) -> list[dict[str, Any]]:
        return [i.as_dict() for i in self.store.sessions.injections(session)]
