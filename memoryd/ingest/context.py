"""What a transcript's parser needs besides the lines appended since last time.

- **The project its path names** (:func:`cwd_hint`), for formats whose records name none:
  Aider's chat history lives in the project root; Gemini CLI writes the project root into
  ``~/.gemini/tmp/<project>/.project_root`` beside the ``chats/`` directory (an older layout
  named the directory by a hash of the root and wrote no marker: such chats get no project);
  Copilot CLI writes a session's directory into the ``workspace.yaml`` beside its events (its
  first event names it too, in newer versions: that wins); Cline and Roo Code keep each
  task's directory in their task history, ``state/taskHistory.json`` beside ``tasks/``
  (``cwdOnTaskInitialization``; older versions have none, and their first request names it).
- **The start of the file** (:func:`replay`), for formats whose later lines make sense only
  with earlier ones (``needs_context``: the session id is on the first line, or a header
  names the session of the lines below it), and for a file of the ``generic`` format that
  begins with such a header (:func:`has_session_header`: the pi coding agent's sessions).
  After a restart the tailer resumes at its saved offset; for these files the lines before it
  are parsed again first, so the parser is in the state it was in then. Nothing is indexed
  from them (it was, before the restart); the exchange still open at the offset is taken from
  them.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from memoryd.agent_settings import yaml_top_level
from memoryd.ingest.tail import READ_SLICE_BYTES, TailPosition, read_appended
from memoryd.ingest.transcript import TranscriptParser, Turn, needs_context
from memoryd.regular_file import read_regular

#: A Gemini CLI project marker longer than this is not a path.
MARKER_BYTES = 4096
GEMINI_MARKER = ".project_root"
#: The file beside a Copilot CLI session's events that names its directory (``cwd: /path``).
COPILOT_WORKSPACE = "workspace.yaml"
#: The most of a ``generic`` transcript's first line read to tell whether it is a header.
HEADER_BYTES = 64 << 10
#: Cline's and Roo Code's task history, relative to the directory holding ``tasks/``, and the
#: most of it read (a few hundred bytes a task).
TASK_HISTORY = "state/taskHistory.json"
TASK_HISTORY_BYTES = 64 << 20


def cwd_hint(fmt: str, path: str) -> str | None:
    """The project directory ``path`` (a transcript of format ``fmt``) belongs to, when its
    records do not say it; None when unknown."""
    if fmt == "aider":
        return os.path.dirname(path) or None
    if fmt == "copilot":  # session-state/<session>/events.jsonl, its workspace.yaml beside it
        events = Path(path)  # (an older version's session-state/<session>.jsonl has none)
        return _workspace_cwd(events.with_name(COPILOT_WORKSPACE)) \
            if events.name == "events.jsonl" else None
    if fmt == "cline":  # <storage>/tasks/<task>/ui_messages.json
        task = Path(path).parent
        history = task.parent.parent / TASK_HISTORY
        try:
            stat = os.stat(history)
        except OSError:
            return None
        return _task_dirs(str(history), stat.st_mtime_ns, stat.st_size).get(task.name)
    if fmt == "gemini":
        parts = Path(path).parts
        if "chats" not in parts:
            return None
        index = len(parts) - 1 - parts[::-1].index("chats")
        marker = Path(*parts[:index]) / GEMINI_MARKER
        try:
            data = read_regular(marker, MARKER_BYTES)
        except OSError:
            return None
        text = data.decode("utf-8", errors="replace").strip()
        return text if text.startswith("/") and "\n" not in text else None
    return None


@lru_cache(maxsize=8)
def _task_dirs(history: str, mtime_ns: int, size: int) -> dict[str, str]:
    """Each task's absolute directory in a Cline task history (a JSON array of ``{id,
    cwdOnTaskInitialization?, …}``), read once per version of the file (``mtime_ns``,
    ``size``): an import reads it for every task."""
    try:
        items = json.loads(read_regular(history, TASK_HISTORY_BYTES))
    except (OSError, ValueError, RecursionError):
        return {}
    return {item["id"]: item["cwdOnTaskInitialization"] for item in
            (items if isinstance(items, list) else [])
            if isinstance(item, dict) and isinstance(item.get("id"), str)
            and isinstance(item.get("cwdOnTaskInitialization"), str)
            and item["cwdOnTaskInitialization"].startswith("/")}


def _workspace_cwd(path: Path) -> str | None:
    """The absolute ``cwd`` a Copilot CLI ``workspace.yaml`` names; None when none."""
    try:
        data = read_regular(path, MARKER_BYTES)
    except OSError:
        return None
    cwd = yaml_top_level(data.decode("utf-8", errors="replace")).get("cwd")
    return cwd if isinstance(cwd, str) and cwd.startswith("/") else None


def reads_from_start(fmt: str, path: str) -> bool:
    """Whether the transcript ``path`` (of format ``fmt``) is read again from its start after a
    restart (:func:`replay`): its format's later lines need the earlier ones, or it is a
    ``generic`` one whose first line is a session header (:func:`has_session_header`)."""
    return needs_context(fmt) or (fmt == "generic" and has_session_header(path))


def has_session_header(path: str) -> bool:
    """Whether the file's first line is a pi session header, ``{"type": "session", "id": …,
    "cwd": …}`` (no ``role``): it names the session and the directory of every line below it,
    which name neither."""
    try:
        data = read_regular(path, HEADER_BYTES)
    except OSError:
        return False
    first = data.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)
    if len(first) < 2:
        return False  # no complete first line yet (or one too long to be a header)
    try:
        record = json.loads(first[0])
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get("type") == "session" \
        and "role" not in record


def replay(path: str, position: TailPosition, parser: TranscriptParser,
           max_line_bytes: int) -> list[Turn] | None:
    """Feed ``parser`` the lines of ``path`` before ``position`` (the file as the tailer left
    it); the turns of the exchange still open there. None when the file is no longer the one
    read then (replaced or truncated): the tailer starts over, and record ids dedupe."""
    done = TailPosition(position.device, position.inode, 0)
    turns: list[Turn] = []
    while done.offset < position.offset:
        read = read_appended(Path(path), done, max_line_bytes,
                             slice_bytes=min(READ_SLICE_BYTES, position.offset - done.offset),
                             text=bool(getattr(parser, "text_lines", False)))
        same = (read.position.device, read.position.inode) == (position.device, position.inode)
        if read.restarted or not same or read.position.offset <= done.offset:
            return None
        for line in read.lines:
            turns.extend(parser.feed(line))
        done = read.position
    turns.extend(parser.flush())
    last_user = max((i for i, t in enumerate(turns) if t.role == "user"), default=0)
    return turns[last_user:]
