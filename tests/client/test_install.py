"""`memory hook install|uninstall`: the user's settings file is rewritten the way an editor would
(through links, atomically, with its mode and layout, with backups), on real files in a temp HOME."""

from __future__ import annotations

import json
import os
import random
import shlex
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import hook_backups, hook_tables, install

from tests.conftest import run_cli

SESSION = "5b0c9e4e-1f2a-4c55-9d55-6a3cf1f0a002"

THEIRS = {"$schema": "https://json.schemastore.org/claude-code-settings.json", "model": "opus",
          "env": {"SECRET_TOKEN": "s3cr3t"}, "permissions": {"allow": ["Bash(git status)"], "deny": []},
          "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send 'done ✓'"}]}]}}


@pytest.fixture
def claude_settings(memoryd_home: Path) -> Path:
    path = memoryd_home / "user" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    return path


def backups(memoryd_home: Path) -> list[Path]:
    return sorted((memoryd_home / hook_backups.BACKUP_DIR).rglob(f"*{hook_backups.BACKUP_INFIX}*"))


def test_install_is_idempotent_keeps_a_backup_and_uninstall_removes_only_ours(claude_settings, memoryd_home) -> None:
    claude_settings.write_text(json.dumps(THEIRS, indent=2, ensure_ascii=False) + "\n")
    pristine = claude_settings.read_bytes()
    first = run_cli("hook", "install", "claude-code")
    assert first.returncode == 0 and "installed 8" in first.stdout
    installed = json.loads(claude_settings.read_text())
    assert {k: v for k, v in installed.items() if k != "hooks"} == {k: v for k, v in THEIRS.items() if k != "hooks"}
    assert [h["command"] for g in installed["hooks"]["Stop"] for h in g["hooks"]][0] == "notify-send 'done ✓'"
    start = installed["hooks"]["SessionStart"][0]
    assert start["hooks"][0]["command"].endswith("hook claude-code SessionStart")
    [backup] = backups(memoryd_home)
    assert backup.read_bytes() == pristine and str(backup) in first.stdout
    assert not list(claude_settings.parent.glob("*memoryd*"))  # nothing left beside the file
    again = run_cli("hook", "install", "claude-code")
    assert "already installed" in again.stdout
    assert json.loads(claude_settings.read_text()) == installed
    removed = run_cli("hook", "uninstall", "claude-code")
    assert removed.returncode == 0 and "removed 8" in removed.stdout
    assert claude_settings.read_bytes() == pristine


def test_a_symlinked_settings_file_is_updated_through_the_link(claude_settings, memoryd_home) -> None:
    dotfiles = memoryd_home / "user" / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    target = dotfiles / "settings.json"
    target.write_text(json.dumps(THEIRS, indent=2) + "\n")
    pristine = target.read_bytes()
    claude_settings.symlink_to(os.path.relpath(target, claude_settings.parent))
    result = run_cli("hook", "install", "claude-code")
    assert result.returncode == 0 and f"written through the link to {target}" in result.stdout
    assert claude_settings.is_symlink() and claude_settings.resolve() == target
    assert "SessionStart" in json.loads(target.read_text())["hooks"]
    assert not list(dotfiles.glob("*memoryd*"))  # no backup or temporary file in the dotfiles repo
    assert run_cli("hook", "uninstall", "claude-code").returncode == 0
    assert claude_settings.is_symlink() and target.read_bytes() == pristine


def test_permission_bits_are_kept_and_backups_are_private(claude_settings, memoryd_home) -> None:
    claude_settings.write_text(json.dumps(THEIRS, indent=2) + "\n")
    claude_settings.chmod(0o600)
    assert run_cli("hook", "install", "claude-code").returncode == 0
    assert stat.S_IMODE(claude_settings.stat().st_mode) == 0o600
    assert run_cli("hook", "uninstall", "claude-code").returncode == 0
    assert stat.S_IMODE(claude_settings.stat().st_mode) == 0o600
    assert backups(memoryd_home) and all(stat.S_IMODE(b.stat().st_mode) == 0o600 for b in backups(memoryd_home))
    claude_settings.chmod(0o640)  # whatever the bits, they stay
    assert run_cli("hook", "install", "claude-code").returncode == 0
    assert stat.S_IMODE(claude_settings.stat().st_mode) == 0o640


