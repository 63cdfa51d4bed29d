"""Test configuration: hypothesis profiles (a fast default, a thorough ``ci`` profile)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
# `nox -s mutants` (issue 41): mutmut runs pytest many times in one process, so a test is
# called from several executors; derandomized, a module's score is the same on every run.
settings.register_profile(
    "mutants",
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.differing_executors, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def docs_site(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The site as ``mkdocs build --strict`` writes it, built once per run: result and folder."""
    site = tmp_path_factory.mktemp("docs") / "site"
    mkdocs = Path(sys.executable).parent / "mkdocs"
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(site)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return result, site


@pytest.fixture(scope="session")
def dask_scheduler() -> Iterator[str]:
    """The address of a real Dask ``LocalCluster`` (2 single-threaded worker processes on
    loopback), started once per run for the ``--engine dask`` tests."""
    import logging

    from distributed import LocalCluster

    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=":0",
        scheduler_kwargs={"dashboard": False},
        silence_logs=logging.ERROR,
    )
    try:
        yield str(cluster.scheduler_address)
    finally:
        cluster.close()  # type: ignore[no-untyped-call]


# --- the end of a run: nothing the tests started outlives it (tests/run_guard.py) ----------

_END: dict[str, Any] = {"status": 0, "report": [], "started": time.time()}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every fixture's teardown: name the threads still busy, end the child processes,
    and arm the watchdog of the process's exit."""
    if "mutmut" in sys.modules:
        # `nox -s mutants`: pytest runs inside mutmut's own process, many times over; its
        # workers are this process's children and its exit is mutmut's, not the run's.
        return
    import run_guard

    _END["status"] = int(exitstatus)
    stuck = run_guard.settle_threads()
    if stuck:
        _END["report"].append("threads still running:\n" + run_guard.describe_threads(stuck))
    ended = run_guard.end_children()
    if ended:
        _END["report"].append("child processes still running, ended:\n" + "\n".join(ended))
    orphans = run_guard.end_orphan_servers(_END["started"])
    if orphans:
        _END["report"].append("servers of deleted directories, ended:\n" + "\n".join(orphans))
    # Armed here, before the summary: a hang in any later hook or in the interpreter's exit
    # ends with pytest's status and every thread's stack instead of a CI timeout.
    run_guard.arm_exit_watchdog(_END["status"])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Show what the run left running, if anything (a defect of the test that started it)."""
    for part in _END["report"]:
        terminalreporter.section("left running at the end of the run", sep="-")
        terminalreporter.write_line(part)
