"""Split a markdown memory file into entries with line spans.

Pure functions only: no I/O. ``parse_memory_file(text, path)`` never raises on any ``str``.

Lines
    Lines end at CRLF, CR or LF (Python's universal newlines, so numbers match a file read in
    text mode). Line numbers are 1-based and spans are inclusive. A span never ends on a blank
    line. Leading tabs count as 4 columns. A leading byte-order mark is ignored, and lone
    surrogates (from undecodable bytes) become U+FFFD.

Frontmatter
    A first line ``---`` closed by a later ``---`` (or ``...``) line. Top-level ``key: value`` lines
    are kept as strings, with one pair of matching quotes stripped. A value of ``|`` or ``>`` takes
    the indented lines below it (joined with newlines or spaces). Other lines (lists, nested maps,
    comments) are ignored; a repeated key keeps its last value. Without a closing line there is
    no frontmatter, and the first line is an ordinary ``---`` rule.

Entries
    - ATX headings (``#`` to ``######``, at most 3 spaces indent, then a space or end of line)
      start sections and are not entries. Setext headings (underlined) are not recognised.
    - Each bullet (``-``, ``*``, ``+``, ``1.``, ``1)``) is an entry, with every following line up to
      the next heading, rule, sibling bullet or blank line. After a blank line, the bullet goes on
      only if the next line is indented further than its marker.
    - A nested bullet (indented further than the entry's marker) belongs to its parent's entry:
      a top-level bullet and everything under it is one memory.
    - Other non-blank lines form paragraphs, ended by a blank line; each paragraph is an entry.
    - A fenced code block (three or more backticks or tildes) belongs to the entry it starts in,
      including a fence right after a bullet's text at any indent. Nothing inside a fence is a
      heading, bullet or blank-line break. An unclosed fence runs to the end of the file.
    - Rules (``---``, ``***``, ``___``) end the current entry and are not entries.
    - HTML comments (``<!-- … -->``, on one line or many; a line that starts one, at most 3
      spaces in or inside a bullet, up to the line that closes it, as CommonMark's HTML block
      reads them; unclosed, to the end of the file) are not entries, nor part of one: markdown
      hides them ("<!-- Keep this file short -->", a CLAUDE.md's note to itself). One ends
      the entry it follows, unless it is indented inside a bullet, which goes on after it.
      Nothing inside a comment is a heading. ``MemoryFile.comments`` holds their line spans.
    - Merge-conflict markers git writes (``<<<<<<< HEAD``, ``>>>>>>> b2``, and inside a
      conflict ``=======`` and ``||||||| base``) outside a fence end the current entry and are
      not entries: the lines of both sides are entries as they are, with their ids.
    - Entry text drops the bullet marker, a checkbox (``[ ]``, ``[x]``) and a leading
      ``[YYYY-MM-DD]`` date (with a following ``:``, ``-`` or dash). The date must be a real
      calendar date; it goes into ``date``. Continuation lines are dedented together, so nested
      bullets keep their relative indent. Entries with no text left are dropped.

Sections
    ``category`` is the nearest heading of any level in kebab form (invisible characters such as
    a zero-width space or a soft hyphen dropped first: they do not split a word), its secrets
    redacted before (``## Deploy with ghp_…`` is ``deploy-with-[REDACTED:github-token]``: the
    kebab form lower-cases ``AKIA…`` and puts a "-" before a ``_`` token, which the redactor
    would no longer know). ``heading`` is the heading as written; ``title_path`` the titles
    of the headings it is under, outermost first, as written (invisible characters dropped,
    secrets redacted) and joined by " › ": ``Claude Memory › Kestrelwood migration``, what
    the entry is searchable by beside its text. ``kind`` and
    ``polarity`` come from the nearest enclosing heading that names a notebook section, so
    ``### Deploy`` under ``## Mistakes`` is still a negative lesson. A heading names a section by
    its first words, case-insensitively, ignoring numbering, emoji and trailing text:

    - ``Mistake`` / ``Mistakes``: kind ``lesson``, polarity ``negative``
    - ``Learnings``: kind ``lesson``, polarity ``positive``
    - ``Feedback``, or ``<one word> Feedback``: kind ``feedback``
    - ``Session Log``: kind ``note`` (and it stops a parent heading's kind)

    Any other heading (or none) gives ``note``. ``Mistakes (newest first)`` is Mistakes;
    ``Shareholder Feedback`` and ``User Feedback`` are feedback; ``Recent Mistakes`` is a note.

Pinning
    A file is pinned when its name is ``CONTEXT.md`` (any case) or one of its folders is named
    ``system`` (any case). Pass ``path`` relative to the memory root: every folder counts.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

from memoryd.fold import INVISIBLE
from memoryd.redact import redact
from memoryd.text import kebab

_TAB_COLUMNS = 4
_NEWLINE = re.compile(r"\r\n|\r|\n")
_SURROGATE = re.compile("[\ud800-\udfff]")
_FRONTMATTER_KEY = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*:(?=[ \t]|$)")
_BLOCK_SCALAR = re.compile(r"[|>][+-]?[1-9]?[+-]?")
_HEADING = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_BULLET = re.compile(r"( *)([-*+]|\d{1,9}[.)])(?=[ \t]|$)")
_CHECKBOX = re.compile(r"\[[ xX]\](?:[ \t]+|$)")
#: A leading date: ``[2026-03-05]``, also written ``[2026-3-5]``, ``(2026-03-05)`` or
#: ``2026-03-05:`` (the notebook pass rewrites those as the first; reading them as a date
#: already keeps the entry's text, and its vector, the same when it does)
_DATE = re.compile(r"(?:\[(\d{4})-(\d{1,2})-(\d{1,2})\]|\((\d{4})-(\d{1,2})-(\d{1,2})\)"
                   r"|(\d{4})-(\d{1,2})-(\d{1,2})(?=[ \t]*[:\-\u2013\u2014]\s))"
                   r"(?:[ \t]*[:\-\u2013\u2014](?=\s|$))?\s*")
_FENCE = re.compile(r" *(`{3,}|~{3,})")
_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"
_WORD = re.compile(r"[a-z]+")
#: Merge-conflict markers (git's, at the start of a line): a conflict's start and end, and
#: what separates its sides (``=======`` alone is also a setext heading's underline).
CONFLICT_START = re.compile(r"<{7}(?:[ \t]|$)")
CONFLICT_END = re.compile(r">{7}(?:[ \t]|$)")
_CONFLICT_SIDE = re.compile(r"={7}$|\|{7}(?:[ \t]|$)")
#: Between the titles of a ``title_path``.
TITLE_SEPARATOR = " › "


@dataclass(frozen=True)
class MemoryItem:
    """One entry of a memory file: a bullet (with everything under it) or a paragraph."""

    text: str
    line_start: int
    line_end: int
    heading: str | None
    category: str
    kind: str
    polarity: str | None
    date: str | None
    #: the titles of its enclosing headings, outermost first (see the module docstring)
    title_path: str | None = None


@dataclass(frozen=True)
class MemoryFile:
    """A parsed memory file: its frontmatter, whether it is pinned, and its entries in order."""

    frontmatter: dict[str, str]
    description: str | None
    type: str | None
    pinned: bool
    items: tuple[MemoryItem, ...]
    #: the HTML comments' line spans (1-based, inclusive), in order: no entry holds them
    comments: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class _Section:
    """Where an entry sits: its nearest heading and the notebook section that encloses it."""

    heading: str | None = None
    kind: str = "note"
    polarity: str | None = None
    category: str = ""
    title_path: str | None = None


@dataclass
class _Draft:
    """An entry being collected, line by line."""

    start: int
    end: int
    first: str
    section: _Section
    marker_indent: int | None  # None for a paragraph
    rest: list[str] = field(default_factory=list)
    blanks: int = 0  # blank lines after `end`, kept only if the entry goes on
    fence: tuple[str, int] | None = None  # (character, length) of an open fence


def parse_memory_file(text: str, path: str) -> MemoryFile:
    """Parse a markdown memory file's text; ``path`` (relative to its root) decides pinning."""
    lines = split_lines(text)
    frontmatter, body_start = read_frontmatter(lines)
    comments: list[tuple[int, int]] = []
    items = collect_items(lines, body_start, comments)
    return MemoryFile(
        frontmatter=frontmatter,
        description=frontmatter.get("description") or None,
        type=frontmatter.get("type") or None,
        pinned=is_pinned(path),
        items=items,
        comments=tuple(comments),
    )