@pytest.mark.parametrize("render", [
    lambda data: json.dumps(data, indent=4, ensure_ascii=False) + "\n",
    lambda data: json.dumps(data, indent=2, ensure_ascii=False) + "\n",
    lambda data: json.dumps(data, indent="\t", ensure_ascii=False) + "\n",
    lambda data: json.dumps(data, indent=4, ensure_ascii=False),  # no final newline
    lambda data: json.dumps(data, indent=2, ensure_ascii=False).replace("\n", "\r\n") + "\r\n",
    lambda data: json.dumps(data, ensure_ascii=False),  # one line
    lambda data: json.dumps(data, indent=2),  # \u escapes
], ids=["4-spaces", "2-spaces", "tabs", "no-final-newline", "crlf", "one-line", "ascii-escapes"])
def test_the_layout_is_kept_byte_for_byte(claude_settings, render) -> None:
    pristine = render(THEIRS)
    claude_settings.write_bytes(pristine.encode())
    assert run_cli("hook", "install", "claude-code").returncode == 0
    installed = claude_settings.read_bytes().decode()
    data = json.loads(installed)
    assert "SessionStart" in data["hooks"]
    assert installed == render(data)  # the installed file is in the user's layout too
    assert run_cli("hook", "uninstall", "claude-code").returncode == 0
    assert claude_settings.read_bytes() == pristine.encode()


def test_installs_and_uninstalls_within_one_second_keep_the_pristine_backup(claude_settings, memoryd_home) -> None:
    claude_settings.write_text(json.dumps(THEIRS, indent=4) + "\n")
    pristine = claude_settings.read_bytes()
    for _ in range(3):  # in-process: all within a few milliseconds
        install.install("claude-code")
        install.uninstall("claude-code")
    assert claude_settings.read_bytes() == pristine
    kept = backups(memoryd_home)
    assert len(kept) == 2  # the first and the latest; the ones between were deleted
    assert kept[0].read_bytes() == pristine  # the file before memoryd first changed it
    assert "SessionStart" in json.loads(kept[1].read_text())["hooks"]  # before the last uninstall


def test_a_backup_is_never_overwritten(claude_settings) -> None:
    real = str(claude_settings)
    same_instant = 1_795_000_000.25
    first = hook_backups.write_backup(real, "first", when=same_instant)
    second = hook_backups.write_backup(real, "second", when=same_instant)
    assert first != second and first.read_text() == "first" and second.read_text() == "second"
    assert hook_backups.backups_of(real) == [first, second]


def test_a_file_that_is_not_json_is_left_alone(claude_settings, memoryd_home) -> None:
    claude_settings.write_text('{"model": "opus",, }\n')
    result = run_cli("hook", "install", "claude-code")
    assert result.returncode == 1 and "not valid JSON" in result.stderr and "nothing was changed" in result.stderr
    assert claude_settings.read_text() == '{"model": "opus",, }\n'
    assert not backups(memoryd_home)


def test_a_settings_file_with_comments_is_left_alone_and_the_comments_named(
        memoryd_home) -> None:
    """Gemini CLI reads its settings.json with // and /* */ comments; memoryd's editor keeps
    JSON alone. Refused as before, but naming the comments (it said "not valid JSON",
    which the file is, to Gemini)."""
    settings = Path(os.environ["HOME"]) / ".gemini/settings.json"
    settings.parent.mkdir(parents=True)
    text = '{\n  // the dark one\n  "theme": "GitHub",\n  "url": "https://example.org/x"\n}\n'
    settings.write_text(text)
    result = run_cli("hook", "install", "gemini")
    assert result.returncode == 1
    assert "holds comments (// or /* */)" in result.stderr and "nothing was changed" in result.stderr
    assert settings.read_text() == text and not backups(memoryd_home)


@pytest.mark.parametrize("empty", ["", "\n", "  \r\n"])
def test_an_empty_settings_file_gets_the_hooks_and_comes_back_as_it_was(claude_settings,
                                                                         empty) -> None:
    """An empty settings.json (touched, or emptied by hand) made install crash with an
    IndexError traceback."""
    claude_settings.write_text(empty)
    result = run_cli("hook", "install", "claude-code")
    assert result.returncode == 0, result.stderr
    assert set(json.loads(claude_settings.read_text())["hooks"]) == set(hook_tables.CLAUDE_CODE_EVENTS)
    assert run_cli("hook", "uninstall", "claude-code").returncode == 0
    assert claude_settings.read_bytes() == empty.encode()


