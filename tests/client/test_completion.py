"""Shell completion (issue 39): `memory completion bash|zsh|fish` prints a script made from the
table of commands, and agent names and entry ids come from a real daemon when it is up.

bash is exercised for real (the script sourced, the words of a command line in COMP_WORDS, its
function called, as bash does on TAB); zsh through a pseudo-terminal (zpty) and fish with
`complete -C`, each skipped, saying so, when the shell is not installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from memoryd_client import Client
from memoryd_client.commands import GROUPS
from memoryd_client.commands.passes import PASS_NAMES

from tests.conftest import RunningDaemon, run_cli


@pytest.fixture
def memory_on_path(memoryd_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `memory` program on PATH that runs this checkout's client (as the installed script
    does): the scripts call `memory __complete`."""
    bin_dir = memoryd_home / "bin"
    bin_dir.mkdir()
    program = bin_dir / "memory"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} -m memoryd_client "$@"\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def _script(shell: str, home: Path) -> Path:
    done = run_cli("completion", shell)
    assert done.returncode == 0, done.stderr
    path = home / f"memory.{shell}"
    path.write_text(done.stdout)
    return path


def _bash(script: Path, *lines: str) -> list[list[str]]:
    """What bash offers for each command line (a trailing space: a new word), with the
    script loaded as a user's ~/.bashrc loads it."""
    calls = "\n".join(
        f"COMP_WORDS=({line}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMPREPLY=(); "
        "_memory; printf '%s\\n' \"${COMPREPLY[*]}\"" for line in lines)
    done = subprocess.run(["bash", "--norc", "-c", (f"source {script}\ncomplete -p memory\n"
                           f"{calls}")], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "complete -F _memory memory"
    return [line.split() for line in out[1:]]


def _seed(home: Path) -> str:
    with Client(home / "memoryd.sock") as client:
        stored = client.remember("designer", "rejected-designs", "floating speech bubble",
                                 is_global=True)
        client.remember("coder", "prefs", "commits in the imperative", is_global=True)
    return str(stored["entry"]["id"])


def test_bash_completes_commands_options_choices_files_and_the_daemons_names(
        memoryd_home: Path, memory_on_path: Path, daemon: RunningDaemon) -> None:
    entry = _seed(memoryd_home)
    (memoryd_home / "notes.jsonl").write_text("")
    script = _script("bash", memoryd_home)
    (status_store, passes, actions, options, agents, agent_option, kinds, ids, files,
     shells) = _bash(
        script, "memory st", "memory pass run ''", "memory pass ''",
        "memory --json pass run consolidate --d", "memory search ''",
        "memory list --agent d", "memory store designer x 'a text' --kind ''",
        f"memory get {entry[:2]}", f"memory import {memoryd_home}/no",
        "memory completion ''")
    assert status_store == ["status", "store"]
    assert passes == list(PASS_NAMES)
    assert actions == ["list", "run", "show"]
    assert options == ["--dry-run"]
    assert agents == ["coder", "designer"]  # from the daemon
    assert agent_option == ["designer"]
    assert kinds == ["fact", "lesson", "feedback", "note", "turn", "summary"]
    assert entry in ids and all(i.startswith(entry[:2]) for i in ids)
    assert files == [f"{memoryd_home}/notes.jsonl"]
    assert shells == ["bash", "zsh", "fish"]
    # every command of the table, and nothing else
    every = _bash(script, "memory ''")[0]
    assert sorted(every) == sorted(GROUPS)


def test_with_the_daemon_down_the_daemons_part_offers_nothing_and_the_rest_still_works(
        memoryd_home: Path, memory_on_path: Path) -> None:
    script = _script("bash", memoryd_home)
    agents, passes = _bash(script, "memory search ''", "memory pass run c")
    assert agents == []
    assert passes == ["consolidate"]
    asked = run_cli("__complete", "agents")
    assert (asked.returncode, asked.stdout, asked.stderr) == (0, "", "")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (apt-get install "
                    "zsh): the zsh script is not exercised")
def test_zsh_completes_through_a_terminal(memoryd_home: Path, memory_on_path: Path,
                                          daemon: RunningDaemon) -> None:
    """zsh's completion runs only in an interactive shell: zsh's own zpty module drives one,
    and the test reads what it lists after TAB."""
    _seed(memoryd_home)
    script = _script("zsh", memoryd_home)
    assert subprocess.run(["zsh", "-n", str(script)], check=False).returncode == 0
    driver, passes = memoryd_home / "drive.zsh", " ".join(PASS_NAMES)
    driver.write_text(f"""
zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z 'PS1="> "; autoload -Uz compinit; compinit -u -d {memoryd_home}/zcd; \
source {script}; echo RE""ADY'
zpty -r z line '*READY*'
for words wanted in 'memory pass run ' '{passes}' 'memory search ' 'coder designer' \
    'memory st' 'status store'; do
    zpty -w -n z "$words"$'\\t'
    all=''
    for tick in {{1..100}}; do  # until the list shows what it should, 10 s at most
    while zpty -r -t z chunk; do all+=$chunk; done
    missing=0
    for word in ${{=wanted}}; do [[ $all == *$word* ]] || missing=1; done
    (( missing )) || break
    sleep 0.1
    done
    print -r -- "== $words: $all"
    zpty -w -n z $'\\C-u'
    sleep 0.2
    while zpty -r -t z chunk; do :; done
done
zpty -d z
""")
    done = subprocess.run(["zsh", "-f", str(driver)], capture_output=True, text=True,
                          timeout=60, check=False)
    shown = done.stdout
    passes, agents, commands = (part.split("== ")[0] for part in shown.split("== ")[1:])
    assert all(name in passes for name in PASS_NAMES), shown
    assert "coder" in agents and "designer" in agents, shown
    assert "status" in commands and "store" in commands, shown


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (apt-get "
                    "install fish): the fish script is not exercised")
def test_fish_completes_with_descriptions(memoryd_home: Path, memory_on_path: Path,
                                          daemon: RunningDaemon) -> None:
    entry = _seed(memoryd_home)
    script = _script("fish", memoryd_home)
    assert subprocess.run(["fish", "-n", str(script)], check=False).returncode == 0
    lines = ["memory pass run ", "memory pass run consolidate --d", "memory search ",
             f"memory get {entry[:3]}", "memory store a b c --kind=l"]
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; " + "; ".join(
            f"echo '== {line}'; complete -C '{line}'" for line in lines)],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    passes, dry_run, agents, ids, kind = (
        part.splitlines()[1:] for part in done.stdout.split("== ")[1:])
    assert passes == sorted(PASS_NAMES)
    assert dry_run == ["--dry-run\tpreview: change nothing"]
    assert agents == ["coder\tagent", "designer\tagent"]
    assert ids == [f"{entry}\tdesigner/rejected-designs note: floating speech bubble"]
    assert kind == ["--kind=lesson"]


def test_no_description_is_cut_inside_its_parenthesis() -> None:
    """zsh and fish showed `notebook  check (the default` and `--confidence  0..1 (default`:
    a help cut at its first clause, inside a parenthesis."""
    from memoryd_client.completion import specs

    shown = [about for spec in specs() for _, about in spec.options + spec.words]
    assert shown and not [a for a in shown if a.count("(") != a.count(")")]


def test_an_unknown_shell_is_a_usage_error(memoryd_home: Path) -> None:
    done = run_cli("completion", "tcsh")
    assert done.returncode == 2
    assert "invalid choice: 'tcsh'" in done.stderr
