"""The retain pass: memoryd keeps its own copy of every transcript it indexed.

Agents delete old transcripts (Claude Code after 30 days by default), and ``memoryd reindex``
rebuilds the index from files. So before a transcript goes, its filtered exchanges go to the
agent's append-only archive (:mod:`memoryd.store.archive`): each run copies the transcript
entries that changed since the last run (a new exchange, an exchange that grew, a forget),
oldest first, and the archive restores them at start and at reindex.

- **Incremental**: a high-water mark in the database (``retain:mark``, the ``updated`` time and
  rowid of the last row copied) says where the next run starts; a run copies nothing a previous
  run copied unless it changed since. Rows changed after the run began wait for the next run.
- **Durable**: each archive is fsynced before the database records its new end and the mark
  moves, so a crash never loses a row; the start after it restores the members past the
  recorded end, and the next run does not copy those rows again.
- **Once**: a row a restore brought (a sync's from another machine's archive, or a start's)
  is in the archive already, though its ``updated`` may be past the mark; the copy skips it
  (``archived_turns``, :mod:`memoryd.store.archive`).
- **In slices**: rows are read a few hundred at a time on the database thread; turning them
  into JSON, compressing and writing happen off it (``Offload``). The copying itself is
  :func:`memoryd.store.archive.copy_changed`; this module runs it as a pass and records its changes.
- **Scope**: ``--agent`` or ``--project`` copies only those rows and leaves the mark where it
  is (a full run goes on from it). A dry run counts what it would copy and writes nothing.
- ``memoryd reindex`` does a full run on the old database before it sets it aside
  (:func:`memoryd.store.archive.archive_now`), so what no run had copied yet is not lost
  either.

- **The memory tools' file versions**: a full run also moves memory-file versions older than 30 days
  beyond the newest 20 of each file out of the database into ``history/<agent>.jsonl.gz``
  under the state dir (whole texts; :mod:`memoryd.store.file_versions`; the oldest kept
  version becomes a whole-text base). Counted as ``journal_versions_moved``. Each write's own
  record is in that archive already (:mod:`memoryd.store.file_history`); a rebuild of the index
  does not restore the versions moved, so they are never moved twice.

The run lists one change per archive (kind ``archive``, state ``archived``); an archive is
never undone.

- **Retention by use** (:mod:`memoryd.passes.unused`): every run also archives the lessons and
  notes unused for ``[outcomes] unused_days`` (status ``archived``: never deleted, never
  injected; one entry change each, which ``memory undo`` takes back).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.passes import unused
from memoryd.passes.api import Offload
from memoryd.passes.changes import Change
from memoryd.store.archive import AgentArchive, Appended, Work, copy_changed
from memoryd.store.file_versions import archive_records, drop, history_key, old_versions

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext, Steps


def run(ctx: PassContext) -> Steps[None]:
    def note_archive(done: Appended) -> None:
        why = f"{done.entries} transcript entries of {done.agent}"
        if ctx.dry_run:
            ctx.runs.note(ctx.run, Change("archive", done.path, "append", why,
                                          after={"entries": done.entries}), "preview")
            ctx.count("preview", done.entries)
            return
        ctx.runs.note(ctx.run, Change(
            "archive", done.path, "append", why,
            after={"entries": done.entries, "bytes": done.bytes, "offset": done.offset}),
            "archived")
        ctx.count("archived", done.entries)
        ctx.count("bytes", done.bytes)

    steps = copy_changed(ctx.store, AgentArchive(ctx.config.archive_dir), agent=ctx.agent,
                         project=ctx.project, dry_run=ctx.dry_run, on_append=note_archive)
    value: Any = None
    while True:
        try:
            step = steps.send(value)
        except StopIteration:
            break
        value = yield (Offload(step.fn, step.args) if isinstance(step, Work) else None)
    if ctx.agent is None and ctx.project is None:  # a full run also compacts the tools' versions
        yield from _move_old_versions(ctx)
    yield from unused.archive(ctx)  # and lessons and notes unused for long are set aside


def _move_old_versions(ctx: PassContext) -> Steps[None]:
    """The memory tools' old file versions, out of the database into the history archive
    (durably first: a crash in between archives a version twice, never loses one)."""
    old = []
    for item in old_versions(ctx.store):
        old.append(item)
        yield
    if not old:
        return
    ctx.count("journal_versions_moved", sum(len(item.events) for item in old))
    ctx.count("journal_bytes_freed", sum(item.bytes for item in old))
    if ctx.dry_run:
        return
    history = AgentArchive(ctx.config.history_dir)
    members = yield Offload(archive_records, (old,))
    for agent, data in members.items():
        known = ctx.store.meta(history_key(agent))  # where it ends: no reading it all again
        where = yield Offload(history.append, (agent, data, int(known) if known else None))
        ctx.store.set_meta(history_key(agent), str(where[1]))
        ctx.runs.note(ctx.run, Change(
            "archive", str(history.path(agent)), "append",
            f"old versions of {agent}'s memory files, moved out of the index",
            after={"versions": sum(len(i.events) for i in old if i.agent == agent),
                   "offset": where[0], "bytes": where[1] - where[0]}), "archived")
    for item in old:
        yield
        drop(ctx.store, item)
