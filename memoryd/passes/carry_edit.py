"""Carrying one writer's edit of a text onto another version of it (a line-level three-way merge).

A pass replaces a file by renaming a new one over it. A writer that rewrites the file in place
at that very instant writes into the file the rename replaced: its edit was made to the old
text, and is lost unless it is made again to the text now in place. :func:`carry_edit` does
that when it can be done without guessing: each changed run of lines is placed where the lines
it touched (or, for lines added, a line beside them) now are, and only where those lines are
unchanged. When the edit touches lines that are gone or changed, it returns None.

Lines keep their endings (a CRLF file stays CRLF), and are compared as bytes.
"""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher
from itertools import pairwise


def carry_edit(base: bytes, edited: bytes, onto: bytes) -> bytes | None:
    """``onto`` with the change from ``base`` to ``edited`` made to it, or None when that
    change touches lines that ``onto`` no longer holds as they were."""
    old, new, target = (text.splitlines(keepends=True) for text in (base, edited, onto))
    if old == new:
        return onto
    where = _line_map(old, target)
    edits: list[tuple[int, int, list[bytes]]] = []  # (start, end) in target → lines
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # lines added: after the line above them, else before the line below
            if i1 > 0 and i1 - 1 in where:
                at = where[i1 - 1] + 1
            elif i1 < len(old) and i1 in where:
                at = where[i1]
            elif not old:
                at = len(target)
            else:
                return None
            edits.append((at, at, new[j1:j2]))
            continue
        places = [where.get(i) for i in range(i1, i2)]
        start = places[0]
        if start is None or places != list(range(start, start + i2 - i1)):
            return None  # lines changed or removed that are not there as they were
        edits.append((start, start + i2 - i1, new[j1:j2]))
    edits.sort(key=lambda edit: edit[0])
    for (_, end, _), (start, _, _) in pairwise(edits):
        if start < end:
            return None
    return _apply(target, edits)


def _apply(target: list[bytes], edits: list[tuple[int, int, list[bytes]]]) -> bytes:
    lines = list(target)
    for start, end, replacement in reversed(edits):
        lines[start:end] = replacement
    return b"".join(lines)


def _line_map(old: list[bytes], target: list[bytes]) -> dict[int, int]:
    """Where lines of ``old`` are in ``target``: the longest runs in order, then any line that
    occurs once in each (a section that moved as a whole)."""
    where: dict[int, int] = {}
    for a, b, size in SequenceMatcher(None, old, target, autojunk=False).get_matching_blocks():
        for offset in range(size):
            where[a + offset] = b + offset
    taken = set(where.values())
    in_old, in_target = Counter(old), Counter(target)
    at = {line: number for number, line in enumerate(target) if in_target[line] == 1}
    for number, line in enumerate(old):
        if number not in where and in_old[line] == 1 and line in at and at[line] not in taken:
            where[number] = at[line]
    return where
