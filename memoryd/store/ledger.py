"""Per-agent append-only ledgers: the source of truth for entries written through the API.

``$MEMORYD_HOME/ledger/<agent>.jsonl`` holds one JSON object per line, each an operation:

    {"op": "remember",  "ts": …, "entry": {…the whole entry…}}
    {"op": "status",    "ts": …, "id": "…", "status": "forgotten"|"superseded"|"active",
                        "was": "…" (the status it changed; older records lack it),
                        "actor": "…", "reason": "…", "superseded_by": "…",
                        "hash": "…", "via": "api"|"watch"|…}   (the entry's content hash
                        and origin: a watched entry the database lacks at replay keeps its
                        status as a mark, applied when the watcher indexes it again)
    {"op": "update",    "ts": …, "id": "…", "fields": {"confidence": …, "occurrences": …,
                        "tags": […], …},
                        "actor": "pass consolidate", "was": "…"}   (a maintenance
                        pass's change; "was" when it changes the status)
    {"op": "release",   "ts": …, "id": "…", "hash": "…", "via": "…", "actor": "…"}
                        (a person let a quarantined entry be injected: memoryd.quarantine)
    {"op": "purge",     "ts": …, "ids": ["…"]}   (``memory purge`` removed these entries'
                        records from this ledger: memoryd.maintenance.purge)

Each line ends with ``"crc":"xxxxxxxx"}``: the CRC-32 of the line's bytes without that member
(``{…record…}``), so a line damaged in the middle of the file is detected, never misread.
Lines written before checksums existed have no ``crc`` and are read as they are.

The rules that make the ledger a log that cannot swallow a write (docs/guarantees.md, "The
ledger cannot swallow a write"):

- **Append**: one write and one fsync for a batch of lines; when the write or the fsync fails
  the file is truncated back to its size before the append (as Redis does with a short AOF
  write), so a partial line never stays behind to merge with the next append.
- **Open** (:meth:`Ledger.repair_tails`, at every daemon start and reindex): a last line
  without its newline is mended. A whole record (checksum valid: the file was rewritten by a
  program that drops the final newline) gets its newline and is kept; a torn line (a crash or
  a full disk mid-append, never acknowledged) is moved to a side file in ``torn/`` in the state
  dir (named in the log and by ``memory doctor``), never destroyed.
- **Read**: a corrupt line in the middle is logged and skipped and reading goes on; when a line
  holds a fragment followed by a whole record (a torn line that older versions appended after),
  the whole record is recovered. :meth:`Ledger.verify` lists every problem for ``memory doctor``.
- **Undo**: :meth:`Ledger.undo` cuts the file back to a size it had (the daemon calls it when the
  database transaction of an appended write fails, before answering the error).
- **Names**: two agents whose names differ only in case would share one file on a
  case-insensitive filesystem (macOS), so such a second name is refused (:class:`AgentCaseError`);
  a file that already holds records of both (made by an older version) replays both.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import BadParamsError
from memoryd.names import AGENT_NAME
from memoryd.store.durable import (
    TORN_DIR,
    append_durably,
    cut_back,
    fsync_directory,
    mend_tail,
)

log = logging.getLogger(__name__)

#: Fields an "update" ledger record may carry (a maintenance pass's change to an API entry;
#: ``project``: `memory scope` moved it between the global tier and a project; ``tags``: a
#: merge gave the survivor the tags of the duplicates it absorbed).
LEDGER_FIELDS = ("status", "superseded_by", "confidence", "occurrences", "project", "tags")

_CRC_TAIL = re.compile(rb',"crc":"([0-9a-f]{8})"\}\n?$')


class AgentCaseError(BadParamsError):
    """An agent name that differs only in case from one that has a ledger already."""


@dataclass(frozen=True)
class LedgerProblem:
    """Something wrong in a ledger file, for the log and ``memory doctor``."""

    agent: str
    path: str
    offset: int  # byte offset of the line's start
    kind: str  # "torn" | "corrupt" | "checksum" | "recovered"
    message: str


def encode_record(record: dict[str, Any]) -> bytes:
    """One ledger line: the record as sorted JSON with its CRC-32 as the last member."""
    record = {k: v for k, v in record.items() if k != "crc"}
    body = json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return body[:-1] + b',"crc":"%08x"}\n' % zlib.crc32(body)


def decode_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(record, None) for a good line; (None, kind: message) for a bad one."""
    tail = _CRC_TAIL.search(raw)
    if tail is not None:
        body = raw[:tail.start()] + b"}"
        if zlib.crc32(body) != int(tail.group(1), 16):
            return None, "checksum: the line's CRC-32 does not match its bytes"
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"corrupt: {exc}"
    if not isinstance(record, dict) or "op" not in record:
        return None, "corrupt: not a ledger record"
    record.pop("crc", None)
    return record, None


def _whole(line: bytes) -> bool:
    """Whether a last line without its newline is a whole record (it lost only the newline)."""
    return decode_line(line + b"\n")[0] is not None


def _recover_tail(raw: bytes) -> tuple[int, dict[str, Any]] | None:
    """A whole record at the end of a damaged line (a torn fragment with the next append glued
    on, as older versions left it): (its start within the line, the record)."""
    start = raw.find(b'{"', 1)
    while start != -1:
        record, _problem = decode_line(raw[start:])
        if record is not None:
            return start, record
        start = raw.find(b'{"', start + 1)
    return None


