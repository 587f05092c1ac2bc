"""Exchange chunking: turns grouped into the chunks the indexer stores (see the package
docstring)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from memoryd.ingest.transcript.parser_base import Chunk, Turn
from memoryd.text import chunk_label

#: Longest chunk text, date prefix included. Past it, the assistant part is cut first: the user
#: part (or summary) keeps all but :data:`_ASSISTANT_RESERVE_CHARS` of the room.
MAX_CHUNK_CHARS = 4_000
_ASSISTANT_RESERVE_CHARS = 1_000



def chunk_exchanges(turns: Sequence[Turn], *, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Group turns into exchange chunks, in the order of each chunk's first turn.

    An exchange is a user turn and the assistant turns after it, up to the next user turn. A
    summary is a chunk of its own. Assistant turns with no user turn before them (the start of
    the input, or just after a summary) form a chunk of their own. Turns of different sessions or
    sidechain agents never share a chunk, so a subagent's turns interleaved with the main thread
    leave the main exchange whole.

    The text is ``"[YYYY-MM-DD] "`` (the date of the first timestamp, when there is one, in
    the daemon's time zone: the day a listing of it shows, not UTC's) followed by
    ``"User: …"``, ``"Assistant: …"`` or ``"Summary: …"`` sections separated by a blank line
    (``"User (Caroline): …"`` when the transcript names the speaker), cut to ``max_chars``
    (see :data:`MAX_CHUNK_CHARS`). ``chunk_id`` is derived from
    the first record id only, so re-chunking an exchange that has since grown (its answer
    arrived in a later batch) yields the same ``chunk_id``: the indexer replaces the chunk.
    """
    groups: list[list[Turn]] = []
    open_groups: dict[tuple[str | None, str | None], list[Turn]] = {}
    for turn in turns:
        key = (turn.session_id, turn.sidechain_agent)
        if turn.role == "summary":
            open_groups.pop(key, None)
            groups.append([turn])
            continue
        group = open_groups.get(key)
        if group is None or turn.role == "user":
            group = open_groups[key] = []
            groups.append(group)
        group.append(turn)
    return [_make_chunk(group, max_chars) for group in groups]


def _make_chunk(group: list[Turn], max_chars: int) -> Chunk:
    first = group[0]
    timestamp = next((t.timestamp for t in group if t.timestamp is not None), None)
    prefix = ""
    if timestamp is not None:
        prefix = f"[{datetime.fromtimestamp(timestamp).date().isoformat()}] "  # local day
    sections = [chunk_label(t.role, t.speaker) + t.text for t in group]
    return Chunk(
        chunk_id=hashlib.sha256(f"chunk:{first.record_id}".encode()).hexdigest()[:32],
        kind="summary" if first.role == "summary" else "turn",
        text=prefix + _fit(sections, first.role != "assistant", max_chars - len(prefix)),
        record_ids=tuple(t.record_id for t in group),
        session_id=first.session_id,
        timestamp=timestamp,
        cwd=next((t.cwd for t in group if t.cwd), None),
        sidechain_agent=first.sidechain_agent,
    )


def _fit(sections: list[str], has_lead: bool, budget: int) -> str:
    """Join sections by blank lines within ``budget`` characters, cutting the answers first."""
    text = "\n\n".join(sections)
    if len(text) <= budget:
        return text
    if not has_lead or len(sections) == 1:
        return _cut(text, budget)
    lead, rest = sections[0], "\n\n".join(sections[1:])
    lead = _cut(lead, budget - min(len(rest) + 2, _ASSISTANT_RESERVE_CHARS))
    rest = _cut(rest, budget - len(lead) - 2)
    return f"{lead}\n\n{rest}" if rest else lead


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    return text[: limit - 1].rstrip() + "…"

