"""Per-agent append-only ledgers: the source of truth for entries written through the API.

``$MEMORYD_HOME/ledger/<agent>.jsonl`` holds one JSON object per line, each an operation:

    {"op": "remember",  "ts": …, "entry": {…the whole entry…}}
    {"op": "status",    "ts": …, "id": "…", "status": "forgotten"|"superseded"|"active",
                        "actor": "…", "reason": "…", "superseded_by": "…",
                        "hash": "…", "via": "api"|"watch"|…}   (the entry's content hash
                        and origin: a watched entry the database lacks at replay keeps its
                        status as a mark, applied when the watcher indexes it again)
    {"op": "update",    "ts": …, "id": "…", "fields": {"confidence": …, "occurrences": …, …},
                        "actor": "pass consolidate"}   (a maintenance pass's change)
    {"op": "release",   "ts": …, "id": "…", "hash": "…", "via": "…", "actor": "…"}
                        (a person let a quarantined entry be injected: memoryd.quarantine)
    {"op": "purge",     "ts": …, "ids": ["…"]}   (``memory purge`` removed these entries'
                        records from this ledger: memoryd.store.purge)

A line is written and fsynced before the write it records is acknowledged, so an acknowledged
write survives a crash. ``memoryd reindex`` replays every ledger into an empty database; on
start the daemon replays what lies past the offset the database last recorded for each ledger.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoryd.params import AGENT_NAME

log = logging.getLogger(__name__)



def encode_record(record: dict[str, Any]) -> bytes:
    """One ledger line (with its newline), as every writer of a ledger writes it."""
    return (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


class Ledger:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, agent: str) -> Path:
        if not AGENT_NAME.match(agent):  # the daemon validates earlier; this guards the path
            raise ValueError(f"invalid agent name {agent!r}")
        return self.directory / f"{agent}.jsonl"

    def append(self, agent: str, records: list[dict[str, Any]]) -> int:
        """Append records durably (one write, one fsync); returns the ledger's size after."""
        path = self.path(agent)
        if not self.directory.exists():
            self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
            _fsync_dir(self.directory.parent)
        data = b"".join(encode_record(record) for record in records)
        created = not path.exists()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.directory)
        return size

    def agents(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.jsonl") if AGENT_NAME.match(p.stem))

    def read(self, agent: str, offset: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        """(offset after the line, record) for each complete line from ``offset``.

        A torn last line (a crash mid-append, never acknowledged) is skipped; a corrupt line in
        the middle is logged and skipped, never fatal."""
        path = self.path(agent)
        if not path.exists():
            return
        with path.open("rb") as handle:
            handle.seek(offset)
            position = offset
            for raw in handle:
                position += len(raw)
                if not raw.endswith(b"\n"):
                    log.warning("Ignoring torn last line of %s at byte %d.", path, position - len(raw))
                    return
                try:
                    record = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    log.error("Skipping corrupt line of %s before byte %d: %s", path, position, exc)
                    continue
                if isinstance(record, dict):
                    yield position, record


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
