"""What memoryd watches: sources, their globs, and walking them (:mod:`memoryd.agent_sources`
has which sources there are).

A :class:`Source` is a glob with an optional ``{agent}`` placeholder, a kind (``memory`` or
``transcript``) and a format. Every file a source matches belongs to one agent: the one the
placeholder captures, or the source's fixed ``agent``.

Glob syntax
-----------

Paths are absolute or start with ``~/``. ``*`` matches within one path segment, ``?`` one
character, ``**`` (a whole segment) any number of segments including none — so ``d/**/*.md``
matches ``d/a.md`` — and a final ``**`` every file at any depth below. ``{agent}`` matches (part
of) one segment and must be a valid agent name (:data:`memoryd.names.AGENT_NAME`); a directory
whose name is not one is not matched. Every other character is literal. Hidden files and
directories are matched like any other, but nothing below a source's root whose path has a
``.git`` segment is ever matched, nor, for a built-in source, anything in the directories its
``excluded`` names (Cline's ``.clinerules/hooks/``: scripts, not rules), nor, for any source, a
file named as editors, merge tools and memoryd itself name their copies of a file
(:func:`is_scratch_name`: ``MEMORY.md~``, ``.x.md.swp``, ``sec_BASE_5084.md``,
``x.md.memoryd-conflict-…``).

Walking
-------

:func:`scan` walks each existing root once, descending only into directories where some source
can still match and never into ``.git``; symlinked files are yielded under their link path. A
symlinked directory below a source's root (a memory folder kept in a dotfiles repository) is
followed, its files yielded under the link's path, unless following it would read a file twice
or never end: its target lies in a directory walked already (a source's root, or another
followed link's target: a loop is one), or holds one. Each is told of as a :class:`DirLink`.
Missing roots are skipped and unreadable directories are logged at debug level and skipped.
:func:`watch_roots` gives the existing roots to watch, recursively or each directory alone; the
daemon calls it again from time to time, so a root created (or deleted and re-created) later is
picked up.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd_client.wire import SOURCE_FORMATS, SOURCE_KINDS, TRANSCRIPT_FORMATS

from memoryd.errors import ConfigError
from memoryd.names import AGENT_NAME
from memoryd.regular_file import why_unread
from memoryd.text import utf8_name

log = logging.getLogger(__name__)

KINDS = SOURCE_KINDS
FORMATS = SOURCE_FORMATS
FORMATS_BY_KIND = {"memory": ("markdown",), "transcript": TRANSCRIPT_FORMATS}
PLACEHOLDER = "{agent}"
SOURCE_KEYS = ("name", "path", "kind", "format", "agent", "notebook_lines")
#: Archives of notebooks (memoryd.passes.notebooks) live in this directory beside the notebook
#: and belong to the notebook's source.
ARCHIVE_DIR = "archive"
_REQUIRED_KEYS = ("name", "path", "kind", "format")
_AGENT_RE = AGENT_NAME.pattern.removeprefix("^").removesuffix("$")
_WILDCARDS = ("*", "?", PLACEHOLDER)
#: The names editors, merge tools and memoryd give the copies of a file they keep beside it:
#: backups (``x.md~``, ``x.md.orig``, ``x.md.rej``), emacs' autosave (``#x.md#``) and lock
#: (``.#x.md``, a dangling symlink), vim's swap files (``.x.md.swp``, ``.swo``, ``.swn``,
#: ``.swx``), JetBrains' safe write (``x.md___jb_tmp___``, ``___jb_old___``), ``git
#: mergetool``'s (``x_BACKUP_5084.md``, ``_BASE_``, ``_LOCAL_``, ``_REMOTE_``) and memoryd's own
#: (``x.md.memoryd-conflict-20261128-120000``: an edit it could not merge, kept beside the file;
#: ``.x.md.memoryd-4242.tmp``: a write on its way).
_SCRATCH = re.compile(r".*~|#.*#|\.#.*|.*\.(?:sw[nopx]|orig|rej)|.*___jb_(?:tmp|old)___"
                      r"|.*_(?:BACKUP|BASE|LOCAL|REMOTE)_\d+(?:\.[^.]*)?"
                      r"|.*\.memoryd-conflict-[0-9-]+|\.(?:.+\.)?memoryd-\d+\.tmp",
                      re.DOTALL)


@dataclass(frozen=True)
class Source:
    """One glob memoryd watches. Invalid values raise :class:`ConfigError` on construction."""

    name: str
    path: str
    kind: str
    format: str
    agent: str | None = None
    notebook_lines: int | None = None  # this source's notebook cap (else passes.notebook_lines)
    #: directories below the root (relative to it) whose files the glob does not match: what
    #: an agent keeps there is not memory (a built-in's alone; no setting of a source's)
    excluded: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_source(self)

    def root(self, home: Path) -> Path:
        """The longest leading directory with no wildcard or placeholder in it."""
        return Path(_compile(self, home).root)

    def match(self, path: Path, home: Path) -> str | None:
        """The agent ``path`` (absolute) belongs to if this source matches it, else None."""
        return _compile(self, home).agent_for(str(path))


def relevant(sources: Sequence[Source], path: str, home: Path) -> bool:
    """Whether a filesystem event at ``path`` can concern a source: the path matches one, or
    it may be a directory on the way to matches (the watcher's cheap event filter)."""
    for source in sources:
        compiled = _compile(source, home)
        if compiled.agent_for(path) is not None or compiled.may_contain(path):
            return True
    return False


def is_scratch_name(name: str) -> bool:
    """Whether a file's name is one an editor, a merge tool or memoryd gives a copy of a file
    it keeps beside it (a backup, a swap or lock file, a merge's sides): never a memory file
    of its own, in any source (a glob ending in ``**`` matched them, and their stale text was
    indexed and injected as a second notebook). A source's glob that names its file
    (``CLAUDE.md``) never matched them; this rule is the same for every glob."""
    return _SCRATCH.fullmatch(name) is not None


def validate_source(data: Mapping[str, Any]) -> Source:
    """A :class:`Source` from a TOML table ``{name, path, kind, format, agent?}``."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"a source must be a table, not {type(data).__name__}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        path = data.get("path")
        label = f"source with path {path!r}" if isinstance(path, str) else "a source"
        if "name" not in data:
            raise ConfigError(f"{label}: missing 'name'")
        raise ConfigError(f"{label}: 'name' must be a non-empty string")
    label = f"source {name!r}"
    unknown = sorted(str(key) for key in data if key not in SOURCE_KEYS)
    if unknown:
        raise ConfigError(f"{label}: unknown key {unknown[0]!r} "
                          f"(allowed: {', '.join(SOURCE_KEYS)})")
    for key in _REQUIRED_KEYS:
        if key not in data:
            raise ConfigError(f"{label}: missing {key!r}")
    for key in SOURCE_KEYS:
        if key == "notebook_lines":
            lines = data.get(key)
            if key in data and (not isinstance(lines, int) or isinstance(lines, bool)
                                or not 10 <= lines <= 100_000):
                raise ConfigError(f"{label}: 'notebook_lines' must be a whole number of lines "
                                  f"from 10 to 100000, got {lines!r}")
        elif key in data and not isinstance(data[key], str):
            raise ConfigError(f"{label}: {key!r} must be a string")
    return Source(name=name, path=data["path"], kind=data["kind"], format=data["format"],
                  agent=data.get("agent"), notebook_lines=data.get("notebook_lines"))


@dataclass(frozen=True)
class DirLink:
    """A symlinked directory below a source's root, as a scan met it: ``path`` the link (as
    the scan names its files), ``target`` its target's real path. ``why_not`` is None when it
    was followed; else why not, and ``read_as`` where the scan reads its target's files
    instead (the target's name there), if it does."""

    path: str
    target: str
    why_not: str | None = None
    read_as: str | None = None


#: Whether a symlinked directory may not be followed for a reason of the caller's: ``(link,
#: target's real path)`` → why not, or None.
LinkRule = Callable[[str, str], "str | None"]


#: Told of what a scan cannot read: (the source, the path, why in words).
Unread = Callable[[Source, str, str], None]


def scan(sources: Sequence[Source], home: Path, links: list[DirLink] | None = None,
         refuse: LinkRule | None = None,
         unread: Unread | None = None) -> Iterator[tuple[Source, Path, str]]:
    """Yield ``(source, path, agent)`` for every regular file a source matches. The symlinked
    directories met below the roots are appended to ``links``, each followed unless it would
    read a file twice or ``refuse`` gives a reason not to. ``unread`` is told of each
    directory a source looks into that cannot be listed, and of each path a source matches
    that is no regular file (a FIFO, a device, a symlink loop)."""
    compiled = [(source, _compile(source, home)) for source in sources]
    following = _Following(compiled, links if links is not None else [], refuse)
    for top in _top_roots([c.root for _, c in compiled]):
        group = [(s, c) for s, c in compiled if within(c.root, top)]
        if os.path.isdir(top):
            yield from _walk(top, group, following, unread)


def watch_roots(sources: Sequence[Source], home: Path) -> list[tuple[Path, bool]]:
    """The existing roots to watch, each with whether its watch must be recursive: a source
    whose files lie directly in its root (``~/.claude/CLAUDE.md``, a project's ``AGENTS.md``)
    needs that directory alone, and its notebooks' ``archive/``; one with directories below
    its root, all of them. A root inside a recursive one is left to it.

    Watching a project's root recursively for its CLAUDE.md took a watch for each of its
    directories (3,072 for one with a node_modules), out of what the OS gives every program
    of the user together. A root reached from an enclosing root only through a symlinked
    directory is kept on its own, since a recursive watcher does not necessarily follow
    symlinks.
    """
    deep: dict[str, bool] = {}
    for source in sources:
        compiled = _compile(source, home)
        deep[compiled.root] = deep.get(compiled.root, False) or compiled.deep
        if not compiled.deep:
            deep.setdefault(_join(compiled.root, ARCHIVE_DIR), False)
    kept: list[tuple[str, bool]] = []
    for root in sorted(deep, key=_depth_key):
        if not os.path.isdir(root):
            continue
        if any(recursive and within(root, outer) and not _crosses_symlink(outer, root)
               for outer, recursive in kept):
            continue
        kept.append((root, deep[root]))
    return sorted((Path(root), recursive) for root, recursive in kept)


# -- compiled globs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Compiled:
    root: str               # literal directory prefix, absolute, no trailing slash (except "/")
    pattern: re.Pattern[str]  # the whole glob
    dirs: re.Pattern[str]   # directories at or below root that may contain a match
    agent: str | None       # the fixed agent, when the glob has no placeholder
    deep: bool = True       # the glob reaches below the root (False: files directly in it)
    excluded: tuple[str, ...] = ()  # absolute directories nothing below which is matched

    def agent_for(self, path: str) -> str | None:
        agent = self._agent_for(path)
        if agent is None:  # a notebook's archive belongs to the notebook's source
            head, _, name = path.rpartition("/")
            parent, _, directory = head.rpartition("/")
            if directory == ARCHIVE_DIR and name.endswith(".md"):
                return self._agent_for(f"{parent}/{name}")
        return agent

    def _agent_for(self, path: str) -> str | None:
        found = self.pattern.fullmatch(path)
        if found is None or is_scratch_name(path.rpartition("/")[2]):
            return None
        below = path[len(self.root.rstrip("/")):]
        if "/.git/" in below or below.endswith("/.git") or self.leaves_out(path):
            return None
        return self.agent if self.agent is not None else found.group("agent")

    def leaves_out(self, path: str) -> bool:
        """Whether ``path`` is in (or is) a directory the source excludes."""
        return any(within(path, directory) for directory in self.excluded)

    def may_contain(self, directory: str) -> bool:
        """Whether walking ``directory`` can lead to a match (including reaching the root)."""
        if self.leaves_out(directory):
            return False
        if within(self.root, directory) or self.dirs.fullmatch(directory) is not None:
            return True
        parent, _, name = directory.rpartition("/")
        return name == ARCHIVE_DIR and (parent == self.root or
                                        self.dirs.fullmatch(parent) is not None)


@functools.lru_cache(maxsize=1024)
def _compile(source: Source, home: Path) -> _Compiled:
    # The home directory is literal even if its name holds a wildcard character.
    base = str(home).rstrip("/") if source.path.startswith("~/") else ""
    segments = source.path.split("/")[1:]
    literal = _fixed_segments(segments)
    root = "/".join([base, *segments[:literal]]) or "/"
    rest = segments[literal:]
    prefix = re.escape(root.rstrip("/"))

    body = ""
    for index, segment in enumerate(rest):
        last = index == len(rest) - 1
        if segment == "**":
            body += "(?:/[^/]+)+" if last else "(?:/[^/]+)*"
        else:
            body += "/" + _segment_regex(segment)

    dirs = ""
    dir_segments = rest if rest[-1] == "**" else rest[:-1]
    for segment in reversed(dir_segments):
        dirs = "(?:/.*)?" if segment == "**" else f"(?:/{_segment_regex(segment)}{dirs})?"

    return _Compiled(root=root, pattern=re.compile(prefix + body),
                     dirs=re.compile(prefix + dirs), agent=source.agent,
                     deep=len(rest) > 1 or rest == ["**"],
                     excluded=tuple(_join(root, below) for below in source.excluded))


def broad_watch(source: Source, home: Path) -> str | None:
    """Why a source costs much to watch, or None: a glob that reaches below the home
    directory (or a directory above it), ``~/**/*.md`` or ``~/*/notes.md``, has memoryd watch
    every directory there, one watch each out of what the OS gives all the user's programs,
    and walk them at each rescan. ``~/*.md`` watches the home directory alone."""
    compiled = _compile(source, home)
    mine = str(home).rstrip("/") or "/"
    if not compiled.deep or not within(mine, compiled.root):
        return None
    where = "your home directory" if compiled.root == mine else compiled.root
    return (f"source {source.name}: {source.path} reaches below {where}, so memoryd watches "
            "every directory in it (one watch each, out of what the OS gives all your "
            "programs) and walks them at each rescan; a directory nearer the files "
            "('~/notes/**/*.md') costs less")


def _fixed_segments(segments: list[str]) -> int:
    """How many of a glob's leading segments (after the first "/") are its fixed directory
    part: those before the first wildcard, the file name's segment never among them."""
    literal = 0
    while literal < len(segments) - 1 and not _has_wildcard(segments[literal]):
        literal += 1
    return literal


def _segment_regex(segment: str) -> str:
    out = []
    for part in re.split(r"(\{agent\}|\*|\?)", segment):
        if part == PLACEHOLDER:
            out.append(f"(?P<agent>{_AGENT_RE})")
        elif part == "*":
            out.append("[^/]*")
        elif part == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(part))
    return "".join(out)


