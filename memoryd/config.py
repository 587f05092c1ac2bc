"""Settings, read into a frozen ``Config``.

Layers, each overriding the one before: the commented defaults shipped in the package
(``default.toml``, which documents every setting), the user's ``config.toml`` (in
``$MEMORYD_HOME`` or the platform config dir), then ``MEMORYD_<SECTION>_<KEY>`` environment
variables.

The records read into are :mod:`memoryd.settings`'s; the sources a configuration watches are
built by :mod:`memoryd.watched_sources`, and `memory sources add/remove` write sources.toml
through :mod:`memoryd.sources_file`.
"""

from __future__ import annotations

import difflib
import os
import shlex
import tomllib
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from memoryd_client.paths import config_dir, socket_path, state_dir

from memoryd.agent_sources import PROJECT_AGENTS, default_sources
from memoryd.errors import ConfigError
from memoryd.names import agent_problem, path_problem
from memoryd.redact import redact
from memoryd.settings import (
    PASS_NAMES,
    SCHEDULES,
    Config,
    ContextConfig,
    EmbedConfig,
    ExtractConfig,
    OutcomesConfig,
    PassesConfig,
    RememberConfig,
    SearchConfig,
    ServerConfig,
    ToolsConfig,
    WatchConfig,
)
from memoryd.sources import PLACEHOLDER, UNWATCHABLE, Source, validate_source
from memoryd.watched_sources import configured_sources


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
    "passes.quiet_s": (0, 86400), "passes.settle_s": (0, 3600),
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
    return [redact(warning) for warning in found]  # said where a ConfigError is (its docstring)


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

