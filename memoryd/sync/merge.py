"""The union of two versions of a ledger or a gzip archive: what git's merge driver for them
(:mod:`memoryd.sync.driver`) writes.

Both kinds of file only grow, but for a purge (:mod:`memoryd.maintenance.purge`), which takes
records out. So the merge is a three-way merge of *sets of records*:

- a record either side holds is kept, once (records are compared as their canonical bytes:
  :func:`memoryd.store.ledger.encode_record` for a ledger line, the JSON line of an archive);
- a record the common ancestor held that one side no longer holds was purged there, and stays
  out;
- in a ledger, every record about an entry a ``purge`` record names is left out, so a status
  record written on one machine for an entry purged on the other does not bring it back;
- lines whose checksum fails are never taken from the other side (a damaged line of our own
  is kept where the reader already skips it: it is not the merge's to delete);
- the result is ordered by time (a ledger record's ``ts``, an archive entry's ``updated``),
  with an entry's ``remember`` before any record about it, so both machines write the same
  bytes for the same records, and a replay from the start finds each entry before its status.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memoryd.store.archive import GZIP_WBITS, MemberWriter
from memoryd.store.ledger import decode_line, encode_record

_CHECKED = re.compile(rb',"crc":"[0-9a-f]{8}"\}\n$')


@dataclass
class MergeReport:
    """What a merge did, for the driver's message and the tests."""

    kept: int = 0
    ours_only: int = 0
    theirs_only: int = 0
    dropped_purged: int = 0
    damaged: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Line:
    """One record of a file: its canonical bytes, its order key, and the ids it is about."""

    data: bytes
    order: tuple[float, int, bytes]
    about: str | None  # the entry it concerns
    purges: tuple[str, ...] = ()


def ledger_lines(raw: bytes, report: MergeReport | None = None,
                 side: str = "") -> tuple[list[Line], list[bytes]]:
    """The good records of a ledger's bytes, and its damaged lines (as they are)."""
    good: list[Line] = []
    damaged: list[bytes] = []
    for line in raw.splitlines(keepends=True):
        if not line.strip():
            continue
        whole = line if line.endswith(b"\n") else line + b"\n"
        record, problem = decode_line(whole)
        if record is None:
            damaged.append(whole)
            if report is not None:
                report.damaged.append(f"{side}: {problem}")
            continue
        # a line with its checksum is canonical already (encode_record wrote it): only an
        # older line without one is encoded again, to compare it with the other side's
        good.append(ledger_line(record, whole if _CHECKED.search(whole) else None))
    return good, damaged


def ledger_line(record: dict[str, Any], data: bytes | None = None) -> Line:
    op = record.get("op")
    entry = record.get("entry")
    ts = _number(record.get("ts"))
    data = data if data is not None else encode_record(record)
    if op == "remember" and isinstance(entry, dict):
        return Line(data, (ts, 0, b""), str(entry.get("uid")))
    ids = tuple(str(i) for i in record.get("ids") or ()) if op == "purge" else ()
    about = str(record["id"]) if record.get("id") is not None else None
    return Line(data, (ts, 1, b""), about, ids)


def merge_ledgers(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, MergeReport]:
    report = MergeReport()
    base_lines, _ = ledger_lines(base)
    our_lines, our_damage = ledger_lines(ours, report, "ours")
    their_lines, _ = ledger_lines(theirs, report, "theirs")
    merged = _union(base_lines, our_lines, their_lines, report, ledger=True)
    return b"".join(merged + our_damage), report


def _union(base: list[Line], ours: list[Line], theirs: list[Line], report: MergeReport, *,
           ledger: bool) -> list[bytes]:
    in_base = {line.data for line in base}
    in_ours = {line.data for line in ours}
    in_theirs = {line.data for line in theirs}
    gone = (in_base - in_ours) | (in_base - in_theirs)  # purged on one side
    purged = {i for line in (*ours, *theirs) for i in line.purges} if ledger else set()
    born: dict[str, float] = {}
    for line in (*ours, *theirs):
        if line.order[1] == 0 and line.about is not None:
            born[line.about] = min(born.get(line.about, line.order[0]), line.order[0])
    chosen: dict[bytes, Line] = {}
    for line in (*ours, *theirs):
        if line.data in gone or line.data in chosen:
            continue
        if line.about is not None and line.about in purged and not line.purges:
            report.dropped_purged += 1
            continue
        chosen[line.data] = line
        if line.data not in in_theirs:
            report.ours_only += 1
        elif line.data not in in_ours:
            report.theirs_only += 1
    report.kept = len(chosen)

    def order(line: Line) -> tuple[float, int, bytes]:
        ts, rank, _ = line.order
        if rank and line.about in born:  # never before the entry it is about
            ts = max(ts, born[line.about])
        return ts, rank, line.data

    return [line.data for line in sorted(chosen.values(), key=order)]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


# -- gzip archives (transcripts/, history/) ----------------------------------------------------

def archive_lines(raw: bytes, report: MergeReport | None = None,
                  side: str = "") -> list[Line]:
    """The records of a gzip archive (of whole members; an unfinished or corrupt tail ends
    the reading, as the archive's own reader does)."""
    lines: list[Line] = []
    for data in _members(raw, report, side):
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                if report is not None:
                    report.damaged.append(f"{side}: a line that is not JSON")
                continue
            if not isinstance(record, dict):
                continue
            inner = record.get("entry")
            entry = inner if isinstance(inner, dict) else record
            when = _number(entry.get("updated", record.get("ts")))
            canonical = json.dumps(record, ensure_ascii=False, sort_keys=True).encode() + b"\n"
            lines.append(Line(canonical, (when, 0, b""), None))
    return lines


def _members(raw: bytes, report: MergeReport | None, side: str) -> Iterable[bytes]:
    rest = raw
    while rest:
        decompressor = zlib.decompressobj(GZIP_WBITS)
        try:
            data = decompressor.decompress(rest)
        except zlib.error as exc:
            if report is not None:
                report.damaged.append(f"{side}: a corrupt gzip member ({exc})")
            return
        if not decompressor.eof:
            if report is not None:
                report.damaged.append(f"{side}: an unfinished gzip member at the end")
            return
        yield data
        rest = decompressor.unused_data


def merge_archives(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, MergeReport]:
    report = MergeReport()
    merged = _union(archive_lines(base), archive_lines(ours, report, "ours"),
                    archive_lines(theirs, report, "theirs"), report, ledger=False)
    writer = MemberWriter()
    writer.add(merged)
    return writer.data() if merged else b"", report
