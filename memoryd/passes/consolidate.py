"""Consolidation (seeds 002, 003): one memory per thing, the disagreements put to a person.

Within one agent's namespace and project, over active entries (transcript turns aside):

- **Near duplicates** — cosine ≥ ``remember.near_duplicate_cosine`` (0.92), or for two lessons
  a word Jaccard ≥ 0.7 (seed 003: "Use conventional commits" / "Always use conventional
  commits") — merge into the best of them: higher confidence, then newer. The others are
  superseded and linked to it (``superseded_by``; history shows the chain). A file-backed entry
  is never superseded (its file is the truth, and only the notebook pass edits a notebook): it
  may survive a merge, and is otherwise left as it is.
- The survivor counts its **occurrences** (its own plus each merged one's), and its
  **confidence rises with independent evidence**: each merged entry from another session (or,
  without sessions, another day) closes part of the gap to certainty,
  ``c ← 1 − (1 − c)(1 − c_other / 2)``, capped at 0.99. Copies from one session are one piece
  of evidence: they count as occurrences only.
- **Facts with the same key** keep the higher-confidence value; the other is superseded.
- **Contradictions** — the same key with different values of equal confidence, or a "do X"
  and a "don't X" lesson about the same thing — are never resolved here: each is recorded as an
  open contradiction (``memory pass show``, ``memory status``), and the memory block marks both
  entries as disputed until a person forgets or supersedes one (the next run then closes it).

Every change goes through the journal: ``--dry-run`` previews it, ``memory undo`` takes it back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.ingest.sources import ARCHIVE_DIR
from memoryd.passes.journal import Change
from memoryd.passes.steps import Offload
from memoryd.text import normalise_text

if TYPE_CHECKING:
    from memoryd.passes.runner import PassContext

JACCARD = 0.7
#: Lessons this similar are checked for Jaccard and for "do X" / "don't X".
LESSON_COSINE = 0.75
MAX_CONFIDENCE = 0.99
#: Losers superseded in one transaction (one step of the pass) by a merge.
ABSORB_AT_ONCE = 8
BLOCK = 512
PAGE = 250
_WORD = re.compile(r"[a-z0-9][a-z0-9_+#/'-]*(?:\.[a-z0-9_+#/-]+)*")
_NEGATION = {"not", "never", "don't", "dont", "avoid", "stop", "no", "without", "shouldn't",
             "mustn't", "can't", "cannot", "won't", "doesn't", "isn't", "nor"}
_FILLER = {"always", "do", "please", "must", "should", "to", "the", "a", "an", "we", "you",
           "use", "using"}
COLUMNS = ("id", "uid", "kind", "key", "text", "hash", "confidence", "created", "via", "source",
           "session", "occurrences", "project")


def words(text: str) -> set[str]:
    return set(_WORD.findall(normalise_text(text).replace("’", "'")))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def negated(tokens: set[str]) -> bool:
    return bool(tokens & _NEGATION) or any(t.endswith("n't") for t in tokens)


def core(tokens: set[str]) -> set[str]:
    """A lesson's words without its negation and filler: what it is about."""
    return {t for t in tokens if t not in _NEGATION and t not in _FILLER and not t.endswith("n't")}


def near_pairs(vectors: list[np.ndarray], threshold: float) -> list[tuple[int, int, float]]:
    """(i, j, cosine) for i < j at or above the threshold (rows are unit vectors). Runs off
    the database thread, in numpy (a Python loop over the pairs here held the GIL against the
    daemon's other threads): a block of rows against all, so memory stays at BLOCK × n."""
    matrix = np.stack(vectors).astype(np.float32)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for start in range(0, len(matrix), BLOCK):
        sims = matrix[start:start + BLOCK] @ matrix.T
        rows, cols = np.nonzero(sims >= threshold)
        upper = cols > rows + start
        rows, cols = rows[upper], cols[upper]
        found.append((rows + start, cols, sims[rows, cols]))
    if not found:
        return []
    firsts, seconds, cosines = (np.concatenate(parts) for parts in zip(*found))
    return list(zip(firsts.tolist(), seconds.tolist(), cosines.astype(float).tolist()))


def _evidence(entry: dict[str, Any]) -> str:
    """What makes two sightings independent: the session, else the day, else the source."""
    if entry.get("session"):
        return f"session:{entry['session']}"
    return f"day:{int(entry['created'] // 86400)}"