def split_lines(text: str) -> list[str]:
    """The file's lines, without line endings, byte-order mark or lone surrogates."""
    return raw_lines(_SURROGATE.sub("\ufffd", text))


def raw_lines(text: str) -> list[str]:
    """The file's lines as :func:`split_lines` numbers them, without line endings or
    byte-order mark, but with the bytes that are not UTF-8 kept (as surrogate escapes): what a
    rewrite of the file is made from, so that what it does not change stays as it was."""
    return _NEWLINE.split(text.removeprefix("\ufeff"))


def is_pinned(path: str) -> bool:
    """True for ``CONTEXT.md`` and for anything inside a folder named ``system``."""
    parts = [part.lower() for part in re.split(r"[\\/]", path) if part]
    if not parts:
        return False
    return parts[-1] == "context.md" or "system" in parts[:-1]


# Frontmatter


def read_frontmatter(lines: list[str]) -> tuple[dict[str, str], int]:
    """The frontmatter pairs and the index of the first body line (0 when there is none)."""
    if lines[0].rstrip() != "---":
        return {}, 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            return parse_frontmatter(lines[1:index]), index + 1
    return {}, 0


def parse_frontmatter(lines: list[str]) -> dict[str, str]:
    """Top-level ``key: value`` pairs; block scalars take the indented lines below them."""
    pairs: dict[str, str] = {}
    index = 0
    while index < len(lines):
        match = _FRONTMATTER_KEY.match(lines[index])
        index += 1
        if match is None:
            continue
        value = lines[index - 1][match.end() :].strip()
        if _BLOCK_SCALAR.fullmatch(value):
            block = take_indented(lines, index)
            index += len(block)
            value = join_block(value, block)
        pairs[match.group(1)] = unquote(value)
    return pairs


