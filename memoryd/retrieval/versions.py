"""Versions of one statement: what was said again later, with a detail changed.

A person who corrects a memory often writes it again instead of retiring the old one: "Staging
runs Postgres 14", weeks later "Staging runs Postgres 16"; "The deploy script lives in
ops/deploy.sh", then "The deploy script lives in ops/release.sh now". Both are kept (a
correction is stored beside what it corrects: DESIGN.md principle 7; memoryd.passes.corrections
supersedes or disputes only a contradiction). Search found both, each the other's closest
rival: the ``margin`` of each was what the other took from it, its rank one lower, and a
question that named neither detail ("which Postgres does staging run") got no match, or the
old one first.

Two **statements** (entries that say something is so: not transcript chunks or compaction
summaries, which record what was said when) of one **scope** (the same project, or both global)
are **versions** of one when they differ in one detail: each has at most ``MAX_CHANGED``
informative words the other lacks, the two together at most ``MAX_CHANGED_BOTH`` (the full-text
index's stems, stop words and the words that only say it is said again, ``RESTATING``, left
out), and they share more words than either changes, two at least. One detail is a word for a
word ("Postgres 14" / "… 16"), a word for two ("twice a day" / "three times a day", "with
fly.io" / "with Heroku") or up to two words added ("lives in ops/release.sh now"), a verb
that says it changed (``CHANGING``: "moved to") standing for a word of the other ("runs");
two words for two others are two details, or another subject: "Ask Alice before changing the billing
service" / "Ask Bob before changing the search service", "The Redis cluster breaks when
daylight saving time changes" / "The passport renewal breaks when …", "… before merging changes
to the payments service" / "… to the email templates" are different memories, each true. Until
2026-12-01 each side could change two words, with no limit on the two together, in any project:
those three pairs were versions, and at a session's start the older of each was marked "said
earlier", put last and dropped over budget — a valid memory overruled by another that does not
correct it. Of the 191 labelled near pairs of bench/near_pairs (each a memory and one said with
a detail changed, or the same said otherwise), 183 are versions by the rule (185 by the one
before; with ``MAX_CHANGED`` = 1 instead, 178; 194 of the 202 with 2026-12-01's pairs); those
left out change two words for two ("Wait 30 seconds" / "Wait 5 minutes") or share too little
("The repository is public" / "… private").
Statements of two projects are never versions: each project's "staging" is its own. Two notes
of a topic are not versions either: "Booked the small meeting room for the reading group,
Thursdays 16:00–17:00" / "Reading group moved to Thursday 16:00 this week, same room" share
seven words, but the first has six the second lacks (a Jaccard of their words, 0.5, had called
them versions, and raised the second's relevance to the first's on questions about a reading
list). Among a search's candidates, versions are grouped (a version of a version is in the
group), and

- none is another's rival, as copies of one text are not: the ``margin`` of each is its lead
  over the best candidate outside its group, and a group takes one keyword and one vector rank;
- those the question's words do not tell apart (each holds the same of them, a verb of
  change the word it stands for: :func:`told_apart`) are equally relevant: each has the best
  probability among them, and **the newest comes first** — the latest word. A question that
  names the detail of one ("is staging still on Postgres 14") tells them apart, and the
  ranking decides;
- each says which of its own versions (not a version's version) is the newest, when that is
  newer than it and says it otherwise (:func:`says_otherwise`: not one that says it again or
  says more; a hit's ``newer``), wherever either ranks: asked about Postgres 14, the old one
  comes first and says a newer version of it exists (it said nothing, as if it were the
  latest word). "The nightly backup job is owned by Marta", then "… by
  Sven", then "… was last touched by Marta": both later ones are versions of the first, but
  the second is no earlier version of the third, which changes two details of it (the three
  being one group, the block had marked it "said earlier").

Which of two versions is the newer (:func:`newer`): the one written later (its ``created``);
of two lines of one file written as of one time (of one date, dated by its day's start, or
indexed in one read: memoryd.ingest.line_date), the upper one, as a notebook is written
(newest first; the notebook pass sorts so). Until 2026-12-01 neither was; and a line dated
``[YYYY-MM-DD]`` was written as of 00:00 UTC that day: west of UTC, on the evening before, so
that a correction written in a notebook today was the older version of what was stored this
morning, marked "said earlier" in the memory block.

Only the best candidates are compared (``NEAR_TOP`` by vector rank and by keyword rank): a
version of a hit near the top is near the top itself, its words and vector being the hit's.
On the evaluation sets the rule changes no figure (bench/RESULTS.md, 2026-11-30): their
statements are distinct facts, and their conversations are transcript chunks.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

from memoryd.meaning import difference

K = TypeVar("K", bound=Hashable)

#: The informative words a version may have that the other lacks.
MAX_CHANGED = 2
#: The informative words each has that the other lacks, the two together: one detail
#: changed ("twice" for "three times"), not two ("Alice" and "billing" for "Bob" and "search").
MAX_CHANGED_BOTH = 3
#: Words that say a statement is said again, not what it is about: "correction: the deploy
#: target is prod" is a version of "The deploy target is staging" (the word "correction" had
#: made it one more word changed, so neither was marked; "actually" and "now" are stop words).
RESTATING = frozenset("correction corrected correcting update updated instead anymore fyi "
                      "nb".split())
#: Verbs that say what a statement says has changed: "Correction: production moved to
#: Postgres 16" is a version of "Production runs Postgres 15", its "moved to" where the
#: other has "runs" (they shared two words, each changed two: no version, and the correction
#: ranked 0.01 below the value it corrects, 0.47). Among a statement's informative words each
#: is marked (:data:`CHANGE` before its stem): one on one side only stands for a word of the
#: other, and it is no detail the other lacks (:func:`says_otherwise`). Not "change": a noun
#: as often ("no change", "merging changes"), whose notes "re-ran eval on sample 6, no change"
#: / "… on sample 1 with the relabelled queries" it made versions.
CHANGING = frozenset(
    "move moved moves moving switch switched switches switching migrate migrated migrates "
    "migrating upgrade upgraded upgrades upgrading downgrade downgraded downgrades downgrading "
    "replace replaced replaces replacing".split())
CHANGE = "\u2192"
#: The best candidates by vector rank and by keyword rank that are compared.
NEAR_TOP = 10


class Written(NamedTuple):
    """When a statement was written, as its versions are ordered by: its ``created``; for a
    memory file's line, its file and first line too."""

    created: float
    source: str | None = None
    line: int | None = None


