"""The agents' instruction files in a project's subdirectories (a monorepo's
``packages/api/CLAUDE.md``, ``services/web/AGENTS.md``): found, indexed as the project's,
followed as they come and go, without watching the whole tree."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd import nested_files
from memoryd.agent_sources import project_sources
from memoryd.config import load_config
from memoryd.sources import scan
from memoryd.watched_sources import configured_sources
from tests.conftest import run_cli, spawn_daemon, stop_process
from tests.ingest.test_ingest import eventually, search
from tests.ingest.test_watching import _inotify_watches


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def fresh_walks() -> None:
    nested_files._WALKED.clear()  # each test's tree is walked anew


def _nested(sources: list) -> dict[str, tuple[str, str | None]]:  # type: ignore[type-arg]
    return {s.name: (s.path, s.agent) for s in sources if ":nested:" in s.name}


def test_a_monorepos_instruction_files_are_the_projects_sources(tmp_path: Path) -> None:
    """Each agent's by its file's name, and Cursor's and Windsurf's rules directories; not in
    the root (its own sources have those), hidden directories, installed packages or through
    a symlinked directory."""
    root = tmp_path / "shop"
    _write(root / "CLAUDE.md", "- Use pnpm.\n")
    api = _write(root / "packages/api/CLAUDE.md", "- The API speaks JSON only.\n")
    web = _write(root / "services/web/AGENTS.md", "- Run the web tests with vitest.\n")
    override = _write(root / "services/web/deep/AGENTS.override.md", "- Not on Fridays.\n")
    docs = _write(root / "docs/GEMINI.md", "- Docs are in British English.\n")
    _write(root / "packages/web/.cursor/rules/react.mdc", "---\nalwaysApply: true\n---\n- Hooks.\n")
    _write(root / "services/web/.windsurf/rules/web.md", "- Use the design tokens.\n")
    _write(root / ".cursor/rules/root.mdc", "- the root's own source has it\n")
    _write(root / "node_modules/left-pad/CLAUDE.md", "- a package's own\n")
    _write(root / ".venv/lib/CLAUDE.md", "- hidden\n")
    _write(root / "packages/api/README.md", "- not an instruction file\n")
    (root / "linked").symlink_to(root / "packages")
    assert _nested(project_sources(root)) == {
        f"project:{root}:nested:docs/GEMINI.md": (str(docs), "gemini"),
        f"project:{root}:nested:packages/api/CLAUDE.md": (str(api), "claude-code"),
        f"project:{root}:nested:packages/web/.cursor/rules/**/*.mdc": (
            f"{root}/packages/web/.cursor/rules/**/*.mdc", "cursor"),
        f"project:{root}:nested:services/web/.windsurf/rules/**/*.md": (
            f"{root}/services/web/.windsurf/rules/**/*.md", "windsurf"),
        f"project:{root}:nested:services/web/AGENTS.md": (str(web), "codex"),
        f"project:{root}:nested:services/web/deep/AGENTS.override.md": (str(override), "codex"),
    }
    scanned = {(str(path.relative_to(root)), agent)
               for source, path, agent in scan(project_sources(root), tmp_path)
               if ":nested:" in source.name}
    assert ("packages/web/.cursor/rules/react.mdc", "cursor") in scanned
    assert ("services/web/.windsurf/rules/web.md", "windsurf") in scanned


def test_a_nested_claude_mds_imports_are_the_projects_and_a_subproject_keeps_its_own(
        tmp_path: Path, memoryd_home: Path) -> None:
    """Claude Code follows a subdirectory CLAUDE.md's ``@path`` imports too; a subdirectory
    that is a project root of its own keeps its CLAUDE.md (one source a file)."""
    root = tmp_path / "shop"
    _write(root / "packages/api/CLAUDE.md", "See @docs/errors.md\n")
    errors = _write(root / "packages/api/docs/errors.md", "- Errors carry a code.\n")
    own = _write(root / "tools/cli/CLAUDE.md", "- The CLI is Go.\n")
    config = memoryd_home / "config/config.toml"
    _write(config, f'[watch]\nproject_roots = ["{root}", "{root / "tools/cli"}"]\n')
    sources, projects = configured_sources(load_config(config))
    owners = {s.path: s.name for s in sources}
    assert owners[str(errors)] == f"project:{root}:claude-import:{errors}"
    assert projects[owners[str(errors)]] == str(root)
    assert owners[str(own)] == f"project:{root / 'tools/cli'}:CLAUDE.md"
    assert [s.name for s in sources if s.path == str(own)] == [owners[str(own)]]


def test_a_tree_past_the_limit_is_looked_at_nearest_its_top_and_the_log_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(nested_files, "MAX_DIRS", 5)
    root = tmp_path / "big"
    near = _write(root / "a/CLAUDE.md", "- near\n")
    for number in range(8):
        _write(root / f"b{number}/deeper/CLAUDE.md", "- far\n")
    with caplog.at_level(logging.WARNING, logger="memoryd.nested_files"):
        found = [path for path, _ in nested_files.nested(str(root))]
    assert found == [str(near)]
    assert f"Project root {root} has more than 5 directories" in caplog.text


def test_instruction_files_made_in_subdirectories_are_indexed_and_their_removal_followed(
        memoryd_home: Path) -> None:
    """A daemon with a project root: a subdirectory's CLAUDE.md there at start is searchable
    as Claude Code's; an AGENTS.md written in another while it runs is found within seconds
    as Codex's, an edit followed; deleted, its entries leave the index. The tree is not
    watched whole: a node_modules of 200 directories costs no watches."""
    project = memoryd_home / "shop"
    for package in range(200):
        (project / f"node_modules/pkg{package}").mkdir(parents=True)
    _write(project / "packages/api/CLAUDE.md", "# API\n\n- Every endpoint answers JSON only.\n")
    latin1 = os.fsencode(project / "packages") + b"/caf\xe9"  # a name that is not UTF-8
    os.mkdir(latin1)
    with open(latin1 + b"/CLAUDE.md", "wb") as handle:
        handle.write(b"- The latin-1 package is left alone.\n")
    (memoryd_home / "config.toml").write_text(f'[watch]\nproject_roots = ["{project}"]\n')
    proc = spawn_daemon(memoryd_home)
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=30) as client:
            def found(query: str, agent: str) -> list[str]:
                return [hit["text"] for hit in search(client, query, agent=agent, match=True)]

            def api_rule() -> None:
                assert found("which format do endpoints answer", "claude-code") == [
                    "Every endpoint answers JSON only."]

            eventually(api_rule)
            web = _write(project / "services/web/AGENTS.md",
                         "# Web\n\n- Run the web tests with vitest, not jest.\n")

            def web_rule(text: str) -> None:
                assert found("how are the web tests run", "codex") == [text]

            eventually(lambda: web_rule("Run the web tests with vitest, not jest."))
            web.write_text("# Web\n\n- Run the web tests with vitest --run, never watch mode.\n")
            eventually(lambda: web_rule("Run the web tests with vitest --run, never watch mode."))
            assert _inotify_watches(proc.pid) <= 8
            web.unlink()

            def gone() -> None:
                assert found("how are the web tests run", "codex") == []

            eventually(gone)
            api_rule()  # the other file's entries stay
    finally:
        assert stop_process(proc) == 0
    assert os.path.exists(project / "packages/api/CLAUDE.md")
    log = (memoryd_home / "daemon.log").read_text(errors="replace")
    # the file in a directory whose name is not UTF-8 is named in the log, once; a watch of
    # its directory stopped the watcher every second
    assert "Watcher stopped" not in log
    assert log.count("packages/caf\\xe9/CLAUDE.md' is not valid UTF-8 (rename it)") == 1, log


def test_claude_mds_above_a_project_root_are_claude_codes_own(
        tmp_path: Path, memoryd_home: Path) -> None:
    """Claude Code loads the CLAUDE.md (and CLAUDE.local.md) of every directory above where it
    works: ``~/work/CLAUDE.md`` for the projects in ``~/work``. Each is a source of Claude
    Code's, once for all the projects below it, not one project's; one that is a project
    root's own file stays that project's."""
    work = tmp_path / "work"
    team = _write(work / "CLAUDE.md", "- Every repository here deploys with the same script.\n")
    mine = _write(tmp_path / "CLAUDE.local.md", "- I review on Mondays.\n")
    for name in ("shop", "kiln/app"):
        (work / name).mkdir(parents=True)
    config = _write(memoryd_home / "config/config.toml",
                    f'[watch]\nproject_roots = ["{work / "shop"}", "{work / "kiln/app"}"]\n')
    sources, projects = configured_sources(load_config(config))
    parents = {s.name: (s.path, s.agent) for s in sources if s.name.startswith("claude-parent:")}
    assert parents == {f"claude-parent:{team}": (str(team), "claude-code"),
                       f"claude-parent:{mine}": (str(mine), "claude-code")}
    assert not set(parents) & set(projects)
    config.write_text(f'[watch]\nproject_roots = ["{work / "shop"}", "{work}"]\n')
    sources, projects = configured_sources(load_config(config))
    owners = [s.name for s in sources if s.path == str(team)]
    assert owners == [f"project:{work}:CLAUDE.md"]


def test_a_file_two_project_roots_reach_is_the_inner_roots(
        tmp_path: Path, memoryd_home: Path) -> None:
    """``~/src`` and ``~/src/shop`` both project roots: ``shop/packages/api/CLAUDE.md`` is
    found by both walks, and is the shop's (its sessions' project), whichever root the
    configuration names first; a note both the user's CLAUDE.md and a project's import stays
    the user's."""
    src = tmp_path / "src"
    shop = src / "shop"
    api = _write(shop / "packages/api/CLAUDE.md", "- The API answers JSON.\n@~/team.md\n")
    home = Path(os.environ["HOME"])
    team = _write(home / "team.md", "- The team reviews on Mondays.\n")
    _write(home / ".claude/CLAUDE.md", "@~/team.md\n")
    config = memoryd_home / "config/config.toml"
    for roots in ([src, shop], [shop, src]):
        _write(config, "[watch]\nproject_roots = [" + ", ".join(f'"{r}"' for r in roots) + "]\n")
        sources, projects = configured_sources(load_config(config))
        owners = [s.name for s in sources if s.path == str(api)]
        assert owners == [f"project:{shop}:nested:packages/api/CLAUDE.md"], roots
        assert projects[owners[0]] == str(shop)
        assert [s.name for s in sources if s.path == str(team)] == [f"claude-import:{team}"]


