"""The instruction files in a project's subdirectories.

The agents read more of a project than its root's files: Claude Code loads the ``CLAUDE.md``
of a subdirectory once it works there; Codex reads an ``AGENTS.override.md`` or ``AGENTS.md``
(or a name of its ``project_doc_fallback_filenames``) in each directory from the repository's
root down to where it runs; Gemini CLI reads its context files (``GEMINI.md``, or the names its
settings give) in the project's subdirectories; Cursor and Windsurf their rules directories
(``.cursor/rules/``, ``.windsurf/rules/``) there too. In a monorepo (``packages/api/CLAUDE.md``,
``services/web/AGENTS.md``) that is where much of what the agents were told lives.

A project root is not watched recursively (a watch for every directory of a tree with a
``node_modules`` is more than the OS gives a user), so memoryd looks for these files by walking
the tree: breadth first, not into hidden directories (``.git``, ``.venv``), directories of
installed or built things (:data:`PRUNED`) or symlinked ones, nor into a directory holding a
``.git`` (a directory or a file): a nested repository, a submodule or a worktree checked out
inside the project is another project, or another checkout of this one (its files on another
branch), not the project's own subdirectory. At most :data:`MAX_DIRS` directories a root are
looked into (the shallow ones first; the log says so once when a tree has more). A walk is made
again when the last one is :data:`REST_FACTOR` times its own duration old (a tree of a
few hundred directories every few seconds, one of 10,000 every ten seconds or so), so a file
added is found in seconds without the walks costing more than a sliver of one core.
:mod:`memoryd.agent_sources` makes a source of each file found
(``project:<root>:nested:<path in it>``); its directory alone is watched.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections import deque

from memoryd.agent_settings import loaded_names

log = logging.getLogger("memoryd.nested_files")

#: Directories not walked into (besides hidden ones): what tools install or build, not notes.
PRUNED = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "target", "dist",
                    "build", "vendor", "bower_components"})
#: The rules directories Cursor and Windsurf read in a project's subdirectories too: the hidden
#: directory, the agent, and the glob of its rules below its ``rules/``.
RULE_DIRS = {".cursor": ("cursor", "**/*.mdc"), ".windsurf": ("windsurf", "**/*.md")}
#: The directories of one root looked into, at most.
MAX_DIRS = 10_000
#: A walk is due again once the last one is this many times its own duration old.
REST_FACTOR = 50

#: Each root's last walk: (when the next is due, the names looked for, what it found).
_WALKED: dict[str, tuple[float, frozenset[str], tuple[str, ...]]] = {}


def instruction_names(project: str) -> dict[str, str]:
    """Each file name an agent reads as its instructions in a project's directories, with
    the agent its entries belong to (a name two agents read, ``AGENTS.md``, is Codex's, as in
    the project's root)."""
    names = {"CLAUDE.md": "claude-code", "AGENTS.override.md": "codex", "AGENTS.md": "codex",
             "GEMINI.md": "gemini"}
    for agent in ("gemini", "codex"):  # the names their settings give
        for name in sorted(loaded_names(agent, project)):
            names.setdefault(name, agent)
    return names


def nested(project: str, walk: bool = True) -> list[tuple[str, str]]:
    """The instruction files in the subdirectories of ``project`` (a root, absolute), below it
    at any depth, and the globs of the rules directories of :data:`RULE_DIRS` there, each with
    the agent it is read by: from the last walk while it is fresh (see the module
    docstring), or without ``walk`` whatever the last walk found (none without one)."""
    names = instruction_names(project)
    now = time.monotonic()
    last = _WALKED.get(project)
    if not walk:
        found = last[2] if last is not None else ()
    elif last is not None and last[1] == frozenset(names) and now < last[0]:
        found = last[2]
    else:
        found = _walk(project, frozenset(names))
        took = time.monotonic() - now
        _WALKED[project] = (time.monotonic() + REST_FACTOR * took, frozenset(names), found)
    files = [(path, names[name]) for path in found if (name := os.path.basename(path)) in names]
    rules = [(f"{path}/{RULE_DIRS[hidden][1]}", RULE_DIRS[hidden][0]) for path in found
             if os.path.basename(path) == "rules"
             and (hidden := os.path.basename(os.path.dirname(path))) in RULE_DIRS]
    return [*files, *rules]


def _walk(root: str, names: frozenset[str]) -> tuple[str, ...]:
    found: list[str] = []
    queue = deque([root])
    looked = 0
    while queue:
        if looked == MAX_DIRS:
            _too_many(root)
            break
        directory = queue.popleft()
        looked += 1
        try:
            with os.scandir(directory) as listed:
                entries = sorted(listed, key=lambda e: e.name)
        except OSError:  # a directory unreadable or gone: the agents cannot read it either
            continue
        if directory != root and any(entry.name == ".git" for entry in entries):
            continue  # another repository, or another checkout: not this project's
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and entry.name not in PRUNED:
                        queue.append(entry.path)
                    elif entry.name in RULE_DIRS and directory != root \
                            and os.path.isdir(rules := f"{entry.path}/rules") \
                            and not os.path.islink(rules):
                        found.append(rules)
                elif directory != root and entry.name in names \
                        and entry.is_file(follow_symlinks=True):
                    found.append(entry.path)
            except OSError:  # gone or unreadable meanwhile: not an instruction file
                continue
    return tuple(found)


@functools.lru_cache(maxsize=64)
def _too_many(root: str) -> None:
    log.warning("Project root %s has more than %d directories: memoryd looked for the agents' "
                "instruction files (CLAUDE.md, AGENTS.md, GEMINI.md) in the %d nearest its top "
                "only.", root, MAX_DIRS, MAX_DIRS)