def newer(first: Written, second: Written) -> bool:
    """Whether ``first`` was written after ``second``: later; or as of the same time, both
    lines of one file, ``first`` above (see the module docstring)."""
    if first.created != second.created:
        return first.created > second.created
    return first.source is not None and first.source == second.source \
        and first.line is not None and second.line is not None and first.line < second.line


def _latest(written: Written) -> tuple[float, float]:
    """An order of statements in which each is after those it is :func:`newer` than."""
    return written.created, -written.line if written.line is not None else -float("inf")


def versions(first: frozenset[str], second: frozenset[str]) -> bool:
    """Whether two statements' informative words make them versions of one (of one scope:
    :func:`version_groups` compares no others)."""
    if abs(len(first) - len(second)) > MAX_CHANGED:
        return False
    shared = len(first & second)
    lacks, adds = len(first) - shared, len(second) - shared
    if lacks and adds and _changing(first - second) != _changing(second - first):
        lacks, adds = lacks - 1, adds - 1  # "moved to" for "runs": one word for one
    return (max(lacks, adds) <= MAX_CHANGED and lacks + adds <= MAX_CHANGED_BOTH
            and shared > max(lacks, adds) and shared >= 2)


def _changing(words: frozenset[str]) -> bool:
    return any(word.startswith(CHANGE) for word in words)


def says_otherwise(older: frozenset[str], newer: frozenset[str], older_text: str,
                   newer_text: str) -> bool:
    """Whether a newer version of a statement (their informative words, and texts) says it
    otherwise: it lacks a detail of it (a word, a verb of change aside), or it has every
    word of it and says them another way (memoryd.meaning: a "don't", another tense or mood,
    an antonym or order among the stop words). One that says it again ("Used threshold-based
    black removal again; …") or says more ("Production runs Postgres 16 for the main
    database" after "Correction: we moved to Postgres 16 in production") does not: both had
    marked the older "said earlier; a newer memory here says it otherwise"."""
    if any(not word.startswith(CHANGE) for word in older - newer):
        return True
    differs = difference(older_text, newer_text)
    return differs is not None and differs.what not in ("addition", "wording")


def version_links(keys: Sequence[K], words: Mapping[K, frozenset[str]],
                  scopes: Mapping[K, frozenset[str | None]]) -> dict[K, set[K]]:
    """Each of ``keys`` (statements: rowids, or texts; their informative ``words``; the
    ``scopes`` each is said in: its project, None for global, or several for copies of one
    text) that has a version among them in a scope of its own → those versions. Those without
    are left out. A version of a statement lacks at most MAX_CHANGED of its words (one more
    where a verb of change stands for one), so it holds one of any MAX_CHANGED + 2 of them:
    each is compared only with those that hold one of its rarest (a block of 150 entries,
    compared pair by pair through every word they share, took 20 ms; through the rarest,
    under 1)."""
    at = {key: i for i, key in enumerate(keys)}
    holders: dict[str, list[K]] = {}
    for key in keys:
        for word in words[key]:
            holders.setdefault(word, []).append(key)
    links: dict[K, set[K]] = {}
    for key in keys:
        rarest = sorted(words[key], key=lambda word: (len(holders[word]), word))
        others = {other for word in rarest[:MAX_CHANGED + 2] for other in holders[word]
                  if at[other] > at[key]}
        for other in others:
            if scopes[key] & scopes[other] and versions(words[key], words[other]):
                links.setdefault(key, set()).add(other)
                links.setdefault(other, set()).add(key)
    return links


