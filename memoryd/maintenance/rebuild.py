"""Rebuild the database from the files: the database is an index. The new index is built in
``memoryd.db.new`` and put in place only when it is complete (the old one becomes
``memoryd.db.bak``), so a reindex that is killed leaves the old index and its backup as they
were. Transcript entries the old database holds and the archives do not yet are archived first
(their transcripts may be gone), and so are the memory tools' versions, the passes' runs and the
outcomes of a database made before each had a file of its own (and the injection log, the
extraction marks and the sessions hooks reported, of a database made before the outcomes file
held them); then the archives
are restored (the transcripts', and the sessions of their turns whose transcripts are gone
registered again; then the memory tools' history: memoryd.store.file_history), the run log
replayed (the ledgers' records of a pass's changes name them), then the ledgers (their status
records may name archived transcript entries), then the outcomes file (what became of the
memory injected into sessions, the injection log, when sessions were extracted:
memoryd.store.usage_log); the daemon indexes the watched files when it starts."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator

import numpy as np
from memoryd_client.views import size_text

from memoryd.embedding.model import Embedder
from memoryd.errors import AlreadyRunningError, EmbedderError, StartupError
from memoryd.ingest.indexer import as_event
from memoryd.maintenance.replay import replay_ledgers
from memoryd.settings import Config
from memoryd.store import lexicon
from memoryd.store.archive import AgentArchive, archive_now, restore_archives
from memoryd.store.database import DatabaseError, ModelInfo, Store
from memoryd.store.durable import disk_full, refusal, refused_by_disk
from memoryd.store.file_history import export_events, restore_history
from memoryd.store.integrity import (
    building,
    corrupt_suffix,
    damage,
    discard,
    move_aside,
    used_bytes,
)
from memoryd.store.ledger import Ledger
from memoryd.store.lexicon import Lexicon
from memoryd.store.permissions import restrict_umask, tighten_state
from memoryd.store.query import EntryQuery
from memoryd.store.run_log import RunLog, keep_unlogged, replay_run_log, run_log_key
from memoryd.store.run_log import export as export_run_log
from memoryd.store.usage_log import FILE_NAME as USAGE_FILE
from memoryd.store.usage_log import KEY as USAGE_KEY
from memoryd.store.usage_log import (
    LOG_KEY,
    SESSIONS_KEY,
    UsageLog,
    export_log,
    export_sessions,
    has_log,
    has_outcomes,
    has_reported,
    replay_usage_log,
)
from memoryd.store.usage_log import export as export_outcomes
from memoryd.watched_sources import transcript_formats

log = logging.getLogger(__name__)
EMBED_BATCH = 256


#: What a reindex tells its caller as it goes: (phase, done, total).
Progress = Callable[[str, int, int], None]


def reindex(config: Config, *, embed: bool = True,
            progress: Progress | None = None) -> dict[str, int]:
    """Rebuild the index (see the module docstring); ``progress`` is told how far the two long
    phases are: replaying the ledgers (bytes) and embedding the entries. A disk that cannot
    take the new index (full, read-only) is a StartupError saying so (exit 3), the index in
    use kept as it was and the unfinished one removed; with vectors, one with less room than
    the index in use takes is refused before anything is written."""
    restrict_umask()
    config.state_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
    tighten_state(config.state_dir, config.private_files, config.private_trees)
    try:
        fd = os.open(config.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise _cannot_rebuild(config, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AlreadyRunningError(
                "memoryd is running; stop it first (`memoryd service stop`, or SIGTERM to "
                "`memoryd serve`)") from None
        if embed:
            _check_room(config)
        try:
            return _rebuild(config, embed, progress)
        except Exception as exc:
            # (the store's "cannot open database" keeps SQLite's error as its context)
            cause = exc if refused_by_disk(exc) else exc.__context__
            if cause is None or not refused_by_disk(cause):
                raise
            with contextlib.suppress(OSError):
                discard(building(config.db_path))
            raise _cannot_rebuild(config, cause) from None
    finally:
        os.close(fd)


def _check_room(config: Config) -> None:
    """Refuse a rebuild the state dir's disk has too little room for: the new index holds what
    the one in use holds (with its vectors), beside it until it replaces it."""
    needed = used_bytes(config.db_path)
    try:
        free = shutil.disk_usage(config.state_dir).free
    except OSError:
        return
    if free < needed:
        raise StartupError(
            f"not enough space to rebuild the index in {config.state_dir}: {size_text(free)} "
            f"free, the new index needs about {size_text(needed)} (as much as the one in use, "
            "beside it until it replaces it); the index in use is kept, nothing was written: "
            "free some space and run `memoryd reindex` again")


def _cannot_rebuild(config: Config, exc: BaseException) -> StartupError:
    """The answer to a rebuild the disk refused: what it said, and that nothing was lost."""
    try:
        free = f"; {size_text(shutil.disk_usage(config.state_dir).free)} free"
    except OSError:
        free = ""
    full = disk_full(exc)
    what = "not enough space to rebuild the index" if full else "cannot rebuild the index"
    return StartupError(
        f"{what} in {config.state_dir} ({refusal(exc)}{free}); the index "
        "in use is kept, and the unfinished one removed: "
        + ("free some space and run `memoryd reindex` again" if full else
           "make the state dir writable and run `memoryd reindex` again"))


def _rebuild(config: Config, embed: bool, progress: Progress | None) -> dict[str, int]:
    """The rebuild itself, the state dir's lock held."""
    archive = AgentArchive(config.archive_dir)
    history = AgentArchive(config.history_dir)
    archived = archive_old(config, archive, history)
    run_log = RunLog.in_state(config.state_dir)
    runs_old(config, run_log)
    usage_log = UsageLog(config.state_dir / USAGE_FILE)
    outcomes_old(config, usage_log)
    log_old(config, usage_log)
    sessions_old(config, usage_log)
    new = building(config.db_path)
    discard(new)  # what a killed reindex left
    store = Store(new)
    try:
        restored = restore_archives(store, archive, transcript_formats(config))
        versions = restore_history(store, history)
        replay_run_log(store, run_log)
        runs = store.runs.count()
        ledger = Ledger(config.ledger_dir)
        replayed = (lambda done, total: progress("replaying the ledgers", done, total)) \
            if progress else None
        records = replay_ledgers(store, ledger, replayed)
        replay_usage_log(store, usage_log)
        lines_old(config, store)
        vectors = embed_backlog(config, store, progress) if embed else 0
        entries = sum(store.count_entries().values())
    finally:
        store.close()
    set_aside(config)  # only now: a reindex killed before this leaves the old index as it was
    move_aside(new, "", config.db_path)
    return {"entries": entries, "records": records, "ledgers": len(ledger.agents()),
            "vectors": vectors, "archives": len(archive.agents()), "restored": restored,
            "archived": archived, "runs": runs, "versions": versions}


