"""The daemon's half of `memory doctor` (wire method ``doctor``) and the health line of
`memory status`.

Each check is a map ``{check, status, detail, fix}``: ``status`` is ``ok``, ``warning`` or
``problem``, ``fix`` one line saying what to do (None when there is nothing to do). The cheap
checks (the code on disk, model, sources, skipped files, disk, backlog, and the configuration
files when they changed) also feed ``status``; ``doctor`` adds the ones that read the whole
database or the ledgers (``PRAGMA quick_check``, ledger against index).
The client adds what only it can see (its own environment, the hooks, the service manager):
:mod:`memoryd_client.doctor`.

:class:`Health` runs the checks, each kind handed the parts it examines: the code and model
(:mod:`.health_code`), the sources' files and projects (:mod:`.health_sources`), the passes'
runs (:mod:`.health_passes`), the configuration (:mod:`.health_config`), the disk, writes and
backlog (:mod:`.health_disk`), the database and ledgers (:mod:`.health_store`); their wording is
:mod:`.health_words`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from memoryd_client.paths import home_text
from memoryd_client.wire import REVISION

from memoryd import __version__
from memoryd.ingest.watcher import Watcher
from memoryd.passes.runner import PassRunner
from memoryd.server.health_code import CodeChecks, log_location
from memoryd.server.health_config import ConfigChecks
from memoryd.server.health_disk import DiskChecks
from memoryd.server.health_passes import PassChecks
from memoryd.server.health_sources import SourceChecks
from memoryd.server.health_store import StoreChecks
from memoryd.server.health_words import OK, worst
from memoryd.server.installed import InstalledCode
from memoryd.server.parts import Parts
from memoryd.server.refused import RefusedWrites
from memoryd.server.sync_methods import Sync
from memoryd.settings import Settings


class Health:
    def __init__(self, settings: Settings, started: float, parts: Parts,
                 watcher: Watcher | None, passes: PassRunner | None, sync: Sync | None,
                 refused: RefusedWrites, code: InstalledCode) -> None:
        """The parts it examines; ``started``: when the daemon started; ``refused``: the
        writes the disk refused lately; ``code``: its packages on disk."""
        self.settings = settings
        self.parts = parts
        self.sync = sync
        self.code = CodeChecks(settings, started, parts, code)
        self.sources = SourceChecks(settings, parts, watcher)
        self.runs = PassChecks(parts, passes)
        self.config = ConfigChecks(settings, parts)
        self.disk = DiskChecks(settings, started, parts, watcher, refused)
        self.store = StoreChecks(settings, started, parts)

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

    async def status_fields(self) -> dict[str, Any]:
        """What `memory status` adds to the counts: the cheap checks for its health line
        (only those that are not ok), the embedding rate and estimate, the paths."""
        backlog = await self.parts.db(self.disk.backlog_counts)
        files = await self.sources.file_problems()
        checks = [self.code.code(), self.code.model(), self.disk.writes(),
                  self.store.ledger_at_start(), self.sources.sources(),
                  self.sources.skipped(files), await self.runs.unwritten(),
                  self.runs.failed_runs(), await self.runs.interrupted(), self.disk.disk(),
                  self.disk.backlog(backlog), await self.config.config(fresh=False),
                  self.config.environment()]
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

    async def m_doctor(self, params: Any) -> dict[str, Any]:
        whole = await asyncio.to_thread(self.store.whole_store)
        waiting = await self.parts.db(self.disk.backlog_counts)
        files = await self.sources.file_problems()
        checks = [
            self.code.code(look=True),
            self.code.model(),
            self.code.telemetry(),
            *whole,
            self.disk.writes(),
            await asyncio.to_thread(self.disk.disk, True),
            self.sources.sources(),
            await self.sources.projects(),
            await self.sources.sessions(),
            self.sources.skipped(files),
            await self.runs.unwritten(),
            self.runs.failed_runs(),
            await self.runs.interrupted(),
            self.disk.backlog(waiting),
            await self.config.config(),
            self.config.environment(),
        ]
        if self.sync is not None:
            checks.append(await asyncio.to_thread(self.sync.doctor))
        return {"daemon": self.facts(), "checks": checks, "state": worst(checks)}
