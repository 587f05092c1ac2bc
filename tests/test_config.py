"""The configuration is all or nothing and checked (2026-12-01 report): a reload refused
changes nothing (it made two agents write one file, and stopped the watching of new roots for
good); `memory sources add/remove` write sources.toml only once the configuration with it is
one memoryd takes; every error names the file and the setting, in words a user reads."""

from __future__ import annotations

import json
import logging
import time
import tomllib
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.config import load_config
from memoryd.errors import ConfigError
from tests.conftest import run_cli, run_memoryd, wait_until


def write_config(home: Path, text: str) -> None:
    (home / "config.toml").write_text(text)


def test_a_refused_reload_changes_no_setting(client: Client, memoryd_home: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """`memory_dir = "~/mem"` (no {agent}) was refused by the reload, yet the memory tools took
    it: Alice's notes.md and Bob's were one file, Bob's write over Alice's. A refused root
    with a search limit: the limit applied all the same."""
    write_config(memoryd_home, '[tools]\nmemory_dir = "~/mem"\n')
    with caplog.at_level(logging.ERROR):
        refused = run_cli("reload")
    assert refused.returncode == 2
    for agent, line in (("alice", "- alice: deploy with make release"),
                        ("bob", "- bob: scratch")):
        written = run_cli("file", "write", "--agent", agent, "notes.md", "--text", line)
        assert written.returncode == 0, written.stderr
    alice = run_cli("file", "read", "--agent", "alice", "notes.md")
    assert alice.stdout.strip() == "- alice: deploy with make release"
    assert (f"{memoryd_home / 'config.toml'}: tools.memory_dir: '~/mem' must hold {{agent}}"
            in refused.stderr), refused.stderr
    assert "the running configuration is kept" in refused.stderr
    assert any(m.startswith("Reload refused, keeping the running configuration: ")
               and "tools.memory_dir" in m for m in caplog.messages)  # the log says so too

    write_config(memoryd_home, '[watch]\nproject_roots = ["rel"]\n[search]\nlimit = 1\n')
    refused = run_cli("reload")
    assert refused.returncode == 2
    assert "watch.project_roots: 'rel' is relative" in refused.stderr, refused.stderr
    for text in ("The staging database is read-only on Fridays",
                 "The staging database restarts at noon"):
        client.remember("coder", "ops", text)
    assert len(client.search("staging database", agent="coder")["hits"]) == 2


def test_after_a_refused_reload_new_roots_are_still_watched(client: Client,
                                                             memoryd_home: Path) -> None:
    """The watcher took the refused configuration before building its sources failed; its
    root checker then failed on it every round and died unobserved: a valid reload later,
    and a built-in agent's directory made later, were never watched (ingest.roots stayed
    as it was while status said "up to date")."""
    write_config(memoryd_home, '[watch]\nproject_roots = ["rel"]\n')
    assert run_cli("reload").returncode == 2
    time.sleep(1.0)  # several rounds of the root checker (0.2 s in the tests)
    write_config(memoryd_home, "")
    assert run_cli("reload").returncode == 0
    codex = memoryd_home / "user/.codex"
    codex.mkdir()
    (codex / "AGENTS.md").write_text("- Prefer small pull requests.\n")
    wait_until(lambda: str(codex) in client.status()["ingest"]["roots"], timeout_s=15)
    wait_until(lambda: client.search("small pull requests", agent="codex")["hits"],
               timeout_s=15)


@pytest.mark.parametrize(("text", "message"), [
    ('[tools]\nmemory_dir = "~/mem"\n', "tools.memory_dir: '~/mem' must hold {agent}"),
    ('[tools]\nmemory_dir = "mem/{agent}"\n',
     "tools.memory_dir: 'mem/{agent}' must be absolute or start with ~/"),
    ('[watch]\nproject_roots = ["rel"]\n', "watch.project_roots: 'rel' is relative"),
    ('[watch]\nproject_roots = ["/"]\n',
     "watch.project_roots: '/' is the root directory: memoryd would watch and walk the whole"),
    ('[watch]\nproject_roots = ["~/src/*"]\n', "watch.project_roots: '~/src/*' may not contain"),
    ("[extract]\ncommand = \"cat 'oops\"\n",
     "extract.command: \"cat 'oops\" cannot be split into words as a shell would: no closing "
     "quotation"),
    ("search = 3\n", "search must be a table, not 3: its settings go on the lines under a "
     "[search] line"),
    ('[search]\nlimit = "3"\n',
     "search.limit must be a whole number, got '3' (a number is written without quotes)"),
    ('[watch]\ndisabled = "claude-transcripts"\n',
     "watch.disabled must be a list of strings ([\"a\", \"b\"]), got 'claude-transcripts'"),
    ('[context]\ntool_lessons = "false"\n', "context.tool_lessons must be true or false, got "
     "'false' (true and false are written without quotes)"),
    ('[[sources]]\nname = "notes"\npath = "~/notes/*.md"\nkind = "memory"\nformat = "markdown"\n',
     "[[sources]]: source 'notes': no agent"),
])
def test_a_bad_setting_is_named_with_its_file_in_words(memoryd_home: Path, text: str,
                                                       message: str) -> None:
    """Each is refused by load_config, where a start, a reload and `memory doctor` read it,
    naming config.toml: a memory_dir without {agent} and a relative project root were found
    only while a reload applied them (and named an internal source, 'memoryd-agents'); type
    errors said Python's names ("must be int, got '3'", "must be list")."""
    write_config(memoryd_home, text)
    with pytest.raises(ConfigError) as refused:
        load_config()
    assert str(refused.value).startswith(f"{memoryd_home / 'config.toml'}: "), refused.value
    assert message in str(refused.value), refused.value


def test_a_bad_path_in_the_environment_names_its_variable(monkeypatch) -> None:
    monkeypatch.setenv("MEMORYD_WATCH_PROJECT_ROOTS", "rel:/tmp")
    with pytest.raises(ConfigError, match=r"^MEMORYD_WATCH_PROJECT_ROOTS='rel:/tmp': "
                       r"watch.project_roots: 'rel' is relative"):
        load_config()


def test_a_source_named_twice_names_both_files(memoryd_home: Path) -> None:
    table = '[[sources]]\nname = "zeta"\npath = "~/zeta/*.md"\nkind = "memory"\nagent = "z"\n' \
        'format = "markdown"\n'
    write_config(memoryd_home, table)
    (memoryd_home / "sources.toml").write_text(table)
    with pytest.raises(ConfigError, match=(
            rf"sources named more than once: zeta \(in {memoryd_home / 'config.toml'} and "
            rf"{memoryd_home / 'sources.toml'}\)")):
        load_config()


def test_sources_add_writes_nothing_memoryd_would_refuse(daemon, memoryd_home: Path) -> None:
    """`memory sources add --project /` was refused, yet sources.toml kept project_roots =
    ["/"]: every later add and reload failed, and the next start exited 3 naming no file."""
    sources = memoryd_home / "sources.toml"
    refused = run_cli("sources", "add", "--project", "/")
    assert refused.returncode == 2
    assert f"not saved in {sources}: project_roots: '/' is the root directory" in refused.stderr
    assert not sources.exists()
    project = memoryd_home / "shop"
    project.mkdir()
    assert run_cli("sources", "add", "--project", str(project)).returncode == 0
    assert run_cli("reload").returncode == 0


def test_sources_add_with_a_broken_config_toml_writes_nothing(daemon,
                                                              memoryd_home: Path) -> None:
    """With a bad config.toml, `memory sources add zeta` failed but wrote zeta; once
    config.toml was fixed, adding it again appended a second zeta (the name was checked
    against the running configuration, not the file), and the start exited 3."""
    sources = memoryd_home / "sources.toml"
    add = ("sources", "add", "zeta", "~/zeta/*.md", "--kind", "memory", "--agent", "z")
    write_config(memoryd_home, "[search]\nlimit = 'x'\n")
    refused = run_cli(*add)
    assert refused.returncode == 2
    assert f"{memoryd_home / 'config.toml'}: search.limit must be a whole number" in \
        refused.stderr
    assert f"fix that first: {sources} is left as it was" in refused.stderr
    assert not sources.exists()
    removed = run_cli("sources", "remove", "claude-transcripts")
    assert removed.returncode == 2 and not sources.exists()
    write_config(memoryd_home, "")
    assert run_cli(*add).returncode == 0
    again = run_cli(*add)
    assert again.returncode == 2
    assert f"a source named 'zeta' exists already in {sources}" in again.stderr
    assert [t["name"] for t in tomllib.loads(sources.read_text())["sources"]] == ["zeta"]
    assert run_cli("reload").returncode == 0
    assert load_config().sources[0].name == "zeta"


def test_a_bad_sources_toml_is_a_startup_failure_that_names_it(memoryd_home: Path) -> None:
    """A sources.toml an older memoryd wrote with project_roots = ["/"]: the start exits 3
    naming sources.toml and the command that takes the root out."""
    (memoryd_home / "sources.toml").write_text('project_roots = ["/"]\n')
    started = run_memoryd("serve", timeout=30)
    assert started.returncode == 3
    assert (f"{memoryd_home / 'sources.toml'}: project_roots: '/' is the root directory: "
            "memoryd would watch and walk the whole file system (`memory sources remove /` "
            "takes it out)") in started.stderr


def test_sources_remove_takes_out_what_makes_sources_toml_refused(daemon,
                                                                  memoryd_home: Path) -> None:
    """The command the error names works on the file memoryd refuses; a remove that would
    leave a configuration memoryd refuses (config.toml broken) saves nothing."""
    sources = memoryd_home / "sources.toml"
    sources.write_text('project_roots = ["/"]\n')
    refused = run_cli("reload")
    assert refused.returncode == 2 and "`memory sources remove /` takes it out" in \
        refused.stderr
    removed = run_cli("sources", "remove", "/")
    assert removed.returncode == 0, removed.stderr
    assert "project_roots" not in sources.read_text()
    assert run_cli("reload").returncode == 0
    assert run_cli("sources", "remove", "claude-transcripts").returncode == 0
    write_config(memoryd_home, "[search]\nlimit = 'x'\n")
    before = sources.read_text()
    refused = run_cli("sources", "add", "claude-transcripts")
    assert refused.returncode == 2 and "search.limit" in refused.stderr
    assert sources.read_text() == before


def test_a_fixed_part_that_is_a_file_is_refused_and_told(daemon, memoryd_home: Path) -> None:
    """~/notes/a.md/*.md: its fixed part is a file. `memory sources add` refuses it; one in
    config.toml is a problem that says so (doctor said "does not exist … create it")."""
    notes = memoryd_home / "user/notes"
    notes.mkdir()
    (notes / "a.md").write_text("- a note\n")
    refused = run_cli("sources", "add", "nf", "~/notes/a.md/*.md", "--kind", "memory",
                      "--agent", "z")
    assert refused.returncode == 2 and f"{notes / 'a.md'} is a file" in refused.stderr
    write_config(memoryd_home, '[[sources]]\nname = "nf"\npath = "~/notes/a.md/*.md"\n'
                 'kind = "memory"\nformat = "markdown"\nagent = "z"\n')
    assert run_cli("reload").returncode == 0
    report = json.loads(run_cli("doctor", "--json").stdout)
    [sources] = [c for c in report["checks"] if c["check"] == "sources"]
    assert sources["detail"] == f"is a file, not a directory: nf: {notes / 'a.md'}"
    assert sources["fix"] == ("give the source a path whose part before the first wildcard "
                              f"is a directory: nf is defined in {memoryd_home / 'config.toml'}"
                              "; edit it there")


def test_a_project_root_of_config_toml_is_edited_there(daemon, memoryd_home: Path) -> None:
    """A project root written in config.toml that is gone: doctor's fix said `memory sources
    remove DIR`, which answers "no source named"; both now say to edit config.toml."""
    gone = memoryd_home / "gone"
    write_config(memoryd_home, f'[watch]\nproject_roots = ["{gone}"]\n')
    assert run_cli("reload").returncode == 0
    report = json.loads(run_cli("doctor", "--json").stdout)
    [sources] = [c for c in report["checks"] if c["check"] == "sources"]
    assert sources["detail"] == f"does not exist: project {gone}"
    assert sources["fix"] == (f"create it, or stop watching it: {gone} is defined in "
                              f"{memoryd_home / 'config.toml'}; edit it there")
    removed = run_cli("sources", "remove", str(gone))
    assert removed.returncode == 2
    assert (f"project root {gone} is defined in {memoryd_home / 'config.toml'} "
            "(watch.project_roots); edit it there") in removed.stderr


def test_reload_says_what_it_does_not_apply_and_names_that_name_nothing(
        client: Client, memoryd_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    """[server] changes were applied at the next start without a word; the [embed] warning
    compared with the last configuration loaded (a second reload said nothing, the change
    still waiting for a restart); a typo in watch.disabled or context.shared_agents did
    nothing, silently."""
    write_config(memoryd_home, "[server]\nmax_connections = 50\n[embed]\nbatch_size = 16\n")
    for _ in range(2):  # still so at the second reload: the running ones are the start's
        reloaded = run_cli("reload")
        assert reloaded.returncode == 0, reloaded.stderr
        assert ("warning: the [server] settings changed; they are read at start: restart "
                "memoryd for them") in reloaded.stderr
        assert "warning: the [embed] settings changed" in reloaded.stderr
    write_config(memoryd_home, '[watch]\ndisabled = ["claude-transcript"]\n'
                 '[context]\nshared_agents = ["claude-code", "codx"]\n')
    with caplog.at_level(logging.WARNING):
        reply = client.reload()
    assert reply["warnings"] == [
        "watch.disabled: 'claude-transcript' is no built-in source, so it disables nothing "
        "(did you mean 'claude-transcripts'?)",
        "context.shared_agents: 'codx' is the agent of no source and of no entry, so it "
        "shares nothing (did you mean 'codex'?)"]
    assert f"Reload: {reply['warnings'][1]}." in caplog.messages
    write_config(memoryd_home, "")
    assert client.reload()["warnings"] == []


#: An API key in a setting, as a user pastes one into an `[extract] command`.
API_KEY = "sk-proj-CFGkey01abcdefghijklmnopqrstuvwxyz0"


@pytest.mark.parametrize("value", [
    f"\"llm-cli --api-key '{API_KEY} -m small\"",  # an unclosed quote: cannot be split
    f'["llm-cli", "--api-key", "{API_KEY}"]',  # a list: must be a string
])
def test_a_config_error_shows_no_secret_of_the_value_it_names(
        client: Client, memoryd_home: Path, caplog: pytest.LogCaptureFixture,
        value: str) -> None:
    """The error echoed the value whole, API key included: in the reload's error, the log
    ("Reload refused…"), `memory status`'s first line and `memory doctor` (which the docs
    say to paste into bug reports). The value is shown redacted, the error still says what
    is wrong with it."""
    write_config(memoryd_home, f"[extract]\ncommand = {value}\n")
    with caplog.at_level(logging.ERROR):
        refused = run_cli("reload")
    assert refused.returncode == 2
    shown = [refused.stderr, *caplog.messages, run_cli("status").stdout.splitlines()[0],
             run_cli("doctor").stdout, run_cli("doctor", "--json").stdout]
    for text in shown:
        assert API_KEY not in text, text
    assert "extract.command" in refused.stderr
    assert ("cannot be split" in refused.stderr or "must be a string" in refused.stderr), \
        refused.stderr
    assert "[REDACTED:openai-api-key]" in refused.stderr
    assert any("Reload refused" in m and "[REDACTED:openai-api-key]" in m
               for m in caplog.messages)
    assert "[REDACTED:openai-api-key]" in shown[2]  # status: the config's error, first


def test_a_config_error_of_an_environment_variable_shows_no_secret(monkeypatch) -> None:
    """The variable's value is echoed as the error's origin (``MEMORYD_X='…'``)."""
    monkeypatch.setenv("MEMORYD_EXTRACT_COMMAND", f"llm-cli --api-key '{API_KEY}")
    with pytest.raises(ConfigError) as refused:
        load_config()
    assert API_KEY not in refused.value.message
    assert refused.value.message.startswith("MEMORYD_EXTRACT_COMMAND=")
    assert "[REDACTED:openai-api-key]" in refused.value.message
