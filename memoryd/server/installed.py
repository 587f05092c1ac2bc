"""Whether the code on disk is still the code the daemon runs.

Upgrading memoryd (pip, uv, a ``git pull`` of an editable checkout) changes the files at once,
and with them the `memory` command the hooks run; the daemon keeps the code it started with
until it is restarted, and a newer client may send what it does not know. So the daemon notes,
when it starts, the newest change among its packages' files (``memoryd`` and
``memoryd_client``), and ``status`` and ``doctor`` say when a file changed since (the check
``code``). A file's ctime, not its mtime: an installer may keep a wheel's mtimes, or link files
from its cache, but every write, rename or link of a file sets its ctime. Bytecode caches are
left out: the daemon writes them itself as it imports.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import memoryd_client


@dataclass(frozen=True)
class Change:
    """The newest change of a package file: when (epoch seconds) and which file."""
    at: float
    path: str


def newest_change(roots: tuple[Path, ...]) -> Change | None:
    """The file below ``roots`` changed last (its ctime), bytecode caches left out; None when
    there is none."""
    newest: Change | None = None
    stack = [str(root) for root in roots]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:  # removed while looked at (an upgrade in progress)
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                    continue
                if entry.name.endswith(".pyc"):
                    continue
                at = entry.stat(follow_symlinks=False).st_ctime
            except OSError:
                continue
            if newest is None or at > newest.at:
                newest = Change(at, entry.path)
    return newest


#: Seconds between two looks at the files: `memory status` may be asked every few
#: milliseconds (`--watch`, a script), and a look is a few hundred stats (~6 ms on a busy
#: machine); an upgrade is said this much later at most.
LOOK_EVERY_S = 10.0


class InstalledCode:
    """The daemon's packages on disk, against what they were when it started."""

    def __init__(self, roots: tuple[Path, ...]) -> None:
        self.roots = roots
        self.at_start = newest_change(roots)
        self.looked = time.monotonic()
        self.found: Change | None = None  # once changed, changed: the daemon runs the old code

    @classmethod
    def of_packages(cls) -> InstalledCode:
        """The packages this process imported its code from."""
        return cls((Path(__file__).parent.parent, Path(memoryd_client.__file__).parent))

    def changed(self, look: bool = False) -> Change | None:
        """The newest change of a file since the daemon started, or None: as of the last
        look, at most :data:`LOOK_EVERY_S` ago, or as of now with ``look``."""
        if self.found is None and (look or time.monotonic() - self.looked >= LOOK_EVERY_S):
            self.looked = time.monotonic()
            now = newest_change(self.roots)
            start = self.at_start.at if self.at_start is not None else 0.0
            if now is not None and now.at > start:
                self.found = now
        return self.found
