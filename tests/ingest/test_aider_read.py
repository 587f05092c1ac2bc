"""Aider's ``read`` setting (``.aider.conf.yml``): the notes it names are Aider's memory, the
user's and a project's, followed as the setting changes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memoryd_client import Client

from memoryd.agent_settings import yaml_top_level
from memoryd.agent_sources import default_sources, project_sources
from memoryd.config import load_config
from memoryd.watched_sources import configured_sources
from tests.conftest import start_daemon
from tests.ingest.test_ingest import eventually, search
from tests.ingest.test_opencode_instructions import _write, follows_its_setting, named


def _read(sources: list) -> dict[str, tuple[str, str | None]]:  # type: ignore[type-arg]
    return named(sources, "aider-read:")


def test_the_lists_aider_writes_are_read_as_yaml() -> None:
    """The forms Aider's documentation shows (one name, a bulleted list, a list in brackets),
    with comments and quotes; a value memoryd cannot read is kept as such, not guessed."""
    text = """# Aider's settings
model: sonnet  # the main model
read:
  - CONVENTIONS.md
  - 'docs/it''s.md'   # quoted
- "notes/a # b.md"
auto-commits: false
lint-cmd:
  python: ruff check
"""
    found = yaml_top_level(text)
    assert found["read"] == ["CONVENTIONS.md", "docs/it's.md", "notes/a # b.md"]
    assert found["model"] == "sonnet" and found["auto-commits"] == "false"
    assert not isinstance(found["lint-cmd"], (str, list))  # a nested mapping: not read
    assert yaml_top_level("read: [CONVENTIONS.md, 'a b.md', \"c.md\"] # x\n")["read"] == [
        "CONVENTIONS.md", "a b.md", "c.md"]
    assert yaml_top_level("---\nread: STYLE.md\n")["read"] == "STYLE.md"
    for unread in ("read: |\n  a.md\n", "read: &x a.md\n", "read: [a.md, [b.md]]\n"):
        assert not isinstance(yaml_top_level(unread)["read"], (str, list)), unread


def test_a_projects_read_files_are_aiders_and_so_are_the_users_relative_ones(
        tmp_path: Path, memoryd_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The project's ``.aider.conf.yml`` names files and a directory relative to its root (the
    directory's notes are read); the user's names an absolute note (its own source) and a
    relative one, read in every project. Code, the project's whole tree and a value that is
    not a path are left out, with a line in the log."""
    home = Path(os.environ["HOME"])
    root = tmp_path / "shop"
    (root / "docs").mkdir(parents=True)
    _write(root / ".aider.conf.yml", """read:
  - CONVENTIONS.md
  - docs
  - src/main.py
  - .
  - ../team/rules.md
  - lint:
""")
    _write(home / ".aider.conf.yml", "read: [~/notes/aider.md, STYLE.md, CONVENTIONS.md]\n")
    with caplog.at_level(logging.WARNING):
        found = _read(project_sources(root))
        users = _read(default_sources())
    prefix = f"project:{root}:aider-read:"
    assert found == {f"{prefix}CONVENTIONS.md": (str(root / "CONVENTIONS.md"), "aider"),
                     f"{prefix}docs": (str(root / "docs/**/*.md"), "aider"),
                     f"{prefix}../team/rules.md": (str(tmp_path / "team/rules.md"), "aider"),
                     f"{prefix}STYLE.md": (str(root / "STYLE.md"), "aider")}
    assert users == {"aider-read:~/notes/aider.md": ("~/notes/aider.md", "aider")}
    assert "'src/main.py': memoryd indexes notes" in caplog.text
    assert "Aider's read entry '.'" in caplog.text
    assert "read=lint: is not a path or a list of paths" in caplog.text


def test_a_read_file_another_source_has_stays_that_sources(tmp_path: Path,
                                                          memoryd_home: Path) -> None:
    """``read: CONVENTIONS.md`` names the file the project's ``CONVENTIONS.md`` source has."""
    root = tmp_path / "shop"
    _write(root / ".aider.conf.yml", "read: [CONVENTIONS.md, docs/deploy.md]\n")
    config = _write(memoryd_home / "config/config.toml", f'[watch]\nproject_roots = ["{root}"]\n')
    sources, _ = configured_sources(load_config(config))
    owners = {s.path: s.name for s in sources}
    assert owners[str(root / "CONVENTIONS.md")] == f"project:{root}:CONVENTIONS.md"
    assert owners[str(root / "docs/deploy.md")] == f"project:{root}:aider-read:docs/deploy.md"


