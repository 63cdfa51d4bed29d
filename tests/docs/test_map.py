"""docs/index.md's map of packages and wings is kept in step with the code (issue 24).

Every package and every subpackage (a wing) has one row; its last column names exactly the
packages, or the sibling wings, that its modules import (lazy imports included).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent
PACKAGES = ("notify_cli", "notify_reference_host", "notify_pg", "notify_core")


def map_rows() -> dict[str, set[str]]:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    section = index.split("## The map", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table: dict[str, set[str]] = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        (name,) = re.findall(r"`([\w.]+)`", cells[0])
        assert name not in table, f"docs/index.md map: {name} has two rows"
        table[name] = set(re.findall(r"`([\w.]+)`", cells[-1]))
    return table


def imported(files: list[Path]) -> set[str]:
    """The dotted names of every notify module the files import."""
    names: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
    return {name for name in names if name.split(".")[0] in PACKAGES}


def wings(package: str) -> list[str]:
    return sorted(
        f"{package}.{d.name}"
        for d in (ROOT / package).iterdir()
        if d.is_dir() and (d / "__init__.py").exists()
    )


def actual() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for package in PACKAGES:
        names = imported(sorted((ROOT / package).rglob("*.py")))
        table[package] = {n.split(".")[0] for n in names} - {package}
        siblings = wings(package)
        for wing in siblings:
            names = imported(sorted((ROOT / wing.replace(".", "/")).rglob("*.py")))
            table[wing] = {
                other
                for other in siblings
                if other != wing and any(n == other or n.startswith(f"{other}.") for n in names)
            }
    return table


def test_the_map_has_a_row_for_every_package_and_wing_and_no_other() -> None:
    assert sorted(map_rows()) == sorted(actual())


def test_the_map_names_what_each_package_and_wing_imports() -> None:
    rows, real = map_rows(), actual()
    wrong = {name: sorted(real[name]) for name in real if rows.get(name) != real[name]}
    assert wrong == {}, "docs/index.md map: the imports column should read"


def test_the_map_can_fail() -> None:
    """The check reads imports for real: notify_pg's wings import the base, not the reverse."""
    real = actual()
    assert "notify_pg.db" in real["notify_pg.stores"]
    assert real["notify_pg.db"] == set()
    assert real["notify_core"] == set()
