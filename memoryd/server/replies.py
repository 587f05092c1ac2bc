"""An entry on the wire: below the server, entries are
:class:`~memoryd.store.records.StoredEntry` records; a reply shows each as the map
:func:`entry_reply` makes, without its ``rowid`` (the index's own row number, which changes when
the index is rebuilt and which no method takes). ``get`` and ``list`` add the ``age_note`` an old
entry carries (:func:`public_entry`, :mod:`memoryd.retrieval.age`). Every reply goes through
:func:`without_rowids` on its way out, which turns the entries a reply still holds into their
maps, so this module is the one place that does."""

from __future__ import annotations

from typing import Any

from memoryd.retrieval.age import age_note
from memoryd.store.records import StoredEntry
from memoryd.store.usage import UsageRecord


def entry_reply(entry: StoredEntry) -> dict[str, Any]:
    """An entry as clients see it: its fields, ``id`` last, no ``rowid``."""
    shown = entry.as_dict()
    del shown["rowid"]
    return shown


def public_entry(entry: StoredEntry, now: float, usage: UsageRecord | None = None
                 ) -> dict[str, Any]:
    """An entry as ``get`` (with its ``usage``) and ``list`` show it: with its
    ``age_note``."""
    shown = entry_reply(entry)
    if usage is not None:
        shown["usage"] = usage.as_dict()
    shown["age_note"] = age_note(entry.created, now)
    return shown


def without_rowids(value: Any) -> Any:
    """A reply with every entry as its map (:func:`entry_reply`), and every other map of an
    entry (one with ``id`` and ``rowid``: a journal's snapshot) stripped of ``rowid``."""
    if isinstance(value, StoredEntry):
        return entry_reply(value)
    if isinstance(value, dict):
        return {k: without_rowids(v) for k, v in value.items()
                if not (k == "rowid" and "id" in value)}
    if isinstance(value, list):
        return [without_rowids(v) for v in value]
    return value
