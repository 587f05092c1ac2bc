"""Wire methods about agents' sessions: hooks, the memory block, explain, sessions, extraction.

The database side lives in :mod:`memoryd.sessions.registry` and :mod:`memoryd.sessions.context`;
this module is the asynchronous half the daemon dispatches to. It works through the daemon's
parts (:mod:`memoryd.server.parts`), never through the daemon.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import time
from functools import partial
from typing import Any

from memoryd_client.hooks import SPOOL_NAME, canonical, carries_context, native, read_spool, render

from memoryd.errors import BadParamsError, ForbiddenError, MemorydError
from memoryd.names import path_problem
from memoryd.passes.runs import PassRuns
from memoryd.project import project_of
from memoryd.redact import redact, without_secrets
from memoryd.server.params import Params
from memoryd.server.parts import Parts
from memoryd.server.replies import entry_reply
from memoryd.sessions.context import (
    DEFAULT_BUDGET_CHARS,
    PROMPT_BUDGET_CHARS,
    Block,
    ContextBuilder,
    prompt_question,
)
from memoryd.sessions.explain import describe
from memoryd.sessions.extractor import SessionExtractor
from memoryd.sessions.guard_cache import TERMS_FILE
from memoryd.sessions.hook_payload import normalize
from memoryd.sessions.mcp_reads import (
    ANCESTRY_EVENTS,
    KEEP_SESSIONS,
    READ_TOOLS,
    STARTED_SLACK_S,
    Reader,
    ancestors,
    read_block,
    session_of,
)
from memoryd.sessions.registry import HARNESS_AGENTS, Registry
from memoryd.sessions.tool_guard import ToolGuard
from memoryd.sessions.usage import UsageJudge
from memoryd.store.durable import refused_by_disk
from memoryd.store.query import EntryQuery
from memoryd.store.records import RememberRequest, StoredEntry
from memoryd.store.usage import RANKINGS, USABLE_KINDS
from memoryd.text import scrub_surrogates

log = logging.getLogger(__name__)


class SessionMethods:
    def __init__(self, parts: Parts, runs: PassRuns) -> None:
        """``runs``: the daemon's pass runs (a session's corrections are recorded there)."""
        self.parts = parts
        self.registry = Registry(parts.store)
        self.contexts = ContextBuilder(parts.searcher, parts.store,
                                       parts.settings.config.context.shared_agents,
                                       parts.settings.memory_dir,
                                       unused_days=self._unused_days)
        self.extractor = SessionExtractor(parts.writes, parts.vectors, parts.store, parts.db,
                                          parts.settings, self.registry, runs)
        self.usage = UsageJudge(parts.store, parts.db, parts.background, parts.settings)
        self.guard = ToolGuard(parts.store, parts.db, parts.settings.memory_dir,
                               parts.settings.config.state_dir / TERMS_FILE)
        #: each live session's hook ancestors, newest last (memoryd.sessions.mcp_reads)
        self.hook_pids: dict[str, tuple[int, ...]] = {}

    def methods(self) -> dict[str, Any]:
        return {"context": self.m_context, "hook": self.m_hook, "explain": self.m_explain,
                "extract": self.m_extract, "session": self.m_session, "sessions": self.m_sessions,
                "usage": self.m_usage, "mcp_read": self.m_mcp_read}

    def _unused_days(self) -> float:
        """Selection by use (memoryd.store.usage.Disuse) as configured now: off with outcomes."""
        outcomes = self.parts.settings.config.outcomes
        return outcomes.unused_days if outcomes.enabled else 0.0

    @property
    def tracking(self) -> bool:
        """Entries injected into sessions are counted and judged (``[outcomes] enabled``)."""
        return self.parts.settings.config.outcomes.enabled

    async def build_context(self, agent: str, cwd: str | None, prompt: str | None, budget: int,
                            only_relevant: bool = False) -> Block:
        if prompt:  # what was asked: a key pasted into it is no part of the question
            asked = without_secrets(prompt).strip()
            prompt = prompt_question(asked) if asked else None
        vector, words = await asyncio.gather(
            self.parts.threads.query(prompt), self.parts.search.question_words(prompt)) \
            if prompt else (None, {})
        return await self.parts.db(lambda: self.contexts.build(
            agent, cwd=cwd, prompt=prompt, prompt_vector=vector, prompt_words=words,
            budget=budget, only_relevant=only_relevant))

    async def m_context(self, params: Params) -> dict[str, Any]:
        agent = params.agent()
        assert agent is not None and self.registry is not None
        prompt = params.text("prompt", max_len=20_000)
        if prompt is not None and not prompt.strip():
            raise BadParamsError("context: prompt must not be empty (without one: the "
                                 "session-start block)")
        budget = params.integer("budget", low=0, high=1_000_000, default=DEFAULT_BUDGET_CHARS
                                if prompt is None else PROMPT_BUDGET_CHARS)
        block = await self.build_context(agent, params.path("cwd"), prompt, budget,
                                         only_relevant=prompt is not None)
        session = params.text("session", max_len=200)
        if session:
            self.log_injection(session, agent, "context", block, budget)
        return {"text": block.text, "chars": len(block.text), "budget": budget,
                "items": block.explain()}

    async def m_hook(self, params: Params) -> dict[str, Any]:
        """One lifecycle event from an agent's hook. The hook forwards the agent's stdin
        unparsed (``raw``); the reply carries the ``output`` the hook prints, in the agent's
        format."""
        return await self.hook(params, replayed=False)

    async def hook(self, params: Params, *, replayed: bool) -> dict[str, Any]:  # noqa: C901
        """A hook request, live or ``replayed`` from the spool (a request the client wrote
        there while the daemon was down: no context is shown, no process is asked about)."""
        harness = params.choice("harness", tuple(HARNESS_AGENTS), default=None)
        event = params.text("event", required=True, max_len=100)
        assert event is not None
        payload = params.raw.get("payload")
        if "raw" in params.raw:
            try:
                payload = scrub_surrogates(
                    json.loads(params.text("raw", default="", max_len=8_000_000) or "{}"))
            except (ValueError, RecursionError):
                payload = None
            if not isinstance(payload, dict):
                return {"context": None, "output": "",
                        "problem": "stdin is not a JSON object; ignored"}
        if harness is None or not isinstance(payload, dict):
            raise BadParamsError("hook: needs harness and a payload map")
        payload = normalize(harness, payload)
        ran_in = params.raw.get("cwd")  # the directory the hook ran in: the session's
        if (not isinstance(payload.get("cwd"), str) or not payload["cwd"]) \
                and isinstance(ran_in, str) and ran_in and path_problem(ran_in) is None:
            payload["cwd"] = ran_in
        sent = payload.get("hook_event_name")
        sent = sent if isinstance(sent, str) and sent else None
        event = canonical(harness, sent or event)  # Gemini's BeforeAgent: UserPromptSubmit
        name = sent or native(harness, event)  # the agent's own name, for its output
        if event in ("PreToolUse", "PostToolUse"):  # every tool call: no registry write, no search
            return await self.tool_call(harness, payload, event, name) if not replayed else \
                {"context": None, "output": ""}
        ts = params.time("ts") or time.time()
        agent = HARNESS_AGENTS[harness]
        session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) \
            and path_problem(payload["cwd"]) is None else None
        transcript = payload.get("transcript_path")
        transcript = transcript if isinstance(transcript, str) else None
        registry = self.registry
        context = None
        if session and not replayed:
            self._remember_pids(session, event, params)
        if session:
            if event == "SessionStart":
                await self.parts.db(registry.register, session, harness, agent, cwd, transcript, ts)
            else:
                if await self.parts.db(registry.session, session) is None:
                    await self.parts.db(registry.register, session, harness, agent, cwd,
                                        transcript, ts)
                last = payload.get("last_assistant_message")
                await self.parts.db(registry.touch, session, ts,
                                     redact(last) if isinstance(last, str) else None,
                                     event == "SessionEnd")
        shown = not replayed and carries_context(harness, event)  # the agent takes context here
        if event == "SessionStart" and shown:
            block = await self.build_context(agent, cwd, None, DEFAULT_BUDGET_CHARS)
            self.log_injection(session, agent, event, block, DEFAULT_BUDGET_CHARS)
            context = block.text or None
        elif event == "UserPromptSubmit" and shown and isinstance(payload.get("prompt"), str) \
                and payload["prompt"].strip():  # an image alone comes with an empty prompt
            block = await self.build_context(agent, cwd, payload["prompt"], PROMPT_BUDGET_CHARS,
                                             only_relevant=True)
            if block.items:
                self.log_injection(session, agent, event, block, PROMPT_BUDGET_CHARS)
                context = block.text
        elif event == "PostCompact" and isinstance(payload.get("compact_summary"), str) \
                and payload["compact_summary"].strip():
            await self.parts.writes.remember(RememberRequest(
                agent=agent, category="session", kind="summary",
                text=payload["compact_summary"][:32_000], session=session,
                writer=f"{agent} (hook)", cwd=cwd, force=True))
        elif event == "SessionEnd" and session:
            self.on_session_end(session)
        return {"context": context, "output": render(event, context, None, harness, name)}

    def log_injection(self, session: str | None, agent: str, event: str, block: Block,
                      budget: int) -> None:
        """Log what a block held (and count its entries as injected, to be judged), after the
        reply: queued on the database thread now, so that what comes after it there (the
        session's next prompt, ``memory injections``) finds it, but the agent does not wait
        for its commit (5-10 ms of a session's start). A crash before it loses one line of
        bookkeeping, never what anybody wrote."""
        logged = self.parts.db.submit(self.registry.log_injection, session, agent, event, block,
                                      budget, self.tracking)

        async def commit() -> None:
            await logged

        self.parts.background.spawn(commit())

    def _remember_pids(self, session: str, event: str, params: Params) -> None:
        """The processes a session's hook came from, to tell which session an MCP server
        serves (memoryd.sessions.mcp_reads); forgotten when the session ends."""
        if event == "SessionEnd":
            self.hook_pids.pop(session, None)
            return
        if event not in ANCESTRY_EVENTS or params.caller is None:
            return
        chain = ancestors(params.caller.pid)
        if not chain:
            return
        self.hook_pids.pop(session, None)
        self.hook_pids[session] = chain
        while len(self.hook_pids) > KEEP_SESSIONS:
            del self.hook_pids[next(iter(self.hook_pids))]

    async def m_mcp_read(self, params: Params) -> dict[str, Any]:
        """Entries an agent read through its MCP tools (``tool``: memory_search, …), counted
        as injected into its session as a block and a prompt's items are, then judged like
        them. The server sends what it knows to find the session by: ``cwd``, ``started``,
        ``session`` (from its environment); the daemon sees which process it is. Replies the
        session found (None: none; nothing recorded) and how many entries count."""
        agent = params.agent()
        tool = params.choice("tool", READ_TOOLS)
        uids = params.raw.get("entries")
        if tool is None or not isinstance(uids, list) or len(uids) > 1000 \
                or not all(isinstance(u, str) and 0 < len(u) <= 200 for u in uids):
            raise BadParamsError("mcp_read: needs tool and entries, a list of entry ids")
        cwd = params.path("cwd")
        assert agent is not None
        bound = params.caller.agent if params.caller is not None else None
        if bound is not None and bound != agent:
            raise ForbiddenError(f"mcp_read: this connection is bound to agent {bound!r}")
        reader = Reader(agent, project_of(cwd) if cwd else None,
                        ancestors(params.caller.pid if params.caller is not None else None),
                        params.time("started"), params.text("session", max_len=200))
        store, usage = self.parts.store, self.usage.usage
        assert store is not None
        hook_pids = dict(self.hook_pids)

        def record() -> dict[str, Any]:
            seen_since = (reader.started or 0.0) - STARTED_SLACK_S
            session = session_of(
                reader, usage.session_ended(reader.session) if reader.session else None,
                usage.live_sessions(agent, seen_since), hook_pids)
            if session is None:
                return {"session": None, "entries": 0}
            found = [e for uid in dict.fromkeys(uids) if (e := store.entry_by_uid(uid))]
            block = read_block(found)
            if block.items:
                self.registry.log_injection(session, agent, f"MCP {tool}", block,
                                            len(block.text), self.tracking)
            return {"session": session, "entries": len(block.items)}

        return await self.parts.db(record)

    async def tool_call(self, harness: str, payload: dict[str, Any], event: str = "PreToolUse",
                        name: str | None = None) -> dict[str, Any]:
        """A pending tool call (PreToolUse): the lessons it goes against as context next to it
        (or, for a person's hard rule with ``context.hard_rules`` on, the call denied); nothing
        when it goes against none (memoryd.sessions.tool_guard). A call just made (PostToolUse:
        Gemini CLI's AfterTool, which can add context where its BeforeTool cannot): the lessons
        it went against, never a deny. An agent that takes no context there (Gemini's
        BeforeTool, Cursor's beforeShellExecution) is answered only with a deny. Logged as an
        injection of the session in the background, so that ``memory explain`` shows it."""
        settings = self.parts.settings.config.context
        tool = payload.get("tool_name")
        done = event == "PostToolUse"
        shows = carries_context(harness, event)
        if not settings.tool_lessons or not isinstance(tool, str) \
                or not (shows or (settings.hard_rules and not done)):
            return {"context": None, "output": ""}
        agent = HARNESS_AGENTS[harness]
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) \
            and path_problem(payload["cwd"]) is None else None
        agents = self.contexts.scope(agent, None).given
        call_id = payload.get("tool_use_id")
        verdict = await self.guard.check(agents, cwd, tool, payload.get("tool_input"),
                                         call_id if isinstance(call_id, str) else "",
                                         settings.hard_rules and not done, done=done)
        if verdict is None or not (shows or verdict.deny):
            return {"context": None, "output": ""}
        session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
        block = verdict.block()
        self.log_injection(session, agent, event, block, len(block.text))
        return {"context": verdict.context, "deny": verdict.deny,
                "output": render(event, verdict.context, verdict.deny, harness, name)}

    def on_session_end(self, session: str) -> None:
        """Queue extraction and the judging of what was injected (memoryd.sessions.usage);
        they run in the background, never on the hook's path."""
        self.usage.on_session_end(session)

        async def extract() -> None:
            try:
                await self.extractor.run(session, dry_run=False)
            except MemorydError as exc:
                log.info("No extraction for session %s: %s", session, exc.message)
            except Exception as exc:
                if refused_by_disk(exc):  # a full or read-only disk: said, not a bug
                    log.warning("Extraction of session %s failed: %s", session, exc)
                else:
                    log.exception("Extraction of session %s failed.", session)

        self.parts.background.spawn(extract())

    async def m_extract(self, params: Params) -> dict[str, Any]:
        session = params.text("session", required=True, max_len=200)
        assert session is not None
        return await self.extractor.run(session, dry_run=params.flag("dry_run"))

    async def replay_spool(self) -> None:
        """Hook events spooled while the daemon was down, in order."""
        path = self.parts.settings.config.state_dir / SPOOL_NAME
        if not path.exists():
            return
        replaying = path.with_name(SPOOL_NAME + ".replaying")
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # clients append under the same lock
            os.replace(path, replaying)
        finally:
            os.close(fd)
        replayed = 0
        for record in read_spool(replaying.read_bytes()):
            try:
                await self.hook(Params("hook", record), replayed=True)
                replayed += 1
            except MemorydError as exc:
                log.warning("Skipping a spooled hook event: %s", exc)
        replaying.unlink()
        log.info("Replayed %d spooled hook events.", replayed)

    def explained(self, session: str | None) -> list[dict[str, Any]]:
        """A session's injections (the latest session's by default), each item with its text,
        the reason it was there, in words, and what became of it (its outcome in the session,
        memoryd.store.usage) (database thread)."""
        store = self.parts.store
        found: dict[str, StoredEntry | None] = {}
        described = []
        outcomes: dict[str, dict[str, Any]] = {}
        for injection in self.registry.injections(session):
            if injection["session"] and not outcomes:
                outcomes = {row["entry"]: row
                            for row in self.usage.usage.session_rows(injection["session"])}
            for item in injection["items"]:
                if item.get("id") and item["id"] not in found:
                    found[item["id"]] = store.entry_by_uid(item["id"])
            described.append(describe(injection, {k: v for k, v in found.items() if v},
                                      outcomes))
        return described

    async def m_explain(self, params: Params) -> dict[str, Any]:
        session = params.text("session", max_len=200)
        if session is not None:  # or the start of its id
            session = await self.parts.db(partial(self.registry.resolve, injected=True), session)
        latest = session or await self.parts.db(self.registry.latest_injected)
        if latest:  # show outcomes as they are now
            await self.usage.judge_if_due(latest)
        injections = await self.parts.db(self.explained, session)
        reply: dict[str, Any] = {"session": session, "injections": injections}
        if not injections and latest:  # its log was lost with an index rebuilt before the
            # outcomes file kept it: what the session was given, as its outcomes tell it
            given = await self.parts.db(self.usage.usage.session_rows, latest)
            if given:
                reply.update(session=latest, unlogged=[
                    {"id": row["entry"], "outcome": row["outcome"]} for row in given])
        return reply

    async def m_session(self, params: Params) -> dict[str, Any]:
        given = params.text("id", required=True, max_len=200)
        assert given is not None
        found = await self.parts.db(self.registry.named, given)  # or the start of its id
        session_id = found["id"]
        store = self.parts.store

        def extracted() -> list[dict[str, Any]]:
            return [entry_reply(e) for e in store.entries(
                EntryQuery().session(session_id).vias(["extract", "api"]), "oldest")]

        def exchanges() -> int:  # its transcript's chunks in the index
            return store.count_matching(EntryQuery().session(session_id).vias(["watch"])
                                        .active())

        await self.usage.judge_if_due(session_id)
        return {"session": found, "entries": await self.parts.db(extracted),
                "exchanges": await self.parts.db(exchanges),
                "injections": await self.parts.db(self.explained, session_id)}

    async def m_sessions(self, params: Params) -> dict[str, Any]:
        agent = params.agent(required=False)
        project = params.path("project")
        if project:  # a directory inside a repository, or a worktree of it: its project
            project = project_of(project)
        limit = params.integer("limit", default=50, low=1, high=10_000)
        offset = params.integer("offset", default=0, low=0, high=10_000_000)
        return await self.parts.db(self.registry.sessions, agent, project, limit, offset)



    async def m_usage(self, params: Params) -> dict[str, Any]:
        """Entries ranked by what became of them in sessions: ``by`` broken (most broken
        first), followed (most followed first), unused (injected, never followed nor
        broken), or all three; ``agents``, ``kind`` (comma-separated), ``limit`` each."""
        usage = self.usage.usage
        by = params.choice("by", (*RANKINGS, "all"), default="all") or "all"
        agents = params.raw.get("agents")
        if agents is not None and (not isinstance(agents, list)
                                   or not all(isinstance(a, str) for a in agents)):
            raise BadParamsError("usage: agents must be a list of names")
        agents = [a for a in agents or [] if a and a != "*"] or None
        kind = params.text("kind", max_len=200)
        kinds = [k.strip() for k in kind.split(",") if k.strip()] if kind else None
        if kinds and not set(kinds) <= set(USABLE_KINDS):
            raise BadParamsError(f"usage: kind must be among {', '.join(USABLE_KINDS)}")
        limit = params.integer("limit", default=10, low=1, high=1000)

        def rank() -> dict[str, Any]:
            out: dict[str, Any] = {"by": by}
            for name in RANKINGS if by == "all" else (by,):
                out[name] = [{**entry_reply(entry), "usage": record.as_dict()}
                             for entry, record in usage.ranking(name, agents, kinds, limit)]
            return out

        return await self.parts.db(rank)
