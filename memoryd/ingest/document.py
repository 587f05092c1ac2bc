"""Transcript files read whole: the document transcripts (Gemini CLI's legacy ``.json`` chats,
:func:`memoryd.ingest.transcript.is_document`), and any transcript read from its start to its
end by the readers of a finished session (extraction, a dry run's sessions, outcomes).

A document is written over whole on every message (``writeFileSync``: truncated, then
written), so a read can catch it half written. A document that does not parse is read again
while it is still changing (:data:`SETTLE_TRIES` times, :data:`SETTLE_S` apart); one that stays
broken is counted as skipped (``invalid_json``, or ``invalid-utf8``), as a malformed line is,
and read again when it next changes. One larger than :data:`MAX_DOCUMENT_BYTES` is not read:
its problem (:attr:`TailRead.problem`) says its size and the limit, and what it held when it
was smaller stays indexed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

from memoryd.ingest.tail import TailPosition, TailRead
from memoryd.ingest.transcript import document_lines, is_document
from memoryd.regular_file import open_regular

#: A document larger than this is not read: it is parsed whole, on every change (a Cline task
#: is written over on every message), and its records held at once. Gemini CLI's chats and
#: Cline's tasks, tool output included, are far smaller (docs/sources.md says the limit).
MAX_DOCUMENT_BYTES = 64 << 20
SETTLE_TRIES = 10
SETTLE_S = 0.05


def read_document(path: Path, fmt: str) -> TailRead:
    """The whole of a document transcript, as the lines its parser reads; always ``restarted``
    (the reader starts over, and record ids dedupe). OSError propagates to the caller."""
    reason = "invalid_json"
    for _ in range(SETTLE_TRIES):
        with os.fdopen(open_regular(path), "rb") as handle:  # a FIFO is refused, not waited on
            stat = os.fstat(handle.fileno())
            position = TailPosition(stat.st_dev, stat.st_ino, stat.st_size)
            if stat.st_size > MAX_DOCUMENT_BYTES:
                return TailRead(position, [], restarted=True, problem=too_large(stat.st_size))
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
        try:
            lines = document_lines(fmt, data.decode("utf-8"), str(path))
            return TailRead(position, lines, restarted=True)
        except UnicodeDecodeError:
            reason = "invalid-utf8"
        except ValueError:
            reason = "invalid_json"
        try:
            now = os.stat(path)
        except OSError:
            break
        if (now.st_ino, now.st_size, now.st_mtime_ns) == (stat.st_ino, stat.st_size,
                                                            stat.st_mtime_ns):
            break  # still as read: broken, not being written
        time.sleep(SETTLE_S)
    return TailRead(position, [], restarted=True, skipped={reason: 1})


def too_large(size: int) -> str:
    """The problem of a document too large to read."""
    return (f"not read: {_mib(size)} MiB, over the {_mib(MAX_DOCUMENT_BYTES)} MiB memoryd reads "
            "of a transcript read whole (what it held when smaller stays indexed)")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f}".removesuffix(".0")


def transcript_lines(path: str, fmt: str) -> Iterator[str]:
    """Every record of a transcript, as the lines its parser reads: a document's records, or
    the file's lines (bytes that are not UTF-8 replaced). OSError propagates."""
    if is_document(fmt, path):
        yield from read_document(Path(path), fmt).lines
        return
    with os.fdopen(open_regular(path), encoding="utf-8", errors="replace") as handle:
        for line in handle:
            yield line.rstrip("\n")