def _has_wildcard(segment: str) -> bool:
    return any(wildcard in segment for wildcard in _WILDCARDS)


def _check_source(source: Source) -> None:
    label = f"source {source.name!r}" if source.name else "a source"
    if not isinstance(source.name, str) or not source.name:
        raise ConfigError(f"{label}: 'name' must be a non-empty string")
    if source.kind not in KINDS:
        raise ConfigError(f"{label}: unknown kind {source.kind!r} (expected one of "
                          f"{', '.join(KINDS)})")
    if source.format not in FORMATS:
        raise ConfigError(f"{label}: unknown format {source.format!r} (expected one of "
                          f"{', '.join(FORMATS)})")
    if source.format not in FORMATS_BY_KIND[source.kind]:
        raise ConfigError(f"{label}: format {source.format!r} does not fit kind "
                          f"{source.kind!r} (use {' or '.join(FORMATS_BY_KIND[source.kind])})")
    _check_path(label, source.path)
    has_placeholder = PLACEHOLDER in source.path
    if has_placeholder and source.agent is not None:
        raise ConfigError(f"{label}: set 'agent' or put {{agent}} in 'path', not both")
    if not has_placeholder and source.agent is None:
        raise ConfigError(f"{label}: no agent: set 'agent' or put {{agent}} in 'path'")
    if source.agent is not None and not AGENT_NAME.match(source.agent):
        raise ConfigError(f"{label}: invalid agent name {source.agent!r} in 'agent' (1 to 64 "
                          "letters, digits, '.', '_' or '-', starting with a letter or digit)")


