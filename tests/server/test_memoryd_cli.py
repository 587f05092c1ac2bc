"""The `memoryd` command as a user meets it (L-a, L-b of the 2026-11-28 report): `memoryd`
alone prints its help, every help has a description, examples and exit codes, and `--manager`
goes before or after the service action."""

from __future__ import annotations

import os
import re

import pytest

from memoryd.cli import build_parser, main
from tests.conftest import run_memoryd
from tests.server.test_service import calls, home, managers, service  # noqa: F401 (fixtures)


def test_memoryd_alone_prints_its_help_and_exits_2() -> None:
    alone = run_memoryd()
    assert alone.returncode == 2
    assert alone.stdout.startswith("usage: memoryd") and "examples:" in alone.stdout
    assert "error" not in alone.stderr


def helps(parser, path=()):  # type: ignore[no-untyped-def]
    yield path, parser
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            for name, sub in action.choices.items():
                yield from helps(sub, (*path, name))


def test_every_memoryd_help_has_a_description_examples_and_exit_codes() -> None:
    found = list(helps(build_parser()))
    assert {("serve",), ("reindex",), ("service", "install"), ("service", "logs")} <= \
        {path for path, _ in found}
    for path, parser in found:
        text = parser.format_help()
        assert parser.description, path
        assert re.search(r"examples:\n  memoryd ", text), path
        assert re.search(r"exit codes: 0 ", text), path


@pytest.mark.parametrize("order", [["--manager", "launchd", "install"],
                                   ["install", "--manager", "launchd"]])
def test_the_manager_goes_before_or_after_the_action(
        managers, home, capsys, order) -> None:  # noqa: F811
    """L-a: `memoryd service install --manager launchd`, as the README writes it, was
    "unrecognized arguments"; only `service --manager launchd install` worked."""
    (home / "Library" / "LaunchAgents").mkdir(parents=True)
    code, _, err = service(capsys, *order)
    assert code == 0, err
    assert ["launchctl", "enable", f"gui/{os.getuid()}/dev.memoryd.agent"] in calls(managers)
    assert main(["service", "status", "--manager", "runit"]) == 2  # still checked after it
