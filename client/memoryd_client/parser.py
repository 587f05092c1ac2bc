"""The `memory` command's argparse parser, generated from the table of commands
(:mod:`memoryd_client.commands`). Built only when a command line is not one the fast parser
reads by itself (:func:`memoryd_client.cli.fast_parse`), and then only for the command about to
run: building all of them costs a run ~10 ms (argparse looks up translations for every help
string)."""

from __future__ import annotations

from memoryd_client import cli_help
from memoryd_client.command_spec import CONVERT, EXPECTED, GLOBALS, command_word_at
from memoryd_client.commands import GROUPS, command_named
from memoryd_client.errors import UsageError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any, NoReturn

    from memoryd_client.command_spec import Arg, Command


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{self.prog}: error: {message}{_example(self.prog, message)}",
                             self.format_usage())

    return Parser


def build_parser(only: str | None = None,
                 parsers: dict[str, argparse.ArgumentParser] | None = None,
                 ) -> argparse.ArgumentParser:
    """The whole parser, or (``only``) just the one command about to run. ``parsers`` is given
    each command's parser, by its name ("pass", "pass run")."""
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
            add_command(commands, name, command_named(name), parsers)
    return parser


def parse(argv: list[str], only: str | None = None) -> argparse.Namespace:
    """The command line as argparse reads it, but for two things. A command with a default
    action runs it when none is named (`memory session --agent A` is `memory session list
    --agent A`); and an argument no parser knows is reported by the command's own parser, with
    its usage (argparse leaves it to the top parser: `memory: error: unrecognized arguments`
    under the usage of `memory` itself)."""
    parsers: dict[str, argparse.ArgumentParser] = {}
    parser = build_parser(only, parsers)
    try:
        args, extras = parser.parse_known_args(_with_default_action(argv))
    except UsageError as exc:
        raise _with_dash_note(exc, argv) from None
    command = command_named(args.command)
    if command.actions and getattr(args, "action", None) is None:  # none named, none inserted
        parsers.get(args.command, parser).error("the following arguments are required: ACTION")
    if extras:
        name = f"{args.command} {args.action}" if command.actions else args.command
        parsers.get(name, parser).error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _example(prog: str, message: str) -> str:
    """After a missing argument's error, the command's first example, which shows them all in
    their places (`memory search coder 'how do we deploy'` lacks its CATEGORY: the example
    shows `-` there); "" for any other error, or a command without one."""
    name, _, action = prog.removeprefix("memory ").partition(" ")
    if not message.startswith("the following arguments are required") or name not in GROUPS:
        return ""
    command = command_named(name)
    if action:
        command = command.actions.get(action, command)
    return f"\nexample: {command.examples[0]}" if command.examples else ""


def _with_dash_note(error: UsageError, argv: list[str]) -> UsageError:
    """A missing argument's error, and what was likely meant as it: a word that starts with -
    but is no option of the command (`memory search '*' - '-refund'`: argparse takes it for
    an unknown option, then misses the query), with the `--` that makes it an argument."""
    at = command_word_at(argv)
    if at is None or argv[at] not in GROUPS or "arguments are required" not in error.message:
        return error
    known = _option_words(command_named(argv[at]))
    stray = []
    for word in argv[at + 1:]:
        if word == "--":
            break
        flag = word.split("=", 1)[0]
        if (word.startswith("-") and word != "-" and flag not in known and flag[:2] not in known
                and not any(option.startswith(flag) for option in known if flag[:2] == "--")):
            stray.append(word)
    if not stray:
        return error
    import shlex

    said = ", ".join(shlex.quote(word) for word in stray)
    return UsageError(f"{error.message}\nnote: {said} was read as an option, as any word that "
                      "starts with -: put -- before it to give it as an argument (memory "
                      f"{argv[at]} … -- {shlex.quote(stray[0])})", error.usage)


def _option_words(command: Command) -> set[str]:
    """The options a command (and its actions) takes, and the global ones."""
    words = {"-h", "--help", *(flag for arg in (*GLOBALS, *command.globals, *command.args)
                               for flag in arg.flags if flag.startswith("-"))}
    for action in command.actions.values():
        words |= _option_words(action)
    return words


def _with_default_action(argv: list[str]) -> list[str]:
    """``argv`` with its command's default action named after the command word, when it names
    none: nothing follows the command word, or an option does (not --help)."""
    at = command_word_at(argv)
    if at is None or argv[at] not in GROUPS:
        return argv
    default = command_named(argv[at]).default_action
    after = argv[at + 1] if at + 1 < len(argv) else None
    if default is None or (after is not None and (not after.startswith("-")
                                                  or after in ("-h", "--help"))):
        return argv
    return [*argv[:at + 1], default, *argv[at + 1:]]


def add_command(subparsers: Any, name: str, command: Command,
                parsers: dict[str, argparse.ArgumentParser] | None = None,
                ) -> argparse.ArgumentParser:
    """A command's parser (and its actions' parsers) under ``subparsers``; each of them put in
    ``parsers`` by its name ("pass", "pass run")."""
    epilog = None
    if command.examples:
        epilog = cli_help.epilog(command.examples, (
            command.exits, f"2 {command.usage_exit}",
            f"3 {command.unreachable_exit}" if command.unreachable_exit else None))
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=command.help, description=command.description, epilog=epilog,
        formatter_class=cli_help.Formatter)
    for arg in (*command.globals, *command.args):
        add_argument(parser, arg)
    if parsers is not None:
        parsers[parser.prog.removeprefix("memory ")] = parser
    if command.actions:
        actions = parser.add_subparsers(dest="action", metavar="ACTION",
                                        required=command.default_action is None)
        for action_name, action in command.actions.items():
            add_command(actions, action_name, action, parsers)
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
    elif isinstance(arg.kind, str) and arg.kind in CONVERT:
        options["type"] = _typed(arg.kind)
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


def _typed(kind: str) -> Callable[[str], Any]:
    """``CONVERT[kind]`` for argparse: a word that is no value of the kind is refused saying
    what it must be (argparse said only "invalid seconds value: '0'")."""
    import argparse

    convert = CONVERT[kind]

    def parse(text: str) -> Any:
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {EXPECTED[kind]}") from None

    parse.__name__ = kind
    return parse
