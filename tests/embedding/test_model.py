"""The shipped model is exactly what scripts/derive_model.py derives from the pinned one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.embedding.model import DEFAULT_MODEL_SHA256, file_sha256, locate_model

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_model_has_the_pinned_hash() -> None:
    files = locate_model("default")
    assert file_sha256(files.model_path) == DEFAULT_MODEL_SHA256


def test_the_script_derives_the_shipped_model() -> None:
    onnx = pytest.importorskip("onnx")
    import onnxruntime

    if (onnx.__version__, onnxruntime.__version__) != ("1.23.2", "1.32.0"):
        pytest.skip(f"the pinned bytes come from onnx 1.23.2 / onnxruntime 1.32.0, not "
                    f"{onnx.__version__} / {onnxruntime.__version__}")
    derived = subprocess.run([sys.executable, str(ROOT / "scripts" / "derive_model.py"), "--check"],
                             capture_output=True, text=True, timeout=300)
    assert derived.returncode == 0, derived.stdout + derived.stderr
    assert "matches the pinned sha256" in derived.stdout
