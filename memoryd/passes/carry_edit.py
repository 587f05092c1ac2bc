"""Carrying one writer's edit of a text onto another version of it (a line-level three-way merge).

A pass replaces a file by renaming a new one over it. A writer that rewrites the file in place
at that very instant writes into the file the rename replaced: its edit was made to the old
text, and is lost unless it is made again to the text now in place. :func:`carry_edit` does
that when it can be done without guessing: each changed run of lines is placed where the lines
it touched (or, for lines added, a line beside them) now are, and only where those lines are
unchanged. When the edit touches lines that are gone or changed, it returns None. A change the
other version made too (the same lines, in the same place) is made once.

Lines added at the very end have no line below them, and the line above is often one the
other side moved or removed: an undo carries the edit made since the run wrote a file, and a
line appended (``echo >>``) after the run's last lines (pruned bullets at the bottom, a rules
section added at the end) had none but the run's above it. With ``appended_last`` they go
after the last line of ``base`` that ``onto`` keeps and the lines ``onto`` adds right after
it: at the end, where ``onto`` only added lines there or took its last lines away.

Lines keep their endings (a CRLF file stays CRLF), and are compared as bytes.
"""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher
from itertools import pairwise


def carry_edit(base: bytes, edited: bytes, onto: bytes, *,
               appended_last: bool = False) -> bytes | None:
    """``onto`` with the change from ``base`` to ``edited`` made to it, or None when that
    change touches lines that ``onto`` no longer holds as they were. ``appended_last``: lines
    added after the last line of ``base`` go as the module's docstring says."""
    old, new, target = (text.splitlines(keepends=True) for text in (base, edited, onto))
    if old == new:
        return onto
    where = _line_map(old, target)
    kept = set(where.values())  # the lines of ``target`` that are lines of ``base``
    edits: list[tuple[int, int, list[bytes]]] = []  # (start, end) in target → lines
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" or _made_already(where, kept, target, len(old), i1, i2, new[j1:j2]):
            continue
        if i1 == i2:  # lines added: after the line above them, else before the line below
            if appended_last and i1 == len(old):
                at = _after_last_kept(where, len(target))
            elif i1 > 0 and i1 - 1 in where:
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


def _after_last_kept(where: dict[int, int], size: int) -> int:
    """The place after the last line of base that the target keeps (its first line without
    one) and after the target's own lines that follow it (the lines no line of base maps to)."""
    at = where[max(where)] + 1 if where else 0
    mapped = set(where.values())
    while at < size and at not in mapped:
        at += 1
    return at


def _made_already(where: dict[int, int], kept: set[int], target: list[bytes], size: int,
                  i1: int, i2: int, lines: list[bytes]) -> bool:
    """Whether ``target`` made this change too (lines ``i1:i2`` of the base became ``lines``):
    it holds none of those lines, and between the lines around them it holds ``lines`` alone,
    lines of its own (not lines of the base that moved there). A change both sides made is
    made once (a line put back by hand that an undo puts back too is not doubled)."""
    if any(i in where for i in range(i1, i2)):
        return False
    above = where.get(i1 - 1) if i1 > 0 else -1
    below = where.get(i2) if i2 < size else len(target)
    return above is not None and below is not None and above < below \
        and target[above + 1:below] == lines and kept.isdisjoint(range(above + 1, below))


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