def take_indented(lines: list[str], start: int) -> list[str]:
    """The run of indented or blank lines from ``start``."""
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t")):
        end += 1
    return lines[start:end]


def join_block(indicator: str, block: list[str]) -> str:
    """A YAML block scalar's value: ``|`` keeps line breaks, ``>`` folds them into spaces."""
    stripped = [line.strip() for line in block]
    while stripped and not stripped[-1]:
        stripped.pop()
    if indicator.startswith("|"):
        return "\n".join(stripped)
    return " ".join(line for line in stripped if line)


def unquote(value: str) -> str:
    """Strip one pair of matching single or double quotes."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in ("'", '"'):
        return value[1:-1]
    return value


# Line shapes


def expand_indent(line: str) -> str:
    """Right-strip the line and turn tabs in its indent into spaces."""
    line = line.rstrip()
    lead = len(line) - len(line.lstrip(" \t"))
    return line[:lead].expandtabs(_TAB_COLUMNS) + line[lead:]


def measure_indent(line: str) -> int:
    """Leading spaces of a line whose indent is already expanded."""
    return len(line) - len(line.lstrip(" "))


def read_heading(line: str) -> tuple[int, str] | None:
    """The level and text of an ATX heading line (closing ``#``s removed), else None."""
    match = _HEADING.match(line)
    if match is None:
        return None
    level = len(match.group(1))
    text = line[match.end() :].strip()
    if text.strip("#") == "":
        return level, ""
    closed = text.rstrip("#")
    if closed != text and closed.endswith((" ", "\t")):
        return level, closed.rstrip()
    return level, text


def is_rule(line: str) -> bool:
    """True for a thematic break such as ``---``, ``* * *`` or ``___``."""
    if measure_indent(line) > 3:
        return False
    marks = line.replace(" ", "").replace("\t", "")
    return len(marks) >= 3 and marks[0] in "-*_" and marks == marks[0] * len(marks)


def read_bullet(line: str) -> tuple[int, str] | None:
    """The marker's indent and the text after the marker, for a list item line."""
    match = _BULLET.match(line)
    if match is None:
        return None
    return len(match.group(1)), line[match.end() :].strip()


def open_fence(line: str) -> tuple[str, int] | None:
    """The fence (character, length) a line opens, else None."""
    match = _FENCE.match(line)
    if match is None:
        return None
    marker = match.group(1)
    if marker[0] == "`" and "`" in line[match.end() :]:
        return None  # inline code such as ```x```, not a fence
    return marker[0], len(marker)


def closes_fence(line: str, fence: tuple[str, int]) -> bool:
    """True when the line closes the open fence."""
    marker = line.strip()
    return len(marker) >= fence[1] and marker == fence[0] * len(marker)


def opens_comment(line: str, draft: _Draft | None = None) -> bool:
    """True when the (indent-expanded) line starts an HTML comment block: ``<!--`` at most 3
    spaces in, or further in under a bullet of ``draft`` (inside its list item)."""
    if not line.lstrip(" ").startswith(_COMMENT_OPEN):
        return False
    indent = measure_indent(line)
    return indent <= 3 or (draft is not None and draft.marker_indent is not None
                           and indent > draft.marker_indent)


def comment_end(lines: list[str], start: int) -> int:
    """The index of the line that closes the comment opened on ``lines[start]`` (the last
    line when none does)."""
    first = lines[start]
    if _COMMENT_CLOSE in first[first.index(_COMMENT_OPEN) + 2:]:
        return start
    for index in range(start + 1, len(lines)):
        if _COMMENT_CLOSE in lines[index]:
            return index
    return len(lines) - 1


# Sections


def classify_heading(heading: str) -> tuple[str, str | None] | None:
    """(kind, polarity) when a heading names a notebook section, else None."""
    words = _WORD.findall(heading.lower())
    if not words:
        return None
    if words[0] in ("mistake", "mistakes"):
        return "lesson", "negative"
    if words[0] == "learnings":
        return "lesson", "positive"
    if "feedback" in words[:2]:
        return "feedback", None
    if words[:2] == ["session", "log"]:
        return "note", None
    return None


def push_heading(stack: list[tuple[int, str]], level: int, heading: str) -> _Section:
    """Put a heading on the stack of open headings and return the section it starts."""
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, heading))
    # an invisible character inside a word would split it ("ig-nore"), or a secret: the
    # category is shown in the memory block, judged by the quarantine as it is shown
    category = kebab(redact(INVISIBLE.sub("", heading)))
    titles = [" ".join(redact(INVISIBLE.sub("", title)).split()) for _, title in stack]
    title_path = TITLE_SEPARATOR.join(title for title in titles if title) or None
    for _, enclosing in reversed(stack):
        named = classify_heading(enclosing)
        if named is not None:
            return _Section(heading, named[0], named[1], category, title_path)
    return _Section(heading, category=category, title_path=title_path)


