"""A notebook's text (seed 001), as the notebook pass reads, orders, prunes and writes it.

A notebook is a memory file with ``## `` sections named Mistakes, Learnings, (Shareholder)
Feedback or Session Log. :func:`parse` reads it into sections of items (an item is an entry as
the indexer reads it: its lines, date, text and heading); :func:`normalise`, :func:`repeats` and
:func:`prune` change that structure; :meth:`Notebook.render` writes it back so that the indexer
reads the same entries, each its own, under the same headings (a paragraph after a bullet gets
a blank line before it; a section not reordered is written as read; a blank line after a
heading stays, and so do the blank lines of a section whose items are each set apart by one,
and a numbered list keeps its order: sorted, its numbers would run "2. … 1. …";
an HTML comment, no entry, is written back as it was, before or after its section's items:
:class:`Comment`). No file, no database:
memoryd.passes.notebooks runs this over the store.
"""

from __future__ import annotations

import datetime
import functools
import re
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memoryd.ingest.line_date import local_date
from memoryd.ingest.markdown import (
    classify_heading,
    comment_end,
    expand_indent,
    opens_comment,
    parse_memory_file,
    read_heading,
)
from memoryd.meaning import Reading, reading, same_thing
from memoryd.passes.api import Offload
from memoryd.redact import redact
from memoryd.scheduling import give_way
from memoryd.text import content_hash

ORDER = ("mistakes", "learnings", "feedback", "session-log")
#: Sections whose older copies of a lesson go to the archive.
DEDUPED = ("mistakes", "learnings")
#: A notebook's vectors read per step; bullets read for their words (or compared) between two
#: pauses for the searches.
VECTORS_AT_ONCE = 500
READ_BLOCK = 200
#: A section this small finds its repeats in the step itself (a few ms at most).
SMALL_SECTION = 60
TITLES = {"mistakes": "Mistakes", "learnings": "Learnings", "feedback": "Shareholder Feedback",
          "session-log": "Session Log"}

#: A bullet's date as the indexer reads one (memoryd.ingest.markdown): bracketed, in
#: parentheses, or bare before ":" or a dash ("2026-03-05: …"); a bare date in the sentence
#: ("2026-04-15 is the launch date") is what the bullet says, not when.
_LOOSE_DATE = re.compile(r"^(\s*[-*+]\s+)(?:\[(\d{4})-(\d{1,2})-(\d{1,2})\]|\((\d{4})-(\d{1,2})-"
                         r"(\d{1,2})\)|(\d{4})-(\d{1,2})-(\d{1,2})(?=[ \t]*[:\-\u2013\u2014]\s))"
                         r"(?:[ \t]*[:\-\u2013\u2014](?=\s))?\s*")


#: The first line of a numbered list's item ("1. …", "2) …").
_NUMBERED = re.compile(r"\s*\d{1,9}[.)](?:\s|$)")


def section_name(heading: str) -> str | None:
    named = classify_heading(heading)
    if named is None:
        return None
    kind, polarity = named
    if kind == "lesson":
        return "mistakes" if polarity == "negative" else "learnings"
    return "feedback" if kind == "feedback" else "session-log"


@dataclass(eq=False)
class Item:
    lines: list[str]
    date: str | None
    text: str  # the text its entry was made from (before redaction)
    bullet: bool
    rewritten: dict[str, Any] | None = None  # its entry's new text, hash, date (a date fixed)
    line: int = 0  # where it starts in the file as read (its entry's line_start)
    heading: str | None = None  # the heading it sits under, as the index read it
    after: str | None = None  # the text its entry is made from once rewritten

    @functools.cached_property
    def hash(self) -> str:
        """The content hash of its entry: computed only for the items that move or change
        (redacting every item of every notebook was a third of the pass)."""
        return content_hash(redact(self.text))


@dataclass(eq=False)
class Comment:
    """An HTML comment of a section (``<!-- … -->``, one line or many): no entry, written back
    byte for byte where it stood — before the section's bullets, or after them (the section
    sorted between), or, between two bullets, with the section kept in its order."""

    lines: list[str]
    spaced_before: bool = False  # a blank line before it, as written: kept
    spaced_after: bool = False  # … and after it


