"""The notebook pass (seed 001): each notebook held to its line cap, in order, nothing lost.

A notebook is a memory file with sections named Mistakes, Learnings, (Shareholder) Feedback or
Session Log (``## `` headings). The pass:

- **normalises** what seed 001's ``check --fix`` normalises: the sections in that order (other
  sections after them, as they were), date prefixes written ``[YYYY-MM-DD]`` (``[2026-3-5]``,
  ``2026-03-05:`` are rewritten), bullets newest first (undated ones stay on top, as written);
- takes out **repeated lessons**: an older Mistakes or Learnings bullet that says what a newer
  one in its section says (seed 003: one lesson in several phrasings; cosine ≥ 0.92 or words
  alike) goes to the archive, the newest copy stays. Its entry stays searchable there and
  still counts as a sighting of the lesson for promotion;
- holds the file to its **cap** (``passes.notebook_lines``, 80 lines; a source's own
  ``notebook_lines`` wins): the oldest Session Log bullets go first, then the oldest Learnings
  and Mistakes that are kept elsewhere (promoted to a governance file, or with the same text in
  another entry of the agent); Feedback is never pruned;
- moves pruned lines to **long-term storage**: ``archive/<notebook name>`` beside the notebook,
  under a dated heading naming the run. The archive is watched and searchable like any memory
  file, and never injected into the memory block. The pruned lines' entries move with them (same
  ids, same history);
- **reports** what it cannot fix: bullets without a date, a notebook still over its cap after
  every allowed prune, a section it does not reorder (it has sub-headings, text or a comment
  between its bullets, or it is a numbered list).

A notebook a merge has not finished with (conflict markers in it, or unmerged in git) or that
may still be being written (changed in the last 2 s, or ending mid-line and changed in the last
minute) is left as it is, and reported: memoryd.passes.unsettled.

Pinned files (CONTEXT.md, system/) and archives are not notebooks. What is done to a
notebook's text is memoryd.passes.notebook_text; this module runs it over the store: reading,
the changes, the writes, and indexing what it wrote.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.errors import BadParamsError
from memoryd.ingest.markdown import MemoryFile, is_pinned, parse_memory_file
from memoryd.passes.api import Collect, Offload
from memoryd.passes.changes import Change
from memoryd.passes.file_care import NotWritten
from memoryd.passes.file_changes import file_change, swap_groups
from memoryd.passes.notebook_text import (
    DEDUPED,
    Item,
    Notebook,
    archive_text,
    is_notebook,
    normalise,
    parse,
    prune,
    repeats,
)
from memoryd.passes.unsettled import Unmerged, unmerged_why, why_unsettled
from memoryd.passes.user_files import FileText, read_text
from memoryd.sources import ARCHIVE_DIR
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext, Steps
    from memoryd.store.database import Store

#: Notebooks whose files are written in one hand-off to a worker thread.
WRITE_BATCH = 25
#: Entries moved (to the archive, or re-dated) per step.
MOVES = 10
#: Moving items hashed per step (redacting their text first: ~0.2 ms an item).
HASHES = 16
#: A notebook this long (characters) is parsed, ordered, pruned and rendered off the database
#: thread, and its entries read a page (ROWS_AT_ONCE) a step.
BIG_TEXT = 64_000
ROWS_AT_ONCE = 1_000


def graduate(ctx: PassContext, path: str, uids: set[str], rule_file: Path) -> list[Change]:
    """The changes that move a promoted lesson's bullets (its entries among ``uids``) out of a
    notebook into its archive — seed 001: "Memory entries that graduate to CLAUDE.md get
    deleted from the memory file — keeping both creates noise"; here moved, never deleted —
    the archive's change and the notebook's, or none when the notebook no longer holds them
    as the index read it."""
    notebook_path = Path(path)
    try:
        current = read_text(notebook_path)
    except OSError:
        return []
    if not is_notebook(current.text):
        return []
    why = _unsettled(current, ctx.config.passes.settle_s)
    if why is not None:
        ctx.report(path, f"promoted lessons not moved to the archive: {why}")
        return []
    notebook = parse(current.text, notebook_path.name)
    entries = _file_entries(ctx, path)
    removed: list[tuple[str, Item]] = []
    for section in notebook.sections:
        for item in [i for i in section.items
                     if (entry := _entry_of(entries, i)) is not None and entry[1] in uids]:
            section.items.remove(item)
            removed.append((section.name or "", item))
    archived = _archived(notebook_path, ctx.run_name, removed, time.time()) if removed else None
    if archived is None:
        return []
    ctx.count("graduated", len(removed))
    why = f"{len(removed)} bullets graduated to {rule_file} as a rule: moved to the archive"
    return _file_changes(ctx, notebook_path, current, notebook.render(), archived,
                         _moving(removed, archived[0]), "graduate", why, why)


def _unsettled(current: FileText, settle_s: float, now: float | None = None) -> str | None:
    """Why a notebook read as ``current`` is left for a later run (see
    memoryd.passes.unsettled), without asking git."""
    try:
        mtime = os.stat(current.path).st_mtime
    except OSError:
        mtime = 0.0
    return why_unsettled(current.text, mtime, time.time() if now is None else now, settle_s)


def _archived(path: Path, run_name: str, removed: list[tuple[str, Item]],
              when: float) -> tuple[Path, FileText | None, str] | None:
    """The notebook's archive with a new block of ``removed``: its path, the file as read
    (None: no archive yet) and its new text; None when it cannot be read."""
    archive = path.parent / ARCHIVE_DIR / path.name
    try:
        basis = read_text(archive) if archive.exists() else None
    except OSError:
        return None
    return archive, basis, archive_text(basis.text if basis else None, path.name, run_name,
                                        removed, when)


def _moving(removed: list[tuple[str, Item]], archive: Path) -> dict[tuple[str, int],
                                                                     dict[str, Any]]:
    """The entry updates of items moved to the archive, for :meth:`PassContext.entry_updates`."""
    return {(item.hash, item.line): {"source": str(archive), "line_start": None,
                                     "line_end": None, **(item.rewritten or {})}
            for _, item in removed}


def _file_changes(ctx: PassContext, path: Path, current: FileText, text: str,
                  archived: tuple[Path, FileText | None, str] | None,
                  updates: dict[tuple[str, int], dict[str, Any]], action: str, why: str,
                  archive_why: str, rows: list[StoredEntry] | None = None) -> list[Change]:
    """A notebook's change (carrying the entries that move or change with it: it exists
    before and after, so its undo moves them back) and its archive's, when lines moved."""
    changes = []
    if archived is not None:
        changes.append(file_change(archived[0], archived[1], archived[2], "archive",
                                   archive_why))
    changes.append(file_change(path, current, text, action, why,
                               *ctx.entry_updates(str(path), updates, rows)))
    return [c for c in changes if c is not None]


