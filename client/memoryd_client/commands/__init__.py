"""Every command of `memory`, in one table: name → its arguments, the client call it makes, how
the reply is printed and what it exits with (the terms are :mod:`memoryd_client.command_spec`'s).
The argparse parser, the fast parser and the MCP tools are generated from it.

The table is written by what the commands act on, a module of this package each: memory itself
(``entries``), agents' sessions (``sessions``), the maintenance passes (``passes``), memory as
files (``files``: the memory tools, sync, share), the daemon and this installation
(``daemon``); arguments several of them take are in ``args``. :data:`GROUPS` names every
command, in the order `memory --help` lists them, with its module.

Imported on every run of `memory` but not by the hooks, and a run imports only the module of
its own command (:func:`command_named`); `memory --help` and the shell completion read them all
(:func:`every_command`). The long commands' functions (passes, lists, doctor, purge) are named
with :func:`~memoryd_client.command_spec.later`: a run imports only its own command's.
"""

from __future__ import annotations

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from memoryd_client.command_spec import Args, Command

#: Every command, in the order `memory --help` lists them → the module that holds it.
GROUPS: dict[str, str] = {
    "status": "daemon",
    "sources": "daemon",
    "reload": "daemon",
    "hook": "daemon",
    "file": "files",
    "extract": "sessions",
    "import-history": "sessions",
    "mcp": "daemon",
    "ui": "daemon",
    "context": "sessions",
    "explain": "sessions",
    "session": "sessions",
    "sessions": "sessions",
    "store": "entries",
    "search": "entries",
    "get": "entries",
    "forget": "entries",
    "supersede": "entries",
    "scope": "entries",
    "move-project": "entries",
    "history": "entries",
    "list": "entries",
    "recent": "entries",
    "export": "entries",
    "import": "entries",
    "pass": "passes",
    "undo": "passes",
    "promote": "passes",
    "notebook": "passes",
    "doctor": "daemon",
    "purge": "entries",
    "sync": "files",
    "share": "files",
    "completion": "daemon",
    "release": "entries",
}


def command_named(name: str) -> Command:
    """The command ``name`` (one of GROUPS), from its own module alone: its table is all a run
    of `memory` needs (importing the others cost it a millisecond)."""
    module = __import__(f"{__name__}.{GROUPS[name]}", fromlist=["COMMANDS"])
    table: dict[str, Command] = module.COMMANDS
    return table[name]


def every_command() -> dict[str, Command]:
    """The whole table, in GROUPS' order (for `memory --help`, the completion, the MCP tools)."""
    return {name: command_named(name) for name in GROUPS}


def resolve(args: Args) -> Command:
    """The command the parsed arguments name (for a command with actions, the action)."""
    command = command_named(args.command)
    return command.actions[args.action] if command.actions else command


def command_at(path: str) -> Command:
    """A command by its words: "get", "file read"."""
    name, _, action = path.partition(" ")
    command = command_named(name)
    return command.actions[action] if action else command
