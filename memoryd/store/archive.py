"""Per-agent transcript archives: memoryd's own copy of what it indexed from transcripts.

Agents delete their old transcripts (Claude Code after 30 days by default). The index keeps
the turns of a deleted transcript, but a rebuilt index would lose them, so the retain pass
(:mod:`memoryd.passes.retain`) copies every transcript entry it has not copied yet to
``$MEMORYD_HOME/transcripts/<agent>.jsonl.gz``:

- **append-only gzip**: each run appends whole gzip members (a gzip file may hold several;
  ``zcat``, ``gzip -t`` and Python's :mod:`gzip` read them as one stream) of JSON lines,
  one per entry::

      {"op": "entry", "entry": {"uid": "t…", "agent": …, "text": …, …every entry column}}

- **what the index holds**: the filtered, redacted exchange text, its status and provenance
  (session, source, message id, dates), enough to rebuild the entry exactly;
- a uid may appear more than once (an exchange that grew, a forget): the newest ``updated``
  wins.

**Each version once.** The retain pass copies the rows whose ``updated`` is past its mark,
but a row can be past the mark and in an archive already: a sync restored it from another
machine's archive records (its ``updated`` is that machine's), or a start restored records
whose append the database had not recorded. Every restore notes the version it restored in
``archived_turns`` (uid, updated); the pass skips a row whose version is noted there, and
forgets the notes its mark has passed. So a turn is archived once, whatever the order of
syncs and retain runs. Archives written before this may hold a record twice: restoring keeps
one row per uid (the newest), so no reader of the index sees it twice, and a sync's merge
keeps each record once.

:func:`copy_changed` copies what changed since the last copy (the retain pass runs it in
slices; ``memoryd reindex`` runs it at once on the database it sets aside, :func:`archive_now`).
The database records how far into each archive it holds (meta ``archive:<agent>``, a byte
offset at a member boundary), as it does for the ledgers. At start and at ``memoryd reindex``
the members past it are restored (:func:`restore_archives`): an entry the database lacks is
inserted, an older row is replaced, a newer one is kept. Restored into an index that held no
transcript turns (a rebuild), the turns also register their sessions again where no
transcript will (:func:`register_sessions`). A member cut short by a crash
mid-append is ignored when reading and cut off before the next append; a corrupt member is
skipped (logged) and reading resumes at the next member.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from memoryd.names import AGENT_NAME
from memoryd.scheduling import giving_way
from memoryd.store.database import ENTRY_COLUMNS, Store, decode_tags
from memoryd.store.durable import cut_back, fsync_directory, write_all
from memoryd.store.fetch import one

log = logging.getLogger(__name__)

#: Transcript chunks are the entries whose uid is this prefix and a stable chunk id.
TRANSCRIPT_PREFIX = "t"
#: SQL (on ``entries``) for the rows the archives keep. The partial index the retain pass walks
#: (``entries_transcripts_updated``, schema 15) has this very WHERE: SQLite uses it only then.
TRANSCRIPT_ROWS = "via = 'watch' AND uid >= 't' AND uid < 'u'"
#: A member holds at most this many records, so restoring one never needs much memory.
MEMBER_RECORDS = 2048
GZIP_WBITS = 31  # zlib's gzip container
GZIP_MAGIC = b"\x1f\x8b\x08"
READ_BYTES = 1 << 20
REQUIRED = ("uid", "agent", "kind", "text", "hash", "created", "updated", "via")
#: Meta key of the retain pass's high-water mark: [updated, id] of the last row archived.
RETAIN_MARK = "retain:mark"
#: Rows read from the database per step of a copy.
BATCH_ROWS = 256
#: Records compressed between two pauses for the searches in flight (memoryd.scheduling): ~2.5 ms
#: of a core (a batch of 256 transcript chunks took ~20 ms, beside any search that came then).
GIVE_WAY_ROWS = 32
#: A row's columns, then the ``updated`` of the version of it an archive holds when a restore
#: noted one (``archived_turns``), else NULL.
_SELECT = (f"SELECT id, {', '.join(ENTRY_COLUMNS)}, "
           "(SELECT held.updated FROM archived_turns held WHERE held.uid = entries.uid) "
           f"FROM entries WHERE (updated, id) > (?, ?) AND updated <= ? AND {TRANSCRIPT_ROWS}")
_UPDATED = ENTRY_COLUMNS.index("updated") + 1
_AGENT = ENTRY_COLUMNS.index("agent") + 1
_HELD = len(ENTRY_COLUMNS) + 1


def meta_key(agent: str) -> str:
    return f"archive:{agent}"


def archive_record(entry: dict[str, Any]) -> bytes:
    """One archive line: an entry as stored (``uid``, decoded tags, every column)."""
    return json.dumps({"op": "entry", "entry": entry}, ensure_ascii=False,
                      sort_keys=True).encode("utf-8") + b"\n"


class MemberWriter:
    """One run's records for one archive, compressed as they come into gzip members."""

    def __init__(self, level: int = 6) -> None:
        self.level = level
        self.records = 0
        self._parts: list[bytes] = []
        self._compressor: Any = None
        self._in_member = 0

    def add(self, lines: list[bytes]) -> None:
        for line in lines:
            if self._compressor is None:
                self._compressor = zlib.compressobj(self.level, zlib.DEFLATED, GZIP_WBITS)
            self._parts.append(self._compressor.compress(line))
            self._in_member += 1
            self.records += 1
            if self._in_member >= MEMBER_RECORDS:
                self._end_member()

    def _end_member(self) -> None:
        if self._compressor is not None:
            self._parts.append(self._compressor.flush())
        self._compressor, self._in_member = None, 0

    def data(self) -> bytes:
        """The whole members written so far (the writer can go on after)."""
        self._end_member()
        data = b"".join(self._parts)
        self._parts = []
        return data


