"""What the watcher watches, beside the sources' roots (memoryd.sources.watch_roots): the
symlinks among the watched files, and when a root is a new one.

A symlinked file is followed (a notebook linked from a notes repository is the person's
choice), and so is a symlinked directory below a source's root (a memory folder kept in a
dotfiles repository) when the scan follows it (:class:`memoryd.sources.DirLink`: not a loop,
its files not read under another name already); except in an agent's memory directory (the
memory tools' one), where a link whose target lies outside it is not indexed, as the tools do
not read it: what is indexed from that directory is what the agent's tools can reach. The edit
of a symlinked file happens beside its target, so the targets' directories are watched too, and
a followed directory's target is watched as a root of its own; the watcher tells of a change
under the target's name, which :func:`scan_name` turns into the name the scan reads it under.
No recursive watch crosses a symlinked directory (:func:`around_links`: the watcher would follow
it on its own, and rename what it watched twice). A root deleted and re-created is a new
directory to watch: its identity is its inode.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from memoryd.sources import DirLink, within


def tools_root(memory_dir: str, agent: str) -> Path:
    """The agent's memory directory, as the memory tools see it (``memory_dir``: the
    configured pattern with ``{agent}``)."""
    return Path(memory_dir.replace("{agent}", agent)).expanduser()


def leads_outside(path: Path, root: Path) -> bool:
    """Whether ``path``, in the memory directory ``root``, is a symlinked file or lies below a
    symlinked directory, and leads outside it (a loop counts: not indexable anyway)."""
    if not path.is_relative_to(root) or not (
            path.is_symlink() or through_symlink(path, root, ())):
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return True


def tools_dir_of(memory_dir: str, path: str) -> Path | None:
    """The agent's memory directory (the memory tools') that ``path`` lies below, if any
    (``memory_dir``: the configured pattern with ``{agent}``)."""
    before, placeholder, after = str(Path(memory_dir).expanduser()).partition("{agent}")
    found = re.match(re.escape(before) + ("[^/]+" if placeholder else "") + re.escape(after)
                     + "(?=/)", path)
    return Path(found.group()) if found else None


def through_symlink(path: Path, root: Path, followed: Collection[str]) -> bool:
    """Whether a directory between ``root`` and ``path`` is a symlink the scan does not follow
    (``followed``: the links it does)."""
    directory = path.parent
    while directory != root and len(directory.parts) > len(root.parts):
        if directory.is_symlink() and str(directory) not in followed:
            return True
        directory = directory.parent
    return False


def scan_name(path: str, links: Sequence[DirLink]) -> str:
    """``path`` as the scan names it: below a followed directory's target, under the link;
    below a link not followed, where the scan reads its target (``DirLink.read_as``)."""
    for _ in range(len(links) + 1):  # a link below another's target: named in turn
        for link in links:
            if link.why_not is None and within(path, link.target) and path != link.target:
                path = link.path + path[len(link.target):]
                break
            if link.read_as is not None and within(path, link.path) and path != link.path:
                path = link.read_as + path[len(link.path):]
                break
        else:
            return path
    return path


def link_dirs(targets: Iterable[str], plan: list[tuple[Path, bool]]) -> list[Path]:
    """The directories of the symlinked files' ``targets`` that no root of ``plan`` (each
    watched recursively or alone) watches already: an edit of ``~/dotfiles/CLAUDE.md`` happens
    there, not beside the link."""
    watched = {root for root, _ in plan}
    deep = [root for root, recursive in plan if recursive]
    return sorted({parent for target in targets
                   if (parent := Path(target).parent) not in watched
                   and not any(parent.is_relative_to(root) for root in deep)})


def around_links(plan: list[tuple[Path, bool]], links: Iterable[str]
                 ) -> tuple[list[tuple[Path, bool]], set[str]]:
    """The plan with no recursive watch over a symlinked directory (``links``: those the scan
    met, followed or not). The watcher (notify, on Linux) follows symlinks as it walks a
    recursive root, and a directory it reaches twice is reported under the name it reached it
    by last: a link in an agent's memory directory to a directory above the state dir
    (``agents/a1/up`` → ``/tmp/x``) renamed every event of ``agents/a1`` to
    ``agents/a1/up/…/agents/a1/…``, which no source matches (nothing indexed until the rescan),
    and a link to ``/`` would watch the whole disk. So a recursive root with a link below it
    is watched around it: each directory on the way to a link alone, the subtrees beside them
    recursively (a followed link's target is a root of its own: ScanLinks.watched). Returns the
    plan, and the directories now watched alone instead (a directory made in one of them is
    watched once the watcher starts again)."""
    links = sorted(set(links))
    result: list[tuple[Path, bool]] = []
    alone: set[str] = set()
    for root, recursive in plan:
        below = [link for link in links if within(link, str(root)) and link != str(root)]
        if not recursive or not below:
            result.append((root, recursive))
            continue
        stack = [str(root)]
        while stack:
            directory = stack.pop()
            if not any(within(link, directory) and link != directory for link in below):
                result.append((Path(directory), True))
                continue
            result.append((Path(directory), False))
            alone.add(directory)
            try:
                with os.scandir(directory) as entries:
                    stack.extend(entry.path for entry in entries
                                 if entry.is_dir(follow_symlinks=False))
            except OSError:
                continue
    return result, alone


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
