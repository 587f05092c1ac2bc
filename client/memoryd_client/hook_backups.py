"""The backups `memory hook install` and `uninstall` keep of the settings files they change, in
the state dir (``hook-backups/``, named after each file's real path): per file the first (the
file before memoryd first changed it) and the latest, 0600."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from memoryd_client.paths import state_dir

BACKUP_DIR = "hook-backups"
BACKUP_INFIX = ".memoryd-backup-"


def backup_stem(real_path: str) -> Path:
    """Where the backups of the file at `real_path` go, without their suffix."""
    return state_dir() / BACKUP_DIR / real_path.lstrip(os.sep)


def backups_of(real_path: str) -> list[Path]:
    stem = backup_stem(real_path)
    if not stem.parent.is_dir():
        return []
    return sorted(p for p in stem.parent.iterdir() if p.name.startswith(stem.name + BACKUP_INFIX))


def write_backup(real_path: str, text: str, when: float | None = None) -> Path:
    """Save `text` as a new backup of `real_path` (0600: settings may hold secrets). A backup is
    never overwritten: a second one within the same microsecond gets a counter. Of the backups of
    that file, the oldest and this one are kept."""
    when = time.time() if when is None else when
    stem = backup_stem(real_path)
    stem.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when)) + f"-{int(when % 1 * 1e6):06d}"
    counter = 0
    while True:
        suffix = f"{BACKUP_INFIX}{stamp}" + (f"-{counter}" if counter else "")
        backup = stem.with_name(stem.name + suffix)
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            counter += 1
            continue
        break
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    for between in backups_of(real_path)[1:]:
        if between != backup:
            with contextlib.suppress(FileNotFoundError):
                between.unlink()
    return backup


def prune_backup_dirs(directory: Path) -> None:
    """Remove the backup directories left empty, up to the backups' root (the backups of a
    file install created and uninstall removed are nothing worth keeping a tree of folders)."""
    root = state_dir() / BACKUP_DIR
    while directory != root and root in directory.parents:
        try:
            directory.rmdir()
        except OSError:  # not empty, or gone
            return
        directory = directory.parent
