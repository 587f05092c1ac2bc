"""The ``runs`` and ``changes`` tables: the maintenance passes' runs and every change they
made, with what it replaced and what it wrote (``before``/``after``, JSON).

memoryd.passes.runs decides what a run and a change are, and applies them; this module
only stores and reads them (``Store.runs``), decoding the JSON sides. The run log
(memoryd.store.run_log) keeps the same rows as lines, so that a rebuilt index keeps
them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import apsw

from memoryd.store.fetch import integer

#: The scope of a run over everything asked to compare everything (``--full``): a whole run.
WHOLE_FULL = {"full": True}


def json_column(value: Any) -> str | None:
    """A column's JSON, keys sorted. A text read from a file that is not UTF-8 (kept with
    surrogate escapes, so that its bytes go back as they were) is written as JSON escapes:
    SQLite's text is UTF-8, and :func:`json.loads` gives them back as they were."""
    if value is None:
        return None
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, sort_keys=True)
    return text


def _load(value: str | None) -> Any:
    return None if value is None else json.loads(value)


@dataclass(frozen=True)
class Run:
    id: int
    name: str  # the pass
    started: float
    finished: float | None
    status: str
    dry_run: bool
    scope: Any
    counts: dict[str, int] | None
    error: str | None


@dataclass(frozen=True)
class ChangeRow:
    id: int
    run: int
    kind: str
    target: str
    action: str
    why: str | None
    before: Any
    after: Any
    state: str
    ts: float
    undoes: int | None
    group: int | None


_RUNS = "SELECT id, pass, started, finished, status, dry_run, scope, counts, error FROM runs"
_CHANGES = ("SELECT id, run, kind, target, action, why, before, after, state, ts, undoes, grp "
            "FROM changes")


def _run(row: Sequence[Any]) -> Run:
    number, name, started, finished, status, dry_run, scope, counts, error = row
    return Run(number, name, started, finished, status, bool(dry_run), _load(scope),
               _load(counts), error)


def _change(row: Sequence[Any]) -> ChangeRow:
    number, run, kind, target, action, why, before, after, state, ts, undoes, group = row
    return ChangeRow(number, run, kind, target, action, why, _load(before), _load(after), state,
                     ts, undoes, group)


def _runs_of(name: str | None, entry: str | None) -> tuple[str, list[Any]]:
    """The WHERE clause (and its arguments) of the runs of the pass ``name`` (None: any)
    whose scope names ``entry`` (None: any scope): a forget's run names the entry it
    forgot."""
    terms, args = [], []
    if name:
        terms.append("pass=?")
        args.append(name)
    if entry is not None:
        terms.append("json_extract(scope, '$.entry')=?")
        args.append(entry)
    return (" WHERE " + " AND ".join(terms) if terms else ""), args


