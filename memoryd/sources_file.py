"""sources.toml, beside config.toml: the sources and project roots `memory sources add/remove`
keep. A change is written (atomically, private) only once the configuration with it is one a
reload and a start take; :func:`memoryd.config.managed_layer` reads the file back as a layer
of the settings.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from memoryd.agent_sources import default_sources, project_sources
from memoryd.config import load_config, read_toml
from memoryd.errors import ConfigError
from memoryd.names import path_problem
from memoryd.settings import Config
from memoryd.sources import Source, validate_source
from memoryd.store.durable import not_stored, replace_file
from memoryd.watched_sources import configured_sources


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
