"""What became of injected memory, as a file, so that a rebuilt index keeps every usage record.

The ``outcomes`` table (memoryd.store.usage) lives in the database, which is an index rebuilt
from the files (``memoryd reindex``, a damaged or deleted ``memoryd.db``). What it holds is
learned from transcripts that Claude Code deletes after 30 days, so it could not be learned
again: it is also written, as it is recorded, to ``outcomes.jsonl`` beside the database (in
``$MEMORYD_HOME``), one JSON object a line with the CRC-32 of its bytes, as the passes'
run log (memoryd.store.run_log), and read back the same way::

    {"op": "inject",  "ts": …, "session": "…", "agent": "…", "entries": ["uid", …]}
    {"op": "outcome", "ts": …, "session": "…", "entry": "uid", "outcome": "broken",
                      "why": "…", "evidence": [{…}], "at": …}
    {"op": "session", "id": "…", "harness": "…", "agent": "…", "cwd": …, "project": …,
                      "started": …, "last_seen": …, "closed": …, "transcript": …, "judged": …,
                      "extracted": …}
    {"op": "row",     every column of one outcomes row}
    {"op": "log",     "ts": …, "session": "…", "agent": "…", "event": "SessionStart",
                      "chars": 1234, "budget": 6000, "items": [{…}]}
    {"op": "seal",    "ts": …, "session": "…"}

``inject`` is one injection counted for judging (a block, a prompt's items, a lesson before a
tool call, an MCP read); ``outcome`` a verdict that changed
(memoryd.store.usage.Usage.save_outcomes); ``session`` what the index must know of a session
to judge it, to act on its outcomes and not to extract it twice (its agent, its project, when
it was judged, when extraction last read it), written when a hook first reports it (a rebuilt
index lists it, though its transcript may never be read), with its first injection, whenever
it is judged and whenever it is extracted; ``row`` a row as a database from before this file held it
(written once, at its first start, or by the reindex that sets it aside); ``log`` a line of the
injection log (``memory explain``: every block given, each item with its section, id, evidence
and text as injected, at most 160 characters), written with it. A database from before the
file held ``log`` lines and extraction marks writes its own once (meta ``usage_log:log``
absent: :func:`export_log`), and one from before the file held every session a hook
reported writes those once (meta ``usage_log:sessions`` absent: :func:`export_sessions`).
``seal`` is written by ``memory purge`` for a session whose
transcript held the purged text: what the session did before ``ts`` is not read again when
it is judged (memoryd.sessions.usage), so no outcome quotes the text again (meta
``usage:sealed:<session>``).

**When.** As the run log: the lines of a transaction are appended at its end, before
the commit, and taken back when it fails; the database records how far into the file it holds
(meta ``usage_log``); at every start the lines past that are applied, and a rebuild applies
them all (:func:`replay_usage_log`). They survive the daemon being killed as the database's
own commits do (``synchronous=NORMAL``); the judge fsyncs the file after each session it
judges. ``memory purge`` rewrites the file as it does the ledgers (:meth:`UsageLog.without`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from memoryd.store.database import Store
from memoryd.store.purge_files import Rewrite, ledger_rewrite
from memoryd.store.run_log import RunLog, replay_lines
from memoryd.store.sessions import HOOK_REPORTED

log = logging.getLogger(__name__)

FILE_NAME = "outcomes.jsonl"
#: Meta key of how far into the file the database holds.
KEY = "usage_log"
#: Meta key set once the file holds the database's injection log and extraction marks.
LOG_KEY = "usage_log:log"
#: Meta key set once the file holds the sessions a hook reported to the database.
SESSIONS_KEY = "usage_log:sessions"
#: When memoryd first recorded an injection (meta; memoryd.store.usage reads it).
SINCE_KEY = "usage:since"
#: Meta key prefix of a session sealed by a purge (``seal`` lines): when.
SEALED_PREFIX = "usage:sealed:"
#: Who the entry's history says changed an outcome.
ACTOR = "memoryd (outcomes)"
#: The verdict of an entry a session did not touch (memoryd.sessions.outcomes.NO_OCCASION).
NO_OCCASION = "no occasion"
_ROW_COLUMNS = ("entry", "session", "agent", "injected", "injections", "outcome", "why",
                "evidence", "at", "judged")
_SESSION_COLUMNS = ("id", "harness", "agent", "cwd", "project", "started", "last_seen",
                    "closed", "transcript_path", "judged", "extracted")
_LOG_COLUMNS = ("ts", "session", "agent", "event", "chars", "budget", "items")
EXPORT_BATCH = 500


class UsageLog:
    """``outcomes.jsonl``: the lines of :class:`memoryd.store.run_log.RunLog`, appended on
    the database thread."""

    def __init__(self, path: Path) -> None:
        self.lines = RunLog(path)

    @property
    def path(self) -> Path:
        return self.lines.path

    @classmethod
    def beside(cls, store: Store) -> UsageLog:
        """The file of the database ``store`` opened (``memoryd.db`` in the state directory;
        a reindex builds ``memoryd.db.new`` beside it, and reads the same file)."""
        return cls(store.path.parent / FILE_NAME)

    def append(self, records: Iterable[dict[str, Any]]) -> tuple[int, int]:
        return self.lines.append(records)

    def cut(self, size: int) -> None:
        self.lines.cut(size)

    def sync(self) -> None:
        self.lines.sync()

    def size(self) -> int:
        return self.lines.size()

    def read(self, offset: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        self.lines.repair_tail()
        return self.lines.read(offset)

    def without(self, entries: set[str], sessions: set[str], holds: Callable[[str], bool],
                scrub: Callable[[Any], Any], agent: str | None = None,
                sealed: dict[str, float] | None = None) -> Rewrite:
        """The file without what ``memory purge`` removes: the injections and outcomes of
        ``entries``; an outcome of another entry in one of ``sessions`` (the purged agent's)
        whose reason or evidence ``holds`` the text keeps its place with them scrubbed
        (``scrub``: a JSON value with its strings scrubbed), as the database's row does; the
        injection log's items of ``entries``, and the text ``holds`` in the other items of
        ``agent``'s blocks scrubbed (:func:`purged_items`); and a ``seal`` line appended for
        each of the ``sealed`` sessions (session → when). Every other line is kept byte for
        byte."""

        def text(value: str) -> str:
            return cast(str, scrub(value)) if holds(value) else value

        def decide(record: dict[str, Any]) -> bool | dict[str, Any] | None:
            op = record.get("op")
            if op == "log":
                items = purged_items(record.get("items") or [], entries,
                                     text if record.get("agent") == agent else None)
                return None if items is None else {**record, "items": items}
            if op == "inject":
                listed = record.get("entries") or []
                kept = [uid for uid in listed if uid not in entries]
                if len(kept) == len(listed):
                    return None
                return {**record, "entries": kept} if kept else True
            if op in ("outcome", "row"):
                if record.get("entry") in entries:
                    return True
                if record.get("session") not in sessions:
                    return None
                why, evidence = record.get("why"), record.get("evidence")
                if op == "row" and isinstance(evidence, str):
                    evidence = json.loads(evidence)
                if (why and holds(why)) or holds(json.dumps(evidence, ensure_ascii=False)):
                    scrubbed = scrub(evidence)
                    return {**record, "why": scrub(why) if why else why,
                            "evidence": json.dumps(scrubbed, ensure_ascii=False)
                            if op == "row" else scrubbed}
            return None

        return ledger_rewrite(self.path, decide, None,
                              [seal_record(s, ts) for s, ts in sorted((sealed or {}).items())])


# -- what the index writes ----------------------------------------------------------------


def inject_record(session: str, agent: str, entries: list[str], ts: float) -> dict[str, Any]:
    return {"op": "inject", "ts": ts, "session": session, "agent": agent, "entries": entries}


def outcome_record(session: str, entry: str, outcome: str, why: str, evidence: Any,
                   at: float | None, ts: float) -> dict[str, Any]:
    return {"op": "outcome", "ts": ts, "session": session, "entry": entry, "outcome": outcome,
            "why": why, "evidence": evidence, "at": at}


def seal_record(session: str, ts: float) -> dict[str, Any]:
    return {"op": "seal", "ts": ts, "session": session}


def log_record(ts: float, session: str | None, agent: str, event: str, chars: int,
               budget: int, items: list[dict[str, Any]]) -> dict[str, Any]:
    """A line of the injection log (memoryd.store.sessions.Sessions.log_injection)."""
    return {"op": "log", "ts": ts, "session": session, "agent": agent, "event": event,
            "chars": chars, "budget": budget, "items": items}


def purged_items(items: list[dict[str, Any]], entries: set[str],
                 text: Callable[[str], str] | None) -> list[dict[str, Any]] | None:
    """A logged block's items without those of the purged ``entries``, and with ``text`` the
    others' texts scrubbed (`memory purge`, in the database and in the file alike); None when
    nothing changes."""
    kept, changed = [], False
    for item in items:
        if item.get("id") in entries:
            changed = True
            continue
        shown = item.get("text")
        if text is not None and isinstance(shown, str) and (scrubbed := text(shown)) != shown:
            item, changed = {**item, "text": scrubbed}, True
        kept.append(item)
    return kept if changed else None


def session_record(store: Store, session: str) -> dict[str, Any] | None:
    """The ``session`` line of a session as the index holds it now (None: it holds none)."""
    row = store._db.execute(
        f"SELECT {', '.join(_SESSION_COLUMNS)} FROM sessions WHERE id=?", (session,)).fetchone()
    if row is None:
        return None
    fields = dict(zip(_SESSION_COLUMNS, row))
    fields["transcript"] = fields.pop("transcript_path")
    return {"op": "session", **fields}


# -- replay ---------------------------------------------------------------------------------


def replay_usage_log(store: Store, usage_log: UsageLog) -> int:
    """Apply the lines the database does not hold yet (at start: those of a transaction the
    daemon was killed in before it committed; in a rebuild: all). Returns how many. A
    database from before the file existed writes its outcomes to it instead, once, one from
    before it held the injection log and the extraction marks writes those, once, and one
    from before it held every session a hook reported writes those, once."""
    older = store.meta(LOG_KEY) is None and has_log(store)  # asked before a rebuild fills it
    unlisted = store.meta(SESSIONS_KEY) is None and has_reported(store)
    if store.meta(KEY) is None and usage_log.size() == 0 and has_outcomes(store):
        applied = export(store, usage_log)
    else:
        applied = replay_lines(store, usage_log, KEY, apply_record, "outcomes file")
    if older:
        export_log(store, usage_log, holds_all=True)
    elif store.meta(LOG_KEY) is None:
        with store.transaction():
            store.set_meta(LOG_KEY, "1")
    if unlisted:
        export_sessions(store, usage_log, holds_all=True)
    elif store.meta(SESSIONS_KEY) is None:
        with store.transaction():
            store.set_meta(SESSIONS_KEY, "1")
    return applied


def has_outcomes(store: Store) -> bool:
    return store._db.execute("SELECT 1 FROM outcomes LIMIT 1").fetchone() is not None


def has_log(store: Store) -> bool:
    """Whether the database holds an injection log or an extraction mark."""
    return store._db.execute(
        "SELECT 1 WHERE EXISTS (SELECT 1 FROM injections) "
        "OR EXISTS (SELECT 1 FROM sessions WHERE extracted IS NOT NULL)").fetchone() is not None


def has_reported(store: Store) -> bool:
    """Whether the database holds a session a hook reported (memoryd.store.sessions)."""
    return store._db.execute(
        f"SELECT 1 FROM sessions WHERE {HOOK_REPORTED} LIMIT 1").fetchone() is not None


def apply_record(store: Store, record: dict[str, Any]) -> int:
    """One line applied to the ``outcomes`` and ``sessions`` tables, as the index applied it
    when it wrote it."""
    op, db = record.get("op"), store._db
    if op == "inject":
        db.executemany(
            "INSERT INTO outcomes(entry, session, agent, injected) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(entry, session) DO UPDATE SET injections = injections + 1, "
            "injected = min(injected, excluded.injected)",
            [(uid, record["session"], record["agent"], record["ts"])
             for uid in dict.fromkeys(record.get("entries") or [])])
        db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                   (SINCE_KEY, repr(record["ts"])))
    elif op == "outcome":
        before = db.execute("SELECT outcome FROM outcomes WHERE entry=? AND session=?",
                            (record["entry"], record["session"])).fetchone()
        if before is None:
            return 0
        db.execute(
            "UPDATE outcomes SET outcome=?, why=?, evidence=?, at=?, judged=? "
            "WHERE entry=? AND session=?",
            (record["outcome"], record.get("why"),
             json.dumps(record.get("evidence") or [], ensure_ascii=False), record.get("at"),
             record["ts"], record["entry"], record["session"]))
        outcome_event(store, record["entry"], record["session"], before[0], record["outcome"],
                      record.get("why"), record["ts"])
    elif op == "session":
        db.execute(
            "INSERT INTO sessions(id, harness, agent, cwd, project, started, last_seen, closed, "
            "transcript_path, judged, extracted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET cwd=coalesce(cwd, excluded.cwd), "
            "project=coalesce(project, excluded.project), "
            "started=coalesce(started, excluded.started), "
            "last_seen=CASE WHEN excluded.last_seen IS NULL THEN last_seen "
            "ELSE max(coalesce(last_seen, 0), excluded.last_seen) END, "
            "closed=coalesce(closed, excluded.closed), "
            "transcript_path=coalesce(transcript_path, excluded.transcript_path), "
            "judged=CASE WHEN excluded.judged IS NULL THEN judged "
            "ELSE max(coalesce(judged, 0), excluded.judged) END, "
            "extracted=CASE WHEN excluded.extracted IS NULL THEN extracted "
            "ELSE max(coalesce(extracted, 0), excluded.extracted) END",
            (record["id"], record["harness"], record["agent"], record.get("cwd"),
             record.get("project"), record.get("started"), record.get("last_seen"),
             record.get("closed"), record.get("transcript"), record.get("judged"),
             record.get("extracted")))
    elif op == "log":  # by its time and event: a line applied twice is one row
        db.execute(
            "INSERT INTO injections(ts, session, agent, event, chars, budget, items) "
            "SELECT ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM injections "
            "WHERE session IS ? AND ts = ? AND agent = ? AND event = ?)",
            (record["ts"], record.get("session"), record["agent"], record["event"],
             record.get("chars") or 0, record.get("budget") or 0,
             json.dumps(record.get("items") or []), record.get("session"), record["ts"],
             record["agent"], record["event"]))
    elif op == "seal":
        seal(store, record["session"], record["ts"])
    elif op == "row":
        before = db.execute("SELECT outcome FROM outcomes WHERE entry=? AND session=?",
                            (record.get("entry"), record.get("session"))).fetchone()
        db.execute(
            f"INSERT OR REPLACE INTO outcomes({', '.join(_ROW_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in _ROW_COLUMNS)})",
            [record.get(column) for column in _ROW_COLUMNS])
        db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                   (SINCE_KEY, repr(record["injected"])))
        outcome_event(store, record["entry"], record["session"], before[0] if before else None,
                      record.get("outcome"), record.get("why"),
                      record.get("judged") or record["injected"])
    else:
        log.warning("Skipping an unknown line of the outcomes file: %r", op)
        return 0
    return 1


def seal(store: Store, session: str, ts: float) -> None:
    """What ``session`` did before ``ts`` is not judged again (a ``seal`` line); a later seal
    wins."""
    store._db.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
        "value = CASE WHEN CAST(value AS REAL) < CAST(excluded.value AS REAL) "
        "THEN excluded.value ELSE value END", (SEALED_PREFIX + session, repr(float(ts))))


def sealed_at(store: Store, session: str) -> float | None:
    """When a purge sealed ``session`` (None: never)."""
    value = store.meta(SEALED_PREFIX + session)
    return float(value) if value else None


def outcome_event(store: Store, entry: str, session: str, before: str | None,
                  after: str | None, why: str | None, ts: float) -> None:
    """An outcome that changed, in the entry's history (``memory history``), live and in a
    replay alike (the events of a transaction that never committed, or of the index a
    rebuild replaced, are not in any file). A first verdict of "no occasion" is no event:
    most entries injected into most sessions get it, and one line a session made an
    entry's history thousands of lines of nothing (``memory get`` counts them)."""
    if after is None or after == before or (before is None and after == NO_OCCASION):
        return
    store.record_event(entry, "outcome", ACTOR,
                       {"session": session, "outcome": before} if before is not None else None,
                       {"session": session, "outcome": after, "why": why}, ts)


def export(store: Store, usage_log: UsageLog) -> int:
    """Write a database's outcomes and their sessions to the file, once: the database was
    made before the file existed."""
    written, after = 0, ("", "")
    sessions: set[str] = set()
    while rows := store._db.execute(
            f"SELECT {', '.join(_ROW_COLUMNS)} FROM outcomes WHERE (entry, session) > (?, ?) "
            "ORDER BY entry, session LIMIT ?", (*after, EXPORT_BATCH)).fetchall():
        usage_log.append({"op": "row", **dict(zip(_ROW_COLUMNS, row))} for row in rows)
        sessions.update(cast(str, row[1]) for row in rows)
        written += len(rows)
        after = (cast(str, rows[-1][0]), cast(str, rows[-1][1]))
    _append_sessions(store, usage_log, sorted(sessions))
    usage_log.sync()
    with store._db:
        store.set_meta(KEY, str(usage_log.size()))
    log.info("Wrote the outcomes of this database to %s (%d rows): a rebuilt index keeps "
             "every entry's usage record.", usage_log.path, written)
    return 0


def export_log(store: Store, usage_log: UsageLog, *, holds_all: bool) -> int:
    """Write a database's injection log and its sessions' extraction marks to the file, once:
    the database was made before the file held them. ``holds_all``: the database has applied
    every line before these (a start's replay), so its offset moves past them; else (the old
    index a reindex sets aside) a start that still opens it applies them again, which changes
    nothing. Returns how many lines were written."""
    written, after = 0, 0
    while rows := store._db.execute(
            f"SELECT id, {', '.join(_LOG_COLUMNS)} FROM injections WHERE id > ? ORDER BY id "
            "LIMIT ?", (after, EXPORT_BATCH)).fetchall():
        usage_log.append({"op": "log", **dict(zip(_LOG_COLUMNS, row[1:])),
                          "items": json.loads(cast(str, row[-1]))} for row in rows)
        written += len(rows)
        after = cast(int, rows[-1][0])
    extracted = [cast(str, s) for (s,) in store._db.execute(
        "SELECT id FROM sessions WHERE extracted IS NOT NULL ORDER BY id")]
    written += _append_sessions(store, usage_log, extracted)
    _exported(store, usage_log, LOG_KEY, holds_all)
    log.info("Wrote the injection log and the extraction marks of this database to %s "
             "(%d lines): a rebuilt index keeps them.", usage_log.path, written)
    return written


def export_sessions(store: Store, usage_log: UsageLog, *, holds_all: bool) -> int:
    """Write the sessions a hook reported to a database to the file, once: the database was
    made before the file held every one (a session memoryd gave nothing to and never
    extracted was in the database alone, and left `memory sessions` with it). ``holds_all``
    as :func:`export_log`. Returns how many lines were written."""
    reported = [cast(str, s) for (s,) in store._db.execute(
        f"SELECT id FROM sessions WHERE {HOOK_REPORTED} ORDER BY id")]
    written = _append_sessions(store, usage_log, reported)
    _exported(store, usage_log, SESSIONS_KEY, holds_all)
    log.info("Wrote the sessions hooks reported to this database to %s (%d lines): a rebuilt "
             "index lists them.", usage_log.path, written)
    return written


def _append_sessions(store: Store, usage_log: UsageLog, sessions: list[str]) -> int:
    """Append the ``session`` lines of ``sessions`` (those the index knows), a batch at a
    time; how many were written."""
    records = [r for r in (session_record(store, s) for s in sessions) if r]
    for start in range(0, len(records), EXPORT_BATCH):
        usage_log.append(records[start:start + EXPORT_BATCH])
    return len(records)


def _exported(store: Store, usage_log: UsageLog, key: str, holds_all: bool) -> None:
    """The file synced, and the database marked as having written what ``key`` names (with
    ``holds_all``, its offset moved past the lines: it has applied them)."""
    usage_log.sync()
    with store.transaction():
        if holds_all:
            store.set_meta(KEY, str(usage_log.size()))
        store.set_meta(key, "1")
