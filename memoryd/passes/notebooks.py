"""The notebook pass (seed 001): each notebook held to its line cap, in order, nothing lost.

A notebook is a memory file with sections named Mistakes, Learnings, (Shareholder) Feedback or
Session Log (``## `` headings). The pass:

- **normalises** what seed 001's ``check --fix`` normalises: the sections in that order (other
  sections after them, as they were), date prefixes written ``[YYYY-MM-DD]`` (``[2026-3-5]``,
  ``2026-03-05:`` are rewritten), bullets newest first (undated ones stay on top, as written);
- takes out **repeated lessons**: an older Mistakes or Learnings bullet that says what a newer
  one in its section says (seed 003: one lesson in several phrasings; cosine ≥ 0.92 or words
  alike) goes to the archive, the newest copy stays. Its entry stays searchable there and
  still counts as a sighting of the lesson for promotion;
- holds the file to its **cap** (``passes.notebook_lines``, 80 lines; a source's own
  ``notebook_lines`` wins): the oldest Session Log bullets go first, then the oldest Learnings
  and Mistakes that are kept elsewhere (promoted to a governance file, or with the same text in
  another entry of the agent); Feedback is never pruned;
- moves pruned lines to **long-term storage**: ``archive/<notebook name>`` beside the notebook,
  under a dated heading naming the run. The archive is watched and searchable like any memory
  file, and never injected into the memory block. The pruned lines' entries move with them (same
  ids, same history);
- **reports** what it cannot fix: bullets without a date, a notebook still over its cap after
  every allowed prune, a section it cannot reorder (it has sub-headings).

Pinned files (CONTEXT.md, system/) and archives are not notebooks.
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.errors import BadParamsError
from memoryd.ingest.indexer import day_start
from memoryd.ingest.markdown import (
    MemoryFile,
    classify_heading,
    is_pinned,
    parse_memory_file,
    read_heading,
)
from memoryd.ingest.sources import ARCHIVE_DIR
from memoryd.passes.journal import Change, file_change, swap_groups
from memoryd.passes.steps import Collect, Offload
from memoryd.passes.user_files import FileText, read_text
from memoryd.redact import redact
from memoryd.text import content_hash, content_words, same_lesson

if TYPE_CHECKING:
    import apsw

    from memoryd.passes.runner import PassContext

ORDER = ("mistakes", "learnings", "feedback", "session-log")
#: Sections whose older copies of a lesson go to the archive.
DEDUPED = ("mistakes", "learnings")
#: Notebooks whose files are written in one hand-off to a worker thread.
WRITE_BATCH = 25
#: Entries moved (to the archive, or re-dated) per step.
MOVES = 10
#: Moving items hashed per step (redacting their text first: ~0.2 ms an item).
HASHES = 16
TITLES = {"mistakes": "Mistakes", "learnings": "Learnings", "feedback": "Shareholder Feedback",
          "session-log": "Session Log"}

_LOOSE_DATE = re.compile(r"^(\s*[-*+]\s+)(?:\[(\d{4})-(\d{1,2})-(\d{1,2})\]|\(?(\d{4})-(\d{1,2})-"
                         r"(\d{1,2})\)?(?=[:\s]))[:\s]*")


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


@dataclass
class Section:
    heading: str  # the heading line as written
    name: str | None  # a notebook section, or None
    items: list[Item] = field(default_factory=list)  # in the order they will be written
    pieces: list[str | Item] = field(default_factory=list)  # its lines and items, as read
    in_order: bool = False  # written as read (no notebook section, or it has sub-headings)

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
        """The notebook's text: each section's other lines, then its items (a section kept in
        order: both where they were), with a blank line before an item that is no bullet (it
        would run on into the item before it)."""
        parts = ["\n".join(self.preamble).rstrip()] if "".join(self.preamble).strip() else []
        for section in self.sections:
            kept = set(map(id, section.items))
            pieces: list[str | Item] = [
                p for p in section.pieces if isinstance(p, str) or id(p) in kept
            ] if section.in_order else [*section.other, *section.items]
            body = [section.heading]
            previous: Item | None = None
            for piece in pieces:
                if isinstance(piece, str):
                    body.append(piece)
                    previous = None
                    continue
                if previous is not None and not piece.bullet:
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


def is_notebook(text: str) -> bool:
    for line in text.split("\n"):
        heading = read_heading(line)
        if heading and heading[0] == 2 and section_name(heading[1]):
            return True
    return False


def parse(text: str, relative: str) -> Notebook:
    """A notebook's structure: its preamble and ``## `` sections with their items."""
    lines = text.split("\n")
    parsed = parse_memory_file(text, relative)
    starts = {item.line_start: item for item in parsed.items}
    preamble: list[str] = []
    sections: list[Section] = []
    number = 0
    while number < len(lines):
        line = lines[number]
        heading = read_heading(line)
        if heading and heading[0] <= 2 and (heading[0] == 2 or sections):
            name = section_name(heading[1]) if heading[0] == 2 else None
            sections.append(Section(line, name, in_order=name is None))
            number += 1
            continue
        target = sections[-1] if sections else None
        item = starts.get(number + 1)
        if item is not None and target is not None:
            span = lines[item.line_start - 1:item.line_end]
            target.items.append(Item(span, item.date, item.text,
                                     bool(re.match(r"\s*([-*+]|\d+[.)])\s", span[0])),
                                     line=item.line_start, heading=item.heading))
            target.pieces.append(target.items[-1])
            number = item.line_end
            continue
        if target is None:
            preamble.append(line)
        elif line.strip():
            target.pieces.append(line)
        number += 1
    notebook = Notebook(preamble, sections,
                        leading=[(i.text, i.heading) for i in parsed.items
                                 if i.line_start <= len(preamble)])
    for section in sections:
        if section.name and any(read_heading(line) for line in section.other):
            notebook.problems.append(f"section {section.heading.strip()!r} has sub-headings; "
                                     "left in its order")
    return notebook