class AgentArchive:
    """An append-only gzip archive per agent, ``<directory>/<agent>.jsonl.gz``: the transcript
    archives, and the history of the memory tools' files (old versions, whole texts)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, agent: str) -> Path:
        if not AGENT_NAME.match(agent):  # agent names are checked earlier; this guards the path
            raise ValueError(f"invalid agent name {agent!r}")
        return self.directory / f"{agent}.jsonl.gz"

    def agents(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(name for p in self.directory.glob("*.jsonl.gz")
                      if AGENT_NAME.match(name := p.name.removesuffix(".jsonl.gz")))

    def append(self, agent: str, data: bytes, known: int | None) -> tuple[int, int]:
        """Append whole members durably (one write, one fsync); returns (where they start, the
        archive's size after). ``known`` is where the database says the archive ends: bytes
        past it that form no whole member (a torn append) are cut off first. An append that
        fails is cut off before the error goes on. Appends to one archive take turns (a
        lock on the file): the memory tools append on the database thread while the retain
        pass appends on a worker thread."""
        path = self.path(agent)
        if not self.directory.exists():
            self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
            fsync_directory(self.directory.parent)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size != known:
                start = known if known is not None and known <= size else 0
                with open(path, "rb") as handle:
                    end = start
                    for _, stop, _ in _members(handle, path, start):
                        end = stop
                if end < size:
                    log.warning("Cutting %d bytes of an unfinished append off %s.",
                                size - end, path)
                    os.ftruncate(fd, end)
                    size = end
            os.lseek(fd, size, os.SEEK_SET)
            try:
                write_all(fd, data)
                os.fsync(fd)
            except OSError:
                cut_back(fd, path, size)
                raise
            after = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if created:
            fsync_directory(self.directory)
        return size, after

    def cut(self, agent: str, start: int, end: int) -> bool:
        """Take back an append (``start`` to ``end``, as :meth:`append` returned them) whose
        database transaction failed; only while nothing was appended after it. False when it
        stays (logged: a reader of the archive takes it as a write that was never answered)."""
        path = self.path(agent)
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError as exc:
            log.critical("Could not take an unrecorded append back off %s: %s", path, exc)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size != end:
                log.warning("Leaving an unrecorded append in %s (bytes %d-%d): more was "
                            "appended after it.", path, start, end)
                return False
            return cut_back(fd, path, start)
        finally:
            os.close(fd)

    def raw(self, agent: str) -> Iterator[bytes]:
        """Each whole member's uncompressed bytes, as written (``memory purge`` keeps the
        lines it does not remove byte for byte)."""
        path = self.path(agent)
        if not path.exists():
            return
        with path.open("rb") as handle:
            for _, _, data in _members(handle, path, 0):
                yield data

    def read(self, agent: str, offset: int = 0) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """(offset after the member, its records) for each whole member from ``offset``."""
        path = self.path(agent)
        if not path.exists():
            return
        with path.open("rb") as handle:
            for _, end, data in _members(handle, path, offset):
                records = []
                for number, line in enumerate(data.splitlines(), 1):
                    try:
                        record = json.loads(line)
                    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                        log.error("Skipping corrupt line %d of a member of %s ending at byte "
                                  "%d: %s", number, path, end, exc)
                        continue
                    if isinstance(record, dict):
                        records.append(record)
                yield end, records


def _members(handle: IO[bytes], path: Path, offset: int) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, uncompressed bytes) of each whole gzip member from ``offset``. A corrupt
    member is skipped (reading resumes at the next gzip header); a member cut short at the end
    of the file ends the iteration."""
    start = offset
    handle.seek(start)
    pending = b""
    while True:
        if not pending:
            pending = handle.read(READ_BYTES)
            if not pending:
                return
        decompressor = zlib.decompressobj(GZIP_WBITS)
        fed, out = 0, []
        try:
            while True:
                out.append(decompressor.decompress(pending))
                fed += len(pending)
                if decompressor.eof:
                    break
                pending = handle.read(READ_BYTES)
                if not pending:
                    log.warning("Ignoring an unfinished member at the end of %s (byte %d).",
                                path, start)
                    return
        except zlib.error as exc:
            resumed = _next_header(handle, start + 1)
            log.error("Skipping a corrupt member of %s at byte %d (%s); %s.", path, start, exc,
                      f"resuming at byte {resumed}" if resumed is not None else "nothing after")
            if resumed is None:
                return
            start, pending = resumed, b""
            handle.seek(start)
            continue
        end = start + fed - len(decompressor.unused_data)
        yield start, end, b"".join(out)
        start, pending = end, decompressor.unused_data