#: Where a source's fixed part may not end: the file system's root, and the kernel's own.
UNWATCHABLE = ("/", "/proc", "/sys", "/dev")


def _check_path(label: str, path: str) -> None:
    if not isinstance(path, str) or not path:
        raise ConfigError(f"{label}: 'path' must be a non-empty string")
    if not path.startswith(("/", "~/")):
        raise ConfigError(f"{label}: 'path' {path!r} must be absolute or start with ~/")
    if not utf8_name(path):  # a name the file system gave, not UTF-8: neither the watcher
        # nor the index can hold it (a watch of it stopped the watcher, again and again)
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise ConfigError(f"{label}: 'path' '{shown}' is not valid UTF-8 (rename it)")
    if path.count(PLACEHOLDER) > 1:
        raise ConfigError(f"{label}: 'path' {path!r} has {{agent}} more than once")
    if "{" in path.replace(PLACEHOLDER, "") or "}" in path.replace(PLACEHOLDER, ""):
        raise ConfigError(f"{label}: 'path' {path!r}: the only placeholder is {{agent}}")
    if path.endswith("/"):  # a directory: "has an empty segment" said nothing useful
        example = "~/notes/*.md" if path == "/" else f"{path}*.md"
        raise ConfigError(f"{label}: 'path' {path!r} names "
                          f"{'the root directory' if path == '/' else 'a directory'}: a "
                          f"source's path is a glob of its files, such as {example!r} (** for "
                          "any depth)")
    for segment in path.split("/")[1:]:
        if segment in ("", ".", ".."):
            raise ConfigError(f"{label}: 'path' {path!r} has an empty, '.' or '..' segment")
        if "**" in segment and segment != "**":
            raise ConfigError(f"{label}: 'path' {path!r}: ** must be a whole segment")
    if path.startswith("/"):
        segments = path.split("/")[1:]
        top = "/" + "/".join(segments[:min(_fixed_segments(segments), 1)])
        if top in UNWATCHABLE:  # its directories are watched and walked: all of them
            raise ConfigError(f"{label}: 'path' {path!r} would have memoryd watch and walk "
                              f"{'the whole file system' if top == '/' else top}: start it "
                              "with the directory the files are in")


