"""Editing the user's files safely: compare-and-swap, keeping what makes the file theirs.

Passes edit files that agents and people edit too (notebooks, CLAUDE.md, CONTEXT.md). A change
is computed from the bytes read, and written only if the file still holds exactly those bytes:
otherwise someone else wrote it meanwhile, and the change is left for a later run (their edit is
never lost). A write goes to a temporary file beside the target, with the target's permissions,
fsynced, then renamed over it; a symlinked file is written through to its target, so the link
stays. Line endings (LF or CRLF) and the presence of a final newline are kept.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FileText:
    """A text file as read: where it really is, its bytes and how its lines end."""

    path: Path  # the file the name leads to (a symlink resolved)
    data: bytes
    mode: int
    crlf: bool

    @property
    def text(self) -> str:
        """The text with LF line endings (the form passes work on)."""
        return self.data.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n")

    def encode(self, text: str) -> bytes:
        """New text in this file's conventions: its line endings, and a final newline iff the
        file had one (or was empty)."""
        had_final = self.data.endswith(b"\n") or not self.data
        text = text.rstrip("\n") + ("\n" if had_final and text.strip() else "")
        if self.crlf:
            text = text.replace("\n", "\r\n")
        return text.encode("utf-8", errors="surrogateescape")


def read_text(path: Path) -> FileText:
    real = Path(os.path.realpath(path))
    data = real.read_bytes()
    return FileText(real, data, real.stat().st_mode & 0o7777, b"\r\n" in data)


def replace_if_unchanged(path: Path, expected: bytes | None, new: bytes,
                         mode: int = 0o600) -> bool:
    """Write ``new`` to ``path`` (through a symlink) if it still holds ``expected`` (None: if it
    does not exist). Returns False, writing nothing, when it changed meanwhile."""
    real = Path(os.path.realpath(path))
    if _current(real) != expected:
        return False
    real.parent.mkdir(parents=True, exist_ok=True)
    mode = real.stat().st_mode & 0o7777 if real.exists() else mode
    temporary = real.with_name(f".{real.name}.memoryd-{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(new)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)
    if _current(real) != expected:  # checked again just before the swap: the window is tiny
        temporary.unlink()
        return False
    os.replace(temporary, real)
    directory = os.open(real.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return True


def remove_if_unchanged(path: Path, expected: bytes) -> bool:
    real = Path(os.path.realpath(path))
    if _current(real) != expected:
        return False
    real.unlink()
    return True


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def git_root(path: Path) -> Path | None:
    """The work tree of the git repository holding ``path`` (None outside git)."""
    for directory in (path.parent, *path.parent.parents):
        if (directory / ".git").exists():
            return directory
    return None


def commit(paths: list[Path], message: str) -> str | None:
    """Commit exactly these files (not whatever else is staged) in their repositories, as
    "memoryd"; returns why not when it could not."""
    by_root: dict[Path, list[str]] = {}
    for path in paths:
        real = Path(os.path.realpath(path))
        root = git_root(real)
        if root is not None:
            by_root.setdefault(root, []).append(str(real.relative_to(root)))
    problems = []
    for root, names in by_root.items():
        run = subprocess.run(
            ["git", "-c", "user.name=memoryd", "-c", "user.email=memoryd@localhost",
             "-c", "commit.gpgsign=false", "commit", "--quiet", "--only", "-m", message, "--",
             *names], cwd=root, capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            # files git does not track yet are added first (archives the pass created)
            subprocess.run(["git", "add", "--", *names], cwd=root, capture_output=True,
                           timeout=30)
            run = subprocess.run(
                ["git", "-c", "user.name=memoryd", "-c", "user.email=memoryd@localhost",
                 "-c", "commit.gpgsign=false", "commit", "--quiet", "--only", "-m", message,
                 "--", *names], cwd=root, capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            problems.append(f"{root}: {(run.stderr or run.stdout).strip()[:200]}")
    return "; ".join(problems) or None
