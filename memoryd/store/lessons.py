"""The lessons (and the user's feedback) the PreToolUse hook holds tool calls against, read
whole when they changed, and a signal that says when they did.

The hook fires on every tool call, so the daemon keeps what the lessons forbid in memory
(memoryd.sessions.tool_guard) and must know, without a query, whether that is still true.
:func:`watch_lessons` puts TEMP triggers on the daemon's connection — the one connection that
writes ``entries`` — that call back whenever a row of those kinds is inserted, changed or
deleted (its text, status, project, tags, quarantine, anything). TEMP triggers live with the
connection and are no part of the schema: a rebuild, another connection or an older memoryd
never sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar, cast

import apsw

from memoryd.sources import ARCHIVE_DIR
from memoryd.store.database import Store
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry

#: The kinds whose words can forbid a tool call.
GUARD_KINDS = ("lesson", "feedback")
_KINDS = ", ".join(f"'{kind}'" for kind in GUARD_KINDS)
_CHANGED = "memoryd_lessons_changed"
T = TypeVar("T")


#: What a lesson's terms are read from (memoryd.sessions.outcome_rules.rule_of), by its row.
GuardText = tuple[int, str, str, "str | None", "str | None"]


def _guarded() -> EntryQuery:
    """Every active lesson and feedback entry that may be injected: not quarantined, not in a
    notebook's archive (every agent, every project: the caller scopes them)."""
    return EntryQuery().kinds(GUARD_KINDS).active().quarantined(False).not_under(ARCHIVE_DIR)


def guarded_texts(store: Store, rowids: Collection[int] | None = None) -> list[GuardText]:
    """(rowid, kind, text, polarity, key) of each guarded entry (with ``rowids``, of those
    among these rows): a few columns of every lesson, where whole entries of tens of
    thousands of them held ~100 MB for the few that forbid something."""
    columns = ("id", "kind", "text", "polarity", "key")
    found = store.entry_fields(_guarded(), columns) if rowids is None else \
        _among(rowids, lambda query: store.entry_fields(query, columns))
    return [(row["id"], row["kind"], row["text"], row["polarity"], row["key"]) for row in found]


def guarded_entries(store: Store, rowids: Collection[int]) -> list[StoredEntry]:
    """The guarded entries among these rows, whole."""
    return _among(rowids, store.entries)


def _among(rowids: Collection[int], read: Callable[[EntryQuery], list[T]]) -> list[T]:
    """What ``read`` gives of the guarded entries among these rows, 500 rows a query."""
    wanted = sorted(rowids)
    return [row for at in range(0, len(wanted), 500)
            for row in read(_guarded().ids(wanted[at:at + 500]))]


def watch_lessons(store: Store, changed: Callable[[int], None]) -> None:
    """Call ``changed(rowid)`` (on the connection's thread, inside the writing statement)
    whenever a lesson or feedback row is inserted, updated or deleted through the store's
    connection. It may be called for a change that is then rolled back: a spurious call only
    costs a re-read."""
    db = store._db

    def call(rowid: Any) -> None:  # an integer: the triggers pass the row's id
        changed(int(rowid))

    db.create_scalar_function(_CHANGED, cast("apsw.ScalarProtocol", call), 1)
    for event, row in (("INSERT", "new"), ("DELETE", "old")):
        db.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {_CHANGED}_{event.lower()} AFTER {event} "
                   f"ON main.entries WHEN {row}.kind IN ({_KINDS}) "
                   f"BEGIN SELECT {_CHANGED}({row}.id); END")
    db.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {_CHANGED}_update AFTER UPDATE ON main.entries "
               f"WHEN old.kind IN ({_KINDS}) OR new.kind IN ({_KINDS}) "
               f"BEGIN SELECT {_CHANGED}(new.id); END")
