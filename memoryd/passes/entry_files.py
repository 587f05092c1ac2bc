"""``forget`` and ``supersede`` of an entry that comes from a watched memory file: the file is
edited, so the index never says one thing while the file (which the agent loads) says another.

Forgetting removes the entry's lines (a bullet with everything under it, or a paragraph);
superseding replaces them with the new text, as a bullet of the same kind (a dated one gets
today's date). The new text goes into the file as it was typed, secrets included (the file is
the user's: nothing of what they wrote is overruled); the index's entry of the new line is
redacted, as every watched line's is. The edit goes through the passes' safe writes and changes
(memoryd.passes.user_files, memoryd.passes.runs): computed from the bytes read and written by
compare-and-swap (a file someone changed meanwhile is left alone and the request fails), through
a temporary file, fsynced and renamed, keeping the file's mode, line endings and symlink;
recorded as a run of its own (``forget`` or ``supersede``), so ``memory pass show RUN`` shows
the diff and ``memory undo RUN`` puts the bytes back, and the entry with them: active again,
under its id.

The entry keeps its id: forgotten, or superseded by the new text's entry (which the watcher then
finds in place), it stays in the index as history, no longer in the file. Transcript turns and
entries written through the API are not file lines; their forget and supersede stay in the
index (and the ledger). Their forget is a run of its own too (PassRuns.forget), so that one
``memory undo RUN`` takes back any forget.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import BadParamsError, MemorydError
from memoryd.ingest.indexer import file_uid
from memoryd.ingest.line_date import local_date
from memoryd.ingest.markdown import MemoryItem, parse_memory_file, raw_lines
from memoryd.passes.file_care import FileChangedError, FileNotWrittenError, NotWritten
from memoryd.passes.file_changes import file_change
from memoryd.passes.user_files import FileText, read_text
from memoryd.redact import redact
from memoryd.store.archive import TRANSCRIPT_PREFIX
from memoryd.store.entry_writes import new_uid
from memoryd.store.records import Entry, EntryRequest, StoredEntry, Superseded
from memoryd.text import content_hash

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext
    from memoryd.passes.runner import PassRunner
    from memoryd.store.database import Store

log = logging.getLogger(__name__)

#: A bullet's lead: indent, marker, a checkbox, a date.
_LEAD = re.compile(r"(?P<lead>[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?)"
                   r"(?P<date>(?:\[\d{4}-\d{1,2}-\d{1,2}\]|\(\d{4}-\d{1,2}-\d{1,2}\)"
                   r"|\d{4}-\d{1,2}-\d{1,2}(?=[ \t]*[:\-\u2013\u2014]\s))"
                   r"(?:[ \t]*[:\-\u2013\u2014](?=\s))?[ \t]*)?")


@dataclass(frozen=True)
class FileEdit:
    """A file entry's forget or supersede as an edit of its file: the file, the run that
    edited it (``memory undo`` takes it back), the entry's lines there (first, last)."""

    file: str
    run: str
    lines: tuple[int, int]


@dataclass(frozen=True)
class EntryEdit:
    """What a forget or a supersede did: the entry forgotten, or the new version; the old
    version, superseded by it (a supersede); the run that takes a forget back (a forget of
    an entry that is no line of a file); and the edit of the entry's file (a file's entry)."""

    entry: StoredEntry
    superseded: StoredEntry | None = None
    undo: str | None = None
    edited: FileEdit | None = None


def from_file(entry: StoredEntry) -> bool:
    """Whether an entry is lines of a watched memory file (not a transcript turn)."""
    return (entry.via == "watch" and bool(entry.source) and entry.line_start is not None
            and not entry.uid.startswith(TRANSCRIPT_PREFIX))


def locate(entry: StoredEntry, file: FileText) -> tuple[MemoryItem, list[str]]:
    """The item of the file that is this entry (same text, the nearest to where it was
    indexed), and the file's lines."""
    text = file.text
    if "\r" in text:
        raise BadParamsError(f"{entry.source} ends lines with bare CR; edit it by hand")
    parsed = parse_memory_file(text, Path(entry.source or "").name)
    found = [item for item in parsed.items if content_hash(redact(item.text)) == entry.hash]
    if not found:
        raise BadParamsError(
            f"entry {entry.uid} is no longer in {entry.source} as indexed (the file "
            "changed since); try again in a moment, or edit the file")
    item = min(found, key=lambda i: abs(i.line_start - int(entry.line_start or 0)))
    return item, raw_lines(text)


def successor_uid(store: Store, old: StoredEntry, edited: str, item: MemoryItem,
                  path: Path) -> str:
    """The id of the line a supersede writes in ``old``'s place: made of its file and its
    text as the watcher reads them (memoryd.ingest.indexer.file_uid)."""
    written = next((i for i in parse_memory_file(edited, path.name).items
                    if i.line_start >= item.line_start), None)
    if written is None:  # refused by the caller (it would not stay one entry)
        return new_uid()
    return file_uid(store, old.source or str(path), content_hash(redact(written.text)))