def _file_entries(ctx: PassContext, path: str) -> dict[int, tuple[int, str, str]]:
    """A notebook's active entries by the line they start on, as the index last read it:
    (rowid, uid, text)."""
    return {e["line_start"]: (e["id"], e["uid"], e["text"]) for e in ctx.store.entry_fields(
        EntryQuery().source(path).active(), ("id", "uid", "line_start", "text"))}


def _entry_of(entries: dict[int, tuple[int, str, str]],
              item: Item) -> tuple[int, str, str] | None:
    """The item's entry: the one on its line, with its text (else the file changed since)."""
    entry = entries.get(item.line)
    return entry if entry is not None and entry[2] == item.text else None


def notebooks(ctx: PassContext) -> list[dict[str, Any]]:
    """The notebook files in the pass's scope: path, agent, source (``--project``: the files
    under the project's directory, such as its ``agents/state/memory/``). A notebook memoryd
    could not read cleanly (bytes that are not UTF-8, …) is left as it is, and reported."""
    found = []
    for path, agent, source, error in ctx.store.files.notebooks(ctx.agent, ctx.project):
        if f"/{ARCHIVE_DIR}/" in path or is_pinned(path):
            continue
        if ctx.paths is not None and path not in ctx.paths:
            continue
        if error is not None:
            if _is_notebook_file(Path(path)):
                ctx.report(path, f"not checked: memoryd could not read it cleanly ({error}); "
                                 "fix the file and the next run checks it")
            continue
        found.append({"path": path, "agent": agent, "source": source})
    return found


def _is_notebook_file(path: Path) -> bool:
    try:
        return is_notebook(read_text(path).text)
    except OSError:
        return False


def checked_paths(files: list[tuple[str, bool, str | None]], target: Path) -> list[str]:
    """The watched files `memory notebook check TARGET` means: the one TARGET names (through
    symlinks, as the watcher recorded it), or those under a directory, whose notebooks the pass
    then checks. A file that is not a notebook is refused with the reason, instead of a check
    that found "nothing to do". (Off the database thread: it resolves every watched path.)"""
    real = os.path.realpath(target)
    if target.is_dir():
        under = real.rstrip("/") + "/"
        paths = [path for path, _, _ in files if os.path.realpath(path).startswith(under)]
        if not paths:
            raise BadParamsError(f"{target}: no memory file memoryd watches is under it")
        return paths
    for path, pinned, error in files:
        if os.path.realpath(path) == real:
            why = not_a_notebook(Path(path), pinned, error)
            if why is not None:
                raise BadParamsError(f"{target}: {why}")
            return [path]
    raise BadParamsError(f"{target}: not a memory file memoryd watches (see memory sources list)")


