"""What a reply shows of an entry: no ``rowid`` (the index's own row number, which changes when
the index is rebuilt and which no method takes), and the ``age_note`` an old entry carries
(:mod:`memoryd.retrieval.age`). ``get`` and ``list`` shape their entries with
:func:`public_entry`; every reply goes through :func:`without_rowids` on its way out."""

from __future__ import annotations

from typing import Any

from memoryd.retrieval.age import age_note


def public_entry(entry: dict[str, Any], now: float) -> dict[str, Any]:
    """An entry as clients see it: no ``rowid``, and its ``age_note``."""
    shown = {k: v for k, v in entry.items() if k != "rowid"}
    shown["age_note"] = age_note(entry["created"], now)
    return shown


def without_rowids(value: Any) -> Any:
    """A reply with every entry (a map with ``id`` and ``rowid``) stripped of ``rowid``."""
    if isinstance(value, dict):
        return {k: without_rowids(v) for k, v in value.items()
                if not (k == "rowid" and "id" in value)}
    if isinstance(value, list):
        return [without_rowids(v) for v in value]
    return value
