"""Start-up checks (issue 39 point 2): `notify serve`, `notify worker` and `notify db load` on
a schema that is missing, not migrated, or lacks a table say so in one line naming the schema
and the command to run, and exit 2: never a traceback, never a server answering 503."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from pgworld import HOST_SCHEMA, SCHEMA

PG = Path(__file__).parents[1]
LOG = str(PG.parents[1] / "examples" / "wiki-week.jsonl")
COMMANDS = {
    "serve": ["serve", "--port", "0"],
    "worker": ["worker", "--once"],
    "db load": ["db", "load", LOG],
}


def notify(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI as a process; a command that would start serving is stopped at 60 s."""
    return subprocess.run(
        [sys.executable, "-m", "notify_cli", *args],
        # tests/pg on the path: `--inbox-host custom_inbox_host:...` imports from there.
        env={**os.environ, "NOTIFY_DSN": dsn, "PYTHONPATH": os.pathsep.join([str(PG), *sys.path])},
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_one_line(done: subprocess.CompletedProcess[str], command: str, expected: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"notify: {command}: {expected}\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_an_empty_database_names_the_schema_and_the_migrate_command(
    new_database: Callable[[str | None], str], command: str
) -> None:
    done = notify(new_database(None), *COMMANDS[command])
    assert_one_line(done, command, 'schema "notify" does not exist: run `notify db migrate`')


@pytest.mark.parametrize("command", COMMANDS)
def test_a_schema_created_but_not_migrated_is_named_with_its_option(
    db_dsn: str, conn: psycopg.Connection[object], command: str
) -> None:
    conn.execute("CREATE SCHEMA other")
    done = notify(db_dsn, *COMMANDS[command], "--schema", "other")
    expected = 'schema "other" is not migrated: run `notify db migrate --schema other`'
    assert_one_line(done, command, expected)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_host_schema_names_the_host_schema_not_notify(db_dsn: str, command: str) -> None:
    """Today `notify serve --host-schema nosuch` printed 56 lines naming "the notify schema"."""
    done = notify(db_dsn, *COMMANDS[command], "--host-schema", "nosuch")
    expected = 'schema "nosuch" does not exist: run `notify db migrate --reference-host nosuch`'
    assert_one_line(done, command, expected)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_dropped_table_is_named(
    db_dsn: str, conn: psycopg.Connection[object], command: str
) -> None:
    conn.execute(f"DROP TABLE {SCHEMA}.inbox_entries CASCADE")
    done = notify(db_dsn, *COMMANDS[command])
    expected = 'schema "notify" lacks tables inbox_entries: run `notify db migrate`'
    assert_one_line(done, command, expected)


def test_a_schema_behind_the_package_names_the_migrations_it_lacks(
    db_dsn: str, conn: psycopg.Connection[object]
) -> None:
    # Two of them; the later ones stay recorded, so the message names exactly these two.
    conn.execute(f"DELETE FROM {HOST_SCHEMA}.schema_migrations WHERE version IN (8, 9)")
    done = notify(db_dsn, *COMMANDS["worker"])
    expected = (
        'schema "host" lacks migrations 0008_wiki_names_links, 0009_channel_access_grants: '
        "run `notify db migrate --reference-host host`"
    )
    assert_one_line(done, "worker", expected)


def test_a_schema_migrated_by_a_newer_version_asks_for_an_upgrade(
    db_dsn: str, conn: psycopg.Connection[object]
) -> None:
    conn.execute(
        f"INSERT INTO {SCHEMA}.schema_migrations (version, name, checksum)"
        " VALUES (9999, '9999_from_the_future', 'x')"
    )
    done = notify(db_dsn, *COMMANDS["serve"])
    expected = (
        'schema "notify" has migrations this version does not ship (9999_from_the_future): '
        "upgrade notify-engine"
    )
    assert_one_line(done, "serve", expected)


def test_a_host_of_its_own_is_only_checked_to_exist(db_dsn: str) -> None:
    """`notify worker --inbox-host`: the host's tables are its own; a missing schema is named."""
    done = notify(
        db_dsn,
        "worker",
        "--once",
        "--inbox-host",
        "custom_inbox_host:quiet_cy",
        "--host-schema",
        "nosuch",
    )
    assert_one_line(
        done, "worker", 'schema "nosuch" does not exist: create it with the host\'s tables'
    )
