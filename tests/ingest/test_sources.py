"""Sources: glob matching, defaults, project sources, validation, scanning and watch roots.

Every test builds a fake home under tmp_path and passes it as ``home=``."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryd.agent_sources import default_sources, project_sources
from memoryd.config import load_config
from memoryd.errors import ConfigError
from memoryd.sources import (
    FORMATS,
    KINDS,
    Source,
    scan,
    validate_source,
    watch_roots,
)

HOME = Path("/home/ana")


def by_name(name: str) -> Source:
    return next(source for source in default_sources() if source.name == name)


def matches(source: Source, relative: str, home: Path = HOME) -> str | None:
    return source.match(home / relative, home)


def touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- defaults ------------------------------------------------------------------------------------


def test_default_sources_are_named_and_valid() -> None:
    sources = default_sources()
    names = [source.name for source in sources]
    assert len(names) == len(set(names))
    assert {"mastersof-ai", "claude-user-memory", "claude-auto-memory", "claude-agent-memory",
            "claude-transcripts", "codex-transcripts"} <= set(names)
    for source in sources:
        assert source.kind in KINDS and source.format in FORMATS
        assert source.path.startswith("~/")
    assert by_name("claude-transcripts").format == "claude-code"
    assert {s.format for s in sources if s.name.startswith("codex") and s.kind == "transcript"} \
        == {"codex"}


@pytest.mark.parametrize("relative, agent", [
    (".mastersof-ai/agents/scout/memory/CONTEXT.md", "scout"),
    (".mastersof-ai/agents/scout/memory/u-42/notes.md", "scout"),
    (".mastersof-ai/agents/my_agent.v2/memory/a/b/c.md", "my_agent.v2"),
    (".mastersof-ai/agents/scout/memory/.hidden.md", "scout"),
    (".mastersof-ai/agents/scout/IDENTITY.md", None),
    (".mastersof-ai/agents/scout/memory/CONTEXT.txt", None),
    (".mastersof-ai/agents/scout/workspace/memory/x.md", None),
    (".mastersof-ai/agents/memory/x.md", None),
    (".mastersof-ai/agents/bad name/memory/x.md", None),
    (".mastersof-ai/agents/scout/memory/.git/x.md", None),
])
def test_mastersof_ai(relative: str, agent: str | None) -> None:
    assert matches(by_name("mastersof-ai"), relative) == agent


@pytest.mark.parametrize("relative, agent", [
    (".claude/CLAUDE.md", "claude-code"),
    (".claude/CLAUDE.local.md", None),
    (".claude/rules/CLAUDE.md", None),
    ("CLAUDE.md", None),
])
def test_claude_user_memory(relative: str, agent: str | None) -> None:
    assert matches(by_name("claude-user-memory"), relative) == agent


@pytest.mark.parametrize("relative, agent", [
    (".claude/projects/-home-ana-shop/memory/MEMORY.md", "claude-code"),
    (".claude/projects/-home-ana-shop/memory/topics/billing.md", "claude-code"),
    (".claude/projects/-home-ana-shop/MEMORY.md", None),
    (".claude/projects/memory/MEMORY.md", None),
    (".claude/projects/-home-ana-shop/memory/session.jsonl", None),
    (".claude/projects/a/b/memory/MEMORY.md", None),
    (".claude/projects/-home-ana-shop/memory/.git/MEMORY.md", None),
])
def test_claude_auto_memory(relative: str, agent: str | None) -> None:
    assert matches(by_name("claude-auto-memory"), relative) == agent


@pytest.mark.parametrize("relative, agent", [
    (".claude/agent-memory/reviewer/MEMORY.md", "reviewer"),
    (".claude/agent-memory/reviewer/deep/er/notes.md", "reviewer"),
    (".claude/agent-memory/reviewer/.notes", "reviewer"),
    (".claude/agent-memory/reviewer", None),
    (".claude/agent-memory/README.md", None),
    (".claude/agent-memory/reviewer/.git/HEAD", None),
    (".claude/agent-memory/reviewer/sub/.git", None),
    (".claude/agent-memory/-bad/x.md", None),
])
def test_claude_agent_memory(relative: str, agent: str | None) -> None:
    assert matches(by_name("claude-agent-memory"), relative) == agent


@pytest.mark.parametrize("relative, agent", [
    (".claude/projects/-home-ana-shop/0b1c.jsonl", "claude-code"),
    (".claude/projects/-home-ana-shop/0b1c/subagents/agent-a1.jsonl", "claude-code"),
    (".claude/projects/-home-ana-shop/agent-a1.jsonl", "claude-code"),
    # The glob is the rule: a stray .jsonl in the auto-memory dir matches too (its parser
    # finds no turns in it); auto memory is markdown, so nothing real is lost or doubled.
    (".claude/projects/-home-ana-shop/memory/odd.jsonl", "claude-code"),
    (".claude/projects/-home-ana-shop/0b1c.json", None),
    (".claude/projects/-home-ana-shop/0b1c.jsonl.bak", None),
    (".claude/history.jsonl", None),
    (".claude/projects/-home-ana-shop/.git/x.jsonl", None),
])
def test_claude_transcripts(relative: str, agent: str | None) -> None:
    assert matches(by_name("claude-transcripts"), relative) == agent


def test_claude_transcripts_match_at_zero_depth() -> None:
    assert matches(by_name("claude-transcripts"), ".claude/projects/x.jsonl") == "claude-code"


ROLLOUT = "rollout-2026-03-02T09-14-05-019c2a7e-3b1d-7c40-9e1a-5d2f8a0b4c11"


@pytest.mark.parametrize("relative, agent", [
    (f".codex/sessions/2026/03/02/{ROLLOUT}.jsonl", "codex"),
    (f".codex/sessions/{ROLLOUT}.jsonl", "codex"),
    (f".codex/sessions/2026/03/02/{ROLLOUT}.compact-000001.jsonl", "codex"),
    (f".codex/sessions/2026/03/02/{ROLLOUT}.json", None),
    (f".codex/sessions/2026/03/02/{ROLLOUT}.segments.json", None),
    (".codex/sessions/2026/03/02/notes.jsonl", None),
    (".codex/history.jsonl", None),
    (f".codex/archived/{ROLLOUT}.jsonl", None),
    (f".codex/sessions/.git/{ROLLOUT}.jsonl", None),
])
def test_codex_transcripts(relative: str, agent: str | None) -> None:
    assert matches(by_name("codex-transcripts"), relative) == agent


def test_codex_segmented_layout_is_covered() -> None:
    codex = [s for s in default_sources() if s.name.startswith("codex")]
    for name in ("rollout.jsonl", "compact-000001.jsonl"):
        path = HOME / f".codex/sessions/2026/03/02/{ROLLOUT}/{name}"
        assert [s.match(path, HOME) for s in codex if s.match(path, HOME)] == ["codex"]
    assert not any(s.match(HOME / f".codex/sessions/2026/{ROLLOUT}/segments.json", HOME)
                   for s in codex)


def test_roots() -> None:
    roots = {source.name: source.root(HOME) for source in default_sources()}
    assert roots["mastersof-ai"] == HOME / ".mastersof-ai/agents"
    assert roots["claude-user-memory"] == HOME / ".claude"
    assert roots["claude-auto-memory"] == HOME / ".claude/projects"
    assert roots["claude-agent-memory"] == HOME / ".claude/agent-memory"
    assert roots["claude-transcripts"] == HOME / ".claude/projects"
    assert roots["codex-transcripts"] == HOME / ".codex/sessions"
    assert roots["codex-memories"] == HOME / ".codex/memories"
    assert roots["gemini-user-memory"] == HOME / ".gemini"
    assert roots["gemini-transcripts"] == HOME / ".gemini/tmp"
    assert roots["opencode-user-rules"] == HOME / ".config/opencode"


def test_the_roots_follow_the_agents_home_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/srv/claude")
    monkeypatch.setenv("CODEX_HOME", "/srv/codex")
    monkeypatch.setenv("GEMINI_CLI_HOME", "/srv/profile")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/srv/config")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "/srv/pi")
    roots = {source.name: str(source.root(HOME)) for source in default_sources()}
    assert {name: roots[name] for name in (
        "claude-user-memory", "claude-auto-memory", "claude-agent-memory", "claude-transcripts",
        "codex-transcripts", "gemini-legacy-chats", "opencode-user-rules", "pi-transcripts")} == {
        "claude-user-memory": "/srv/claude", "claude-auto-memory": "/srv/claude/projects",
        "claude-agent-memory": "/srv/claude/agent-memory",
        "claude-transcripts": "/srv/claude/projects", "codex-transcripts": "/srv/codex/sessions",
        "gemini-legacy-chats": "/srv/profile/.gemini/tmp",
        "opencode-user-rules": "/srv/config/opencode", "pi-transcripts": "/srv/pi/sessions"}
    assert roots["mastersof-ai"] == str(HOME / ".mastersof-ai/agents")  # no variable of its own


def _settings(path: Path, settings: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


def test_claude_codes_auto_memory_directory_is_a_source(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``autoMemoryDirectory`` in ~/.claude/settings.json moves Claude Code's auto memory out
    of ~/.claude/projects/: its markdown files there are Claude Code's memory."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr("memoryd.agent_settings.CLAUDE_MANAGED_SETTINGS", ())
    assert "claude-auto-memory-dir" not in {s.name for s in default_sources()}
    _settings(home / ".claude/settings.json",
                     {"model": "opus", "autoMemoryDirectory": "~/sync/claude-memory/"})
    moved = by_name("claude-auto-memory-dir")
    assert moved.path == "~/sync/claude-memory/**/*.md"
    assert (moved.kind, moved.format) == ("memory", "markdown")
    assert moved.match(home / "sync/claude-memory/MEMORY.md", home) == "claude-code"
    assert moved.match(home / "sync/claude-memory/topics/build.md", home) == "claude-code"
    assert moved.match(home / "sync/claude-memory/notes.txt", home) is None
    _settings(home / ".claude/settings.json", {"autoMemoryDirectory": "/srv//memory"})
    assert by_name("claude-auto-memory-dir").path == "/srv/memory/**/*.md"


def test_managed_settings_win_and_claude_config_dir_is_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    _settings(tmp_path / "claude/settings.json", {"autoMemoryDirectory": "/srv/mine"})
    assert by_name("claude-auto-memory-dir").path == "/srv/mine/**/*.md"
    managed = tmp_path / "managed-settings.json"
    monkeypatch.setattr("memoryd.agent_settings.CLAUDE_MANAGED_SETTINGS", (str(managed),))
    _settings(managed, {"autoMemoryDirectory": "/srv/company"})
    assert by_name("claude-auto-memory-dir").path == "/srv/company/**/*.md"
    _settings(managed, {"permissions": {}})  # not set there: the user's
    assert by_name("claude-auto-memory-dir").path == "/srv/mine/**/*.md"


@pytest.mark.parametrize("value", ["memory", "/", "//", "~", "~/", "/srv/mem*", "/srv/{agent}", 7, ""])
def test_an_auto_memory_directory_memoryd_cannot_watch_is_left_out(
        value: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Relative, the root or the home itself (every markdown file the user has), a glob: not
    watched; a value that is a string is named in the log."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr("memoryd.agent_settings.CLAUDE_MANAGED_SETTINGS", ())
    _settings(tmp_path / ".claude/settings.json", {"autoMemoryDirectory": value})
    with caplog.at_level(logging.WARNING, logger="memoryd.sources"):
        assert "claude-auto-memory-dir" not in {s.name for s in default_sources()}
    if isinstance(value, str) and value:
        assert f"autoMemoryDirectory={value!r}" in caplog.text


@pytest.mark.parametrize("settings", [
    {".claude/settings.json": {"autoMemoryDirectory": "/proc/claude"}},
    {".claude/settings.json": {"autoMemoryDirectory": "/srv/\ud800"}},
    {".gemini/settings.json": {"context": {"fileName": ["\ud800.md"]}}},
    {".gemini/settings.json": {"context": {"fileName": ["x" * 300 + ".md"]}}},
])
def test_a_setting_naming_what_memoryd_cannot_watch_stops_nothing(
        settings: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A path the kernel owns, a lone surrogate, a name too long for the file system: the
    other sources are made, the configuration loads, and the log says what was left out."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "etc/settings.json"))
    monkeypatch.setattr("memoryd.agent_settings.CLAUDE_MANAGED_SETTINGS", ())
    for relative, value in settings.items():
        _settings(tmp_path / relative, value)
    with caplog.at_level(logging.WARNING, logger="memoryd.sources"):
        names = {s.name for s in default_sources()}
        sources = project_sources(tmp_path / "shop")
    assert "claude-user-memory" in names and "gemini-user-memory" in names
    assert not {"claude-auto-memory-dir"} & names and not [n for n in names if ":" in n]
    assert len(sources) == len(project_sources(tmp_path / "elsewhere"))
    assert "memoryd cannot watch" in caplog.text or "does not watch it" in caplog.text


def test_settings_caught_half_written_keep_what_they_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """An editor truncates the file, then writes it: in between, the directory stays (else
    its entries would leave the index, to be embedded again a moment later)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr("memoryd.agent_settings.CLAUDE_MANAGED_SETTINGS", ())
    settings = tmp_path / ".claude/settings.json"
    _settings(settings, {"autoMemoryDirectory": "/srv/claude-memory"})
    assert by_name("claude-auto-memory-dir").path == "/srv/claude-memory/**/*.md"
    settings.write_text('{"autoMemoryDirectory": "/srv/cl')
    with caplog.at_level(logging.WARNING, logger="memoryd.sources"):
        assert by_name("claude-auto-memory-dir").path == "/srv/claude-memory/**/*.md"
    assert "its settings as last read are kept" in caplog.text
    settings.write_text("{}")
    assert "claude-auto-memory-dir" not in {s.name for s in default_sources()}


