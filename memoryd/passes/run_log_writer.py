"""The run log as the runs write it (memoryd.passes.runs): what a
transaction records — runs, changes, states — goes to ``passes.jsonl`` (memoryd.store.run_log)
as well as the database, appended at the end of the transaction, after the ledger records of
its entries and before the commit, and taken back when the transaction fails."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memoryd.store.database import Store
from memoryd.store.durable import not_stored
from memoryd.store.entries import Entries
from memoryd.store.run_log import RunLog, change_lines, run_lines, run_log_key


class RunLogWriter:
    """Runs on the database thread."""

    def __init__(self, store: Store, entries: Entries, state_dir: Path) -> None:
        self.store = store
        self.entries = entries
        self.log = RunLog.in_state(state_dir)
        #: the lines of the transaction being recorded (:meth:`recording`)
        self._lines: list[dict[str, Any]] | None = None

    @contextmanager
    def recording(self) -> Iterator[None]:
        """A transaction whose runs and changes also go to the file: its lines are appended
        at the end, after the ledger records of its entries and before the commit, and taken
        back when the transaction fails (as the ledgers' are: Entries.transaction). An append
        the disk refuses is answered as the ledger's is: ``unavailable: not stored: …``, with
        the transaction and its ledger records taken back."""
        outer = self._lines is None
        if outer:
            self._lines = []
        appended: tuple[int, int] | None = None
        try:
            with self.entries.transaction():
                yield
                if outer and self._lines:
                    try:
                        appended = self.log.append(self._lines)
                    except OSError as exc:  # as the ledger's append: Entries.write_ledger
                        raise not_stored(f"cannot write the run log {self.log.path.name}",
                                         exc) from None
                    self.store.set_meta(run_log_key(), str(appended[1]))
        except BaseException:
            if appended is not None:
                self.log.cut(appended[0])
            raise
        finally:
            if outer:
                self._lines = None

    def _pending(self) -> list[dict[str, Any]]:
        assert self._lines is not None, "a run log write outside recording()"
        return self._lines

    def runs(self, runs: list[int], finished: bool) -> None:
        """These runs as recorded now: begun, or finished."""
        self._pending().extend(run_lines(self.store, runs, finished))

    def changes(self, changes: list[int]) -> None:
        """These changes as recorded now."""
        self._pending().extend(change_lines(self.store, changes))

    def state(self, changes: list[int], state: str) -> None:
        self._pending().append({"op": "state", "ids": changes, "state": state})