def test_other_commands_with_unbalanced_quotes_are_not_a_problem(claude_settings) -> None:
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo 'unbalanced"}]}]}}
    claude_settings.write_text(json.dumps(theirs, indent=2) + "\n")
    assert run_cli("hook", "install", "claude-code").returncode == 0
    assert run_cli("hook", "uninstall", "claude-code").returncode == 0
    assert json.loads(claude_settings.read_text()) == theirs


def test_codex_install_writes_hooks_json_and_uninstall_removes_the_file_it_created(memoryd_home, tmp_path) -> None:
    result = run_cli("hook", "install", "codex", "--project", str(tmp_path))
    assert result.returncode == 0
    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "PostCompact",
                          "Stop", "SessionEnd"}
    removed = run_cli("hook", "uninstall", "codex", "--project", str(tmp_path))
    assert removed.returncode == 0 and "and the file" in removed.stdout
    assert not (tmp_path / ".codex").exists()  # neither the file nor the directory install made
    assert not backups(memoryd_home)
    assert not list((memoryd_home / "hook-backups").rglob("*"))  # no empty folders either (L11)


def test_codex_uninstall_leaves_what_the_user_added(memoryd_home) -> None:
    assert run_cli("hook", "install", "codex").returncode == 0
    path = memoryd_home / "user" / ".codex" / "hooks.json"
    data = json.loads(path.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "say done"}]})
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert run_cli("hook", "uninstall", "codex").returncode == 0
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


def test_project_install_writes_the_personal_settings_local_json(memoryd_home, tmp_path) -> None:
    project = tmp_path / "shop"
    (project / ".claude").mkdir(parents=True)
    committed = project / ".claude" / "settings.json"
    committed.write_text('{\n  "model": "sonnet"\n}\n')
    result = run_cli("hook", "install", "claude-code", "--project", str(project))
    assert result.returncode == 0, result.stderr
    local = project / ".claude" / "settings.local.json"
    assert "SessionStart" in json.loads(local.read_text())["hooks"]
    assert committed.read_text() == '{\n  "model": "sonnet"\n}\n'  # the committable file is untouched
    assert sorted(p.name for p in project.rglob("*")) == [".claude", "settings.json", "settings.local.json"]
    assert run_cli("hook", "uninstall", "claude-code", "--project", str(project)).returncode == 0
    assert not local.exists() and committed.exists()


def test_a_project_that_does_not_exist_is_refused_and_nothing_is_created(memoryd_home, tmp_path) -> None:
    before = sorted(memoryd_home.rglob("*"))
    for harness in ("claude-code", "codex"):
        for action in ("install", "uninstall"):
            result = run_cli("hook", action, harness, "--project", str(tmp_path / "typo"))
            assert result.returncode == 2
            assert "no such directory" in result.stderr and str(tmp_path / "typo") in result.stderr
            assert result.stdout == ""
    assert not (tmp_path / "typo").exists()
    assert sorted(memoryd_home.rglob("*")) == before


def test_project_uninstall_also_cleans_hooks_an_older_memoryd_put_in_settings_json(tmp_path) -> None:
    project = tmp_path / "shop"
    (project / ".claude").mkdir(parents=True)
    legacy = project / ".claude" / "settings.json"
    command = install.memory_command()
    legacy.write_text(json.dumps({"model": "sonnet", "hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": " ".join([*command, "hook", "claude-code", "Stop"])}]}]}}, indent=2) + "\n")
    result = run_cli("hook", "install", "claude-code", "--project", str(project))
    assert "older memoryd" in result.stdout and str(legacy) in result.stdout
    removed = run_cli("hook", "uninstall", "claude-code", "--project", str(project))
    assert "removed 8" in removed.stdout and "removed 1" in removed.stdout
    assert json.loads(legacy.read_text()) == {"model": "sonnet"}


