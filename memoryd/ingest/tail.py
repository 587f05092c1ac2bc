"""Read what was appended to a JSONL file since last time.

A position is the file's identity (device, inode) and the byte offset just past the last
complete line consumed. A trailing partial line is left for the next read. When the file
shrank below the offset, was replaced (another inode) or was written over in place (the byte
before the offset is no longer the end of a line: an editor that saves over the file, a log
rewritten longer), reading restarts at 0 and the caller relies on record-id dedupe. Lines
longer than ``max_line_bytes`` are skipped and counted, never fatal; so are lines that are not
UTF-8, of a JSONL file (a JSON record cut by bytes that are not text is no record). The lines of
a file of text (Aider's markdown chat history, written in the encoding Aider was told: cp1252's
``é`` is one byte that is not UTF-8) keep what they say, those bytes replaced (U+FFFD), as a
memory file's are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.regular_file import open_regular

READ_SLICE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class TailPosition:
    device: int
    inode: int
    offset: int


@dataclass
class TailRead:
    position: TailPosition
    lines: list[str]
    restarted: bool = False
    more: bool = False  # stopped at the slice limit: call again
    skipped: dict[str, int] = field(default_factory=dict)
    #: why nothing of the file was read (a document over memoryd.ingest.document's limit)
    problem: str | None = None


def read_appended(path: Path, previous: TailPosition | None, max_line_bytes: int,
                  slice_bytes: int = READ_SLICE_BYTES, text: bool = False) -> TailRead:
    """Complete lines appended after ``previous`` (OSError propagates to the caller). ``text``:
    the file's lines are text, not JSON: bytes that are not UTF-8 are replaced, not the line
    skipped."""
    with os.fdopen(open_regular(path), "rb") as handle:  # a FIFO is refused, not waited on
        stat = os.fstat(handle.fileno())
        offset = 0
        restarted = False
        if previous is not None:
            same_file = (previous.device, previous.inode) == (stat.st_dev, stat.st_ino)
            if same_file and stat.st_size >= previous.offset and _line_ends_at(handle,
                                                                                previous.offset):
                offset = previous.offset
            else:
                restarted = True
        handle.seek(offset)
        data = handle.read(slice_bytes)
        result = TailRead(TailPosition(stat.st_dev, stat.st_ino, offset), [], restarted)
        consumed = 0
        while consumed < len(data):
            end = data.find(b"\n", consumed)
            if end < 0:
                remainder = len(data) - consumed
                if remainder > max_line_bytes:  # a giant line still being written: skip past it
                    skip_to = _next_newline(handle, offset + len(data))
                    if skip_to is not None:
                        _count(result, "line-too-long")
                        consumed = skip_to - offset
                        result.more = True
                break
            raw = data[consumed:end]
            consumed = end + 1
            if len(raw) > max_line_bytes:
                _count(result, "line-too-long")
                continue
            if not raw.strip():
                continue
            try:
                result.lines.append(raw.decode("utf-8", errors="replace" if text else "strict"))
            except UnicodeDecodeError:
                _count(result, "invalid-utf8")
        if len(data) == slice_bytes and not result.more:
            result.more = consumed > 0
        result.position = TailPosition(stat.st_dev, stat.st_ino, offset + consumed)
        return result


def _line_ends_at(handle, offset: int) -> bool:  # type: ignore[no-untyped-def]
    """Whether a line ends just before ``offset``, as one did when the file was read up to it
    (the start of the file counts as one)."""
    if offset == 0:
        return True
    handle.seek(offset - 1)
    return bool(handle.read(1) == b"\n")


def _next_newline(handle, start: int) -> int | None:  # type: ignore[no-untyped-def]
    """Offset just past the next newline at or after ``start``, or None before EOF."""
    handle.seek(start)
    position = start
    while block := handle.read(1 << 20):
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)
    return None


def _count(result: TailRead, reason: str) -> None:
    result.skipped[reason] = result.skipped.get(reason, 0) + 1
