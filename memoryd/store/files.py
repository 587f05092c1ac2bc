"""The ``files`` table: every watched file the index has read, and how far.

One row per path: which source and agent it belongs to, its kind (``memory``: a markdown file
of entries; ``transcript``: a session's log, read by offset), its stat when last read, a
memory file's description, type, pinned flag and frontmatter, the text it was indexed from
(``text_key``: memoryd.ingest.file_read.memory_key), and the problem that kept it (or part of
it) out (``error``). The indexer writes it (memoryd.ingest.indexer); the passes, the memory
block and ``memory status`` read it, through the methods here (``Store.files``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import apsw

from memoryd.store.fetch import integer

#: The columns a file's row may be saved with.
FILE_COLUMNS = frozenset((
    "path", "source", "kind", "agent", "device", "inode", "size", "mtime", "offset",
    "description", "type", "pinned", "frontmatter", "indexed", "error", "text_key", "project"))


@dataclass(frozen=True)
class FileOrigin:
    """Where a watched file belongs: its source, kind, agent and project."""

    source: str
    kind: str
    agent: str
    project: str | None


@dataclass(frozen=True)
class KnownFile:
    """A file as the index last read it (what the watcher compares a file on disk with, and
    the sources as they are now with what they were when it was read)."""

    path: str
    size: int | None
    mtime: float | None
    inode: int | None
    text_key: str | None
    error: str | None
    origin: FileOrigin

    @property
    def kind(self) -> str:
        return self.origin.kind


@dataclass(frozen=True)
class FileState:
    """What a memory file was indexed from: its origin, its text (``text_key``), its problem."""

    origin: FileOrigin
    text_key: str | None
    error: str | None


def _below(directory: str) -> tuple[str, str]:
    """The bounds of the paths below ``directory``: a range of paths ('/' sorts right before
    '0'), not LIKE and its escapes."""
    root = directory.rstrip("/")
    return root + "/", root + "0"


class Files:
    """The ``files`` table (on the store's connection: the database thread)."""

    def __init__(self, db: apsw.Connection) -> None:
        self._db = db

    # -- reading ------------------------------------------------------------------------

    def kind(self, path: str) -> str | None:
        """The file's kind (None: not indexed)."""
        row = self._db.execute("SELECT kind FROM files WHERE path=?", (path,)).fetchone()
        return row[0] if row else None

    def has(self, path: str) -> bool:
        return self._db.execute("SELECT 1 FROM files WHERE path=?", (path,)).fetchone() \
            is not None

    def is_memory(self, path: str) -> bool:
        """Whether the path is a watched memory file."""
        return self._db.execute("SELECT 1 FROM files WHERE path=? AND kind='memory'",
                                (path,)).fetchone() is not None

    def known(self) -> list[KnownFile]:
        """Every file indexed so far, with its stat and its origin (one read of the table: a
        full scan asks for it every ``watch.full_scan_interval_s``)."""
        return [KnownFile(path, size, mtime, inode, text_key, error,
                          FileOrigin(source, kind, agent, project))
                for path, size, mtime, inode, text_key, error, source, kind, agent, project
                in self._db.execute("SELECT path, size, mtime, inode, text_key, error, source, "
                                    "kind, agent, project FROM files")]

    def paths_below(self, directory: str, kind: str | None = None) -> list[str]:
        """The indexed files (of ``kind``, if given) below ``directory``."""
        low, high = _below(directory)
        if kind is None:
            return [p for (p,) in self._db.execute(
                "SELECT path FROM files WHERE path >= ? AND path < ?", (low, high))]
        return [p for (p,) in self._db.execute(
            "SELECT path FROM files WHERE kind=? AND path >= ? AND path < ?", (kind, low, high))]

    def sources_below(self, directory: str) -> list[tuple[str, str]]:
        """(path, source) of the indexed files below ``directory``."""
        low, high = _below(directory)
        return cast(list[tuple[str, str]], self._db.execute(
            "SELECT path, source FROM files WHERE path >= ? AND path < ?", (low, high))
            .fetchall())

    def paths_of_source(self, source: str) -> list[str]:
        return [p for (p,) in self._db.execute("SELECT path FROM files WHERE source=?",
                                               (source,))]

    def paths_of_agent(self, agent: str) -> set[str]:
        return {p for (p,) in self._db.execute("SELECT path FROM files WHERE agent=?",
                                               (agent,))}

    def owners(self) -> dict[str, str]:
        """path → agent of every file."""
        return dict(cast(list[tuple[str, str]],
                         self._db.execute("SELECT path, agent FROM files").fetchall()))

    def tail(self, path: str) -> tuple[int, int, int] | None:
        """A transcript's (device, inode, offset) as far as it was read (None: never read)."""
        row = self._db.execute(
            "SELECT device, inode, offset FROM files WHERE path=?", (path,)).fetchone()
        return (row[0], row[1], row[2]) if row and row[0] is not None else None

    def with_inode(self, device: int, inode: int, other_than: str) -> list[str]:
        """The indexed paths of this file (device, inode) other than ``other_than``: where it
        was before a rename."""
        return [p for (p,) in self._db.execute(
            "SELECT path FROM files WHERE device=? AND inode=? AND path<>?",
            (device, inode, other_than))]

    def origin(self, path: str) -> FileOrigin | None:
        row = self._db.execute("SELECT source, kind, agent, project FROM files WHERE path=?",
                               (path,)).fetchone()
        return FileOrigin(*row) if row else None

    def state(self, path: str) -> FileState | None:
        row = self._db.execute(
            "SELECT source, kind, agent, project, text_key, error FROM files WHERE path=?",
            (path,)).fetchone()
        return FileState(FileOrigin(*row[:4]), row[4], row[5]) if row else None

    # -- memory files -------------------------------------------------------------------

    def memory_files(self) -> list[tuple[str, bool, str | None]]:
        """Every watched memory file: path, pinned, the problem that kept it out (if any)."""
        return [(path, bool(pinned), error) for path, pinned, error in self._db.execute(
            "SELECT path, pinned, error FROM files WHERE kind='memory' ORDER BY path")]

    def notebooks(self, agent: str | None, under: str | None
                  ) -> list[tuple[str, str, str, str | None]]:
        """The memory files a notebook pass may look at — not pinned — of ``agent`` (None:
        any) below ``under`` (None: anywhere): (path, agent, source, the problem memoryd had
        reading it: the pass rewrites only those read without one), by path."""
        sql = "SELECT path, agent, source, error FROM files WHERE kind='memory' AND pinned=0"
        params: list[Any] = []
        if agent:
            sql += " AND agent=?"
            params.append(agent)
        if under:
            sql += " AND path > ? AND path < ?"
            params += _below(under)
        return [(p, a, s, e) for p, a, s, e in self._db.execute(sql + " ORDER BY path", params)]

    def pinned(self, agent: str) -> list[str]:
        """The agent's pinned files, by path."""
        return [p for (p,) in self._db.execute(
            "SELECT path FROM files WHERE agent=? AND pinned=1 ORDER BY path", (agent,))]

    def described(self, agent: str, limit: int) -> list[tuple[str, str | None]]:
        """The agent's memory files the block lists (not pinned, read without a problem):
        (path, description), by path."""
        return [(p, d) for p, d in self._db.execute(
            "SELECT path, description FROM files WHERE agent=? AND kind='memory' AND pinned=0 "
            "AND error IS NULL ORDER BY path LIMIT ?", (agent, limit))]

    def memory_directories(self) -> list[str]:
        """The directories of the watched memory files, each with its slash."""
        # rtrim takes off the characters of its name
        return [d for (d,) in self._db.execute(
            "SELECT DISTINCT rtrim(path, replace(path, '/', '')) FROM files WHERE kind='memory'")]

    # -- problems -----------------------------------------------------------------------

    def problems(self, except_prefix: str, shown: int
                 ) -> tuple[int, list[tuple[str, str]], list[tuple[str, str, float, bool]]]:
        """The files whose row holds a problem: how many hold one that does not start with
        ``except_prefix``, the first ``shown`` of those (path, error), and those whose problem
        does (path, error, when last indexed, whether any entry came from it; newest first, at
        most 1,000)."""
        other = "error IS NOT NULL AND substr(error, 1, ?) <> ?"
        prefix = (len(except_prefix), except_prefix)
        count = integer(self._db, f"SELECT count(*) FROM files WHERE {other}", prefix)
        first = self._db.execute(f"SELECT path, error FROM files WHERE {other} "
                                 "ORDER BY path LIMIT ?", (*prefix, shown)).fetchall()
        lines = [(path, error, indexed, bool(read)) for path, error, indexed, read in
                 self._db.execute(
                     "SELECT path, error, coalesce(indexed, 0), EXISTS (SELECT 1 FROM entries "
                     "WHERE entries.source = files.path) FROM files WHERE substr(error, 1, ?) = ? "
                     "ORDER BY indexed DESC LIMIT 1000", prefix)]
        return count, cast(list[tuple[str, str]], first), lines

    # -- writing ------------------------------------------------------------------------

    def save(self, values: Mapping[str, Any]) -> None:
        """Insert or update a file's row (``values`` by column, ``path`` among them)."""
        unknown = set(values) - FILE_COLUMNS
        if unknown:
            raise ValueError(f"no files column {min(unknown)!r}")
        columns = ", ".join(values)
        updates = ", ".join(f"{c}=excluded.{c}" for c in values if c != "path")
        self._db.execute(
            f"INSERT INTO files({columns}) VALUES ({', '.join('?' for _ in values)}) "
            f"ON CONFLICT(path) DO UPDATE SET {updates}", list(values.values()))

    def unkey(self, paths: Iterable[str]) -> None:
        """The files' entries changed with no read of them (a forget's or supersede's status,
        an undo's): their text is parsed again when it is next read, even as it was."""
        self._db.executemany("UPDATE files SET text_key=NULL WHERE path=?",
                             ((path,) for path in paths))

    def unread(self, path: str, error: str) -> str | None:
        """The indexed file ``path`` is there but cannot be read (an unreadable directory, a
        FIFO in its place): its row keeps its entries and says why; its stat is forgotten, so
        the next scan reads it again whatever it finds. Returns the row's error before (None
        when it had none); raises KeyError when the file has no row."""
        row = self._db.execute("SELECT error FROM files WHERE path=?", (path,)).fetchone()
        if row is None:
            raise KeyError(path)
        self._db.execute("UPDATE files SET error=?, mtime=NULL, text_key=NULL WHERE path=?",
                         (error, path))
        return cast("str | None", row[0])

    def move(self, old: str, new: str) -> None:
        """The row of ``old`` now names ``new`` (a row ``new`` had is dropped)."""
        self._db.execute("DELETE FROM files WHERE path=?", (new,))
        self._db.execute("UPDATE files SET path=? WHERE path=?", (new, old))

    def delete(self, path: str) -> None:
        self._db.execute("DELETE FROM files WHERE path=?", (path,))