def test_agent_config_dirs_are_followed(memoryd_home, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert run_cli("hook", "install", "claude-code").returncode == 0
    assert run_cli("hook", "install", "codex").returncode == 0
    assert (tmp_path / "claude" / "settings.json").exists() and (tmp_path / "codex" / "hooks.json").exists()
    assert not (memoryd_home / "user" / ".claude").exists() and not (memoryd_home / "user" / ".codex").exists()


def test_session_start_matcher_includes_fork(claude_settings) -> None:
    assert run_cli("hook", "install", "claude-code").returncode == 0
    [group] = json.loads(claude_settings.read_text())["hooks"]["SessionStart"]
    assert group["matcher"].split("|") == ["startup", "resume", "clear", "compact", "fork"]


def test_codex_session_start_comes_after_a_compaction_too_and_old_installs_are_upgraded(
        memoryd_home) -> None:
    """Codex starts a session again with source ``compact`` after it compacts the context
    (codex-rs/hooks/src/events/session_start.rs): a matcher without it lost the block for the
    rest of the session. An install an older memoryd made, with ``startup|resume|clear``, gets
    the new matcher from install run again (and its user's hooks stay); uninstall removes it
    either way."""
    assert run_cli("hook", "install", "codex").returncode == 0
    path = memoryd_home / "user" / ".codex" / "hooks.json"
    [group] = json.loads(path.read_text())["hooks"]["SessionStart"]
    assert group["matcher"].split("|") == ["startup", "resume", "clear", "compact"]

    data = json.loads(path.read_text())  # as an older memoryd wrote it, beside the user's
    data["hooks"]["SessionStart"][0]["matcher"] = "startup|resume|clear"
    data["hooks"]["SessionStart"].insert(0, {"matcher": "startup", "hooks": [
        {"type": "command", "command": "say hello"}]})
    path.write_text(json.dumps(data, indent=2) + "\n")
    again = run_cli("hook", "install", "codex")
    assert again.returncode == 0 and "replacing 7 earlier ones" in again.stdout, again.stdout
    groups = json.loads(path.read_text())["hooks"]["SessionStart"]
    assert [g["matcher"] for g in groups] == ["startup", "startup|resume|clear|compact"]
    assert "already installed" in run_cli("hook", "install", "codex").stdout

    data = json.loads(path.read_text())
    data["hooks"]["SessionStart"][1]["matcher"] = "startup|resume|clear"
    path.write_text(json.dumps(data, indent=2) + "\n")
    removed = run_cli("hook", "uninstall", "codex")
    assert removed.returncode == 0 and "removed 7 memoryd hooks" in removed.stdout
    assert json.loads(path.read_text()) == {"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [
        {"type": "command", "command": "say hello"}]}]}}


def test_codex_install_says_what_to_do_next(memoryd_home) -> None:
    result = run_cli("hook", "install", "codex")
    assert "/hooks" in result.stdout and "trust" in result.stdout
    assert "codex_hooks = true" in result.stdout and "[features]" in result.stdout
    assert str(memoryd_home / "user" / ".codex" / "config.toml") in result.stdout


def test_memoryd_home_is_carried_and_the_hook_reaches_that_daemon(daemon, client, claude_settings, memoryd_home) -> None:
    client.remember("claude-code", "git", "Never force-push to main", kind="lesson", polarity="negative")
    result = run_cli("hook", "install", "claude-code")
    assert f"MEMORYD_HOME={memoryd_home}" in result.stdout
    handlers = {event: groups[0]["hooks"][0] for event, groups in json.loads(claude_settings.read_text())["hooks"].items()}
    command = handlers["SessionStart"]["command"]
    words = shlex.split(command)
    assert os.path.isabs(words[0]) and os.path.basename(words[0]) == "env"
    assert words[1] == f"MEMORYD_HOME={memoryd_home}"
    assert all(install.is_ours(h, "claude-code") for h in handlers.values())
    # as the agent runs it: through a shell, with its own environment, which knows nothing of MEMORYD_HOME
    agent_env = {"PATH": "/usr/bin:/bin", "HOME": str(memoryd_home / "user")}
    payload = {"session_id": SESSION, "transcript_path": None, "cwd": str(memoryd_home),
               "hook_event_name": "SessionStart", "source": "fork"}
    ran = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                         timeout=30, env=agent_env)
    assert ran.returncode == 0 and "spooled" not in ran.stderr, ran.stderr
    assert "Never force-push to main" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert client.session(SESSION)["session"]["harness"] == "claude-code"
    assert "removed 8" in run_cli("hook", "uninstall", "claude-code").stdout


