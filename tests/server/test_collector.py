"""Full garbage collections wait for a quiet moment while the daemon runs, but never for long."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from memoryd.collector import IDLE_S, MAX_INTERVAL_S, MIN_INTERVAL_S, NEVER, due
from memoryd.embedding.model import Embedder
from tests.conftest import start_daemon


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
