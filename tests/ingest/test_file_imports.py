"""``@path`` imports: which files a CLAUDE.md or a GEMINI.md pulls in, and their sources."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memoryd import file_imports
from memoryd.agent_sources import default_sources, project_sources
from memoryd.config import load_config
from memoryd.file_imports import imported, names_in
from memoryd.watched_sources import configured_sources


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_an_at_is_an_import_only_where_claude_code_reads_one() -> None:
    text = """# Our project
See @README for the overview and @docs/git\\ workflow.md for branches.
- personal: @~/.claude/my-prefs.md
Mail ana@example.org or @ana on chat; `@not/a-span.md` is code.
<!-- @not/commented.md -->
```python
@not/fenced.md
```
~~~~
```
@not/still-fenced.md
~~~~
@/srv/team/conventions.md
"""
    assert names_in(text) == ["README", "docs/git workflow.md", "~/.claude/my-prefs.md", "ana",
                              "/srv/team/conventions.md"]


def test_imports_are_followed_relative_to_their_file_up_to_five_hops(tmp_path: Path) -> None:
    """Nearest first, each once (a loop ends), only notes that exist."""
    root = tmp_path / "shop"
    start = _write(root / "CLAUDE.md", "@docs/a.md @package.json @docs/missing.md\n")
    _write(root / "package.json", "{}")
    _write(root / "docs/a.md", "@b.md\n@../CLAUDE.md\n")  # relative to docs/
    chain = ["b", "c", "d", "e", "f", "g"]
    for here, there in zip(chain, chain[1:]):
        _write(root / f"docs/{here}.md", f"@{there}.md\n")
    _write(root / "docs/g.md", "the end\n")
    assert imported([str(start)]) == [str(root / f"docs/{name}.md")
                                      for name in ["a", "b", "c", "d", "e"]]


def test_a_file_caught_half_written_keeps_its_imports_until_it_is_still(
        tmp_path: Path) -> None:
    """An editor truncates, then writes: an import missing for that moment stays, so its
    file's entries are not dropped from the index and indexed again as new ones."""
    start = _write(tmp_path / "CLAUDE.md", "@notes.md\n")
    _write(tmp_path / "notes.md", "- a note\n")
    assert imported([str(start)]) == [str(tmp_path / "notes.md")]
    start.write_text("")  # now, mid-write
    assert imported([str(start)]) == [str(tmp_path / "notes.md")]
    still = time.time_ns() - 2 * file_imports.SETTLE_NS
    os.utime(start, ns=(still, still))
    assert imported([str(start)]) == []
    start.write_text("@notes.md\n@more.md\n")  # a gain is taken at once
    _write(tmp_path / "more.md", "- more\n")
    assert imported([str(start)]) == [str(tmp_path / "notes.md"), str(tmp_path / "more.md")]


def test_a_projects_imports_are_its_sources(tmp_path: Path, memoryd_home: Path) -> None:
    """A project's CLAUDE.md files' imports are Claude Code's files of the project; a file
    another source has already (the project's AGENTS.md, a rule) stays that source's."""
    home = Path.home()
    root = home / "src/shop"
    _write(root / "CLAUDE.md", "@AGENTS.md\n@docs/conventions.md\n@.claude/rules/style.md\n")
    _write(root / ".claude/CLAUDE.md", "@../notes/oncall.md\n")
    _write(root / "CLAUDE.local.md", "@~/claude/shop-prefs.md\n")
    for name in ["AGENTS.md", "docs/conventions.md", ".claude/rules/style.md", "notes/oncall.md"]:
        _write(root / name, "- something\n")
    prefs = _write(home / "claude/shop-prefs.md", "- something\n")
    names = {s.name: s.path for s in project_sources(root) if ":claude-import:" in s.name}
    assert names == {f"project:{root}:claude-import:{root / name}": str(root / name)
                     for name in ["AGENTS.md", "docs/conventions.md", ".claude/rules/style.md",
                                  "notes/oncall.md"]} | {
        f"project:{root}:claude-import:{prefs}": str(prefs)}

    _write(memoryd_home / "config/config.toml", f'[watch]\nproject_roots = ["{root}"]\n')
    sources, projects = configured_sources(load_config(memoryd_home / "config/config.toml"))
    owners = {path: [(s.name, s.match(Path(path), home)) for s in sources
                     if s.match(Path(path), home)][0]
              for path in [str(root / "AGENTS.md"), str(root / ".claude/rules/style.md"),
                           str(root / "docs/conventions.md"), str(prefs)]}
    assert owners[str(root / "AGENTS.md")] == (f"project:{root}:AGENTS.md", "codex")
    assert owners[str(root / ".claude/rules/style.md")][0] == \
        f"project:{root}:.claude/rules/**/*.md"
    conventions = f"project:{root}:claude-import:{root / 'docs/conventions.md'}"
    assert owners[str(root / "docs/conventions.md")] == (conventions, "claude-code")
    assert projects[conventions] == str(root)
    assert owners[str(prefs)][1] == "claude-code"


def test_the_users_claude_md_imports_are_sources(memoryd_home: Path) -> None:
    home = Path.home()
    _write(home / ".claude/CLAUDE.md", "- @~/notes/prefs.md\n")
    prefs = _write(home / "notes/prefs.md", "@tools.md\n")
    tools = _write(home / "notes/tools.md", "- uv, not pip\n")
    assert [(s.name, s.path, s.agent) for s in default_sources()
            if s.name.startswith("claude-import:")] == [
        (f"claude-import:{prefs}", str(prefs), "claude-code"),
        (f"claude-import:{tools}", str(tools), "claude-code")]


@pytest.mark.parametrize("name", ["docs/*.md", "docs/{agent}.md"])
def test_an_import_that_would_be_a_glob_is_not_followed(tmp_path: Path, name: str) -> None:
    start = _write(tmp_path / "CLAUDE.md", f"@{name}\n")
    _write(tmp_path / name, "- a file with an odd name\n")
    assert imported([str(start)]) == []


def test_comments_and_code_spans_are_read_in_one_pass() -> None:
    """A comment not closed runs to the end, as in markdown; a run of backticks no run as long
    closes is literal. A file of many unclosed ``<!--`` (a pattern took 11 s over 80 KB of
    them) or backtick runs is read at once."""
    assert names_in("@a.md <!-- @b.md --> @c.md <!-- @d.md\n@e.md\n") == ["a.md", "c.md"]
    assert names_in("``@a.md ` @b.md`` ` @c.md\n") == ["c.md"]
    assert names_in("<!--" * 200_000 + "\n@a.md\n") == []
    runs = "".join("`" * size + " x " for size in range(1, 600))
    assert names_in(f"{runs} @a.md\n" * 3) == ["a.md"] * 3


