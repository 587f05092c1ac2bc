"""What `memory … --help` says beyond the table of commands (memoryd_client.commands): how a
command's examples and exit codes read (its epilog), the main help's epilog, the version, and a
help formatter that keeps their lines.

Imported only when a parser is built (never by a hook process).
"""

from __future__ import annotations

import argparse
import os
import sys

from memoryd_client.hooks import CHOICE

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any


MAIN_EPILOG = "\n".join((
    "examples:",
    "  memory store designer rejected-designs 'floating speech bubble' --tags sticker",
    "  memory search designer - 'speech bubble on a cat sticker' && echo 'done this before'",
    "  memory --json status",
    "",
    ("Global options (--json, --socket, --timeout) go before or after the command. With --json, "
     "stdout holds one JSON document: the reply, or on failure {\"error\": {\"code\": ..., "
     "\"message\": ...}} (code usage, bad_params, not_found, forbidden, unreachable, ...), with "
     "the same exit codes. `memory COMMAND --help` shows a command's arguments and examples."),
    "",
    ("exit codes: 0 OK (stored, matched); 1 the request failed (a duplicate, no match, not "
     "found, refused); 2 usage error (also `memory` alone, which prints this help); 3 daemon "
     f"unreachable. Hooks (`memory hook {CHOICE} EVENT`) always exit 0: see `memory hook "
     "--help`."),
))


def epilog(examples: tuple[str, ...], exits: tuple[str | None, ...]) -> str:
    """A command's examples, and what its exit codes mean, in order (those it has)."""
    lines = ["examples:"] + [f"  {example}" for example in examples]
    lines += ["", f"exit codes: {'; '.join(code for code in exits if code)}."]
    return "\n".join(lines)


def terminal_width() -> int:
    """As shutil.get_terminal_size, without importing shutil (and bz2, lzma) on every run."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class Formatter(argparse.HelpFormatter):
    """Wraps each line of a description or epilog on its own (so examples stay one per line);
    the terminal width is looked up only when help is printed."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 30,
                 width: int | None = None) -> None:
        self._prog_only = width is None
        super().__init__(prog, indent_increment, max_help_position, width or 78)

    def format_help(self) -> str:
        if self._prog_only:
            self._width = max(min(terminal_width(), 100) - 2, 40)
            self._max_help_position = min(self._max_help_position, max(self._width - 20,
                                                                       self._indent_increment * 2))
        return super().format_help()

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        lines = []
        for line in text.splitlines():
            lead = line[: len(line) - len(line.lstrip(" "))]
            after = indent + lead + ("  " if lead else "")
            lines.append(textwrap.fill(line.strip(), width, initial_indent=indent + lead,
                                       subsequent_indent=after) if line.strip() else "")
        return "\n".join(lines)


class VersionAction(argparse.Action):
    """`memory --version`: the client's version (importlib.metadata only when asked)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                 option_string: str | None = None) -> None:
        print(f"memory (memoryd-client) {client_version()}")
        parser.exit(0)


def client_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("memoryd-client")
    except metadata.PackageNotFoundError:  # run from a source tree
        return "unknown (not installed)"
