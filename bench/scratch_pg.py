"""What the PostgreSQL benchmarks share: a scratch server, a fresh migrated database on it and
the CPU time of a process.

Imported by ``bench_pg_pipeline.py``, ``bench_pg_inbox.py`` and ``bench_level_facts.py`` (they
run with ``bench/`` on ``sys.path``, as a script or from the smoke tests).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import make_conninfo

from notify_pg import migrate
from notify_reference_host import migrate_reference_host


@contextmanager
def server() -> Iterator[str]:
    """The benchmark's server: ``NOTIFY_BENCH_DSN`` if set, else a throwaway pgserver
    instance with fsync and synchronous commit off (a benchmark measures the library, not the
    disk), removed on exit."""
    dsn = os.environ.get("NOTIFY_BENCH_DSN")
    if dsn:
        yield dsn
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    tmp = tempfile.mkdtemp(prefix="notify-bench-")
    srv = pgserver.get_server(os.path.join(tmp, "data"), cleanup_mode="delete")
    uri = str(srv.get_uri())
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield uri
    finally:
        srv.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def database(base: str, schema: str = "notify", host: str = "host") -> Iterator[str]:
    """A fresh database on the server ``base``, with the library's schema and the reference
    host's migrated; dropped on exit."""
    name = f"notify_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    dsn = make_conninfo(base, dbname=name)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            migrate(conn, schema)
            migrate_reference_host(conn, host)
        yield dsn
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user and system) of one process of this machine so far, a server backend or
    a worker (Linux ``/proc``); 0 when it has ended or cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
