"""The checks of the database and the ledgers (`memory doctor`, and the cheap one of them on the
health line of `memory status`): PRAGMA quick_check on a reader of its own, the ledgers'
entries against the index both ways, the damaged ledger lines and the torn ones set aside.
memoryd.server.health runs the checks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from memoryd.server.health_code import RESTART
from memoryd.server.health_words import (
    OK,
    PROBLEM,
    SHOWN_FILES,
    WARNING,
    check,
    copies_before_purge,
    differences,
    ledger_lines,
    set_aside,
    torn_files,
)
from memoryd.server.parts import Parts
from memoryd.settings import Settings
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


@dataclass(frozen=True)
class LedgerEntry:
    """An entry a ledger's ``remember`` record created: its agent, id and text's hash (a record
    the replay skipped as a duplicate of an entry the index holds is not lost: two machines
    that stored one text, a write answered as failed)."""
    agent: str
    uid: str
    hash: str = ""


class StoreChecks:
    def __init__(self, settings: Settings, started: float, parts: Parts) -> None:
        """``started``: when the daemon started; ``parts``: the ledger problems its start
        found."""
        self.settings = settings
        self.started = started
        self.parts = parts

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
