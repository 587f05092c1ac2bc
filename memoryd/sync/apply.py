"""What a merge brought, applied to this machine's index incrementally: the index stays per
machine (docs/sync.md, "The index stays per machine").

The files of the commit before the merge are what the index already holds (every local change
was committed first, on the database thread). So the records a merge brought are those of a
changed file that the file did not hold before: a ledger's are applied as the replay at start
applies them (:func:`memoryd.maintenance.replay.apply_records`), an archive's transcript turns are
restored, and so are the memory tools' writes of a history archive
(:class:`memoryd.store.file_history.Replay`), and a ``purge`` record made on another machine
purges its entries here too (:class:`memoryd.maintenance.purge.Purge` by ids). Their vectors
are made here, by the daemon's backfill, with this machine's model.

The work is split where it runs (memoryd.server.sync_methods): :func:`plan` reads the two
commits' versions of each changed file from git and decodes what is new, on a worker thread;
:func:`apply_some` applies it on the database thread in short slices, between which searches
and writes go on; :func:`finish` applies the purges and ends the mark.

The ``sync:pending`` mark ends only once all of it is done; a sync killed before is applied
again at the next start (:func:`finish_pending`), after its files are put back or completed
(applying a record twice changes nothing more). The mark is ``BEFORE`` while the worktree may
still be at the commit before the merge, then ``BEFORE AFTER`` from the moment the worktree is
at the merge and the index's offsets into its files say so (:func:`advanced`): from then on
local writes append past the merged files, and move those offsets on themselves.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.maintenance.purge import Purge
from memoryd.maintenance.replay import apply_records
from memoryd.names import AGENT_NAME
from memoryd.store.archive import AgentArchive, meta_key, restore_records
from memoryd.store.database import Store
from memoryd.store.file_history import Replay
from memoryd.store.file_versions import history_key
from memoryd.store.ledger import Ledger
from memoryd.store.run_log import RunLog
from memoryd.sync.merge import archive_lines, common_lines, ledger_lines
from memoryd.sync.repo import SyncRepo

log = logging.getLogger(__name__)

#: Meta key holding the commit a merge started from (and, once the worktree is at the merge,
#: the merge), until what it brought is applied.
PENDING = "sync:pending"
#: The longest one slice of an apply holds the database thread (it then lets the searches and
#: writes waiting go first: memoryd.scheduling).
SLICE_S = 0.02


@dataclass
class Applied:
    """What one sync applied to the index; ``pulled``: the ledger records the merge brought
    (``records``: those that changed the index: a duplicate, or a change a later one here
    overtook, is pulled and not applied)."""

    pulled: int = 0
    records: int = 0
    restored: int = 0
    versions: int = 0  # the memory tools' writes made on the other machine
    purged: int = 0
    files: int = 0
    agents: set[str] = field(default_factory=set)
    purged_rows: list[int] = field(default_factory=list)
    purged_words: list[str] = field(default_factory=list)
    #: the merge's time (off the database thread, but for an older git), the apply's time in
    #: all, the time its slices held the database thread, and the longest of them
    merge_s: float = 0.0
    apply_s: float = 0.0
    held_s: float = 0.0
    longest_s: float = 0.0
    slices: int = 0
    #: the database thread's steps besides the apply: moving the worktree to the merge (with
    #: the commit of what was written during the merge), and the longest of those
    advance_s: float = 0.0
    longest_advance_s: float = 0.0
    #: entries whose status both machines changed before they met: the decision that holds
    #: (the later) and the one it holds over (memoryd.maintenance.replay)
    decided: list[dict[str, Any]] = field(default_factory=list)

    def reply(self) -> dict[str, Any]:
        return {"pulled": self.pulled, "records": self.records, "restored": self.restored,
                "versions": self.versions, "purged": self.purged,
                "files": self.files, "merge_s": round(self.merge_s, 3),
                "apply_s": round(self.apply_s, 3), "held_s": round(self.held_s, 3),
                "longest_hold_s": round(self.longest_s, 4), "slices": self.slices,
                "advance_s": round(self.advance_s, 3),
                "longest_advance_s": round(self.longest_advance_s, 4)}

    def add(self, other: Applied) -> None:
        self.pulled += other.pulled
        self.records += other.records
        self.restored += other.restored
        self.versions += other.versions
        self.purged += other.purged
        self.files += other.files
        self.merge_s += other.merge_s
        self.apply_s += other.apply_s
        self.held_s += other.held_s
        self.longest_s = max(self.longest_s, other.longest_s)
        self.slices += other.slices
        self.advance_s += other.advance_s
        self.longest_advance_s = max(self.longest_advance_s, other.longest_advance_s)
        self.decided += other.decided


@dataclass
class Change:
    """One changed file: the records it brought (a ledger's, an archive's), its size after
    the merge, and how many are applied so far; ``replay``: a history archive's versions the
    other machine's retain pass moved out (memoryd.store.file_history)."""

    top: str  # ledger, transcripts or history
    agent: str
    path: Path
    size: int
    records: list[dict[str, Any]] = field(default_factory=list)
    done: int = 0
    skipped: set[str] = field(default_factory=set)  # duplicates skipped: their status too
    replay: Replay | None = None

    @property
    def offset_key(self) -> str:
        if self.top == "ledger":
            return f"ledger:{self.agent}"
        return meta_key(self.agent) if self.top == "transcripts" else history_key(self.agent)