Piece = str | Item | Comment


@dataclass
class Section:
    heading: str  # the heading line as written
    name: str | None  # a notebook section, or None
    items: list[Item] = field(default_factory=list)  # in the order they will be written
    pieces: list[Piece] = field(default_factory=list)  # its lines, comments, items, as read
    in_order: bool = False  # written as read (no notebook section, or it has sub-headings)
    spaced: bool = False  # a blank line after its heading, as the person wrote it: kept
    loose: bool = False  # its items each set apart by a blank line, as written: kept so

    @property
    def other(self) -> list[str]:
        """Its lines that are no item (a sub-heading, a rule)."""
        return [piece for piece in self.pieces if isinstance(piece, str)]


@dataclass
class Notebook:
    preamble: list[str]
    sections: list[Section]
    problems: list[str] = field(default_factory=list)
    leading: list[tuple[str, str | None]] = field(default_factory=list)  # preamble entries

    def render(self) -> str:
        """The notebook's text: each section's other lines and the comments before its items,
        then its items, then the comments after them (a section kept in order: each where it
        was), with a blank line before an item that is no bullet (it would run on into the
        item before it)."""
        parts = ["\n".join(self.preamble).rstrip()] if "".join(self.preamble).strip() else []
        for section in self.sections:
            kept = set(map(id, section.items))
            pieces: list[Piece] = [
                p for p in section.pieces if not isinstance(p, Item) or id(p) in kept
            ] if section.in_order else _placed(section)
            body = [section.heading, *[""] * section.spaced]
            previous: Item | None = None
            apart = False  # a comment set apart from what follows it by a blank line
            for piece in pieces:
                if apart and body[-1]:
                    body.append("")
                apart = False
                if isinstance(piece, Comment):
                    if piece.spaced_before and body[-1]:
                        body.append("")
                    body += piece.lines
                    previous, apart = None, piece.spaced_after
                    continue
                if isinstance(piece, str):
                    body.append(piece)
                    previous = None
                    continue
                if previous is not None and (not piece.bullet or section.loose):
                    body.append("")
                body += piece.lines
                previous = piece
            parts.append("\n".join(body).rstrip())
        return "\n\n".join(parts) + "\n"

    def entries(self) -> list[tuple[str, str | None]]:
        """The entries the rendered text must hold, in order: (text, heading)."""
        return self.leading + [(item.after or item.text, item.heading)
                               for section in self.sections for item in section.items]

    def lines(self) -> int:
        return self.render().count("\n")


def _placed(section: Section) -> list[Piece]:
    """A section's pieces as a sorted section writes them: its lines and the comments before
    its first item, its other lines, its items (in their new order), and the comments after
    its last item (a comment between two items keeps the section in its order: parse)."""
    where = [n for n, piece in enumerate(section.pieces) if isinstance(piece, Item)]
    first, last = (where[0], where[-1]) if where else (len(section.pieces), len(section.pieces))
    head = [p for p in section.pieces[:first] if not isinstance(p, Item)]
    return [*head, *(p for p in section.pieces[first:] if isinstance(p, str)),
            *section.items, *(p for p in section.pieces[last + 1:] if isinstance(p, Comment))]


def is_notebook(text: str) -> bool:
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        line = lines[number]
        if opens_comment(expand_indent(line)):  # a section commented out is none
            number = comment_end(lines, number) + 1
            continue
        heading = read_heading(line)
        if heading and heading[0] == 2 and section_name(heading[1]):
            return True
        number += 1
    return False