# -- walking -------------------------------------------------------------------------------------


class _Following:
    """Which symlinked directories below the roots a scan follows: those whose target is
    neither in a tree it walks already (a source's root that reaches below it, or a followed
    link's target; a loop's target is one) nor holds a directory it walks (a root, which a
    link to ``~`` would read again under the link's name)."""

    def __init__(self, compiled: list[tuple[Source, _Compiled]], links: list[DirLink],
                 refuse: LinkRule | None) -> None:
        self.links = links
        self.refuse = refuse
        #: (name, real path, walked below it) of the roots, then of the links followed
        self.trees: list[tuple[str, str, bool]] = []
        for root in sorted({c.root for _, c in compiled}):
            if os.path.isdir(root):
                deep = any(c.deep for _, c in compiled if c.root == root)
                self.trees.append((root, os.path.realpath(root), deep))

    def follow(self, path: str) -> bool:
        """Whether the scan walks the symlinked directory ``path`` (told in ``links``)."""
        target = os.path.realpath(path)
        read_as = self.named(target)
        why = None
        held = next((name for name, real, _ in self.trees if within(real, target)), None)
        if within(os.path.realpath(os.path.dirname(path)), target):
            why = f"a loop: it leads to {target}, a directory above it"
        elif read_as is not None:
            why = f"its target {target} is read already as {read_as}, its files indexed there"
        elif held is not None:
            why = (f"its target {target} holds {held}, which memoryd reads already (its files "
                   "would be indexed twice): link the directory the memory files are in instead")
        elif self.refuse is not None:
            why = self.refuse(path, target)
        if why is not None:
            self.links.append(DirLink(path, target, why, read_as))
            return False
        self.trees.append((path, target, True))
        self.links.append(DirLink(path, target))
        return True

    def named(self, real: str) -> str | None:
        """The name the scan reads the real path ``real`` under, if a tree it walks below
        holds it (the innermost)."""
        best = None
        for name, root, deep in self.trees:
            if deep and within(real, root) and (best is None or len(root) > len(best[1])):
                best = (name, root)
        if best is None:
            return None
        name, root = best
        return name + real[len(root):] if root != "/" else _join(name, real.lstrip("/"))


