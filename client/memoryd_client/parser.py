"""The `memory` command's argparse parser, generated from the table of commands
(:mod:`memoryd_client.commands`). Built only when a command line is not one the fast parser
reads by itself (:func:`memoryd_client.cli.fast_parse`), and then only for the command about to
run: building all of them costs a run ~10 ms (argparse looks up translations for every help
string)."""

from __future__ import annotations

from memoryd_client import cli_help
from memoryd_client.command_spec import GLOBALS
from memoryd_client.commands import GROUPS, command_named
from memoryd_client.errors import UsageError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn

    from memoryd_client.command_spec import Arg, Command


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{self.prog}: error: {message}", self.format_usage())

    return Parser


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or (``only``) just the one command about to run."""
    parser = _parser_class()(
        prog="memory", formatter_class=cli_help.Formatter,
        description="Talk to memoryd, the local memory daemon for AI agents.",
        epilog=cli_help.MAIN_EPILOG,
    )
    for arg in GLOBALS:  # with their defaults here; on each command's parser without any
        add_argument(parser, arg, top=True)
    parser.add_argument("--version", action=cli_help.VersionAction,
                        help="print the client's version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in GROUPS:
        if only is None or name == only:
            add_command(commands, name, command_named(name))
    return parser


def add_command(subparsers: Any, name: str, command: Command) -> argparse.ArgumentParser:
    """A command's parser (and its actions' parsers) under ``subparsers``."""
    epilog = command.epilog
    if epilog is None and command.examples:
        epilog = cli_help.epilog(command.examples, command.exits or "")
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=command.help, description=command.description, epilog=epilog,
        formatter_class=cli_help.Formatter)
    for arg in (*command.globals, *command.args):
        add_argument(parser, arg)
    if command.actions:
        actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        for action_name, action in command.actions.items():
            add_command(actions, action_name, action)
    return parser


def add_argument(parser: argparse.ArgumentParser, arg: Arg, top: bool = False) -> None:
    """One argument as argparse takes it. A global option on a command's parser has no default
    (argparse.SUPPRESS): given before the command, its value is not overwritten there."""
    import argparse

    options: dict[str, Any] = {"help": arg.help}
    if arg.metavar is not None:
        options["metavar"] = arg.metavar
    if arg.kind == "flag":
        options["action"] = "store_true"
    elif arg.kind in ("int", "float"):
        options["type"] = int if arg.kind == "int" else float
    elif isinstance(arg.kind, tuple):
        options["choices"] = list(arg.kind)
    options["default"] = argparse.SUPPRESS if arg in GLOBALS and not top else arg.default
    if arg.positional:
        if arg.many:
            options["nargs"] = "*"
        elif arg.optional:
            options["nargs"] = "?"
        parser.add_argument(arg.dest, **options)
    else:
        if arg.optional:
            options.update(nargs="?", const=arg.const)
        parser.add_argument(*arg.flags, dest=arg.dest, required=arg.required, **options)
