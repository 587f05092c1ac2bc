"""Private state whatever the umask: every file memoryd creates is 0600 and every directory
0700 (the index holds what agents remembered; the ledgers are the source of truth).

The daemon and ``memoryd reindex`` set the process umask to 077 before they create anything
(SQLite creates the database, its ``-wal`` and ``-shm`` with the umask), and at start
:func:`tighten_state` takes group and other permissions away from what an earlier version or
another umask left: the state directory, the database files, ``sources.toml`` and the
directories under ``agents/``, ``ledger/``, ``transcripts/`` and ``history/``.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from memoryd.store.row_file import ROW_FILE

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077


def restrict_umask() -> int:
    """Set the umask to 077; returns the previous one."""
    return os.umask(PRIVATE_UMASK)


def _tighten(path: Path, mode: int) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid():
        return  # a link is followed by nobody here; a file of another user is not ours
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077 & mode)
        log.info("Made %s private (mode %o).", path, stat.S_IMODE(info.st_mode) & ~0o077 & mode)


def tighten_state(state: Path, files: Iterable[Path], trees: Iterable[Path]) -> None:
    """Take group/other permissions off the state that exists already: the state directory,
    the database's files in it, ``files``, and each directory of ``trees`` with all below it
    (the configuration names them: memoryd.settings.Config.private_files and private_trees)."""
    _tighten(state, 0o700)
    for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm", "memoryd.lock", ROW_FILE):
        _tighten(state / name, 0o600)
    for path in files:
        _tighten(path, 0o600)
    for directory in trees:
        if not directory.is_dir():
            continue
        _tighten(directory, 0o700)
        for path in directory.rglob("*"):
            _tighten(path, 0o700 if path.is_dir() and not path.is_symlink() else 0o600)
