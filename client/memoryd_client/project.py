"""Which project a directory belongs to: its git repository's root, worktrees collapsed onto
the main checkout; outside git, none. One definition for the daemon (``memoryd.project``) and
the clients, which decide before asking: ``memory search --here`` says "not in a git
repository" rather than searching for a project that cannot exist.

Plain ``os.path``: the `memory` command imports this, and pathlib costs it a few ms.
"""

from __future__ import annotations

import os


def _main_root(dotgit: str) -> str:
    """For a worktree's ``.git`` file, the root of the main checkout."""
    checkout = os.path.dirname(dotgit)
    common = git_common_dir(dotgit)
    if common is not None and os.path.basename(common) == ".git":
        return os.path.dirname(common)
    return checkout


def git_common_dir(dotgit: str) -> str | None:
    """The directory holding a repository's shared files (``info/exclude``, ``config``): the
    ``.git`` directory itself, or, for a worktree's ``.git`` file, the main repository's."""
    if os.path.isdir(dotgit):
        return dotgit
    try:
        with open(dotgit, encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    gitdir = os.path.realpath(os.path.join(os.path.dirname(dotgit),
                                           first[len("gitdir:"):].strip()))
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
            return os.path.realpath(os.path.join(gitdir, handle.read().strip()))
    except OSError:
        return gitdir  # a submodule's or a bare layout's: its own gitdir


def checkout_of(directory: str | os.PathLike[str]) -> str | None:
    """The root of the checkout (a worktree's own root) a directory is in, or None."""
    start = os.path.realpath(os.path.expanduser(os.fspath(directory)))
    current = start
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def repository_of(directory: str | os.PathLike[str]) -> str | None:
    """The git repository (main checkout) a directory is in, or None outside git."""
    checkout = checkout_of(directory)
    if checkout is None:
        return None
    dotgit = os.path.join(checkout, ".git")
    return checkout if os.path.isdir(dotgit) else _main_root(dotgit)


def here_directory() -> str:
    """`--here`: this directory, for its repository's entries and the global ones; outside a
    git repository there is no such project, and saying so beats an empty answer."""
    from memoryd_client.errors import UsageError

    cwd = os.getcwd()
    if repository_of(cwd) is None:
        raise UsageError(f"--here: not in a git repository ({cwd}); --here means this "
                         "repository's entries and the global ones. Run it inside a "
                         "repository, or name one with --project DIR")
    return cwd
