"""What became of the entries injected into sessions, and each entry's usage record (schema 19).

The ``outcomes`` table holds one row per entry and session it was injected into: when it was
first injected there and how often, and — once the session has been judged
(memoryd.sessions.usage, with memoryd.sessions.outcomes) — ``followed``, ``broken`` or
``no occasion``, the reason in words and the evidence (the steps of the transcript, as JSON).
A row whose outcome is NULL is injected and not judged yet.

An entry's **usage record** (:class:`UsageRecord`) is the sum of its rows: the sessions it
was injected into, how many followed, broke or had no occasion for it, how many wait to be
judged, and when it was last injected, followed and broken. It is what ``memory get`` shows,
what ``memory list --usage`` ranks, and what the passes that act on use (promotion by
evidence, retention by use) read through :meth:`Usage.record` / :meth:`Usage.records`.

Rows are keyed by the entry's uid and nothing deletes them with the entry: a pass that
merges, archives or restores an entry, and the undo of it, leave the entry's history as it
was. A verdict that changes is journaled on the entry (``memory history``: action
``outcome``, with the session and the reason).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memoryd.store.database import ENTRY_COLUMNS, Store, row_to_entry

FOLLOWED, BROKEN, NO_OCCASION = "followed", "broken", "no occasion"
#: Who the journal says changed an outcome.
ACTOR = "memoryd (outcomes)"
#: The rankings of ``memory list --usage``.
RANKINGS = ("broken", "followed", "unused")
#: The kinds an agent is told to act on (transcript chunks injected as search hits are not).
USABLE_KINDS = ("lesson", "fact", "note", "feedback")


@dataclass(frozen=True)
class UsageRecord:
    """An entry's usage: sessions it was injected into and what became of it there."""

    entry: str
    injected: int
    followed: int
    broken: int
    no_occasion: int
    pending: int  # injected into sessions not judged yet
    last_injected: float | None
    last_followed: float | None
    last_broken: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_AGGREGATE = (
    "SELECT entry, count(*), sum(outcome = 'followed'), sum(outcome = 'broken'), "
    "sum(outcome = 'no occasion'), sum(outcome IS NULL), max(injected), "
    "max(CASE WHEN outcome = 'followed' THEN coalesce(at, injected) END), "
    "max(CASE WHEN outcome = 'broken' THEN coalesce(at, injected) END) FROM outcomes")


def _record(row: Sequence[Any]) -> UsageRecord:
    entry, injected, followed, broken, none, pending, last, last_followed, last_broken = row
    return UsageRecord(entry, injected or 0, followed or 0, broken or 0, none or 0,
                       pending or 0, last, last_followed, last_broken)


