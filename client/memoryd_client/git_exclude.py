"""Keeping the settings file `memory hook install --project DIR` writes out of `git status`.

The file holds absolute paths into this user's installation, so it is personal: it belongs in
the repository's ``info/exclude`` (read by git like a ``.gitignore``, but local: never
committed, shared by the repository's worktrees), not in a ``.gitignore`` everybody gets.
Install adds two lines there, a comment saying who wrote them and the file's path from the
checkout's root; uninstall removes exactly those two lines, and leaves a line it did not write
(the user's own) alone. A file git already tracks is not hidden by an exclude (`git status`
shows it changed, `git commit -a` takes it): :func:`tracked` tells install, which refuses to
write it. Outside a git repository nothing is done.
"""

from __future__ import annotations

import os
import re
import subprocess

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from pathlib import Path

MARK = "# memoryd: personal hook settings (memory hook install; uninstall removes these lines)"


def _where(path: str) -> tuple[str, str] | None:
    """(the line that names ``path``, the exclude file), or None outside git."""
    from memoryd_client.project import checkout_of, git_common_dir

    directory = os.path.dirname(path)
    while not os.path.isdir(directory):  # uninstall may have removed the file's directory
        directory = os.path.dirname(directory)
    checkout = checkout_of(directory)
    if checkout is None:
        return None
    common = git_common_dir(os.path.join(checkout, ".git"))
    if common is None:
        return None
    real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    relative = os.path.relpath(real, checkout).replace(os.sep, "/")
    line = "/" + re.sub(r"([*?\[\\#!])", r"\\\1", relative)
    return line, os.path.join(common, "info", "exclude")


def tracked(path: str) -> bool:
    """Whether git tracks ``path`` (it is in its checkout's index); False outside git, and
    when git cannot be asked (no git program, a repository it refuses)."""
    from memoryd_client.project import checkout_of

    directory = os.path.dirname(path)
    while not os.path.isdir(directory):  # install may not have made the file's directory yet
        directory = os.path.dirname(directory)
    checkout = checkout_of(directory)
    if checkout is None:
        return False
    real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    try:
        listed = subprocess.run(
            ["git", "--literal-pathspecs", "-C", checkout, "ls-files", "-z", "--",
             os.path.relpath(real, checkout)],
            capture_output=True, timeout=10, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return listed.returncode == 0 and bool(listed.stdout)


def _read(exclude: str) -> str:
    try:
        with open(exclude, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def _write(exclude: str, text: str) -> None:
    from memoryd_client.atomic_file import write_atomically

    os.makedirs(os.path.dirname(exclude), exist_ok=True)
    mode = os.stat(exclude).st_mode & 0o7777 if os.path.exists(exclude) else 0o644
    write_atomically(exclude, text, mode)


def add(path: str) -> str | None:
    """List ``path`` in its repository's exclude file; what was done, or None (not in git, or
    listed already)."""
    found = _where(path)
    if found is None:
        return None
    line, exclude = found
    text = _read(exclude)
    if line in text.splitlines():
        return None
    separator = "" if not text or text.endswith("\n") else "\n"
    _write(exclude, f"{text}{separator}{MARK}\n{line}\n")
    return f"kept out of git status: {line} added to {exclude}"


def remove(path: str) -> str | None:
    """Take out the lines install added for ``path``; what was done, or None."""
    found = _where(path)
    if found is None:
        return None
    line, exclude = found
    text = _read(exclude)
    ours = f"{MARK}\n{line}\n"
    if ours not in text:
        return None
    _write(exclude, text.replace(ours, "", 1))
    return f"{line} taken out of {exclude} again"


def refuse_tracked(harness: str, project: str | None, paths: list[Path],
                   holds_ours: bool = False) -> None:
    """Refuse a project's files that git tracks, before anything is written: memoryd's hooks in
    them are this user's absolute paths (the `memory` program, MEMORYD_HOME), an exclude does
    not hide a tracked file from ``git status``, and ``git commit -a`` would publish them.
    ``holds_ours``: the file has memoryd's hooks already (uninstall takes them out)."""
    if project is None:
        return
    found = [str(path) for path in paths if tracked(str(path))]
    if not found:
        return
    raise ValueError(
        f"{', '.join(found)}: tracked by git, so memoryd does not write its hooks there "
        "(they hold this user's absolute paths, which `git status` would show and `git commit "
        "-a` would publish: an exclude does not hide a tracked file); nothing was changed. "
        f"Install for the user instead: memory hook install {harness}"
        + (f" (and `memory hook uninstall {harness} --project {project}` takes out the "
           "memoryd hooks it holds)" if holds_ours else ""))
