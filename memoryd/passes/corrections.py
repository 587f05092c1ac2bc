"""A correction is stored beside what it corrects (DESIGN.md principle 7), and shown as one.

The write path (memoryd.store.remember) never refuses a text that says another thing than the
entry most like it (memoryd.meaning): "Never use tabs in Makefiles" after "Use tabs in
Makefiles" is stored. When the two contradict each other — a "do" and a "don't", another
number, an antonym, their words in another order — the newer one

- **supersedes** the older at once, in the write's own transaction and ledger, when it is at
  least as confident and a person wrote it (the CLI, the API; not an agent over MCP or a
  hook, not imported history, not a planted instruction), and the older is neither the
  user's feedback nor a line of a memory file (see ``Entries._corrects``);
- else both stay, **disputed**: an open contradiction, as consolidation records it, listed by
  ``memory status`` and ``memory pass show``, both marked in the memory block until a person
  forgets or supersedes one.

Either way the write is recorded here as a run of its own, ``correct``, so that ``memory pass
show`` says what happened and why, and ``memory undo RUN`` (or the change) takes a supersede
back like any pass's. The run is written after the entry, on the database thread, without
waiting for a running pass: a run that could not be recorded (the daemon stopped between)
loses the undo handle only; consolidation finds the contradiction again on its next run.
"""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.passes.changes import Change, run_name
from memoryd.passes.runs import PassRuns
from memoryd.store.records import Remembered, StoredEntry

PASS = "correct"


def contradiction(a: StoredEntry, b: StoredEntry, why: str) -> Change:
    """An open contradiction between two entries (the write path's)."""
    return Change("contradiction", a.key or a.uid, "report", why, None,
                  {"ids": [a.uid, b.uid], "texts": [a.text, b.text],
                   "confidence": [a.confidence, b.confidence]})


def record(runs: PassRuns, writes: Sequence[Remembered]) -> str | None:
    """Record the corrections the write path made or found (each write's ``corrects``;
    memoryd.store.remember) as a ``correct`` run; returns its name (None: there were none).
    Runs on the database thread."""
    found = [(write.entry, correction) for write in writes if write.stored
             for correction in write.corrects]
    if not found:
        return None
    agents = sorted({new.agent for new, _ in found})
    run = runs.begin(PASS, {"agent": agents[0]} if len(agents) == 1 else {}, False)
    known = {frozenset(c["after"]["ids"]) for c in runs.open_contradictions()}
    for new, correction in found:
        old = correction.entry
        if correction.action == "supersede":
            runs.note(run, Change(
                "entry", old.uid, "supersede",
                f"corrected by {new.uid} ({new.writer}): {correction.why}",
                {"status": "active", "superseded_by": None},
                {"status": "superseded", "superseded_by": new.uid}), "applied")
            run.counts["corrected"] = run.counts.get("corrected", 0) + 1
        elif frozenset((old.uid, new.uid)) not in known:
            runs.note(run, contradiction(old, new, correction.why), "open")
            run.counts["contradictions"] = run.counts.get("contradictions", 0) + 1
    runs.finish(run, "done")
    return run_name(run.run)
