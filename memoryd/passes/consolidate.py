"""Consolidation (seeds 002, 003): one memory per thing, the disagreements put to a person.

Within one agent's namespace and project, over active entries (transcript turns aside):

- **Near duplicates** — two entries that say the same thing (``memoryd.meaning``: no word of
  one stands where the other has another — a negation, a number, a name, an environment, a
  quantity, an antonym — none says more, and their shared words stand in the same roles),
  alike at cosine ≥ ``remember.near_duplicate_cosine`` (0.92) or, two lessons, by a Jaccard ≥
  0.7 of their terms (seed 003: "Use conventional commits" / "Always use conventional
  commits"), the rule the write path and session-end extraction use too — in one category,
  as ``remember`` decides duplicates (a category can be what an entry means: seed 001's
  ``rejected-designs``, whose check must still find a design after a copy was filed
  elsewhere), merge into the best of them: higher confidence, then newer. The others are
  superseded and linked to it (``superseded_by``; history shows the chain). A file-backed
  entry is never superseded (its file is the truth, and only the notebook pass edits a
  notebook): it may survive a merge, and is otherwise left as it is.
- The survivor takes the merged entries' **tags** (a search by a tag still finds what a
  tagged copy said; the merge's change holds the tags before and after, for its undo), counts
  its **occurrences** (its own plus each merged one's), and its
  **confidence rises with independent evidence**: each merged entry from another session (or,
  without sessions, another day) closes part of the gap to certainty,
  ``c ← 1 − (1 − c)(1 − c_other / 2)``, capped at 0.99. Copies from one session are one piece
  of evidence: they count as occurrences only.
- **Facts with the same key** keep the higher-confidence value; the other is superseded.
- **The keyword index** is consolidated too: a whole run merges the full-text index's segments
  (one more with every write, which automatic merging keeps in check but never down to one)
  into one, ``MERGE_PAGES`` pages a step: every query reads every segment.
- **Contradictions** — the same key with different values of equal confidence, or two
  entries alike enough to be compared that say one thing two incompatible ways (a "do X" and a
  "don't X"; two otherwise identical statements with another number, an antonym, or their
  words in another order: ``memoryd.meaning``), two lessons whatever their categories — are
  never resolved here: each is recorded as an open contradiction (``memory pass show``,
  ``memory status``), and the memory block marks both entries as disputed until a person
  forgets or supersedes one (the next run then closes it; one the rule no longer finds, opened
  before it was mended, closes too).

Every change is a change of the run: ``--dry-run`` previews it, ``memory undo`` takes it back.
A merge undone after its survivor was merged on into another entry (A into B, then B into C)
takes back from C, and from the entries C went on into, what A brought: its occurrences, and
its share of the confidence a merge raised (:func:`recounted`). An undone merge stays
undone: two entries whose merge (or key supersede) a person took back are **kept apart** by
every later run (the runs' undone changes say which); a third duplicate of them still merges.

**What a run looks at.** A whole run (no ``--agent``/``--project``, not a preview) records
where it left off; the next one compares only the entries added or changed since (a new entry,
an edited one, one an undo brought back) with the rest of their group, and checks the keys they
share. The first run, ``--full``, and a run after the threshold, the model or these rules
changed compare everything. The group's vectors come from the vector index (int8, ~400 bytes an
entry), and only the entries of the pairs found are read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.ingest.line_date import local_day
from memoryd.meaning import LESSON_COSINE, Reading, difference, reading, same_thing
from memoryd.passes.api import NOT_EMBEDDED, Offload
from memoryd.passes.changes import Change
from memoryd.scheduling import give_way
from memoryd.sources import ARCHIVE_DIR
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry
from memoryd.store.vectors import VectorFilter, follow_meta

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext, Steps

MAX_CONFIDENCE = 0.99
#: How far a chain of superseded_by is followed to see whether two entries were merged.
MAX_CHAIN = 8
#: Losers superseded in one transaction (one step of the pass) by a merge.
ABSORB_AT_ONCE = 8
#: Rows compared off the database thread: one hand-off to the worker per GROUP_BLOCK rows of
#: a group, compared BLOCK changed rows against BLOCK_COLUMNS of them at a time (1 MB of
#: cosines, ~3 ms of one core); the worker gives way to the searches in flight between two
#: such blocks. (Blocks of 1,024 × 4,096 took 55-85 ms each, and a search that came meanwhile
#: shared the two cores with one for that long; the smaller blocks cost no more a pair.)
BLOCK = 256
BLOCK_COLUMNS = 1024
GROUP_BLOCK = 4096
#: Entries read at a time (a slice each): their columns; ids looked at for changes; vectors;
#: texts split into words (20,000 of each held the database thread for 20-40 ms a step on the
#: bench's store; 5,000 ids and 1,000 vectors still 26-31 ms).
PAGE = 250
KEYS_AT_ONCE = 25  # each key's entries: a query each
#: Leaf pages of the keyword index merged a step (16 took ~3 ms on the bench store measured
#: alone, but up to 28 ms of CPU in the daemon while searches ran; 32 took up to 24 ms alone).
MERGE_PAGES = 8
ID_WINDOW = 1_000
READ_ROWS = 250
TOKENISED_AT_ONCE = 50
#: Where the last whole run left off (meta): the next run looks at what was added or changed
#: since. Bump CHECK_VERSION when the rules change, so that the next run looks at everything.
CHECKED = "consolidate.checked"
CHECK_VERSION = 3  # 2: lessons compared by their content words; 3: memoryd.meaning
ELIGIBLE = EntryQuery().active().not_transcripts().not_under(ARCHIVE_DIR)


def near_pairs(values: np.ndarray, scales: np.ndarray, is_changed: np.ndarray,
               kinds: np.ndarray, lesson: int, threshold: float, start: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows i < j and their cosine, where j is in the GROUP_BLOCK rows from ``start`` and i or
    j is a changed row (``is_changed``): one kind, at or above the threshold (two lessons:
    from LESSON_COSINE). Rows are int8 values × scale (unit vectors); ``kinds`` holds each
    row's kind code, ``lesson`` the lessons'. Runs off the database thread, in numpy, a block
    of the changed rows at a time: memory stays at a block of each, and a stopping daemon
    waits for one group block at most."""
    low = min(threshold, LESSON_COSINE)
    changed = np.flatnonzero(is_changed)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    stop = min(start + GROUP_BLOCK, len(values))
    for edge in range(start, stop, BLOCK_COLUMNS):
        give_way()
        end = min(edge + BLOCK_COLUMNS, stop)
        right = values[edge:end].astype(np.float32) * scales[edge:end, None]
        for first in range(0, len(changed), BLOCK):
            give_way()
            rows = changed[first:first + BLOCK]
            sims = (values[rows].astype(np.float32) * scales[rows, None]) @ right.T
            left, column = np.nonzero(sims >= low)
            i, j, cosine = rows[left], column + edge, sims[left, column]
            keep = (i != j) & ~(is_changed[j] & (j < i)) & (kinds[i] == kinds[j])  # changed: once
            keep &= (cosine >= threshold) | (kinds[i] == lesson)
            found.append((np.minimum(i, j)[keep], np.maximum(i, j)[keep], cosine[keep]))
    if not found:
        return (np.zeros(0, np.int64),) * 2 + (np.zeros(0, np.float32),)
    return tuple(np.concatenate(parts) for parts in zip(*found))  # type: ignore[return-value]


