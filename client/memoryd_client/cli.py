"""``memory``: the command line of memoryd.

Exit codes:
    0  OK (store: stored; search: something matched)
    1  the request failed (store: rejected as a duplicate; search: nothing matched; file:
       refused)
    2  usage error (also `memory` alone, which prints the help)
    3  the daemon is unreachable

Global options (--json, --socket, --timeout) go before or after the command. Under --json,
stdout holds one JSON document: the reply, or {"error": {"code", "message"}} with the same
exit code (code "usage" for a usage error).

A reader of stdout that goes away (`memory … | head -c 10`) does not make a command that was
done a failure: the rest of its output goes to /dev/null, as Python's documentation advises,
and it exits quietly with the code of what it did (:func:`main`, :func:`finish`).

Every command is a row of the table in memoryd_client.commands (its arguments, request, printer
and exit rule). This module reads the command line (:func:`fast_parse` from the table; argparse,
generated from it, for anything else) and runs the row: :func:`run` is a lookup.
"""

from __future__ import annotations

import os
import sys

from memoryd_client.command_spec import (
    CONVERT,
    FAILED,
    GLOBALS,
    OK,
    USAGE,
    Values,
    command_word_at,
)
from memoryd_client.errors import MemorydError, UsageError
from memoryd_client.printable import Printable, json_safe

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Arg, Args, Command, Show

#: The progress line being shown (taken away before anything else is printed).
_progress: Any = None
#: The exit code of what the command did, decided before its output is printed: the code it
#: exits with when the reader of stdout goes away under that output (:func:`main`). Until a
#: command decides, a stdout closed under it is no failure either.
_decided = OK


def fast_parse(argv: list[str]) -> Values | None:
    """The arguments of a plain command line, or None: let argparse parse them.

    argparse (with the re, gettext and locale modules it imports) costs a process more than the
    request, so a command whose arguments are all plain (memoryd_client.command_spec.Arg.plain)
    is read here, from the same table. Anything else (help, an unknown or abbreviated option, a
    missing argument, a bad value) goes to argparse, which says what is wrong."""
    from memoryd_client.commands import GROUPS, command_named

    name = _command_of(argv)
    command = command_named(name) if name in GROUPS else None
    if command is None or not command.fast:
        return None
    globals_ = {flag: arg for arg in GLOBALS for flag in arg.flags}
    options = {**globals_, **{flag: arg for arg in command.args for flag in arg.flags
                              if not arg.positional}}
    values: dict[str, Any] = {"command": name}
    values.update((arg.dest, arg.default) for arg in options.values())
    positionals: list[str] = []
    seen_command = False
    words = iter(argv)
    for word in words:
        if word.startswith("-") and word != "-":  # before the command only global options
            if not _read_option(options if seen_command else globals_, word, words, values):
                return None
        elif not seen_command:
            seen_command = True  # _command_of found it: the first word
        else:
            positionals.append(word)
    names = [arg.dest for arg in command.args if arg.positional]
    if len(positionals) != len(names):
        return None
    values.update(zip(names, positionals))
    return Values(values)


def _read_option(options: dict[str, Arg], word: str, rest: Any, values: dict[str, Any]) -> bool:
    """Read the option ``word`` (its value inline or the next word of ``rest``) into ``values``;
    False when argparse must read the command line."""
    name, equals, inline = word.partition("=")
    option = options.get(name)
    if option is None:
        return False
    if option.kind == "flag":
        values[option.dest] = True
        return not equals
    value = inline if equals else next(rest, None)
    if value is None or (not equals and value.startswith("-")):
        return False
    try:
        convert = CONVERT.get(option.kind) if isinstance(option.kind, str) else None
        values[option.dest] = convert(value) if convert is not None else value
    except ValueError:
        return False
    return not isinstance(option.kind, tuple) or value in option.kind


def run(args: Args, client: Client) -> int:
    """Run the command the arguments name: its request, its printer, its exit rule."""
    from memoryd_client.commands import resolve

    command = resolve(args)
    if command.run is not None:
        return command.run(args, client)
    if command.watch is not None and args.watch:
        return command.watch(args, client)
    assert command.request is not None and command.show is not None  # Command checks it
    result = command.request(args, client)
    code = _decide(command.exit(result, args))
    _emit(args, result, command.show)
    return code