class Usage:
    """Runs on the database thread; the caller holds the transaction where it says so."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- injections and outcomes ----------------------------------------------------------

    def record_injection(self, session: str, agent: str, entries: Iterable[str],
                         ts: float) -> None:
        """Entries injected into ``session`` at ``ts`` (inside the caller's transaction): a
        row each, waiting to be judged; one injected again counts its injections."""
        self.store.db.executemany(
            "INSERT INTO outcomes(entry, session, agent, injected) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(entry, session) DO UPDATE SET injections = injections + 1, "
            "injected = min(injected, excluded.injected)",
            [(uid, session, agent, ts) for uid in dict.fromkeys(entries)])

    def session_rows(self, session: str) -> list[dict[str, Any]]:
        """Every entry injected into ``session``, with its outcome (None: not judged)."""
        names = ("entry", "agent", "injected", "injections", "outcome", "why", "evidence", "at",
                 "judged")
        rows = self.store.db.execute(
            f"SELECT {', '.join(names)} FROM outcomes WHERE session=? ORDER BY injected, entry",
            (session,)).fetchall()
        out = []
        for row in rows:
            item = dict(zip(names, row))
            item["evidence"] = json.loads(item["evidence"]) if item["evidence"] else []
            out.append(item)
        return out

    def save_outcomes(self, session: str, verdicts: Sequence[tuple[str, str, str, list[Any],
                                                                   float | None]]) -> int:
        """Store ``(entry, outcome, why, evidence, at)`` for entries of ``session`` and mark
        the session judged; a verdict that changed is journaled. Returns how many changed."""
        now = time.time()
        changed = 0
        with self.store.db:
            before = {row[0]: row[1] for row in self.store.db.execute(
                "SELECT entry, outcome FROM outcomes WHERE session=?", (session,))}
            for entry, outcome, why, evidence, at in verdicts:
                if entry not in before:
                    continue  # not injected there (a row is made at injection)
                self.store.db.execute(
                    "UPDATE outcomes SET outcome=?, why=?, evidence=?, at=?, judged=? "
                    "WHERE entry=? AND session=?",
                    (outcome, why, json.dumps(evidence, ensure_ascii=False), at, now, entry,
                     session))
                if before[entry] != outcome:
                    changed += 1
                    self.store.journal(
                        entry, "outcome", ACTOR,
                        {"session": session, "outcome": before[entry]}
                        if before[entry] is not None else None,
                        {"session": session, "outcome": outcome, "why": why}, now)
            self.store.db.execute("UPDATE sessions SET judged=? WHERE id=?", (now, session))
        return changed

    def mark_judged(self, session: str) -> None:
        """A session that cannot be judged now (its transcript is unreadable): not tried
        again until it moves on."""
        with self.store.db:
            self.store.db.execute("UPDATE sessions SET judged=? WHERE id=?", (time.time(), session))

    def due(self, session: str) -> bool:
        """``session`` has injections not judged, or changed since it was judged."""
        row = self.store.db.execute(
            "SELECT coalesce(s.judged, 0), coalesce(s.last_seen, 0), "
            "(SELECT max(injected) FROM outcomes WHERE session=s.id), "
            "(SELECT count(*) FROM outcomes WHERE session=s.id AND outcome IS NULL) "
            "FROM sessions s WHERE s.id=?", (session,)).fetchone()
        if row is None or row[2] is None:
            return False
        judged, last_seen, injected, pending = row
        return bool(pending) or judged < max(last_seen, injected)

    def quiet_sessions(self, quiet_since: float, limit: int) -> list[str]:
        """Sessions due to be judged that ended, or have been quiet since ``quiet_since``."""
        rows = self.store.db.execute(
            "SELECT s.id FROM sessions s WHERE s.id IN (SELECT DISTINCT session FROM outcomes) "
            "AND coalesce(s.judged, 0) < max(coalesce(s.last_seen, 0), "
            "(SELECT max(injected) FROM outcomes WHERE session=s.id)) "
            "AND (s.closed IS NOT NULL OR coalesce(s.last_seen, 0) < ?) "
            "ORDER BY s.last_seen LIMIT ?", (quiet_since, limit)).fetchall()
        return [row[0] for row in rows]

    # -- usage records --------------------------------------------------------------------

    def record(self, entry: str) -> UsageRecord:
        """``entry``'s usage record (all zero when it was never injected)."""
        row = self.store.db.execute(_AGGREGATE + " WHERE entry=?", (entry,)).fetchone()
        if row is None or row[0] is None:
            return UsageRecord(entry, 0, 0, 0, 0, 0, None, None, None)
        return _record(row)

    def records(self, entries: Sequence[str]) -> dict[str, UsageRecord]:
        """The usage records of ``entries`` (those ever injected)."""
        out: dict[str, UsageRecord] = {}
        for start in range(0, len(entries), 500):
            part = list(entries[start:start + 500])
            marks = ", ".join("?" for _ in part)
            for row in self.store.db.execute(
                    _AGGREGATE + f" WHERE entry IN ({marks}) GROUP BY entry", part):
                out[row[0]] = _record(row)
        return out

    def ranking(self, by: str, agents: Sequence[str] | None, kinds: Sequence[str] | None,
                limit: int) -> list[tuple[dict[str, Any], UsageRecord]]:
        """Active entries ranked by use: ``broken`` (most sessions broken first),
        ``followed`` (most followed first), ``unused`` (injected into sessions that were
        judged, never followed nor broken: most injected first)."""
        where = ["e.status = 'active'"]
        params: list[Any] = []
        chosen_kinds = list(kinds or USABLE_KINDS)
        where.append(f"e.kind IN ({', '.join('?' for _ in chosen_kinds)})")
        params.extend(chosen_kinds)
        if agents:
            where.append(f"e.agent IN ({', '.join('?' for _ in agents)})")
            params.extend(agents)
        having, order = {
            "broken": ("broken > 0", "broken DESC, last_broken DESC"),
            "followed": ("followed > 0", "followed DESC, last_followed DESC"),
            "unused": ("followed = 0 AND broken = 0 AND judged > 0",
                       "injected DESC, last_injected DESC"),
        }[by]
        columns = ", ".join(f"e.{c}" for c in ("id", *ENTRY_COLUMNS))
        rows = self.store.db.execute(
            f"SELECT {columns}, u.* FROM entries e JOIN ("
            "SELECT entry, count(*) AS injected, sum(outcome = 'followed') AS followed, "
            "sum(outcome = 'broken') AS broken, sum(outcome = 'no occasion') AS none_, "
            "sum(outcome IS NULL) AS pending, max(injected) AS last_injected, "
            "max(CASE WHEN outcome = 'followed' THEN coalesce(at, injected) END) "
            "AS last_followed, "
            "max(CASE WHEN outcome = 'broken' THEN coalesce(at, injected) END) AS last_broken, "
            "sum(outcome IS NOT NULL) AS judged FROM outcomes GROUP BY entry) u "
            f"ON u.entry = e.uid WHERE {' AND '.join(where)} AND {having} "
            f"ORDER BY {order}, e.uid LIMIT ?", [*params, limit]).fetchall()
        width = 1 + len(ENTRY_COLUMNS)
        return [(row_to_entry(row[:width]), _record(row[width:width + 9])) for row in rows]
