"""PostgreSQL fixtures: one server per session, one template database, one clone per test.

The server is the one named by ``NOTIFY_TEST_DSN`` (a role that may create databases), else a
throwaway server this session starts itself with the ``pgserver`` package (from the ``dev``
extra; it bundles the PostgreSQL binaries and, as root, runs them as a system user of its own).
Tests never skip: without a server they fail and say how to provide one.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from pgworld import (
    ALEX,
    ALLGEMEIN,
    DM,
    ESKALATION,
    HOST_SCHEMA,
    OTHER,
    OTHER_CHANNEL,
    OWNER,
    ROBIN,
    SAM,
    SCHEMA,
    SUPPORT,
    T_DM,
    T_ESK,
    T_OTHER,
    M,
    T,
    channel,
    space,
)
from psycopg.conninfo import make_conninfo

from notify_pg import NotifyStore, StoreConfig, migrate
from notify_reference_host import ReferenceHost, migrate_reference_host

HOW_TO = (
    "notify's PostgreSQL tests need a server: set NOTIFY_TEST_DSN to a libpq connection string "
    "of a role with CREATEDB (for example postgresql://notify:notify@127.0.0.1:5432/postgres), "
    "or install the dev extra (pip install -e '.[dev]', which brings pgserver) so that the "
    "tests start a throwaway server themselves."
)


def _start_pgserver() -> tuple[str, Callable[[], None]]:
    try:
        with warnings.catch_warnings():
            # platformdirs warns that XDG_RUNTIME_DIR is unset (as on CI); its fallback is fine.
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:  # pragma: no cover - depends on the machine
        pytest.fail(f"{HOW_TO} (pgserver is not installed: {exc})", pytrace=False)
    tmp = tempfile.mkdtemp(prefix="notify-pg-")
    try:
        server = pgserver.get_server(os.path.join(tmp, "data"), cleanup_mode="delete")
    except Exception as exc:  # pragma: no cover - depends on the machine
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.fail(f"{HOW_TO} (starting pgserver failed: {exc})", pytrace=False)
    dsn = str(server.get_uri())
    # A throwaway server: durability buys nothing, speed does.
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        conn.execute("ALTER SYSTEM SET full_page_writes = off")
        conn.execute("SELECT pg_reload_conf()")

    def stop() -> None:
        server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)

    return dsn, stop


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The DSN of a database on the session's server (its maintenance database)."""
    dsn = os.environ.get("NOTIFY_TEST_DSN")
    stop: Callable[[], None] | None = None
    if not dsn:
        dsn, stop = _start_pgserver()
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        if stop is not None:
            stop()
        pytest.fail(f"{HOW_TO} (cannot connect: {exc})", pytrace=False)
    try:
        yield dsn
    finally:
        if stop is not None:
            stop()


def dsn_for(base: str, dbname: str) -> str:
    """Return ``base`` pointing at another database."""
    return make_conninfo(base, dbname=dbname)


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> Iterator[str]:
    """A template database with the notify schema and the reference host migrated."""
    name = f"notify_tpl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(dsn_for(pg_server, name)) as conn:
            migrate(conn, SCHEMA)
            migrate_reference_host(conn, HOST_SCHEMA)
        yield name
    finally:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_counter = itertools.count()


@pytest.fixture
def new_database(pg_server: str) -> Iterator[Callable[[str | None], str]]:
    """Create databases for one test (cloned from a template, or empty) and drop them after."""
    made: list[str] = []

    def make(template: str | None = None) -> str:
        name = f"notify_t_{os.getpid()}_{next(_counter)}"
        clause = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"{clause}'.encode())
        made.append(name)
        return dsn_for(pg_server, name)

    yield make
    with psycopg.connect(pg_server, autocommit=True) as admin:
        for name in made:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


@pytest.fixture
def db_dsn(new_database: Callable[[str | None], str], pg_template: str) -> str:
    """A fresh clone of the template for this test."""
    return new_database(pg_template)


@pytest.fixture
def connect(db_dsn: str) -> Iterator[Callable[[], psycopg.Connection[Any]]]:
    """Open more autocommit connections to the test's database (closed after the test)."""
    opened: list[psycopg.Connection[Any]] = []

    def open_one() -> psycopg.Connection[Any]:
        conn = psycopg.connect(db_dsn, autocommit=True)
        opened.append(conn)
        return conn

    yield open_one
    for conn in opened:
        conn.close()


@pytest.fixture
def conn(connect: Callable[[], psycopg.Connection[Any]]) -> psycopg.Connection[Any]:
    """An autocommit connection to the test's database: each call commits on its own."""
    return connect()


@pytest.fixture
def host() -> ReferenceHost:
    return ReferenceHost(HOST_SCHEMA)


@pytest.fixture
def store(host: ReferenceHost) -> NotifyStore:
    return NotifyStore(host, schema=SCHEMA, config=StoreConfig(instance_default_level="mentions"))


@pytest.fixture
def world(conn: psycopg.Connection[Any], host: ReferenceHost) -> None:
    """Create the test world in the reference host."""
    with conn.transaction():
        for user in (ALEX, SAM, ROBIN):
            host.add_user(conn, user)
        host.add_user(conn, OWNER, owner=True)
        host.add_space(conn, SUPPORT)
        host.add_space(conn, OTHER)
        host.add_channel(conn, ALLGEMEIN, SUPPORT)
        host.add_channel(conn, ESKALATION, SUPPORT)
        host.add_channel(conn, OTHER_CHANNEL, OTHER)
        host.add_channel(conn, DM, None, kind="dm")
        host.add_thread(conn, M, ALLGEMEIN, main=True)
        host.add_thread(conn, T, ALLGEMEIN)
        host.add_thread(conn, T_ESK, ESKALATION)
        host.add_thread(conn, T_OTHER, OTHER_CHANNEL)
        host.add_thread(conn, T_DM, DM)
        host.add_dm_participant(conn, DM, ALEX)
        host.add_dm_participant(conn, DM, SAM)
        host.grant(conn, ALEX, space(SUPPORT))
        host.grant(conn, ALEX, space(OTHER))
        host.grant(conn, SAM, channel(ALLGEMEIN))
