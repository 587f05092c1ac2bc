"""What a command of `memory` is: its arguments, the request it makes, how the reply is printed
and what it exits with. :mod:`memoryd_client.commands` holds every command in these terms; the
argparse parser (:mod:`memoryd_client.parser`), the fast parser (:mod:`memoryd_client.cli`) and
the MCP tools (:mod:`memoryd_client.mcp_tools`) are generated from it.

Plain classes with ``__slots__``, not dataclasses: this module is imported on every run of
`memory`, and ``dataclasses`` (with ``inspect`` and ``re``) costs a run more than the table.
"""

from __future__ import annotations

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, Literal

    from memoryd_client.client import Client

#: The exit codes of every command: 0 ok, 1 the request failed (or found nothing), 2 usage
#: error, 3 the daemon is unreachable.
OK, FAILED, USAGE, UNREACHABLE = 0, 1, 2, 3


class Values:
    """Arguments by name, as argparse.Namespace holds them (without importing argparse)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any: ...


if TYPE_CHECKING:
    #: The parsed arguments of a command: argparse's, the fast parser's or an MCP tool's.
    Args = argparse.Namespace | Values
    #: What an argument holds: text, a number, a flag (no value), or one of the choices.
    Kind = Literal["str", "int", "float", "seconds", "port", "flag"] | tuple[str, ...]
    Request = Callable[[Args, Client], Any]
    Show = Callable[[Any, Args], None]
    Exit = Callable[[Any, Args], int]


#: The longest wait a command takes (--timeout, --interval): a week.
MAX_SECONDS = 7 * 86_400


def seconds(text: str) -> float:
    """A number of seconds to wait: above 0 (0 would not wait for an answer at all), at most
    ``MAX_SECONDS``; ValueError otherwise (nan and inf too)."""
    value = float(text)
    if not 0 < value <= MAX_SECONDS:
        raise ValueError(text)
    return value


def port(text: str) -> int:
    """A TCP port: 0 (any free one) to 65535; ValueError otherwise."""
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError(text)
    return value


#: How an option's word becomes its value, by its kind (the others are text).
CONVERT: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "seconds": seconds,
                                            "port": port}
#: What a word of each kind must be, for the usage error of one that is not.
EXPECTED = {"int": "an integer", "float": "a number",
            "seconds": f"a number of seconds above 0 and at most {MAX_SECONDS} (a week)",
            "port": "a port number from 0 (any free one) to 65535"}


class Arg:
    """One argument: a positional (``"agent"``) or an option (``"--limit"``; a short form goes
    first: ``"-o", "--output"``). ``optional`` makes a positional one that may be left out, and
    an option one whose value may be left out (it is ``const`` then); ``many`` a positional
    that takes any number of values."""

    __slots__ = ("const", "default", "dest", "flags", "help", "kind", "many", "metavar",
                 "optional", "required")

    def __init__(self, *flags: str, kind: Kind = "str", default: Any = None,
                 help: str | None = None, metavar: str | None = None, required: bool = False,
                 optional: bool = False, dest: str | None = None, const: Any = None,
                 many: bool = False) -> None:
        self.flags = flags
        self.const = const
        self.dest = dest or flags[-1].lstrip("-").replace("-", "_")
        self.kind = kind
        self.default = False if kind == "flag" else default
        self.help = help
        self.metavar = metavar
        self.required = required
        self.optional = optional
        self.many = many  # a positional taking any number of values (a list, maybe empty)

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def plain(self) -> bool:
        """Whether the fast parser reads it (a required positional of text, or an option that
        may be left out); anything else is left to argparse."""
        if self.positional:
            return not self.optional and not self.many and self.kind == "str"
        return not self.required and not self.optional

    def but(self, **changes: Any) -> Arg:
        """This argument with some of its attributes changed (another default, help)."""
        values = {name: getattr(self, name) for name in self.__slots__ if name != "flags"}
        return Arg(*self.flags, **{**values, **changes})


#: The global options: before the command or after it (with --json, stdout holds one JSON
#: document: the reply, or the error).
JSON = Arg("--json", kind="flag", help="print the reply (or the error) as JSON on stdout")
SOCKET = Arg("--socket", metavar="PATH", help="daemon socket (default: $MEMORYD_SOCKET, "
             "$MEMORYD_HOME/memoryd.sock, or the user runtime dir)")
TIMEOUT = Arg("--timeout", kind="seconds", default=30.0, metavar="S",
              help="seconds to wait for the daemon (default: 30; above 0, at most a week)")
GLOBALS = (JSON, SOCKET, TIMEOUT)
#: The global options that take a value (the next word, unless given as --socket=PATH).
VALUE_OPTIONS = tuple(flag for arg in GLOBALS if arg.kind != "flag" for flag in arg.flags)


def command_word_at(argv: Sequence[str]) -> int | None:
    """Where the command word is in a command line: the first word that is not a global
    option or its value (None: there is none before ``--``)."""
    skip = False
    for at, word in enumerate(argv):
        if skip:
            skip = False
        elif word in VALUE_OPTIONS:
            skip = True
        elif word == "--":
            return None
        elif not word.startswith("-"):
            return at
    return None


def plain(print_result: Callable[[Any], None]) -> Show:
    """A printer of the reply alone, as a command's ``show``."""
    return lambda result, args: print_result(result)


