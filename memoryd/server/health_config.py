"""The checks of the daemon's configuration (`memory doctor`, the health line of `memory
status`): config.toml and sources.toml as the next reload or start reads them, and the
MEMORYD_* variables it started with that are no setting. memoryd.server.health runs the checks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from memoryd.config import check_config
from memoryd.errors import ConfigError
from memoryd.server.health_words import OK, PROBLEM, WARNING, check
from memoryd.server.parts import Parts
from memoryd.settings import Config, Settings


class ConfigChecks:
    def __init__(self, settings: Settings, parts: Parts) -> None:
        self.settings = settings
        self.parts = parts
        #: the configuration files as `config` last read them, and what it found
        self.config_seen: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self.config_reading = asyncio.Lock()

    async def config(self, fresh: bool = True) -> dict[str, Any]:
        """config.toml and sources.toml as the next reload or start reads them: an error there
        is one the running daemon did not take (a reload refused it, or it came since), and the
        next start fails on it (exit 3); a name that names nothing is a warning. Not
        ``fresh`` (`memory status`): read again only when a file changed."""
        config = self.settings.config
        files = (config.config_file, config.sources_file)
        async with self.config_reading:  # a burst of `memory status` reads them once
            seen = tuple(_stamp(path) for path in files)
            if not fresh and self.config_seen is not None and self.config_seen[0] == seen:
                return self.config_seen[1]
            found = await self._read_config(config, files)
            self.config_seen = (seen, found)
            return found

    async def _read_config(self, config: Config, files: tuple[Path, Path]) -> dict[str, Any]:
        agents = await self.parts.db(self.parts.store.agents)
        try:
            _, warnings = await asyncio.to_thread(check_config, config.config_file, agents)
        except ConfigError as exc:
            which = " and ".join(path.name for path in files if str(path) in exc.message)
            found = check("config", PROBLEM, f"{which or files[0].name} has an error the running "
                          f"daemon did not take: {exc.message}",
                          "correct it, then `memory reload`: until then memoryd runs on the "
                          "configuration it read last, and a restart would fail (exit 3)")
        else:
            read = " and ".join(str(path) for path in files if path.exists())
            found = check("config", WARNING, "; ".join(warnings),
                          f"correct the names in {config.config_file}, then `memory reload`") \
                if warnings else check("config", OK, f"{read or 'no configuration file'}: "
                                       "no error")
        return found

    def environment(self) -> dict[str, Any]:
        """MEMORYD_* variables the daemon started with that are no setting (a typo)."""
        unknown = self.settings.config.unknown_environment
        if unknown:
            return check("environment", WARNING, "; ".join(unknown),
                         "correct or unset them where memoryd is started (the service's unit, "
                         "or the shell of `memoryd serve`), then restart it")
        return check("environment", OK, "every MEMORYD_* variable of the daemon is one it reads")


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is edited or replaced (None: there is none)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size
