"""``memory hook install|uninstall cline [--project DIR]``: memoryd's hook files for Cline.

Cline (the VS Code extension, 3.36 and later) runs a hook as an executable file named after its
event, with no extension, from its hooks directories: the user's, ``Cline/Hooks/`` in the
Documents folder (on Linux the one ``xdg-user-dir DOCUMENTS`` names, as Cline asks it; else
``~/Documents``), and each workspace root's ``.clinerules/hooks/``. It sends the event as JSON
on stdin and reads ``{"cancel", "contextModification", "errorMessage"}`` from stdout; a hook
that fails, or takes 30 s, is ignored (docs/harnesses.md, "Cline's hooks").

install writes one small shell script per event memoryd handles (``TaskStart``,
``TaskResume``, ``UserPromptSubmit``, ``TaskComplete``: memoryd_client.hooks.HARNESS_EVENTS),
each running ``memory hook cline EVENT`` with the absolute ``memory`` command and the
environment that picks the daemon (MEMORYD_HOME, MEMORYD_SOCKET); uninstall removes them, and
the directories install created for them when they are empty. A directory holds one file per
event: a file of that name that is not memoryd's (its marker line says so) is the user's hook,
and install changes nothing then (it names the file; the user merges the two, or renames
theirs), uninstall leaves it. A project's hook files hold absolute paths into this user's
installation, so they are kept out of git as a project's settings file is
(:mod:`memoryd_client.git_exclude`), and ones git tracks are refused.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
from pathlib import Path

from memoryd_client.atomic_file import fsync_directory, write_atomically
from memoryd_client.errors import BadParamsError
from memoryd_client.paths import xdg_documents

#: The line that makes a hook file memoryd's.
MARKER = "# memoryd-cline-hook:"


def documents_dir() -> Path:
    """The Documents folder as Cline finds it: on Linux where ``xdg-user-dir`` is, what it
    prints (the folder the XDG user directories name, else the home), else ``~/Documents``."""
    if sys.platform.startswith("linux") and shutil.which("xdg-user-dir") is not None:
        return Path(xdg_documents() or Path.home())
    return Path.home() / "Documents"


def hooks_dir(project: str | None) -> Path:
    """The user's hooks directory, or DIR/.clinerules/hooks (DIR must exist: a typo must not
    create it)."""
    if project is not None:
        base = Path(project).expanduser()
        if not base.is_dir():
            raise BadParamsError(f"--project {project}: no such directory; nothing was changed")
        return base.resolve() / ".clinerules" / "hooks"
    return documents_dir() / "Cline" / "Hooks"


def _not_a_folder(directory: Path) -> Path | None:
    """The path on the way to the hooks ``directory`` (or itself) that is there but is no
    folder (a project's ``.clinerules`` as a single rules file), if one is."""
    for path in (*reversed(directory.parents), directory):
        if path.exists() and not path.is_dir():
            return path
    return None


def _no_folder(blocked: Path, project: str | None) -> str:
    if project is not None and blocked.name == ".clinerules":
        return (f"{blocked} is a file, the project's rules in one file: Cline runs a project's "
                "hooks from the folder .clinerules/hooks/, which it cannot have then; nothing "
                "was changed. Install for the user instead (`memory hook install cline`: Cline "
                "runs those hooks in every workspace), or make .clinerules a folder (move the "
                "rules into .clinerules/rules.md) and install again")
    return (f"{blocked} is a file, not a folder: the hooks go in {blocked}/…; nothing was "
            "changed")


def hook_text(event: str) -> str:
    """The script for ``event``: memoryd's hook with this installation's command."""
    from memoryd_client.install import hook_command

    return (f"#!/bin/sh\n{MARKER} written by `memory hook install cline`; "
            "`memory hook uninstall cline` removes it\n"
            f"exec {hook_command('cline', event)}\n")


def is_ours(text: str | None) -> bool:
    return text is not None and MARKER in text


def _events() -> tuple[str, ...]:
    from memoryd_client.hooks import HARNESS_EVENTS

    return HARNESS_EVENTS["cline"]


def install(project: str | None = None) -> str:
    from memoryd_client.install import (
        _exclude,
        _make_parents,
        _reach,
        note_created,
        read_own_file,
        refuse_tracked,
    )

    directory = hooks_dir(project)
    blocked = _not_a_folder(directory)
    if blocked is not None:
        raise ValueError(_no_folder(blocked, project))
    refuse_tracked("cline", project, [directory / event for event in _events()])
    found = {event: read_own_file(directory / event) for event in _events()}
    theirs = [str(directory / event) for event, text in found.items()
              if text is not None and not is_ours(text)]
    if theirs:
        raise ValueError(
            f"{', '.join(theirs)}: a hook of the user's, not memoryd's; nothing was changed. "
            "Cline runs one file per event in a directory: rename yours, or have it run "
            "`memory hook cline EVENT` with the stdin it was given, and install again")
    if not directory.is_dir():
        note_created(os.path.realpath(directory), _make_parents(str(directory)))
    mask = os.umask(0)
    os.umask(mask)
    lines, excluded = [], []
    for event, text in found.items():
        path = directory / event
        wanted = hook_text(event)
        if text == wanted:
            lines.append(f"{path}: already installed")
        else:
            write_atomically(os.path.realpath(path), wanted, 0o777 & ~mask | 0o700)
            lines.append(f"{path}: installed" + (" (replacing an earlier one)" if text else ""))
        excluded += _exclude(project, path, add=True)
    return "\n".join([*lines, *excluded, *_reach(), (
        "Next: reload the editor's window (Cline finds new hook files when it looks at its "
        "hooks directories); in Cline versions before 4, turn on Settings → Features → "
        "Enable Hooks.")])


def uninstall(project: str | None = None) -> str:
    from memoryd_client.install import _exclude, read_own_file, remove_created

    directory = hooks_dir(project)
    if _not_a_folder(directory) is not None:  # no hook can be there
        return "\n".join([f"{directory}: nothing to remove (no such folder)",
                          *(line for event in _events()
                            for line in _exclude(project, directory / event, add=False))])
    lines = []
    for event in _events():
        path = directory / event
        text = read_own_file(path)
        if text is None:
            lines.append(f"{path}: nothing to remove")
        elif not is_ours(text):
            lines.append(f"{path}: not memoryd's hook; left as it is")
        else:
            os.unlink(path)  # a link: the link, not its target
            lines.append(f"{path}: removed memoryd's hook")
        lines += _exclude(project, path, add=False)
    remove_created(os.path.realpath(directory))
    with contextlib.suppress(OSError):
        fsync_directory(str(directory))
    return "\n".join(lines)


def hook_commands(text: str) -> list[str]:
    """The command an installed hook file runs (``[/usr/bin/env NAME=VALUE …] /…/memory hook
    cline EVENT``), for `memory doctor`; none when it cannot be read."""
    for line in text.splitlines():
        if line.startswith("exec "):
            try:
                return [shlex.join(shlex.split(line[len("exec "):]))]
            except ValueError:
                return []
    return []