def not_a_notebook(path: Path, pinned: bool, error: str | None) -> str | None:
    """Why a watched memory file is not a notebook the pass would check (None: it is one)."""
    if error:
        return f"memoryd could not read it: {error}"
    if pinned or is_pinned(str(path)):
        return "a pinned file (CONTEXT.md, system/), injected whole: not a notebook"
    if f"/{ARCHIVE_DIR}/" in str(path):
        return "an archive of pruned lines, not a notebook"
    try:
        text = read_text(path).text
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if not is_notebook(text):
        return ("not a notebook: it has no ## Mistakes, Learnings, Shareholder Feedback or "
                "Session Log section")
    return None


#: A notebook's file changes pending, their change numbers, and its new text as known.
Written = tuple[list[Change], list[int], "Known | None"]


@dataclass
class Plan:
    """What the pass will do to one notebook."""

    current: FileText
    notebook: Notebook
    fixed: list[str]
    removed: list[tuple[str, Item]]  # the repeated lessons first, then what the cap pruned
    repeated: int
    archived: tuple[Path, FileText | None, str] | None  # see _archived
    text: str = ""  # the notebook's new text
    parsed: MemoryFile | None = None  # … as the indexer reads it


def plan(path: Path, cap: int, kept_elsewhere: Callable[[], set[str]],
         vectors: Callable[[list[Item]], list[np.ndarray | None]], threshold: float,
         run_name: str, when: float, settle_s: float = 0.0,
         unmerged: Unmerged | None = None) -> Generator[Any, Any, Plan | None]:
    """Read, parse, normalise, take out repeated lessons and prune one notebook (None: not a
    notebook, or unreadable), with a slice point between (a notebook over its cap took up to
    20 ms in one step). A notebook of BIG_TEXT characters or more is parsed, pruned and
    rendered off the database thread (each is one pass over the whole text: 2 MB took a
    quarter of a second), its hashes and vectors read a page a step. One a merge or a writer
    is not done with is left as it is, its plan saying why (``settle_s``: passes.settle_s;
    ``unmerged``: what git says, asked off the database thread once per repository)."""
    try:
        current = read_text(path)
    except OSError:
        return None
    if not is_notebook(current.text):
        return None
    why = _unsettled(current, settle_s, when)
    if why is None and unmerged is not None:
        repository = unmerged.repository(current.path)
        if repository is not None:
            if not unmerged.known(repository):
                yield Offload(unmerged.read, (repository,))
            if unmerged.holds(repository, current.path):
                why = unmerged_why()
    if why is not None:
        return Plan(current, Notebook([], [], [why]), [], [], 0, None)
    big = len(current.text) >= BIG_TEXT
    notebook = (yield Offload(parse, (current.text, path.name))) if big \
        else parse(current.text, path.name)
    yield
    fixed = (yield Offload(normalise, (notebook,))) if big else normalise(notebook)
    yield
    repeated = yield from repeats(notebook, vectors, threshold)
    yield
    if big:
        pruned = yield from _pruned_apart(notebook, cap, kept_elsewhere)
    else:
        pruned = prune(notebook, cap, kept_elsewhere)
    removed = repeated + pruned
    for start in range(0, len(removed), HASHES):  # what moves is found by its hash
        yield
        for _, item in removed[start:start + HASHES]:
            item.hash  # noqa: B018 (computed now, kept)
    archived = _archived(path, run_name, removed, when) if removed else None
    if removed and archived is None:
        return None
    if not fixed and not removed:
        return Plan(current, notebook, fixed, removed, 0, None)
    yield
    text, parsed = (yield Offload(_rendered, (notebook, path.name))) if big \
        else _rendered(notebook, path.name)
    yield
    if [(i.text, i.heading) for i in parsed.items] != notebook.entries():
        notebook.problems.append("its entries would not stay apart, or not under their "
                                 "headings, if it were rewritten: left as it is")
        return Plan(current, notebook, [], [], 0, None)
    return Plan(current, notebook, fixed, removed, len(repeated), archived, text, parsed)


def _rendered(notebook: Notebook, name: str) -> tuple[str, MemoryFile]:
    """A notebook's new text, and the text as the indexer will read it."""
    text = notebook.render()
    return text, parse_memory_file(text, name)


