"""Developer sessions: ``nox -s tests lint types docs bench`` (``nox -l`` lists them).

Each session builds its own virtualenv under ``.nox/`` with the standard ``venv`` module and
Python 3.11, installs what it needs from pyproject.toml, and runs one job. Arguments after
``--`` go to the tool, e.g. ``nox -s tests -- -x -q tests/core/replay/test_tables.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.error_on_missing_interpreters = True
# `nox` without -s runs these; `bench` only when asked (its figures depend on the machine).
nox.options.sessions = ["lint", "types", "tests", "docs"]

PYTHON = "3.11"
PACKAGES = ["notify_core", "notify_pg", "notify_reference_host", "notify_cli"]
DOCS_TOOLS = ["docs/griffe_extensions.py", "docs/cli_help.py", "docs/rule_refs.py"]
LINT_PATHS = [*PACKAGES, "tests", "bench", *DOCS_TOOLS, "noxfile.py"]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the test suite (PostgreSQL tests included) with the dev extras."""
    session.install(".[dev]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Check lint rules and formatting with ruff; changes nothing."""
    session.install("ruff>=0.5")
    session.run("ruff", "check", *LINT_PATHS)
    session.run("ruff", "format", "--check", *LINT_PATHS)


#: What the types session installs: every extra the packages import (mypy reads their
#: types), as the dev extras hold them. tests/project/test_nox.py checks it against pyproject.toml.
TYPES_EXTRAS = ".[pg,server,serve,report,dask,metrics,push]"
#: What the docs session installs: mkdocs, its theme and plugins of mkdocs.yml, and the
#: packages with every extra (mkdocstrings imports them). tests/project/test_nox.py checks it.
DOCS_TOOLS_INSTALL = [".[dev]", "mkdocs>=1.6", "mkdocstrings[python]>=0.25", "mkdocs-material>=9.5"]
#: The edit-test loop: the tests of the pure core and the command line, no PostgreSQL.
QUICK_TESTS = ["-x", "-q", "--ignore=tests/pg", "tests"]


@nox.session(python=PYTHON)
def quick(session: nox.Session) -> None:
    """The edit-test loop: the tests without PostgreSQL (a few minutes less than `tests`);
    the full suite (`tests`, the README's command) stays what CI runs."""
    session.install(".[dev]")
    session.run("python", "-m", "pytest", *(session.posargs or QUICK_TESTS))


@nox.session(python=PYTHON)
def types(session: nox.Session) -> None:
    """Type-check the packages with mypy --strict."""
    session.install(TYPES_EXTRAS, "mypy>=1.10")
    session.run("mypy", "--strict", *PACKAGES)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the documentation site into site/; any warning fails the build."""
    session.install(*DOCS_TOOLS_INSTALL)
    session.run("mkdocs", "build", "--strict", *session.posargs)


def _bench_scripts() -> list[Path]:
    """The scripts in bench/ that run on their own (they have a ``__main__`` block)."""
    return [
        path
        for path in sorted(Path("bench").glob("*.py"))
        if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
    ]


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Run every benchmark script in bench/ and check that each prints one JSON document.

    ``nox -s bench -- bench/bench_core.py`` runs only the scripts named. The dev extras are
    installed because database benchmarks start a throwaway PostgreSQL (pgserver) unless
    ``NOTIFY_BENCH_DSN`` names one.
    """
    session.install(".[dev]")
    scripts = [Path(arg) for arg in session.posargs] or _bench_scripts()
    if not scripts:
        session.error("no benchmark scripts in bench/")
    for script in scripts:
        output = session.run("python", str(script), silent=True)
        if not isinstance(output, str):  # None when nox only lists what it would run
            continue
        try:
            report = json.loads(output)
        except ValueError:
            session.error(f"{script} did not print JSON:\n{output}")
        print(json.dumps({"script": script.as_posix(), "report": report}, indent=2))
