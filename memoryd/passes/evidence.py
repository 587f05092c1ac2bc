"""Promotion by evidence: what the outcomes of the sessions propose.

memoryd judges what became of each entry it injected into a session (followed, broken, no
occasion: memoryd.sessions.outcomes, kept by memoryd.store.usage). The promote pass
(memoryd.passes.promote) acts on those of lessons:

- **A rule for the governance file.** A lesson broken in :data:`BROKEN_SESSIONS` (2) sessions
  or more, or followed in :data:`FOLLOWED_SESSIONS` (3), is proposed as a rule as a recurring
  one is — counting its memory-file copies (lessons of the agent's files that say the same)
  with it, one outcome a session, a session that broke one and followed another counting as
  broken. The rule notes the sessions ("(broken in 2 sessions: 2026-11-20, 2026-11-24)",
  "(followed in 3 sessions)"); the proposal's ``why`` gives the outcome record ("outcomes:
  broken in 2 sessions, followed in 1 (last broken 2026-11-24: Bash: pip install requests …)")
  and its ``outcomes`` the counts: ``memory pass show`` shows both. A lesson broken again and
  again is one the agent keeps needing in front of it: a rule in its governance file is.
- **The user's global tier.** A lesson of a project followed in sessions of
  :data:`GLOBAL_PROJECTS` (2) projects or more — itself, or its copies stored in the other
  projects (the same lesson written in another project is stored there too) — keeps proving
  true wherever the user works: it is proposed for the global tier (action ``global``),
  always for a person to accept (``memory promote accept ID``, as the other proposals; one an
  agent wrote, at a terminal). Accepting it makes the lesson global (its project cleared) and
  merges its copies of the other projects into it (superseded by it): one entry
  change each, which ``memory undo`` takes back — and a proposal whose move a person undid is
  not made again. Only lessons memoryd holds (written through the API, imported or
  extracted): a memory file's line belongs where its file is.

Nothing here runs while ``[outcomes] enabled`` or ``[outcomes] promote`` is false. The
outcomes are read a page at a time, the followed and broken ones kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.ingest.line_date import local_date, local_day
from memoryd.meaning import LESSON_COSINE, same_thing
from memoryd.passes.changes import Change
from memoryd.passes.consolidate import best_first
from memoryd.store.records import StoredEntry
from memoryd.store.usage import BROKEN, FOLLOWED, Usage, Verdict
from memoryd.text import normalise_text

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext, Steps

BROKEN_SESSIONS = 2
FOLLOWED_SESSIONS = 3
GLOBAL_PROJECTS = 2
#: The proposal's action, and the entry changes its accept makes.
GLOBAL = "global"
MAKE_GLOBAL = "make global"
MERGE_GLOBAL = "merge into global"
#: Outcome rows read in one step.
OUTCOME_PAGE = 2_000
#: What a broken outcome's reason shows at most.
WHY_CHARS = 160

Verdicts = dict[str, dict[str, Verdict]]


@dataclass(frozen=True)
class Used:
    """A lesson's outcomes (with its copies'), one a session."""

    followed: int
    broken: int
    broken_days: tuple[int, ...]  # the local days it was broken (local_day), oldest first
    last_broken: Verdict | None

    @property
    def by_evidence(self) -> bool:
        return self.broken >= BROKEN_SESSIONS or self.followed >= FOLLOWED_SESSIONS

    def why(self) -> str:
        said = [f"{word} in {count} session{'s' * (count != 1)}"
                for word, count in (("broken", self.broken), ("followed", self.followed))
                if count]
        why = "outcomes: " + ", ".join(said)
        if self.last_broken is not None:
            what = " ".join(self.last_broken.why.split())
            what = what if len(what) <= WHY_CHARS else what[:WHY_CHARS - 1] + "…"
            day = local_date(self.last_broken.at)
            why += f" (last broken {day}: {what})"
        return why

    def summary(self) -> dict[str, int]:
        return {"followed": self.followed, "broken": self.broken}


def verdicts(ctx: PassContext) -> Steps[Verdicts]:
    """Entry uid → session → its followed or broken outcome there (sent back via the
    generator's return value), a page of the outcomes a step."""
    usage = Usage(ctx.store)
    found: Verdicts = {}
    key: tuple[str, str] | None = ("", "")
    while key is not None:
        rows, key = usage.acted_on(key, OUTCOME_PAGE)
        for verdict in rows:
            found.setdefault(verdict.entry, {})[verdict.session] = verdict
        yield
    return found


def used(found: Verdicts, uids: list[str]) -> Used:
    """The outcomes of the lesson ``uids[0]`` and its copies, one a session."""
    sessions: dict[str, Verdict] = {}
    for uid in uids:
        for session, verdict in found.get(uid, {}).items():
            if session not in sessions or verdict.outcome == BROKEN:
                sessions[session] = verdict
    broken = sorted((v for v in sessions.values() if v.outcome == BROKEN), key=lambda v: v.at)
    followed = sum(1 for v in sessions.values() if v.outcome == FOLLOWED)
    return Used(followed, len(broken), tuple(sorted({local_day(v.at) for v in broken})),
                broken[-1] if broken else None)


# -- the global tier ---------------------------------------------------------------------


def propose_global(ctx: PassContext, lessons: list[StoredEntry], found: Verdicts,
                   open_proposals: set[tuple[str, str]]) -> Iterator[Any]:
    """Propose for the global tier the lessons followed in sessions of several projects."""
    disputed = ctx.store.disputed_ids()
    candidates = [e for e in lessons if e.project and e.source is None and not e.stale
                  and e.uid not in disputed
                  and any(v.outcome == FOLLOWED for v in found.get(e.uid, {}).values())]
    if not candidates:
        return
    usage = Usage(ctx.store)
    undone = usage.undone_targets(MAKE_GLOBAL)
    sessions = usage.session_projects(
        s for e in candidates for s, v in found[e.uid].items() if v.outcome == FOLLOWED)
    yield
    by_agent: dict[str, list[StoredEntry]] = {}
    for lesson in candidates:
        by_agent.setdefault(lesson.agent, []).append(lesson)
    for mine in by_agent.values():
        groups = yield from _alike(ctx, mine)
        for group in groups:
            projects = sorted({sessions.get(s) or e.project or "" for e in group  # has one
                               for s, v in found[e.uid].items() if v.outcome == FOLLOWED})
            if len(projects) < GLOBAL_PROJECTS:
                continue
            group = [group[n] for n in best_first(group)]
            uids = [e.uid for e in group]
            if undone.intersection(uids) or any((uid, GLOBAL) in open_proposals for uid in uids):
                continue
            names = ", ".join(Path(p).name for p in projects)
            why = (f"followed in sessions of {len(projects)} projects ({names}): true wherever "
                   "you work")
            proposal = Change("proposal", uids[0], GLOBAL, why, None,
                              {"entry": uids[0], "lessons": uids, "text": group[0].text,
                               "projects": projects})
            ctx.note(proposal, "preview" if ctx.dry_run else "proposed")
            open_proposals.add((uids[0], GLOBAL))


def _alike(ctx: PassContext, lessons: list[StoredEntry]) -> Steps[list[list[StoredEntry]]]:
    """``lessons`` (of one agent) in groups that say the same thing (memoryd.meaning: alike by
    their vectors or their words; the same words when there are no vectors yet)."""
    parent = list(range(len(lessons)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    vectors = yield from ctx.index_vectors([e.rowid for e in lessons])
    texts = [normalise_text(e.text) for e in lessons]
    threshold = ctx.config.remember.near_duplicate_cosine
    low = min(threshold, LESSON_COSINE)  # below it, no two lessons are one (meaning)
    for i in range(len(lessons)):
        for j in range(i + 1, len(lessons)):
            a, b = vectors.get(lessons[i].rowid), vectors.get(lessons[j].rowid)
            cosine = float(np.dot(a, b)) if a is not None and b is not None else -1.0
            if texts[i] == texts[j] or (cosine >= low and same_thing(
                    lessons[i].text, lessons[j].text, cosine, threshold, lesson=True)):
                parent[root(j)] = root(i)
        if i % 20 == 19:
            yield
    groups: dict[int, list[StoredEntry]] = {}
    for n, lesson in enumerate(lessons):
        groups.setdefault(root(n), []).append(lesson)
    return list(groups.values())


def accept_global(ctx: PassContext, proposal: dict[str, Any]) -> Iterator[None]:
    """`memory promote accept ID` of a global-tier proposal: the lesson made global, its
    copies of the other projects merged into it."""
    yield
    detail = proposal["after"]
    why = f"{proposal['change']} accepted: {proposal['why']}"
    best = ctx.store.entry_by_uid(detail["entry"])
    changes = []
    if best is not None and best.status == "active":
        if best.project is not None:
            changes.append(Change("entry", best.uid, MAKE_GLOBAL, why,
                                  {"project": best.project}, {"project": None}))
        for uid in detail["lessons"][1:]:
            copy = ctx.store.entry_by_uid(uid)
            if copy is not None and copy.status == "active":
                changes.append(Change("entry", uid, MERGE_GLOBAL, why,
                                      {"status": "active", "superseded_by": None},
                                      {"status": "superseded", "superseded_by": best.uid}))
    else:
        ctx.report(detail["entry"], "not moved: the lesson is no longer active")
    done = ctx.runs.apply_entries(ctx.run, changes) if changes else 0
    if done:
        ctx.count("applied", done)
    ctx.runs.set_state(int(proposal["change"][1:]), "accepted")
