"""A watched file as it is found and read: where it is and what it belongs to (its stat and
source: :class:`FileFacts`), a memory file's text as read off the database thread
(:func:`read_memory_file`; over ``watch.max_file_bytes`` it is refused: :func:`over_cap`), the
digest of the text its entries were made from (:func:`memory_key`), and what a full scan
compares a file on disk with (:func:`indexed_stat`). The indexer (memoryd.ingest.indexer)
applies what is read.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.regular_file import read_regular
from memoryd.store.files import KnownFile

BINARY_SNIFF_BYTES = 8192
#: The setting a memory file over the cap is refused by (its row's problem names it).
CAP_SETTING = "watch.max_file_bytes"


@dataclass(frozen=True)
class FileFacts:
    """Where a watched file is and what it belongs to."""

    path: str
    source: str
    kind: str
    agent: str
    device: int
    inode: int
    size: int
    mtime: float
    project: str | None = None


@dataclass
class MemoryFileRead:
    """A memory file's text as read (None: unreadable, ``error`` says why)."""

    facts: FileFacts
    relative: str
    text: str | None
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def stat_facts(path: Path, source: str, kind: str, agent: str, project: str | None) -> FileFacts:
    stat = path.stat()
    return FileFacts(str(path), source, kind, agent, stat.st_dev, stat.st_ino, stat.st_size,
                     stat.st_mtime, project)


def memory_key(text: str, pinned: bool) -> str:
    """What a memory file's entries are made from, as one digest: its text as read, and whether
    it is pinned (which its path decides)."""
    digest = hashlib.blake2b(b"1" if pinned else b"0", digest_size=16)
    digest.update(text.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def over_cap(size: int, max_file_bytes: int) -> str | None:
    """Why a memory file of ``size`` bytes is not read (None: it is within the cap)."""
    if size <= max_file_bytes:
        return None
    return f"file is {size} bytes, over the {max_file_bytes}-byte cap ({CAP_SETTING})"


def refused_over_cap(error: str | None) -> bool:
    """Whether a file's recorded problem is :func:`over_cap`'s (a cap changed may lift it)."""
    return error is not None and error.endswith(f"({CAP_SETTING})")


def read_memory_file(facts: FileFacts, relative: str, max_file_bytes: int) -> MemoryFileRead:
    """Read and decode one markdown file; problems become a reason, never an exception."""
    refused = over_cap(facts.size, max_file_bytes)
    if refused is not None:
        return MemoryFileRead(facts, relative, None, refused)
    try:
        data = read_regular(facts.path)
    except OSError as exc:
        return MemoryFileRead(facts, relative, None, f"unreadable: {exc.strerror or exc}")
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return MemoryFileRead(facts, relative, None, "binary file (NUL bytes), skipped")
    notes = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        notes.append(f"invalid UTF-8 at byte {exc.start}; undecodable bytes replaced")
    return MemoryFileRead(facts, relative, text, None, notes)


def still_as_read(facts: FileFacts) -> bool:
    """Whether the file is as it was when it was read (its stat then): read off the database
    thread, its text may be older than a write memoryd made since (a forget's rename)."""
    try:
        stat = os.stat(facts.path)
    except OSError:
        return False
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime) == \
        (facts.device, facts.inode, facts.size, facts.mtime)


def indexed_stat(known: KnownFile) -> tuple[int, float, int] | None:
    """(size, mtime, inode) of a file as it was indexed (what a scan compares its stat with);
    None for a memory file indexed without its :func:`memory_key` (by a version before it:
    read it again)."""
    if known.kind == "memory" and known.text_key is None and known.error is None:
        return None
    return int(known.size or 0), float(known.mtime or 0.0), int(known.inode or 0)
