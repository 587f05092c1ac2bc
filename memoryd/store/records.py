"""The records below the wire: an entry to write, an entry as the index holds it, and the
requests about entries, parsed from the wire at the server (memoryd.server.requests) and
typed from there down. The store owns the entry's shape, so its records live here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, NamedTuple


class IndexedText(NamedTuple):
    """What search reads of each candidate (the whole row is read for the hits alone)."""

    text: str  # the index text (memoryd.text.index_text): what its words are weighed by
    created: float
    #: not a record of a conversation (a transcript chunk, a compaction summary): something
    #: said to be so, which may be said again otherwise (memoryd.retrieval.versions)
    statement: bool
    #: the message it is of (session, message id): a chunk's first turn, or the message an
    #: extracted lesson or fact was taken from (its provenance); None when it names none
    origin: tuple[str, str] | None = None
    #: the project it is of, None for a global one: statements of two projects are never
    #: versions of one (memoryd.retrieval.versions)
    project: str | None = None
    #: a memory file's entry: the titles of the headings it is under, its words too
    #: (memoryd.ingest.markdown's ``title_path``, as the keyword index reads them)
    heading: str | None = None
    #: a memory file's entry: its file and first line (of two lines of one date written at
    #: once, the upper is the newer: memoryd.retrieval.versions)
    source: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Entry:
    """An entry's fields as it is written: to the ledger (``{"op": "remember", "entry": …}``)
    and to the index (Store.insert_entry, which adds what the index derives: quarantine,
    occurrences). ``as_dict`` is the form both take; its keys are the ledger's."""

    uid: str
    agent: str
    project: str | None
    kind: str
    category: str
    key: str | None
    text: str
    hash: str
    confidence: float
    tags: list[str]
    status: str
    created: float
    updated: float
    writer: str
    via: str
    session: str | None
    source: str | None
    line_start: int | None
    line_end: int | None
    message_id: str | None
    superseded_by: str | None
    polarity: str | None

    def as_dict(self) -> dict[str, Any]:
        """Its fields in order, its tags a list of their own. Not ``dataclasses.asdict``,
        which deep-copies every value one call at a time: twice a write, it took ~650 of the
        database thread's ~1,600 Python calls for a ``remember``."""
        entry = {name: getattr(self, name) for name in ENTRY_FIELDS}
        entry["tags"] = list(self.tags)
        return entry


#: Entry's fields, in order: the keys of its ``as_dict`` (and of its ledger record).
ENTRY_FIELDS = tuple(field.name for field in fields(Entry))


@dataclass(frozen=True)
class StoredEntry:
    """An entry as the index holds it (memoryd.store.rows.row_to_entry): the fields written
    (:class:`Entry`, ``uid`` its id), and what the index adds to them: its row, how often the
    lesson was seen again, what it names that its project no longer has (``stale``: the
    staleness pass), whether it looks like an instruction to the model (``quarantined``), and
    a transcript chunk's record ids. Every read of entries returns these; the wire's form of
    one is :meth:`as_dict` (less its ``rowid``: memoryd.server.replies)."""

    rowid: int
    uid: str
    agent: str
    project: str | None
    kind: str
    category: str
    key: str | None
    text: str
    hash: str
    confidence: float
    tags: tuple[str, ...]
    status: str
    created: float
    updated: float
    writer: str | None
    via: str
    session: str | None
    source: str | None
    line_start: int | None
    line_end: int | None
    message_id: str | None
    superseded_by: str | None
    polarity: str | None
    occurrences: int
    stale: str | None
    quarantined: bool
    records: tuple[str, ...] | None
    #: a memory file's entry: the titles of the headings it is under (memoryd.ingest.markdown)
    heading: str | None

    def as_dict(self) -> dict[str, Any]:
        """The entry as replies and its events' snapshots show it: its id as ``id``, after
        the columns, in the order replies have always had."""
        shown = {name: getattr(self, name) for name in _SHOWN}
        shown["tags"] = list(self.tags)
        shown["records"] = list(self.records) if self.records is not None else None
        shown["id"] = self.uid
        return shown


