"""What stands in the way of moving an entry to another tier (``memory scope``): the same
memory there already, or another value of its key (memoryd.passes.scope)."""

from __future__ import annotations

from typing import Any

from memoryd.store.database import SELECT_ENTRY, Store, row_to_entry


def same_in_tier(store: Store, entry: dict[str, Any],
                 project: str | None) -> dict[str, Any] | None:
    """Another active entry of ``entry``'s agent and category with its text, in exactly that
    tier (``project``; None: the global one)."""
    row = store._db.execute(
        SELECT_ENTRY + " WHERE agent=? AND category=? AND hash=? AND status='active' "
        "AND project IS ? AND uid<>? LIMIT 1",
        (entry["agent"], entry["category"], entry["hash"], project, entry["id"])).fetchone()
    return row_to_entry(row) if row else None


def key_in_tier(store: Store, entry: dict[str, Any],
                project: str | None) -> dict[str, Any] | None:
    """Another active value of ``entry``'s key, of its agent, in exactly that tier."""
    if not entry.get("key"):
        return None
    row = store._db.execute(
        SELECT_ENTRY + " WHERE agent=? AND key=? AND status='active' AND project IS ? "
        "AND uid<>? ORDER BY created DESC LIMIT 1",
        (entry["agent"], entry["key"], project, entry["id"])).fetchone()
    return row_to_entry(row) if row else None
