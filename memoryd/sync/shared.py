"""A team's shared repository, followed read-only (docs/sync.md, "A team's shared lessons").

``memory sync add-shared NAME REMOTE`` clones the team's repository to ``shared/NAME/`` in
the state dir (outside the synced files: each machine follows it on its own), and ``memory
sync remove-shared NAME`` stops following it: its entries leave the index, and its clone goes
(kept when it holds shares not pushed yet). ``shared/teams.json`` is the list followed: a team
taken out of it by hand leaves the index at the next start or sync (:func:`drop_unfollowed`).
The team's repository holds one file, ``entries.jsonl``, in the ledger's format:
``remember`` records (and any other record a ledger holds) of the namespace ``team.NAME``. Its
entries are applied to the index as that agent's, which no connection can bind to or write as
(memoryd.server.binding): the only write is ``memory share ID NAME``, which copies an entry
there, commits and pushes; an entry leaves when its line is taken out of the file in git. The
memory block shows them under their own heading (memoryd.sessions.context).

Following is fetching and moving to the remote's branch; a share that the remote refused
(someone pushed first, or its branch was locked by another push) is merged with the ledger
driver and pushed again, never forced. A share whose push still failed stays committed in the
clone, *pending*: the next sync's fetch merges it with what came meanwhile and pushes it
(:meth:`Team.unpushed`; `memory status` and `memory sync` say so meanwhile).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd_client.wire import TEAM_PREFIX

from memoryd.errors import MemorydError
from memoryd.maintenance.replay import apply_records
from memoryd.names import AGENT_NAME
from memoryd.store.database import Store
from memoryd.store.durable import replace_file
from memoryd.store.ledger import encode_record
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry
from memoryd.sync import git
from memoryd.sync.git import SyncError
from memoryd.sync.merge import Line, ledger_lines
from memoryd.sync.repo import BRANCH, REMOTE, SyncRepo, host

log = logging.getLogger(__name__)

PREFIX = TEAM_PREFIX
FILE = "entries.jsonl"
#: Pushes of a team's shares, each after fetching and merging what got in first.
PUSH_ROUNDS = 5
ATTRIBUTES = f"/{FILE} merge=memoryd-ledger -text\n"


class ShareRefusedError(MemorydError):
    """The entry cannot be shared as it is (forgotten, superseded, quarantined): nothing was
    written (exit 1)."""

    code = "refused"


def unshareable(entry: StoredEntry, current: StoredEntry) -> str | None:
    """Why ``entry`` cannot go to a team (``current``: its newest version), or None: a team's
    copy is active, so only what is active here is shared, and a text a person has not let
    in (quarantined) stays out of every teammate's memory too."""
    if entry.status == "superseded":
        head = (f"share its current version, {current.uid}" if current.uid != entry.uid
                and current.status == "active" else "its successor is not active either")
        return (f"entry {entry.uid} was superseded by {entry.superseded_by}: its text is no "
                f"longer what you hold true; {head}")
    if entry.status != "active":
        return (f"entry {entry.uid} is {entry.status}: a team's copy would be an active "
                "lesson of every teammate; only an active entry is shared")
    if entry.quarantined:
        return (f"entry {entry.uid} is quarantined (it looked like an instruction to the "
                "agent): `memory release` it first if a person has read it and trusts it")
    return None


def copy_uid(name: str, uid: str) -> str:
    """The id of the copy of entry ``uid`` shared with the team ``name`` (the same on every
    machine: an entry is shared once)."""
    return hashlib.sha1(f"{name}:{uid}".encode()).hexdigest()[:19]


def team_agent(name: str) -> str:
    return PREFIX + name


def check_name(name: str) -> None:
    if not AGENT_NAME.match(name) or len(PREFIX + name) > 64:
        raise SyncError(f"{name!r} cannot name a team: letters, digits, '.', '_' and '-', "
                        "starting with a letter or digit")


#: What an entry of the team's file must hold to be applied (a line a teammate wrote by hand
#: may lack them: it is skipped and counted, the others applied).
NEEDED = ("uid", "text", "hash", "kind", "category", "created", "status")


@dataclass(frozen=True)
class Pulled:
    """What following a team brought: the records applied, the commit now applied, the
    lines skipped (no entry memoryd can apply), and the entries removed (their lines gone
    from the file: a review took them out)."""

    records: int
    head: str | None
    skipped: int = 0
    removed: int = 0


