"""Transcript chunking: turns grouped into the chunks the indexer stores, as exchanges or as
windows of turns (see the package docstring)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memoryd.ingest.transcript.lines import Chunk, Turn
from memoryd.text import CHUNK_LABELS

#: Longest chunk text, date prefix included. Past it, the assistant part is cut first: the user
#: part (or summary) keeps all but :data:`_ASSISTANT_RESERVE_CHARS` of the room.
MAX_CHUNK_CHARS = 4_000
_ASSISTANT_RESERVE_CHARS = 1_000



def chunk_exchanges(turns: Sequence[Turn], *, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Group turns into exchange chunks, in the order of each chunk's first turn.

    An exchange is a user's message — one turn, or several in a row before an answer (a
    person in a chat often sends a thought in a few messages) — and the assistant turns after
    it, up to the user's next message. A summary is a chunk of its own. Assistant turns with no user turn before them (the start of
    the input, or just after a summary) form a chunk of their own. Turns of different sessions or
    sidechain agents never share a chunk, so a subagent's turns interleaved with the main thread
    leave the main exchange whole.

    The text is ``"[YYYY-MM-DD] "`` (the UTC date of the first timestamp, when there is one)
    followed by ``"User: …"``, ``"Assistant: …"`` or ``"Summary: …"`` sections separated by a
    blank line, cut to ``max_chars`` (see :data:`MAX_CHUNK_CHARS`). ``chunk_id`` is derived from
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
        if group is None or (turn.role == "user" and group[-1].role != "user"):
            group = open_groups[key] = []
            groups.append(group)
        group.append(turn)
    return [_make_chunk(group, max_chars) for group in groups]


def _make_chunk(group: list[Turn], max_chars: int) -> Chunk:
    first = group[0]
    timestamp = next((t.timestamp for t in group if t.timestamp is not None), None)
    prefix = ""
    if timestamp is not None:
        prefix = f"[{datetime.fromtimestamp(timestamp, UTC).date().isoformat()}] "
    sections = [f"{CHUNK_LABELS.get(t.role, 'Assistant')}: {t.text}" for t in group]
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


@dataclass(frozen=True)
class WindowShape:
    """A window's turns: the centre turn and up to ``turns`` turns of the same session on each
    side, each neighbour cut to ``context_chars`` (0: whole) on the side away from the
    centre."""

    turns: int = 1
    context_chars: int = 0


def chunk_windows(turns: Sequence[Turn], shape: WindowShape, *, emit_from: int = 0,
                  max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """One chunk per turn: the turn with its neighbours (see :class:`WindowShape`), in the
    order of the turns. Summaries are chunks of their own and no one's neighbour; turns of
    different sessions or sidechain agents are never neighbours. Only the windows centred on
    ``turns[emit_from:]`` are returned (the turns before them are context: a tail's earlier
    turns, whose own windows were stored already).

    The text is ``"[YYYY-MM-DD] "`` (the centre's date) followed by the turns as in
    :func:`chunk_exchanges`. ``chunk_id`` comes from the centre's record id, so a window that
    gains its next turn later is rebuilt under the same id; ``record_ids`` lists the
    window's turns in order."""
    lanes: dict[tuple[str | None, str | None], list[int]] = {}
    for number, turn in enumerate(turns):
        if turn.role != "summary":
            lanes.setdefault((turn.session_id, turn.sidechain_agent), []).append(number)
    neighbours: dict[int, tuple[list[int], list[int]]] = {}
    for lane in lanes.values():
        for place, number in enumerate(lane):
            neighbours[number] = (lane[max(0, place - shape.turns):place],
                                  lane[place + 1:place + 1 + shape.turns])
    chunks = []
    for number in range(emit_from, len(turns)):
        turn = turns[number]
        if turn.role == "summary":
            chunks.append(_make_chunk([turn], max_chars))
            continue
        before, after = neighbours[number]
        chunks.append(_window([turns[i] for i in before], turn, [turns[i] for i in after],
                              shape, max_chars))
    return chunks


def _window(before: list[Turn], centre: Turn, after: list[Turn], shape: WindowShape,
            max_chars: int) -> Chunk:
    prefix = ""
    stamp = centre.timestamp
    if stamp is not None:
        prefix = f"[{datetime.fromtimestamp(stamp, UTC).date().isoformat()}] "

    def section(turn: Turn, text: str) -> str:
        return f"{CHUNK_LABELS.get(turn.role, 'Assistant')}: {text}"

    cut = shape.context_chars
    sections = [section(t, _tail(t.text, cut) if cut else t.text) for t in before]
    sections.append(section(centre, centre.text))
    sections += [section(t, _cut(t.text, cut) if cut else t.text) for t in after]
    text = "\n\n".join(sections)
    if len(prefix) + len(text) > max_chars:  # the centre keeps its room, the context is cut
        own = section(centre, _cut(centre.text, max_chars - len(prefix)))
        room = max_chars - len(prefix) - len(own)
        left = [s for s in sections[:len(before)]]
        right = [s for s in sections[len(before) + 1:]]
        share = max(room // max(1, len(left) + len(right)) - 2, 0)
        text = "\n\n".join([*(_tail(s, share) for s in left if share > 1), own,
                            *(_cut(s, share) for s in right if share > 1)])
    window = [*before, centre, *after]
    return Chunk(
        chunk_id=hashlib.sha256(f"window:{centre.record_id}".encode()).hexdigest()[:32],
        kind="turn",
        text=prefix + text,
        record_ids=tuple(t.record_id for t in window),
        session_id=centre.session_id,
        timestamp=stamp if stamp is not None else next(
            (t.timestamp for t in window if t.timestamp is not None), None),
        cwd=centre.cwd or next((t.cwd for t in window if t.cwd), None),
        sidechain_agent=centre.sidechain_agent,
        anchor=centre.record_id,
    )


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of a text (a neighbour before the centre: its end is
    nearest)."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    return "…" + text[len(text) - limit + 1:].lstrip()