@dataclass
class Plan:
    """What a merge brought, decoded, to apply."""

    before: str
    after: str
    changes: list[Change]
    applied: Applied = field(default_factory=Applied)

    @property
    def left(self) -> int:
        return sum(len(c.records) - c.done for c in self.changes)


def plan(repo: SyncRepo, before: str, after: str) -> Plan:
    """The records the files changed between two commits hold that they did not (read from
    git, not the worktree: local writes may have appended since). Any thread."""
    changes: list[Change] = []
    files = 0
    for name in repo.changed(before, after):
        files += 1
        top, _, file = name.partition("/")
        if "/" in file:
            continue
        old = repo.read_at(before, name)
        new = repo.read_at(after, name)
        if top == "ledger" and file.endswith(".jsonl"):
            agent = file.removesuffix(".jsonl")
            if not AGENT_NAME.match(agent):
                continue
            # only the lines the file did not hold are read (a merge writes every line in its
            # canonical bytes, as the ledger does), and only past the start both share
            start = common_lines(old, new)
            held = set(old[start:].splitlines(keepends=True))
            fresh = b"".join(line for line in new[start:].splitlines(keepends=True)
                             if line not in held)
            records = [_record(line.data) for line in ledger_lines(fresh)[0]]
            changes.append(Change(top, agent, repo.root / name, len(new), records))
        elif top in ("transcripts", "history") and file.endswith(".jsonl.gz"):
            agent = file.removesuffix(".jsonl.gz")
            if not AGENT_NAME.match(agent):
                continue
            known = {line.data for line in archive_lines(old)}
            turns = [_record(line.data) for line in archive_lines(new) if line.data not in known]
            replay = None
            if top == "history":
                replay = Replay()
                replay.note(turns)
            changes.append(Change(top, agent, repo.root / name, len(new), turns,
                                  replay=replay))
    found = Plan(before, after, changes)
    found.applied.files = files
    found.applied.pulled = sum(len(c.records) for c in changes if c.top == "ledger")
    return found


def advanced(store: Store, found: Plan) -> None:
    """The worktree is at the merge now (database thread, at once after it moved): the index's
    offsets into the merged files are their ends, and the mark says so. What the merge brought
    is not applied yet; the mark makes sure it will be."""
    with store.transaction():
        for change in found.changes:
            store.set_meta(change.offset_key, str(change.size))
        store.set_meta(PENDING, f"{found.before} {found.after}")


def apply_some(store: Store, found: Plan, budget_s: float = SLICE_S) -> bool:
    """Apply the next records for up to ``budget_s`` (database thread, one transaction);
    True when none are left."""
    began = time.perf_counter()
    deadline = began + budget_s
    with store.transaction():
        for change in found.changes:
            while change.done < len(change.records):
                record = change.records[change.done]
                if change.top == "ledger":
                    found.applied.records += apply_records(store, change.agent, [record],
                                                           change.skipped,
                                                           found.applied.decided)
                    found.applied.agents.add(change.agent)
                elif change.replay is not None:
                    found.applied.versions += change.replay.apply(store, change.agent, record)
                else:
                    found.applied.restored += restore_records(store, change.agent, change.path,
                                                              [record])
                change.done += 1
                if time.perf_counter() >= deadline:
                    break
            if time.perf_counter() >= deadline:
                break
    took = time.perf_counter() - began
    found.applied.held_s += took
    found.applied.longest_s = max(found.applied.longest_s, took)
    found.applied.slices += 1
    return found.left == 0


