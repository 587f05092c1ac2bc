"""The file `memory ui` opens the browser at: a page that sends it on to the viewer's address.

A browser is started with the address it opens on its command line, which every user of the
machine can read (``ps -eo args``) for as long as the browser runs; the viewer's address holds
the token, the key to your memory. So the browser is given a file instead, as Jupyter does: a
page in a folder of the state dir that only its user may open (0700, the page 0600), which
takes the browser to the address (a meta refresh, and ``location.replace`` so that going back
does not land on it again). The viewer removes its page when it stops; one left by a viewer
that was killed is removed by the next `memory ui` (its process is gone).
"""

from __future__ import annotations

import html
import json
import os
from contextlib import suppress
from pathlib import Path

from memoryd_client.paths import state_dir

#: The folder under the state dir, and the pages' names (``open-PID.html``).
FOLDER, PREFIX, SUFFIX = "ui", "open-", ".html"

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url={attribute}">
<title>memoryd: opening the viewer</title>
<script>location.replace({script});</script>
</head><body>
<p>Opening the memoryd viewer. If nothing happens, <a href="{attribute}">open it here</a>.</p>
</body></html>
"""


def folder() -> Path:
    return state_dir() / FOLDER


def write(url: str) -> Path:
    """A page leading to ``url``, readable by this user only; returns its path. Pages left by
    viewers no longer running are removed first."""
    where = folder()
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(where, 0o700)  # made before, or under a umask that let others in
    remove_stale(where)
    path = where / f"{PREFIX}{os.getpid()}{SUFFIX}"
    remove(path)  # a page of an earlier process with this id: made again, with this mode
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as page:
        page.write(PAGE.format(attribute=html.escape(url, quote=True),
                               script=json.dumps(url).replace("</", "<\\/")))
    return path


def remove(path: Path) -> None:
    with suppress(FileNotFoundError):
        path.unlink()


def remove_stale(where: Path) -> None:
    """Remove the pages of viewers that are no longer running (killed before they could)."""
    for path in where.glob(f"{PREFIX}*{SUFFIX}"):
        pid = path.name.removeprefix(PREFIX).removesuffix(SUFFIX)
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            remove(path)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: running
        return True
    return True
