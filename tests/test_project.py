"""One project identity (memoryd_client.project.project_of, which memoryd.project re-exports)
for the clients and the hooks: every checkout of a repository names one project, a bare
repository's worktrees included."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from memoryd import project
from tests.conftest import run_cli


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=cwd, check=True, capture_output=True)


def repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "start")
    return path


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
