"""The project of a working directory: its git repository's root, worktrees collapsed onto the
main checkout; outside git, the directory itself.

An entry belongs to a project only when it was written inside a git repository
(``repository_of``, defined once with the clients in :mod:`memoryd_client.project`); written
anywhere else it is global, and the memory block shows it in every project."""

from __future__ import annotations

import os
from pathlib import Path

from memoryd_client.project import repository_of

__all__ = ["project_of", "repository_of"]


def project_of(cwd: str | os.PathLike[str]) -> str:
    return repository_of(cwd) or str(Path(cwd).expanduser().resolve())