def _gemini_names() -> dict[str, str]:
    return {s.name: s.path for s in default_sources() if s.name.startswith("gemini-user-memory")}


def test_gemini_clis_context_file_names_are_its_memory(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``context.fileName`` renames Gemini CLI's context files; its save_memory writes to the
    first name in ~/.gemini (with ["AGENTS.md", "GEMINI.md"], ~/.gemini/AGENTS.md)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "etc/settings.json"))
    settings = tmp_path / ".gemini/settings.json"
    assert _gemini_names() == {"gemini-user-memory": "~/.gemini/GEMINI.md"}
    _settings(settings, {"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}})
    assert _gemini_names() == {"gemini-user-memory": "~/.gemini/GEMINI.md",
                                       "gemini-user-memory:AGENTS.md": "~/.gemini/AGENTS.md"}
    assert by_name("gemini-user-memory:AGENTS.md").match(tmp_path / ".gemini/AGENTS.md",
                                                         tmp_path) == "gemini"
    _settings(settings, {"contextFileName": "CONTEXT.md"})  # settings before v2
    assert set(_gemini_names()) == {"gemini-user-memory", "gemini-user-memory:CONTEXT.md"}
    _settings(tmp_path / "etc/settings.json", {"context": {"fileName": "TEAM.md"}})
    assert set(_gemini_names()) == {"gemini-user-memory", "gemini-user-memory:TEAM.md"}


@pytest.mark.parametrize("names", [["../x.md"], ["a/b.md"], ["*.md"], [""], [3], {"a": 1}])
def test_a_context_file_name_that_is_not_a_file_name_is_left_out(
        names: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "etc/settings.json"))
    _settings(tmp_path / ".gemini/settings.json",
                     {"context": {"fileName": [*names, "NOTES.md"]
                                  if isinstance(names, list) else names}})
    with caplog.at_level(logging.WARNING, logger="memoryd.sources"):
        found = set(_gemini_names())
    assert found == ({"gemini-user-memory", "gemini-user-memory:NOTES.md"}
                     if isinstance(names, list) else {"gemini-user-memory"})
    if isinstance(names, list):
        assert "context.fileName" in caplog.text


@pytest.mark.parametrize("name, relative, agent", [
    ("gemini-user-memory", ".gemini/GEMINI.md", "gemini"),
    ("gemini-transcripts", ".gemini/tmp/shop/chats/session-2026-03-02T10-00-1a2b3c4d.jsonl",
     "gemini"),
    ("gemini-transcripts", ".gemini/tmp/shop/chats/1a2b3c4d-parent/5e6f-sub.jsonl", "gemini"),
    ("gemini-transcripts", ".gemini/tmp/9f86d081884c7d65/chats/session-x.jsonl", "gemini"),
    ("gemini-legacy-chats", ".gemini/tmp/9f86d081884c7d65/chats/session-2025-11-27T19-16-c31"
                            "127d4.json", "gemini"),
    ("codex-memories", ".codex/memories/MEMORY.md", "codex"),
    ("codex-memories", ".codex/memories/rollout_summaries/2026-03-02-fix.md", "codex"),
    ("opencode-user-rules", ".config/opencode/AGENTS.md", "opencode"),
    ("pi-user-memory", ".pi/agent/AGENTS.md", "pi"),
    ("windsurf-user-rules", ".codeium/windsurf/memories/global_rules.md", "windsurf"),
    ("cline-user-rules", "Documents/Cline/Rules/style.md", "cline"),
    ("cline-user-rules-home", "Cline/Rules/style.md", "cline"),
    ("roo-user-rules", ".roo/rules-code/js-style.md", "roo"),
    ("pi-transcripts", ".pi/agent/sessions/--home-ana-src-shop--/2026-03-02T09-14-05-101Z_1a2b.jsonl",
     "pi"),
])
def test_harness_sources_match(name: str, relative: str, agent: str) -> None:
    assert by_name(name).match(HOME / relative, HOME) == agent


@pytest.mark.parametrize("name, relative", [
    ("gemini-transcripts", ".gemini/tmp/shop/chats/session-2026-03-02T10-00-1a2b3c4d.json"),
    ("gemini-transcripts", ".gemini/tmp/shop/logs.json"),
    ("gemini-legacy-chats", ".gemini/tmp/shop/logs.json"),
    ("gemini-legacy-chats", ".gemini/tmp/shop/chats/checkpoint-release.json"),
    ("gemini-legacy-chats", ".gemini/tmp/shop/chats/session-2026-03-02T10-00-1a2b3c4d.jsonl"),
    ("gemini-user-memory", ".gemini/settings.json"),
    ("codex-memories", ".codex/memories/raw_memories.jsonl"),
])
def test_harness_sources_reject(name: str, relative: str) -> None:
    assert by_name(name).match(HOME / relative, HOME) is None


def test_a_leading_tilde_is_the_home_and_an_absolute_glob_stays() -> None:
    transcripts = by_name("claude-transcripts")
    assert transcripts.match(HOME / ".claude/projects/-srv-app/1.jsonl", HOME) is not None
    assert transcripts.match(Path("/root/.claude/projects/-srv-app/1.jsonl"), HOME) is None
    absolute = Source("abs", "/srv/notes/*.md", "memory", "markdown", agent="ops")
    assert absolute.match(Path("/srv/notes/a.md"), HOME) == "ops"
    assert absolute.match(HOME / "srv/notes/a.md", HOME) is None
    assert absolute.root(HOME) == Path("/srv/notes")


def test_home_is_literal(tmp_path: Path) -> None:
    home = tmp_path / "we*rd?.home"
    source = by_name("claude-user-memory")
    assert source.match(home / ".claude/CLAUDE.md", home) == "claude-code"
    assert source.match(tmp_path / "weXrdY.home/.claude/CLAUDE.md", home) is None
    assert source.root(home) == home / ".claude"


def test_same_source_different_homes() -> None:
    source = by_name("claude-user-memory")
    assert source.match(Path("/home/a/.claude/CLAUDE.md"), Path("/home/a")) == "claude-code"
    assert source.match(Path("/home/a/.claude/CLAUDE.md"), Path("/home/b")) is None


# -- glob semantics ------------------------------------------------------------------------------


def test_agent_placeholder_in_part_of_a_segment() -> None:
    source = Source("s", "/x/agent-{agent}.log/*.jsonl", "transcript", "generic")
    assert source.match(Path("/x/agent-bob.log/1.jsonl"), HOME) == "bob"
    assert source.match(Path("/x/agent-.log/1.jsonl"), HOME) is None
    assert source.match(Path("/x/agent-bo/b.log/1.jsonl"), HOME) is None
    assert source.root(HOME) == Path("/x")


def test_question_mark_and_star_stay_in_one_segment() -> None:
    source = Source("s", "/x/?/*.md", "memory", "markdown", agent="a")
    assert source.match(Path("/x/a/b.md"), HOME) == "a"
    assert source.match(Path("/x/ab/b.md"), HOME) is None
    assert source.match(Path("/x/a/b/c.md"), HOME) is None
    assert source.match(Path("/x/a/.md"), HOME) == "a"


def test_double_star_zero_and_many() -> None:
    source = Source("s", "/x/**/y/*.md", "memory", "markdown", agent="a")
    assert source.match(Path("/x/y/a.md"), HOME) == "a"
    assert source.match(Path("/x/p/q/y/a.md"), HOME) == "a"
    assert source.match(Path("/x/a.md"), HOME) is None
    assert source.match(Path("/xy/a.md"), HOME) is None


def test_other_characters_are_literal() -> None:
    source = Source("s", "/x/[ab].md", "memory", "markdown", agent="a")
    assert source.match(Path("/x/[ab].md"), HOME) == "a"
    assert source.match(Path("/x/a.md"), HOME) is None


def test_relative_paths_never_match() -> None:
    assert by_name("claude-transcripts").match(Path(".claude/projects/x.jsonl"), HOME) is None


# -- project sources -----------------------------------------------------------------------------


@pytest.mark.parametrize("relative, agent", [
    ("CLAUDE.md", "claude-code"),
    ("CLAUDE.local.md", "claude-code"),
    (".claude/CLAUDE.md", "claude-code"),
    (".claude/rules/testing.md", "claude-code"),
    (".claude/rules/frontend/react.md", "claude-code"),
    (".claude/agent-memory/reviewer/MEMORY.md", "reviewer"),
    (".claude/agent-memory-local/reviewer/notes/api.md", "reviewer"),
    ("AGENTS.md", "codex"),
    ("AGENTS.override.md", "codex"),
    ("agents/state/memory/planner.md", "planner"),
    ("agents/state/memory/planner.v2.md", "planner.v2"),
    ("GEMINI.md", "gemini"),
    (".cursor/rules/testing.mdc", "cursor"),
    (".cursor/rules/frontend/react.mdc", "cursor"),
    (".cursorrules", "cursor"),
    (".windsurf/rules/testing.md", "windsurf"),
    (".windsurf/rules/web/react.md", "windsurf"),
    (".windsurfrules", "windsurf"),
    ("CONVENTIONS.md", "aider"),
    (".aider.chat.history.md", "aider"),
    ("memory-bank/activeContext.md", "cline"),
    ("memory-bank/notes/api.md", "cline"),
    (".clinerules", "cline"),
    (".clinerules/01-core.md", "cline"),
    (".cline/rules/testing.md", "cline"),
    (".roorules", "roo"),
    (".roorules-code", "roo"),
    (".roo/rules/01-general.md", "roo"),
    (".roo/rules-code/js-style.txt", "roo"),
    (".github/copilot-instructions.md", "copilot"),
    (".github/instructions/python.instructions.md", "copilot"),
    (".github/instructions/web/react.instructions.md", "copilot"),
])
def test_project_sources_match(relative: str, agent: str | None) -> None:
    root = Path("/home/ana/src/shop")
    found = {s.match(root / relative, HOME) for s in project_sources(root)} - {None}
    assert found == {agent}


@pytest.mark.parametrize("relative", [
    "src/CLAUDE.md", "README.md", "agents.md", ".claude/settings.json", ".claude/rules/x.txt",
    "agents/state/memory/sub/planner.md", "agents/state/memory/planner.txt",
    ".claude/rules/.git/x.md", "../CLAUDE.md", ".cursor/rules/x.md", "src/GEMINI.md",
    ".github/instructions/python.md", ".github/workflows/ci.yml", "memory-bank/x.txt",
    ".roomodes", ".roo/mcp.json", ".cline/config.json",
    ".aider.input.history", ".clinerules/hooks/TaskStart", ".clinerules/hooks/notes.md",
    ".clinerules/workflows/release.md",
])
def test_project_sources_reject(relative: str) -> None:
    root = Path("/home/ana/src/shop")
    assert all(s.match(root / relative, HOME) is None for s in project_sources(root))


def test_project_sources_names_and_tilde() -> None:
    sources = project_sources(Path("~/src/shop"))
    assert "project:~/src/shop:CLAUDE.md" in {s.name for s in sources}
    assert {(s.kind, s.format) for s in sources} == {("memory", "markdown"),
                                                     ("transcript", "aider")}
    history = next(s for s in sources if s.name.endswith(":.aider.chat.history.md"))
    assert history.kind == "transcript"
    claude = next(s for s in sources if s.name.endswith(":CLAUDE.md"))
    assert claude.match(HOME / "src/shop/CLAUDE.md", HOME) == "claude-code"
    assert claude.root(HOME) == HOME / "src/shop"


def test_a_projects_local_settings_may_move_its_auto_memory(tmp_path: Path) -> None:
    """Claude Code takes ``autoMemoryDirectory`` from a project's .claude/settings.local.json
    (the user's own), never from its shared .claude/settings.json (a cloned repository could
    send its memory anywhere)."""
    root = tmp_path / "shop"
    _settings(root / ".claude/settings.json", {"autoMemoryDirectory": "/srv/shared"})
    assert not [s for s in project_sources(root) if s.name.endswith(":autoMemoryDirectory")]
    _settings(root / ".claude/settings.local.json", {"autoMemoryDirectory": "/srv/shop"})
    moved = next(s for s in project_sources(root) if s.name.endswith(":autoMemoryDirectory"))
    assert moved.name == f"project:{root}:autoMemoryDirectory"
    assert moved.match(Path("/srv/shop/MEMORY.md"), HOME) == "claude-code"
    assert moved.match(Path("/srv/shared/MEMORY.md"), HOME) is None


def test_a_projects_gemini_context_files_by_their_configured_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace's .gemini/settings.json (or the user's) names the context files Gemini reads
    in the project; a project AGENTS.md is one file several agents read, indexed once."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "etc/settings.json"))
    root = tmp_path / "shop"
    _settings(root / ".gemini/settings.json",
                     {"context": {"fileName": ["AGENTS.md", "CONTEXT.md", "GEMINI.md"]}})
    sources = project_sources(root)
    assert len({s.name for s in sources}) == len(sources)
    owners = [s.match(root / "CONTEXT.md", HOME) for s in sources]
    assert [owner for owner in owners if owner] == ["gemini"]
    assert [s.match(root / "AGENTS.md", HOME) for s in sources].count("codex") == 1
    assert not any(s.match(root / "AGENTS.md", HOME) == "gemini" for s in sources)