def unusable(record: dict[str, Any]) -> str | None:
    """Why a record of the team's file cannot be applied (None: it can)."""
    if record.get("op") != "remember":
        return None
    entry = record.get("entry")
    if not isinstance(entry, dict):
        return "a remember record without its entry"
    missing = [name for name in NEEDED if entry.get(name) in (None, "")]
    if missing:
        return f"an entry without {', '.join(missing)}"
    if not isinstance(entry["text"], str) or not isinstance(entry["uid"], str) \
            or not isinstance(entry["created"], (int, float)):
        return "an entry whose uid, text or created is of the wrong type"
    return None


class Team:
    """One followed team repository: ``<state>/shared/<name>``."""

    def __init__(self, state_dir: Path, name: str) -> None:
        check_name(name)
        self.name = name
        self.agent = team_agent(name)
        self.root = state_dir / "shared" / name
        self.repo = SyncRepo(self.root)

    @property
    def meta_key(self) -> str:
        return f"team:{self.name}"

    def add(self, remote: str) -> None:
        """Clone the team's repository (or start one, when the remote is empty)."""
        if self.root.exists() and (self.root / ".git").exists():
            self.repo.git("remote", "set-url", REMOTE, remote)
            return
        self.root.mkdir(parents=True, mode=0o700, exist_ok=True)
        self.repo.git("init", "--quiet", f"--initial-branch={BRANCH}")
        self.repo.git("remote", "add", REMOTE, remote)
        self.configure()

    def configure(self) -> None:
        self.repo.configure()
        attributes = self.root / ".gitattributes"
        if not attributes.exists():
            replace_file(attributes, ATTRIBUTES.encode())

    def fetch(self) -> None:
        """Move to the remote's branch (off the database thread; nothing local is ever
        uncommitted here: a share commits and pushes at once)."""
        self.configure()
        theirs = self.repo.fetch()
        if theirs is None:
            return
        head = self.repo.head()
        if head is None or not self.repo.contains(theirs):
            behind = head is None or git.run(self.root, "merge-base", "--is-ancestor", head,
                                             theirs, check=False).returncode == 0
            if not behind:
                self.repo.merge(theirs)  # a share not pushed yet: merged, kept
            else:
                self.repo.git("reset", "--quiet", "--hard", theirs)

    def apply(self, store: Store, unindex: Callable[[int], None] = lambda rowid: None
              ) -> Pulled:
        """Apply the records the index lacks, and take out the entries whose lines left the
        file (``unindex``: each one's row out of the RAM vector index); a line that holds no
        entry memoryd can apply is skipped, logged and counted (database thread)."""
        head = self.repo.head()
        applied_at = store.meta(self.meta_key) or ""
        if head is None or head == applied_at:
            return Pulled(0, head)
        old = ledger_lines(self.repo.read_at(applied_at, FILE) if applied_at else b"")[0]
        path = self.root / FILE
        new = ledger_lines(path.read_bytes() if path.exists() else b"")[0]
        held, now = {line.data for line in old}, {line.data for line in new}
        records, skipped = [], 0
        for line in new:
            if line.data in held:
                continue
            record = _decoded(line.data)
            problem = unusable(record)
            if problem is not None:
                skipped += 1
                log.warning("Team %s: a line of %s skipped (%s): %.200r", self.name, FILE,
                            problem, line.data)
                continue
            entry = record.get("entry")
            if record.get("op") == "remember" and isinstance(entry, dict):
                entry["agent"] = self.agent  # the namespace is the follower's name for it
            records.append(record)
        with store.transaction():
            removed = self._remove(store, [line for line in old if line.data not in now],
                                   unindex)
            count = apply_records(store, self.agent, records)
            store.set_meta(self.meta_key, head)
        return Pulled(count, head, skipped, removed)

    def _remove(self, store: Store, gone: list[Line], unindex: Callable[[int], None]) -> int:
        """The team's entries whose remember lines left the file (before the lines that came
        in are applied: a line edited in review is its entry taken out and put back)."""
        removed = 0
        for line in gone:
            record = _decoded(line.data)
            entry = record.get("entry")
            if record.get("op") != "remember" or not isinstance(entry, dict):
                continue
            found = store.entry_by_uid(str(entry.get("uid")))
            if found is None or found.agent != self.agent:
                continue
            store.delete_entry(found.rowid)
            store.record_event(found.uid, "removed", f"team {self.name}", found.as_dict(),
                               {"reason": f"removed from the team's {FILE}"})
            unindex(found.rowid)
            removed += 1
        return removed

    def leave_index(self, store: Store, unindex: Callable[[int], None] = lambda rowid: None,
                    why: str = "the team is no longer followed here") -> int:
        """Every entry of the team's namespace out of the index, and the record of how far its
        file was applied (followed again, it is applied whole): database thread. Returns the
        entries removed."""
        return leave_index(store, self.agent, why, unindex)

    def remove_clone(self) -> list[str]:
        """Delete the clone (the team's repository holds its entries; following it again
        clones it again), unless it holds shares not pushed yet: those are returned and the
        clone is kept, so that nothing shared here is lost."""
        if not self.root.exists():
            return []
        try:
            pending = self.unpushed()
        except SyncError:
            pending = []  # not a repository git can read: nothing in it can be pushed
        if not pending:
            shutil.rmtree(self.root)
        return pending

    def share(self, entry: StoredEntry, by: str) -> dict[str, Any]:
        """Append a copy of ``entry`` to the team's file and commit (off the database thread:
        this repository is written by shares only). Returns the copy."""
        now = time.time()
        uid = copy_uid(self.name, entry.uid)
        copy = {k: v for k, v in entry.as_dict().items()
                if k not in ("id", "rowid", "score", "stale", "quarantined")}
        copy.update({"uid": uid, "agent": self.agent, "project": None, "via": "team",
                     "writer": f"{by} (shared from {host()})", "status": "active",
                     "updated": now, "superseded_by": None})
        path = self.root / FILE
        existing = path.read_bytes() if path.exists() else b""
        if any(line.about == uid for line in ledger_lines(existing)[0]):
            pending = " (not pushed yet: the next `memory sync` pushes it)" \
                if uid in self.unpushed() else ""
            raise SyncError(f"entry {entry.uid} is already shared with team {self.name} as "
                            f"{uid}{pending}")
        record = {"op": "remember", "ts": now, "entry": copy}
        replace_file(path, existing + encode_record(record))
        self.repo.git("add", "--", FILE, ".gitattributes")
        self.repo.git("commit", "--quiet", "--no-verify", "-m",
                      f"memoryd share: {uid} by {by} on {host()}")
        return copy

    def push(self) -> None:
        """Push the shares, merging what others pushed first (or waiting out a branch another
        push held locked); a :class:`SyncError` when it never got in, or the remote refused
        it (a hook, no access). Either way the shares stay committed here, pending
        (:meth:`unpushed`): :meth:`note_pushed` records what is left."""
        for attempt in range(PUSH_ROUNDS):
            if attempt:
                time.sleep(0.2 * attempt)  # two members sharing at once: one goes first
                self.fetch()
            if self.repo.push():
                return
        raise SyncError(f"git push failed {PUSH_ROUNDS} times, the remote's branch moved or "
                        f"locked by other pushes each time: {self.repo.refused}")

    def unpushed(self) -> list[str]:
        """The ids of the entries of the clone's file that the remote's branch, as last fetched
        or pushed, does not hold: shares not pushed yet."""
        if self.repo.head() is None:
            return []
        remote = self.repo.read_at(f"refs/remotes/{REMOTE}/{BRANCH}", FILE)
        there = {line.about for line in ledger_lines(remote)[0]}
        path = self.root / FILE
        here = ledger_lines(path.read_bytes() if path.exists() else b"")[0]
        return list(dict.fromkeys(line.about for line in here
                                  if line.about and line.about not in there))

    def note_pushed(self, error: str | None) -> list[str]:
        """Record the shares still pending after a push (for `memory status`), with the push's
        error; returns them."""
        pending = self.unpushed()
        self.repo.save_state(unpushed=pending, push_error=error if pending else None)
        return pending

    def pending(self) -> dict[str, Any] | None:
        """The shares not pushed as last recorded, and why (None: none), for `memory status`:
        read from the clone's state file, with no git run."""
        state = self.repo.state()
        if not state.get("unpushed"):
            return None
        return {"unpushed": len(state["unpushed"]), "push_error": state.get("push_error")}


