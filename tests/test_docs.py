"""The docs stay true: CI runs the README's test command, the README's quick start is its two
commands and links every page of docs/, and docs/ documents every command, setting and wire
method."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from memoryd_client.parser import build_parser as memory_parser
from memoryd_client.wire import PARAMS

from memoryd.cli import build_parser as memoryd_parser
from memoryd.sources import SOURCE_KEYS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: The quick start's first command, as a new user types it (the test command is CI's own).
SERVE = "python3 -m venv .venv && .venv/bin/pip install ./client . && .venv/bin/memoryd serve"


def read(name: str) -> str:
    return (ROOT / name).read_text()


def section(text: str, heading: str) -> str:
    """The text under a heading, up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    body = text.split(f"\n{heading}\n", 1)[1]
    return re.split(rf"\n#{{1,{len(level)}}} ", body, maxsplit=1)[0]


def subcommands(parser) -> list[str]:  # type: ignore[no-untyped-def]
    action = next(a for a in parser._actions if a.dest == "command")
    return list(action.choices)


def test_the_quick_start_is_the_two_commands_and_ci_runs_the_test_command() -> None:
    blocks = re.findall(r"```sh\n(.*?)\n```", section(read("README.md"), "## Quick start"), re.DOTALL)
    serve, test_command = (block.strip() for block in blocks[:2])
    assert serve == SERVE
    assert "pytest" in test_command
    ci = read(".ci/run").splitlines()
    assert test_command in ci


def test_the_readme_links_every_page_of_the_docs() -> None:
    readme = read("README.md")
    pages = sorted(path.name for path in DOCS.glob("*.md"))
    assert pages
    for page in pages:
        assert f"](docs/{page}" in readme, page


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes of a markdown file's headings."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"(?m)^#+ (.*)$", text)}


def test_every_link_between_the_docs_leads_to_a_file_and_a_heading() -> None:
    for path in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if "://" in target:
                continue
            name, _, anchor = target.partition("#")
            linked = path.parent / name if name else path
            assert linked.exists(), f"{path.name}: {target}"
            if anchor and linked.suffix == ".md":
                assert anchor in anchors(linked), f"{path.name}: {target}"


def test_every_command_is_documented() -> None:
    commands = read("docs/commands.md")
    for command in subcommands(memory_parser()):
        assert f"`memory {command}" in commands, command
    for command in subcommands(memoryd_parser()):
        assert f"`memoryd {command}" in commands, command


def test_every_setting_is_documented() -> None:
    """Every setting of the shipped defaults, and every key of a [[sources]] table."""
    page = read("docs/configuration.md")
    defaults = tomllib.loads(read("memoryd/default.toml"))
    settings = [f"{name}.{key}" for name, table in defaults.items() for key in table]
    assert len(settings) > 30
    for setting in settings:
        assert f"`{setting}`" in page, setting
    sources = section(page, "## Sources")
    for key in SOURCE_KEYS:
        assert f"`{key}`" in sources, key


def test_every_wire_method_is_documented() -> None:
    protocol = read("docs/protocol.md")
    for method in PARAMS:
        assert f"`{method}`" in protocol, method


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


def command_table_paths() -> set[tuple[str, str | None]]:
    """(command, action) of every row of the `memory` table in docs/commands.md; each row must
    name its exit codes."""
    table = section(read("docs/commands.md"), "## `memory`: the client")
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


def test_the_command_table_matches_the_parsers() -> None:
    """Every command and action is in the table of docs/commands.md, and the table names none
    that the parser does not know (arguments such as `hook claude-code|codex EVENT` count as
    actions only for commands that have actions)."""
    parsed = command_paths(memory_parser())
    documented = command_table_paths()
    with_actions = {command for command, action in parsed if action is not None}
    documented = {(c, a if c in with_actions else None) for c, a in documented}
    from memoryd_client.commands import GROUPS, command_named

    defaults = {name: command_named(name).default_action for name in GROUPS}
    documented = {(c, defaults.get(c) if a is None and c in with_actions else a)
                  for c, a in documented}  # `memory pass` is `memory pass list`
    assert parsed - documented == set(), "commands missing from the table of docs/commands.md"
    assert documented - parsed == set(), "docs/commands.md's table names commands that do not exist"


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


#: The options every command takes, described once above the table.
GLOBAL_OPTIONS = {"-h", "--help", "--json", "--socket", "--timeout"}


def table_rows() -> list[tuple[list[str], str, str]]:
    """Each row of the `memory` table: the usages of its first cell, its description, and its
    whole text."""
    table = section(read("docs/commands.md"), "## `memory`: the client")
    rows = []
    for row in (line for line in table.splitlines() if line.startswith("| `memory ")):
        first, description = re.split(r"(?<!\\)\|", row)[1:3]
        rows.append(([u.replace("\\|", "|") for u in re.findall(r"`(memory [^`]*)`", first)],
                     description, row.replace("\\|", "|")))
    return rows


def rows_of(rows: list[tuple[list[str], str, str]], command: str,
            action: str | None) -> list[str]:
    """The rows whose usage names ``command`` (and ``action``, or none); a usage that ends in
    "…" takes in the rows of the command its description names first (`memory recent …`:
    "`memory list` of what was written lately")."""
    found = []
    for usages, description, text in rows:
        for usage in usages:
            words = usage.split()[1:]
            named = words[0].split("|")
            said = words[1].split("|") if len(words) > 1 and \
                re.fullmatch(r"[a-z|-]+", words[1]) else []
            if command in named and (action is None or action in said or not said):
                found.append(text)
                if usage.endswith("…"):
                    other = re.search(r"`memory (\w[\w-]*)[^`]*`", description)
                    if other and other.group(1) != command:
                        found += rows_of(rows, other.group(1), None)
                break
    return found


def test_the_command_table_names_every_option() -> None:
    """F-10 (2026-11-30): the table of docs/commands.md lacked `memory list --usage [VIEW]`,
    `memory hook AGENT --serve` and the options of `memory file`'s actions; every option of
    every command (those all take aside) is now in the rows of its command."""
    from memoryd_client.hooks import HARNESSES, SERVE

    rows = table_rows()
    missing = []
    for path, parser in all_parsers(memory_parser()):
        if not path:
            continue
        command, action = path[0], (path[1] if len(path) > 1 else None)
        text = " ".join(rows_of(rows, command, action))
        for argument in parser._actions:
            spellings = set(argument.option_strings) - GLOBAL_OPTIONS
            if spellings and not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)
                                     for o in spellings):
                missing.append(f"memory {' '.join(path)} {'/'.join(sorted(spellings))}")
    hook = " ".join(rows_of(rows, "hook", HARNESSES[0]))
    if SERVE not in hook:
        missing.append(f"memory hook AGENT {SERVE}")
    assert missing == [], "options missing from docs/commands.md's table"