def set_aside(config: Config) -> None:
    """Keep the old index as ``memoryd.db.bak`` (replacing an older backup, as the old index is
    the newer good copy); one that fails its integrity check goes to
    ``memoryd.db.corrupt-<time>`` instead, so it never replaces a good backup."""
    path = config.db_path
    if not path.exists():
        discard(path)
        return
    if damage(path):
        moved = move_aside(path, corrupt_suffix())
        log.warning("The old index failed its integrity check; kept it as %s.", moved.name)
    else:
        move_aside(path, ".bak")


def archive_old(config: Config, archive: AgentArchive, history: AgentArchive) -> int:
    """Archive what the retain pass has not yet copied from the database about to be set
    aside, and the memory tools' versions it holds that the history archives do not (written
    before every write appended its own: memoryd.store.file_history); a database that cannot
    be opened (damaged, a newer schema) is left as it is. Returns how many transcript
    entries were archived."""
    archived = 0
    with _old_database(config, "Not archiving transcripts from the old database") as old:
        if old is not None:
            archived = archive_now(old, archive)
            export_events(old, history)
    if archived:
        log.info("Archived %d transcript entries from the old database first.", archived)
    return archived


def lines_old(config: Config, store: Store) -> int:
    """The watched files' lines the database about to be set aside holds, each recorded in the
    new index as it left it (a ``removed`` event, with the entry as it was): the daemon
    indexes the files when it starts, and a line it finds again keeps its date as it keeps its
    id (memoryd.ingest.indexer), where an undated one got the file's mtime, often months after
    it was written, and a dated one its day's midnight (two versions of one day written hours
    apart were no longer told apart by it: memoryd.ingest.line_date). A database that cannot
    be opened (damaged, a newer schema) or none (it was deleted) leaves the files' own dates.
    Returns how many lines."""
    lines = []
    with _old_database(config, "Not reading the dates of the files' lines from the old "
                       "database") as old:
        if old is not None:
            lines = old.entries(EntryQuery().vias(["watch"]).not_transcripts().from_files(),
                                "id")
    now = time.time()
    with store.transaction():
        for entry in lines:
            store.record_event(entry.uid, "removed", "memoryd reindex", as_event(entry),
                               {"reason": "index rebuilt"}, now)
    return len(lines)


