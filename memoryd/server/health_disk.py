"""The checks of the state dir's disk and the work waiting on it (`memory doctor`, the health
line of `memory status`): room on its file system and what the state dir holds, the writes the
disk refused lately, and the backlog (entries waiting for a vector, files for indexing), stuck
or moving. memoryd.server.health runs the checks.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from memoryd_client.views import duration, size_text

from memoryd.ingest.watcher import Watcher
from memoryd.server.health_code import RESTART
from memoryd.server.health_words import OK, PROBLEM, WARNING, check
from memoryd.server.parts import Parts
from memoryd.server.refused import RefusedWrites
from memoryd.settings import Settings

#: Free space on the state dir's file system below which doctor warns, and below which a write
#: may fail soon (SQLite needs room for its WAL and a rebuild needs room for a second database).
DISK_WARNING_BYTES = 1 << 30
DISK_PROBLEM_BYTES = 100 << 20
#: A backlog (vectors, files) that has not moved for this long while there is work is stuck.
STUCK_S = 300.0


class DiskChecks:
    def __init__(self, settings: Settings, started: float, parts: Parts,
                 watcher: Watcher | None, refused: RefusedWrites) -> None:
        """``started``: when the daemon started; ``refused``: the writes the disk refused
        lately."""
        self.settings = settings
        self.started = started
        self.parts = parts
        self.watcher = watcher
        self.refused = refused

    def disk(self, sizes: bool = False) -> dict[str, Any]:
        """Room on the state dir's file system; ``sizes`` (doctor's, off the event loop): what
        the state dir holds, its largest parts named."""
        config = self.settings.config
        try:
            usage = shutil.disk_usage(config.state_dir)
        except OSError as exc:
            return check("disk", PROBLEM, f"{config.state_dir}: {exc.strerror or exc}",
                         "make the state dir readable, or set MEMORYD_HOME")
        try:
            db = config.db_path.stat().st_size
        except OSError:
            db = 0
        detail = (f"{size_text(usage.free)} free on the state dir's file system "
                  f"({config.state_dir}; database {size_text(db)})")
        if sizes:
            parts = state_sizes(config.state_dir)
            named = ", ".join(f"{name} {size_text(size)}" for name, size in parts[:4] if size)
            detail = (f"{size_text(usage.free)} free on the state dir's file system "
                      f"({config.state_dir} holds {size_text(sum(s for _, s in parts))}"
                      + (f": {named}" if named else "") + ")")
        if usage.free < DISK_PROBLEM_BYTES:
            return check("disk", PROBLEM, detail, "free some space: writes fail when it is full")
        if usage.free < max(DISK_WARNING_BYTES, 2 * db):
            return check("disk", WARNING, detail, "free some space: a reindex needs room for a "
                         "second database")
        return check("disk", OK, detail)

    def writes(self) -> dict[str, Any]:
        """The writes the disk refused lately (memoryd.server.refused)."""
        refused = self.refused
        if not refused.recent() or refused.since is None:
            return check("writes", OK, "no write refused lately")
        at = time.strftime("%H:%M", time.localtime(refused.since))
        many = "write was" if refused.count == 1 else "writes were"
        return check("writes", PROBLEM, f"{refused.count} {many} refused since {at}, the "
                     f"last: {refused.reason}", refused_fix(refused.reason))

    def backlog_counts(self) -> int:
        """Entries waiting for a vector (database thread)."""
        store = self.parts.store
        assert store is not None
        return store.count_backlog()

    def backlog(self, waiting: int) -> dict[str, Any]:
        """The vector backlog and the file queue: their size and whether they move."""
        watcher = self.watcher
        queue = len(watcher.pending) if watcher is not None else 0
        now = time.time()
        parts = []
        stuck = []
        if waiting:
            rate = self.parts.vectors.embedded.rate(now)
            since = self.parts.vectors.backlog_since
            parts.append(f"{waiting} entries wait for a vector"
                         + (f", embedding since {duration(now - since)} ago" if since else "")
                         + (f" at {rate:.0f}/s" if rate else ""))
            last = max(self.parts.vectors.embedded.last_progress or 0, self.started)
            if self.parts.threads.embedder is not None and now - last > STUCK_S:
                stuck.append(f"no vector embedded for {duration(now - last)}")
        if queue:
            parts.append(f"{queue} files queued for indexing")
            last = max((watcher.initial.files.last_progress if watcher is not None else None) or 0,
                       self.started)
            if watcher is not None and watcher.initial.active and now - last > STUCK_S:
                stuck.append(f"no file indexed for {duration(now - last)}")
        if self.parts.threads.embedder is None and not self.parts.threads.is_loading and waiting:
            return check("backlog", WARNING, "; ".join(parts) + " (no model: they get one once "
                         "a model loads)", "see the model check")
        if stuck and self._short_of_space():
            return check("backlog", PROBLEM, "; ".join(parts + stuck) + " (the state dir's "
                         "disk refuses writes)", "free some space on the state dir's file "
                         "system (see the disk and writes checks): the backlog goes on by "
                         "itself once there is room, no restart needed")
        if stuck:
            return check("backlog", PROBLEM, "; ".join(parts + stuck),
                         "memoryd service logs says why; " + RESTART)
        if parts:
            return check("backlog", OK, "working: " + "; ".join(parts))
        return check("backlog", OK, "nothing waiting: every entry has its vector")

    def _short_of_space(self) -> bool:
        """Whether the state dir's disk is (nearly) full, or refused a write lately."""
        if self.refused.recent():
            return True
        try:
            return shutil.disk_usage(self.settings.config.state_dir).free < DISK_PROBLEM_BYTES
        except OSError:
            return False


def refused_fix(reason: str) -> str:
    """What to do about writes the disk refuses, by why it refused the last one."""
    again = " and send them again: nothing of a refused write was kept"
    if "Read-only file system" in reason:
        return ("the state dir's file system is read-only (a service's sandbox without the "
                "state dir in ReadWritePaths=, or a disk remounted read-only after errors): "
                "make it writable" + again)
    if "file too large" in reason:
        return "raise the file-size limit memoryd runs under (`ulimit -f`, LimitFSIZE=)" + again
    if "Permission denied" in reason or "Operation not permitted" in reason:
        return ("memoryd may not write in its state dir: give the user it runs as the state "
                "dir back (chown, chmod u+w)" + again)
    if "I/O error" in reason and "full" not in reason:
        return "the disk reports errors: check it (dmesg, smartctl) and free it of them" + again
    return ("free some space on the state dir's file system (or raise the file-size limit, "
            "`ulimit -f`, memoryd runs under)" + again)


def state_sizes(state_dir: Path) -> list[tuple[str, int]]:
    """What the state dir holds, largest first: each file and each folder (all it holds) at
    its top, so that `memory doctor` names where the disk goes (the database, the outcomes
    file and its injection log, the vectors, the ledgers)."""
    sizes: list[tuple[str, int]] = []
    try:
        children = list(os.scandir(state_dir))
    except OSError:
        return sizes
    for child in children:
        try:
            if child.is_dir(follow_symlinks=False):
                size = sum(f.stat().st_size for f in Path(child.path).rglob("*")
                           if f.is_file() and not f.is_symlink())
                sizes.append((child.name + "/", size))
            elif child.is_file(follow_symlinks=False):
                sizes.append((child.name, child.stat(follow_symlinks=False).st_size))
        except OSError:  # gone or unreadable meanwhile: not counted
            continue
    return sorted(sizes, key=lambda item: -item[1])
