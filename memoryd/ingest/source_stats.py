"""What `memory status --sources` says of each watched source: its files, the entries its files
added and removed, the lines it skipped (by reason) and its last error."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from memoryd_client.views import shown_text

from memoryd.ingest.file_read import FileFacts
from memoryd.ingest.indexer import Changes

log = logging.getLogger(__name__)

#: Parser skip reasons that mean a malformed line (the others are lines memoryd never indexes:
#: tool calls, harness records, …); these are counted per source for `memory status --sources`.
#: ``bad_timestamp`` (UNDATED) is a line read whole but for its time, in no form memoryd
#: reads: what it said is indexed, its exchange dated by another of its times or when read.
UNDATED = "bad_timestamp"
MALFORMED = ("too_long", "invalid_json", "not_object", "bad_field", "internal_error", UNDATED)
#: How a transcript's skipped lines begin as its problem (its row's error, and its source's).
SKIPPED_LINES = "skipped lines: "


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

    def unskip(self, reason: str, count: int) -> None:
        """Lines counted skipped that are not (a document read whole since)."""
        left = self.skipped.get(reason, 0) - count
        if left > 0:
            self.skipped[reason] = left
        else:
            self.skipped.pop(reason, None)

    def error(self, path: str, message: str) -> None:
        """The source's last problem: of ``path`` (kept as it can be shown: a name that is
        not UTF-8 with its bytes escaped)."""
        self.last_error, self.last_error_path, self.last_error_at = \
            message, shown_text(path), time.time()

    def gone(self, path: str) -> None:
        """``path`` was deleted, or read without a problem: a problem of it is none any
        more."""
        if self.last_error_path == shown_text(path):
            self.last_error = self.last_error_path = self.last_error_at = None


def account(stats: dict[str, SourceStats], facts: FileFacts, change: Changes,
            problem: str | None) -> None:
    """A file indexed: its entries counted to its source, and its problem (if any) logged and
    kept as the source's last error; without one, an earlier problem of it (a full disk, a
    FIFO in its place) is none any more, but for its skipped lines, which a transcript's read
    counts on its own (:class:`SkippedLines`)."""
    source = stats.setdefault(facts.source, SourceStats())
    source.entries_added += change.added
    source.entries_removed += change.removed
    if problem:
        source.error(facts.path, problem)
        log.warning("%s: %s", shown_text(facts.path), problem)
    elif not (source.last_error or "").startswith(SKIPPED_LINES):
        source.gone(facts.path)


@dataclass(frozen=True)
class Skips:
    """The lines of a transcript that could not be read, after one read of it: ``total`` as the
    file's row says them (those of this read's bytes that did not decode, and every malformed
    line its parser met since it started on the file), ``new`` those its source has not counted."""

    total: dict[str, int]
    new: dict[str, int]
    parser: dict[str, int]  # the parser's malformed lines so far, counted with ``new``

    @property
    def problem(self) -> str | None:
        """The file's problem, kept in its row (None: none)."""
        return _skipped(self.total) if self.total else None


@dataclass
class SkippedLines:
    """The one account of a transcript's skipped lines: what the file's row says, and what its
    source counts for `memory status --sources`, each line once though the parser counts from
    the start of the file. Lines memoryd leaves out on purpose (tool calls, a slash command's
    wrapper, its own injected block, …) are no problem of the file and are not among them."""

    #: the parser's malformed lines counted to the source so far, by reason
    counted: dict[str, int] = field(default_factory=dict)

    def after(self, tail: dict[str, int], parser: dict[str, int]) -> Skips:
        """A read's skips: ``tail``, the lines its bytes held that did not decode; ``parser``,
        the parser's skips since it started on the file."""
        malformed = {reason: n for reason, n in parser.items() if reason in MALFORMED}
        new = dict(tail)
        for reason, count in malformed.items():
            gained = count - self.counted.get(reason, 0)
            if gained > 0:
                new[reason] = new.get(reason, 0) + gained
        return Skips({**tail, **malformed}, new, malformed)

    def count(self, skips: Skips, stats: SourceStats, path: str) -> None:
        """The read was indexed: its new skips counted to its source, and named as the
        source's last error."""
        for reason, n in skips.new.items():
            stats.skip(reason, n)
        if skips.new:
            stats.error(path, _skipped(skips.new))
        self.counted.update(skips.parser)

    def count_whole(self, skips: Skips, stats: SourceStats, path: str,
                    before: dict[str, int]) -> dict[str, int]:
        """A document read whole (memoryd.ingest.document): what it skips now replaces what
        its earlier reads counted to its source (``before``; one caught half written, and
        read whole since, is no problem any more); returns what it counts now."""
        for reason, n in before.items():
            stats.unskip(reason, n)
        for reason, n in skips.total.items():
            stats.skip(reason, n)
        if skips.total:
            stats.error(path, _skipped(skips.total))
        else:
            stats.gone(path)  # its problem, if the source's last, is none any more
        self.counted = dict(skips.parser)
        return dict(skips.total)

    def all_counted(self, parser: dict[str, int]) -> None:
        """What the parser has met was counted (before a restart)."""
        self.counted = {reason: n for reason, n in parser.items() if reason in MALFORMED}

    def restart(self) -> None:
        """The file is read from its start again: its parser counts afresh."""
        self.counted = {}


def _skipped(counts: dict[str, int]) -> str:
    return SKIPPED_LINES + ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