def test_a_gemini_md_imports_markdown_as_geminis(memoryd_home: Path) -> None:
    """Gemini CLI's memory import processor reads ``@path`` in GEMINI.md (and its context
    files of other names) as Claude Code does, but imports markdown alone."""
    home = Path.home()
    _write(home / ".gemini/settings.json", '{"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}')
    _write(home / ".gemini/AGENTS.md", "@./style.md\n@notes.txt\n")
    _write(home / ".gemini/GEMINI.md", "@/srv/nothing-here.md\n@../gemini-notes/infra.md\n")
    style = _write(home / ".gemini/style.md", "- two spaces\n")
    _write(home / ".gemini/notes.txt", "- not markdown\n")
    infra = _write(home / "gemini-notes/infra.md", "- backups at two\n")
    assert [(s.name, s.agent) for s in default_sources() if "-import:" in s.name] == [
        (f"gemini-import:{style}", "gemini"), (f"gemini-import:{infra}", "gemini")]
    root = home / "src/shop"
    _write(root / "GEMINI.md", "@docs/gemini.md @CLAUDE.md\n")
    docs = _write(root / "docs/gemini.md", "- the shop's conventions\n")
    _write(root / "CLAUDE.md", "- Claude's file, imported by Gemini's\n")
    _write(memoryd_home / "config/config.toml", f'[watch]\nproject_roots = ["{root}"]\n')
    sources, _ = configured_sources(load_config(memoryd_home / "config/config.toml"))
    assert [(s.name, s.agent) for s in sources if f"{root}:gemini-import:" in s.name] == [
        (f"project:{root}:gemini-import:{docs}", "gemini")]  # CLAUDE.md stays Claude Code's