def test_a_file_added_to_aiders_read_is_indexed_and_one_taken_out_leaves(
        memoryd_home: Path, embedder) -> None:
    follows_its_setting(embedder, "aider", ".aider.conf.yml", "read: CONTRIBUTING.md\n",
                        "read:\n  - docs\n")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("read: -[]{}'\"#|>&*\n\t,.mdx~/")), max_size=80))
def test_any_settings_text_is_read_without_an_error(text: str) -> None:
    """Whatever a user's ``.aider.conf.yml`` holds, reading it never raises (the daemon
    makes its sources from it every few seconds)."""
    found = yaml_top_level(text)
    assert isinstance(found, dict)


def _histories(sources: list) -> dict[str, tuple[str, str, str | None]]:  # type: ignore[type-arg]
    return {s.name: (s.path, s.format, s.agent) for s in sources
            if s.name.endswith("aider-chat-history")}


def test_a_chat_history_aider_keeps_elsewhere_is_read_where_the_setting_says(
        tmp_path: Path, memoryd_home: Path) -> None:
    """``chat-history-file`` moves Aider's history: a project's setting, relative to its
    root; the user's absolute one is a file of every project's sessions, the user's relative
    one each project's; naming the default file adds nothing."""
    home = Path(os.environ["HOME"])
    shop, api, plain = tmp_path / "shop", tmp_path / "api", tmp_path / "plain"
    _write(shop / ".aider.conf.yml", "chat-history-file: .aider/history.md\n")
    _write(api / ".aider.conf.yml", "chat-history-file: .aider.chat.history.md\n")
    plain.mkdir()
    assert _histories(project_sources(shop)) == {
        f"project:{shop}:aider-chat-history": (str(shop / ".aider/history.md"), "aider", "aider")}
    assert _histories(project_sources(api)) == {}
    assert _histories(project_sources(plain)) == {} and _histories(default_sources()) == {}
    user = _write(home / ".aider.conf.yml", "chat-history-file: ~/aider/all-chats.md\n")
    assert _histories(default_sources()) == {
        "aider-chat-history": ("~/aider/all-chats.md", "aider", "aider")}
    assert _histories(project_sources(plain)) == {}
    (plain / ".aider.conf.yml").write_text(f"chat-history-file: {home}/aider/all-chats.md\n")
    assert _histories(project_sources(plain)) == {}  # the user's file, read once, as theirs
    (plain / ".aider.conf.yml").unlink()
    user.write_text("chat-history-file: logs/aider.md\n")
    assert _histories(default_sources()) == {}
    assert _histories(project_sources(plain)) == {
        f"project:{plain}:aider-chat-history": (str(plain / "logs/aider.md"), "aider", "aider")}
    assert _histories(project_sources(shop))[f"project:{shop}:aider-chat-history"][0] == \
        str(shop / ".aider/history.md")  # the project's own setting wins


def test_a_moved_aider_history_is_indexed_as_the_projects(memoryd_home: Path, embedder) -> None:
    home = Path(os.environ["HOME"])
    root = home / "shop"
    (root / ".git").mkdir(parents=True)
    _write(root / ".aider.conf.yml", "chat-history-file: .aider/history.md\n")
    _write(root / ".aider/history.md", (Path(__file__).parents[1] / "fixtures/harnesses/project"
                                        / ".aider.chat.history.md").read_text())
    _write(memoryd_home / "config.toml", f'[watch]\nproject_roots = ["{root}"]\n')
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            def drift() -> dict:  # type: ignore[type-arg]
                hits = [h for h in search(client, "cart total drift cent discounts",
                                          agent="aider") if "drift" in h["text"]]
                assert hits
                return hits[0]

            hit = eventually(drift)
            assert (hit["kind"], hit["project"]) == ("turn", str(root))
    finally:
        running.stop()
