"""Editing the user's files safely: compare-and-swap, keeping what makes the file theirs.

Passes edit files that agents and people edit too (notebooks, CLAUDE.md, CONTEXT.md). A change
is computed from the bytes read, and written only if the file still holds exactly those bytes:
otherwise someone else wrote it meanwhile, and the change is left for a later run (their edit is
never lost). A write goes to a temporary file beside the target, with the target's permissions,
fsynced, then renamed over it; a symlinked file is written through to its target, so the link
stays. Line endings (LF or CRLF; in a file of both, each line the change leaves keeps its own,
and new lines take the one most lines have), the presence of a final newline, the owner and
group (where the daemon may set them) and the extended attributes (Linux; ACLs are kept with
them) are kept.

What memoryd must leave as it is, and what it keeps of a file besides its text, is
:mod:`memoryd.passes.file_care`. Special files (FIFOs, devices) are never opened:
:mod:`memoryd.regular_file`.
"""

from __future__ import annotations

import codecs
import logging
import os
import subprocess
import time
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from memoryd.passes.carry_edit import carry_edit
from memoryd.passes.file_care import keep_attributes, refuse_rewrite
from memoryd.regular_file import open_regular, read_regular
from memoryd.store.durable import fsync_directory, write_temporary

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileText:
    """A text file as read: where it really is, its bytes and how its lines end."""

    path: Path  # the file the name leads to (a symlink resolved)
    data: bytes
    mode: int

    @property
    def text(self) -> str:
        """The text with LF line endings (the form passes work on)."""
        return self.data.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n")

    @property
    def crlf(self) -> bool:
        """Whether a new line of this file ends in CRLF: as most of its lines do."""
        crlf = self.data.count(b"\r\n")
        return crlf > self.data.count(b"\n") - crlf

    def encode(self, text: str) -> bytes:
        """New text in this file's conventions: its line endings, its byte-order mark, and a
        final newline iff the file had one (or was empty). Blank lines the file ended with stay
        as many as the new text keeps of them (a forget of the last bullet took the file's
        last blank line with it); none is added. In a file whose lines end both ways, the
        lines the text keeps keep their bytes, and the others end as most do (a notebook with
        two LF lines and the rest CRLF had the two rewritten as CRLF)."""
        had_final = self.data.endswith(b"\n") or not self.data
        kept = min(len(text) - len(text.rstrip("\n")),
                   len(self.text) - len(self.text.rstrip("\n")))
        text = text.rstrip("\n") + ("\n" * max(kept, 1) if had_final and text.strip() else "")
        if self.data.startswith(codecs.BOM_UTF8) and not text.startswith("\ufeff"):
            text = "\ufeff" + text
        crlf = self.data.count(b"\r\n")
        if crlf and self.data.count(b"\n") > crlf:  # lines that end both ways
            return _keeping_endings(self.data, text, self.crlf)
        if crlf:
            text = text.replace("\n", "\r\n")
        return text.encode("utf-8", errors="surrogateescape")


def _keeping_endings(data: bytes, text: str, crlf: bool) -> bytes:
    """``text`` (LF endings) as bytes, each line it keeps of ``data`` as ``data`` has it,
    each other line ending in CRLF if ``crlf``, else LF."""
    old = _lf_lines(data.decode("utf-8", errors="surrogateescape"))
    as_lf = [line[:-2] + "\n" if line.endswith("\r\n") else line for line in old]
    new = _lf_lines(text)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, as_lf, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out += old[i1:i2]
        else:
            out += [line[:-1] + "\r\n" if crlf and line.endswith("\n") else line
                    for line in new[j1:j2]]
    return "".join(out).encode("utf-8", errors="surrogateescape")


