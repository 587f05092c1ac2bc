"""Runs of the maintenance passes and every change they make: previewable, undoable, safe.

A **run** (``r12``) is one pass over a scope; a **change** (``c345``) is one thing it did:

    kind      entry (an entry's fields), file (a file's bytes), proposal (a rule to promote,
              applied when accepted), contradiction (two entries that disagree; never resolved)
    state     preview (a dry run), applied, proposed, open, pending (in flight), conflict (the
              file changed meanwhile; left for a later run), skipped (a file memoryd may not
              or cannot rewrite: read-only, hard links, immutable, a read-only file system;
              nothing written, the reason reported with it), undone, aborted

A change carries what it replaces and what it writes (``before`` / ``after``): an entry's
fields, or a file's text and the entries that moved with it. **Undo** applies the opposite
change as a new run, so an undo can itself be undone. A file edited since the run wrote it is
undone as it is now where the edits made since and the undo's are apart
(:func:`~memoryd.passes.file_changes.rebased`).
Entries written through the API keep their changes in the ledger too (``status`` and
``update`` records), so a rebuild keeps them; and every run and change (not a dry run's
previews) is also written to the run log as it is recorded
(:mod:`memoryd.store.run_log`), so that a rebuilt index still lists the runs, undoes them,
and keeps an undone merge undone.

**Crash safety.** File changes that belong together (a notebook and its archive) form a group:
all are recorded ``pending``, with their entries' updates, in one transaction before any file
is written, and marked ``applied`` after (or, when a file changed meanwhile, the entries move
back and the group is a ``conflict``). At start, ``recover`` settles what a killed run left: a
group whose files all hold their new bytes is completed; otherwise the files already written
are put back (compare-and-swap), the entries move back, and the group is aborted, so a change
is never half applied (a file a removal had renamed aside goes, or back if someone wrote into
it: :func:`~memoryd.passes.user_files.settle_removal`). A run still "running" is marked
interrupted, with its changes counted (it never wrote its counts).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import BadParamsError, NotFoundError
from memoryd.passes.changes import Change, RunSummary, change_name, run_name
from memoryd.passes.file_care import (
    FileNotWrittenError,
    is_file_error,
    not_written,
    remove_stale_temporaries,
)
from memoryd.passes.file_changes import holds, settle_file, side_bytes, swap, swap_files
from memoryd.passes.run_log_writer import RunLogWriter
from memoryd.passes.user_files import settle_removal
from memoryd.store.database import Store
from memoryd.store.entries import Entries
from memoryd.store.entry_writes import mark_target
from memoryd.store.ledger import LEDGER_FIELDS
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry
from memoryd.store.runs import ChangeRow, Run

log = logging.getLogger(__name__)

#: Entry fields a pass may change, and which of them the ledger must carry.
ENTRY_FIELDS = ("status", "superseded_by", "confidence", "occurrences", "stale", "source",
                "line_start", "line_end", "kind", "project", "tags")
LEDGERED = LEDGER_FIELDS
#: The action of a reported problem that names a file a pass may not or cannot rewrite
#: (`memory status` names the files of the last runs' such problems).
UNWRITTEN = "unwritten"
#: How far `pass show` follows undos of undos of a change.
MAX_UNDOS = 20
#: A state of a run's changes counted under another name (:meth:`PassRuns._counted`).
STATE_COUNTS = {"undone": "applied", "reported": "problems"}
#: Fields of the entries that move with a file change.
MOVED_FIELDS = ("source", "line_start", "line_end", "text", "hash", "created", "status",
                "superseded_by")


def _as_read(entry: StoredEntry | None, change: Change) -> bool:
    """Whether the entry is still there with each field of the change's ``before``."""
    return entry is not None and all(
        (list(entry.tags) if key == "tags" else getattr(entry, key)) == value
        for key, value in (change.before or {}).items() if key in ENTRY_FIELDS)


def _status_as_read(entry: StoredEntry | None, change: Change) -> bool:
    """Whether an undo's entry still has the status the change it takes back left (a forget
    undone after another machine's supersede overtook it: the supersede holds, and the undo
    is left alone, as a file changed since is)."""
    status = (change.before or {}).get("status")
    return entry is not None and (status is None or entry.status == status)