def replaced(lines: list[str], item: MemoryItem, text: str | None,
             now: float | None = None) -> str:
    """The file's text with the item's lines removed (``text`` None) or replaced by ``text``
    in the item's form: a bullet with the same marker (and the local date of ``now``, as the
    indexer reads a line's date, if it had one: memoryd.ingest.line_date). The file ends as
    it did (its blank lines at the end kept: an edit of the user's file changes the item,
    nothing else), with a newline at least."""
    head, tail = lines[: item.line_start - 1], lines[item.line_end:]
    ending = "\n" * max(1, len(lines) - len("\n".join(lines).rstrip("\n").split("\n")))
    if text is None:
        if (not head or not head[-1].strip()) and tail and not tail[0].strip():
            tail = tail[1:]  # a paragraph between blank lines: one blank line stays
        return "\n".join(head + tail).rstrip("\n") + ending
    first = lines[item.line_start - 1]
    match = _LEAD.match(first)
    new_lines = text.strip().splitlines()
    if match is None:  # a paragraph
        body = new_lines
    else:
        date = f"[{local_date(time.time() if now is None else now)}] " \
            if match.group("date") else ""
        indent = " " * (len(match.group("lead").expandtabs(4)))
        body = [match.group("lead") + date + new_lines[0],
                *(indent + line if line.strip() else "" for line in new_lines[1:])]
    return "\n".join(head + body + tail).rstrip("\n") + ending


def stays_one(before: str, after: str, item: MemoryItem, name: str) -> bool:
    """Whether the file's text ``after`` an edit of ``item`` reads as it did ``before`` but
    for that item, still one entry of the same section: a line of a new text that reads as
    markdown of its own (a heading, a bullet) would make another entry, or move every entry
    after it to another section."""
    old = parse_memory_file(before, name).items
    new = parse_memory_file(after, name).items
    at = next((k for k, i in enumerate(old) if i.line_start == item.line_start), None)
    if at is None or len(new) != len(old):
        return False
    return all((a.text, a.category, a.kind) == (b.text, b.category, b.kind)
               for k, (a, b) in enumerate(zip(old, new)) if k != at) \
        and new[at].category == old[at].category


