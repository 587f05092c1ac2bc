"""Full garbage collections wait for a quiet moment while the daemon runs, but never for long."""

from __future__ import annotations

import gc
from pathlib import Path

import apsw
import pytest
from memoryd_client import Client

from memoryd import collector
from memoryd.collector import IDLE_S, MAX_INTERVAL_S, MIN_INTERVAL_S, NEVER, due, quiet
from memoryd.embedding.model import Embedder
from tests.conftest import start_daemon, wait_until


def test_a_full_collection_waits_for_a_quiet_moment() -> None:
    now = 10_000.0
    long_ago = now - MIN_INTERVAL_S
    assert due(now, last_request=now - IDLE_S, last_full=long_ago, in_flight=0)
    assert not due(now, last_request=now - 1, last_full=long_ago, in_flight=0)  # requests coming
    assert not due(now, last_request=now - IDLE_S, last_full=long_ago, in_flight=1)
    assert not due(now, last_request=now - 3600, last_full=now - 1, in_flight=0)  # just ran


def test_a_busy_daemon_still_collects_now_and_then() -> None:
    now = 10_000.0
    assert due(now, last_request=now, last_full=now - MAX_INTERVAL_S, in_flight=3)
    # but the work that may hold the database thread (the planner's statistics) waits on
    assert not quiet(now, last_request=now, in_flight=3)
    assert not quiet(now, last_request=now - IDLE_S, in_flight=1)
    assert quiet(now, last_request=now - IDLE_S, in_flight=0)


def test_the_daemon_defers_full_collections_while_it_runs(
        embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    first = start_daemon(embedder)
    try:
        assert gc.get_threshold() == (before[0], before[1], NEVER)
        monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "second"))
        second = start_daemon(embedder)  # two in one process share the thresholds
        second.stop()
        assert gc.get_threshold() == (before[0], before[1], NEVER)  # the first one still runs
    finally:
        first.stop()
    assert gc.get_threshold() == before


def _planner_statistics(db_path: Path) -> set[str]:
    """The indexes of entries the query planner has statistics of (read as SQLite does)."""
    db = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchall():
            return set()
        return {idx for (idx,) in db.execute(
            "SELECT idx FROM sqlite_stat1 WHERE tbl = 'entries' AND stat NOT LIKE '0 %'")}
    finally:
        db.close()


def test_a_store_opened_empty_gets_its_planner_statistics_once_it_has_grown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The statistics were taken at opening only: a daemon that filled its store ran without
    any until it restarted, and the memory block took twice its time. They are refreshed at
    the collector's quiet moments."""
    for name, value in (("CHECK_EVERY_S", 0.05), ("MIN_INTERVAL_S", 0.1), ("IDLE_S", 0.1)):
        monkeypatch.setattr(collector, name, value)
    running = start_daemon(None)  # keyword-only: what is measured is the store's
    try:
        with Client(running.socket, timeout_s=30) as client:
            for i in range(40):
                client.remember("coder", "infra", f"host {i} of the fleet runs service {i}",
                                is_global=True)
        wait_until(lambda: "entries_kind" in _planner_statistics(running.config.db_path))
    finally:
        running.stop()
