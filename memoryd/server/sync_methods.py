"""Wire methods of sync (docs/sync.md): ``sync_init``, ``sync``, ``sync_add_shared``,
``sync_remove_shared``, ``share``, and the schedule of the ``sync`` pass (``[passes] sync``).

A sync is git's work in steps, each where it belongs: what changed locally is committed on the
database thread (no write is half-appended while git reads the files); the fetch and the push
run on worker threads (the network never holds up a search); the merge is made off the
worktree on a worker thread, into a commit (git ≥ 2.38; an older git merges in the worktree,
on the database thread); the worktree moves to it on the database thread (a fast-forward, once
what was written meanwhile is committed: else that is merged in first); and what it brought
is decoded on a worker thread and applied on the database thread in short slices, each once
the searches and writes waiting have gone (memoryd.scheduling), so a sync of thousands of
records never holds them up for long (:mod:`memoryd.sync.repo`, :mod:`memoryd.sync.apply`).
A purge waits while an apply runs (it could not purge what is not applied yet). Syncs run
one at a time. A push the remote refuses because it moved meanwhile is fetched and merged
again, a few times; nothing is ever force-pushed. A remote whose history was rewritten (it no
longer holds the commit this machine last synced with) is refused before anything is merged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from memoryd_client.wire import TEAM_PREFIX

from memoryd.errors import NotFoundError
from memoryd.passes.runner import INTERVALS, START_DELAY_S
from memoryd.server.params import Params
from memoryd.server.parts import Parts
from memoryd.store.query import EntryQuery
from memoryd.sync import apply
from memoryd.sync.apply import Applied, Plan, finish_pending, mark_pending
from memoryd.sync.git import SyncError, git_program, merges_off_worktree
from memoryd.sync.git import version as git_version
from memoryd.sync.repo import Merged, SyncRepo, host, reachable
from memoryd.sync.shared import (
    ShareRefusedError,
    Team,
    drop_unfollowed,
    follow,
    followed,
    one_line,
    pending_shares,
    unfollow,
    unshareable,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Rounds of fetch, merge, push when the remote keeps moving under us.
ROUNDS = 5
CHECK_EVERY_S = 30.0
OK, WARNING, PROBLEM = "ok", "warning", "problem"


class Sync:
    """The sync of one daemon's state dir."""

    def __init__(self, parts: Parts,
                 background: Callable[..., Awaitable[Any]] | None = None) -> None:
        self.parts = parts
        #: runs a slice of the apply on the database thread once the requests in flight have
        #: gone (memoryd.scheduling.Traffic.background); the database thread at once without
        self.background = background or parts.db
        self.lock = asyncio.Lock()
        self.started = time.time()
        self.running = False
        self.last_run = 0.0  # a machine that only follows teams has no repository state

    @property
    def repo(self) -> SyncRepo:
        return SyncRepo(self.parts.settings.config.state_dir)

    def methods(self) -> dict[str, Any]:
        return {"sync_init": self.m_sync_init, "sync": self.m_sync,
                "sync_add_shared": self.m_sync_add_shared,
                "sync_remove_shared": self.m_sync_remove_shared, "share": self.m_share}

    # -- wire methods -------------------------------------------------------------------

    async def m_sync_init(self, params: Params) -> dict[str, Any]:
        remote = params.text("remote", required=True, max_len=4096)
        assert remote is not None
        if not remote.strip():
            raise SyncError("sync init: the remote must not be empty")
        repo = self.repo
        async with self.lock:
            reply = await asyncio.to_thread(repo.init, remote.strip())
            committed = await self.parts.db(repo.commit, f"memoryd sync init on {host()}")
        problem = await asyncio.to_thread(reachable, repo.root)
        return {**reply, "committed": committed, "reachable": problem is None,
                "remote_problem": problem}

    async def m_sync(self, params: Params) -> dict[str, Any]:
        return await self.run()

    async def m_sync_add_shared(self, params: Params) -> dict[str, Any]:
        name = params.text("name", required=True, max_len=64) or ""
        remote = (params.text("remote", required=True, max_len=4096) or "").strip()
        if not remote:
            raise SyncError("sync add-shared: the remote must not be empty")
        state = self.parts.settings.config.state_dir
        team = Team(state, name)
        async with self.lock:
            await asyncio.to_thread(team.add, remote)
            await asyncio.to_thread(team.fetch)
            await asyncio.to_thread(follow, state, name, remote)
            pulled = await self.parts.db(team.apply, self.parts.store,
                                         self.parts.entries.unindex)
        if pulled.records:
            self.parts.vectors.wanted.set()
            self.parts.words.wanted.set()
        entries = await self.parts.db(self._team_count, team.agent)
        return {"shared": name, "agent": team.agent, "remote": remote, "entries": entries}

    async def m_sync_remove_shared(self, params: Params) -> dict[str, Any]:
        """Stop following a team: out of ``shared/teams.json``, its entries out of the index
        (and so out of every block), its clone deleted unless it holds shares not pushed."""
        name = params.text("name", required=True, max_len=64) or ""
        state = self.parts.settings.config.state_dir
        team = Team(state, name)
        async with self.lock:
            if name not in await asyncio.to_thread(followed, state):
                raise NotFoundError(f"no team named {name!r} is followed here (`memory sync "
                                    "add-shared NAME REMOTE` follows one)")
            remote = await asyncio.to_thread(unfollow, state, name)
            removed = await self.parts.db(team.leave_index, self.parts.store,
                                          self.parts.entries.unindex)
            kept = await asyncio.to_thread(team.remove_clone)
        self.parts.threads.query_cache.clear()  # a search's hits may have held its entries
        return {"unfollowed": name, "agent": team.agent, "remote": remote, "entries": removed,
                "clone": str(team.root), "kept": bool(kept), "unpushed": len(kept)}

    def _team_count(self, agent: str) -> int:
        store = self.parts.store
        assert store is not None
        return store.count_matching(EntryQuery().agent(agent).active())

    async def m_share(self, params: Params) -> dict[str, Any]:
        entry_id = params.text("id", required=True, max_len=64) or ""
        name = params.text("name", required=True, max_len=64) or ""
        state = self.parts.settings.config.state_dir
        if name not in await asyncio.to_thread(followed, state):
            raise NotFoundError(f"no team named {name!r} is followed here (memory sync "
                                "add-shared NAME REMOTE)")
        team = Team(state, name)
        entry = await self.parts.db(self.parts.entries.resolve, entry_id)
        if entry.agent.startswith(TEAM_PREFIX):
            raise SyncError(f"entry {entry.uid} is a team's already")
        refusal = unshareable(entry, await self.parts.db(self.parts.entries.head_of, entry))
        if refusal is not None:
            raise ShareRefusedError(f"share: {refusal}; nothing was shared")
        by = params.caller.writer if params.caller is not None and params.caller.agent \
            else entry.agent
        async with self.lock:
            await asyncio.to_thread(team.fetch)
            copy = await asyncio.to_thread(team.share, entry, by)
            pending, problem = await self._push(team)
            await self.parts.db(team.apply, self.parts.store, self.parts.entries.unindex)
        self.parts.vectors.wanted.set()
        self.parts.words.wanted.set()
        reply = {"id": entry.uid, "name": name, "shared_id": copy["uid"],
                 "agent": team.agent, "pushed": copy["uid"] not in pending}
        if pending:
            reply.update(unpushed=len(pending), push_error=problem)
        return reply

    async def _push(self, team: Team) -> tuple[list[str], str | None]:
        """Push a team's pending shares: those still not pushed (kept in the clone: the next
        sync pushes them) and why."""
        problem = None
        try:
            await asyncio.to_thread(team.push)
        except SyncError as exc:
            problem = one_line(exc.message)
            log.warning("Team %s: shares not pushed yet: %s", team.name, exc.message)
        return await asyncio.to_thread(team.note_pushed, problem), problem

    async def _follow_teams(self) -> dict[str, dict[str, Any]]:
        """Every followed team: fetched, what it brought applied; for each, its new entries,
        those removed and the lines skipped, or why it was not followed this time."""
        state = self.parts.settings.config.state_dir
        teams: dict[str, dict[str, Any]] = {}
        await self.parts.db(drop_unfollowed, self.parts.store, state, self.parts.entries.unindex)
        for name in sorted(await asyncio.to_thread(followed, state)):
            team = Team(state, name)
            try:
                await asyncio.to_thread(team.fetch)
                pulled = await self.parts.db(team.apply, self.parts.store,
                                             self.parts.entries.unindex)
                waiting = await asyncio.to_thread(team.unpushed)
            except (SyncError, OSError) as exc:
                problem = exc.message if isinstance(exc, SyncError) else \
                    f"{exc.strerror or exc}: {exc.filename or team.root}"
                log.warning("Team %s not followed this time: %s", name, problem)
                teams[name] = {"error": problem}
                continue
            teams[name] = {"entries": pulled.records, "removed": pulled.removed,
                           "skipped": pulled.skipped}
            if waiting:  # shares whose push failed: merged by the fetch, pushed now
                pending, refused = await self._push(team)
                teams[name]["pushed"] = len(waiting) - len(pending)
                if pending:
                    teams[name].update(unpushed=len(pending), push_error=refused)
            elif await asyncio.to_thread(team.pending):  # pushed by hand meanwhile
                await asyncio.to_thread(team.note_pushed, None)
        if any(t.get("entries") or t.get("removed") for t in teams.values()):
            self.parts.vectors.wanted.set()
            self.parts.words.wanted.set()
        return teams

    # -- a sync -------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        repo = self.repo
        self.last_run = time.time()
        if not repo.initialized:
            if await asyncio.to_thread(followed, self.parts.settings.config.state_dir):
                async with self.lock:
                    return {"committed": False, "pulled": False, "pushed": False,
                            "applied": Applied().reply(), "new_conflicts": [],
                            "decided": [], "conflicts": [], "seconds": 0.0, "own": False,
                            "teams": await self._follow_teams()}
            raise SyncError("sync is not set up here: run `memory sync init REMOTE` first")
        async with self.lock:
            self.running = True
            began = time.time()
            try:
                reply = await self._run(repo)
            except SyncError as exc:
                await asyncio.to_thread(repo.save_state, last_attempt=began,
                                        last_error=exc.message)
                log.warning("Sync failed: %s", exc.message)
                raise
            finally:
                self.running = False
            conflicts = await asyncio.to_thread(repo.conflict_copies)
            await asyncio.to_thread(repo.save_state, last_attempt=began, last_sync=time.time(),
                                    last_error=None, conflicts=conflicts,
                                    synced=await asyncio.to_thread(repo.head))
            reply["conflicts"] = conflicts
            reply["teams"] = await self._follow_teams()
            reply["seconds"] = round(time.time() - began, 3)
            log.info("Sync: %s", {k: v for k, v in reply.items() if k != "conflicts"})
            return reply

    async def _run(self, repo: SyncRepo) -> dict[str, Any]:
        parts = self.parts
        store = parts.store
        assert store is not None
        await asyncio.to_thread(repo.configure)
        await parts.db(finish_pending, store, repo.root, False)
        committed, commit_s = await parts.db(_timed, repo.commit, f"memoryd sync on {host()}")
        total = Applied()
        copies: list[str] = []
        refused: list[str] = []
        pulled = pushed = False
        known = await asyncio.to_thread(repo.last_synced)
        for _ in range(ROUNDS):
            theirs = await asyncio.to_thread(repo.fetch)
            problem = await asyncio.to_thread(repo.rewritten, known, theirs)
            if problem is not None:
                raise SyncError(problem)
            known = theirs or known  # what a later round's fetch must hold in its turn
            if theirs is not None and not await asyncio.to_thread(repo.contains, theirs):
                merged, applied = await self._pull(repo, theirs)
                pulled = True
                copies += merged.conflicts
                refused += merged.refused
                total.add(applied)
            if theirs is not None and theirs == await asyncio.to_thread(repo.head):
                break  # nothing of ours the remote lacks
            if await asyncio.to_thread(repo.push):
                pushed = True
                break
        else:
            raise SyncError(f"the remote moved during each of {ROUNDS} attempts to push; "
                            "nothing was lost, run `memory sync` again")
        for said in refused:
            log.warning("Sync kept back or refused what the remote's copy lacked or held "
                        "damaged: %s", said)
        return {"committed": committed, "pulled": pulled, "pushed": pushed,
                "applied": total.reply(), "new_conflicts": copies, "refused": refused,
                "decided": total.decided, "commit_s": round(commit_s, 3)}

    async def _pull(self, repo: SyncRepo, theirs: str) -> tuple[Merged, Applied]:
        """Merge ``theirs``, move the worktree to the merge, apply what it brought."""
        began = time.perf_counter()
        holds: list[float] = []  # the merge's steps on the database thread
        merged = await self._merge(repo, theirs, holds)
        merging = time.perf_counter() - began
        applied = await self._apply(repo, merged)
        applied.merge_s = merging
        applied.advance_s = sum(holds)
        applied.longest_advance_s = max(holds, default=0.0)
        self._after(applied)
        return merged, applied

    async def _merge(self, repo: SyncRepo, theirs: str, holds: list[float]) -> Merged:
        """The merge, made off the worktree while searches and writes go on; the worktree is
        at it when this returns, and the ``sync:pending`` mark set. ``holds``: the time each
        of its steps on the database thread took."""
        if not merges_off_worktree():  # an older git: in the worktree, writes waiting
            merged, took = await self.parts.db(_timed, self._merge_in_worktree, repo, theirs)
            holds.append(took)
            return merged
        target = theirs
        copies: tuple[str, ...] = ()
        refused: tuple[str, ...] = ()
        for _ in range(ROUNDS):
            ours = await asyncio.to_thread(repo.head)
            assert ours is not None
            made = await asyncio.to_thread(repo.merge_off, ours, target)
            copies += made.conflicts
            refused += made.refused
            moved, took = await self.parts.db(_timed, self._advance, repo, made)
            holds.append(took)
            if moved:
                return Merged(made.before, made.after, copies, refused)
            target = made.after  # written meanwhile (committed now): merged with it next
        # writes kept coming during each merge: the last one in the worktree, writes waiting
        merged, took = await self.parts.db(_timed, self._merge_in_worktree, repo, target)
        holds.append(took)
        return Merged(merged.before, merged.after, copies + merged.conflicts,
                      refused + merged.refused)

    def _advance(self, repo: SyncRepo, made: Merged) -> bool:
        """Move the worktree to the merge (database thread); False when something was written
        since the merge began (it is committed now: the caller merges again)."""
        store = self.parts.store
        assert store is not None
        if repo.commit(f"memoryd sync on {host()}") or repo.head() != made.before:
            return False
        mark_pending(store, made.before)
        try:
            repo.advance(made.before, made.after)
        except BaseException:
            finish_pending(store, repo.root, False)  # put back already: only the mark ends
            raise
        return True

    def _merge_in_worktree(self, repo: SyncRepo, theirs: str) -> Merged:
        """Merge in the worktree (database thread: nothing writes the files meanwhile)."""
        store = self.parts.store
        assert store is not None
        repo.commit(f"memoryd sync on {host()}")
        before = repo.head()
        assert before is not None
        mark_pending(store, before)
        try:
            return repo.merge(theirs)
        except BaseException:
            finish_pending(store, repo.root, False)  # put back already: only the mark ends
            raise

    async def _apply(self, repo: SyncRepo, merged: Merged) -> Applied:
        """What the merge brought: decoded on a worker thread, the offsets moved at once, then
        applied in slices on the database thread that let searches and writes go first; a
        purge waits meanwhile (memoryd.server.parts.Parts.sync_applying)."""
        parts = self.parts
        store = parts.store
        assert store is not None
        began = time.perf_counter()
        async with parts.sync_applying:
            found: Plan = await asyncio.to_thread(apply.plan, repo, merged.before, merged.after)
            await parts.db(apply.advanced, store, found)
            while not await self.background(apply.apply_some, store, found):
                pass
            applied = await parts.db(apply.finish, store, repo.root, found)
        applied.apply_s = time.perf_counter() - began
        return applied

    def _after(self, applied: Applied) -> None:
        """New entries get their vectors (and their words) here; purged ones leave the RAM
        index and the lexicon."""
        parts = self.parts
        for rowid in applied.purged_rows:
            parts.entries.unindex(rowid)
        lexicon = parts.derived.lexicon
        if applied.purged_words and lexicon is not None:
            lexicon.forget(applied.purged_words)
        if applied.purged:
            parts.threads.query_cache.clear()
        if applied.records or applied.restored:
            parts.vectors.wanted.set()
            parts.words.wanted.set()

    # -- schedule, status, doctor ---------------------------------------------------------

    def every(self) -> float | None:
        return INTERVALS.get(str(self.parts.settings.config.passes.sync))

    async def scheduler(self) -> None:
        """The ``sync`` pass: every interval of ``[passes] sync`` once ``sync init`` ran."""
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            every = self.every()
            repo = self.repo
            if every is None or self.lock.locked() or not (
                    repo.initialized or followed(self.parts.settings.config.state_dir)):
                continue
            now = time.time()
            last = max(float(repo.state().get("last_attempt") or 0), self.last_run)
            if now - self.started < START_DELAY_S or now - last < every:
                continue
            try:
                await self.run()
            except SyncError:
                pass  # logged, and kept for status and doctor
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("The scheduled sync hit an error; it carries on.")

    def status(self) -> dict[str, Any] | None:
        """For `memory status`: None until `sync init`, unless a followed team holds shares
        not pushed yet (``teams``: by name, how many and why)."""
        repo = self.repo
        state_dir = self.parts.settings.config.state_dir
        teams = pending_shares(state_dir)
        if not repo.initialized:
            return {"teams": teams} if teams else None
        state = repo.state()
        every = self.every()
        last = state.get("last_attempt")
        return {"remote": state.get("remote"), "last_sync": state.get("last_sync"),
                "last_error": state.get("last_error"), "running": self.running,
                "conflicts": repo.conflict_copies(),
                "schedule": self.parts.settings.config.passes.sync,
                "next": None if every is None else max(self.started + START_DELAY_S,
                                                       float(last or 0) + every),
                "teams": teams}

    def doctor(self) -> dict[str, Any]:
        """The ``sync`` check of `memory doctor` (off the database thread: it asks the
        remote)."""
        repo = self.repo
        if not repo.initialized:
            return _check(OK, "not set up (`memory sync init REMOTE` syncs this memory through "
                          "git)")
        if git_program() is None:
            return _check(PROBLEM, "sync is set up but no `git` is on the PATH",
                          "install git; memoryd runs it to sync")
        state = repo.state()
        remote = state.get("remote")
        problem = reachable(repo.root)
        if problem is not None:
            return _check(PROBLEM, f"the remote {remote} cannot be reached: {problem}",
                          "check the remote's address and your access (an ssh key, the "
                          "network); `git -C STATE_DIR ls-remote origin` shows git's error")
        copies = repo.conflict_copies()
        if copies:
            return _check(WARNING, f"{len(copies)} conflict cop{'y' if len(copies) == 1 else 'ies'}"
                          f" waiting: {', '.join(copies[:3])}",
                          "each holds the other machine's version of the file beside it: merge "
                          "what you want to keep into the file, delete the copy, then `memory "
                          "sync`")
        last, error = state.get("last_sync"), state.get("last_error")
        if error:
            return _check(WARNING, f"the last sync failed: {error}", "run `memory sync` to see "
                          "it again; it is retried on its schedule")
        every = self.every()
        when = "never" if not last else time.strftime("%Y-%m-%d %H:%M:%S",
                                                      time.localtime(float(last)))
        if every is not None and (not last or time.time() - float(last) > 2 * every + 600):
            return _check(WARNING, f"remote {remote} reachable; last sync {when}",
                          "run `memory sync`")
        found = git_version()
        if found is not None and not merges_off_worktree():
            return _check(OK, f"remote {remote} reachable; last sync {when}; no conflict "
                          f"waiting; git {found[0]}.{found[1]} merges in the worktree, while "
                          "searches and writes wait (git 2.38 or newer merges beside them)")
        return _check(OK, f"remote {remote} reachable; last sync {when}; no conflict waiting")


def _timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """``fn(*args)`` and the seconds it took (run on the database thread: how long it held
    it, for ``memory sync --json`` and the bench)."""
    began = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - began


def _check(status: str, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"check": "sync", "status": status, "detail": detail, "fix": fix}
