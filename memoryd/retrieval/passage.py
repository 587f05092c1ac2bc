"""A transcript hit as a passage: its exchange, with the turns before it and after it.

A transcript is indexed by exchange (a user's message and the answers to it,
memoryd.ingest.transcript): that is what search scores. A short hit is shown with the turns
around it in the same session, so that the passage is about ``passage_chars`` long: half the
room left on each side (at least the nearest turn, cut to fit). In a chat the subject of a
reply is often a message or two before it ("I joined an improv class" / "You?" / "me.
Thursday nights at the Lantern"), and the turns around an exchange say what it is about; an
exchange of a coding session is long enough to be read alone, and gets none. Indexing each turn
with its neighbours instead (windows) was measured and left out (docs/retrieval.md, "Retrieval
choices").

The hit's passage (:class:`~memoryd.retrieval.records.Passage`) is its text with the turns
around it and the record ids of every turn it shows (the context's too), so that a hit maps
back to the turns it covers; it holds the turns shown before and after too. A reply shows the
passage as the hit's ``text`` and ``records``, and the turns as its ``context`` (``before``,
``after``). The entry itself is unchanged (``memory get``).

Each turn reads under its own day: the passage gives a date (its chunk's ``[YYYY-MM-DD]``)
before the first turn it shows of each day, so that a turn from days before the hit is not
read as the hit's day's (the context lists the turns as written, a turn each).
"""

from __future__ import annotations

import re

from memoryd.retrieval.records import Passage
from memoryd.store.database import Store
from memoryd.store.records import StoredEntry
from memoryd.text import CHUNK_LABEL, without_date_prefix

#: Chunks read on each side for the context (a chat's turns are short: a few make the room).
NEIGHBOURS = 4
#: Less room than this on a side is none: a fragment of a turn says nothing.
MIN_CONTEXT = 40
_SECTION = re.compile(rf"\n\n(?={CHUNK_LABEL.pattern})")
_DATE = re.compile(r"^\[([^\]\n]{4,40})\]\s*")

Turn = tuple[str, str | None, str | None]  # a turn as written ("User: …"), its record id, its day


def sections(text: str) -> list[str]:
    """A chunk's turns as written: ``User: …``, ``Assistant: …`` (the date left out)."""
    return [s for s in _SECTION.split(without_date_prefix(text)) if s.strip()]


def turns_around(store: Store, entry: StoredEntry, rowid: int,
                 passage_chars: int) -> Passage | None:
    """A transcript chunk's hit with the turns around it (see the module docstring); None
    for other hits, and for a chunk with no turn around it."""
    own = entry.text
    chars = (passage_chars - len(own)) // 2
    if chars < MIN_CONTEXT or entry.via != "watch" or not entry.uid.startswith("t") \
            or entry.kind != "turn":
        return None
    earlier, later = store.chunk_neighbours(rowid, NEIGHBOURS)
    before = _within([t for text, records in earlier for t in reversed(_turns(text, records))],
                     chars, keep_end=True)
    after = _within([t for text, records in later for t in _turns(text, records)], chars,
                    keep_end=False)
    if not before and not after:
        return None
    date = _DATE.match(own)
    day = date.group(1) if date else None
    before.reverse()
    shown = [(f"(before) {turn}", on) for turn, _, on in before]
    shown.append((own[date.end():] if date else own, day))
    shown += [(f"(after) {turn}", on) for turn, _, on in after]
    records = entry.records
    return Passage(
        text="\n\n".join(_dated(shown)),
        before=tuple(turn for turn, _, _ in before),
        after=tuple(turn for turn, _, _ in after),
        records=(*(r for _, r, _ in before if r), *records,
                 *(r for _, r, _ in after if r)) if records else None)


def _dated(shown: list[tuple[str, str | None]]) -> list[str]:
    """The passage's turns, each day's date before the first turn of that day (a turn of
    another day than the hit's reads under its own day, not under the hit's)."""
    dated, last = [], None
    for turn, day in shown:
        if day is not None and day != last:
            turn, last = f"[{day}] {turn}", day
        dated.append(turn)
    return dated


def _turns(text: str, records: list[str] | None) -> list[Turn]:
    """A chunk's turns with their record ids (None where the chunk does not know them) and
    the chunk's date (None: it has none)."""
    turns = sections(text)
    date = _DATE.match(text.strip())
    ids: list[str | None] = list(records) if records and len(records) == len(turns) else \
        [None] * len(turns)
    return [(turn, record, date.group(1) if date else None) for turn, record in zip(turns, ids)]


def _within(turns: list[Turn], chars: int, *, keep_end: bool) -> list[Turn]:
    """The turns, nearest first, while they fit ``chars``; the nearest one at least, cut to
    it on the side away from the hit (``keep_end``: a turn before the hit keeps its end)."""
    shown: list[Turn] = []
    room = chars
    for turn, record, day in turns:
        if len(turn) <= room:
            shown.append((turn, record, day))
            room -= len(turn)
            continue
        if not shown:
            label, _, body = turn.partition(": ")
            body = ("…" + body[-chars + 1:].lstrip()) if keep_end else \
                (body[:chars - 1].rstrip() + "…")
            shown.append((f"{label}: {body}", record, day))
        break
    return shown