class Runs:
    """The ``runs`` and ``changes`` tables (the database thread)."""

    def __init__(self, db: apsw.Connection) -> None:
        self._db = db

    # -- runs ---------------------------------------------------------------------------

    def begin(self, name: str, started: float, dry_run: bool, scope: Any) -> int:
        """A run begun (``running``); returns its number."""
        self._db.execute(
            "INSERT INTO runs(pass, started, status, dry_run, scope) VALUES (?, ?, ?, ?, ?)",
            (name, started, "running", int(dry_run), json_column(scope)))
        return self._db.last_insert_rowid()

    def add_done(self, name: str, started: float, finished: float, scope: Any,
                 counts: dict[str, int]) -> int:
        """A run that is over as it is recorded (a forget's); returns its number."""
        self._db.execute(
            "INSERT INTO runs(pass, started, finished, status, dry_run, scope, counts) "
            "VALUES (?, ?, ?, 'done', 0, ?, ?)",
            (name, started, finished, json_column(scope), json_column(counts)))
        return self._db.last_insert_rowid()

    def finish(self, run: int, finished: float, status: str, counts: dict[str, int],
               error: str | None) -> None:
        self._db.execute("UPDATE runs SET finished=?, status=?, counts=?, error=? WHERE id=?",
                         (finished, status, json_column(counts), error, run))

    def running(self) -> list[int]:
        """The runs still ``running`` (at start: a killed daemon's)."""
        return [cast(int, r) for (r,) in self._db.execute(
            "SELECT id FROM runs WHERE status='running' ORDER BY id").fetchall()]

    def states(self, run: int) -> dict[str, int]:
        """How many changes of ``run`` are in each state."""
        return {state: n for state, n in self._db.execute(
            "SELECT state, count(*) FROM changes WHERE run=? GROUP BY state", (run,))}

    def interrupted_with_applied(self) -> list[tuple[Run, int]]:
        """The interrupted runs that hold applied changes, with how many, that no later run
        of their pass over the same scope finished (a scheduled run over everything, the
        same undo asked again)."""
        whole = (json_column({}), json_column(WHOLE_FULL))
        rows = self._db.execute(
            "SELECT r.id, r.pass, r.started, r.finished, r.status, r.dry_run, r.scope, "
            "r.counts, r.error, (SELECT count(*) FROM changes c WHERE c.run=r.id "
            "AND c.state='applied') AS applied FROM runs r "
            "WHERE r.status='interrupted' AND r.dry_run=0 AND NOT EXISTS ("
            " SELECT 1 FROM runs l WHERE l.pass=r.pass AND l.id>r.id AND l.status='done'"
            " AND l.dry_run=0 AND (coalesce(l.scope, ?1)=coalesce(r.scope, ?1)"
            " OR (coalesce(l.scope, ?1) IN (?1, ?2) AND coalesce(r.scope, ?1) IN (?1, ?2))))"
            " ORDER BY r.id", whole).fetchall()
        return [(_run(row[:9]), int(row[9])) for row in rows if row[9]]

    def newest(self, name: str | None, limit: int, offset: int = 0, *,
               entry: str | None = None) -> list[Run]:
        """The newest runs first (of the pass ``name``; None: of any; and with ``entry``,
        only those whose scope names that entry), the first ``offset`` left out."""
        where, args = _runs_of(name, entry)
        return [_run(row) for row in self._db.execute(
            _RUNS + where + " ORDER BY id DESC LIMIT ? OFFSET ?", [*args, limit, offset])]

    def newest_whole(self, name: str) -> Run | None:
        """The newest run of the pass ``name`` that did its work for everything: not a dry
        run, not limited to an agent, a project or some files, not a proposal's acceptance
        (its scope is empty, or only asks for everything to be compared: ``--full``). The
        schedule counts from it."""
        row = self._db.execute(
            _RUNS + " WHERE pass=? AND dry_run=0 AND (scope IS NULL OR scope IN (?, ?)) "
            "ORDER BY id DESC LIMIT 1",
            (name, json_column({}), json_column(WHOLE_FULL))).fetchone()
        return _run(row) if row else None

    def accepting(self, proposals: Sequence[str]) -> dict[str, int]:
        """The run that accepted each of these proposals (``c42``: a run whose scope
        ``accepts`` it), of those that have one."""
        found: dict[str, int] = {}
        for start in range(0, len(proposals), 500):
            part = list(proposals[start:start + 500])
            for name, run in self._db.execute(
                    f"SELECT json_extract(scope, '$.accepts'), id FROM runs WHERE dry_run=0 "
                    f"AND json_extract(scope, '$.accepts') IN "
                    f"({', '.join('?' for _ in part)}) ORDER BY id", part):
                found[name] = run
        return found

    def get(self, run: int) -> Run | None:
        row = self._db.execute(_RUNS + " WHERE id=?", (run,)).fetchone()
        return _run(row) if row else None

    def any(self) -> bool:
        return self._db.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is not None

    def count(self, name: str | None = None, *, entry: str | None = None) -> int:
        """How many runs there are (of the pass ``name``; None: of any; with ``entry``, of
        those whose scope names that entry)."""
        where, args = _runs_of(name, entry)
        return integer(self._db, "SELECT count(*) FROM runs" + where, args)

    # -- changes ------------------------------------------------------------------------

    def add_change(self, run: int, kind: str, target: str, action: str, why: str | None,
                   before: Any, after: Any, state: str, ts: float,
                   undoes: int | None) -> int:
        """A change recorded; returns its number."""
        self._db.execute(
            "INSERT INTO changes(run, kind, target, action, why, before, after, state, ts, "
            "undoes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run, kind, target, action, why, json_column(before), json_column(after), state,
             ts, undoes))
        return self._db.last_insert_rowid()

    def set_group(self, changes: Sequence[int], group: int) -> None:
        for number in changes:
            self._db.execute("UPDATE changes SET grp=? WHERE id=?", (group, number))

    def set_states(self, changes: Sequence[int], state: str) -> None:
        self._db.executemany("UPDATE changes SET state=? WHERE id=?",
                             ((state, change) for change in changes))

    def change(self, change: int) -> ChangeRow | None:
        row = self._db.execute(_CHANGES + " WHERE id=?", (change,)).fetchone()
        return _change(row) if row else None

    def has_change(self, change: int) -> bool:
        return self._db.execute("SELECT 1 FROM changes WHERE id=?", (change,)).fetchone() \
            is not None

    def changes_of(self, run: int) -> list[ChangeRow]:
        return [_change(row) for row in self._db.execute(
            _CHANGES + " WHERE run=? ORDER BY id", (run,))]

    def changes_from(self, run: int, offset: int) -> Iterator[ChangeRow]:
        """The run's changes in order from the ``offset``-th, read as they are taken."""
        for row in self._db.execute(_CHANGES + " WHERE run=? ORDER BY id LIMIT -1 OFFSET ?",
                                    (run, offset)):
            yield _change(row)

    def count_changes(self, run: int) -> int:
        return integer(self._db, "SELECT count(*) FROM changes WHERE run=?", (run,))

    def applied_in_group(self, run: int, group: int) -> list[ChangeRow]:
        return [_change(row) for row in self._db.execute(
            _CHANGES + " WHERE run=? AND grp=? AND state='applied' ORDER BY id", (run, group))]

    def open_contradictions(self) -> list[ChangeRow]:
        return [_change(row) for row in self._db.execute(
            _CHANGES + " WHERE kind='contradiction' AND state='open' ORDER BY id")]

    def pending(self, run: int | None, group: int | None) -> list[tuple[int, int | None]]:
        """(change, its group) of the pending changes (of ``run`` and ``group``; None: any)."""
        return cast(list[tuple[int, int | None]], self._db.execute(
            "SELECT id, grp FROM changes WHERE state='pending' AND (?1 IS NULL OR run=?1) "
            "AND (?2 IS NULL OR grp=?2) ORDER BY id", (run, group)).fetchall())

    def pending_file_targets(self) -> list[str]:
        return [t for (t,) in self._db.execute(
            "SELECT target FROM changes WHERE state='pending' AND kind='file'")]

    def problems_of_last_runs(self, action: str) -> list[tuple[str, str, int]]:
        """The problems (of ``action``) the last finished run of each pass reported: (target,
        why, run), by target."""
        return [(t, w, r) for t, w, r in self._db.execute(
            "SELECT c.target, c.why, c.run FROM changes c WHERE c.kind='problem' AND c.action=? "
            "AND c.run IN (SELECT max(id) FROM runs WHERE dry_run=0 AND status<>'running' "
            "GROUP BY pass) ORDER BY c.target", (action,))]

    def undone(self, kind: str, action: str) -> list[tuple[str, Any]]:
        """(target, after) of the changes of ``kind`` and ``action`` that were undone."""
        return [(target, _load(after)) for target, after in self._db.execute(
            "SELECT target, after FROM changes WHERE state='undone' AND kind=? AND action=?",
            (kind, action))]

    def newest_of_target(self, target: str, kind: str, actions: Sequence[str],
                         states: Sequence[str]) -> tuple[str, Any, str] | None:
        """The newest change of ``target`` among these (action, after, state)."""
        row = self._db.execute(
            f"SELECT action, after, state FROM changes WHERE target=? AND kind=? "
            f"AND action IN ({', '.join('?' for _ in actions)}) "
            f"AND state IN ({', '.join('?' for _ in states)}) ORDER BY id DESC LIMIT 1",
            (target, kind, *actions, *states)).fetchone()
        return (row[0], _load(row[1]), row[2]) if row else None

    def undoers(self, changes: Sequence[int]) -> dict[int, tuple[int, int, str]]:
        """Of these changes, the ones an undo took back: change → (the undo's change, its
        run, its state: ``undone`` when that undo was undone in turn)."""
        found: dict[int, tuple[int, int, str]] = {}
        for start in range(0, len(changes), 500):
            part = list(changes[start:start + 500])
            for undoes, number, run, state in self._db.execute(
                    f"SELECT undoes, id, run, state FROM changes WHERE undoes IN "
                    f"({', '.join('?' for _ in part)}) AND state IN ('applied', 'undone') "
                    f"ORDER BY id", part):
                found[undoes] = (number, run, state)
        return found

    def later_runs(self, target: str, change: int) -> list[int]:
        """The runs after ``change`` whose file change of ``target`` is applied (an undo
        of a change made after it aside: the two cancel out)."""
        return [r for (r,) in self._db.execute(
            "SELECT DISTINCT run FROM changes WHERE target=? AND kind='file' AND id>? "
            "AND state='applied' AND (undoes IS NULL OR undoes<?) ORDER BY run",
            (target, change, change))]

    def superseding_pass(self, entry: str, successor: str) -> str | None:
        """The pass whose run superseded ``entry`` by ``successor`` (an applied entry
        change of it, action ``supersede``): ``consolidate``, ``correct``, …; None when no
        run did (``memory supersede``, a key's newer value written)."""
        row = self._db.execute(
            "SELECT r.pass FROM changes c JOIN runs r ON r.id=c.run WHERE c.target=? "
            "AND c.kind='entry' AND c.action='supersede' AND c.state='applied' "
            "AND json_extract(c.after, '$.superseded_by')=? ORDER BY c.id DESC LIMIT 1",
            (entry, successor)).fetchone()
        return cast(str, row[0]) if row else None

    def merge_into(self, loser: str, survivor: str) -> ChangeRow | None:
        """The applied merge change of ``survivor`` that absorbed ``loser``: the one of its
        run recorded after the loser's applied supersede by it (a merge of many is recorded a
        batch at a time, each batch's supersedes before its merge)."""
        row = self._db.execute(
            _CHANGES + " WHERE id=(SELECT m.id FROM changes s JOIN changes m ON m.run=s.run "
            "AND m.id>s.id AND m.target=?2 AND m.kind='entry' AND m.action='merge' "
            "AND m.state='applied' WHERE s.target=?1 AND s.kind='entry' "
            "AND s.action='supersede' AND s.state='applied' "
            "AND json_extract(s.after, '$.superseded_by')=?2 ORDER BY s.id DESC, m.id LIMIT 1)",
            (loser, survivor)).fetchone()
        return _change(row) if row else None

    def sides(self, kind: str, state: str, actions: Sequence[str] | None = None
              ) -> list[tuple[str, str, Any]]:
        """(target, action, after) of the changes of ``kind`` in ``state`` (and of
        ``actions``, if given): a pass reads what it proposed or applied."""
        sql = "SELECT target, action, after FROM changes WHERE kind=? AND state=?"
        params: list[Any] = [kind, state]
        if actions is not None:
            sql += f" AND action IN ({', '.join('?' for _ in actions)})"
            params += actions
        return [(t, a, _load(after)) for t, a, after in self._db.execute(sql, params)]

    def disputed_ids(self) -> set[str]:
        """Entries in an open contradiction (memoryd.passes.consolidate)."""
        found: set[str] = set()
        for (after,) in self._db.execute(
                "SELECT after FROM changes WHERE state='open' AND kind='contradiction'"):
            found.update(json.loads(after).get("ids", []))
        return found

    # -- as stored (purge) ---------------------------------------------------------------

    def stored(self) -> list[tuple[int, str, str | None, str | None, str | None, int | None]]:
        """Every change as stored: (id, target, why, before and after as JSON text, group)."""
        return [tuple(row) for row in self._db.execute(  # type: ignore[misc]
            "SELECT id, target, why, before, after, grp FROM changes").fetchall()]

    def delete_changes(self, changes: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM changes WHERE id=?", ((c,) for c in changes))

    def set_whys(self, whys: dict[int, str]) -> None:
        """Changes' reasons replaced (a purge scrubbing the text from them): id → reason."""
        self._db.executemany("UPDATE changes SET why=? WHERE id=?",
                             ((why, number) for number, why in whys.items()))