# Entries


def collect_items(lines: list[str], body_start: int,
                  comments: list[tuple[int, int]] | None = None) -> tuple[MemoryItem, ...]:
    """Every entry of the body, in file order; the HTML comments' line spans go into
    ``comments``."""
    items: list[MemoryItem] = []
    stack: list[tuple[int, str]] = []
    section = _Section()
    draft: _Draft | None = None
    skip_to = 0  # the last line of the comment being passed over
    conflict = False  # inside a merge conflict's markers
    for number in range(body_start + 1, len(lines) + 1):
        if number <= skip_to:
            continue
        line = expand_indent(lines[number - 1])
        if draft is not None and draft.fence is not None:
            extend_draft(draft, line, number)
            if line and closes_fence(line, draft.fence):
                draft.fence = None
            continue
        if opens_comment(line, draft):
            inside = draft is not None and draft.marker_indent is not None \
                and measure_indent(line) > draft.marker_indent
            if not inside:  # it ends the entry before it; inside a bullet, the bullet goes on
                finish_draft(draft, items)
                draft = None
            skip_to = comment_end(lines, number - 1) + 1
            if comments is not None:
                comments.append((number, skip_to))
            continue
        marker = conflict_marker(line, conflict)
        if marker is not None:
            finish_draft(draft, items)
            draft, conflict = None, marker
            continue
        if not line and draft is not None and draft.marker_indent is not None:
            draft.blanks += 1  # a bullet may go on after a blank line
            continue
        heading = read_heading(line)
        if not line or heading is not None or is_rule(line):
            finish_draft(draft, items)
            draft = None
            if heading is not None:
                section = push_heading(stack, *heading)
            continue
        draft = take_line(draft, line, number, section, items)
    finish_draft(draft, items)
    return tuple(items)


