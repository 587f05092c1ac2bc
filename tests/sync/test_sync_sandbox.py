"""A remote the systemd unit's sandbox keeps memoryd from reaching: the unit allows only Unix
sockets (RestrictAddressFamilies=AF_UNIX), so git's connection fails with EAFNOSUPPORT. What
`memory sync` and `memory doctor` say then names the drop-in that lets it through, not the
network or an ssh key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memoryd.sync import git
from memoryd.sync.git import SyncError
from memoryd.sync.repo import reachable

#: What git prints when socket(AF_INET) fails as the unit's seccomp filter makes it fail.
REFUSED = ("fatal: unable to connect to github.com:\ngithub.com[0: 140.82.121.4]: "
           "errno=Address family not supported by protocol")


def failing(folder: Path, said: str) -> str:
    """An ext:: remote: git runs a program in place of the connection, which says ``said``."""
    program = folder / f"remote-{abs(hash(said))}"
    program.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{said}\nEOF\nexit 128\n")
    program.chmod(0o755)
    return f"ext::{program}"


@pytest.fixture
def sandboxed_remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose origin fails as a remote reached from inside the unit does (git's
    ext:: transport runs a command in place of the connection)."""
    for key, value in {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.ext.allow",
                       "GIT_CONFIG_VALUE_0": "always"}.items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "state"
    subprocess.run(["git", "init", "--quiet", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin",
                    failing(tmp_path, REFUSED)], check=True)
    return root


def test_the_doctor_and_a_sync_name_the_drop_in_that_lets_git_through(sandboxed_remote) -> None:
    problem = reachable(sandboxed_remote)
    assert problem is not None and "Address family not supported" in problem
    assert "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" in problem
    assert "systemctl --user edit memoryd" in problem
    with pytest.raises(SyncError, match=r"systemctl --user edit memoryd"):
        git.run(sandboxed_remote, "fetch", "origin", timeout=git.NETWORK_TIMEOUT_S)


def test_another_failure_is_told_as_git_said_it(sandboxed_remote, tmp_path) -> None:
    subprocess.run(["git", "-C", str(sandboxed_remote), "remote", "set-url", "origin",
                    failing(tmp_path, "fatal: repository not found")], check=True)
    problem = reachable(sandboxed_remote)
    assert problem is not None and "repository not found" in problem
    assert "RestrictAddressFamilies" not in problem
