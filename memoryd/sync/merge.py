"""The union of two versions of a ledger or a gzip archive: what git's merge driver for them
(:mod:`memoryd.sync.driver`) writes.

Both kinds of file only grow, but for a purge (:mod:`memoryd.maintenance.purge`), which takes
records out. So the merge is a three-way merge of *sets of records*:

- a record either side holds is kept, once (records are compared as their canonical bytes:
  :func:`memoryd.store.ledger.encode_record` for a ledger line, the JSON line of an archive);
- in a ledger, only a purge takes a record out: every record about an entry a ``purge``
  record names is left out (so a status record written on one machine for an entry purged
  on the other does not bring it back), and so is a record the purge rewrote in its place
  (a forget's reason with the text replaced by ``[PURGED]``). Any other record the common
  ancestor held that one side no longer holds is kept, and counted: that side's copy lost
  it (a line deleted by hand, a damaged copy), and a lost copy must not take it from the
  other machines (:attr:`MergeReport.lacking_theirs`). A file in the ledger's format that is
  reviewed rather than written (a team's ``entries.jsonl``, memoryd.sync.shared) merges with
  ``reviewed``: a line one side took out stays out;
- in an archive, a record the common ancestor held that one side no longer holds was
  purged there (a purge of an archive writes no record of its own), and stays out, unless
  that side's archive is damaged (a corrupt or unfinished gzip member ends its reading:
  what follows it is not gone);
- lines whose checksum fails, or that are not records, are never taken from the other side
  (a damaged line of our own is kept where the reader already skips it: it is not the
  merge's to delete), and those of theirs are counted (:attr:`MergeReport.refused`);
- the result is ordered by time (a ledger record's ``ts``, an archive entry's ``updated``),
  with an entry's ``remember`` before any record about it, so both machines write the same
  bytes for the same records, and a replay from the start finds each entry before its status.

A ledger's merge costs what is new, not what the ledger holds: the lines both sides hold at
the start of the file, in the same bytes (all of it but what each appended since they last
met, unless a purge rewrote it), are kept as they are, unread but for a byte search for
``purge`` records among them. Only the lines after them are decoded, their checksums verified
and merged as above (:func:`merge_ledgers`); the shared start was merged, or written, whole
before. An archive is read whole: a transcript archive grows by the retain pass's runs, a
history archive by a small record at each write of the memory tools.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memoryd.store.ledger import decode_line, encode_record

# (memoryd.store.archive is imported where an archive is merged: it loads the database layer,
# half a second of start for each ledger git hands the driver)

_CHECKED = re.compile(rb',"crc":"[0-9a-f]{8}"\}\n$')


#: What a purge writes in place of the text it took out of a record it keeps
#: (memoryd.maintenance.purge.PURGED, not imported: the driver loads nothing it does not use).
SCRUBBED = "[PURGED]"


@dataclass
class MergeReport:
    """What a merge did, for the driver's message, ``memory sync``'s and the tests.
    ``lacking_theirs``/``lacking_ours``: records the ancestor and one side hold that the other
    side's copy lacks with no purge to say why, kept; ``refused``: damaged lines of theirs
    not taken."""

    kept: int = 0
    ours_only: int = 0
    theirs_only: int = 0
    dropped_purged: int = 0
    lacking_theirs: int = 0
    lacking_ours: int = 0
    refused: int = 0
    damaged: list[str] = field(default_factory=list)

    def said(self) -> dict[str, int]:
        """What a sync tells the user (the counts that are not 0)."""
        counts = {"lacking_theirs": self.lacking_theirs, "lacking_ours": self.lacking_ours,
                  "refused": self.refused}
        return {k: v for k, v in counts.items() if v}


@dataclass(frozen=True)
class Line:
    """One record of a file: its canonical bytes, its order key, and the ids it is about."""

    data: bytes
    order: tuple[float, int, bytes]
    about: str | None  # the entry it concerns
    purges: tuple[str, ...] = ()
    #: a status record with a reason: the record without it (a purge that replaces the text
    #: of the reason keeps the rest), and whether its reason says a purge replaced a text
    unreasoned: bytes | None = None
    scrubbed: bool = False


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
    reason = record.get("reason")
    if op == "status" and isinstance(reason, str):
        rest = json.dumps({k: v for k, v in record.items() if k not in ("reason", "crc")},
                          ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass")
        return Line(data, (ts, 1, b""), about, ids, rest, SCRUBBED in reason)
    return Line(data, (ts, 1, b""), about, ids)


def merge_ledgers(base: bytes, ours: bytes, theirs: bytes, *,
                  reviewed: bool = False) -> tuple[bytes, MergeReport]:
    """The union of two versions of a ledger (see the module docstring). The lines both hold
    at the start of the file are kept as they are; the rest is merged record by record.
    ``reviewed``: a file people edit in review (a team's), where a line one side took out
    stays out; a ledger's lines leave only by a purge."""
    report = MergeReport()
    shared = common_lines(ours, theirs)
    head = ours[:shared]
    # the ancestor's lines past the part of it both sides still hold at their start: the
    # only ones a side can have dropped since (a purge)
    base_rest = base[common_lines(base, head):]
    base_lines, _ = ledger_lines(base_rest)
    our_lines, our_damage = ledger_lines(ours[shared:], report, "ours")
    their_lines, their_damage = ledger_lines(theirs[shared:], report, "theirs")
    report.refused = len(set(their_damage) - set(our_damage))
    new_purges = {i for line in (*our_lines, *their_lines) for i in line.purges}
    old_purges = _purged_in(head)
    if new_purges:
        head = _without_records_about(head, new_purges, report)
    held = set(head.splitlines(keepends=True))
    gone = None if reviewed else _purged_away(
        base_lines, our_lines, their_lines, old_purges | new_purges, report)
    merged = _union(base_lines, our_lines, their_lines, report, ledger=True, held=held,
                    purged=old_purges, gone=gone)
    report.kept += len(held)
    return head + b"".join(merged + our_damage), report


def _purged_away(base: list[Line], ours: list[Line], theirs: list[Line], purged: set[str],
                 report: MergeReport) -> set[bytes]:
    """The ancestor's records a side no longer holds because a purge took them out there:
    those about an entry a purge names (left out by their id anyway), and those the purge
    rewrote with the text of their reason replaced (that side holds the rewritten record).
    Every other record a side lacks was lost by that copy, not purged: it is kept (it is in
    the other side's lines) and counted."""
    gone: set[bytes] = set()
    for side, other, lacking in ((ours, theirs, "lacking_ours"),
                                 (theirs, ours, "lacking_theirs")):
        held = {line.data for line in side}
        rewritten = {line.unreasoned for line in side if line.scrubbed}
        elsewhere = {line.data for line in other}
        for line in base:
            if line.data in held or (line.about in purged and not line.purges):
                continue
            if line.unreasoned is not None and line.unreasoned in rewritten:
                gone.add(line.data)
            elif line.data in elsewhere:
                setattr(report, lacking, getattr(report, lacking) + 1)
    return gone


def common_lines(a: bytes, b: bytes) -> int:
    """The length of the longest run of whole lines ``a`` and ``b`` both start with (compared
    as bytes, 64 KiB at a time: a 40 MB ledger takes milliseconds)."""
    end = min(len(a), len(b))
    step = 1 << 16
    at = 0
    while at < end:
        stop = min(end, at + step)
        if a[at:stop] != b[at:stop]:
            low, high = at, stop  # a[:low] == b[:low]; they differ before high
            while high - low > 1:
                middle = (low + high) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    high = middle
            end = low
            break
        at = stop
    return a.rfind(b"\n", 0, end) + 1


_PURGE = b'"op": "purge"'


def _purged_in(head: bytes) -> set[str]:
    """The ids the ``purge`` records of ``head`` name (found by a byte search: the canonical
    encoding writes the op so, and a text holding those bytes has its quotes escaped)."""
    ids: set[str] = set()
    at = head.find(_PURGE)
    while at != -1:
        start = head.rfind(b"\n", 0, at) + 1
        stop = head.find(b"\n", at)
        stop = len(head) if stop == -1 else stop + 1
        record, _ = decode_line(head[start:stop])
        if record is not None and record.get("op") == "purge":
            ids.update(str(i) for i in record.get("ids") or ())
        at = head.find(_PURGE, stop)
    return ids


def _without_records_about(head: bytes, ids: set[str], report: MergeReport) -> bytes:
    """``head`` without its records about the entries a new ``purge`` record names. A ledger
    that holds a purge holds nothing about what it purged, so these are rare: only the lines
    holding one of the ids' bytes are decoded."""
    marks = [i.encode() for i in ids]
    if not any(mark in head for mark in marks):
        return head
    kept: list[bytes] = []
    for line in head.splitlines(keepends=True):
        if any(mark in line for mark in marks):
            record, _ = decode_line(line)
            if record is not None:
                about = ledger_line(record, line)
                if about.about in ids and not about.purges:
                    report.dropped_purged += 1
                    continue
        kept.append(line)
    return b"".join(kept)


def _union(base: list[Line], ours: list[Line], theirs: list[Line], report: MergeReport, *,
           ledger: bool, held: set[bytes] | None = None,
           purged: set[str] | None = None, gone: set[bytes] | None = None) -> list[bytes]:
    """The records of ``ours`` and ``theirs`` to keep, ordered; ``held``: lines the result
    holds already (skipped); ``purged``: ids purged before (their records are left out);
    ``gone``: the ancestor's records a side took out, left out (None: every one the
    ancestor held that a side no longer holds)."""
    held = held or set()
    in_base = {line.data for line in base}
    in_ours = {line.data for line in ours}
    in_theirs = {line.data for line in theirs}
    if gone is None:
        gone = (in_base - in_ours) | (in_base - in_theirs)  # purged on one side
    purged = (purged or set()) | ({i for line in (*ours, *theirs) for i in line.purges}
                                  if ledger else set())
    born: dict[str, float] = {}
    for line in (*ours, *theirs):
        if line.order[1] == 0 and line.about is not None:
            born[line.about] = min(born.get(line.about, line.order[0]), line.order[0])
    chosen: dict[bytes, Line] = {}
    for line in (*ours, *theirs):
        if line.data in gone or line.data in chosen or line.data in held:
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
            canonical = _archive_line(record)
            lines.append(Line(canonical, (when, 0, b""), None))
    return lines


def _archive_line(record: dict[str, Any]) -> bytes:
    """An archive's line in its canonical bytes: UTF-8, or JSON's escapes for a text that
    holds bytes that are not UTF-8 (a memory file's, kept as surrogate escapes), as
    memoryd.store.file_versions.history_line writes it."""
    try:
        return json.dumps(record, ensure_ascii=False, sort_keys=True).encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(record, sort_keys=True).encode() + b"\n"


def _members(raw: bytes, report: MergeReport | None, side: str) -> Iterable[bytes]:
    from memoryd.store.archive import GZIP_WBITS
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


def appended(kind: str, ours: bytes, theirs: bytes) -> bool:
    """Whether ``theirs`` is ``ours`` with whole, good records appended: a ledger's lines whose
    checksums hold, an archive's complete gzip members. That is what a machine's writes and
    merges make of a file, and a merge may take it as it is. Costs a checksum (or the
    decompression) of what was appended, not the decoding of its records: a first pull of a
    big ledger is not read twice."""
    if not theirs.startswith(ours):
        return False
    rest = theirs[len(ours):]
    if kind == "archive":
        report = MergeReport()
        for _ in _members(rest, report, "theirs"):
            pass
        return not report.damaged
    for line in rest.splitlines(keepends=True):
        if not line.strip():
            continue
        checked = _CHECKED.search(line)
        if checked is None:  # an older line without its checksum, or a damaged one
            if decode_line(line)[0] is None:
                return False
        elif zlib.crc32(line[:checked.start()] + b"}") != int(
                line[checked.start() + 8:checked.start() + 16], 16):
            return False
    return True


def merge_file(kind: str, path: str | None, base: bytes, ours: bytes,
               theirs: bytes) -> tuple[bytes, MergeReport]:
    """One file's merge (``kind``: ``ledger`` or ``archive``; ``path``: the file's, relative to
    its repository, None when not known). A ledger of the state dir (``ledger/…``; a path not
    known is taken for one) loses a line only by a purge; any other file in the ledger's
    format (a team's ``entries.jsonl``) merges ``reviewed``."""
    if kind == "archive":
        return merge_archives(base, ours, theirs)
    return merge_ledgers(base, ours, theirs,
                         reviewed=path is not None and not path.startswith("ledger/"))


def merge_archives(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, MergeReport]:
    """The union of two versions of a gzip archive: a record the ancestor held that one side
    no longer holds stays out (a purge), unless that side's archive is damaged (its reading
    ended early: the records after the damage are not gone, and are kept)."""
    from memoryd.store.archive import MemberWriter
    report = MergeReport()
    base_lines = archive_lines(base)
    ours_report, theirs_report = MergeReport(), MergeReport()
    our_lines = archive_lines(ours, ours_report, "ours")
    their_lines = archive_lines(theirs, theirs_report, "theirs")
    report.damaged = ours_report.damaged + theirs_report.damaged
    report.refused = len(theirs_report.damaged)
    in_base = {line.data for line in base_lines}
    gone: set[bytes] = set()
    for side, side_report, other, lacking in (
            (our_lines, ours_report, their_lines, "lacking_ours"),
            (their_lines, theirs_report, our_lines, "lacking_theirs")):
        dropped = in_base - {line.data for line in side}
        if not side_report.damaged:
            gone |= dropped
        else:
            setattr(report, lacking, len(dropped & {line.data for line in other}))
    merged = _union(base_lines, our_lines, their_lines, report, ledger=False, gone=gone)
    writer = MemberWriter()
    writer.add(merged)
    return writer.data() if merged else b"", report
