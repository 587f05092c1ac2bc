"""The benches call what memoryd has: a bench makes its calls into the package late (after
minutes of building a store) and no test runs it, so a name that moved, went or took new
arguments in memoryd/ broke two benches unseen (bench_doctor and bench_retain, after the
refactor of 2026-11-28). Importing the benches would not have caught it (every name they
imported still existed); mypy does, with bench/mypy.ini keeping only the checks such a change
trips (a missing attribute or module, a call with the wrong arguments). Marked slow: mypy reads
the whole package, ~20 s without a cache.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_benches_call_what_memoryd_has(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy comes with the lint extra")
    benches = sorted(str(path) for path in (ROOT / "bench").glob("*.py"))
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "bench" / "mypy.ini"),
         "--cache-dir", str(tmp_path / "mypy"), *benches],
        capture_output=True, text=True, cwd=tmp_path, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
