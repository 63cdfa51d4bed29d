"""Developer sessions: ``nox -s tests lint types docs bench mutants`` (``nox -l`` lists them).

Each session builds its own virtualenv under ``.nox/`` with the standard ``venv`` module and
Python 3.11, installs what it needs from pyproject.toml, and runs one job. Arguments after
``--`` go to the tool, e.g. ``nox -s tests -- -x -q tests/core/replay/test_tables.py``.
"""

from __future__ import annotations

import datetime
import json
import re
import shutil
import tomllib
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


# --- mutation testing (issue 41) ------------------------------------------------------------

#: The decision tables: every module's mutants also meet them.
MUTANT_TABLES = "tests/core/replay/test_tables.py"
#: The core's decision modules `nox -s mutants` mutates: name -> (the files mutmut mutates,
#: the tests that cover them besides the tables). tests/project/test_nox.py checks the paths.
MUTANT_MODULES: dict[str, tuple[list[str], list[str]]] = {
    "levels": (["notify_core/hints/levels.py"], ["tests/core/hints/test_levels.py"]),
    "quiet": (
        ["notify_core/hints/quiet.py", "notify_core/values/zones.py"],
        ["tests/core/hints/test_quiet.py", "tests/core/values/test_zones_tzdata.py"],
    ),
    "decide": (
        ["notify_core/hints/decide.py", "notify_core/hints/decision_values.py"],
        [
            "tests/core/hints/test_decide.py",
            "tests/core/hints/test_decide_switches.py",
            "tests/core/hints/test_decision_values_fast.py",
            "tests/core/hints/test_decide_boundaries.py",
            "tests/core/hints/test_explain.py",
            # The records' last step of decide (M2-M4) is pinned by these.
            "tests/core/records/test_record_delivery.py",
            "tests/core/records/test_record_delivery_edges.py",
            "tests/core/replay/test_records_replay.py",
        ],
    ),
    "delivery": (
        ["notify_core/hints/delivery.py"],
        ["tests/core/hints/test_delivery.py", "tests/core/hints/test_delivery_errors.py"],
    ),
    "badge": (
        ["notify_core/hints/badge.py"],
        ["tests/core/hints/test_badge.py", "tests/core/hints/test_badge_reference.py"],
    ),
    "fanout": (
        ["notify_core/inbox/fanout.py"],
        [
            "tests/core/inbox/test_inbox.py",
            "tests/core/inbox/test_fanout.py",
            "tests/core/inbox/test_host_categories.py",
        ],
    ),
    "coalesce": (
        ["notify_core/inbox/coalesce.py"],
        ["tests/core/inbox/test_inbox.py", "tests/core/inbox/test_coalesce.py"],
    ),
    "cadence": (
        ["notify_core/mail/cadence.py"],
        [
            "tests/core/mail/test_mail_cadence.py",
            "tests/core/mail/test_mail_cadence_edges.py",
            "tests/core/mail/test_mail_tables.py",
        ],
    ),
    "tokens": (["notify_core/mail/tokens.py"], ["tests/core/mail/test_mail_tokens.py"]),
    "checks": (
        ["notify_core/records/checks.py"],
        ["tests/core/records/test_records.py", "tests/core/records/test_records_tables.py"],
    ),
    "record_delivery": (
        ["notify_core/records/delivery.py", "notify_core/values/record_rules.py"],
        [
            "tests/core/records/test_record_delivery.py",
            "tests/core/records/test_record_delivery_edges.py",
        ],
    ),
}
#: The mutants no test can tell from the original, each with the reason (read by the session).
EQUIVALENT_MUTANTS = "tests/mutants/equivalent.toml"
#: The share of the non-equivalent mutants each module's tests must kill.
MUTANT_GOAL = 0.95
#: mutmut's statuses that count as killed: a timeout is the suite stopping a mutant that loops.
KILLED = {"killed", "timeout", "caught by type check"}


def mutmut_config(files: list[str], tests: list[str]) -> str:
    """The ``[tool.mutmut]`` table for one module: only its files mutate; each mutant meets
    the tests of ``tests`` that run its function (mutmut records which), one at a time."""
    return "\n".join(
        [
            "[tool.mutmut]",
            'source_paths = ["notify_core"]',
            f"only_mutate = {json.dumps(files)}",
            f"pytest_add_cli_args_test_selection = {json.dumps([*tests, MUTANT_TABLES])}",
            'pytest_add_cli_args = ["-p", "no:cacheprovider"]',
            # A mutant that loops is stopped after 4 times its tests' CPU time plus 2 s
            # (mutmut's default, 30 times, lets one looping mutant take half an hour).
            "timeout_multiplier = 2.0",
            # The replay tests read the shipped examples.
            'also_copy = ["examples"]',
            "",
        ]
    )


def equivalent_mutants(text: str) -> dict[str, list[dict[str, str]]]:
    """The equivalent mutants per module: each a ``function`` (mutmut's name without the
    number), the mutated ``line`` as the mutant reads it, and the ``reason``."""
    data = tomllib.loads(text)
    for module, entries in data.items():
        for entry in entries:
            missing = {"function", "line", "reason"} - set(entry)
            if missing or not entry["reason"].strip():
                raise ValueError(f"{module}: an equivalent mutant lacks {sorted(missing)}")
    return data


