"""The memory tools of seed 000: list, read, write, replace and insert, confined to one agent's
memory directory.

Paths are relative to the directory; absolute paths, ``..`` and symlinks that lead outside it
are refused. A write is the passes' safe write (memoryd.passes.user_files): computed from the
bytes read and made only if the file still holds them (compare-and-swap: an edit saved
meanwhile fails the request, FileChangedError, and is kept), atomic (a temporary file beside
it, fsynced, renamed, the directory fsynced), keeping the file's mode, owner and extended
attributes; an edit written into the file the rename replaced is carried onto the new text. A
file memoryd leaves as it is (held open for writing, hard-linked, read-only, immutable:
memoryd.passes.file_care) is not written, with the reason. The text given keeps the file's
conventions: its line endings (CRLF or LF) and its byte-order mark, after which an insert at the
top goes. Each write is kept as a version (redacted) of the bytes written: a delta from the text
before (memoryd.store.file_versions), so nothing is lost and the versions stay small, appended to
the agent's history archive before it commits (memoryd.store.file_history), so a rebuild of the
index restores it. The watcher indexes what is written like any other memory file.
"""

from __future__ import annotations

import codecs
import errno
import logging
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memoryd.errors import (
    BadParamsError,
    ForbiddenError,
    NotFoundError,
    UnavailableError,
    WriteRefusedError,
)
from memoryd.ingest.markdown import parse_memory_file
from memoryd.names import MAX_PATH_BYTES, path_problem
from memoryd.passes.file_care import FileChangedError, NotRewrittenError
from memoryd.passes.user_files import (
    FileText,
    read_text,
    remove_if_unchanged,
    replace_if_unchanged,
)
from memoryd.provenance import person_only
from memoryd.redact import redact
from memoryd.regular_file import SpecialFileError
from memoryd.server.params import Params
from memoryd.settings import Settings
from memoryd.store.archive import AgentArchive
from memoryd.store.database import Store
from memoryd.store.durable import DISK_ERRORS, REFUSED_WRITE_ERRNOS, refusal
from memoryd.store.file_history import append_delta
from memoryd.store.file_versions import record_version
from memoryd.store.thread import DatabaseThread
from memoryd.text import utf8_name

log = logging.getLogger(__name__)

MAX_FILE_CHARS = 1_000_000
BOM = "\ufeff"
MAX_LIST = 1000
#: Directories a path may go down (mkdir and the watcher walk them one by one).
MAX_DEPTH = 64


