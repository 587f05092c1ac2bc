"""The project of a working directory: its git repository's root, worktrees collapsed onto the
main checkout; outside git, the directory itself."""

from __future__ import annotations

import os
from pathlib import Path


def _main_root(dotgit: Path) -> Path:
    """For a worktree's ``.git`` file, the root of the main checkout."""
    try:
        first = dotgit.read_text("utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return dotgit.parent
    if not first.startswith("gitdir:"):
        return dotgit.parent
    gitdir = (dotgit.parent / first[len("gitdir:"):].strip()).resolve()
    commondir = gitdir / "commondir"
    if commondir.is_file():
        common = (gitdir / commondir.read_text("utf-8").strip()).resolve()
        if common.name == ".git":
            return common.parent
    return dotgit.parent


def project_of(cwd: str | os.PathLike[str]) -> str:
    start = Path(cwd).expanduser().resolve()
    for directory in (start, *start.parents):
        dotgit = directory / ".git"
        if dotgit.is_dir():
            return str(directory)
        if dotgit.is_file():
            return str(_main_root(dotgit))
    return str(start)
