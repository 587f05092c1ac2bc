"""Editing a JSON file's text in place: where each value is, and edits that touch nothing else.

`memory hook install` adds memoryd's handlers to a settings file the user wrote by hand, and
`uninstall` takes them out again. Parsing the file and writing it back re-serialises all of it
(an inline ``"allow": ["Bash(git status)"]`` comes back spread over three lines), so neither
does: they insert and remove text, and every other byte stays as it was. An insertion copies
the layout around it (the indentation and line endings of the container it goes into, inline
in an inline container), and a removal takes out exactly what an insertion put in, separator
and all, so that install then uninstall gives back the same bytes.

The text must be valid JSON (``json.loads`` decides first); this module only finds spans.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # not in typeshed
from typing import Any

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Node:
    """A value's span in the text (``end`` exclusive); an object's members, an array's items."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int
    members: tuple[Member, ...] = ()
    items: tuple[Node, ...] = ()

    def member(self, key: str) -> Member | None:
        """The member named ``key`` (the last one, as json.loads reads a repeated key)."""
        found = [m for m in self.members if m.key == key]
        return found[-1] if found else None

    @property
    def children(self) -> tuple[Member, ...] | tuple[Node, ...]:
        return self.members if self.kind == "object" else self.items


@dataclass(frozen=True)
class Member:
    """An object's member: its key, where it starts (the key's quote) and its value."""

    key: str
    start: int
    value: Node

    @property
    def end(self) -> int:
        return self.value.end


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``text``."""

    start: int
    end: int
    text: str


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def parse(text: str) -> Node:
    """The spans of a valid JSON text's values."""
    node, _ = _value(text, _skip(text, 0))
    return node


def _value(text: str, i: int) -> tuple[Node, int]:
    start = i
    if text[i] == "{":
        members: list[Member] = []
        i = _skip(text, i + 1)
        while text[i] != "}":
            key_start = i
            key, after = scanstring(text, i + 1)
            value, i = _value(text, _skip(text, _skip(text, after) + 1))  # past the colon
            members.append(Member(key, key_start, value))
            i = _skip(text, i)
            if text[i] == ",":
                i = _skip(text, i + 1)
        return Node("object", start, i + 1, members=tuple(members)), i + 1
    if text[i] == "[":
        items: list[Node] = []
        i = _skip(text, i + 1)
        while text[i] != "]":
            item, i = _value(text, i)
            items.append(item)
            i = _skip(text, i)
            if text[i] == ",":
                i = _skip(text, i + 1)
        return Node("array", start, i + 1, items=tuple(items)), i + 1
    _, end = _DECODER.raw_decode(text, i)
    return Node("scalar", start, end), end


def value_of(text: str, node: Node) -> Any:
    return json.loads(text[node.start:node.end])


def apply(text: str, edits: list[Edit]) -> str:
    """The text with the edits made (they must not overlap)."""
    for edit, following in zip(sorted(edits, key=lambda e: e.start),
                               sorted(edits, key=lambda e: e.start)[1:]):
        if edit.end > following.start:
            raise AssertionError(f"overlapping edits {edit} and {following}")
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[:edit.start] + edit.text + text[edit.end:]
    return text


# -- layout -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Style:
    """How the file writes what it holds: its indentation step, line endings, separators."""

    unit: str = "  "
    newline: str = "\n"
    key_separator: str = ": "
    item_separator: str = ", "
    ensure_ascii: bool = False

    @classmethod
    def of(cls, text: str) -> Style:
        indents = [m.group(1) for m in re.finditer(r"\n([ \t]+)\S", text)]
        if not indents:
            unit = "  "
        elif indents[0].startswith("\t"):
            unit = "\t"
        else:
            spaces = [len(i) for i in indents if not i.startswith("\t")]
            unit = " " * (min(spaces) if spaces else 2)
        return cls(unit=unit, newline="\r\n" if "\r\n" in text else "\n",
                   key_separator=": " if re.search(r'":\s', text) or '":' not in text else ":",
                   item_separator=", " if re.search(r",\s", text) or "," not in text else ",",
                   ensure_ascii=text.isascii() and "\\u" in text)

    def render(self, value: Any, indent: str, multiline: bool) -> str:
        """``value`` as the file would write it at a line indented by ``indent``."""
        if not multiline:
            return json.dumps(value, ensure_ascii=self.ensure_ascii,
                              separators=(self.item_separator, self.key_separator))
        text = json.dumps(value, ensure_ascii=self.ensure_ascii, indent=self.unit,
                          separators=(",", self.key_separator))
        return text.replace("\n", self.newline + indent)

    def member(self, key: str, value: Any, indent: str, multiline: bool) -> str:
        return (json.dumps(key, ensure_ascii=self.ensure_ascii) + self.key_separator
                + self.render(value, indent, multiline))


def line_indent(text: str, position: int) -> str:
    """The indentation of the line holding ``position``."""
    start = text.rfind("\n", 0, position) + 1
    return re.match(r"[ \t]*", text[start:]).group()  # type: ignore[union-attr]


def is_multiline(text: str, node: Node) -> bool:
    """Whether a container puts its children on lines of their own."""
    children = node.children
    inside = text[node.start + 1: children[0].start if children else node.end - 1]
    return "\n" in inside


def _lead(text: str, node: Node, index: int) -> str:
    """The whitespace before child ``index`` (after the comma or the bracket before it)."""
    children = node.children
    begin = node.start + 1 if index == 0 else text.index(",", children[index - 1].end) + 1
    return text[begin:children[index].start]


def append(text: str, node: Node, pieces: list[tuple[str | None, Any]], style: Style,
           multiline_when_empty: bool) -> Edit:
    """Add children at the end of a container: (key, value) for an object's members, (None,
    value) for an array's items. Into a non-empty container they go right after its last
    child, each with a comma and the whitespace its last child has before it; an empty one is
    written anew (with its children on lines of their own when ``multiline_when_empty``)."""
    children = node.children
    if not children:
        indent = line_indent(text, node.start)
        if node.kind == "object":
            value: Any = dict(pieces)
        else:
            value = [v for _, v in pieces]
        return Edit(node.start, node.end, style.render(value, indent, multiline_when_empty))
    lead = _lead(text, node, len(children) - 1)
    multiline = "\n" in lead
    if multiline:
        separator = lead
        indent = lead.rsplit("\n", 1)[1]
    else:
        separator = lead if len(children) > 1 else style.item_separator[1:]
        indent = ""
    added = "".join(
        "," + separator + (style.member(key, value, indent, multiline) if key is not None
                           else style.render(value, indent, multiline))
        for key, value in pieces)
    return Edit(children[-1].end, children[-1].end, added)


def remove(text: str, node: Node, indices: list[int]) -> list[Edit]:
    """Take children out of a container, not all of them: each run of removed children goes
    with the comma and whitespace before it (after the child before it), or, at the start,
    with those after it (up to the next child). So a child ``append`` added is removed with
    exactly the text it added."""
    children = node.children
    chosen = sorted(set(indices))
    if len(chosen) >= len(children):
        raise ValueError("remove() keeps at least one child; the caller empties a container")
    edits = []
    run: list[int] = []
    for index in [*chosen, None]:
        if run and (index is None or index != run[-1] + 1):
            first, last = run[0], run[-1]
            if first > 0:
                edits.append(Edit(children[first - 1].end, children[last].end, ""))
            else:
                edits.append(Edit(children[0].start, children[last + 1].start, ""))
            run = []
        if index is not None:
            run.append(index)
    return edits
