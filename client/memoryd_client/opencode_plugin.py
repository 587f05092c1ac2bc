"""``memory hook install|uninstall opencode [--project DIR]``: memoryd's OpenCode plugin.

OpenCode has no hook commands: it loads JavaScript plugins from its plugins directory
(``~/.config/opencode/plugins/``, ``$XDG_CONFIG_HOME/opencode/plugins/`` when that is set, and
a project's ``.opencode/plugins/``). memoryd ships one plugin file, ``opencode_plugin.js`` (package
data), which runs ``memory hook opencode EVENT``; install writes it there as ``memoryd.js`` with
the absolute ``memory`` command and the environment that picks the daemon (MEMORYD_HOME,
MEMORYD_SOCKET) filled in, and uninstall removes that file, and the directories install created
for it when they are empty. A file of that name that is not memoryd's plugin (the marker line
says so) is the user's: install refuses to replace it, uninstall leaves it. A project's plugin
holds absolute paths into this user's installation, so it is kept out of git as a project's
settings file is (:mod:`memoryd_client.git_exclude`), and one git tracks is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from memoryd_client.atomic_file import fsync_directory, write_atomically
from memoryd_client.errors import BadParamsError

FILE_NAME = "memoryd.js"
#: The line that makes a plugin file memoryd's (in opencode_plugin.js).
MARKER = "memoryd-opencode-plugin:"
SOURCE = Path(__file__).with_name("opencode_plugin.js")
COMMAND_LINE = 'const COMMAND = ["memory"] // memoryd:command'
ENV_LINE = "const ENV = {} // memoryd:env"


def plugin_path(project: str | None) -> Path:
    """Where OpenCode loads the plugin from: the user's config directory (OpenCode follows
    $XDG_CONFIG_HOME), or DIR/.opencode/plugins/ (DIR must exist: a typo must not create it)."""
    if project is not None:
        base = Path(project).expanduser()
        if not base.is_dir():
            raise BadParamsError(f"--project {project}: no such directory; nothing was changed")
        return base.resolve() / ".opencode" / "plugins" / FILE_NAME
    config = os.environ.get("XDG_CONFIG_HOME")
    root = Path(config).expanduser() if config and os.path.isabs(config) else \
        Path.home() / ".config"
    return root / "opencode" / "plugins" / FILE_NAME


def plugin_text() -> str:
    """The plugin as install writes it: the shipped file with this installation's command and
    the environment hooks carry (memoryd_client.install.carried_env)."""
    from memoryd_client.install import carried_env, memory_command

    text = SOURCE.read_text("utf-8")
    env = dict(pair.split("=", 1) for pair in carried_env())
    assert COMMAND_LINE in text and ENV_LINE in text
    return text.replace(COMMAND_LINE, f"const COMMAND = {json.dumps(memory_command())} "
                        "// memoryd:command").replace(
        ENV_LINE, f"const ENV = {json.dumps(env, sort_keys=True)} // memoryd:env")


def is_ours(text: str | None) -> bool:
    return text is not None and MARKER in text


def install(project: str | None = None) -> str:
    from memoryd_client.install import (
        _exclude,
        _make_parents,
        _reach,
        note_created,
        read_own_file,
        refuse_tracked,
    )

    path = plugin_path(project)
    refuse_tracked("opencode", project, [path])
    real = os.path.realpath(path)
    found = read_own_file(real)
    if found is not None and not is_ours(found):
        raise ValueError(f"{path} exists and is not memoryd's plugin; nothing was changed "
                         "(rename or remove it, then install again)")
    text = plugin_text()
    if found == text:
        return f"{path}: memoryd plugin already installed" + "".join(
            f"\n{line}" for line in _exclude(project, path, add=True))
    if found is None:
        note_created(real, _make_parents(os.path.dirname(real)))
    mask = os.umask(0)
    os.umask(mask)
    write_atomically(real, text, 0o666 & ~mask)
    said = f"{path}: installed the memoryd plugin" + \
        (" (replacing an earlier one)" if found is not None else " (new file)")
    return "\n".join([said, *_exclude(project, path, add=True), *_reach(),
                      ("Next: restart OpenCode; it loads the plugins of that directory at "
                       "startup (`opencode --print-logs` shows a plugin that failed).")])


def uninstall(project: str | None = None) -> str:
    from memoryd_client.install import _exclude, read_own_file, remove_created

    path = plugin_path(project)
    real = os.path.realpath(path)
    found = read_own_file(real)
    excluded = _exclude(project, path, add=False)
    if found is None:
        return "\n".join([f"{path}: nothing to remove", *excluded])
    if not is_ours(found):
        return "\n".join([f"{path}: not memoryd's plugin; left as it is", *excluded])
    os.unlink(path)  # a link: the link, not its target (a dotfiles copy, perhaps)
    remove_created(real)
    with contextlib.suppress(OSError):
        fsync_directory(os.path.dirname(path))
    return "\n".join([f"{path}: removed the memoryd plugin", *excluded])


def hook_commands(text: str) -> list[str]:
    """The commands an installed plugin runs, one per event, as a settings file's hook commands
    read (``/usr/bin/env NAME=VALUE … /…/memory hook opencode EVENT``), for `memory doctor`;
    none when its command line cannot be read."""
    import shlex

    from memoryd_client.hooks import HARNESS_EVENTS

    values = {}
    for line in text.splitlines():
        for name, mark in (("command", "// memoryd:command"), ("env", "// memoryd:env")):
            if line.endswith(mark) and "=" in line:
                try:
                    values[name] = json.loads(line.split("=", 1)[1].rsplit(mark, 1)[0])
                except ValueError:
                    return []
    command, env = values.get("command"), values.get("env") or {}
    if not isinstance(command, list) or not command or not isinstance(env, dict):
        return []
    prefix = ["/usr/bin/env", *(f"{k}={v}" for k, v in env.items())] if env else []
    return [shlex.join([*prefix, *map(str, command), "hook", "opencode", event])
            for event in HARNESS_EVENTS["opencode"]]
