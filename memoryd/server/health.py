"""The daemon's half of `memory doctor` (wire method ``doctor``) and the health line of
`memory status`.

Each check is a map ``{check, status, detail, fix}``: ``status`` is ``ok``, ``warning`` or
``problem``, ``fix`` one line saying what to do (None when there is nothing to do). The cheap
checks (the code on disk, model, sources, skipped files, disk, backlog, and the configuration
files when they changed) also feed ``status``; ``doctor`` adds the ones that read the whole
database or the ledgers (``PRAGMA quick_check``, ledger against index).
The client adds what only it can see (its own environment, the hooks, the service manager):
:mod:`memoryd_client.doctor`.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd_client.paths import home_text
from memoryd_client.views import duration, size_text
from memoryd_client.wire import REVISION

from memoryd import __version__
from memoryd.agent_sources import default_sources
from memoryd.config import Config, Settings, check_config, managed_entries, resolved_root
from memoryd.embedding.model import DEFAULT_MODEL_ID, DEFAULT_MODEL_SHA256
from memoryd.errors import ConfigError
from memoryd.ingest.watcher import Watcher, WatchTrouble
from memoryd.passes.runner import PassRunner
from memoryd.passes.scope import missing_projects
from memoryd.project import repository_of
from memoryd.server.health_words import (
    OK,
    PROBLEM,
    SHOWN_FILES,
    SKIPPED_LINES,
    WARNING,
    again,
    check,
    copies_before_purge,
    differences,
    dir_links_said,
    ledger_lines,
    of_target,
    set_aside,
    skipped_lines,
    torn_files,
    worst,
)
from memoryd.server.installed import InstalledCode
from memoryd.server.parts import Parts
from memoryd.server.refused import RefusedWrites
from memoryd.server.sync_methods import Sync
from memoryd.store.integrity import copies
from memoryd.store.ledger import Ledger, LedgerProblem
from memoryd.store.reader import (
    entry_hashes,
    entry_uids,
    last_purge,
    ledger_entry_counts,
    ledger_entry_uids,
    ledger_offset,
    open_reader,
    quick_check,
)
from memoryd.store.scope import projects_of_entries

#: Free space on the state dir's file system below which doctor warns, and below which a write
#: may fail soon (SQLite needs room for its WAL and a rebuild needs room for a second database).
DISK_WARNING_BYTES = 1 << 30
DISK_PROBLEM_BYTES = 100 << 20
#: A backlog (vectors, files) that has not moved for this long while there is work is stuck.
STUCK_S = 300.0
#: How far back the "projects" check looks for sessions in projects no source watches.
SESSIONS_LOOKED_AT_S = 30 * 86400
#: How long the "sources" check tells of files the watcher did not report.
UNSEEN_SHOWN_S = 24 * 3600
RESTART = "restart memoryd (`memoryd service stop && memoryd service start`, or stop and run " \
    "`memoryd serve` again)"


@dataclass(frozen=True)
class LedgerEntry:
    """An entry a ledger's ``remember`` record created: its agent, id and text's hash (a record
    the replay skipped as a duplicate of an entry the index holds is not lost: two machines
    that stored one text, a write answered as failed)."""
    agent: str
    uid: str
    hash: str = ""


@dataclass(frozen=True)
class FileProblems:
    count: int  # indexed files whose row holds an error other than skipped lines
    shown: list[tuple[str, str]]  # the first SHOWN_FILES of them: path, error
    indexed: set[str]  # of the sources' last problem paths, those the index holds
    #: the files with malformed lines skipped: path, error, when it was last indexed, and
    #: whether any of it was read (an entry came from it)
    lines: list[tuple[str, str, float, bool]]


def log_location() -> str:
    """Where this daemon's log goes, as the service manager set it up."""
    if os.environ.get("JOURNAL_STREAM"):
        return "the user journal: memoryd service logs (journalctl --user -u memoryd)"
    if os.environ.get("XPC_SERVICE_NAME") == "dev.memoryd.agent":
        return str(Path.home() / "Library" / "Logs" / "memoryd" / "memoryd.log")
    return f"standard error of the memoryd process (pid {os.getpid()})"


