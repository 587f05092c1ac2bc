"""OpenCode's ``instructions`` setting (``opencode.json``): the files it names are OpenCode's
memory, the user's and a project's, followed as the setting changes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.agent_settings import _json_with_comments
from memoryd.agent_sources import default_sources, project_sources
from memoryd.config import load_config
from memoryd.watched_sources import configured_sources
from tests.conftest import start_daemon
from tests.ingest.test_ingest import eventually, search


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def named(sources: list, infix: str) -> dict[str, tuple[str, str | None]]:  # type: ignore[type-arg]
    """The path and agent of each source whose name holds ``infix``."""
    return {s.name: (s.path, s.agent) for s in sources if infix in s.name}


def _instructions(sources: list) -> dict[str, tuple[str, str | None]]:  # type: ignore[type-arg]
    return named(sources, "opencode-instructions:")


def test_a_projects_instructions_are_opencodes_and_so_are_the_users_relative_ones(
        tmp_path: Path, memoryd_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The project's ``opencode.json`` (JSON with comments, as OpenCode reads it) names paths
    and globs relative to its root; the user's names absolute ones (its own sources) and
    relative ones, read in every project. URLs, files that are not notes and globs memoryd
    cannot follow are left out, the last two with a line in the log."""
    home = Path(os.environ["HOME"])
    root = tmp_path / "shop"
    _write(root / "opencode.jsonc", """{
  // what the agent reads first
  "$schema": "https://opencode.ai/config.json",
  "instructions": ["CONTRIBUTING.md", "docs/*.md", "https://example.org/rules.md",
                   "package.json", "docs/{a,b}.md", /* the team's */ "../team/rules.md",],
}""")
    _write(home / ".config/opencode/opencode.json",
           '{"instructions": ["~/notes/opencode.md", "STYLE.md", "CONTRIBUTING.md"]}')
    with caplog.at_level(logging.WARNING):
        found = _instructions(project_sources(root))
        users = _instructions(default_sources())
    prefix = f"project:{root}:opencode-instructions:"
    assert found == {f"{prefix}CONTRIBUTING.md": (str(root / "CONTRIBUTING.md"), "opencode"),
                     f"{prefix}docs/*.md": (str(root / "docs/*.md"), "opencode"),
                     f"{prefix}../team/rules.md": (str(tmp_path / "team/rules.md"), "opencode"),
                     f"{prefix}STYLE.md": (str(root / "STYLE.md"), "opencode")}
    assert users == {"opencode-instructions:~/notes/opencode.md": ("~/notes/opencode.md",
                                                                   "opencode")}
    assert "'package.json': memoryd indexes notes" in caplog.text
    assert "'docs/{a,b}.md': memoryd indexes notes" in caplog.text
    assert "example.org" not in caplog.text


def test_a_file_opencode_names_that_another_source_has_stays_that_sources(
        tmp_path: Path, memoryd_home: Path) -> None:
    root = tmp_path / "shop"
    _write(root / ".opencode/opencode.json", '{"instructions": ["AGENTS.md", "docs/ops.md"]}')
    config = _write(memoryd_home / "config/config.toml", f'[watch]\nproject_roots = ["{root}"]\n')
    sources, _ = configured_sources(load_config(config))
    owners = {s.path: s.name for s in sources}
    assert owners[str(root / "AGENTS.md")] == f"project:{root}:AGENTS.md"
    assert owners[str(root / "docs/ops.md")] == f"project:{root}:opencode-instructions:docs/ops.md"


def test_settings_with_comments_and_trailing_commas_are_read() -> None:
    """Gemini CLI and OpenCode read their settings as JSON with comments; memoryd took such a
    file as unreadable (and its settings as unset)."""
    text = '{"a": "x // y /* z */", // c\n "b": [1, 2, /* q */ ], "c": "d,]", /* e */ }'
    assert _json_with_comments(text) == {"a": "x // y /* z */", "b": [1, 2], "c": "d,]"}
    with pytest.raises(ValueError):
        _json_with_comments('{"a": }')


def test_a_file_added_to_the_instructions_is_indexed_and_one_taken_out_leaves(
        memoryd_home: Path, embedder) -> None:
    follows_its_setting(embedder, "opencode", "opencode.json",
                        '{"instructions": ["CONTRIBUTING.md"]}', '{"instructions": ["docs/*.md"]}')


#: Two notes of a project root: (file, its text, a question its one bullet answers).
NAMED = ("CONTRIBUTING.md", "Every change needs a changelog line.", "what does every change need")
OTHER = ("docs/deploy.md", "Deploys go out from the release branch.",
         "where do deploys go out from")


def follows_its_setting(embedder, agent: str, settings_name: str,  # type: ignore[no-untyped-def]
                        naming: str, swapped: str) -> None:
    """A project root whose agent's settings file (``settings_name``) says ``naming``: the
    note it names (:data:`NAMED`) is the agent's, the other (:data:`OTHER`) is not; the
    settings rewritten to ``swapped``, which names the other one instead, the first leaves the
    index (not the disk) and the other comes in."""
    root = Path(os.environ["HOME"]) / "shop"
    for path, text, _ in (NAMED, OTHER):
        _write(root / path, f"# Notes\n\n- {text}\n")
    settings = _write(root / settings_name, naming)
    _write(Path(os.environ["MEMORYD_HOME"]) / "config.toml",
           f'[watch]\nproject_roots = ["{root}"]\n')
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            def texts(query: str) -> list[str]:
                return [hit["text"] for hit in search(client, query, agent=agent, match=True)]

            def named() -> None:
                assert texts(NAMED[2]) == [NAMED[1]]

            eventually(named)
            assert texts(OTHER[2]) == []
            settings.write_text(swapped)

            def other() -> None:
                assert texts(OTHER[2]) == [OTHER[1]]
                assert texts(NAMED[2]) == []

            eventually(other)
    finally:
        running.stop()
    assert (root / NAMED[0]).exists()  # out of the index, not off the disk