def _lf_lines(text: str) -> list[str]:
    """``text`` split after each LF (only there: not at a lone CR, a form feed or U+2028, as
    str.splitlines does)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def read_text(path: Path) -> FileText:
    real = Path(os.path.realpath(path))
    fd = open_regular(real)
    try:
        data = _read_fd(fd) or b""
        mode = os.fstat(fd).st_mode & 0o7777
    finally:
        os.close(fd)
    return FileText(real, data, mode)


def _put_in_place(temporary: Path, real: Path) -> None:
    """Rename a written temporary file over ``real``; on failure it is removed (the new text
    is in the run's change, never left hidden beside the file)."""
    try:
        os.replace(temporary, real)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def replace_if_unchanged(path: Path, expected: bytes | None, new: bytes,
                         mode: int = 0o600, renamed_in: set[Path] | None = None) -> bool:
    """Write ``new`` to ``path`` (through a symlink) if it still holds ``expected`` (None: if it
    does not exist). Returns False, writing nothing, when it changed meanwhile.

    A writer that rewrites the file in place (truncate and write, as most editors and agents'
    write tools do) in the instant of the rename writes into the file the rename replaced:
    see :func:`_keep_lost_writes`. Returns False too when what it wrote there could only be
    kept by giving up ``new``.

    The rename is made durable by fsyncing the directory; with ``renamed_in`` given, the
    directory is added to it instead, for the caller to fsync once for a batch of files."""
    real = Path(os.path.realpath(path))
    old_fd = _open_existing(real)
    try:
        if old_fd is not None:  # first: such a file is left alone whatever it holds
            refuse_rewrite(real, old_fd)
        if _read_fd(old_fd) != expected:
            return False
        real.parent.mkdir(parents=True, exist_ok=True)
        mode = os.fstat(old_fd).st_mode & 0o7777 if old_fd is not None else mode
        temporary = write_temporary(real, new, mode)
        try:
            if old_fd is not None:
                keep_attributes(old_fd, temporary)
            if _current(real) != expected:  # checked again just before the swap
                temporary.unlink()
                return False
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        _put_in_place(temporary, real)
        kept = old_fd is None or _keep_lost_writes(real, old_fd, expected or b"", new, mode)
        _renamed(real.parent, renamed_in)
        return kept
    finally:
        if old_fd is not None:
            os.close(old_fd)


#: Rounds of carrying lost writes over before giving up on a writer that never pauses.
CARRY_ROUNDS = 20
#: A writer's text is taken as settled when two reads this far apart agree (see _settled).
SETTLE_S = 0.005
SETTLE_CHANGES = 20
EMPTY_WAIT_S = 2.0


def _keep_lost_writes(real: Path, replaced_fd: int, replaced: bytes, placed: bytes,
                      mode: int) -> bool:
    """Make sure no write went into a file that a rename of ours replaced (``replaced_fd``,
    which held ``replaced``), and return whether the file still holds our change.

    If a write did, its edit is carried onto the text now in place (the writer may have read
    ours since and written again over it), which is put in place, the file it replaces then
    checked in turn. When their edit touches lines changed since, their text wins, with what
    was written over ours carried onto it. Only when neither can be carried is the text they
    wrote kept beside the file, as ``<name>.memoryd-conflict-<time>``, and logged."""
    ours_replaced, ours_placed = False, True  # whether each text holds our change
    fds: list[int] = []
    try:
        for _ in range(CARRY_ROUNDS):
            if _read_fd(replaced_fd) == replaced:
                return ours_placed
            theirs = _settled(replaced_fd)
            current_fd = _open_existing(real)
            if current_fd is None:
                _keep_beside(real, theirs)  # the file was removed meanwhile
                return ours_placed
            fds.append(current_fd)
            current = _read_fd(current_fd) or b""  # ours, or what was written over it
            merged, ours_merged = carry_edit(replaced, theirs, current), ours_placed
            if merged is None:
                merged, ours_merged = carry_edit(placed, current, theirs), ours_replaced
            if merged is None:
                _keep_beside(real, theirs)
                return ours_placed
            if _current(real) != current:
                continue  # written again meanwhile: carried onto the newer text next round
            temporary = write_temporary(real, merged, mode)
            try:
                keep_attributes(current_fd, temporary)
            except BaseException:
                temporary.unlink(missing_ok=True)
                raise
            _put_in_place(temporary, real)
            replaced_fd, replaced, ours_replaced = current_fd, current, ours_placed
            placed, ours_placed = merged, ours_merged
        log.warning("%s: a writer kept rewriting it while memoryd wrote it; what it wrote "
                    "into the file's old copy may be lost", real)
        return ours_placed
    finally:
        for fd in fds:
            os.close(fd)


def _keep_beside(real: Path, theirs: bytes) -> None:
    stamp = f"{real.name}.memoryd-conflict-{time.strftime('%Y%m%d-%H%M%S')}"
    beside = real.with_name(stamp)
    number = 1
    while beside.exists():  # another in the same second: never over it
        number += 1
        beside = real.with_name(f"{stamp}-{number}")
    _put_in_place(write_temporary(beside, theirs), beside)
    log.warning("%s: an edit written while memoryd wrote the file could not be merged; "
                "it is kept in %s", real, beside)


def _renamed(directory: Path, renamed_in: set[Path] | None) -> None:
    if renamed_in is None:
        fsync_directory(directory)
    else:
        renamed_in.add(directory)


def _open_existing(path: Path) -> int | None:
    """The regular file at ``path``, open (None: there is none); anything else is refused
    (:mod:`memoryd.regular_file`)."""
    try:
        return open_regular(path)
    except FileNotFoundError:
        return None


def _read_fd(fd: int | None) -> bytes | None:
    if fd is None:
        return None
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _settled(fd: int) -> bytes:
    """What a concurrent writer left in a file, once it stopped changing: the same in two reads
    SETTLE_S apart (at most SETTLE_CHANGES changes are followed). A rewrite in place passes
    through an empty file, and a writer descheduled between its truncation and its write
    leaves it empty for a while: an empty file counts as what they left only after
    EMPTY_WAIT_S (taken for their text sooner, it was put in place of ours, and their write
    then went into the file it replaced)."""
    data = _read_fd(fd) or b""
    empty_until = time.monotonic() + EMPTY_WAIT_S
    changes = 0
    while True:
        time.sleep(SETTLE_S)
        again = _read_fd(fd) or b""
        if again != data:
            data, changes = again, changes + 1
            if changes < SETTLE_CHANGES:
                continue
        if data or changes >= SETTLE_CHANGES or time.monotonic() >= empty_until:
            return data


def remove_if_unchanged(path: Path, expected: bytes,
                        renamed_in: set[Path] | None = None) -> bool:
    """Remove ``path`` (a symlink's target) if it still holds ``expected``. Returns False,
    removing nothing, when it changed meanwhile.

    The file is renamed aside first and checked there (the rename is atomic: what is checked
    is what left the name), so that a write in the instant of the removal is seen: one made in
    place (a writer that opened it to rewrite it truncated it then), or a file another writer
    renamed into its place. Then the file goes back, the same file (a writer still holding it
    open writes on into the file at its name), or, when the name has been taken again
    meanwhile, their text is kept beside it (see :func:`_keep_beside`). A writer that opened
    it without truncating and writes only after the check is not seen (as for a replace)."""
    real = Path(os.path.realpath(path))
    fd = _open_existing(real)
    if fd is None:
        return False
    aside = _aside(real)
    try:
        refuse_rewrite(real, fd, removing=True)
        if _read_fd(fd) != expected:
            return False
        try:
            os.rename(real, aside)
        except FileNotFoundError:
            return False
        if not os.path.samestat(os.stat(aside), os.fstat(fd)) or _read_fd(fd) != expected:
            _put_back(aside, real)
            return False
        aside.unlink()
    finally:
        os.close(fd)
    _renamed(real.parent, renamed_in)
    return True


def _aside(real: Path) -> Path:
    """Where :func:`remove_if_unchanged` renames a file it removes, to look at it there."""
    return real.with_name(f".{real.name}.memoryd-removing")


def settle_removal(path: Path, expected: bytes) -> None:
    """What a removal stopped midway (kill -9) left aside: gone if it holds what was to be
    removed (its change has it), else back at its name (someone wrote into it)."""
    real = Path(os.path.realpath(path))
    aside = _aside(real)
    try:
        left = read_regular(aside)
    except FileNotFoundError:
        return
    if left == expected:
        aside.unlink()
    else:
        _put_back(aside, real)


def _put_back(aside: Path, real: Path) -> None:
    """The file renamed aside back at its name, never over a file written there since
    (durably: a crash must not leave it hidden aside)."""
    try:
        os.link(aside, real)
    except FileExistsError:
        _keep_beside(real, aside.read_bytes())
    except OSError:  # a file system without hard links: renamed back, if the name is free
        if os.path.lexists(real):
            _keep_beside(real, aside.read_bytes())
        else:
            os.rename(aside, real)
            fsync_directory(real.parent)
            return
    aside.unlink()
    fsync_directory(real.parent)


def _current(path: Path) -> bytes | None:
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None


def through_links(paths: list[Path]) -> list[str]:
    """The paths that lead through a symlink: the file itself, or a directory above it.
    Each directory is resolved once (realpath of a thousand notebooks held the event loop
    for 45 ms)."""
    resolved: dict[str, bool] = {}
    found = []
    for path in paths:
        absolute = os.path.abspath(path)
        parent = os.path.dirname(absolute)
        if parent not in resolved:
            resolved[parent] = os.path.realpath(parent) != parent
        if resolved[parent] or os.path.islink(absolute):
            found.append(str(path))
    return found


def git_root(path: Path) -> Path | None:
    """The work tree of the git repository holding ``path`` (None outside git)."""
    for directory in (path.parent, *path.parent.parents):
        if (directory / ".git").exists():
            return directory
    return None


def commit(paths: list[Path], message: str, memory_roots: list[Path]) -> str | None:
    """Commit exactly these files (not whatever else is staged) in their repositories, as
    "memoryd" — only repositories that are memory directories (at or below one of
    ``memory_roots``), never a project's own repository; returns why not when it could not."""
    by_root: dict[Path, list[str]] = {}
    for path in paths:
        real = Path(os.path.realpath(path))
        root = git_root(real)
        if root is not None and any(root == top or top in root.parents for top in memory_roots):
            by_root.setdefault(root, []).append(str(real.relative_to(root)))
    problems = []
    for root, names in by_root.items():
        run = _git_commit(root, names, message)
        if run.returncode != 0:
            # files git does not track yet are added first (archives the pass created)
            subprocess.run(["git", "add", "--", *names], check=False, cwd=root,
                           capture_output=True, timeout=30)
            run = _git_commit(root, names, message)
        if run.returncode != 0:
            problems.append(f"{root}: {(run.stderr or run.stdout).strip()[:200]}")
    return "; ".join(problems) or None


def _git_commit(root: Path, names: list[str], message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=memoryd", "-c", "user.email=memoryd@localhost",
         "-c", "commit.gpgsign=false", "commit", "--quiet", "--only", "-m", message, "--",
         *names], check=False, cwd=root, capture_output=True, text=True, timeout=30)