def restart_command() -> str:
    """How to restart this daemon, as the service manager started it."""
    if os.environ.get("JOURNAL_STREAM"):
        return "`systemctl --user restart memoryd`"
    if os.environ.get("XPC_SERVICE_NAME") == "dev.memoryd.agent":
        return "`memoryd service stop && memoryd service start`"
    return f"stop this memoryd (pid {os.getpid()}) and start `memoryd serve` again"


class Health:
    def __init__(self, settings: Settings, started: float, parts: Parts,
                 watcher: Watcher | None, passes: PassRunner | None, sync: Sync | None,
                 refused: RefusedWrites, code: InstalledCode) -> None:
        """The parts it examines; ``started``: when the daemon started; ``refused``: the
        writes the disk refused lately; ``code``: its packages on disk."""
        self.settings = settings
        self.started = started
        self.parts = parts
        self.watcher = watcher
        self.passes = passes
        self.sync = sync
        self.refused = refused
        #: the configuration files as `config` last read them, and what it found
        self.config_seen: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self.installed = code
        self.config_reading = asyncio.Lock()

    def methods(self) -> dict[str, Any]:
        return {"doctor": self.m_doctor}

    # -- facts -------------------------------------------------------------------------

    def facts(self) -> dict[str, Any]:
        """Who this daemon is and where it keeps things."""
        config = self.settings.config
        return {
            "version": __version__,
            "revision": REVISION,
            "pid": os.getpid(),
            "executable": sys.executable,
            "memoryd_home": home_text(),  # absolute: a relative one was the daemon's cwd's
            "state_dir": str(config.state_dir),
            "socket": str(config.socket_path),
            "config_file": str(config.config_file),
            "sources_file": str(config.sources_file),
            "log": log_location(),
        }

    # -- cheap checks (status and doctor) --------------------------------------------

    def code(self, look: bool = False) -> dict[str, Any]:
        """Whether the code on disk is what this daemon runs: an upgrade since it started
        changed the `memory` command and the hooks at once, not the daemon (a look at most
        every memoryd.server.installed.LOOK_EVERY_S; ``look``: now, for doctor)."""
        changed = self.installed.changed(look)
        if changed is None:
            return check("code", OK, f"memoryd runs the code installed (wire revision "
                         f"{REVISION})")
        at, started = (time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
                       for t in (changed.at, self.started))
        restart = restart_command()
        return check("code", WARNING, f"memoryd runs older code than the installed one: "
                     f"{changed.path} changed at {at}, after memoryd started ({started}); the "
                     f"hooks and `memory` run the new code already: restart it ({restart})",
                     f"restart memoryd so that it runs the installed code: {restart}")

    def model(self) -> dict[str, Any]:
        embedder = self.parts.threads.embedder
        if embedder is not None:
            if embedder.model_id == DEFAULT_MODEL_ID:
                same = embedder.sha256 == DEFAULT_MODEL_SHA256
                return check("model", OK if same else PROBLEM,
                             f"{embedder.model_id} loaded ({embedder.dim} dims), sha256 "
                             f"{embedder.sha256[:12]}… " + (
                                 "as shipped" if same
                                 else f"≠ shipped {DEFAULT_MODEL_SHA256[:12]}…"),
                             None if same else "reinstall memoryd, then " + RESTART)
            if getattr(embedder, "pinned", False):  # a named model: checked at load
                return check("model", OK, f"{embedder.model_id} loaded ({embedder.dim} dims) "
                             f"from embed.model, sha256 {embedder.sha256[:12]}… as derived")
            return check("model", OK, f"{embedder.model_id} loaded ({embedder.dim} dims) from "
                         f"embed.model, sha256 {embedder.sha256[:12]}… (a model of your own: "
                         "not checked against a known hash)")
        if self.parts.threads.is_loading:
            return check("model", OK, "loading (search is by keyword until it is ready)")
        return check("model", PROBLEM,
                     "not loaded, search is keyword-only: "
                     f"{self.parts.loading.reason or 'unknown'}",
                     "fix what the reason names (reinstall memoryd, or embed.model in "
                     f"{self.settings.config.config_file}), then " + RESTART)

    def telemetry(self) -> dict[str, Any]:
        """onnxruntime's telemetry: memoryd sets ORT_DISABLE_TELEMETRY=1 before importing it
        and calls disable_telemetry_events() (memoryd.embedding.model.import_onnxruntime)."""
        loaded = "onnxruntime" in sys.modules
        off = os.environ.get("ORT_DISABLE_TELEMETRY") == "1"
        if not loaded:
            return check("telemetry", OK, "onnxruntime is not loaded in the daemon")
        if off:
            return check("telemetry", OK, "onnxruntime telemetry off (ORT_DISABLE_TELEMETRY=1 "
                         "set before import, disable_telemetry_events() called)")
        return check("telemetry", PROBLEM, "onnxruntime is loaded without ORT_DISABLE_TELEMETRY=1",
                     "report this as a bug; meanwhile set ORT_DISABLE_TELEMETRY=1 in memoryd's "
                     "environment and " + RESTART)

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

    async def unwritten(self) -> dict[str, Any]:
        """The files the passes' last runs left as they were because they may not or cannot
        rewrite them (read-only, hard links, immutable, a read-only file system)."""
        passes = self.passes
        found = await self.parts.db(passes.runs.unwritten) if passes else []
        if not found:
            return check("unwritten", OK, "the passes' last runs wrote every file they changed")
        shown = [f"{path}: {why.removeprefix('not written: ')} (memory pass show {run})"
                 for path, why, run in found[:SHOWN_FILES]]
        if len(found) > SHOWN_FILES:
            shown.append(f"and {len(found) - SHOWN_FILES} more")
        return check("unwritten", WARNING, f"{len(found)} file{'' if len(found) == 1 else 's'} "
                     "the passes leave as they are: " + "; ".join(shown),
                     "the reason says what to change; the other files are maintained, and the "
                     "next run tries these again")

    def failed_runs(self) -> dict[str, Any]:
        """The passes whose last run failed (since this start; a later run done clears it)."""
        failed = sorted(self.passes.failed.items()) if self.passes is not None else []
        if not failed:
            return check("passes", OK, "no pass's last run failed")
        shown = [f"{run.run} {name} failed at "
                 f"{time.strftime('%H:%M', time.localtime(run.at))}: {run.error}"
                 for name, run in failed]
        return check("passes", WARNING, "; ".join(shown),
                     "the error says why; the pass runs again at its next scheduled time "
                     "(or `memory pass run NAME`), and `memory pass show RUN` lists what the "
                     "failed run did")

    async def interrupted(self) -> dict[str, Any]:
        """The runs a stop cut short (a kill, a power loss) that hold applied changes no
        later run made whole: each is half done, and says what to do."""
        passes = self.passes
        found = await self.parts.db(passes.runs.interrupted) if passes else []
        if not found:
            return check("interrupted", OK, "no run a stop cut short holds changes")
        shown = [f"{run['run']} {run['pass']}{of_target(run)} with {applied} change"
                 f"{'' if applied == 1 else 's'} applied (memory undo {run['run']} takes them "
                 f"back, or {again(run)} finishes the work)"
                 for run, applied in found[:SHOWN_FILES]]
        if len(found) > SHOWN_FILES:
            shown.append(f"and {len(found) - SHOWN_FILES} more")
        return check("interrupted", WARNING, f"{len(found)} run"
                     f"{'' if len(found) == 1 else 's'} stopped midway, half done: "
                     + "; ".join(shown),
                     "undo the run, or run it again; nothing was lost (memory pass show RUN "
                     "lists what it did)")

    async def config(self, fresh: bool = True) -> dict[str, Any]:
        """config.toml and sources.toml as the next reload or start reads them: an error there
        is one the running daemon did not take (a reload refused it, or it came since), and the
        next start fails on it (exit 3); a name that names nothing is a warning. Not
        ``fresh`` (`memory status`): read again only when a file changed."""
        config = self.settings.config
        files = (config.config_file, config.sources_file)
        async with self.config_reading:  # a burst of `memory status` reads them once
            seen = tuple(_stamp(path) for path in files)
            if not fresh and self.config_seen is not None and self.config_seen[0] == seen:
                return self.config_seen[1]
            found = await self._read_config(config, files)
            self.config_seen = (seen, found)
            return found

    async def _read_config(self, config: Config, files: tuple[Path, Path]) -> dict[str, Any]:
        agents = await self.parts.db(self.parts.store.agents)
        try:
            _, warnings = await asyncio.to_thread(check_config, config.config_file, agents)
        except ConfigError as exc:
            which = " and ".join(path.name for path in files if str(path) in exc.message)
            found = check("config", PROBLEM, f"{which or files[0].name} has an error the running "
                          f"daemon did not take: {exc.message}",
                          "correct it, then `memory reload`: until then memoryd runs on the "
                          "configuration it read last, and a restart would fail (exit 3)")
        else:
            read = " and ".join(str(path) for path in files if path.exists())
            found = check("config", WARNING, "; ".join(warnings),
                          f"correct the names in {config.config_file}, then `memory reload`") \
                if warnings else check("config", OK, f"{read or 'no configuration file'}: "
                                       "no error")
        return found

    def environment(self) -> dict[str, Any]:
        """MEMORYD_* variables the daemon started with that are no setting (a typo)."""
        unknown = self.settings.config.unknown_environment
        if unknown:
            return check("environment", WARNING, "; ".join(unknown),
                         "correct or unset them where memoryd is started (the service's unit, "
                         "or the shell of `memoryd serve`), then restart it")
        return check("environment", OK, "every MEMORYD_* variable of the daemon is one it reads")

    def disk(self, sizes: bool = False) -> dict[str, Any]:
        """Room on the state dir's file system; ``sizes`` (doctor's, off the event loop): what
        the state dir holds, its largest parts named."""
        config = self.settings.config
        try:
            usage = shutil.disk_usage(config.state_dir)
        except OSError as exc:
            return check("disk", PROBLEM, f"{config.state_dir}: {exc.strerror or exc}",
                         "make the state dir readable, or set MEMORYD_HOME")
        try:
            db = config.db_path.stat().st_size
        except OSError:
            db = 0
        detail = (f"{size_text(usage.free)} free on the state dir's file system "
                  f"({config.state_dir}; database {size_text(db)})")
        if sizes:
            parts = state_sizes(config.state_dir)
            named = ", ".join(f"{name} {size_text(size)}" for name, size in parts[:4] if size)
            detail = (f"{size_text(usage.free)} free on the state dir's file system "
                      f"({config.state_dir} holds {size_text(sum(s for _, s in parts))}"
                      + (f": {named}" if named else "") + ")")
        if usage.free < DISK_PROBLEM_BYTES:
            return check("disk", PROBLEM, detail, "free some space: writes fail when it is full")
        if usage.free < max(DISK_WARNING_BYTES, 2 * db):
            return check("disk", WARNING, detail, "free some space: a reindex needs room for a "
                         "second database")
        return check("disk", OK, detail)

    def writes(self) -> dict[str, Any]:
        """The writes the disk refused lately (memoryd.server.refused)."""
        refused = self.refused
        if not refused.recent() or refused.since is None:
            return check("writes", OK, "no write refused lately")
        at = time.strftime("%H:%M", time.localtime(refused.since))
        many = "write was" if refused.count == 1 else "writes were"
        return check("writes", PROBLEM, f"{refused.count} {many} refused since {at}, the "
                     f"last: {refused.reason}", refused_fix(refused.reason))

    def ledger_at_start(self) -> dict[str, Any]:
        """What the start found wrong in the ledgers it read (the lines past what the index
        held, or all of a ledger it replayed whole), and the torn last lines set aside; cheap:
        `memory doctor` reads every line."""
        damaged = [p for p in self.parts.ledger_problems if p.kind != "torn"]
        aside = set_aside(torn_files(self.settings.config.state_dir))
        if damaged:
            at = time.strftime("%H:%M", time.localtime(self.started))
            lines = "line" if len(damaged) == 1 else "lines"
            return check("ledger lines", PROBLEM, f"{len(damaged)} damaged ledger {lines} "
                         f"found at start ({at}), skipped when read"
                         + (f"; {aside['detail']}" if aside else ""),
                         "memory doctor names them and says what to do")
        if aside is not None:
            return check("ledger lines", WARNING, aside["detail"], aside["fix"])
        return check("ledger lines", OK, "no damaged ledger line found at start")

    def backlog_counts(self) -> int:
        """Entries waiting for a vector (database thread)."""
        store = self.parts.store
        assert store is not None
        return store.count_backlog()

    def backlog(self, waiting: int) -> dict[str, Any]:
        """The vector backlog and the file queue: their size and whether they move."""
        watcher = self.watcher
        queue = len(watcher.pending) if watcher is not None else 0
        now = time.time()
        parts = []
        stuck = []
        if waiting:
            rate = self.parts.vectors.embedded.rate(now)
            since = self.parts.vectors.backlog_since
            parts.append(f"{waiting} entries wait for a vector"
                         + (f", embedding since {duration(now - since)} ago" if since else "")
                         + (f" at {rate:.0f}/s" if rate else ""))
            last = max(self.parts.vectors.embedded.last_progress or 0, self.started)
            if self.parts.threads.embedder is not None and now - last > STUCK_S:
                stuck.append(f"no vector embedded for {duration(now - last)}")
        if queue:
            parts.append(f"{queue} files queued for indexing")
            last = max((watcher.initial.files.last_progress if watcher is not None else None) or 0,
                       self.started)
            if watcher is not None and watcher.initial.active and now - last > STUCK_S:
                stuck.append(f"no file indexed for {duration(now - last)}")
        if self.parts.threads.embedder is None and not self.parts.threads.is_loading and waiting:
            return check("backlog", WARNING, "; ".join(parts) + " (no model: they get one once "
                         "a model loads)", "see the model check")
        if stuck and self._short_of_space():
            return check("backlog", PROBLEM, "; ".join(parts + stuck) + " (the state dir's "
                         "disk refuses writes)", "free some space on the state dir's file "
                         "system (see the disk and writes checks): the backlog goes on by "
                         "itself once there is room, no restart needed")
        if stuck:
            return check("backlog", PROBLEM, "; ".join(parts + stuck),
                         "memoryd service logs says why; " + RESTART)
        if parts:
            return check("backlog", OK, "working: " + "; ".join(parts))
        return check("backlog", OK, "nothing waiting: every entry has its vector")

    def _short_of_space(self) -> bool:
        """Whether the state dir's disk is (nearly) full, or refused a write lately."""
        if self.refused.recent():
            return True
        try:
            return shutil.disk_usage(self.settings.config.state_dir).free < DISK_PROBLEM_BYTES
        except OSError:
            return False

    async def status_fields(self) -> dict[str, Any]:
        """What `memory status` adds to the counts: the cheap checks for its health line
        (only those that are not ok), the embedding rate and estimate, the paths."""
        backlog = await self.parts.db(self.backlog_counts)
        files = await self.file_problems()
        checks = [self.code(), self.model(), self.writes(),
                  self.ledger_at_start(), self.sources(),
                  self.skipped(files), await self.unwritten(), self.failed_runs(),
                  await self.interrupted(), self.disk(), self.backlog(backlog),
                  await self.config(fresh=False),
                  self.environment()]
        vectors = self.parts.vectors
        rate = vectors.embedded.rate()
        config = self.settings.config
        return {
            "health": {"state": worst(checks), "checks": [c for c in checks if c["status"] != OK]},
            # "done": embedded since this backlog began, so that the share done never counts
            # the whole store (it went backwards while files added entries: 96% → 65%)
            "embedding": {"rate_per_s": rate, "eta_s": vectors.embedded.eta_s(backlog),
                          "embedded": vectors.embedded.done,
                          "done": vectors.embedded.done - vectors.stretch_start
                          if vectors.backlog_since is not None else 0},
            "config_file": str(config.config_file),
            "log": log_location(),
        }

    # -- the whole examination ---------------------------------------------------------

    def quick_check(self, db: Any) -> dict[str, Any]:
        """PRAGMA quick_check on a reader of its own: O(N), no index cross-checks."""
        started = time.monotonic()
        rows, version = quick_check(db)
        took = time.monotonic() - started
        path = self.settings.config.db_path
        if rows == ["ok"]:
            return check("database", OK, f"{path}: quick_check ok in {took:.1f} s "
                         f"(schema version {version})")
        return check("database", PROBLEM, f"{path}: quick_check: " + "; ".join(rows[:3]),
                     "stop memoryd and run `memoryd reindex`: it rebuilds the database from the "
                     "ledgers (the old one is kept as memoryd.db.bak)")

    def ledger_index(self, db: Any, ledgers: dict[str, tuple[list[LedgerEntry], int]]
                     ) -> dict[str, Any]:
        """The ledgers' entries against the index. ``ledgers``: for each ledger, the entries it
        created (in order) and its size, read before the index is. Each entry counts as replay
        treats it: under its own agent (an older version let Bob's and bob's records share
        Bob.jsonl on macOS), and not at all if that agent is another's. The other way too:
        the entries written through the API that the index holds and no ledger does
        (:meth:`unledgered`), which a reindex would drop."""
        missing: dict[str, int] = {}
        behind: list[str] = []
        total = 0
        lasts = []
        held: dict[str, set[str]] = {}  # agent → the ids the index holds
        texts: dict[str, set[str]] = {}  # agent → the hashes of its entries' texts
        for agent, (created, size) in sorted(ledgers.items()):
            counted = [e for e in dict.fromkeys(created) if e.agent.casefold() == agent.casefold()]
            for entry in counted:
                if entry.agent not in held:
                    held[entry.agent] = entry_uids(db, entry.agent)
            lost = [e for e in counted if e.uid not in held[e.agent]]
            if lost:  # but a duplicate the replay skipped: its text is held
                for entry in lost:
                    if entry.agent not in texts:
                        texts[entry.agent] = entry_hashes(db, entry.agent)
                lost = [e for e in lost if not e.hash or e.hash not in texts[e.agent]]
            total += len(counted)
            if lost:
                missing[agent] = len(lost)
            if counted:
                last = counted[-1]
                lasts.append(f"{agent} {last.uid}"
                             + ("" if last.uid in held[last.agent] else " (missing)"))
            seen = ledger_offset(db, agent)
            if seen < size:
                behind.append(f"{agent} ({size - seen} bytes)")
        unledgered = self.unledgered(db, ledgers, held)
        if missing or unledgered:
            return differences(missing, total, unledgered)
        if behind:
            return check("ledger", WARNING, "ledgers written past what the index has replayed: "
                         + ", ".join(behind), "they are replayed when memoryd starts: " + RESTART)
        if not ledgers:
            return check("ledger", OK, "no ledger yet (nothing stored through the API)")
        return check("ledger", OK, f"{len(ledgers)} ledgers, {total} entries, all in the index; "
                     "last ids: " + ", ".join(lasts[:5]) + (" …" if len(lasts) > 5 else ""))

    @staticmethod
    def unledgered(db: Any, ledgers: dict[str, tuple[list[LedgerEntry], int]],
                   held: dict[str, set[str]]) -> dict[str, tuple[int, list[str]]]:
        """The entries the index holds as written through the API that no ledger holds
        (a ledger cut or edited outside memoryd): for each agent, how many and the first
        ids. Counted per agent (one pass over the table); the ids are read only for an agent
        whose count is off. ``held``: the ids the index holds, of the agents the ledgers
        name (read by :meth:`ledger_index`)."""
        ledgered: dict[str, set[str]] = {}  # agent → the ids of its ledger the index holds
        for agent, (created, _) in ledgers.items():
            for entry in created:
                if entry.agent.casefold() == agent.casefold() \
                        and entry.uid in held.get(entry.agent, ()):
                    ledgered.setdefault(entry.agent, set()).add(entry.uid)
        found = {}
        for agent, count in sorted(ledger_entry_counts(db).items()):
            known = ledgered.get(agent, set())
            if count > len(known):
                uids = [u for u in ledger_entry_uids(db, agent) if u not in known]
                if uids:
                    found[agent] = (len(uids), uids[:SHOWN_FILES])
        return found

    def whole_store(self) -> list[dict[str, Any]]:
        """The database and ledger checks, on a reader of their own (a worker thread). A write
        lands in its ledger just before its transaction commits: a difference is checked again
        after a moment before it is reported."""
        db = open_reader(self.settings.config.db_path)
        try:
            database = self.quick_check(db)
            purged = last_purge(db)
            if purged is not None:
                database = copies_before_purge(database, [
                    p for p in copies(self.settings.config.db_path)
                    if p.exists() and p.stat().st_mtime < purged], purged)
            problems: list[LedgerProblem] = []
            ledger = self.ledger_index(db, self.read_ledgers(problems))
            if ledger["status"] != OK:
                time.sleep(0.5)
                ledger = self.ledger_index(db, self.read_ledgers([]))
        finally:
            db.close()
        return [database, ledger_lines(problems, torn_files(self.settings.config.state_dir)),
                ledger]

    def read_ledgers(self, problems: list[LedgerProblem]
                     ) -> dict[str, tuple[list[LedgerEntry], int]]:
        """Every ledger's remembered entries and size (off the database thread); damaged lines
        are added to ``problems``."""
        ledger = Ledger(self.settings.config.ledger_dir)
        result = {}
        for agent in ledger.agents():
            path = ledger.path(agent)
            size = path.stat().st_size
            created = [LedgerEntry(str(entry.get("agent")), str(entry.get("uid")),
                                   str(entry.get("hash") or ""))
                       for _, record in ledger.read(agent, 0, problems)
                       if record.get("op") == "remember"
                       and isinstance(entry := record.get("entry"), dict)]
            result[agent] = (created, size)
        return result

    async def m_doctor(self, params: Any) -> dict[str, Any]:
        whole = await asyncio.to_thread(self.whole_store)
        waiting = await self.parts.db(self.backlog_counts)
        files = await self.file_problems()
        checks = [
            self.code(look=True),
            self.model(),
            self.telemetry(),
            *whole,
            self.writes(),
            await asyncio.to_thread(self.disk, True),
            self.sources(),
            await self.projects(),
            await self.sessions(),
            self.skipped(files),
            await self.unwritten(),
            self.failed_runs(),
            await self.interrupted(),
            self.backlog(waiting),
            await self.config(),
            self.environment(),
        ]
        if self.sync is not None:
            checks.append(await asyncio.to_thread(self.sync.doctor))
        return {"daemon": self.facts(), "checks": checks, "state": worst(checks)}


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is edited or replaced (None: there is none)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size