class MemoryFiles:
    def __init__(self, store: Store, pattern: str, history: AgentArchive, *,
                 human: bool = True, writer: str | None = None) -> None:
        """``pattern``: the memory directory with an ``{agent}`` placeholder; ``history``:
        the history archives every version is appended to (memoryd.store.file_history);
        ``human``: a person is writing (only a person changes a file's Feedback section);
        ``writer``: who writes, as the file's versions name them (``designer (mcp)``;
        memoryd.provenance: the lines of a file an agent's tools wrote are that agent's
        words)."""
        self.store = store
        self.pattern = pattern
        self.history = history
        self.human = human
        self.writer = writer

    def root(self, agent: str) -> Path:
        return Path(self.pattern.replace("{agent}", agent)).expanduser()

    def resolve(self, agent: str, relative: str, *, must_exist: bool = True) -> Path:
        candidate = _relative_path(relative)
        root = self.root(agent)
        if len(os.fsencode(root / candidate)) > MAX_PATH_BYTES:
            raise BadParamsError(f"path is too long once in the memory directory ({root}): "
                                 f"the file system takes {MAX_PATH_BYTES} bytes at most")
        if not must_exist:  # a write; a read of a directory not made yet finds no file
            try:
                root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise refused(relative, agent, exc) from None
        target = _inside(relative, root.resolve(), (root / candidate).resolve())
        if must_exist and not target.is_file():
            raise NotFoundError(f"no file {relative!r} in {agent}'s memory directory")
        return target

    def list(self, agent: str) -> dict[str, Any]:
        root = self.root(agent)
        files = []
        if root.is_dir():
            real_root = root.resolve()
            for top, dirs, names in os.walk(root, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".git"))
                for name in sorted(names):
                    path = Path(top) / name
                    # a name that is not UTF-8 cannot be sent, nor named to read it (the
                    # index's status names the file: not indexed, rename it)
                    if not utf8_name(str(path)) or not path.resolve().is_relative_to(
                            real_root) or not path.is_file():
                        continue
                    stat = path.stat()
                    files.append({"path": str(path.relative_to(root)), "bytes": stat.st_size,
                                  "modified": stat.st_mtime})
                    if len(files) == MAX_LIST:
                        return {"root": str(root), "files": files}
        return {"root": str(root), "files": files}

    def read(self, agent: str, relative: str) -> dict[str, Any]:
        path = self.resolve(agent, relative)
        text = path.read_text("utf-8", errors="replace")
        return {"path": relative, "text": text, "lines": len(text.splitlines())}

    def write(self, agent: str, relative: str, text: str) -> dict[str, Any]:
        if len(text) > MAX_FILE_CHARS:
            raise BadParamsError(f"text is {len(text)} characters; the limit is {MAX_FILE_CHARS}")
        path = self.resolve(agent, relative, must_exist=False)
        basis = _read_basis(relative, path) if path.is_file() else None
        if basis is not None:  # a text read (LF, with its mark) and written back is as it was
            text = _line_breaks(basis, text)
            if basis.data.startswith(codecs.BOM_UTF8) and text and text[0] != BOM:
                text = BOM + text
        before = _text(basis)
        self._check_feedback(relative, before or "", text)
        written = self._change(agent, relative, path, "file.write", basis, text)
        return {"path": relative, "bytes": len(written), "created": basis is None}

    def replace(self, agent: str, relative: str, old: str, new: str) -> dict[str, Any]:
        if not old:
            raise BadParamsError("old must not be empty")
        path = self.resolve(agent, relative)
        basis = _read_basis(relative, path)
        before = _text(basis) or ""
        wanted = _line_breaks(basis, old)  # `read` shows a CRLF file's lines ending in LF
        count = before.count(wanted)
        if not count and wanted != old:  # a file with both endings: its lines as given
            wanted, count = old, before.count(old)
        if count != 1:
            raise BadParamsError(
                f"old text must match exactly once in {relative!r}; found {count} matches"
                + ("" if count else " (check spacing and line breaks)"))
        after = before.replace(wanted, _line_breaks(basis, new), 1)
        self._check_feedback(relative, before, after)
        self._change(agent, relative, path, "file.replace", basis, after)
        return {"path": relative, "replaced": 1}

    def insert(self, agent: str, relative: str, line: int, text: str) -> dict[str, Any]:
        path = self.resolve(agent, relative)
        basis = _read_basis(relative, path)
        before = _text(basis) or ""
        mark = BOM if before.startswith(BOM) else ""  # the text goes after it
        lines = before[len(mark):].splitlines(keepends=True)
        if not 0 <= line <= len(lines) + 1:
            raise BadParamsError(f"line must be between 0 and {len(lines) + 1}; got {line}")
        newline = _line_breaks(basis, "\n")
        index = max(line - 1, 0) if line else 0
        if lines and index == len(lines) and not lines[-1].endswith("\n"):
            lines[-1] += newline
        inserted = _line_breaks(basis, text if text.endswith("\n") else text + "\n")
        after = mark + "".join(lines[:index]) + inserted + "".join(lines[index:])
        self._check_feedback(relative, before, after)
        self._change(agent, relative, path, "file.insert", basis, after)
        return {"path": relative, "line": index + 1, "lines": len(after.splitlines())}

    def _check_feedback(self, relative: str, before: str, after: str) -> None:
        """An agent's tools may not put words in the user's mouth, nor take them out: a line
        the indexer reads as feedback (a ``Feedback`` section) is added, changed or removed by
        a person only (memoryd.provenance.person_only: the rule forget and supersede ask)."""
        if self.human:
            return
        old = Counter(i.text for i in parse_memory_file(before, relative).items
                      if person_only(i.kind))
        new = Counter(i.text for i in parse_memory_file(after, relative).items
                      if person_only(i.kind))
        removed, added = list((old - new).elements()), list((new - old).elements())
        if removed:
            raise ForbiddenError(
                f"{relative!r}: {removed[0][:80]!r} is the user's feedback (a Feedback "
                "section), their own words; only a person changes or removes it. Leave the "
                "line as it is")
        if added:
            raise ForbiddenError(
                f"{relative!r}: {added[0][:80]!r} would be feedback (a Feedback section), the "
                "user's own words; only a person writes those. Write it under Learnings or as "
                "a note")

    def _change(self, agent: str, relative: str, path: Path, action: str,
                basis: FileText | None, after: str) -> bytes:
        """The file replaced with ``after`` and its version recorded, or neither; returns the
        bytes written. ``basis``: the file as the change was computed from it (None: there was
        none); written only if it still holds those bytes (the passes' compare-and-swap), else
        FileChangedError. The version is appended to the history archive (fsynced) and its
        transaction commits only after the file is written; a commit that fails puts the old
        bytes back (if nobody wrote the file since) and takes the version back off the
        archive."""
        data = after.encode("utf-8", "surrogateescape")
        old = basis.data if basis is not None else None
        written = False
        appended: tuple[int, int] | None = None
        try:
            try:
                with self.store.transaction():
                    record = self._record_version(agent, relative, action, _text(basis), after)
                    appended = append_delta(self.store, self.history, agent, record)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    if not replace_if_unchanged(path, old, data):
                        raise FileChangedError(
                            f"not written: {relative!r} in {agent}'s memory directory changed "
                            "while memoryd wrote it (another program saved it meanwhile); their "
                            "text is kept and nothing of this request was: read it again and "
                            "retry")
                    written = True
            except BaseException:
                if appended is not None:
                    self.history.cut(agent, *appended)
                raise
        except (OSError, *DISK_ERRORS) as exc:
            if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
                raise BadParamsError(f"path is too long for the file system: {exc.strerror}") \
                    from None
            if isinstance(exc, SpecialFileError):
                raise BadParamsError(f"{relative!r} is {exc.strerror}; give a file's path") \
                    from None
            if isinstance(exc, OSError) and exc.errno not in REFUSED_WRITE_ERRNOS:
                raise
            if written and not self._put_back(path, data, old):
                raise UnavailableError(
                    f"{relative!r} was written to {agent}'s memory directory, but memoryd "
                    f"could not record the change ({exc}); the previous text is not in its "
                    "history") from None
            raise refused(relative, agent, exc) from None
        return data

    @staticmethod
    def _put_back(path: Path, written: bytes, old: bytes | None) -> bool:
        """The file as it was before a write whose version could not commit, if it still
        holds what was written (an edit saved since stays); False if it was not put back."""
        try:
            if old is None:
                return remove_if_unchanged(path, written)
            return replace_if_unchanged(path, written, old)
        except OSError as exc:
            log.critical("Could not put back %s after its version failed: %s", path, exc)
            return False

    def _record_version(self, agent: str, relative: str, action: str, before: str | None,
                        after: str) -> dict[str, Any]:
        """The file is the agent's; its versions keep the texts redacted (the same
        text always redacts the same way, so the deltas chain). Within the caller's
        transaction; returns the history archive's record of it."""
        before = redact(before) if before is not None else None
        after = redact(after)
        # a delta, not two whole copies (memoryd.store.file_versions)
        return record_version(self.store, agent, relative, action, before, after, time.time(),
                              actor=self.writer)


