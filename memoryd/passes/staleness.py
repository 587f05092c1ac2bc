"""The staleness pass: entries that name things their project no longer has are marked stale.

An entry written inside a git repository belongs to that project (``entries.project``). What
it names — paths, identifiers, flags, ``$VARS``, package names (:mod:`memoryd.passes.references`)
— is checked against the project's checkouts (the main one and its worktrees):

- a **path** is there when it is a tracked (or untracked, not ignored) file or directory, or a
  suffix of one (``tests/conftest.py`` finds ``backend/tests/conftest.py``; a bare file name finds
  any file of that name), or exists on disk (an ignored ``.env``);
- a **name** (identifier, flag, variable, package) is there when it is a word of a text file
  of the checkouts (tracked, or untracked and not ignored): files over 1 MB, binary files and
  the project's own memory files (CLAUDE.md and such, indexed as entries: no evidence for
  themselves) are not read. A flag ``--dry-run`` is found as ``dry-run`` or ``dry_run``.

**Only what was there can be gone.** A thing counts against an entry only once it has been
seen in the project (``entry_refs.seen``): a lesson naming ``tomllib`` in a project that never
used it, or a plan naming a file not written yet, is never stale. When a seen thing is missing,
the entry is marked ``stale`` ("gone: `app.py`, `--fast`"); when it is back, the mark is lifted.
Both are a run's changes (``memory pass show``, ``memory undo``); a mark (or lift) that was
undone is not made again for the same reason. Turns of transcripts are history, not claims, and
are not checked.

**Incremental.** Each project's fingerprint (every checkout's HEAD, ``git status`` and the size
and time of the files it lists) is stored with the time of the check. A project whose
fingerprint did not change is skipped, except for the entries written or changed since; an
entry's references are read once and kept (``entry_refs``) until its text changes. A ``full``
run (``memory pass run staleness --full``) does what a first run does, as after a change of the
rules: every project checked, every entry's references read again from its text.

Search hits, ``memory get`` and the MCP tools show the mark; the memory block shows a stale entry
last in its section with the reason, and drops it first when over budget
(:mod:`memoryd.sessions.context`).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memoryd.passes.api import Offload
from memoryd.passes.changes import Change
from memoryd.passes.references import Ref, references
from memoryd.regular_file import read_regular
from memoryd.scheduling import give_way, giving_way
from memoryd.store.query import EntryQuery
from memoryd.store.references import EntryToCheck

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext, Steps

#: Bumped when the rules of memoryd.passes.references change: every entry is read again.
RULES = "1"
#: Kinds whose entries are checked (turns are transcript history).
CHECKED_KINDS = ("fact", "lesson", "feedback", "note", "summary")
MAX_FILE_BYTES = 1_000_000
MAX_LISTED = 5
#: Entries read per query; the pass yields (a slice point) every YIELD_EVERY entries it parses
#: or settles and after every change, so that no step holds the database thread for long
#: (10 entries' references took 11-16 ms of CPU in the bench's runs).
BATCH = 100
YIELD_EVERY = 4
#: Paths of a checkout's listing taken in between two pauses for the searches in flight
#: (memoryd.scheduling): ~4 ms of a core (the 5,000 of the bench's project took ~40 ms at once).
GIVE_WAY_PATHS = 500
#: Entries whose references are collected in one step.
KEYS_AT_ONCE = 2_000
#: First sightings written per transaction.
SEEN_BATCH = 500
#: A project with more text files than this is checked for paths only: its names count as
#: unknown (never marked, never lifted), for reading them all would take minutes.
MAX_TEXT_FILES = 50_000
GIT_TIMEOUT_S = 60.0
#: Words found per checked tree (root → (fingerprint, {word: found})), the newest few.
WORD_CACHE_PROJECTS = 8

_SIMPLE = re.compile(r"[A-Za-z0-9_]+")
_WORD_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
#: Every other byte becomes a space: split() then gives the words.
_SIMPLE_BYTES = bytes(c if c in _WORD_BYTES else 32 for c in range(256))
_COMPOUND_BYTES = bytes(c if c in _WORD_BYTES + b"-." else 32 for c in range(256))
#: How a compound word W stands between spaces once the bytes are translated: "--W", "W." …
_COMPOUND_FORMS = tuple(p + b"W" + s for p in (b"", b"-", b"--", b".") for s in (b"", b".", b"-"))
_word_cache: OrderedDict[str, tuple[str, dict[str, bool]]] = OrderedDict()
_word_cache_lock = threading.Lock()


# -- the working tree (off the database thread) -----------------------------------------

@dataclass
class Checkout:
    path: str
    head: str
    status: bytes


@dataclass
class Fingerprint:
    root: str
    digest: str
    checkouts: list[Checkout]


def _git(cwd: str, *args: str) -> bytes:
    """git in ``cwd``, read-only: no prompt, no index lock taken (``git status`` would refresh
    the index otherwise), and no GIT_DIR or such from the daemon's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return subprocess.run(["git", "-C", cwd, *args], capture_output=True, check=True,
                          timeout=GIT_TIMEOUT_S, env=env).stdout


