"""``memory purge``: the one operation that really deletes, for the day a secret got in anyway.

Everything else in memoryd keeps history (a forget is a status, a pass's change is undoable).
A purge removes what it **selects** and nothing else. It selects an agent's entries — those
created since a time, those whose *text* holds a string (case-insensitive), or both — wherever
memoryd still keeps one: a row of the index, a ``remember`` record of the agent's ledger that
the index does not hold (a write replay skipped as a duplicate), a record of its transcript
archive (a turn whose source was removed), the history of an entry whose lines left their file.
Only the text is matched, and the heading a memory file's entry is filed under (its category:
the heading is the file's text too, and the file keeps both): an agent name, the category
given to an entry written through the API, a tag, a kind, a path that holds the string selects
nothing.

What goes, for good:

- the selected entries' rows, their full-text postings (the FTS5 index is merged so no old
  segment keeps a term), their vectors, their events and marks, with
  ``secure_delete`` on so freed pages are zeroed, and the WAL checkpointed and truncated after;
- every record of theirs in the agent's ledger (remember, status, update, release) and in its
  transcript archive, each file rewritten atomically (:mod:`memoryd.store.purge_files`) with
  every other line kept byte for byte;
- the maintenance passes' changes that name a selected entry, or whose before or after holds
  the string and are the agent's (its entries, its files), with the changes written together
  with them (a notebook and its archive go back together or not at all), in the database and
  in the run log (:mod:`memoryd.store.run_log`);
- what became of the selected entries in sessions (their outcomes), and their items in the
  injection log (``memory explain``), in the database and in the outcomes file
  (:mod:`memoryd.store.usage_log`);
- the agent's sessions whose transcripts hold the string, or whose outcomes quoted it, are
  **sealed** (a ``seal`` line of the outcomes file: memoryd.store.usage_log): the judge no
  longer reads what they did before the purge, so no outcome quotes the string again when
  one is judged anew (resumed, or moved on); the transcripts are the user's files, and the
  reply names them;
- the index a reindex replaced, ``memoryd.db.bak`` (a copy from before the purge of what it
  removes; the files rebuild it); a copy that failed its integrity check
  (``memoryd.db.corrupt-<time>``, kept for the user to look at) is named, not deleted;
- the torn last lines set aside in ``torn/`` (writes never acknowledged) of the agent's
  ledger, the run log and the outcomes file that hold the string or name a selected entry,
  deleted whole;
- the memory tools' events of the agent's files that hold the string, and the
  records of its history archive that do (the versions moved there, and every write's
  record: a big insert is decompressed to look), with every record of a write whose event
  or version goes (``--since``: those written since).

What only mentions the string keeps its place, with the string replaced by ``[PURGED]`` in
that free text alone: a forget's reason in the ledger and in its change (the reason of one of
the agent's changes: it can still be undone), an older version of one of the agent's
entries in its history, what became of an entry in one of the agent's sessions (an outcome's
reason and evidence, and its event), a session's last message, a transcript's open exchange,
the text of another item of a block given to the agent (the injection log). The reply lists
them (the dry run too) beside the entries it removes; anything else — the other entries and
every field of their records — is left byte for byte, so a rebuild of the index restores
every entry the purge did not select exactly as before
(``tests/maintenance/test_purge_property.py``).

It is recorded as a ``purge`` event (``memory history purge:AGENT``) with the ids and
counts, never the matched text. Files are the user's: a purged entry that came from a watched
file comes back when the file is indexed again, so the reply names those files.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memoryd.ingest.document import transcript_lines
from memoryd.ingest.transcript.actions import HARNESSES
from memoryd.maintenance.purge_match import (
    DROP,
    SCRUB,
    ChangeFilter,
    holds_text,
    json_value,
    scrub_texts,
)
from memoryd.maintenance.purge_records import Mention, PurgedEntry, PurgeReport
from memoryd.regular_file import is_regular
from memoryd.store.archive import TRANSCRIPT_PREFIX, AgentArchive, meta_key
from memoryd.store.database import Store
from memoryd.store.durable import TORN_DIR
from memoryd.store.file_versions import history_key
from memoryd.store.integrity import backup, copies, discard
from memoryd.store.ledger import Ledger
from memoryd.store.lexicon import Lexicon, drop_word, unknown_words
from memoryd.store.purge_files import Rewrite, archive_rewrite, ledger_rewrite
from memoryd.store.query import EntryQuery
from memoryd.store.run_log import FILE_NAME as RUN_LOG_FILE
from memoryd.store.run_log import RunLog, run_log_key
from memoryd.store.usage import Usage
from memoryd.store.usage_log import FILE_NAME as USAGE_FILE
from memoryd.store.usage_log import KEY as USAGE_KEY
from memoryd.store.usage_log import UsageLog, purged_items

log = logging.getLogger(__name__)

PURGED = "[PURGED]"
OPEN_EXCHANGE = "transcript:open:"
#: How the reply names what a purge selected that the index does not hold.
WHERE = {"ledger": "only in the ledger", "archive": "only in the transcript archive",
         "history": "only in a memory file's history (its lines left their file)"}


@dataclass
class Plan:
    """What one purge removes and what it scrubs (built by :meth:`Purge.plan`)."""

    entries: list[PurgedEntry] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    events: list[int] = field(default_factory=list)
    scrubbed_events: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    changes: list[int] = field(default_factory=list)
    #: the agent's changes whose reason alone held the text: id → the reason scrubbed
    scrubbed_changes: dict[int, str] = field(default_factory=dict)
    marks: list[str] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)
    #: outcomes (memoryd.store.usage) whose reason or evidence quotes the text: (entry,
    #: session) → (why, evidence) scrubbed
    outcomes: dict[tuple[str, str], tuple[str | None, str | None]] = field(default_factory=dict)
    open_exchanges: dict[str, str] = field(default_factory=dict)
    #: logged blocks (the injection log) without the selected entries' items, the text
    #: scrubbed in the agent's: id → items as stored
    injections: dict[int, str] = field(default_factory=dict)
    mentions: list[Mention] = field(default_factory=list)
    files: dict[str, tuple[Path, str, Rewrite]] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)  # the selected entries' texts
    #: the memory tools' writes whose events go: (uid, time), as the history archive keys them
    tool_writes: set[tuple[str, float]] = field(default_factory=set)
    #: torn last lines set aside that hold the text or name a selected entry
    torn: list[Path] = field(default_factory=list)
    #: the agent's sessions not judged again up to the purge (their transcripts hold the
    #: text, or their outcomes quoted it): session → when
    sealed: dict[str, float] = field(default_factory=dict)
    #: the agent's transcripts that hold the text (the user's files: named, not edited)
    transcripts: set[str] = field(default_factory=set)
    #: the older copies of the index (made before the purge): the one a reindex replaced,
    #: deleted; those that failed their integrity check, named
    copies: list[Path] = field(default_factory=list)

    def mention(self, what: str, where: str) -> None:
        item = Mention(what, where)
        if item not in self.mentions:
            self.mentions.append(item)

    def anything(self) -> bool:
        return bool(self.entries or self.events or self.scrubbed_events or self.changes
                    or self.scrubbed_changes
                    or self.sessions or self.open_exchanges or self.outcomes or self.injections
                    or self.torn or self.sealed
                    or any(r.data is not None for _, _, r in self.files.values()))


class Purge:
    """One purge of one agent's entries (database thread)."""

    def __init__(self, store: Store, ledger: Ledger, archive: AgentArchive, agent: str,
                 since: float | None, match: str | None, *,
                 history: AgentArchive | None = None, run_log: RunLog | None = None,
                 ids: frozenset[str] | None = None) -> None:
        """``ids``: purge exactly these entries (a purge made on another machine, whose
        ``purge`` ledger record a sync brought: memoryd.sync.apply); the ledger then gets
        no purge record of its own, as it holds that one already."""
        self.store, self.ledger, self.archive = store, ledger, archive
        self.ids = ids
        self.history, self.run_log = history, run_log
        self.agent, self.since, self.match = agent, since, match
        self.pattern = re.compile(re.escape(match), re.IGNORECASE) if match else None
        #: the string as a transcript's line may hold it, lower-cased: as it is, or
        #: JSON-escaped (a lower-cased line searched for them is 6 times as fast as the
        #: pattern: a purge reads every transcript of the agent's sessions)
        self.forms = sorted({form.lower() for form in (
            match, json.dumps(match)[1:-1], json.dumps(match, ensure_ascii=False)[1:-1])}) \
            if match else []
        #: the lexicon's stems the purge took out (for the daemon's copy in memory)
        self.words: list[str] = []

    def selects(self, entry: dict[str, Any]) -> bool:
        """Whether an entry (a row, or a record of one) is the agent's and selected: created
        since the time, its text holding the string."""
        if entry.get("agent") != self.agent:
            return False
        if self.ids is not None:
            return str(entry.get("uid", entry.get("id"))) in self.ids
        created = entry.get("created")
        if self.since is not None and not (
                isinstance(created, int | float) and created >= self.since):
            return False
        if self.pattern is None:
            return True
        text, category = entry.get("text"), entry.get("category")
        if isinstance(text, str) and self.pattern.search(text) is not None:
            return True
        return (entry.get("via") == "watch" and isinstance(category, str)
                and not str(entry.get("uid", entry.get("id"))).startswith(TRANSCRIPT_PREFIX)
                and self.pattern.search(category) is not None)

    def holds(self, text: str | None) -> bool:
        if not text or self.pattern is None:
            return False
        return self.pattern.search(text) is not None

    def scrub(self, text: str) -> str:
        assert self.pattern is not None
        return self.pattern.sub(PURGED, text)

    # -- planning -----------------------------------------------------------------------

    def plan(self) -> Plan:
        plan = Plan()
        owners = self.store.owners()
        rows = self.store.entries(EntryQuery().agent(self.agent), "oldest")
        for entry in rows:
            shown = entry.as_dict()  # as a record of it would say (selects, _selected)
            if self.selects(shown):
                plan.entries.append(_selected(shown, entry.rowid))
                plan.ids.add(entry.uid)
                plan.texts.append(entry.text)
        self._select_unindexed(plan, owners)
        self._plan_events(plan, owners)
        kept_hashes = {e.hash for e in rows if e.uid not in plan.ids}
        plan.marks = [f"uid:{uid}" for uid in sorted(plan.ids)] + [
            f"{kind}:{h}" for h in sorted({e.hash for e in plan.entries if e.hash}
                                          - kept_hashes) for kind in ("hash", "release")]
        self._plan_changes(plan, owners)
        self._plan_mentions(plan)
        self._plan_sessions(plan)
        self._plan_injections(plan)
        self._plan_files(plan)
        plan.torn = self._torn(plan)
        plan.copies = copies(self.store.path)
        return plan

    def _torn(self, plan: Plan) -> list[Path]:
        """The torn last lines set aside in ``torn/`` (memoryd.store.durable.mend_tail) of the
        agent's ledger, of the passes' run log and of the outcomes file that hold the text or
        name a selected entry. Each is the bytes of a write never acknowledged: it goes whole."""
        folder = self.store.path.parent / TORN_DIR
        try:
            found = sorted(p for p in folder.iterdir() if p.is_file())
        except OSError:
            return []
        names = (f"ledger-{self.agent}.jsonl.", f"{RUN_LOG_FILE}.", f"{USAGE_FILE}.")
        torn = []
        for path in found:
            if not path.name.startswith(names):
                continue
            try:
                text = path.read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            if self.holds(text) or any(uid in text for uid in plan.ids):
                torn.append(path)
        return torn

    def _select_unindexed(self, plan: Plan, owners: dict[str, str]) -> None:
        """Entries the agent's ledger or transcript archive holds that the index does not."""
        for _, record in self.ledger.read(self.agent):
            entry = record.get("entry")
            if record.get("op") == "remember" and isinstance(entry, dict) \
                    and entry.get("uid") not in owners and self.selects(entry):
                self._add_unindexed(plan, entry, "ledger")
        for _, records in self.archive.read(self.agent):
            for record in records:
                entry = record.get("entry")
                if isinstance(entry, dict) and entry.get("uid") not in owners \
                        and self.selects(entry):
                    self._add_unindexed(plan, entry, "archive")

    @staticmethod
    def _add_unindexed(plan: Plan, entry: dict[str, Any], where: str) -> None:
        uid = str(entry.get("uid"))
        if uid not in plan.ids:
            plan.ids.add(uid)
            plan.texts.append(str(entry.get("text") or ""))
            plan.entries.append(_selected({**entry, "id": uid}, None, WHERE[where]))

    def _plan_events(self, plan: Plan, owners: dict[str, str]) -> None:
        """The selected entries' events; the memory tools' events of the agent's files that
        hold the string; the history of an entry no longer indexed (its lines left their
        file) that is selected; and the events of the agent's other entries that mention the
        string (older versions, outcomes), and of other agents' entries' outcomes in the
        agent's sessions (scrubbed)."""
        tool = f"file:{self.agent}:"
        unindexed: dict[str, list[tuple[int, Any, Any]]] = {}
        sessions = Usage(self.store).sessions_of(self.agent) if self.pattern else set()
        for number, uid, ts, before, after in self.store.stored_events():
            if uid in plan.ids:
                plan.events.append(number)
            elif uid.startswith(tool):
                if self.ids is None and (self.since is None or ts >= self.since) and (
                        self.pattern is None
                        or holds_text(self.pattern, [json_value(before), json_value(after)])):
                    plan.events.append(number)
                    plan.tool_writes.add((uid, float(ts)))
            elif uid.startswith(("file:", "purge:")):
                continue
            elif uid not in owners:
                unindexed.setdefault(uid, []).append((number, before, after))
            elif owners[uid] == self.agent and self.pattern is not None:
                self._scrub_event(plan, uid, number, before, after)
            elif self.pattern is not None and '"session"' in (after or ""):
                self._scrub_event(plan, uid, number, before, after, sessions)
        for uid, events in unindexed.items():
            versions = [v for _, b, a in events for v in (json_value(b), json_value(a))
                        if isinstance(v, dict) and "text" in v]
            if not any(v.get("agent") == self.agent for v in versions):
                continue
            created = next((v.get("created") for v in versions if "created" in v), None)
            if any(self.selects({**v, "uid": uid, "agent": self.agent, "created": created})
                   for v in versions):
                plan.events += [number for number, _, _ in events]
                self._add_unindexed(plan, {**versions[-1], "uid": uid, "created": created},
                                    "history")
            elif self.pattern is not None:
                for number, before, after in events:
                    self._scrub_event(plan, uid, number, before, after)

    def _scrub_event(self, plan: Plan, uid: str, number: int, before: str | None,
                     after: str | None, sessions: set[str] | None = None) -> None:
        """An event of an entry the purge keeps that mentions the string: the string replaced
        in its free text (memoryd.maintenance.purge_match.FREE_TEXT: an older version's text,
        an outcome's reason quoting a session's steps). ``sessions``: of another agent's
        entry, only its outcomes in these sessions (the purged agent's: the outcomes file's
        lines of them are scrubbed alike, and a rebuild makes these events from them)."""
        assert self.pattern is not None
        if not (self.holds(before) or self.holds(after) or "\\u" in (before or "") + (after or "")):
            return  # the events' JSON escapes non-ASCII: look closer only then
        sides = [json_value(before), json_value(after)]
        if sessions is not None and not (isinstance(sides[1], dict)
                                         and sides[1].get("session") in sessions):
            return
        new = [scrub_texts(side, self.pattern, PURGED) for side in sides]
        if new[0] is None and new[1] is None:
            return
        plan.scrubbed_events[number] = (
            json.dumps(new[0], sort_keys=True) if new[0] is not None else before,
            json.dumps(new[1], sort_keys=True) if new[1] is not None else after)
        session = sides[1].get("session") if isinstance(sides[1], dict) else None
        if isinstance(session, str) and "outcome" in sides[1]:
            plan.mention(f"session {session}", "what became of an entry there")
        else:
            plan.mention(uid, "an older version in its history")

    def _plan_changes(self, plan: Plan, owners: dict[str, str]) -> None:
        files = self.store.files.owners()
        changes = ChangeFilter(self.agent, plan.ids, self.pattern, owners, files)
        dropped: set[int] = set()
        groups: set[int] = set()
        rows = self.store.runs.stored()
        scrubbed: dict[int, tuple[str, str]] = {}
        for number, target, why, before, after, group in rows:
            decided = changes.decide(target, why, before, after)
            if decided == DROP:
                dropped.add(number)
                if group:
                    groups.add(group)
            elif decided == SCRUB and why:
                scrubbed[number] = (target, self.scrub(why))
        dropped.update(number for number, *_, group in rows if group in groups)
        plan.changes = sorted(dropped)
        for number, (target, why) in sorted(scrubbed.items()):
            if number not in dropped:
                plan.scrubbed_changes[number] = why
                plan.mention(target, "the reason of a change in the run log")

    def _plan_sessions(self, plan: Plan) -> None:
        """The agent's sessions to seal (memoryd.store.usage.Usage.seal): those whose
        transcripts hold the string (a judge would quote it again from any of its steps) and
        those whose outcomes quoted it (their transcripts may come back)."""
        if not self.forms:
            return
        now = time.time()
        quoted = {session for _, session in plan.outcomes}
        for session in sorted(Usage(self.store).sessions_of(self.agent)):
            known = self.store.sessions.get(session)
            path = known and (known.transcript_path or known.source)
            if known is not None and path and self._transcript_holds(path, known.harness):
                plan.transcripts.add(path)
                plan.sealed[session] = now
            elif session in quoted:
                plan.sealed[session] = now

    def _transcript_holds(self, path: str, harness: str) -> bool:
        if not is_regular(path):
            return False
        try:
            for line in transcript_lines(path, harness if harness in HARNESSES else "generic"):
                low = line.lower()
                if any(form in low for form in self.forms):
                    return True
        except (OSError, ValueError):
            pass
        return False

    def _plan_injections(self, plan: Plan) -> None:
        """The injection log (`memory explain`) without the selected entries' items, and
        with the string scrubbed from the other items' texts in the blocks given to the agent
        (memoryd.store.usage_log.purged_items: the outcomes file's lines alike)."""
        for number, agent, session, stored in self.store.sessions.logged_items():
            items = json.loads(stored)
            kept = purged_items(items, plan.ids, self._scrub_held if agent == self.agent
                                else None)
            if kept is not None:
                plan.injections[number] = json.dumps(kept)
                if any(i.get("id") not in plan.ids and self.holds(i.get("text")) for i in items):
                    plan.mention(f"session {session or '-'}", "a block injected there")

    def _scrub_held(self, text: str) -> str:
        return self.scrub(text) if self.holds(text) else text

    def _plan_mentions(self, plan: Plan) -> None:
        """A session's last message and a transcript's open exchange of the agent's."""
        if self.pattern is None:
            return
        for session, message in self.store.sessions.last_messages(self.agent):
            if self.holds(message):
                plan.sessions[session] = self.scrub(message)
                plan.mention(f"session {session}", "its last message")
        for entry, session, why, evidence in Usage(self.store).reasons_of(self.agent):
            if self.holds(why) or self.holds(evidence):
                plan.outcomes[(entry, session)] = (
                    self.scrub(why) if why else why,
                    json.dumps(_scrub_strings(json_value(evidence), self.scrub),
                               ensure_ascii=False) if self.holds(evidence) else evidence)
                plan.mention(f"session {session}", "what became of an entry there")
        files = self.store.files.paths_of_agent(self.agent)
        for key, value in self.store.meta_with_prefix(OPEN_EXCHANGE).items():
            path = key[len(OPEN_EXCHANGE):]
            if path in files and self.holds(value):
                scrubbed = scrub_texts(json_value(value), self.pattern, PURGED)
                if scrubbed is not None:
                    plan.open_exchanges[key] = json.dumps(scrubbed, ensure_ascii=False)
                    plan.mention(path, "the open exchange of this transcript")

    def _plan_files(self, plan: Plan) -> None:
        ids = plan.ids

        def ledger(record: dict[str, Any]) -> bool | dict[str, Any] | None:
            op, entry = record.get("op"), record.get("entry")
            if op == "remember":
                return isinstance(entry, dict) and entry.get("uid") in ids
            if op in ("status", "update", "release") and str(record.get("id")) in ids:
                return True
            reason = record.get("reason")
            if op == "status" and isinstance(reason, str) and self.holds(reason):
                plan.mention(str(record.get("id")), "the reason of a forget or supersede")
                return {**record, "reason": self.scrub(reason)}
            return None

        def transcripts(record: dict[str, Any]) -> bool:
            entry = record.get("entry")
            return isinstance(entry, dict) and entry.get("uid") in ids

        tail = {"op": "purge", "ts": time.time(), "ids": sorted(ids)} \
            if self.ids is None else None
        plan.files["ledger"] = (self.ledger.path(self.agent), f"ledger:{self.agent}",
                                ledger_rewrite(self.ledger.path(self.agent), ledger, tail))
        plan.files["archive"] = (self.archive.path(self.agent), meta_key(self.agent),
                                 archive_rewrite(self.archive, self.agent, transcripts))
        if self.history is not None:
            plan.files["history"] = (self.history.path(self.agent), history_key(self.agent),
                                     archive_rewrite(self.history, self.agent,
                                                     self._history_drops(plan, self.history)))
        if self.run_log is not None:
            plan.files["passes"] = (self.run_log.path, run_log_key(),
                                    self.run_log.without(set(plan.changes),
                                                         plan.scrubbed_changes))
        outcomes = UsageLog.beside(self.store)
        scrub = (lambda value: _scrub_strings(value, self.scrub)) if self.pattern else \
            (lambda value: value)
        sessions = Usage(self.store).sessions_of(self.agent)
        plan.files["outcomes"] = (outcomes.path, USAGE_KEY,
                                  outcomes.without(ids, sessions, self.holds, scrub,
                                                   self.agent, plan.sealed))

    def _history_drops(self, plan: Plan, history: AgentArchive
                       ) -> Callable[[dict[str, Any]], bool]:
        """Which records of the memory tools' history archive go: the versions moved out of
        the index and the writes (``delta``: as their events hold them, a big insert
        compressed) written since the time and holding the string, and the records of
        every write whose event or version goes, so that no rebuild brings back a write the
        purge took out of the index (memoryd.store.file_history)."""
        def selected(record: dict[str, Any]) -> bool:
            return (self.ids is None and record.get("op") in ("version", "delta")
                    and (self.since is None or float(record.get("ts") or 0) >= self.since)
                    and (self.pattern is None or holds_text(
                        self.pattern, [record.get("before"), record.get("after")])))

        gone = set(plan.tool_writes)
        if self.ids is None:
            for _, records in history.read(self.agent):
                gone.update(_write_of(r) for r in records if selected(r))
        return lambda record: selected(record) or (
            self.ids is None and record.get("op") in ("version", "delta")
            and _write_of(record) in gone)

    # -- running ------------------------------------------------------------------------

    def run(self, dry_run: bool, actor: str) -> PurgeReport:
        plan = self.plan()
        report = self._report(plan, dry_run)
        if dry_run or not plan.anything():
            return report
        with self.store.secure_delete():
            with self.store.transaction():
                for path, key, rewrite in plan.files.values():
                    size = rewrite.write(path)
                    if size is not None:
                        self.store.set_meta(key, str(size))
                self._delete(plan)
                self.store.record_event(f"purge:{self.agent}", "purge", actor, None, {
                    "agent": self.agent, "since": self.since,
                    "matched_text": self.match is not None,
                    "ids": sorted(plan.ids), "events": len(plan.events),
                    "changes": len(plan.changes), "ledger_records": report.ledger_records,
                    "archive_records": report.archive_records,
                    "mentions": len(plan.mentions)}, time.time())
            self.store.optimize_keyword_index()
        self.store.checkpoint_truncate()
        for path in plan.torn:  # after the commit: a purge that failed deleted none
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        if backup(self.store.path) in plan.copies:  # the files rebuild it
            discard(backup(self.store.path))
        log.info("Purged %d entries of agent %s (%d events, %d changes, %d mentions).",
                 len(plan.entries), self.agent, len(plan.events), len(plan.changes),
                 len(plan.mentions))
        return report

    def _report(self, plan: Plan, dry_run: bool) -> PurgeReport:
        watched = [(e.source, e.uid.startswith(TRANSCRIPT_PREFIX)) for e in plan.entries
                   if e.rowid is not None and e.via == "watch" and e.source]
        copies = plan.copies if plan.anything() else []  # a purge of nothing leaves them
        return PurgeReport(
            agent=self.agent, dry_run=dry_run,  # a category holding the text is listed without
            entries=tuple(replace(e, category=self.scrub(e.category)) if self.holds(e.category)
                          else e for e in plan.entries),
            mentions=tuple(plan.mentions),
            events=len(plan.events), changes=len(plan.changes),
            ledger_records=sum(r.dropped + r.scrubbed for k, (_, _, r) in plan.files.items()
                               if k == "ledger"),
            archive_records=sum(r.dropped for k, (_, _, r) in plan.files.items()
                                if k in ("archive", "history")),
            files_still_holding=tuple(sorted({
                source for source, transcript in watched
                if not transcript and Path(source).exists()})),
            transcripts_still_holding=tuple(sorted({
                source for source, transcript in watched
                if transcript and Path(source).exists()} | plan.transcripts)),
            torn=tuple(str(path) for path in plan.torn),
            sealed=tuple(sorted(plan.sealed)),
            backups=tuple(str(p) for p in copies if p == backup(self.store.path)),
            damaged_copies=tuple(str(p) for p in copies if p != backup(self.store.path)))

    def _delete(self, plan: Plan) -> None:
        store = self.store
        store.delete_entries([e.rowid for e in plan.entries if e.rowid is not None])
        store.delete_marks(self.agent, plan.marks)
        store.delete_events(plan.events)
        store.rewrite_events(plan.scrubbed_events)
        store.runs.delete_changes(plan.changes)
        store.runs.set_whys(plan.scrubbed_changes)
        store.replace_meta(plan.open_exchanges)
        store.sessions.set_last_messages(plan.sessions)
        store.sessions.set_logged_items(plan.injections)
        Usage(store).purge(plan.ids, plan.outcomes)
        Usage(store).seal(plan.sealed)
        self.words = self._drop_words(plan.texts)

    def _drop_words(self, texts: list[str]) -> list[str]:
        """The lexicon's words (memoryd.store.lexicon) that only the purged texts had: the
        table keeps each word as written (a password of letters is a word). Returns their
        stems."""
        dropped: list[str] = []
        for stem, word in unknown_words(self.store, Lexicon(0), texts).items():
            if not self.store.word_indexed(word):
                drop_word(self.store, stem)
                dropped.append(stem)
        return dropped


def _selected(entry: dict[str, Any], rowid: int | None, where: str | None = None
              ) -> PurgedEntry:
    """A selected entry, from its map (a row's, or its record's: the file's format, whose
    values it keeps as they are)."""
    return PurgedEntry(uid=entry["id"], rowid=rowid, kind=entry.get("kind"),
                       category=entry.get("category") or "", created=entry.get("created"),
                       via=entry.get("via"), source=entry.get("source"),
                       hash=entry.get("hash"), where=where)


def _write_of(record: dict[str, Any]) -> tuple[str, float]:
    """A history record's write: (uid, time)."""
    ts = record.get("ts")
    return str(record.get("uid")), float(ts) if isinstance(ts, int | float) else 0.0


def _scrub_strings(value: Any, scrub: Callable[[str], str]) -> Any:
    """``value`` (an outcome's evidence: the calls and messages it quotes) with every string
    scrubbed."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [_scrub_strings(v, scrub) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_strings(v, scrub) for k, v in value.items()}
    return value
