"""The files an agent's instruction file imports with ``@path``: Claude Code's CLAUDE.md and
Gemini CLI's GEMINI.md (Gemini's memory import processor reads them as Claude Code does).

A ``CLAUDE.md`` (the user's, or a project's ``CLAUDE.md``, ``CLAUDE.local.md`` or
``.claude/CLAUDE.md``) may name other files: ``@docs/git-workflow.md``,
``@~/.claude/my-project-prefs.md``, ``@/srv/team/conventions.md``; so may a ``GEMINI.md`` (or
a context file of another name Gemini's settings give). The agent loads them with it, and an
imported file may import in turn, up to :data:`HOPS` hops. A relative path is relative to the
file that names it. An ``@`` is an import only at the start of a line or after white space, and
outside code blocks, code spans and HTML comments (``ana@example.org`` and a ``@decorator`` in
a code block are not imports); a backslash escapes a space in the path.

memoryd indexes the imported files that are notes and exist (:data:`NOTE_SUFFIXES`; Gemini
imports markdown alone: :data:`MARKDOWN`): :mod:`memoryd.agent_sources` makes a source of each, and
the daemon asks again every few seconds (a file is read again when its version changes); the
memory block leaves them out of its list of files (the agent loads them itself). A file caught with
fewer imports than it had, less than a second after it changed, keeps its earlier ones until it
has been still for a second: an editor truncates, then writes, and an import dropped for that
moment would take its file's entries out of the index only to index them again, as new
entries.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Sequence

from memoryd.agent_settings import claude_home, gemini_context_names, gemini_home, gemini_settings
from memoryd.nested_files import nested

#: How many times an imported file may import again (Claude Code's and Gemini CLI's limit).
HOPS = 5
#: The imported files memoryd indexes: notes. Claude Code imports any file (``@package.json``);
#: memoryd's memory is what people write down, not a project's configuration or code.
NOTE_SUFFIXES = (".md", ".markdown", ".mdx", ".txt")
#: What Gemini CLI imports.
MARKDOWN = (".md",)
#: A project's CLAUDE.md files (the user's is ``~/.claude/CLAUDE.md``).
CLAUDE_FILES = ("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md")
#: The part of a file read for its imports.
READ_BYTES = 1 << 20
#: A file that lost imports keeps its earlier ones until it has been still this long.
SETTLE_NS = 1_000_000_000

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:[^\s\\]|\\ )+)")

#: Each importing file's imports as last taken: (its version, the imported paths).
_TAKEN: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}


def agent_imports(agent: str, project: str | None = None, walk: bool = True) -> list[str]:
    """The notes ``agent`` (Claude Code, Gemini CLI; none for another) loads through the
    imports of its instruction files: the user's, or with ``project`` a project root's
    (without ``walk``, of the subdirectories' files the last walk found: a session's block
    does not wait on one)."""
    return imported(instruction_files(agent, project, walk),
                    MARKDOWN if agent == "gemini" else NOTE_SUFFIXES)


def instruction_files(agent: str, project: str | None = None, walk: bool = True) -> list[str]:
    """The files whose imports ``agent`` follows: the user's, or with ``project`` a project
    root's (Gemini CLI's by the names its settings give them, a workspace's own first), then
    those of its subdirectories (:mod:`memoryd.nested_files`)."""
    if agent == "claude-code":
        if project is None:
            return [f"{claude_home()}/CLAUDE.md"]
        return [*(f"{project}/{name}" for name in CLAUDE_FILES),
                *_nested(project, {"CLAUDE.md"}, walk)]
    if agent == "gemini":
        home = gemini_home()
        names = gemini_context_names(gemini_settings(home, project))
        return [*(f"{home if project is None else project}/{name}" for name in names),
                *(_nested(project, set(names), walk) if project is not None else ())]
    return []


def _nested(project: str, names: set[str], walk: bool) -> list[str]:
    return [path for path, _ in nested(os.path.expanduser(project) or "/", walk)
            if os.path.basename(path) in names]


def imported(starts: Sequence[str], suffixes: tuple[str, ...] = NOTE_SUFFIXES) -> list[str]:
    """The notes (files named ``*<suffix>``) these files (absolute paths, or ``~/…``) import,
    directly or through other imports, nearest first; each once, none of the ``starts``
    themselves."""
    frontier = [os.path.normpath(os.path.expanduser(path)) for path in starts]
    seen = set(frontier)
    found: list[str] = []
    for _ in range(HOPS):
        following: list[str] = []
        for path in frontier:
            for name in imports_of(path):
                if name not in seen:
                    seen.add(name)
                    if _is_note(name, suffixes):
                        found.append(name)
                        following.append(name)
        frontier = following
    return found


def imports_of(path: str) -> tuple[str, ...]:
    """The paths one file imports (absolute, normalised; existing or not), as its version now
    says, or as an earlier one did when this one lost imports (the module docstring)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        _TAKEN.pop(path, None)
        return ()
    if not stat.S_ISREG(info.st_mode):
        return ()
    version = (info.st_mtime_ns, info.st_size, info.st_ino)
    taken = _TAKEN.get(path)
    if taken is not None and taken[0] == version:
        return taken[1]
    names = _named(path)
    if taken is not None and not set(names) >= set(taken[1]) \
            and time.time_ns() - info.st_mtime_ns < SETTLE_NS:
        return taken[1]  # perhaps caught half-written: asked again in a few seconds
    _TAKEN[path] = (version, names)
    return names