def _next_header(handle: IO[bytes], position: int) -> int | None:
    """Where the next gzip header starts at or after ``position``."""
    handle.seek(position)
    carry = b""
    base = position
    while chunk := handle.read(READ_BYTES):
        data = carry + chunk
        found = data.find(GZIP_MAGIC)
        if found >= 0:
            return base + found
        carry = data[-(len(GZIP_MAGIC) - 1):]
        base += len(data) - len(carry)
    return None


@dataclass(frozen=True)
class Work:
    """Slow work without the database (JSON, compressing, writing a file), which a pass hands
    to a worker thread (``memoryd.passes.api.Offload``)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Appended:
    """What one run added to one agent's archive (in a dry run: would add)."""

    agent: str
    path: str
    entries: int
    offset: int | None = None  # where the new members start
    bytes: int = 0


def copy_changed(store: Store, archive: AgentArchive, *, agent: str | None = None,
                 project: str | None = None, dry_run: bool = False,
                 on_append: Callable[[Appended], None] | None = None
                 ) -> Generator[Work | None, Any, list[Appended]]:
    """Copy the transcript entries changed since the retain mark to their archives, in
    steps: a :class:`Work` to do off the database thread (its result is sent back), or None
    (a slice point: a few hundred rows were read). Returns what each archive got;
    ``on_append`` runs in the transaction that records an archive's new end."""
    raw = store.meta(RETAIN_MARK)
    cursor: tuple[float, int] = (0.0, 0)
    if raw:
        updated, rowid = json.loads(raw)
        cursor = (float(updated), int(rowid))
    sql, scope = _SELECT, []
    if agent is not None:
        sql, scope = sql + " AND +agent = ?", [agent]
    if project is not None:
        sql, scope = sql + " AND +project = ?", scope + [project]
    sql += " ORDER BY updated, id LIMIT ?"  # "+agent": walk entries_updated all the same
    until = time.time()
    writers: dict[str, MemberWriter] = {}
    counted: dict[str, int] = {}
    moved = False
    while rows := store._db.execute(sql, [*cursor, until, *scope, BATCH_ROWS]).fetchall():
        cursor = (cast(float, rows[-1][_UPDATED]), cast(int, rows[-1][0]))
        moved = True
        by_agent: dict[str, list[tuple[Any, ...]]] = {}
        for row in rows:
            held = cast(float | None, row[_HELD])
            if held is None or held < cast(float, row[_UPDATED]):  # else an archive has it
                by_agent.setdefault(cast(str, row[_AGENT]), []).append(row[:_HELD])
        for name, agent_rows in by_agent.items():
            counted[name] = counted.get(name, 0) + len(agent_rows)
            if not dry_run:
                yield Work(_compress, (writers.setdefault(name, MemberWriter()), agent_rows))
        yield None
    appended: list[Appended] = []
    for name, count in sorted(counted.items()):
        path = str(archive.path(name))
        if dry_run:
            appended.append(Appended(name, path, count))
            if on_append is not None:
                on_append(appended[-1])
            continue
        known = store.meta(meta_key(name))
        start, size = yield Work(archive.append, (name, writers[name].data(),
                                                  int(known) if known else None))
        appended.append(Appended(name, path, count, start, size - start))
        with store.transaction():
            store.set_meta(meta_key(name), str(size))
            if on_append is not None:
                on_append(appended[-1])
    if moved and agent is None and project is None and not dry_run:
        with store.transaction():
            store.set_meta(RETAIN_MARK, json.dumps(list(cursor)))
            _forget_held(store, cursor[0])
    return appended


