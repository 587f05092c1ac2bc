"""The run log: the maintenance passes' runs and changes in a file, so that a rebuilt index
still knows them.

The runs and changes of the passes (memoryd.passes.runs) live in the database, which is an
index rebuilt from the files. What ``memory pass list``/``show``, ``memory undo`` and the
rule "an undone merge stays undone" need of them is therefore also written, as it is
recorded, to ``$MEMORYD_HOME/passes.jsonl``: one JSON object a line, each with the CRC-32 of
its bytes as the ledgers' lines (memoryd.store.ledger), read back the same way (a last line
without its newline is mended: a whole record gets it, a torn line is set aside in ``torn/``;
a damaged line is skipped)::

    {"op": "run",    "id": 12, "pass": "consolidate", "started": …, "status": "running",
                     "dry_run": false, "scope": {…}}
    {"op": "finish", "id": 12, "finished": …, "status": "done", "counts": {…}, "error": null}
    {"op": "change", "id": 345, "run": 12, "kind": "entry", "target": "…", "action": "…",
                     "why": "…", "before": {…}, "after": {…}, "state": "applied", "ts": …,
                     "undoes": null, "grp": null}
    {"op": "state",  "ids": [345, 346], "state": "undone"}

A file change carries a file's bytes before and after. To keep the file small, the text
before is stored zlib-compressed (``text_z``, base64) and the text after as a delta from it
(``text_delta``: as the memory tools' file versions, memoryd.store.file_versions); a dry run's
previews are not written (they changed nothing; the run and its counts are).

**When.** The lines of a change go in the transaction that records it, after the ledger
records of its entries (so a ledger record naming a change the file lacks is one whose
transaction never committed: memoryd.maintenance.replay), and are taken back when the transaction
fails. They are fsynced before the files of a change are written, and before a run says it
is done (off the database thread, as the ledgers are). The database records how far into
the file it holds (meta ``pass_log``); at every start and rebuild the lines past that are
applied (:func:`replay_run_log`), before the ledgers are replayed. A database from before
this file existed writes its runs to it once, at its first start; one that an older memoryd
rebuilt and ran passes on after a downgrade keeps its runs the file lacks, renumbered after the
file's (:func:`keep_unlogged`).
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, cast

from memoryd.store.database import Store
from memoryd.store.durable import TORN_DIR, MendedTail, append_durably, cut_back, mend_tail
from memoryd.store.file_versions import apply_delta, delta, unzipped, zipped
from memoryd.store.ledger import decode_line
from memoryd.store.purge_files import Rewrite
from memoryd.store.runs import json_column

log = logging.getLogger(__name__)

FILE_NAME = "passes.jsonl"
#: Texts longer than this are stored compressed.
COMPRESS_ABOVE = 256
_RUN_COLUMNS = ("id", "pass", "started", "finished", "status", "dry_run", "scope", "counts",
                "error")
_CHANGE_COLUMNS = ("id", "run", "kind", "target", "action", "why", "before", "after", "state",
                   "ts", "undoes", "grp")
EXPORT_BATCH = 500


def run_log_key() -> str:
    """Meta key of how far into the run log the database holds (named before the file was
    called the run log: it is in every database)."""
    return "pass_log"


def encode_line(record: dict[str, Any]) -> bytes:
    """One line, as a ledger's: sorted JSON with its CRC-32 as the last member. A text read
    from a file that is not UTF-8 (kept with surrogate escapes) is written as JSON escapes."""
    body = (json_column({k: v for k, v in record.items() if k != "crc"}) or "").encode("utf-8")
    return body[:-1] + b',"crc":"%08x"}\n' % zlib.crc32(body)


# -- a change's sides, packed -----------------------------------------------------------


def pack(kind: str, before: Any, after: Any) -> tuple[Any, Any]:
    """A change's sides as the file keeps them: a file's text before compressed, its text
    after as a delta from it."""
    if kind != "file":
        return before, after
    old = before.get("text") if isinstance(before, dict) else None
    new = after.get("text") if isinstance(after, dict) else None
    if isinstance(old, str) and len(old) > COMPRESS_ABOVE:
        before = {**{k: v for k, v in before.items() if k != "text"}, "text_z": zipped(old)}
    if isinstance(new, str) and isinstance(old, str):
        after = {**{k: v for k, v in after.items() if k != "text"}, "text_delta": delta(old, new)}
    elif isinstance(new, str) and len(new) > COMPRESS_ABOVE:
        after = {**{k: v for k, v in after.items() if k != "text"}, "text_z": zipped(new)}
    return before, after


def unpack(before: Any, after: Any) -> tuple[Any, Any]:
    """The sides of a change as :func:`pack` got them."""
    if isinstance(before, dict) and "text_z" in before:
        before = {**{k: v for k, v in before.items() if k != "text_z"},
                  "text": unzipped(before["text_z"])}
    if isinstance(after, dict) and "text_z" in after:
        after = {**{k: v for k, v in after.items() if k != "text_z"},
                 "text": unzipped(after["text_z"])}
    elif isinstance(after, dict) and "text_delta" in after:
        old = before.get("text", "") if isinstance(before, dict) else ""
        after = {**{k: v for k, v in after.items() if k != "text_delta"},
                 "text": apply_delta(old, after["text_delta"])}
    return before, after


def _load(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def run_record(row: tuple[Any, ...]) -> dict[str, Any]:
    """A ``runs`` row (in :data:`_RUN_COLUMNS` order) as its "run" line."""
    run = dict(zip(_RUN_COLUMNS, row))
    return {"op": "run", "id": run["id"], "pass": run["pass"], "started": run["started"],
            "status": run["status"], "dry_run": bool(run["dry_run"]),
            "scope": _load(run["scope"])}


def finish_record(row: tuple[Any, ...]) -> dict[str, Any]:
    run = dict(zip(_RUN_COLUMNS, row))
    return {"op": "finish", "id": run["id"], "finished": run["finished"],
            "status": run["status"], "counts": _load(run["counts"]), "error": run["error"]}


def change_record(row: tuple[Any, ...]) -> dict[str, Any]:
    """A ``changes`` row (in :data:`_CHANGE_COLUMNS` order) as its "change" line."""
    change = dict(zip(_CHANGE_COLUMNS, row))
    before, after = pack(change["kind"], _load(change["before"]), _load(change["after"]))
    return {"op": "change", **change, "before": before, "after": after}


def run_lines(store: Store, runs: list[int], finished: bool) -> list[dict[str, Any]]:
    """These runs as the file records them now: begun, or finished."""
    marks = ", ".join("?" for _ in runs)
    record = finish_record if finished else run_record
    return [record(row) for row in store._db.execute(select_runs(f"id IN ({marks})"),
                                                     runs).fetchall()]


def change_lines(store: Store, changes: list[int]) -> list[dict[str, Any]]:
    """These changes as the file records them now."""
    marks = ", ".join("?" for _ in changes)
    return [change_record(row) for row in store._db.execute(
        select_changes(f"id IN ({marks}) ORDER BY id"), changes)]


def select_runs(where: str) -> str:
    return f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE {where}"


def select_changes(where: str) -> str:
    return f"SELECT {', '.join(_CHANGE_COLUMNS)} FROM changes WHERE {where}"


# -- the file ---------------------------------------------------------------------------


class RunLog:
    """``passes.jsonl``, the run log (and the outcomes file, lines of the same kind:
    memoryd.store.usage_log): appended on the database thread, fsynced off it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def in_state(cls, state_dir: Path) -> RunLog:
        return cls(state_dir / FILE_NAME)

    def append(self, records: Iterable[dict[str, Any]], *, sync: bool = False
               ) -> tuple[int, int]:
        """Append lines in one write; returns the file's size before and after. On failure
        nothing stays appended. Without ``sync`` the lines survive the process being killed,
        and :meth:`sync` makes them survive a power loss."""
        return append_durably(self.path, b"".join(encode_line(record) for record in records),
                              sync=sync)

    def sync(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def cut(self, size: int) -> None:
        """Take back lines appended in a transaction that failed."""
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except OSError as exc:
            log.error("Could not take back the lines of a failed write from %s: %s", self.path,
                      exc)
            return
        try:
            cut_back(fd, self.path, size)
        finally:
            os.close(fd)

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def repair_tail(self) -> MendedTail | None:
        """Mend a last line that lacks its newline, reading only the file's end: a whole
        record gets its newline, a torn line (a crash mid-append: never part of a commit) is
        moved to a side file in ``torn/`` (memoryd.store.durable.mend_tail)."""
        if not self.path.exists():
            return None
        mended = mend_tail(self.path, lambda line: decode_line(line + b"\n")[0] is not None,
                           self.path.parent / TORN_DIR / self.path.name)
        if mended is not None:
            log.warning("%s: %s.", self.path, mended.describe())
        return mended

    def read(self, offset: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        """(offset after the line, record) for each good line from ``offset``; a damaged line
        is logged and skipped."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            handle.seek(offset)
            position = offset
            for raw in handle:
                start, position = position, position + len(raw)
                if not raw.endswith(b"\n"):
                    return
                record, problem = decode_line(raw)
                if record is None:
                    log.error("%s, line at byte %d: skipped (%s).", self.path,
                              start, problem)
                    continue
                yield position, record

    def without(self, changes: set[int], whys: dict[int, str] | None = None) -> Rewrite:
        """The file without these changes' lines (``memory purge``), and with the reasons of
        the changes ``whys`` names replaced (id → reason); every other line kept byte for
        byte."""
        whys = whys or {}
        if not (changes or whys) or not self.path.exists():
            return Rewrite()
        kept: list[bytes] = []
        dropped = scrubbed = 0
        for raw in self.path.read_bytes().splitlines(keepends=True):
            record, _ = decode_line(raw) if raw.endswith(b"\n") else (None, None)
            if record is not None and record.get("op") == "change" \
                    and record.get("id") in changes:
                dropped += 1
                continue
            if record is not None and record.get("op") == "change" \
                    and record.get("id") in whys:
                scrubbed += 1
                raw = encode_line({**record, "why": whys[record["id"]]})
            if record is not None and record.get("op") == "state" \
                    and not changes.isdisjoint(record.get("ids") or ()):
                ids = [i for i in record["ids"] if i not in changes]
                dropped += 1
                if not ids:
                    continue
                raw = encode_line({**record, "ids": ids})
            kept.append(raw)
        return Rewrite(dropped, scrubbed, b"".join(kept)) if dropped or scrubbed else Rewrite()



# -- replay -----------------------------------------------------------------------------


def replay_run_log(store: Store, run_log: RunLog) -> int:
    """Apply the lines the database does not hold yet (at start: those of a transaction the
    daemon was killed in, before it committed; in a rebuild: all). Returns how many. A
    database from before the file existed writes its runs to the file instead."""
    key = run_log_key()
    known = store.meta(key)
    if known is None and _has_runs(store):
        if run_log.size() == 0:
            return export(store, run_log)
        run_log.repair_tail()
        keep_unlogged(store, run_log)
    run_log.repair_tail()
    return replay_lines(store, run_log, key, apply_record, "run log")


def keep_unlogged(store: Store, run_log: RunLog) -> int:
    """Before a database without the file's offset that holds runs is given the file's lines
    (which it has never read): keep its runs the file lacks. Such a database is an older
    memoryd's, from before the run log (2026-11-28), after a downgrade: its reindex rebuilt
    the index without the file's runs, and its passes numbered their runs from 1 again, so
    the file's lines, applied by id, would overwrite them (and their changes could never be
    undone). Each run it holds that the file does not (an id the file lacks, or holds for
    another run) is renumbered after the file's and the database's runs, its changes after
    their changes, and appended to the file, then the file is applied whole. Returns how many
    runs were kept so."""
    logged: dict[int, tuple[Any, Any]] = {}
    top_run = top_change = 0
    for _, record in run_log.read():
        if record.get("op") == "run" and isinstance(record.get("id"), int):
            logged[record["id"]] = (record.get("pass"), record.get("started"))
            top_run = max(top_run, record["id"])
        elif record.get("op") == "change" and isinstance(record.get("id"), int):
            top_change = max(top_change, record["id"])
    db = store._db
    held = cast(list[tuple[int, str, float, str | None]], db.execute(
        "SELECT id, pass, started, scope FROM runs ORDER BY id").fetchall())
    unlogged = {number: scope for number, name, started, scope in held
                if logged.get(number) != (name, started)}
    if not unlogged:
        return 0
    most_runs, most_changes = (cast(tuple[int], db.execute(
        f"SELECT coalesce(max(id), 0) FROM {table}").fetchone())[0]
        for table in ("runs", "changes"))
    runs = {old: max(top_run, most_runs) + n for n, old in enumerate(unlogged, 1)}
    marks = ", ".join("?" for _ in unlogged)
    rows = cast(list[tuple[int, int, int | None, int | None]], db.execute(
        f"SELECT id, run, undoes, grp FROM changes WHERE run IN ({marks}) ORDER BY id",
        list(unlogged)).fetchall())
    changes = {row[0]: max(top_change, most_changes) + n for n, row in enumerate(rows, 1)}
    size = run_log.size()
    try:
        with store.transaction():
            for old, new in runs.items():
                scope = _renumbered_scope(_load(unlogged[old]), runs, changes)
                db.execute("UPDATE runs SET id=?, scope=? WHERE id=?",
                           (new, json_column(scope), old))
            for number, run, undoes, group in rows:
                db.execute("UPDATE changes SET id=?, run=?, undoes=?, grp=? WHERE id=?",
                           (changes[number], runs[run],
                            changes.get(undoes, undoes) if undoes is not None else None,
                            changes.get(group, group) if group is not None else None, number))
            lines = []
            for row in db.execute(select_runs("id >= ? ORDER BY id"), (min(runs.values()),)):
                lines.append(run_record(row))
                if row[3] is not None or row[4] != "running":  # as export writes them
                    lines.append(finish_record(row))
            if changes:  # a dry run's previews are not written (as export)
                lines += [change_record(row) for row in db.execute(select_changes(
                    "id >= ? AND state <> 'preview' ORDER BY id"), (min(changes.values()),))]
            run_log.append(lines)
    except BaseException:
        run_log.cut(size)
        raise
    run_log.sync()
    log.warning("Kept %d runs of the passes this database holds and %s lacks (recorded by a "
                "memoryd from before that file, after a downgrade), renumbered after the "
                "file's: %s.", len(runs), run_log.path,
                ", ".join(f"r{old} is r{new}" for old, new in runs.items()))
    return len(runs)


def _renumbered_scope(scope: Any, runs: dict[int, int], changes: dict[int, int]) -> Any:
    """An undo's scope (``undoes``: the run or change it took back, ``with``: the changes of
    its group) naming the renumbered runs and changes."""
    if not isinstance(scope, dict):
        return scope

    def named(target: Any) -> Any:
        if isinstance(target, str) and target[:1] in ("r", "c") and target[1:].isdigit():
            number = int(target[1:])
            new = (runs if target[0] == "r" else changes).get(number, number)
            return f"{target[0]}{new}"
        return target

    renamed = dict(scope)
    if "undoes" in renamed:
        renamed["undoes"] = named(renamed["undoes"])
    if isinstance(renamed.get("with"), list):
        renamed["with"] = [named(target) for target in renamed["with"]]
    return renamed


class LineFile(Protocol):
    @property
    def path(self) -> Path: ...

    def size(self) -> int: ...

    def read(self, offset: int = 0) -> Iterator[tuple[int, dict[str, Any]]]: ...


def replay_lines(store: Store, lines: LineFile, key: str,
                 apply: Callable[[Store, dict[str, Any]], int], what: str) -> int:
    """Apply a file's lines past the offset the database keeps under ``key``, in one
    transaction that moves the offset on (the run log's and the outcomes file's
    replay). Returns how many lines changed the database."""
    known = store.meta(key)
    offset = int(known or 0)
    if lines.size() < offset:
        log.warning("%s %s is shorter than recorded; replaying it whole.", what.capitalize(),
                    lines.path)
        offset = 0
    applied = 0
    with store.transaction():
        for position, record in lines.read(offset):
            applied += apply(store, record)
            offset = position
        store.set_meta(key, str(offset))
    if applied and known is not None:
        log.info("Replayed %d lines of the %s the database had missed.", applied, what)
    return applied


def _has_runs(store: Store) -> bool:
    return store.runs.any()


def apply_record(store: Store, record: dict[str, Any]) -> int:
    """One line applied to the ``runs`` and ``changes`` tables (by id: applying it twice
    changes nothing)."""
    op, db = record.get("op"), store._db
    if op == "run":
        db.execute(
            "INSERT INTO runs(id, pass, started, status, dry_run, scope) VALUES (?, ?, ?, ?, ?, "
            "?) ON CONFLICT(id) DO UPDATE SET pass=excluded.pass, started=excluded.started, "
            "status=excluded.status, dry_run=excluded.dry_run, scope=excluded.scope",
            (record["id"], record["pass"], record["started"], record["status"],
             int(bool(record.get("dry_run"))), json_column(record.get("scope"))))
    elif op == "finish":
        db.execute("UPDATE runs SET finished=?, status=?, counts=?, error=? WHERE id=?",
                   (record.get("finished"), record["status"], json_column(record.get("counts")),
                    record.get("error"), record["id"]))
    elif op == "change":
        before, after = unpack(record.get("before"), record.get("after"))
        db.execute(
            "INSERT OR REPLACE INTO changes(id, run, kind, target, action, why, before, after, "
            "state, ts, undoes, grp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record["id"], record["run"], record["kind"], record["target"], record["action"],
             record.get("why"), json_column(before), json_column(after), record["state"],
             record["ts"], record.get("undoes"), record.get("grp")))
    elif op == "state":
        db.executemany("UPDATE changes SET state=? WHERE id=?",
                       ((record["state"], number) for number in record.get("ids") or ()))
    else:
        log.warning("Skipping an unknown line of the run log: %r", op)
        return 0
    return 1


def export(store: Store, run_log: RunLog) -> int:
    """Write a database's runs and changes (not a dry run's previews) to the file, once: the
    database was made before the file existed."""
    records = []
    for row in store._db.execute(select_runs("1 ORDER BY id")).fetchall():
        records.append(run_record(row))
        if row[3] is not None or row[4] != "running":
            records.append(finish_record(row))
    run_log.append(records)
    written, last = len(records), 0
    while rows := store._db.execute(select_changes("id > ? AND state <> 'preview' ORDER BY id "
                                                  "LIMIT ?"), (last, EXPORT_BATCH)).fetchall():
        run_log.append(change_record(row) for row in rows)
        written += len(rows)
        last = cast(int, rows[-1][0])
    run_log.sync()
    with store.transaction():
        store.set_meta(run_log_key(), str(run_log.size()))
    log.info("Wrote the passes' runs of this database to %s (%d lines): a rebuilt index "
             "keeps its runs.", run_log.path, written)
    return 0
