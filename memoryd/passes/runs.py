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
undone as it is now where the edits made since and the undo's are apart (:func:`rebased`).
Entries written through the API keep their changes in the ledger too (``status`` and
``update`` records), so a rebuild keeps them; and every run and change (not a dry run's
previews) is also written to the passes' journal file as it is recorded
(:mod:`memoryd.store.pass_log`), so that a rebuilt index still lists the runs, undoes them,
and keeps an undone merge undone.

**Crash safety.** File changes that belong together (a notebook and its archive) form a group:
all are recorded ``pending``, with their entries' updates, in one transaction before any file
is written, and marked ``applied`` after (or, when a file changed meanwhile, the entries move
back and the group is a ``conflict``). At start, ``recover`` settles what a killed run left: a
group whose files all hold their new bytes is completed; otherwise the files already written
are put back (compare-and-swap), the entries move back, and the group is aborted, so a change
is never half applied (a file a removal had renamed aside goes, or back if someone wrote into
it: :func:`~memoryd.passes.user_files.settle_removal`). A run still "running" is marked
interrupted.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memoryd.errors import BadParamsError, NotFoundError
from memoryd.passes.carry_edit import carry_edit
from memoryd.passes.file_care import (
    FileNotWrittenError,
    NotWritten,
    is_file_error,
    not_written,
    remove_stale_temporaries,
)
from memoryd.passes.journal_file import JournalFile
from memoryd.passes.user_files import (
    FileText,
    remove_if_unchanged,
    replace_if_unchanged,
    settle_removal,
)
from memoryd.regular_file import read_regular
from memoryd.scheduling import give_way
from memoryd.store.database import Store
from memoryd.store.durable import fsync_directory
from memoryd.store.entries import Entries
from memoryd.store.entry_writes import mark_target
from memoryd.store.ledger import LEDGER_FIELDS
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry
from memoryd.store.runs import ChangeRow, Run

log = logging.getLogger(__name__)

#: Entry fields a pass may change, and which of them the ledger must carry.
ENTRY_FIELDS = ("status", "superseded_by", "confidence", "occurrences", "stale", "source",
                "line_start", "line_end", "kind", "project")
LEDGERED = LEDGER_FIELDS
#: The action of a reported problem that names a file a pass may not or cannot rewrite
#: (`memory status` names the files of the last runs' such problems).
UNWRITTEN = "unwritten"
#: Fields of the entries that move with a file change.
MOVED_FIELDS = ("source", "line_start", "line_end", "text", "hash", "created", "status",
                "superseded_by")


def run_name(run: int) -> str:
    return f"r{run}"


def change_name(change: int) -> str:
    return f"c{change}"


def parse_target(text: str) -> tuple[str, int]:
    """"r12" → ("run", 12); "c345" → ("change", 345)."""
    if len(text) > 1 and text[0] in "rc" and text[1:].isdigit():
        return ("run" if text[0] == "r" else "change"), int(text[1:])
    raise BadParamsError(f"{text!r} is neither a run (r12) nor a change (c345)")


@dataclass
class Change:
    kind: str
    target: str
    action: str
    why: str
    before: Any = None
    after: Any = None


@dataclass
class RunSummary:
    run: int
    name: str
    dry_run: bool
    counts: dict[str, int] = field(default_factory=dict)
    status: str = "running"