def conflict_marker(line: str, inside: bool) -> bool | None:
    """For a merge-conflict marker line, whether a conflict is open after it (``inside``:
    before it); None for any other line."""
    if CONFLICT_START.match(line):
        return True
    if CONFLICT_END.match(line):
        return False
    return True if inside and _CONFLICT_SIDE.match(line) else None


def take_line(
    draft: _Draft | None, line: str, number: int, section: _Section, items: list[MemoryItem]
) -> _Draft:
    """Add a non-blank, non-heading line to the current entry or start a new one with it."""
    bullet = read_bullet(line)
    if bullet is not None and not continues_bullet(draft, bullet[0]):
        finish_draft(draft, items)
        draft = _Draft(number, number, bullet[1], section, marker_indent=bullet[0])
    elif bullet is None and not continues_text(draft, line):
        finish_draft(draft, items)
        draft = _Draft(number, number, line.strip(), section, marker_indent=None)
    else:
        assert draft is not None
        extend_draft(draft, line, number)
    draft.fence = open_fence(line if bullet is None else bullet[1])
    return draft


def continues_bullet(draft: _Draft | None, indent: int) -> bool:
    """True when a bullet at ``indent`` nests under the current bullet entry."""
    return draft is not None and draft.marker_indent is not None and indent > draft.marker_indent


def continues_text(draft: _Draft | None, line: str) -> bool:
    """True when a plain (or fence) line goes on the current entry."""
    if draft is None:
        return False
    if draft.blanks == 0:
        return True
    return draft.marker_indent is not None and measure_indent(line) > draft.marker_indent


def extend_draft(draft: _Draft, line: str, number: int) -> None:
    """Append a line; a blank one only counts once the entry goes on past it."""
    if not line:
        draft.blanks += 1
        return
    draft.rest.extend([""] * draft.blanks)
    draft.rest.append(line)
    draft.blanks = 0
    draft.end = number


def finish_draft(draft: _Draft | None, items: list[MemoryItem]) -> None:
    """Append the finished draft to ``items`` as an item, unless it has no text."""
    if draft is None:
        return
    first = draft.first
    if draft.marker_indent is not None:
        first = _CHECKBOX.sub("", first, count=1)
    date, first = read_date(first)
    text = "\n".join([first, *dedent_lines(draft.rest)]).strip()
    if text:
        items.append(build_item(draft, text, date))


def read_date(text: str) -> tuple[str | None, str]:
    """Split a leading date (``[YYYY-MM-DD]`` and the looser forms of ``_DATE``; a real date)
    from the text; the date as ``YYYY-MM-DD``."""
    match = _DATE.match(text)
    if match is None:
        return None, text
    try:
        first = next(n for n in (1, 4, 7) if match.group(n))
        day = datetime.date(*(int(match.group(n)) for n in range(first, first + 3)))
    except ValueError:
        return None, text
    return day.isoformat(), text[match.end() :]


def dedent_lines(lines: list[str]) -> list[str]:
    """Remove the indent all non-blank lines share."""
    indents = [measure_indent(line) for line in lines if line]
    cut = min(indents, default=0)
    return [line[cut:] for line in lines]


def build_item(draft: _Draft, text: str, date: str | None) -> MemoryItem:
    """The public record for a finished entry."""
    return MemoryItem(
        text=text,
        line_start=draft.start,
        line_end=draft.end,
        heading=draft.section.heading,
        category=draft.section.category,
        kind=draft.section.kind,
        polarity=draft.section.polarity,
        date=date,
        title_path=draft.section.title_path,
    )
