"""Extraction at session end: run the extractor (memoryd/sessions/candidates.py; with an LLM
command configured, memoryd/sessions/llm_extractor.py) over a finished session.

The session's transcript is read again from its file (the source of truth) for the genuine
user messages; candidates are checked against the agent's existing lessons and facts (Jaccard,
then cosine with the real embedder) and the accepted ones are stored through the normal write
path (ledger first) with ``via: extract``, confidence 0.8 and provenance to the session and
message. A lesson the agent knows already, said again in this session, is counted as a
sighting of it (its occurrences, and the session for promotion). A lesson that contradicts one
known is stored beside it (memoryd.passes.corrections). An optional LLM extractor (``[extract]
command``) adds candidates that pass the same filters, within a timeout and a daily call
budget.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import time
from typing import Any

import numpy as np

from memoryd.embedding.vectors import VectorWork
from memoryd.errors import NotFoundError
from memoryd.ingest.context import cwd_hint
from memoryd.ingest.document import transcript_lines
from memoryd.ingest.transcript import make_parser
from memoryd.passes import corrections
from memoryd.passes.runs import PassRuns
from memoryd.redact import redact
from memoryd.regular_file import is_regular
from memoryd.sessions.candidates import EXTRACTED_CONFIDENCE, Candidate, Message, find_candidates
from memoryd.sessions.decisions import MIN_USER_MESSAGES, Decision, decide, dry_run_report
from memoryd.sessions.llm_extractor import llm_prompt, parse_llm_output
from memoryd.sessions.registry import Registry
from memoryd.settings import Settings
from memoryd.store.database import Store
from memoryd.store.query import EntryQuery
from memoryd.store.records import RememberRequest
from memoryd.store.thread import DatabaseThread
from memoryd.store.usage import Usage
from memoryd.text import content_hash
from memoryd.writes import Writes

log = logging.getLogger(__name__)


def program_of(command: str) -> str:
    """The program of an ``[extract] command``, as the log names the command: its arguments
    may hold an API key (``--api-key sk-…``), which the log never shows."""
    try:
        words = shlex.split(command)
    except ValueError:  # refused by the configuration's checks; named all the same
        words = command.split()
    return redact(words[0]) if words else ""


def read_user_messages(path: str, harness: str, session: str) -> list[Message]:
    """The user's messages in ``session``'s transcript. A file that holds many sessions
    (Aider's chat history) gives only those of ``session``."""
    parser = make_parser(harness, cwd=cwd_hint(harness, path), path=path)
    one_session = getattr(parser, "many_sessions", False)
    turns = []
    for line in transcript_lines(path, harness):
        turns.extend(parser.feed(line))
    turns.extend(parser.flush())  # a last prompt Aider had not answered yet
    return [Message(turn.record_id, turn.session_id or session, redact(turn.text),
                    turn.timestamp)
            for turn in turns if turn.role == "user" and turn.sidechain_agent is None
            and not (one_session and turn.session_id != session)]


def is_personal(candidate: Candidate) -> bool:
    """The user's own preferences hold in every project: stored global, not project-scoped
    (``pref.*`` and ``user.*`` facts, how to talk to them, and what they said they prefer:
    "I prefer small commits with imperative messages")."""
    return bool(candidate.key and candidate.key.startswith(("pref.", "user."))) \
        or candidate.category == "communication" or candidate.personal


def _not_again(decision: Decision, taken: dict[tuple[str, str], tuple[str, str]]) -> Decision:
    """An accepted candidate that extraction took from the same message before is not taken
    again: a lesson the user forgot came back when a session was extracted again (`memory
    extract`, or `memory import-history` after an index rebuilt before the extraction marks
    were kept in the outcomes file)."""
    candidate = decision.candidate
    if not decision.accepted or not candidate.message_id:
        return decision
    before = taken.get((candidate.message_id, content_hash(redact(candidate.text))))
    if before is None:
        return decision
    uid, status = before
    return Decision(candidate, False, f"taken from this message before: {uid} ({status})")


class SessionExtractor:
    def __init__(self, writes: Writes, vectors: VectorWork, store: Store, db: DatabaseThread,
                 settings: Settings, registry: Registry, runs: PassRuns) -> None:
        """``writes``: the write path its entries are stored by; ``vectors``: the candidates'
        vectors, for the near-duplicate check; ``runs``: the daemon's runs, where what a
        session corrected is recorded (memoryd.passes.corrections)."""
        self.writes = writes
        self.vectors = vectors
        self.store = store
        self.entries = writes.entries
        self.db = db
        self.settings = settings
        self.registry = registry
        self.runs = runs

    async def run(self, session_id: str, *, dry_run: bool) -> dict[str, Any]:
        session = await self.db(self.registry.named, session_id)  # or the start of its id
        return await self.extract(session, dry_run=dry_run)

    async def extract(self, session: dict[str, Any], *, dry_run: bool) -> dict[str, Any]:
        """Extraction over one session of the registry (its id, harness, agent, cwd and
        transcript: ``transcript_path`` or ``source``): session end's, and import-history's
        over past sessions (memoryd.sessions.history)."""
        session_id = session["id"]
        path = session.get("transcript_path") or session.get("source")
        if not path or not is_regular(path):
            raise NotFoundError(
                f"session {session_id} has no readable transcript ({path or 'none'})")
        messages = await asyncio.get_running_loop().run_in_executor(
            None, read_user_messages, path, session["harness"], session_id)
        result: dict[str, Any] = {"session": session_id, "agent": session["agent"],
                                  "messages": len(messages), "report": [], "stored": []}
        if len(messages) < MIN_USER_MESSAGES:
            result["reason"] = f"extraction needs at least {MIN_USER_MESSAGES}"
            return result
        candidates = find_candidates(messages) + await self.llm_candidates(messages)
        existing = await self.db(self._existing, session["agent"])
        cosine = await self._cosine(candidates, existing)
        decisions = decide(candidates, [(uid, text, key) for uid, text, key, _ in existing], cosine)
        taken = await self.db(self._taken_before, session["agent"], session_id)
        decisions = [_not_again(decision, taken) for decision in decisions]
        result["report"] = dry_run_report(messages, decisions)
        if not dry_run:
            accepted = [d.candidate for d in decisions if d.accepted]
            said = {m.message_id: m.timestamp for m in messages if m.timestamp is not None}
            result["stored"] = await self._store(session, accepted, said)
            result["seen_again"] = await self._seen_again(session, decisions, said)
            await self.db(self.mark_extracted, session_id)
        return result

    def _taken_before(self, agent: str, session: str) -> dict[tuple[str, str], tuple[str, str]]:
        """(message id, text hash) → (id, status) of each entry extraction took from this
        session's messages before, whatever became of it since (forgotten, superseded)."""
        return {(e["message_id"], e["hash"]): (e["uid"], e["status"])
                for e in self.store.entry_fields(
                    EntryQuery().agent(agent).session(session).vias(["extract"]),
                    ("uid", "message_id", "hash", "status")) if e["message_id"]}

    def _existing(self, agent: str) -> list[tuple[str, str, str | None, int]]:
        return [(e["uid"], e["text"], e["key"], e["id"]) for e in self.store.entry_fields(
            EntryQuery().agent(agent).active().kinds(["lesson", "fact"]),
            ("uid", "text", "key", "id"))]

    async def _cosine(self, candidates: list[Candidate],
                      existing: list[tuple[str, str, str | None, int]]) -> Any:
        if self.vectors.threads.embedder is None or not candidates:
            return None
        texts = [c.text for c in candidates]
        vectors: dict[str, np.ndarray] = {}
        for text, pair in zip(texts, await self.vectors.vectors_for(texts)):
            if pair is not None:
                vectors[text] = pair[0]
        await self.db.settled()  # the vectors of the writes answered before are stored
        stored = await self.db(self.store.vectors_by_rowids, [row[3] for row in existing])
        for _uid, text, _key, rowid in existing:
            if rowid in stored:
                vectors[text] = stored[rowid]

        def cosine(a: str, b: str) -> float:
            if a in vectors and b in vectors:
                return float(vectors[a] @ vectors[b])
            return 0.0

        return cosine

    @staticmethod
    def _request(session: dict[str, Any], candidate: Candidate,
                 said: float | None) -> RememberRequest:
        """``said``: when the user's message said it. The entry is dated then: a past
        session's value, extracted later (import-history), is an earlier value of its key, not
        a newer one, and does not correct what was said after it."""
        return RememberRequest(
            agent=session["agent"], category=candidate.category, kind=candidate.kind,
            text=redact(candidate.text), key=candidate.key, polarity=candidate.polarity,
            confidence=EXTRACTED_CONFIDENCE, session=candidate.session_id,
            message_id=candidate.message_id or None, writer="extractor",
            via="extract", cwd=None if is_personal(candidate) else session.get("cwd"),
            force=True, created=said if said is not None and said <= time.time() else None)

    async def _store(self, session: dict[str, Any], accepted: list[Candidate],
                     said: dict[str, float]) -> list[str]:
        """``said``: when each user message was said (by its id)."""
        stored = []
        replies = []
        for candidate in accepted:
            reply = await self.writes.remember(self._request(
                session, candidate, said.get(candidate.message_id)))
            replies.append(reply)
            if reply.stored:
                stored.append(reply.entry.uid)
        if any(reply.corrects for reply in replies):  # a later session said otherwise
            await self.db(corrections.record, self.runs, replies)
        log.info("Session %s: stored %d extracted entries.", session["id"], len(stored))
        return stored

    async def _seen_again(self, session: dict[str, Any], decisions: list[Decision],
                          said: dict[str, float]) -> list[str]:
        """The lessons this session said again (rejected as duplicates of existing ones):
        each counted as a sighting of the lesson it repeats (Entries.seen_again), so that a
        lesson said in three sessions is proposed as a rule (memoryd.passes.promote)."""
        counted = []
        for decision in decisions:
            if decision.duplicate_of is None or decision.candidate.kind != "lesson":
                continue
            entry = await self.db(self.entries.seen_again,  # a sighting dated when said
                                  self._request(session, decision.candidate,
                                                said.get(decision.candidate.message_id)),
                                  decision.duplicate_of)
            if entry is not None:
                counted.append(entry.uid)
        if counted:
            log.info("Session %s: %d lessons seen again, counted.", session["id"], len(counted))
        return counted

    def mark_extracted(self, session_id: str, ts: float | None = None) -> None:
        """Extraction read the session (at ``ts``, else now): also in the outcomes file, so
        that a rebuilt index does not extract it again (database thread)."""
        Usage(self.store).mark_extracted(session_id, time.time() if ts is None else ts)

    async def llm_candidates(self, messages: list[Message]) -> list[Candidate]:
        """The optional LLM extractor: a command with the prompt on stdin and JSON on stdout.
        Whatever befalls it, the extraction goes on with the rule-based candidates (a command
        that could not be split into words took them down with it)."""
        config = self.settings.config.extract
        if not config.command:
            return []
        try:
            return await self._run_llm(config.command, config.daily_calls, config.timeout_s,
                                       messages)
        except Exception:
            log.exception("LLM extractor %r failed; the rule-based entries are kept.",
                          program_of(config.command))
            return []

    async def _run_llm(self, command: str, daily_calls: int, timeout_s: float,
                       messages: list[Message]) -> list[Candidate]:
        store = self.store
        assert store is not None
        day_key = f"llm_calls:{time.strftime('%Y-%m-%d')}"
        used = int(await self.db(store.meta, day_key) or 0)
        if used >= daily_calls:
            log.warning("LLM extractor skipped: the daily budget of %d calls is used.",
                        daily_calls)
            return []
        try:
            process = await asyncio.create_subprocess_exec(
                *shlex.split(command), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except (OSError, ValueError) as exc:  # not started: no call of the day's budget
            log.error("LLM extractor %r did not start: %s", program_of(command), exc)
            return []

        def count() -> None:
            with store.transaction():
                store.set_meta(day_key, str(used + 1))

        await self.db(count)
        try:
            stdout, _ = await asyncio.wait_for(
                process.communicate(llm_prompt(messages).encode("utf-8")), timeout_s)
        except TimeoutError:
            process.kill()
            await process.wait()
            log.error("LLM extractor timed out after %g s.", timeout_s)
            return []
        return parse_llm_output(stdout.decode("utf-8", errors="replace"), messages)
