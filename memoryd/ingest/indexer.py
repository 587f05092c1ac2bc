"""Watched files → entries, in place: the files stay the source of truth.

Reading (memoryd.ingest.file_read) happens off the database thread; ``Indexer`` parses and applies
the text on it, in the indexing slices (parsing is pure Python: on another thread it held the
GIL against the searches on the database thread while the watcher reindexed the thousand
notebooks a pass rewrote). Memory files are diffed by content hash, so an edit touches only the
entries whose text changed, a removed bullet leaves the index (with an event), and a renamed file
keeps its entries and their history. A file read again with the text it was indexed from
(:func:`memory_key`, kept in its row) is not parsed again, and a file a pass is writing
(``Store.writing``) is left to the pass, which indexes it once written. Transcript chunks are
upserted by a stable id derived from their first record, so re-reading a file never duplicates
anything.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from memoryd.ingest.file_read import (
    FileFacts,
    MemoryFileRead,
    indexed_stat,
    memory_key,
    still_as_read,
)
from memoryd.ingest.line_date import FUTURE_SLACK_S, line_created, still_to_come
from memoryd.ingest.markdown import MemoryFile, is_pinned, parse_memory_file
from memoryd.ingest.open_exchange import (
    forget_open_turns,
    load_open_turns,
    move_open_turns,
    save_open_turns,
)
from memoryd.ingest.tail import TailPosition
from memoryd.ingest.transcript import Chunk, Turn
from memoryd.project import project_of
from memoryd.redact import redact
from memoryd.store.archive import TRANSCRIPT_PREFIX
from memoryd.store.database import Store, encode_records
from memoryd.store.entries import Entries
from memoryd.store.entry_writes import mark_target, new_uid
from memoryd.store.files import FileOrigin, FileState, KnownFile
from memoryd.store.query import EntryQuery
from memoryd.store.records import Entry, StoredEntry
from memoryd.text import content_hash

log = logging.getLogger(__name__)

#: A watched entry's events keep its text whole up to this many characters; a longer
#: one (a big memory file read as one entry) by its beginning and its length (``text_chars``).
#: The file holds the text, and the memory tools' file versions every version they wrote (as
#: deltas: memoryd.store.file_versions); whole, each version of a 1 MB file written 50 times
#: grew the database by 100 MB.
EVENT_TEXT_CHARS = 4096
TRANSCRIPT_CATEGORY = "session"
TRANSCRIPT_CONFIDENCE = 0.5
#: A memory file's problem: its mtime (which dates its undated lines) is in the future.
MTIME_AHEAD = "its modification time is in the future: its undated lines dated when read"
#: The statuses of an entry kept as history: no longer in its file (memory forget, supersede).
HISTORY = ("forgotten", "superseded")
_UNSAFE_AGENT_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def as_event(entry: StoredEntry | dict[str, Any]) -> dict[str, Any]:
    """An entry (or the fields a change sets) as a watcher's event keeps it: its text
    cut at EVENT_TEXT_CHARS."""
    fields = entry.as_dict() if isinstance(entry, StoredEntry) else entry
    text = fields.get("text")
    if not isinstance(text, str) or len(text) <= EVENT_TEXT_CHARS:
        return fields
    return {**fields, "text": text[:EVENT_TEXT_CHARS], "text_chars": len(text)}


@dataclass
class Changes:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    #: what the file said that memoryd did not take as said (a date still to come, dated when
    #: read instead): its problem, as `memory status --sources` shows it
    notes: list[str] = field(default_factory=list)

    def __iadd__(self, other: Changes) -> Changes:
        self.added += other.added
        self.updated += other.updated
        self.removed += other.removed
        self.unchanged += other.unchanged
        self.notes += other.notes
        return self


@dataclass(frozen=True)
class TailStart:
    """What a transcript needs from the store before it is read: the path it was renamed from
    (its row and entries already moved to its new one), the offset it was read up to (None:
    never read), and the exchange left open there (None: not asked for)."""

    renamed_from: str | None
    position: TailPosition | None
    open_turns: tuple[Turn, ...] | None


def agent_for_sidechain(agent: str, sidechain: str | None) -> str:
    if not sidechain:
        return agent
    clean = _UNSAFE_AGENT_CHARS.sub("-", sidechain).strip("-.")[:40] or "subagent"
    return f"{agent}.{clean}"[:64]


class Indexer:
    """Applies parsed files to the store. Runs on the database thread."""

    def __init__(self, store: Store, memory: Entries) -> None:
        self.store = store
        self.memory = memory
        self._projects: dict[str, str] = {}

    def project(self, cwd: str | None) -> str | None:
        if not cwd:
            return None
        if cwd not in self._projects:
            self._projects[cwd] = project_of(cwd)
        return self._projects[cwd]

    # -- files table ------------------------------------------------------------------

    def known_files(self) -> dict[str, KnownFile]:
        """Every file indexed so far, by path: its stat and origin as last read."""
        return {f.path: f for f in self.store.files.known()}

    def known_paths(self) -> dict[str, tuple[int, float, int] | None]:
        """path → :func:`indexed_stat` of every file indexed so far."""
        return {f.path: indexed_stat(f) for f in self.store.files.known()}

    def paths_below(self, directories: list[str]) -> list[str]:
        """The indexed files below any of ``directories``."""
        return [p for directory in directories for p in self.store.files.paths_below(directory)]

    def tail_position(self, path: str) -> TailPosition | None:
        found = self.store.files.tail(path)
        return TailPosition(*found) if found is not None else None

    def tail_start(self, facts: FileFacts, open_turns: bool) -> TailStart:
        """All a transcript needs before it is read, in one trip to the database thread (it
        took two to four, each a hand-off from the loop, before the first write): a rename
        followed (:meth:`follow_rename`), the file's offset, and with ``open_turns`` (its reader
        starts afresh: after a restart, a new configuration) or after a rename (its reader starts
        afresh too) the exchange left open there (memoryd.ingest.open_exchange)."""
        self._drop_other_kind(facts)
        old = self.follow_rename(facts)
        position = self.tail_position(facts.path)
        turns = tuple(load_open_turns(self.store, facts.path)) \
            if (open_turns or old is not None) and position is not None else None
        return TailStart(old, position, turns)

    def chunk_records(self, path: str) -> set[str]:
        """The record ids the transcript's chunks hold (a parser going on after a restart
        tells a line said again from a new one by them)."""
        return self.store.chunk_records(path)

    def _save_file(self, facts: FileFacts, **extra: Any) -> None:
        self.store.files.save({
            "path": facts.path, "source": facts.source, "kind": facts.kind,
            "agent": facts.agent, "device": facts.device, "inode": facts.inode,
            "size": facts.size, "mtime": facts.mtime, "indexed": time.time(), **extra})

    def record_error(self, facts: FileFacts, error: str) -> None:
        with self.store.transaction():
            if facts.kind == "memory":  # what it held stays, in the project it is in now
                self._follow_file(facts, self._entries_of(facts.path), time.time())
            self._save_file(facts, error=error, project=facts.project)

    def keep_unread(self, path: str, error: str) -> bool | None:
        """A watched file that is there but cannot be read (:func:`why_unread`): its entries
        are kept, its row says why. Returns whether that is news (its row said otherwise);
        None when the file was never indexed."""
        with self.store.transaction():
            try:
                return self.store.files.unread(path, error) != error
            except KeyError:
                return None

    def renamed_from(self, facts: FileFacts) -> str | None:
        """The indexed path this file was renamed from: same inode, old path gone."""
        for old in self.store.files.with_inode(facts.device, facts.inode, facts.path):
            if not os.path.exists(old):
                return str(old)
        return None

    def follow_rename(self, facts: FileFacts) -> str | None:
        """The file was renamed (:meth:`renamed_from`): its row and entries moved to its path.
        Returns the old path (None: not renamed)."""
        old = self.renamed_from(facts)
        if old is not None:
            self.move_file(old, facts.path)
        return old

    def move_file(self, old: str, new: str) -> int:
        """Point a file's row and entries at its new path; history stays with the entries."""
        with self.store.transaction():
            self.store.files.move(old, new)
            move_open_turns(self.store, old, new)
            moved = self.store.entry_values(EntryQuery().source(old), "uid")
            self.store.move_source(old, new)
            for uid in moved:
                self.store.record_event(uid, "moved", "watch", {"source": old}, {"source": new})
        log.info("Renamed %s → %s: kept %d entries.", old, new, len(moved))
        return len(moved)

    # -- memory files -----------------------------------------------------------------

    def apply_memory_file(self, result: MemoryFileRead) -> Changes:
        facts = result.facts
        if facts.path in self.store.writing:
            return Changes()  # a pass is writing it, and reads and indexes it once written
        self._drop_other_kind(facts)
        if result.text is None:
            self.record_error(facts, result.error or "unreadable")
            return Changes()
        key = memory_key(result.text, is_pinned(result.relative))
        if not result.notes and self.indexed_as(facts, key):
            with self.store.transaction():  # as indexed (a pass indexed what it wrote): its stat
                self._save_file(facts)
            return Changes()
        parsed = parse_memory_file(result.text, result.relative)
        # read off this thread: a text the file no longer holds (a forget rewrote it since)
        # brings back no line, and is read again (its key is not kept)
        current = still_as_read(facts)
        return self.apply_parsed(facts, parsed, key if current and not result.notes else None,
                                 result.notes, revive=current)

    def indexed_as(self, facts: FileFacts, key: str) -> bool:
        """Whether the index holds the file made from the text of ``key``, for its source,
        agent and project."""
        return self.store.files.state(facts.path) == FileState(
            FileOrigin(facts.source, facts.kind, facts.agent, facts.project), key, None)

    def apply_parsed(self, facts: FileFacts, parsed: MemoryFile, key: str | None,
                     notes: list[str] | None = None, revive: bool = True) -> Changes:
        """Make the file's entries those of ``parsed``: unchanged texts keep their entries
        (their lines, dates, sections updated), new ones are added, gone ones removed. ``key``:
        the :func:`memory_key` of the text parsed (None: not to be trusted, e.g. undecodable
        bytes were replaced).

        A line the index keeps as history (forgotten, or superseded: `memory forget` and
        `supersede` took it out of the file) that the file holds again is active again, under
        its id: the file is the truth, and a line in it is loaded by its agent (an editor's
        stale buffer saved, a `git checkout`, the user's own hand put it back), as a rebuild of
        the index from the file has it. ``revive`` False: the text is not what the file holds
        now (read before a forget rewrote it), and brings no line back.

        A dated line's ``created`` is its local day's (memoryd.ingest.line_date): kept while
        it is within that day, the time it is read when that is its day or the day is still
        to come. No line is dated after the time it is read (a date still to come, a file's
        mtime ahead of the clock): the returned changes' ``notes`` say which were."""
        existing: dict[str, list[StoredEntry]] = {}
        # a text already stored as it stands has no secret left to redact (redacting is
        # idempotent), and its hash is known: most items of a changed file are unchanged
        stored: dict[str, str] = {}
        for entry in self._entries_of(facts.path):
            existing.setdefault(entry.hash, []).append(entry)
            stored[entry.text] = entry.hash
        for same in existing.values():  # a line is its active entry, before any history
            same.sort(key=lambda e: e.status != "active")
        changes = Changes()
        ahead: list[str] = []  # the lines dated on a day still to come
        now = time.time()
        with self.store.transaction():
            self._follow_file(facts, [e for same in existing.values() for e in same], now)
            for item in parsed.items:
                hash_ = stored.get(item.text)
                if hash_ is None:
                    text = redact(item.text)
                    hash_ = content_hash(text)
                else:
                    text = item.text
                # a heading may hold a secret too: the parser redacted it (before its kebab
                # form, which the redactor would no longer know)
                fields = {"line_start": item.line_start, "line_end": item.line_end,
                          "category": item.category, "kind": item.kind,
                          "polarity": item.polarity, "agent": facts.agent,
                          "heading": item.title_path}
                if item.date and still_to_come(item.date, now):
                    ahead.append(f"line {item.line_start} [{item.date}]")
                matches = existing.get(hash_)
                if matches:
                    if self._update_file_entry(matches.pop(0), fields, item.date, now, revive):
                        changes.updated += 1
                    else:
                        changes.unchanged += 1
                    continue
                self._insert_file_entry(facts, text, hash_, fields, now, item.date, changes)
                changes.added += 1
            if ahead:
                changes.notes.append(f"dated after today ({', '.join(ahead[:3])}"
                                     f"{', …' if len(ahead) > 3 else ''}): dated when read")
            for leftovers in existing.values():
                for entry in leftovers:
                    if entry.status in HISTORY:
                        continue  # history: `memory forget`/`supersede` took it out of the file
                    self._remove_entry(entry, "removed from file")
                    changes.removed += 1
            self._save_file(
                facts, description=redact(parsed.description) if parsed.description else None,
                type=parsed.type, pinned=int(parsed.pinned),
                frontmatter=json.dumps(_redacted(parsed.frontmatter)),
                error="; ".join(notes or ()) or None, text_key=key, project=facts.project)
        return changes

    def _update_file_entry(self, entry: StoredEntry, fields: dict[str, Any], date: str | None,
                           now: float, revive: bool) -> bool:
        """A line the index holds, read again: its ``fields`` as read, and its created as its
        date has it (memoryd.ingest.line_date: kept while within its day), never after
        ``now``; revived if kept as history (and ``revive``). Returns whether it changed."""
        revived = revive and entry.status in HISTORY
        if revived:
            self._revive(entry, now)
        if date:
            fields["created"] = line_created(date, now, entry.created)
        elif entry.created > now:  # dated ahead of the clock by a memoryd before
            fields["created"] = now
        different = {k: v for k, v in fields.items() if getattr(entry, k) != v}
        if different:
            self.store.update_entry(entry.uid, **different, updated=now)
        return bool(different) or revived

    def apply_known(self, facts: FileFacts, parsed: MemoryFile, key: str,
                    rowids: list[int]) -> None:
        """:meth:`apply_parsed` for a text whose entries the caller knows: ``parsed``'s items
        are the entries ``rowids``, in order, as they stand but for their lines (a notebook the
        pass reordered: only its lines moved). Only the file's entry ids are read back: where
        they are not ``rowids`` (the watcher indexed an agent's edit after the pass read the
        index, so an entry it added was neither kept nor moved), the file is diffed in full."""
        assert len(rowids) == len(parsed.items)
        held = self.store.entry_values(EntryQuery().source(facts.path).active(), "id")
        if sorted(held) != sorted(rowids):
            self.apply_parsed(facts, parsed, key)
            return
        now = time.time()
        with self.store.transaction():
            self.store.set_lines([(rowid, i.line_start, i.line_end)
                                  for i, rowid in zip(parsed.items, rowids)], now)
            self._save_file(
                facts, description=redact(parsed.description) if parsed.description else None,
                type=parsed.type, pinned=int(parsed.pinned),
                frontmatter=json.dumps(_redacted(parsed.frontmatter)),
                error=None, text_key=key, project=facts.project)

    def _follow_file(self, facts: FileFacts, entries: list[StoredEntry], now: float) -> None:
        """The file belongs to another agent or project than its entries were filed under (its
        source's ``agent`` renamed, another source reads it; Claude Code's auto memory, which
        a memoryd before this one filed global; a project root given through a symlink or as
        a worktree): they move with it, those kept as history too, each under its id with its
        history; a move to another project with a ``scope`` event saying so. A watched line's
        agent and project are its file's (`memory scope` refuses to move one)."""
        for entry in entries:
            if entry.agent != facts.agent:
                self.store.update_entry(entry.uid, agent=facts.agent)
            if entry.project != facts.project:
                self.store.update_entry(entry.uid, project=facts.project)
                self.store.record_event(entry.uid, "scope", "watch", {"project": entry.project},
                                        {"project": facts.project,
                                         "reason": "the project of its file"}, now)

    def _drop_other_kind(self, facts: FileFacts) -> None:
        """The file was indexed as the other kind (a transcript that a memory source reads
        now, or the reverse: a source's kind or glob changed, another source added before
        it): what it held leaves the index, as its source's files do when the source is
        removed, and it is read anew as what it is now."""
        origin = self.store.files.origin(facts.path)
        if origin is None or origin.kind == facts.kind:
            return
        with self.store.transaction():
            changes, sessions = self._drop([facts.path], f"read as a {facts.kind} file now")
        log.info("%s: read as a %s file now (source %s; it was %s's %s): %d entries and %d "
                 "sessions left the index.", facts.path, facts.kind, facts.source,
                 origin.source, origin.kind, changes.removed, sessions)

    def _entries_of(self, path: str) -> list[StoredEntry]:
        return self.store.entries(EntryQuery().source(path), "id")

    def _insert_file_entry(self, facts: FileFacts, text: str, hash_: str,
                           fields: dict[str, Any], now: float, date: str | None,
                           changes: Changes) -> None:
        """A line new to the index. Its date: the one its entry had when it left the index
        (its id is made of its file and its text: a line that left its file and came back, a
        file deleted and restored, an index rebuilt: memoryd.maintenance.rebuild) — for a
        dated line (``[2026-10-01]``) while that is within its day (else its day's start, or
        now: memoryd.ingest.line_date.line_created) —, else the file's mtime; never after
        ``now``. It is active: a line in its file is, whatever a forget of that text said
        before (a mark applies to transcript turns)."""
        uid = self._file_uid(facts.path, hash_)
        kept = self.store.created_when_removed(uid)
        if date:
            created = line_created(date, now, kept)
        else:
            created = facts.mtime if kept is None else kept
            if kept is None and created > now + FUTURE_SLACK_S \
                    and MTIME_AHEAD not in changes.notes:
                changes.notes.append(MTIME_AHEAD)
            created = min(created, now)
        heading = fields.pop("heading", None)
        entry = {**Entry(
            uid=uid, project=facts.project, key=None, text=text,
            hash=hash_, confidence=self.memory.remember.manual_confidence,
            tags=[], status="active", created=created,
            updated=now, writer=facts.source, via="watch", session=None,
            source=facts.path, message_id=None, superseded_by=None, **fields,
        ).as_dict(), "heading": heading}  # and the titles it is under (Store.insert_entry)
        self.store.insert_entry(entry)
        self.store.record_event(entry["uid"], "indexed", "watch", None, as_event(entry), now)

    def _revive(self, entry: StoredEntry, now: float) -> None:
        """A line kept as history is in its file again: active, under its id (see
        :meth:`apply_parsed`)."""
        self.store.update_entry(entry.uid, status="active", superseded_by=None, updated=now)
        self.store.record_event(entry.uid, "active", "watch",
                                {"status": entry.status, "superseded_by": entry.superseded_by},
                                {"status": "active", "superseded_by": None,
                                 "reason": "back in its file"}, now)
        self.memory.set_index_status(entry.rowid, "active")

    def _apply_mark(self, entry: dict[str, Any]) -> None:
        """A transcript chunk indexed anew keeps the status a forget or supersede gave the same
        chunk before: after a reindex, or when its transcript was deleted and written back.
        Its event is dated when the status was decided (a later decision made elsewhere must
        find it older: memoryd.maintenance.replay)."""
        mark = self.store.mark(entry["agent"], mark_target(entry["uid"], entry["hash"], "watch"))
        if mark is None or mark["status"] == entry["status"]:
            return
        before = self.store.entry_by_uid(entry["uid"])
        self.store.update_entry(entry["uid"], status=mark["status"],
                                superseded_by=mark["superseded_by"])
        after = self.store.entry_by_uid(entry["uid"])
        self.store.record_event(entry["uid"], mark["status"], mark["actor"],
                                as_event(before) if before else None,
                                as_event(after) if after else None, mark["ts"])

    def _file_uid(self, path: str, hash_: str) -> str:
        return file_uid(self.store, path, hash_)

    def _remove_entry(self, entry: StoredEntry, why: str) -> None:
        self.store.delete_entry(entry.rowid)
        self.store.record_event(entry.uid, "removed", "watch", as_event(entry), {"reason": why})
        self.memory.unindex(entry.rowid)

    def remove_file(self, path: str) -> Changes:
        """A watched file is gone. Memory files take their entries with them (each an event);
        transcript chunks stay: agents delete old transcripts, memory keeps what was said."""
        kind = self.store.files.kind(path)
        changes = Changes()
        if kind is None:
            return changes
        with self.store.transaction():
            if kind == "memory":
                for entry in self._entries_of(path):
                    self._remove_entry(entry, "file deleted")
                    changes.removed += 1
            self.store.files.delete(path)
            forget_open_turns(self.store, path)
        return changes

    def paths_of_source(self, name: str) -> list[str]:
        """The indexed files of source ``name``."""
        return self.store.files.paths_of_source(name)

    def drop_source(self, name: str) -> Changes:
        """A source was removed (or a built-in disabled): its files' entries leave the index,
        each an event, and so do the sessions its transcripts registered
        (Sessions.forget_read_from); the files are not touched. Added again, the source is
        indexed anew, its sessions counted once (a forget or supersede of a transcript's turn
        applies again, kept by its chunk id; a file's lines come back with their ids and
        dates)."""
        with self.store.transaction():
            paths = self.store.files.paths_of_source(name)
            changes, sessions = self._drop(paths, f"source {name} removed")
        if paths:
            log.info("Source %s removed: %d files, %d entries and %d sessions left the index.",
                     name, len(paths), changes.removed, sessions)
        return changes

    def drop_unmatched(self, path: str) -> Changes:
        """An indexed file that is there but that no source matches any more (its source's
        glob, as a newer memoryd has it, leaves it out: Cline's ``.clinerules/hooks/``; a
        project root taken out of the configuration while the daemon was stopped): it leaves
        the index as its source's files do when the source is removed; the file is not
        touched."""
        with self.store.transaction():
            source = self.store.files.origin(path)
            if source is None:
                return Changes()
            changes, sessions = self._drop([path], "no source matches the file any more")
        log.info("%s: no source matches it any more (it was %s's): %d entries and %d sessions "
                 "left the index.", path, source.source, changes.removed, sessions)
        return changes

    def _drop(self, paths: list[str], why: str) -> tuple[Changes, int]:
        """(in a transaction) ``paths`` leave the index: their entries, each an event, and the
        sessions only their transcripts told of. Returns the changes and how many sessions."""
        changes = Changes()
        for path in paths:
            for entry in self._entries_of(path):
                self._remove_entry(entry, why)
                changes.removed += 1
            self.store.files.delete(path)
            forget_open_turns(self.store, path)
        return changes, self.store.sessions.forget_read_from(paths)

    # -- transcripts ------------------------------------------------------------------

    def apply_transcript(self, facts: FileFacts, position: TailPosition, chunks: list[Chunk],
                         sessions: list[dict[str, Any]] | None, error: str | None,
                         open_turns: list[Turn] | None = None) -> Changes:
        """``sessions``: the sessions the new lines registered or moved on (a file can hold
        several: Aider's history). ``open_turns``: the exchange still open at ``position``
        (memoryd.ingest.open_exchange), stored with it. A turn timed after ``now`` (another
        machine's clock) is dated when read, and the changes' ``notes`` say so."""
        changes = Changes()
        now = time.time()
        ahead = 0
        with self.store.transaction():
            if open_turns is not None:
                save_open_turns(self.store, facts.path, open_turns)
            for chunk in chunks:
                change = self._upsert_chunk(facts, chunk, now)
                ahead += bool(change.added) and (chunk.timestamp or 0.0) > now + FUTURE_SLACK_S
                changes += change
            for session in sessions or ():
                if session.get("id"):
                    self._upsert_session(session, facts)
            self._save_file(facts, offset=position.offset, device=position.device,
                            inode=position.inode, error=error)
        if ahead:
            changes.notes.append(f"{ahead} exchange{'s' * (ahead != 1)} timed in the future: "
                                 "dated when read")
        return changes

    def _chunk_row(self, facts: FileFacts, chunk: Chunk
                   ) -> tuple[str, tuple[str, str | None, str | None, str | None] | None]:
        """A chunk's entry id, and its row if it has one. The id is made of the chunk's first
        record's: a record copied into another file of its session (a resumed Claude Code
        session, a legacy Gemini chat moved to JSONL) is the same one, found once. Where
        that id is another file's record of another session (ids unique only in their
        session: Copilot events numbered ``u1``, ``e2``; two logs whose first lines are
        alike), the id is made of the record's and its session's, so that neither exchange
        replaces the other; the first indexed keeps the plain id, as every chunk indexed
        before did."""
        uid = TRANSCRIPT_PREFIX + chunk.chunk_id
        row = self.store.hash_and_records(uid)
        if row is not None and row[3] is not None and row[3] != facts.path \
                and row[2] is not None and chunk.session_id is not None \
                and row[2] != chunk.session_id:
            scoped = f"chunk:{chunk.chunk_id}\0{chunk.session_id}".encode("utf-8", "surrogatepass")
            uid = TRANSCRIPT_PREFIX + hashlib.sha256(scoped).hexdigest()[:32]
            row = self.store.hash_and_records(uid)
        return uid, row

    def _upsert_chunk(self, facts: FileFacts, chunk: Chunk, now: float) -> Changes:
        uid, row = self._chunk_row(facts, chunk)
        text = redact(chunk.text)
        hash_ = content_hash(text)
        records = encode_records(chunk.record_ids)
        if row is not None:
            if row[0] == hash_:
                mend: dict[str, Any] = {}
                if row[1] != records:  # indexed before chunks kept their turns
                    mend["records"] = records
                if row[2] is None and chunk.session_id is not None:
                    mend["session"] = chunk.session_id  # before a generic log was a session
                if mend:
                    self.store.update_entry(uid, **mend)
                return Changes(unchanged=1)
            before = self.store.entry_by_uid(uid)
            self.store.update_entry(uid, text=text, hash=hash_, updated=now, records=records)
            self.store.record_event(uid, "updated", "watch", as_event(before) if before else None,
                                    as_event({"text": text}), now)
            return Changes(updated=1)
        entry = {**Entry(
            uid=uid, agent=agent_for_sidechain(facts.agent, chunk.sidechain_agent),
            project=self.project(chunk.cwd), kind=chunk.kind,
            category=TRANSCRIPT_CATEGORY, key=None, text=text, hash=hash_,
            confidence=TRANSCRIPT_CONFIDENCE, tags=[], status="active",
            created=min(chunk.timestamp or now, now), updated=now, writer=facts.source,
            via="watch", session=chunk.session_id, source=facts.path,
            line_start=None, line_end=None, message_id=chunk.record_ids[0],
            superseded_by=None, polarity=None,
        ).as_dict(), "records": records}  # and the turns it holds (Store.insert_entry)
        self.store.insert_entry(entry)
        self._apply_mark(entry)
        return Changes(added=1)

    def _upsert_session(self, session: dict[str, Any], facts: FileFacts) -> None:
        self.store.sessions.read_from_transcript(session, facts.agent,
                                                 self.project(session.get("cwd")), facts.path)


def _redacted(value: Any) -> Any:
    """A file's frontmatter with the secrets of its texts redacted (the memory block lists a
    file's description; the index keeps the frontmatter)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def file_uid(store: Store, path: str, hash_: str) -> str:
    """A new file entry's id, made of its file and its text (the first such id no entry
    holds: a copy of a line, or a line forgotten and written again, takes the next): a
    rebuild from the files (`memoryd reindex`, a damaged database) gives each line the id it
    had, so its history, its use and the passes' changes still meet it, and so does a line
    that left its file and came back (an editor that empties a file before writing it), and
    a line a supersede wrote (memoryd.passes.entry_files). 19 hex digits, as every entry's
    (memoryd.store.entry_writes.new_uid)."""
    for copy in range(100):
        uid = hashlib.sha256(f"file\0{path}\0{hash_}\0{copy}".encode(
            "utf-8", "surrogatepass")).hexdigest()[:19]
        if store.entry_by_uid(uid) is None:
            return uid
    return new_uid()