class Ledger:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._names: dict[str, set[str]] | None = None  # casefolded name -> names on disk

    def path(self, agent: str) -> Path:
        if not AGENT_NAME.match(agent):  # the daemon validates earlier; this guards the path
            raise ValueError(f"invalid agent name {agent!r}")
        return self.directory / f"{agent}.jsonl"

    # -- writing ----------------------------------------------------------------------

    def check_name(self, agent: str) -> None:
        """Refuse a new agent name that differs only in case from one with a ledger: on a
        case-insensitive filesystem both would write one file. (Two such ledgers that already
        exist, made on a case-sensitive filesystem by an older version, both stay writable.)"""
        folded = agent.casefold()
        if self._names is None or agent not in self._names.get(folded, ()):
            self._names = {}
            for name in self.agents():
                self._names.setdefault(name.casefold(), set()).add(name)
        existing = self._names.get(folded, set())
        if existing and agent not in existing:
            other = min(existing)
            raise AgentCaseError(
                f"agent {agent!r} differs only in case from the existing agent {other!r}; "
                f"use {other!r} (agent names are case-sensitive, and on macOS their ledgers "
                "would share one file)")

    def append(self, agent: str, records: list[dict[str, Any]], *,
               sync: bool = True) -> tuple[int, int]:
        """Append records durably (one write, one fsync); returns the ledger's size before and
        after. On failure nothing stays appended: the file is cut back to its size before.
        ``sync`` False leaves the fsync to a later :meth:`sync` (the records survive the
        process being killed, not yet a power loss): for changes nobody has been told of yet."""
        self.check_name(agent)
        path = self.path(agent)
        if not self.directory.exists():
            self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
            fsync_directory(self.directory.parent)
        created = not path.exists()
        before, size = append_durably(
            path, b"".join(encode_record(record) for record in records), sync=sync)
        if created and self._names is not None:
            self._names.setdefault(agent.casefold(), set()).add(agent)
        return before, size

    def sync(self, agents: Iterable[str]) -> None:
        """fsync these agents' ledgers: what :meth:`append` left unsynced is durable now."""
        for agent in agents:
            fd = os.open(self.path(agent), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def undo(self, agent: str, size: int) -> bool:
        """Cut the ledger back to ``size`` bytes (an append whose write then failed)."""
        path = self.path(agent)
        try:
            fd = os.open(path, os.O_WRONLY)
        except OSError as exc:
            log.error("Could not take back the records of a failed write from %s: %s", path, exc)
            return False
        try:
            done = cut_back(fd, path, size)
        finally:
            os.close(fd)
        if done:
            log.warning("Took back the ledger records of a write that failed (%s, cut to %d "
                        "bytes).", path, size)
        return done

    # -- reading ----------------------------------------------------------------------

    def agents(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.jsonl") if AGENT_NAME.match(p.stem))

    def repair_tails(self) -> list[LedgerProblem]:
        """Mend every ledger whose last line lacks its newline (at open, before anything is
        appended): a whole record gets its newline; a torn line is moved to a side file in
        ``torn/`` (memoryd.store.durable.mend_tail). Returns the torn lines set aside."""
        problems = []
        for agent in self.agents():
            path = self.path(agent)
            mended = mend_tail(path, _whole, self.torn_path(agent))
            if mended is None:
                continue
            log.warning("Ledger %s: %s.", path, mended.describe())
            if mended.aside is not None:
                problems.append(LedgerProblem(agent, str(path), mended.offset, "torn",
                                              mended.describe()))
        return problems

    def torn_path(self, agent: str) -> Path:
        """Where a torn last line of the agent's ledger is set aside (its time added): in the
        state dir, out of the synced ledger directory."""
        return self.directory.parent / TORN_DIR / f"ledger-{agent}.jsonl"

    def read(self, agent: str, offset: int = 0,
             problems: list[LedgerProblem] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        """(offset after the line, record) for each good line from ``offset``.

        A last line without its newline is not read (it is mended at the next open); a corrupt
        line in the middle is logged, added to ``problems`` and skipped, and reading goes on."""
        path = self.path(agent)
        if not path.exists():
            return
        with path.open("rb") as handle:
            handle.seek(offset)
            position = offset
            for raw in handle:
                start, position = position, position + len(raw)
                if not raw.endswith(b"\n"):
                    self._problem(problems, LedgerProblem(
                        agent, str(path), start, "torn",
                        f"a torn last line of {len(raw)} bytes (never acknowledged)"), log.warning)
                    return
                record, problem = decode_line(raw)
                if record is None:
                    recovered = _recover_tail(raw)
                    if recovered is None:
                        assert problem is not None
                        kind, _, message = problem.partition(": ")
                        self._problem(problems, LedgerProblem(
                            agent, str(path), start, kind,
                            f"skipped a damaged line of {len(raw)} bytes ({message})"), log.error)
                        continue
                    cut, record = recovered
                    self._problem(problems, LedgerProblem(
                        agent, str(path), start, "recovered",
                        f"a torn fragment of {cut} bytes was followed by a whole record; "
                        "the record was read, the fragment skipped"), log.warning)
                yield position, record

    @staticmethod
    def _problem(problems: list[LedgerProblem] | None, problem: LedgerProblem,
                 report: Any) -> None:
        report("Ledger %s, line at byte %d: %s", problem.path, problem.offset, problem.message)
        if problems is not None:
            problems.append(problem)