@dataclass(frozen=True)
class RunsRequest:
    """A page of the runs asked for (``pass_runs``): of the pass ``name`` (or what else makes
    runs: undo, forget, scope; None: any), of those whose scope names the ``entry`` (a
    forget's names the entry it forgot; None: any), ``limit`` of them after ``offset``."""

    name: str | None
    entry: str | None
    limit: int
    offset: int


class PassRuns:
    """Runs on the database thread."""

    def __init__(self, store: Store, entries: Entries, state_dir: Path) -> None:
        self.store = store
        self.entries = entries
        #: agents whose ledger holds entry changes not fsynced yet (see :meth:`sync_ledgers`)
        self.unsynced: set[str] = set()
        #: the run log: a transaction's runs and changes go there too (recording())
        self.writer = RunLogWriter(store, entries, state_dir)
        self.log = self.writer.log
        self.recording = self.writer.recording

    # -- runs -------------------------------------------------------------------------

    def begin(self, name: str, scope: dict[str, Any], dry_run: bool) -> RunSummary:
        with self.recording():
            run = self.store.runs.begin(name, time.time(), dry_run, scope)
            self.writer.runs([run], finished=False)
        return RunSummary(run, name, dry_run)

    def finish(self, run: RunSummary, status: str, error: str | None = None) -> None:
        run.status = status
        with self.recording():
            self.store.runs.finish(run.run, time.time(), status, run.counts, error)
            self.writer.runs([run.run], finished=True)

    def newest(self, name: str | None = None, limit: int = 50,
               offset: int = 0) -> list[dict[str, Any]]:
        return [self._run_row(row) for row in self.store.runs.newest(name, limit, offset)]

    def page(self, asked: RunsRequest) -> dict[str, Any]:
        """A page of the runs, newest first, and how many there are: {"runs", "total"}."""
        runs = self.store.runs
        return {"runs": [self._run_row(row) for row in runs.newest(
                    asked.name, asked.limit, asked.offset, entry=asked.entry)],
                "total": runs.count(asked.name, entry=asked.entry)}

    def newest_whole(self, name: str) -> dict[str, Any] | None:
        """The pass's newest run over everything (the schedule counts from it)."""
        row = self.store.runs.newest_whole(name)
        return self._run_row(row) if row else None

    def run(self, run: int) -> dict[str, Any]:
        row = self.store.runs.get(run)
        if row is None:
            raise NotFoundError(f"no run {run_name(run)}")
        return {**self._run_row(row), "changes": self._with_undos(self.changes(run))}

    def _run_row(self, row: Run) -> dict[str, Any]:
        counts = row.counts or {}
        if not counts and row.status == "interrupted":  # killed before recovery counted it
            counts = self._counted(row.id)
        return {"run": run_name(row.id), "pass": row.name, "started": row.started,
                "finished": row.finished, "status": row.status, "dry_run": row.dry_run,
                "scope": row.scope, "counts": counts, "error": row.error}

    def _counted(self, run: int) -> dict[str, int]:
        """A run's counts from its changes' states: a run the daemon was killed in never
        wrote its own ("nothing to do", of a run that had applied a hundred). A change undone
        since was applied by this run; a problem it reported counts as the pass counts it."""
        counts: dict[str, int] = {}
        for state, n in self.store.runs.states(run).items():
            key = STATE_COUNTS.get(state, state)
            counts[key] = counts.get(key, 0) + n
        return counts

    def interrupted(self) -> list[tuple[dict[str, Any], int]]:
        """The interrupted runs that hold applied changes no later run made whole: (the
        run, how many), for `memory status` and `memory doctor`."""
        return [(self._run_row(row), applied)
                for row, applied in self.store.runs.interrupted_with_applied()]

    def changes(self, run: int) -> list[dict[str, Any]]:
        return [self._change_row(row) for row in self.store.runs.changes_of(run)]

    def shown(self, run: int, offset: int, max_bytes: int) -> dict[str, Any]:
        """A run with a page of its changes, in order from the ``offset``-th: as many as fit
        in ``max_bytes`` as JSON (at least one), so that a run of hundreds of big file
        changes (a notebooks run over 200 notebooks: 8 MB) never makes a reply too large to
        send. ``changes_total`` counts them all; ``next`` is the offset of the next page
        (None: this page ends the run); ``undoable`` counts those of every page applied now,
        which an undo of the run takes back (a page of the run cannot tell it)."""
        row = self.store.runs.get(run)
        if row is None:
            raise NotFoundError(f"no run {run_name(run)}")
        total = self.store.runs.count_changes(run)
        page: list[dict[str, Any]] = []
        size = 0
        for change_row in self.store.runs.changes_from(run, offset):
            change = self._change_row(change_row)
            size += len(json.dumps(change, default=str))  # ASCII: no fewer bytes than sent
            if page and size > max_bytes:
                break
            page.append(change)
        end = offset + len(page)
        return {**self._run_row(row), "changes": self._with_undos(page), "changes_total": total,
                "offset": offset, "next": end if end < total else None,
                "undoable": self.store.runs.states(run).get("applied", 0)}

    def change(self, change: int) -> dict[str, Any]:
        row = self.store.runs.change(change)
        if row is None:
            raise NotFoundError(f"no change {change_name(change)}")
        return self._with_undos([self._change_row(row)])[0]

    def _with_undos(self, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The changes, each undone one with ``undos``: what became of it since, as (run,
        change) pairs — the undo that took it back, the undo of that undo that applied it
        again, and so on. An odd number: it is undone; an even one: applied again, by the
        last (`pass show` marked it undone for good, and `undo` found nothing to undo).
        An accepted proposal has ``accepted_by``, the run that wrote it, and the ``undos``
        of what that run wrote (an accepted rule undone since said "accepted" and nothing
        more, while its file no longer held it)."""
        chains = self._undo_chains([_number(c) for c in changes if c["state"] == "undone"])
        shown = [{**c, "undos": chains[_number(c)]} if chains.get(_number(c)) else c
                 for c in changes]
        accepted = [c["change"] for c in changes
                    if c["kind"] == "proposal" and c["state"] == "accepted"]
        if not accepted:
            return shown
        runs = self.store.runs.accepting(accepted)
        wrote: dict[str, ChangeRow] = {}  # proposal → what its run wrote first (the rule)
        for name, run in runs.items():
            first = next((row for row in self.store.runs.changes_of(run)
                          if row.kind in ("file", "entry")), None)
            if first is not None:
                wrote[name] = first
        since = self._undo_chains([row.id for row in wrote.values() if row.state == "undone"])
        for change in shown:
            name = change["change"]
            if name in runs:
                change["accepted_by"] = run_name(runs[name])
            if name in wrote and since.get(wrote[name].id):
                change["undos"] = since[wrote[name].id]
        return shown

    def _undo_chains(self, undone: list[int]) -> dict[int, list[tuple[str, str]]]:
        """Of these undone changes, each one's ``undos`` (see :meth:`_with_undos`)."""
        level = {number: number for number in undone}
        chains: dict[int, list[tuple[str, str]]] = {number: [] for number in level}
        while level:
            found = self.store.runs.undoers(sorted(set(level.values())))
            following: dict[int, int] = {}
            for origin, last in level.items():
                if last not in found:
                    continue
                number, run, state = found[last]
                chains[origin].append((run_name(run), change_name(number)))
                if state == "undone" and len(chains[origin]) < MAX_UNDOS:
                    following[origin] = number
            level = following
        return chains

    @staticmethod
    def _change_row(row: ChangeRow) -> dict[str, Any]:
        return {"change": change_name(row.id), "run": run_name(row.run), "kind": row.kind,
                "target": row.target, "action": row.action, "why": row.why,
                "before": row.before, "after": row.after, "state": row.state, "ts": row.ts,
                "undoes": change_name(row.undoes) if row.undoes else None,
                "group": change_name(row.group) if row.group else None}

    def group_of(self, change: dict[str, Any]) -> list[dict[str, Any]]:
        """The applied changes of ``change``'s group (itself alone when it has none): file
        changes written all or none are taken back all or none."""
        if not change["group"]:
            return [change]
        return [self._change_row(row) for row in self.store.runs.applied_in_group(
            int(change["run"][1:]), int(change["group"][1:]))]

    def open_contradictions(self) -> list[dict[str, Any]]:
        return [self._change_row(row) for row in self.store.runs.open_contradictions()]

    def unwritten(self) -> list[tuple[str, str, str]]:
        """The files the last finished run of each pass could not rewrite, as it reported
        them: (file, why, run), for `memory status`."""
        return [(target, why, run_name(run))
                for target, why, run in self.store.runs.problems_of_last_runs(UNWRITTEN)]

    def undone_supersedes(self) -> list[tuple[str, str]]:
        """(entry, the entry it was superseded by) of every supersede that was taken back."""
        return [(target, after["superseded_by"])
                for target, after in self.store.runs.undone("entry", "supersede")]

    def forget(self, uid: str, actor: str, reason: str | None) -> tuple[StoredEntry, str | None]:
        """``memory forget`` of an entry that is not a line of a memory file (one written
        through the API, a transcript turn, a file's entry kept as history): a run of its own
        (``forget``) with one applied change, so that ``memory undo RUN`` takes it back like
        any other change — the entry active again under its id, with its date and history.
        The forget's ledger record names the change, and the run is in the run log:
        both outlive a rebuild. Returns the entry and the run (None: it was forgotten
        already)."""
        entry = self.store.entry_by_uid(uid)
        if entry is None:
            raise NotFoundError(f"no entry with id {uid!r}")
        if entry.status == "forgotten":
            return entry, None
        now = time.time()
        change = Change("entry", uid, "forget",
                        f"memory forget {uid} by {actor}" + (f": {reason}" if reason else ""),
                        {"status": entry.status, "superseded_by": entry.superseded_by},
                        {"status": "forgotten"})
        with self.recording():
            run = self.store.runs.add_done("forget", now, now,
                                           {"agent": entry.agent, "entry": uid},
                                           {"applied": 1})
            self.writer.runs([run], finished=False)
            self.writer.runs([run], finished=True)
            number = self._insert(run, change, "applied")
            forgotten = self.entries.forget_entry(entry, actor, reason, change=number)
        return forgotten, run_name(run)

    # -- recording and applying -------------------------------------------------------

    def _insert(self, run: int, change: Change, state: str, undoes: int | None = None, *,
                logged: bool = True) -> int:
        """A change's row (in a transaction of :meth:`recording`), and its line in the
        run log unless ``logged`` is False (the caller writes it) or it is a preview."""
        number = self.store.runs.add_change(run, change.kind, change.target, change.action,
                                            change.why, change.before, change.after, state,
                                            time.time(), undoes)
        if logged and state != "preview":
            self.writer.changes([number])
        return number

    def note(self, run: RunSummary, change: Change, state: str) -> int:
        """Record a change that writes nothing now (a preview, a proposal, a contradiction)."""
        with self.recording():
            return self._insert(run.run, change, state)

    def apply(self, run: RunSummary, change: Change, undoes: int | None = None) -> str:
        """Apply a change (or, in a dry run, record it as a preview). Returns its state:
        applied, preview, conflict (a file or an entry changed meanwhile) or skipped (nothing
        to do)."""
        if run.dry_run:
            self.note(run, change, "preview")
            return "preview"
        if change.kind == "entry":
            return self._apply_entry(run.run, change, undoes)
        if change.kind == "file":
            return self.apply_files(run, [change], [undoes])
        raise ValueError(f"cannot apply a {change.kind} change")

    def _apply_entry(self, run: int, change: Change, undoes: int | None) -> str:
        done = self._apply_entries(run, [change], [undoes])
        return "conflict" if done is None else "applied" if done else "skipped"

    def apply_entries(self, run: RunSummary, changes: list[Change]) -> int:
        """Entry changes that belong together (a merge: the survivor and the entries it
        absorbs), in one transaction with one ledger append per agent; none of them when one
        of the entries is no longer as the pass read it (recorded as conflicts, see
        :meth:`_apply_entries`). Returns how many were applied (or previewed, in a dry run)."""
        if run.dry_run:
            for change in changes:
                self.note(run, change, "preview")
            return len(changes)
        return self._apply_entries(run.run, changes, [None] * len(changes)) or 0

    def _apply_entries(self, run: int, changes: list[Change], undoes: list[int | None]
                       ) -> int | None:
        """Apply the changes; how many were applied. A pass's change (not an undo's) applies
        only to the entry as the pass read it, each field of its ``before`` (a person may have
        forgotten or superseded it, or a write counted it again, while the pass worked between
        its read and this step; a merge that had superseded an entry the user forgot meanwhile
        made it active again when the run was undone): if one is not, none is applied, each is
        recorded as a conflict, and the answer is None."""
        entries = [self.store.entry_by_uid(change.target) for change in changes]
        applied = 0
        ledger: dict[str, list[dict[str, Any]]] = {}
        with self.recording():
            if not all(_status_as_read(entry, change) if undo is not None
                       else _as_read(entry, change)
                       for entry, change, undo in zip(entries, changes, undoes)):
                for change in changes:
                    self._insert(run, change, "conflict")
                return None
            for change, undo, entry in zip(changes, undoes, entries):
                if entry is None:
                    continue
                fields = {k: v for k, v in change.after.items() if k in ENTRY_FIELDS}
                record = self._write_entry(entry, fields, f"pass {change.action}")
                number = self._insert(run, change, "applied", undo)
                if record is not None:  # named by its change: see memoryd.maintenance.replay
                    ledger.setdefault(entry.agent, []).append({**record, "change": number})
                applied += 1
            for agent, records in ledger.items():  # fsynced before the run is done
                self.entries.write_ledger(agent, records, sync=False)
                self.unsynced.add(agent)
        return applied

    def sync_ledgers(self) -> None:
        """fsync the ledgers entry changes went to since the last call, and the run log
        (off the database thread: a fsync there held every search for as long as
        the disk took, 277 ms once while ext4 wrote back a big copy). A run is done, and says
        so, only after this; until then a power loss may lose its last changes from a ledger,
        never half a change: the changes that reach the ledger are each whole records,
        replayed at start."""
        agents, self.unsynced = self.unsynced, set()
        self.entries.ledger.sync(agents)
        self.log.sync()

    def _write_entry(self, entry: StoredEntry, fields: dict[str, Any],
                     actor: str) -> dict[str, Any] | None:
        """Update an entry (in a transaction the caller holds): the row, the vector index's
        status, the entry's event. Returns the ledger record the change needs (entries
        written through the API keep their changes in their ledger), which the caller appends
        before the transaction commits."""
        if not fields:
            return None
        now = self.entries.decided_at(entry) if "status" in fields else time.time()
        self.store.update_entry(entry.uid, **fields, updated=now)
        if "status" in fields:
            self.entries.set_index_status(entry.rowid, fields["status"])
        self.store.record_event(entry.uid, actor, "memoryd", {k: getattr(entry, k) for k in fields},
                                fields, now)
        ledgered = {k: v for k, v in fields.items() if k in LEDGERED}
        if ledgered and entry.via in ("api", "import", "extract"):
            record = {"op": "update", "ts": now, "id": entry.uid, "fields": ledgered,
                      "actor": actor}
            return {**record, "was": entry.status} if "status" in ledgered else record
        if "status" in fields and entry.via == "watch":
            # a watched entry's status (the undo of its forget) outlives its row as a mark,
            # and its ledger's status record puts the mark back after a rebuild, as the
            # forget's did (Entries._set_status)
            superseded_by = fields.get("superseded_by", entry.superseded_by)
            self.store.set_mark(entry.agent, mark_target(entry.uid, entry.hash, "watch"),
                                fields["status"], superseded_by, actor, now)
            record = {"op": "status", "ts": now, "id": entry.uid, "status": fields["status"],
                      "was": entry.status, "actor": actor, "hash": entry.hash, "via": "watch"}
            return {**record, "superseded_by": superseded_by} if superseded_by else record
        return None

    def apply_files(self, run: RunSummary, changes: list[Change],
                    undoes: Sequence[int | None] | None = None) -> str:
        """Apply file changes that belong together (a notebook and its archive) all or none:
        :meth:`begin_files`, :func:`swap_files`, :meth:`finish_files` in one go. Returns
        applied, preview or conflict; a file that may not or cannot be rewritten (see
        :func:`~memoryd.passes.file_care.is_file_error`) raises FileNotWrittenError, the
        group settled first (nothing written, ``skipped``); any other error of the write
        propagates, the group pending for the caller's :meth:`settle`."""
        numbers = self.begin_files(run, changes, undoes)
        if numbers is None:
            return "preview"
        for change in changes:
            self.move_entries((change.after or {}).get("entries", {}))
        try:
            written = swap_files(changes, sync=self.log.sync)
        except OSError as exc:
            if not is_file_error(exc, changes[0].target, self.log.path.parent):
                raise
            self.settle(group=numbers[0], state="skipped")
            what = not_written(exc, changes[0].target)
            raise FileNotWrittenError(f"cannot write {what}; nothing was changed",
                                      what) from exc
        return self.finish_files(changes, numbers, written)

    def begin_files(self, run: RunSummary, changes: list[Change],
                    undoes: Sequence[int | None] | None = None) -> list[int] | None:
        """Record the changes pending, before any file is written (None: a dry run, recorded
        as previews). The caller then moves the entries that go with them
        (:meth:`move_entries`, in steps if it likes) and writes the files: the entries move
        first so that the watcher, should it read a file the moment it is written, finds the
        index already right; should memoryd stop before the files are written, recovery moves
        them all back."""
        if run.dry_run:
            for change in changes:
                self.note(run, change, "preview")
            return None
        undoes = undoes or [None] * len(changes)
        with self.recording():
            numbers = [self._insert(run.run, change, "pending", undo, logged=False)
                       for change, undo in zip(changes, undoes)]
            self.store.runs.set_group(numbers, numbers[0])
            self.writer.changes(numbers)
        return numbers

    def move_entries(self, moves: dict[str, dict[str, Any]], changed_only: bool = False
                     ) -> None:
        """Entries of a pending group moved (some or all), in a transaction of their own
        (``changed_only``: see :meth:`_move_entries`)."""
        with self.recording():
            self._move_entries(moves, changed_only)

    def finish_files(self, changes: list[Change], numbers: list[int], written: bool) -> str:
        """Mark the group applied — or, when a file had changed meanwhile (``written`` False:
        :func:`~memoryd.passes.file_changes.swap_files` put back what it wrote), move the
        entries back and mark it conflict."""
        with self.recording():
            if not written:
                for change in changes:
                    self._move_entries((change.after or {}).get("entries_before", {}))
            self._states(numbers, "applied" if written else "conflict")
        return "applied" if written else "conflict"

    def _move_entries(self, moves: dict[str, dict[str, Any]], changed_only: bool = False
                      ) -> None:
        """Entries whose text moved or changed with a file change (pruned lines into an
        archive, a date rewritten): their new source, lines, text, so that the watcher finds
        the index already right and the entries keep their ids. A new text is embedded anew.
        An entry's ``by`` names who asked (the caller of a forget or supersede that edited the
        file) for its history; otherwise it is memoryd's own change. ``changed_only``: the
        fields an entry holds already are left, and an entry that holds them all has no
        event (an undo the file holds already). An entry's status moved, its file is parsed
        again when next read, even if its text is the one indexed before (a forgotten line
        put back before the watcher read the file without it)."""
        now = time.time()
        unkeyed: set[str] = set()
        for uid, fields in moves.items():
            actor = fields.get("by") or "memoryd"
            fields = {k: v for k, v in fields.items() if k in MOVED_FIELDS}
            found = self.store.entry_fields(EntryQuery().uids([uid]),
                                            ("id", *dict.fromkeys(("source", *fields)))) \
                if fields else []
            if not found:
                continue
            (row,) = found
            if changed_only:
                fields = {k: v for k, v in fields.items() if row[k] != v}
                if not fields:
                    continue
            self.store.update_entry(uid, **fields, updated=now)
            action = "pass move"
            if "status" in fields:  # a forget or supersede that edited the file, or its undo
                self.entries.set_index_status(row["id"], fields["status"])
                action = fields["status"]
                if row["source"]:  # the file as read before no longer makes these entries
                    unkeyed.add(row["source"])
            self.store.record_event(uid, action, actor, {k: row[k] for k in fields}, fields, now)
        self.store.files.unkey(unkeyed)

    def _states(self, changes: list[int], state: str) -> None:
        self.store.runs.set_states(changes, state)
        self.writer.state(changes, state)

    def set_state(self, change: int, state: str) -> None:
        with self.recording():
            self._states([change], state)

    # -- undo -------------------------------------------------------------------------

    def inverse(self, change: dict[str, Any]) -> Change:
        """The change that takes this one back."""
        if change["kind"] == "entry":
            return Change("entry", change["target"], "undo " + change["action"],
                          f"undo of {change['change']}", change["after"], change["before"])
        if change["kind"] == "file":
            after = dict(change["before"]) if change["before"] else None
            if after is not None:  # entries go back where they were (or stay, if it fails)
                after["entries"] = (change["after"] or {}).get("entries_before", {})
                after["entries_before"] = (change["after"] or {}).get("entries", {})
            before = dict(change["after"]) if change["after"] else None
            if before is not None:
                before["entries_before"] = before.pop("entries", {})
            return Change("file", change["target"], "undo " + change["action"],
                          f"undo of {change['change']}", before, after)
        raise BadParamsError(f"{change['change']} is a {change['kind']}: nothing to undo")

    def recover(self) -> int:
        """Settle what a killed run left (see the module docstring); returns how many."""
        settled = self.settle()
        self.stale_temporaries()
        with self.recording():
            running = self.store.runs.running()
            for number in running:  # its counts, as its changes were left
                self.store.runs.finish(number, time.time(), "interrupted",
                                       self._counted(number), None)
            if running:
                self.writer.runs(running, finished=True)
        if settled:
            log.info("Settled %d pass changes a stopped run left.", settled)
        return settled

    def settle(self, run: int | None = None, group: int | None = None,
               state: str = "aborted") -> int:
        """Complete or put back the pending file changes (of ``run``, of one ``group``, or of
        every run): a group whose files all hold their new bytes is applied, any other is
        undone, files and entries, and marked ``state``. Returns how many changes it settled.
        A file that cannot be put back is logged and left as it is (its text is in the
        change; the watcher indexes what it holds)."""
        pending: dict[int, list[dict[str, Any]]] = {}
        for number, grp in self.store.runs.pending(run, group):
            pending.setdefault(grp or number, []).append(self.change(number))
        for changes in pending.values():
            for change in changes:
                if change["after"] is None and change["before"] is not None:
                    settle_file(settle_removal, Path(change["target"]),
                                side_bytes(change["before"]))
            done = [holds(c["target"], c["after"]) for c in changes]
            if all(done):
                with self.recording():
                    for change in changes:
                        self._move_entries((change["after"] or {}).get("entries", {}))
                    self._states([_number(c) for c in changes], "applied")
                continue
            for change, written in zip(changes, done):  # all or none: put back what was written
                if written:
                    settle_file(swap, Path(change["target"]), change["after"], change["before"])
            with self.recording():
                for change in changes:  # and the entries that moved ahead of the files
                    self._move_entries((change["after"] or {}).get("entries_before", {}))
                self._states([_number(c) for c in changes], state)
        return sum(len(g) for g in pending.values())

    def stale_temporaries(self) -> int:
        """Remove what a memoryd killed mid-write left beside the files it writes
        (:func:`~memoryd.passes.user_files.remove_stale_temporaries`), in the directories
        of the pending changes and of the watched memory files; at start."""
        directories = {Path(os.path.realpath(target)).parent
                       for target in self.store.runs.pending_file_targets()}
        directories.update(Path(path) for path in self.store.files.memory_directories())
        return remove_stale_temporaries(sorted(directories))


def _number(change: dict[str, Any]) -> int:
    return int(change["change"][1:])