def _walk(top: str, group: list[tuple[Source, _Compiled]], following: _Following,
          unread: Unread | None = None) -> Iterator[tuple[Source, Path, str]]:
    stack = [top]
    while stack:
        directory = stack.pop()
        entries = _listed(directory, group, unread)
        if entries is None:
            continue
        subdirs = []
        for entry in entries:
            if entry.name == ".git":
                continue
            path = _join(directory, entry.name)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if any(c.may_contain(path) for _, c in group):
                        subdirs.append(path)
                elif entry.is_symlink():
                    if entry.is_dir():
                        if any(within(c.root, path) for _, c in group):  # on the way to a root
                            subdirs.append(path)
                        elif any(c.may_contain(path) for _, c in group) and \
                                following.follow(path):
                            subdirs.append(path)
                    elif entry.is_file():
                        yield from _matches(path, group)
                    else:
                        _tell_unread(path, group, unread)
                elif entry.is_file(follow_symlinks=False):
                    yield from _matches(path, group)
                else:
                    _tell_unread(path, group, unread)
            except OSError as exc:  # vanished or unreadable between listing and stat
                log.debug("skipping %s: %s", path, exc)
                _tell_unread(path, group, unread)
        stack.extend(reversed(subdirs))


def _listed(directory: str, group: list[tuple[Source, _Compiled]],
            unread: Unread | None) -> list[os.DirEntry[str]] | None:
    """The entries of a directory, by name; None when it cannot be listed (``unread`` told
    why, for each source that looks into it, unless it is gone)."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda entry: entry.name)
    except OSError as exc:
        log.debug("skipping unreadable directory %s: %s", directory, exc)
        if unread is not None and exc.errno != errno.ENOENT:
            for source, compiled in group:
                if compiled.may_contain(directory):
                    unread(source, directory, f"directory not read ({exc.strerror or exc}): "
                           "its files are not indexed; those indexed keep their entries")
        return None


def _tell_unread(path: str, group: list[tuple[Source, _Compiled]],
                 unread: Unread | None) -> None:
    """A path that is no regular file: ``unread`` is told why, if a source matches it."""
    if unread is None:
        return
    matched = list(_matches(path, group))
    if not matched:
        return
    try:
        why = why_unread(path)
    except OSError:  # gone since it was listed
        return
    if why is not None:
        for source, _, _ in matched:
            unread(source, path, f"not read: {why}")


def _matches(path: str,
             group: list[tuple[Source, _Compiled]]) -> Iterator[tuple[Source, Path, str]]:
    for source, compiled in group:
        agent = compiled.agent_for(path)
        if agent is not None:
            yield source, Path(path), agent


def _join(directory: str, name: str) -> str:
    return directory + name if directory.endswith("/") else directory + "/" + name


def within(path: str, outer: str) -> bool:
    """Whether ``path`` is ``outer`` or below it (both absolute, normalised strings)."""
    return path == outer or outer == "/" or path.startswith(outer + "/")


def _depth_key(path: str) -> tuple[int, str]:
    return (0 if path == "/" else path.count("/"), path)


def _top_roots(roots: Sequence[str]) -> list[str]:
    tops: list[str] = []
    for root in sorted(set(roots), key=_depth_key):
        if not any(within(root, top) for top in tops):
            tops.append(root)
    return tops


def _crosses_symlink(outer: str, inner: str) -> bool:
    """Whether a directory strictly below ``outer`` on the way to ``inner`` is a symlink."""
    current = outer.rstrip("/")
    for name in inner[len(current):].strip("/").split("/"):
        if not name:
            continue
        current += "/" + name
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return True
        except OSError:
            return False
    return False
