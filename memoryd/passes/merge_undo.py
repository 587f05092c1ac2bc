"""Undoing a consolidation run's merges, as what was merged became since: a merge whose
survivor a person replaced since (`memory supersede`, a correction, a forget) is left as it
is (:func:`replaced_since`: the user's later word stands), and a survivor merged on since into
another entry has the counts it passed on taken back there too (:func:`recounted`). The pass
runner's undo (memoryd.passes.runner) asks these; the merges themselves are
memoryd.passes.consolidate's.
"""

from __future__ import annotations

from typing import Any

from memoryd.passes.changes import Change
from memoryd.passes.consolidate import MAX_CHAIN, MAX_CONFIDENCE, evidence_key
from memoryd.store.database import Store

#: The passes whose supersedes an undo follows to where a merged entry lives on (their runs
#: merge; a person's ``memory supersede`` or correction replaces).
MERGING_PASSES = ("consolidate",)


def replaced_since(store: Store, change: dict[str, Any]) -> tuple[str, str] | None:
    """Whether an undo leaves ``change`` — a loser's ``supersede`` by its survivor, or the
    survivor's ``merge`` — as it is: (the entry, what became of it) when the survivor (or the
    entry it was merged into since, along the chain) was replaced since by a person's act —
    superseded by hand (`memory supersede`, a correction) or forgotten —, else None. Taking
    the merge back would bring the copies back active beside what replaced them, overruling
    that act; the user's later word stands."""
    if change["kind"] != "entry" or change["action"] not in ("supersede", "merge"):
        return None
    uid = (change["after"] or {}).get("superseded_by") if change["action"] == "supersede" \
        else change["target"]
    entry = store.entry_by_uid(uid) if uid else None
    for _ in range(MAX_CHAIN):
        if entry is None:
            return None
        if entry.status == "forgotten":
            return entry.uid, "was forgotten since"
        if entry.status != "superseded" or not entry.superseded_by:
            return None
        if store.runs.superseding_pass(entry.uid, entry.superseded_by) not in MERGING_PASSES:
            return entry.uid, f"was replaced since by {entry.superseded_by}"
        entry = store.entry_by_uid(entry.superseded_by)  # merged on: where it lives now
    return None


def recounted(store: Store, merge: dict[str, Any]) -> list[Change]:
    """Undoing ``merge`` (a survivor's merge change) took back from its survivor what its
    losers brought; when the survivor was merged since into another entry (and that one, it
    may be, into another), the counts it passed on went with it: each of them is recounted,
    as changes for the undo to apply. Occurrences go down by as many as the undone merge
    added; the confidence, where the merge that absorbed the entry raised it by the entry's
    evidence, is raised instead from the entry's confidence as it is now
    (``1 − (1 − c)(1 − c_new / 2) / (1 − c_old / 2)``: the rule of the merge,
    memoryd.passes.consolidate, taken back and made again), never below what it was before
    that merge."""
    gone = int(merge["after"].get("occurrences") or 1) - int(merge["before"].get("occurrences")
                                                             or 1)
    old = float(merge["after"].get("confidence", 0.0))
    new = float(merge["before"].get("confidence", old))
    entry = store.entry_by_uid(merge["target"])
    changes: list[Change] = []
    for _ in range(MAX_CHAIN):
        if entry is None or entry.status != "superseded" or not entry.superseded_by:
            break
        absorbed = store.runs.merge_into(entry.uid, entry.superseded_by)
        survivor = store.entry_by_uid(entry.superseded_by)
        if absorbed is None or survivor is None:  # superseded by a key's value, or by hand
            break
        confidence = survivor.confidence
        raised = float(absorbed.after.get("confidence", 0.0)) > \
            float(absorbed.before.get("confidence", 1.0))
        if raised and new != old and evidence_key(entry) != evidence_key(survivor):
            confidence = 1 - (1 - confidence) * (1 - new / 2) / (1 - old / 2)
            confidence = round(min(MAX_CONFIDENCE, max(
                confidence, float(absorbed.before.get("confidence", 0.0)))), 4)
        occurrences = max(1, (survivor.occurrences or 1) - gone)
        if (occurrences, confidence) == (survivor.occurrences, survivor.confidence):
            break
        changes.append(Change(
            "entry", survivor.uid, "recount",
            f"{merge['change']} undone: {merge['target']} was merged into {survivor.uid} "
            f"since, with what the undone merge brought ({gone} occurrences)",
            {"occurrences": survivor.occurrences, "confidence": survivor.confidence},
            {"occurrences": occurrences, "confidence": confidence}))
        old, new, entry = survivor.confidence, confidence, survivor
    return changes
