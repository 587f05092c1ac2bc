"""What `memory status --sources` says of each watched source: its files, the entries its files
added and removed, the lines it skipped (by reason) and its last error."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from memoryd.ingest.indexer import Changes, FileFacts

log = logging.getLogger(__name__)


@dataclass
class SourceStats:
    files: int = 0
    entries_added: int = 0
    entries_removed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    last_error_path: str | None = None
    last_error_at: float | None = None

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    def error(self, path: str, message: str) -> None:
        self.last_error, self.last_error_path, self.last_error_at = message, path, time.time()


def account(stats: dict[str, SourceStats], facts: FileFacts, change: Changes,
            problem: str | None) -> None:
    """A file indexed: its entries counted to its source, and its problem (if any) logged and
    kept as the source's last error."""
    source = stats.setdefault(facts.source, SourceStats())
    source.entries_added += change.added
    source.entries_removed += change.removed
    if problem:
        source.error(facts.path, problem)
        log.warning("%s: %s", facts.path, problem)
