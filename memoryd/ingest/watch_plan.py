"""What the watcher watches, beside the sources' roots (memoryd.sources.watch_roots): the
symlinks among the watched files, and when a root is a new one.

A symlinked file is followed (a notebook linked from a notes repository is the person's
choice), except in an agent's memory directory (the memory tools' one), where one whose target
lies outside it is not indexed, as the tools do not read it: what is indexed from that
directory is what the agent's tools can reach. A symlinked directory below a source's root is
not followed (the scan does not walk it; the watcher, which would, is told apart here). The
edit of a symlinked file happens beside its target, so the targets' directories are watched
too. A root deleted and re-created is a new directory to watch: its identity is its inode.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def tools_root(memory_dir: str, agent: str) -> Path:
    """The agent's memory directory, as the memory tools see it (``memory_dir``: the
    configured pattern with ``{agent}``)."""
    return Path(memory_dir.replace("{agent}", agent)).expanduser()


def leads_outside(path: Path, root: Path) -> bool:
    """Whether ``path`` is a symlinked file in the memory directory ``root`` whose target lies
    outside it (a loop counts: not indexable anyway)."""
    if not path.is_symlink() or not path.is_relative_to(root):
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return True


def through_symlink(path: Path, root: Path) -> bool:
    """Whether a directory between ``root`` and ``path`` is a symlink (the watcher follows
    directory symlinks; the scan does not)."""
    directory = path.parent
    while directory != root and len(directory.parts) > len(root.parts):
        if directory.is_symlink():
            return True
        directory = directory.parent
    return False


def link_dirs(targets: Iterable[str], plan: list[tuple[Path, bool]]) -> list[Path]:
    """The directories of the symlinked files' ``targets`` that no root of ``plan`` (each
    watched recursively or alone) watches already: an edit of ``~/dotfiles/CLAUDE.md`` happens
    there, not beside the link."""
    watched = {root for root, _ in plan}
    deep = [root for root, recursive in plan if recursive]
    return sorted({parent for target in targets
                   if (parent := Path(target).parent) not in watched
                   and not any(parent.is_relative_to(root) for root in deep)})


def roots_identity(plan: list[tuple[Path, bool]]) -> list[tuple[str, bool, int, int]]:
    """The existing roots of ``plan`` with their inodes: a directory deleted and re-created is
    a new watch."""
    identity = []
    for root, recursive in plan:
        try:
            stat = root.stat()
        except OSError:
            continue
        identity.append((str(root), recursive, stat.st_dev, stat.st_ino))
    return identity
