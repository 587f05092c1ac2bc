"""The checks of the sources' files (`memory doctor`, the health line of `memory status`):
the watched sources and the watcher, the projects entries are filed under and sessions ran in,
the generic logs read without a session, and the files with a problem (skipped, or read with
malformed lines left out). memoryd.server.health runs the checks.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from dataclasses import dataclass
from typing import Any

from memoryd.agent_sources import default_sources
from memoryd.ingest.watch_loops import WatchTrouble
from memoryd.ingest.watcher import Watcher
from memoryd.passes.scope import missing_projects
from memoryd.project import repository_of
from memoryd.server.health_words import (
    OK,
    PROBLEM,
    SHOWN_FILES,
    SKIPPED_LINES,
    WARNING,
    check,
    dir_links_said,
    skipped_lines,
)
from memoryd.server.parts import Parts
from memoryd.settings import Settings
from memoryd.sources_file import managed_entries, resolved_root
from memoryd.store.scope import projects_of_entries

#: How far back the "projects" check looks for sessions in projects no source watches.
SESSIONS_LOOKED_AT_S = 30 * 86400
#: How long the "sources" check tells of files the watcher did not report.
UNSEEN_SHOWN_S = 24 * 3600


@dataclass(frozen=True)
class FileProblems:
    count: int  # indexed files whose row holds an error other than skipped lines
    shown: list[tuple[str, str]]  # the first SHOWN_FILES of them: path, error
    indexed: set[str]  # of the sources' last problem paths, those the index holds
    #: the files with malformed lines skipped: path, error, when it was last indexed, and
    #: whether any of it was read (an entry came from it)
    lines: list[tuple[str, str, float, bool]]


class SourceChecks:
    def __init__(self, settings: Settings, parts: Parts, watcher: Watcher | None) -> None:
        self.settings = settings
        self.parts = parts
        self.watcher = watcher

    async def sessions(self) -> dict[str, Any]:
        """Generic logs read before a file was its session (2026-11-30): their exchanges have
        none, so their hits are shown without the turns around them until the logs are read
        again."""
        watcher = self.watcher
        generic = [s.name for s in watcher.sources if s.format == "generic"] if watcher else []
        chunks, files = await self.parts.db(self.parts.store.sessionless_chunks, generic)
        if not chunks:
            return check("sessions", OK, "every exchange of a transcript has its session")
        return check("sessions", WARNING, f"{chunks} exchanges of {files} generic logs have no "
                     "session (read before 2026-11-30, when a log whose lines name none became "
                     "one session a file): their hits are shown without the turns around them",
                     "read them again: stop memoryd, run `memoryd reindex`, start it")

    def sources(self) -> dict[str, Any]:
        watcher = self.watcher
        if watcher is None:
            return check("sources", OK, "ingestion has not started yet")
        builtin = {s.name for s in default_sources()} | {"memoryd-agents"}
        #: what is not there, its name for `memory sources remove`, whether it is a project
        #: root, whether it is a file
        missing: list[tuple[str, str, bool, bool]] = []
        absent = 0
        for source in watcher.sources:
            if watcher.present(source):  # a project's files count when the project is there
                continue
            root = watcher.project_roots.get(source.name)
            if root is not None:
                missing.append((f"project {root}", root, True, False))
            elif source.name in builtin:
                absent += 1  # that agent is not installed here: normal
            else:
                fixed = source.root(watcher.home)
                missing.append((f"{source.name}: {fixed}", source.name, False,
                                fixed.exists()))
        missing = list(dict.fromkeys(missing))  # a project's files share one root
        present = len(watcher.sources) - absent - len(missing)
        if missing:
            return self._missing(missing)
        ones = "one" if absent == 1 else "ones"
        detail = f"{present} watched sources present" + (
            f"; {absent} built-in {ones} absent (their agents are not installed here)"
            if absent else "") + dir_links_said(watcher.symlinks.dirs)
        trouble = watcher.trouble
        if trouble is not None:
            return watcher_trouble(trouble, detail)
        unseen = watcher.unseen
        if unseen is not None and time.time() - unseen.at < UNSEEN_SHOWN_S:
            every = watcher.config.watch.full_scan_interval_s
            at = time.strftime("%H:%M", time.localtime(unseen.at))
            return check(
                "sources", WARNING, f"{detail}; the rescan at {at} found "
                f"{unseen.count} file{'' if unseen.count == 1 else 's'} changed that the "
                f"watcher had not reported ({unseen.example}): indexed then, not as they "
                "changed", "most often the system's limit on watched directories is reached: "
                "raise it (Linux: `sudo sysctl fs.inotify.max_user_watches=524288`, and the "
                "same line in /etc/sysctl.d/ to keep it), and memoryd watches them again after "
                "its next rescan; a network file system tells no watcher of changes made on "
                "other machines, and a burst of changes (a checkout of thousands of files) can "
                "overflow what the system queues for a watcher. Until then such changes wait "
                f"for the rescan every {every:g} s")
        unread = [link for link in watcher.symlinks.dirs
                  if link.why_not is not None and link.read_as is None]
        if unread:  # its files are indexed nowhere
            return check("sources", WARNING, detail, "the reason says what to do; `memory "
                         "status --sources` lists the symlinked directories")
        return check("sources", OK, detail)

    def _missing(self, missing: list[tuple[str, str, bool, bool]]) -> dict[str, Any]:
        """The sources check of sources whose directory is not there (or is a file: a glob's
        fixed part, ``~/notes/a.md/*.md``, that names one), each with how to fix it:
        `memory sources remove` for those it added, an edit of config.toml for the others
        (`memory sources remove` says "no source named" of a project root written there)."""
        config_file = self.settings.config.config_file
        names, roots = managed_entries(self.settings.config)
        told = [(what, name, resolved_root(name) in roots if project else name in names, is_file)
                for what, name, project, is_file in missing]
        gone = [(what, name, managed) for what, name, managed, is_file in told if not is_file]
        files = [(what, name, managed) for what, name, managed, is_file in told if is_file]
        detail = "; ".join(
            [*(["does not exist: " + "; ".join(what for what, _, _ in gone)] if gone else []),
             *(["is a file, not a directory: " + "; ".join(what for what, _, _ in files)]
               if files else [])])
        fixes = []
        removable = [name for _, name, managed in gone if managed]
        if removable:
            moved = any(what.startswith("project ") for what, _, managed in gone if managed)
            fixes.append(("a repository moved or renamed: `memory sources add --project NEW`, "
                          "and `memory move-project OLD NEW` for the entries stored in it; else "
                          if moved else "") + "create it, or stop watching it: " + "; ".join(
                f"memory sources remove {shlex.quote(name)}" for name in removable))
        by_hand = [name for _, name, managed in gone if not managed]
        if by_hand:
            fixes.append(f"create it, or stop watching it: {', '.join(by_hand)} "
                         f"{'is' if len(by_hand) == 1 else 'are'} defined in {config_file}; "
                         "edit it there")
        if files:
            fixes.append("give the source a path whose part before the first wildcard is a "
                         "directory: " + "; ".join(
                             f"`memory sources remove {shlex.quote(name)}`, then add it again"
                             if managed else f"{name} is defined in {config_file}; edit it there"
                             for _, name, managed in files))
        return check("sources", PROBLEM, detail, ". ".join(fixes))

    async def projects(self) -> dict[str, Any]:
        """The projects entries are filed under whose directory is gone (a repository renamed,
        moved or deleted: no session starts there, so no memory block shows them), and the
        projects sessions ran in lately that no project root watches (their instruction
        files are not read, and their memory block holds only what was stored there)."""
        store = self.parts.store
        filed = await self.parts.db(projects_of_entries, store)
        ran = await self.parts.db(store.sessions.projects_since,
                                  time.time() - SESSIONS_LOOKED_AT_S)
        gone = await asyncio.to_thread(missing_projects, filed)
        watcher = self.watcher
        watched = set(watcher.projects.values()) | set(watcher.project_roots.values()) \
            if watcher is not None else set()
        unwatched = await asyncio.to_thread(
            # a repository: a session outside git (in /tmp, in HOME) has no instruction files
            # of a project to read, and adding it as a root would walk the whole directory
            lambda: [p for p in sorted(ran)
                     if p not in watched and os.path.isdir(p) and repository_of(p) is not None])
        said, fixes = [], []
        if gone:
            said.append("entries filed under a project directory that no longer exists: "
                        + "; ".join(f"{project} ({n} entr{'y' if n == 1 else 'ies'})"
                                    for project, n in gone.items()))
            fixes.append("if the repository moved or was renamed: `memory move-project OLD "
                         "NEW` moves them (`memory move-project OLD --global` to every "
                         "project)")
        if unwatched:
            shown = unwatched[:SHOWN_FILES]
            said.append("sessions ran lately in projects no source watches (their CLAUDE.md, "
                        "AGENTS.md, … are not read): " + ", ".join(shown)
                        + (f" and {len(unwatched) - len(shown)} more"
                           if len(unwatched) > len(shown) else ""))
            fixes.append("; ".join(f"memory sources add --project {shlex.quote(p)}"
                                   for p in shown))
        if said:
            return check("projects", WARNING, "; ".join(said), "; ".join(fixes))
        return check("projects", OK, f"{len(filed)} projects hold entries, each there; every "
                     "project sessions ran in lately is watched")

    async def file_problems(self) -> FileProblems:
        """The files with a problem now, from the index (their row's error: skipped, or read
        with something left out), and which of the sources' last problems name a file the
        index holds (whose row says whether it is still one)."""
        watcher = self.watcher
        paths = [s.last_error_path for s in watcher.stats.values() if s.last_error_path] \
            if watcher is not None else []
        return await self.parts.db(self._file_problems, paths)

    def _file_problems(self, paths: list[str]) -> FileProblems:
        store = self.parts.store
        assert store is not None
        count, shown, lines = store.files.problems(SKIPPED_LINES, SHOWN_FILES)
        indexed = {p for p in paths if store.files.has(p)}
        return FileProblems(count, shown, indexed, lines)

    def skipped(self, files: FileProblems) -> dict[str, Any]:
        """Every file with a problem (from the index: each one named, and still known after a
        restart, which reads unchanged files again no more), and files refused before they
        reached the index; then transcripts with malformed lines (skipped_lines)."""
        watcher = self.watcher
        if watcher is None:
            return check("skipped", OK, "ingestion has not started yet")
        problems = [f"{path}: {error}" for path, error in files.shown]
        if files.count > len(files.shown):
            problems.append(f"and {files.count - len(files.shown)} more files")
        count = files.count
        for name, stats in watcher.stats.items():
            if stats.last_error and stats.last_error_path not in files.indexed \
                    and not stats.last_error.startswith(SKIPPED_LINES):
                problems.append(f"{name}: {stats.last_error_path}: {stats.last_error}")
                count += 1  # a file (or directory) the index does not hold: counted too
        lines = skipped_lines(files.lines, time.time())
        if problems:
            what = f"{count} file{'' if count == 1 else 's'} with a problem: " if count else ""
            also = f"; and {lines['detail']}" if files.lines else ""  # not hidden by them
            return check("skipped", WARNING, what + "; ".join(problems) + also,
                         "memory status --sources lists each source's last problem; the files "
                         "are left as they are" + (f". {lines['fix']}" if files.lines and
                                                   lines.get("fix") else ""))
        return lines


def watcher_trouble(trouble: WatchTrouble, detail: str) -> dict[str, Any]:
    """The sources check while the watcher fails again and again: what fails, and the fix
    for the causes a person can remove (the system's limit on inotify instances)."""
    at = time.strftime("%H:%M", time.localtime(trouble.since))
    retry = time.strftime("%H:%M:%S", time.localtime(trouble.retry_at))
    times = "once" if trouble.count == 1 else f"{trouble.count} times"
    said = (f"{detail}; the watcher failed {times} since {at} ({trouble.cause}): it starts "
            f"again at {retry} (the wait doubles with each failure), and until it runs, "
            "changes to the files are indexed only by the scan of each start")
    if "Too many open files" in trouble.cause or "os error 24" in trouble.cause:
        fix = ("the system's limit on inotify instances is reached (Linux: "
               "fs.inotify.max_user_instances, shared by every program of the user; memoryd "
               "takes two): raise it (`sudo sysctl fs.inotify.max_user_instances=1024`, and the "
               "same line in /etc/sysctl.d/ to keep it), or the daemon's limit on open files "
               "(`ulimit -n`, LimitNOFILE=) if it is that; memoryd starts the watcher again by "
               "itself")
    elif "decode path" in trouble.cause:  # watchfiles: Unable to decode path "…" to string
        fix = ("a program keeps writing a file whose name is not UTF-8 in a watched directory "
               "(`memory status --sources` names it): rename or move it")
    else:
        fix = "the cause says why; memoryd starts the watcher again by itself"
    return check("sources", PROBLEM if trouble.count >= 3 else WARNING, said, fix)
