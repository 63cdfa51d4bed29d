"""The quality gates run with the tests, so CI (which runs the README's test command) sees them.

ruff check, ruff format --check, mypy --strict on the packages, and the strict docs build
(which also checks that docs/cli.md shows the real ``--help`` of every command).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PACKAGES = ["notify_core", "notify_pg", "notify_reference_host", "notify_cli"]
LINT_PATHS = [
    *PACKAGES,
    "tests",
    "bench",
    "docs/griffe_extensions.py",
    "docs/cli_help.py",
    "docs/rule_refs.py",
    "noxfile.py",
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", *LINT_PATHS], ["ruff", "format", "--check", *LINT_PATHS]],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff(command: list[str]) -> None:
    result = run(str(BIN / command[0]), *command[1:])
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = run(sys.executable, "-m", "mypy", "--strict", *PACKAGES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_docs_build_strict(docs_site: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    # The build itself is the conftest fixture, shared with the browser tests (test_docs_site).
    result, _ = docs_site
    assert result.returncode == 0, result.stdout + result.stderr
