"""The README stays true: CI runs its test command, and every command is documented."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd_client.parser import build_parser as memory_parser

from memoryd.cli import build_parser as memoryd_parser

ROOT = Path(__file__).resolve().parent.parent


def subcommands(parser) -> list[str]:  # type: ignore[no-untyped-def]
    action = next(a for a in parser._actions if a.dest == "command")
    return list(action.choices)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    test_command = blocks[1].strip()
    assert "pytest" in test_command
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci


def test_every_command_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    for command in subcommands(memory_parser()):
        assert f"`memory {command}" in readme, command
    for command in subcommands(memoryd_parser()):
        assert f"`memoryd {command}" in readme, command


def command_paths(parser) -> set[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    """(command, action) for every command of `memory` (action None: it has none)."""
    from memoryd_client.hooks import HARNESSES

    paths: set[tuple[str, str | None]] = set()
    for name, sub in next(a for a in parser._actions if a.dest == "command").choices.items():
        nested = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
        if name == "hook":  # its own parser: the harnesses and install/uninstall
            actions = [*HARNESSES, "install", "uninstall"]
        else:
            actions = [action for a in nested for action in a.choices]
        paths |= {(name, action) for action in actions} if actions else {(name, None)}
    return paths


def readme_table_paths() -> set[tuple[str, str | None]]:
    """(command, action) of every row of the README's `memory` table; each row must name its
    exit codes."""
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## The `memory` command", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `memory ")]
    assert rows
    paths: set[tuple[str, str | None]] = set()
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == 3 and cells[2], f"row without exit codes: {row}"
        for usage in re.findall(r"`(memory [^`]*)`", cells[0]):
            words = usage.replace("\\|", "|").split()[1:]
            action = words[1] if len(words) > 1 and re.fullmatch(r"[a-z|-]+", words[1]) else None
            for command in words[0].split("|"):
                for name in (action.split("|") if action else [None]):
                    paths.add((command, name))
    return paths


def test_readme_command_table_matches_the_parsers() -> None:
    """Every command and action is in the README's table, and the table names none that the
    parser does not know (arguments such as `hook claude-code|codex EVENT` count as actions
    only for commands that have actions)."""
    parsed = command_paths(memory_parser())
    documented = readme_table_paths()
    with_actions = {command for command, action in parsed if action is not None}
    documented = {(c, a if c in with_actions else None) for c, a in documented}
    assert parsed - documented == set(), "commands missing from the README table"
    assert documented - parsed == set(), "the README table names commands that do not exist"


def all_parsers(parser, path=()):  # type: ignore[no-untyped-def]
    """(path, parser) for the main parser and every command and action under it."""
    yield path, parser
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            for name, sub in action.choices.items():
                if name != "hook":  # `memory hook …` has its own help (test_cli)
                    yield from all_parsers(sub, (*path, name))


def test_every_help_documents_arguments_examples_and_exit_codes() -> None:
    for path, parser in all_parsers(memory_parser()):
        text = parser.format_help()
        assert re.search(r"(?i)examples?:\s+.*\bmemory\b", text), path
        assert re.search(r"(?i)exit codes: ", text), path
        for action in parser._actions:
            if not action.option_strings and action.__class__.__name__ != "_SubParsersAction":
                assert action.help, f"memory {' '.join(path)}: {action.dest} has no help"
            if action.dest == "limit":
                assert "default: " in (action.help or ""), path