def normalise(notebook: Notebook) -> list[str]:
    """Section order, date prefixes, newest first. Returns what it fixed."""
    fixed: list[str] = []
    known = [s for s in notebook.sections if s.name]
    ordered = sorted(known, key=lambda s: ORDER.index(s.name))  # type: ignore[arg-type]
    if [id(s) for s in ordered] != [id(s) for s in known]:
        fixed.append("sections put in order")
    notebook.sections = ordered + [s for s in notebook.sections if not s.name]
    for section in ordered:
        for item in section.items:
            match = _LOOSE_DATE.match(item.lines[0]) if item.bullet else None
            if match:
                y, m, d = next(g for g in (match.group(2, 3, 4), match.group(5, 6, 7)) if g[0])
                date = f"{y}-{int(m):02d}-{int(d):02d}"
                if item.date is not None and match.group(2) \
                        and "-".join(match.group(2, 3, 4)) == date:
                    continue  # written as it should be
                item.date = date
                item.lines[0] = f"{match.group(1)}[{item.date}] {item.lines[0][match.end():]}"
                item.rewritten = _rewrite(item)
                fixed.append(f"date prefix of {item.lines[0].strip()[:40]!r}")
        if any(read_heading(line) for line in section.other):
            section.in_order = True
            continue
        undated = [i for i in section.items if i.date is None]
        dated = sorted((i for i in section.items if i.date is not None),
                       key=lambda i: i.date or "", reverse=True)
        if undated + dated != section.items:
            fixed.append(f"{section.heading.strip()} newest first")
            section.items = undated + dated
        for item in undated:
            if item.bullet:
                notebook.problems.append(f"no date: {item.lines[0].strip()[:60]!r}")
    return fixed


def _rewrite(item: Item) -> dict[str, Any]:
    """What the indexer will make of a rewritten item: its entry keeps its id (and history)
    when the pass updates it to this along with the file."""
    parsed = parse_memory_file("## Notes\n" + "\n".join(item.lines), "notebook.md").items[0]
    item.after = parsed.text
    text = redact(parsed.text)
    fields: dict[str, Any] = {"text": text, "hash": content_hash(text)}
    if parsed.date:
        fields["created"] = day_start(parsed.date)
    return fields