@pytest.mark.parametrize("above", ["a CLAUDE.md", "a note the user's CLAUDE.md imports"])
def test_a_forget_in_a_projects_claude_md_is_never_committed_to_its_repository(
        daemon, client: Client, above: str) -> None:
    """memoryd commits its edits in memory directories under git, never in a project's own
    repository. A file the agents' files lead to above the project (``~/work/CLAUDE.md``, or
    ``~/work/team.md`` that ``~/.claude/CLAUDE.md`` imports) made ``~/work`` count as a memory
    directory: a forget of a line of ``~/work/shop/CLAUDE.md`` was committed to the shop's
    repository as "memoryd"."""
    home = Path(os.environ["HOME"])
    work = home / "work"
    shop = work / "shop"
    if above == "a CLAUDE.md":
        _write(work / "CLAUDE.md", "- Every repository here deploys with the same script.\n")
    else:
        _write(work / "team.md", "- Every repository here deploys with the same script.\n")
        _write(home / ".claude/CLAUDE.md", "@~/work/team.md\n")
    claude_md = _write(shop / "CLAUDE.md", "# Shop\n\n- Use pnpm, never npm.\n- Tabs only.\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=shop, check=True)
    subprocess.run([*git, "add", "CLAUDE.md"], cwd=shop, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=shop, check=True)
    assert run_cli("sources", "add", "--project", str(shop)).returncode == 0
    def found() -> list[dict[str, str]]:
        hits = search(client, "pnpm never npm", match=True)
        assert len(hits) == 1, hits
        return hits

    [hit] = eventually(found)
    client.forget(hit["id"], agent="claude-code")
    assert "Use pnpm" not in claude_md.read_text()  # the line is gone from the file
    log = subprocess.run(["git", "log", "--format=%an %s"], cwd=shop, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log == ["t start"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                    "-c", "protocol.file.allow=always", *args], cwd=cwd, check=True,
                   capture_output=True)


def _repository(path: Path, *files: tuple[str, str]) -> Path:
    """A git repository holding ``files`` (name, text), committed."""
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    for name, text in files:
        _write(path / name, text)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "--allow-empty", "-m", "files")
    return path


