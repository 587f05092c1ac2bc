"""Transcript files read as they grow: from the offset indexed last (:mod:`memoryd.ingest.tail`),
line by line through their format's parser (:mod:`memoryd.ingest.transcript`), into exchanges
that the indexer stores as entries. A file's parser keeps its state between reads (the session,
the exchange still open), and gets it back after a restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memoryd.ingest.context import cwd_hint, reads_from_start, replay
from memoryd.ingest.document import read_document
from memoryd.ingest.file_read import FileFacts
from memoryd.ingest.indexer import Indexer
from memoryd.ingest.source_stats import SkippedLines, SourceStats, account
from memoryd.ingest.tail import TailPosition, TailRead, read_appended
from memoryd.ingest.transcript import (
    Chunk,
    TranscriptParser,
    Turn,
    chunk_exchanges,
    is_document,
    make_parser,
    text_lines,
)
from memoryd.settings import Config
from memoryd.sources import Source

T = TypeVar("T")


@dataclass
class TranscriptState:
    parser: TranscriptParser
    fmt: str
    cwd: str | None = None  # the project the file's path names (memoryd.ingest.context)
    #: read again from its start after a restart (memoryd.ingest.context.reads_from_start):
    #: its parser's counts are the whole file's
    from_start: bool = False
    #: read whole each time (memoryd.ingest.document): its counts are the whole file's
    document: bool = False
    #: the file was read again from its start (rewritten, replaced): the parser's counts are
    #: the whole file's again, not what it gained since they were last reported
    recounted: bool = False
    open_turns: list[Turn] = field(default_factory=list)
    #: per session (None: the file's one session), what the registry was last told
    reported: dict[str | None, tuple[Any, ...]] = field(default_factory=dict)
    skips: SkippedLines = field(default_factory=SkippedLines)
    #: a document's chunks as last indexed (a digest of each chunk's id, records and text):
    #: a read passes on only the chunks that differ. None before its first read, empty after
    #: it: digests are kept once it changes while watched (a task log written on every
    #: message), not for the logs found at a start and read once. ``pending``: what the read
    #: being indexed makes it.
    indexed: frozenset[int] | None = None
    pending: frozenset[int] | None = None

    def sessions(self) -> list[dict[str, Any]]:
        """The sessions to register or update since last time, with the user messages they
        gained. A file holding many sessions (Aider's history, a generic log of many chats:
        ``parser.sessions``) tells each; any other, its current session with all its user
        messages."""
        parser = self.parser
        many: dict[str, tuple[Any, ...]] | None = getattr(parser, "sessions", None)
        found = many if many is not None else {None: (
            parser.started, parser.last_seen, parser.user_messages)} if parser.session_id else {}
        out = []
        # a format read from the file's start after a restart too (Gemini's, Aider's, a
        # document: memoryd.ingest.context.replay) counts the whole file every time
        whole = self.recounted or self.from_start
        if found:  # a file emptied to be written again: its first lines are its whole count
            self.recounted = False
        for key, (started, last_seen, users) in found.items():
            before = self.reported.get(key)
            if before == (started, last_seen, users):
                continue
            self.reported[key] = (started, last_seen, users)
            gained = users if whole or before is None else users - before[2]
            out.append({"id": key or parser.session_id, "harness": parser.harness,
                        "cwd": parser.cwd, "started": started, "last_seen": last_seen,
                        "user_messages": gained, "whole_file": whole})
        return out

    def all_reported(self) -> None:
        """What the parser has counted was reported (before a restart)."""
        self.sessions()


class TranscriptFiles:
    """The transcript files being read, each with its parser's state. Reading and parsing run
    on the ingest thread (``thread``), the store's side on the database thread (``db``; what
    indexing writes through ``background``, which gives way to requests)."""

    def __init__(self, config: Config, indexer: Indexer, stats: dict[str, SourceStats],
                 db: Callable[..., Awaitable[Any]], background: Callable[..., Awaitable[Any]],
                 thread: ThreadPoolExecutor) -> None:
        self.config = config
        self.indexer = indexer
        self.stats = stats  # the watcher's, per source
        self.db = db
        self.background = background
        self.thread = thread
        self.states: dict[str, TranscriptState] = {}
        #: what each document's last read counted to its source's skipped lines (kept when
        #: the parsers start again: the sources' counts are kept then)
        self.documents: dict[str, dict[str, int]] = {}

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.thread, fn, *args)

    def reload(self, config: Config) -> None:
        """New configuration: every file's parser starts again (from its tail offset)."""
        self.config = config
        self.states.clear()

    def forget(self, path: str) -> None:
        """The file is gone or was renamed: its parser's state goes with it."""
        self.states.pop(path, None)
        self.documents.pop(path, None)

    async def ingest(self, source: Source, facts: FileFacts) -> None:
        """Read what the file gained since it was last indexed, and index it. A renamed file
        is followed first (its row and entries take its new path)."""
        state = self.states.get(facts.path)
        start = await self.db(self.indexer.tail_start, facts, state is None)
        if start.renamed_from is not None:
            self.forget(start.renamed_from)
            self.forget(facts.path)  # renamed over this path: that reader read the replaced file
            state = None
        position = start.position
        if state is None:
            cwd = await self.off_loop(cwd_hint, source.format, facts.path)
            from_start = await self.off_loop(reads_from_start, source.format, facts.path)
            state = self.states[facts.path] = TranscriptState(
                make_parser(source.format, cwd=cwd, path=facts.path), source.format, cwd,
                from_start, is_document(source.format, facts.path))
            if position is not None and not state.document:  # resume the exchange left open
                await self._resume(state, facts.path, position, list(start.open_turns or ()))
        while True:
            try:
                read, chunks = await self.off_loop(self._read, facts, position, state)
            except OSError as exc:
                message = f"unreadable: {exc.strerror or exc}"
                self.stats[facts.source].error(facts.path, message)
                await self.db(self.indexer.record_error, facts, message)
                return
            skips = state.skips.after(read.skipped, state.parser.skipped)
            change = await self.background(
                self.indexer.apply_transcript, facts, read.position, chunks, state.sessions(),
                read.problem or skips.problem, list(state.open_turns))
            state.indexed = state.pending  # indexed now: not passed on again
            if state.document:
                self.documents[facts.path] = state.skips.count_whole(
                    skips, self.stats[facts.source], facts.path,
                    self.documents.get(facts.path, {}))
            else:
                state.skips.count(skips, self.stats[facts.source], facts.path)
            account(self.stats, facts, change, read.problem or "; ".join(change.notes) or None)
            position = read.position
            if not read.more:
                return

    async def _resume(self, state: TranscriptState, path: str, position: TailPosition,
                      stored: list[Turn]) -> None:
        """A file read before this run: its parser put back in the state it had at
        ``position`` (memoryd.ingest.context.replay) where the format needs it, and the
        exchange still open there restored (else the one stored with the offset)."""
        if state.from_start:
            opened = await self.off_loop(replay, path, position, state.parser,
                                         self.config.watch.max_line_bytes)
            if opened is not None:  # what the parser counted there was reported then
                state.open_turns = opened
                state.all_reported()
                state.skips.all_counted(state.parser.skipped)
                return
            state.parser = make_parser(state.fmt, cwd=state.cwd, path=path)
        state.open_turns = stored
        known = await self.db(self.indexer.chunk_records, path) \
            if state.parser.wants_known else None
        state.parser.resume(stored, known)

    def _read(self, facts: FileFacts, position: TailPosition | None,
              state: TranscriptState) -> tuple[TailRead, list[Chunk]]:
        if state.document:
            read = read_document(Path(facts.path), state.fmt)
        else:
            read = read_appended(Path(facts.path), position, self.config.watch.max_line_bytes,
                                 text=text_lines(state.fmt))
        if read.restarted:  # truncated or replaced: start over, record ids dedupe
            state.parser = make_parser(state.fmt, cwd=state.cwd, path=facts.path)
            state.open_turns = []
            state.reported = {}
            state.recounted = True
            state.skips.restart()
        turns: list[Turn] = []
        for line in read.lines:
            turns.extend(state.parser.feed(line))
        turns.extend(state.parser.flush())
        if not turns:
            return read, []
        combined = state.open_turns + turns
        last_user = max((i for i, t in enumerate(combined) if t.role == "user"), default=0)
        # a document is read whole every time: no exchange stays open between two reads
        state.open_turns = [] if state.document else combined[last_user:]
        chunks = chunk_exchanges(combined)
        if not state.document:
            return read, chunks
        if state.indexed is None:
            state.pending = frozenset()  # read once: nothing kept yet
            return read, chunks
        keys = [hash((chunk.chunk_id, chunk.record_ids, chunk.text)) for chunk in chunks]
        state.pending = frozenset(keys)
        return read, [c for c, key in zip(chunks, keys) if key not in state.indexed]
