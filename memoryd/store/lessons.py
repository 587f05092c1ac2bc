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
from typing import Any

import apsw

from memoryd.sources import ARCHIVE_DIR
from memoryd.store.database import SELECT_ENTRY, row_to_entry

#: The kinds whose words can forbid a tool call.
GUARD_KINDS = ("lesson", "feedback")
_KINDS = ", ".join(f"'{kind}'" for kind in GUARD_KINDS)
_CHANGED = "memoryd_lessons_changed"


def guarded_entries(db: apsw.Connection,
                    rowids: Collection[int] | None = None) -> list[dict[str, Any]]:
    """Every active lesson and feedback entry that may be injected: not quarantined, not in a
    notebook's archive (every agent, every project: the caller scopes them); with ``rowids``,
    those of them among these rows."""
    where = (f"kind IN ({_KINDS}) AND status='active' AND NOT quarantined "
             f"AND coalesce(source, '') NOT LIKE '%/{ARCHIVE_DIR}/%'")
    if rowids is None:
        rows = list(db.execute(SELECT_ENTRY + f" WHERE {where} ORDER BY created DESC, id DESC"))
    else:
        wanted, rows = sorted(rowids), []
        for at in range(0, len(wanted), 500):
            part = wanted[at:at + 500]
            rows += db.execute(SELECT_ENTRY + f" WHERE {where} AND id IN "
                               f"({', '.join('?' for _ in part)})", part).fetchall()
    return [row_to_entry(row) for row in rows]


def watch_lessons(db: apsw.Connection, changed: Callable[[int], None]) -> None:
    """Call ``changed(rowid)`` (on the connection's thread, inside the writing statement)
    whenever a lesson or feedback row is inserted, updated or deleted through ``db``. It may
    be called for a change that is then rolled back: a spurious call only costs a re-read."""
    db.create_scalar_function(_CHANGED, lambda rowid: changed(int(rowid)), 1)
    for event, row in (("INSERT", "new"), ("DELETE", "old")):
        db.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {_CHANGED}_{event.lower()} AFTER {event} "
                   f"ON main.entries WHEN {row}.kind IN ({_KINDS}) "
                   f"BEGIN SELECT {_CHANGED}({row}.id); END")
    db.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {_CHANGED}_update AFTER UPDATE ON main.entries "
               f"WHEN old.kind IN ({_KINDS}) OR new.kind IN ({_KINDS}) "
               f"BEGIN SELECT {_CHANGED}(new.id); END")
