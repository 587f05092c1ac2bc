"""The sources of the agents' files: the defaults, each project root's, and those the agents'
settings, imports and trees lead to (:mod:`memoryd.sources` has what a source is, its globs and
the walks).

The default sources (:func:`default_sources`; ``~`` is the user's home): docs/sources.md lists
each with its glob, kind, format and agent (``mastersof-ai``, the ``claude-*``, ``codex-*``,
``gemini-*``, ``opencode-``, ``pi-``, ``windsurf-``, ``cline-``, ``roo-`` and ``copilot-`` ones);
``memory sources list --json`` prints them as a running daemon has them.

Each agent's home variable, an absolute path, moves its sources as the agent moves its files:
``$CLAUDE_CONFIG_DIR`` replaces ``~/.claude`` in the Claude Code sources, ``$CODEX_HOME``
replaces ``~/.codex`` in the Codex sources, ``$GEMINI_CLI_HOME`` replaces ``~`` in the Gemini
sources (``$GEMINI_CLI_HOME/.gemini/…``), ``$XDG_CONFIG_HOME`` replaces ``~/.config`` in
OpenCode's, ``$PI_CODING_AGENT_DIR`` replaces ``~/.pi/agent`` in pi's and ``$COPILOT_HOME``
replaces ``~/.copilot`` in Copilot CLI's (``copilot-*``) and ``$CLINE_DIR`` ``~/.cline`` in
``cline-tasks``. The daemon reads
them from its own environment when it loads its configuration.

``claude-auto-memory-dir`` is there when Claude Code's settings move its auto memory out of
``projects/<project>/memory/`` (``autoMemoryDirectory``; a project root's
``.claude/settings.local.json`` may name one for that project: a project source);
``gemini-user-memory:<name>`` for each name other than ``GEMINI.md`` that Gemini CLI's
``context.fileName`` gives its context files, and a project root gets a source for each such
name it does not have already, and one (agent ``codex``) for each of Codex's
``project_doc_fallback_filenames``: :mod:`memoryd.agent_settings` reads them. The notes a
CLAUDE.md imports (``@path``, :mod:`memoryd.file_imports`) are ``claude-import:<path>``, or
the project's ``project:<root>:claude-import:<path>``; those a GEMINI.md imports
``gemini-import:<path>``; those OpenCode's ``instructions`` setting names
``opencode-instructions:<entry>`` (:func:`opencode_instructed`); those Aider's ``read``
setting names ``aider-read:<entry>`` (:func:`aider_read`), and the chat history its
``chat-history-file`` moves ``aider-chat-history`` (:func:`aider_history`); a CLAUDE.md above a
project root ``claude-parent:<path>`` (:func:`parent_claude_files`). The watcher makes the
sources again every few seconds, so a changed setting or import is followed.
``claude-transcripts`` includes subagent transcripts (``<session>/subagents/agent-*.jsonl`` and
the older ``agent-*.jsonl``). ``codex-segmented`` covers the possible layout where a rollout is a
directory (``rollout-…/rollout.jsonl`` + ``compact-NNNNNN.jsonl``). ``codex-archived`` holds
the sessions archived in Codex (moved to ``archived_sessions/``; a move is followed as a rename).
``codex-memories`` is what Codex's memories feature writes (when enabled) beside its rollouts;
``codex-user-memory`` and ``codex-user-override`` are the instructions Codex reads in every
project (``AGENTS.override.md`` instead of ``AGENTS.md`` when it is there);
``gemini-transcripts`` includes Gemini CLI's subagent chats (``chats/<parent>/<id>.jsonl``);
``gemini-legacy-chats`` are the chats older versions wrote, one JSON document each
(memoryd.ingest.document). ``cline-tasks-<editor>``, ``roo-tasks-<editor>`` and
``kilo-tasks-<editor>`` are Cline's, Roo Code's and Kilo Code's task logs in each editor's
storage for its extensions (:func:`task_logs`), and ``cline-tasks`` the Cline CLI's.
docs/harnesses.md gives every harness's files and formats, with their sources.

Each project root in the configuration adds :func:`project_sources`: the agents' files of
:data:`_PROJECT_FILES` (CLAUDE.md and Claude Code's rules, AGENTS.md, GEMINI.md, Cursor's,
Windsurf's, Cline's, Roo's and Copilot's rules, Cline's memory bank, Aider's conventions and
chat history; not Cline's ``.clinerules/hooks/``, its hook scripts:
:data:`_PROJECT_EXCLUDED`), the files the agents' settings name there, the instruction files
of its subdirectories (``project:<root>:nested:<path>``, :mod:`memoryd.nested_files`), and
the notes its CLAUDE.md and GEMINI.md files import; docs/sources.md lists them with their
agents.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from memoryd import agent_settings, file_imports, nested_files
from memoryd.agent_settings import (
    agent_home,
    aider_history_file,
    aider_settings,
    claude_auto_memory_dir,
    claude_home,
    codex_fallback_names,
    codex_home,
    copilot_home,
    gemini_context_names,
    gemini_home,
    gemini_settings,
    opencode_instructions,
    opencode_settings,
    xdg_documents,
)
from memoryd.errors import ConfigError
from memoryd.names import path_problem
from memoryd.sources import Source, within

log = logging.getLogger(__name__)


def default_sources() -> list[Source]:
    """The sources in this module's docstring, with the agents' directories where their own
    home variables move them (:func:`memoryd.agent_settings.agent_home`)."""
    claude, codex = claude_home(), codex_home()
    config = agent_home("XDG_CONFIG_HOME") or "~/.config"  # OpenCode's, as xdg-basedir finds it
    gemini = gemini_home()
    pi = agent_home("PI_CODING_AGENT_DIR") or "~/.pi/agent"
    copilot = copilot_home()
    return [
        Source("mastersof-ai", "~/.mastersof-ai/agents/{agent}/memory/**/*.md",
               "memory", "markdown"),
        Source("claude-user-memory", f"{claude}/CLAUDE.md", "memory", "markdown",
               agent="claude-code"),
        *_imports(IMPORT_PREFIXES["claude-code"], "claude-code"),
        Source("claude-auto-memory", f"{claude}/projects/*/memory/**/*.md", "memory",
               "markdown", agent="claude-code"),
        *(_from_settings("claude-auto-memory-dir", f"{moved}/**/*.md", "claude-code")
          if (moved := claude_auto_memory_dir([*agent_settings.CLAUDE_MANAGED_SETTINGS,
                                               f"{claude}/settings.json"])) else []),
        Source("claude-agent-memory", f"{claude}/agent-memory/{{agent}}/**", "memory",
               "markdown"),
        Source("claude-user-rules", f"{claude}/rules/**/*.md", "memory", "markdown",
               agent="claude-code"),
        Source("claude-transcripts", f"{claude}/projects/**/*.jsonl", "transcript",
               "claude-code", agent="claude-code"),
        Source("codex-transcripts", f"{codex}/sessions/**/rollout-*.jsonl", "transcript",
               "codex", agent="codex"),
        Source("codex-segmented", f"{codex}/sessions/**/rollout-*/*.jsonl", "transcript",
               "codex", agent="codex"),
        Source("codex-archived", f"{codex}/archived_sessions/**/rollout-*.jsonl", "transcript",
               "codex", agent="codex"),
        Source("codex-memories", f"{codex}/memories/**/*.md", "memory", "markdown",
               agent="codex"),
        Source("codex-user-memory", f"{codex}/AGENTS.md", "memory", "markdown", agent="codex"),
        Source("codex-user-override", f"{codex}/AGENTS.override.md", "memory", "markdown",
               agent="codex"),
        Source("gemini-user-memory", f"{gemini}/GEMINI.md", "memory", "markdown",
               agent="gemini"),
        *(source for name in gemini_context_names(gemini_settings(gemini)) if name != "GEMINI.md"
          for source in _from_settings(f"gemini-user-memory:{name}", f"{gemini}/{name}",
                                       "gemini")),
        *_imports(IMPORT_PREFIXES["gemini"], "gemini"),
        Source("gemini-transcripts", f"{gemini}/tmp/*/chats/**/*.jsonl", "transcript",
               "gemini", agent="gemini"),
        Source("gemini-legacy-chats", f"{gemini}/tmp/*/chats/session-*.json", "transcript",
               "gemini", agent="gemini"),
        Source("opencode-user-rules", f"{config}/opencode/AGENTS.md", "memory", "markdown",
               agent="opencode"),
        *opencode_instructed(),
        *aider_read(),
        *aider_history(),
        Source("pi-user-memory", f"{pi}/AGENTS.md", "memory", "markdown", agent="pi"),
        Source("windsurf-user-rules", "~/.codeium/windsurf/memories/global_rules.md", "memory",
               "markdown", agent="windsurf"),
        Source("cline-user-rules", "~/Documents/Cline/Rules/**", "memory", "markdown",
               agent="cline"),
        Source("cline-user-rules-home", "~/Cline/Rules/**", "memory", "markdown", agent="cline"),
        *([Source("cline-user-rules-xdg", f"{documents}/Cline/Rules/**", "memory", "markdown",
                  agent="cline")] if (documents := xdg_documents()) else []),
        Source("roo-user-rules", "~/.roo/rules*/**", "memory", "markdown", agent="roo"),
        Source("pi-transcripts", f"{pi}/sessions/**/*.jsonl", "transcript", "generic",
               agent="pi"),
        Source("copilot-user-instructions", f"{copilot}/copilot-instructions.md", "memory",
               "markdown", agent="copilot"),
        Source("copilot-user-instruction-files", f"{copilot}/instructions/**/*.instructions.md",
               "memory", "markdown", agent="copilot"),
        Source("copilot-transcripts", f"{copilot}/session-state/*/events.jsonl", "transcript",
               "copilot", agent="copilot"),
        Source("copilot-legacy-transcripts", f"{copilot}/session-state/*.jsonl", "transcript",
               "copilot", agent="copilot"),
        *task_logs(config),
    ]


#: The editors of the VS Code family, by the name of their directory in the user's
#: application data: Cline and Roo Code run in each.
EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
#: The VS Code extensions that keep their tasks as ``tasks/<task>/ui_messages.json`` in their
#: global storage, and whose agents they are.
TASK_EXTENSIONS = (("saoudrizwan.claude-dev", "cline"), ("rooveterinaryinc.roo-cline", "roo"),
                   ("kilocode.kilo-code", "kilo"))


def task_logs(config: str) -> list[Source]:
    """Cline's, Roo Code's and Kilo Code's task logs (format ``cline``): in each editor's
    global storage for each extension (``cline-tasks-code``, ``roo-tasks-cursor``,
    ``kilo-tasks-windsurf``, …; a remote machine's VS
    Code server ``…-vscode-server``), and the Cline CLI's, ``$CLINE_DIR/data/tasks``
    (``~/.cline``; ``cline-tasks``). ``config``: the application data directory on Linux."""
    data = "~/Library/Application Support" if sys.platform == "darwin" else config
    users = [(editor.lower().replace(" - ", "-"), f"{data}/{editor}/User") for editor in EDITORS]
    users.append(("vscode-server", "~/.vscode-server/data/User"))
    cline = agent_home("CLINE_DIR") or "~/.cline"
    return [*(Source(f"{agent}-tasks-{editor}",
                     f"{user}/globalStorage/{extension}/tasks/*/ui_messages.json",
                     "transcript", "cline", agent=agent)
              for extension, agent in TASK_EXTENSIONS for editor, user in users),
            Source("cline-tasks", f"{cline}/data/tasks/*/ui_messages.json", "transcript",
                   "cline", agent="cline")]


def _imports(prefix: str, agent: str, project: str | None = None) -> list[Source]:
    """A source for each note ``agent``'s instruction files import, the user's or a
    project root's (:func:`memoryd.file_imports.agent_imports`), named ``prefix`` and its path;
    configured_sources leaves out those another source has."""
    return [source for path in file_imports.agent_imports(agent, project)
            for source in _from_settings(f"{prefix}{path}", path, agent)]


def gives_way(source: Source) -> bool:
    """Whether a source is a file found by following the agents (one a CLAUDE.md or
    GEMINI.md imports, an instruction file in a project's subdirectory, one OpenCode's or
    Aider's settings name): one another source matches already stays that source's."""
    return NESTED_INFIX in source.name or any(
        source.name.startswith(prefix) or f":{prefix}" in source.name
        for prefix in (*IMPORT_PREFIXES.values(), OPENCODE_PREFIX, AIDER_PREFIX, PARENT_PREFIX))


def parent_claude_files(roots: Sequence[str]) -> list[Source]:
    """Claude Code loads the ``CLAUDE.md`` and ``CLAUDE.local.md`` of every directory above
    the one it works in (``~/work/CLAUDE.md`` for a session in ``~/work/shop``): those above
    the project roots that exist, each once, as Claude Code's own sources
    (``claude-parent:<path>``), not one project's: every project below reads it."""
    found: dict[str, None] = {}
    for root in roots:
        for directory in Path(os.path.expanduser(root)).parents:
            if directory == directory.parent:  # the file system's root: not watched
                break
            for name in ("CLAUDE.md", "CLAUDE.local.md"):
                if (directory / name).is_file():
                    found.setdefault(str(directory / name), None)
    return [source for path in found
            for source in _from_settings(f"{PARENT_PREFIX}{path}", path, "claude-code")]


def opencode_instructed(project: str | None = None) -> list[Source]:
    """The sources of the files OpenCode's ``instructions`` setting names: the user's absolute
    (and ``~/…``) ones, or with ``project`` (a root as configured, no trailing ``/``) the
    project's settings' and the user's relative ones (OpenCode reads those in every project),
    relative to it."""
    config = agent_home("XDG_CONFIG_HOME") or "~/.config"  # OpenCode's, as xdg-basedir has it
    return _opencode(_prefix(OPENCODE_PREFIX, project), _entries(
        opencode_instructions(opencode_settings(config)), project,
        lambda: opencode_instructions(opencode_settings(config, project))), project)


def _opencode(prefix: str, entries: list[str], base: str | None = None) -> list[Source]:
    """A source (agent ``opencode``) for each entry of OpenCode's ``instructions``: a path or
    a glob, absolute, ``~/…``, or relative to the project root ``base``. The notes alone
    (:data:`memoryd.file_imports.NOTE_SUFFIXES`: ``docs/*.md``, not ``package.json``); a glob
    of Bun's that memoryd's globs do not have (``{a,b}``, ``[ab]``) is logged once and
    skipped."""
    sources = []
    for entry in entries:
        if not entry.lower().endswith(file_imports.NOTE_SUFFIXES) \
                or any(char in entry for char in "{}[]"):
            _unwatchable(f"OpenCode's instructions entry {entry!r}: memoryd indexes notes "
                         f"({', '.join(file_imports.NOTE_SUFFIXES)}) by a path or a glob of * ? "
                         "and ** alone")
            continue
        sources += _from_settings(f"{prefix}{entry}", _against(entry, base), "opencode")
    return sources


def aider_read(project: str | None = None) -> list[Source]:
    """The sources of the files Aider's ``read`` setting names (``.aider.conf.yml``): the
    user's absolute (and ``~/…``) ones, or with ``project`` (a root as configured, no trailing
    ``/``) the project's and the user's relative ones, relative to it (Aider resolves them
    against the directory it runs in: a project root)."""
    return _aider(_prefix(AIDER_PREFIX, project), _entries(
        agent_settings.aider_read(aider_settings()), project,
        lambda: agent_settings.aider_read(aider_settings(project))), project)


def _entries(users: list[str], project: str | None,
             projects: Callable[[], list[str]]) -> list[str]:
    """The entries of a setting that names files (OpenCode's ``instructions``, Aider's
    ``read``): without ``project`` the user's absolute (and ``~/…``) ones; with it the
    project's own (``projects()``) and the user's relative ones, which the agent reads in
    every project."""
    if project is None:
        return [entry for entry in users if _absolute(entry)]
    mine = projects()
    return [*mine, *(entry for entry in users if not _absolute(entry) and entry not in mine)]


def _absolute(entry: str) -> bool:
    return entry.startswith(("/", "~/"))


def _prefix(prefix: str, project: str | None) -> str:
    """A source's name prefix: the user's, or ``project:<root>:`` before it."""
    return prefix if project is None else f"project:{project}:{prefix}"


def aider_history(project: str | None = None) -> list[Source]:
    """The chat history Aider's ``chat-history-file`` setting moves out of a project's
    ``.aider.chat.history.md``: the user's absolute (or ``~/…``) one, a file every project's
    sessions go to (``aider-chat-history``), or with ``project`` the project's, or the user's
    relative one, relative to the root (``project:<root>:aider-chat-history``); none where the
    setting names the default file."""
    users = aider_history_file(aider_settings())
    if project is None:
        return _from_settings(AIDER_HISTORY, users, "aider", "aider") \
            if users and _absolute(users) else []
    moved = aider_history_file(aider_settings(project))
    if moved is None and users and not _absolute(users):
        moved = users
    if moved is None:
        return []
    path = os.path.normpath(os.path.expanduser(_against(moved, project)))
    taken = [os.path.join(os.path.expanduser(project), ".aider.chat.history.md"),  # its own
             *([os.path.expanduser(users)] if users and _absolute(users) else [])]
    if any(path == os.path.normpath(other) for other in taken):  # the user's file: theirs
        return []
    return _from_settings(_prefix(AIDER_HISTORY, project), path, "aider", "aider")


def _against(entry: str, base: str | None) -> str:
    """A settings entry's path: as it is when absolute (or ``~/…``), else relative to the
    project root ``base``."""
    return entry if _absolute(entry) else \
        os.path.normpath(os.path.join(os.path.expanduser(base or "") or "/", entry))


def _aider(prefix: str, entries: list[str], base: str | None = None) -> list[Source]:
    """A source (agent ``aider``) for each entry of Aider's ``read``: a note
    (:data:`memoryd.file_imports.NOTE_SUFFIXES`), or a directory's markdown (``**/*.md``;
    Aider reads every file below it, code too), but not the home's, the project's own or one
    above them. Another entry (code, data, such a directory) is logged once and skipped."""
    sources = []
    for entry in entries:
        path = _against(entry, base)
        directory = os.path.normpath(os.path.expanduser(path))
        if any(char in entry for char in "*?[]{}"):  # Aider's names are not globs
            _unwatchable(f"Aider's read entry {entry!r}: memoryd watches names without * ? [ ] "
                         "{ }")
        elif entry.lower().endswith(file_imports.NOTE_SUFFIXES):
            sources += _from_settings(f"{prefix}{entry}", path, "aider")
        elif os.path.isdir(directory) and not any(
                within(os.path.normpath(os.path.expanduser(held)), directory)
                for held in ("~", *([base] if base else []))):  # the home, a whole project
            sources += _from_settings(f"{prefix}{entry}", f"{path.rstrip('/')}/**/*.md", "aider")
        else:
            _unwatchable(f"Aider's read entry {entry!r}: memoryd indexes notes "
                         f"({', '.join(file_imports.NOTE_SUFFIXES)}) and the *.md of a "
                         "directory (not the home's, nor a project's whole tree)")
    return sources


def _from_settings(name: str, path: str, agent: str,
                   transcript: str | None = None) -> list[Source]:
    """A memory source an agent's settings (or a CLAUDE.md's imports) give, or a transcript
    source of that format; none when memoryd cannot watch its path: a setting never stops the
    daemon, and the log says why, once."""
    problem = path_problem(path)
    if problem is None:
        try:
            return [Source(name, path, "transcript", transcript, agent=agent) if transcript
                    else Source(name, path, "memory", "markdown", agent=agent)]
        except ConfigError as exc:  # it names the source itself
            _unwatchable(str(exc).encode("utf-8", "backslashreplace").decode())
            return []
    _unwatchable(f"source {name!r}: {problem}".encode("utf-8", "backslashreplace").decode())
    return []


@functools.lru_cache(maxsize=8)
def _unwatchable(problem: str) -> None:
    log.warning("An agent's settings or imports name files memoryd cannot watch: %s", problem)


#: A project's files: (path relative to the root, agent (None: the {agent} placeholder), kind,
#: format).
_PROJECT_FILES: tuple[tuple[str, str | None, str, str], ...] = (
    ("CLAUDE.md", "claude-code", "memory", "markdown"),
    ("CLAUDE.local.md", "claude-code", "memory", "markdown"),
    (".claude/CLAUDE.md", "claude-code", "memory", "markdown"),
    (".claude/rules/**/*.md", "claude-code", "memory", "markdown"),
    (".claude/agent-memory/{agent}/**", None, "memory", "markdown"),
    (".claude/agent-memory-local/{agent}/**", None, "memory", "markdown"),
    ("AGENTS.md", "codex", "memory", "markdown"),
    ("AGENTS.override.md", "codex", "memory", "markdown"),
    ("agents/state/memory/{agent}.md", None, "memory", "markdown"),
    ("GEMINI.md", "gemini", "memory", "markdown"),
    (".cursor/rules/**/*.mdc", "cursor", "memory", "markdown"),
    (".cursorrules", "cursor", "memory", "markdown"),
    (".windsurf/rules/**/*.md", "windsurf", "memory", "markdown"),
    (".windsurfrules", "windsurf", "memory", "markdown"),
    ("CONVENTIONS.md", "aider", "memory", "markdown"),
    (".aider.chat.history.md", "aider", "transcript", "aider"),
    ("memory-bank/**/*.md", "cline", "memory", "markdown"),
    (".clinerules", "cline", "memory", "markdown"),
    (".clinerules/**", "cline", "memory", "markdown"),
    (".cline/rules/**", "cline", "memory", "markdown"),
    (".roorules*", "roo", "memory", "markdown"),
    (".roo/rules*/**", "roo", "memory", "markdown"),
    (".github/copilot-instructions.md", "copilot", "memory", "markdown"),
    (".github/instructions/**/*.instructions.md", "copilot", "memory", "markdown"),
)
#: The agents a project root's files are of (a name in ``context.shared_agents`` that is none
#: of these, nor any other source's or entry's agent, is warned of: memoryd.config).
PROJECT_AGENTS = frozenset(agent for _, agent, _, _ in _PROJECT_FILES if agent is not None)
#: The directories a project's source leaves out (relative to its root, Source.excluded):
#: Cline runs the executables of ``.clinerules/hooks/`` as its hooks (memoryd's among them,
#: :mod:`memoryd_client.cline_hooks`), and the files of ``.clinerules/workflows/`` when a
#: person types their slash command (a release's steps): it reads neither as a rule.
_PROJECT_EXCLUDED = {".clinerules/**": ("hooks", "workflows")}


#: What the source of an instruction file in a project's subdirectory is named by:
#: ``project:<root>:nested:<path in the root>``.
NESTED_INFIX = ":nested:"
#: What the source of a file OpenCode's ``instructions`` setting names is named by:
#: ``opencode-instructions:<the setting's entry>``, or a project's
#: ``project:<root>:opencode-instructions:<entry>``.
OPENCODE_PREFIX = "opencode-instructions:"
#: What the source of a file Aider's ``read`` setting names is named by:
#: ``aider-read:<the setting's entry>``, or a project's ``project:<root>:aider-read:<entry>``.
AIDER_PREFIX = "aider-read:"
#: The source of the chat history Aider's ``chat-history-file`` setting moves.
AIDER_HISTORY = "aider-chat-history"
#: What the source of a CLAUDE.md in a directory above a project root is named by:
#: ``claude-parent:<path>``.
PARENT_PREFIX = "claude-parent:"
#: What a source of a file an agent's instruction file imports is named by:
#: ``claude-import:<path>``, or a project's ``project:<root>:claude-import:<path>``.
IMPORT_PREFIXES = {"claude-code": "claude-import:", "gemini": "gemini-import:"}
_TOP_FILES = {relative for relative, *_ in _PROJECT_FILES if "/" not in relative}


def project_sources(root: Path) -> list[Source]:
    """The agents' files indexed in one project root (absolute, or starting with ``~``)."""
    text = str(root).rstrip("/") or "/"
    if any(char in text for char in "*?{}"):
        raise ConfigError(f"project root {text!r}: the path may not contain * ? {{ or }}")
    if not (text.startswith(("/", "~/")) or text == "~"):
        raise ConfigError(f"project root {text!r}: must be absolute or start with ~/")
    base = text if text != "/" else ""
    sources = [Source(f"project:{text}:{relative}", f"{base}/{relative}", kind, fmt, agent=agent,
                      excluded=_PROJECT_EXCLUDED.get(relative, ()))
               for relative, agent, kind, fmt in _PROJECT_FILES]
    moved = claude_auto_memory_dir([f"{base}/.claude/settings.local.json"])
    if moved is not None:
        sources += _from_settings(f"project:{text}:autoMemoryDirectory", f"{moved}/**/*.md",
                                  "claude-code")
    # Gemini CLI's context files by their configured names (a project's AGENTS.md is one file
    # several agents read: it stays where _PROJECT_FILES puts it)
    for name in gemini_context_names(gemini_settings(gemini_home(), workspace=base)):
        if name not in _TOP_FILES:
            sources += _from_settings(f"project:{text}:{name}", f"{base}/{name}", "gemini")
    for name in codex_fallback_names(f"{codex_home()}/config.toml"):
        if name not in _TOP_FILES and f"project:{text}:{name}" not in {s.name for s in sources}:
            sources += _from_settings(f"project:{text}:{name}", f"{base}/{name}", "codex")
    sources += opencode_instructed(text)
    sources += aider_read(text)
    sources += aider_history(text)
    # the instruction files of its subdirectories (memoryd.nested_files), each watched alone
    top = os.path.expanduser(base) or "/"
    for path, agent in nested_files.nested(top):
        sources += _from_settings(f"project:{text}{NESTED_INFIX}{os.path.relpath(path, top)}",
                                  path, agent)
    return [*sources, *(source for agent, prefix in IMPORT_PREFIXES.items()
                        for source in _imports(f"project:{text}:{prefix}", agent, base))]
