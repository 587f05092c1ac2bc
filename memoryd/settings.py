"""The settings as the daemon holds them: a frozen :class:`Config` of one record a section of
``default.toml`` (with the paths of the state it implies), and the :class:`Settings` a reload
replaces. :mod:`memoryd.config` reads the files and the environment into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memoryd.sources import Source


@dataclass(frozen=True)
class EmbedConfig:
    model: str
    threads: int
    batch_size: int
    batch_tokens: int
    max_tokens: int
    parts: str = "sentences"  # memoryd.embedding.model.PART_SCHEMES


@dataclass(frozen=True)
class RememberConfig:
    near_duplicate_cosine: float
    manual_confidence: float


@dataclass(frozen=True)
class SearchConfig:
    limit: int
    match_precision: float
    passage_chars: int


@dataclass(frozen=True)
class WatchConfig:
    defaults: bool
    disabled: tuple[str, ...]
    project_roots: tuple[str, ...]
    debounce_ms: int
    rescan_interval_s: float
    full_scan_interval_s: float
    max_file_bytes: int
    max_line_bytes: int


@dataclass(frozen=True)
class ExtractConfig:
    command: str
    timeout_s: float
    daily_calls: int
    when_quiet: bool


@dataclass(frozen=True)
class OutcomesConfig:
    enabled: bool
    idle_s: float
    unused_days: float
    promote: bool


@dataclass(frozen=True)
class ContextConfig:
    shared_agents: tuple[str, ...]
    tool_lessons: bool = True
    hard_rules: bool = False


@dataclass(frozen=True)
class PassesConfig:
    notebooks: str
    consolidate: str
    promote: str
    staleness: str
    retain: str
    quiet_s: float
    notebook_lines: int
    promote_mode: str
    settle_s: float = 2.0  # memoryd.passes.unsettled
    sync: str = "hourly"  # memoryd.server.sync_methods: only once `memory sync init` ran


SCHEDULES = ("hourly", "daily", "off")
PASS_NAMES = ("notebooks", "consolidate", "promote", "staleness", "retain", "sync")


@dataclass(frozen=True)
class ServerConfig:
    max_connections: int
    idle_timeout_s: float
    buffered_frame_bytes: int


@dataclass(frozen=True)
class ToolsConfig:
    memory_dir: str


@dataclass(frozen=True)
class Config:
    state_dir: Path
    socket_path: Path
    config_file: Path
    embed: EmbedConfig
    remember: RememberConfig
    search: SearchConfig
    watch: WatchConfig
    context: ContextConfig
    tools: ToolsConfig
    extract: ExtractConfig
    passes: PassesConfig
    sources: tuple[Source, ...]
    server: ServerConfig
    outcomes: OutcomesConfig
    #: ``MEMORYD_*`` variables of the environment that are no setting and none memoryd reads
    #: otherwise (a typo: ``MEMORYD_SERCH_LIMIT``), each with its warning; logged, and shown by
    #: `memory status` and `memory doctor`
    unknown_environment: tuple[str, ...] = ()

    @property
    def memory_dir(self) -> str:
        """Each agent's memory directory, with an {agent} placeholder."""
        return self.tools.memory_dir or str(self.state_dir / "agents" / "{agent}")

    @property
    def sources_file(self) -> Path:
        """Where `memory sources add/remove` keep their changes (beside config.toml)."""
        return self.config_file.with_name("sources.toml")

    @property
    def db_path(self) -> Path:
        return self.state_dir / "memoryd.db"

    @property
    def ledger_dir(self) -> Path:
        return self.state_dir / "ledger"

    @property
    def archive_dir(self) -> Path:
        """The transcript archives of the retain pass (memoryd.store.archive)."""
        return self.state_dir / "transcripts"

    @property
    def private_files(self) -> tuple[Path, ...]:
        """Files beside the state that are kept private (memoryd.store.permissions)."""
        return (self.sources_file,)

    @property
    def private_trees(self) -> tuple[Path, ...]:
        """The directories of state kept private with all below them: the agents' memory
        files, the ledgers, the transcript archives and the memory tools' old versions."""
        return (self.state_dir / "agents", self.ledger_dir, self.archive_dir, self.history_dir)

    @property
    def history_dir(self) -> Path:
        """Old versions of the memory tools' files, moved out of the database by the retain
        pass (memoryd.store.file_versions)."""
        return self.state_dir / "history"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "memoryd.lock"


class Settings:
    """The running configuration, for the parts that read it at each use: a reload
    (``memory reload``, SIGHUP) replaces it here."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def current(self) -> Config:
        return self.config

    def memory_dir(self) -> str:
        return self.config.memory_dir
