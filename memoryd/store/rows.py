"""An ``entries`` row: its columns, and the codecs between a row and the entry dict the rest
of memoryd reads (tags stored as ",a,b,", a chunk's record ids as JSON)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

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
)


def encode_tags(tags: Iterable[str]) -> str:
    """Tags as stored: ",a,b," so that a LIKE '%,a,%' finds one exactly."""
    clean = sorted({t.strip().lower() for t in tags if t.strip()})
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


def row_to_entry(row: Sequence[Any]) -> dict[str, Any]:
    """An ``entries`` row (id first, then ENTRY_COLUMNS) as the wire-level entry dict."""
    entry = dict(zip(("rowid",) + ENTRY_COLUMNS, row))
    entry["id"] = entry.pop("uid")
    entry["tags"] = decode_tags(entry["tags"])
    entry["quarantined"] = bool(entry["quarantined"])
    entry["records"] = decode_records(entry["records"])
    return entry


SELECT_ENTRY = "SELECT id, " + ", ".join(ENTRY_COLUMNS) + " FROM entries"