def _members(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Which of ``values`` are in ``pool`` (ascending, no repeats): a binary search each, ~8
    times faster than ``np.isin`` on a group of thousands (which held the database thread for
    2-20 ms a group in a consolidation of the bench's store)."""
    if not len(pool):
        return np.zeros(len(values), dtype=bool)
    return pool[np.searchsorted(pool, values).clip(max=len(pool) - 1)] == values


def evidence_key(entry: StoredEntry) -> str:
    """What makes two sightings independent: the session, else the (local) day."""
    if entry.session:
        return f"session:{entry.session}"
    return f"day:{local_day(entry.created)}"


def _better(a: StoredEntry, b: StoredEntry) -> bool:
    """Whether ``a`` should survive over ``b``: higher confidence, then newer."""
    return (a.confidence, a.created) > (b.confidence, b.created)


def best_first(entries: Sequence[StoredEntry]) -> list[int]:
    """The positions of ``entries`` in the order they survive (:func:`_better`), ties in their
    own order: a stable sort by numpy (sorting thousands of dicts by a key took one step 9-24
    ms of CPU in the bench)."""
    confidence = np.fromiter((e.confidence for e in entries), np.float64, len(entries))
    created = np.fromiter((e.created for e in entries), np.float64, len(entries))
    return np.lexsort((-created, -confidence)).tolist()


def run(ctx: PassContext) -> Steps[None]:
    yield from _close_settled(ctx)
    known = {frozenset(c["after"]["ids"]) for c in ctx.runs.open_contradictions()}
    yield
    apart: dict[str, set[str]] = {}  # uid → the entries a person kept it apart from
    merged: dict[str, set[str]] = {}  # an undone merge's survivor → the entries put back
    for a, b in ctx.runs.undone_supersedes():
        merged.setdefault(b, set()).add(a)
    for survivor, back in merged.items():  # a group taken back is apart, each from each
        group = {survivor, *back}
        for uid in group:
            apart.setdefault(uid, set()).update(group - {uid})
    yield
    threshold = ctx.config.remember.near_duplicate_cosine
    record: dict[str, Any] = {"version": CHECK_VERSION, "threshold": threshold,
                              "model": ctx.store.model.model_id if ctx.store.model else None}
    since = _checked(ctx, record)
    record["id"] = ctx.store.last_rowid()
    record["time"] = time.time()
    groups = yield from _changed(ctx, since, record["id"])
    waiting: list[int] = []  # changed, but without a vector yet: the next run looks again
    total, done = sum(len(changed) for changed in groups.values()), 0
    for (agent, project), changed in groups.items():
        ctx.progress("comparing entries", done, total)
        yield
        superseded: set[str] = set()
        keyed = yield from _keyed(ctx, agent, project, changed)
        if keyed:
            yield from _same_keys(ctx, keyed, known, apart, superseded)

        def compared(share: float, before: int = done, size: int = len(changed)) -> None:
            ctx.progress("comparing entries", before + int(share * size), total)

        waiting += yield from _near(ctx, agent, project, np.array(changed, dtype=np.int64),
                                    threshold, known, apart, superseded, compared)
        done += len(changed)
    if waiting:  # said, not left out quietly: the next run compares them
        ctx.count(NOT_EMBEDDED, len(waiting))
    yield from _close_settled(ctx)  # a side merged away: its survivor speaks for it
    if not (ctx.dry_run or ctx.agent or ctx.project):  # the next run starts from here
        if waiting:  # every id above the record's counts as changed
            record["id"] = min(record["id"], min(waiting) - 1)
        ctx.store.set_meta(CHECKED, json.dumps(record))
        yield from _merge_keyword_index(ctx)


def _merge_keyword_index(ctx: PassContext) -> Iterator[None]:
    """The keyword index consolidated too: its segments merged into one, MERGE_PAGES a step
    (searches read every segment; see Store.merge_keyword_index)."""
    steps = 0
    yield
    while ctx.store.merge_keyword_index(MERGE_PAGES):
        steps += 1
        yield
    if steps:
        ctx.count("index_pages_merged", steps * MERGE_PAGES)


def _checked(ctx: PassContext, record: dict[str, Any]) -> tuple[int, float] | None:
    """Where the last whole run left off: (the last entry id it saw, when it began); None
    (look at everything) without one, when asked to (``full``), or when the threshold, the
    model or these rules changed since."""
    raw = None if ctx.extra.get("full") else ctx.store.meta(CHECKED)
    if raw is None:
        return None
    last = json.loads(raw)
    if any(last.get(name) != value for name, value in record.items()):
        return None
    return int(last["id"]), float(last["time"])


def _changed(ctx: PassContext, since: tuple[int, float] | None,
             top: int) -> Generator[None, None, dict[tuple[str, str | None], list[int]]]:
    """The eligible entries added or changed since the last whole run (all of them without
    one), by agent and project: a window of ids at a time, a slice each."""
    eligible = ELIGIBLE if since is None else ELIGIBLE.added_or_updated_since(*since)
    eligible = eligible.also(ctx.scope())
    groups: dict[tuple[str, str | None], list[int]] = {}
    for start in range(0, top, ID_WINDOW):
        for row in ctx.store.entry_fields(
                EntryQuery().ids_within(start, start + ID_WINDOW).also(eligible),
                ("id", "agent", "project")):
            groups.setdefault((row["agent"], row["project"]), []).append(row["id"])
        yield
    return groups


def _keyed(ctx: PassContext, agent: str, project: str | None,
           changed: list[int]) -> Generator[None, None, list[StoredEntry]]:
    """The group's entries whose key another of its entries shares, where one of them is
    among the changed ones: their keys PAGE changed entries at a time (a slice each), then each
    key's entries by the (agent, key) index. (One GROUP BY over the agent's keys took seconds
    and hundreds of MB at a million entries.)"""
    seen: set[str] = set()
    found: list[StoredEntry] = []
    for start in range(0, len(changed), PAGE):
        yield
        page = changed[start:start + PAGE]
        keys = [key for key in ctx.store.entry_values(EntryQuery().ids(page).with_key(), "key",
                                                      distinct=True) if key not in seen]
        seen.update(keys)
        for number, key in enumerate(keys):
            if number and not number % KEYS_AT_ONCE:
                yield
            rows = ctx.store.entries(
                EntryQuery().agent(agent).key(key).project(project).also(ELIGIBLE), "id")
            if len(rows) > 1:
                found += rows
    return found


def _near(ctx: PassContext, agent: str, project: str | None, changed: np.ndarray,
          threshold: float, known: set[frozenset[str]], apart: dict[str, set[str]],
          superseded: set[str], compared: Callable[[float], None] | None = None,
          ) -> Generator[Any, Any, list[int]]:
    """Merge the changed entries' near duplicates within their group: the group's vectors
    from the vector index (int8, READ_ROWS a slice), compared off the database thread; only
    the entries of the pairs found are read. (All of an agent's entries and their float
    vectors at once took 1.8 GB at a million entries.) Returns the changed entries the index
    does not hold yet (their vectors are being computed). ``compared`` is told the share of
    the group compared so far (a big group is most of a run: `memory pass run` shows it)."""
    index = ctx.index
    if index is None:  # no model: nothing has a vector
        return []
    yield
    follow_meta(ctx.store, index)
    yield
    group = index.rowids(VectorFilter(agents=[agent], projects=[project]), ("session",))
    changed = np.sort(changed)
    waiting = changed[~_members(changed, group)].tolist()
    is_changed = _members(group, changed)
    if len(group) < 2 or not is_changed.any():
        return waiting
    values = np.empty((len(group), index.dim), dtype=np.int8)
    scales = np.empty(len(group), dtype=np.float32)
    for start in range(0, len(group), READ_ROWS):
        yield
        values[start:start + READ_ROWS], scales[start:start + READ_ROWS] = \
            index.whole_vectors(group[start:start + READ_ROWS])
    kinds, codes = index.codes("kind", group)
    blocks = []
    for start in range(0, len(group), GROUP_BLOCK):
        blocks.append((yield Offload(near_pairs, (values, scales, is_changed, kinds,
                                                  codes.get("lesson", -1), threshold, start))))
        if compared is not None:
            compared(min(start + GROUP_BLOCK, len(group)) / len(group))
    del values
    firsts, seconds, cosines = (np.concatenate(parts) for parts in zip(*blocks))
    yield  # hundreds of thousands of pairs of lessons alike from 0.75: a step each
    # the members in a pair, marked (np.unique sorted every pair's two ends: 14-37 ms a step)
    involved_mask = np.zeros(len(group), dtype=bool)
    involved_mask[firsts] = True
    involved_mask[seconds] = True
    involved = group[involved_mask].tolist()
    entries: list[StoredEntry] = []
    for start in range(0, len(involved), PAGE):
        yield
        page = involved[start:start + PAGE]
        entries += [entry for entry in ctx.store.entries(
            EntryQuery().ids(page).also(ELIGIBLE), "id")
            if entry.uid not in superseded]
    # a pair as two numbers into ``entries`` (-1: not eligible, or superseded by its key)
    number = np.full(len(group), -1, dtype=np.int64)
    number[np.searchsorted(group, [entry.rowid for entry in entries])] = np.arange(len(entries))
    firsts, seconds = number[firsts], number[seconds]
    kept = (firsts >= 0) & (seconds >= 0)
    firsts, seconds, cosines = firsts[kept], seconds[kept], cosines[kept]
    yield
    order = np.lexsort((seconds, firsts))
    if len(order):
        yield from _merge(ctx, entries, (firsts[order], seconds[order], cosines[order]),
                          threshold, known, apart)
    return waiting


def _close_settled(ctx: PassContext) -> Iterator[None]:
    """Open contradictions a person has settled (one side forgotten or superseded) close; so
    do those one side of which this run merged into another (the write path records a
    correction against each copy of what it contradicts: memoryd.passes.corrections), whose
    survivor carries the contradiction on (it was compared with the other side too), and
    those the rule no longer calls one (:func:`_withdrawn`)."""
    for change in ctx.runs.open_contradictions():
        yield
        ids = change["after"]["ids"]
        active = [uid for uid in ids if (e := ctx.store.entry_by_uid(uid)) is not None
                  and e.status == "active"]
        if (len(active) < len(ids) or _withdrawn(change)) and not ctx.dry_run:
            ctx.runs.set_state(int(change["change"][1:]), "resolved")
            ctx.count("resolved")


def _withdrawn(change: dict[str, Any]) -> bool:
    """Whether an open contradiction of two texts (not of a key's values) is one the rule of
    ``memoryd.meaning`` no longer finds: its texts still differ as it said, but the rule was
    mended since (numbers that say which of two things, trading places, were once one: a
    tester's 300 Session Log notes were all disputed)."""
    texts = (change.get("after") or {}).get("texts") or []
    if len(texts) != 2:
        return False
    ways = [difference(texts[0], texts[1]), difference(texts[1], texts[0])]
    return all(way is not None and not way.contradiction for way in ways) and \
        change.get("why") in {way.why() for way in ways if way is not None}


def _contradiction(ctx: PassContext, known: set[frozenset[str]], a: StoredEntry,
                   b: StoredEntry, why: str) -> None:
    ids = frozenset((a.uid, b.uid))
    if ids in known:
        return
    known.add(ids)
    change = Change("contradiction", a.key or a.uid, "report", why,
                    None, {"ids": [a.uid, b.uid], "texts": [a.text, b.text],
                           "confidence": [a.confidence, b.confidence]})
    ctx.note(change, "preview" if ctx.dry_run else "open")
    ctx.count("contradictions")


def _supersede(loser: StoredEntry, survivor: StoredEntry, why: str) -> Change:
    return Change("entry", loser.uid, "supersede", why,
                  {"status": "active", "superseded_by": None},
                  {"status": "superseded", "superseded_by": survivor.uid})


def _same_keys(ctx: PassContext, entries: list[StoredEntry], known: set[frozenset[str]],
               apart: dict[str, set[str]], superseded: set[str]) -> Iterator[None]:
    by_key: dict[str, list[StoredEntry]] = {}
    for entry in entries:
        if entry.key:
            by_key.setdefault(entry.key, []).append(entry)
    for key, found in by_key.items():
        if len(found) < 2:
            continue
        yield
        found = [found[number] for number in best_first(found)]
        best = found[0]
        for other in found[1:]:
            if other.hash != best.hash and other.confidence == best.confidence:
                _contradiction(ctx, known, best, other,
                               f"{key}: two values of equal confidence {best.confidence:.2f}")
            elif other.via != "watch" and not _kept_apart(ctx, apart, other.uid, best.uid):
                superseded.add(other.uid)
                ctx.apply(_supersede(other, best, f"{key}: {best.uid} has the higher confidence "
                           f"({best.confidence:.2f} > {other.confidence:.2f})"
                           if other.hash != best.hash else f"{key}: the same value twice"))


def _merge(ctx: PassContext, entries: list[StoredEntry],
           pairs: tuple[np.ndarray, np.ndarray, np.ndarray], threshold: float,
           known: set[frozenset[str]], apart: dict[str, set[str]]) -> Iterator[None]:
    """Greedy, best first: an entry not yet merged takes its duplicates that are not yet
    merged either, so chains (a ~ b ~ c, a ≁ c) never merge things that differ. ``pairs``:
    the two entries' numbers in ``entries`` and their cosine, as arrays. A survivor takes none
    that a person kept apart from it or from another it takes (``apart``)."""
    readings: list[Reading] = []
    for start in range(0, len(entries), TOKENISED_AT_ONCE):
        readings.extend(reading(e.text) for e in entries[start:start + TOKENISED_AT_ONCE])
        yield
    neighbours, opposed = yield from _neighbours(entries, readings, pairs, threshold)
    yield
    survivor_of = yield from _take_duplicates(ctx, entries, neighbours, apart)
    # a contradiction is put to a person once, between what is left after merging
    for i, j, why in opposed:
        a, b = entries[survivor_of.get(i, i)], entries[survivor_of.get(j, j)]
        if a is not b:
            _contradiction(ctx, known, a, b, why)


def _neighbours(entries: list[StoredEntry], readings: list[Reading],
                pairs: tuple[np.ndarray, np.ndarray, np.ndarray], threshold: float
                ) -> Generator[None, None, tuple[dict[int, list[tuple[int, float]]],
                                                 list[tuple[int, int, str]]]]:
    """Each entry's duplicates (number → (number, cosine)), and the pairs that contradict
    each other (with why), of the candidate ``pairs``."""
    neighbours: dict[int, list[tuple[int, float]]] = {}
    opposed: list[tuple[int, int, str]] = []
    firsts, seconds, cosines = pairs
    for start in range(0, len(firsts), PAGE):
        yield
        for i, j, cosine in zip(firsts[start:start + PAGE].tolist(),
                                seconds[start:start + PAGE].tolist(),
                                cosines[start:start + PAGE].astype(float).tolist()):
            a, b = entries[i], entries[j]
            if a.kind != b.kind:
                continue
            lessons = a.kind == "lesson"
            differs = difference(readings[i], readings[j])
            if differs is not None:  # two things: never merged (memoryd.meaning)
                if differs.contradiction and (lessons or a.category == b.category):
                    opposed.append((i, j, differs.why()))
                continue
            if a.category != b.category:  # see the module's docstring
                continue
            if same_thing(readings[i], readings[j], cosine, threshold, lessons):
                neighbours.setdefault(i, []).append((j, cosine))
                neighbours.setdefault(j, []).append((i, cosine))
    return neighbours, opposed


def _take_duplicates(ctx: PassContext, entries: list[StoredEntry],
                     neighbours: dict[int, list[tuple[int, float]]], apart: dict[str, set[str]]
                     ) -> Generator[None, None, dict[int, int]]:
    """Merge, best first, each survivor's duplicates not merged yet; returns the survivor
    (number) of each entry merged into another."""
    having = list(neighbours)
    order = [having[number] for number in best_first([entries[i] for i in having])]
    merged: set[int] = set()
    survivor_of: dict[int, int] = {}
    for number, i in enumerate(order, 1):
        if number % PAGE == 0:  # most take no one: a step for so many
            yield
        if i in merged:
            continue
        survivor = entries[i]
        gone = [j for j, _ in neighbours[i] if j not in merged
                and entries[j].via != "watch" and not _better(entries[j], survivor)]
        if apart:
            gone = _not_apart(ctx, apart, survivor.uid, entries, gone)
        if not gone:
            continue
        yield
        merged.add(i)
        merged.update(gone)
        survivor_of.update(dict.fromkeys(gone, i))
        yield from _absorb(ctx, survivor, [entries[j] for j in gone])
    return survivor_of


def _not_apart(ctx: PassContext, apart: dict[str, set[str]], survivor: str,
               entries: list[StoredEntry], losers: list[int]) -> list[int]:
    """The losers (numbers into ``entries``) the survivor may take: none kept apart from it,
    from another it takes (the first of two stays) or from one it took before."""
    kept: list[int] = []
    taken: list[str] = []
    for j in losers:
        uid = entries[j].uid
        if uid in apart:
            if apart[uid].intersection(taken) or _kept_apart(ctx, apart, uid, survivor):
                continue
            taken.append(uid)
        kept.append(j)
    return kept


def _kept_apart(ctx: PassContext, apart: dict[str, set[str]], uid: str, survivor: str) -> bool:
    """Whether superseding ``uid`` by ``survivor`` would merge two entries a person kept
    apart: itself and the survivor, or itself and an entry already merged into the survivor
    (along its chain of superseded_by)."""
    partners = apart.get(uid)
    if not partners:
        return False
    if survivor in partners:
        return True
    for partner in partners:
        for _ in range(MAX_CHAIN):
            rows = ctx.store.entry_fields(EntryQuery().uids([partner]),
                                          ("status", "superseded_by"))
            if not rows or rows[0]["status"] != "superseded" or not rows[0]["superseded_by"]:
                break
            if rows[0]["superseded_by"] == survivor:
                return True
            partner = rows[0]["superseded_by"]
    return False


def _absorb(ctx: PassContext, survivor: StoredEntry,
            losers: list[StoredEntry]) -> Iterator[None]:
    """One merge: the losers superseded and the survivor's counts raised (and their tags
    added to its own: a search by a loser's tag finds what it said), in one transaction
    (a step) per ABSORB_AT_ONCE losers. A big group at once held the database thread for
    20-60 ms; between two steps the survivor has absorbed the losers so far, and counts them.
    Each step reads its entries again first: the pass read them many steps before, and a
    person may have forgotten or superseded one since (a loser no longer active is left out;
    a survivor no longer active takes none), or a write counted the survivor again."""
    merged = 0
    seen: set[str] = set()
    occurrences, confidence = 0, 0.0
    counts: dict[str, Any] = {}
    tags: list[str] = []
    for start in range(0, len(losers), ABSORB_AT_ONCE):
        if start:
            yield
        batch = losers[start:start + ABSORB_AT_ONCE]
        now = {e.uid: e for e in ctx.store.entries(
            EntryQuery().uids([survivor.uid, *(loser.uid for loser in batch)]), "id")}
        current = now.get(survivor.uid)
        if current is None or current.status != "active":
            break
        if not start:
            survivor = current
            seen = {evidence_key(survivor)}
            occurrences, confidence = survivor.occurrences or 1, survivor.confidence
            counts = {"occurrences": survivor.occurrences, "confidence": survivor.confidence}
            tags = list(survivor.tags)
        changes = []
        gained = set(tags)
        for read in batch:
            loser = now.get(read.uid)
            if loser is None or loser.status != "active" or loser.superseded_by is not None:
                continue
            occurrences += loser.occurrences or 1
            if evidence_key(loser) not in seen:
                seen.add(evidence_key(loser))
                confidence = 1 - (1 - confidence) * (1 - loser.confidence / 2)
            gained.update(loser.tags)
            changes.append(_supersede(loser, survivor, f"near duplicate of {survivor.uid}: "
                                      f"{survivor.text[:80]!r}"))
        if not changes:
            continue
        absorbed = merged + len(changes)
        last = start + ABSORB_AT_ONCE >= len(losers)
        after: dict[str, Any] = {"occurrences": occurrences, "confidence": round(
            min(MAX_CONFIDENCE, max(confidence, survivor.confidence)), 4)}
        before = counts
        if gained.difference(tags):  # the losers' tags go on with the survivor (its undo
            # takes back just these: the change holds its tags before and after)
            before, after = {**counts, "tags": tags}, {**after, "tags": sorted(gained)}
        changes.append(Change(
            "entry", survivor.uid, "merge",
            f"absorbed {absorbed if last else f'{absorbed} of {len(losers)}'}"
            f" duplicates: {occurrences} occurrences, {len(seen)} independent", before, after))
        if not ctx.apply_entries(changes):
            break  # an entry not as read: a guard (the step that read them runs alone)
        merged = absorbed
        counts = {name: after[name] for name in ("occurrences", "confidence")}
        tags = after.get("tags", tags)
    if merged:
        ctx.count("merged", merged)