def parse(text: str, relative: str) -> Notebook:
    """A notebook's structure: its preamble and ``## `` sections with their items."""
    lines = text.split("\n")
    parsed = parse_memory_file(text, relative)
    starts = {item.line_start: item for item in parsed.items}
    comments = dict(parsed.comments)
    preamble: list[str] = []
    sections: list[Section] = []
    gaps: dict[int, list[bool]] = {}  # of each section, whether a blank line parts two items
    blank = False
    number = 0
    while number < len(lines):
        line = lines[number]
        heading = read_heading(line)
        if heading and heading[0] <= 2 and (heading[0] == 2 or sections):
            name = section_name(heading[1]) if heading[0] == 2 else None
            spaced = number + 1 < len(lines) and not lines[number + 1].strip()
            sections.append(Section(line, name, in_order=name is None, spaced=spaced))
            blank = False
            number += 1
            continue
        target = sections[-1] if sections else None
        end = comments.get(number + 1)
        if end is not None:  # kept whole, where it is (a heading inside is none)
            if target is None:
                preamble += lines[number:end]
            else:
                target.pieces.append(Comment(
                    lines[number:end], spaced_before=blank,
                    spaced_after=end < len(lines) and not lines[end].strip()))
            blank = False
            number = end
            continue
        item = starts.get(number + 1)
        if item is not None and target is not None:
            span = lines[item.line_start - 1:item.line_end]
            if target.items:
                gaps.setdefault(id(target), []).append(blank)
            target.items.append(Item(span, item.date, item.text,
                                     bool(re.match(r"\s*([-*+]|\d+[.)])\s", span[0])),
                                     line=item.line_start, heading=item.heading))
            target.pieces.append(target.items[-1])
            blank = False
            number = item.line_end
            continue
        if target is None:
            preamble.append(line)
        elif line.strip():
            target.pieces.append(line)
        else:
            blank = True
        number += 1
    for section in sections:
        section.loose = all(gaps.get(id(section), [False]))
    notebook = Notebook(preamble, sections,
                        leading=[(i.text, i.heading) for i in parsed.items
                                 if i.line_start <= len(preamble)])
    for section in sections:
        why = _kept_in_order(section) if section.name else None
        if why is not None:
            section.in_order = True
            notebook.problems.append(f"section {section.heading.strip()!r} {why}; left in its "
                                     "order")
    return notebook


def _kept_in_order(section: Section) -> str | None:
    """Why a notebook section is written in the order it was read, or None (it is sorted)."""
    if any(read_heading(line) for line in section.other):
        return "has sub-headings"
    if _text_between(section):  # "Current rules:" … "Obsolete, do not follow:" …
        return "has text between its bullets"
    if _comment_between(section):  # it may say something of the bullets after it
        return "has a comment between its bullets"
    if any(_NUMBERED.match(item.lines[0]) for item in section.items):
        return "is a numbered list"  # sorted, "1. … 2. …" read "2. … 1. …"
    return None


def _text_between(section: Section) -> bool:
    """Whether text that is no bullet (a paragraph, a line of its own) stands after one of the
    section's bullets: it says something of the bullets below it ("Obsolete, do not
    follow:"), which sorting them would take from under it."""
    first = next((n for n, piece in enumerate(section.pieces)
                  if isinstance(piece, Item) and piece.bullet), len(section.pieces))
    return any(isinstance(piece, str) or (isinstance(piece, Item) and not piece.bullet)
               for piece in section.pieces[first + 1:])


def _comment_between(section: Section) -> bool:
    """Whether a comment stands between two of the section's items: sorted, the items would
    move past it (one before or after them all stays there: :func:`_placed`)."""
    where = [n for n, piece in enumerate(section.pieces) if isinstance(piece, Item)]
    return bool(where) and any(isinstance(piece, Comment)
                               for piece in section.pieces[where[0]:where[-1]])