def _decide(code: int) -> int:
    """Note the exit code of what was done, before its output is printed (:data:`_decided`)."""
    global _decided
    _decided = code
    return code


def stdout_closed() -> None:
    """The reader of stdout went away: what is still buffered, and anything printed later,
    goes to /dev/null (the pattern of Python's documentation, "Note on SIGPIPE"), so that
    neither the next print nor the flush at exit fails again (Python would exit 120 then,
    with "Exception ignored … BrokenPipeError" on stderr)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file: nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


def _clear_progress() -> None:
    if _progress is not None:
        _progress.clear()


def _emit(args: Args, result: Any, show: Show) -> None:
    """The reply: as JSON under --json, else as the command prints it."""
    _clear_progress()
    if args.json:
        import json  # not at the top: a hook process goes through this module and needs no json

        print(json_safe(json.dumps(result, ensure_ascii=False, indent=2)))
    else:
        show(result, args)


def _wants_json(argv: list[str]) -> bool:
    """--json among the arguments (before a `--`), for errors found before parsing is done."""
    return "--json" in (argv[:argv.index("--")] if "--" in argv else argv)


def _fail(as_json: bool, code: str, message: str, exit_code: int) -> int:
    """Report a failure: JSON on stdout under --json, else text on stderr."""
    _decide(exit_code)
    _clear_progress()
    if as_json:
        import json

        print(json_safe(json.dumps({"error": {"code": code, "message": message}},
                                   ensure_ascii=False)))
    else:
        print(message if code == "usage" else f"Error: {message}", file=sys.stderr)
    return exit_code


def _command_of(argv: list[str]) -> str | None:
    """The command word, skipping global options and their values."""
    at = command_word_at(argv)
    return argv[at] if at is not None else None


def run_hook_command(argv: list[str]) -> int:
    """`memory hook …`: the hooks themselves (always exit 0), or install/uninstall."""
    if argv[:1] in (["install"], ["uninstall"]):
        import argparse

        from memoryd_client.hooks import HARNESSES

        descriptions = {
            "install": "Add memoryd's hooks to an agent's settings file (idempotent). The file is "
                       "edited as text, through symlinks, atomically: memoryd's handlers are "
                       "inserted in the layout around them and every other byte stays as it "
                       "was. When MEMORYD_HOME or MEMORYD_SOCKET is set, the hook commands carry "
                       "it, so the hooks reach the same daemon. With --project in a git "
                       "repository, the file is listed in .git/info/exclude (local): it stays "
                       "out of git status; a file git already tracks is refused, with nothing "
                       "changed (install for the user instead).",
            "uninstall": "Remove exactly the hooks memoryd added (recognised by their command), "
                         "with the text they brought: install then uninstall gives back the "
                         "same bytes. A file that install created is deleted when nothing else "
                         "is left in it; the line install added to .git/info/exclude goes too.",
        }
        from memoryd_client.cli_help import Formatter
        from memoryd_client.hook_tables import NO_HOOKS

        def harness(name: str) -> str:
            """An agent's name; one memoryd knows without hooks is refused, saying what
            memoryd does for it (argparse says "invalid choice" of any other)."""
            if name in NO_HOOKS:
                raise argparse.ArgumentTypeError(NO_HOOKS[name])
            return name

        parser = argparse.ArgumentParser(
            prog=f"memory hook {argv[0]}", description=descriptions[argv[0]],
            formatter_class=Formatter,
            epilog=f"examples:\n  memory hook {argv[0]} claude-code\n"
                   f"  memory hook {argv[0]} codex --project ~/src/shop\n"
                   f"  memory hook {argv[0]} gemini\n"
                   f"  memory hook {argv[0]} cline\n"
                   f"  memory hook {argv[0]} opencode\n\n"
                   "The previous contents are backed up in memoryd's state dir (hook-backups/, "
                   "named after the file's real path); per file the first backup (before memoryd "
                   "first changed it; none, of a file memoryd created) and the latest are "
                   "kept.\n\n"
                   "exit codes: 0 done; 1 the file could not be changed (not JSON, not "
                   "writable, a plugin or hook file of memoryd's name that is not memoryd's, "
                   "a project's file git tracks); "
                   "2 usage error (DIR does not exist, or an agent without hooks).")
        parser.add_argument("harness",
                            choices=HARNESSES, type=harness,
                            help="claude-code: ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR); "
                                 "codex: ~/.codex/hooks.json (or $CODEX_HOME); gemini (Gemini "
                                 "CLI): ~/.gemini/settings.json (or $GEMINI_CLI_HOME/.gemini); "
                                 "cursor: ~/.cursor/hooks.json; copilot (GitHub Copilot CLI): "
                                 "~/.copilot/hooks/memoryd.json (or $COPILOT_HOME/hooks); "
                                 "cline: a script per event (TaskStart, TaskResume, "
                                 "UserPromptSubmit, TaskComplete) in ~/Documents/Cline/Hooks "
                                 "(the Documents folder xdg-user-dir names); "
                                 "opencode: memoryd's plugin, "
                                 "~/.config/opencode/plugins/memoryd.js (or "
                                 "$XDG_CONFIG_HOME/opencode/plugins). Aider, Windsurf, Roo "
                                 "Code, Kilo Code and pi have no hooks: install says what "
                                 "memoryd does for each (a usage error)")
        parser.add_argument("--project", metavar="DIR",
                            help="a project's settings instead of the user's: "
                                 "DIR/.claude/settings.local.json (personal, not committed), "
                                 "DIR/.codex/hooks.json, DIR/.gemini/settings.json, "
                                 "DIR/.cursor/hooks.json, DIR/.github/hooks/memoryd.json, "
                                 "DIR/.clinerules/hooks/ or DIR/.opencode/plugins/memoryd.js; "
                                 "DIR must exist")
        try:
            args = parser.parse_args(argv[1:])
        except SystemExit as exc:
            return int(exc.code or 0) and USAGE
        from memoryd_client import install

        try:
            if args.harness in ("opencode", "cline"):  # files of their own, not settings
                from memoryd_client import cline_hooks, opencode_plugin

                module = opencode_plugin if args.harness == "opencode" else cline_hooks
                said = (module.install if argv[0] == "install" else module.uninstall)(
                    args.project)
            else:
                action = install.install if argv[0] == "install" else install.uninstall
                said = action(args.harness, args.project)
        except MemorydError as exc:  # a --project that does not exist
            print(f"Error: {exc.message}", file=sys.stderr)
            return USAGE if exc.code == "bad_params" else exc.exit_code
        except (OSError, ValueError) as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return FAILED
        print(said)  # done: a stdout closed meanwhile changes nothing of it (main)
        return OK
    from memoryd_client.hooks import run_hook

    return run_hook(argv)


def finish(code: int | None) -> None:
    """Exit with ``code``. A command that started no thread and left nothing to run at exit
    ends at once, its output flushed (os._exit): tearing the interpreter's modules down costs
    ~3 ms, a tenth of a `memory search`. Anything else exits as usual. Output that the reader
    of stdout went away from is dropped: the code stays the command's (:func:`stdout_closed`)."""
    import atexit  # built in: free

    try:
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()
    except (OSError, ValueError):  # stdout closed by the caller (`memory … >&-`)
        pass
    threading = sys.modules.get("threading")
    pending = getattr(atexit, "_ncallbacks", lambda: 1)()
    if not pending and (threading is None or threading.active_count() == 1):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(code)  # stderr closed: reported as Python always does
        os._exit(code or 0)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names; its exit code. When the reader of stdout goes away
    while the command prints (`memory hook install cursor | head -c 10`), what it did is done:
    the rest of the output goes to /dev/null and the exit code is what the command decided
    (:data:`_decided`), quietly, as a Unix tool exits on SIGPIPE, never "Error: [Errno 32]
    Broken pipe" with exit 1."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:
        stdout_closed()
        return _decided