def test_codexs_fallback_file_names_are_read_in_projects(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Codex reads ``project_doc_fallback_filenames`` (its config.toml) in a project directory
    without an AGENTS.md: such a file is the project's Codex instructions."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    root = tmp_path / "shop"
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex/config.toml").write_text(
        'model = "o4"\nproject_doc_fallback_filenames = ["TEAM_GUIDE.md", "CLAUDE.md", '
        '"docs/x.md"]\n')
    with caplog.at_level(logging.WARNING, logger="memoryd.sources"):
        sources = project_sources(root)
    assert "project_doc_fallback_filenames='docs/x.md'" in caplog.text
    assert len({s.name for s in sources}) == len(sources)
    assert [s.match(root / "TEAM_GUIDE.md", HOME) for s in sources if
            s.match(root / "TEAM_GUIDE.md", HOME)] == ["codex"]
    assert [s.match(root / "CLAUDE.md", HOME) for s in sources
            if s.match(root / "CLAUDE.md", HOME)] == ["claude-code"]  # Claude Code's, once


@pytest.mark.parametrize("root, message", [
    ("src/shop", "must be absolute"),
    ("/src/sh*p", "may not contain"),
    ("/src/{agent}", "may not contain"),
])
def test_project_sources_bad_root(root: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        project_sources(Path(root))


# -- validation ----------------------------------------------------------------------------------


def table(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {"name": "notes", "path": "~/notes/**/*.md", "kind": "memory",
                               "format": "markdown", "agent": "ana"}
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def test_validate_source_ok() -> None:
    assert validate_source(table()) == Source("notes", "~/notes/**/*.md", "memory", "markdown",
                                              "ana")
    source = validate_source(table(path="/logs/{agent}/*.jsonl", kind="transcript",
                                   format="generic", agent=None))
    assert source.agent is None
    assert source.match(Path("/logs/bot/1.jsonl"), HOME) == "bot"


@pytest.mark.parametrize("changes, message", [
    ({"kind": "notes"}, "source 'notes': unknown kind 'notes'"),
    ({"format": "html"}, "source 'notes': unknown format 'html'"),
    ({"format": "codex"}, "source 'notes': format 'codex' does not fit kind 'memory'"),
    ({"kind": "transcript"}, "source 'notes': format 'markdown' does not fit kind 'transcript'"),
    ({"kind": None}, "source 'notes': missing 'kind'"),
    ({"format": None}, "source 'notes': missing 'format'"),
    ({"path": None}, "source 'notes': missing 'path'"),
    ({"name": None}, "source with path '~/notes/\\*\\*/\\*.md': missing 'name'"),
    ({"name": ""}, "'name' must be a non-empty string"),
    ({"depth": 3}, "source 'notes': unknown key 'depth'"),
    ({"agent": 7}, "source 'notes': 'agent' must be a string"),
    ({"agent": None}, "source 'notes': no agent"),
    ({"path": "~/n/{agent}/*.md"}, r"source 'notes': set 'agent' or put \{agent\} in 'path', not"),
    ({"agent": "no spaces"}, "source 'notes': invalid agent name 'no spaces'"),
    ({"agent": "-x"}, "invalid agent name '-x'"),
    ({"path": "notes/*.md"}, "must be absolute"),
    ({"path": "~notes/*.md"}, "must be absolute"),
    ({"path": "~/notes/"}, r"'~/notes/' names a directory: a source's path is a glob of its "
                           r"files, such as '~/notes/\*\.md'"),
    # F-11 (2026-11-30): it said "'/' has an empty, '.' or '..' segment"
    ({"path": "/"}, r"'path' '/' names the root directory: a source's path is a glob of its "
                    r"files, such as '~/notes/\*\.md' \(\*\* for any depth\)"),
    ({"path": "~/a/../b.md"}, "'\\.\\.'"),
    ({"path": "~/a**/b.md"}, "whole segment"),
    ({"path": "~/{name}/b.md"}, "only placeholder"),
    ({"path": "~/{agent}/{agent}.md", "agent": None}, "more than once"),
    # its directories would all be watched and walked, every few minutes: the whole machine
    ({"path": "/**/*.md"}, "watch and walk the whole file system"),
    ({"path": "/*/notes/*.md"}, "watch and walk the whole file system"),
    ({"path": "/proc/**/status"}, "watch and walk /proc"),
])
def test_validate_source_errors(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_source(table(**changes))


@pytest.mark.parametrize(("path", "warned"), [
    ("~/*.md", None), ("~/notes/**/*.md", None), ("~/*/notes.md", "your home directory"),
    ("~/**/*.md", "your home directory"), ("/home/*/notes/*.md", "/home")])
def test_a_glob_reaching_below_the_home_directory_is_warned_of(path: str,
                                                               warned: str | None) -> None:
    """F-11 (2026-11-30): configuration.md said `~/*.md` watches every directory in the home,
    which it does not (the home alone, files directly in it), and that nothing warned. A glob
    that does reach below the home (or a directory above it) is warned of when added."""
    from memoryd.sources import broad_watch

    warning = broad_watch(Source("me", path, "memory", "markdown", agent="me"),
                          Path("/home/ana"))
    if warned is None:
        assert warning is None
    else:
        assert warning is not None and f"reaches below {warned}, so memoryd watches every " \
            "directory in it" in warning


def test_validate_source_not_a_table() -> None:
    with pytest.raises(ConfigError, match="must be a table"):
        validate_source(["notes"])  # type: ignore[arg-type]


def test_source_validates_on_construction() -> None:
    with pytest.raises(ConfigError, match="source 'x': no agent"):
        Source("x", "/a/*.md", "memory", "markdown")


def test_config_error_is_a_startup_failure() -> None:
    with pytest.raises(ConfigError) as caught:
        validate_source(table(kind="notes"))
    assert caught.value.exit_code == 3


# -- scan ----------------------------------------------------------------------------------------


def fake_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    touch(home / ".claude/CLAUDE.md")
    touch(home / ".claude/settings.json")
    touch(home / ".claude/todos/t.json")
    touch(home / ".claude/projects/-p/s1.jsonl")
    touch(home / ".claude/projects/-p/s1/subagents/agent-a.jsonl")
    touch(home / ".claude/projects/-p/memory/MEMORY.md")
    touch(home / ".claude/projects/-p/memory/topic.md")
    touch(home / ".claude/projects/-p/.git/objects/x.jsonl")
    touch(home / ".claude/agent-memory/reviewer/MEMORY.md")
    touch(home / ".claude/agent-memory/reviewer/.hidden/n.md")
    touch(home / ".claude/rules/style/commits.md")
    touch(home / ".claude/rules/notes.txt")
    touch(home / ".codex/sessions/2026/03/02/rollout-a.jsonl")
    touch(home / ".codex/sessions/2026/03/02/rollout-b.json")
    touch(home / ".codex/sessions/2026/03/02/rollout-c/rollout.jsonl")
    touch(home / ".codex/archived_sessions/rollout-d.jsonl")
    touch(home / ".codex/archived_sessions/notes.jsonl")
    touch(home / ".codex/AGENTS.md")
    touch(home / ".codex/config.toml")
    touch(home / ".mastersof-ai/agents/scout/memory/CONTEXT.md")
    touch(home / ".mastersof-ai/agents/scout/IDENTITY.md")
    return home


def scanned(sources: list[Source], home: Path) -> list[tuple[str, str, str]]:
    return [(source.name, str(path.relative_to(home)), agent)
            for source, path, agent in scan(sources, home)]


def test_scan_fake_home(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    found = scanned(default_sources(), home)
    assert len(found) == len(set(found))
    assert sorted(found) == sorted([
        ("claude-user-memory", ".claude/CLAUDE.md", "claude-code"),
        ("claude-transcripts", ".claude/projects/-p/s1.jsonl", "claude-code"),
        ("claude-transcripts", ".claude/projects/-p/s1/subagents/agent-a.jsonl", "claude-code"),
        ("claude-auto-memory", ".claude/projects/-p/memory/MEMORY.md", "claude-code"),
        ("claude-auto-memory", ".claude/projects/-p/memory/topic.md", "claude-code"),
        ("claude-agent-memory", ".claude/agent-memory/reviewer/MEMORY.md", "reviewer"),
        ("claude-agent-memory", ".claude/agent-memory/reviewer/.hidden/n.md", "reviewer"),
        ("claude-user-rules", ".claude/rules/style/commits.md", "claude-code"),
        ("codex-transcripts", ".codex/sessions/2026/03/02/rollout-a.jsonl", "codex"),
        ("codex-segmented", ".codex/sessions/2026/03/02/rollout-c/rollout.jsonl", "codex"),
        ("codex-archived", ".codex/archived_sessions/rollout-d.jsonl", "codex"),
        ("codex-user-memory", ".codex/AGENTS.md", "codex"),
        ("mastersof-ai", ".mastersof-ai/agents/scout/memory/CONTEXT.md", "scout"),
    ])


def test_scan_agrees_with_match(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    sources = default_sources()
    expected = set()
    for directory, _, files in os.walk(home):
        for name in files:
            path = Path(directory) / name
            for source in sources:
                agent = source.match(path, home)
                if agent is not None:
                    expected.add((source.name, str(path.relative_to(home)), agent))
    assert set(scanned(sources, home)) == expected


def test_scan_symlink_loop_terminates(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    memory = home / ".claude/agent-memory/reviewer"
    (memory / "loop").symlink_to(memory)
    (memory / "up").symlink_to(home / ".claude")
    found = scanned(default_sources(), home)
    agent_files = [path for name, path, _ in found if name == "claude-agent-memory"]
    assert sorted(agent_files) == [".claude/agent-memory/reviewer/.hidden/n.md",
                                   ".claude/agent-memory/reviewer/MEMORY.md"]
    assert len(found) == len(set(found))


def test_scan_yields_symlinked_files_not_broken_ones(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    target = touch(tmp_path / "elsewhere/shared.md")
    memory = home / ".claude/agent-memory/reviewer"
    (memory / "shared.md").symlink_to(target)
    (memory / "broken.md").symlink_to(tmp_path / "missing.md")
    os.mkfifo(memory / "pipe.md")
    found = {path for name, path, _ in scanned(default_sources(), home)
             if name == "claude-agent-memory"}
    assert ".claude/agent-memory/reviewer/shared.md" in found
    assert ".claude/agent-memory/reviewer/broken.md" not in found
    assert ".claude/agent-memory/reviewer/pipe.md" not in found


def test_scan_follows_a_symlinked_root(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(tmp_path / "sync/projects/-p/s.jsonl")
    touch(home / ".claude/CLAUDE.md")
    (home / ".claude/projects").symlink_to(tmp_path / "sync/projects")
    found = scanned(default_sources(), home)
    assert ("claude-transcripts", ".claude/projects/-p/s.jsonl", "claude-code") in found


def test_scan_follows_a_symlinked_memory_directory_once(tmp_path: Path) -> None:
    """~/.claude/projects/<p>/memory linked from a dotfiles repository, as Claude Code reads it:
    its files are found under the link. A second link to the same folder, a loop and a link
    to a directory holding a root are not followed (each file once), and each says why."""
    home = fake_home(tmp_path)
    dotfiles = tmp_path / "dotfiles/claude-memory"
    touch(dotfiles / "MEMORY.md")
    touch(dotfiles / "topics/glacier.md")
    projects = home / ".claude/projects"
    (projects / "p4").mkdir()
    (projects / "p4/memory").symlink_to(dotfiles)
    (projects / "p5").mkdir()
    (projects / "p5/memory").symlink_to(dotfiles)
    (projects / "-p/memory/loop").symlink_to(projects)
    (projects / "p6").mkdir()
    (projects / "p6/memory").symlink_to(home / ".codex")
    links: list[Any] = []
    found = [(source.name, str(path.relative_to(home)), agent)
             for source, path, agent in scan(default_sources(), home, links)]
    mine = sorted(path for name, path, _ in found if name == "claude-auto-memory")
    assert mine == [".claude/projects/-p/memory/MEMORY.md", ".claude/projects/-p/memory/topic.md",
                    ".claude/projects/p4/memory/MEMORY.md",
                    ".claude/projects/p4/memory/topics/glacier.md"]
    assert len(found) == len(set(found))
    said = {str(Path(link.path).relative_to(home)): link for link in links}
    assert said[".claude/projects/p4/memory"].why_not is None
    assert said[".claude/projects/p4/memory"].target == str(dotfiles)
    twin = said[".claude/projects/p5/memory"]
    assert twin.read_as == str(projects / "p4/memory") and "read already as" in twin.why_not
    assert (said[".claude/projects/-p/memory/loop"].why_not or "").startswith("a loop")
    assert "indexed twice" in (said[".claude/projects/p6/memory"].why_not or "")


def test_scan_asks_whether_a_symlinked_directory_may_be_followed(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    touch(tmp_path / "elsewhere/secret.md")
    (home / ".claude/agent-memory/reviewer/linked").symlink_to(tmp_path / "elsewhere")
    links: list[Any] = []
    found = [str(path) for _, path, _ in scan(default_sources(), home, links,
                                              lambda link, target: "not here")]
    assert not any("secret" in path for path in found)
    assert [(link.why_not, link.read_as) for link in links] == [("not here", None)]


AS_ROOT = pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable directories")


@AS_ROOT
def test_scan_does_not_walk_what_no_source_needs(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    home = fake_home(tmp_path)
    for blocked in (home / ".claude/todos", home / ".claude/projects"):
        blocked.chmod(0)
    caplog.set_level(logging.DEBUG, logger="memoryd.sources")
    try:
        found = scanned([by_name("claude-user-memory")], home)
    finally:
        for blocked in (home / ".claude/todos", home / ".claude/projects"):
            blocked.chmod(0o755)
    assert found == [("claude-user-memory", ".claude/CLAUDE.md", "claude-code")]
    assert "unreadable" not in caplog.text  # pruned: never listed


@AS_ROOT
def test_scan_skips_unreadable_directories(tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    home = fake_home(tmp_path)
    blocked = home / ".claude/projects/-p/memory"
    blocked.chmod(0)
    caplog.set_level(logging.DEBUG, logger="memoryd.sources")
    try:
        found = {path for _, path, _ in scanned(default_sources(), home)}
    finally:
        blocked.chmod(0o755)
    assert ".claude/projects/-p/s1.jsonl" in found
    assert ".claude/projects/-p/memory/MEMORY.md" not in found
    assert f"skipping unreadable directory {blocked}" in caplog.text


def test_scan_skips_directories_it_cannot_list(tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Runs as root too: a directory whose path is longer than PATH_MAX cannot be listed."""
    home = fake_home(tmp_path)
    fd = os.open(home / ".claude/agent-memory/reviewer", os.O_RDONLY)
    try:
        for _ in range(20):  # 20 x 250 characters > 4096
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("deep.md", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)
    caplog.set_level(logging.DEBUG, logger="memoryd.sources")
    found = {path for name, path, _ in scanned(default_sources(), home)
             if name == "claude-agent-memory"}
    assert ".claude/agent-memory/reviewer/MEMORY.md" in found
    assert not any(path.endswith("deep.md") for path in found)
    assert "skipping unreadable directory" in caplog.text


def test_scan_skips_missing_roots(tmp_path: Path) -> None:
    assert scanned(default_sources(), tmp_path / "nobody") == []


def test_scan_project_root_finds_its_files_and_subdirectories_instructions_only(
        tmp_path: Path) -> None:
    """A subdirectory's CLAUDE.md is the project's (memoryd.nested_files); one in an installed
    package or in .git is not, nor is any other file of the tree."""
    root = tmp_path / "shop"
    touch(root / "CLAUDE.md")
    touch(root / "AGENTS.md")
    touch(root / "src/CLAUDE.md")
    touch(root / "node_modules/pkg/CLAUDE.md")
    touch(root / ".claude/rules/a.md")
    touch(root / ".claude/rules/b/c.md")
    touch(root / "agents/state/memory/planner.md")
    touch(root / ".git/CLAUDE.md")
    found = sorted((str(path.relative_to(root)), agent)
                   for _, path, agent in scan(project_sources(root), tmp_path))
    assert found == [(".claude/rules/a.md", "claude-code"), (".claude/rules/b/c.md", "claude-code"),
                     ("AGENTS.md", "codex"), ("CLAUDE.md", "claude-code"),
                     ("agents/state/memory/planner.md", "planner"),
                     ("src/CLAUDE.md", "claude-code")]


def test_scan_file_matched_by_two_sources_is_yielded_once_per_source(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home / "notes/a.md")
    sources = [Source("one", "~/notes/*.md", "memory", "markdown", agent="a"),
               Source("two", "~/**/*.md", "memory", "markdown", agent="b")]
    assert scanned(sources, home) == [("one", "notes/a.md", "a"), ("two", "notes/a.md", "b")]


def test_scan_recovers_a_deleted_and_recreated_root(tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    sessions = home / ".codex/sessions"
    shutil.rmtree(sessions)
    assert not any(name in ("codex-transcripts", "codex-segmented")
                   for name, _, _ in scanned(default_sources(), home))
    assert (sessions, True) not in watch_roots(default_sources(), home)
    touch(sessions / "2026/04/01/rollout-new.jsonl")
    assert ("codex-transcripts", ".codex/sessions/2026/04/01/rollout-new.jsonl", "codex") in \
        scanned(default_sources(), home)
    assert (sessions, True) in watch_roots(default_sources(), home)


# -- watch roots ---------------------------------------------------------------------------------


def test_watch_roots_dedup(tmp_path: Path) -> None:
    """Every existing root once; ~/.claude alone for its CLAUDE.md (not its todos/, its
    settings, …), its projects/, agent-memory/ and rules/ with all below them."""
    home = fake_home(tmp_path)
    assert watch_roots(default_sources(), home) == [
        (home / ".claude", False), (home / ".claude/agent-memory", True),
        (home / ".claude/projects", True), (home / ".claude/rules", True),
        (home / ".codex", False), (home / ".codex/archived_sessions", True),
        (home / ".codex/sessions", True), (home / ".mastersof-ai/agents", True)]


def test_a_project_is_watched_where_its_files_are_not_in_every_directory(
        tmp_path: Path) -> None:
    """A project's CLAUDE.md and AGENTS.md need its root alone: watched recursively for them,
    a repository with a node_modules took a watch for each of its directories."""
    project = tmp_path / "app"
    touch(project / "CLAUDE.md")
    touch(project / "node_modules/left-pad/lib/index.js")
    touch(project / ".claude/rules/style.md")
    touch(project / ".claude/agent-memory/reviewer/notes.md")
    touch(project / "archive/CLAUDE.md")  # the notebook pass's archive of CLAUDE.md
    assert watch_roots(project_sources(project), tmp_path) == [
        (project, False), (project / ".claude", False),
        (project / ".claude/agent-memory", True), (project / ".claude/rules", True),
        (project / "archive", False)]


def test_watch_roots_only_existing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home / ".claude/agent-memory/r/x.md")
    touch(home / ".codex/sessions/rollout-a.jsonl")
    (home / ".claude/CLAUDE.md").mkdir()  # the root of claude-user-memory is still .claude
    sources = [s for s in default_sources() if s.name != "claude-user-memory"]
    assert watch_roots(sources, home) == [(home / ".claude/agent-memory", True),
                                          (home / ".codex", False),  # for its AGENTS.md
                                          (home / ".codex/sessions", True)]
    assert watch_roots(default_sources(), tmp_path / "nobody") == []


def test_watch_roots_keep_a_root_behind_a_symlink(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home / ".claude/CLAUDE.md")
    touch(tmp_path / "sync/projects/-p/s.jsonl")
    (home / ".claude/projects").symlink_to(tmp_path / "sync/projects")
    sources = [by_name("claude-user-memory"), by_name("claude-transcripts")]
    assert watch_roots(sources, home) == [(home / ".claude", False),
                                          (home / ".claude/projects", True)]


def test_watch_roots_same_root_once(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    touch(root / "CLAUDE.md")
    touch(root / ".claude/rules/a.md")
    assert watch_roots(project_sources(root), tmp_path) == [
        (root, False), (root / ".claude", False), (root / ".claude/rules", True)]


@pytest.mark.parametrize(("setting", "value"), [
    ("search", "match_precision = 2.5"), ("search", "match_precision = -3"),
    ("remember", "near_duplicate_cosine = 1.5"), ("embed", "threads = 0"),
])
def test_out_of_range_values_are_refused(memoryd_home, setting: str, value: str) -> None:
    (memoryd_home / "config.toml").write_text(f"[{setting}]\n{value}\n")
    with pytest.raises(ConfigError, match="must be between"):
        load_config()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG user directories: Linux")
def test_clines_global_rules_are_read_from_the_documents_folder_xdg_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cline keeps its global rules in the Documents folder `xdg-user-dir DOCUMENTS` names on
    Linux: a user whose user directories say ~/Dokumente had them unread."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert "cline-user-rules-xdg" not in {s.name for s in default_sources()}
    dirs = tmp_path / ".config/user-dirs.dirs"
    dirs.parent.mkdir()
    dirs.write_text('# written by xdg-user-dirs-update\nXDG_DESKTOP_DIR="$HOME/Schreibtisch"\n'
                    'XDG_DOCUMENTS_DIR="$HOME/Dokumente"\n')
    rules = by_name("cline-user-rules-xdg")
    assert rules.match(tmp_path / "Dokumente/Cline/Rules/style.md", tmp_path) == "cline"
    assert rules.match(tmp_path / "Dokumente/notes.md", tmp_path) is None
    dirs.write_text('XDG_DOCUMENTS_DIR="$HOME/Documents"\n')  # the usual one: its own source
    assert "cline-user-rules-xdg" not in {s.name for s in default_sources()}
