"""A run of a pass and a change it makes, as records, and their names: ``r12``, ``c345``.

:mod:`memoryd.passes.runs` records and applies them; :mod:`memoryd.passes.file_changes` writes
a file's change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memoryd.errors import BadParamsError, NotFoundError

#: A run's or a change's number is a SQLite row id: at most this.
MAX_NUMBER = (1 << 63) - 1


def run_name(run: int) -> str:
    return f"r{run}"


def change_name(change: int) -> str:
    return f"c{change}"


def parse_target(text: str) -> tuple[str, int]:
    """"r12" → ("run", 12); "c345" → ("change", 345)."""
    if len(text) > 1 and text[0] in "rc" and text[1:].isascii() and text[1:].isdigit():
        kind, number = ("run" if text[0] == "r" else "change"), int(text[1:])
        if number > MAX_NUMBER:  # well formed, but no row can have it
            raise NotFoundError(f"no {kind} {text}")
        return kind, number
    raise BadParamsError(f"{text!r} is neither a run (r12) nor a change (c345)")


@dataclass
class Change:
    """One thing a run does to an entry or a file, or records (a proposal, a
    contradiction, a problem): its kinds and states are memoryd.passes.runs'."""

    kind: str
    target: str
    action: str
    why: str
    before: Any = None
    after: Any = None


@dataclass
class RunSummary:
    """A run as its pass goes: its number, its counts so far, how it ended."""

    run: int
    name: str
    dry_run: bool
    counts: dict[str, int] = field(default_factory=dict)
    status: str = "running"
    #: Of the file groups in conflict: the files changed since the pass read them, those
    #: gone since (renamed or deleted), and the files left as they were, held back with them
    #: (said in the reply: which is which).
    changed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    #: Of the files changed since: those gone (deleted, moved away), and, of an undo's, those
    #: a later run changed too (by file: the runs), which are to be undone first.
    gone: list[str] = field(default_factory=list)
    later: dict[str, list[str]] = field(default_factory=dict)
    #: Of an undo's: the changes it left as they are, and why (what they merged into was
    #: replaced by a person since: memoryd.passes.merge_undo.replaced_since).
    kept: list[str] = field(default_factory=list)
