"""Whether a notebook is settled enough for a pass to rewrite it, and why not.

A notebook is left as it is, and the run says why, while:

- **a merge is not finished in it**: it holds merge-conflict markers (``<<<<<<< HEAD`` …
  ``>>>>>>> b2``, as :mod:`memoryd.ingest.markdown` reads them), or git lists it as unmerged
  (a conflict resolved in the editor but not yet added). Ordering its bullets moved the
  markers away from the lines they bracket (``=======`` and ``>>>>>>> b2`` before
  ``<<<<<<< HEAD``), and the merge could no longer be finished as git left it;
- **it is being written**: it changed in the last ``passes.settle_s`` seconds (2), or it ends
  in the middle of a line (no final newline) and changed in the last :data:`MID_LINE_TIMES`
  times as long (a minute). A writer that appended the rest later (``cat part2 >>
  CLAUDE.md``) put it at the end of whatever bullet the pass had moved last, and the half line
  was an entry of its own. A file that ends without a newline and has been still for longer is
  one written that way (an editor that adds none): were it left too, such a notebook would
  never be checked.

:class:`Unmerged` asks git once per repository and run, off the database thread.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from memoryd.ingest.markdown import CONFLICT_END, CONFLICT_START
from memoryd.project import checkout_of

#: A notebook ending mid-line is left while it changed in the last ``settle_s`` times this.
MID_LINE_TIMES = 30
GIT_TIMEOUT_S = 10.0


def has_conflict_markers(text: str) -> bool:
    """Whether a line of the text starts or ends a merge conflict (git's markers)."""
    return any(CONFLICT_START.match(line) or CONFLICT_END.match(line)
               for line in text.split("\n") if line[:1] in ("<", ">"))


def why_unsettled(text: str, mtime: float, now: float, settle_s: float) -> str | None:
    """Why a notebook with this text, last changed at ``mtime``, is left for a later run (None:
    it is not)."""
    if has_conflict_markers(text):
        return ("left as it is: it holds merge-conflict markers (a merge not finished); the "
                "first run after the conflict is resolved checks it")
    age = now - mtime
    if abs(age) < settle_s:
        return (f"left for a later run: it changed {max(age, 0):.1f} s ago, and may still be "
                "being written")
    if text and not text.endswith("\n") and abs(age) < settle_s * MID_LINE_TIMES:
        return ("left for a later run: it ends in the middle of a line (no final newline) and "
                f"changed {max(age, 0):.0f} s ago: it may still be being written")
    return None


def unmerged_why() -> str:
    return ("left as it is: git lists it as unmerged (a merge not finished); the first run "
            "after `git add` checks it")


class Unmerged:
    """The files git lists as unmerged, by repository: its work tree is found for a file's
    directory once, and git is asked once per repository (:meth:`read`, off the database
    thread)."""

    def __init__(self) -> None:
        self._roots: dict[str, str | None] = {}
        self._listed: dict[str, frozenset[str]] = {}

    def repository(self, real: Path) -> str | None:
        """The work tree (checkout) of the git repository holding the file ``real`` (its real
        path), None outside git (memoryd.project.checkout_of, once per directory)."""
        directory = str(real.parent)
        if directory not in self._roots:
            self._roots[directory] = checkout_of(directory)
        return self._roots[directory]

    def known(self, root: str) -> bool:
        return root in self._listed

    def read(self, root: str) -> None:
        """Ask git which files of the repository at ``root`` are unmerged (none when git is
        missing or fails: the markers are still looked for)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
        try:
            listed = subprocess.run(["git", "-C", root, "ls-files", "--unmerged", "-z",
                                     "--full-name"], capture_output=True, check=True,
                                    timeout=GIT_TIMEOUT_S, env=env).stdout
        except (OSError, subprocess.SubprocessError):
            listed = b""
        names = set()
        for record in listed.split(b"\0"):
            if b"\t" in record:  # "<mode> <object> <stage>\t<path>"
                names.add(os.path.join(root, os.fsdecode(record.split(b"\t", 1)[1])))
        self._listed[root] = frozenset(names)

    def holds(self, root: str, real: Path) -> bool:
        return str(real) in self._listed.get(root, frozenset())
