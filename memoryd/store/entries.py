"""The memory operations on an entry by its id: get, forget, supersede, release, history
(the writing of new ones: memoryd.store.remember; the ledger and the transaction every write
goes through: memoryd.store.entry_writes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from memoryd.errors import BadParamsError, ForbiddenError, NotFoundError
from memoryd.prefixes import by_prefix
from memoryd.provenance import person_only_refusal
from memoryd.regular_file import read_regular_text
from memoryd.store.entry_writes import Unindexed, Vectors, apply_release, new_uid
from memoryd.store.file_versions import versions as file_versions
from memoryd.store.records import Asker, Entry, EntryRequest, StoredEntry, Superseded
from memoryd.store.remember import Remembering
from memoryd.store.usage import Usage, UsageRecord
from memoryd.text import content_hash

#: What memoryd.writes and memoryd.embedding import from here.
__all__ = ["KINDS", "MAX_TEXT_CHARS", "STATUSES", "Entries", "Unindexed", "Vectors"]

KINDS = ("fact", "lesson", "feedback", "note", "turn", "summary")
#: ``archived``: unused for long, set aside by the retain pass (memoryd.store.usage.Disuse):
#: never injected, found with ``--status archived``, back with ``memory undo``.
STATUSES = ("active", "superseded", "forgotten", "archived")
MAX_TEXT_CHARS = 32_000


@dataclass(frozen=True)
class History:
    """An entry's versions, oldest first, and the events of them; ``removed``: an
    entry that left the index (a memory file's bullet deleted), as its history last saw it."""

    entries: list[StoredEntry]
    events: list[dict[str, Any]]
    removed: dict[str, Any] | None = None


class Entries(Remembering):
    """The memory operations on entries: what :class:`Remembering` writes, and what is done
    to an entry by its id."""

    def resolve(self, entry_id: str) -> StoredEntry:
        """The entry with this id, or with this unique id prefix (4+ characters)."""
        entry = self.store.entry_by_uid(entry_id)
        if entry is None:
            entry = self.store.entry_by_uid(by_prefix(
                entry_id, self.store.uids_with_prefix, "entry", self._being_read(entry_id)))
        assert entry is not None
        return entry

    def _being_read(self, entry_id: str) -> str:
        """Why a file's entry is not in the index a moment while its line is in the file: the
        watcher took the file's entries out as it changed (an editor's save, a file renamed
        over it) and is reading it again, when the line comes back under its id."""
        events = self.store.events_for([entry_id])
        last = events[-1] if events else None
        if last is None or last["action"] != "removed" or not last["before"]:
            return ""
        source, text = last["before"].get("source"), last["before"].get("text")
        if not source or not text:
            return ""
        try:
            held = text in read_regular_text(source)
        except OSError:
            return ""
        return (f": its line in {source} is being read again (the file changed at "
                f"{time.strftime('%H:%M:%S', time.localtime(last['ts']))}): try again in a "
                "moment") if held else ""

    def get(self, request: EntryRequest) -> tuple[StoredEntry, UsageRecord]:
        """The entry with its usage record (memoryd.store.usage: the sessions it was
        injected into, followed, broken, …); its ``stale`` says what it names that its project
        no longer has (the staleness pass)."""
        entry = self.resolve(request.id)
        return entry, Usage(self.store).record(entry.uid)

    def owned(self, request: EntryRequest) -> tuple[StoredEntry, str]:
        """The entry a forget or supersede names, and who asks (refused for another agent)."""
        return self._owned(request)

    def _owned(self, request: EntryRequest) -> tuple[StoredEntry, str]:
        entry = self.resolve(request.id)
        actor = request.asker.agent
        if actor is not None and actor != entry.agent:
            raise ForbiddenError(
                f"entry {entry.uid} belongs to agent {entry.agent!r}; "
                f"agent {actor!r} may read it but not change it"
            )
        return entry, request.asker.acts_as()  # a connection acts as its bound agent

    def forget_entry(self, entry: StoredEntry, actor: str, reason: str | None,
                     change: int | None = None) -> StoredEntry:
        """Forget an entry: its ledger's status record (naming the ``change`` that makes it
        undoable: memoryd.passes.runs.PassRuns.forget), then the row."""
        record = self._status_record(entry, "forgotten", actor, reason)
        if change is not None:
            record["change"] = change
        with self.transaction():
            self.write_ledger(entry.agent, [record])
            return self._set_status(entry, "forgotten", actor, None, record["ts"])

    def head_of(self, entry: StoredEntry) -> StoredEntry:
        """The newest version of an entry: its ``superseded_by`` links followed to the end."""
        seen = {entry.uid}
        while entry.superseded_by:
            successor = self.store.entry_by_uid(entry.superseded_by)
            if successor is None or successor.uid in seen:
                break
            seen.add(successor.uid)
            entry = successor
        return entry

    @staticmethod
    def check_person_kept(entry: StoredEntry, asker: Asker, action: str) -> None:
        """What only a person writes (the user's feedback) only a person supersedes or
        forgets: memoryd.provenance's rule, for every path that does either (this one, and
        memoryd.passes.entry_files for a file's lines). A request with no connection behind
        it is memoryd's own."""
        refusal = person_only_refusal(entry.uid, entry.kind, action, asker.human)
        if refusal is not None:
            raise ForbiddenError(refusal)

    def check_supersedable(self, old: StoredEntry) -> None:
        """A version chain has one head: superseding an old version would fork it (two
        active successors, and the first one lost from the history)."""
        if old.status == "superseded":
            head = self.head_of(old)
            current = (f"its current version is {head.uid} ({head.status}): supersede "
                       f"that one" if head.uid != old.uid else "its successor is gone")
            raise BadParamsError(
                f"entry {old.uid} was already superseded by {old.superseded_by}; {current}")
        if old.status == "forgotten":
            raise BadParamsError(f"entry {old.uid} is forgotten; store the new text as a new "
                                 "entry instead (memory store)")

    def supersede(self, request: EntryRequest, vectors: Vectors | None) -> Superseded:
        old, actor = self._owned(request)
        self.check_person_kept(old, request.asker, "supersede")
        self.check_supersedable(old)
        text = request.text
        assert text is not None  # redacted already (memoryd.writes)
        now = time.time()
        confidence = request.confidence
        entry = Entry(
            agent=old.agent, project=old.project, kind=old.kind,
            category=old.category, key=old.key, tags=list(old.tags), session=old.session,
            uid=new_uid(),
            text=text.strip(),
            hash=content_hash(text),
            confidence=confidence if confidence is not None else old.confidence,
            status="active",
            created=now,
            updated=now,
            writer=actor,
            via="api",
            source=None,
            line_start=None,
            line_end=None,
            message_id=None,
            superseded_by=None,
            polarity=old.polarity,
        )
        new = entry.as_dict()
        status = self._status_record(old, "superseded", actor, "superseded", new["uid"])
        records = [{"op": "remember", "ts": now, "entry": new}, status]
        if old.key:  # embedded without its key: the vector backlog embeds its index text
            vectors = None
        with self.transaction():
            self.write_ledger(old.agent, records)
            rowid = self.store.insert_entry(new)
            stored = self.store.entry_by_uid(new["uid"])
            assert stored is not None
            self.store.record_event(new["uid"], "remember", actor, None, stored, now)
            self._index_entry(rowid, vectors)
            previous = self._set_status(old, "superseded", actor, new["uid"], status["ts"])
        return Superseded(stored, previous)

    def release(self, request: EntryRequest) -> StoredEntry:
        """Let a quarantined entry be injected: a person's decision (``memory release``)."""
        entry, actor = self._owned(request)
        if not entry.quarantined:
            raise BadParamsError(f"release: entry {entry.uid} is not quarantined")
        now = time.time()
        with self.store.transaction():
            self.write_ledger(entry.agent, [{
                "op": "release", "ts": now, "id": entry.uid, "hash": entry.hash,
                "via": entry.via, "actor": actor}])
            apply_release(self.store, entry.agent, entry.uid, entry.hash, actor, now)
        after = self.store.entry_by_uid(entry.uid)
        assert after is not None
        return after

    def history(self, entry_id: str | None, key: str | None, agent: str | None) -> History:
        """An entry's versions and events: by id (or prefix), or an agent's key's."""
        if entry_id is not None:
            try:
                entry = self.resolve(entry_id)
            except NotFoundError:
                return self._history_of_removed(entry_id)
            agent, key = entry.agent, key or entry.key
            related: dict[str, StoredEntry] = {entry.uid: entry}
        else:
            if key is None or agent is None:
                raise BadParamsError("history: give an id, or an agent and a key")
            related = {}
        if key:
            related.update({e.uid: e for e in self.store.entries_with_key(agent, key)})
        # follow supersede links both ways
        frontier = list(related.values())
        while frontier:
            entry = frontier.pop()
            successor = entry.superseded_by
            if successor and successor not in related:
                found = self.store.entry_by_uid(successor)
                if found:
                    related[successor] = found
                    frontier.append(found)
            for predecessor in self.store._db.execute(
                "SELECT uid FROM entries WHERE superseded_by=?", (entry.uid,)
            ):
                if predecessor[0] not in related:
                    found = self.store.entry_by_uid(predecessor[0])
                    if found:
                        related[predecessor[0]] = found
                        frontier.append(found)
        if not related:
            raise NotFoundError(f"no entries for key {key!r} of agent {agent!r}")
        entries = sorted(related.values(), key=lambda e: e.created)
        return History(entries, self.store.events_for([e.uid for e in entries]))

    def _history_of_removed(self, entry_id: str) -> History:
        """A file entry whose bullet was deleted lives on in its history."""
        events = self.store.events_for([entry_id])
        if entry_id.startswith("file:") and events:  # the memory tools' deltas, as whole texts
            for event, version in zip(events, file_versions(self.store, entry_id)):
                event["before"] = {"text": version.before} if version.before is not None else None
                event["after"] = {"text": version.after}
            return History([], events)
        if not events and entry_id.startswith("file:"):
            agent = entry_id.split(":", 2)[1]
            raise NotFoundError(f"no versions of {entry_id!r}: the memory tools never wrote "
                                f"that file (memory file list --agent {agent} lists them)")
        if not events:
            raise NotFoundError(f"no entry with id {entry_id!r}")
        last = next((e["before"] for e in reversed(events) if e["before"]), None)
        return History([], events, {**last, "status": "removed"} if last else None)