def normalise(notebook: Notebook, today: str | None = None) -> list[str]:
    """Section order, date prefixes, newest first. Returns what it fixed. A bullet dated after
    ``today`` (the local date: memoryd.ingest.line_date) is a problem, as one without a date
    is (the indexer dates it when it reads it)."""
    today = today or local_date(time.time())
    fixed: list[str] = []
    known = [s for s in notebook.sections if s.name]
    ordered = sorted(known, key=lambda s: ORDER.index(s.name))
    if [id(s) for s in ordered] != [id(s) for s in known]:
        fixed.append("sections put in order")
    # the notebook's sections in the places they held: the user's own ("## Coding style" of a
    # CLAUDE.md) stay where they are
    slots = iter(ordered)
    notebook.sections = [next(slots) if s.name else s for s in notebook.sections]
    impossible: set[int] = set()  # items whose date is none: said once, not as "no date"
    for section in ordered:
        for item in section.items:
            match = _LOOSE_DATE.match(item.lines[0]) if item.bullet else None
            if match:
                y, m, d = next(g for g in (match.group(2, 3, 4), match.group(5, 6, 7),
                                           match.group(8, 9, 10)) if g[0])
                date = f"{y}-{int(m):02d}-{int(d):02d}"
                if not _real_date(date):  # "2026-02-30:", "[2026-13-01]": the user's text
                    # stays, neither bracketed nor sorted by (the indexer reads no date there)
                    item.date = None
                    impossible.add(id(item))
                    notebook.problems.append(f"no such date {date}: "
                                             f"{item.lines[0].strip()[:60]!r}")
                    continue
                if item.date is not None and match.group(2) \
                        and "-".join(match.group(2, 3, 4)) == date:
                    continue  # written as it should be
                item.date = date
                item.lines[0] = f"{match.group(1)}[{item.date}] {item.lines[0][match.end():]}"
                item.rewritten = _rewrite(item)
                fixed.append(f"date prefix of {item.lines[0].strip()[:40]!r}")
        for item in section.items:
            if item.date is not None and item.date > today:
                notebook.problems.append(f"dated after today ({today}): "
                                         f"{item.lines[0].strip()[:60]!r}")
        if section.in_order:
            continue
        undated = [i for i in section.items if i.date is None]
        dated = sorted((i for i in section.items if i.date is not None),
                       key=lambda i: i.date or "", reverse=True)
        if undated + dated != section.items:
            fixed.append(f"{section.heading.strip()} newest first")
            section.items = undated + dated
        for item in undated:
            if item.bullet and id(item) not in impossible:
                notebook.problems.append(f"no date: {item.lines[0].strip()[:60]!r}")
    return fixed


def _real_date(date: str) -> bool:
    """Whether ``YYYY-MM-DD`` is a day of the calendar (not 2026-02-30, nor 2026-13-01)."""
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        return False
    return True


def _rewrite(item: Item) -> dict[str, Any]:
    """What the indexer will make of a rewritten item: its entry keeps its id (and history)
    when the pass updates it to this along with the file. Its ``created`` is left to the
    indexer, which keeps it while it is within the line's day (memoryd.ingest.line_date)."""
    parsed = parse_memory_file("## Notes\n" + "\n".join(item.lines), "notebook.md").items[0]
    item.after = parsed.text
    text = redact(parsed.text)
    return {"text": text, "hash": content_hash(text)}


def repeats(notebook: Notebook, vectors: Callable[[list[Item]], list[np.ndarray | None]],
            threshold: float) -> Generator[Any, Any, list[tuple[str, Item]]]:
    """Older copies of a lesson that its section holds a newer copy of — saying the same
    thing (memoryd.meaning: no other negation, number, name, order, …), alike by their
    vectors (cosine ≥ ``threshold``) or by their words (Jaccard ≥ 0.7) — taken out of the
    notebook for the archive: (section name, item). The newest copy stays, with its date
    (seed 003's one lesson in several phrasings; consolidation leaves a notebook's own
    entries to this pass). ``vectors``: the items' vectors, None for one the index does not
    hold (then its words decide), asked VECTORS_AT_ONCE items a step.

    A generator, in steps (a big notebook in slices): the vectors are read a page a step, and
    the copies are found off the database thread (:class:`~memoryd.passes.api.Offload`; a
    section of SMALL_SECTION bullets or fewer in the step itself) by :func:`repeated`, which
    compares only bullets with the same words. Comparing every pair of 1,000 bullets held the
    database thread for 3 s, of 2,000 for 15 s."""
    runs = [(section, sorted((i for i in section.items if i.bullet and i.date),
                             key=lambda i: i.date or "", reverse=True))
            for section in notebook.sections if section.name in DEDUPED]
    removed: list[tuple[str, Item]] = []
    for section, dated in runs:
        if len(dated) < 2:
            continue
        found: list[np.ndarray | None] = []
        for start in range(0, len(dated), VECTORS_AT_ONCE):
            yield
            found += vectors(dated[start:start + VECTORS_AT_ONCE])
        texts = [item.text for item in dated]
        copies = repeated(texts, found, threshold) if len(dated) <= SMALL_SECTION \
            else (yield Offload(repeated, (texts, found, threshold)))
        yield
        if copies:
            leaving = {id(dated[b]) for _, b in copies}
            section.items = [item for item in section.items if id(item) not in leaving]
            removed += [(section.name or "", dated[b]) for _, b in copies]
    return removed