class PassRuns:
    """Runs on the database thread."""

    def __init__(self, store: Store, entries: Entries, state_dir: Path) -> None:
        self.store = store
        self.entries = entries
        #: agents whose ledger holds entry changes not fsynced yet (see :meth:`sync_ledgers`)
        self.unsynced: set[str] = set()
        #: the journal file: a transaction's runs and changes go there too (recording())
        self.file = JournalFile(store, entries, state_dir)
        self.log = self.file.log
        self.recording = self.file.recording

    # -- runs -------------------------------------------------------------------------

    def begin(self, name: str, scope: dict[str, Any], dry_run: bool) -> RunSummary:
        with self.recording():
            run = self.store.runs.begin(name, time.time(), dry_run, scope)
            self.file.runs([run], finished=False)
        return RunSummary(run, name, dry_run)

    def finish(self, run: RunSummary, status: str, error: str | None = None) -> None:
        run.status = status
        with self.recording():
            self.store.runs.finish(run.run, time.time(), status, run.counts, error)
            self.file.runs([run.run], finished=True)

    def newest(self, name: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        return [self._run_row(row) for row in self.store.runs.newest(name, limit)]

    def run(self, run: int) -> dict[str, Any]:
        row = self.store.runs.get(run)
        if row is None:
            raise NotFoundError(f"no run {run_name(run)}")
        return {**self._run_row(row), "changes": self.changes(run)}

    @staticmethod
    def _run_row(row: Run) -> dict[str, Any]:
        return {"run": run_name(row.id), "pass": row.name, "started": row.started,
                "finished": row.finished, "status": row.status, "dry_run": row.dry_run,
                "scope": row.scope, "counts": row.counts or {}, "error": row.error}

    def changes(self, run: int) -> list[dict[str, Any]]:
        return [self._change_row(row) for row in self.store.runs.changes_of(run)]

    def change(self, change: int) -> dict[str, Any]:
        row = self.store.runs.change(change)
        if row is None:
            raise NotFoundError(f"no change {change_name(change)}")
        return self._change_row(row)

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
        The forget's ledger record names the change, and the run is in the passes' journal
        file: both outlive a rebuild. Returns the entry and the run (None: it was forgotten
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
            self.file.runs([run], finished=False)
            self.file.runs([run], finished=True)
            number = self._insert(run, change, "applied")
            forgotten = self.entries.forget_entry(entry, actor, reason, change=number)
        return forgotten, run_name(run)

    # -- recording and applying -------------------------------------------------------

    def _insert(self, run: int, change: Change, state: str, undoes: int | None = None, *,
                logged: bool = True) -> int:
        """A change's row (in a transaction of :meth:`recording`), and its line in the
        journal file unless ``logged`` is False (the caller writes it) or it is a preview."""
        number = self.store.runs.add_change(run, change.kind, change.target, change.action,
                                            change.why, change.before, change.after, state,
                                            time.time(), undoes)
        if logged and state != "preview":
            self.file.changes([number])
        return number

    def note(self, run: RunSummary, change: Change, state: str) -> int:
        """Record a change that writes nothing now (a preview, a proposal, a contradiction)."""
        with self.recording():
            return self._insert(run.run, change, state)

    def apply(self, run: RunSummary, change: Change, undoes: int | None = None) -> str:
        """Apply a change (or, in a dry run, record it as a preview). Returns its state:
        applied, preview, conflict (a file changed meanwhile) or skipped (nothing to do)."""
        if run.dry_run:
            self.note(run, change, "preview")
            return "preview"
        if change.kind == "entry":
            return self._apply_entry(run.run, change, undoes)
        if change.kind == "file":
            return self.apply_files(run, [change], [undoes])
        raise ValueError(f"cannot apply a {change.kind} change")

    def _apply_entry(self, run: int, change: Change, undoes: int | None) -> str:
        return "applied" if self._apply_entries(run, [change], [undoes]) else "skipped"

    def apply_entries(self, run: RunSummary, changes: list[Change]) -> int:
        """Entry changes that belong together (a merge: the survivor and the entries it
        absorbs), in one transaction with one ledger append per agent. Returns how many were
        applied (or previewed, in a dry run)."""
        if run.dry_run:
            for change in changes:
                self.note(run, change, "preview")
            return len(changes)
        return self._apply_entries(run.run, changes, [None] * len(changes))

    def _apply_entries(self, run: int, changes: list[Change], undoes: list[int | None]) -> int:
        applied = 0
        ledger: dict[str, list[dict[str, Any]]] = {}
        with self.recording():
            for change, undo in zip(changes, undoes):
                entry = self.store.entry_by_uid(change.target)
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
        """fsync the ledgers entry changes went to since the last call, and the passes'
        journal file (off the database thread: a fsync there held every search for as long as
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
        now = time.time()
        self.store.update_entry(entry.uid, **fields, updated=now)
        if "status" in fields:
            self.entries.set_index_status(entry.rowid, fields["status"])
        self.store.record_event(entry.uid, actor, "memoryd", {k: getattr(entry, k) for k in fields},
                                fields, now)
        ledgered = {k: v for k, v in fields.items() if k in LEDGERED}
        if ledgered and entry.via in ("api", "import", "extract"):
            return {"op": "update", "ts": now, "id": entry.uid, "fields": ledgered,
                    "actor": actor}
        if "status" in fields and entry.via == "watch":
            # a watched entry's status (the undo of its forget) outlives its row as a mark,
            # and its ledger's status record puts the mark back after a rebuild, as the
            # forget's did (Entries._set_status)
            superseded_by = fields.get("superseded_by", entry.superseded_by)
            self.store.set_mark(entry.agent, mark_target(entry.uid, entry.hash, "watch"),
                                fields["status"], superseded_by, actor, now)
            record = {"op": "status", "ts": now, "id": entry.uid, "status": fields["status"],
                      "actor": actor, "hash": entry.hash, "via": "watch"}
            return {**record, "superseded_by": superseded_by} if superseded_by else record
        return None

    def apply_files(self, run: RunSummary, changes: list[Change],
                    undoes: Sequence[int | None] | None = None) -> str:
        """Apply file changes that belong together (a notebook and its archive) all or none:
        :meth:`begin_files`, :func:`swap_files`, :meth:`finish_files` in one go. Returns
        applied, preview or conflict; a file that may not or cannot be rewritten (see
        :func:`~memoryd.passes.user_files.is_file_error`) raises FileNotWrittenError, the
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
            if not is_file_error(exc):
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
            self.file.changes(numbers)
        return numbers

    def move_entries(self, moves: dict[str, dict[str, Any]]) -> None:
        """Entries of a pending group moved (some or all), in a transaction of their own."""
        with self.recording():
            self._move_entries(moves)

    def finish_files(self, changes: list[Change], numbers: list[int], written: bool) -> str:
        """Mark the group applied — or, when a file had changed meanwhile (``written`` False:
        :func:`swap_files` put back what it wrote), move the entries back and mark it
        conflict."""
        with self.recording():
            if not written:
                for change in changes:
                    self._move_entries((change.after or {}).get("entries_before", {}))
            self._states(numbers, "applied" if written else "conflict")
        return "applied" if written else "conflict"

    def _move_entries(self, moves: dict[str, dict[str, Any]]) -> None:
        """Entries whose text moved or changed with a file change (pruned lines into an
        archive, a date rewritten): their new source, lines, text, so that the watcher finds
        the index already right and the entries keep their ids. A new text is embedded anew.
        An entry's ``by`` names who asked (the caller of a forget or supersede that edited the
        file) for its history; otherwise it is memoryd's own change."""
        now = time.time()
        for uid, fields in moves.items():
            actor = fields.get("by") or "memoryd"
            fields = {k: v for k, v in fields.items() if k in MOVED_FIELDS}
            found = self.store.entry_fields(EntryQuery().uids([uid]), ("id", *fields)) \
                if fields else []
            if not found:
                continue
            (row,) = found
            self.store.update_entry(uid, **fields, updated=now)
            action = "pass move"
            if "status" in fields:  # a forget or supersede that edited the file, or its undo
                self.entries.set_index_status(row["id"], fields["status"])
                action = fields["status"]
            self.store.record_event(uid, action, actor, {k: row[k] for k in fields}, fields, now)

    def _states(self, changes: list[int], state: str) -> None:
        self.store.runs.set_states(changes, state)
        self.file.state(changes, state)

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
            running = self.store.runs.interrupt(time.time())
            if running:
                self.file.runs(running, finished=True)
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
                    _logged(settle_removal, Path(change["target"]), _bytes(change["before"]))
            done = [_holds(c["target"], c["after"]) for c in changes]
            if all(done):
                with self.recording():
                    for change in changes:
                        self._move_entries((change["after"] or {}).get("entries", {}))
                    self._states([_number(c) for c in changes], "applied")
                continue
            for change, written in zip(changes, done):  # all or none: put back what was written
                if written:
                    _logged(_swap, Path(change["target"]), change["after"], change["before"])
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


def rebased(change: Change) -> Change:
    """An undo's file change made to the file as it is now. An undo puts back the text a run
    replaced; when the file was edited since the run wrote it (an agent's new line in the
    notebook), the undo is made to the edited text instead, keeping the edit — if the two are
    apart: the undo carried onto the edited text and the edit carried onto the undone text
    (:func:`~memoryd.passes.carry_edit.carry_edit`) must give the same text. Otherwise, or
    when the file is gone, the change is returned as it was, and its compare-and-swap finds a
    conflict. An undo that removes a file the run created keeps what was written into it
    since (a later run's archived lines): it removes only this run's lines, and the file
    when nothing else is left."""
    if change.kind != "file" or change.before is None:
        return change
    try:
        current = read_regular(change.target)
    except OSError:
        return change
    written = _bytes(change.before)
    if current == written:
        return change
    undone = _bytes(change.after) if change.after is not None else b""
    merged = carry_edit(written, undone, current)
    if merged is None or merged != carry_edit(written, current, undone):
        return change
    before = {**change.before, "text": current.decode("utf-8", "surrogateescape")}
    if change.after is None and not merged:
        return replace(change, before=before)
    return replace(change, before=before, after={
        **(change.after or {"entries": {}}), "text": merged.decode("utf-8", "surrogateescape")})


def _logged(fn: Any, path: Path, *args: Any) -> None:
    """Settling a file: what cannot be done is logged, and the rest goes on."""
    try:
        fn(path, *args)
    except OSError as exc:
        log.warning("%s: could not be put back as the journal has it (%s); left as it is",
                    path, exc.strerror or exc)


def _number(change: dict[str, Any]) -> int:
    return int(change["change"][1:])


def _holds(target: str, side: dict[str, Any] | None) -> bool:
    """Whether the file holds this side of a change (None: does not exist)."""
    path = Path(target)
    if side is None:
        return not path.exists()
    try:
        return read_regular(path) == _bytes(side)
    except OSError:
        return False


def swap_files(changes: list[Change], renamed_in: set[Path] | None = None, *,
               sync: Callable[[], None] | None = None) -> bool:
    """Write a group's files by compare-and-swap, all or none: when one changed meanwhile,
    the ones written already are put back and False is returned. Needs no database (a pass
    may run it on a worker thread). With ``renamed_in``, the directories whose names changed
    are collected there for the caller to fsync (see :func:`replace_if_unchanged`); ``sync``
    makes the journal file's pending lines durable first (a power loss then leaves the
    change recorded pending, which the next start settles, even after a rebuild)."""
    if sync is not None:
        sync()
    written: list[Change] = []
    for change in changes:
        try:
            swapped = _swap(Path(change.target), change.before, change.after, renamed_in)
        except OSError:  # what was written goes back (settle does it, should this fail)
            for done in reversed(written):
                _logged(_swap, Path(done.target), done.after, done.before, renamed_in)
            raise
        if not swapped:
            for done in reversed(written):
                _swap(Path(done.target), done.after, done.before, renamed_in)
            return False
        written.append(change)
    return True


def swap_groups(groups: list[list[Change]],
                sync: Callable[[], None] | None = None) -> list[bool | NotWritten]:
    """:func:`swap_files` for each group, in order; each directory is fsynced once at the end
    (a notebook pass writes a thousand files into a few directories), before any group is
    reported written. A group with a file that may not or cannot be rewritten is skipped:
    its place holds why (see :func:`~memoryd.passes.user_files.is_file_error`); the others
    are written. ``sync``: as swap_files', once before the first file."""
    if sync is not None:
        sync()
    renamed_in: set[Path] = set()
    written: list[bool | NotWritten] = []
    for changes in groups:
        give_way()
        try:
            written.append(swap_files(changes, renamed_in))
        except OSError as exc:
            if not is_file_error(exc):
                raise
            written.append(not_written(exc, changes[0].target))
    for directory in sorted(renamed_in):
        fsync_directory(directory)
    return written


def _swap(path: Path, old: dict[str, Any] | None, new: dict[str, Any] | None,
          renamed_in: set[Path] | None = None) -> bool:
    """Compare-and-swap a file from one side of a change to the other."""
    expected = _bytes(old) if old is not None else None
    if new is None:
        return expected is not None and remove_if_unchanged(path, expected, renamed_in)
    return replace_if_unchanged(path, expected, _bytes(new), renamed_in=renamed_in)


def file_change(path: Path, basis: FileText | None, new_text: str | None, action: str,
                why: str, moves: dict[str, dict[str, Any]] | None = None,
                moves_before: dict[str, dict[str, Any]] | None = None) -> Change | None:
    """A change of a file from ``basis`` — the text the new one was computed from, as read
    (None: the file did not exist) — to ``new_text`` (None: removed), in the file's own
    conventions; None when nothing would change. The write is a compare-and-swap against the
    basis, so an edit made since it was read is never overwritten."""
    if basis is not None:
        before: dict[str, Any] | None = {"text": basis.data.decode("utf-8", "surrogateescape")}
        data = basis.encode(new_text) if new_text is not None else None
        if data == basis.data:
            return None
    else:
        before, data = None, None if new_text is None else new_text.encode("utf-8")
        if data is None:
            return None
    after = None if data is None else {"text": data.decode("utf-8", "surrogateescape"),
                                       "entries": moves or {}, "entries_before": moves_before or {}}
    return Change("file", str(path), action, why, before, after)


def _bytes(side: dict[str, Any]) -> bytes:
    return side["text"].encode("utf-8", "surrogateescape")
