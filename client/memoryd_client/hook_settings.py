"""memoryd's handlers in an agent's settings text (Claude Code's and Gemini CLI's
settings.json, Codex's and Cursor's hooks.json), added and removed as text
(:mod:`memoryd_client.json_edit`).

Claude Code, Codex and Gemini CLI read ``{"hooks": {EVENT: [{"matcher": …, "hooks": [HANDLER,
…]}, …]}}``; Cursor reads ``{"version": 1, "hooks": {EVENT: [HANDLER, …]}}`` (``flat``: the
lists hold handlers, not groups). Install appends one group (Cursor: one handler) per event;
uninstall removes the handlers ``ours`` recognises, the groups left without handlers and the
event lists left empty. What install added besides the groups (``added``: the path of a
container or member it created, with None, or of one that was empty, with the text it had)
tells uninstall what to put back, so that install then uninstall gives back the same bytes;
without it (a file an older memoryd edited), what memoryd's handlers leave empty is removed.
``head``: members a new file starts with (Cursor's ``"version": 1``), added to a file that has
none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoryd_client.json_edit import (
    Edit,
    Node,
    Style,
    append,
    apply,
    is_multiline,
    parse,
    remove,
    value_of,
)

#: A container's place: () the whole file, ("hooks",), ("hooks", EVENT).
Path = tuple[str, ...]
Added = dict[Path, "str | None"]


def new_file(groups: dict[str, dict[str, Any]], head: dict[str, Any] | None = None) -> str:
    """A settings file that did not exist: two-space indentation, a final newline."""
    return Style().render({**(head or {}), "hooks": {event: [group] for event, group in
                                                     groups.items()}}, "", True) + "\n"


def add_handlers(text: str, groups: dict[str, dict[str, Any]],
                 head: dict[str, Any] | None = None) -> tuple[str, Added]:
    """``text`` with one group appended to each event's list (lists and a ``hooks`` object
    created where missing), and what was added besides the groups."""
    root = parse(text)
    style = Style.of(text)
    added: Added = {}
    edits: list[Edit] = []
    hooks = root.member("hooks")
    if hooks is None:
        wanted = {event: [group] for event, group in groups.items()}
        missing = [(key, value) for key, value in (head or {}).items()
                   if root.member(key) is None]
        if not root.members:
            added[()] = text[root.start:root.end]
        else:
            added[("hooks",)] = None
        added.update({(key,): None for key, _ in missing})
        edits.append(append(text, root, [*missing, ("hooks", wanted)], style,
                            multiline_when_empty=True))
        return apply(text, edits), added
    if hooks.value.kind != "object":
        raise ValueError("'hooks' is not an object")
    new_events: list[tuple[str | None, Any]] = []
    for event, group in groups.items():
        existing = hooks.value.member(event)
        if existing is None:
            new_events.append((event, [group]))
            added[("hooks", event)] = None
        elif existing.value.kind != "array":
            raise ValueError(f"hooks.{event} is not a list")
        else:
            if not existing.value.items:
                added[("hooks", event)] = text[existing.value.start:existing.value.end]
            edits.append(append(text, existing.value, [(None, group)], style,
                                multiline_when_empty=is_multiline(text, hooks.value)))
    if new_events:
        if not hooks.value.members:
            added[("hooks",)] = text[hooks.value.start:hooks.value.end]
        edits.append(append(text, hooks.value, new_events, style,
                            multiline_when_empty=is_multiline(text, root)))
    return apply(text, edits), added


def strip_handlers(text: str, ours: Callable[[Any], bool], added: Added,
                   flat: bool = False) -> tuple[str, int]:
    """``text`` without the handlers ``ours`` recognises, and how many there were (``flat``:
    the event lists hold handlers, not groups)."""
    root = parse(text)
    hooks = root.member("hooks")
    if hooks is None or hooks.value.kind != "object":
        return text, 0
    edits: list[Edit] = []
    removed = 0
    emptied: list[int] = []  # hooks members whose lists held only memoryd's groups
    for number, event in enumerate(hooks.value.members):
        if event.value.kind != "array":
            continue
        event_edits, gone_groups, mine = _strip_event(text, event.value, ours, flat)
        edits += event_edits
        removed += mine
        if gone_groups and len(gone_groups) == len(event.value.items):
            emptied.append(number)
        elif gone_groups:
            edits += remove(text, event.value, gone_groups)
    gone_events = []
    for number in emptied:
        event = hooks.value.members[number]
        before = added.get(("hooks", event.key))
        if before is not None:  # the user's own empty list: put back as it was
            edits.append(Edit(event.value.start, event.value.end, before))
        else:
            gone_events.append(number)
    if gone_events and len(gone_events) < len(hooks.value.members):
        edits += remove(text, hooks.value, gone_events)
    elif gone_events:
        edits += _empty(text, root, hooks.value, added)
    return apply(text, edits), removed


def _strip_event(text: str, groups: Node, ours: Callable[[Any], bool], flat: bool = False
                 ) -> tuple[list[Edit], list[int], int]:
    """An event's list of groups without our handlers: the edits inside groups that keep
    others' handlers, the groups that held only ours, and how many of ours there were. A
    flat list's items are handlers: ours go, as a group holding only ours does."""
    if flat:
        mine = [i for i, item in enumerate(groups.items) if ours(value_of(text, item))]
        return [], mine, len(mine)
    edits: list[Edit] = []
    gone_groups = []
    removed = 0
    for index, group in enumerate(groups.items):
        handlers = group.member("hooks") if group.kind == "object" else None
        if handlers is None or handlers.value.kind != "array" or not handlers.value.items:
            continue
        mine = [i for i, h in enumerate(handlers.value.items) if ours(value_of(text, h))]
        removed += len(mine)
        if len(mine) == len(handlers.value.items):
            gone_groups.append(index)
        elif mine:
            edits += remove(text, handlers.value, mine)
    return edits, gone_groups, removed


def _empty(text: str, root: Node, hooks: Node, added: Added) -> list[Edit]:
    """Edits for a ``hooks`` object that only memoryd's handlers filled."""
    before = added.get(("hooks",))
    if before is not None:  # the user's own empty object
        return [Edit(hooks.start, hooks.end, before)]
    gone = [i for i, m in enumerate(root.members)  # with the members install added beside it
            if m.value is hooks or ((m.key,) in added and added[(m.key,)] is None)]
    if len(gone) < len(root.members):
        return remove(text, root, gone)
    return [Edit(root.start, root.end, added.get(()) or "{}")]
