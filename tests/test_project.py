"""One project identity (memoryd_client.project.project_of, which memoryd.project re-exports)
for the clients, the hooks and the watched files: every checkout of a repository names one
project, a bare repository's worktrees included, and a project root given through a symlink
or as a worktree names the project the hooks and ``--here`` name."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memoryd_client import Client

from memoryd import project
from memoryd.embedding.model import Embedder
from tests.conftest import run_cli, start_daemon
from tests.ingest.test_ingest import eventually


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=cwd, check=True, capture_output=True)


def repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "start")
    return path


def entries(client: Client) -> dict[str, str | None]:
    """text → project of the agent's entries."""
    return {e["text"]: e["project"] for e in client.list_entries(agent="claude-code",
                                                                 limit=100)["entries"]}


def test_a_bare_repositorys_worktrees_are_one_project(daemon, tmp_path: Path) -> None:
    """``git clone --bare``, then a worktree per branch: what is stored in one is the other's
    too (its project is the bare repository), as a worktree of a checkout is the checkout's."""
    real = Path(os.path.realpath(tmp_path))
    beta = repository(real / "beta")
    git(real, "clone", "-q", "--bare", str(beta), "proj.git")
    git(real / "proj.git", "worktree", "add", "-q", "../proj-main", "main")
    git(real / "proj.git", "worktree", "add", "-q", "-b", "feat", "../proj-feat")
    stored = run_cli("store", "claude-code", "notes", "Proj builds with make",
                     cwd=str(real / "proj-main"))
    assert stored.returncode == 0 and f"(project {real / 'proj.git'};" in stored.stdout
    listed = run_cli("list", "claude-code", "--here", cwd=str(real / "proj-feat"))
    assert "Proj builds with make" in listed.stdout, listed.stdout
    listed = run_cli("list", "claude-code", "--project", str(real / "proj-feat" / "."))
    assert "Proj builds with make" in listed.stdout, listed.stdout
    assert "Proj builds" not in run_cli("list", "claude-code", "--here", cwd=str(beta)).stdout
    # the layout with the bare repository beside its worktrees (``proj/.bare``, ``proj/.git``)
    layout = real / "layout"
    git(real, "clone", "-q", "--bare", str(beta), "layout/.bare")
    (layout / ".git").write_text("gitdir: ./.bare\n")
    git(layout, "worktree", "add", "-q", "main", "main")
    assert {project.project_of(layout), project.project_of(layout / "main")} == {
        str(layout / ".bare")}
    # a submodule, a nested repository: each its own project
    nested = repository(beta / "tools/inner")
    assert project.project_of(nested) == str(nested) != project.project_of(beta)


def test_a_project_root_through_a_symlink_or_a_worktree_is_reachable(
        daemon, client: Client, memoryd_home: Path, tmp_path: Path) -> None:
    real = Path(os.path.realpath(tmp_path))
    gamma = repository(real / "code/gamma")
    (gamma / "CLAUDE.md").write_text("- Gamma deploys with helm charts\n")
    (real / "links").mkdir()
    (real / "links/gamma").symlink_to(gamma)
    alpha = repository(real / "code/alpha2")
    feature = real / "wt/alpha-feature"
    git(alpha, "worktree", "add", "-q", "-b", "feature", str(feature))
    (feature / "CLAUDE.md").write_text("- The feature branch talks to the v2 API\n")
    (memoryd_home / "config.toml").write_text(
        f'[watch]\nproject_roots = ["{real / "links/gamma"}"]\n')
    client.reload()
    added = run_cli("sources", "add", "--project", str(feature))
    assert added.returncode == 0, added.stderr

    def filed() -> None:
        assert entries(client) == {"Gamma deploys with helm charts": str(gamma),
                                   "The feature branch talks to the v2 API": str(alpha)}

    eventually(filed)
    for cwd in (real / "links/gamma", gamma):
        found = run_cli("search", "claude-code", "-", "helm charts", "--here", cwd=str(cwd))
        assert "Gamma deploys with helm charts" in found.stdout, (cwd, found.stdout)
    for cwd in (alpha, feature):
        found = run_cli("search", "claude-code", "-", "v2 API", "--here", cwd=str(cwd))
        assert "talks to the v2 API" in found.stdout, (cwd, found.stdout)
    listed = run_cli("list", "claude-code", "--project", str(alpha), "--json")
    assert [e["text"] for e in json.loads(listed.stdout)["entries"]] == [
        "The feature branch talks to the v2 API"]


def test_a_roots_files_move_when_its_project_is_another_at_the_next_start(
        memoryd_home: Path, embedder: Embedder, tmp_path: Path) -> None:
    """Entries a memoryd filed under a root's path as given (a symlink's, a worktree's, a
    directory's before its repository was made around it) move to the project the root names
    now, each under its id, without a word from the user."""
    real = Path(os.path.realpath(tmp_path))
    package = real / "mono/packages/api"
    package.mkdir(parents=True)
    (package / "CLAUDE.md").write_text("- The API answers JSON only\n")
    (memoryd_home / "config.toml").write_text(f'[watch]\nproject_roots = ["{package}"]\n')
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            def filed() -> None:
                assert entries(client) == {"The API answers JSON only": str(package)}

            eventually(filed)
            [before] = client.list_entries(agent="claude-code")["entries"]
        running.stop()
        repository(real / "mono")
        running = start_daemon(embedder)
        with Client(running.socket) as client:
            def moved() -> None:
                assert entries(client) == {"The API answers JSON only": str(real / "mono")}

            eventually(moved)
            [after] = client.list_entries(agent="claude-code")["entries"]
            assert after["id"] == before["id"]
            assert [e["action"] for e in client.history(after["id"])["events"]] == [
                "indexed", "scope"]
    finally:
        running.stop()