def _note_held(store: Store, uid: str, updated: float) -> None:
    """An archive holds this version of a transcript row (see the module docstring)."""
    store._db.execute("INSERT INTO archived_turns(uid, updated) VALUES (?, ?) ON CONFLICT(uid) "
                      "DO UPDATE SET updated = max(updated, excluded.updated)", (uid, updated))


def _forget_held(store: Store, mark: float) -> None:
    """The notes the retain mark has passed: the pass never reads those rows again (a change
    to one moves its ``updated`` past the mark, and past the note)."""
    store._db.execute("DELETE FROM archived_turns WHERE updated < ?", (mark,))


def archive_now(store: Store, archive: AgentArchive) -> int:
    """:func:`copy_changed` all at once, without the pass runner (``memoryd reindex`` does
    it before it sets the old database aside). Returns how many entries were copied."""
    steps = copy_changed(store, archive)
    value: Any = None
    try:
        while True:
            step = steps.send(value)
            value = step.fn(*step.args) if isinstance(step, Work) else None
    except StopIteration as done:
        return sum(appended.entries for appended in done.value)


def _compress(writer: MemberWriter, rows: list[tuple[Any, ...]]) -> None:
    for row in giving_way(rows, GIVE_WAY_ROWS):
        entry = dict(zip(ENTRY_COLUMNS, row[1:]))
        entry["tags"] = decode_tags(entry["tags"])
        writer.add([archive_record(entry)])


def restore_archives(store: Store, archive: AgentArchive,
                     harnesses: Mapping[str, str] | None = None) -> int:
    """Restore archive records the database has not seen (see the module docstring); returns
    how many entries were inserted (a newer record of one replaces it and is not counted
    again). Runs before the ledgers are replayed, so their status records find the transcript
    entries. ``harnesses``: the transcript sources the daemon reads, by name, with their
    format (:func:`register_sessions`)."""
    fresh = store._db.execute(f"SELECT 1 FROM entries WHERE {TRANSCRIPT_ROWS} LIMIT 1"
                             ).fetchone() is None
    restored = 0
    for agent in archive.agents():
        key = meta_key(agent)
        offset = int(store.meta(key) or 0)
        path = archive.path(agent)
        if path.stat().st_size < offset:
            log.warning("Archive %s is shorter than recorded; restoring it whole.", path)
            offset = 0
        if store.meta(key) != str(offset):
            with store.transaction():
                store.set_meta(key, str(offset))
        for end, records in archive.read(agent, offset):
            with store.transaction():
                for record in records:
                    entry = _entry_of(record, agent, path)
                    if entry is not None:
                        restored += _restore_entry(store, entry)
                store.set_meta(key, str(end))
    if fresh and restored and store.meta(RETAIN_MARK) is None:
        # every transcript row is one the archives hold: the retain pass goes on from there
        newest, last = one(
            store._db, f"SELECT max(updated), (SELECT max(id) FROM entries) FROM entries "
            f"WHERE {TRANSCRIPT_ROWS}")
        with store.transaction():
            store.set_meta(RETAIN_MARK, json.dumps([newest, last]))
            _forget_held(store, float(newest))
    if fresh and restored:
        with store.transaction():
            sessions = register_sessions(store, harnesses or {})
        if sessions:
            log.info("Registered %d sessions again from their archived turns (their "
                     "transcripts are gone).", sessions)
    if restored:
        log.info("Restored %d transcript entries from the archives.", restored)
    return restored


