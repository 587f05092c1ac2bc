"""`memory hook install|uninstall`: the user's settings file is rewritten the way an editor would
(through links, atomically, with its mode and layout, with backups), on real files in a temp HOME."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
from memoryd_client import install

from conftest import run_cli

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
    return sorted((memoryd_home / install.BACKUP_DIR).rglob(f"*{install.BACKUP_INFIX}*"))


def test_install_is_idempotent_keeps_a_backup_and_uninstall_removes_only_ours(claude_settings, memoryd_home) -> None:
    claude_settings.write_text(json.dumps(THEIRS, indent=2, ensure_ascii=False) + "\n")
    pristine = claude_settings.read_bytes()
    first = run_cli("hook", "install", "claude-code")
    assert first.returncode == 0 and "installed 7" in first.stdout
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
    assert removed.returncode == 0 and "removed 7" in removed.stdout
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
    first = install.write_backup(real, "first", when=same_instant)
    second = install.write_backup(real, "second", when=same_instant)
    assert first != second and first.read_text() == "first" and second.read_text() == "second"
    assert install.backups_of(real) == [first, second]


def test_a_file_that_is_not_json_is_left_alone(claude_settings, memoryd_home) -> None:
    claude_settings.write_text('{"model": "opus",, }\n')
    result = run_cli("hook", "install", "claude-code")
    assert result.returncode == 1 and "not valid JSON" in result.stderr and "nothing was changed" in result.stderr
    assert claude_settings.read_text() == '{"model": "opus",, }\n'
    assert not backups(memoryd_home)


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
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreCompact", "PostCompact", "Stop", "SessionEnd"}
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
    assert "removed 7" in removed.stdout and "removed 1" in removed.stdout
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
    assert "removed 7" in run_cli("hook", "uninstall", "claude-code").stdout


def test_memoryd_socket_is_carried_too_and_nothing_when_unset(claude_settings, memoryd_home, monkeypatch) -> None:
    monkeypatch.setenv("MEMORYD_SOCKET", str(memoryd_home / "other.sock"))
    assert run_cli("hook", "install", "claude-code").returncode == 0
    command = json.loads(claude_settings.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert f"MEMORYD_SOCKET={memoryd_home / 'other.sock'}" in shlex.split(command)
    monkeypatch.delenv("MEMORYD_SOCKET")
    monkeypatch.delenv("MEMORYD_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(memoryd_home / "data"))  # the state dir without MEMORYD_HOME
    reinstalled = run_cli("hook", "install", "claude-code")
    assert "replacing 7 earlier ones" in reinstalled.stdout
    command = json.loads(claude_settings.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert os.path.basename(shlex.split(command)[0]) == "memory" and "=" not in command
    assert "removed 7" in run_cli("hook", "uninstall", "claude-code").stdout


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
    settings.data["hooks"] = {}
    claude_settings.write_text('{\n  "model": "sonnet"\n}\n')  # Claude Code saved a setting meanwhile
    with pytest.raises(ValueError, match="changed while memoryd was editing it"):
        settings.write()
    assert claude_settings.read_text() == '{\n  "model": "sonnet"\n}\n'


def test_install_registers_the_events_the_hooks_handle() -> None:
    from memoryd_client.hooks import HARNESS_EVENTS

    assert tuple(install.CLAUDE_CODE_EVENTS) == HARNESS_EVENTS["claude-code"]
    assert tuple(install.CODEX_EVENTS) == HARNESS_EVENTS["codex"]