def refused_fix(reason: str) -> str:
    """What to do about writes the disk refuses, by why it refused the last one."""
    again = " and send them again: nothing of a refused write was kept"
    if "Read-only file system" in reason:
        return ("the state dir's file system is read-only (a service's sandbox without the "
                "state dir in ReadWritePaths=, or a disk remounted read-only after errors): "
                "make it writable" + again)
    if "file too large" in reason:
        return "raise the file-size limit memoryd runs under (`ulimit -f`, LimitFSIZE=)" + again
    if "Permission denied" in reason or "Operation not permitted" in reason:
        return ("memoryd may not write in its state dir: give the user it runs as the state "
                "dir back (chown, chmod u+w)" + again)
    if "I/O error" in reason and "full" not in reason:
        return "the disk reports errors: check it (dmesg, smartctl) and free it of them" + again
    return ("free some space on the state dir's file system (or raise the file-size limit, "
            "`ulimit -f`, memoryd runs under)" + again)


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


def state_sizes(state_dir: Path) -> list[tuple[str, int]]:
    """What the state dir holds, largest first: each file and each folder (all it holds) at
    its top, so that `memory doctor` names where the disk goes (the database, the outcomes
    file and its injection log, the vectors, the ledgers)."""
    sizes: list[tuple[str, int]] = []
    try:
        children = list(os.scandir(state_dir))
    except OSError:
        return sizes
    for child in children:
        try:
            if child.is_dir(follow_symlinks=False):
                size = sum(f.stat().st_size for f in Path(child.path).rglob("*")
                           if f.is_file() and not f.is_symlink())
                sizes.append((child.name + "/", size))
            elif child.is_file(follow_symlinks=False):
                sizes.append((child.name, child.stat(follow_symlinks=False).st_size))
        except OSError:  # gone or unreadable meanwhile: not counted
            continue
    return sorted(sizes, key=lambda item: -item[1])
