"""Retention by use: the retain pass archives the lessons and notes nobody used.

An entry is **unused** when it was last used — followed or broken in a session, written, or
brought back by an undo of its archiving — over ``[outcomes] unused_days`` days ago (180 by
default), and its scope had :data:`~memoryd.store.usage.UNUSED_AFTER_SESSIONS` judged sessions
since (:class:`memoryd.store.usage.Disuse` says which). The memory block puts such an entry
last and drops it first (memoryd.sessions.context); this pass sets it aside:

- only lessons and notes memoryd holds (written through the API, imported or extracted): a
  memory file's lines are its file's, and the notebook pass holds notebooks to their caps;
  facts and feedback are never archived by use, nor quarantined entries (a person decides);
- **archived, never deleted**: its status becomes ``archived`` — out of the block, the prompt
  hook, consolidation and promotion; ``memory get`` shows it, ``memory list --status
  archived`` lists it — in a change of the run (``archive unused``, with the reason);
  ``memory undo`` of the run, or of the change, makes it active again, and it is not archived
  again until it has gone unused as long once more;
- its outcomes and usage record stay as they were (memoryd.store.usage keys them by the
  entry's id; nothing here touches them), and so does its history.

Nothing is archived while ``[outcomes] enabled`` is false or ``unused_days`` is 0, nor before
memoryd has recorded injections for ``unused_days`` days: time before that says nothing of use.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memoryd.ingest.line_date import local_date
from memoryd.passes.changes import Change
from memoryd.store.records import StoredEntry
from memoryd.store.usage import ARCHIVE_UNUSED, UNUSED_AFTER_SESSIONS, Disuse, UsageRecord

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext

#: Row ids looked at in one step.
ID_WINDOW = 5_000


def archive(ctx: PassContext) -> Iterator[Any]:
    """Archive the unused entries in the run's scope (previews in a dry run)."""
    outcomes = ctx.config.outcomes
    if not outcomes.enabled or outcomes.unused_days <= 0:
        return
    disuse = Disuse(ctx.store, outcomes.unused_days, time.time(),
                    ctx.config.context.shared_agents)
    if not disuse.on:
        return
    top = disuse.usage.last_row()
    for first in range(1, top + 1, ID_WINDOW):
        yield
        found = disuse.usage.disuse_candidates(first, first + ID_WINDOW - 1, disuse.cutoff,
                                               ctx.agent, ctx.project)
        if not found:
            continue
        used = disuse.last_used([entry.uid for entry in found])
        unused = [entry for entry in found if disuse.unused(entry, used.get(entry.uid))]
        yield
        if not unused:
            continue
        records = disuse.usage.records([entry.uid for entry in unused])
        changes = [Change("entry", entry.uid, ARCHIVE_UNUSED,
                          _why(disuse, entry, used.get(entry.uid), records.get(entry.uid)),
                          {"status": "active"}, {"status": "archived"}) for entry in unused]
        if changes:
            done = ctx.runs.apply_entries(ctx.run, changes)
            ctx.count("unused_preview" if ctx.dry_run else "unused_archived", done)


def _why(disuse: Disuse, entry: StoredEntry, used: float | None,
         record: UsageRecord | None) -> str:
    """The reason, in words: when it was last used, and what its usage record says."""
    last = disuse.last_use(entry, used)
    day = local_date(last)
    how = "last followed or broken" if used is not None and last == used else \
        "not followed nor broken since"
    if record is None or not record.injected:
        shown = "never injected into a session"
    else:
        shown = (f"injected into {record.injected} session{'s' * (record.injected != 1)}: "
                 f"followed {record.followed}, broken {record.broken}, "
                 f"no occasion {record.no_occasion}")
    where = "its project" if entry.project else "its agents"
    return (f"unused for over {disuse.days:g} days ({how} {day}); {shown}; {where} had "
            f"{UNUSED_AFTER_SESSIONS} or more judged sessions since")
