"""The `memory` command as a user runs it: output, --json and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli


def test_store_then_duplicate_exit_codes(daemon) -> None:
    stored = run_cli("store", "designer", "rejected-designs", "floating speech bubble", "--tags", "sticker")
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored ")
    again = run_cli("store", "designer", "rejected-designs", "Floating speech  bubble")
    assert again.returncode == 1
    assert "exact duplicate" in again.stderr and "floating speech bubble" in again.stdout


def test_search_before_action_exit_codes(daemon) -> None:
    run_cli("store", "social", "exhausted-stories", "The SQLite WAL data loss during deploys story")
    found = run_cli("search", "social", "exhausted-stories", "sqlite wal story")
    assert found.returncode == 0 and "SQLite WAL" in found.stdout
    nothing = run_cli("search", "social", "-", "a recipe for banana bread")
    assert nothing.returncode == 1 and nothing.stdout == ""
    other_agent = run_cli("search", "designer", "-", "sqlite wal story")
    assert other_agent.returncode == 1


def test_search_without_limit_takes_the_daemons_search_limit(daemon, client,
                                                             memoryd_home) -> None:
    """F-4 (2026-11-30): `memory search` sent --limit's default of 10 with every request, so
    `[search] limit = 2` in config.toml changed what Client().search returned but not what
    the command printed. Without --limit the command sends none: the daemon's setting."""
    for i in range(5):
        client.remember("coder", "print", f"Sticker printing order {i} goes to the shop on "
                        f"{('Main', 'Elm', 'Oak', 'Pine', 'Birch')[i]} street", force=True)
    assert len(json.loads(run_cli("--json", "search", "coder", "-", "sticker printing",
                                  "--all").stdout)["hits"]) == 5
    (memoryd_home / "config.toml").write_text("[search]\nlimit = 2\n")
    assert run_cli("reload").returncode == 0
    hits = json.loads(run_cli("--json", "search", "coder", "-", "sticker printing").stdout)["hits"]
    assert len(hits) == 2 == len(client.search("sticker printing", agent="coder")["hits"])
    asked = json.loads(run_cli("--json", "search", "coder", "-", "sticker printing", "--limit",
                               "4").stdout)
    assert len(asked["hits"]) == 4
    assert "search.limit" in run_cli("search", "--help").stdout


def test_json_everywhere(daemon) -> None:
    stored = json.loads(run_cli("store", "coder", "tools", "We lint with ruff", "--json").stdout)
    entry_id = stored["entry"]["id"]
    hits = json.loads(run_cli("search", "coder", "-", "ruff", "--json").stdout)["hits"]
    assert hits[0]["id"] == entry_id
    assert json.loads(run_cli("get", entry_id, "--json").stdout)["text"] == "We lint with ruff"
    assert json.loads(run_cli("status", "--json").stdout)["entries"] == {"active": 1}
    forgotten = run_cli("forget", entry_id, "--agent", "coder", "--json")
    assert json.loads(forgotten.stdout)["status"] == "forgotten"
    history = json.loads(run_cli("history", entry_id, "--json").stdout)
    assert [e["action"] for e in history["events"]] == ["remember", "forgotten"]


def test_key_conflict_and_history_in_plain_text(daemon) -> None:
    run_cli("store", "coder", "prefs", "Commits use conventional prefixes", "--key", "pref.commit_style")
    run_cli("store", "coder", "prefs", "Commits are free-form", "--key", "pref.commit_style",
            "--confidence", "0.99")
    out = run_cli("history", "--agent", "coder", "--key", "pref.commit_style").stdout
    newer = next(line.split()[0] for line in out.splitlines() if "free-form" in line)
    assert f"[superseded by {newer}]: Commits use conventional prefixes" in out
    assert "pref.commit_style: Commits are free-form" in out


def test_status_text(daemon) -> None:
    out = run_cli("status")
    assert out.returncode == 0
    assert "model: all-MiniLM-L6-v2-q8dyn (384 dims" in out.stdout