def repeated(texts: list[str], vectors: list[np.ndarray | None],
             threshold: float) -> list[tuple[int, int]]:
    """(a, b) for each text ``b`` that says what an earlier text ``a`` kept says (see
    :func:`repeats`; the first of a run of copies is kept, and a copy takes no other with
    it), in the order of ``b``. Only texts with the same key (memoryd.meaning.Reading.key:
    the same words but light ones) can say the same thing, so each is compared only with
    the texts kept before it under its key: linear in the texts, not in their pairs. Gives
    way to the searches (memoryd.scheduling) every READ_BLOCK texts or comparisons when run off
    the database thread."""
    kept: dict[tuple[bool, frozenset[str]], list[tuple[int, Reading]]] = {}
    copies: list[tuple[int, int]] = []
    compared = 0
    for number, text in enumerate(texts):
        if number % READ_BLOCK == 0:
            give_way()
        mine = reading(text)
        earlier = kept.setdefault(mine.key, [])
        for other, theirs in earlier:
            compared += 1
            if compared % READ_BLOCK == 0:
                give_way()
            va, vb = vectors[other], vectors[number]
            cosine = float(va @ vb) if va is not None and vb is not None else 0.0
            if same_thing(theirs, mine, cosine, threshold, lesson=True):
                copies.append((other, number))
                break
        else:
            earlier.append((number, mine))
    return copies


def prune(notebook: Notebook, cap: int,
          kept_elsewhere: Callable[[], set[str]]) -> list[tuple[str, Item]]:
    """Remove bullets until the notebook fits its cap: (section name, item) removed, oldest
    Session Log first, then Learnings/Mistakes kept elsewhere (asked for only then: most
    notebooks fit once their Session Log is pruned); Feedback never."""
    removed: list[tuple[str, Item]] = []
    lines = notebook.lines()
    elsewhere: set[str] | None = None
    for names in (("session-log",), ("learnings", "mistakes")):
        while lines > cap:
            if names != ("session-log",) and elsewhere is None:
                elsewhere = kept_elsewhere()
            candidates = [(s, i) for s in notebook.sections if s.name in names
                          for i in s.items if i.bullet and (elsewhere is None
                                                            or i.hash in elsewhere)]
            if not candidates:
                break
            section, item = min(candidates, key=lambda c: c[1].date or "9999")
            section.items.remove(item)
            removed.append((section.name or "", item))
            # an item takes at most its own lines with it (fewer when the section's trailing
            # blank lines were its): render again only once that could be within the cap
            lines -= len(item.lines)
            if lines <= cap:
                lines = notebook.lines()
    if lines > cap:
        notebook.problems.append(f"{lines} lines, over the cap of {cap}: nothing "
                                 "more may be pruned (feedback is kept, and lessons only go "
                                 "once they are kept elsewhere)")
    return removed


def archive_text(existing: str | None, notebook_name: str, run: str,
                 removed: list[tuple[str, Item]], when: float) -> str:
    """The archive with a new dated block of pruned lines (newest blocks first)."""
    # what the file is goes in its description, not in a paragraph that would be an entry
    title = f"---\ndescription: Lines pruned from {notebook_name} by memoryd's notebook pass, " \
            f"kept here: searchable, never injected.\n---\n# Archive of {notebook_name}\n"
    head, _, older = (existing or title).partition("\n## ")
    block = [f"## {time.strftime('%Y-%m-%d', time.localtime(when))} (memoryd run {run})"]
    for name in ORDER:
        lines = [line for section, item in removed if section == name for line in item.lines]
        if lines:
            block += ["", f"### {TITLES[name]}", *lines]
    text = head.rstrip() + "\n\n" + "\n".join(block) + "\n"
    if older:
        text += "\n## " + older.rstrip() + "\n"
    return text