#: An exchange chunk that begins with the user's message (memoryd.ingest.transcript.chunks).
_USER_CHUNK = re.compile(r"(?:\[\d{4}-\d{2}-\d{2}\] )?User[:( ]")


def register_sessions(store: Store, harnesses: Mapping[str, str]) -> int:
    """Put back in the registry the sessions of transcript turns that it lacks and that no
    transcript will register again: the file is gone, or no source in ``harnesses`` (name →
    format) reads it. Each is told as its turns tell it: its id, agent (that of its main
    thread, not a subagent's), project, harness (its source's format, else the source's
    name), first and last turn, user messages (the exchanges that begin with one) and the
    file it was read from. Returns how many."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    for row in store._db.execute(
            "SELECT session, agent, project, created, source, writer, kind, substr(text, 1, 40) "
            f"FROM entries WHERE {TRANSCRIPT_ROWS} AND session IS NOT NULL "
            "AND session NOT IN (SELECT id FROM sessions) ORDER BY session, created"):
        found.setdefault(cast(str, row[0]), []).append(row)
    registered = 0
    for session, rows in found.items():
        if any(writer in harnesses and source and os.path.exists(source)
               for *_, source, writer, _, _ in rows):
            continue  # the watcher reads it again and registers it
        agent = min((cast(str, row[1]) for row in rows), key=lambda name: (len(name), name))
        main = [row for row in rows if row[1] == agent]
        writer = cast(str, main[0][5])
        store._db.execute(
            "INSERT OR IGNORE INTO sessions(id, harness, agent, project, started, last_seen, "
            "user_messages, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (session, harnesses.get(writer, writer), agent,
             next((row[2] for row in main if row[2]), None), rows[0][3],
             max(row[3] for row in rows),
             sum(1 for row in main if row[6] == "turn" and _USER_CHUNK.match(row[7] or "")),
             main[0][4]))
        registered += 1
    return registered


def restore_records(store: Store, agent: str, path: Path,
                    records: list[dict[str, Any]]) -> int:
    """Restore archive records that came from another machine (memoryd.sync.apply), in the
    caller's transaction, as :func:`restore_archives` does; returns how many were inserted."""
    restored = 0
    for record in records:
        entry = _entry_of(record, agent, path)
        if entry is not None:
            restored += _restore_entry(store, entry)
    return restored


def _entry_of(record: dict[str, Any], agent: str, path: Path) -> dict[str, Any] | None:
    raw = record.get("entry")
    if record.get("op") != "entry" or not isinstance(raw, dict):
        log.warning("Skipping an unknown record in %s: %r", path, record.get("op"))
        return None
    if raw.get("agent") != agent or any(raw.get(k) is None for k in REQUIRED) or \
            not str(raw["uid"]).startswith(TRANSCRIPT_PREFIX):
        log.warning("Skipping an incomplete record in %s: %r", path, raw.get("uid"))
        return None
    entry = {column: raw.get(column) for column in ENTRY_COLUMNS}
    entry["category"] = entry["category"] or ""
    entry["status"] = entry["status"] or "active"
    entry["confidence"] = entry["confidence"] if entry["confidence"] is not None else 0.5
    entry["tags"] = entry["tags"] or []
    entry.pop("quarantined", None)  # decided again from the text and the release marks
    return entry


def _restore_entry(store: Store, entry: dict[str, Any]) -> int:
    _note_held(store, entry["uid"], entry["updated"])  # a newer row's version is not noted
    row = store._db.execute("SELECT updated FROM entries WHERE uid=?", (entry["uid"],)).fetchone()
    if row is None:  # no event, as the indexer records none for a new chunk
        store.insert_entry(entry)
        return 1
    if row[0] < entry["updated"]:
        before = store.entry_by_uid(entry["uid"])
        store.update_entry(entry["uid"], **{k: v for k, v in entry.items() if k != "uid"})
        store.record_event(entry["uid"], "restored", "retain", before,
                           {"text": entry["text"], "status": entry["status"]}, entry["updated"])
    return 0
