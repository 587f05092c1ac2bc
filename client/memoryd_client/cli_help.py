"""What `memory … --help` says beyond the options: each command's examples and exit codes (its
epilog), the global options, the version, and a help formatter that keeps their lines.

Imported only when a parser is built (never by a hook process).
"""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

#: Exit codes every command shares; a command's own line says what 0 and 1 mean for it.
COMMON_EXITS = "2 usage error; 3 daemon unreachable"

#: command (as typed, nested ones with a space) → (examples, what 0 and 1 mean).
COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "purge": (("memory purge --agent designer --match 'hunter2'",
               "memory purge --agent designer --match 'hunter2' --yes",
               "memory purge --agent designer --since 2h --yes"),
              "0 purged (or, without --yes, listed); 1 nothing to purge"),
    "release": (("memory get 3f2a9c",
                 "memory release 3f2a9c"), "0 released; 1 refused (not at a terminal, not "
                "quarantined, not found)"),
    "status": (("memory status", "memory status --sources --json"), "0 the daemon answered"),
    "sources": (("memory sources list",), "0 done"),
    "sources list": (("memory sources list --json",), "0 done"),
    "sources add": (("memory sources add notes '~/notes/{agent}/**/*.md' --kind memory",
                     "memory sources add --project ~/src/shop"), "0 added"),
    "sources remove": (("memory sources remove notes",), "0 removed"),
    "reload": (("memory reload",), "0 reloaded (a bad configuration is refused: exit 2)"),
    "file": (("memory file list --agent designer",), "0 done; 1 refused"),
    "file list": (("memory file list --agent designer",), "0 done; 1 refused"),
    "file read": (("memory file read --agent designer notes.md",),
                  "0 done; 1 refused (no such file, a path outside the directory)"),
    "file write": (("echo '# Notes' | memory file write --agent designer notes.md",),
                   "0 written; 1 refused (a path outside the directory, too long)"),
    "file replace": (("memory file replace --agent designer notes.md --old 'tabs' --new 'spaces'",),
                     "0 replaced; 1 refused (the old text matched 0 or 2+ times, no such "
                     "file, a path outside the directory)"),
    "file insert": (("memory file insert --agent designer notes.md --line 0 --text '- new'",),
                    "0 inserted; 1 refused (line out of range, no such file)"),
    "extract": (("memory extract 5f2c1d --dry-run",), "0 done; 1 failed"),
    "mcp": (('claude mcp add --scope user memoryd -- "$PWD/.venv/bin/memory" mcp --agent claude-code',
             "memory mcp --agent codex --socket /run/user/1000/memoryd/memoryd.sock"),
            "0 the client closed the server"),
    "context": (("memory context --agent claude-code --cwd ~/src/shop",
                 "memory context --agent claude-code --prompt 'write a test for refunds'"),
                ("0 done (nothing to inject: stdout stays empty and stderr says `(nothing for "
                 "AGENT in DIR)`)")),
    "explain": (("memory explain", "memory explain 5f2c1d --json"),
                ("0 done; 1 no such session. Each item shows its text as injected and why it was "
                 "there, in words; --json keeps the search evidence")),
    "session": (("memory session list --agent claude-code", "memory session show 5f2c1d"),
                "0 done; 1 no such session"),
    "session list": (("memory session list --agent codex --limit 10",), "0 done"),
    "session show": (("memory session show 5f2c1d",), "0 done; 1 no such session"),
    "sessions": (("memory sessions --agent claude-code",), "0 done"),
    "store": (("memory store designer rejected-designs 'floating speech bubble' --tags sticker",
               "memory store coder prefs 'Commits in the imperative' --key pref.commit_style"),
              "0 stored; 1 not stored: a duplicate (the existing entry is printed), or feedback "
              "not typed at a terminal"),
    "search": (("memory search designer - 'speech bubble on a cat sticker'",
                "memory search 'claude-code,codex' testing 'which test runner' --all",
                "memory search '*' - 'staging database' --since 30d --json"),
               "0 something matched; 1 nothing did"),
    "get": (("memory get 1a20b902eb96",), "0 found; 1 not found"),
    "forget": (("memory forget 1a20b902eb96 --reason 'no longer true'",),
               "0 forgotten; 1 not found or not the agent's"),
    "supersede": (("memory supersede 1a20b902eb96 'We lint and format with ruff'",),
                  "0 stored; 1 not found or not the agent's"),
    "history": (("memory history 1a20b902eb96", "memory history --agent coder --key pref.commit_style"),
                "0 found; 1 not found"),
    "list": (("memory list designer", "memory list '*' --kind lesson --since 7d --limit 50",
              "memory list claude-code --offset 20"), "0 listed (also when nothing is)"),
    "recent": (("memory recent", "memory recent claude-code --since 1d"),
               "0 listed (also when nothing is)"),
    "export": (("memory export > memory.jsonl", "memory export --agent designer --since 30d -o designer.jsonl"),
               "0 exported"),
    "import": (("memory import memory.jsonl", "memory export | MEMORYD_HOME=/new memory import -"),
               ("0 every line stored or already there; 1 some lines refused (each is named); "
                "after a 3 running it again is safe")),
    "pass": (("memory pass list", "memory pass run consolidate --dry-run", "memory pass show"),
             "0 done; 1 failed"),
    "pass list": (("memory pass list",), "0 done"),
    "pass run": (("memory pass run consolidate --dry-run",), "0 done; 1 failed"),
    "pass show": (("memory pass show r12", "memory pass show c345"), "0 done; 1 not found"),
    "undo": (("memory undo r12", "memory undo c345"),
             ("0 undone; 1 a file changed since (conflict: left alone), nothing to undo "
              "(no applied change) or not found")),
    "promote": (("memory promote accept c345",), "0 written; 1 not applied"),
    "promote accept": (("memory promote accept c345",), "0 written; 1 not applied"),
    "notebook": (("memory notebook check", "memory notebook check ~/notes/me.md --fix"),
                 "0 nothing to fix / fixed; 1 something to fix"),
    "notebook check": (("memory notebook check --agent designer",
                        "memory notebook check ~/.claude/agent-memory/designer --fix"),
                       "0 nothing to fix / fixed; 1 something to fix"),
}

MAIN_EPILOG = "\n".join((
    "examples:",
    "  memory store designer rejected-designs 'floating speech bubble' --tags sticker",
    "  memory search designer - 'speech bubble on a cat sticker' && echo 'done this before'",
    "  memory --json status",
    "",
    "Global options (--json, --socket, --timeout) go before or after the command. With --json, "
    "stdout holds one JSON document: the reply, or on failure {\"error\": {\"code\": ..., "
    "\"message\": ...}} (code usage, bad_params, not_found, forbidden, unreachable, ...), with "
    "the same exit codes. `memory COMMAND --help` shows a command's arguments and examples.",
    "",
    "exit codes: 0 OK (stored, matched); 1 the request failed (a duplicate, no match, not "
    "found, refused); 2 usage error (also `memory` alone, which prints this help); 3 daemon "
    "unreachable. Hooks (`memory hook claude-code|codex EVENT`) always exit 0: see `memory hook "
    "--help`.",
))


def epilog(command: str) -> str:
    examples, exits = COMMANDS[command]
    lines = ["examples:"] + [f"  {example}" for example in examples]
    lines += ["", f"exit codes: {exits}; {COMMON_EXITS}."]
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
            lines.append(textwrap.fill(line.strip(), width, initial_indent=indent + lead,
                                       subsequent_indent=indent + lead + ("  " if lead else "")) if line.strip()
                         else "")
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
