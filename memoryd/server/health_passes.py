"""The checks of the passes' runs (`memory doctor`, the health line of `memory status`): the
files their last runs left as they were, the passes whose last run failed, the runs a stop cut
short. memoryd.server.health runs the checks.
"""

from __future__ import annotations

import time
from typing import Any

from memoryd.passes.runner import PassRunner
from memoryd.server.health_words import OK, SHOWN_FILES, WARNING, again, check, of_target
from memoryd.server.parts import Parts


class PassChecks:
    def __init__(self, parts: Parts, passes: PassRunner | None) -> None:
        self.parts = parts
        self.passes = passes

    async def unwritten(self) -> dict[str, Any]:
        """The files the passes' last runs left as they were because they may not or cannot
        rewrite them (read-only, hard links, immutable, a read-only file system)."""
        passes = self.passes
        found = await self.parts.db(passes.runs.unwritten) if passes else []
        if not found:
            return check("unwritten", OK, "the passes' last runs wrote every file they changed")
        shown = [f"{path}: {why.removeprefix('not written: ')} (memory pass show {run})"
                 for path, why, run in found[:SHOWN_FILES]]
        if len(found) > SHOWN_FILES:
            shown.append(f"and {len(found) - SHOWN_FILES} more")
        return check("unwritten", WARNING, f"{len(found)} file{'' if len(found) == 1 else 's'} "
                     "the passes leave as they are: " + "; ".join(shown),
                     "the reason says what to change; the other files are maintained, and the "
                     "next run tries these again")

    def failed_runs(self) -> dict[str, Any]:
        """The passes whose last run failed (since this start; a later run done clears it)."""
        failed = sorted(self.passes.failed.items()) if self.passes is not None else []
        if not failed:
            return check("passes", OK, "no pass's last run failed")
        shown = [f"{run.run} {name} failed at "
                 f"{time.strftime('%H:%M', time.localtime(run.at))}: {run.error}"
                 for name, run in failed]
        return check("passes", WARNING, "; ".join(shown),
                     "the error says why; the pass runs again at its next scheduled time "
                     "(or `memory pass run NAME`), and `memory pass show RUN` lists what the "
                     "failed run did")

    async def interrupted(self) -> dict[str, Any]:
        """The runs a stop cut short (a kill, a power loss) that hold applied changes no
        later run made whole: each is half done, and says what to do."""
        passes = self.passes
        found = await self.parts.db(passes.runs.interrupted) if passes else []
        if not found:
            return check("interrupted", OK, "no run a stop cut short holds changes")
        shown = [f"{run['run']} {run['pass']}{of_target(run)} with {applied} change"
                 f"{'' if applied == 1 else 's'} applied (memory undo {run['run']} takes them "
                 f"back, or {again(run)} finishes the work)"
                 for run, applied in found[:SHOWN_FILES]]
        if len(found) > SHOWN_FILES:
            shown.append(f"and {len(found) - SHOWN_FILES} more")
        return check("interrupted", WARNING, f"{len(found)} run"
                     f"{'' if len(found) == 1 else 's'} stopped midway, half done: "
                     + "; ".join(shown),
                     "undo the run, or run it again; nothing was lost (memory pass show RUN "
                     "lists what it did)")