#: :meth:`StoredEntry.as_dict`'s keys before ``id``: the row, then the columns in the table's
#: order (memoryd.store.rows.ENTRY_COLUMNS).
_SHOWN = ("rowid", "agent", "project", "kind", "category", "key", "text", "hash", "confidence",
          "tags", "status", "created", "updated", "writer", "via", "session", "source",
          "line_start", "line_end", "message_id", "superseded_by", "polarity", "occurrences",
          "stale", "quarantined", "records", "heading")


@dataclass(frozen=True)
class Superseded:
    """A supersede: the new version, and the old one as it is now (superseded by it)."""

    entry: StoredEntry
    superseded: StoredEntry


@dataclass(frozen=True)
class Correction:
    """An older entry that a new one contradicts: superseded by it (``action``
    ``"supersede"``: the new one corrects it) or left beside it, disputed (``"dispute"``)."""

    entry: StoredEntry
    why: str
    action: str


@dataclass(frozen=True)
class Remembered:
    """What a remember did with one entry. Stored: ``entry`` is the new entry, with the
    entries it replaced (``superseded``: a key's older value, a corrected entry), the near
    duplicate it was forced past (``similar``, with its ``cosine``), what it contradicts
    (``corrects``) and what it says otherwise (``resembles``). Refused as a ``duplicate``
    (``"exact"`` or ``"near"``; ``"inactive"``: an import of an entry that is here and has
    since been forgotten, superseded or archived; ``"seen again"``: an imported line with the
    text of an entry here and a date of its own, kept as a sighting of it and counted in its
    occurrences): ``entry`` is the entry it repeats (at ``cosine``, when near)."""

    stored: bool
    entry: StoredEntry
    duplicate: str | None = None
    cosine: float | None = None
    superseded: tuple[StoredEntry, ...] = ()
    similar: StoredEntry | None = None
    corrects: tuple[Correction, ...] = ()
    #: entries as alike as a near duplicate that say it otherwise, without contradicting it
    #: ("Staging runs Postgres 14" for "… 16"): both kept, the writer told
    resembles: tuple[StoredEntry, ...] = ()


@dataclass(frozen=True)
class RememberRequest:
    """What a remember request (or one of remember_many's entries, or a write memoryd makes
    itself: an extracted lesson, a hook's turn) says of the entry to write, validated; what
    it leaves out is None, and the write path fills it in (Entries.draft_entry)."""

    agent: str
    text: str
    key: str | None = None
    kind: str | None = None
    polarity: str | None = None
    confidence: float | None = None
    project: str | None = None
    cwd: str | None = None
    created: float | None = None
    via: str = "api"
    category: str = ""
    tags: tuple[str, ...] = ()
    writer: str | None = None
    session: str | None = None
    message_id: str | None = None
    force: bool = False


@dataclass(frozen=True)
class Draft:
    """An entry to store, validated, and whether to store it even if it is a near
    duplicate."""

    entry: Entry
    force: bool = False


@dataclass(frozen=True)
class Asker:
    """Who asks to change an entry: the agent the request names (None: not said), the
    connection's writer when it came on one (None: memoryd's own request), and whether a
    person is behind it (what only a person may change: memoryd.provenance)."""

    agent: str | None = None
    writer: str | None = None
    human: bool = True

    def acts_as(self) -> str:
        """The name the change is recorded under: a connection acts as its bound agent."""
        return self.writer or self.agent or "user"


@dataclass(frozen=True)
class EntryRequest:
    """A request about one entry by its id (or a unique prefix of it): get, forget,
    supersede, release, scope. ``text`` and ``confidence``: supersede's new version;
    ``reason``: forget's."""

    id: str
    asker: Asker = Asker()
    text: str | None = None
    confidence: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class ScopeRequest:
    """Move an entry to a tier: ``global``, or ``project`` with a directory of the
    project (its repository is the tier)."""

    entry: EntryRequest
    tier: str
    directory: str | None = None


@dataclass(frozen=True)
class ProjectMoveRequest:
    """Move the entries filed under project ``old`` (a path, there or not) to the project of
    ``directory`` (None: the global tier): ``memory move-project``."""

    old: str
    asker: Asker
    directory: str | None = None
