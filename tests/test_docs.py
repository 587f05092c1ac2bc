"""The README stays true: CI runs its test command, and every command is documented."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd_client.cli import build_parser as memory_parser

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