class FileEntryEdits:
    """forget / supersede requests: file entries through a file edit of a run's, the others
    as before (Entries.forget, and ``supersede``: the write path's, which embeds the new
    text). ``embed_new``: asks for the vectors of entries whose text changed."""

    def __init__(self, passes: PassRunner,
                 supersede: Callable[[EntryRequest], Awaitable[Superseded]],
                 embed_new: Callable[[], None]) -> None:
        self.passes = passes
        self.db = passes.db
        self.entries = passes.parts.entries
        self.supersede_elsewhere = supersede
        self.embed_new = embed_new

    async def forget(self, request: EntryRequest) -> EntryEdit:
        entries = self.entries
        entry, actor = await self.db(entries.owned, request)
        entries.check_person_kept(entry, request.asker, "forget")
        reason = request.reason
        if not from_file(entry) or entry.status != "active":  # history: not in the file
            forgotten, run = await self.db(self.passes.runs.forget, entry.uid, actor,
                                           reason)
            if run is not None:  # undoable after a crash too
                await asyncio.to_thread(self.passes.runs.log.sync)
            return EntryEdit(forgotten, undo=run)
        return await self._edit("forget", entry, actor, None, reason)

    async def supersede(self, request: EntryRequest) -> EntryEdit:
        entries = self.entries
        entry, actor = await self.db(entries.owned, request)
        if not from_file(entry):
            done = await self.supersede_elsewhere(request)
            return EntryEdit(done.entry, done.superseded)
        entries.check_person_kept(entry, request.asker, "supersede")
        entries.check_supersedable(entry)
        text = request.text
        assert text is not None  # required (memoryd.server.requests)
        if not text.strip():
            raise BadParamsError("supersede: the new text is empty")
        # the file gets the text as typed (the user's file: nothing of it is overruled);
        # the index's entry of the line is redacted, as every watched line's is
        return await self._edit("supersede", entry, actor, text, None)

    async def _edit(self, action: str, entry: StoredEntry, actor: str, text: str | None,
                    reason: str | None) -> EntryEdit:
        await self.db(self._check, entry)  # refuse early, without an empty run
        await self.passes.wait_until_free()
        box: dict[str, Any] = {}
        summary = await self.passes._run(
            action, lambda ctx: self._apply(ctx, action, entry.uid, actor, text, reason, box),
            agent=entry.agent, extra={"entry": entry.uid})
        if "error" in box:
            raise box["error"]
        if summary["status"] == "failed":  # the write failed: its change is settled already
            raise FileNotWrittenError(f"{action} {entry.uid} failed ({summary['run']}): "
                                      f"{summary.get('error') or 'see the daemon log'}")
        self.embed_new()  # the new text's vector
        if "edit" not in box:
            raise FileChangedError(f"editing {entry.source} failed ({summary['run']}); see "
                                   "the daemon's log")
        edited = FileEdit(entry.source or "", summary["run"], box["lines"])
        return replace(box["edit"], edited=edited)

    def _check(self, entry: StoredEntry) -> None:
        try:
            locate(entry, read_text(Path(entry.source or "")))
        except OSError as exc:
            raise _unreadable(entry.uid, Path(entry.source or ""), exc) from None

    def _apply(self, ctx: PassContext, action: str, uid: str, actor: str, text: str | None,
               reason: str | None, box: dict[str, Any]) -> Iterator[None]:
        """One slice: read, write by compare-and-swap, update the entries; the watcher cannot
        re-index the file in between (it applies files on this same thread). A request
        refused before anything is written leaves the run done with nothing to do; a write
        that fails fails the run, with the reason (the file may not or cannot be rewritten:
        FileNotWrittenError, or any error of the write), its change settled at once."""
        try:
            box.update(self._apply_now(ctx, action, uid, actor, text, reason))
        except FileNotWrittenError:
            raise
        except MemorydError as exc:
            box["error"] = exc
        return
        yield  # a generator, as passes are

    def _apply_now(self, ctx: PassContext, action: str, uid: str, actor: str,
                   text: str | None, reason: str | None) -> dict[str, Any]:
        store = ctx.store
        entry = store.entry_by_uid(uid)
        if entry is None or not from_file(entry):
            raise BadParamsError(f"entry {uid} left its file meanwhile; try again")
        path = Path(entry.source or "")
        try:
            file = read_text(path)
        except OSError as exc:
            raise _unreadable(uid, path, exc) from None
        item, lines = locate(entry, file)
        now = time.time()  # the new line's date, and its entry's created: the same day
        edited = replaced(lines, item, text, now)
        # the new line's id is the one the watcher gives it, and a rebuild gives it again
        new_uid_ = None if text is None else successor_uid(store, entry, edited, item, path)
        after = {"status": "forgotten"} if text is None else \
            {"status": "superseded", "superseded_by": new_uid_}
        before = {"status": entry.status, "superseded_by": entry.superseded_by}
        why = (f"memory {action} {uid} by {actor}"
               + (f": {reason}" if reason else ""))
        if text is not None and not stays_one(file.text, edited, item, path.name):
            raise BadParamsError(
                f"supersede: the new text would not stay one entry of {path}: written there, a "
                "line of it reads as markdown of its own (a heading, a bullet); put it on one "
                "line, or edit the file")
        change = file_change(path, file, edited, action, why,
                             moves={uid: {**after, "by": actor}}, moves_before={uid: before})
        assert change is not None
        if ctx.apply_all([change]) != "applied":
            raise FileChangedError(f"{path} changed while memoryd edited it; nothing was "
                                   "changed, try again")
        span = (item.line_start, item.line_end)
        old = store.entry_by_uid(uid)
        assert old is not None
        if text is None:
            log.info("Forgot %s: removed lines %d-%d of %s.", uid, *span, path)
            return {"edit": EntryEdit(old), "lines": span}
        new = self._insert_successor(ctx, entry, new_uid_, path, item.line_start, actor, now)
        log.info("Superseded %s by %s: rewrote lines %d-%d of %s.", uid, new_uid_, *span, path)
        return {"edit": EntryEdit(new, old), "lines": span}

    def _insert_successor(self, ctx: PassContext, old: StoredEntry, uid: str | None,
                          path: Path, line: int, actor: str, now: float) -> StoredEntry:
        """The new text's entry, as the watcher would index it (so it finds it in place and
        keeps its id): text, hash and lines from the file as written; created ``now``, on the
        day written before it (which the watcher keeps: memoryd.ingest.line_date)."""
        assert uid is not None
        written = read_text(path).text
        item = next(i for i in parse_memory_file(written, path.name).items
                    if i.line_start >= line)
        text = redact(item.text)
        entry = {**Entry(
            agent=old.agent, project=old.project, kind=old.kind,
            category=old.category, polarity=old.polarity, confidence=old.confidence,
            tags=list(old.tags), source=old.source, uid=uid, key=None, text=text,
            hash=content_hash(text),
            status="active", created=now, updated=now, writer=actor,
            via="watch", session=None, message_id=None, superseded_by=None,
            line_start=item.line_start, line_end=item.line_end,
        ).as_dict(), "heading": item.title_path}
        store = ctx.store
        with store.transaction():
            store.insert_entry(entry)
            store.record_event(uid, "remember", actor, None, entry, now)
        stored = store.entry_by_uid(uid)
        assert stored is not None
        return stored


def _unreadable(uid: str, path: Path, exc: OSError) -> FileNotWrittenError:
    """The answer to an edit of an entry whose file cannot be read (a FIFO in its place, a
    directory that cannot be entered): the request was fine, the file is not (exit 1, not
    the usage error's 2)."""
    why = f"cannot be read ({exc.strerror or exc})"
    return FileNotWrittenError(f"entry {uid} comes from {path}, which {why}; nothing was "
                               "changed: edit it by hand, or again once it can be read",
                               NotWritten(str(path), why))