def repeats(notebook: Notebook, vectors: Callable[[list[Item]], list[np.ndarray | None]],
            threshold: float) -> list[tuple[str, Item]]:
    """Older copies of a lesson that its section holds a newer copy of — alike by their
    vectors (cosine ≥ ``threshold``) or by their words (Jaccard ≥ 0.7), both a "do" or both a
    "don't" — taken out of the notebook for the archive: (section name, item). The newest
    copy stays, with its date (seed 003's one lesson in several phrasings; consolidation
    leaves a notebook's own entries to this pass). ``vectors``: the items' vectors, None for
    one the index does not hold (then its words decide), asked once for the whole notebook
    (its entries are read for it)."""
    runs = [(section, sorted((i for i in section.items if i.bullet and i.date),
                             key=lambda i: i.date or "", reverse=True))
            for section in notebook.sections if section.name in DEDUPED]
    runs = [(section, dated) for section, dated in runs if len(dated) >= 2]
    every = vectors([item for _, dated in runs for item in dated]) if runs else []
    removed: list[tuple[str, Item]] = []
    offset = 0
    for section, dated in runs:
        found = every[offset:offset + len(dated)]
        offset += len(dated)
        words = [content_words(i.text) for i in dated]
        gone: set[int] = set()
        for a in range(len(dated)):
            if a in gone:
                continue
            for b in range(a + 1, len(dated)):
                if b in gone:
                    continue
                va, vb = found[a], found[b]
                cosine = float(va @ vb) if va is not None and vb is not None else 0.0
                if same_lesson(words[a], words[b], cosine, threshold):
                    gone.add(b)
                    section.items.remove(dated[b])
                    removed.append((section.name, dated[b]))
    return removed


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


def graduate(ctx: PassContext, path: str, uids: set[str], rule_file: Path) -> list[Change]:
    """The changes that move a promoted lesson's bullets (its entries among ``uids``) out of a
    notebook into its archive — seed 001: "Memory entries that graduate to CLAUDE.md get
    deleted from the memory file — keeping both creates noise"; here moved, never deleted —
    the archive's change and the notebook's, or none when the notebook no longer holds them
    as the index read it."""
    notebook_path = Path(path)
    try:
        current = read_text(notebook_path)
    except OSError:
        return []
    if not is_notebook(current.text):
        return []
    notebook = parse(current.text, notebook_path.name)
    entries = _file_entries(ctx, path)
    removed: list[tuple[str, Item]] = []
    for section in notebook.sections:
        for item in [i for i in section.items
                     if (entry := _entry_of(entries, i)) is not None and entry[1] in uids]:
            section.items.remove(item)
            removed.append((section.name or "", item))
    archived = _archived(notebook_path, ctx.run_name, removed, time.time()) if removed else None
    if archived is None:
        return []
    ctx.count("graduated", len(removed))
    why = f"{len(removed)} bullets graduated to {rule_file} as a rule: moved to the archive"
    return _file_changes(ctx, notebook_path, current, notebook.render(), archived,
                         _moving(removed, archived[0]), "graduate", why, why)


def _archived(path: Path, run_name: str, removed: list[tuple[str, Item]],
              when: float) -> tuple[Path, FileText | None, str] | None:
    """The notebook's archive with a new block of ``removed``: its path, the file as read
    (None: no archive yet) and its new text; None when it cannot be read."""
    archive = path.parent / ARCHIVE_DIR / path.name
    try:
        basis = read_text(archive) if archive.exists() else None
    except OSError:
        return None
    return archive, basis, archive_text(basis.text if basis else None, path.name, run_name,
                                        removed, when)


def _moving(removed: list[tuple[str, Item]], archive: Path) -> dict[tuple[str, int],
                                                                     dict[str, Any]]:
    """The entry updates of items moved to the archive, for :meth:`PassContext.entry_updates`."""
    return {(item.hash, item.line): {"source": str(archive), "line_start": None,
                                     "line_end": None, **(item.rewritten or {})}
            for _, item in removed}


