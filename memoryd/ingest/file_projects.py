"""The project a watched file belongs to.

A project source's files belong to its root's project (:func:`memoryd.project.project_of` of
the root: a symlink or a worktree given as a root names the project the hooks and ``--here``
name); Claude Code's auto memory to the project its directory's name encodes
(:mod:`memoryd.claude_projects`); any other file to none (global). :func:`configured` makes the
watcher's sources with their roots and projects; :class:`FileProjects` (mixed into
:class:`~memoryd.ingest.watcher.Watcher`) says a file's project; a full scan queues the indexed
memory files filed under another project than theirs (:mod:`memoryd.ingest.full_scan`).
"""

from __future__ import annotations

from pathlib import Path

from memoryd import claude_projects
from memoryd.project import project_of
from memoryd.settings import Config
from memoryd.sources import Source
from memoryd.watched_sources import configured_sources


def projects_of(roots: dict[str, str]) -> dict[str, str]:
    """Each project source's project (its root's: memoryd.project.project_of)."""
    identity = {root: project_of(root) for root in set(roots.values())}
    return {name: identity[root] for name, root in roots.items()}


def configured(config: Config) -> tuple[list[Source], dict[str, str], dict[str, str]]:
    """The sources, each project source's root and its project."""
    sources, roots = configured_sources(config)
    return sources, roots, projects_of(roots)


class FileProjects:
    """The project of each watched file (mixed into Watcher)."""

    home: Path
    #: each project source's project (:func:`projects_of`)
    projects: dict[str, str]
    claude_projects: claude_projects.ProjectDirs

    def file_project(self, source: Source, path: str) -> str | None:
        """The project a file of ``source`` belongs to: its project root's, for Claude Code's
        auto memory the project its directory's name encodes (memoryd.claude_projects; it may
        read transcripts and list directories: off the event loop), else none (global)."""
        if source.name == claude_projects.AUTO_MEMORY_SOURCE:
            return self.claude_projects.project_of_file(path, str(source.root(self.home)))
        return self.projects.get(source.name)
