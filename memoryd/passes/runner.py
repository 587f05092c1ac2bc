"""Running the maintenance passes: in slices, on demand, on a schedule, and undoing them.

A pass is a generator over a :class:`PassContext` (memoryd.passes.api). It runs on the database
thread (so it reads and writes the store like every other request) in **slices**: the runner
advances it until ``SLICE_S`` (5 ms) has passed; the next slice starts once the searches and hooks
in flight have finished (memoryd.scheduling), so one waits at most for the slice it arrived in.
A pass that has slow work without the database (a matrix of cosines, ``git ls-files``, writing
files) yields an :class:`Offload`: the runner does it on a worker thread and sends the result back
into the pass — or, with ``wait=False``, sends back a handle at once, and the pass goes on
(planning the next files while these are written) until it yields :class:`Collect` for it.

**Schedule** (``[passes]``): each pass runs ``hourly``, ``daily`` or ``off``. A pass is due when
its interval has passed since its last run began; so a machine that slept through several runs
does one soon after it wakes, not one per missed interval. Daily passes wait for a quiet moment
(no request for ``quiet_s`` seconds); nothing runs in the first ``START_DELAY_S`` after start.
Passes run one at a time, scheduled or asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

from memoryd.errors import (
    BadParamsError,
    ForbiddenError,
    MemorydError,
    NotFoundError,
    UnavailableError,
    WriteRefusedError,
)
from memoryd.passes import consolidate, merge_undo, notebooks, promote, retain, staleness
from memoryd.passes.api import Collect, Offload, PassContext, PassParts, Steps, in_thread
from memoryd.passes.changes import Change, RunSummary, parse_target, run_name
from memoryd.passes.file_care import FileNotWrittenError
from memoryd.passes.file_changes import followed_renames, holds, rebased
from memoryd.passes.runs import PassRuns
from memoryd.passes.user_files import commit, through_links
from memoryd.progress import report
from memoryd.scheduling import paced
from memoryd.store.durable import refused_by_disk
from memoryd.watched_sources import memory_roots

log = logging.getLogger(__name__)

PASSES: dict[str, Callable[[PassContext], Steps[None]]] = {
    # the notebook pass keeps a promoted lesson's bullets over the cap: the runner tells it
    # which they are, so that neither of the two passes imports the other's reading of them
    "notebooks": functools.partial(notebooks.run, promoted=promote.promoted_lessons),
    "consolidate": consolidate.run,
    "promote": promote.run,
    "staleness": staleness.run,
    "retain": retain.run,
}
INTERVALS = {"hourly": 3600.0, "daily": 86400.0}
SLICE_S = 0.005
STEP_WARN_S = 0.020
START_DELAY_S = 60.0
CHECK_EVERY_S = 30.0
#: How long a person's change to an entry waits for a running pass (wait_until_free).
PASS_WAIT_S = 15.0
#: An undo's count of the file changes whose files held what it would write: nothing written.
ALREADY_UNDONE = "already undone"


class PassRunner:
    """Runs the passes of one daemon: on demand, on a schedule; undoes and accepts their
    changes."""

    def __init__(self, parts: PassParts, idle_since: Callable[[], float],
                 background: Callable[..., Awaitable[Any]] | None = None,
                 pause: Callable[[], None] | None = None,
                 on_written: Callable[[list[str]], None] | None = None) -> None:
        self.parts = parts
        self.db = parts.db
        self.idle_since = idle_since
        #: runs a slice on the database thread once the requests someone waits on are done
        #: (memoryd.scheduling); the plain database thread without one
        self.background = background or parts.db
        #: what offloaded work waits for between two of its units (memoryd.scheduling)
        self.pause = pause
        self._runs: PassRuns | None = None
        self.lock = asyncio.Lock()
        self.current: str | None = None
        #: told the files a run wrote through a symlink, to index them now: the watcher does
        #: not see a write into a directory it does not watch (ingestion's queue). Only those:
        #: the watcher sees the rest, and a thousand notebooks handed over again at the end of
        #: a run were all read and parsed a second time while searches waited
        #: (memoryd.scheduling)
        self.on_written = on_written
        self.started = time.time()
        #: each pass whose last run failed, and how (until one of it is done): `memory
        #: status` and `memory doctor` say so (the run may not even be recorded, on a full
        #: state disk)
        self.failed: dict[str, FailedRun] = {}

    @property
    def runs(self) -> PassRuns:
        if self._runs is None:
            self._runs = PassRuns(self.parts.store, self.parts.entries,
                                  self.parts.config().state_dir)
        return self._runs

    async def recover(self) -> int:
        return await self.db(self.runs.recover)

    async def wait_until_free(self) -> None:
        """A person's change to an entry (a forget, a supersede, a move of tier) is a run of
        its own, and runs go one at a time: wait a while for a running pass (they work in
        slices and most take seconds) rather than past the client's timeout."""
        deadline = time.monotonic() + PASS_WAIT_S
        while self.lock.locked():
            if time.monotonic() > deadline:
                raise UnavailableError(f"the {self.current or 'maintenance'} pass is "
                                       "running; try again when it is done (memory pass list)")
            await asyncio.sleep(0.05)

    # -- running ----------------------------------------------------------------------

    async def run(self, name: str, *, agent: str | None = None, project: str | None = None,
                  paths: list[str] | None = None, dry_run: bool = False,
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
        if name not in PASSES:
            raise BadParamsError(f"no pass named {name!r} (passes: {', '.join(PASSES)})")
        return await self._run(name, PASSES[name], agent=agent, project=project, paths=paths,
                               dry_run=dry_run, extra=extra)

    async def _run(self, name: str, body: Callable[[PassContext], Iterator[Any]], *,
                   agent: str | None = None, project: str | None = None,
                   paths: list[str] | None = None, dry_run: bool = False,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
        scope = {k: v for k, v in (("agent", agent), ("project", project), ("paths", paths))
                 if v is not None} | (extra or {})
        async with self.lock:
            self.current = name
            ctx: PassContext | None = None
            try:
                run = await self.db(self.runs.begin, name, scope, dry_run)
                ctx = PassContext(self.parts, self.runs, run, agent, project,
                                  set(paths) if paths else None, extra)
                longest = LongestStep()
                report(what=f"{name} {run_name(run.run)}")

                def progressed(ctx: PassContext = ctx) -> None:
                    report(counts=dict(ctx.run.counts), **ctx.stage)

                try:
                    # a pass is a generator function (results are sent back into it)
                    await self._drive(cast("Steps[None]", body(ctx)), longest, progressed)
                except asyncio.CancelledError:
                    # the daemon is stopping: the next start marks the run interrupted when
                    # this cannot (the "stopping" answer must not swallow the cancellation, or
                    # the scheduler carries on and the daemon never exits)
                    self.runs.sync_ledgers()  # what it applied, durable before the exit
                    with contextlib.suppress(UnavailableError):
                        await self.db(self.runs.finish, run, "interrupted")
                    raise
                except Exception as exc:
                    error = _error_text(exc)
                    if isinstance(exc, FileNotWrittenError) or refused_by_disk(exc):
                        # the reason says it all: no traceback
                        log.warning("Pass %s (%s) failed: %s", name, run_name(run.run), error)
                    else:
                        log.exception("Pass %s (%s) failed.", name, run_name(run.run))
                    self.failed[name] = FailedRun(run_name(run.run), time.time(), error)
                    with contextlib.suppress(Exception):  # else the next start settles them
                        await self.db(self.runs.settle, run.run)
                    try:
                        await asyncio.to_thread(self.runs.sync_ledgers)
                        await self.db(self.runs.finish, run, "failed", error)
                        await asyncio.to_thread(self.runs.log.sync)
                    except WriteRefusedError as refused:  # a full state disk: the next start
                        log.warning("Pass %s (%s): its failure is not recorded: %s", name,
                                    run_name(run.run), refused.why)  # marks it interrupted
                        run.status = "failed"
                    return {**self._summary(run), "error": error}
                await asyncio.to_thread(self.runs.sync_ledgers)  # durable before "done"
                linked = through_links(ctx.touched)
                if linked and self.on_written is not None:
                    self.on_written(linked)
                if ctx.touched:
                    message = f"memoryd: {name} run {run_name(run.run)} " \
                        f"({len(ctx.touched)} file changes)"
                    config = self.parts.config()  # its roots found off the loop: walks
                    problem = await asyncio.to_thread(
                        lambda: commit(ctx.touched, message, memory_roots(config)))
                    if problem:
                        log.info("Not committed to git: %s", problem)
                await self.db(self.runs.finish, run, "done")
                await asyncio.to_thread(self.runs.log.sync)  # the run's end, durable too
                if not dry_run:
                    self.failed.pop(name, None)
                log.info("Pass %s (%s) done; its longest step on the database thread: %s.",
                         name, run_name(run.run), longest)
                return {**self._summary(run), "longest_step": longest.reply()}
            finally:
                self.current = None
                if ctx is not None and self.parts.store.writing:  # it failed, or is stopping
                    try:
                        with contextlib.suppress(Exception):
                            await self.db(ctx.release)
                    finally:
                        self.parts.store.writing.clear()

    @staticmethod
    def _summary(run: RunSummary) -> dict[str, Any]:
        """The reply of a run; with file groups in conflict, which files ``changed`` since,
        which are ``gone`` (renamed or deleted) and which were ``held`` back with them."""
        summary = {"run": run_name(run.run), "pass": run.name, "dry_run": run.dry_run,
                   "status": run.status, "counts": run.counts}
        if run.changed or run.held:
            summary |= {"changed": run.changed, "held": run.held}
        if run.gone:
            summary["gone"] = run.gone
        if run.later:
            summary["later"] = run.later
        if run.kept:
            summary["kept"] = run.kept
        return summary

    async def _drive(self, steps: Generator[Any, Any, Any], longest: LongestStep,
                     progressed: Callable[[], None] = lambda: None) -> None:
        value: Any = None
        started: list[asyncio.Future[Any]] = []
        try:
            while True:
                done, step = await self.background(_slice, steps, value, longest)
                progressed()
                if done:
                    return
                if isinstance(step, Offload) and step.wait:
                    value = await in_thread(paced, self.pause, step.fn, *step.args)
                elif isinstance(step, Offload):
                    value = in_thread(paced, self.pause, step.fn, *step.args)
                    started.append(value)
                elif isinstance(step, Collect):
                    value = await step.handle
                else:
                    value = None
                    await asyncio.sleep(0)
        finally:  # work a failed pass left running ends before its run is marked
            if started:
                await asyncio.gather(*started, return_exceptions=True)

    # -- runs and changes --------------------------------------------------------------

    async def show(self, target: str, offset: int, max_bytes: int) -> dict[str, Any]:
        """A run with a page of its changes from ``offset`` (PassRuns.shown), or one change."""
        kind, number = parse_target(target)
        if kind == "run":
            return await self.db(self.runs.shown, number, offset, max_bytes)
        return await self.db(self.runs.change, number)

    async def listing(self) -> list[dict[str, Any]]:
        """Each pass: its schedule, last run over everything, next run."""
        out = []
        for name in PASSES:
            last = await self.db(self.runs.newest_whole, name)
            every = self.every(name)
            entry: dict[str, Any] = {"pass": name, "schedule": self.schedule_of(name),
                                     "last": last}
            if every is not None:
                started = last["started"] if counts_for_schedule(last) else None
                entry["next"] = max(self.started + START_DELAY_S,
                                    (started or 0) + every)
            else:
                entry["next"] = None
            out.append(entry)
        return out

    async def status(self) -> dict[str, Any]:
        """For `memory status`: each pass's next run and last counts, open contradictions."""
        contradictions = await self.db(self.runs.open_contradictions)
        passes = await self.listing()
        return {"passes": [{"pass": p["pass"], "next": p["next"],
                            "last_run": p["last"]["run"] if p["last"] else None,
                            "last_counts": p["last"]["counts"] if p["last"] else None}
                           for p in passes],
                "pass_running": self.current,
                "contradictions": [{"change": c["change"], "texts": c["after"]["texts"],
                                    "ids": c["after"]["ids"], "why": c["why"]}
                                   for c in contradictions]}

    def schedule_of(self, name: str) -> str:
        return str(getattr(self.parts.config().passes, name))

    def every(self, name: str) -> float | None:
        return INTERVALS.get(self.schedule_of(name))

    # -- undo and accept --------------------------------------------------------------

    async def undo(self, target: str) -> dict[str, Any]:
        kind, number = parse_target(target)
        if kind == "run":
            found = await self.db(self.runs.run, number)
            changes = [c for c in found["changes"] if c["state"] == "applied"]
            if not changes:  # nothing to do, not a mistake of the caller's: exit 1, not 2
                raise NotFoundError(_nothing_to_undo(target, found["changes"]))
        else:
            change = await self.db(self.runs.change, number)
            undos = change.get("undos") or []
            if change["state"] == "undone" and undos and len(undos) % 2 == 0:
                raise NotFoundError(f"{target} was {_undone_since(undos)}: memory undo "
                                    f"{undos[-1][1]} takes it back")
            if change["kind"] == "proposal":  # what its acceptance wrote is undone
                raise NotFoundError(_proposal_undo(target, change))
            if change["state"] != "applied":
                raise NotFoundError(f"{target} is {_undone_since(undos) or change['state']}: "
                                    "only an applied change can be undone")
            # the files of a group (a notebook and its archive) go back together: the archive
            # put back alone would drop the pruned lines the notebook no longer holds
            changes = await self.db(self.runs.group_of, change)
        extra: dict[str, Any] = {"undoes": target}
        if len(changes) > 1 and kind == "change":
            extra["with"] = [c["change"] for c in changes if c["change"] != target]
        result = await self._run("undo", lambda ctx: _undo(ctx, changes), extra=extra)
        return {**result, "with": extra["with"]} if "with" in extra else result

    async def accept(self, target: str, human: bool = True) -> dict[str, Any]:
        """Write a proposal; ``human``: a person asks (promote.accept_refusal)."""
        kind, number = parse_target(target)
        if kind != "change":
            raise BadParamsError(f"{target}: accept takes a proposal's change id (c123)")
        proposal = await self.db(self.runs.change, number)
        if proposal["kind"] != "proposal":  # another kind of id than asked for: usage
            raise BadParamsError(f"{target} is {_a(proposal['kind'])} change, not a proposal "
                                 "(see memory pass show)")
        if proposal["state"] != "proposed":  # the right id, refused as it is now: exit 1
            raise NotFoundError(f"{target} is not an open proposal: {_not_open(proposal)} "
                                f"(memory pass show {target})")
        refusal = await self.db(promote.accept_refusal, self.parts.store, self.parts.config(),
                                proposal, human)
        if refusal is not None:
            raise ForbiddenError(refusal)
        return await self._run("promote", lambda ctx: promote.accept(ctx, proposal),
                               extra={"accepts": proposal["change"]})

    # -- schedule ---------------------------------------------------------------------

    async def due(self, now: float) -> list[str]:
        due: list[str] = []
        if now - self.started < START_DELAY_S:
            return due
        for name in PASSES:
            every = self.every(name)
            if every is None:
                continue
            # a preview, a run for one agent or project, an accepted proposal: not the
            # pass's work for everything, so they do not put the next one off
            last = await self.db(self.runs.newest_whole, name)
            if counts_for_schedule(last) and now - last["started"] < every:
                continue
            quiet = self.parts.config().passes.quiet_s
            if self.schedule_of(name) == "daily" and now - self.idle_since() < quiet:
                continue
            due.append(name)
        return due

    async def scheduler(self) -> None:
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            try:
                for name in await self.due(time.time()):
                    summary = await self.run(name)
                    log.info("Pass %s (%s): %s", name, summary["run"], summary["counts"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if refused_by_disk(exc):  # a full or read-only state disk: said, not a bug
                    log.warning("The pass scheduler could not run a pass (%s); it tries again "
                                "later.", _error_text(exc))
                else:
                    log.exception("The pass scheduler hit an error; it carries on.")


@dataclass
class LongestStep:
    """The longest step of a run (from one yield to the next, on the database thread): how
    long a search that came then could wait for it. The issue's bound is ~20 ms; a run's
    reply and its log line say it (bench/bench_passes.py prints it), with the CPU time the
    thread spent in it (on a busy machine a step of a few ms of CPU can last 20 ms)."""

    seconds: float = 0.0
    cpu: float = 0.0
    began: str = ""
    ended: str = ""

    def __str__(self) -> str:
        if not self.began:  # it ended in its first step
            return "none (it ended at once)"
        return (f"{self.seconds * 1000:.0f} ms ({self.cpu * 1000:.0f} ms of CPU), from "
                f"{self.began} to {self.ended}")

    def reply(self) -> dict[str, Any]:
        return {"ms": round(self.seconds * 1000, 1), "cpu_ms": round(self.cpu * 1000, 1),
                "from": self.began, "to": self.ended}


#: Why a proposal is not open, by its state (`memory promote accept` of one).
_NOT_OPEN = {"accepted": "it was accepted already",
             "preview": "it is a dry run's preview; run the pass without --dry-run to propose it"}


def _not_open(proposal: dict[str, Any]) -> str:
    """Why a proposal cannot be accepted: its state, and of one accepted, what became of what
    its acceptance wrote: "accepted by r22, undone by r23; memory undo r23 writes it again"
    (an undone promotion stays undone: the pass does not propose it again)."""
    accepted, undos = proposal.get("accepted_by"), proposal.get("undos") or []
    if proposal["state"] != "accepted" or not accepted:
        return _NOT_OPEN.get(proposal["state"], f"it is {proposal['state']}")
    if not undos:
        return f"it was accepted already, by {accepted}"
    history = f"it was accepted by {accepted}, {_undone_since(undos)}"
    if len(undos) % 2:  # taken back: the undo's run, undone, writes it again
        return f"{history}; memory undo {undos[-1][0]} writes it again"
    return f"{history}; memory undo {undos[-1][0]} takes it back"


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


@dataclass(frozen=True)
class FailedRun:
    """A pass's last run, failed: its name (r9), when, and why."""

    run: str
    at: float
    error: str


def _error_text(exc: Exception) -> str:
    """A failed run's error, for `memory pass show` and the reply: a file's error names the
    file and says what happened, others as Python writes them."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    if isinstance(exc, MemorydError):
        return exc.message
    return repr(exc)


def _slice(steps: Generator[Any, Any, Any], value: Any,
           longest: LongestStep) -> tuple[bool, Any]:
    """Advance a pass for up to SLICE_S on the database thread: (finished, what it yielded).
    A single step (from one yield to the next) over STEP_WARN_S is logged at debug level with
    where it began and ended: the place to add a yield."""
    deadline = time.perf_counter() + SLICE_S
    try:
        while True:
            began, cpu, here = time.perf_counter(), time.thread_time(), _position(steps)
            step = steps.send(value)
            now = time.perf_counter()
            if now - began > longest.seconds:
                longest.seconds, longest.cpu = now - began, time.thread_time() - cpu
                longest.began, longest.ended = _place(here), _place(_position(steps))
            if now - began > STEP_WARN_S:
                log.debug("A pass step took %.0f ms, from %s to %s.", (now - began) * 1000,
                          _place(here), _place(_position(steps)))
            value = None
            if isinstance(step, Offload | Collect) or now >= deadline:
                return False, step
    except StopIteration:
        return True, None


def _position(steps: Generator[Any, Any, Any]) -> tuple[str, int] | None:
    """The innermost generator's file and line (a pass delegates with ``yield from``); read
    before every step, so kept cheap (formatting it with pathlib was ~4 % of the database
    thread's time in the notebook pass): :func:`_place` writes it out."""
    inner = steps
    while isinstance(nested := getattr(inner, "gi_yieldfrom", None), Generator):
        inner = nested
    frame = getattr(inner, "gi_frame", None)  # typing's Generator does not name it
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def _place(position: tuple[str, int] | None) -> str:
    """``file.py:line`` of a :func:`_position`."""
    return "(finished)" if position is None else f"{os.path.basename(position[0])}:{position[1]}"


def _undone_since(undos: list[tuple[str, str]]) -> str:
    """What became of an undone change since (its ``undos``): "undone by r4, applied again
    by r5"."""
    return ", ".join(f"{'undone' if n % 2 == 0 else 'applied again'} by {run}"
                     for n, (run, _) in enumerate(undos))


def _proposal_undo(target: str, proposal: dict[str, Any]) -> str:
    """Why `memory undo` of a proposal does nothing, and what does: a proposal writes nothing
    itself; its acceptance is a run of its own."""
    if proposal["state"] == "accepted" and proposal.get("accepted_by"):
        return (f"{target} is a proposal: {_not_open(proposal)}"
                + ("" if proposal.get("undos") else
                   f"; memory undo {proposal['accepted_by']} takes it back"))
    return (f"{target} is a proposal, {proposal['state']}: nothing of it was written to undo"
            + (f" (memory promote accept {target} writes it)"
               if proposal["state"] == "proposed" else ""))


def _nothing_to_undo(target: str, changes: list[dict[str, Any]]) -> str:
    """Why a run has nothing to undo, and where its changes are: an undo of its undo applied
    them again (that run takes them back), or an undo took them back."""
    undone = [c["undos"] for c in changes if c["state"] == "undone" and c.get("undos")]
    again = sorted({undos[-1][0] for undos in undone if len(undos) % 2 == 0},
                   key=lambda run: int(run[1:]))
    if again:
        history = _undone_since(next(u for u in undone if len(u) % 2 == 0))
        return (f"{target}: nothing to undo in it: its changes were {history}; "
                f"memory undo {again[-1]} takes them back")
    if undone:
        return f"{target}: nothing to undo: it was {_undone_since(undone[0])}"
    return f"{target}: nothing to undo (no applied change)"


def _undo(ctx: PassContext, changes: list[dict[str, Any]]) -> Steps[None]:
    """Take changes back, newest first; a group of file changes goes back as a group."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for change in reversed(changes):
        groups.setdefault(change.get("group") or change["change"], []).append(change)
    for position, group in enumerate(groups.values()):
        ctx.progress("undoing", position, len(groups))
        yield
        inverses = [ctx.runs.inverse(change) for change in group]
        numbers = [int(change["change"][1:]) for change in group]
        if group[0]["kind"] == "file":
            state = _undo_files(ctx, inverses, numbers)
            if state is None:
                continue
        else:
            kept = merge_undo.replaced_since(ctx.store, group[0])
            if kept is not None:  # the user's later act stands: said, and left applied
                _keep(ctx, group[0], kept)
                continue
            state = ctx.runs.apply(ctx.run, inverses[0], numbers[0])
            ctx.count(state)
            if state == "applied" and group[0]["action"] == "merge":
                # its survivor merged on since: what the merge brought goes from there too
                for change in merge_undo.recounted(ctx.store, group[0]):
                    ctx.apply(change)
        if state == "applied":
            for number in numbers:
                ctx.runs.set_state(number, "undone")


#: An undo's count of the changes it left applied, as what they merged into was replaced by a
#: person since (merge_undo.replaced_since).
KEPT = "kept"


def _keep(ctx: PassContext, change: dict[str, Any], fate: tuple[str, str]) -> None:
    """A change an undo leaves as it is (see :data:`KEPT`; ``fate``: what became of the entry
    it merged into): counted, recorded (`memory pass show` of the undo lists it) and said in
    the undo's reply."""
    target, (survivor, became) = change["target"], fate
    merged_into = "it was merged into" \
        if survivor == (change["after"] or {}).get("superseded_by") else "it lives on in"
    said = (f"{change['change']}: {target} stays superseded: {survivor}, which "
            f"{merged_into}, {became}; undone, it would be active again beside what "
            f"replaced that (memory history {survivor})"
            if change["action"] == "supersede" else
            f"{change['change']}: {target} keeps what the merge counted: "
            f"{'it' if survivor == target else f'{survivor}, which it lives on in,'} {became}")
    ctx.count(KEPT)
    ctx.runs.note(ctx.run, Change("problem", change["target"], KEPT, said), "reported")
    ctx.run.kept.append(said)


def _undo_files(ctx: PassContext, inverses: list[Change], numbers: list[int]) -> str | None:
    """A group of file changes taken back: written (the file renamed since followed), or left
    alone in a conflict (a later run's change of the file named, to be undone first). None:
    the files hold what the undo writes already (the forgotten line put back by hand, a
    stale buffer saved): nothing is written, the entries are as the files have them, and the
    changes are undone."""
    inverses = [rebased(change) for change in followed_renames(inverses, ctx.store.moved_to)]
    if all(holds(change.target, change.after) for change in inverses):
        for change in inverses:
            ctx.runs.move_entries((change.after or {}).get("entries", {}), changed_only=True)
        for number in numbers:
            ctx.runs.set_state(number, "undone")
        ctx.count(ALREADY_UNDONE, len(inverses))
        return None
    ctx.hold(inverses)
    state = ctx.runs.apply_files(ctx.run, inverses, numbers)
    for change in inverses:  # as written, or as left: a conflict moved no entry back
        ctx.index_written(change)
    ctx.files_done(inverses, state)
    if state == "conflict":  # a later run's change of the file: to be undone first
        for change, number in zip(inverses, numbers):
            later = ctx.store.runs.later_runs(change.target, number)
            if later and change.target in ctx.run.changed:
                ctx.run.later[change.target] = [run_name(run) for run in later]
    return state


def counts_for_schedule(last: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """Whether a pass's last run over everything puts its next one off: not one a stop or a
    crash interrupted (its work is half done: the schedule would have left the rest for a
    day), which the next scheduled run takes up again."""
    return last is not None and last.get("status") != "interrupted"
