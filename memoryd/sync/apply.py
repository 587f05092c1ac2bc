"""What a merge brought, applied to this machine's index incrementally: the index stays per
machine (docs/sync.md, "The index stays per machine").

The files of the commit before the merge are what the index already holds (every local change
was committed first, on the database thread). So the records a merge brought are those of a
changed file that the file did not hold before: a ledger's are applied as the replay at start
applies them (:func:`memoryd.maintenance.replay.apply_records`), an archive's transcript turns are
restored, and a ``purge`` record made on another machine purges its entries here too
(:class:`memoryd.maintenance.purge.Purge` by ids). Their vectors are made here, by the daemon's
backfill, with this machine's model. The ``sync:pending`` mark ends only once all of it is
done: a sync killed before is applied again at the next start (:func:`finish_pending`), after
its files are put back or completed (applying a record twice changes nothing more).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.maintenance.purge import Purge
from memoryd.maintenance.replay import apply_records
from memoryd.names import AGENT_NAME
from memoryd.store.archive import AgentArchive, meta_key, restore_records
from memoryd.store.database import Store
from memoryd.store.file_journal import history_key
from memoryd.store.ledger import Ledger
from memoryd.store.pass_log import PassLog
from memoryd.sync.merge import archive_lines, ledger_lines
from memoryd.sync.repo import SyncRepo

log = logging.getLogger(__name__)

#: Meta key holding the commit a merge started from, until what it brought is applied.
PENDING = "sync:pending"


@dataclass
class Applied:
    """What one sync applied to the index."""

    records: int = 0
    restored: int = 0
    purged: int = 0
    files: int = 0
    agents: set[str] = field(default_factory=set)
    purged_rows: list[int] = field(default_factory=list)
    purged_words: list[str] = field(default_factory=list)
    #: the merge's and the apply's time on the database thread (what a search could wait)
    merge_s: float = 0.0
    apply_s: float = 0.0

    def reply(self) -> dict[str, Any]:
        return {"records": self.records, "restored": self.restored, "purged": self.purged,
                "files": self.files, "merge_s": round(self.merge_s, 3),
                "apply_s": round(self.apply_s, 3)}


def apply_merge(store: Store, repo: SyncRepo, before: str, after: str) -> Applied:
    """Apply what the files changed between two commits hold that they did not (database
    thread; the worktree is at ``after``)."""
    applied = Applied()
    state = repo.root
    ledger = Ledger(state / "ledger")
    archive = AgentArchive(state / "transcripts")
    history = AgentArchive(state / "history")
    purges: dict[str, set[str]] = {}
    with store.transaction():
        for name in repo.changed(before, after):
            path = state / name
            top, _, file = name.partition("/")
            old = repo.read_at(before, name)
            new = path.read_bytes() if path.exists() else b""
            applied.files += 1
            if top == "ledger" and file.endswith(".jsonl") and "/" not in file:
                agent = file.removesuffix(".jsonl")
                if not AGENT_NAME.match(agent):
                    continue
                # only the lines the file did not hold are read (a merge writes every line
                # in its canonical bytes, as the ledger does)
                held = set(old.splitlines(keepends=True))
                fresh = b"".join(line for line in new.splitlines(keepends=True)
                                 if line not in held)
                records = [_record(line.data) for line in ledger_lines(fresh)[0]]
                for record in records:
                    if record.get("op") == "purge":
                        purges.setdefault(agent, set()).update(
                            str(i) for i in record.get("ids") or ())
                applied.records += apply_records(store, agent, records)
                applied.agents.add(agent)
                store.set_meta(f"ledger:{agent}", str(len(new)))
            elif top in ("transcripts", "history") and file.endswith(".jsonl.gz"):
                agent = file.removesuffix(".jsonl.gz")
                if not AGENT_NAME.match(agent) or "/" in file:
                    continue
                if top == "transcripts":
                    held = {line.data for line in archive_lines(old)}
                    added = [_record(line.data) for line in archive_lines(new)
                             if line.data not in held]
                    applied.restored += restore_records(store, agent, path, added)
                    store.set_meta(meta_key(agent), str(len(new)))
                else:
                    store.set_meta(history_key(agent), str(len(new)))
    for agent, ids in sorted(purges.items()):
        job = Purge(store, ledger, archive, agent, None, None, history=history,
                    pass_log=PassLog.in_state(state), ids=frozenset(ids))
        report = job.run(dry_run=False, actor="memoryd sync")
        applied.purged += len(report["entries"])
        applied.purged_rows += [e["rowid"] for e in report["entries"]
                                if e.get("rowid") is not None]
        applied.purged_words += job.words  # (the purge records the files it rewrote)
    with store.transaction():
        store.set_meta(PENDING, "")
    if applied.records or applied.restored or applied.purged:
        log.info("Sync: applied %d ledger records, restored %d transcript turns, purged %d "
                 "entries.", applied.records, applied.restored, applied.purged)
    return applied


def _record(data: bytes) -> dict[str, Any]:
    record = json.loads(data)
    record.pop("crc", None)
    return dict(record)


def mark_pending(store: Store, before: str) -> None:
    """Say, before a merge touches the files, which commit the index holds."""
    with store.transaction():
        store.set_meta(PENDING, before)


def finish_pending(store: Store, state_dir: Path, at_start: bool = True) -> Applied | None:
    """A sync that did not finish: one stopped after its merge commit is applied; one stopped
    during its merge is put back (its files as they were at the commit before it, nothing of
    it applied) — only ``at_start``, before anything is written again: later, a failed merge
    was put back when it failed, and only the mark is left to end. None when there was none."""
    before = store.meta(PENDING)
    if not before:
        return None
    repo = SyncRepo(state_dir)
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
    log.warning("A sync was stopped after its merge; applying what it brought.")
    return apply_merge(store, repo, before, after)
