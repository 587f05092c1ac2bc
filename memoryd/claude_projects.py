"""Which project a directory of Claude Code's ``projects/`` is: whose auto memory it holds.

Claude Code keeps each project's transcripts and auto memory in
``~/.claude/projects/<name>/`` (``$CLAUDE_CONFIG_DIR/projects/``), ``<name>`` the project's
path with every character but an ASCII letter or digit made ``-`` (``/home/ana/my_app.v2`` →
``-home-ana-my-app-v2``; a name over :data:`MAX_NAME` characters is cut there and given a hash
of the path). The auto memory (``memory/``) is named after the git repository's root, which
its worktrees and subdirectories share; a transcript after the directory its session started
in.

The name loses what told ``-``, ``_``, ``.`` and ``/`` apart, so it is never decoded by
guessing. Its project is the project (:func:`memoryd.project.project_of`) of

1. the working directory (``cwd``) the directory's transcripts record, when it or its
   repository encodes to the name (a cut name: to its first :data:`MAX_NAME` characters);
2. else the one existing directory that encodes to the name, found by walking down from ``/``
   through the entries whose encoded names continue it (where several do, the one that is a
   git checkout's root: ``/a/b-c`` and ``/a/b/c`` both encode to ``-a-b-c``);
3. else none: the files are global, shown in every project, as Claude Code's own settings
   would have them nowhere. That is a name ``CLAUDE_CODE_PROJECT_DIR_NAME`` chose, a cut name
   whose transcripts are gone, a project moved or deleted whose transcripts Claude Code has
   cleaned up, or two directories that encode alike, neither of them a repository's root.

A project found is kept for the daemon's life; a name without one is looked at again after
:data:`RETRY_S` (its project may be cloned back, a session may start there).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time

from memoryd.project import project_of, repository_of

log = logging.getLogger(__name__)

#: The source of Claude Code's auto memory (memoryd.agent_sources): ``projects/*/memory/``.
AUTO_MEMORY_SOURCE = "claude-auto-memory"
#: Longer names are cut to this many characters, then given a hash of the path.
MAX_NAME = 200
#: A name no project was found for is looked at again after this long.
RETRY_S = 60.0
#: Of each directory's transcripts, the newest this many are read for a ``cwd``.
TRANSCRIPTS_READ = 8
#: Of each transcript, the first this many bytes.
TRANSCRIPT_BYTES = 65_536
#: Directories listed, at most, looking for the one a name encodes.
MAX_LISTINGS = 256

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def encoded(path: str) -> str:
    """A directory's name under ``projects/`` as Claude Code makes it (uncut)."""
    return _NOT_ALNUM.sub("-", path)


def encodes_to(path: str, name: str) -> bool:
    """Whether Claude Code names the directory ``path`` (absolute) ``name``."""
    whole = encoded(path)
    if len(whole) <= MAX_NAME:
        return whole == name
    return name.startswith(whole[:MAX_NAME] + "-")  # cut, then a hash memoryd cannot check


class ProjectDirs:
    """The project of each directory of ``projects/`` (see the module docstring), looked for
    once. Not thread-safe: the watcher asks from its ingest thread alone."""

    def __init__(self) -> None:
        #: name → (project or None, when it was looked for)
        self._found: dict[str, tuple[str | None, float]] = {}

    def project_of_file(self, path: str, projects: str) -> str | None:
        """The project of a file below ``projects`` (Claude Code's ``projects/`` directory):
        its first directory's there."""
        name = os.path.relpath(path, projects).split(os.sep, 1)[0]
        return None if name in ("", ".", "..") else self.project(projects, name)

    def project(self, projects: str, name: str) -> str | None:
        known = self._found.get(name)
        if known is not None and (known[0] is not None or time.monotonic() < known[1] + RETRY_S):
            return known[0]
        project = project_named(os.path.join(projects, name), name)
        if project is None and known is None:
            log.info("Claude Code's project directory %s names no directory memoryd can find "
                     "(no transcript there records one, and no single directory on disk "
                     "encodes to it): its auto memory is global.", name)
        self._found[name] = (project, time.monotonic())
        return project


def project_named(directory: str, name: str) -> str | None:
    """The project of Claude Code's project directory ``directory`` (named ``name``), or
    None (see the module docstring)."""
    recorded = {project_of(cwd) for cwd in _recorded_cwds(directory)
                if encodes_to(cwd, name) or encodes_to(repository_of(cwd) or cwd, name)}
    if recorded:
        return recorded.pop() if len(recorded) == 1 else None
    if len(name) > MAX_NAME or not name.startswith("-"):
        return None
    found = _directories_named(name)
    if len(found) > 1:  # Claude Code names the auto memory after a repository's root
        found = [path for path in found if os.path.lexists(os.path.join(path, ".git"))]
    return project_of(found[0]) if len(found) == 1 else None


def _recorded_cwds(directory: str) -> set[str]:
    """The working directories the newest transcripts in ``directory`` record."""
    try:
        with os.scandir(directory) as entries:
            transcripts = [(entry.stat().st_mtime, entry.path) for entry in entries
                           if entry.name.endswith(".jsonl") and entry.is_file()]
    except OSError:
        return set()
    cwds: set[str] = set()
    for _, path in sorted(transcripts, reverse=True)[:TRANSCRIPTS_READ]:
        try:
            with open(path, "rb") as handle:
                head = handle.read(TRANSCRIPT_BYTES)
        except OSError:
            continue
        for line in head.splitlines():
            if b'"cwd"' not in line:
                continue
            try:
                cwd = json.loads(line).get("cwd")
            except (ValueError, AttributeError):
                continue  # the line the read cut, or no record
            if isinstance(cwd, str) and os.path.isabs(cwd):
                cwds.add(os.path.normpath(cwd))
    return cwds


def _directories_named(name: str) -> list[str]:
    """The existing directories (not through a symlink: Claude Code names a session's real
    working directory) whose path encodes to ``name``."""
    found: list[str] = []
    stack = [("/", name)]
    listed = 0
    while stack and listed < MAX_LISTINGS:
        base, rest = stack.pop()
        if not rest:
            found.append(base)
            continue
        listed += 1
        try:
            with os.scandir(base) as entries:
                for entry in entries:
                    part = "-" + encoded(entry.name)
                    if (rest == part or rest.startswith(part + "-")) \
                            and entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, rest[len(part):]))
        except OSError:
            continue
    return sorted(found)