def test_a_nested_repository_a_submodule_and_a_worktree_are_not_the_projects(
        tmp_path: Path) -> None:
    """The walk stops at a directory holding ``.git``: a repository inside the project (its
    own project), a submodule (its ``.git`` a file) and a worktree checked out inside it
    (the project's files on another branch, which a notebook pass would rewrite)."""
    mono = _repository(tmp_path / "mono", ("CLAUDE.md", "- Mono uses pnpm.\n"),
                       ("packages/api/CLAUDE.md", "- The API answers JSON.\n"))
    _repository(mono / "tools/inner", ("CLAUDE.md", "- The inner tool is Rust.\n"),
                ("src/CLAUDE.md", "- Its sources are 2021 edition.\n"))
    gamma = _repository(tmp_path / "gamma", ("CLAUDE.md", "- Gamma is a library.\n"),
                        ("docs/CLAUDE.md", "- Gamma's docs are Sphinx.\n"))
    _git(mono, "submodule", "add", "-q", str(gamma), "libs/gamma")
    _git(mono, "commit", "-q", "-m", "gamma")
    _git(mono, "worktree", "add", "-q", "-b", "fix", "trees/fix")
    assert (mono / "libs/gamma/.git").is_file() and (mono / "trees/fix/.git").is_file()
    assert (mono / "trees/fix/packages/api/CLAUDE.md").is_file()
    assert _nested(project_sources(mono)) == {
        f"project:{mono}:nested:packages/api/CLAUDE.md": (
            str(mono / "packages/api/CLAUDE.md"), "claude-code")}


