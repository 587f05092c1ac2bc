"""Which project a directory belongs to: its git repository, whichever checkout of it the
directory is in; outside git, none (:func:`repository_of`), or for the daemon's scoping the
directory itself (:func:`project_of`). One definition for the daemon (``memoryd.project``
re-exports it) and the clients, which decide before asking: ``memory search --here`` says "not
in a git repository" rather than searching for a project that cannot exist.

A repository is named by its main checkout: a worktree (``git worktree add``) names the
checkout whose ``.git`` directory holds its own, a submodule's worktree the submodule; a bare
repository's worktrees (``git clone --bare``, then ``git worktree add``) have no main checkout
and are named by the bare repository's directory (``…/proj.git``, or the ``.bare`` of a
``proj/.bare`` + ``proj/.git`` layout). A nested repository or a submodule is a project of
its own. Symlinks are resolved: a path through a link names the project of its target.

Plain ``os.path``: the `memory` command imports this, and pathlib costs it a few ms.
"""

from __future__ import annotations

import os


def _main_root(dotgit: str) -> str:
    """For a checkout's ``.git`` file (a worktree's, a submodule's, a separate git dir's), the
    directory that names its repository: the main checkout, or a bare repository itself."""
    checkout = os.path.dirname(dotgit)
    common = git_common_dir(dotgit)
    if common is None:
        return checkout
    if os.path.basename(common) == ".git":
        return os.path.dirname(common)
    bare, worktree = _core_settings(common)
    if worktree is not None:  # a submodule's (or a worktree's of one): its own checkout
        return os.path.realpath(os.path.join(common, worktree))
    return common if bare else checkout


def _core_settings(common: str) -> tuple[bool, str | None]:
    """``core.bare`` and ``core.worktree`` of the repository whose shared files are in
    ``common`` (its ``config``; unreadable: not bare, no work tree named)."""
    bare, worktree, core = False, None, False
    try:
        with open(os.path.join(common, "config"), encoding="utf-8", errors="replace") as handle:
            for raw in handle:
                line = raw.split("#", 1)[0].split(";", 1)[0].strip()
                if line.startswith("["):
                    core = line.lower().replace(" ", "") == "[core]"
                elif core and "=" in line:
                    key, value = (part.strip() for part in line.split("=", 1))
                    if key.lower() == "bare":
                        bare = value.lower() in ("true", "yes", "on", "1")
                    elif key.lower() == "worktree" and value:
                        worktree = value.strip('"')
    except OSError:
        pass
    return bare, worktree


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
    """The git repository a directory is in (see the module docstring: its main checkout, or
    a bare repository's directory), or None outside git."""
    checkout = checkout_of(directory)
    if checkout is None:
        return None
    dotgit = os.path.join(checkout, ".git")
    return checkout if os.path.isdir(dotgit) else _main_root(dotgit)


def project_of(directory: str | os.PathLike[str]) -> str:
    """The project a directory is in: its repository (:func:`repository_of`), outside git the
    directory itself (its real path). The one identity of a project: the daemon files an
    entry, a watched file and a session under it, and finds them by it."""
    return repository_of(directory) or os.path.realpath(os.path.expanduser(os.fspath(directory)))


def here_directory(project: str | None = None) -> str:
    """`--here`: this directory, for its repository's entries and the global ones; outside a
    git repository there is no such project, and saying so beats an empty answer. With
    ``project`` (--project DIR) too, a usage error: each names the entries wanted, and one of
    them would be dropped unsaid."""
    from memoryd_client.errors import UsageError

    if project is not None:
        raise UsageError(f"--here and --project {project}: give one of them (--here: this "
                         "repository's entries and the global ones; --project DIR: only DIR's "
                         "project's entries)")
    cwd = os.getcwd()
    if repository_of(cwd) is None:
        raise UsageError(f"--here: not in a git repository ({cwd}); --here means this "
                         "repository's entries and the global ones. Run it inside a "
                         "repository, or name one with --project DIR")
    return cwd