def test_unreachable_daemon_exits_3_and_says_how_to_start_it(memoryd_home) -> None:
    result = run_cli("search", "a", "-", "anything")
    assert result.returncode == 3
    assert "memoryd serve" in result.stderr and str(memoryd_home) in result.stderr
    import re
    import shlex

    named = re.search(r"`([^`]+) serve`", result.stderr).group(1)  # a command that works here
    assert os.access(shlex.split(named)[0], os.X_OK), named
    assert "systemctl" not in result.stderr  # no unit is installed


def test_usage_errors_exit_2(daemon) -> None:
    assert run_cli("store", "only-agent").returncode == 2
    assert run_cli("frobnicate").returncode == 2
    bad_agent = run_cli("store", "../x", "c", "text")
    assert bad_agent.returncode == 2 and "not a valid agent name" in bad_agent.stderr
    # said of what the user asked (the bind the client sends first is not theirs to know)
    assert bad_agent.stderr.startswith("Error: store: agent '../x'"), bad_agent.stderr
    assert run_cli("history").returncode == 2
    # a glob source's arguments beside --project were dropped without a word, and the
    # project root alone added
    both = run_cli("sources", "add", "notes", "/tmp/notes/*.md", "--kind", "memory",
                   "--project", "/tmp")
    assert both.returncode == 2 and "NAME, PATH, --kind are a glob source's" in both.stderr
    # a --project that is no directory found nothing without a word
    for args in (("list", "--project", "/no/such/dir"),
                 ("search", "a", "--project", "/no/such/dir", "-", "x")):
        typo = run_cli(*args)
        assert "note: /no/such/dir is no directory" in typo.stderr, typo.stderr
    # an agent that names none (an unset variable) read every agent's entries
    for args in (("list", ""), ("export", "--agent", ""), ("search", ",", "-", "x")):
        unset = run_cli(*args)
        assert unset.returncode == 2 and "names no agent ('*' is every agent)" in unset.stderr
        assert unset.stdout == ""


def test_text_in_another_encoding_is_a_usage_error_not_a_crash(daemon) -> None:
    """Bytes that are not UTF-8 on the command line (a terminal set to Latin-1): a usage error
    that shows them and asks about the terminal. It was a traceback and exit 1, which a script
    reads as "no match"."""
    latin1 = os.fsdecode(b"caf\xe9 au lait")
    for args in (("store", "barista", "drinks", latin1), ("search", "barista", "-", latin1),
                 ("search", "barista", "--project", latin1, "-", "coffee")):
        result = run_cli(*args)
        assert result.returncode == 2, result.stderr
        assert "not UTF-8 text: '" in result.stderr
        assert "caf\\xe9 au lait' (memoryd takes text as UTF-8" in result.stderr
        assert "Traceback" not in result.stderr
    assert run_cli("search", "barista", "-", "coffee").returncode == 1  # nothing was stored


def test_numbers_out_of_every_range_are_usage_errors_not_tracebacks(daemon, tmp_path) -> None:
    """A number too large for the wire (msgpack carries 64 bits), a wait of 0, -1, nan or
    inf seconds, a port past 65535: each a usage error that names its option; a run id past
    any row's is simply not there. Each was a traceback and exit 1."""
    huge = "9" * 20
    for args, option in [(("search", "b", "-", "x", "--limit", huge), "--limit"),
                         (("--json", "list", "--limit", huge), "--limit"),
                         (("context", "--agent", "b", "--budget", huge), "--budget")]:
        result = run_cli(*args)
        assert result.returncode == 2, result.stderr
        said = json.loads(result.stdout)["error"]["message"] if "--json" in args \
            else result.stderr
        assert f"{option} is too large a number" in said and "Traceback" not in said
    for wait in ("0", "-1", "nan", "inf", "1e400"):
        result = run_cli("status", "--timeout", wait)
        assert result.returncode == 2 and f"--timeout: '{wait}' is not a number of seconds " \
            "above 0 and at most 604800 (a week)" in result.stderr, result.stderr  # F-11: the
        # range is said (it was "invalid seconds value: '0'")
    port = run_cli("ui", "--no-open", "--port", "99999")
    assert port.returncode == 2 and "--port: '99999' is not a port number from 0 (any free " \
        "one) to 65535" in port.stderr
    for missing in ("undo", "pass show"):
        result = run_cli(*missing.split(), "r" + huge)
        assert result.returncode == 1 and f"no run r{huge}" in result.stderr, result.stderr
    # an import: the line with the number is refused and named, the others stored
    lines = tmp_path / "old.jsonl"
    lines.write_text('{"agent": "fut", "category": "c", "text": "kept one"}\n'
                     '{"agent": "fut", "category": "c", "text": "x", "created": 1' + huge + '}\n'
                     '{"agent": "fut", "category": "c", "text": "kept two"}\n')
    imported = run_cli("import", str(lines))
    assert imported.returncode == 1 and "stored 2" in imported.stdout, imported.stdout
    assert "line 2: refused: remember_many: created is too large a number" in imported.stderr