def mutant_function(name: str) -> str:
    """``notify_core.hints.levels.x_effective__mutmut_5`` -> ``x_effective``."""
    return re.sub(r"__mutmut_\d+$", "", name.rsplit(".", 1)[-1])


def added_lines(diff: str) -> list[str]:
    """The lines a mutant's diff adds, stripped."""
    return [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]


def is_equivalent(name: str, diff: str, equivalents: list[dict[str, str]]) -> str | None:
    """The reason why mutant ``name`` (with ``diff``) is equivalent, or None if it is not."""
    lines = added_lines(diff)
    for entry in equivalents:
        if entry["function"] == mutant_function(name) and entry["line"].strip() in lines:
            return entry["reason"]
    return None


def mutant_score(
    statuses: dict[str, str], diffs: dict[str, str], equivalents: list[dict[str, str]]
) -> tuple[int, int, list[str], list[str]]:
    """Killed and non-equivalent counts, the survivors and the equivalent mutants found.

    ``statuses`` maps each mutant to mutmut's status; ``diffs`` holds the diff of each that
    was not killed."""
    killed = sum(1 for status in statuses.values() if status in KILLED)
    survivors: list[str] = []
    equivalent: list[str] = []
    for name, status in sorted(statuses.items()):
        if status in KILLED:
            continue
        reason = is_equivalent(name, diffs.get(name, ""), equivalents)
        if reason is None:
            survivors.append(name)
        else:
            equivalent.append(f"{name}: {reason}")
    return killed, len(statuses) - len(equivalent), survivors, equivalent


def mutmut_statuses(results: str) -> dict[str, str]:
    """``mutmut results --all true``'s lines ``    name: status`` as a mapping."""
    pairs = (line.strip().rsplit(": ", 1) for line in results.splitlines() if ": " in line)
    return {name: status for name, status in pairs if name.startswith("notify_core.")}


@nox.session(python=PYTHON, default=False)
def mutants(session: nox.Session) -> None:
    """Mutation testing of the core's decision modules with mutmut, one module at a time,
    each against its own tests and the decision tables; prints each module's score and its
    survivors, and fails if a module's tests kill less than 95 % of its non-equivalent
    mutants. Slow (minutes per module): not part of CI. ``nox -s mutants -- levels tokens``
    runs only the modules named (see MUTANT_MODULES); work folders are under ``.mutants/``."""
    unknown = sorted(set(session.posargs) - set(MUTANT_MODULES))
    if unknown:
        session.error(f"unknown modules {unknown}; known: {sorted(MUTANT_MODULES)}")
    session.install(".[dev]")
    root = Path.cwd()
    equivalents = equivalent_mutants((root / EQUIVALENT_MUTANTS).read_text(encoding="utf-8"))
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    # The figures of docs/testing.md carry the day and the commit they were measured at.
    commit = session.run(
        "git", "rev-parse", "--short", "HEAD", external=True, silent=True, success_codes=[0, 128]
    )
    stamp = f"{datetime.date.today().isoformat()}, commit {str(commit).strip() or 'unknown'}"
    scores: list[str] = []
    below: list[str] = []
    for module in session.posargs or list(MUTANT_MODULES):
        files, tests = MUTANT_MODULES[module]
        work = root / ".mutants" / module
        # A fresh folder each time: mutmut keeps results across runs, which a changed test
        # would not refresh.
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for name in ("notify_core", "tests", "examples"):
            (work / name).symlink_to(root / name)
        (work / "pyproject.toml").write_text(pyproject + "\n" + mutmut_config(files, tests))
        env = {"HYPOTHESIS_PROFILE": "mutants", "PYTHONPATH": None}
        with session.chdir(work):
            # One worker: the machines are shared (issue 41).
            session.run("mutmut", "run", "--max-children", "1", env=env)
            results = session.run("mutmut", "results", "--all", "true", env=env, silent=True)
            if not isinstance(results, str):  # nox only lists what it would run
                continue
            statuses = mutmut_statuses(results)
            diffs = {
                name: str(session.run("mutmut", "show", name, env=env, silent=True))
                for name, status in statuses.items()
                if status not in KILLED
            }
        killed, counted, survivors, equivalent = mutant_score(
            statuses, diffs, equivalents.get(module, [])
        )
        share = killed / counted if counted else 1.0
        line = (
            f"{module}: {killed}/{counted} non-equivalent mutants killed ({share:.1%}), "
            f"{len(equivalent)} equivalent, {len(survivors)} survivors"
        )
        scores.append(line)
        if share < MUTANT_GOAL:
            below.append(module)
        print(line)
        for name in survivors:
            print(f"survivor {name} ({statuses[name]}):\n{diffs[name]}")
    print("\n".join(["", f"mutation scores ({stamp}):", *scores]))
    if below:
        session.error(f"below {MUTANT_GOAL:.0%}: {', '.join(below)}")