def finish(store: Store, state_dir: Path, found: Plan) -> Applied:
    """The purges the merge brought, then the mark ended (database thread)."""
    began = time.perf_counter()
    applied = found.applied
    purges: dict[str, set[str]] = {}
    for change in found.changes:
        if change.top == "ledger":
            for record in change.records:
                if record.get("op") == "purge":
                    purges.setdefault(change.agent, set()).update(
                        str(i) for i in record.get("ids") or ())
    for agent, ids in sorted(purges.items()):
        job = Purge(store, Ledger(state_dir / "ledger"), AgentArchive(state_dir / "transcripts"),
                    agent, None, None, history=AgentArchive(state_dir / "history"),
                    run_log=RunLog.in_state(state_dir), ids=frozenset(ids))
        report = job.run(dry_run=False, actor="memoryd sync")
        applied.purged += len(report.entries)
        applied.purged_rows += [e.rowid for e in report.entries if e.rowid is not None]
        applied.purged_words += job.words  # (the purge records the files it rewrote)
    applied.decided = _as_they_end(store, applied.decided)
    with store.transaction():
        store.set_meta(PENDING, "")
    took = time.perf_counter() - began
    applied.held_s += took
    applied.longest_s = max(applied.longest_s, took)
    if applied.records or applied.restored or applied.versions or applied.purged:
        log.info("Sync: applied %d ledger records, restored %d transcript turns and %d "
                 "memory-file versions, purged %d entries.", applied.records, applied.restored,
                 applied.versions, applied.purged)
    return applied


def _as_they_end(store: Store, decided: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each entry both machines changed, once, with what holds once all the merge brought is
    applied (a later record of the same sync, an undo, may have changed it again); none whose
    end is the decision it was said to hold over."""
    ends: dict[str, dict[str, Any]] = {}
    for item in decided:
        entry = store.entry_by_uid(item["id"])
        if entry is None:
            continue
        holds = {"status": entry.status, "superseded_by": entry.superseded_by}
        first = ends.setdefault(item["id"], {**item, "holds": holds})
        if holds == first["over"]:
            first["over"] = item["over"]
    return [item for item in ends.values() if item["holds"] != item["over"]]


def apply_merge(store: Store, repo: SyncRepo, before: str, after: str, *,
                offsets: bool = True) -> Applied:
    """All of :func:`plan`, :func:`apply_some` and :func:`finish` at once (database thread:
    at start, and for an older git). ``offsets``: the index's offsets into the files are
    still the commit before's (the worktree moved, nothing was written since)."""
    began = time.perf_counter()
    found = plan(repo, before, after)
    if offsets:
        advanced(store, found)
    while not apply_some(store, found, budget_s=3600.0):
        pass
    applied = finish(store, repo.root, found)
    applied.apply_s = time.perf_counter() - began
    return applied


def _record(data: bytes) -> dict[str, Any]:
    record = json.loads(data)
    record.pop("crc", None)
    return dict(record)


def mark_pending(store: Store, before: str) -> None:
    """Say, before a merge touches the files, which commit the index holds."""
    with store.transaction():
        store.set_meta(PENDING, before)


def pending(store: Store) -> tuple[str, str | None] | None:
    """The mark: (the commit before, the merge once the worktree is at it), or None."""
    value = store.meta(PENDING)
    if not value:
        return None
    before, _, after = value.partition(" ")
    return before, after or None


def finish_pending(store: Store, state_dir: Path, at_start: bool = True) -> Applied | None:
    """A sync that did not finish: one stopped after its merge reached the worktree is
    applied; one stopped before is put back (its files as they were at the commit before it,
    nothing of it applied) — only ``at_start``, before anything is written again: later, a
    failed merge was put back when it failed, and only the mark is left to end. None when
    there was none."""
    mark = pending(store)
    if mark is None:
        return None
    before, after = mark
    repo = SyncRepo(state_dir)
    if after is None:
        if at_start and repo.git_dir.exists():
            repo.put_back(before)
        after = repo.head() if repo.git_dir.exists() else None
        if after is None or after == before:
            if at_start:
                log.warning("A sync was stopped during its merge; its files are as they were "
                            "before it (the next sync merges again).")
            with store.transaction():
                store.set_meta(PENDING, "")
            return Applied()
        offsets = True  # stopped as the worktree moved: nothing was written after it
    else:
        offsets = False  # local writes may have appended since, and moved the offsets on
    log.warning("A sync was stopped after its merge; applying what it brought.")
    return apply_merge(store, repo, before, after, offsets=offsets)

