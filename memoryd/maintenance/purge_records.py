"""What a purge (:mod:`memoryd.maintenance.purge`) selected and what it reports, typed from
the purge up to the server, which makes the reply's map of them (memoryd.server.replies).
The ledger's and archives' records the purge reads stay maps: they are the files' format."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PurgedEntry:
    """An entry a purge selected: a row of the index (``rowid``), or one the index does not
    hold (``rowid`` None, ``where`` saying where memoryd still kept it). Its fields are the
    ones the purge needs (``hash``: the marks that go with it; ``via`` and ``source``: the
    files that still hold it) and the ones the reply lists; an entry not indexed has them as
    its record says."""

    uid: str
    rowid: int | None
    kind: str | None
    category: str
    created: float | None
    via: str | None
    source: str | None
    hash: str | None
    where: str | None = None


@dataclass(frozen=True)
class Mention:
    """A place that only mentions the string, which keeps it with the string replaced:
    ``what`` (an entry's id, a session, a transcript's path) and ``where`` in it."""

    what: str
    where: str


@dataclass(frozen=True)
class PurgeReport:
    """What a purge removed (or, a dry run, would remove): the entries it selected, the places
    it scrubbed, how many events, pass changes and file records went with them, and the
    watched files and transcripts that still hold an entry it removed (indexed again, they
    bring it back)."""

    agent: str
    dry_run: bool
    entries: tuple[PurgedEntry, ...]
    mentions: tuple[Mention, ...]
    events: int
    changes: int
    ledger_records: int
    archive_records: int
    files_still_holding: tuple[str, ...]
    transcripts_still_holding: tuple[str, ...]
    #: torn last lines set aside (the state dir's ``torn/``) that held the text or an entry:
    #: bytes of writes never acknowledged, deleted whole
    torn: tuple[str, ...] = ()
    #: the agent's sessions whose transcripts hold the text (or whose outcomes quoted it):
    #: what they did before the purge is not judged again
    sealed: tuple[str, ...] = ()
    #: the index a reindex replaced (``memoryd.db.bak``), from before the purge: deleted
    backups: tuple[str, ...] = ()
    #: indexes set aside as damaged, from before the purge: named (they may hold the text)
    damaged_copies: tuple[str, ...] = ()