def _decoded(data: bytes) -> dict[str, Any]:
    record = dict(json.loads(data))
    record.pop("crc", None)
    return record


def followed(state_dir: Path) -> dict[str, str]:
    """The teams followed here: name → remote (``shared/teams.json``)."""
    return _teams_file(state_dir) or {}


def _teams_file(state_dir: Path) -> dict[str, str] | None:
    """``shared/teams.json`` ({} when there is none), or None when it cannot be read (an
    error of the disk, a file damaged): then nothing is taken out of the index for it."""
    try:
        return dict(json.loads((state_dir / "shared" / "teams.json").read_text()))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError):
        return None


def leave_index(store: Store, agent: str, why: str,
                unindex: Callable[[int], None] = lambda rowid: None) -> int:
    """The entries of a team's namespace ``agent`` out of the index, each with a ``removed``
    event saying ``why``, and the record of how far its file was applied (database thread)."""
    gone = store.entries(EntryQuery().agent(agent))
    with store.transaction():
        for entry in gone:
            store.delete_entry(entry.rowid)
            store.record_event(entry.uid, "removed", f"team {agent[len(PREFIX):]}",
                               entry.as_dict(), {"reason": why})
        store.delete_meta(f"team:{agent[len(PREFIX):]}")
    for entry in gone:
        unindex(entry.rowid)
    return len(gone)


