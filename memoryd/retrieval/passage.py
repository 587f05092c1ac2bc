"""A transcript hit as a passage: its exchange, with the turn before it and the turn after it.

A transcript is indexed by exchange (a user's message and the answers to it,
memoryd.ingest.transcript): that is what search scores. A hit is shown with the last turn of
the exchange before it and the first turn of the exchange after it in the same session, each
cut to ``CONTEXT_CHARS``: in a chat the subject of a reply is often the message before it ("I
joined an improv class" / "You?" / "me. Thursday nights at the Lantern"), and the turns around
an exchange say what it is about. Indexing the turns with their neighbours instead (each turn
the centre of a window) was measured and left out (README, "Retrieval choices").

The hit's ``text`` is the passage and its ``records`` the record ids of every turn it shows
(the context's too), so that a hit maps back to the turns it covers; ``context`` holds the two
turns (``before``, ``after``) as shown. The entry itself is unchanged (``memory get``).
"""

from __future__ import annotations

import re
from typing import Any

from memoryd.store.database import Store
from memoryd.text import CHUNK_LABELS, without_date_prefix

#: The longest a context turn is shown (characters; cut on the side away from the hit).
CONTEXT_CHARS = 300
_SECTION = re.compile(r"\n\n(?=(?:%s): )" % "|".join(CHUNK_LABELS.values()))
_DATE = re.compile(r"^\[[^\]\n]{4,40}\]\s*")


def sections(text: str) -> list[str]:
    """A chunk's turns as written: ``User: …``, ``Assistant: …`` (the date left out)."""
    return [s for s in _SECTION.split(without_date_prefix(text)) if s.strip()]


def add_turns_around(store: Store, hit: dict[str, Any], rowid: int) -> None:
    """Show a transcript chunk's hit with the turn before and after it (see the module
    docstring); other hits are left as they are."""
    if hit.get("via") != "watch" or not str(hit.get("id", "")).startswith("t") \
            or hit.get("kind") != "turn":
        return
    before, after = store.chunk_neighbours(rowid)
    shown_before = _turn(before, last=True)
    shown_after = _turn(after, last=False)
    if shown_before is None and shown_after is None:
        return
    own = hit["text"]
    date = _DATE.match(own)
    parts = [f"(before) {shown_before[0]}"] if shown_before else []
    parts.append(own[date.end():] if date else own)
    if shown_after:
        parts.append(f"(after) {shown_after[0]}")
    hit["text"] = (date.group(0) if date else "") + "\n\n".join(parts)
    hit["context"] = {"before": shown_before[0] if shown_before else None,
                      "after": shown_after[0] if shown_after else None}
    records = list(hit.get("records") or [])
    if records:
        hit["records"] = ([shown_before[1]] if shown_before and shown_before[1] else []) + \
            records + ([shown_after[1]] if shown_after and shown_after[1] else [])


def _turn(chunk: tuple[str, list[str] | None] | None, *, last: bool
          ) -> tuple[str, str | None] | None:
    """The last (or first) turn of a neighbouring chunk, cut to CONTEXT_CHARS, with its record
    id (None when the chunk does not know its records)."""
    if chunk is None:
        return None
    text, records = chunk
    turns = sections(text)
    if not turns:
        return None
    label, _, body = (turns[-1] if last else turns[0]).partition(": ")
    if len(body) > CONTEXT_CHARS:
        body = ("…" + body[-CONTEXT_CHARS + 1:].lstrip()) if last else \
            (body[:CONTEXT_CHARS - 1].rstrip() + "…")
    turn = f"{label}: {body}"
    record = (records[-1] if last else records[0]) if records else None
    return turn, record
