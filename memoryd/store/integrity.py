"""The index's integrity: a check before it is used, and what happens when it fails.

The database is an index that the ledgers, the transcript archives and the watched files rebuild
(``memoryd.maintenance.rebuild``). So a database that fails ``PRAGMA quick_check`` (or cannot
be opened as a database at all) is never served: at start the daemon moves it aside, to
``memoryd.db.corrupt-<UTC time>`` (never over ``memoryd.db.bak``, the last good copy a reindex
kept), opens a new one and rebuilds it — the archives and the ledgers at once, the watched files
as the watcher's first scan indexes them — and logs a line saying so.

A rebuild (``memoryd reindex``) builds its new database beside the old one and swaps them only
when it is done, so a reindex killed half-way and run again never puts a half-built copy over
the good backup; what it left is removed at the next start (:func:`discard_unfinished`).

``memory doctor`` runs ``PRAGMA quick_check`` on a reader of its own (memoryd.server.health_store).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import apsw

from memoryd.store.fetch import integer

log = logging.getLogger(__name__)

#: A database's files: itself, its WAL and shared memory, and the rollback journal it has
#: before WAL mode is set (a reindex killed in its first moments leaves one beside its new
#: index, which would be played back into the next one)
SUFFIXES = ("", "-wal", "-shm", "-journal")


def damage(path: Path) -> list[str]:
    """The database's damage (``quick_check`` findings, a file that is not a database; ``[]``:
    fine, or no file). An error that says nothing about the file's content (cannot open it:
    permissions, a missing directory) is none: at start it is the store's startup error."""
    if not path.exists():
        return []
    try:
        db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            rows = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
        finally:
            db.close()
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        return [f"{type(exc).__name__}: {exc}"]
    except apsw.Error:
        return []
    return [] if rows == ["ok"] else rows


def move_aside(path: Path, suffix: str, target: Path | None = None) -> Path:
    """Rename the database and its WAL files to ``<name><suffix>`` (or to ``target``); returns
    the new path."""
    target = target or path.with_name(path.name + suffix)
    for extra in SUFFIXES:
        source = path.with_name(path.name + extra)
        destination = target.with_name(target.name + extra)
        if source.exists():
            source.replace(destination)
        elif extra:
            destination.unlink(missing_ok=True)
    return target


def backup(path: Path) -> Path:
    """The index a reindex replaced, kept beside ``path`` (``memoryd.db.bak``)."""
    return path.with_name(path.name + ".bak")


def copies(path: Path) -> list[Path]:
    """The older copies of the index beside ``path``: the one a reindex replaced
    (:func:`backup`) and those that failed their integrity check
    (``memoryd.db.corrupt-<time>``), each without its WAL files."""
    found = [p for p in path.parent.glob(path.name + ".corrupt-*")
             if not p.name.endswith(SUFFIXES[1:])]
    if backup(path).exists():
        found.append(backup(path))
    return sorted(found)


def used_bytes(path: Path) -> int:
    """The bytes of the database's pages that hold something (its free pages left out): about
    what a rebuild of it takes again. 0 when there is none; its file's size when it cannot be
    read (on a full disk a reader cannot make its shared-memory file)."""
    try:
        whole = path.stat().st_size
    except OSError:
        return 0
    try:
        db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            pages, free, size = (integer(db, f"PRAGMA {name}")
                                 for name in ("page_count", "freelist_count", "page_size"))
        finally:
            db.close()
    except apsw.Error:
        return whole
    return (pages - free) * size


def discard(path: Path) -> None:
    for extra in SUFFIXES:
        path.with_name(path.name + extra).unlink(missing_ok=True)


def building(path: Path) -> Path:
    """Where a reindex builds the new index beside ``path`` (``memoryd.db.new``)."""
    return path.with_name(path.name + ".new")


def discard_unfinished(path: Path) -> int:
    """Remove what a reindex killed half-way left (``memoryd.db.new`` and its WAL files):
    at start, with the state dir's lock held, which a running reindex holds too, so no
    reindex is building it. Returns the bytes given back (0: there was none)."""
    new = building(path)
    files = [new.with_name(new.name + extra) for extra in SUFFIXES]
    size = sum(f.stat().st_size for f in files if f.exists())
    if not any(f.exists() for f in files):
        return 0
    discard(new)
    log.warning("Removed %s (%.1f MB with its WAL), the unfinished index of a reindex that was "
                "stopped half-way; the index in use was never touched by it.", new, size / 1e6)
    return size


def corrupt_suffix() -> str:
    return ".corrupt-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def set_aside_damaged(path: Path) -> bool:
    """At start: check the database; a damaged one is moved aside and logged. Returns True when
    it was (the caller then rebuilds into a new database)."""
    started = time.monotonic()
    problems = damage(path)
    if not problems:
        log.debug("Database integrity check passed in %.2f s.", time.monotonic() - started)
        return False
    moved = move_aside(path, corrupt_suffix())
    log.error("Database %s failed its integrity check (%s); moved it to %s and rebuilding the "
              "index from the ledgers, the transcript archives and the watched files.",
              path, "; ".join(problems[:3]), moved.name)
    return True
