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
was. A verdict that changes is an event of the entry (``memory history``: action
``outcome``, with the session and the reason).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, cast

from memoryd.store.database import ENTRY_COLUMNS, SELECT_ENTRY, Store, row_to_entry
from memoryd.store.fetch import integer, one
from memoryd.store.records import StoredEntry
from memoryd.store.usage_log import (
    KEY,
    SINCE_KEY,
    UsageLog,
    inject_record,
    log_record,
    outcome_event,
    outcome_record,
    seal,
    sealed_at,
    session_record,
)

FOLLOWED, BROKEN = "followed", "broken"
#: The rankings of ``memory list --usage``.
RANKINGS = ("broken", "followed", "unused")
#: The kinds an agent is told to act on (transcript chunks injected as search hits are not).
USABLE_KINDS = ("lesson", "fact", "note", "feedback")
DAY_S = 86_400.0
#: The kinds that sink in the block and are archived by the retain pass when unused (a fact
#: holds a value something asks for now and then, a name, a port: "no occasion" says little
#: of it; feedback is the user's own words).
DISUSE_KINDS = ("lesson", "note")
#: The judged sessions of an entry's scope (its project, or its agents anywhere for a global
#: entry) there must have been since it was last used for it to count as unused: a project
#: worked on twice a year keeps its memory, however old.
UNUSED_AFTER_SESSIONS = 10
#: The action of the retain pass's change that archives an unused entry, and of its undo.
ARCHIVE_UNUSED = "archive unused"
RESTORE_UNUSED = "undo " + ARCHIVE_UNUSED


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
    """Runs on the database thread. What it records goes to the outcomes file too
    (memoryd.store.usage_log), in the transaction that records it (:meth:`recording`)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._db = store._db
        self._log: UsageLog | None = None
        #: the file's lines of the transaction being recorded (:meth:`recording`)
        self._lines: list[dict[str, Any]] | None = None

    @property
    def log(self) -> UsageLog:
        if self._log is None:
            self._log = UsageLog.beside(self.store)
        return self._log

    @contextmanager
    def recording(self) -> Iterator[None]:
        """A transaction whose injections and outcomes also go to the outcomes file: its
        lines are appended at its end, before the commit, and taken back when it fails (as
        the run log: memoryd.passes.run_log_writer). Inside one already, a savepoint of
        it; the outermost must be this one, not a plain ``store.transaction()``."""
        if self._lines is not None:
            with self._db:
                yield
            return
        lines: list[dict[str, Any]] = []
        self._lines = lines
        appended: tuple[int, int] | None = None
        try:
            with self._db:
                yield
                if lines:
                    appended = self.log.append(lines)
                    self.store.set_meta(KEY, str(appended[1]))
        except BaseException:
            if appended is not None:
                self.log.cut(appended[0])
            raise
        finally:
            self._lines = None

    def _line(self, record: dict[str, Any] | None) -> None:
        assert self._lines is not None, "an outcomes write outside recording()"
        if record is not None:
            self._lines.append(record)

    # -- injections and outcomes ----------------------------------------------------------

    def record_injection(self, session: str, agent: str, entries: Iterable[str],
                         ts: float) -> None:
        """Entries injected into ``session`` at ``ts``: a row each, waiting to be judged; one
        injected again counts its injections. In the caller's :meth:`recording`, or one of
        its own."""
        uids = list(dict.fromkeys(entries))
        if not uids:
            return
        with self.recording():
            first = self._db.execute("SELECT 1 FROM outcomes WHERE session=? LIMIT 1",
                                          (session,)).fetchone() is None
            self._db.executemany(
                "INSERT INTO outcomes(entry, session, agent, injected) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(entry, session) DO UPDATE SET injections = injections + 1, "
                "injected = min(injected, excluded.injected)",
                [(uid, session, agent, ts) for uid in uids])
            self._db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                                  (SINCE_KEY, repr(ts)))
            if first:  # what a rebuilt index needs to judge it (its transcript, its project)
                self._line(session_record(self.store, session))
            self._line(inject_record(session, agent, uids, ts))

    def log_injection(self, ts: float, session: str | None, agent: str, event: str,
                      chars: int, budget: int, items: list[dict[str, Any]]) -> None:
        """A block given to ``agent``, in the injection log (``memory explain``) and in the
        file, so that a rebuilt index still explains it. In the caller's :meth:`recording`,
        or one of its own."""
        with self.recording():
            self.store.sessions.log_injection(ts, session, agent, event, chars, budget, items)
            self._line(log_record(ts, session, agent, event, chars, budget, items))

    def register_session(self, session: str, harness: str, agent: str, cwd: str | None,
                         project: str | None, transcript_path: str | None, ts: float) -> None:
        """A session a hook reports starting: in the index, and when it is new to it in the
        file too, so that a rebuilt index still lists it (its transcript may never be read).
        In the caller's :meth:`recording`, or one of its own."""
        with self.recording():
            if self.store.sessions.register(session, harness, agent, cwd, project,
                                            transcript_path, ts):
                self._line(session_record(self.store, session))

    def mark_extracted(self, session: str, ts: float) -> None:
        """Extraction read ``session`` at ``ts``: in the index and in the file (fsynced: a
        session extracted is not extracted again after a rebuild, nor after a power loss)."""
        with self.recording():
            self.store.sessions.mark_extracted(session, ts)
            self._line(session_record(self.store, session))
        self.log.sync()

    def session_rows(self, session: str) -> list[dict[str, Any]]:
        """Every entry injected into ``session``, with its outcome (None: not judged)."""
        names = ("entry", "agent", "injected", "injections", "outcome", "why", "evidence", "at",
                 "judged")
        rows = self._db.execute(
            f"SELECT {', '.join(names)} FROM outcomes WHERE session=? ORDER BY injected, entry",
            (session,)).fetchall()
        out = []
        for row in rows:
            item = dict(zip(names, row))
            evidence = cast("str | None", item["evidence"])
            item["evidence"] = json.loads(evidence) if evidence else []
            out.append(item)
        return out

    def save_outcomes(self, session: str, verdicts: Sequence[tuple[str, str, str, list[Any],
                                                                   float | None]]) -> int:
        """Store ``(entry, outcome, why, evidence, at)`` for entries of ``session`` and mark
        the session judged; a verdict that changed is an event. Returns how many changed."""
        now = time.time()
        changed = 0
        with self.recording():
            before = {row[0]: row[1:] for row in self._db.execute(
                "SELECT entry, outcome, why, evidence, at FROM outcomes WHERE session=?",
                (session,))}
            for entry, outcome, why, evidence, at in verdicts:
                if entry not in before:
                    continue  # not injected there (a row is made at injection)
                stored = json.dumps(evidence, ensure_ascii=False)
                self._db.execute(
                    "UPDATE outcomes SET outcome=?, why=?, evidence=?, at=?, judged=? "
                    "WHERE entry=? AND session=?", (outcome, why, stored, at, now, entry, session))
                if before[entry] != (outcome, why, stored, at):
                    self._line(outcome_record(session, entry, outcome, why, evidence, at, now))
                if before[entry][0] != outcome:
                    changed += 1
                    outcome_event(self.store, entry, session, before[entry][0], outcome, why,
                                  now)
            self._db.execute("UPDATE sessions SET judged=? WHERE id=?", (now, session))
            self._line(session_record(self.store, session))
        return changed

    def mark_judged(self, session: str) -> None:
        """A session that cannot be judged now (its transcript is unreadable): not tried
        again until it moves on."""
        with self.recording():
            self._db.execute("UPDATE sessions SET judged=? WHERE id=?", (time.time(), session))
            self._line(session_record(self.store, session))

    def due(self, session: str) -> bool:
        """``session`` has injections not judged, or changed since it was judged."""
        row = self._db.execute(
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
        rows = self._db.execute(
            "SELECT s.id FROM sessions s WHERE s.id IN (SELECT DISTINCT session FROM outcomes) "
            "AND coalesce(s.judged, 0) < max(coalesce(s.last_seen, 0), "
            "(SELECT max(injected) FROM outcomes WHERE session=s.id)) "
            "AND (s.closed IS NOT NULL OR coalesce(s.last_seen, 0) < ?) "
            "ORDER BY s.last_seen LIMIT ?", (quiet_since, limit)).fetchall()
        return [cast(str, row[0]) for row in rows]

    def reasons_of(self, agent: str) -> list[tuple[str, str, str | None, str | None]]:
        """(entry, session, why, evidence as stored) of the agent's judged outcomes: what
        `memory purge` reads for the text it removes."""
        return [(entry, session, why, evidence) for entry, session, why, evidence in
                self._db.execute("SELECT entry, session, why, evidence FROM outcomes "
                                 "WHERE agent=? AND outcome IS NOT NULL", (agent,))]

    def purge(self, uids: Iterable[str],
              reasons: dict[tuple[str, str], tuple[str | None, str | None]]) -> None:
        """`memory purge`: the rows of the purged entries deleted, and the (entry, session)
        rows whose reason or evidence quoted the text given theirs scrubbed (why, evidence)."""
        self._db.executemany("DELETE FROM outcomes WHERE entry=?", ((uid,) for uid in uids))
        self._db.executemany(
            "UPDATE outcomes SET why=?, evidence=? WHERE entry=? AND session=?",
            ((w, e, entry, s) for (entry, s), (w, e) in reasons.items()))

    def seal(self, sessions: dict[str, float]) -> None:
        """`memory purge`: what these sessions did before then (session → when) is not read
        again when they are judged: their transcripts hold the purged text (the purge writes
        the outcomes file's ``seal`` lines itself, as it rewrites the file)."""
        for session, ts in sessions.items():
            seal(self.store, session, ts)

    def sealed(self, session: str) -> float | None:
        """When a purge sealed ``session`` (None: never): it is judged from what it did
        since."""
        return sealed_at(self.store, session)

    def live_sessions(self, agent: str, seen_since: float) -> list[LiveSession]:
        """``agent``'s sessions not ended and seen since ``seen_since``, the latest seen first:
        those an MCP read of the agent may be part of (memoryd.sessions.mcp_reads)."""
        return [LiveSession(*row) for row in self._db.execute(
            "SELECT id, project, coalesce(last_seen, started, 0) FROM sessions "
            "WHERE agent=? AND closed IS NULL AND coalesce(last_seen, started, 0) >= ? "
            "ORDER BY coalesce(last_seen, started, 0) DESC LIMIT 50", (agent, seen_since))]

    def session_ended(self, session: str) -> bool | None:
        """Whether ``session`` ended (None: the index knows no such session)."""
        row = self._db.execute("SELECT closed IS NOT NULL FROM sessions WHERE id=?",
                                    (session,)).fetchone()
        return None if row is None else bool(row[0])

    def sessions_of(self, agent: str) -> set[str]:
        """The sessions ``agent`` has outcomes in (`memory purge`: its lines of the file)."""
        return {s for (s,) in self._db.execute(
            "SELECT DISTINCT session FROM outcomes WHERE agent=?", (agent,))}

    # -- usage records --------------------------------------------------------------------

    def record(self, entry: str) -> UsageRecord:
        """``entry``'s usage record (all zero when it was never injected)."""
        row = self._db.execute(_AGGREGATE + " WHERE entry=?", (entry,)).fetchone()
        if row is None or row[0] is None:
            return UsageRecord(entry, 0, 0, 0, 0, 0, None, None, None)
        return _record(row)

    def records(self, entries: Sequence[str]) -> dict[str, UsageRecord]:
        """The usage records of ``entries`` (those ever injected)."""
        out: dict[str, UsageRecord] = {}
        for start in range(0, len(entries), 500):
            part = list(entries[start:start + 500])
            marks = ", ".join("?" for _ in part)
            for row in self._db.execute(
                    _AGGREGATE + f" WHERE entry IN ({marks}) GROUP BY entry", part):
                out[row[0]] = _record(row)
        return out

    def ranking(self, by: str, agents: Sequence[str] | None, kinds: Sequence[str] | None,
                limit: int) -> list[tuple[StoredEntry, UsageRecord]]:
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
        rows = self._db.execute(
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

    # -- what the passes and the block act on -------------------------------------------

    def since(self) -> float | None:
        """When memoryd first recorded an injection (None: never): before it, nothing says
        whether an entry was used, so no entry counts as unused for time before it."""
        value = self.store.meta(SINCE_KEY)
        return float(value) if value else None

    def last_used(self, entries: Sequence[str]) -> dict[str, float]:
        """When each of ``entries`` was last followed or broken (those ever were): a step of
        the index ``outcomes_used`` each."""
        out: dict[str, float] = {}
        for uid in dict.fromkeys(entries):
            (last,) = one(self._db,
                          "SELECT max(coalesce(at, injected)) FROM outcomes WHERE entry = ? "
                          "AND outcome IN ('followed', 'broken')", (uid,))
            if last is not None:
                out[uid] = last
        return out

    def acted_on(self, after: tuple[str, str], limit: int
                 ) -> tuple[list[Verdict], tuple[str, str] | None]:
        """The followed and broken outcomes among the ``limit`` rows after the key ``after``
        (entry, session), in key order; and the key to go on from (None: no rows after)."""
        rows = cast(list[tuple[str, str, str, float, str]], self._db.execute(
            "SELECT entry, session, outcome, coalesce(at, injected), coalesce(why, '') "
            "FROM outcomes WHERE (entry, session) > (?, ?) ORDER BY entry, session LIMIT ?",
            (*after, limit)).fetchall())
        found = [Verdict(*row) for row in rows if row[2] in (FOLLOWED, BROKEN)]
        return found, ((rows[-1][0], rows[-1][1]) if len(rows) == limit else None)

    def session_projects(self, sessions: Iterable[str]) -> dict[str, str | None]:
        """The project each of ``sessions`` ran in (None: none, or outside a repository)."""
        wanted = list(dict.fromkeys(sessions))
        out: dict[str, str | None] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            out.update(cast(list[tuple[str, str | None]], self._db.execute(
                f"SELECT id, project FROM sessions WHERE id IN ({', '.join('?' for _ in part)})",
                part).fetchall()))
        return out

    def restored(self) -> dict[str, float]:
        """uid → when a person last took back the retain pass's archiving of it (an undo not
        undone since): a use, as far as retention goes."""
        return dict(cast(list[tuple[str, float]], self._db.execute(
            "SELECT target, max(ts) FROM changes WHERE kind='entry' AND action=? "
            "AND state='applied' GROUP BY target", (RESTORE_UNUSED,)).fetchall()))

    def undone_targets(self, action: str) -> set[str]:
        """The entries whose entry change ``action`` a person took back (``memory undo``)."""
        return {target for (target,) in self._db.execute(
            "SELECT DISTINCT target FROM changes WHERE kind='entry' AND action=? "
            "AND state='undone'", (action,))}

    def nth_session_back(self, agents: Sequence[str], project: str | None,
                         n: int) -> float | None:
        """When the earliest of the ``n`` latest judged sessions of ``agents`` (in
        ``project``; anywhere when None) started; None when there were fewer. Latest by when
        memoryd first saw them (the row order): no sort of the table, which a hook's block
        could not afford (20,000 sessions: 2-20 ms)."""
        marks = ", ".join("?" for _ in agents)
        where = f"judged IS NOT NULL AND agent IN ({marks})"
        params: list[Any] = list(agents)
        if project is not None:
            where += " AND project = ?"
            params.append(project)
        row = self._db.execute(
            f"SELECT count(*), min(started) FROM (SELECT started FROM sessions WHERE {where} "
            "ORDER BY rowid DESC LIMIT ?)", [*params, n]).fetchone()
        return row[1] if row and row[0] >= n else None

    def disuse_candidates(self, first: int, last: int, written_before: float,
                          agent: str | None, project: str | None) -> list[StoredEntry]:
        """Active entries of rows ``first`` to ``last`` that the retain pass may archive when
        unused: lessons and notes memoryd holds (written through the API, imported or
        extracted; a file's lines are its file's), not quarantined (a person decides those),
        written before ``written_before``; of ``agent`` and ``project`` when given."""
        where = ("id >= ? AND id <= ? AND status = 'active' AND NOT quarantined "
                 f"AND kind IN ({', '.join('?' for _ in DISUSE_KINDS)}) "
                 "AND via IN ('api', 'import', 'extract') AND created < ?")
        params: list[Any] = [first, last, *DISUSE_KINDS, written_before]
        if agent is not None:
            where += " AND agent = ?"
            params.append(agent)
        if project is not None:
            where += " AND project = ?"
            params.append(project)
        return [row_to_entry(row) for row in self._db.execute(
            f"{SELECT_ENTRY} WHERE {where} ORDER BY id", params)]

    def last_row(self) -> int:
        return integer(self._db, "SELECT coalesce(max(id), 0) FROM entries")


@dataclass(frozen=True)
class LiveSession:
    """A session not ended: its id, its project, when it was last seen."""

    id: str
    project: str | None
    last_seen: float


@dataclass(frozen=True)
class Verdict:
    """An entry's outcome in one session (followed or broken: what the passes act on)."""

    entry: str
    session: str
    outcome: str
    at: float
    why: str


class Disuse:
    """Which entries are in use, and which unused, at one moment. Both are for
    lessons and notes (:data:`DISUSE_KINDS`), and only while ``days`` > 0.

    - **In use**: followed or broken in a session in the last ``days`` days (a lesson broken
      is one the agent needed: it is not unused).
    - **Unused**: last used — followed or broken, or written, or brought back by an undo of
      its archiving, or, for time before memoryd first recorded an injection, then — over
      ``days`` days ago, with :data:`UNUSED_AFTER_SESSIONS` judged sessions of its scope
      since. The block puts it last and drops it first; the retain pass archives it.

    Reads on the database thread; one instance for one block or one run."""

    def __init__(self, store: Store, days: float, now: float,
                 shared_agents: Sequence[str] = ()) -> None:
        self.usage = Usage(store)
        self.days = days
        self.cutoff = now - days * DAY_S
        self.since = self.usage.since() if days > 0 else None
        #: whether anything can be unused now: memoryd recorded injections long enough ago
        self.on = self.since is not None and self.since <= self.cutoff
        self.shared = tuple(shared_agents)
        self._restored: dict[str, float] | None = None
        self._nth: dict[tuple[tuple[str, ...], str | None], float | None] = {}

    def last_used(self, uids: Sequence[str]) -> dict[str, float]:
        """When each of ``uids`` was last followed or broken (those ever were; none while
        off)."""
        return self.usage.last_used(uids) if self.days > 0 and self.since is not None else {}

    def in_use(self, entry: StoredEntry, used: float | None) -> bool:
        """``used``: when it was last followed or broken (:meth:`last_used`)."""
        if self.days <= 0 or used is None or entry.kind not in DISUSE_KINDS:
            return False
        return used >= self.cutoff

    def last_use(self, entry: StoredEntry, used: float | None) -> float:
        if self._restored is None:
            self._restored = self.usage.restored()
        # written: when it was said (created), or, for what was written through memoryd
        # rather than read from a file, when memoryd was given it (a past session's lesson
        # extracted today is dated then, and could not be used before today)
        given = entry.updated if entry.via != "watch" else 0.0
        return max(entry.created, given, self.since or 0.0, self._restored.get(entry.uid, 0.0),
                   used or 0.0)

    def unused(self, entry: StoredEntry, used: float | None) -> bool:
        if not self.on or entry.kind not in DISUSE_KINDS:
            return False
        last = self.last_use(entry, used)
        if last > self.cutoff:
            return False
        agents = (entry.agent, *(a for a in self.shared if a != entry.agent)) \
            if entry.agent in self.shared else (entry.agent,)
        key = (agents, entry.project)
        if key not in self._nth:
            self._nth[key] = self.usage.nth_session_back(agents, entry.project,
                                                         UNUSED_AFTER_SESSIONS)
        nth = self._nth[key]
        return nth is not None and last < nth
