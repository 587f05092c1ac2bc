"""The files a purge rewrites (:mod:`memoryd.maintenance.purge`): an agent's ledger, its transcript
archive and its memory tools' history archive. A file is read whole, the records the purge
takes out are left out, a record that only mentions the text gets it replaced in its free
text, and every other line is kept **byte for byte**; the new bytes replace the file
atomically and durably (a temporary file, fsynced, renamed over it, the directory fsynced),
only when something changed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.store.archive import AgentArchive, MemberWriter
from memoryd.store.durable import replace_file
from memoryd.store.ledger import decode_line, encode_record

log = logging.getLogger(__name__)

#: What a purge decides for one record: take it out (True), keep it with these fields (a
#: dict: a free text scrubbed), or keep it as it is (None / False).
Decide = Callable[[dict[str, Any]], "bool | dict[str, Any] | None"]


@dataclass(frozen=True)
class Rewrite:
    """One file's rewrite: how many records go, how many keep their place scrubbed, and the
    new bytes (None when nothing changes)."""

    dropped: int = 0
    scrubbed: int = 0
    data: bytes | None = None

    def write(self, path: Path) -> int | None:
        """Replace the file with the new bytes; returns its new size (None: unchanged)."""
        if self.data is None:
            return None
        replace_file(path, self.data)
        return len(self.data)


def ledger_rewrite(path: Path, decide: Decide, tail: dict[str, Any] | None,
                   appended: Sequence[dict[str, Any]] = ()) -> Rewrite:
    """An agent's ledger without the records ``decide`` takes out; ``tail``: a record to
    append when anything changed (the purge's own); ``appended``: records to append in any
    case. A damaged line is kept as it is (not ours to judge: the ledger's reader reports
    it); a torn last line (never acknowledged) goes."""
    if not path.exists():
        return Rewrite()
    kept: list[bytes] = []
    dropped = scrubbed = 0
    for raw in path.read_bytes().splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            continue
        record, _ = decode_line(raw)
        verdict = decide(record) if record is not None else None
        if verdict is True:
            dropped += 1
            continue
        if isinstance(verdict, dict):
            scrubbed += 1
            raw = encode_record(verdict)
        kept.append(raw)
    if not (dropped or scrubbed or appended):
        return Rewrite()
    if tail is not None:
        kept.append(encode_record(tail))
    kept.extend(encode_record(record) for record in appended)
    return Rewrite(dropped, scrubbed, b"".join(kept))


def archive_rewrite(archive: AgentArchive, agent: str, decide: Decide) -> Rewrite:
    """An agent's gzip archive (transcripts, or the memory tools' history) without the
    records ``decide`` takes out; the other lines are compressed again as they were."""
    writer = MemberWriter()
    dropped = 0
    for data in archive.raw(agent):
        lines = []
        for line in data.splitlines(keepends=True):
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                record = None  # the archive's reader logs and skips it: left as it is
            if isinstance(record, dict) and decide(record) is True:
                dropped += 1
                continue
            lines.append(line if line.endswith(b"\n") else line + b"\n")
        writer.add(lines)
    if not dropped:
        return Rewrite()
    return Rewrite(dropped, 0, writer.data())