def test_memoryd_socket_is_carried_too_and_nothing_when_unset(claude_settings, memoryd_home, monkeypatch) -> None:
    monkeypatch.setenv("MEMORYD_SOCKET", str(memoryd_home / "other.sock"))
    assert run_cli("hook", "install", "claude-code").returncode == 0
    command = json.loads(claude_settings.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert f"MEMORYD_SOCKET={memoryd_home / 'other.sock'}" in shlex.split(command)
    monkeypatch.delenv("MEMORYD_SOCKET")
    monkeypatch.delenv("MEMORYD_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(memoryd_home / "data"))  # the state dir without MEMORYD_HOME
    reinstalled = run_cli("hook", "install", "claude-code")
    assert "replacing 8 earlier ones" in reinstalled.stdout
    command = json.loads(claude_settings.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert os.path.basename(shlex.split(command)[0]) == "memory" and "=" not in command
    assert "removed 8" in run_cli("hook", "uninstall", "claude-code").stdout


@pytest.mark.parametrize("command, ours", [
    ("/home/ana/.venv/bin/memory hook claude-code Stop", True),
    ("/usr/bin/env MEMORYD_HOME=/srv/md '/opt/my tools/memory' hook claude-code SessionStart", True),
    ("env MEMORYD_HOME=/a MEMORYD_SOCKET=/a/s.sock memory hook claude-code Stop", True),
    ("/usr/bin/python3 -m memoryd_client hook claude-code Stop", True),
    ("/home/ana/.venv/bin/memory hook codex Stop", False),  # the other agent's
    ("notify-send 'memory hook claude-code Stop'", False),
    ("/usr/bin/env FOO=1 notify-send hook claude-code Stop", False),
    ("echo 'unbalanced", False),
])
def test_is_ours(command, ours) -> None:
    assert install.is_ours({"type": "command", "command": command}, "claude-code") is ours


def test_a_file_changed_while_editing_is_not_overwritten(claude_settings, memoryd_home) -> None:
    claude_settings.write_text('{\n  "model": "opus"\n}\n')
    settings = install.SettingsFile.read(claude_settings)
    claude_settings.write_text('{\n  "model": "sonnet"\n}\n')  # Claude Code saved a setting meanwhile
    with pytest.raises(ValueError, match="changed while memoryd was editing it"):
        settings.write('{\n  "model": "opus",\n  "hooks": {}\n}\n')
    assert claude_settings.read_text() == '{\n  "model": "sonnet"\n}\n'


def test_install_registers_the_events_the_hooks_handle() -> None:
    from memoryd_client.hooks import HARNESS_EVENTS, HARNESSES

    assert tuple(hook_tables.CLAUDE_CODE_EVENTS) == HARNESS_EVENTS["claude-code"]
    assert tuple(hook_tables.CODEX_EVENTS) == HARNESS_EVENTS["codex"]
    assert tuple(hook_tables.GEMINI_EVENTS) == HARNESS_EVENTS["gemini"]
    assert tuple(hook_tables.CURSOR_EVENTS) == HARNESS_EVENTS["cursor"]
    # OpenCode has no settings file of hooks: memoryd's plugin
    # (tests/client/test_opencode_plugin.py); nor has Cline: a file per event
    # (tests/client/test_harness_hooks.py)
    assert set(install.HARNESS_EVENTS) == set(HARNESSES) - {"opencode", "cline"}


N8_SETTINGS = """{
    "permissions": {
        "allow": ["Bash(git status)"],
        "deny": []
    },
    "hooks": {
        "Stop": [
            {
                "hooks": [{"type": "command", "command": "echo wrote"}]
            }
        ]
    }
}
"""


def test_inline_arrays_and_objects_come_back_byte_for_byte(claude_settings) -> None:
    """N8 (2026-11-28): a hand-written file's inline arrays were spread over several lines, so
    a dotfiles repository showed a diff after install and uninstall."""
    claude_settings.write_text(N8_SETTINGS)
    assert run_cli("hook", "install", "claude-code").returncode == 0
    installed = claude_settings.read_text()
    assert '"allow": ["Bash(git status)"],' in installed  # untouched while installed, too
    assert '"hooks": [{"type": "command", "command": "echo wrote"}]' in installed
    assert json.loads(installed)["hooks"]["Stop"][0]["hooks"][0]["command"] == "echo wrote"
    assert run_cli("hook", "uninstall", "claude-code").returncode == 0
    assert claude_settings.read_text() == N8_SETTINGS
    tabbed = '{\n\t"permissions": {"allow": []},\n\t"model": "opus"\n}\n'
    claude_settings.write_text(tabbed)
    install.install("claude-code")
    install.uninstall("claude-code")
    assert claude_settings.read_text() == tabbed


def other_settings(rng: random.Random, words: list[str],
                   scalar: Callable[[], Any]) -> dict[str, Any]:
    """Some of the settings other than hooks, with values of any type."""
    data: dict[str, Any] = {}
    for key in rng.sample(["$schema", "model", "env", "permissions", "statusLine",
                           "cleanupPeriodDays", "includeCoAuthoredBy"], rng.randint(0, 5)):
        if key == "env":
            data[key] = {rng.choice(words[:6]) or "X": scalar() for _ in range(rng.randint(0, 3))}
        elif key == "permissions":
            data[key] = {"allow": [rng.choice(words) for _ in range(rng.randint(0, 3))],
                         "deny": [rng.choice(words) for _ in range(rng.randint(0, 2))]}
        else:
            data[key] = scalar()
    return data


def hand_written(rng: random.Random, harness: str) -> str:
    """A settings file as people write them: any indentation, inline or spread containers,
    CRLF, unicode and escapes, empty lists and objects, other tools' hooks."""
    unit = rng.choice(["  ", "    ", "\t", " ", "   "])
    newline = rng.choice(["\n", "\n", "\r\n"])
    key_sep = rng.choice([": ", ":", " : "])
    item_sep = rng.choice([", ", ","])
    pad = rng.choice(["", " "])
    words = ["opus", "sonnet", "ü", "日本語", "emoji 🎉", 'say "hi"', "tab\there",
             "back\\slash",
             "/usr/bin/notify-send", "Bash(git status)", "Read(./.env)", ""]

    def text(value: str) -> str:
        return json.dumps(value, ensure_ascii=rng.random() < 0.3)

    def scalar() -> Any:
        return rng.choice([rng.choice(words), rng.randint(-5, 10**6), rng.random() * 100, True,
                           False, None])

    def group() -> dict[str, Any]:
        if harness == "cursor":  # Cursor's lists hold handlers, not groups
            return {"command": rng.choice(words[4:9]),
                    **({"timeout": rng.randint(1, 60)} if rng.random() < 0.3 else {})}
        handlers = [{"type": "command", "command": rng.choice(words[4:9]) + f" {i}",
                     **({"timeout": rng.randint(1, 60)} if rng.random() < 0.5 else {})}
                    for i in range(rng.randint(1, 3))]
        return {"matcher": rng.choice(["Bash", "startup", "*", ""]), "hooks": handlers} \
            if rng.random() < 0.5 else {"hooks": handlers}

    events = [*install.HARNESS_EVENTS[harness], "PreToolUse", "Notification"]
    data: dict[str, Any] = {}
    if harness == "cursor" and rng.random() < 0.8:
        data["version"] = 1
    data.update(other_settings(rng, words, scalar))
    shape = rng.random()
    if shape < 0.15:
        data["hooks"] = {}
    elif shape < 0.8:
        data["hooks"] = {event: [group() for _ in range(rng.randint(0, 2))]
                         for event in rng.sample(events, rng.randint(1, 4))}
        if harness == "gemini" and rng.random() < 0.5:  # Gemini's own switches live in there
            data["hooks"]["enabled"] = True
            data["hooks"]["disabled"] = [rng.choice(words) for _ in range(rng.randint(0, 2))]
    keys = list(data)
    rng.shuffle(keys)
    data = {k: data[k] for k in keys}

    def render(value: Any, depth: int, inline: bool) -> str:
        if not isinstance(value, (dict, list)):
            return text(value) if isinstance(value, str) else json.dumps(value)
        opening, closing = "{}" if isinstance(value, dict) else "[]"
        parts = [text(k) + key_sep + render(v, depth + 1, inline or rng.random() < 0.4)
                 for k, v in value.items()] if isinstance(value, dict) else \
            [render(v, depth + 1, inline or rng.random() < 0.4) for v in value]
        if not parts:
            return rng.choice([opening + closing, opening + " " + closing,
                               opening + newline + unit * depth + closing])
        if inline:
            return opening + pad + item_sep.join(parts) + pad + closing
        inner = unit * (depth + 1) + ("" if rng.random() < 0.9 else " ")  # a stray space
        return (opening + newline + ("," + newline).join(inner + p for p in parts) + newline
                + unit * depth + closing)

    body = render(data, 0, rng.random() < 0.1)
    end = rng.choice(["", newline, newline, newline * 2])
    return rng.choice(["", "", " ", newline]) + body + end


@pytest.mark.parametrize("harness", ["claude-code", "codex", "gemini", "cursor"])
def test_install_and_uninstall_give_back_the_same_bytes_of_any_hand_written_file(
        memoryd_home, harness) -> None:
    """N8, as a property: for varied hand-written files, install leaves every byte of the
    user's alone and adds memoryd's handlers where the agent reads them, and uninstall gives
    back the file byte for byte."""
    path = install.settings_path(harness, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = {event: install.hook_command(harness, event) for event in install.HARNESS_EVENTS[harness]}
    for seed in range(100):
        rng = random.Random(seed)
        original = hand_written(rng, harness)
        path.write_bytes(original.encode())
        before = json.loads(original)
        install.install(harness)
        installed = path.read_bytes().decode()
        after = json.loads(installed)
        context = f"seed {seed}:\n{original}\n--- installed:\n{installed}"
        new = {"version"} if harness == "cursor" and "hooks" not in before \
            and "version" not in before else set()
        assert {k: v for k, v in after.items() if k != "hooks" and k not in new} == \
            {k: v for k, v in before.items() if k != "hooks"}, context
        if harness == "cursor":  # a file without hooks gets Cursor's version too
            assert after.get("version") == 1 or "version" not in new, context
        for event, command in mine.items():
            theirs = (before.get("hooks") or {}).get(event, [])
            assert after["hooks"][event][:len(theirs)] == theirs, context
            [added] = after["hooks"][event][len(theirs):]
            handlers = [added] if harness == "cursor" else added["hooks"]
            assert [h["command"] for h in handlers] == [command], context
        others = {e: g for e, g in (before.get("hooks") or {}).items() if e not in mine}
        assert {e: after["hooks"][e] for e in others} == others, context
        assert "already installed" in install.install(harness)
        assert path.read_bytes().decode() == installed, context
        install.uninstall(harness)
        assert path.read_bytes().decode() == original, context


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          timeout=30, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull,
                                           "GIT_CONFIG_SYSTEM": os.devnull}).stdout


@pytest.mark.parametrize("harness, written", [("claude-code", ".claude/settings.local.json"),
                                              ("codex", ".codex/hooks.json")])
def test_a_projects_hook_file_stays_out_of_git_status(tmp_path, harness, written) -> None:
    """L-k (2026-11-28): `hook install --project .` left `?? .claude/` in git status, a file
    with absolute paths into this user's venv that nobody else can use."""
    repo = tmp_path / "shop"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    exclude = repo / ".git" / "info" / "exclude"
    pristine = exclude.read_bytes()
    assert git("status", "--porcelain", cwd=repo) == ""
    result = run_cli("hook", "install", harness, "--project", ".", cwd=str(repo / ""))
    assert result.returncode == 0, result.stderr
    assert (repo / written).exists() and git("status", "--porcelain", cwd=repo) == ""
    assert f"/{written}" in exclude.read_text().splitlines()
    assert f"kept out of git status: /{written}" in result.stdout
    assert "already installed" in run_cli("hook", "install", harness, "--project", str(repo)).stdout
    assert exclude.read_text().count(f"/{written}") == 1
    removed = run_cli("hook", "uninstall", harness, "--project", str(repo))
    assert removed.returncode == 0 and "taken out of" in removed.stdout
    assert not (repo / written).exists() and exclude.read_bytes() == pristine


def test_a_line_the_user_wrote_in_the_exclude_file_is_theirs(tmp_path) -> None:
    repo = tmp_path / "shop"
    (repo / "web").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("# mine\n/web/.claude/settings.local.json\n")
    assert run_cli("hook", "install", "claude-code", "--project", str(repo / "web")).returncode == 0
    assert git("status", "--porcelain", cwd=repo) == ""
    assert exclude.read_text() == "# mine\n/web/.claude/settings.local.json\n"
    assert run_cli("hook", "uninstall", "claude-code", "--project",
                   str(repo / "web")).returncode == 0
    assert exclude.read_text() == "# mine\n/web/.claude/settings.local.json\n"


@pytest.mark.parametrize("harness, written", [("gemini", ".gemini/settings.json"),
                                              ("cursor", ".cursor/hooks.json"),
                                              ("opencode", ".opencode/plugins/memoryd.js"),
                                              ("cline", ".clinerules/hooks/TaskStart")])
def test_a_projects_file_git_tracks_is_refused_and_left_as_it_was(memoryd_home, tmp_path,
                                                                   harness, written) -> None:
    """The tester's team repository with a committed `.gemini/settings.json`: `hook install
    gemini --project .` wrote this user's paths and MEMORYD_HOME into it, said "kept out of
    git status: … added to .git/info/exclude", and `git status` showed it modified (an
    exclude does not hide a tracked file), ready for `git commit -a`. It is refused (exit 1),
    nothing written; the message says why and to install for the user."""
    repo = tmp_path / "team"
    (repo / written).parent.mkdir(parents=True)
    git("init", "-q", cwd=repo)
    (repo / written).write_text({  # OpenCode's and Cline's: memoryd's own files, committed
        "opencode": "// memoryd-opencode-plugin: an older one\n",
        "cline": "#!/bin/sh\n# memoryd-cline-hook: an older one\n"}.get(
        harness, '{\n  "general": { "vimMode": true }\n}\n'))
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "team", cwd=repo)
    exclude = repo / ".git" / "info" / "exclude"
    pristine = exclude.read_bytes()
    committed = (repo / written).read_bytes()
    result = run_cli("hook", "install", harness, "--project", ".", cwd=str(repo))
    assert result.returncode == 1, result.stdout
    assert result.stdout == ""
    assert f"{repo / written}: tracked by git" in result.stderr
    assert "nothing was changed" in result.stderr
    assert f"Install for the user instead: memory hook install {harness}" in result.stderr
    assert "kept out of git status" not in result.stderr + result.stdout
    assert (repo / written).read_bytes() == committed
    assert git("status", "--porcelain", cwd=repo) == "" and exclude.read_bytes() == pristine
    assert not (memoryd_home / hook_backups.BACKUP_DIR).exists()


@pytest.mark.parametrize("agent, says", [
    ("aider", ["Aider has no hooks", ".aider.chat.history.md", "CONVENTIONS.md"]),
    ("windsurf", ["no hooks for Windsurf", "global_rules.md", "memory mcp --agent windsurf"]),
    ("roo", ["Roo Code has no hooks", ".roorules", "memory mcp --agent roo", ".roo/mcp.json"]),
    ("kilo", ["Kilo Code has no hooks", "memory mcp --agent kilo"]),
    ("pi", ["pi has extensions, not hooks", "~/.pi/agent/AGENTS.md"])])
def test_an_agent_without_hooks_is_told_what_memoryd_does_for_it(memoryd_home, agent,
                                                                  says) -> None:
    """`memory hook install aider` said only argparse's "invalid choice: 'aider'", as for a
    typo, about an agent memoryd reads the files of. It says the agent has no hooks and what
    memoryd does for it instead (its files; MCP where the agent takes it), still a usage
    error, nothing written; an unknown name keeps argparse's plain error."""
    home = memoryd_home / "user"
    before = sorted(home.rglob("*"))
    for action in ("install", "uninstall"):
        result = run_cli("hook", action, agent)
        assert result.returncode == 2 and result.stdout == "", result
        assert "invalid choice" not in result.stderr
        for words in says:
            assert words in result.stderr, (words, result.stderr)
    assert sorted(home.rglob("*")) == before
    unknown = run_cli("hook", "install", "aidr")
    assert unknown.returncode == 2 and "invalid choice: 'aidr'" in unknown.stderr


def test_the_backups_of_a_file_memoryd_created_claim_no_version_from_before_it(
        memoryd_home, claude_settings) -> None:
    """After a Copilot CLI uninstall of the hooks file memoryd had created (and the user had
    added a handler to), the backup line said "(the file before memoryd first changed it)":
    there was no such file. It says there is none; a user's own file still has that line."""
    path = memoryd_home / "user" / ".copilot" / "hooks" / "memoryd.json"
    assert "(new file)" in run_cli("hook", "install", "copilot").stdout
    data = json.loads(path.read_text())
    data["hooks"]["sessionStart"].append({"type": "command", "bash": "echo mine"})
    path.write_text(json.dumps(data, indent=2) + "\n")
    removed = run_cli("hook", "uninstall", "copilot")
    assert removed.returncode == 0 and "removed 5 memoryd hooks" in removed.stdout
    assert "before memoryd first changed it" not in removed.stdout
    assert "(the file before this change; none is from before memoryd: it created the file)" in \
        removed.stdout
    assert json.loads(path.read_text())["hooks"] == {
        "sessionStart": [{"type": "command", "bash": "echo mine"}]}

    claude_settings.write_text(json.dumps(THEIRS, indent=2) + "\n")  # the user's own file
    assert "(the file before memoryd first changed it)" in \
        run_cli("hook", "install", "claude-code").stdout
    assert "(the file before memoryd first changed it, and the latest)" in \
        run_cli("hook", "uninstall", "claude-code").stdout
