"""What both clients are (:class:`memoryd_client.client.Client`, blocking, and
``AsyncClient``, asyncio): their settings, and the daemon's methods, one Python method each,
written once. Each method builds its request's params and hands them to ``call``, which the
clients implement (the transport; in ``AsyncClient`` a coroutine function, so each method
returns an awaitable)."""

from __future__ import annotations

import abc
import itertools
import os

from memoryd_client.errors import BadParamsError
from memoryd_client.paths import socket_text

TYPE_CHECKING = False  # typing costs a `memory` process a few ms; it needs none of it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

DEFAULT_TIMEOUT_S = 30.0


def drop_none(params: dict[str, Any]) -> dict[str, Any]:
    """The params given (a call's options left out are not sent: the daemon's defaults hold)."""
    return {k: v for k, v in params.items() if v is not None}


def in_user_time(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request's ``since`` and ``until`` as the user means them: a date, a zone-less time,
    today or yesterday in this process's time zone (the user's, not the daemon's), sent as
    epoch seconds (:func:`memoryd_client.times.resolved_times`)."""
    if not isinstance(params.get("since"), str) and not isinstance(params.get("until"), str):
        return params
    from memoryd_client.times import resolved_times  # datetime: only when a time is given

    return resolved_times(method, params)


def _client_cwd(cwd: str | os.PathLike[str] | None) -> str | None:
    """The directory whose project ``remember`` writes for; None when the working directory
    was removed (no project can be said: the writes are global)."""
    if cwd is None:
        return None
    try:
        return os.path.abspath(os.path.expanduser(os.fspath(cwd)))
    except FileNotFoundError:
        return None


def agent_groups(entries: list[dict[str, Any]]) -> dict[str | None, list[int]]:
    """The positions of a remember_many's entries, by agent (None: entries naming none, or
    not as a string: the daemon says what is wrong with them)."""
    groups: dict[str | None, list[int]] = {}
    for i, entry in enumerate(entries):
        agent = entry.get("agent") if isinstance(entry, dict) else None
        groups.setdefault(agent if isinstance(agent, str) else None, []).append(i)
    return groups


class DaemonMethods(abc.ABC):
    """The daemon's methods, written once for both clients; ``call`` does the transport."""

    agent: str | None = None
    #: the directory whose project ``remember`` writes for when a call names none
    cwd: str | None = None
    #: the connection for each agent written as (None: unbound)
    _connections: dict[str | None, Any]

    def __init__(self, path: str | os.PathLike[str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, *, agent: str | None = None,
                 channel: str = "api", cwd: str | os.PathLike[str] | None = ".",
                 progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else socket_text()
        self.timeout_s = timeout_s
        self.agent = agent
        self.channel = channel
        self.cwd = _client_cwd(cwd)
        self.progress = progress
        self._connections = {}
        self._ids = itertools.count(1)
        self._parts: dict[int, dict[str, Any]] = {}  # the progress of the call's requests

    @abc.abstractmethod
    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and return its result (each client does the transport)."""

    def bind(self, agent: str | None = None, channel: str | None = None) -> Any:
        """Bind this connection to an agent (and say its channel): every write on it goes
        to that agent's namespace. Clients made with ``agent=`` bind by themselves."""
        return self.call("bind", drop_none({"agent": agent, "channel": channel}))

    def release(self, entry_id: str, *, agent: str | None = None) -> Any:
        """Release a quarantined entry (a person's decision: the terminal channel)."""
        return self.call("release", drop_none({"id": entry_id, "agent": agent}))

    def purge(self, agent: str, *, since: float | str | None = None, match: str | None = None,
              confirm: bool = False) -> Any:
        """Delete an agent's entries for good (since a time, holding a string, or both) from
        the index, the ledger, the archives and the histories. Without ``confirm`` a dry run:
        the reply lists what would go."""
        return self.call("purge", in_user_time("purge", drop_none({
            "agent": agent, "since": since, "match": match, "confirm": confirm})))

    def sync_init(self, remote: str) -> Any:
        """Make memoryd's durable files a git repository synced with ``remote`` (any git
        remote: a path, ssh, https)."""
        return self.call("sync_init", {"remote": remote})

    def sync(self) -> Any:
        """Commit, fetch, merge, push, and apply what the merge brought to the index."""
        return self.call("sync")

    def sync_add_shared(self, name: str, remote: str) -> Any:
        """Follow a team's shared repository, read-only: its entries are the ``team`` namespace
        ``NAME``."""
        return self.call("sync_add_shared", {"name": name, "remote": remote})

    def sync_remove_shared(self, name: str) -> Any:
        """Stop following the team ``name``: its entries leave the index (its clone is deleted,
        or kept when it holds shares not pushed yet)."""
        return self.call("sync_remove_shared", {"name": name})

    def share(self, entry_id: str, name: str) -> Any:
        """Copy an entry into the team repository ``name``, commit and push it."""
        return self.call("share", {"id": entry_id, "name": name})

    def status(self, *, sources: bool = False) -> Any:
        """The daemon's state, including ingestion (queue, sources, errors); ``sources`` adds
        each source's entries in the index now (``indexed``)."""
        return self.call("status", {"sources": True} if sources else {})

    def remember(
        self,
        agent: str,
        category: str,
        text: str,
        *,
        kind: str | None = None,
        key: str | None = None,
        tags: list[str] | None = None,
        confidence: float | None = None,
        force: bool = False,
        cwd: str | None = None,
        project: str | None = None,
        session: str | None = None,
        polarity: str | None = None,
        created: float | str | None = None,
        is_global: bool = False,
    ) -> Any:
        """Store an entry in the agent's namespace (docs/concepts.md, "remember rules").
        ``polarity`` ("negative" or "positive") makes a lesson a "don't" or a "do".
        ``created`` (epoch seconds or ISO date) dates imported history; the entry then says
        ``via: import``. The entry belongs to the project of ``cwd`` (default: the client's
        ``cwd``, the directory it was made in), or to ``project``; ``is_global`` makes it
        global (shown in every project), as does a directory outside git."""
        if is_global:
            if cwd is not None or project is not None:
                raise BadParamsError("remember: is_global contradicts cwd and project; give "
                                     "one or the other")
        elif cwd is None and project is None:
            cwd = self.cwd
        return self.call(
            "remember",
            drop_none(
                {
                    "agent": agent,
                    "category": category,
                    "text": text,
                    "kind": kind,
                    "key": key,
                    "tags": tags,
                    "confidence": confidence,
                    "force": force,
                    "cwd": cwd,
                    "project": project,
                    "session": session,
                    "polarity": polarity,
                    "created": created,
                }
            ),
        )

    def remember_many(self, entries: list[dict[str, Any]]) -> Any:
        """Each entry is a map of remember's params; up to 1,000 per call, embedded in
        batches and stored in short slices (one fsync per agent each) that searches can come
        between. Returns {"results": [...]}, one per entry, in order, by ids and without
        texts (a short reply however long the entries): {"stored": True, "id", "status",
        "superseded": [ids], ...} or {"stored": False, "id": the entry it repeats,
        "duplicate": "exact" | "near" | "inactive" | "seen again"} ("seen again": an imported
        line with the text of that entry and a date of its own, counted as a sighting of it);
        ``get`` shows an entry whole.
        Entries of several agents go over each agent's connection, all at once (results in
        order); when one agent's entries are refused, the error is raised and the other
        agents' entries may be stored. A request the disk refused after its first slices
        were stored raises UnavailableError ("604 of 1000 entries stored; …") with their
        results in its ``data["results"]``."""
        if self.agent is None and isinstance(entries, list):
            groups = agent_groups(entries)
            if len(groups) > 1:
                return self._remember_groups(entries, groups)
        return self.call("remember_many", {"entries": entries})

    _remember_groups: Callable[[list[dict[str, Any]], dict[Any, list[int]]], Any]

    def search(self, query: str, **filters: Any) -> Any:
        """Filters: agent, agents, category, kind, tags, project (that project's entries), cwd
        (the entries of that directory's project and the global ones: what its blocks show),
        since, until, status, shared (the agents named as their blocks show them: with the
        agents each shares with, ``context.shared_agents``, and the teams' namespaces), limit,
        min_score (a match is a hit this relevant), match (True: the matches only; False: every
        ranked hit; unsaid: the matches only with a min_score, every ranked hit without), now
        (when the question is asked: "last week" counts back from it),
        explain (each hit's ``explain``: the query's words it holds and its closest sentence,
        and ``why``: its evidence in words). A name the daemon does not take is refused
        (``BadParamsError``); the reply lists ``unknown_agents``, agents named that have no
        entry at all."""
        return self.call("search", in_user_time("search", drop_none({"query": query, **filters})))

    def list_entries(self, **filters: Any) -> Any:
        """Entries without a query (wire method ``list``), newest first (``order="oldest"``
        for the other way). Filters as search's: agent, agents (default every agent), category,
        kind, tags, project, cwd, status, since, until; paging: limit (1-1,000, default 20),
        offset, cursor (the reply's ``next``). Returns {"entries", "total", "next"}."""
        return self.call("list", in_user_time("list", drop_none(filters)))

    def timeline(self, *, bucket: int | None = None, **filters: Any) -> Any:
        """How many entries were written in each ``bucket`` seconds (default a day), by agent
        and kind: {"bucket", "counts": [{"start", "agent", "kind", "count"}]}. Filters as
        list's; every status unless ``status`` says."""
        return self.call("timeline", in_user_time("timeline",
                                                  drop_none({"bucket": bucket, **filters})))

    def get(self, entry_id: str) -> Any:
        return self.call("get", {"id": entry_id})

    def forget(self, entry_id: str, *, agent: str | None = None, reason: str | None = None) -> Any:
        return self.call("forget", drop_none({"id": entry_id, "agent": agent, "reason": reason}))

    def scope(self, entry_id: str, scope: str, project: str | None = None, *,
              agent: str | None = None) -> Any:
        """Move an entry to the user's global tier (``scope="global"``) or to the project of
        the directory ``project`` (``scope="project"``); recorded as a run, and ``memory undo`` of
        the reply's ``undo`` run moves it back."""
        return self.call("scope", drop_none({"id": entry_id, "scope": scope,
                                              "project": project, "agent": agent}))

    def move_project(self, old: str, to: str | None = None, *, is_global: bool = False,
                     agent: str | None = None) -> Any:
        """Move the entries filed under project ``old`` (a directory that may no longer exist)
        to the project of the directory ``to``, or (``is_global``) to the global tier, as one
        run; ``memory undo`` of the reply's ``undo`` run moves them back. ``agent``: only that
        agent's entries (default: every agent's)."""
        return self.call("move_project", drop_none({"from": old, "to": to, "agent": agent,
                                                     "global": is_global or None}))

    def supersede(
        self, entry_id: str, text: str, *, agent: str | None = None, confidence: float | None = None
    ) -> Any:
        return self.call(
            "supersede",
            drop_none({"id": entry_id, "text": text, "agent": agent, "confidence": confidence}),
        )

    def reload(self) -> Any:
        """Re-read the configuration (like SIGHUP)."""
        return self.call("reload", {})

    def sources(self, action: str = "list", **fields: Any) -> Any:
        """action "list"; "add" with name, path, kind, format, agent (or project_root);
        "remove" with name (a source, a built-in to disable, or a project root)."""
        return self.call("sources", drop_none({"action": action, **fields}))

    def sessions(self, *, agent: str | None = None, project: str | None = None,
                 limit: int | None = None, offset: int | None = None) -> Any:
        """The newest sessions first, a page of them (``limit``, default 50, after
        ``offset``): {"sessions": [...], "total": how many in all}."""
        return self.call("sessions", drop_none({"agent": agent, "project": project,
                                                 "limit": limit, "offset": offset}))

    def context(self, agent: str, *, cwd: str | None = None, prompt: str | None = None,
                budget: int | None = None, session: str | None = None) -> Any:
        """The memory block for an agent: {text, chars, budget, items}."""
        return self.call("context", drop_none({"agent": agent, "cwd": cwd, "prompt": prompt,
                                                "budget": budget, "session": session}))

    def explain(self, session: str | None = None) -> Any:
        """What was injected into a session (the latest one by default), item by item."""
        return self.call("explain", drop_none({"session": session}))

    def session(self, session_id: str) -> Any:
        return self.call("session", {"id": session_id})

    def file(self, action: str, agent: str, path: str | None = None, **fields: Any) -> Any:
        """The memory tools: action list, read, write (text), replace (old, new) or insert
        (line, text), confined to the agent's memory directory."""
        return self.call(f"file_{action}", drop_none({"agent": agent, "path": path, **fields}))

    def extract(self, session: str, *, dry_run: bool = False) -> Any:
        """Extract lessons and facts from a finished session (dry_run: only report)."""
        return self.call("extract", {"session": session, "dry_run": dry_run})

    def import_history(self, harnesses: list[str] | None = None, *,
                       since: float | str | None = None, dry_run: bool = False,
                       detach: bool = False) -> Any:
        """Index the session histories already on disk (of these harnesses; all by default)
        and extract from their finished sessions, in the daemon's background; the reply comes
        when it is done (``detach``: at once). ``dry_run``: what it would do, writing nothing."""
        return self.call("import_history", in_user_time("import_history", drop_none({
            "harnesses": harnesses or None, "since": since, "dry_run": dry_run or None,
            "detach": detach or None})))

    def history(
        self, entry_id: str | None = None, *, agent: str | None = None, key: str | None = None
    ) -> Any:
        return self.call("history", drop_none({"id": entry_id, "agent": agent, "key": key}))

    def pass_list(self) -> Any:
        """Each maintenance pass: its schedule, last run and next run."""
        return self.call("pass_list")

    def pass_run(self, name: str, *, agent: str | None = None, project: str | None = None,
                 dry_run: bool = False, full: bool = False) -> Any:
        """Run a pass now (notebooks, consolidate, promote, staleness, retain); the reply
        names the run: {"run": "r12", "counts": {…}, …}. ``full``: as a first run —
        consolidate compares every entry, not only those added or changed since its last run;
        staleness checks every project and reads every entry's references again."""
        return self.call("pass_run", drop_none({"name": name, "agent": agent, "project": project,
                                                 "dry_run": dry_run, "full": full or None}))

    def pass_runs(self, name: str | None = None, *, entry: str | None = None,
                  limit: int | None = None, offset: int | None = None) -> Any:
        """The newest runs (of one pass, or of all; with ``entry``, those whose scope names
        that entry: the forget of it), newest first, a page of them (``limit``, default 50,
        after ``offset``): {"runs": [...], "total": how many in all}."""
        return self.call("pass_runs", drop_none({"name": name, "entry": entry, "limit": limit,
                                                  "offset": offset}))

    def pass_show(self, run_or_change: str | None = None, *, offset: int | None = None) -> Any:
        """A run (r12) with its changes, or one change (c345); default the newest run. The
        changes come a page at a time (as many as fit in half a frame): from the
        ``offset``-th; ``changes_total`` counts them all and ``next`` is the next page's
        offset (None after the last page)."""
        return self.call("pass_show", drop_none({"id": run_or_change, "offset": offset}))

    def undo(self, run_or_change: str) -> Any:
        """Take back a whole run (r12) or one change (c345), as a new run."""
        return self.call("undo", {"id": run_or_change})

    def promote_accept(self, change: str) -> Any:
        """Apply a promotion the promote pass proposed (c345)."""
        return self.call("promote_accept", {"id": change})

    def notebook_check(self, path: str | None = None, *, agent: str | None = None,
                       fix: bool = False) -> Any:
        """The notebook pass over one file (or every notebook): a preview, or with fix applied."""
        return self.call("notebook_check", drop_none({"path": path, "agent": agent, "fix": fix}))