def version_groups(keys: Sequence[K], links: Mapping[K, set[K]]) -> dict[K, K]:
    """Each of ``keys`` that has a version among them (``links``: :func:`version_links`) →
    the first of its group in ``keys``' order (a version of a version is in the group)."""
    parent = {key: key for key in links}
    at = {key: i for i, key in enumerate(keys)}

    def root(key: K) -> K:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for key in sorted(links, key=at.__getitem__):
        for other in links[key]:
            lead, follower = sorted((root(key), root(other)), key=at.__getitem__)
            parent[follower] = lead  # the earlier in keys' order leads
    return {key: root(key) for key in parent}


def newest_versions(links: Mapping[K, set[K]], when: Mapping[K, Written],
                    said: Mapping[K, str], words: Mapping[K, frozenset[str]],
                    texts: Mapping[K, str]) -> dict[K, K]:
    """Each statement that has versions (``links``) → the newest of them (``when`` each was
    written) that is :func:`newer` than it and says it otherwise (:func:`says_otherwise`, by
    their informative ``words`` and ``texts``; a copy of its text, ``said`` alike, another
    agent's or a file's, is not a newer version of it)."""
    newest: dict[K, K] = {}
    for key, others in links.items():
        later = [other for other in others if newer(when[other], when[key])
                 and said[other] != said[key]
                 and says_otherwise(words[key], words[other], texts[key], texts[other])]
        if later:
            newest[key] = max(later, key=lambda other: (*_latest(when[other]), str(other)))
    return newest


def earlier(keys: Sequence[K], words: Mapping[K, frozenset[str]], when: Mapping[K, Written],
            scopes: Mapping[K, frozenset[str | None]], texts: Mapping[K, str]) -> set[K]:
    """Those of ``keys`` (statements, each said once: their informative ``words``, ``when``
    each was written, the ``scopes`` each is said in, their ``texts``) a :func:`newer` version
    of which, saying it otherwise (:func:`says_otherwise`), is among them."""
    links = version_links(keys, words, scopes)
    return {key for key, others in links.items()
            if any(newer(when[o], when[key]) and says_otherwise(words[key], words[o], texts[key],
                                                                 texts[o]) for o in others)}


def told_apart(holds: np.ndarray, keys: Sequence[K], asked: Sequence[str],
               links: Mapping[K, set[K]], words: Mapping[K, frozenset[str]]) -> np.ndarray:
    """The question's words each of ``keys`` holds (``holds``: a row each, a column for each
    word ``asked``), as its versions (``links``, by their ``words``) are told apart: one that
    says what changed ("Correction: production moved to Postgres 16") holds the word of
    another that its verb of change stands for ("Production runs Postgres 15"), when that is
    the only word of the question between them. Asked "which Postgres version does
    production run", neither detail is named: both are as relevant, the newest first (the
    correction had ranked below the value it corrects); asked "does production still run
    Postgres 15", the 15 tells them apart."""
    told = holds
    at = {key: i for i, key in enumerate(keys)}
    column = {word: j for j, word in enumerate(asked)}
    for key, others in links.items():
        if key not in at:
            continue
        for other in others:
            if other not in at or not _changing(words[key] - words[other]):
                continue
            between = [column[word] for word in words[other] - words[key] if word in column
                       and holds[at[other], column[word]] and not holds[at[key], column[word]]]
            if len(between) == 1:
                if told is holds:
                    told = holds.copy()
                told[at[key], between[0]] = holds[at[other], between[0]]
    return told


def latest_first(probability: np.ndarray, written: Sequence[Written], holds: np.ndarray,
                 group_of: Sequence[int | None]) -> np.ndarray:
    """The candidates' order: by probability, the newest first among equals (:func:`newer`:
    of lines of one file written as of one time, the upper); versions whose ``holds`` (the
    question's words each holds, one row a candidate) are the same are equals, at the best
    probability among them (``probability`` is raised in place)."""
    together: dict[tuple[int, bytes], list[int]] = {}
    for i, group in enumerate(group_of):
        if group is not None:
            together.setdefault((group, holds[i].tobytes()), []).append(i)
    for members in together.values():
        if len(members) > 1:
            probability[members] = probability[members].max()
    created = np.array([w.created for w in written], dtype=np.float64)
    place = np.zeros(len(written))  # among lines of one file written at once: from the top
    at_once: dict[tuple[str, float], list[int]] = {}
    for i, w in enumerate(written):
        if w.source is not None and w.line is not None:
            at_once.setdefault((w.source, w.created), []).append(i)
    for members in at_once.values():
        for rank, i in enumerate(sorted(members, key=lambda i: written[i].line or 0)):
            place[i] = rank
    return np.lexsort((place, -created, -probability))