def _file_changes(ctx: PassContext, path: Path, current: FileText, text: str,
                  archived: tuple[Path, FileText | None, str] | None,
                  updates: dict[tuple[str, int], dict[str, Any]], action: str, why: str,
                  archive_why: str) -> list[Change]:
    """A notebook's change (carrying the entries that move or change with it: it exists
    before and after, so its undo moves them back) and its archive's, when lines moved."""
    changes = []
    if archived is not None:
        changes.append(file_change(archived[0], archived[1], archived[2], "archive",
                                   archive_why))
    changes.append(file_change(path, current, text, action, why,
                               *ctx.entry_updates(str(path), updates)))
    return [c for c in changes if c is not None]


def _file_entries(ctx: PassContext, path: str) -> dict[int, tuple[int, str, str]]:
    """A notebook's active entries by the line they start on, as the index last read it:
    (rowid, uid, text)."""
    return {line: (rowid, uid, text) for rowid, uid, line, text in ctx.store.db.execute(
        "SELECT id, uid, line_start, text FROM entries WHERE source=? AND status='active'",
        (path,))}


def _entry_of(entries: dict[int, tuple[int, str, str]],
              item: Item) -> tuple[int, str, str] | None:
    """The item's entry: the one on its line, with its text (else the file changed since)."""
    entry = entries.get(item.line)
    return entry if entry is not None and entry[2] == item.text else None


def notebooks(ctx: PassContext) -> list[dict[str, Any]]:
    """The notebook files in the pass's scope: path, agent, source (``--project``: the files
    under the project's directory, such as its ``agents/state/memory/``)."""
    sql, params = ctx.scoped("SELECT path, agent, source FROM files WHERE kind='memory' "
                             "AND pinned=0 AND error IS NULL", project=False)
    if ctx.project:  # a range of paths ('/' sorts right before '0'), not LIKE and its escapes
        root = ctx.project.rstrip("/")
        sql += " AND path > ? AND path < ?"
        params += [root + "/", root + "0"]
    found = []
    for path, agent, source in ctx.store.db.execute(sql + " ORDER BY path", params):
        if f"/{ARCHIVE_DIR}/" in path or is_pinned(path):
            continue
        if ctx.paths is not None and path not in ctx.paths:
            continue
        found.append({"path": path, "agent": agent, "source": source})
    return found


def watched_memory_files(db: apsw.Connection) -> list[tuple[str, bool, str | None]]:
    """Every watched memory file: path, pinned, the problem that kept it out (if any)."""
    return [(path, bool(pinned), error) for path, pinned, error in db.execute(
        "SELECT path, pinned, error FROM files WHERE kind='memory' ORDER BY path")]


def checked_paths(files: list[tuple[str, bool, str | None]], target: Path) -> list[str]:
    """The watched files `memory notebook check TARGET` means: the one TARGET names (through
    symlinks, as the watcher recorded it), or those under a directory, whose notebooks the pass
    then checks. A file that is not a notebook is refused with the reason, instead of a check
    that found "nothing to do". (Off the database thread: it resolves every watched path.)"""
    real = os.path.realpath(target)
    if target.is_dir():
        under = real.rstrip("/") + "/"
        paths = [path for path, _, _ in files if os.path.realpath(path).startswith(under)]
        if not paths:
            raise BadParamsError(f"{target}: no memory file memoryd watches is under it")
        return paths
    for path, pinned, error in files:
        if os.path.realpath(path) == real:
            why = not_a_notebook(Path(path), pinned, error)
            if why is not None:
                raise BadParamsError(f"{target}: {why}")
            return [path]
    raise BadParamsError(f"{target}: not a memory file memoryd watches (see memory sources list)")


