"""WAL checkpoints on a thread of their own, so that no commit on the database thread pays one.

SQLite's automatic checkpoint runs inside the commit that takes the WAL past 1,000 pages: it
copies the pages into the database file and fsyncs it, 20–30 ms (more at a million entries)
in the middle of whatever committed — a pass's step, an ingest slice — while a search waited
behind it. The daemon's connection instead reports each commit's WAL size to a
:class:`Checkpointer` (a WAL hook, which also turns the automatic checkpoint off), and a second
connection on its own thread runs a PASSIVE checkpoint once the WAL has grown past
``CHECKPOINT_PAGES``: it takes no lock a writer or a reader waits for (the sqlite calls release
the GIL), and the WAL restarts from its beginning once a checkpoint has caught up.

Durability does not change: a commit is in the WAL either way.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import apsw

log = logging.getLogger(__name__)

#: The WAL size (pages) at which a checkpoint is wanted: SQLite's own default.
CHECKPOINT_PAGES = 1000
#: A checkpoint also runs this often while commits keep coming, whatever the size.
CHECKPOINT_EVERY_S = 30.0


class Checkpointer:
    """Checkpoints the WAL of ``path`` on its own thread; ``watch(db)`` hands it a connection's
    commits. ``close()`` before closing that connection (whose close checkpoints the rest)."""

    def __init__(self, path: Path) -> None:
        self.db = apsw.Connection(str(path))
        self._wanted = threading.Event()
        self._closing = False
        self._pages = 0
        self._thread = threading.Thread(target=self._run, name="memoryd-checkpoint", daemon=True)
        self._thread.start()

    def watch(self, db: apsw.Connection) -> None:
        db.set_wal_hook(self._committed)

    def _committed(self, _db: apsw.Connection, _name: str, pages: int) -> int:
        self._pages = pages
        if pages >= CHECKPOINT_PAGES:
            self._wanted.set()
        return apsw.SQLITE_OK

    def _run(self) -> None:
        while not self._closing:
            self._wanted.wait(CHECKPOINT_EVERY_S)
            self._wanted.clear()
            if self._closing or not self._pages:
                continue
            self._pages = 0
            try:
                self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except apsw.Error as exc:  # busy with another checkpoint, or closing: try later
                log.debug("WAL checkpoint skipped: %s", exc)

    def close(self) -> None:
        self._closing = True
        self._wanted.set()
        self._thread.join()
        self.db.close()
