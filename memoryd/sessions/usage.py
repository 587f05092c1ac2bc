"""Judging what became of the memory injected into sessions (docs/outcomes.md).

The injection log records each entry a session got (memoryd.sessions.registry,
memoryd.store.usage: a row waiting to be judged). A session is judged — its transcript read
from its file, every entry injected into it given an outcome by memoryd.sessions.outcomes —

- when it ends (the SessionEnd hook), in the background;
- when it has been quiet for ``outcomes.idle_s`` (no hook event, no new transcript line),
  by a check every minute: sessions whose harness sends no SessionEnd, or that crashed;
- when ``memory explain`` shows it, so that what it shows is current.

A session is judged again when it moves on after being judged (a resumed session); the
outcome of each entry is the one its whole session gives it. Of a session a purge sealed (its
transcript holds the purged text: memoryd.maintenance.purge) only what it did since is read,
and the outcomes judged before are kept as the purge left them, so none quotes the text again.
Reading and judging run off the database thread (a transcript can be megabytes); the verdicts
are stored in one transaction.
With ``[outcomes] enabled = false`` nothing is recorded or judged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memoryd.background import Background
from memoryd.ingest.context import cwd_hint
from memoryd.ingest.document import transcript_lines
from memoryd.ingest.transcript.actions import HARNESSES, StepReader
from memoryd.regular_file import is_regular
from memoryd.sessions.outcome_rules import rule_of
from memoryd.sessions.outcomes import Worded, judge_rule, read_actions
from memoryd.settings import Settings
from memoryd.store.database import Store
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry
from memoryd.store.thread import DatabaseThread
from memoryd.store.usage import Usage

log = logging.getLogger(__name__)
#: How often quiet sessions are looked for, and how many are judged at a time.
CHECK_EVERY_S = 60.0
BATCH = 20


def judge_transcript(path: str, harness: str, rows: Sequence[dict[str, Any]],
                     entries: Mapping[str, Worded], session: str | None = None,
                     sealed: float | None = None
                     ) -> list[tuple[str, str, str, list[Any], float | None]]:
    """Read a session's transcript and judge each injected entry (``rows``: its injections,
    memoryd.store.usage.Usage.session_rows; ``entries``: the injected entries, by id)
    → (entry, outcome, why, evidence, at). The
    transcript is read in its harness's format (memoryd.ingest.transcript.actions), a harness
    without one as ``generic``; of a file holding many sessions (Aider's), ``session``'s.
    ``sealed``: only the steps since then (a purge sealed the session), and of the rows,
    those not judged before then."""
    fmt = harness if harness in HARNESSES else "generic"
    reader = StepReader(fmt, cwd_hint(fmt, path))
    steps = []
    for line in transcript_lines(path, fmt):
        steps.extend(reader.feed(line))
    steps.extend(reader.flush())
    if reader.many_sessions and session is not None:
        steps = [s for s in steps if s.record_id.startswith(session + ":")]
    if sealed is not None:
        steps = [s for s in steps if s.timestamp is not None and s.timestamp >= sealed]
        rows = [r for r in rows if r["outcome"] is None or r["injected"] >= sealed]
    actions = read_actions(steps)
    verdicts = []
    for row in rows:
        entry = entries.get(row["entry"])
        if entry is None:  # purged since: nothing to judge it by
            continue
        outcome = judge_rule(rule_of(entry.kind, entry.text, entry.polarity, entry.key), steps,
                             row["injected"], actions)
        evidence = outcome.as_dict()["evidence"]
        at = next((e["ts"] for e in evidence if e.get("ts") is not None), None)
        verdicts.append((row["entry"], outcome.outcome, outcome.why, evidence, at))
    return verdicts


class UsageJudge:
    def __init__(self, store: Store, db: DatabaseThread, background: Background,
                 settings: Settings) -> None:
        self.store = store
        self.db = db
        self.background = background
        self.settings = settings
        self.usage = Usage(store)
        self._running: dict[str, asyncio.Task[int | None]] = {}

    @property
    def enabled(self) -> bool:
        return self.settings.config.outcomes.enabled

    async def judge(self, session: str) -> int | None:
        """Judge ``session`` now; the number of outcomes that changed (None: its transcript
        cannot be read). A session being judged already is waited for, not judged twice."""
        task = self._running.get(session)
        if task is None:
            task = self._running[session] = self.background.spawn(self._judge(session))
            task.add_done_callback(lambda _: self._running.pop(session, None))
        return await asyncio.shield(task)

    async def _judge(self, session: str) -> int | None:
        store = self.store
        assert store is not None

        def gather() -> tuple[dict[str, Any] | None, list[dict[str, Any]],
                              dict[str, StoredEntry]]:
            known = store.sessions.get(session)
            sealed = self.usage.sealed(session)
            rows = self.usage.session_rows(session)
            uids = [r["entry"] for r in rows]
            entries: dict[str, StoredEntry] = {}
            for start in range(0, len(uids), 500):
                for entry in store.entries(EntryQuery().uids(uids[start:start + 500])):
                    entries[entry.uid] = entry
            found_session = {"harness": known.harness, "transcript_path": known.transcript_path,
                             "source": known.source, "sealed": sealed} if known else None
            return found_session, rows, entries

        found, rows, entries = await self.db(gather)
        if found is None or not rows:
            return 0
        path = found.get("transcript_path") or found.get("source")
        if not path or not is_regular(path):
            await self.db(self.usage.mark_judged, session)
            return None
        try:
            verdicts = await asyncio.get_running_loop().run_in_executor(
                None, judge_transcript, path, found["harness"], rows, entries, session,
                found["sealed"])
        except OSError as exc:
            log.info("Session %s not judged: %s", session, exc)
            await self.db(self.usage.mark_judged, session)
            return None
        changed = await self.db(self.usage.save_outcomes, session, verdicts)
        # what was learned from a transcript that may be gone by the next rebuild: on disk now
        await asyncio.to_thread(self.usage.log.sync)
        log.info("Session %s judged: %d entries, %d outcomes changed.", session, len(verdicts),
                 changed)
        return changed

    async def judge_if_due(self, session: str) -> None:
        """Before showing a session: judge it when it has something not judged."""
        if self.enabled and await self.db(self.usage.due, session):
            await self.judge(session)

    def on_session_end(self, session: str) -> None:
        if not self.enabled:
            return

        async def run() -> None:
            try:
                await self.judge(session)
            except Exception:
                log.exception("Judging session %s failed.", session)

        self.background.spawn(run())

    async def judge_quiet_sessions(self) -> None:
        """Every minute: the sessions that ended or went quiet and have something to judge."""
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            if not self.enabled:
                continue
            try:
                quiet = time.time() - self.settings.config.outcomes.idle_s
                for session in await self.db(self.usage.quiet_sessions, quiet, BATCH):
                    await self.judge(session)
            except Exception:  # a bad session must not end the loop
                log.exception("Judging quiet sessions failed.")
