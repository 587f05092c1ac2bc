"""What a purge (:mod:`memoryd.maintenance.purge`) looks for in the histories: the string in
free text of an event or a pass's change, and the selected entries' ids in a pass's change."""

from __future__ import annotations

import base64
import json
import re
import zlib
from typing import Any

#: A JSON string that may be an entry's id (19 hex digits, "t" and a chunk hash, older forms).
_ID = re.compile(r'"([0-9A-Za-z]{6,80})"')


def json_value(raw: str | None) -> Any:
    """An event's or a change's side (JSON text), or the text itself when it is not JSON."""
    if not raw:
        return ""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def strings(value: Any) -> str:
    """Every string inside a JSON value, joined: what the string is looked for in (a memory
    tool's compressed delta decompressed)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        texts = [strings(v) for v in value.values()]
        if isinstance(value.get("insert_z"), str):
            try:
                texts.append(zlib.decompress(base64.b64decode(value["insert_z"])).decode(
                    "utf-8", "replace"))
            except (ValueError, zlib.error):
                pass
        return "\n".join(texts)
    if isinstance(value, list):
        return "\n".join(strings(v) for v in value)
    return ""


def holds_text(pattern: re.Pattern[str], values: list[Any]) -> bool:
    return pattern.search(strings(values)) is not None


#: The members of an event, or of a record, that hold free text: an entry's version and a
#: transcript's turn (``text``), an outcome's reason (``why``: it quotes the session's steps),
#: a reason given for a change (``reason``).
FREE_TEXT = ("text", "why", "reason")


def scrub_texts(value: Any, pattern: re.Pattern[str], replacement: str) -> Any:
    """``value`` with the string replaced in its free text members (:data:`FREE_TEXT`: an
    entry's version, a transcript's open turns, an outcome's reason); names, categories and
    paths are left as they are. None when nothing changed."""
    changed = False

    def scrub(item: Any) -> Any:
        nonlocal changed
        if isinstance(item, list):
            return [scrub(v) for v in item]
        if not isinstance(item, dict):
            return item
        held = {key: pattern.sub(replacement, text) for key in FREE_TEXT
                if isinstance(text := item.get(key), str) and pattern.search(text)}
        if held:
            changed = True
            return {**item, **held}
        return item

    scrubbed = scrub(value)
    return scrubbed if changed else None


#: What a purge does with one of the passes' changes (:meth:`ChangeFilter.decide`).
DROP, SCRUB = "drop", "scrub"


class ChangeFilter:
    """What a purge does with the maintenance passes' changes: it removes those that name a
    selected entry (its target, an entry a file change moved, a side of a contradiction, a
    proposal's lesson), and those of the agent's (its entries, its files) whose before or
    after holds the string; one of the agent's whose reason alone holds it (a forget's
    reason) keeps its place with the string replaced there, so it can still be undone."""

    def __init__(self, agent: str, ids: set[str], pattern: re.Pattern[str] | None,
                 owners: dict[str, str], files: dict[str, str]) -> None:
        self.agent, self.ids, self.pattern = agent, ids, pattern
        self.owners, self.files = owners, files

    def decide(self, target: str, why: str | None, before: Any, after: Any) -> str | None:
        """:data:`DROP`, :data:`SCRUB` (its ``why``) or None (kept as it is). ``before`` and
        ``after``: as the database holds them (JSON text), or decoded."""
        raw = [side if isinstance(side, str) or side is None
               else json.dumps(side, ensure_ascii=False) for side in (before, after)]
        tokens = set(_ID.findall((raw[0] or "") + "\n" + (raw[1] or "")))
        if target in self.ids or not self.ids.isdisjoint(tokens):
            return DROP
        if self.pattern is None or self._owner(target, tokens) != self.agent:
            return None
        if holds_text(self.pattern, [json_value(raw[0]), json_value(raw[1])]):
            return DROP
        return SCRUB if why and self.pattern.search(why) else None

    def _owner(self, target: str, tokens: set[str]) -> str | None:
        owner = self.owners.get(target) or self.files.get(target)
        if owner is not None:
            return owner
        return next((self.owners[t] for t in sorted(tokens) if t in self.owners), None)