def refused(relative: str, agent: str, exc: BaseException) -> UnavailableError:
    """The file system (or the versions' database) refused a write that was itself fine
    (WriteRefusedError: counted for `memory status`), or the file is one memoryd leaves as it
    is (memoryd.passes.file_care: the reason)."""
    if isinstance(exc, NotRewrittenError):
        why = getattr(exc, "strerror", None) or exc
        return UnavailableError(f"not written: {relative!r} in {agent}'s memory directory is "
                                f"left as it is: {why}; nothing of this request was kept")
    return WriteRefusedError(f"not written: cannot write {relative!r} in {agent}'s memory "
                             f"directory ({refusal(exc)}); nothing of this request was kept")


def _relative_path(relative: str) -> Path:
    """The path as given, when it is one a memory directory may hold (relative, inside it,
    not too deep)."""
    if not relative or "\0" in relative:
        raise BadParamsError("path must be a non-empty relative path")
    problem = path_problem(relative)
    if problem is not None:
        raise BadParamsError(f"path {problem}")
    if relative.endswith("/"):
        raise BadParamsError(f"{relative!r} names a directory; give a file's path")
    candidate = Path(relative)
    if candidate.is_absolute():
        raise ForbiddenError(
            f"{relative!r} is absolute; paths are relative to the memory directory")
    if ".." in candidate.parts:
        raise ForbiddenError(f"{relative!r} leaves the memory directory ('..' is not allowed)")
    if len(candidate.parts) > MAX_DEPTH:
        raise BadParamsError(f"path is {len(candidate.parts)} names deep; the limit is "
                             f"{MAX_DEPTH}")
    return candidate