def _main(argv: list[str]) -> int:
    options_first = argv[:1] != ["hook"] and _command_of(argv) == "hook"
    asked_json = argv[:1] == ["hook"] and "--json" in argv and \
        argv[1:2] in (["install"], ["uninstall"], ["--json"])  # a hook itself never fails
    if options_first or asked_json:
        return _fail(_wants_json(argv), "usage", "memory hook takes no options before its "
                     "action and no --json: the hooks print what their agent reads, install "
                     "and uninstall a line for you (memory hook --help)", USAGE)
    if argv[:1] == ["hook"]:  # the hook path stays lean: no argparse, no json, no table
        if argv[1:2] in (["-h"], ["--help"]):
            from memoryd_client.hooks import help_text

            print(help_text())
            return OK
        return run_hook_command(argv[1:])
    if argv[:1] == ["__complete"]:  # the shell completion's question: lean, never fails
        from memoryd_client.completion_values import main as complete

        return complete(argv[1:])
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Printable(out), Printable(err)  # memory's text shown, not obeyed
    try:
        args = fast_parse(argv)
        if args is not None:  # one request, one printed reply: no need of msgpack's import
            from memoryd_client import wire

            wire.lean = True
            return _execute(args)
        parsed = _parse(argv)
        return parsed if isinstance(parsed, int) else _execute(parsed)
    finally:
        sys.stdout, sys.stderr = out, err