def test_memorys_text_is_shown_to_the_terminal_not_obeyed_by_it(daemon, client) -> None:
    """An entry (an agent's, a transcript's line) holding a terminal's escape sequences, a
    carriage return and a right-to-left override: `memory` shows them as escapes in its text
    output and as JSON escapes under --json (the same text to a JSON reader), never raw."""
    text = "red \x1b[31mALERT\x1b[0m \x1b]0;pwned\x07 rm -rf ~\rok \u202eevil \x9b2J"
    entry = client.remember("esc", "notes", text)["entry"]
    for args in (("list", "esc"), ("get", entry["id"]), ("search", "esc", "-", "ALERT pwned", "--all"),
                 ("export", "--agent", "esc")):
        shown = run_cli(*args)
        assert shown.returncode == (1 if args[0] == "search" else 0), shown.stderr  # no match
        for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
            assert raw not in shown.stdout + shown.stderr, (args, raw)
        if args[0] != "export":
            assert "\\x1b[31mALERT" in shown.stdout and "\\u202eevil" in shown.stdout
    assert json.loads(run_cli("--json", "get", entry["id"]).stdout)["text"] == text
    exported = run_cli("export", "--agent", "esc").stdout
    assert json.loads(exported.splitlines()[0])["text"] == text


def test_export_to_dash_is_stdout_and_a_file_that_cannot_be_read_says_so(
        daemon, client, tmp_path) -> None:
    """`-o -` is standard output, as `import -` reads standard input (it wrote a file named
    "-"); a file that cannot be read or written is exit 1, with its name and why."""
    client.remember("dash", "notes", "The kiln fires on Thursdays")
    exported = run_cli("export", "--agent", "dash", "-o", "-", cwd=str(tmp_path))
    assert exported.returncode == 0 and "kiln fires" in exported.stdout
    assert not (tmp_path / "-").exists()
    missing = run_cli("import", str(tmp_path / "nothing.jsonl"))
    assert missing.returncode == 1 and "nothing.jsonl: No such file or directory" in \
        missing.stderr
    into_directory = run_cli("export", "-o", str(tmp_path))
    assert into_directory.returncode == 1 and "Is a directory" in into_directory.stderr


def into_a_closed_pipe(*args: str, buffered: bool) -> subprocess.CompletedProcess[str]:
    """The real `memory` command with stdout a pipe whose reader has gone (`memory … | head -c
    10` once head has its bytes): every write to it fails with EPIPE. Python writes stdout as
    it prints under PYTHONUNBUFFERED=1, else at the flush before exit."""
    reader, writer = os.pipe()
    os.close(reader)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    try:
        return subprocess.run([sys.executable, "-m", "memoryd_client", *args], stdout=writer,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              timeout=60, check=False,
                              env=env if buffered else {**env, "PYTHONUNBUFFERED": "1"})
    finally:
        os.close(writer)


