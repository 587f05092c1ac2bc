"""The ``git`` program, run as a subprocess in the state dir: sync needs git installed (2.28 or
newer; ``memory doctor`` says when it is missing). With git 2.38 or newer a merge is made off
the worktree (``git merge-tree --write-tree``), beside searches and writes; an older git merges
in the worktree, while writes wait (:func:`merges_off_worktree`).

Every run has a timeout (the network's longer), never asks on a terminal (no password prompt
can hang the daemon: ``GIT_TERMINAL_PROMPT=0``, ssh in batch mode unless the user set
``GIT_SSH_COMMAND``), ignores the user's hooks and signing settings (these are memoryd's
commits), and its failure is a :class:`SyncError` that says which git command failed and what
git said.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from memoryd.errors import UnavailableError

LOCAL_TIMEOUT_S = 300.0
NETWORK_TIMEOUT_S = 120.0
#: memoryd's commits, whatever the user's git configuration says.
IDENTITY = ("-c", "user.name=memoryd", "-c", f"user.email=memoryd@{socket.gethostname()}",
            "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null",
            "-c", "core.autocrlf=false", "-c", "core.quotepath=false")


class SyncError(UnavailableError):
    """A git command failed (the remote unreachable, a rejected push, git missing)."""

    code = "unavailable"


def git_program() -> str | None:
    return shutil.which("git")


#: The first git whose ``merge-tree --write-tree`` makes a real merge without a worktree.
MERGE_TREE_VERSION = (2, 38)


@functools.cache
def version() -> tuple[int, int] | None:
    """git's version (major, minor), None when there is no git or it does not say."""
    program = git_program()
    if program is None:
        return None
    try:
        said = subprocess.run([program, "--version"], capture_output=True, timeout=30,
                              check=False).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"(\d+)\.(\d+)", said)
    return (int(found.group(1)), int(found.group(2))) if found else None


def merges_off_worktree() -> bool:
    """Whether this git merges into a commit without touching the worktree (2.38 or newer)."""
    found = version()
    return found is not None and found >= MERGE_TREE_VERSION


def environment() -> dict[str, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=20")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # a hook's leftovers
        env.pop(name, None)
    return env


def run(root: Path, *args: str, check: bool = True, data: bytes | None = None,
        timeout: float = LOCAL_TIMEOUT_S,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``git args`` in ``root``; raises :class:`SyncError` when it fails and ``check``.
    ``env``: variables set for this run (a temporary index)."""
    program = git_program()
    if program is None:
        raise SyncError("sync needs git, and no `git` is on the PATH (install git)")
    try:
        done = subprocess.run([program, *IDENTITY, *args], cwd=root, input=data,
                              capture_output=True, timeout=timeout,
                              env={**environment(), **(env or {})},
                              check=False)
    except subprocess.TimeoutExpired:
        raise SyncError(f"git {args[0]} did not finish within {timeout:.0f} s") from None
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise SyncError(f"git {' '.join(args[:2])} failed: "
                        f"{explained(said[-600:]) or done.returncode}")
    return done


#: What git says when a sandbox lets it open no network socket (errno EAFNOSUPPORT).
NO_NETWORK = "Address family not supported"
SERVICE_NETWORK = (" (the memoryd service's unit keeps it off the network: for a remote "
                   "reached over the network, `systemctl --user edit memoryd`, add "
                   "`RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6` under [Service], then "
                   "`systemctl --user restart memoryd`)")


def explained(said: str) -> str:
    """What git said, with what to do when the service's sandbox is what stopped it."""
    return said + SERVICE_NETWORK if NO_NETWORK in said else said


def text(root: Path, *args: str, check: bool = True) -> str:
    """git's output as text, stripped."""
    return run(root, *args, check=check).stdout.decode("utf-8", "replace").strip()