def _inside(relative: str, real_root: Path, target: Path) -> Path:
    """``target`` (resolved), when it is a file's place inside the memory directory."""
    if target != real_root and real_root not in target.parents:
        raise ForbiddenError(f"{relative!r} leads outside the memory directory (a symlink)")
    if target == real_root or target.is_dir():
        raise BadParamsError(f"{relative!r} is a directory; give a file's path")
    for parent in target.parents:
        if parent == real_root:
            break
        if parent.exists() and not parent.is_dir():
            raise BadParamsError(f"{relative!r}: {parent.name!r} is a file, not a directory")
    if len(os.fsencode(target)) > MAX_PATH_BYTES:
        raise BadParamsError("path is too long once in the memory directory (a symlink "
                             f"leads deeper): the file system takes {MAX_PATH_BYTES} bytes "
                             "at most")
    return target


class FileMethods:
    """The memory tools' wire methods (``file_*``), confined to the agent's memory directory."""

    def __init__(self, db: DatabaseThread, store: Store, settings: Settings) -> None:
        self.db = db
        self.store = store
        self.settings = settings

    def methods(self) -> dict[str, Any]:
        return {name: self.m_file for name in
                ("file_list", "file_read", "file_write", "file_replace", "file_insert")}

    async def m_file(self, params: Params) -> dict[str, Any]:
        agent = params.agent()
        assert agent is not None
        caller = params.caller
        files = MemoryFiles(self.store, self.settings.config.memory_dir,
                            AgentArchive(self.settings.config.history_dir),
                            human=caller is None or caller.human,
                            writer=caller.writer if caller is not None and caller.agent else None)
        if params.method == "file_list":
            return await self.db(files.list, agent)
        path = params.text("path", required=True, max_len=4096)
        assert path is not None
        if params.method == "file_read":
            return await self.db(files.read, agent, path)
        if params.method == "file_write":
            if "text" not in params.raw:
                raise BadParamsError("file_write: text is required (it may be empty)")
            text = params.text("text", default="", max_len=1_000_000) or ""
            result = await self.db(files.write, agent, path, text)
        elif params.method == "file_replace":
            old = params.text("old", required=True, max_len=1_000_000) or ""
            new = params.text("new", default="", max_len=1_000_000) or ""
            result = await self.db(files.replace, agent, path, old, new)
        else:
            line = params.integer("line", default=0, low=0, high=10_000_000)
            text = params.text("text", required=True, max_len=1_000_000) or ""
            result = await self.db(files.insert, agent, path, line, text)
        return result


def _read_basis(relative: str, path: Path) -> FileText:
    """The file to edit, as read: its bytes (those that are not UTF-8 kept as surrogate
    escapes by :func:`_text`, so that an edit elsewhere writes them back as they were; ``read``
    shows them as U+FFFD), its mode and its line endings."""
    try:
        return read_text(path)
    except SpecialFileError as exc:
        raise BadParamsError(f"{relative!r} is {exc.strerror}; give a file's path") from None


def _text(basis: FileText | None) -> str | None:
    return basis.data.decode("utf-8", "surrogateescape") if basis is not None else None


def _line_breaks(basis: FileText | None, text: str) -> str:
    """Text the caller gives, with its line breaks the file's: CRLF in a file with CRLF line
    endings (the passes' rule: FileText.crlf), else LF; as given for a new file."""
    if basis is None:
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n" if basis.crlf else "\n")
