"""The project of a working directory: its git repository's root, worktrees collapsed onto the
main checkout; outside git, the directory itself.

An entry belongs to a project only when it was written inside a git repository
(``repository_of``); written anywhere else it is global, and the memory block shows it in every
project."""

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


def repository_of(cwd: str | os.PathLike[str]) -> str | None:
    """The git repository (main checkout) a directory is in, or None outside git."""
    start = Path(cwd).expanduser().resolve()
    for directory in (start, *start.parents):
        dotgit = directory / ".git"
        if dotgit.is_dir():
            return str(directory)
        if dotgit.is_file():
            return str(_main_root(dotgit))
    return None


def project_of(cwd: str | os.PathLike[str]) -> str:
    return repository_of(cwd) or str(Path(cwd).expanduser().resolve())