def _pruned_apart(notebook: Notebook, cap: int,
                  kept_elsewhere: Callable[[], set[str]]) -> Generator[Any, Any, list[Any]]:
    """:func:`prune` of a big notebook off the database thread: what is kept elsewhere read
    here first (its query, and the bullets' hashes HASHES a step), if the notebook is over
    its cap at all."""
    if not (yield Offload(notebook.lines)) > cap:
        return []
    bullets = [i for s in notebook.sections if s.name in DEDUPED for i in s.items if i.bullet]
    for start in range(0, len(bullets), HASHES):
        yield
        for item in bullets[start:start + HASHES]:
            item.hash  # noqa: B018 (computed now, kept)
    yield
    elsewhere = kept_elsewhere()
    return (yield Offload(prune, (notebook, cap, lambda: elsewhere)))


def notebook_cap(ctx: PassContext, source: str | None) -> int:
    """The lines a notebook of this source may hold (the source's own cap, else the pass's)."""
    for configured in ctx.config.sources:
        if configured.name == source and configured.notebook_lines:
            return configured.notebook_lines
    return ctx.config.passes.notebook_lines


def kept_elsewhere(ctx: PassContext, promoted: Callable[[], set[str]], agent: str,
                   path: str) -> set[str]:
    """Hashes of this file's entries whose text is also kept somewhere else: a rule in a
    governance file speaks for them (``promoted``: the uids of those lessons), or another
    entry of the agent has the same text (long-term memory)."""
    kept = ctx.store.hashes_kept_elsewhere(path, agent)
    uids = promoted()
    hashes = [e["hash"] for e in ctx.store.entry_fields(EntryQuery().source(path),
                                                         ("uid", "hash")) if e["uid"] in uids]
    return kept | set(hashes)


def run(ctx: PassContext, promoted: Callable[[Store], set[str]]) -> Steps[None]:
    """One notebook a step on the database thread (reading and parsing one is ~1 ms), its
    changes recorded pending there; the files of WRITE_BATCH notebooks are then written in one
    hand-off to a worker thread, while the pass plans the next batch and the database thread
    serves requests. (A hand-off per notebook waited behind the queued requests each time,
    ~20 ms a notebook while searches ran; the writes on the database thread were half of the
    pass's time there; waiting for each batch's writes left the thread idle for a third.)
    ``promoted`` reads the lessons a promoted rule speaks for (memoryd.passes.promote): once,
    when a notebook over its cap first asks."""
    pending: list[Written] = []
    writing: tuple[list[Written], Any] | None = None
    promoted_once = functools.cache(functools.partial(promoted, ctx.store))
    unmerged = Unmerged()
    for found in notebooks(ctx):
        yield
        cap = notebook_cap(ctx, found["source"])
        # its entries as the index holds them, read once (if at all) for the vectors of its
        # lessons and for indexing what is written, before any of them moves
        entries = functools.cache(functools.partial(_file_entries, ctx, found["path"]))
        planned = yield from plan(
            Path(found["path"]), cap,
            functools.partial(kept_elsewhere, ctx, promoted_once, found["agent"], found["path"]),
            functools.partial(_vectors, ctx, entries),
            ctx.config.remember.near_duplicate_cosine, ctx.run_name, time.time(),
            ctx.config.passes.settle_s, unmerged)
        if planned is not None:
            yield
            rows = None
            if len(planned.current.text) >= BIG_TEXT and (planned.fixed or planned.removed):
                rows = yield from _entry_rows(ctx, found["path"])
            changes = _changes(ctx, found, planned, cap=cap, rows=rows)
            if changes:  # a big notebook's texts are a few MB to record: a step of its own
                yield
            numbers = ctx.runs.begin_files(ctx.run, changes) if changes else None
            if numbers is not None:
                yield
                known = _known(entries(), planned)
                for change in changes:  # an over-cap notebook moves dozens: a step per MOVES
                    moves = list((change.after or {}).get("entries", {}).items())
                    for start in range(0, len(moves), MOVES):
                        yield
                        ctx.runs.move_entries(dict(moves[start:start + MOVES]))
                ctx.hold(changes)
                pending.append((changes, numbers, known))
            elif changes:
                ctx.files_done(changes, "preview")
        if len(pending) >= WRITE_BATCH:
            if writing is not None:
                yield from _written(ctx, *writing)
            writing = pending, (yield _write(ctx, pending))
            pending = []
    if writing is not None:
        yield from _written(ctx, *writing)
    if pending:
        yield from _written(ctx, pending, (yield _write(ctx, pending)))


