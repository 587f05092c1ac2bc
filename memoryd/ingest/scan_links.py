"""A scan of the sources' files for the watcher's full scan (memoryd.ingest.full_scan), and the
symlinks it met: symlinked files (each target's real path, and the links to it: an edit of
``~/dotfiles/CLAUDE.md`` happens at the target) and symlinked directories below the sources'
roots, followed or not
(:class:`memoryd.sources.DirLink`; the rules: memoryd.ingest.watch_plan)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from stat import S_ISLNK

from memoryd.ingest import watch_plan
from memoryd.sources import DirLink, Source, Unread, scan, within


@dataclass(frozen=True)
class ScanLinks:
    #: symlinked files: each target's real path → the links to it
    files: dict[str, list[str]] = field(default_factory=dict)
    #: the symlinked directories below the sources' roots
    dirs: tuple[DirLink, ...] = ()

    @cached_property
    def followed(self) -> frozenset[str]:
        """The symlinked directories the scan followed (their links' paths)."""
        return frozenset(link.path for link in self.dirs if link.why_not is None)

    def watched(self, plan: list[tuple[Path, bool]]) -> list[tuple[Path, bool]]:
        """What the symlinks lead to, to watch beside the roots of ``plan``: the directories
        of the symlinked files' targets (alone), and the followed directories' targets
        (recursively: not every watcher follows a link, nor one made after it started)."""
        targets = sorted({Path(link.target) for link in self.dirs if link.why_not is None})
        return [*((directory, False) for directory in watch_plan.link_dirs(self.files, plan)),
                *((target, True) for target in targets)]

    def linked(self) -> set[str]:
        """Every symlinked file's path (the link's)."""
        return {link for links in self.files.values() for link in links}

    def below_target(self, path: str) -> bool:
        """Whether ``path`` is below a followed directory's target."""
        return any(within(path, link.target) for link in self.dirs if link.why_not is None)

    def as_scanned(self, paths: set[str]) -> tuple[set[str], list[str]]:
        """Paths a watcher told of, by the names the scan gave them (one under a followed
        directory's target, or another link to it, is named under the link the index uses),
        and the symlinked files whose targets are among them."""
        named = {watch_plan.scan_name(path, self.dirs) for path in paths} if self.dirs \
            else paths
        return named, [link for target in (paths | named) & self.files.keys()
                       for link in self.files[target]]

    def any_gone(self, vanished: Iterable[Path]) -> bool:
        """Whether a symlinked directory is at or below a path gone."""
        return any(within(link.path, str(gone)) for gone in vanished for link in self.dirs)


def scan_files(sources: list[Source], home: Path, memory_dir: str,
               refuse: Callable[[str], None], unread: Unread | None = None
               ) -> tuple[dict[str, tuple[int, float, int]], ScanLinks]:
    """Every file of the sources: path → (size, mtime, inode), and the symlinks met. A
    symlinked file leading out of an agent's memory directory is not one (``refuse`` is told:
    the memory tools do not read it either), nor are the files of a symlinked directory that
    leads out of it. ``unread`` is told of what the scan cannot read (memoryd.sources.scan)."""
    found = {}
    files: dict[str, list[str]] = {}
    dirs: list[DirLink] = []
    for _source, path, agent in scan(sources, home, dirs,
                                     lambda link, target: leaves_tools_dir(memory_dir, link,
                                                                           target), unread):
        if leads_outside(memory_dir, path, agent):
            refuse(str(path))
            continue
        try:
            facts = os.lstat(path)  # a regular file's stat, in one call
            if S_ISLNK(facts.st_mode):
                facts = os.stat(path)
                files.setdefault(os.path.realpath(path), []).append(str(path))
        except OSError:
            continue
        found[str(path)] = (facts.st_size, facts.st_mtime, facts.st_ino)
    return found, ScanLinks(files, tuple(dirs))


def leads_outside(memory_dir: str, path: Path, agent: str) -> bool:
    """A symlinked file leading out of the agent's memory directory (watch_plan)."""
    return watch_plan.leads_outside(path, watch_plan.tools_root(memory_dir, agent))


def leaves_tools_dir(memory_dir: str, link: str, target: str) -> str | None:
    """Why the scan does not follow the symlinked directory ``link`` (to ``target``, real):
    it leads out of an agent's memory directory, where the memory tools do not follow it."""
    root = watch_plan.tools_dir_of(memory_dir, link)
    if root is None or within(target, os.path.realpath(root)):
        return None
    return (f"it leads outside the memory directory {root} (the memory tools do not read "
            "it either)")


def files_below(directory: str, match: Callable[[str], object],
                followed: frozenset[str]) -> tuple[list[str], bool]:
    """The files of a directory moved in that ``match``, and whether a symlinked directory the
    last scan did not meet (not in ``followed``) is at it or below it (the scan decides
    whether it is followed)."""
    found: list[str] = []
    links = os.path.islink(directory) and directory not in followed
    for top, dirs, names in os.walk(directory, followlinks=False):
        dirs[:] = [d for d in dirs if d != ".git"]
        found.extend(p for p in (os.path.join(top, f) for f in names) if match(p))
        links = links or any(os.path.islink(os.path.join(top, d)) and os.path.join(top, d)
                             not in followed for d in dirs)
    return found, links
