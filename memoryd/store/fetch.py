"""Typed values out of queries.

SQLite's values are dynamically typed, and apsw types a row as a tuple of any of them. A query
whose one value is known to be an integer (``count(*)``, ``max(id)`` under ``coalesce``, a
pragma) says so here, and gets it checked; so does a query that always has a row (an
aggregate's). A missing row or another type is a bug in the query, not in the data, so it
raises.
"""

from __future__ import annotations

from typing import Any

import apsw


def integer(db: apsw.Connection, sql: str, bindings: apsw.Bindings | None = None) -> int:
    """The integer a query of one row and one column returns."""
    row = db.execute(sql, bindings).fetchone()
    if row is None or not isinstance(row[0], int):
        raise TypeError(f"expected one integer from {sql!r}, got {row!r}")
    return row[0]


def one(db: apsw.Connection, sql: str, bindings: apsw.Bindings | None = None
        ) -> tuple[Any, ...]:
    """The row of a query that always has one: an aggregate without GROUP BY, or a row
    known to exist."""
    row = db.execute(sql, bindings).fetchone()
    if row is None:
        raise TypeError(f"expected a row from {sql!r}")
    return tuple(row)