def _entry_rows(ctx: PassContext, path: str) -> Generator[None, None, list[StoredEntry]]:
    """A big notebook's entries, ROWS_AT_ONCE a step (9,500 at once took ~50 ms)."""
    rows: list[StoredEntry] = []
    last = 0
    while True:
        yield
        page = ctx.store.entries(EntryQuery().source(path).ids_after(last), "id", ROWS_AT_ONCE)
        rows += page
        if len(page) < ROWS_AT_ONCE:
            return rows
        last = page[-1].rowid


def _vectors(ctx: PassContext, held: Callable[[], dict[int, tuple[int, str, str]]],
             items: list[Item]) -> list[np.ndarray | None]:
    """The items' vectors: their entries' (by the line they start on, as the index last read
    the file, and the same text; ``held``: see :func:`_file_entries`) from the vector
    index; None where it has none."""
    index = ctx.index
    if index is None:
        return [None] * len(items)
    entries = held()
    rowids = [entry[0] if (entry := _entry_of(entries, i)) is not None else -1 for i in items]
    found = index.vectors_of([r for r in rowids if r >= 0])
    return [found.get(r) for r in rowids]


def _write(ctx: PassContext, pending: list[Written]) -> Any:
    return Offload(swap_groups, ([changes for changes, *_ in pending], ctx.runs.log.sync,
                                 ctx.runs.log.path.parent), wait=False)


def _written(ctx: PassContext, pending: list[Written], handle: Any) -> Steps[None]:
    """Record a batch's writes (applied, a conflict, or skipped: a notebook that may not or
    cannot be rewritten, reported with the reason, while the others are written) once they are
    done, and index the files written (the watcher, reading them, then finds them indexed)."""
    written = yield Collect(handle)
    for (changes, numbers, known), ok in zip(pending, written):
        yield
        if isinstance(ok, NotWritten):
            ctx.files_skipped(changes, numbers, ok)
        else:
            ctx.files_done(changes, ctx.runs.finish_files(changes, numbers, ok))
        for change in changes:
            yield
            if known is not None and change.after and change.after["text"] == known.text:
                ctx.index_written(change, known.parsed, known.rowids)
            else:  # its archive, or written with other line endings than parsed
                ctx.index_written(change)


@dataclass
class Known:
    """A notebook's new text, parsed, and the entries of its items (in order, as the index
    holds them before the pass moves any; None when one is not held as read, e.g. its text
    redacted)."""

    text: str
    parsed: MemoryFile
    rowids: list[int] | None


def _known(entries: dict[int, tuple[int, str, str]], planned: Plan) -> Known | None:
    if planned.parsed is None:
        return None
    kept = [item for section in planned.notebook.sections for item in section.items]
    leading = planned.parsed.items[:len(planned.parsed.items) - len(kept)]
    found = [entry if (entry := entries.get(i.line_start)) and entry[2] == i.text else None
             for i in leading] + [_entry_of(entries, item) for item in kept]
    rowids = [entry[0] for entry in found if entry is not None]
    return Known(planned.text, planned.parsed, rowids if len(rowids) == len(found) else None)


def _changes(ctx: PassContext, found: dict[str, Any], planned: Plan, *,
             cap: int, rows: list[StoredEntry] | None = None) -> list[Change]:
    """The file changes of one notebook's plan (none when it is in order and within its cap),
    with the entries that move with them."""
    path = Path(found["path"])
    ctx.count("notebooks")
    for problem in planned.notebook.problems:
        ctx.report(str(path), problem)
    fixed, removed = planned.fixed, planned.removed
    if not fixed and not removed:
        return []
    repeated, pruned = planned.repeated, len(removed) - planned.repeated
    why = "; ".join(fixed + ([f"{repeated} older {'copy' if repeated == 1 else 'copies'} of a "
                              "lesson written again moved to the archive"] if repeated else [])
                    + ([f"{pruned} bullets over the cap of {cap} lines moved to the archive"]
                       if pruned else []))
    updates = _moving(removed, planned.archived[0]) if planned.archived else {}
    updates.update({(item.hash, item.line): item.rewritten
                    for section in planned.notebook.sections for item in section.items
                    if item.rewritten})
    if pruned:
        ctx.count("pruned", pruned)
    if repeated:
        ctx.count("repeats", repeated)
    changes = _file_changes(ctx, path, planned.current, planned.text, planned.archived,
                            updates, "normalise" if not removed else "prune", why,
                            f"{len(removed)} bullets moved from {path.name}", rows)
    if fixed:
        ctx.count("normalised")
    return changes
