"""An ``entries`` row: its columns, and the codecs between a row and the
:class:`~memoryd.store.records.StoredEntry` the rest of memoryd reads (tags stored as ",a,b,",
a chunk's record ids as JSON)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

from memoryd.store.records import StoredEntry
from memoryd.text import lower_keeping_marks

ENTRY_COLUMNS = (
    "uid",
    "agent",
    "project",
    "kind",
    "category",
    "key",
    "text",
    "hash",
    "confidence",
    "tags",
    "status",
    "created",
    "updated",
    "writer",
    "via",
    "session",
    "source",
    "line_start",
    "line_end",
    "message_id",
    "superseded_by",
    "polarity",
    "occurrences",
    "stale",
    "quarantined",
    "records",
    "heading",
)


def encode_tags(tags: Iterable[str]) -> str:
    """Tags as stored: ",a,b," so that a LIKE '%,a,%' finds one exactly; in lower case but
    for a redaction mark (``[REDACTED:stripe-key]``)."""
    clean = sorted({lower_keeping_marks(t.strip()) for t in tags if t.strip()})
    return "," + ",".join(clean) + "," if clean else ""


def decode_tags(stored: str) -> list[str]:
    return [t for t in stored.split(",") if t]


def encode_records(records: Sequence[str] | None) -> str | None:
    """A chunk's record ids as the ``records`` column holds them (a JSON list)."""
    return json.dumps(list(records)) if records else None


def decode_records(raw: str | None) -> list[str] | None:
    """The ``records`` column's record ids (None for an entry that is no transcript chunk)."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return [str(v) for v in value] if isinstance(value, list) else None


def row_to_entry(row: Sequence[Any]) -> StoredEntry:
    """An ``entries`` row (id first, then ENTRY_COLUMNS) as the entry it holds. The record is
    filled in directly: a frozen dataclass's ``__init__`` sets its 27 fields one
    ``object.__setattr__`` at a time, which made every read of entries twice as slow."""
    fields = dict(zip(_FIELDS, row))
    fields["tags"] = tuple(decode_tags(fields["tags"]))
    fields["quarantined"] = bool(fields["quarantined"])
    records = decode_records(fields["records"])
    fields["records"] = tuple(records) if records is not None else None
    entry = object.__new__(StoredEntry)
    entry.__dict__.update(fields)
    return entry


#: StoredEntry's fields: a row read with SELECT_ENTRY, in its order (tests/store/test_store.py).
_FIELDS = tuple(f.name for f in dataclasses.fields(StoredEntry))


SELECT_ENTRY = "SELECT id, " + ", ".join(ENTRY_COLUMNS) + " FROM entries"