def drop_unfollowed(store: Store, state_dir: Path,
                    unindex: Callable[[int], None] = lambda rowid: None) -> dict[str, int]:
    """The entries of the teams' namespaces in the index whose team is not followed any more
    (taken out of ``shared/teams.json`` by hand): out of the index, as `memory sync
    remove-shared` takes them (database thread). Returns the entries removed by team."""
    teams = _teams_file(state_dir)
    if teams is None:
        return {}
    dropped = {}
    for agent in store.entry_values(EntryQuery().agent_prefix(PREFIX), "agent", distinct=True):
        name = str(agent)[len(PREFIX):]
        if name not in teams:
            dropped[name] = leave_index(store, agent, "the team is no longer followed here "
                                        "(not in shared/teams.json)", unindex)
            log.info("Team %s is not followed any more: its %d entries left the index.", name,
                     dropped[name])
    return dropped


def apply_followed(store: Store, state_dir: Path) -> int:
    """At start: each followed team's clone as it was last fetched, applied where the index
    lacks it (a rebuilt or new index holds none of it: without this, the team's entries were
    missing until the next sync fetched); a team no longer followed leaves the index
    (:func:`drop_unfollowed`). Nothing is fetched. Returns the records applied (database
    thread)."""
    drop_unfollowed(store, state_dir)
    applied = 0
    for name in followed(state_dir):
        team = Team(state_dir, name)
        try:
            pulled = team.apply(store)
        except (OSError, SyncError) as exc:
            log.warning("Team %s: its clone in %s could not be read (%s); the next sync "
                        "fetches it again.", name, team.root, exc)
            continue
        applied += pulled.records
        if pulled.records:
            log.info("Team %s: %d records of its file applied to the index.", name,
                     pulled.records)
    return applied


def shared_copies(state_dir: Path, uids: list[str]) -> list[dict[str, Any]]:
    """The copies of the entries ``uids`` that this machine shared with a team it follows, as
    its clone's file holds them: ``{id, team, copy, remote}`` each (a purge of the original
    says so: the copy, and its text, stay in the team's repository until its line is taken
    out there)."""
    found = []
    for name, remote in followed(state_dir).items():
        try:
            path = Team(state_dir, name).root / FILE
            held = {line.about for line in ledger_lines(path.read_bytes())[0]}
        except (OSError, SyncError):
            continue
        found += [{"id": uid, "team": name, "copy": copy_uid(name, uid), "remote": remote}
                  for uid in uids if copy_uid(name, uid) in held]
    return found


def one_line(said: str, limit: int = 300) -> str:
    """git's message of a push on one line, for `memory status` and a sync's team line: its
    porcelain's ``To …`` and ``Done`` and the blank ``remote:`` lines left out."""
    head, colon, rest = said.partition(": ")
    prefix = head + colon if head.startswith("git ") and colon else ""
    lines = [" ".join(line.split()) for line in (rest if prefix else said).splitlines()]
    kept = [line for line in lines if line and line not in ("Done", "remote:")
            and not line.startswith("To ")]
    text = prefix + "; ".join(kept)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def pending_shares(state_dir: Path) -> dict[str, dict[str, Any]]:
    """The followed teams that hold shares not pushed yet, by name (:meth:`Team.pending`)."""
    found = {}
    for name in followed(state_dir):
        try:
            pending = Team(state_dir, name).pending()
        except SyncError:  # a name written by hand that cannot name a team
            continue
        if pending is not None:
            found[name] = pending
    return found


def follow(state_dir: Path, name: str, remote: str) -> None:
    _write_teams(state_dir, {**followed(state_dir), name: remote})


def unfollow(state_dir: Path, name: str) -> str:
    """Take the team out of ``shared/teams.json``; returns its remote."""
    teams = followed(state_dir)
    remote = teams.pop(name)
    _write_teams(state_dir, teams)
    return remote


def _write_teams(state_dir: Path, teams: dict[str, str]) -> None:
    (state_dir / "shared").mkdir(parents=True, mode=0o700, exist_ok=True)
    replace_file(state_dir / "shared" / "teams.json",
                 json.dumps(teams, indent=1, sort_keys=True).encode())