def not_a_notebook(path: Path, pinned: bool, error: str | None) -> str | None:
    """Why a watched memory file is not a notebook the pass would check (None: it is one)."""
    if error:
        return f"memoryd could not read it: {error}"
    if pinned or is_pinned(str(path)):
        return "a pinned file (CONTEXT.md, system/), injected whole: not a notebook"
    if f"/{ARCHIVE_DIR}/" in str(path):
        return "an archive of pruned lines, not a notebook"
    try:
        text = read_text(path).text
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if not is_notebook(text):
        return ("not a notebook: it has no ## Mistakes, Learnings, Shareholder Feedback or "
                "Session Log section")
    return None


#: A notebook's file changes pending, their journal numbers, and its new text as known.
Written = tuple[list[Change], list[int], "Known | None"]


@dataclass
class Plan:
    """What the pass will do to one notebook."""

    current: FileText
    notebook: Notebook
    fixed: list[str]
    removed: list[tuple[str, Item]]  # the repeated lessons first, then what the cap pruned
    repeated: int
    archived: tuple[Path, FileText | None, str] | None  # see _archived
    text: str = ""  # the notebook's new text
    parsed: MemoryFile | None = None  # … as the indexer reads it


def plan(path: Path, cap: int, kept_elsewhere: Callable[[], set[str]],
         vectors: Callable[[list[Item]], list[np.ndarray | None]], threshold: float,
         run_name: str, when: float) -> Generator[None, None, Plan | None]:
    """Read, parse, normalise, take out repeated lessons and prune one notebook (None: not a
    notebook, or unreadable), with a slice point between (a notebook over its cap took up to
    20 ms in one step)."""
    try:
        current = read_text(path)
    except OSError:
        return None
    if not is_notebook(current.text):
        return None
    notebook = parse(current.text, path.name)
    yield
    fixed = normalise(notebook)
    yield
    repeated = repeats(notebook, vectors, threshold)
    yield
    removed = repeated + prune(notebook, cap, kept_elsewhere)
    for start in range(0, len(removed), HASHES):  # what moves is found by its hash
        yield
        for _, item in removed[start:start + HASHES]:
            item.hash  # noqa: B018 (computed now, kept)
    archived = _archived(path, run_name, removed, when) if removed else None
    if removed and archived is None:
        return None
    if not fixed and not removed:
        return Plan(current, notebook, fixed, removed, 0, None)
    yield
    text = notebook.render()
    parsed = parse_memory_file(text, path.name)
    if [(i.text, i.heading) for i in parsed.items] != notebook.entries():
        notebook.problems.append("its entries would not stay apart, or not under their "
                                 "headings, if it were rewritten: left as it is")
        return Plan(current, notebook, [], [], 0, None)
    return Plan(current, notebook, fixed, removed, len(repeated), archived, text, parsed)


def run(ctx: PassContext) -> Iterator[Any]:
    """One notebook a step on the database thread (reading and parsing one is ~1 ms), its
    changes recorded pending there; the files of WRITE_BATCH notebooks are then written in one
    hand-off to a worker thread, while the pass plans the next batch and the database thread
    serves requests. (A hand-off per notebook waited behind the queued requests each time,
    ~20 ms a notebook while searches ran; the writes on the database thread were half of the
    pass's time there; waiting for each batch's writes left the thread idle for a third.)"""
    pending: list[Written] = []
    writing: tuple[list[Written], Any] | None = None
    for found in notebooks(ctx):
        yield
        cap = ctx.notebook_cap(found["source"])
        planned = yield from plan(
            Path(found["path"]), cap,
            functools.partial(ctx.kept_elsewhere, found["agent"], found["path"]),
            functools.partial(_vectors, ctx, found["path"]),
            ctx.config.remember.near_duplicate_cosine, ctx.run_name, time.time())
        if planned is not None:
            yield
            changes = _changes(ctx, found, planned, cap=cap)
            numbers = ctx.journal.begin_files(ctx.run, changes) if changes else None
            if numbers is not None:
                known = _known(ctx, found["path"], planned)  # before its entries move
                for change in changes:  # an over-cap notebook moves dozens: a step per MOVES
                    moves = list((change.after or {}).get("entries", {}).items())
                    for start in range(0, len(moves), MOVES):
                        yield
                        ctx.journal.move_entries(dict(moves[start:start + MOVES]))
                ctx.hold(changes)
                pending.append((changes, numbers, known))
            elif changes:
                ctx.files_done(changes, "preview")
        if len(pending) >= WRITE_BATCH:
            if writing is not None:
                yield from _written(ctx, *writing)
            writing = pending, (yield _write(pending))
            pending = []
    if writing is not None:
        yield from _written(ctx, *writing)
    if pending:
        yield from _written(ctx, pending, (yield _write(pending)))


