"""A change of a file: made from the text it was computed from (:func:`file_change`), written
by compare-and-swap, a group's files all or none (:func:`swap_files`, :func:`swap_groups`), put
back when a stopped run is settled (:func:`settle_file`), and an undo's change made to the file
as it is now, keeping the edits made since (:func:`rebased`). None of it needs the database: a
pass may run it on a worker thread. :mod:`memoryd.passes.runs` records the changes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from memoryd.passes.carry_edit import carry_edit
from memoryd.passes.changes import Change
from memoryd.passes.file_care import NotWritten, is_file_error, not_written
from memoryd.passes.user_files import FileText, remove_if_unchanged, replace_if_unchanged
from memoryd.regular_file import read_regular
from memoryd.scheduling import give_way
from memoryd.store.durable import fsync_directory

log = logging.getLogger(__name__)


def still_holds(change: Change) -> bool:
    """Whether the file of ``change`` is as the change found it (its ``before``; None: there
    is no file): after a group's conflict, the files that were not changed since, held back
    with the one that was (a notebook and its archive go together)."""
    try:
        current = read_regular(change.target)
    except FileNotFoundError:
        return change.before is None
    except OSError:
        return False
    return change.before is not None and current == side_bytes(change.before)


def is_gone(change: Change) -> bool:
    """Whether the file ``change`` found is no longer there (renamed or deleted since)."""
    return change.before is not None and not os.path.lexists(change.target)


def rebased(change: Change) -> Change:
    """An undo's file change made to the file as it is now. An undo puts back the text a run
    replaced; when the file was edited since the run wrote it (an agent's new line in the
    notebook), the undo is made to the edited text instead, keeping the edit — if the two are
    apart: the undo carried onto the edited text and the edit carried onto the undone text
    (:func:`~memoryd.passes.carry_edit.carry_edit`) must give the same text; lines appended at
    the end since stay after what the undo puts back at the end. Otherwise, or when the file
    is gone, the change is returned as it was, and its compare-and-swap finds a conflict. An
    undo that removes a file the run created keeps what was written into it since (a later
    run's archived lines): it removes only this run's lines, and the file when nothing else
    is left."""
    if change.kind != "file" or change.before is None:
        return change
    try:
        current = read_regular(change.target)
    except OSError:
        return change
    written = side_bytes(change.before)
    if current == written:
        return change
    undone = side_bytes(change.after) if change.after is not None else b""
    merged = carry_edit(written, undone, current)
    # lines appended at the end since stay after the lines the undo puts back there
    if merged is None or merged != carry_edit(written, current, undone, appended_last=True):
        return change
    before = {**change.before, "text": current.decode("utf-8", "surrogateescape")}
    if change.after is None and not merged:
        return replace(change, before=before)
    return replace(change, before=before, after={
        **(change.after or {"entries": {}}), "text": merged.decode("utf-8", "surrogateescape")})


def followed_renames(changes: list[Change],
                     moved_to: Callable[[str], str | None]) -> list[Change]:
    """An undo's file changes made to where their files are now: a file renamed since the run
    (``moved_to``: where the watcher saw a path renamed to; the file keeps its entries and
    history there) is undone under its new name, its entries' source with it. A file gone
    otherwise, or renamed too lately for the watcher to have seen it, stays where it was: its
    compare-and-swap finds it gone."""
    renamed: dict[str, str] = {}
    for change in changes:
        if change.kind != "file" or change.before is None or os.path.lexists(change.target):
            continue
        path: str | None = change.target
        for _ in range(MAX_RENAMES):  # renamed again, and again
            path = moved_to(path) if path is not None else None
            if path is None or os.path.lexists(path):
                break
        if path is not None and os.path.lexists(path):
            renamed[change.target] = path
    if not renamed:
        return changes
    return [replace(change, target=renamed.get(change.target, change.target),
                    before=_renamed_sources(change.before, renamed),
                    after=_renamed_sources(change.after, renamed)) for change in changes]


#: How many renames of one file an undo follows.
MAX_RENAMES = 20


def _renamed_sources(side: dict[str, Any] | None,
                     renamed: dict[str, str]) -> dict[str, Any] | None:
    """A file change's side with its entries' sources renamed."""
    if side is None:
        return None
    moved: dict[str, Any] = {}
    for key in ("entries", "entries_before"):
        if key in side:
            moved[key] = {uid: {**fields, "source": renamed.get(fields["source"],
                                                                 fields["source"])}
                          if isinstance(fields.get("source"), str) else fields
                          for uid, fields in side[key].items()}
    return {**side, **moved}


def settle_file(fn: Any, path: Path, *args: Any) -> None:
    """``fn(path, *args)``, putting a file back as a change had it: what cannot be done is
    logged, and the rest goes on (settling a group, taking back a part-written one)."""
    try:
        fn(path, *args)
    except OSError as exc:
        log.warning("%s: could not be put back as its change has it (%s); left as it is",
                    path, exc.strerror or exc)


def holds(target: str, side: dict[str, Any] | None) -> bool:
    """Whether the file holds this side of a change (None: does not exist)."""
    path = Path(target)
    if side is None:
        return not path.exists()
    try:
        return read_regular(path) == side_bytes(side)
    except OSError:
        return False


def swap_files(changes: list[Change], renamed_in: set[Path] | None = None, *,
               sync: Callable[[], None] | None = None) -> bool:
    """Write a group's files by compare-and-swap, all or none: when one changed meanwhile,
    the ones written already are put back and False is returned. Needs no database (a pass
    may run it on a worker thread). With ``renamed_in``, the directories whose names changed
    are collected there for the caller to fsync (see :func:`replace_if_unchanged`); ``sync``
    makes the run log's pending lines durable first (a power loss then leaves the
    change recorded pending, which the next start settles, even after a rebuild)."""
    if sync is not None:
        sync()
    written: list[Change] = []
    for change in changes:
        try:
            swapped = swap(Path(change.target), change.before, change.after, renamed_in)
        except OSError:  # what was written goes back (settle does it, should this fail)
            for done in reversed(written):
                settle_file(swap, Path(done.target), done.after, done.before, renamed_in)
            raise
        if not swapped:
            for done in reversed(written):
                swap(Path(done.target), done.after, done.before, renamed_in)
            return False
        written.append(change)
    return True


def swap_groups(groups: list[list[Change]], sync: Callable[[], None] | None = None,
                state_dir: Path | None = None) -> list[bool | NotWritten]:
    """:func:`swap_files` for each group, in order; each directory is fsynced once at the end
    (a notebook pass writes a thousand files into a few directories), before any group is
    reported written. A group with a file that may not or cannot be rewritten is skipped:
    its place holds why (see :func:`~memoryd.passes.file_care.is_file_error`: a full disk
    other than ``state_dir``'s too); the others are written. ``sync``: as swap_files', once
    before the first file."""
    if sync is not None:
        sync()
    renamed_in: set[Path] = set()
    written: list[bool | NotWritten] = []
    for changes in groups:
        give_way()
        try:
            written.append(swap_files(changes, renamed_in))
        except OSError as exc:
            if not is_file_error(exc, changes[0].target, state_dir):
                if exc.filename is None:  # (a write's error names no file) the run's says it
                    exc.filename = changes[0].target
                raise
            written.append(not_written(exc, changes[0].target))
    for directory in sorted(renamed_in):
        fsync_directory(directory)
    return written


def swap(path: Path, old: dict[str, Any] | None, new: dict[str, Any] | None,
         renamed_in: set[Path] | None = None) -> bool:
    """Compare-and-swap a file from one side of a change to the other."""
    expected = side_bytes(old) if old is not None else None
    if new is None:
        return expected is not None and remove_if_unchanged(path, expected, renamed_in)
    return replace_if_unchanged(path, expected, side_bytes(new), renamed_in=renamed_in)


def file_change(path: Path, basis: FileText | None, new_text: str | None, action: str,
                why: str, moves: dict[str, dict[str, Any]] | None = None,
                moves_before: dict[str, dict[str, Any]] | None = None) -> Change | None:
    """A change of a file from ``basis`` — the text the new one was computed from, as read
    (None: the file did not exist) — to ``new_text`` (None: removed), in the file's own
    conventions; None when nothing would change. The write is a compare-and-swap against the
    basis, so an edit made since it was read is never overwritten."""
    if basis is not None:
        before: dict[str, Any] | None = {"text": basis.data.decode("utf-8", "surrogateescape")}
        data = basis.encode(new_text) if new_text is not None else None
        if data == basis.data:
            return None
    else:
        before, data = None, None if new_text is None else new_text.encode("utf-8")
        if data is None:
            return None
    after = None if data is None else {"text": data.decode("utf-8", "surrogateescape"),
                                       "entries": moves or {}, "entries_before": moves_before or {}}
    return Change("file", str(path), action, why, before, after)


def side_bytes(side: dict[str, Any]) -> bytes:
    return side["text"].encode("utf-8", "surrogateescape")
