"""Settings, read into a frozen ``Config``.

Layers, each overriding the one before: the commented defaults shipped in the package
(``default.toml``, which documents every setting), the user's ``config.toml`` (in
``$MEMORYD_HOME`` or the platform config dir), then ``MEMORYD_<SECTION>_<KEY>`` environment
variables.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import shlex
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from memoryd_client.paths import config_dir, socket_path, state_dir

from memoryd.agent_sources import (
    PROJECT_AGENTS,
    default_sources,
    gives_way,
    parent_claude_files,
    project_sources,
)
from memoryd.errors import ConfigError
from memoryd.names import agent_problem, path_problem
from memoryd.sources import PLACEHOLDER, UNWATCHABLE, Source, validate_source
from memoryd.store.durable import not_stored, replace_file


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


def _defaults() -> dict[str, Any]:
    text = resources.files("memoryd").joinpath("default.toml").read_text("utf-8")
    return tomllib.loads(text)


def _merge(base: dict[str, Any], layer: dict[str, Any], origin: str,
           origins: dict[str, str] | None = None) -> None:
    """``layer`` over ``base``; ``origins`` records where each setting came from. A layer's
    ``[[sources]]`` are kept with their file: ``base["sources"]`` holds ``(origin, table)``."""
    for section, values in layer.items():
        if section == "sources":
            if not isinstance(values, list) or not all(isinstance(v, dict) for v in values):
                raise ConfigError(f"{origin}: sources must be an array of tables ([[sources]])")
            base.setdefault("sources", []).extend((origin, table) for table in values)
            continue
        if section not in base:
            raise ConfigError(f"{origin}: unknown section [{section}]")
        if not isinstance(values, dict):  # `search = 3` at the top: no section of that name
            raise ConfigError(f"{origin}: {section} must be a table, not {values!r}: its "
                              f"settings go on the lines under a [{section}] line")
        for key, value in values.items():
            if key not in base[section]:
                raise ConfigError(f"{origin}: unknown setting {section}.{key}")
            expected = type(base[section][key])
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
                raise ConfigError(f"{origin}: {section}.{key} must be {KINDS[expected]}, got "
                                  f"{value!r}{_unquoted(value, expected)}")
            if expected is list and not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{origin}: {section}.{key} must be {KINDS[list]}, got "
                                  f"{value!r}")
            problem = _value_problem(f"{section}.{key}", value)
            if problem is not None:
                raise ConfigError(f"{origin}: {section}.{key}: {problem}")
            base[section][key] = value
            if origins is not None:
                origins[f"{section}.{key}"] = origin


#: A setting's type as an error says it (not Python's name: "must be int, got '3'").
KINDS: dict[type, str] = {bool: "true or false", int: "a whole number", float: "a number",
                          str: "a string (in quotes)", list: 'a list of strings (["a", "b"])'}


def _unquoted(value: Any, expected: type) -> str:
    """A hint for a number or a true/false written in quotes (``limit = "3"``)."""
    if not isinstance(value, str):
        return ""
    if expected is bool and value.strip().lower() in ("true", "false"):
        return " (true and false are written without quotes)"
    if expected in (int, float):
        try:
            expected(value.strip())
        except ValueError:
            return ""
        return " (a number is written without quotes)"
    return ""


def _value_problem(name: str, value: Any) -> str | None:
    """What is wrong with the value of a setting that names a directory or a command: found
    when the configuration is read, not when a reload has half applied it (a ``memory_dir``
    without ``{agent}`` made every agent's files one)."""
    if name == "tools.memory_dir" and value:
        return memory_dir_problem(value)
    if name == "watch.project_roots":
        for root in value:
            problem = project_root_problem(root)
            if problem is not None:
                return f"{root!r} {problem}"
    if name == "extract.command" and value:
        try:
            words = shlex.split(value)
        except ValueError as exc:  # "No closing quotation"
            return f"{value!r} cannot be split into words as a shell would: {str(exc).lower()}"
        if not words:
            return "has no program in it (leave it empty for none)"
    return None


def memory_dir_problem(value: str) -> str | None:
    """Why ``value`` cannot be ``tools.memory_dir`` (each agent's memory directory), or None."""
    example = "'~/memory/{agent}'"
    if not value.startswith(("/", "~/")):
        return f"{value!r} must be absolute or start with ~/ (such as {example})"
    if PLACEHOLDER not in value:
        return (f"{value!r} must hold {{agent}}, so that each agent has a directory of its own "
                f"(such as {value.rstrip('/') + '/{agent}'!r}): without it every agent would "
                "read and write the same files")
    try:
        Source("memoryd-agents", value.rstrip("/") + "/**/*.md", "memory", "markdown")
    except ConfigError as exc:
        return exc.message.removeprefix("source 'memoryd-agents': ")
    return None


def project_root_problem(root: str) -> str | None:
    """Why ``root`` cannot be a project root (``watch.project_roots``), or None."""
    problem = path_problem(root)
    if problem is not None:
        return problem
    if not (root.startswith(("/", "~/")) or root == "~"):
        return ("is relative: a project root must be absolute or start with ~/ (the daemon's "
                "working directory is no project's)")
    if any(char in root for char in "*?{}"):
        return "may not contain * ? { or }: it is a directory, not a glob"
    real = os.path.normpath(os.path.expanduser(root))
    top = "/" + real.split("/")[1] if real != "/" else "/"
    if top in UNWATCHABLE:  # project_sources would build sources that watch all of it
        return ("is the root directory: memoryd would watch and walk the whole file system"
                if real == "/" else f"is in {top}: memoryd would watch and walk {top}")
    return None


#: How an environment variable says yes or no (any case).
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def _flag(raw: str) -> bool:
    """A yes or no in an environment variable; ValueError for anything else (``ture`` was
    taken for no)."""
    word = raw.strip().lower()
    if word not in TRUE_WORDS + FALSE_WORDS:
        raise ValueError(word)
    return word in TRUE_WORDS


def _env_layer(defaults: dict[str, Any]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for section, values in defaults.items():
        if section == "sources":
            continue
        for key, default in values.items():
            raw = os.environ.get(f"MEMORYD_{section}_{key}".upper())
            if raw is None:
                continue
            try:
                if isinstance(default, list):
                    value: Any = [v for v in raw.split(os.pathsep) if v]
                elif isinstance(default, bool):
                    value = _flag(raw)
                else:
                    value = type(default)(raw) if not isinstance(default, str) else raw
            except ValueError:
                name = f"MEMORYD_{section}_{key}".upper()
                kind = "yes or no (true/false, 1/0, yes/no, on/off)" \
                    if isinstance(default, bool) else "an integer" \
                    if isinstance(default, int) else "a number"
                raise ConfigError(f"{name}={raw!r} is not {kind}") from None
            layer.setdefault(section, {})[key] = value
    return layer


#: The ``MEMORYD_*`` variables memoryd reads besides the settings' (docs/configuration.md).
OTHER_ENVIRONMENT = ("MEMORYD_HOME", "MEMORYD_SOCKET", "MEMORYD_LOG_LEVEL", "MEMORYD_DEBUG",
                     "MEMORYD_SYNC_HOST", "MEMORYD_SYNC_DRIVER_LOG", "MEMORYD_TEST_MPNET_PARTS")


def unknown_environment(settings: dict[str, Any]) -> tuple[str, ...]:
    """A warning for each ``MEMORYD_*`` variable that is no setting and none memoryd reads: a
    typo (``MEMORYD_SERCH_LIMIT=3``) was ignored without a word, where the same typo in
    config.toml is refused. Not refused here: other tools may set variables of that prefix."""
    names = {f"MEMORYD_{section}_{key}".upper(): f"{section}.{key}"
             for section, values in settings.items() if section != "sources"
             for key in values}
    found = []
    for name in sorted(os.environ):
        if not name.startswith("MEMORYD_") or name in names or name in OTHER_ENVIRONMENT:
            continue
        close = difflib.get_close_matches(name, [*names, *OTHER_ENVIRONMENT], n=1, cutoff=0.8)
        found.append(f"{name} is not a memoryd setting, so it is ignored" + (
            f" (did you mean {close[0]}?)" if close else
            " (the settings' variables are MEMORYD_<SECTION>_<KEY>, docs/configuration.md)"))
    return tuple(found)


#: The values a number setting may take (inclusive); a value outside is refused, naming it.
RANGES: dict[str, tuple[float, float]] = {
    "embed.threads": (1, 64), "embed.batch_size": (1, 1024), "embed.batch_tokens": (64, 65536),
    "embed.max_tokens": (16, 512), "watch.debounce_ms": (1, 60_000),
    "watch.rescan_interval_s": (0.05, 3600),
    "watch.full_scan_interval_s": (1, 86_400), "watch.max_file_bytes": (1024, 1 << 31),
    "watch.max_line_bytes": (1024, 1 << 31), "extract.timeout_s": (1, 3600),
    "extract.daily_calls": (0, 100_000), "remember.near_duplicate_cosine": (0.5, 1.0),
    "remember.manual_confidence": (0.0, 1.0), "search.limit": (1, 1000),
    "search.match_precision": (0.5, 0.99), "search.passage_chars": (0, 4000),
    "passes.quiet_s": (0, 86400),
    "passes.notebook_lines": (10, 100_000), "server.max_connections": (1, 1_000_000),
    "server.idle_timeout_s": (1, 86400), "server.buffered_frame_bytes": (8 << 20, 1 << 34),
    "outcomes.idle_s": (10, 7 * 86400), "outcomes.unused_days": (0, 36_500),
}
#: The values a string setting may take.
CHOICES: dict[str, tuple[str, ...]] = {
    **{f"passes.{name}": SCHEDULES for name in PASS_NAMES},
    "passes.promote_mode": ("propose", "auto"),
    "embed.parts": ("sentences", "late-chunking"),  # memoryd.embedding.model.PART_SCHEMES
}


def _check_ranges(settings: dict[str, Any], origins: dict[str, str]) -> None:
    """Every number within its range, every choice one of its values; the error names the
    file or the environment variable the value came from."""
    def at(name: str) -> str:
        return f"{origins[name]}: " if name in origins else ""

    for name, (low, high) in RANGES.items():
        section, key = name.split(".")
        value = settings[section][key]
        if not low <= value <= high:
            raise ConfigError(f"{at(name)}{name} must be between {low:g} and {high:g}; "
                              f"got {value!r}")
    for name, allowed in CHOICES.items():
        section, key = name.split(".")
        if settings[section][key] not in allowed:
            raise ConfigError(f"{at(name)}{name} must be one of {', '.join(allowed)}; "
                              f"got {settings[section][key]!r}")
    for agent in settings["context"]["shared_agents"]:  # a typo shared nothing, silently
        problem = agent_problem(agent)
        if problem is not None:
            raise ConfigError(f"{at('context.shared_agents')}context.shared_agents: {problem}")


def load_config(path: Path | None = None, managed: dict[str, Any] | None = None) -> Config:
    """Read all layers; raises ConfigError with the file and setting at fault. ``managed``:
    the sources.toml to read instead of the file's (`memory sources add` checks the file it
    would write before writing it)."""
    settings = _defaults()
    origins: dict[str, str] = {}
    config_file = path or config_dir() / "config.toml"
    sources_file = config_file.with_name("sources.toml")
    _merge(settings, read_toml(config_file), str(config_file), origins)
    layer = read_toml(sources_file) if managed is None else managed
    _merge(settings, managed_layer(layer, settings, sources_file, saved=managed is None),
           str(sources_file), origins)
    for section, values in _env_layer(settings).items():
        for key, value in values.items():  # each named by its variable
            name = f"MEMORYD_{section}_{key}".upper()
            _merge(settings, {section: {key: value}}, f"{name}={os.environ[name]!r}", origins)
    _check_ranges(settings, origins)
    sources = _sources(settings.pop("sources", []))
    return Config(
        state_dir=state_dir(),
        socket_path=socket_path(),
        config_file=config_file,
        embed=EmbedConfig(**settings["embed"]),
        remember=RememberConfig(**settings["remember"]),
        search=SearchConfig(**settings["search"]),
        watch=WatchConfig(**{**settings["watch"],
                             "disabled": tuple(settings["watch"]["disabled"]),
                             "project_roots": tuple(settings["watch"]["project_roots"])}),
        context=ContextConfig(**{**settings["context"],
                                 "shared_agents": tuple(settings["context"]["shared_agents"])}),
        tools=ToolsConfig(**settings["tools"]),
        extract=ExtractConfig(**settings["extract"]),
        passes=PassesConfig(**settings["passes"]),
        sources=tuple(sources),
        server=ServerConfig(**settings["server"]),
        outcomes=OutcomesConfig(**settings["outcomes"]),
        unknown_environment=unknown_environment(settings),
    )


def _sources(tables: list[tuple[str, dict[str, Any]]]) -> list[Source]:
    """The ``[[sources]]`` of the files, each error naming the file it is in."""
    sources = []
    files: dict[str, list[str]] = {}
    for origin, table in tables:
        try:
            source = validate_source(table)
        except ConfigError as exc:
            raise ConfigError(f"{origin}: [[sources]]: {exc.message}") from None
        sources.append(source)
        files.setdefault(source.name, []).append(origin)
    duplicates = [
        f"{name} (" + (f"twice in {where[0]}" if len(set(where)) == 1 else
                       f"in {' and '.join(dict.fromkeys(where))}") + ")"
        for name, where in files.items() if len(where) > 1]
    if duplicates:
        raise ConfigError(f"sources named more than once: {'; '.join(duplicates)}: each "
                          "[[sources]] needs a name of its own")
    return sources


def check_config(path: Path | None = None,
                 agents: Iterable[str] = ()) -> tuple[Config, list[str]]:
    """The configuration on disk as a start or `memory reload` takes it: read, and its sources
    built (ConfigError as they would raise it); with its warnings (:func:`setting_warnings`;
    ``agents``: those the index holds)."""
    config = load_config(path)
    sources, _ = configured_sources(config)
    return config, setting_warnings(config, sources, agents)


def setting_warnings(config: Config, sources: Sequence[Source],
                     agents: Iterable[str] = ()) -> list[str]:
    """The names in the settings that name nothing: a built-in source in ``watch.disabled``
    that is none (it disables nothing), an agent in ``context.shared_agents`` that no source
    reads and no entry is of (it shares nothing). Not refused (an agent may come later), but
    said, with the name meant: in `memory reload`'s reply, the log and `memory doctor`."""
    found = []
    builtin = [source.name for source in default_sources()]
    for name in dict.fromkeys(config.watch.disabled):
        if name not in builtin:
            found.append(f"watch.disabled: {name!r} is no built-in source, so it disables "
                         "nothing" + _meant(name, builtin, "`memory sources list --json` names "
                                            "them"))
    known = sorted({source.agent for source in sources if source.agent} | PROJECT_AGENTS
                   | set(_defaults()["context"]["shared_agents"]) | set(agents))
    for agent in dict.fromkeys(config.context.shared_agents):
        if agent not in known:
            found.append(f"context.shared_agents: {agent!r} is the agent of no source and of "
                         "no entry, so it shares nothing" + _meant(agent, known, ""))
    return found


def _meant(name: str, names: list[str], otherwise: str) -> str:
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else f" ({otherwise})" if otherwise else ""


def read_toml(path: Path) -> dict[str, Any]:
    """A settings file's tables ({} when there is none). One that cannot be read, or whose
    directory cannot be entered (a state dir of another user's, or chmod 000), is a
    ConfigError naming it: at start one line and exit 3, not a traceback (a service manager
    restarting the daemon in a loop)."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc} (memoryd needs its "
                          "configuration and state directories readable and writable by "
                          "the user it runs as; set MEMORYD_HOME to move them)") from None
    try:
        return tomllib.loads(data.decode("utf-8-sig"))  # a byte-order mark is no statement
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def managed_layer(layer: dict[str, Any], settings: dict[str, Any], origin: Path,
                  saved: bool = True) -> dict[str, Any]:
    """sources.toml (written by `memory sources`) adds to the lists rather than replacing.
    ``saved``: the file as it is (a bad project root in it says how to take it out), not one
    `memory sources` checks before writing it."""
    unknown = set(layer) - {"disabled", "project_roots", "sources"}
    if unknown:
        raise ConfigError(f"{origin}: unknown keys {sorted(unknown)}")
    watch = {}
    for key in ("disabled", "project_roots"):
        if key in layer:
            if not isinstance(layer[key], list) or \
                    not all(isinstance(v, str) for v in layer[key]):
                raise ConfigError(f"{origin}: {key} must be {KINDS[list]}")
            for root in layer[key] if key == "project_roots" else ():
                problem = project_root_problem(root)
                if problem is not None:
                    raise ConfigError(f"{origin}: project_roots: {root!r} {problem}" + (
                        f" (`memory sources remove {shlex.quote(root)}` takes it out)"
                        if saved else ""))
            watch[key] = list(dict.fromkeys(settings["watch"][key] + layer[key]))
    merged: dict[str, Any] = {"watch": watch} if watch else {}
    if "sources" in layer:
        merged["sources"] = layer["sources"]
    return merged


def _toml_value(value: str | int) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string or integer is valid TOML too


def managed_text(layer: dict[str, Any]) -> str:
    """sources.toml holding ``layer`` (only strings, whole numbers, lists of strings and
    tables)."""
    lines = ["# Written by `memory sources add/remove`; hand-written settings go in config.toml.",
             ""]
    for key in ("disabled", "project_roots"):
        if layer.get(key):
            lines.append(f"{key} = [{', '.join(_toml_value(v) for v in layer[key])}]")
    for table in layer.get("sources", []):
        lines += ["", "[[sources]]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None]
    return "\n".join(lines) + "\n"


def write_managed(config: Config, layer: dict[str, Any]) -> None:
    """Write sources.toml atomically, once the configuration with it is one a reload and a
    start take (read, and its sources built). One they would refuse is not written: a project
    root of ``/`` written first failed every later `memory sources` and reload, and then the
    start, naming no file."""
    text = managed_text(layer)
    path = config.sources_file
    try:
        configured_sources(load_config(config.config_file, managed=tomllib.loads(text)))
    except ConfigError as exc:
        if exc.message.startswith(f"{path}: "):  # the change's own fault
            raise ConfigError(f"not saved in {path}: "
                              f"{exc.message.removeprefix(f'{path}: ')}") from None
        raise ConfigError(f"{exc.message} (fix that first: {path} is left as it was)") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # fsynced before the rename (and the directory after it): a crash leaves the old
        # file or the new one whole, never an empty one; private, whatever was there before
        replace_file(path, text.encode("utf-8"), 0o600)
    except OSError as exc:
        raise not_stored(f"cannot write {path}", exc) from None


def transcript_formats(config: Config) -> dict[str, str]:
    """The transcript sources memoryd reads, by name, with their format (the harness of the
    sessions they tell)."""
    return {s.name: s.format for s in configured_sources(config)[0] if s.kind == "transcript"}


def configured_sources(config: Config) -> tuple[list[Source], dict[str, str]]:
    """All sources, and the project root of each project source."""
    sources = [s for s in default_sources()
               if config.watch.defaults and s.name not in config.watch.disabled]
    projects: dict[str, str] = {}
    for root in config.watch.project_roots:
        for source in project_sources(Path(root)):
            sources.append(source)
            projects[source.name] = str(Path(root).expanduser())
    # what Claude Code loads from the directories above them
    sources.extend(parent_claude_files(config.watch.project_roots))
    sources.extend(config.sources)
    tools = Source("memoryd-agents", config.memory_dir.rstrip("/") + "/**/*.md", "memory",
                   "markdown")
    if all(s.path.split("{agent}")[0] != tools.path.split("{agent}")[0] for s in sources):
        sources.append(tools)
    # a file an instruction file imports, or one found in a project's subdirectory or above
    # it, that another source has already (a project's AGENTS.md, a rule, a file two projects
    # import, a subproject or a parent that is a project root of its own) stays that source's;
    # a file the user's own files and a project's reach is the user's, one two project roots
    # reach (one root inside the other) the innermost's
    home = Path.home()
    others = [source for source in sources if not gives_way(source)]

    def reach(name: str) -> float:
        return len(projects[name]) if name in projects else math.inf

    owner: dict[str, str] = {}
    for source in sources:
        if gives_way(source):
            held = owner.get(source.path)
            if held is None or reach(source.name) > reach(held):
                owner[source.path] = source.name
    kept: list[Source] = []
    for source in sources:
        if gives_way(source) and (owner[source.path] != source.name or any(
                other.match(Path(source.path), home) is not None for other in others)):
            projects.pop(source.name, None)
            continue
        kept.append(source)
    return kept, projects


def memory_roots(config: Config) -> list[Path]:
    """Where a git repository counts as a memory directory, memoryd's to commit its edits in:
    the roots of the memory sources. Not a project's (its repository is the user's code), nor
    those of the files the agents' own files lead to (an imported note, a CLAUDE.md above a
    project: ``~/work/CLAUDE.md`` made every repository in ``~/work`` memoryd's)."""
    sources, projects = configured_sources(config)
    home = Path.home()
    return [Path(os.path.realpath(s.root(home))) for s in sources
            if s.kind == "memory" and s.name not in projects and not gives_way(s)]


def add_source(config: Config, data: dict[str, Any]) -> Source:
    """Validate and record a new source (or, with only ``project_root``, a project root):
    sources.toml is written only once the configuration with it is one memoryd takes."""
    for field in ("project_root", "path"):
        problem = path_problem(str(data[field])) if field in data else None
        if problem is not None:
            raise ConfigError(f"{field} {problem}")
    try:  # the files as they are, not as last reloaded: one memoryd refuses is named first
        on_disk = load_config(config.config_file)
    except ConfigError as exc:
        raise ConfigError(f"{exc.message} (fix that first: {config.sources_file} is left as "
                          "it was)") from None
    layer = read_toml(config.sources_file)
    if "project_root" in data:
        root = str(Path(str(data["project_root"])).expanduser().resolve())
        if not Path(root).is_dir():
            raise ConfigError(f"project root {root} is not a directory")
        layer["project_roots"] = list(dict.fromkeys([*layer.get("project_roots", []), root]))
        write_managed(config, layer)
        return project_sources(Path(root))[0]
    builtin = {s.name: s for s in default_sources()}.get(str(data.get("name")))
    if builtin is not None and builtin.name in layer.get("disabled", []):
        return _enable_builtin(config, layer, builtin, data)
    if builtin is not None and builtin.name in on_disk.watch.disabled:
        raise ConfigError(f"built-in source {builtin.name!r} is disabled in "
                          f"{config.config_file} (watch.disabled); enable it there")
    if builtin is not None:
        raise ConfigError(f"a source named {builtin.name!r} exists already (built-in, enabled)")
    source = validate_source(data)
    if any(table.get("name") == source.name for table in layer.get("sources", [])):
        raise ConfigError(f"a source named {source.name!r} exists already in "
                          f"{config.sources_file} (`memory sources remove {source.name}` "
                          "first to change it)")
    if source.name in {s.name for s in on_disk.sources}:
        raise ConfigError(f"a source named {source.name!r} exists already in "
                          f"{config.config_file}")
    fixed = source.root(Path.home())
    if fixed.exists() and not fixed.is_dir():
        raise ConfigError(f"source {source.name!r}: 'path' {source.path!r}: {fixed} is a "
                          "file: the path up to its first wildcard is the directory watched")
    layer.setdefault("sources", []).append(
        {"name": source.name, "path": source.path, "kind": source.kind, "format": source.format,
         "agent": source.agent, "notebook_lines": source.notebook_lines})
    write_managed(config, layer)
    return source


def _enable_builtin(config: Config, layer: dict[str, Any], builtin: Source,
                    data: dict[str, Any]) -> Source:
    """`memory sources add NAME` of a built-in that `memory sources remove` disabled: enabled
    again, as built (a glob or kind that differs belongs to a source of another name)."""
    given = {k: data[k] for k in ("path", "kind", "format", "agent", "notebook_lines")
             if data.get(k) is not None}
    differs = sorted(k for k, v in given.items() if v != getattr(builtin, k))
    if differs:
        raise ConfigError(
            f"{builtin.name!r} is a built-in source ({builtin.path}, {builtin.kind}, "
            f"{builtin.format}); `memory sources add {builtin.name}` enables it again as it is; "
            f"give a source with another {', '.join(differs)} another name")
    layer["disabled"] = [n for n in layer["disabled"] if n != builtin.name]
    write_managed(config, layer)
    return builtin


def remove_source(config: Config, name: str) -> str:
    """Forget a source added with `memory sources add`, disable a built-in one, or drop a
    project root (by its directory). Returns what was done."""
    problem = path_problem(name)
    if problem is not None:
        raise ConfigError(f"name {problem}")
    layer = read_toml(config.sources_file)
    added = layer.get("sources", [])
    if any(s.get("name") == name for s in added):
        layer["sources"] = [s for s in added if s.get("name") != name]
        write_managed(config, layer)
        return f"removed source {name}"
    if name in {s.name for s in default_sources()}:
        layer["disabled"] = list(dict.fromkeys([*layer.get("disabled", []), name]))
        write_managed(config, layer)
        return f"disabled built-in source {name}"
    root = str(Path(name).expanduser().resolve()) if name.startswith(("/", "~")) else None
    if root and root in layer.get("project_roots", []):
        layer["project_roots"] = [r for r in layer["project_roots"] if r != root]
        write_managed(config, layer)
        return f"removed project root {root}"
    if name in {s.name for s in config.sources}:
        raise ConfigError(f"source {name!r} is defined in {config.config_file}; edit it there")
    if root and root in {resolved_root(r) for r in config.watch.project_roots}:
        raise ConfigError(f"project root {root} is defined in {config.config_file} "
                          "(watch.project_roots); edit it there")
    owner = configured_sources(config)[1].get(name)
    if owner is not None:  # one file or glob of a project root's: the root goes whole
        raise ConfigError(f"source {name!r} is one of project root {owner}'s: `memory sources "
                          f"remove {owner}` stops watching the project (its files stay)")
    raise ConfigError(f"no source named {name!r}")


def resolved_root(root: str) -> str:
    """A project root as `memory sources add --project` writes it: absolute, links resolved."""
    return str(Path(root).expanduser().resolve())


def managed_entries(config: Config) -> tuple[set[str], set[str]]:
    """The sources and the project roots `memory sources add` wrote (sources.toml), which
    `memory sources remove` takes out; the others are config.toml's (or the environment's)."""
    try:
        layer = read_toml(config.sources_file)
    except ConfigError:
        return set(), set()
    names = {str(table.get("name")) for table in layer.get("sources", [])
             if isinstance(table, dict)}
    roots = {resolved_root(root) for root in layer.get("project_roots", [])
             if isinstance(root, str)}
    return names, roots


class Settings:
    """The running configuration, for the parts that read it at each use: a reload
    (``memory reload``, SIGHUP) replaces it here."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def current(self) -> Config:
        return self.config

    def memory_dir(self) -> str:
        return self.config.memory_dir