def _vectors(ctx: PassContext, path: str, items: list[Item]) -> list[np.ndarray | None]:
    """The items' vectors: their entries' (by the line they start on, as the index last read
    the file, and the same text) from the vector index; None where it has none."""
    index = ctx.index
    if index is None:
        return [None] * len(items)
    entries = _file_entries(ctx, path)
    rowids = [entry[0] if (entry := _entry_of(entries, i)) is not None else -1 for i in items]
    found = index.vectors_of([r for r in rowids if r >= 0])
    return [found.get(r) for r in rowids]


def _write(pending: list[Written]) -> Any:
    return Offload(swap_groups, ([changes for changes, *_ in pending],), wait=False)


def _written(ctx: PassContext, pending: list[Written], handle: Any) -> Iterator[Any]:
    """Record a batch's writes (applied, or a conflict) once they are done, and index the
    files written (the watcher, reading them, then finds them indexed)."""
    written = yield Collect(handle)
    for (changes, numbers, known), ok in zip(pending, written):
        yield
        ctx.files_done(changes, ctx.journal.finish_files(changes, numbers, ok))
        for change in changes:
            yield
            if known is not None and change.after and change.after["text"] == known.text:
                ctx.index_written(change, known.parsed, known.rowids)
            else:  # its archive, or written with other line endings than parsed
                ctx.index_written(change)


@dataclass
class Known:
    """A notebook's new text, parsed, and the entries of its items (in order, as the index
    holds them before the pass moves any; None when one is not held as read, e.g. its text
    redacted)."""

    text: str
    parsed: MemoryFile
    rowids: list[int] | None


def _known(ctx: PassContext, path: str, planned: Plan) -> Known | None:
    if planned.parsed is None:
        return None
    entries = _file_entries(ctx, path)
    kept = [item for section in planned.notebook.sections for item in section.items]
    leading = planned.parsed.items[:len(planned.parsed.items) - len(kept)]
    found = [entry if (entry := entries.get(i.line_start)) and entry[2] == i.text else None
             for i in leading] + [_entry_of(entries, item) for item in kept]
    rowids = [entry[0] for entry in found if entry is not None]
    return Known(planned.text, planned.parsed, rowids if len(rowids) == len(found) else None)


def _changes(ctx: PassContext, found: dict[str, Any], planned: Plan, *,
             cap: int) -> list[Change]:
    """The file changes of one notebook's plan (none when it is in order and within its cap),
    with the entries that move with them."""
    path = Path(found["path"])
    ctx.count("notebooks")
    for problem in planned.notebook.problems:
        ctx.report(str(path), problem)
    fixed, removed = planned.fixed, planned.removed
    if not fixed and not removed:
        return []
    repeated, pruned = planned.repeated, len(removed) - planned.repeated
    why = "; ".join(fixed + ([f"{repeated} older {'copy' if repeated == 1 else 'copies'} of a "
                              "lesson written again moved to the archive"] if repeated else [])
                    + ([f"{pruned} bullets over the cap of {cap} lines moved to the archive"]
                       if pruned else []))
    updates = _moving(removed, planned.archived[0]) if planned.archived else {}
    updates.update({(item.hash, item.line): item.rewritten
                    for section in planned.notebook.sections for item in section.items
                    if item.rewritten})
    if pruned:
        ctx.count("pruned", pruned)
    if repeated:
        ctx.count("repeats", repeated)
    changes = _file_changes(ctx, path, planned.current, planned.text, planned.archived,
                            updates, "normalise" if not removed else "prune", why,
                            f"{len(removed)} bullets moved from {path.name}")
    if fixed:
        ctx.count("normalised")
    return changes
