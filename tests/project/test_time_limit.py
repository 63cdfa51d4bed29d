"""A looping regression fails with its test's name instead of hanging CI (issue 41 point 3)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_has_a_per_test_time_limit() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    limit = config["tool"]["pytest"]["ini_options"]["timeout"]
    # Generous for the slowest honest test (about 70 s on a loaded machine), finite for a loop.
    assert 120 <= limit <= 900


def test_a_test_that_loops_forever_fails_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "test_loop.py").write_text(
        "def test_search_that_never_ends():\n    while True:\n        pass\n", encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--timeout", "2", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Timeout" in result.stdout + result.stderr
    assert "test_search_that_never_ends" in result.stdout