def _better(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether ``a`` should survive over ``b``: higher confidence, then newer."""
    return (a["confidence"], a["created"]) > (b["confidence"], b["created"])


def _agents(ctx: PassContext) -> list[str]:
    if ctx.agent:
        return [ctx.agent]
    return [agent for (agent,) in ctx.store.db.execute("SELECT DISTINCT agent FROM entries")]


def _entries(ctx: PassContext, agent: str, into: list[dict[str, Any]]) -> Iterator[None]:
    """The agent's entries (in the pass's project, if it has one), a page at a time (a slice
    each). Read by agent and grouped by project here: the distinct (agent, project) pairs of a
    large store took one query of ~50 ms."""
    project = " AND project IS ?" if ctx.project else ""
    last = 0
    while True:
        rows = ctx.store.db.execute(
            f"SELECT {', '.join(COLUMNS)} FROM entries WHERE agent=?{project} "
            "AND status='active' AND category IS NOT 'session' "
            f"AND coalesce(source, '') NOT LIKE '%/{ARCHIVE_DIR}/%' AND id > ? "
            "ORDER BY id LIMIT ?",
            (agent, *([ctx.project] if ctx.project else []), last, PAGE)).fetchall()
        if not rows:
            return
        into.extend(dict(zip(COLUMNS, row)) for row in rows)
        last = rows[-1][0]
        yield


def run(ctx: PassContext) -> Iterator[Any]:
    yield from _close_settled(ctx)
    known = {frozenset(c["after"]["ids"]) for c in ctx.journal.open_contradictions()}
    threshold = ctx.config.remember.near_duplicate_cosine
    for agent in _agents(ctx):
        found: list[dict[str, Any]] = []
        yield from _entries(ctx, agent, found)
        by_project: dict[str | None, list[dict[str, Any]]] = {}
        for entry in found:
            by_project.setdefault(entry["project"], []).append(entry)
        for entries in by_project.values():
            yield
            superseded: set[str] = set()
            yield from _same_keys(ctx, entries, known, superseded)
            entries = [e for e in entries if e["uid"] not in superseded]
            vectors = yield from ctx.vectors([e["id"] for e in entries])
            entries = [e for e in entries if e["id"] in vectors]
            if len(entries) < 2:
                continue
            group = [vectors[e["id"]] for e in entries]  # stacked off the thread: ~50 ms at 10k
            pairs = yield Offload(near_pairs, (group, min(threshold, LESSON_COSINE)))
            yield from _merge(ctx, entries, pairs, threshold, known)


def _close_settled(ctx: PassContext) -> Iterator[None]:
    """Open contradictions a person has settled (one side forgotten or superseded) close."""
    for change in ctx.journal.open_contradictions():
        yield
        ids = change["after"]["ids"]
        active = [uid for uid in ids if (e := ctx.store.entry_by_uid(uid)) is not None
                  and e["status"] == "active"]
        if len(active) < len(ids) and not ctx.dry_run:
            ctx.journal.set_state(int(change["change"][1:]), "resolved")
            ctx.count("resolved")


def _contradiction(ctx: PassContext, known: set[frozenset[str]], a: dict[str, Any],
                   b: dict[str, Any], why: str) -> None:
    ids = frozenset((a["uid"], b["uid"]))
    if ids in known:
        return
    known.add(ids)
    change = Change("contradiction", a["key"] or a["uid"], "report", why,
                    None, {"ids": [a["uid"], b["uid"]], "texts": [a["text"], b["text"]],
                           "confidence": [a["confidence"], b["confidence"]]})
    ctx.note(change, "preview" if ctx.dry_run else "open")
    ctx.count("contradictions")


def _supersede(loser: dict[str, Any], survivor: dict[str, Any], why: str) -> Change:
    return Change("entry", loser["uid"], "supersede", why,
                  {"status": "active", "superseded_by": None},
                  {"status": "superseded", "superseded_by": survivor["uid"]})


def _same_keys(ctx: PassContext, entries: list[dict[str, Any]], known: set[frozenset[str]],
               superseded: set[str]) -> Iterator[None]:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if entry["key"]:
            by_key.setdefault(entry["key"], []).append(entry)
    for key, found in by_key.items():
        if len(found) < 2:
            continue
        yield
        found.sort(key=lambda e: (e["confidence"], e["created"]), reverse=True)
        best = found[0]
        for other in found[1:]:
            if other["hash"] != best["hash"] and other["confidence"] == best["confidence"]:
                _contradiction(ctx, known, best, other,
                               f"{key}: two values of equal confidence {best['confidence']:.2f}")
            elif other["via"] != "watch":
                superseded.add(other["uid"])
                ctx.apply(_supersede(other, best, f"{key}: {best['uid']} has the higher confidence "
                           f"({best['confidence']:.2f} > {other['confidence']:.2f})"
                           if other["hash"] != best["hash"] else f"{key}: the same value twice"))


def _merge(ctx: PassContext, entries: list[dict[str, Any]], pairs: list[tuple[int, int, float]],
           threshold: float, known: set[frozenset[str]]) -> Iterator[None]:
    """Greedy, best first: an entry not yet merged takes its duplicates that are not yet
    merged either, so chains (a ~ b ~ c, a ≁ c) never merge things that differ."""
    tokens: list[set[str]] = []
    for start in range(0, len(entries), 250):  # thousands of texts at once held the thread
        tokens.extend(words(e["text"]) for e in entries[start:start + 250])
        yield
    neighbours: dict[int, list[tuple[int, float]]] = {}
    opposed: list[tuple[int, int]] = []
    for step, (i, j, cosine) in enumerate(pairs):
        if step % 500 == 0:
            yield
        a, b = entries[i], entries[j]
        if a["kind"] != b["kind"]:
            continue
        lessons = a["kind"] == "lesson"
        if lessons and negated(tokens[i]) != negated(tokens[j]):
            if jaccard(core(tokens[i]), core(tokens[j])) >= JACCARD:
                opposed.append((i, j))
            continue
        if cosine >= threshold or (lessons and jaccard(tokens[i], tokens[j]) >= JACCARD):
            neighbours.setdefault(i, []).append((j, cosine))
            neighbours.setdefault(j, []).append((i, cosine))
    order = sorted(neighbours, key=lambda i: (entries[i]["confidence"], entries[i]["created"]),
                   reverse=True)
    merged: set[int] = set()
    survivor_of: dict[int, int] = {}
    for i in order:
        if i in merged:
            continue
        survivor = entries[i]
        losers = [entries[j] for j, _ in neighbours[i] if j not in merged
                  and entries[j]["via"] != "watch" and not _better(entries[j], survivor)]
        if not losers:
            continue
        yield
        merged.add(i)
        gone = {j for j, _ in neighbours[i] if entries[j] in losers}
        merged.update(gone)
        survivor_of.update(dict.fromkeys(gone, i))
        yield from _absorb(ctx, survivor, losers)
    # a "do" and a "don't" are put to a person once, between what is left after merging
    for i, j in opposed:
        a, b = entries[survivor_of.get(i, i)], entries[survivor_of.get(j, j)]
        if a is not b:
            _contradiction(ctx, known, a, b, "a \"do\" and a \"don't\" about the same thing")


def _absorb(ctx: PassContext, survivor: dict[str, Any],
            losers: list[dict[str, Any]]) -> Iterator[None]:
    """One merge: the losers superseded and the survivor's counts raised, in one transaction
    (a step) per ABSORB_AT_ONCE losers. A big group at once held the database thread for
    20-60 ms; between two steps the survivor has absorbed the losers so far, and counts them."""
    confidence = survivor["confidence"]
    seen = {_evidence(survivor)}
    occurrences = survivor["occurrences"] or 1
    counts = {"occurrences": survivor["occurrences"], "confidence": survivor["confidence"]}
    for start in range(0, len(losers), ABSORB_AT_ONCE):
        if start:
            yield
        changes = []
        for loser in losers[start:start + ABSORB_AT_ONCE]:
            occurrences += loser["occurrences"] or 1
            if _evidence(loser) not in seen:
                seen.add(_evidence(loser))
                confidence = 1 - (1 - confidence) * (1 - loser["confidence"] / 2)
            changes.append(_supersede(loser, survivor, f"near duplicate of {survivor['uid']}: "
                                      f"{survivor['text'][:80]!r}"))
        absorbed = min(start + ABSORB_AT_ONCE, len(losers))
        after = {"occurrences": occurrences, "confidence":
                 round(min(MAX_CONFIDENCE, max(confidence, survivor["confidence"])), 4)}
        changes.append(Change(
            "entry", survivor["uid"], "merge",
            f"absorbed {absorbed if absorbed == len(losers) else f'{absorbed} of {len(losers)}'}"
            f" duplicates: {occurrences} occurrences, {len(seen)} independent", counts, after))
        ctx.apply_entries(changes)
        counts = after
    ctx.count("merged", len(losers))
