"""The nox sessions work on a fresh clone (issue 27, point 4): what each session installs
covers what its tool needs, checked against pyproject.toml and mkdocs.yml, so a session that
would break says so here; nox lists the sessions README.md documents, and the lint session
runs here as nox runs it, with this virtualenv's tools (``--no-venv --no-install``: the suite
never creates a virtualenv); and .ci/run runs exactly the README's test command."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


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


def nox(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this environment's nox on noxfile.py; ``--no-venv --no-install`` runs a session's
    commands here, with the tools of this virtualenv, and creates no virtualenv."""
    bin_dir = str(Path(sys.executable).parent)
    return subprocess.run(
        [sys.executable, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")},
    )


def readme_sessions() -> list[str]:
    """The sessions of README.md's table under "Development", in its order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("| session | runs |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)


def test_nox_lists_every_session_the_readme_documents() -> None:
    # nox itself reads the file: an error in it, or a session renamed, lost or undocumented
    # fails here and not first on a newcomer's machine. (`--list --json` leaves out the
    # sessions `nox` alone skips, so the text is read: "* name -> ..." runs, "- name" not.)
    result = nox("--list")
    assert result.returncode == 0, result.stdout + result.stderr
    listed = re.findall(r"^([*-]) (\w+) -> \S", result.stdout, re.MULTILINE)
    assert sorted(name for _, name in listed) == sorted(readme_sessions())
    selected = [name for mark, name in listed if mark == "*"]
    # `nox` alone runs the sessions README names for it.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert sorted(selected) == sorted(noxfile().nox.options.sessions)
    default = noxfile().nox.options.sessions
    assert f"`.venv/bin/nox` alone runs {', '.join(default[:-1])} and {default[-1]}" in readme


def test_the_lint_session_passes_in_this_environment() -> None:
    # Its commands as nox runs them (about a second): the paths it names exist and are clean.
    result = nox("--session", "lint", "--no-venv", "--no-install")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_quick_subset_names_paths_that_exist() -> None:
    for arg in noxfile().QUICK_TESTS:
        path = arg.split("=", 1)[-1]
        if not path.startswith("-"):
            assert (ROOT / path).is_dir(), arg


# -- nox -s mutants (issue 41) ------------------------------------------------------------------


def test_the_mutants_session_names_files_that_exist_and_runs_only_when_asked() -> None:
    module = noxfile()
    assert "mutants" not in module.nox.options.sessions  # too slow for CI and `nox` alone
    for name, (files, tests) in module.MUTANT_MODULES.items():
        assert files and tests, name
        for path in [*files, *tests, module.MUTANT_TABLES]:
            assert (ROOT / path).is_file(), (name, path)
    mutated = [path for files, _ in module.MUTANT_MODULES.values() for path in files]
    assert len(mutated) == len(set(mutated)), "a file is mutated by one module only"


def test_the_equivalent_mutants_name_modules_and_functions_that_exist() -> None:
    # Each entry gives its reason; its module is one the session runs and its function one
    # of that module's files defines (an entry whose line changed matches no mutant any more:
    # the mutant then shows up as a survivor, to be judged again).
    module = noxfile()
    equivalents = module.equivalent_mutants(
        (ROOT / module.EQUIVALENT_MUTANTS).read_text(encoding="utf-8")
    )
    assert set(equivalents) <= set(module.MUTANT_MODULES)
    for name, entries in equivalents.items():
        sources = [
            (ROOT / path).read_text(encoding="utf-8") for path in module.MUTANT_MODULES[name][0]
        ]
        for entry in entries:
            assert entry["reason"].strip(), (name, entry)
            function = entry["function"].removeprefix("x_").split("ǁ")[-1]
            assert any(f"def {function}(" in source for source in sources), (name, entry)


def test_the_mutant_score_counts_killed_equivalent_and_survivors() -> None:
    module = noxfile()
    statuses = {
        "notify_core.a.x_f__mutmut_1": "killed",
        "notify_core.a.x_f__mutmut_2": "timeout",
        "notify_core.a.x_f__mutmut_3": "survived",
        "notify_core.a.x_g__mutmut_1": "survived",
        "notify_core.a.x_g__mutmut_2": "no tests",
    }
    diffs = {
        "notify_core.a.x_f__mutmut_3": "--- a\n+++ a\n-    return x\n+    return None\n",
        "notify_core.a.x_g__mutmut_1": "--- a\n+++ a\n-    return x\n+    return None\n",
        "notify_core.a.x_g__mutmut_2": "--- a\n+++ a\n-    y = 1\n+    y = 2\n",
    }
    equivalent = [{"function": "x_f", "line": "return None", "reason": "why"}]
    killed, counted, survivors, found = module.mutant_score(statuses, diffs, equivalent)
    assert (killed, counted) == (2, 4)
    assert survivors == ["notify_core.a.x_g__mutmut_1", "notify_core.a.x_g__mutmut_2"]
    assert found == ["notify_core.a.x_f__mutmut_3: why"]
    assert module.mutmut_statuses(
        "    notify_core.a.x_f__mutmut_1: killed\n    notify_core.a.x_f__mutmut_3: no tests\n"
    ) == {"notify_core.a.x_f__mutmut_1": "killed", "notify_core.a.x_f__mutmut_3": "no tests"}
    config = module.mutmut_config(["notify_core/a.py"], ["tests/core/test_a.py"])
    assert tomllib.loads(config)["tool"]["mutmut"]["pytest_add_cli_args_test_selection"] == [
        "tests/core/test_a.py",
        module.MUTANT_TABLES,
    ]
