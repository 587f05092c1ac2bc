"""The sources a configuration watches: the built-in ones it leaves enabled, each project
root's, what Claude Code loads from the directories above them, its own ``[[sources]]`` and the
memory tools' directory, each file kept by one source; and what follows from them (the memory
roots, the transcript formats). What a source is, and which sources the agents have:
:mod:`memoryd.sources`, :mod:`memoryd.agent_sources`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from memoryd.agent_sources import default_sources, gives_way, parent_claude_files, project_sources
from memoryd.settings import Config
from memoryd.sources import Source


def transcript_formats(config: Config) -> dict[str, str]:
    """The transcript sources memoryd reads, by name, with their format (the harness of the
    sessions they tell)."""
    return {s.name: s.format for s in configured_sources(config)[0] if s.kind == "transcript"}


def configured_sources(config: Config) -> tuple[list[Source], dict[str, str]]:
    """All sources, and the project root of each project source."""
    sources = [s for s in default_sources()
               if config.watch.defaults and s.name not in config.watch.disabled]
    projects: dict[str, str] = {}
    for root in config.watch.project_roots:
        for source in project_sources(Path(root)):
            sources.append(source)
            projects[source.name] = str(Path(root).expanduser())
    # what Claude Code loads from the directories above them
    sources.extend(parent_claude_files(config.watch.project_roots))
    sources.extend(config.sources)
    tools = Source("memoryd-agents", config.memory_dir.rstrip("/") + "/**/*.md", "memory",
                   "markdown")
    if all(s.path.split("{agent}")[0] != tools.path.split("{agent}")[0] for s in sources):
        sources.append(tools)
    # a file an instruction file imports, or one found in a project's subdirectory or above
    # it, that another source has already (a project's AGENTS.md, a rule, a file two projects
    # import, a subproject or a parent that is a project root of its own) stays that source's;
    # a file the user's own files and a project's reach is the user's, one two project roots
    # reach (one root inside the other) the innermost's
    home = Path.home()
    others = [source for source in sources if not gives_way(source)]

    def reach(name: str) -> float:
        return len(projects[name]) if name in projects else math.inf

    owner: dict[str, str] = {}
    for source in sources:
        if gives_way(source):
            held = owner.get(source.path)
            if held is None or reach(source.name) > reach(held):
                owner[source.path] = source.name
    kept: list[Source] = []
    for source in sources:
        if gives_way(source) and (owner[source.path] != source.name or any(
                other.match(Path(source.path), home) is not None for other in others)):
            projects.pop(source.name, None)
            continue
        kept.append(source)
    return kept, projects


def memory_roots(config: Config) -> list[Path]:
    """Where a git repository counts as a memory directory, memoryd's to commit its edits in:
    the roots of the memory sources. Not a project's (its repository is the user's code), nor
    those of the files the agents' own files lead to (an imported note, a CLAUDE.md above a
    project: ``~/work/CLAUDE.md`` made every repository in ``~/work`` memoryd's)."""
    sources, projects = configured_sources(config)
    home = Path.home()
    return [Path(os.path.realpath(s.root(home))) for s in sources
            if s.kind == "memory" and s.name not in projects and not gives_way(s)]

