"""The nox sessions work on a fresh clone (issue 27, point 4): what each session installs
covers what its tool needs, checked against pyproject.toml and mkdocs.yml, so a session that
would break says so here; and .ci/run runs exactly the README's test command."""

from __future__ import annotations

import functools
import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


@functools.cache  # once: nox registers each session as the file runs
def noxfile() -> ModuleType:
    spec = importlib.util.spec_from_file_location("noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def extras_of(requirement: str) -> set[str]:
    match = re.search(r"\[([^\]]*)\]", requirement)
    return {e.strip() for e in match.group(1).split(",")} if match else set()


def test_the_types_session_installs_every_extra_the_packages_import() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dev = project["optional-dependencies"]["dev"]
    imported = extras_of(next(r for r in dev if r.startswith("notify-engine[")))
    assert imported <= extras_of(noxfile().TYPES_EXTRAS)


def test_the_docs_session_installs_the_theme_and_plugins_of_mkdocs_yml() -> None:
    text = (ROOT / "mkdocs.yml").read_text()
    theme = re.search(r"^theme:\s*\n\s+name:\s*(\S+)", text, re.MULTILINE)
    assert theme is not None
    installed = " ".join(noxfile().DOCS_TOOLS_INSTALL)
    assert f"mkdocs-{theme.group(1)}" in installed
    assert "mkdocstrings[python]" in installed and ".[dev]" in installed


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"```sh\n\s*(python3.11 -m venv .venv && [^\n]*pytest)\n", readme)
    assert command is not None
    assert command.group(1) in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_quick_subset_is_documented() -> None:
    assert "nox -s quick" in (ROOT / "README.md").read_text()