def test_a_subdirectory_that_becomes_a_repository_leaves_the_project(
        daemon, client: Client, memoryd_home: Path, tmp_path: Path) -> None:
    """Its files' entries leave the project on the next walk (`git init tools/inner` in the
    monorepo); a worktree inside the project is never indexed: each line once."""
    mono = _repository(tmp_path / "mono", ("CLAUDE.md", "- Mono uses pnpm workspaces.\n"),
                       ("packages/api/CLAUDE.md", "- The API answers JSON only.\n"))
    _write(mono / "tools/inner/CLAUDE.md", "- The inner tool is written in Rust.\n")
    _git(mono, "worktree", "add", "-q", "-b", "fix", "trees/fix")
    (memoryd_home / "config.toml").write_text(f'[watch]\nproject_roots = ["{mono}"]\n')
    client.reload()

    def sources() -> list[str]:
        return sorted(e["source"] for e in client.list_entries(agent="claude-code",
                                                               limit=100)["entries"])

    def indexed() -> None:
        assert sources() == sorted(str(mono / name) for name in (
            "CLAUDE.md", "packages/api/CLAUDE.md", "tools/inner/CLAUDE.md"))
        assert client.status()["ingest"]["queue"] == 0

    eventually(indexed)
    searched = run_cli("search", "claude-code", "-", "JSON only", "--here", cwd=str(mono))
    assert searched.stdout.count("The API answers JSON only.") == 1, searched.stdout
    _git(mono / "tools/inner", "init", "-q")

    def left() -> None:
        assert sources() == sorted(str(mono / n) for n in ("CLAUDE.md", "packages/api/CLAUDE.md"))

    eventually(left)
    assert (mono / "tools/inner/CLAUDE.md").read_text() == "- The inner tool is written in Rust.\n"
