"""Fixtures of the contract suites: each test runs once per twin of its port.

`hints_twin` is the in-memory twin or the PostgreSQL twin of the push path's ports
(`hint_twins`). The PostgreSQL twin works in a database cloned once per session from the
conftest's template, inside a transaction rolled back after each test: no test sees another's
rows, and no test pays for a database of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from hint_twins import MemoryTwin, PgTwin, Twin
from psycopg.conninfo import make_conninfo


@pytest.fixture(scope="session")
def hints_contract_dsn(pg_server: str, pg_template: str) -> Iterator[str]:
    """One clone of the template for every contract test of the push path's ports."""
    name = f"notify_hints_contracts_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(
            f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}" STRATEGY FILE_COPY'.encode()
        )
    try:
        yield make_conninfo(pg_server, dbname=name)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def _twin(request: pytest.FixtureRequest) -> Iterator[Twin]:
    if request.param == "memory":
        yield MemoryTwin()
        return
    dsn = request.getfixturevalue("hints_contract_dsn")
    with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction(force_rollback=True):
        yield PgTwin(conn, at_event=request.param == "postgresql-at-event")


@pytest.fixture(params=["memory", "postgresql"])
def hints_twin(request: pytest.FixtureRequest) -> Iterator[Twin]:
    """The twin of the push path's ports a test runs against (both, by parametrization)."""
    yield from _twin(request)


@pytest.fixture(params=["memory", "postgresql", "postgresql-at-event"])
def world_twin(request: pytest.FixtureRequest) -> Iterator[Twin]:
    """The twin of `WorldFacts` a test runs against: the memory store, PostgreSQL as due work
    reads the world (the host's current facts) and as a consumer round reads it while it
    handles an event (the facts of the log before it, for positions and runs)."""
    yield from _twin(request)
