"""Where agents keep their files: their home variables, and the settings that move or rename
their memory (memoryd.agent_sources makes sources of them).

Claude Code keeps its files in ``$CLAUDE_CONFIG_DIR`` (``~/.claude``) and may move its auto
memory with ``autoMemoryDirectory``; Codex in ``$CODEX_HOME`` (``~/.codex``), reading a
project's ``project_doc_fallback_filenames`` where it has no ``AGENTS.md``; Gemini CLI in
``$GEMINI_CLI_HOME/.gemini`` (``~/.gemini``), naming its context files with
``context.fileName``; OpenCode loads the files its ``opencode.json`` names in
``instructions``; Aider the files ``read`` names in its ``.aider.conf.yml``. Settings files are
JSON, with comments and trailing commas as Gemini CLI and OpenCode allow (TOML for Codex's
``config.toml``; the top-level keys of YAML for Aider's, :func:`yaml_top_level`), read once per
version of the file: the daemon asks again every few seconds.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memoryd_client import paths

log = logging.getLogger(__name__)


#: The settings an administrator gives Claude Code (they win over the user's), per system.
CLAUDE_MANAGED_SETTINGS = ("/etc/claude-code/managed-settings.json",
                           "/Library/Application Support/ClaudeCode/managed-settings.json")


def claude_auto_memory_dir(settings: Sequence[str]) -> str | None:
    """The directory Claude Code keeps its auto memory in instead of
    ``projects/<project>/memory/``, as the first of these settings files that sets
    ``autoMemoryDirectory`` names it (Claude Code takes it from managed, user and a project's
    local settings, never from a project's shared ones); None when none does. A value memoryd
    cannot watch (not absolute or ``~/…``, the root or the home itself, holding ``* ? { }``)
    is logged once and skipped."""
    for path in settings:
        value = _string_setting(os.path.expanduser(path), "autoMemoryDirectory")
        if value is None:
            continue
        directory = value.strip().rstrip("/")
        expanded = os.path.expanduser(directory)
        if not expanded.startswith("/") \
                or os.path.normpath(expanded) in ("/", os.path.expanduser("~")) \
                or any(char in directory for char in "*?{}"):
            _unusable_setting(path, "autoMemoryDirectory", repr(value))
            return None
        return directory if directory.startswith("~/") else os.path.normpath(expanded)
    return None


def _string_setting(path: str, key: str) -> str | None:
    """A string setting of an agent's JSON settings file; None when the file or the key is
    not there, or the file is not a JSON object (logged once per version of the file)."""
    value = _setting(path, (key,))
    return value if isinstance(value, str) and value.strip() else None


def _setting(path: str, *keys: tuple[str, ...]) -> Any:
    """The value at the first of these key paths an agent's settings file (JSON or TOML)
    holds (a nested object's key, then its key…); None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    data = _read_settings(path, info.st_mtime_ns, info.st_size, info.st_ino)
    for key in keys:
        value: Any = data
        for part in key:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


#: Each settings file's last object read whole: a file caught half-written (an editor
#: truncates, then writes) keeps its settings rather than dropping a moved source's entries.
_LAST_SETTINGS: dict[str, dict[str, Any]] = {}


@functools.lru_cache(maxsize=16)
def _read_settings(path: str, mtime_ns: int, size: int, inode: int) -> dict[str, Any]:
    """A settings file's object (JSON, or TOML or YAML by its name), read once per version (the
    daemon asks every few seconds)."""
    kind = "TOML" if path.endswith(".toml") else "YAML" if path.endswith(".yml") else "JSON"
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8-sig")
        data = tomllib.loads(text) if kind == "TOML" else yaml_top_level(text) \
            if kind == "YAML" else _json_with_comments(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError is one
        kept = _LAST_SETTINGS.get(path, {})
        log.warning("%s could not be read as %s (%s): %s", path, kind, exc,
                    "its settings as last read are kept" if kept else
                    "the settings memoryd follows in it are taken as unset")
        return kept
    _LAST_SETTINGS[path] = data if isinstance(data, dict) else {}
    return _LAST_SETTINGS[path]


#: What JSON with comments (JSONC) has beyond JSON, each outside strings: a comment, or a comma
#: before a closing bracket (the strings match first, and are kept).
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?(?:\*/|$)', re.DOTALL)
_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|,(?=\s*[}\]])')


def _json_with_comments(text: str) -> Any:
    """JSON, or JSON with comments and trailing commas, as Gemini CLI and OpenCode read their
    settings (a settings file with a comment was taken as unreadable)."""
    try:
        return json.loads(text)
    except ValueError:
        def keep_strings(found: re.Match[str]) -> str:
            return found[0] if found[0].startswith('"') else ""
        return json.loads(_TRAILING_COMMA.sub(keep_strings, _COMMENT.sub(keep_strings, text)))


#: A top-level key of a YAML mapping, and what follows it on its line.
_YAML_KEY = re.compile(r"""^(?P<key>[^\s#'"\-?:,\[\]{}][^:#]*?|'[^']*'|"[^"]*")[ \t]*:"""
                       r"""(?:[ \t]+(?P<rest>.*))?$""")
_YAML_QUOTED = re.compile(r"""^(?:"(?P<double>(?:\\.|[^"\\])*)"|'(?P<single>(?:''|[^'])*)')"""
                          r"""[ \t]*(?:#.*)?$""")
_YAML_FLOW_ITEM = re.compile(r"""\s*("(?:\\.|[^"\\])*"|'(?:''|[^'])*'|[^,]*)\s*(?:,|$)""")


class _Unreadable:
    """A value of a YAML key that :func:`yaml_top_level` does not read (a nested mapping, a
    block of text, an anchor): shown as what the file says."""

    def __init__(self, shown: str) -> None:
        self.shown = shown

    def __repr__(self) -> str:
        return self.shown


def yaml_top_level(text: str) -> dict[str, Any]:
    """The top-level keys of a YAML mapping whose values are a scalar (plain or quoted, kept as
    text), a flow list (``[a, 'b']``) or a block list (``- a`` lines), as Aider's
    ``.aider.conf.yml`` and Copilot CLI's ``workspace.yaml`` are written; any other value is
    an :class:`_Unreadable` (memoryd has no YAML parser among its dependencies, and needs no
    more of it). Never raises: a line it cannot place is left out."""
    found: dict[str, Any] = {}
    key: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or line.startswith(("---", "...", "%")):
            continue
        if line[0] not in " \t-":
            matched = _YAML_KEY.match(line.rstrip())
            key = matched["key"].strip("'\"") if matched else None
            if key is not None:
                rest = (matched["rest"] or "").strip() if matched else ""
                found[key] = _yaml_value(rest) if rest and not rest.startswith("#") else None
            continue
        if key is None:
            continue
        if (stripped == "-" or stripped.startswith(("- ", "-\t"))) \
                and isinstance(found[key], list | None):
            item = _yaml_scalar(stripped[1:].strip())
            found[key] = [*(found[key] or []), item if item is not None else
                          _Unreadable(stripped[1:].strip())]
        else:  # a nested mapping or a continued text: not read
            found[key] = _Unreadable(f"{found[key]!r} {stripped}")
    return found


def _yaml_value(rest: str) -> Any:
    """What follows a key on its line: a flow list, else a scalar (see :func:`yaml_top_level`)."""
    if rest.startswith("["):
        inside, _, after = rest[1:].rpartition("]")
        if after.strip() and not after.strip().startswith("#") or "[" in inside or "{" in inside:
            return _Unreadable(rest)
        items = [item.strip() for item in _YAML_FLOW_ITEM.findall(inside)]
        values = [_yaml_scalar(item) for item in items if item]
        return values if all(v is not None for v in values) else _Unreadable(rest)
    value = _yaml_scalar(rest)
    return value if value is not None else _Unreadable(rest)


def _yaml_scalar(text: str) -> str | None:
    """A scalar's text: quoted (with its escapes) or plain (up to a comment); None for what is
    not a scalar (a mapping, an anchor, a tag, a block of text)."""
    if text.startswith(("'", '"')):
        quoted = _YAML_QUOTED.match(text)
        if quoted is None:
            return None
        if quoted["single"] is not None:
            return quoted["single"].replace("''", "'")
        try:
            return str(json.loads(f'"{quoted["double"]}"'))
        except ValueError:
            return None
    plain = re.split(r"[ \t]#", text, maxsplit=1)[0].strip()
    if not plain or plain[0] in "&*!|>{[%@`" or ": " in plain or plain.endswith(":"):
        return None
    return plain


@functools.lru_cache(maxsize=8)
def _unusable_setting(path: str, key: str, shown: str, what: str | None = None) -> None:
    what = what or ("an absolute directory (or ~/…) without * ? { }"
                    if key == "autoMemoryDirectory" else "a file name without * ? { }")
    log.warning("%s: %s=%s is not %s: memoryd does not watch it", path, key, shown, what)


def gemini_settings(gemini: str, workspace: str | None = None) -> list[str]:
    """Gemini CLI's settings files, the one that wins first: the system's (an administrator's
    overrides), a workspace's ``.gemini/settings.json``, the user's (in ``gemini``, its
    ``.gemini`` directory), the system's defaults."""
    system = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or (
        "/Library/Application Support/GeminiCli/settings.json" if sys.platform == "darwin"
        else "/etc/gemini-cli/settings.json")
    defaults = os.environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or str(
        Path(system).with_name("system-defaults.json"))
    local = [f"{workspace}/.gemini/settings.json"] if workspace is not None else []
    return [system, *local, f"{gemini}/settings.json", defaults]


def gemini_context_names(settings: Sequence[str]) -> list[str]:
    """The names Gemini CLI gives its context files (``GEMINI.md`` by default), as the first
    of these settings files that sets ``context.fileName`` (``contextFileName`` in settings of
    before v2) says: one name or a list. Gemini reads each in its ``.gemini`` directory and in
    a project, and its ``save_memory`` writes to the first in ``.gemini``. A name that is not
    a plain file name (a path, ``* ? { }``) is logged once and skipped."""
    for path in settings:
        found = _setting(os.path.expanduser(path), ("context", "fileName"), ("contextFileName",))
        if found is None:
            continue
        names = _file_names(path, "context.fileName", found if isinstance(found, list)
                            else [found])
        if names:
            return names
    return ["GEMINI.md"]


def opencode_settings(config: str, project: str | None = None) -> list[str]:
    """OpenCode's settings files: a project's (in its root, then its ``.opencode/``), or
    without ``project`` the user's (``config``: its configuration directory, ``~/.config``)."""
    directories = [project, f"{project}/.opencode"] if project is not None \
        else [f"{config}/opencode"]
    return [f"{directory}/{name}" for directory in directories
            for name in ("opencode.json", "opencode.jsonc")]


def opencode_instructions(settings: Sequence[str]) -> list[str]:
    """The files OpenCode's ``instructions`` setting names in these settings files (paths or
    globs; OpenCode loads those of every file), once each; a URL (OpenCode fetches it: not
    a file) is left out, and a value that is not a string logged once and skipped."""
    return [entry for entry in _path_list(settings, "instructions", "a path or a glob")
            if not entry.startswith(("https://", "http://"))]


def _path_list(settings: Sequence[str], key: str, what: str) -> list[str]:
    """The paths a setting holding one or a list of them names in these settings files (all
    files' together), once each; a value that is not a path is logged once and skipped."""
    found: list[str] = []
    for path in settings:
        values = _setting(os.path.expanduser(path), (key,))
        for value in values if isinstance(values, list) else [values] if values else []:
            if isinstance(value, str) and value.strip() and "\0" not in value:
                found.append(value.strip())
            else:
                _unusable_setting(path, key, repr(value), what)
    return list(dict.fromkeys(found))


def aider_settings(project: str | None = None) -> list[str]:
    """Aider's settings file: the user's (``~/.aider.conf.yml``) or a project root's (Aider
    reads the one of the git root and of its working directory: a project root is both)."""
    return [f"{project if project is not None else '~'}/.aider.conf.yml"]


def aider_read(settings: Sequence[str]) -> list[str]:
    """The files Aider's ``read`` setting names in these settings files (one path, or a list;
    each file or directory Aider gives the model to read), once each; a value that is not a
    path is logged once and skipped."""
    return _path_list(settings, "read", "a path or a list of paths")


def aider_history_file(settings: Sequence[str]) -> str | None:
    """Where Aider's ``chat-history-file`` setting moves its chat history, as the first of
    these settings files that sets it says (the one Aider lets win); None when none does. A
    value that is not a path is logged once and skipped."""
    for path in settings:
        value = _setting(os.path.expanduser(path), ("chat-history-file",))
        if value is None:
            continue
        if isinstance(value, str) and value.strip() and "\0" not in value \
                and not any(char in value for char in "*?[]{}"):
            return value.strip()
        _unusable_setting(path, "chat-history-file", repr(value), "a file's path")
    return None


def loaded_names(agent: str, project: str | None = None) -> set[str]:
    """The file names ``agent`` loads as its instructions by its settings' say, in a project
    (Gemini CLI's context files, Codex's fallback instructions); none for another agent."""
    if agent == "gemini":
        return set(gemini_context_names(gemini_settings(gemini_home(), project)))
    if agent == "codex":
        return set(codex_fallback_names(f"{codex_home()}/config.toml"))
    return set()


def codex_fallback_names(config: str) -> list[str]:
    """The file names Codex reads in a project directory without an ``AGENTS.md``
    (``project_doc_fallback_filenames`` in its ``config.toml``); a name that is not a plain
    file name is logged once and skipped."""
    found = _setting(os.path.expanduser(config), ("project_doc_fallback_filenames",))
    return _file_names(config, "project_doc_fallback_filenames",
                       found if isinstance(found, list) else [found] if found else [])


def _file_names(path: str, key: str, values: list[Any]) -> list[str]:
    """The plain file names among a setting's values (no path, no ``* ? { }``), once each."""
    names = []
    for value in values:
        if isinstance(value, str) and value.strip() not in ("", ".", "..") \
                and not any(char in value for char in "/\\*?{}\0"):
            names.append(value.strip())
        else:
            _unusable_setting(path, key, repr(value))
    return list(dict.fromkeys(names))


def claude_home() -> str:
    """Where Claude Code keeps its files: ``$CLAUDE_CONFIG_DIR`` (its whole ``~/.claude`` tree:
    settings, CLAUDE.md, transcripts, memory) when set, else ``~/.claude``."""
    return agent_home("CLAUDE_CONFIG_DIR") or "~/.claude"


def gemini_home() -> str:
    """Gemini CLI's ``.gemini`` directory: in ``$GEMINI_CLI_HOME`` when set, else in ``~``."""
    return (agent_home("GEMINI_CLI_HOME") or "~") + "/.gemini"


def codex_home() -> str:
    """Where Codex keeps its files: ``$CODEX_HOME`` when set, else ``~/.codex``."""
    return agent_home("CODEX_HOME") or "~/.codex"


def copilot_home() -> str:
    """Where GitHub Copilot CLI keeps its files: ``$COPILOT_HOME`` when set, else
    ``~/.copilot``."""
    return agent_home("COPILOT_HOME") or "~/.copilot"


def agent_home(variable: str) -> str | None:
    """The directory an agent's home variable names in the daemon's environment: Claude Code
    keeps its files in ``$CLAUDE_CONFIG_DIR`` (default ``~/.claude``), Codex in
    ``$CODEX_HOME`` (default ``~/.codex``), pi in ``$PI_CODING_AGENT_DIR`` (``~/.pi/agent``),
    Copilot CLI in ``$COPILOT_HOME`` (``~/.copilot``), the Cline CLI in ``$CLINE_DIR``
    (``~/.cline``),
    OpenCode in ``$XDG_CONFIG_HOME/opencode`` (``~/.config``), and Gemini CLI takes
    ``$GEMINI_CLI_HOME`` for the home its ``.gemini`` is in. None when it is unset, empty, or
    not a path memoryd can use as a glob's root (relative, or holding ``* ? { }``): the default
    is used, and the daemon's log says why."""
    value = os.environ.get(variable, "").strip()
    if not value:
        return None
    path = os.path.expanduser(value).rstrip("/") or "/"
    if not path.startswith("/") or any(char in path for char in "*?{}"):
        _unusable_home(variable, value)
        return None
    return path


def xdg_documents() -> str | None:
    """The Documents folder the XDG user directories name on Linux, where Cline keeps its
    global rules (``Cline/Rules``: memoryd_client.paths.xdg_documents, as ``xdg-user-dir
    DOCUMENTS`` reads it), as ``~/…`` or an absolute path. None elsewhere, when none is named,
    or when it is ``~/Documents`` or the home itself (sources of their own read those)."""
    if not sys.platform.startswith("linux"):
        return None
    value = paths.xdg_documents(agent_home("XDG_CONFIG_HOME"))
    if value is None:
        return None
    home = os.path.expanduser("~")
    if value == home or value == f"{home}/Documents" or any(c in value for c in "*?{}$"):
        return None
    return "~" + value[len(home):] if value.startswith(home + "/") else value


@functools.lru_cache(maxsize=8)
def _unusable_home(variable: str, value: str) -> None:
    """Said once per value: the sources are made again whenever the configuration is read."""
    log.warning("$%s=%r is not an absolute path without * ? { }: its agent's files are "
                "looked for in their default place", variable, value)