def _named(path: str) -> tuple[str, ...]:
    """The paths a file imports."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(READ_BYTES).decode("utf-8", "replace")
    except OSError:
        return ()
    return tuple(dict.fromkeys(_resolve(name, os.path.dirname(path)) for name in names_in(text)))


def names_in(text: str) -> list[str]:
    """The ``@`` imports of a markdown text as written (the module docstring says which)."""
    names: list[str] = []
    fence: str | None = None
    for line in _without_comments(text).splitlines():
        opening = _FENCE.match(line)
        if fence is not None:  # in a code block until a fence of its kind, as long or longer
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line[opening.end():].strip():
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        if "@" in line:
            names += [match.replace("\\ ", " ")
                      for match in _IMPORT.findall(_without_code_spans(line))]
    return names


def _without_comments(text: str) -> str:
    """The text without its HTML comments (one not closed runs to the end, as in markdown);
    in one pass: a pattern took seconds over a file of many unclosed ``<!--``."""
    kept: list[str] = []
    at = 0
    while (start := text.find("<!--", at)) >= 0:
        kept.append(text[at:start])
        end = text.find("-->", start + 4)
        if end < 0:
            return "".join(kept)
        kept.append(" ")
        at = end + 3
    kept.append(text[at:])
    return "".join(kept)


def _without_code_spans(line: str) -> str:
    """The line without its code spans: a run of backticks up to the next run as long (a run
    that none closes is literal), in one pass over the runs."""
    runs = [(match.start(), match.end()) for match in _BACKTICKS.finditer(line)]
    following: dict[int, int] = {}  # run → the next run as long
    last: dict[int, int] = {}
    for number in range(len(runs) - 1, -1, -1):
        size = runs[number][1] - runs[number][0]
        if size in last:
            following[number] = last[size]
        last[size] = number
    kept: list[str] = []
    at = number = 0
    while number < len(runs):
        closing = following.get(number)
        if closing is None:
            number += 1
            continue
        kept += [line[at:runs[number][0]], " "]
        at = runs[closing][1]
        number = closing + 1
    kept.append(line[at:])
    return "".join(kept)


def _resolve(name: str, directory: str) -> str:
    if name.startswith("~/"):
        return os.path.normpath(os.path.expanduser(name))
    return os.path.normpath(os.path.join(directory, name))


def _is_note(path: str, suffixes: tuple[str, ...]) -> bool:
    """A file memoryd indexes as an import: a note that exists, its path free of what a
    source's glob would read as a wildcard."""
    return path.lower().endswith(suffixes) and not any(c in path for c in "*?{}") \
        and os.path.isfile(path)