def fingerprint(root: str) -> Fingerprint | None:
    """The state of a project's checkouts, or None when it is no readable git work tree."""
    if not os.path.isdir(root):
        return None
    try:
        listing = _git(root, "worktree", "list", "--porcelain").decode("utf-8", "surrogateescape")
        checkouts = []
        for block in listing.split("\n\n"):
            fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
            path = fields.get("worktree")
            if not path or "bare" in fields or not os.path.isdir(path):
                continue
            give_way()  # git status stats every file: ~20 ms of a core on 5,000 files
            status = _git(path, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
            checkouts.append(Checkout(path, fields.get("HEAD", ""), status))
    except (OSError, subprocess.SubprocessError):
        return None
    if not checkouts:
        return None
    digest = hashlib.sha256(RULES.encode())
    for checkout in sorted(checkouts, key=lambda c: c.path):
        digest.update(f"\0{checkout.path}\0{checkout.head}\0".encode("utf-8", "surrogateescape"))
        digest.update(checkout.status)
        for _, path, _ in _status(checkout.status):  # a listed file edited again
            try:
                stat = os.lstat(os.path.join(checkout.path, path))
            except OSError:
                continue
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return Fingerprint(root, digest.hexdigest(), checkouts)


def fingerprints(roots: list[str]) -> dict[str, Fingerprint | None]:
    if len(roots) <= 1:
        return {root: fingerprint(root) for root in roots}
    with ThreadPoolExecutor(min(4, len(roots)), thread_name_prefix="memoryd-git") as pool:
        return dict(zip(roots, pool.map(fingerprint, roots), strict=True))


def _status(raw: bytes) -> Iterator[tuple[str, str, str]]:
    """(X, path, Y) of ``git status --porcelain=v1 -z`` (the new path of a rename)."""
    records = raw.split(b"\0")
    number = 0
    while number < len(records):
        record = records[number]
        number += 1
        if len(record) < 4:
            continue
        x, y = chr(record[0]), chr(record[1])
        if x in "RC":
            number += 1  # the old path follows
        yield x, record[3:].decode("utf-8", "surrogateescape"), y


@dataclass
class Tree:
    """What a project's checkouts hold: every suffix of every path (so a reference may name a
    file from any directory down), the checkouts' roots, and the files to read for words."""

    roots: list[str]
    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    texts: list[str] = field(default_factory=list)  # absolute paths, each content once

    def add_path(self, path: str, is_dir: bool = False) -> None:
        parts = path.strip("/").split("/")
        for end in range(len(parts), 0, -1):
            target = self.files if end == len(parts) and not is_dir else self.dirs
            for start in range(end):
                suffix = "/".join(parts[start:end])
                if suffix in target:
                    break  # its shorter suffixes are in already
                target.add(suffix)

    def has_path(self, value: str) -> bool | None:
        """Whether the project has this path; None when it is outside the project."""
        relative = value.rstrip("/")
        if relative.startswith("/"):
            for root in self.roots:
                if relative == root or relative.startswith(root.rstrip("/") + "/"):
                    relative = relative[len(root.rstrip("/")) + 1:]
                    break
            else:
                return None
            if not relative:
                return True
        if relative in self.files or relative in self.dirs:
            return True
        return any(os.path.lexists(os.path.join(root, relative)) for root in self.roots)


def build_tree(found: Fingerprint, skip: set[str]) -> Tree:
    """The tracked and untracked paths of every checkout (a file deleted in the working tree
    is gone even while git still tracks it), and the text files to read (``skip``: absolute
    paths not to read; content shared by checkouts is read once)."""
    tree = Tree([c.path for c in found.checkouts])
    blobs: set[bytes] = set()
    for checkout in found.checkouts:
        changed: set[str] = set()
        deleted: set[str] = set()
        for x, path, y in _status(checkout.status):
            if x == "?" and y == "?":
                if path.endswith("/"):
                    tree.add_path(path, is_dir=True)
                else:
                    tree.add_path(path)
                    changed.add(path)
                    if os.path.join(checkout.path, path) not in skip:
                        tree.texts.append(os.path.join(checkout.path, path))
            elif "D" in (x, y):
                deleted.add(path)
            else:
                changed.add(path)
        listing = _git(checkout.path, "ls-files", "-z", "-s").split(b"\0")
        for record in giving_way(listing, GIVE_WAY_PATHS):
            meta, _, raw = record.partition(b"\t")
            if not raw:
                continue
            mode, sha, _stage = meta.split(b" ")
            path = raw.decode("utf-8", "surrogateescape")
            if path in deleted:
                continue
            tree.add_path(path)
            if mode not in (b"100644", b"100755"):
                continue  # a symlink or a submodule: named, not read
            absolute = os.path.join(checkout.path, path)
            if absolute in skip:
                continue
            if path not in changed:
                if sha in blobs:
                    continue
                blobs.add(sha)
            tree.texts.append(absolute)
    tree.texts = list(dict.fromkeys(tree.texts))
    return tree


def read_words(paths: Iterable[str], wanted: set[str]) -> set[str]:
    """Which of the wanted words occur in these files (text files up to MAX_FILE_BYTES).

    A word is a run of ``[A-Za-z0-9_]``; a compound word (``dry-run``, ``scikit-learn``) is
    such runs joined by ``-`` or ``.``, found whole between other characters (``"--dry-run"``,
    ``dry-run.``). Bytes are translated and split, not matched with a regex: 2-3 times faster."""
    simple = {w.encode() for w in wanted if _SIMPLE.fullmatch(w)}
    compound: dict[bytes, bytes] = {}
    for word in wanted:
        if not _SIMPLE.fullmatch(word):
            for form in _COMPOUND_FORMS:
                compound[form.replace(b"W", word.encode())] = word.encode()
    found: set[bytes] = set()
    total = len(simple) + len(set(compound.values()))
    for path in paths:
        if len(found) == total:
            break
        give_way()
        try:  # a FIFO, socket or device (a symlink to one) is skipped, never waited on
            data = read_regular(path, MAX_FILE_BYTES + 1)
        except OSError:
            continue
        if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
            continue
        if simple:
            found.update(simple.intersection(data.translate(_SIMPLE_BYTES).split()))
        if compound:
            found.update(compound[form] for form in
                         compound.keys() & set(data.translate(_COMPOUND_BYTES).split()))
    return {w.decode() for w in found}


@dataclass
class Checked:
    digest: str
    present: dict[str, bool | None]  # ref key → there (None: cannot tell)
    seconds: float
    files_read: int


def check_project(root: str, keys: set[str], skip: set[str]) -> Checked | None:
    """Whether each referenced thing is in the project now (runs off the database thread).
    Words found before in the same tree are not looked for again."""
    started = time.perf_counter()
    found = fingerprint(root)
    if found is None:
        return None
    try:
        tree = build_tree(found, skip)
    except (OSError, subprocess.SubprocessError):  # a checkout removed meanwhile
        return None
    refs = [Ref.from_key(key) for key in keys]
    with _word_cache_lock:
        cached = _word_cache.get(root)
    known = cached[1] if cached is not None and cached[0] == found.digest else {}
    wanted = {w for ref in refs for w in ref.words()} - set(known)
    read = 0
    if len(tree.texts) > MAX_TEXT_FILES:
        wanted = set()
    if wanted:
        present_words = read_words(tree.texts, wanted)
        read = len(tree.texts)
        known = {**known, **{w: w in present_words for w in wanted}}
    with _word_cache_lock:
        _word_cache[root] = (found.digest, known)
        _word_cache.move_to_end(root)
        while len(_word_cache) > WORD_CACHE_PROJECTS:
            _word_cache.popitem(last=False)
    present: dict[str, bool | None] = {}
    for ref in refs:
        if ref.kind == "path":
            present[ref.key] = tree.has_path(ref.value)
        elif all(w in known for w in ref.words()):
            present[ref.key] = any(known[w] for w in ref.words())
        else:
            present[ref.key] = None
    return Checked(found.digest, present, time.perf_counter() - started, read)


# -- the pass (on the database thread) --------------------------------------------------

@dataclass
class Item:
    """An entry being checked: its references (key → when first seen in the project)."""

    rowid: int
    uid: str
    stale: str | None
    refs: dict[str, float | None]


def reason(gone: list[Ref]) -> str | None:
    """The stale mark: "gone: `a.py`, `--fast`" (at most MAX_LISTED named)."""
    if not gone:
        return None
    labels = [ref.label for ref in sorted(gone)]
    more = f" and {len(labels) - MAX_LISTED} more" if len(labels) > MAX_LISTED else ""
    return "gone: " + ", ".join(labels[:MAX_LISTED]) + more


def _projects(ctx: PassContext) -> list[str]:
    query = EntryQuery().with_project().active().kinds(CHECKED_KINDS)
    if ctx.project is not None:
        query = query.projects([ctx.project])
    return ctx.store.entry_values(query, "project", distinct=True, order="project")


def _state(ctx: PassContext, project: str) -> tuple[str, float] | None:
    return ctx.store.references.project_state(project)


def _memory_files(ctx: PassContext, roots: list[str]) -> set[str]:
    """Memory files inside the checkouts: indexed as entries, so not read for words."""
    return {p for root in roots for p in ctx.store.files.paths_below(root, "memory")}


def _gather(ctx: PassContext, project: str, since: float | None,
            parsed_before: float | None) -> Generator[None, None, list[Item]]:
    """The project's entries to check (those written or changed since ``since``; all when
    None), with their references: read from ``entry_refs`` when the entry has not changed
    since ``parsed_before``, else from its text (and stored, unless a dry run)."""
    items: list[Item] = []
    for kind in CHECKED_KINDS:
        last: tuple[float, int] = (since if since is not None else 0.0, 0)
        while True:
            yield
            rows = ctx.store.references.to_check(project, kind, ctx.agent, last, since, BATCH)
            if not rows:
                break
            last = (rows[-1][3], rows[-1][0])
            items += yield from _with_refs(ctx, rows, parsed_before)
            ctx.count("entries checked", len(rows))
    return items


def _with_refs(ctx: PassContext, rows: list[EntryToCheck],
               parsed_before: float | None) -> Generator[None, None, list[Item]]:
    stored = ctx.store.references.of([r[0] for r in rows])
    items = []
    writes: list[tuple[int, dict[str, float | None], dict[str, float | None]]] = []
    for number, (rowid, uid, text, updated, stale) in enumerate(rows, 1):
        if number % YIELD_EVERY == 0:
            yield
        refs = stored.get(rowid, {})
        if parsed_before is None or updated >= parsed_before:
            old = refs
            refs = {ref.key: old.get(ref.key) for ref in references(text)}
            if refs != old:
                writes.append((rowid, old, refs))
        if refs or stale:
            items.append(Item(rowid, uid, stale, refs))
    if writes and not ctx.dry_run:
        with ctx.store.transaction():
            ctx.store.references.replace(
                [(rowid, key) for rowid, old, refs in writes for key in old if key not in refs],
                [(rowid, key, seen) for rowid, _, refs in writes for key, seen in refs.items()])
    return items


def _undone(ctx: PassContext, uid: str, change: Change) -> bool:
    """Whether the newest staleness change of this entry is this very change, undone."""
    row = ctx.store.runs.newest_of_target(uid, "entry", ("mark stale", "lift stale"),
                                          ("applied", "undone"))
    return row is not None and row[2] == "undone" and row[0] == change.action and \
        row[1] == change.after


def _settle(ctx: PassContext, project: str, items: list[Item],
            present: dict[str, bool | None]) -> Generator[None, None, set[str]]:
    """Mark, lift, and remember what was seen. Returns the ids of the entries changed."""
    now = time.time()
    changed: set[str] = set()
    seen: list[tuple[float, int, str]] = []
    for number, item in enumerate(items):
        if number % YIELD_EVERY == 0:
            yield
            if len(seen) >= SEEN_BATCH:
                _record_seen(ctx, seen)
        gone = []
        for key, first_seen in item.refs.items():
            there = present.get(key)
            if there and first_seen is None:
                seen.append((now, item.rowid, key))
            elif there is False and first_seen is not None:
                gone.append(Ref.from_key(key))
        mark = reason(gone)
        if mark == item.stale:
            continue
        if mark is not None:
            change = Change("entry", item.uid, "mark stale",
                            f"it names what {project} no longer has ({mark})",
                            {"stale": item.stale}, {"stale": mark})
        else:
            change = Change("entry", item.uid, "lift stale",
                            f"what it names is in {project} again", {"stale": item.stale},
                            {"stale": None})
        if _undone(ctx, item.uid, change):
            ctx.count("kept as undone")
            continue
        state = ctx.apply(change)
        if state in ("applied", "preview"):
            ctx.count("marked" if mark is not None else "lifted")
            changed.add(item.uid)
        yield
    _record_seen(ctx, seen)
    return changed


def _record_seen(ctx: PassContext, seen: list[tuple[float, int, str]]) -> None:
    if seen and not ctx.dry_run:
        with ctx.store.transaction():
            ctx.store.references.seen(seen)
    seen.clear()


def run(ctx: PassContext) -> Steps[None]:
    rules_changed = ctx.store.meta("staleness_rules") != RULES
    everything = rules_changed or bool(ctx.extra.get("full"))
    projects = _projects(ctx)
    yield
    found: dict[str, Fingerprint | None] = yield _offload(fingerprints, projects)
    for done, project in enumerate(projects):
        ctx.progress("checking projects", done, len(projects))
        yield
        ctx.count("projects")
        current = found.get(project)
        if current is None:
            ctx.count("projects not in git")
            continue
        state = None if everything else _state(ctx, project)
        unchanged = state is not None and state[0] == current.digest and ctx.agent is None
        started = time.time()
        items = yield from _gather(ctx, project, state[1] if unchanged and state else None,
                                   state[1] if state else None)
        if unchanged and not items:
            ctx.count("projects unchanged")
            continue
        keys: set[str] = set()
        for start in range(0, len(items), KEYS_AT_ONCE):  # all at once: 6 ms at 17k entries
            yield
            keys.update(key for item in items[start:start + KEYS_AT_ONCE] for key in item.refs)
        ctx.count("references", len(keys))
        digest, present = current.digest, {}
        if keys:
            skip = _memory_files(ctx, [c.path for c in current.checkouts])
            checked: Checked | None = yield _offload(check_project, project, keys, skip)
            if checked is None:
                ctx.count("projects not in git")
                continue
            ctx.count("files read", checked.files_read)
            digest, present = checked.digest, checked.present
        changed = yield from _settle(ctx, project, items, present)
        if not ctx.dry_run and ctx.agent is None:
            # after a check of the changed entries only, the tree it saw is not recorded as
            # checked: if it moved meanwhile, the next run checks every entry
            _record(ctx, project, state[0] if unchanged and state else digest,
                    _checked_until(ctx, project, started, changed))
    if rules_changed and not ctx.dry_run and ctx.project is None and ctx.agent is None:
        with ctx.store.transaction():
            ctx.store.set_meta("staleness_rules", RULES)


def _checked_until(ctx: PassContext, project: str, started: float, changed: set[str]) -> float:
    """Until when the project's entries are checked: now, unless an entry was written while
    the pass ran (between its slices) — then from when it started. The pass's own marks
    count as checked."""
    written = ctx.store.entry_values(EntryQuery().projects([project]).active()
                                     .kinds(CHECKED_KINDS).updated_since(started), "uid")
    return started if any(uid not in changed for uid in written) else time.time()


def _record(ctx: PassContext, project: str, digest: str, checked: float) -> None:
    with ctx.store.transaction():
        ctx.store.references.set_project_state(project, digest, checked)


def _offload(fn: Any, *args: Any) -> Any:
    return Offload(fn, args)
