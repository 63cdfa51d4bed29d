"""G1: the core is pure. Its modules import no I/O and never read the clock or chance.

The import-layer contract (pyproject ``[tool.importlinter]``) guards the arrows between the
packages; this test runs it too, so a broken layer fails the suite.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "notify_core"
FORBIDDEN_MODULES = {
    "os",
    "socket",
    "time",
    "random",
    "secrets",
    "subprocess",
    "threading",
    "asyncio",
    "logging",
    "sys",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "urllib",
    "http",
    "sqlite3",
    "psycopg",
    "click",
    "rich",
    "opentelemetry",
    "prometheus_client",
    "notify_pg",
    "notify_reference_host",
    "notify_cli",
}
FORBIDDEN_CALLS = {
    "now",
    "utcnow",
    "today",
    "monotonic",
    "perf_counter",
    "urandom",
    "open",
    "print",
    "input",
}


def core_modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            names = []
        for name in names:
            if name.split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"{path.name}:{node.lineno}: imports {name}")
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in FORBIDDEN_CALLS:
                found.append(f"{path.name}:{node.lineno}: calls {called}()")
    return found


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: p.name)
def test_g1_core_module_is_pure(path: Path) -> None:
    assert violations(path) == []


def test_g1_the_purity_check_catches_what_it_should(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os\nfrom time import sleep\nfrom datetime import datetime\nx = datetime.now()\n"
    )
    assert violations(bad) == [
        "bad.py:1: imports os",
        "bad.py:2: imports time",
        "bad.py:4: calls now()",
    ]


def test_layers_import_contract_holds() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--no-cache"], capture_output=True, text=True, cwd=CORE.parent, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