def runs_old(config: Config, run_log: RunLog) -> None:
    """Write the passes' runs of the database about to be set aside to the run log, if that
    database was made before the run log existed; when the file has lines (a downgrade to
    such a memoryd), the runs it lacks, renumbered after its own (keep_unlogged)."""
    if run_log.size():
        with _old_database(config, "Not reading the passes' runs of the old database") as old:
            if old is not None and _runs_unread(old):
                run_log.repair_tail()
                keep_unlogged(old, run_log)
        return
    _export_old(config, "the passes' runs", 0, _runs_unread,
                lambda old: export_run_log(old, run_log))


def _runs_unread(old: Store) -> bool:
    """Whether a database holds runs and has never read the run log (made before it)."""
    return old.meta(run_log_key()) is None and old.runs.any()


def outcomes_old(config: Config, usage_log: UsageLog) -> None:
    """Write the outcomes of the database about to be set aside to their file, if that
    database was made before the file existed."""
    _export_old(config, "the outcomes", usage_log.size(),
                lambda old: old.meta(USAGE_KEY) is None and has_outcomes(old),
                lambda old: export_outcomes(old, usage_log))


def log_old(config: Config, usage_log: UsageLog) -> None:
    """Write the injection log and the extraction marks of the database about to be set
    aside to the outcomes file, if that database was made before the file held them (the
    file has lines already: its outcomes)."""
    _export_old(config, "the injection log", 0,
                lambda old: old.meta(LOG_KEY) is None and has_log(old),
                lambda old: export_log(old, usage_log, holds_all=False))


def sessions_old(config: Config, usage_log: UsageLog) -> None:
    """Write the sessions a hook reported to the database about to be set aside to the
    outcomes file, if that database was made before the file held every one."""
    _export_old(config, "the sessions hooks reported", 0,
                lambda old: old.meta(SESSIONS_KEY) is None and has_reported(old),
                lambda old: export_sessions(old, usage_log, holds_all=False))


def _export_old(config: Config, what: str, file_size: int, wanted: Callable[[Store], bool],
                export: Callable[[Store], object]) -> None:
    """What the old database holds that a file of its own keeps now, written to that file
    (nothing when the file has lines already, ``file_size``; a damaged database is left as it
    is)."""
    if file_size:
        return
    with _old_database(config, f"Not reading {what} of the old database") as old:
        if old is not None and wanted(old):
            export(old)


@contextlib.contextmanager
def _old_database(config: Config, not_done: str) -> Iterator[Store | None]:
    """The database about to be set aside, open; None when there is none, and when it cannot
    be opened (damaged, a newer schema), which is logged (``not_done``: what is not done), as
    is a read of it that fails in the block (it is left as it is)."""
    if not config.db_path.exists():
        yield None
        return
    try:
        old = Store(config.db_path)
    except (StartupError, DatabaseError) as exc:
        log.warning("%s: %s", not_done, exc)
        yield None
        return
    try:
        yield old
    except DatabaseError as exc:
        log.warning("%s: %s", not_done, exc)
    finally:
        old.close()


def embed_backlog(config: Config, store: Store, progress: Progress | None = None) -> int:
    try:
        embedder = Embedder(config.embed)
    except EmbedderError as exc:
        log.error("Not embedding: %s", exc.message)
        return 0
    store.bind_model(ModelInfo(embedder.model_id, embedder.sha256, embedder.dim, embedder.parts))
    done = 0
    total = store.count_backlog()
    while rows := store.rows_missing_vectors(EMBED_BATCH):
        if progress:
            progress("embedding entries", done, total)
        pairs = embedder.embed_entries([text for _, _, text in rows])
        with store.transaction():
            store.put_vectors([r[0] for r in rows], np.stack([v for v, _ in pairs]),
                              [p for _, p in pairs])
        done += len(rows)
    if progress and done:
        progress("embedding entries", done, max(total, done))
    # the words too: filled by the daemon afterwards, a paraphrase asked meanwhile scored
    # 0.23 instead of 0.94 (search's word alignment lacked them)
    if progress:
        progress("filling the word index", 0, 0)
    words = lexicon.fill(store, Lexicon(embedder.dim), embedder.embed_alone)
    log.info("Embedded %d entries and %d words.", done, words)
    return done
