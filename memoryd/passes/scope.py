"""``memory scope ID global|project [DIR]``: move an entry between the user's global tier and
a project.

A global entry reaches every project's memory block, prompt hook and tool-call lessons; a
project's reaches that project only (memoryd.sessions.context). Moving one is a change like
the maintenance passes' (memoryd.passes.runs): a run of its own (``scope``) with one entry
change, its ``project`` before and after, an event in the entry's history and, for an entry
written through the API, in its agent's ledger (so a rebuild keeps the move); ``memory undo
RUN`` moves it back.

Refused, with the reason, and nothing changed:

- an entry of a watched file (a line of a memory file, a transcript turn): it belongs where its
  file is (``CLAUDE.md`` in a repository is that project's, ``~/.claude/CLAUDE.md`` global),
  and the index follows the file; the line is moved by moving it to a file of the other tier;
- an entry that is not active (superseded: move its current version; forgotten);
- a move to a tier that already holds the same memory (the same agent, category and text), or
  another value of its key: two would then say the same thing, or disagree;
- a move to a directory outside any git repository (outside one every memory is global);
- the user's feedback, unless a person asks (memoryd.provenance).

An entry already in that tier is left as it is (``moved`` false), and no run is recorded.

``memory move-project OLD NEW|--global`` moves every entry filed under project OLD (a
repository renamed, moved or deleted: OLD need not exist) in one run, each a change as above,
undone together by ``memory undo RUN``: the entries written through the API and by the
extractor, of every status (a superseded version goes with its head), of the agent the request
names or of every agent. A watched file's entries are not moved (they follow their file: its
project root's project). An active entry the target tier would refuse (the same memory there,
another value of its key, the user's feedback for a request no person made) is left where it
is, and the reply names it with the reason.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.errors import BadParamsError, MemorydError, NotFoundError, UnavailableError
from memoryd.passes.changes import Change
from memoryd.passes.entry_files import from_file
from memoryd.project import repository_of
from memoryd.store.records import ProjectMoveRequest, ScopeRequest, StoredEntry
from memoryd.store.scope import entries_of_project, key_in_tier, projects_of_entries, same_in_tier

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext
    from memoryd.passes.runner import PassRunner

TIERS = ("global", "project")


class ScopeRefusedError(MemorydError):
    """The entry cannot move there (see the module docstring); nothing was changed (exit 1)."""

    code = "refused"


def tier_name(project: str | None) -> str:
    return f"project {project}" if project else "the global tier"


@dataclass(frozen=True)
class Moved:
    """What a ``scope`` request did: the entry as it is now, whether it moved, the tier asked
    for (``scope``, and its ``project``); and when a run moved it, the project it was in
    (``before``, None: global) and the run (``undo`` takes it back)."""

    entry: StoredEntry
    moved: bool
    scope: str
    project: str | None
    before: str | None = None
    undo: str | None = None


@dataclass(frozen=True)
class ProjectMoved:
    """What ``move_project`` did: the project the entries were under (``old``) and the one
    they are under now (``new``; None: global), how many moved, those ``left`` where they
    were (id, why) and the run (None when nothing moved)."""

    old: str
    new: str | None
    moved: int
    left: list[tuple[str, str]]
    undo: str | None = None


def missing_projects(counts: dict[str, int]) -> dict[str, int]:
    """Of the projects entries are filed under (and how many), those whose directory is gone
    (a repository renamed, moved or deleted): ``memory move-project`` moves them on."""
    return {project: n for project, n in sorted(counts.items())
            if not os.path.isdir(project)}


class ScopeMoves:
    """The ``scope`` method; moves go through the passes' runner, one run at a time."""

    def __init__(self, passes: PassRunner) -> None:
        self.passes = passes
        self.db = passes.db
        self.entries = passes.parts.entries

    async def scope(self, request: ScopeRequest) -> Moved:
        tier, directory = request.tier, request.directory
        project = None
        if directory is not None:  # scope 'project' (memoryd.server.requests)
            project = await asyncio.to_thread(repository_of, directory)
            if project is None:
                raise BadParamsError(f"{directory} is in no git repository: an entry belongs to "
                                     "a project only inside one (outside, every memory is "
                                     "global: memory scope ID global)")
        entry, actor = await self.db(self.entries.owned, request.entry)
        self.entries.check_person_kept(entry, request.entry.asker, "scope")
        await self.db(self._check, entry, project)
        if entry.project == project:
            return Moved(entry, False, tier, project)
        await self.passes.wait_until_free()
        why = f"memory scope {entry.uid} {tier}" + (f" {project}" if project else "") + \
            f" by {actor}: from {tier_name(entry.project)}"
        change = Change("entry", entry.uid, "scope", why, {"project": entry.project},
                        {"project": project})
        summary = await self.passes._run(  # a run of its own, as undo is
            "scope", lambda ctx: _move_all(ctx, [change]), agent=entry.agent,
            extra={"entry": entry.uid, "to": project or "global"})
        if summary.get("status") == "failed":
            raise UnavailableError(f"scope {entry.uid} failed ({summary['run']}): "
                                   f"{summary.get('error') or 'see the daemon log'}")
        moved = await self.db(self.passes.parts.store.entry_by_uid, entry.uid)
        return Moved(moved or entry, bool(summary["counts"].get("applied")), tier, project,
                     entry.project, summary["run"])

    async def move_project(self, request: ProjectMoveRequest) -> ProjectMoved:
        old = os.path.normpath(request.old)
        project = None
        if request.directory is not None:
            project = await asyncio.to_thread(repository_of, request.directory)
            if project is None:
                raise BadParamsError(f"{request.directory} is in no git repository: entries "
                                     "belong to a project only inside one (--global moves "
                                     "them to the global tier)")
        agent = request.asker.agent
        entries = await self.db(entries_of_project, self.passes.parts.store, old, agent)
        if not entries and os.path.isdir(old):  # a directory of the project, not its root
            root = await asyncio.to_thread(repository_of, old)
            if root is not None and root != old:
                old = root
                entries = await self.db(entries_of_project, self.passes.parts.store, old,
                                        agent)
        if not entries:
            gone = missing_projects(await self.db(projects_of_entries,
                                                  self.passes.parts.store))
            raise NotFoundError(
                f"no entries are filed under project {old}" + (f" of agent {agent}"
                                                               if agent else "")
                + (" (filed under directories that no longer exist: " + ", ".join(
                    f"{p} ({n})" for p, n in gone.items()) + ")" if gone else "")
                + "; a watched file's entries follow their file")
        if project == old:
            return ProjectMoved(old, project, 0, [])
        left = await self.db(self._left_behind, entries, project, request)
        refused = {uid for uid, _ in left}
        moving = [e for e in entries if e.uid not in refused]
        if not moving:
            return ProjectMoved(old, project, 0, left)
        await self.passes.wait_until_free()
        actor = request.asker.acts_as()
        to = tier_name(project)
        changes = [Change("entry", e.uid, "scope",
                          f"memory move-project {old} {project or '--global'} by {actor}: "
                          f"to {to}", {"project": old}, {"project": project})
                   for e in moving]
        summary = await self.passes._run(  # one run: one undo takes them all back
            "scope", lambda ctx: _move_all(ctx, changes), agent=agent,
            extra={"from": old, "to": project or "global"})
        if summary.get("status") == "failed":
            raise UnavailableError(f"move-project {old} failed ({summary['run']}): "
                                   f"{summary.get('error') or 'see the daemon log'}")
        return ProjectMoved(old, project, int(summary["counts"].get("applied", 0)), left,
                            summary["run"])

    def _left_behind(self, entries: list[StoredEntry], project: str | None,
                     request: ProjectMoveRequest) -> list[tuple[str, str]]:
        """The active entries the tier of ``project`` refuses, and why (database thread)."""
        left = []
        for entry in entries:
            if entry.status != "active":
                continue  # an old version or a forgotten one goes with the project
            try:
                self.entries.check_person_kept(entry, request.asker, "scope")
                self._check(entry, project)
            except MemorydError as exc:
                left.append((entry.uid, str(exc)))
        return left

    def _check(self, entry: StoredEntry, project: str | None) -> None:
        """Why the entry cannot go to ``project``'s tier, raised (database thread)."""
        name = entry.uid
        if entry.via == "watch" and entry.project != project:  # already there: left alone
            what = "a line of" if from_file(entry) else "a turn of the transcript"
            raise ScopeRefusedError(
                f"entry {name} is {what} {entry.source or 'a watched file'}, which "
                f"belongs where its file is ({tier_name(entry.project)}); nothing was "
                "changed. Move the line to a file of the other tier (for Claude Code "
                "~/.claude/CLAUDE.md is global, a repository's CLAUDE.md its project's), or "
                "store it there with `memory store` (--global for the global tier)")
        if entry.status == "superseded":
            head = self.entries.head_of(entry)
            raise ScopeRefusedError(f"entry {name} was superseded by {entry.superseded_by}; "
                                 f"move its current version ({head.uid})")
        if entry.status != "active":
            raise ScopeRefusedError(
                f"entry {name} is {entry.status}; only an active entry moves")
        if entry.project == project:
            return
        store = self.passes.parts.store
        same = same_in_tier(store, entry, project)
        if same is not None:
            raise ScopeRefusedError(f"{tier_name(project)} already holds this memory: entry "
                                 f"{same.uid}; nothing was changed (forget one of them)")
        rival = key_in_tier(store, entry, project)
        if rival is not None:
            raise ScopeRefusedError(f"{tier_name(project)} already has a value of "
                                 f"{entry.key}: entry {rival.uid}; nothing was changed "
                                 "(supersede or forget one of them first)")


def _move_all(ctx: PassContext, changes: list[Change]) -> Iterator[None]:
    """The scope run's pass: each change applied, a slice each."""
    for change in changes:
        ctx.count(ctx.runs.apply(ctx.run, change))
        yield  # a slice each: searches go on meanwhile