@pytest.mark.parametrize("buffered", [False, True], ids=["unbuffered", "buffered"])
def test_a_stdout_closed_under_the_output_leaves_a_done_install_a_success(
        memoryd_home, buffered) -> None:
    """The tester's `memory hook install cursor 2>err | head -c 10`: the hooks were written,
    yet the command said "Error: [Errno 32] Broken pipe" and exited 1 (or, buffered, Python's
    "Exception ignored … BrokenPipeError" and 120). It exits 0, saying nothing."""
    result = into_a_closed_pipe("hook", "install", "cursor", buffered=buffered)
    assert (result.returncode, result.stderr) == (0, "")
    hooks = json.loads((memoryd_home / "user" / ".cursor" / "hooks.json").read_text())["hooks"]
    assert hooks["sessionStart"][0]["command"].endswith("hook cursor sessionStart")


@pytest.mark.parametrize("buffered", [False, True], ids=["unbuffered", "buffered"])
def test_a_stdout_closed_under_the_output_keeps_the_commands_exit_code(daemon, buffered) -> None:
    """A duplicate store (exit 1, the existing entry on stdout) into a closed pipe still exits
    1, quietly; a search that matched, 0."""
    assert run_cli("store", "potter", "kiln", "The kiln fires on Thursdays").returncode == 0
    duplicate = into_a_closed_pipe("store", "potter", "kiln", "The kiln fires on Thursdays",
                                   buffered=buffered)
    assert duplicate.returncode == 1
    assert "exact duplicate" in duplicate.stderr and "Broken pipe" not in duplicate.stderr
    assert "Exception ignored" not in duplicate.stderr
    found = into_a_closed_pipe("search", "potter", "-", "kiln", buffered=buffered)
    assert found.returncode == 0 and "Broken pipe" not in found.stderr


def test_help_lists_every_command() -> None:
    out = run_cli("--help").stdout
    for command in ("status", "store", "search", "get", "forget", "supersede", "history"):
        assert command in out
        assert run_cli(command, "--help").returncode == 0


def test_help_names_every_agent_the_hooks_serve() -> None:
    """`memory --help`, `memory hook --help` and the exit-code help each name the agents a hook
    is installed for: an agent missing from one is one a user is told memoryd does not serve."""
    from memoryd_client.hooks import HARNESSES

    for args in (("--help",), ("hook", "--help")):
        out = re.sub(r"-\s+", "-", " ".join(run_cli(*args).stdout.split()))  # argparse wraps
        for agent in HARNESSES:
            assert out.count(agent) >= 2, (args, agent)  # the hook and its install


def test_importing_the_client_does_not_import_the_daemon_stack() -> None:
    code = ("import sys, memoryd_client, memoryd_client.cli; "
            "print(sorted(m for m in ('numpy', 'onnxruntime', 'apsw', 'memoryd') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_each_command_is_in_the_module_the_table_names() -> None:
    """GROUPS names each command's module, and a run imports that module alone: a command
    missing from it (or from GROUPS) would not exist."""
    import importlib

    from memoryd_client.commands import GROUPS

    for group in set(GROUPS.values()):
        table = importlib.import_module(f"memoryd_client.commands.{group}").COMMANDS
        assert sorted(table) == sorted(name for name in GROUPS if GROUPS[name] == group)
    code = ("import sys; from memoryd_client.cli import fast_parse; fast_parse(['search', 'a', "
            "'-', 'q']); print(sorted(m for m in sys.modules if m.startswith('memoryd_client."
            "commands.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == str(["memoryd_client.commands.args",
                                         "memoryd_client.commands.entries"])


def test_each_commands_help_says_what_each_exit_code_means_once() -> None:
    """Every command's help ends with its exit codes: each code named once, 0 to 3 in order
    (`memory sync --help` once read "2 usage; 2 usage error")."""
    from memoryd_client.parser import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    for name, sub in action.choices.items():
        if name == "hook":  # hooks always exit 0: their help says so in words
            continue
        text = " ".join(sub.format_help().split())
        exits = text[text.index("exit codes: "):]
        codes = [int(code) for code in re.findall(r"(?:^exit codes: |; )(\d) ", exits)]
        offline = name in ("doctor", "completion")  # they work with the daemon down
        assert codes == sorted(set(codes)) and 2 in codes and (3 in codes) != offline, exits