def always_ok(result: Any, args: Args) -> int:
    return OK


#: Every (module, function) named with :func:`later` (a test checks that each exists).
LATER: list[tuple[str, str]] = []


def later(module: str, name: str) -> Callable[..., Any]:
    """The function ``name`` of ``memoryd_client.<module>``, imported when it is first called:
    the table names the functions of every command, a run imports those of its own."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(f"memoryd_client.{module}"), name)(*args, **kwargs)

    LATER.append((module, name))
    return call


class Command:
    """A command, or one action of a command (`memory pass run`).

    Running it is ``request`` (the client call, made of the arguments), then ``show`` (how its
    reply is printed; under --json the reply is printed as JSON instead) and ``exit`` (its exit
    code from the reply). A command whose output is not one reply (export) has ``run`` instead,
    and one that needs no connection to the daemon (mcp) ``alone``. A command with ``actions``
    runs the one named after it.

    ``watch`` runs instead of request and show when the command's --watch is given (it asks
    again and again until Ctrl-C, and returns the exit code: `memory status --watch`).
    ``default_action`` is the action a command with actions runs when none is named (`memory
    sources` lists them).

    ``exits`` says what exit codes 0 and 1 mean for it; ``usage_exit`` and
    ``unreachable_exit`` what 2 and 3 do (None: a command that works with the daemon down
    never exits 3).

    ``globals`` are the global options it takes after its name (a global option among its
    ``args`` is one too, shown in its place); ``progress`` shows the daemon's
    progress on a terminal (memoryd_client.progress_view); ``refusal_exit`` is the exit code of
    any error the daemon answers (the memory tools' refusals exit 1, not 2).
    """

    __slots__ = (
        "actions",
        "alone",
        "args",
        "default_action",
        "description",
        "examples",
        "exit",
        "exits",
        "globals",
        "help",
        "progress",
        "refusal_exit",
        "request",
        "run",
        "show",
        "unreachable_exit",
        "usage_exit",
        "watch",
    )

    def __init__(self, *, help: str, description: str | None = None, args: tuple[Arg, ...] = (),
                 actions: dict[str, Command] | None = None, request: Request | None = None,
                 show: Show | None = None, exit: Exit = always_ok,
                 run: Callable[[Args, Client], int] | None = None,
                 alone: Callable[[Args], int] | None = None, examples: tuple[str, ...] = (),
                 exits: str | None = None, usage_exit: str = "usage error",
                 unreachable_exit: str | None = "daemon unreachable",
                 globals: tuple[Arg, ...] = GLOBALS, progress: bool = False,
                 refusal_exit: int | None = None,
                 watch: Callable[[Args, Client], int] | None = None,
                 default_action: str | None = None) -> None:
        self.help = help
        self.description = description
        self.args = args
        self.actions = actions or {}
        self.request = request
        self.show = show
        self.exit = exit
        self.run = run
        self.alone = alone
        self.examples = examples
        self.exits = exits
        self.usage_exit = usage_exit
        self.unreachable_exit = unreachable_exit
        self.globals = globals
        self.progress = progress
        self.refusal_exit = refusal_exit
        self.watch = watch
        self.default_action = default_action
        if default_action is not None and default_action not in self.actions:
            raise TypeError(f"no action {default_action!r} to run by default")
        ways = [request is not None and show is not None, run is not None, alone is not None,
                bool(actions)]
        if ways.count(True) != 1:
            raise TypeError("a command has request and show, run, alone, or actions")

    @property
    def fast(self) -> bool:
        """Whether the fast parser reads its command lines (argparse is not needed)."""
        return (not self.actions and self.alone is None and self.globals is GLOBALS
                and all(arg.plain for arg in self.args))

    def but(self, **changes: Any) -> Command:
        """This command with some of its attributes changed (an alias with its own help)."""
        return Command(**{**{name: getattr(self, name) for name in self.__slots__}, **changes})

    def defaults(self) -> dict[str, Any]:
        """Each argument's value when it is not given (None for a positional)."""
        return {arg.dest: arg.default for arg in self.args}