def _parse(argv: list[str]) -> argparse.Namespace | int:
    """The arguments as argparse reads them, or the exit code of a usage error or --help."""
    from memoryd_client.commands import GROUPS
    from memoryd_client.parser import build_parser, parse

    as_json = _wants_json(argv)
    first = _command_of(argv)
    only = first if first in GROUPS else None
    if not argv:  # `memory` alone: the help, as a usage error
        _decide(USAGE)
        build_parser(only).print_help()
        return USAGE
    try:
        return parse(argv, only)
    except UsageError as exc:
        if not as_json:
            sys.stderr.write(exc.usage)
        return _fail(as_json, "usage", exc.message, USAGE)
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0) and USAGE


def _execute(args: Args) -> int:
    """Run the parsed command, reporting its failure with its exit code."""
    from memoryd_client.commands import command_named

    command = command_named(args.command)
    if command.alone is not None:  # no client: `memory mcp` makes its own
        try:
            return command.alone(args)
        except UsageError as exc:
            return _fail(args.json, "usage", exc.message, USAGE)
    from memoryd_client.client import Client

    global _progress
    if command.progress and not args.json and sys.stderr.isatty():
        from memoryd_client.progress_view import ProgressLine

        _progress = ProgressLine()
    try:
        # a person typing is the "terminal" channel (feedback, release); a script or an
        # agent's shell is "cli" (memoryd.server.binding)
        channel = "terminal" if sys.stdin is not None and sys.stdin.isatty() else "cli"
        with Client(args.socket, timeout_s=args.timeout, channel=channel,
                    progress=_progress) as client:
            return run(args, client)
    except UsageError as exc:
        return _fail(args.json, "usage", exc.message, USAGE)
    except MemorydError as exc:
        message = _in_command_words(args, exc) if exc.code == "bad_params" else exc.message
        return _fail(args.json, exc.code, message, _exit_code(command, exc))
    except UnicodeEncodeError as exc:  # an argument in another encoding than UTF-8
        from memoryd_client.views import shown_text

        text = exc.object if isinstance(exc.object, str) else str(exc.object)
        return _fail(args.json, "usage", f"not UTF-8 text: '{shown_text(text)}' (memoryd takes "
                     "text as UTF-8: is the terminal's encoding UTF-8?)", USAGE)
    except BrokenPipeError:  # stdout's reader went away: main says what it means
        raise
    except OSError as exc:  # a file of export/import
        return _fail(args.json, "io", f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "),
                     FAILED)
    except KeyboardInterrupt:
        return FAILED


def _in_command_words(args: Args, exc: MemorydError) -> str:
    """A refused parameter's message in the words of the command that sent it: the daemon
    names its method and parameter (``list: since 'x' is not a time`` for `memory recent
    --since x`), the command and its option are what the user typed."""
    from memoryd_client.commands import resolve
    from memoryd_client.errors import BadParamsError

    if not isinstance(exc, BadParamsError) or exc.method is None:
        return exc.message
    name = args.command + (f" {args.action}" if getattr(args, "action", None) else "")
    if exc.param is None or exc.detail is None:  # about the request as a whole
        return f"{name}: {exc.message.removeprefix(f'{exc.method}: ')}"
    option = next((arg.flags[0] for arg in resolve(args).args
                   if arg.dest == exc.param and not arg.positional), exc.param)
    return f"{name}: {option} {exc.detail}"


def _exit_code(command: Command, exc: MemorydError) -> int:
    """What an error the daemon answered exits with."""
    if command.refusal_exit is not None and exc.code != "unreachable":
        return command.refusal_exit  # the memory tools refused (file)
    if exc.code in ("bad_params", "unknown_method", "config"):  # the caller's mistake
        return USAGE
    return exc.exit_code