def test_each_command_alone_builds_its_parser() -> None:
    from memoryd_client.commands import GROUPS
    from memoryd_client.parser import build_parser

    action = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(GROUPS) == list(action.choices)
    for command in GROUPS:  # each command alone builds the same subparser
        alone = next(a for a in build_parser(only=command)._actions if a.dest == "command")
        assert list(alone.choices) == [command]


def test_an_empty_context_says_so_on_stderr_and_prints_nothing(daemon, memoryd_home) -> None:
    """L-c (2026-11-28): it printed one blank line and nothing else, rc 0."""
    empty = run_cli("context", "--agent", "claude-code", "--cwd", str(memoryd_home))
    assert empty.returncode == 0 and empty.stdout == ""
    assert empty.stderr.strip() == f"(nothing for claude-code in {memoryd_home})"
    prompted = run_cli("context", "--agent", "claude-code", "--prompt", "how do we deploy")
    assert prompted.stdout == ""
    assert "(nothing for this prompt for claude-code in" in prompted.stderr
    run_cli("store", "claude-code", "git", "Never force-push to main", "--kind", "lesson")
    block = run_cli("context", "--agent", "claude-code")
    assert "Never force-push to main" in block.stdout and block.stderr == ""




@pytest.mark.parametrize("argv", [["--json", "hook", "install", "codex"],
                                  ["hook", "--json", "install", "codex"],
                                  ["hook", "install", "codex", "--json"]])
def test_memory_hook_with_json_is_a_usage_error_and_installs_nothing(memoryd_home,
                                                                     argv) -> None:
    """`memory hook --json install codex` printed the usage and exited 0, installing
    nothing; `memory --json hook install codex` said "unrecognized arguments"."""
    done = run_cli(*argv)
    assert done.returncode == 2
    assert "memory hook takes no options before its action and no --json" in done.stdout
    assert not (Path(os.environ["HOME"]) / ".codex" / "hooks.json").exists()


def test_a_count_of_one_is_said_in_the_singular(capsys) -> None:
    """F-11 (2026-11-30): "1 ledger records", "1 new entries", "from 1 finished sessions"."""
    from memoryd_client import history_view, sync_view

    sync_view.print_sync({"applied": {"records": 1, "restored": 1, "purged": 0},
                          "committed": False, "pulled": True, "pushed": False, "seconds": 0.5,
                          "teams": {"web": {"entries": 1, "skipped": 1}},
                          "conflicts": ["a.md.conflict"], "new_conflicts": []})
    history_view.show_preview({"files": {"to_index": 1, "total": 1, "bytes_to_index": 10},
                               "by_harness": {}, "sessions": [],
                               "counts": {"sessions": 1, "candidates": 1, "too short": 1,
                                          "unreadable": 0}})
    out = capsys.readouterr().out
    assert "pulled: 1 ledger record, 1 transcript turn, 0 purged" in out
    assert "team web: 1 new entry, 1 line skipped" in out
    assert "1 older conflict copy waits: a.md.conflict" in out
    assert "would index 1 of 1 file (0.0 MB)" in out
    assert "would extract from 1 finished session: 1 entry to keep, 1 session too short" in out


def test_sources_add_warns_of_a_glob_that_watches_the_whole_home(keyword_daemon) -> None:
    """F-11 (2026-11-30): the docs promised a warning for a source watching every directory in
    the home; none came. `~/*/notes.md` (the home watched whole) is added and warned of; the
    root directory as a path is refused saying so."""
    added = run_cli("sources", "add", "me", "~/*/notes.md", "--kind", "memory", "--agent", "me")
    assert added.returncode == 0, added.stderr
    assert "warning: source me: ~/*/notes.md reaches below your home directory, so memoryd " \
        "watches every directory in it" in added.stderr
    quiet = run_cli("sources", "add", "top", "~/*.md", "--kind", "memory", "--agent", "me")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr
    root = run_cli("sources", "add", "x", "/", "--kind", "memory", "--agent", "me")
    assert root.returncode == 2 and "'/' names the root directory" in root.stderr
