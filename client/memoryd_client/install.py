"""``memory hook install|uninstall claude-code|codex|gemini|cursor|copilot [--project DIR]``
(OpenCode has a plugin file instead: :mod:`memoryd_client.opencode_plugin`).

Adds memoryd's hook handlers to the agent's settings idempotently and removes exactly the
handlers it added (recognised by their command). The settings file is the user's, so it is
edited the way a careful person would:

- as text: memoryd's handlers are inserted, and taken out again, in the file's own layout (the
  indentation, line endings and separators around them), and every other byte stays as it
  was, inline arrays and objects included (:mod:`memoryd_client.json_edit`); install followed
  by uninstall gives back the same bytes. What install added besides the handlers (a
  ``hooks`` object, an event's list, or what filled an empty one) is noted beside the backups,
  so that uninstall puts back an empty ``[]`` or ``{}`` the user had, rather than dropping it;
- through a symlink (the dotfiles pattern): the link's target is updated, the link is kept;
- atomically: a temporary file in the target's directory, fsync, rename, fsync of the directory;
- with the file's permission bits (a 0600 file stays 0600);
- with a backup of the previous contents before every change. Backups live in memoryd's state dir,
  not beside the file (which may be in a git repository or a dotfiles repository):
  ``<state dir>/hook-backups/<real path of the file>.memoryd-backup-<date>-<time>-<microseconds>``,
  mode 0600, never overwritten (a counter is appended on a clash). Two are kept per file: the
  oldest (the file as it was before memoryd first changed it) and the latest; the ones between
  are deleted. The output names the backup and the directory, and says when none is from before
  memoryd (a file it created, or one its hooks were in already).
- A file that install created is removed again by uninstall when nothing else is left in it
  (with the directories install created, when empty); a note beside the backups remembers that.
- In a project (``--project DIR``), the file is personal (absolute paths into this user's
  installation), so install lists it in the repository's ``.git/info/exclude`` (local, never
  committed) and it stays out of ``git status``; uninstall takes the line out again
  (:mod:`memoryd_client.git_exclude`). A file git already tracks (a team's
  ``.gemini/settings.json``) is not hidden by an exclude, and would take those paths into the
  next ``git commit -a``: install refuses it, changing nothing (:func:`refuse_tracked`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd_client import hook_settings
from memoryd_client.atomic_file import fsync_directory, write_atomically
from memoryd_client.errors import BadParamsError
from memoryd_client.git_exclude import refuse_tracked
from memoryd_client.hook_backups import (
    backup_stem,
    backups_of,
    prune_backup_dirs,
    write_backup,
)
from memoryd_client.hook_tables import COMMAND_KEY, FLAT, HANDLER_TYPE, HARNESS_EVENTS, HEAD

#: The variables that decide which daemon a hook talks to and where it spools: carried into the
#: hook commands when set at install time (agents run hooks with their own environment).
CARRIED_ENV = ("MEMORYD_HOME", "MEMORYD_SOCKET")
CREATED_SUFFIX = ".memoryd-created"
ADDED_SUFFIX = ".memoryd-added"


def settings_path(harness: str, project: str | None) -> Path:
    """The file install writes. User level: Claude Code's settings.json in $CLAUDE_CONFIG_DIR
    (default ~/.claude), Codex's hooks.json in $CODEX_HOME (default ~/.codex), Gemini CLI's
    settings.json in ~/.gemini ($GEMINI_CLI_HOME/.gemini when set: Gemini's home override),
    Cursor's ~/.cursor/hooks.json. With a project: Claude Code's personal, uncommitted
    ``DIR/.claude/settings.local.json`` (the commands hold absolute paths into this user's
    installation), Codex's ``DIR/.codex/hooks.json``, Gemini's ``DIR/.gemini/settings.json``,
    Cursor's ``DIR/.cursor/hooks.json``. Copilot CLI reads every ``*.json`` of its hooks
    directories: memoryd's is a file of its own, ``$COPILOT_HOME/hooks/memoryd.json``
    (``~/.copilot``), or a project's ``DIR/.github/hooks/memoryd.json``. A project directory
    that does not exist is refused (a typo must not create it)."""
    if project is not None:
        base = Path(project).expanduser()
        if not base.is_dir():
            raise BadParamsError(f"--project {project}: no such directory; nothing was changed")
        base = base.resolve()
        return base / {"claude-code": ".claude/settings.local.json", "codex": ".codex/hooks.json",
                       "gemini": ".gemini/settings.json", "cursor": ".cursor/hooks.json",
                       "copilot": ".github/hooks/memoryd.json"}[harness]
    if harness == "claude-code":
        config = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(config).expanduser() if config else Path.home() / ".claude") / "settings.json"
    if harness == "gemini":
        home = os.environ.get("GEMINI_CLI_HOME")
        return (Path(home).expanduser() if home else Path.home()) / ".gemini" / "settings.json"
    if harness == "cursor":
        return Path.home() / ".cursor" / "hooks.json"
    if harness == "copilot":
        home = os.environ.get("COPILOT_HOME", "").strip()
        return (Path(home).expanduser() if home else Path.home() / ".copilot") / "hooks" / \
            "memoryd.json"
    codex_home = os.environ.get("CODEX_HOME")
    return (Path(codex_home).expanduser() if codex_home else Path.home() / ".codex") / "hooks.json"


def legacy_path(harness: str, project: str | None) -> Path | None:
    """Where memoryd before 2026-11 put a project's Claude Code hooks: the committable
    settings.json. Uninstall cleans it too; install points at it."""
    if harness != "claude-code" or project is None:
        return None
    return settings_path(harness, project).with_name("settings.json")


def memory_command() -> list[str]:
    """An absolute command for `memory` (agents run hooks with a minimal PATH)."""
    beside = Path(sys.executable).parent / "memory"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("memory")
    return [found] if found else [sys.executable, "-m", "memoryd_client"]


def carried_env() -> list[str]:
    """``NAME=VALUE`` for each of CARRIED_ENV set now, with an absolute path (hooks run in the
    session's directory)."""
    return [f"{name}={os.path.abspath(os.path.expanduser(value))}"
            for name in CARRIED_ENV if (value := os.environ.get(name))]


def hook_command(harness: str, event: str) -> str:
    """The command an agent runs: ``/usr/bin/env MEMORYD_HOME=… /…/memory hook AGENT EVENT`` when
    the environment has to be carried (Claude Code and Codex have no per-hook env setting, and
    the settings' own ``env`` would apply to the whole session), else ``/…/memory hook …``."""
    env = carried_env()
    prefix = [_env_program(), *env] if env else []
    return shlex.join([*prefix, *memory_command(), "hook", harness, event])


def _env_program() -> str:
    if os.path.exists("/usr/bin/env"):
        return "/usr/bin/env"
    return shutil.which("env") or "/usr/bin/env"


def is_ours(handler: Any, harness: str) -> bool:
    """Whether a handler is one memoryd installed: ``[env NAME=VALUE …] …/memory hook AGENT
    EVENT`` or ``[env …] PYTHON -m memoryd_client hook AGENT EVENT``."""
    command = handler.get(COMMAND_KEY.get(harness, "command")) \
        if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:  # someone else's command with unbalanced quotes
        return False
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
        while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
    if len(words) < 4 or words[-3] != "hook" or words[-2] != harness:
        return False
    program = words[:-3]
    return (len(program) == 1 and os.path.basename(program[0]) == "memory") or \
        (len(program) == 3 and program[1:] == ["-m", "memoryd_client"])


# -- writing ----------------------------------------------------------------------------------

def _parses_without_comments(text: str) -> bool:
    """Whether ``text`` is JSON once its ``//`` and ``/* */`` comments (outside strings) are
    taken out."""
    out: list[str] = []
    i, in_string = 0, False
    while i < len(text):
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\":
                out.append(text[i + 1:i + 2])
                i += 1
            elif char == '"':
                in_string = False
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return False
            i = end + 2
            continue
        else:
            in_string = char == '"'
            out.append(char)
        i += 1
    try:
        json.loads("".join(out))
    except ValueError:
        return False
    return True


@dataclass
class SettingsFile:
    """A settings file as found: the path the agent reads, the real file behind any links, its
    text (None when it does not exist) and its data."""

    path: Path
    real: str
    text: str | None
    data: dict[str, Any]
    mode: int | None
    owner: tuple[int, int] | None

    @classmethod
    def read(cls, path: Path) -> SettingsFile:
        real = os.path.realpath(path)
        text = _read_text(real)
        try:
            st = os.stat(real)
            mode: int | None = st.st_mode & 0o7777
            owner: tuple[int, int] | None = (st.st_uid, st.st_gid)
        except FileNotFoundError:
            text, mode, owner = None, None, None
        data: Any = {}
        if text is not None and text.strip():
            try:
                data = json.loads(text)
            except ValueError as exc:
                if _parses_without_comments(text):  # Gemini CLI reads JSON with comments
                    raise ValueError(
                        f"{path} holds comments (// or /* */): the agent may read them, but "
                        "memoryd edits JSON alone; nothing was changed. Take the comments out "
                        "(or into a \"_comment\" key) and run it again") from None
                raise ValueError(f"{path} is not valid JSON ({exc}); nothing was changed") from None
            if not isinstance(data, dict):
                raise ValueError(f"{path} does not hold a JSON object; nothing was changed")
        return cls(path, real, text, data, mode, owner)

    @property
    def linked(self) -> bool:
        return os.path.islink(self.path)

    def write(self, text: str) -> Path | None:
        """Write ``text``; returns the backup made (None for a new file). A file that did not
        exist is created with its missing directories, and a note remembers what was created,
        for uninstall."""
        if _read_text(self.real) != self.text:  # the agent or an editor wrote it meanwhile
            raise ValueError(f"{self.path} changed while memoryd was editing it; nothing was "
                             "changed, try again")
        if self.text is None:
            created = _make_parents(os.path.dirname(self.real))
            mask = os.umask(0)
            os.umask(mask)
            write_atomically(self.real, text, 0o666 & ~mask)
            note = self.created_note()
            note.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            note.write_text("".join(p + "\n" for p in [*created, self.real]), "utf-8")
            return None
        backup = write_backup(self.real, self.text)
        write_atomically(self.real, text, self.mode or 0o600, self.owner)
        return backup

    def added_note(self) -> Path:
        stem = backup_stem(self.real)
        return stem.with_name(stem.name + ADDED_SUFFIX)

    def added(self) -> dict[tuple[str, ...], str | None]:
        """What install added besides the handlers: the path of each container it created
        (None) or filled when it was empty (the text it had)."""
        try:
            pairs = json.loads(self.added_note().read_text("utf-8"))
            return {tuple(path): text for path, text in pairs}
        except (OSError, ValueError, TypeError):
            return {}

    def note_added(self, added: dict[tuple[str, ...], str | None]) -> None:
        note = self.added_note()
        if not added:
            with contextlib.suppress(FileNotFoundError):
                note.unlink()
            return
        note.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        note.write_text(json.dumps([[list(p), t] for p, t in added.items()]), "utf-8")

    def created_note(self) -> Path:
        stem = backup_stem(self.real)
        return stem.with_name(stem.name + CREATED_SUFFIX)

    def remove_created(self) -> bool:
        """Remove the file (and the directories) that install created, if the note says so."""
        note = self.created_note()
        if not note.exists():
            return False
        created = note.read_text("utf-8").splitlines()
        if not created or created[-1] != self.real:
            return False
        os.unlink(self.real)
        for directory in reversed(created[:-1]):
            with contextlib.suppress(OSError):  # not empty: something else lives there now
                os.rmdir(directory)
        fsync_directory(os.path.dirname(self.real))
        note.unlink()
        prune_backup_dirs(note.parent)
        return True

    def forget_created(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.created_note().unlink()
        prune_backup_dirs(self.created_note().parent)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; nothing was changed") from None


def read_own_file(path: str | Path) -> str | None:
    """A file install may own whole (a plugin, a hook script), as text; None when absent."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None


def note_created(real: str, created: list[str]) -> None:
    """Remember the directories install created for ``real`` (a file or a directory of
    memoryd's files), beside the backups, for :func:`remove_created`."""
    note = _created_note_of(real)
    note.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    note.write_text("".join(p + "\n" for p in created), "utf-8")


def remove_created(real: str) -> None:
    """Remove the directories install created for ``real`` that are empty now, and the note."""
    note = _created_note_of(real)
    with contextlib.suppress(FileNotFoundError):
        for directory in reversed(note.read_text("utf-8").splitlines()):
            with contextlib.suppress(OSError):  # not empty: something else lives there now
                os.rmdir(directory)
        note.unlink()
        prune_backup_dirs(note.parent)


def _created_note_of(real: str) -> Path:
    stem = backup_stem(real)
    return stem.with_name(stem.name + CREATED_SUFFIX)


def _make_parents(directory: str) -> list[str]:
    """mkdir -p, returning the directories it made, outermost first."""
    missing = []
    while not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for path in reversed(missing):
        os.mkdir(path)
    return list(reversed(missing))


def next_steps(harness: str) -> list[str]:
    """What the user does after install (docs/agents.md, "Hooks")."""
    if harness == "claude-code":
        return [("Next: new Claude Code sessions run the hooks (a running one may need a look at "
                 "/hooks or a restart; project hooks run once the workspace is trusted).")]
    if harness == "gemini":
        user = settings_path("gemini", None)
        return [("Next: new Gemini CLI sessions run the hooks (/hooks panel lists them; project "
                 "hooks run in a trusted folder)."),
                ("  Gemini CLI versions from before hooks were on by default need them turned "
                 f"on in {user}: \"hooksConfig\": {{\"enabled\": true}} (versions with "
                 "hooksConfig, 0.26 on); the first versions with hooks, before hooksConfig, "
                 "need \"tools\": {\"enableHooks\": true} and \"hooks\": {\"enabled\": "
                 "true}, then a restart.")]
    if harness == "cursor":
        return [("Next: restart Cursor; its Hooks settings tab lists them. Cursor versions "
                 "without sessionStart/sessionEnd hooks (before 2.x) report them as unknown.")]
    if harness == "copilot":
        return [("Next: new Copilot CLI sessions run the hooks (a project's, in .github/hooks/, "
                 "once the folder is trusted). Versions that do not take context from "
                 "sessionStart still get a hard rule's deny before a tool call.")]
    config = settings_path("codex", None).with_name("config.toml")
    return [("Next: in Codex, review and trust the hooks with /hooks: Codex does not run untrusted "
             "hooks."),
            ("  Codex versions from before hooks were on by default also need `codex_hooks = true` "
             f"under [features] in {config}.")]


def watch_step(project: str | None) -> str:
    """The step the hooks do not take: a repository's instruction files are read once it is a
    project root (docs/agents.md, "Hooks")."""
    command = f"memory sources add --project {shlex.quote(project)}" if project else \
        "memory sources add --project DIR"
    return (f"  Then `{command}` for each repository you work in: its CLAUDE.md, AGENTS.md, "
            "… are read once it is watched; until then its sessions' memory block holds only "
            "what was stored there and the global memory (`memory doctor` names the "
            "projects sessions ran in that are not watched).")


def _reach() -> list[str]:
    from memoryd_client.paths import socket_text

    env = carried_env()
    return [f"  the hooks reach the daemon at {socket_text()}"
            + (f" (the commands carry {', '.join(env)})" if env else "")]


def _describe(settings: SettingsFile, backup: Path | None, harness: str,
              created: bool = False) -> list[str]:
    """The lines on the file written: through a link, its backup, and what the backups kept
    are. The oldest is "the file before memoryd first changed it" only when it holds none of
    memoryd's hooks: of a file memoryd created (``created``: its note said so) there is no
    such version, nor of one memoryd's hooks were in before any backup."""
    lines = []
    if settings.linked:
        lines.append(f"  written through the link to {settings.real}")
    if backup is not None:
        kept = backups_of(settings.real)
        count = len(kept)
        if kept and not created and not _ours_in(kept[0], harness):
            what = "the file before memoryd first changed it" + \
                (", and the latest" if count > 1 else "")
        else:
            what = ("the oldest and the latest" if count > 1 else "the file before this change") \
                + "; none is from before memoryd: " + \
                ("it created the file" if created else "its hooks were in the file already")
        lines.append(f"  backup: {backup}")
        lines.append(f"  backups of this file: {count} in {backup.parent} ({what})")
    return lines


def groups_for(harness: str) -> dict[str, dict[str, Any]]:
    """What memoryd adds to each event's list: a group ``{matcher?, hooks: [handler]}``, or for
    Cursor and Copilot CLI the handler itself. Gemini's handlers are named ``memoryd``
    (``/hooks disable memoryd`` turns them all off)."""
    groups = {}
    for event, (matcher, extras) in HARNESS_EVENTS[harness].items():
        if harness in FLAT:
            groups[event] = {**HANDLER_TYPE.get(harness, {}),
                             COMMAND_KEY.get(harness, "command"): hook_command(harness, event),
                             **({"matcher": matcher} if matcher else {}), **extras}
            continue
        named = {"name": "memoryd"} if harness == "gemini" else {}
        handler = {**named, "type": "command", "command": hook_command(harness, event), **extras}
        groups[event] = {"matcher": matcher, "hooks": [handler]} if matcher else \
            {"hooks": [handler]}
    return groups


def _nothing_left(text: str, harness: str) -> bool:
    """Whether a settings text holds nothing but what a new file of the harness starts with."""
    data = json.loads(text) if text.strip() else {}
    return not data or data == HEAD.get(harness)


def _strip(text: str, harness: str, added: hook_settings.Added) -> tuple[str, int]:
    return hook_settings.strip_handlers(text, lambda h: is_ours(h, harness), added,
                                        flat=harness in FLAT)


def _without_ours(settings: SettingsFile, harness: str) -> tuple[str, int]:
    """The file's text without memoryd's handlers (what install found, if any)."""
    assert settings.text is not None
    if not settings.text.strip():  # an empty file: nothing to parse, nothing of ours
        return settings.text, 0
    added = settings.added()
    text, removed = _strip(settings.text, harness, added)
    if removed and _nothing_left(text, harness) and ("file",) in added:  # only whitespace
        text = added[("file",)] or ""
    return text, removed


def install(harness: str, project: str | None = None) -> str:
    path = settings_path(harness, project)
    refuse_tracked(harness, project, [path], holds_ours=bool(_ours_in(path, harness)))
    settings = SettingsFile.read(path)
    groups = groups_for(harness)
    replaced = 0
    added: hook_settings.Added
    head = HEAD.get(harness)
    if settings.text is None:
        text, added = hook_settings.new_file(groups, head), {}
    else:
        base, replaced = _without_ours(settings, harness)
        try:
            if base.strip():
                text, added = hook_settings.add_handlers(base, groups, head)
            else:  # an empty file
                text, added = hook_settings.new_file(groups, head), {("file",): base}
        except ValueError as exc:  # 'hooks' or an event's list is something else
            raise ValueError(f"{path}: {exc}; nothing was changed") from None
        if json.loads(text) == settings.data:
            return f"{path}: memoryd hooks already installed" + "".join(
                f"\n{line}" for line in _exclude(project, path, add=True))
    created = settings.created_note().exists()
    backup = settings.write(text)
    settings.note_added(added)
    said = f"{path}: installed {len(groups)} memoryd hooks" + \
        (f" (replacing {replaced} earlier ones)" if replaced else "") + \
        (" (new file)" if settings.text is None else "")
    lines = [said, *_describe(settings, backup, harness, created),
             *_exclude(project, path, add=True), *_reach(),
             *next_steps(harness), watch_step(project)]
    legacy = legacy_path(harness, project)
    if legacy is not None and _ours_in(legacy, harness):
        lines.append(f"  note: {legacy} (committable) also holds memoryd hooks, written there "
                     f"by an older memoryd; `memory hook uninstall {harness} --project {project}` "
                     "removes them from both files, then install again")
    return "\n".join(lines)


def _exclude(project: str | None, path: Path, add: bool) -> list[str]:
    """Keep a project's personal settings file out of `git status` (install), or stop
    (uninstall)."""
    if project is None:
        return []
    from memoryd_client import git_exclude

    change = git_exclude.add if add else git_exclude.remove
    try:
        said = change(str(path))
    except OSError as exc:  # not fatal: the hooks work; git status shows the file
        return [f"  note: could not edit the repository's info/exclude ({exc})"]
    return [f"  {said}"] if said else []


def _ours_in(path: Path, harness: str) -> int:
    """How many of memoryd's handlers a settings file holds."""
    try:
        settings = SettingsFile.read(path)
    except (OSError, ValueError):
        return 0
    if not (settings.text or "").strip():
        return 0
    return _strip(settings.text or "", harness, {})[1]


def uninstall(harness: str, project: str | None = None) -> str:
    lines = [_uninstall_from(settings_path(harness, project), harness, project)]
    legacy = legacy_path(harness, project)
    if legacy is not None and _ours_in(legacy, harness):
        lines.append(_uninstall_from(legacy, harness))
    return "\n".join(lines)


def _uninstall_from(path: Path, harness: str, project: str | None = None) -> str:
    settings = SettingsFile.read(path)
    if settings.text is None:
        return f"{path}: nothing to remove" + "".join(
            f"\n{line}" for line in _exclude(project, path, add=False))
    text, removed = _without_ours(settings, harness)
    if not removed:
        return f"{path}: no memoryd hooks found" + "".join(
            f"\n{line}" for line in _exclude(project, path, add=False))
    excluded = _exclude(project, path, add=False)
    if _nothing_left(text, harness) and settings.remove_created():
        settings.note_added({})
        return "\n".join([(f"{path}: removed {removed} memoryd hooks, and the file, which "
                           "memoryd had created"), *excluded])
    created = settings.created_note().exists()
    settings.forget_created()  # what is left is the user's
    backup = settings.write(text)
    settings.note_added({})
    return "\n".join([f"{path}: removed {removed} memoryd hooks",
                      *_describe(settings, backup, harness, created), *excluded])
